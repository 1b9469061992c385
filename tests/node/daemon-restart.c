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

#include "harness.h"

static void run_job(struct nt_env *e, const char *job)
{
	const char *args[] = {"traffic", "n=500", "rounds=2", NULL};
	pid_t pids[3];
	for (int r = 0; r < 3; r++)
		pids[r] = nt_spawn_client(e, job, r, 3, args, NULL);
	CHECKF(nt_wait_all(pids, 3, 30000, "rank") == 0, "job %s failed", job);
}

int main(void)
{
	struct nt_env *e = nt_init("daemon-restart", 50);
	CHECK(nt_daemon_start(e, NULL) == 0);
	run_job(e, "before");
	nt_daemon_kill(e);
	CHECKF(access(e->sock, F_OK) == 0, "no stale socket after SIGKILL (test premise)");

	/* a client finds nobody behind the stale socket */
	const char *refused[] = {"open", "expect=ECONNREFUSED", "timeout=2000", NULL};
	pid_t p = nt_spawn_client(e, "nobody", 0, 1, refused, NULL);
	CHECKF(nt_wait(p, 10000) == 0, "shf_open on a stale socket: not -ECONNREFUSED");

	CHECK(nt_daemon_start(e, NULL) == 0);
	CHECK(nt_log_contains(e, "removed stale socket"));
	run_job(e, "after");
	nt_daemon_kill(e);
	/* and once more, in quick succession */
	CHECK(nt_daemon_start(e, NULL) == 0);
	run_job(e, "again");
	nt_daemon_stop(e);

	/* a clean stop leaves only the lock file */
	DIR *d = opendir(e->run);
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
