/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/sort.c - ISx-style integer sort: K uniformly random
 * keys in [0, 2^31) per rank go to the rank owning their bucket (equal key
 * ranges), which sorts them.  Receive sizes are not known in advance.
 *
 *   sort --impl shuffle|mpi [--keys K] [--pack N] [--seed S]
 *
 *   shuffle: the keys are generated as they are sent (no key array): each
 *            goes into a packet of up to N keys (default 256: 1 KiB) for
 *            its owner, sent with shf_send() when full; then the partial
 *            packets and one shf_epoch().  The receiver appends to its
 *            bucket as packets arrive.
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
	if (k.impl == K_SHUFFLE)
		k_open_shuffle(&k, on_packet, &s);

	k_timer_start(&k);
	if (k.impl == K_SHUFFLE) {
		uint32_t *pk = malloc((size_t)P * (size_t)pack * 4);
		uint32_t *fill = calloc((size_t)P, 4);
		if (!pk || !fill)
			k_die(&k, "out of memory");
		for (long i = 0; i < nkeys; i++) {
			uint32_t key = (uint32_t)(k_mix(stream + (uint64_t)i) % MAX_KEY);
			int o = (int)(key / width);
			sent_sum += k_mix(key);
			uint32_t *b = pk + (size_t)o * (size_t)pack;
			b[fill[o]++] = key;
			if (fill[o] == (uint32_t)pack) {
				if (o == me) {
					on_packet(&s, me, me, 0, b, (uint32_t)pack * 4);
				} else {
					int r = shf_send(k.shf, o, 0, b, (uint32_t)pack * 4, 0);
					if (r)
						k_die(&k, "shf_send: %s (%s)", shf_strerror(r),
						      shf_error_detail());
					msgs++;
				}
				fill[o] = 0;
			}
		}
		for (int o = 0; o < P; o++) {
			uint32_t *b = pk + (size_t)o * (size_t)pack;
			if (!fill[o])
				continue;
			if (o == me) {
				on_packet(&s, me, me, 0, b, fill[o] * 4);
			} else {
				int r = shf_send(k.shf, o, 0, b, fill[o] * 4, 0);
				if (r)
					k_die(&k, "shf_send: %s", shf_strerror(r));
				msgs++;
			}
		}
		int r = shf_epoch(k.shf, 0);
		if (r)
			k_die(&k, "shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
		free(pk), free(fill);
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
		 k.impl == K_SHUFFLE ? pack : 0L);
	int rc = k_report(&k, errors == 0, errors, msgs, t,
			  (double)nkeys * (double)P / t, "keys_per_s", extra);
	if (k.impl == K_MPI)
		free(recvb);
	free(keys), free(sendb);
	kvec_free(&s.bucket);
	k_fini(&k);
	return rc;
}
