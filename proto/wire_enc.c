/* SPDX-License-Identifier: MIT */
/*
 * proto/wire_enc.c - encode daemon <-> daemon messages: the batch builder
 * (records and runs) and one encoder per kind.  Each encoder checks what
 * it wrote as the receiver would (shf_wire_check), so nothing it returns
 * can be refused.
 */
#include "proto/wire.h"
#include "proto/shm.h"
#include "proto/wire_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void put_hdr(uint8_t *b, unsigned kind, uint32_t src, uint32_t dst)
{
	P32(b, hdr, magic, SHF_WIRE_MAGIC);
	P16(b, hdr, version, SHF_WIRE_VERSION);
	P16(b, hdr, kind, (uint16_t)kind);
	P32(b, hdr, src_node, src);
	P32(b, hdr, dst_node, dst);
	P64(b, hdr, src_session, 0);
	P64(b, hdr, dst_session, 0);
}

int shf_wire_batch_begin(struct shf_wire_batch_enc *e, void *buf, size_t cap,
			 uint32_t src_node, uint32_t dst_node, uint64_t job_hash)
{
	if (cap > UINT32_MAX)
		cap = UINT32_MAX & ~(uint32_t)7;
	if (cap < SHF_WIRE_BATCH_HDR + SHF_WIRE_REC_HDR)
		return -ENOBUFS;
	e->buf = buf;
	e->cap = (uint32_t)cap;
	e->off = SHF_WIRE_BATCH_HDR;
	e->count = 0;
	e->job_hash = job_hash;
	memset(e->buf, 0, SHF_WIRE_BATCH_HDR);
	put_hdr(e->buf, SHF_WIRE_BATCH, src_node, dst_node);
	P64(e->buf, batch, job_hash, job_hash);
	return 0;
}

bool shf_wire_batch_fits(const struct shf_wire_batch_enc *e, uint32_t len)
{
	return shf_wire_rec_bytes(len) <= (uint64_t)(e->cap - e->off);
}

void *shf_wire_batch_add(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
			 uint32_t type, uint32_t len)
{
	if (!shf_wire_dst_ok(dst_rank) || !shf_wire_rank_ok(src_rank) || !shf_wire_batch_fits(e, len))
		return NULL;
	uint8_t *p = e->buf + e->off;
	uint64_t need = shf_wire_rec_bytes(len);
	P32(p, rec, dst_rank, (uint32_t)dst_rank);
	P32(p, rec, src_rank, (uint32_t)src_rank);
	P32(p, rec, type, type);
	P32(p, rec, len, len);
	/* zero the padding; the payload is the caller's to write */
	memset(p + SHF_WIRE_REC_HDR + len, 0, (size_t)(need - SHF_WIRE_REC_HDR - len));
	e->off += (uint32_t)need;
	e->count++;
	return p + SHF_WIRE_REC_HDR;
}

void *shf_wire_batch_add_run(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
			     uint32_t count, uint32_t bytes)
{
	if (!shf_wire_rank_ok(dst_rank) || !shf_wire_rank_ok(src_rank) || count == 0 || count > SHF_RUN_MAX_COUNT ||
	    bytes > SHF_RUN_MAX_BYTES || bytes % 8 || !shf_wire_batch_fits(e, bytes))
		return NULL;
	uint8_t *p = e->buf + e->off;
	P32(p, rec, dst_rank, (uint32_t)dst_rank);
	P32(p, rec, src_rank, (uint32_t)src_rank);
	P32(p, rec, type, count);
	P32(p, rec, len, SHF_WIRE_REC_RUN | bytes);
	e->off += SHF_WIRE_REC_HDR + bytes;
	e->count++;
	return p + SHF_WIRE_REC_HDR;
}

int shf_wire_batch_put(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
		       uint32_t type, const void *data, uint32_t len)
{
	if (!shf_wire_dst_ok(dst_rank) || !shf_wire_rank_ok(src_rank))
		return -EINVAL;
	void *p = shf_wire_batch_add(e, dst_rank, src_rank, type, len);
	if (!p)
		return -ENOSPC;
	if (len)
		memcpy(p, data, len);
	return 0;
}

size_t shf_wire_batch_end(struct shf_wire_batch_enc *e, uint64_t seq)
{
	if (e->count == 0 || seq == 0)
		return 0;
	P64(e->buf, batch, seq, seq);
	P32(e->buf, batch, count, e->count);
	P32(e->buf, batch, bytes, e->off - SHF_WIRE_BATCH_HDR);
	return e->off;
}

