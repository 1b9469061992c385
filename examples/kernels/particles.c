/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/particles.c - the VPIC particle shuffle (deltafs's use
 * case): N particles of 48 B per rank (an 8-byte id and 40 bytes of data
 * that change every dump); each of D dumps routes every particle to the
 * rank chosen by a hash of its id and the dump (the rank that writes it),
 * then flushes.  The particles stay where they are: a dump sends copies.
 *
 *   particles --impl shuffle|shuffle-batch|mpi [--particles N] [--dumps D] [--seed S]
 *
 *   shuffle: one shf_send() of 48 B per particle, then shf_epoch() (the
 *            dump's flush: every copy consumed at its writer).
 *   shuffle-batch: the same records, staged (pointing into the particle
 *            array, no copy) and sent up to 256 a shf_send_many() call,
 *            then shf_epoch(); batch delivery.
 *   mpi:     counts per writer, MPI_Alltoall of the counts, the copies
 *            packed by writer into a send buffer, MPI_Alltoallv.
 * The writer consumes each copy the same way in both (a checksum; a real
 * one would append it to its log).
 *
 * Validation: per (writer, sender) the number of copies and a checksum of
 * their bytes, against what the senders computed (exchanged with
 * MPI_Alltoall after the dumps).  Rate: particles per second; also the
 * flush time per dump (shuffle: the epoch; mpi: both collectives).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define PBYTES 48

struct particle {
	uint64_t id;
	uint64_t data[5];
};
_Static_assert(sizeof(struct particle) == PBYTES, "48-byte particles");

struct pstate {
	uint64_t *cnt, *sum; /* [world]: copies received from each rank */
	uint64_t bad;
};

static uint64_t psum(const struct particle *p)
{
	uint64_t h = k_mix(p->id);
	for (int i = 0; i < 5; i++)
		h = k_mix(h ^ p->data[i]);
	return h;
}

static void consume(struct pstate *s, int src, const void *data, uint32_t len)
{
	if (len != PBYTES) {
		s->bad++;
		return;
	}
	struct particle p;
	memcpy(&p, data, PBYTES);
	s->cnt[src]++;
	s->sum[src] += psum(&p);
}

static void on_copy(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)dst, (void)type;
	consume(arg, src, data, len);
}

static void on_copies(void *arg, const struct shf_rec *recs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		consume(arg, recs[i].src, recs[i].data, recs[i].len);
}

static int writer(uint64_t id, long dump, int P)
{
	return (int)(k_mix(id ^ (uint64_t)dump * 0x9e3779b97f4a7c15ull) % (uint64_t)P);
}

static void step(struct particle *p, long n, long dump)
{
	for (long i = 0; i < n; i++)
		for (int j = 0; j < 5; j++)
			p[i].data[j] = k_mix(p[i].id * 8 + (uint64_t)j + (uint64_t)dump * 1000003);
}

