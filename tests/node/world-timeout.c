/* SPDX-License-Identifier: MIT */
/*
 * tests/node/world-timeout.c - shf_open() when the world never completes.
 *
 * Ranks 0, 2 and 4 of a world of 5 open with a 700 ms timeout: each gets
 * -ETIMEDOUT in bounded time, with the missing ranks (1,3) in
 * shf_error_detail().  The timed-out ranks are unregistered, so the full
 * world of 5 then opens.  A world-size mismatch (ranks with world 2 and 3)
 * is told to both: the second at once, the first at its timeout.  Without a
 * daemon, shf_open() is -ECONNREFUSED.
 */
#include <stdio.h>

#include "tests/lib/daemon.h"

int main(void)
{
	struct td_env *e = td_init("world-timeout", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *partial[] = {"open", "expect=ETIMEDOUT", "timeout=700", "detail=1,3", NULL};
	pid_t pids[5];
	int64_t t0 = td_now_ms();
	for (int i = 0; i < 3; i++)
		pids[i] = td_spawn_client("wt", 2 * i, 5, partial, NULL);
	CHECKF(td_wait_all(pids, 3, 10000, "rank") == 0, "a rank did not time out as required");
	int64_t took = td_now_ms() - t0;
	CHECKF(took < 8000, "timing out took %lld ms with a 700 ms timeout", (long long)took);
	CHECK(td_stat(e->d, "daemon.disc_timeout") == 3);

	/* nothing of the failed attempt blocks the real one */
	const char *full[] = {"open", "timeout=20000", NULL};
	for (int r = 0; r < 5; r++)
		pids[r] = td_spawn_client("wt", r, 5, full, NULL);
	CHECKF(td_wait_all(pids, 5, 30000, "rank") == 0, "the complete world failed to open");

	/* a world-size mismatch is told to both sides: rank 1 (world 3) is
	 * refused at once; rank 0 (world 2) waits, and its timeout says why
	 * rank 1 never joined */
	const char *w2[] = {"open", "expect=ETIMEDOUT", "timeout=1500",
			    "detail=rank 1 came with world 3, not 2", NULL};
	const char *w3[] = {"open", "expect=EINVAL", "timeout=5000", "detail=has world 2, not 3",
			    NULL};
	pids[0] = td_spawn_client("wmis", 0, 2, w2, NULL);
	for (int64_t end = td_now_ms() + 5000; td_now_ms() < end; td_sleep_ms(10)) {
		json_t *j = td_query(e->d, "jobs");
		size_t n = json_array_size(json_object_get(j, "jobs"));
		json_decref(j);
		if (n > 0)
			break;
	}
	pids[1] = td_spawn_client("wmis", 1, 3, w3, NULL);
	CHECKF(td_wait_all(pids, 2, 15000, "rank") == 0,
	       "a world-size mismatch was not told to both sides");
	td_stop(e->d);

	/* no daemon at all */
	const char *refused[] = {"open", "expect=ECONNREFUSED", "timeout=2000", NULL};
	pid_t p = td_spawn_client("none", 0, 1, refused, NULL);
	CHECKF(td_wait(p, 10000) == 0, "shf_open without a daemon: not -ECONNREFUSED");
	const char *env[] = {"SHF_SOCKET=/nonexistent/shuffled.sock", NULL};
	p = td_spawn_client("none", 0, 1, refused, env);
	CHECKF(td_wait(p, 10000) == 0, "shf_open with a socket path that does not exist: not "
	       "-ECONNREFUSED");
	return 0;
}