/* ------------------------------------------------------------- packing */

#define PACK_NONE UINT32_MAX
#define PACK_SLOTS (2u * SHF_WIRE_PACK_PAIRS)

int shf_wire_pack_init(struct shf_wire_pack *w, size_t cap)
{
	memset(w, 0, sizeof(*w));
	if (cap > UINT32_MAX)
		cap = UINT32_MAX & ~(uint32_t)7;
	w->cap = (uint32_t)cap;
	w->out = malloc(cap);
	w->next = malloc((cap / 8 + 1) * sizeof(*w->next));
	w->pairs = malloc(SHF_WIRE_PACK_PAIRS * sizeof(*w->pairs));
	w->slot = calloc(PACK_SLOTS, sizeof(*w->slot));
	return w->out && w->next && w->pairs && w->slot ? 0 : -ENOMEM;
}

void shf_wire_pack_free(struct shf_wire_pack *w)
{
	free(w->out);
	free(w->next);
	free(w->pairs);
	free(w->slot);
	memset(w, 0, sizeof(*w));
}

/* A new generation of slots: every slot of the last one is free again. */
static void pack_next_gen(struct shf_wire_pack *w)
{
	if (++w->gen == 0) {
		memset(w->slot, 0, PACK_SLOTS * sizeof(*w->slot));
		w->gen = 1;
	}
}

/* The pair of key in this generation, a new one, or PACK_NONE when the
 * pairs are all taken. */
static uint32_t pack_pair(struct shf_wire_pack *w, uint64_t key, uint32_t *np, uint32_t rec)
{
	uint32_t h = (uint32_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 53) & (PACK_SLOTS - 1);
	for (;; h = (h + 1) & (PACK_SLOTS - 1)) {
		struct shf_wire_pack_slot *s = &w->slot[h];
		if (s->gen == w->gen) {
			if (s->key == key)
				return s->pair;
			continue; /* at most half the slots are ever used: this ends */
		}
		if (*np == SHF_WIRE_PACK_PAIRS)
			return PACK_NONE;
		*s = (struct shf_wire_pack_slot){key, w->gen, *np};
		w->pairs[*np][0] = rec;
		w->pairs[*np][1] = PACK_NONE;
		w->pairs[*np][2] = 0;
		return (*np)++;
	}
}

/* The run being filled in w->out. */
struct pack_run {
	uint32_t at;    /* its record header's offset; PACK_NONE: none open */
	uint32_t items; /* messages in it */
	uint32_t bytes; /* bytes of its items */
};

/* Close the open run that ends at o: its header, or, with one item, a
 * message record (8 bytes shorter).  Returns the new end. */
static uint32_t pack_close(uint8_t *out, struct pack_run *r, int32_t dst, int32_t src, uint32_t o,
			   uint32_t *count)
{
	if (r->at == PACK_NONE)
		return o;
	uint8_t *h = out + r->at;
	if (r->items == 1) {
		uint32_t type = shf_wire_get32(h + SHF_WIRE_REC_HDR);
		uint32_t len = shf_wire_get32(h + SHF_WIRE_REC_HDR + 4);
		P32(h, rec, type, type);
		P32(h, rec, len, len);
		memmove(h + SHF_WIRE_REC_HDR, h + SHF_WIRE_REC_HDR + SHF_RUN_ITEM_BYTES,
			r->bytes - SHF_RUN_ITEM_BYTES);
		o -= SHF_RUN_ITEM_BYTES;
	} else {
		P32(h, rec, type, r->items);
		P32(h, rec, len, SHF_WIRE_REC_RUN | r->bytes);
	}
	P32(h, rec, dst_rank, (uint32_t)dst);
	P32(h, rec, src_rank, (uint32_t)src);
	(*count)++;
	r->at = PACK_NONE;
	return o;
}

/* n bytes (a multiple of 8) from 8-aligned s to 8-aligned d: small
 * payloads word by word, without a call. */
static inline void pack_copy(uint8_t *d, const uint8_t *s, uint32_t n)
{
	if (n > 64) {
		memcpy(d, s, n);
		return;
	}
	for (uint32_t k = 0; k < n; k += 8) {
		uint64_t v;
		memcpy(&v, s + k, 8);
		memcpy(d + k, &v, 8);
	}
}

