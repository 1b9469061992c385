/* SPDX-License-Identifier: MIT */
/*
 * tests/node/jobs-isolation.c - two jobs on one daemon with the same ranks
 * run at the same time.  Every message carries its job's tag; a rank that
 * gets a message of the other job, or counts that do not add up within
 * its own job, fails (tclient.c).  The daemon lists both jobs while they
 * run, each with its own epochs, and neither afterwards.
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

#define WORLD 3

int main(void)
{
	struct td_env *e = td_init("jobs-isolation", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	/* the same seed: both jobs produce the same pattern, so a message
	 * crossing over would be well-formed but for its tag and counts */
	const char *a[] = {"traffic", "n=2000", "rounds=3", "seed=5", "post=open",
			   "hold=listed", NULL};
	const char *b[] = {"traffic", "n=1500", "rounds=2", "seed=5", "post=open",
			   "hold=listed", NULL};
	pid_t pids[2 * WORLD];
	for (int r = 0; r < WORLD; r++) {
		pids[r] = td_spawn_client("alpha", r, WORLD, a, NULL);
		pids[WORLD + r] = td_spawn_client("beta", r, WORLD, b, NULL);
	}
	/* both jobs at once: listed with all their ranks and epochs while
	 * their ranks hold on (at "listed") */
	int64_t end = td_now_ms() + 40000;
	bool listed = false;
	while (!listed && td_now_ms() < end) {
		json_t *j = td_query(e->d, "jobs");
		CHECK(j != NULL);
		json_t *jobs = json_object_get(j, "jobs");
		size_t i;
		json_t *o;
		int ok = 0;
		json_array_foreach(jobs, i, o) {
			const char *n = json_string_value(json_object_get(o, "name"));
			long long ep = td_num(o, "epochs");
			if (n && !strcmp(n, "alpha") && ep == 3 && td_num(o, "local") == WORLD)
				ok++;
			if (n && !strcmp(n, "beta") && ep == 2 && td_num(o, "local") == WORLD)
				ok++;
		}
		listed = ok == 2 && json_array_size(jobs) == 2;
		json_decref(j);
		for (int r = 0; r < 2 * WORLD && !listed; r++) {
			int st = td_poll_exit(pids[r]);
			CHECKF(st == TD_RUNNING, "%s rank %d exited (status %d) before its job "
			       "was listed", r < WORLD ? "alpha" : "beta", r % WORLD, st);
		}
		if (!listed)
			td_sleep_ms(20);
	}
	CHECKF(listed, "the daemon never listed alpha (3 epochs) and beta (2 epochs), %d ranks "
	       "each", WORLD);
	td_sync_post(e->sync, "listed");
	CHECKF(td_wait_all(pids, 2 * WORLD, 30000, "rank") == 0, "a rank failed (see above)");
	CHECK(td_stat(e->d, "clients_total.msgs_out") == WORLD * (2000 * 3 + 1500 * 2));
	json_t *j = td_query(e->d, "jobs");
	CHECK(j != NULL);
	for (int64_t t = td_now_ms() + 5000;
	     json_array_size(json_object_get(j, "jobs")) && td_now_ms() < t;) {
		json_decref(j);
		td_sleep_ms(10);
		CHECK((j = td_query(e->d, "jobs")) != NULL);
	}
	CHECKF(json_array_size(json_object_get(j, "jobs")) == 0, "jobs left after their ranks");
	json_decref(j);
	td_stop(e->d);
	return 0;
}
