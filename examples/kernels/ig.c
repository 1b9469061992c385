/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/ig.c - Bale's index-gather: each rank requests T random
 * entries of a distributed table (N entries per rank; global index g on
 * rank g % world at slot g / world, value f(g)): an 8-byte slot out, the
 * 8-byte value back.
 *
 *   ig --impl shuffle|shuffle-batch|mpi [--requests T] [--table N] [--seed S]
 *
 * A reply carries only the value.  The requester knows which request it
 * answers because messages from one rank to another arrive in the order
 * sent (shuffle and MPI both promise it): it keeps, per owner, the list of
 * its requests in the order it made them.  Two phases: requests (their
 * handlers send the replies), then replies; each ends with k_phase_end()
 * (shuffle: an epoch).  The request loop lets replies run every 1024
 * requests, so few wait when the first epoch begins.
 *
 * Validation: every gathered value against f(g).  Rate: requests per
 * second (all ranks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { REQ = 0, REP = 1 };

struct ig {
	long table;
	uint64_t *tgt;     /* [T] gathered values */
	uint32_t *order;   /* request indices grouped by owner, in request order */
	uint64_t *next;    /* [world]: next position in order[] per owner */
	uint64_t *end;     /* [world] */
	uint64_t replies, served;
};

static uint64_t f(uint64_t g)
{
	return k_mix(g * 2654435761u + 17);
}

static void on_msg(struct kern *k, int src, uint32_t type, uint64_t v)
{
	struct ig *s = k->user;
	if (type == REQ) {
		if (v >= (uint64_t)s->table)
			k_die(k, "request for slot %llu from rank %d", (unsigned long long)v, src);
		s->served++;
		k_send8(k, src, REP, f(v * (uint64_t)k->world + (uint64_t)k->rank));
		return;
	}
	if (type != REP || s->next[src] >= s->end[src])
		k_die(k, "unexpected reply (type %u) from rank %d", type, src);
	s->tgt[s->order[s->next[src]++]] = v;
	s->replies++;
}

int main(int argc, char **argv)
{
	long requests = 100000, table = 100000;
	struct kopt opts[] = {
		{"requests", &requests, "requests per rank"},
		{"table", &table, "table entries per rank"},
		{NULL, NULL, NULL},
	};
	struct kern k;
	k_init(&k, "ig", &argc, &argv, opts);
	if (table < 1 || requests > UINT32_MAX)
		k_die(&k, "--table >= 1 and --requests < 2^32");
	struct ig s = {.table = table};
	size_t w = (size_t)k.world;
	s.tgt = calloc((size_t)requests + 1, 8);
	s.order = malloc(((size_t)requests + 1) * 4);
	s.next = calloc(w, 8);
	s.end = calloc(w, 8);
	uint64_t *idx = malloc(((size_t)requests + 1) * 8);
	if (!s.tgt || !s.order || !s.next || !s.end || !idx)
		k_die(&k, "out of memory");
	uint64_t total = (uint64_t)table * w, stream = k_mix(k.seed + 7) ^ (uint64_t)k.rank << 40;
	/* the requests, and per owner their order (not timed: a plan) */
	for (long i = 0; i < requests; i++) {
		idx[i] = k_mix(stream + (uint64_t)i) % total;
		s.end[idx[i] % w]++;
	}
	for (size_t o = 0, at = 0; o < w; o++) {
		s.next[o] = at;
		at += s.end[o];
		s.end[o] = at;
	}
	uint64_t *fillp = malloc(w * 8);
	if (!fillp)
		k_die(&k, "out of memory");
	memcpy(fillp, s.next, w * 8);
	for (long i = 0; i < requests; i++)
		s.order[fillp[idx[i] % w]++] = (uint32_t)i;
	free(fillp);
	k_conduit_init(&k, on_msg, &s);

	k_timer_start(&k);
	for (long i = 0; i < requests; i++) {
		k_send8(&k, (int)(idx[i] % w), REQ, idx[i] / w);
		if ((i & 1023) == 1023)
			k_progress(&k);
	}
	k_phase_end(&k); /* every request served: every reply sent */
	k_phase_end(&k); /* every reply delivered */
	double t = k_timer_stop(&k);

	uint64_t errors = 0;
	if (s.replies != (uint64_t)requests) {
		errors++;
		fprintf(stderr, "ig rank %d: %llu replies to %ld requests\n", k.rank,
			(unsigned long long)s.replies, requests);
	}
	for (long i = 0; i < requests; i++)
		if (s.tgt[i] != f(idx[i]) && errors++ < 5)
			fprintf(stderr, "ig rank %d: request %ld (index %llu): %016llx, want %016llx\n",
				k.rank, i, (unsigned long long)idx[i], (unsigned long long)s.tgt[i],
				(unsigned long long)f(idx[i]));
	char extra[128];
	snprintf(extra, sizeof(extra), "\"requests_per_rank\":%ld,\"table_per_rank\":%ld",
		 requests, table);
	int rc = k_report(&k, errors == 0, errors, (uint64_t)requests + s.served, t,
			  (double)requests * (double)k.world / t, "requests_per_s", extra);
	free(s.tgt), free(s.order), free(s.next), free(s.end), free(idx);
	k_fini(&k);
	return rc;
}