/* A record header, read at once (little-endian host: proto/wire.c). */
struct pack_hdr {
	int32_t dst, src;
	uint32_t type, len;
};

static inline struct pack_hdr pack_hdr_at(const uint8_t *rec)
{
	struct pack_hdr h;
	memcpy(&h, rec, sizeof(h));
	return h;
}

/* Bytes a record with this len takes in the batch, header included. */
static inline uint32_t pack_rec_bytes(uint32_t len)
{
	return SHF_WIRE_REC_HDR + (len & SHF_WIRE_REC_RUN ? len & ~SHF_WIRE_REC_RUN
							  : (len + 7u) & ~7u);
}

/* One pair's records, in order, into out from o; returns the new end. */
static uint32_t pack_emit(const uint8_t *restrict in, uint8_t *restrict out,
			  const uint32_t *restrict next, const uint32_t *pair, uint32_t o,
			  uint32_t *count)
{
	uint32_t i = pair[0];
	struct pack_hdr h = pack_hdr_at(in + 8 * (size_t)i);
	if (pair[2] == 1) { /* a lone message (or a broadcast): as it is */
		uint32_t sz = pack_rec_bytes(h.len);
		memcpy(out + o, in + 8 * (size_t)i, sz);
		(*count)++;
		return o + sz;
	}
	const int32_t dst = h.dst, src = h.src;
	struct pack_run r = {PACK_NONE, 0, 0};
	for (; i != PACK_NONE; i = next[i]) {
		const uint8_t *rec = in + 8 * (size_t)i;
		h = pack_hdr_at(rec);
		if (!(h.len & SHF_WIRE_REC_RUN)) {
			uint32_t pl = (h.len + 7u) & ~7u, isz = SHF_RUN_ITEM_BYTES + pl;
			if (r.items == SHF_RUN_MAX_COUNT || r.bytes + isz > SHF_RUN_MAX_BYTES ||
			    r.at == PACK_NONE) {
				o = pack_close(out, &r, dst, src, o, count);
				if (isz > SHF_RUN_MAX_BYTES) { /* too large for a run: as it is */
					memcpy(out + o, rec, SHF_WIRE_REC_HDR + pl);
					o += SHF_WIRE_REC_HDR + pl;
					(*count)++;
					continue;
				}
				r = (struct pack_run){o, 0, 0};
				o += SHF_WIRE_REC_HDR;
			}
			uint8_t *it = out + o;
			uint32_t ih[2] = {h.type, h.len};
			memcpy(it, ih, sizeof(ih));
			pack_copy(it + SHF_RUN_ITEM_BYTES, rec + SHF_WIRE_REC_HDR, pl);
			o += isz;
			r.items++;
			r.bytes += isz;
			continue;
		}
		uint32_t bytes = h.len & ~SHF_WIRE_REC_RUN;
		if (r.at == PACK_NONE || r.items + h.type > SHF_RUN_MAX_COUNT ||
		    r.bytes + bytes > SHF_RUN_MAX_BYTES) {
			o = pack_close(out, &r, dst, src, o, count);
			r = (struct pack_run){o, 0, 0};
			o += SHF_WIRE_REC_HDR;
		}
		memcpy(out + o, rec + SHF_WIRE_REC_HDR, bytes);
		o += bytes;
		r.items += h.type;
		r.bytes += bytes;
	}
	return pack_close(out, &r, dst, src, o, count);
}

