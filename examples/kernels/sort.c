/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/sort.c - ISx-style integer sort: K uniformly random
 * keys in [0, 2^31) per rank go to the rank owning their bucket (equal key
 * ranges), which sorts them.  Receive sizes are not known in advance.
 *
 *   sort --impl shuffle|shuffle-batch|mpi [--keys K] [--pack N] [--seed S]
 *
 *   shuffle: the keys are generated as they are sent (no key array): each
 *            goes into a packet of up to N keys (default 256: 1 KiB) for
 *            its owner, sent with shf_send() when full; then the partial
 *            packets and one shf_epoch().  The receiver appends to its
 *            bucket as packets arrive.
 *   shuffle-batch: the same packets, staged (k_stage()) and sent up to
 *            256 a shf_send_many() call; a staged packet's owner fills a
 *            fresh buffer from a pool meanwhile; batch delivery.
 *   mpi:     ISx's reference: the keys in an array, counted per owner,
 *            copied into a send buffer by owner, MPI_Alltoall of the
 *            counts, MPI_Alltoallv of the keys.
 * Then the same local sort (LSD radix, 2 passes of 16 bits).
 *
 * Validation: every bucket sorted and inside its bounds, the last key of
 * rank r not above the first of rank r+1, the key count and a checksum of
 * the keys preserved.  Rate: keys per second (all ranks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_KEY (1u << 31)

struct sortk {
	struct kern *k;
	struct kvec bucket; /* uint32_t */
	uint64_t bad;
};

static void on_packet(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	struct sortk *s = arg;
	(void)dst;
	if (type != 0 || len % 4) {
		s->bad++;
		fprintf(stderr, "sort: a %u-byte packet of type %u from rank %d\n", len, type, src);
		return;
	}
	kvec_reserve(&s->bucket, s->bucket.n + len / 4);
	memcpy((uint32_t *)s->bucket.p + s->bucket.n, data, len);
	s->bucket.n += len / 4;
}

static void on_packets(void *arg, const struct shf_rec *recs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		on_packet(arg, recs[i].src, recs[i].dst, recs[i].type, recs[i].data, recs[i].len);
}

/* The shuffle implementations' packets: one being filled per owner, and
 * (shuffle-batch) a pool for those staged but not sent yet. */
struct packets {
	uint32_t *pk;      /* [P + K_BATCH_MAX][pack] */
	uint32_t *fill;    /* [P]: keys in the owner's packet */
	unsigned *cur;     /* [P]: the owner's packet */
	unsigned *freel, nfree;
	unsigned *staged, nstaged;
};

/* Owner o's packet is done: apply it (mine), send it (shuffle) or stage
 * it and give o a free buffer (shuffle-batch).  Returns messages sent. */
static uint64_t packet_out(struct kern *k, struct sortk *s, struct packets *p, long pack, int o)
{
	uint32_t *b = p->pk + (size_t)p->cur[o] * (size_t)pack, len = p->fill[o] * 4;
	p->fill[o] = 0;
	if (o == k->rank) {
		on_packet(s, o, o, 0, b, len);
		return 0;
	}
	if (k->impl == K_SHUFFLE || k->impl == K_MORE) {
		int r = shf_send(k->shf, o, 0, b, len, k_send_flags(k->impl));
		if (r)
			k_die(k, "shf_send: %s (%s)", shf_strerror(r), shf_error_detail());
		return 1;
	}
	p->staged[p->nstaged++] = p->cur[o];
	p->cur[o] = p->freel[--p->nfree]; /* nstaged <= K_BATCH_MAX: never empty */
	if (k_stage(k, o, 0, b, len)) {
		while (p->nstaged)
			p->freel[p->nfree++] = p->staged[--p->nstaged];
	}
	return 1;
}

static void radix_sort(uint32_t *a, size_t n, uint32_t *tmp)
{
	for (int shift = 0; shift < 32; shift += 16) {
		static size_t cnt[65537];
		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[((a[i] >> shift) & 0xffff) + 1]++;
		for (int b = 0; b < 65536; b++)
			cnt[b + 1] += cnt[b];
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(a[i] >> shift) & 0xffff]++] = a[i];
		memcpy(a, tmp, n * 4);
	}
}

