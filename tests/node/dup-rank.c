/* SPDX-License-Identifier: MIT */
/*
 * tests/node/dup-rank.c - a rank registered twice is refused with -EEXIST,
 * promptly, both while the world is still incomplete and after it is
 * complete; the first holder of the rank is not disturbed.  A different
 * world size for an existing job is -EINVAL.
 */
#include <stdio.h>

#include "tests/lib/daemon.h"

int main(void)
{
	struct td_env *e = td_init("dup-rank", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *holder[] = {"open", "post=open", "hold=release", "timeout=30000", NULL};
	const char *dup[] = {"open", "expect=EEXIST", "timeout=30000", NULL};
	const char *badworld[] = {"open", "expect=EINVAL", "timeout=30000", NULL};
	pid_t first = td_spawn_client("dup", 0, 2, holder, NULL);
	/* rank 0 is registered (the daemon lists it) but the world is not complete */
	bool reg = false;
	for (int64_t end = td_now_ms() + 10000; !reg && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		reg = td_client_find(cl, "dup", 0) != NULL;
		json_decref(cl);
	}
	CHECK(reg);
	pid_t p = td_spawn_client("dup", 0, 2, dup, NULL);
	CHECKF(td_wait(p, 5000) == 0, "second rank 0 while waiting for the world: not -EEXIST");
	p = td_spawn_client("dup", 1, 3, badworld, NULL);
	CHECKF(td_wait(p, 5000) == 0, "rank 1 of world 3 in a job of world 2: not -EINVAL");
	CHECKF(td_poll_exit(first) == TD_RUNNING, "the first rank 0 was disturbed");

	pid_t second = td_spawn_client("dup", 1, 2, holder, NULL);
	CHECK(td_sync_wait(e->sync, "open.0", 10000));
	CHECK(td_sync_wait(e->sync, "open.1", 10000));
	for (int r = 0; r < 2; r++) {
		p = td_spawn_client("dup", r, 2, dup, NULL);
		CHECKF(td_wait(p, 5000) == 0, "rank %d again in a complete world: not -EEXIST", r);
	}
	td_sync_post(e->sync, "release");
	pid_t both[] = {first, second};
	CHECKF(td_wait_all(both, 2, 10000, "holder") == 0, "a holder failed");
	CHECKF(td_stat(e->d, "daemon.refused") == 4, "refused %lld, expected 4",
	       td_stat(e->d, "daemon.refused"));
	td_stop(e->d);
	return 0;
}