uint32_t shf_wire_batch_pack(struct shf_wire_batch_enc *e, struct shf_wire_pack *w)
{
	if (!w->out || e->off > w->cap || e->count < 2)
		return 0;
	const uint8_t *restrict in = e->buf;
	uint32_t np = 0, (*restrict pairs)[3] = w->pairs;
	uint32_t *restrict next = w->next;
	bool merge = false;
	uint64_t last_key = UINT64_MAX; /* a pair's records often come in a row */
	uint32_t last = PACK_NONE;
	pack_next_gen(w);
	/* the records of each pair, linked in order (a record's index: its
	 * offset / 8); a broadcast is a pair of its own and starts a new
	 * generation, so no pair reaches across it */
	for (uint32_t at = SHF_WIRE_BATCH_HDR, end = e->off; at < end;) {
		struct pack_hdr h = pack_hdr_at(in + at);
		uint32_t i = at / 8;
		next[i] = PACK_NONE;
		at += pack_rec_bytes(h.len);
		uint32_t p;
		if (h.dst == SHF_WIRE_DST_BCAST) {
			if (np == SHF_WIRE_PACK_PAIRS)
				return 0;
			p = np++;
			pairs[p][0] = i;
			pairs[p][1] = i;
			pairs[p][2] = 1;
			pack_next_gen(w);
			last_key = UINT64_MAX;
			continue;
		}
		uint64_t key = (uint64_t)(uint32_t)h.src << 32 | (uint32_t)h.dst;
		if (key == last_key) {
			p = last;
		} else {
			p = pack_pair(w, key, &np, i);
			if (p == PACK_NONE)
				return 0;
			last_key = key;
			last = p;
		}
		if (pairs[p][1] != PACK_NONE) {
			next[pairs[p][1]] = i;
			merge = true;
		}
		pairs[p][1] = i;
		pairs[p][2] += h.len & SHF_WIRE_REC_RUN ? h.type : 1;
	}
	if (!merge)
		return 0;
	uint32_t o = SHF_WIRE_BATCH_HDR, count = 0;
	for (uint32_t p = 0; p < np; p++)
		o = pack_emit(in, w->out, next, pairs[p], o, &count);
	memcpy(e->buf + SHF_WIRE_BATCH_HDR, w->out + SHF_WIRE_BATCH_HDR, o - SHF_WIRE_BATCH_HDR);
	uint32_t saved = e->off - o;
	e->off = o;
	e->count = count;
	return saved;
}

/* Validate what an encoder wrote as the receiver would. */
static long finish(const uint8_t *b, size_t n, uint32_t src, uint32_t dst)
{
	struct shf_wire_hdr h;
	uint32_t max = src > dst ? src : dst;
	uint32_t nodes = max == UINT32_MAX ? UINT32_MAX : max + 1; /* id UINT32_MAX never fits */
	if (shf_wire_check(b, n, nodes, dst, &h) != 0)
		return -EINVAL;
	return (long)n;
}

long shf_wire_enc_ack(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		      const struct shf_wire_ack *a)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_ACK_BYTES)
		return -ENOBUFS;
	put_hdr(b, SHF_WIRE_ACK, src_node, dst_node);
	P64(b, ack, acked_seq, a->acked_seq);
	P32(b, ack, window, a->window);
	P32(b, ack, dropped, a->dropped);
	return finish(b, SHF_WIRE_ACK_BYTES, src_node, dst_node);
}

long shf_wire_enc_heartbeat(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			    const struct shf_wire_heartbeat *hb)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_HEARTBEAT_BYTES)
		return -ENOBUFS;
	put_hdr(b, SHF_WIRE_HEARTBEAT, src_node, dst_node);
	P64(b, heartbeat, time_ns, hb->time_ns);
	P64(b, heartbeat, incarnation, hb->incarnation);
	P32(b, heartbeat, flags, hb->flags);
	P32(b, heartbeat, counter, (hb->flags & SHF_WIRE_HB_CTR) ? hb->counter : 0u);
	memcpy(b + OFF(heartbeat, nonce), hb->nonce, SHF_WIRE_NONCE_BYTES);
	memcpy(b + OFF(heartbeat, mac), hb->mac, SHF_WIRE_MAC_BYTES);
	return finish(b, SHF_WIRE_HEARTBEAT_BYTES, src_node, dst_node);
}

long shf_wire_enc_join(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		       const struct shf_wire_join *j, const struct shf_wire_range *ranges,
		       uint32_t nranges)
{
	uint8_t *b = buf;
	uint64_t n = shf_wire_join_bytes(nranges);
	if (cap < n)
		return -ENOBUFS;
	size_t nl = strnlen(j->name, SHF_JOB_MAX);
	if (nl == SHF_JOB_MAX)
		return -EINVAL;
	memset(b, 0, SHF_WIRE_JOIN_FIXED);
	put_hdr(b, SHF_WIRE_JOB_JOIN, src_node, dst_node);
	P64(b, join, job_hash, shf_wire_job_hash(j->name));
	P32(b, join, world, (uint32_t)j->world);
	P32(b, join, nranges, nranges);
	P32(b, join, uid, j->uid);
	P32(b, join, flags, j->flags);
	memcpy(b + OFF(join, name), j->name, nl); /* rest stays zero */
	for (uint32_t i = 0; i < nranges; i++) {
		uint8_t *p = b + SHF_WIRE_JOIN_FIXED + (size_t)i * SHF_WIRE_RANGE_BYTES;
		P32(p, range, first, (uint32_t)ranges[i].first);
		P32(p, range, count, (uint32_t)ranges[i].count);
	}
	return finish(b, (size_t)n, src_node, dst_node);
}

