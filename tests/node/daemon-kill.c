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

#include "harness.h"

int main(void)
{
	struct nt_env *e = nt_init("daemon-kill", 50);
	const char *dargs[] = {"--max-msg=4K", NULL};
	CHECK(nt_daemon_start(e, dargs) == 0);
	const char *args[] = {"blocked", "ring=16384", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = nt_spawn_client(e, "dk", r, 2, args, NULL);
	CHECK(nt_sync_wait(e->sync, "blocked-sending", 30000));
	CHECK(nt_sync_wait(e->sync, "blocked-flushing", 30000));
	bool stuck = false;
	for (int64_t end = nt_now_ms() + 10000; !stuck && nt_now_ms() < end; nt_sleep_ms(10)) {
		json_t *cl = nt_ctl(e, "clients");
		CHECK(cl != NULL);
		json_t *c0 = nt_client_find(cl, "dk", 0), *c1 = nt_client_find(cl, "dk", 1);
		CHECK(c0 && c1);
		/* both relays wait for the other's delivery ring (whose callback
		 * never returns); rank 0's send ring is more than half full */
		stuck = json_is_true(json_object_get(c0, "blocked")) &&
			nt_json_num(c0, "send_used") > 8192 &&
			json_is_true(json_object_get(c1, "blocked"));
		json_decref(cl);
	}
	CHECKF(stuck, "the clients never got stuck");
	nt_sleep_ms(200); /* let them go to sleep in shf_send and shf_flush */
	CHECKF(nt_poll_exit(pids[0]) == NT_RUNNING && nt_poll_exit(pids[1]) == NT_RUNNING,
	       "a client returned before the daemon died");
	int64_t t0 = nt_now_ms();
	nt_daemon_kill(e);
	CHECKF(nt_wait_all(pids, 2, 5000, "rank") == 0,
	       "a client did not get -ENOTCONN everywhere within 5 s");
	fprintf(stderr, "daemon-kill: both clients returned -ENOTCONN %lld ms after the kill\n",
		(long long)(nt_now_ms() - t0));
	return 0;
}
