/* SPDX-License-Identifier: MIT */
/*
 * tests/node/exactly-once.c - N ranks on one daemon send self-checking
 * messages to pseudo-random destinations (self included, some messages
 * large enough to wrap the rings often) for several rounds, each closed
 * by a REMOTE flush and an epoch.  Every rank checks exactly-once delivery,
 * per-(src,dst) order, checksums and per-round counts after each epoch
 * (tclient.c); this driver checks the daemon's own account: every message
 * in was a message out, nothing dropped, nobody cut off, every session
 * and job gone afterwards, the fd count back at its baseline.
 *
 *   exactly-once NPROC thread|poll|mpirun [MSGS_PER_ROUND [ROUNDS]]
 *
 * thread: fork-launched, callbacks on the library thread;
 * poll:   fork-launched, delivery_thread = 0 and shf_poll();
 * mpirun: launched by Open MPI's mpirun, rank and world from its
 *         environment (skipped when mpirun is missing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: exactly-once NPROC thread|poll|mpirun [MSGS [ROUNDS]]\n");
		return 2;
	}
	int nproc = atoi(argv[1]);
	const char *how = argv[2];
	long msgs = argc > 3 ? atol(argv[3]) : 2000;
	int rounds = argc > 4 ? atoi(argv[4]) : 3;
	bool mpi = !strcmp(how, "mpirun");
	bool poll = !strcmp(how, "poll");
	if (nproc < 1 || nproc > 64 || (!mpi && !poll && strcmp(how, "thread"))) {
		fprintf(stderr, "exactly-once: bad arguments\n");
		return 2;
	}
	char name[64];
	snprintf(name, sizeof(name), "exactly-once-%d-%s", nproc, how);
	struct td_env *e = td_init(name, 110, TD_SOCKET_ENV);
	const char *tclient = td_prog("SHF_TEST_TCLIENT");

	CHECK(td_start(e->d, NULL, NULL) == 0);
	int fd_base = td_fd_baseline(e->d);
	CHECK(fd_base > 0);

	char a_n[32], a_rounds[32], a_poll[16];
	snprintf(a_n, sizeof(a_n), "n=%ld", msgs);
	snprintf(a_rounds, sizeof(a_rounds), "rounds=%d", rounds);
	snprintf(a_poll, sizeof(a_poll), "poll=%d", poll);
	const char *args[] = {"traffic", a_n, a_rounds, a_poll, "seed=7", "maxlen=600",
			      "big=20000", NULL};
	pid_t pids[64];
	int npids = 0;
	if (mpi) {
		const char *argv_mpi[64];
		int k = td_mpirun_argv(nproc, argv_mpi);
		argv_mpi[k++] = tclient;
		for (int i = 0; args[i]; i++)
			argv_mpi[k++] = args[i];
		argv_mpi[k] = NULL;
		/* rank and world must come from mpirun, not from us */
		const char *env[] = {"SHF_JOB=mpijob", "SHF_RANK=", "SHF_WORLD=", NULL};
		pids[npids++] = td_spawn(argv_mpi, env, NULL, NULL);
	} else {
		for (int r = 0; r < nproc; r++)
			pids[npids++] = td_spawn_client("fork", r, nproc, args, NULL);
	}
	CHECKF(td_wait_all(pids, npids, 100000, mpi ? "mpirun" : "rank") == 0,
	       "a rank failed (see above)");

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	long long total = (long long)nproc * msgs * rounds;
	long long in = td_num(st, "clients_total.msgs_in");
	long long out = td_num(st, "clients_total.msgs_out");
	CHECKF(in == total, "daemon took %lld messages from send rings, %lld were sent", in, total);
	CHECKF(out == total, "daemon placed %lld messages in delivery rings, %lld were sent", out,
	       total);
	CHECK(td_num(st, "clients_total.drops_dead") == 0);
	CHECK(td_num(st, "clients_total.drops_down") == 0);
	CHECK(td_num(st, "daemon.disc_proto") == 0);
	CHECK(td_num(st, "daemon.disc_ring") == 0);
	CHECKF(td_num(st, "daemon.clients_attached") == nproc, "clients_attached %lld",
	       td_num(st, "daemon.clients_attached"));
	CHECKF(td_num(st, "daemon.epochs") == rounds, "daemon.epochs %lld, expected %d",
	       td_num(st, "daemon.epochs"), rounds);
	json_decref(st);

	/* everything is gone: sessions, jobs, fds */
	int fds = td_fd_settle(e->d, fd_base, 5000);
	CHECKF(fds == fd_base, "daemon holds %d fds after every client left, %d before", fds,
	       fd_base);
	json_t *jobs = td_query(e->d, "jobs");
	CHECK(jobs != NULL);
	CHECKF(json_array_size(json_object_get(jobs, "jobs")) == 0, "jobs left behind");
	json_decref(jobs);
	json_t *cl = td_query(e->d, "clients");
	CHECK(cl != NULL);
	CHECKF(json_array_size(json_object_get(cl, "clients")) == 0, "client sessions left");
	json_decref(cl);

	td_stop(e->d);
	fprintf(stderr, "%s: %lld messages, exactly once, in order\n", name, total);
	return 0;
}