uint32_t shf_wire_map_compact(struct shf_wire_map_ent *e, uint32_t ne)
{
	/* blocks of one size on consecutive nodes, consecutive ranks: repeat */
	uint32_t k = 0;
	for (uint32_t i = 0; i < ne; i++) {
		struct shf_wire_map_ent *t = k ? &e[k - 1] : NULL;
		if (t && e[i].count == t->count && e[i].repeat == 0 && e[i].again == 0 &&
		    t->again == 0 && (int64_t)e[i].first == t->first + shf_wire_map_ent_ranks(t) &&
		    (uint64_t)e[i].node == (uint64_t)t->node + t->repeat + 1) {
			t->repeat++;
			continue;
		}
		e[k++] = e[i];
	}
	/* runs of one shape on the same nodes, consecutive ranks: again */
	uint32_t m = 0;
	for (uint32_t i = 0; i < k; i++) {
		struct shf_wire_map_ent *t = m ? &e[m - 1] : NULL;
		if (t && e[i].count == t->count && e[i].node == t->node &&
		    e[i].repeat == t->repeat && e[i].again == 0 && t->again < UINT32_MAX &&
		    (int64_t)e[i].first == t->first + shf_wire_map_ent_ranks(t)) {
			t->again++;
			continue;
		}
		e[m++] = e[i];
	}
	return m;
}

long shf_wire_enc_map(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		      const struct shf_wire_map *m, const struct shf_wire_map_ent *ents,
		      uint32_t nents)
{
	uint8_t *b = buf;
	uint64_t n = shf_wire_map_bytes(nents);
	if (cap < n)
		return -ENOBUFS;
	size_t nl = strnlen(m->name, SHF_JOB_MAX);
	if (nl == SHF_JOB_MAX)
		return -EINVAL;
	memset(b, 0, (size_t)n);
	put_hdr(b, SHF_WIRE_JOB_MAP, src_node, dst_node);
	P64(b, map, job_hash, shf_wire_job_hash(m->name));
	P32(b, map, world, (uint32_t)m->world);
	P32(b, map, nents, nents);
	P32(b, map, uid, m->uid);
	P32(b, map, flags, m->flags);
	memcpy(b + OFF(map, name), m->name, nl);
	uint32_t max = src_node > dst_node ? src_node : dst_node;
	for (uint32_t i = 0; i < nents; i++) {
		uint8_t *p = b + SHF_WIRE_MAP_FIXED + (size_t)i * SHF_WIRE_MAP_ENT_BYTES;
		P32(p, map_ent, first, (uint32_t)ents[i].first);
		P32(p, map_ent, count, (uint32_t)ents[i].count);
		P32(p, map_ent, node, ents[i].node);
		P32(p, map_ent, repeat, ents[i].repeat);
		P32(p, map_ent, again, ents[i].again);
		if (ents[i].repeat > UINT32_MAX - 1 - ents[i].node)
			return -EINVAL;
		if (ents[i].node + ents[i].repeat > max)
			max = ents[i].node + ents[i].repeat;
	}
	/* validated as by a receiver that knows every node named */
	struct shf_wire_hdr h;
	if (max == UINT32_MAX || shf_wire_check(b, (size_t)n, max + 1, dst_node, &h) != 0)
		return -EINVAL;
	return (long)n;
}