int main(int argc, char **argv)
{
	long n = 100000, dumps = 4;
	struct kopt opts[] = {
		{"particles", &n, "particles per rank"},
		{"dumps", &dumps, "dumps"},
		{NULL, NULL, NULL},
	};
	struct kern k;
	k_init(&k, "particles", &argc, &argv, opts);
	if (n < 1 || dumps < 1)
		k_die(&k, "--particles and --dumps >= 1");
	int P = k.world, me = k.rank;
	size_t w = (size_t)P;
	struct particle *part = malloc((size_t)n * PBYTES);
	struct pstate s = {calloc(w, 8), calloc(w, 8), 0};
	uint64_t *exp_cnt = calloc(w, 8), *exp_sum = calloc(w, 8);
	if (!part || !s.cnt || !s.sum || !exp_cnt || !exp_sum)
		k_die(&k, "out of memory");
	for (long i = 0; i < n; i++)
		part[i].id = (uint64_t)me << 40 | (uint64_t)i;
	if (k_is_shuffle(&k))
		k_open_shuffle(&k, on_copy, on_copies, &s);
	int *scnt = NULL, *rcnt = NULL, *sdis = NULL, *rdis = NULL, *at = NULL;
	struct particle *sendb = NULL, *recvb = NULL;
	if (k.impl == K_MPI) {
		scnt = calloc(w, sizeof(int)), rcnt = calloc(w, sizeof(int));
		sdis = calloc(w, sizeof(int)), rdis = calloc(w, sizeof(int));
		at = calloc(w, sizeof(int));
		if (!scnt || !rcnt || !sdis || !rdis || !at)
			k_die(&k, "out of memory");
	}
	double t_all = 0, t_flush = 0;
	uint64_t msgs = 0;
	for (long d = 0; d < dumps; d++) {
		step(part, n, d); /* the simulation moved (not timed) */
		for (long i = 0; i < n; i++) { /* what the writers must see (not timed) */
			int o = writer(part[i].id, d, P);
			exp_cnt[o]++;
			exp_sum[o] += psum(&part[i]);
		}
		k_timer_start(&k);
		double tf;
		if (k_is_shuffle(&k)) {
			for (long i = 0; i < n; i++) {
				int o = writer(part[i].id, d, P);
				if (o == me) {
					consume(&s, me, &part[i], PBYTES);
					continue;
				}
				msgs++;
				if (k.impl == K_BATCH) {
					k_stage(&k, o, 0, &part[i], PBYTES);
					continue;
				}
				int r = shf_send(k.shf, o, 0, &part[i], PBYTES,
						 k_send_flags(k.impl));
				if (r)
					k_die(&k, "shf_send: %s (%s)", shf_strerror(r), shf_error_detail());
			}
			if (k.impl == K_BATCH)
				k_stage_flush(&k);
			tf = k_now();
			int r = shf_epoch(k.shf, 0);
			if (r)
				k_die(&k, "shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
			tf = k_now() - tf;
		} else {
			memset(scnt, 0, w * sizeof(int));
			for (long i = 0; i < n; i++)
				scnt[writer(part[i].id, d, P)] += PBYTES;
			for (size_t o = 1; o < w; o++)
				sdis[o] = sdis[o - 1] + scnt[o - 1];
			memcpy(at, sdis, w * sizeof(int));
			sendb = malloc((size_t)n * PBYTES);
			if (!sendb)
				k_die(&k, "out of memory");
			for (long i = 0; i < n; i++) {
				int o = writer(part[i].id, d, P);
				memcpy((char *)sendb + at[o], &part[i], PBYTES);
				at[o] += PBYTES;
				msgs += o != me;
			}
			tf = k_now();
			MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
			size_t total = 0;
			for (size_t o = 0; o < w; o++) {
				rdis[o] = (int)total;
				total += (size_t)rcnt[o];
			}
			recvb = malloc(total + 1);
			if (!recvb)
				k_die(&k, "out of memory");
			MPI_Alltoallv(sendb, scnt, sdis, MPI_BYTE, recvb, rcnt, rdis, MPI_BYTE,
				      MPI_COMM_WORLD);
			tf = k_now() - tf;
			for (size_t o = 0; o < w; o++)
				for (int b = 0; b < rcnt[o]; b += PBYTES)
					consume(&s, (int)o, (char *)recvb + rdis[o] + b, PBYTES);
			free(sendb), free(recvb);
			sendb = recvb = NULL;
		}
		double t = k_timer_stop(&k), tfm = 0;
		MPI_Allreduce(&tf, &tfm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		t_all += t;
		t_flush += tfm;
	}

	/* validation: what each sender sent me, against what I consumed */
	uint64_t *want_cnt = calloc(w, 8), *want_sum = calloc(w, 8), errors = s.bad;
	if (!want_cnt || !want_sum)
		k_die(&k, "out of memory");
	MPI_Alltoall(exp_cnt, 1, MPI_UINT64_T, want_cnt, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	MPI_Alltoall(exp_sum, 1, MPI_UINT64_T, want_sum, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	for (size_t o = 0; o < w; o++)
		if (want_cnt[o] != s.cnt[o] || want_sum[o] != s.sum[o]) {
			if (errors++ < 5)
				fprintf(stderr, "particles rank %d: from rank %zu %llu copies (sum "
					"%016llx), it sent %llu (sum %016llx)\n", me, o,
					(unsigned long long)s.cnt[o], (unsigned long long)s.sum[o],
					(unsigned long long)want_cnt[o],
					(unsigned long long)want_sum[o]);
		}
	char extra[160];
	snprintf(extra, sizeof(extra), "\"particles_per_rank\":%ld,\"dumps\":%ld,"
		 "\"flush_ms_per_dump\":%.3f", n, dumps, t_flush / (double)dumps * 1e3);
	int rc = k_report(&k, errors == 0, errors, msgs, t_all,
			  (double)n * (double)P * (double)dumps / t_all, "particles_per_s", extra);
	free(part), free(s.cnt), free(s.sum), free(exp_cnt), free(exp_sum);
	free(want_cnt), free(want_sum), free(scnt), free(rcnt), free(sdis), free(rdis), free(at);
	k_fini(&k);
	return rc;
}
