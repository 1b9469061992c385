/* SPDX-License-Identifier: MIT */
/*
 * tests/node/dup-rank.c - a rank registered twice is refused with -EEXIST,
 * promptly, both while the world is still incomplete and after it is
 * complete; the first holder of the rank is not disturbed.  A different
 * world size for an existing job is -EINVAL.
 */
#include <stdio.h>

#include "harness.h"

int main(void)
{
	struct nt_env *e = nt_init("dup-rank", 50);
	CHECK(nt_daemon_start(e, NULL) == 0);
	const char *holder[] = {"open", "post=open", "hold=release", "timeout=30000", NULL};
	const char *dup[] = {"open", "expect=EEXIST", "timeout=30000", NULL};
	const char *badworld[] = {"open", "expect=EINVAL", "timeout=30000", NULL};
	pid_t first = nt_spawn_client(e, "dup", 0, 2, holder, NULL);
	/* rank 0 is registered (the daemon lists it) but the world is not complete */
	bool reg = false;
	for (int64_t end = nt_now_ms() + 10000; !reg && nt_now_ms() < end; nt_sleep_ms(10)) {
		json_t *cl = nt_ctl(e, "clients");
		CHECK(cl != NULL);
		reg = nt_client_find(cl, "dup", 0) != NULL;
		json_decref(cl);
	}
	CHECK(reg);
	pid_t p = nt_spawn_client(e, "dup", 0, 2, dup, NULL);
	CHECKF(nt_wait(p, 5000) == 0, "second rank 0 while waiting for the world: not -EEXIST");
	p = nt_spawn_client(e, "dup", 1, 3, badworld, NULL);
	CHECKF(nt_wait(p, 5000) == 0, "rank 1 of world 3 in a job of world 2: not -EINVAL");
	CHECKF(nt_poll_exit(first) == NT_RUNNING, "the first rank 0 was disturbed");

	pid_t second = nt_spawn_client(e, "dup", 1, 2, holder, NULL);
	CHECK(nt_sync_wait(e->sync, "open.0", 10000));
	CHECK(nt_sync_wait(e->sync, "open.1", 10000));
	for (int r = 0; r < 2; r++) {
		p = nt_spawn_client(e, "dup", r, 2, dup, NULL);
		CHECKF(nt_wait(p, 5000) == 0, "rank %d again in a complete world: not -EEXIST", r);
	}
	nt_sync_post(e->sync, "release");
	pid_t both[] = {first, second};
	CHECKF(nt_wait_all(both, 2, 10000, "holder") == 0, "a holder failed");
	CHECKF(nt_stat(e, "daemon.refused") == 4, "refused %lld, expected 4",
	       nt_stat(e, "daemon.refused"));
	nt_daemon_stop(e);
	return 0;
}
