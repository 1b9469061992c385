/* SPDX-License-Identifier: MIT */
/*
 * tests/node/daemon-restart.c - start-up after a crash.
 *
 * A daemon killed with SIGKILL leaves its socket behind.  A new daemon in
 * the same runtime directory must start cleanly (the stale socket removed,
 * the lock free since it died with its holder), serve a job, and stop
 * cleanly again with nothing left but the lock file.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

static void run_job(const char *job)
{
	const char *args[] = {"traffic", "n=500", "rounds=2", NULL};
	pid_t pids[3];
	for (int r = 0; r < 3; r++)
		pids[r] = td_spawn_client(job, r, 3, args, NULL);
	CHECKF(td_wait_all(pids, 3, 30000, "rank") == 0, "job %s failed", job);
}

int main(void)
{
	struct td_env *e = td_init("daemon-restart", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	run_job("before");
	td_kill(e->d);
	CHECKF(access(e->d->sock, F_OK) == 0, "no stale socket after SIGKILL (test premise)");

	/* a client finds nobody behind the stale socket */
	const char *refused[] = {"open", "expect=ECONNREFUSED", "timeout=2000", NULL};
	pid_t p = td_spawn_client("nobody", 0, 1, refused, NULL);
	CHECKF(td_wait(p, 10000) == 0, "shf_open on a stale socket: not -ECONNREFUSED");

	CHECK(td_start(e->d, NULL, NULL) == 0);
	CHECK(td_log_contains(e->d, "removed stale socket"));
	run_job("after");
	td_kill(e->d);
	/* and once more, in quick succession */
	CHECK(td_start(e->d, NULL, NULL) == 0);
	run_job("again");
	td_stop(e->d);

	/* a clean stop leaves only the lock file */
	DIR *d = opendir(e->d->run);
	CHECK(d != NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		CHECKF(!strcmp(de->d_name, "shuffled.lock"), "%s left in the runtime directory",
		       de->d_name);
	}
	closedir(d);
	return 0;
}
