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

#include "harness.h"

int main(void)
{
	struct nt_env *e = nt_init("daemon-lock", 50);
	CHECK(nt_daemon_start(e, NULL) == 0);
	struct stat st0;
	CHECK(stat(e->sock, &st0) == 0);

	for (int i = 0; i < 3; i++) {
		pid_t second = nt_daemon_spawn(e, NULL);
		int r = nt_wait(second, 5000);
		CHECKF(r > 0 && r < 128, "second daemon: status %d, expected a clean refusal", r);
	}
	CHECK(nt_log_contains(e, "another shuffled is running"));

	struct stat st1;
	CHECKF(stat(e->sock, &st1) == 0, "the refused daemon removed the socket");
	CHECKF(st0.st_ino == st1.st_ino, "the refused daemon replaced the socket");

	const char *args[] = {"traffic", "n=500", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = nt_spawn_client(e, "still", r, 2, args, NULL);
	CHECKF(nt_wait_all(pids, 2, 30000, "rank") == 0, "the first daemon stopped serving");
	nt_daemon_stop(e);

	/* with the first one gone, a new one starts */
	CHECK(nt_daemon_start(e, NULL) == 0);
	nt_daemon_stop(e);
	return 0;
}
