/* SPDX-License-Identifier: MIT */
/*
 * tests/node/daemon-kill.c - the daemon dies (SIGKILL) under its clients.
 *
 * Two ranks whose delivery callbacks never return: rank 0 blocks in
 * shf_send on a full ring, rank 1 blocks in shf_flush(REMOTE) (its records
 * cannot all be placed).  The driver checks in the daemon's own state that both are
 * stuck, kills the daemon, and requires both calls to return -ENOTCONN
 * within 5 s, and every later call too (tclient.c mode blocked).
 */
#include <signal.h>
#include <stdio.h>

#include "tests/lib/daemon.h"

int main(void)
{
	struct td_env *e = td_init("daemon-kill", 50, TD_SOCKET_ENV);
	const char *dargs[] = {"--max-msg=4K", NULL};
	CHECK(td_start(e->d, dargs, NULL) == 0);
	const char *args[] = {"blocked", "ring=16384", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = td_spawn_client("dk", r, 2, args, NULL);
	CHECK(td_sync_wait(e->sync, "blocked-sending", 30000));
	CHECK(td_sync_wait(e->sync, "blocked-flushing", 30000));
	bool stuck = false;
	for (int64_t end = td_now_ms() + 10000; !stuck && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		json_t *c0 = td_client_find(cl, "dk", 0), *c1 = td_client_find(cl, "dk", 1);
		CHECK(c0 && c1);
		/* both relays wait for the other's delivery ring (whose callback
		 * never returns); rank 0's send ring is more than half full */
		stuck = json_is_true(json_object_get(c0, "blocked")) &&
			td_num(c0, "send_used") > 8192 &&
			json_is_true(json_object_get(c1, "blocked"));
		json_decref(cl);
	}
	CHECKF(stuck, "the clients never got stuck");
	td_sleep_ms(200); /* let them go to sleep in shf_send and shf_flush */
	CHECKF(td_poll_exit(pids[0]) == TD_RUNNING && td_poll_exit(pids[1]) == TD_RUNNING,
	       "a client returned before the daemon died");
	int64_t t0 = td_now_ms();
	td_kill(e->d);
	CHECKF(td_wait_all(pids, 2, 5000, "rank") == 0,
	       "a client did not get -ENOTCONN everywhere within 5 s");
	fprintf(stderr, "daemon-kill: both clients returned -ENOTCONN %lld ms after the kill\n",
		(long long)(td_now_ms() - t0));
	return 0;
}
