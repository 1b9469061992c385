/* SPDX-License-Identifier: MIT */
/*
 * client/runs.c - shf_send_many()'s runs (runs.h).  A window's records are
 * chained per destination through a small open-addressing hash (sized to
 * the window, cleared per window), in order within each chain; each chain
 * goes as one run, cut where a run would pass SHF_RUN_MAX_COUNT items or
 * min(max_msg, SHF_RUN_MAX_BYTES) bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "client/runs.h"
#include "proto/shm.h"

/* A run of the records from msgs[i] on along the group's chain: how many
 * fit one record of at most cap item bytes (at least one), their item
 * bytes (*bytes), and the record after them (*after). */
static unsigned run_span(const struct shf_msg *msgs, const struct shc_run_win *w, unsigned i,
			 uint32_t cap, uint32_t *bytes, unsigned *after)
{
	unsigned k = 0;
	uint32_t b = 0;
	while (i != SHC_RUN_WIN && k < SHF_RUN_MAX_COUNT) {
		uint32_t sz = shf_run_item_bytes(msgs[i].len);
		if (k && b + sz > cap)
			break;
		b += sz;
		k++;
		i = w->next[i];
	}
	*bytes = b;
	*after = i;
	return k;
}

static inline uint32_t run_cap(const struct shf_ctx *c)
{
	return c->max_msg < SHF_RUN_MAX_BYTES ? c->max_msg : SHF_RUN_MAX_BYTES;
}

/* The span of group g that starts at record `at`: its record count
 * (returned), item bytes (*b) and the record after it (*after).  A group
 * within the caps (nearly all) is one span, found without a walk. */
static unsigned group_span(const struct shf_ctx *c, const struct shf_msg *msgs,
			   const struct shc_run_win *w, unsigned g, unsigned at, uint32_t *b,
			   unsigned *after)
{
	if (at == w->first[g] && w->bytes[g] <= run_cap(c)) {
		*b = w->bytes[g];
		*after = SHC_RUN_WIN;
		return w->count[g];
	}
	return run_span(msgs, w, at, run_cap(c), b, after);
}

/* Ring bytes of the record a span of k records, b item bytes becomes: a
 * run (packed: one item header), or one plain record when k == 1. */
static inline uint64_t span_ring_bytes(const struct shf_msg *m, unsigned k, uint32_t b,
				       bool packed)
{
	if (k == 1)
		return shf_ring_rec_bytes(SHF_MSG_HDR_BYTES + m->len);
	return shf_ring_rec_bytes(SHF_RUN_HDR_BYTES +
				  (packed ? shf_run_packed_bytes(k, m->len) : b));
}

/* Group msgs[0, n) (n <= SHC_RUN_WIN) by destination and size the window: it
 * ends early when its ring bytes would pass `budget` (one record at least). */
void shc_run_group(const struct shf_ctx *c, const struct shf_msg *msgs, unsigned n,
		      uint64_t budget, struct shc_run_win *w)
{
	unsigned slots = 16;
	while (slots < 2 * n)
		slots *= 2;
	unsigned shift = 32 - (unsigned)__builtin_ctz(slots);
	memset(w->key, 0xff, slots * sizeof(w->key[0]));
	w->nruns = 0;
	w->payload = 0;
	/* one type and length for the whole window (fixed-size records, the
	 * common case): its runs go packed; else none does */
	uint32_t len0 = msgs[0].len, type0 = msgs[0].type, diff = 0;
	uint64_t payload = 0;
	for (unsigned i = 0; i < n; i++) {
		int32_t dst = msgs[i].dst;
		uint32_t h = ((uint32_t)dst * 0x9e3779b1u) >> shift;
		while (w->key[h] != -1 && w->key[h] != dst)
			h = (h + 1) & (slots - 1);
		unsigned g;
		w->next[i] = SHC_RUN_WIN;
		if (w->key[h] == -1) {
			w->key[h] = dst;
			g = w->nruns++;
			w->slot[h] = (uint16_t)g;
			w->first[g] = (uint16_t)i;
			w->count[g] = 0;
			w->bytes[g] = 0;
		} else {
			g = w->slot[h];
			w->next[w->last[g]] = (uint16_t)i;
		}
		uint32_t len = msgs[i].len;
		diff |= (len ^ len0) | (msgs[i].type ^ type0);
		w->last[g] = (uint16_t)i;
		w->count[g]++;
		/* (no overflow: len <= max_msg <= 1 MiB was checked, and a
		 * window holds at most SHC_RUN_WIN records) */
		w->bytes[g] += shf_run_item_bytes(len);
		payload += len;
	}
	w->payload = payload;
	w->n = n;
	w->packed = !diff && c->packed;
	w->ring = 0;
	w->biggest = 0;
	for (unsigned g = 0; g < w->nruns; g++) {
		for (unsigned at = w->first[g], after; at != SHC_RUN_WIN; at = after) {
			uint32_t b;
			unsigned k = group_span(c, msgs, w, g, at, &b, &after);
			uint64_t rb = span_ring_bytes(&msgs[at], k, b, w->packed);
			w->ring += rb;
			if (rb > w->biggest)
				w->biggest = (uint32_t)rb;
		}
	}
	/* over budget (big messages): take the first half of the records and
	 * group again, so that the window stays a prefix of msgs */
	if (w->ring > budget && n > 1)
		shc_run_group(c, msgs, n / 2, budget, w);
}

