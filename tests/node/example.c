/* SPDX-License-Identifier: MIT */
/*
 * tests/node/example.c - the example application (examples/) works:
 *
 *   example fork|poll|mpirun
 *
 * Four ranks of shuffle-example, fork-launched with SHF_RANK/SHF_WORLD
 * (with a library delivery thread, or in poll mode) or under mpirun
 * (skipped without it), each exits 0 (its own checks), and the daemon
 * relayed exactly 4 x 5000 messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define WORLD 4

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "fork";
	char name[32];
	snprintf(name, sizeof(name), "example-%s", how);
	struct td_env *e = td_init(name, 50, TD_SOCKET_ENV);
	const char *example = td_prog("SHF_TEST_EXAMPLE");
	bool mpi = !strcmp(how, "mpirun");
	CHECK(td_start(e->d, NULL, NULL) == 0);
	pid_t pids[WORLD];
	int n = 0;
	if (mpi) {
		const char *argv_mpi[64];
		int k = td_mpirun_argv(WORLD, argv_mpi);
		const char *rest[] = {example, "-n", "5000", NULL};
		for (int i = 0; rest[i]; i++)
			argv_mpi[k++] = rest[i];
		argv_mpi[k] = NULL;
		const char *env[] = {"SHF_RANK=", "SHF_WORLD=", "SHF_JOB=mpiexample", NULL};
		pids[n++] = td_spawn(argv_mpi, env, NULL, NULL);
	} else {
		for (int r = 0; r < WORLD; r++) {
			char er[32], ew[32];
			snprintf(er, sizeof(er), "SHF_RANK=%d", r);
			snprintf(ew, sizeof(ew), "SHF_WORLD=%d", WORLD);
			const char *env[] = {er, ew, "SHF_JOB=forkexample", NULL};
			const char *argv_f[] = {example, "-n", "5000", "-s", "100",
						!strcmp(how, "poll") ? "-p" : NULL, NULL};
			pids[n++] = td_spawn(argv_f, env, NULL, NULL);
		}
	}
	CHECKF(td_wait_all(pids, n, 40000, mpi ? "mpirun" : "rank") == 0,
	       "the example failed (see above)");
	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	CHECKF(td_num(st, "clients_total.msgs_in") == WORLD * 5000 &&
	       td_num(st, "clients_total.msgs_out") == WORLD * 5000,
	       "the daemon relayed %lld in, %lld out; %d expected",
	       td_num(st, "clients_total.msgs_in"), td_num(st, "clients_total.msgs_out"),
	       WORLD * 5000);
	json_decref(st);
	td_stop(e->d);
	return 0;
}
