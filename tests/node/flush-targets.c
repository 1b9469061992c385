/* SPDX-License-Identifier: MIT */
/*
 * tests/node/flush-targets.c - shf_flush(ORIGIN / REMOTE / DELIVERY).
 *
 *   flush-targets thread|poll
 *
 * After rank 1's REMOTE flush its messages sit in rank 0's delivery ring;
 * after rank 0's DELIVERY flush its callbacks have seen them all.  Rank 2
 * streams at rank 0 the whole time (with ORIGIN flushes), and in thread
 * mode rank 0 keeps calling DELIVERY flushes while its delivery thread
 * works: no call may fail (tclient.c mode flushes).
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

int main(int argc, char **argv)
{
	bool poll = argc > 1 && !strcmp(argv[1], "poll");
	struct td_env *e = td_init(poll ? "flush-targets-poll" : "flush-targets-thread",
				   100, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *args[] = {"flushes", "steps=40", "n=500", "ring=131072", "maxlen=2000",
			      "timeout=30000", poll ? "poll=1" : "poll=0", NULL};
	pid_t pids[3];
	for (int r = 0; r < 3; r++)
		pids[r] = td_spawn_client("fl", r, 3, args, NULL);
	CHECKF(td_wait_all(pids, 3, 60000, "rank") == 0, "a rank failed (see above)");
	CHECK(td_stat(e->d, "clients_total.drops_dead") == 0);
	td_stop(e->d);
	return 0;
}