/* A packed run of the k records from `at` (one type and length): one
 * item header, then each payload padded with zeros to 8; room checked. */
static void run_put_packed(struct shf_ctx *c, const struct shf_msg *msgs,
			   const struct shc_run_win *w, unsigned at, unsigned k, unsigned after)
{
	const struct shf_msg *m = &msgs[at];
	uint32_t len = m->len, stride = (len + 7u) & ~7u;
	uint8_t *p = shf_ring_reserve(&c->send, SHF_RUN_HDR_BYTES + shf_run_packed_bytes(k, len),
				      SHF_REC_RUN);
	struct shf_run_hdr rh = {m->dst, k | SHF_RUN_PACKED};
	struct shf_run_item it = {m->type, len};
	memcpy(p, &rh, sizeof(rh));
	memcpy(p + SHF_RUN_HDR_BYTES, &it, sizeof(it));
	p += SHF_RUN_HDR_BYTES + SHF_RUN_ITEM_BYTES;
	if (stride == len) {
		for (unsigned i = at; i != after; i = w->next[i], p += len)
			memcpy(p, msgs[i].data, len);
		return;
	}
	for (unsigned i = at; i != after; i = w->next[i], p += stride) {
		memset(p + stride - 8, 0, 8); /* the padding */
		memcpy(p, msgs[i].data, len);
	}
}

/* One span as a plain record (k == 1) or a run; room checked. */
static void run_put(struct shf_ctx *c, const struct shf_msg *msgs, const struct shc_run_win *w,
		    unsigned at, unsigned k, uint32_t b, unsigned after, bool packed)
{
	const struct shf_msg *m = &msgs[at];
	if (k == 1) {
		uint8_t *p = shf_ring_reserve(&c->send, SHF_MSG_HDR_BYTES + m->len, SHF_REC_MSG);
		struct shf_msg_hdr h = {m->dst, m->type};
		memcpy(p, &h, sizeof(h));
		if (m->len)
			memcpy(p + SHF_MSG_HDR_BYTES, m->data, m->len);
		return;
	}
	if (packed) {
		run_put_packed(c, msgs, w, at, k, after);
		return;
	}
	uint8_t *p = shf_ring_reserve(&c->send, SHF_RUN_HDR_BYTES + b, SHF_REC_RUN);
	struct shf_run_hdr rh = {m->dst, k};
	memcpy(p, &rh, sizeof(rh));
	p += SHF_RUN_HDR_BYTES;
	for (unsigned i = at; i != after; i = w->next[i]) {
		struct shf_run_item it = {msgs[i].type, msgs[i].len};
		uint32_t sz = shf_run_item_bytes(it.len);
		memset(p + sz - 8, 0, 8); /* the padding (or a whole word) */
		memcpy(p, &it, sizeof(it));
		if (it.len)
			memcpy(p + SHF_RUN_ITEM_BYTES, msgs[i].data, it.len);
		p += sz;
	}
}

/* Write the window (room checked): one record per span. */
void shc_run_write(struct shf_ctx *c, const struct shf_msg *msgs, const struct shc_run_win *w)
{
	for (unsigned g = 0; g < w->nruns; g++) {
		for (unsigned at = w->first[g], after; at != SHC_RUN_WIN; at = after) {
			uint32_t b;
			unsigned k = group_span(c, msgs, w, g, at, &b, &after);
			run_put(c, msgs, w, at, k, b, after, w->packed);
		}
	}
}

/* ------------------------------------------------------------------ hold */

struct shc_hold *shc_hold_new(uint32_t cap)
{
	struct shc_hold *h = malloc(sizeof(*h) + cap);
	if (h) {
		h->n = 0;
		h->used = 0;
		h->cap = cap;
	}
	return h;
}

void shc_hold_shift(struct shc_hold *h, unsigned k)
{
	h->n -= k;
	if (h->n == 0) {
		h->used = 0; /* the payloads are copied; buf is free again */
		return;
	}
	/* the rest keep their payloads where they are (buf is not compacted:
	 * used only falls back to 0 once all went) */
	memmove(h->msgs, h->msgs + k, h->n * sizeof(h->msgs[0]));
}
