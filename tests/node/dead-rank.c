/* SPDX-License-Identifier: MIT */
/*
 * tests/node/dead-rank.c - messages to a rank that has left the job.
 *
 * Rank 2 of a world of 3 opens and closes.  Once the daemon shows it gone,
 * rank 0 sends 10 messages to rank 1 (flush 0, all arrive) and 5 to rank 2:
 * those are dropped and counted, the next REMOTE flush returns -ESRCH,
 * the one after that 0; rank 0 sends 3 more to rank 2 and the epoch fails
 * with -ESRCH in both survivors, naming rank 2, and rank 0's stats count
 * all 8 drops.
 * Also: -ESRCH for ranks outside the world, -EMSGSIZE above max_msg,
 * -EINVAL for an unknown flush target (tclient.c mode deadpeer).
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

int main(void)
{
	struct td_env *e = td_init("dead-rank", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *peer[] = {"deadpeer", "timeout=20000", NULL};
	const char *leaver[] = {"open", NULL};
	pid_t pids[3];
	pids[0] = td_spawn_client("dead", 0, 3, peer, NULL);
	pids[1] = td_spawn_client("dead", 1, 3, peer, NULL);
	pids[2] = td_spawn_client("dead", 2, 3, leaver, NULL);
	CHECKF(td_wait(pids[2], 20000) == 0, "rank 2 failed to open and close");
	bool gone = false;
	for (int64_t end = td_now_ms() + 5000; !gone && td_now_ms() < end; td_sleep_ms(5)) {
		json_t *j = td_query(e->d, "jobs");
		CHECK(j != NULL);
		json_t *job = json_array_get(json_object_get(j, "jobs"), 0);
		gone = job && json_integer_value(json_object_get(job, "gone")) == 1;
		json_decref(j);
	}
	CHECKF(gone, "the daemon never marked rank 2 gone");
	td_sync_post(e->sync, "gone");
	CHECKF(td_wait_all(pids, 2, 40000, "rank") == 0, "a rank failed (see above)");
	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	/* 5 before the flush, 3 before the (failed) epoch */
	CHECKF(td_num(st, "clients_total.drops_dead") == 8, "drops_dead %lld, expected 8",
	       td_num(st, "clients_total.drops_dead"));
	CHECKF(td_num(st, "clients_total.msgs_out") == 10, "msgs_out %lld, expected 10",
	       td_num(st, "clients_total.msgs_out"));
	json_decref(st);
	td_stop(e->d);
	return 0;
}
