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

#include "tests/lib/daemon.h"

int main(void)
{
	struct td_env *e = td_init("nonblock", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *args[] = {"nonblock", "n=1000", "ring=131072", "timeout=20000", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = td_spawn_client("nb", r, 2, args, NULL);
	CHECKF(td_wait_all(pids, 2, 50000, "rank") == 0, "a rank failed (see above)");
	long long out = td_stat(e->d, "clients_total.msgs_out");
	CHECKF(out == 1000, "daemon placed %lld messages, 1000 sent", out);
	td_stop(e->d);
	return 0;
}
