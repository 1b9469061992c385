/* SPDX-License-Identifier: MIT */
/*
 * tests/node/daemon-lock.c - one daemon per runtime directory.
 *
 * A second shuffled on the same runtime directory must refuse to start
 * (non-zero exit, within 5 s, saying why) without disturbing the first:
 * the socket stays, and the first daemon keeps serving jobs.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

int main(void)
{
	struct td_env *e = td_init("daemon-lock", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	struct stat st0;
	CHECK(stat(e->d->sock, &st0) == 0);

	for (int i = 0; i < 3; i++) {
		pid_t second = td_spawn_daemon(e->d, NULL, NULL);
		int r = td_wait(second, 5000);
		CHECKF(r > 0 && r < 128, "second daemon: status %d, expected a clean refusal", r);
	}
	CHECK(td_log_contains(e->d, "another shuffled is running"));

	struct stat st1;
	CHECKF(stat(e->d->sock, &st1) == 0, "the refused daemon removed the socket");
	CHECKF(st0.st_ino == st1.st_ino, "the refused daemon replaced the socket");

	const char *args[] = {"traffic", "n=500", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = td_spawn_client("still", r, 2, args, NULL);
	CHECKF(td_wait_all(pids, 2, 30000, "rank") == 0, "the first daemon stopped serving");
	td_stop(e->d);

	/* with the first one gone, a new one starts */
	CHECK(td_start(e->d, NULL, NULL) == 0);
	td_stop(e->d);
	return 0;
}
