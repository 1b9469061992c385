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

#include "harness.h"

#define WORLD 4

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "fork";
	char name[32];
	snprintf(name, sizeof(name), "example-%s", how);
	struct nt_env *e = nt_init(name, 50);
	const char *example = nt_prog("SHF_TEST_EXAMPLE");
	bool mpi = !strcmp(how, "mpirun");
	CHECK(nt_daemon_start(e, NULL) == 0);
	pid_t pids[WORLD];
	int n = 0;
	if (mpi) {
		const char *argv_mpi[64];
		int k = nt_mpirun_argv(e, WORLD, argv_mpi);
		const char *rest[] = {example, "-n", "5000", NULL};
		for (int i = 0; rest[i]; i++)
			argv_mpi[k++] = rest[i];
		argv_mpi[k] = NULL;
		const char *env[] = {"SHF_RANK=", "SHF_WORLD=", "SHF_JOB=mpiexample", NULL};
		pids[n++] = nt_spawn(e, argv_mpi, env);
	} else {
		for (int r = 0; r < WORLD; r++) {
			char er[32], ew[32];
			snprintf(er, sizeof(er), "SHF_RANK=%d", r);
			snprintf(ew, sizeof(ew), "SHF_WORLD=%d", WORLD);
			const char *env[] = {er, ew, "SHF_JOB=forkexample", NULL};
			const char *argv_f[] = {example, "-n", "5000", "-s", "100",
						!strcmp(how, "poll") ? "-p" : NULL, NULL};
			pids[n++] = nt_spawn(e, argv_f, env);
		}
	}
	CHECKF(nt_wait_all(pids, n, 40000, mpi ? "mpirun" : "rank") == 0,
	       "the example failed (see above)");
	json_t *st = nt_ctl(e, "stats");
	CHECK(st != NULL);
	CHECKF(nt_json_num(st, "clients_total.msgs_in") == WORLD * 5000 &&
	       nt_json_num(st, "clients_total.msgs_out") == WORLD * 5000,
	       "the daemon relayed %lld in, %lld out; %d expected",
	       nt_json_num(st, "clients_total.msgs_in"), nt_json_num(st, "clients_total.msgs_out"),
	       WORLD * 5000);
	json_decref(st);
	nt_daemon_stop(e);
	return 0;
}
