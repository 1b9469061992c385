/* SPDX-License-Identifier: MIT */
/*
 * tests/node/nonblock.c - SHF_NONBLOCK: with a receiver that does not
 * consume, rank 0's non-blocking sends fill its send ring and the
 * receiver's delivery ring and then return -EAGAIN (within the rings'
 * capacity, and steadily while the receiver sleeps); once the receiver
 * consumes, the retries succeed and all 1000 messages arrive in order
 * (tclient.c mode nonblock).
 */
#include <stdio.h>

#include "harness.h"

int main(void)
{
	struct nt_env *e = nt_init("nonblock", 50);
	CHECK(nt_daemon_start(e, NULL) == 0);
	const char *args[] = {"nonblock", "n=1000", "ring=131072", "timeout=20000", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = nt_spawn_client(e, "nb", r, 2, args, NULL);
	CHECKF(nt_wait_all(pids, 2, 50000, "rank") == 0, "a rank failed (see above)");
	long long out = nt_stat(e, "clients_total.msgs_out");
	CHECKF(out == 1000, "daemon placed %lld messages, 1000 sent", out);
	nt_daemon_stop(e);
	return 0;
}