int main(int argc, char **argv)
{
	long nkeys = 1 << 18, pack = 256;
	struct kopt opts[] = {
		{"keys", &nkeys, "keys per rank"},
		{"pack", &pack, "shuffle: keys per packet"},
		{NULL, NULL, NULL},
	};
	struct kern k;
	k_init(&k, "sort", &argc, &argv, opts);
	if (pack < 1 || pack * 4 > 65536)
		k_die(&k, "--pack in [1, 16384]");
	int P = k.world, me = k.rank;
	uint32_t width = (uint32_t)((MAX_KEY + (uint64_t)P - 1) / (uint64_t)P);
	uint64_t stream = k_mix(k.seed + 99) ^ (uint64_t)me << 40;
	struct sortk s = {.k = &k, .bucket = {.size = 4}};
	/* the expected bucket and a little: no doubling on the way */
	kvec_reserve(&s.bucket, (size_t)nkeys + (size_t)nkeys / 16 + 1024);
	uint64_t msgs = 0, sent_sum = 0;
	uint32_t *keys = NULL, *sendb = NULL, *recvb = NULL, *tmp;
	size_t nrecv = 0;
	if (k_is_shuffle(&k))
		k_open_shuffle(&k, on_packet, on_packets, &s);

	k_timer_start(&k);
	if (k_is_shuffle(&k)) {
		unsigned nb = k.impl == K_BATCH ? K_BATCH_MAX : 0;
		struct packets p = {
			.pk = malloc(((size_t)P + nb) * (size_t)pack * 4),
			.fill = calloc((size_t)P, 4),
			.cur = malloc((size_t)P * sizeof(unsigned)),
			.freel = malloc((nb + 1) * sizeof(unsigned)),
			.staged = malloc((nb + 1) * sizeof(unsigned)),
		};
		if (!p.pk || !p.fill || !p.cur || !p.freel || !p.staged)
			k_die(&k, "out of memory");
		for (int o = 0; o < P; o++)
			p.cur[o] = (unsigned)o;
		for (unsigned j = 0; j < nb; j++)
			p.freel[p.nfree++] = (unsigned)P + j;
		for (long i = 0; i < nkeys; i++) {
			uint32_t key = (uint32_t)(k_mix(stream + (uint64_t)i) % MAX_KEY);
			int o = (int)(key / width);
			sent_sum += k_mix(key);
			p.pk[(size_t)p.cur[o] * (size_t)pack + p.fill[o]++] = key;
			if (p.fill[o] == (uint32_t)pack)
				msgs += packet_out(&k, &s, &p, pack, o);
		}
		for (int o = 0; o < P; o++)
			if (p.fill[o])
				msgs += packet_out(&k, &s, &p, pack, o);
		if (k.impl == K_BATCH)
			k_stage_flush(&k);
		int r = shf_epoch(k.shf, 0);
		if (r)
			k_die(&k, "shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
		free(p.pk), free(p.fill), free(p.cur), free(p.freel), free(p.staged);
		recvb = s.bucket.p;
		nrecv = s.bucket.n;
	} else {
		keys = malloc((size_t)nkeys * 4 + 4);
		int *scnt = calloc((size_t)P, sizeof(int)), *rcnt = calloc((size_t)P, sizeof(int));
		int *sdis = calloc((size_t)P, sizeof(int)), *rdis = calloc((size_t)P, sizeof(int));
		int *at = calloc((size_t)P, sizeof(int));
		sendb = malloc((size_t)nkeys * 4 + 4);
		if (!keys || !scnt || !rcnt || !sdis || !rdis || !at || !sendb)
			k_die(&k, "out of memory");
		for (long i = 0; i < nkeys; i++) {
			keys[i] = (uint32_t)(k_mix(stream + (uint64_t)i) % MAX_KEY);
			scnt[keys[i] / width]++;
			sent_sum += k_mix(keys[i]);
		}
		for (int o = 1; o < P; o++)
			sdis[o] = sdis[o - 1] + scnt[o - 1];
		memcpy(at, sdis, (size_t)P * sizeof(int));
		for (long i = 0; i < nkeys; i++)
			sendb[at[keys[i] / width]++] = keys[i];
		MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
		for (int o = 0; o < P; o++) {
			if (o)
				rdis[o] = rdis[o - 1] + rcnt[o - 1];
			nrecv += (size_t)rcnt[o];
			msgs += o != me && scnt[o];
		}
		recvb = malloc(nrecv * 4 + 4);
		if (!recvb)
			k_die(&k, "out of memory");
		MPI_Alltoallv(sendb, scnt, sdis, MPI_UINT32_T, recvb, rcnt, rdis, MPI_UINT32_T,
			      MPI_COMM_WORLD);
		free(scnt), free(rcnt), free(sdis), free(rdis), free(at);
	}
	tmp = malloc(nrecv * 4 + 4);
	if (!tmp)
		k_die(&k, "out of memory");
	radix_sort(recvb, nrecv, tmp);
	double t = k_timer_stop(&k);
	free(tmp);

	/* validation */
	uint64_t errors = s.bad, got_sum = 0;
	uint32_t lo = width * (uint32_t)me;
	uint64_t hi = (uint64_t)lo + width;
	for (size_t i = 0; i < nrecv; i++) {
		got_sum += k_mix(recvb[i]);
		if ((i && recvb[i - 1] > recvb[i]) || recvb[i] < lo || recvb[i] >= hi)
			if (errors++ < 5)
				fprintf(stderr, "sort rank %d: key %zu (%u) out of order or outside "
					"[%u, %llu)\n", me, i, recvb[i], lo, (unsigned long long)hi);
	}
	uint64_t sums[3] = {sent_sum, got_sum, nrecv}, tot[3];
	MPI_Allreduce(sums, tot, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	if (me == 0 && (tot[0] != tot[1] || tot[2] != (uint64_t)nkeys * (uint64_t)P)) {
		errors++;
		fprintf(stderr, "sort: %llu keys after, %llu before; checksums %016llx, %016llx\n",
			(unsigned long long)tot[2], (unsigned long long)nkeys * (unsigned long long)P,
			(unsigned long long)tot[1], (unsigned long long)tot[0]);
	}
	/* across ranks: my last key not above the next rank's first */
	uint32_t first = nrecv ? recvb[0] : UINT32_MAX, prev_last = 0;
	uint32_t last = nrecv ? recvb[nrecv - 1] : 0;
	MPI_Sendrecv(&last, 1, MPI_UINT32_T, me + 1 < P ? me + 1 : MPI_PROC_NULL, 5, &prev_last, 1,
		     MPI_UINT32_T, me ? me - 1 : MPI_PROC_NULL, 5, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	if (me && nrecv && prev_last > first)
		errors++;
	char extra[128];
	snprintf(extra, sizeof(extra), "\"keys_per_rank\":%ld,\"pack\":%ld", nkeys,
		 k_is_shuffle(&k) ? pack : 0L);
	int rc = k_report(&k, errors == 0, errors, msgs, t,
			  (double)nkeys * (double)P / t, "keys_per_s", extra);
	if (k.impl == K_MPI)
		free(recvb);
	free(keys), free(sendb);
	kvec_free(&s.bucket);
	k_fini(&k);
	return rc;
}
