/* SPDX-License-Identifier: MIT */
/*
 * tests/node/other-user.c - a job belongs to the uid of its first client.
 *
 * With a root daemon (socket open to all local users), a client running
 * as uid 65534 cannot join a job that root owns (-EACCES), can run a job
 * of its own, and root may join that job (root is excepted).  Skipped
 * unless run as root with setpriv(1) available.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define SETPRIV TD_SETPRIV

static pid_t spawn_nobody(const char *job, int rank, int world, const char *const *args)
{
	return td_spawn_client_as(65534, job, rank, world, args, NULL);
}

int main(void)
{
	struct td_env *e = td_init("other-user", 50, TD_SOCKET_ENV);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon and setpriv to another uid)");
	if (access(SETPRIV, X_OK) != 0)
		SKIP("%s not found", SETPRIV);
	/* uid 65534 must reach the socket and the sync directory */
	CHECK(chmod(e->dir, 0755) == 0);
	CHECK(chmod(e->sync, 01777) == 0);
	const char *usage_only[] = {NULL};
	pid_t p = spawn_nobody("x", 0, 1, usage_only);
	int r = td_wait(p, 10000);
	if (r != 2)
		SKIP("the test client cannot run as uid 65534 (status %d): is the build "
		     "directory readable by everyone?", r);

	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *holder[] = {"open", "post=open", "hold=release", "timeout=30000", NULL};
	const char *denied[] = {"open", "expect=EACCES", "timeout=10000", NULL};
	const char *alone[] = {"traffic", "n=200", NULL};

	pid_t root0 = td_spawn_client("rootjob", 0, 2, holder, NULL);
	bool reg = false;
	for (int64_t end = td_now_ms() + 10000; !reg && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		reg = td_client_find(cl, "rootjob", 0) != NULL;
		json_decref(cl);
	}
	CHECK(reg);
	p = spawn_nobody("rootjob", 1, 2, denied);
	CHECKF(td_wait(p, 15000) == 0, "uid 65534 joining root's job: not -EACCES");
	CHECKF(td_poll_exit(root0) == TD_RUNNING, "root's rank 0 was disturbed");

	p = spawn_nobody("nobodyjob", 0, 1, alone);
	CHECKF(td_wait(p, 15000) == 0, "uid 65534 could not run a job of its own");

	/* root may join a job of uid 65534 (once uid 65534 created it) */
	pid_t nob0 = spawn_nobody("shared", 0, 2, holder);
	reg = false;
	for (int64_t end = td_now_ms() + 10000; !reg && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		json_t *c = td_client_find(cl, "shared", 0);
		reg = c && td_num(c, "uid") == 65534;
		json_decref(cl);
	}
	CHECKF(reg, "uid 65534's rank 0 never registered");
	pid_t root1 = td_spawn_client("shared", 1, 2, holder, NULL);
	CHECK(td_sync_wait(e->sync, "open.0", 15000));
	CHECK(td_sync_wait(e->sync, "open.1", 15000));

	/* root's job finally completes with a root rank 1 */
	pid_t root1b = td_spawn_client("rootjob", 1, 2, holder, NULL);
	td_sync_post(e->sync, "release");
	pid_t all[] = {root0, nob0, root1, root1b};
	CHECKF(td_wait_all(all, 4, 20000, "holder") == 0, "a holder failed");
	json_t *j = td_query(e->d, "stats");
	CHECK(j != NULL);
	CHECKF(td_num(j, "daemon.refused") == 1, "refused %lld, expected 1",
	       td_num(j, "daemon.refused"));
	json_decref(j);
	td_stop(e->d);
	return 0;
}
