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
	e->msgs = 0;
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
	e->msgs++;
	return p + SHF_WIRE_REC_HDR;
}

void *shf_wire_batch_add_run(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
			     uint32_t count, uint32_t bytes)
{
	uint32_t n = shf_run_n(count);
	if (!shf_wire_rank_ok(dst_rank) || !shf_wire_rank_ok(src_rank) || n == 0 || n > SHF_RUN_MAX_COUNT ||
	    bytes > SHF_RUN_MAX_BYTES || bytes % 8 || !shf_wire_batch_fits(e, bytes))
		return NULL;
	uint8_t *p = e->buf + e->off;
	P32(p, rec, dst_rank, (uint32_t)dst_rank);
	P32(p, rec, src_rank, (uint32_t)src_rank);
	P32(p, rec, type, count); /* (SHF_RUN_PACKED as it is) */
	P32(p, rec, len, SHF_WIRE_REC_RUN | bytes);
	e->off += SHF_WIRE_REC_HDR + bytes;
	e->count++;
	e->msgs += n;
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
			const struct shf_wire_leave *l, const struct shf_wire_leave_ent *e,
			uint32_t ne)
{
	uint8_t *b = buf;
	uint64_t n = shf_wire_leave_bytes(ne);
	if (cap < n)
		return -ENOBUFS;
	memset(b, 0, (size_t)n);
	put_hdr(b, SHF_WIRE_JOB_LEAVE, src_node, dst_node);
	P64(b, leave, job_hash, l->job_hash);
	P32(b, leave, world, (uint32_t)l->world);
	P32(b, leave, nents, ne);
	P32(b, leave, flags, l->flags);
	/* validated as by a receiver that knows every node named */
	uint32_t max = src_node > dst_node ? src_node : dst_node;
	for (uint32_t i = 0; i < ne; i++) {
		uint8_t *p = b + SHF_WIRE_LEAVE_FIXED + (size_t)i * SHF_WIRE_LEAVE_ENT_BYTES;
		P32(p, leave_ent, first, (uint32_t)e[i].first);
		P32(p, leave_ent, count, (uint32_t)e[i].count);
		P32(p, leave_ent, reason, (uint32_t)e[i].reason);
		P32(p, leave_ent, lost_node, e[i].lost_node);
		P32(p, leave_ent, node, e[i].node);
		if (e[i].reason == -EHOSTDOWN && e[i].lost_node > max)
			max = e[i].lost_node;
		if (e[i].node > max)
			max = e[i].node;
	}
	struct shf_wire_hdr h;
	if (max == UINT32_MAX || shf_wire_check(b, (size_t)n, max + 1, dst_node, &h) != 0)
		return -EINVAL;
	return (long)n;
}

long shf_wire_enc_leave_ask(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			    const struct shf_wire_leave_ask *a)
{
	uint8_t *b = buf;
	if (cap < SHF_WIRE_LEAVE_ASK_BYTES)
		return -ENOBUFS;
	memset(b, 0, SHF_WIRE_LEAVE_ASK_BYTES);
	put_hdr(b, SHF_WIRE_JOB_LEAVE_ASK, src_node, dst_node);
	P64(b, leave_ask, job_hash, a->job_hash);
	P32(b, leave_ask, world, (uint32_t)a->world);
	P32(b, leave_ask, flags, a->flags);
	struct shf_wire_hdr h;
	uint32_t max = src_node > dst_node ? src_node : dst_node;
	if (max == UINT32_MAX ||
	    shf_wire_check(b, SHF_WIRE_LEAVE_ASK_BYTES, max + 1, dst_node, &h) != 0)
		return -EINVAL;
	return SHF_WIRE_LEAVE_ASK_BYTES;
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
