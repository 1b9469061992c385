/* SPDX-License-Identifier: MIT */
/*
 * tests/node/send-many.c - the batch API on one node (rendezvous none):
 *   check    shf_send_many()'s checks (bc-client many-check, world 1): n 0,
 *            NULL msgs, unknown flags, a rank outside the world, NULL data,
 *            a length over max_msg - each fails the whole call naming the
 *            record's index, and nothing of it arrives; then good records
 *            arrive once each, in order.  Thread mode with per-record
 *            callbacks, then poll mode with the batch callback.
 *   threads  4 threads of one process call shf_send_many() at once
 *            (bc-client many-threads, batch callback): each thread's
 *            records arrive once each, in its order.  Also in the TSan build.
 *   sizes    3 ranks (bc-client many-sizes), poll mode with the batch
 *            callback, then thread mode: calls of 1..300 records of 16 B
 *            to 20000 B to random ranks, every third with SHF_NONBLOCK;
 *            every record once, each pair in order, every byte right;
 *            every fourth call of one length: packed runs (the daemon's
 *            packed_runs counts them).
 *   more     as sizes, the records sent one by one with shf_send(SHF_MORE)
 *            (bc-client many-sizes more=1): held, then grouped; mixed
 *            with shf_send_many(), plain sends, SHF_NONBLOCK and flushes.
 *   more-threads  as threads, every other call 7 x shf_send(SHF_MORE)
 *            instead, the opener thread one of the senders (its records
 *            are held; the others' go at once).  Also in the TSan build.
 *   more-close  as old-reader, rank 0 sending each record with
 *            shf_send(SHF_MORE) and then only closing: the close pushes
 *            the held records, all 5000 arrive in order.
 *   more-echo  3 ranks (bc-client more-echo): poll-mode callbacks send
 *            with SHF_MORE while their rank's held records wait for room.
 *   old-reader  shf_send_many() to a client that never said it reads runs
 *            (rawclient old-reader, as a client of 0.2 is): 5000 records,
 *            each a plain record, in order (the daemon places the runs
 *            item by item).
 * Mixed shf_send / shf_send_many / shf_bcast order across ranks is the
 * bcast driver's with many=1 (node-bcast-many-*, multi-bcast-many-2).
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

static int run_one(struct td_env *e, const char *job, const char *const *args)
{
	const char *env[] = {job, "SHF_RANK=0", "SHF_WORLD=1", NULL};
	pid_t pid = td_spawn(args, env, NULL, NULL);
	(void)e;
	return td_wait_all(&pid, 1, 60000, "client");
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "check";
	struct td_env *e = td_init("send-many", 100, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *cl = td_prog("SHF_TEST_BCCLIENT");
	if (!strcmp(what, "check")) {
		const char *a1[] = {cl, "many-check", "timeout=30000", NULL};
		CHECKF(run_one(e, "SHF_JOB=sm1", a1) == 0, "many-check, thread mode, one by one");
		const char *a2[] = {cl, "many-check", "poll=1", "batchcb=1", "timeout=30000", NULL};
		CHECKF(run_one(e, "SHF_JOB=sm2", a2) == 0, "many-check, poll mode, batches");
	} else if (!strcmp(what, "threads")) {
		const char *a[] = {cl, "many-threads", "threads=4", "ops=2000", "batchcb=1",
				   "timeout=60000", NULL};
		CHECKF(run_one(e, "SHF_JOB=sm3", a) == 0, "many-threads");
	} else if (!strcmp(what, "more-threads")) {
		/* 3 threads and the opener: shf_send_many() and shf_send(SHF_MORE) */
		const char *a[] = {cl, "many-threads", "threads=4", "ops=2000", "more=1",
				   "timeout=60000", NULL};
		CHECKF(run_one(e, "SHF_JOB=sm8", a) == 0, "more-threads");
	} else if (!strcmp(what, "sizes") || !strcmp(what, "more")) {
		/* runs cut at their limits, windows, short counts: 3 ranks, poll
		 * mode with batches, then 3 ranks with the thread */
		const char *more = !strcmp(what, "more") ? "more=1" : "more=0";
		const char *a[] = {cl, "many-sizes", "ops=60", "poll=1", "batchcb=1", "timeout=30000",
				   more, NULL};
		const char *b[] = {cl, "many-sizes", "ops=60", "timeout=30000", more, NULL};
		for (int pass = 0; pass < 2; pass++) {
			pid_t pids[3];
			for (int r = 0; r < 3; r++) {
				char rank[16];
				snprintf(rank, sizeof(rank), "SHF_RANK=%d", r);
				const char *env[] = {pass ? "SHF_JOB=sm6" : "SHF_JOB=sm5", rank,
						     "SHF_WORLD=3", NULL};
				pids[r] = td_spawn(pass ? b : a, env, NULL, NULL);
			}
			CHECKF(td_wait_all(pids, 3, 90000, "client") == 0, "many-sizes, pass %d", pass);
		}
		/* every fourth call had one length: some of its runs went packed */
		long long pk = td_stat(e->d, "daemon.packed_runs");
		fprintf(stderr, "send-many %s: %lld packed runs\n", what, pk);
		CHECKF(pk > 0, "no packed run reached the daemon (%lld)", pk);
	} else if (!strcmp(what, "more-echo")) {
		const char *a[] = {cl, "more-echo", "ops=200000", "timeout=30000", NULL};
		pid_t pids[3];
		for (int r = 0; r < 3; r++) {
			char rank[16];
			snprintf(rank, sizeof(rank), "SHF_RANK=%d", r);
			const char *env[] = {"SHF_JOB=sm7", rank, "SHF_WORLD=3", NULL};
			pids[r] = td_spawn(a, env, NULL, NULL);
		}
		CHECKF(td_wait_all(pids, 3, 90000, "client") == 0, "more-echo");
	} else if (!strcmp(what, "old-reader") || !strcmp(what, "more-close")) {
		/* runs to a client that never said it reads them: item by item;
		 * more-close: held with SHF_MORE, pushed by shf_close() */
		const char *raw = td_prog("SHF_TEST_RAWCLIENT");
		const char *r1[] = {raw, "old-reader", "sm4", "1", "2", "5000", NULL};
		const char *a0[] = {cl, "many-to", "count=5000", "timeout=30000",
				    strcmp(what, "more-close") ? "more=0" : "more=1", NULL};
		const char *env0[] = {"SHF_JOB=sm4", "SHF_RANK=0", "SHF_WORLD=2", NULL};
		pid_t pids[2];
		pids[0] = td_spawn(r1, NULL, NULL, NULL);
		pids[1] = td_spawn(a0, env0, NULL, NULL);
		CHECKF(td_wait_all(pids, 2, 60000, "client") == 0, "%s", what);
	} else {
		CHECKF(0, "unknown case %s", what);
	}
	CHECKF(td_stat(e->d, "clients_total.drops_dead") == 0, "drops");
	td_stop(e->d);
	printf("send-many %s: ok\n", what);
	return 0;
}