long shf_wire_enc_deny(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		       const struct shf_wire_deny *dn)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_DENY_BYTES)
		return -ENOBUFS;
	size_t nl = strnlen(dn->name, SHF_JOB_MAX);
	if (nl == SHF_JOB_MAX)
		return -EINVAL;
	memset(b, 0, SHF_WIRE_DENY_BYTES);
	put_hdr(b, SHF_WIRE_JOB_DENY, src_node, dst_node);
	P64(b, deny, job_hash, shf_wire_job_hash(dn->name));
	P32(b, deny, reason, (uint32_t)dn->reason);
	P32(b, deny, other_node, dn->other_node);
	P32(b, deny, other_uid, dn->other_uid);
	P32(b, deny, other_world, (uint32_t)dn->other_world);
	memcpy(b + OFF(deny, name), dn->name, nl);
	struct shf_wire_hdr h;
	uint32_t max = src_node > dst_node ? src_node : dst_node;
	if (dn->other_node > max)
		max = dn->other_node;
	if (max == UINT32_MAX || shf_wire_check(b, SHF_WIRE_DENY_BYTES, max + 1, dst_node, &h) != 0)
		return -EINVAL;
	return SHF_WIRE_DENY_BYTES;
}

long shf_wire_enc_leave(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			const struct shf_wire_leave *l)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_LEAVE_BYTES)
		return -ENOBUFS;
	memset(b, 0, SHF_WIRE_LEAVE_BYTES);
	put_hdr(b, SHF_WIRE_JOB_LEAVE, src_node, dst_node);
	P64(b, leave, job_hash, l->job_hash);
	P32(b, leave, rank, (uint32_t)l->rank);
	P32(b, leave, reason, (uint32_t)l->reason);
	P32(b, leave, lost_node, l->lost_node);
	/* validated as by a receiver that knows every node named */
	struct shf_wire_hdr h;
	uint32_t max = src_node > dst_node ? src_node : dst_node;
	if (l->reason == -EHOSTDOWN && l->lost_node > max)
		max = l->lost_node;
	if (max == UINT32_MAX || shf_wire_check(b, SHF_WIRE_LEAVE_BYTES, max + 1, dst_node, &h) != 0)
		return -EINVAL;
	return SHF_WIRE_LEAVE_BYTES;
}

long shf_wire_enc_epoch_kind(void *buf, size_t cap, unsigned kind, uint32_t src_node,
			     uint32_t dst_node, const struct shf_wire_epoch *ep)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_EPOCH_BYTES)
		return -ENOBUFS;
	if (kind != SHF_WIRE_EPOCH_UP && kind != SHF_WIRE_EPOCH_DOWN && kind != SHF_WIRE_EPOCH_ABORT)
		return -EINVAL;
	put_hdr(b, (uint16_t)kind, src_node, dst_node);
	P64(b, epoch, job_hash, ep->job_hash);
	P64(b, epoch, epoch, ep->epoch);
	P32(b, epoch, phase, ep->phase);
	P32(b, epoch, count, ep->count);
	return finish(b, SHF_WIRE_EPOCH_BYTES, src_node, dst_node);
}

long shf_wire_enc_drop(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		       const struct shf_wire_drop *d)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_DROP_BYTES)
		return -ENOBUFS;
	put_hdr(b, SHF_WIRE_DROP, src_node, dst_node);
	P64(b, drop, job_hash, d->job_hash);
	P64(b, drop, seq, d->seq);
	P32(b, drop, src_rank, (uint32_t)d->src_rank);
	P32(b, drop, dst_rank, (uint32_t)d->dst_rank);
	P32(b, drop, count, d->count);
	P32(b, drop, reason, (uint32_t)d->reason);
	return finish(b, SHF_WIRE_DROP_BYTES, src_node, dst_node);
}

long shf_wire_enc_fan_req(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			  uint32_t n_nodes, const struct shf_wire_fan_req *r,
			  const uint32_t *targets)
{
	uint8_t *b = buf;
	uint64_t n = shf_wire_fan_req_bytes(r->ntargets, r->args_len);
	struct shf_wire_hdr h;
	if (cap < n || n > UINT32_MAX)
		return -ENOBUFS;
	size_t cl = strnlen(r->cmd, SHF_WIRE_FAN_CMD_MAX);
	if (cl == SHF_WIRE_FAN_CMD_MAX)
		return -EINVAL;
	memset(b, 0, SHF_WIRE_FAN_REQ_FIXED);
	put_hdr(b, SHF_WIRE_FAN_REQ, src_node, dst_node);
	P64(b, fan_req, req_id, r->req_id);
	P32(b, fan_req, origin, r->origin);
	P32(b, fan_req, uid, r->uid);
	P32(b, fan_req, budget_ms, r->budget_ms);
	P32(b, fan_req, fanout, r->fanout);
	P32(b, fan_req, ntargets, r->ntargets);
	P32(b, fan_req, args_len, r->args_len);
	memcpy(b + OFF(fan_req, cmd), r->cmd, cl);
	for (uint32_t i = 0; i < r->ntargets; i++)
		shf_wire_put32(b + SHF_WIRE_FAN_REQ_FIXED + (size_t)i * 4u, targets[i]);
	if (r->args_len)
		memcpy(b + SHF_WIRE_FAN_REQ_FIXED + (size_t)r->ntargets * 4u, r->args, r->args_len);
	if (shf_wire_check(b, (size_t)n, n_nodes, dst_node, &h) != 0)
		return -EINVAL;
	return (long)n;
}

