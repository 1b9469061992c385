/* SPDX-License-Identifier: MIT */
/*
 * tests/node/world-timeout.c - shf_open() when the world never completes.
 *
 * Ranks 0, 2 and 4 of a world of 5 open with a 700 ms timeout: each gets
 * -ETIMEDOUT in bounded time, with the missing ranks (1,3) in
 * shf_error_detail().  The timed-out ranks are unregistered, so the full
 * world of 5 then opens.  Without a daemon, shf_open() is -ECONNREFUSED.
 */
#include <stdio.h>

#include "harness.h"

int main(void)
{
	struct nt_env *e = nt_init("world-timeout", 50);
	CHECK(nt_daemon_start(e, NULL) == 0);
	const char *partial[] = {"open", "expect=ETIMEDOUT", "timeout=700", "detail=1,3", NULL};
	pid_t pids[5];
	int64_t t0 = nt_now_ms();
	for (int i = 0; i < 3; i++)
		pids[i] = nt_spawn_client(e, "wt", 2 * i, 5, partial, NULL);
	CHECKF(nt_wait_all(pids, 3, 10000, "rank") == 0, "a rank did not time out as required");
	int64_t took = nt_now_ms() - t0;
	CHECKF(took < 8000, "timing out took %lld ms with a 700 ms timeout", (long long)took);
	CHECK(nt_stat(e, "daemon.disc_timeout") == 3);

	/* nothing of the failed attempt blocks the real one */
	const char *full[] = {"open", "timeout=20000", NULL};
	for (int r = 0; r < 5; r++)
		pids[r] = nt_spawn_client(e, "wt", r, 5, full, NULL);
	CHECKF(nt_wait_all(pids, 5, 30000, "rank") == 0, "the complete world failed to open");
	nt_daemon_stop(e);

	/* no daemon at all */
	const char *refused[] = {"open", "expect=ECONNREFUSED", "timeout=2000", NULL};
	pid_t p = nt_spawn_client(e, "none", 0, 1, refused, NULL);
	CHECKF(nt_wait(p, 10000) == 0, "shf_open without a daemon: not -ECONNREFUSED");
	const char *env[] = {"SHF_SOCKET=/nonexistent/shuffled.sock", NULL};
	p = nt_spawn_client(e, "none", 0, 1, refused, env);
	CHECKF(nt_wait(p, 10000) == 0, "shf_open with a socket path that does not exist: not "
	       "-ECONNREFUSED");
	return 0;
}
