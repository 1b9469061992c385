/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/histo.c - Bale's histogram: T random 8-byte updates per
 * rank into a table of N counters per rank (global index g lives on rank
 * g % world at slot g / world).
 *
 *   histo --impl shuffle|shuffle-batch|mpi [--updates T] [--table N] [--seed S]
 *
 * Validation: every rank recomputes, from the same counter-based random
 * numbers, what it sent each owner (count and a checksum of the slots);
 * MPI_Alltoall hands those to the owners, which compare them with their
 * table.  Rate: updates per second (all ranks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

struct histo {
	uint64_t *table;
	long n;
	uint64_t got;
};

static void on_update(struct kern *k, int src, uint32_t type, uint64_t slot)
{
	struct histo *h = k->user;
	if (type != 0 || slot >= (uint64_t)h->n)
		k_die(k, "update of slot %llu (type %u) from rank %d", (unsigned long long)slot,
		      type, src);
	h->table[slot]++;
	h->got++;
}

static uint64_t slot_sum(uint64_t slot)
{
	return k_mix(slot ^ 0x5151);
}

int main(int argc, char **argv)
{
	long updates = 100000, table = 1000;
	struct kopt opts[] = {
		{"updates", &updates, "updates per rank"},
		{"table", &table, "counters per rank"},
		{NULL, NULL, NULL},
	};
	struct kern k;
	k_init(&k, "histo", &argc, &argv, opts);
	if (table < 1)
		k_die(&k, "--table must be >= 1");
	struct histo h = {calloc((size_t)table, 8), table, 0};
	if (!h.table)
		k_die(&k, "out of memory");
	k_conduit_init(&k, on_update, &h);
	uint64_t total = (uint64_t)table * (uint64_t)k.world;
	uint64_t stream = k_mix(k.seed) ^ (uint64_t)k.rank << 40;

	k_timer_start(&k);
	for (long i = 0; i < updates; i++) {
		uint64_t g = k_mix(stream + (uint64_t)i) % total;
		k_send8(&k, (int)(g % (uint64_t)k.world), 0, g / (uint64_t)k.world);
	}
	k_phase_end(&k);
	double t = k_timer_stop(&k);

	/* validation: what I sent each owner, recomputed */
	uint64_t *exp = calloc((size_t)k.world * 2, 8), *got = calloc((size_t)k.world * 2, 8);
	if (!exp || !got)
		k_die(&k, "out of memory");
	for (long i = 0; i < updates; i++) {
		uint64_t g = k_mix(stream + (uint64_t)i) % total;
		int o = (int)(g % (uint64_t)k.world);
		exp[2 * o]++;
		exp[2 * o + 1] += slot_sum(g / (uint64_t)k.world);
	}
	MPI_Alltoall(exp, 2, MPI_UINT64_T, got, 2, MPI_UINT64_T, MPI_COMM_WORLD);
	uint64_t want_n = 0, want_sum = 0, have_n = 0, have_sum = 0, errors = 0;
	for (int s = 0; s < k.world; s++) {
		want_n += got[2 * s];
		want_sum += got[2 * s + 1];
	}
	for (long i = 0; i < table; i++) {
		have_n += h.table[i];
		have_sum += h.table[i] * slot_sum((uint64_t)i);
	}
	if (have_n != want_n || have_sum != want_sum || h.got != want_n) {
		errors++;
		fprintf(stderr, "histo rank %d: %llu updates (checksum %016llx), the senders "
			"sent %llu (checksum %016llx)\n", k.rank, (unsigned long long)have_n,
			(unsigned long long)have_sum, (unsigned long long)want_n,
			(unsigned long long)want_sum);
	}
	uint64_t gsum = 0, all = (uint64_t)updates * (uint64_t)k.world;
	MPI_Allreduce(&have_n, &gsum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	if (gsum != all && k.rank == 0) {
		errors++;
		fprintf(stderr, "histo: the table sums to %llu, %llu updates were made\n",
			(unsigned long long)gsum, (unsigned long long)all);
	}
	char extra[128];
	snprintf(extra, sizeof(extra), "\"updates_per_rank\":%ld,\"table_per_rank\":%ld", updates,
		 table);
	int rc = k_report(&k, errors == 0, errors, (uint64_t)updates, t, (double)all / t,
			  "updates_per_s", extra);
	free(exp), free(got), free(h.table);
	k_fini(&k);
	return rc;
}
