/* SPDX-License-Identifier: MIT */
/*
 * tests/node/mpi-app.c - an MPI program that opens a shuffle context with
 * no rank, world or job given: shf_opts_init() defaults only, so the
 * library takes them from whatever launched it (mpirun, or nothing: an
 * Open MPI singleton).  Driven by tests/node/launchers.c.
 *
 *   mpi-app SYNCDIR TAG N
 *
 * After MPI_Init and shf_open(): checks shf_rank/shf_world against
 * MPI_Comm_rank/size, creates SYNCDIR/TAG.open.RANK, waits (60 s bound)
 * for SYNCDIR/TAG.go, sends N messages to every rank, shf_epoch(), and
 * checks that N * world arrived.  Exit 0 when all held, 1 otherwise.
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"

static _Atomic long delivered;

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
	atomic_fetch_add(&delivered, 1);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mpi-app SYNCDIR TAG N\n");
		return 2;
	}
	const char *dir = argv[1], *tag = argv[2];
	long n = atol(argv[3]);
	MPI_Init(&argc, &argv);
	int mr, ms;
	MPI_Comm_rank(MPI_COMM_WORLD, &mr);
	MPI_Comm_size(MPI_COMM_WORLD, &ms);

	struct shf_opts o;
	shf_opts_init(&o); /* rank, world, job: from the launcher */
	o.timeout_ms = 30000;
	struct shf_ctx *c;
	int r = shf_open(&o, on_msg, NULL, &c);
	if (r) {
		fprintf(stderr, "mpi-app %s MPI rank %d/%d: shf_open: %s (%s)\n", tag, mr, ms,
			shf_strerror(r), shf_error_detail());
		return 1;
	}
	if (shf_rank(c) != mr || shf_world(c) != ms) {
		fprintf(stderr, "mpi-app %s: shuffle rank %d/%d, MPI rank %d/%d\n", tag,
			shf_rank(c), shf_world(c), mr, ms);
		return 1;
	}
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.open.%d", dir, tag, mr);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/%s.go", dir, tag);
	for (int i = 0; access(path, F_OK) != 0; i++) {
		if (i >= 6000) {
			fprintf(stderr, "mpi-app %s rank %d: %s never came\n", tag, mr, path);
			return 1;
		}
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	uint64_t v = 0;
	for (long i = 0; i < n; i++)
		for (int d = 0; d < ms; d++)
			if ((r = shf_send(c, d, 1, &v, sizeof(v), 0))) {
				fprintf(stderr, "mpi-app %s rank %d: shf_send: %s (%s)\n", tag, mr,
					shf_strerror(r), shf_error_detail());
				return 1;
			}
	if ((r = shf_epoch(c, 30000))) {
		fprintf(stderr, "mpi-app %s rank %d: shf_epoch: %s (%s)\n", tag, mr,
			shf_strerror(r), shf_error_detail());
		return 1;
	}
	long got = atomic_load(&delivered);
	if (got != n * ms) {
		fprintf(stderr, "mpi-app %s rank %d: delivered %ld, expected %ld\n", tag, mr, got,
			n * ms);
		return 1;
	}
	shf_close(c);
	printf("mpi-app %s rank %d/%d: %ld delivered\n", tag, mr, ms, got);
	MPI_Finalize();
	return 0;
}
