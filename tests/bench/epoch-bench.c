/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/epoch-bench.c - what an empty shf_epoch() costs against an
 * MPI_Barrier over the same ranks, in the same run (scripts/bench
 * --kernels, issue 27 item 0).
 *
 *   mpirun ... epoch-bench [--rounds N] [--blocks B] [--thread]
 *
 * Every rank opens shuffle (poll mode unless --thread) and MPI.  Then B
 * blocks alternate: N empty shf_epoch() calls, N MPI_Barrier() calls (the
 * first block of each is a warm-up, not counted).  Each call is timed per
 * rank; a round's time is the slowest rank's (MPI_Reduce MAX, outside the
 * timed calls).  Rank 0 prints one JSON line: medians and p90 in µs of
 * both, and their ratio.  Measures, never asserts.
 */
#include <errno.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shuffle.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *d, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)d, (void)len;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = 200, blocks = 6, thread = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
			blocks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--thread"))
			thread = 1;
		else {
			fprintf(stderr, "usage: epoch-bench [--rounds N] [--blocks B] [--thread]\n");
			return 2;
		}
	}
	if (rounds < 1 || blocks < 2) {
		fprintf(stderr, "epoch-bench: rounds >= 1, blocks >= 2\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	int rank, world;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);
	struct shf_opts o;
	shf_opts_init(&o);
	o.delivery_thread = thread;
	struct shf_ctx *c;
	int r = shf_open(&o, on_msg, NULL, &c);
	if (r) {
		fprintf(stderr, "epoch-bench rank %d: shf_open: %s (%s)\n", rank, shf_strerror(r),
			shf_error_detail());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	size_t cap = (size_t)rounds * (size_t)(blocks / 2);
	double *ep = calloc(cap, sizeof(double)), *ba = calloc(cap, sizeof(double));
	double *mine = calloc((size_t)rounds, sizeof(double)), *mx = calloc((size_t)rounds, sizeof(double));
	if (!ep || !ba || !mine || !mx)
		MPI_Abort(MPI_COMM_WORLD, 1);
	size_t nep = 0, nba = 0;
	for (int b = 0; b < blocks + 2; b++) {
		bool epoch = b % 2 == 0, warm = b < 2;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < rounds; i++) {
			double t0 = now_us();
			if (epoch) {
				if ((r = shf_epoch(c, 0)) != 0) {
					fprintf(stderr, "epoch-bench rank %d: shf_epoch: %s (%s)\n", rank,
						shf_strerror(r), shf_error_detail());
					MPI_Abort(MPI_COMM_WORLD, 1);
				}
			} else {
				MPI_Barrier(MPI_COMM_WORLD);
			}
			mine[i] = now_us() - t0;
		}
		MPI_Reduce(mine, mx, rounds, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (rank == 0 && !warm)
			for (int i = 0; i < rounds; i++) {
				if (epoch && nep < cap)
					ep[nep++] = mx[i];
				else if (!epoch && nba < cap)
					ba[nba++] = mx[i];
			}
	}
	if (rank == 0) {
		qsort(ep, nep, sizeof(double), cmp_d);
		qsort(ba, nba, sizeof(double), cmp_d);
		double em = ep[nep / 2], bm = ba[nba / 2];
		printf("{\"bench\":\"epoch\",\"ranks\":%d,\"mode\":\"%s\",\"rounds\":%zu,"
		       "\"epoch_us_p50\":%.1f,\"epoch_us_p90\":%.1f,\"barrier_us_p50\":%.1f,"
		       "\"barrier_us_p90\":%.1f,\"ratio_p50\":%.2f}\n",
		       world, thread ? "thread" : "poll", nep, em, ep[nep * 9 / 10], bm,
		       ba[nba * 9 / 10], bm > 0 ? em / bm : 0.0);
	}
	shf_close(c);
	free(ep), free(ba), free(mine), free(mx);
	MPI_Finalize();
	return 0;
}