long shf_wire_enc_fan_ans(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			  uint32_t n_nodes, const struct shf_wire_fan_ans *a)
{
	uint8_t *b = buf;
	uint64_t n = SHF_WIRE_FAN_ANS_HDR + (uint64_t)a->len;
	struct shf_wire_hdr h;
	if (cap < n || n > UINT32_MAX)
		return -ENOBUFS;
	put_hdr(b, SHF_WIRE_FAN_ANS, src_node, dst_node);
	P64(b, fan_ans, req_id, a->req_id);
	P32(b, fan_ans, origin, a->origin);
	P32(b, fan_ans, total, a->total);
	P32(b, fan_ans, offset, a->offset);
	P32(b, fan_ans, len, a->len);
	P32(b, fan_ans, flags, 0);
	P32(b, fan_ans, reserved, 0);
	if (a->len)
		memcpy(b + SHF_WIRE_FAN_ANS_HDR, a->data, a->len);
	if (shf_wire_check(b, (size_t)n, n_nodes, dst_node, &h) != 0)
		return -EINVAL;
	return (long)n;
}

long shf_wire_enc_fwd_hdr(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node)
{
	if (cap < SHF_WIRE_FWD_HDR)
		return -ENOBUFS;
	if (src_node == dst_node)
		return -EINVAL;
	put_hdr(buf, SHF_WIRE_FWD, src_node, dst_node);
	return SHF_WIRE_FWD_HDR;
}

long shf_wire_enc_bundle_begin(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node)
{
	if (cap < SHF_WIRE_BUNDLE_HDR)
		return -ENOBUFS;
	if (src_node == dst_node)
		return -EINVAL;
	put_hdr(buf, SHF_WIRE_FWD_BUNDLE, src_node, dst_node);
	P32(buf, fwd_bundle, count, 0);
	P32(buf, fwd_bundle, reserved, 0);
	return SHF_WIRE_BUNDLE_HDR;
}

long shf_wire_enc_bundle_add(void *buf, size_t cap, size_t off, const void *fwd, uint32_t len)
{
	uint8_t *b = buf;
	uint64_t need = shf_wire_bundle_item_bytes(len);
	if (off < SHF_WIRE_BUNDLE_HDR || off > cap || need > cap - off ||
	    len < SHF_WIRE_FWD_HDR)
		return -ENOBUFS;
	uint8_t *it = b + off;
	P32(it, bundle_item, len, len);
	P32(it, bundle_item, reserved, 0);
	uint8_t *m = it + SHF_WIRE_BUNDLE_ITEM;
	if (m != (const uint8_t *)fwd)
		memmove(m, fwd, len);
	/* the bundle's hop, its tags zero (the bundle's are stamped) */
	put_hdr(m, SHF_WIRE_FWD, G32(b, hdr, src_node), G32(b, hdr, dst_node));
	memset(m + len, 0, (size_t)(need - SHF_WIRE_BUNDLE_ITEM - len));
	P32(b, fwd_bundle, count, G32(b, fwd_bundle, count) + 1);
	return (long)(off + need);
}

long shf_wire_enc_fwd_lost(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			   uint32_t lost)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_FWD_LOST_BYTES)
		return -ENOBUFS;
	put_hdr(b, SHF_WIRE_FWD_LOST, src_node, dst_node);
	P32(b, fwd_lost, lost, lost);
	P32(b, fwd_lost, reserved, 0);
	uint32_t max = src_node > dst_node ? src_node : dst_node;
	max = max > lost ? max : lost;
	struct shf_wire_hdr h;
	if (max == UINT32_MAX || shf_wire_check(b, SHF_WIRE_FWD_LOST_BYTES, max + 1, dst_node, &h))
		return -EINVAL;
	return SHF_WIRE_FWD_LOST_BYTES;
}
