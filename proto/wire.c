/* SPDX-License-Identifier: MIT */
/*
 * proto/wire.c - validate and walk daemon <-> daemon messages (the
 * encoders are proto/wire_enc.c).
 *
 * Offsets come from the shf_wire_raw_* structs through offsetof(); the
 * asserts below pin those structs to the documented layout, so a change to
 * a struct that would move a field on the wire fails the build.  Buffers
 * are only ever accessed byte-wise through shf_wire_get/put.
 */
#include "proto/wire.h"
#include "proto/shm.h"
#include "proto/wire_int.h"

#include <errno.h>
#include <string.h>


_Static_assert(sizeof(struct shf_wire_raw_hdr) == SHF_WIRE_HDR, "common header");
_Static_assert(OFF(hdr, magic) == 0 && OFF(hdr, version) == 4 && OFF(hdr, kind) == 6 &&
		       OFF(hdr, src_node) == 8 && OFF(hdr, dst_node) == 12 &&
		       OFF(hdr, src_session) == 16 && OFF(hdr, dst_session) == 24,
	       "common header layout (shf_wire_stamp() writes 16 and 24)");
_Static_assert(sizeof(struct shf_wire_raw_batch) == SHF_WIRE_BATCH_HDR, "batch header");
_Static_assert(OFF(batch, seq) == 32 && OFF(batch, job_hash) == 40 && OFF(batch, count) == 48 &&
		       OFF(batch, bytes) == 52,
	       "batch header layout");
_Static_assert(sizeof(struct shf_wire_raw_rec) == SHF_WIRE_REC_HDR, "record header");
_Static_assert(OFF(rec, dst_rank) == 0 && OFF(rec, src_rank) == 4 && OFF(rec, type) == 8 &&
		       OFF(rec, len) == 12,
	       "record header layout");
_Static_assert(sizeof(struct shf_wire_raw_ack) == SHF_WIRE_ACK_BYTES, "ack");
_Static_assert(OFF(ack, acked_seq) == 32 && OFF(ack, window) == 40 && OFF(ack, dropped) == 44,
	       "ack layout");
_Static_assert(sizeof(struct shf_wire_raw_heartbeat) == SHF_WIRE_HEARTBEAT_BYTES, "heartbeat");
_Static_assert(OFF(heartbeat, time_ns) == 32 && OFF(heartbeat, incarnation) == 40 &&
		       OFF(heartbeat, flags) == 48 && OFF(heartbeat, counter) == 52 &&
		       OFF(heartbeat, nonce) == 56 && OFF(heartbeat, mac) == 88,
	       "heartbeat layout");
_Static_assert(sizeof(struct shf_wire_raw_join) == SHF_WIRE_JOIN_FIXED, "join");
_Static_assert(OFF(join, job_hash) == 32 && OFF(join, world) == 40 && OFF(join, nranges) == 44 &&
		       OFF(join, uid) == 48 && OFF(join, flags) == 52 && OFF(join, name) == 56,
	       "join layout");
_Static_assert(sizeof(struct shf_wire_raw_range) == SHF_WIRE_RANGE_BYTES, "range");
_Static_assert(sizeof(struct shf_wire_raw_map) == SHF_WIRE_MAP_FIXED, "map");
_Static_assert(OFF(map, job_hash) == 32 && OFF(map, world) == 40 && OFF(map, nents) == 44 &&
		       OFF(map, uid) == 48 && OFF(map, flags) == 52 && OFF(map, name) == 56,
	       "map layout");
_Static_assert(sizeof(struct shf_wire_raw_map_ent) == SHF_WIRE_MAP_ENT_BYTES, "map entry");
_Static_assert(OFF(map_ent, first) == 0 && OFF(map_ent, count) == 4 && OFF(map_ent, node) == 8 &&
		       OFF(map_ent, repeat) == 12 && OFF(map_ent, again) == 16,
	       "map entry layout");
_Static_assert(sizeof(struct shf_wire_raw_deny) == SHF_WIRE_DENY_BYTES, "deny");
_Static_assert(OFF(deny, job_hash) == 32 && OFF(deny, reason) == 40 && OFF(deny, other_node) == 44 &&
		       OFF(deny, other_uid) == 48 && OFF(deny, other_world) == 52 &&
		       OFF(deny, name) == 56,
	       "deny layout");
_Static_assert(sizeof(struct shf_wire_raw_leave) == SHF_WIRE_LEAVE_FIXED, "leave");
_Static_assert(OFF(leave, job_hash) == 32 && OFF(leave, world) == 40 && OFF(leave, nents) == 44 &&
		       OFF(leave, flags) == 48 && OFF(leave, reserved) == 52,
	       "leave layout");
_Static_assert(sizeof(struct shf_wire_raw_leave_ent) == SHF_WIRE_LEAVE_ENT_BYTES, "leave entry");
_Static_assert(OFF(leave_ent, first) == 0 && OFF(leave_ent, count) == 4 &&
		       OFF(leave_ent, reason) == 8 && OFF(leave_ent, lost_node) == 12 &&
		       OFF(leave_ent, node) == 16,
	       "leave entry layout");
_Static_assert(sizeof(struct shf_wire_raw_leave_ask) == SHF_WIRE_LEAVE_ASK_BYTES, "leave ask");
_Static_assert(OFF(leave_ask, job_hash) == 32 && OFF(leave_ask, world) == 40 &&
		       OFF(leave_ask, flags) == 44,
	       "leave ask layout");
_Static_assert(sizeof(struct shf_wire_raw_epoch) == SHF_WIRE_EPOCH_BYTES, "epoch");
_Static_assert(OFF(epoch, job_hash) == 32 && OFF(epoch, epoch) == 40 && OFF(epoch, phase) == 48 &&
		       OFF(epoch, count) == 52,
	       "epoch layout");
_Static_assert(sizeof(struct shf_wire_raw_drop) == SHF_WIRE_DROP_BYTES, "drop");
_Static_assert(OFF(drop, job_hash) == 32 && OFF(drop, seq) == 40 && OFF(drop, src_rank) == 48 &&
		       OFF(drop, dst_rank) == 52 && OFF(drop, count) == 56 && OFF(drop, reason) == 60,
	       "drop layout");
_Static_assert(sizeof(struct shf_wire_raw_fan_req) == SHF_WIRE_FAN_REQ_FIXED, "fan_req");
_Static_assert(OFF(fan_req, req_id) == 32 && OFF(fan_req, origin) == 40 && OFF(fan_req, uid) == 44 &&
		       OFF(fan_req, budget_ms) == 48 && OFF(fan_req, fanout) == 52 &&
		       OFF(fan_req, ntargets) == 56 && OFF(fan_req, args_len) == 60 &&
		       OFF(fan_req, cmd) == 64,
	       "fan_req layout");
_Static_assert(sizeof(struct shf_wire_raw_fan_ans) == SHF_WIRE_FAN_ANS_HDR, "fan_ans");
_Static_assert(OFF(fan_ans, req_id) == 32 && OFF(fan_ans, origin) == 40 && OFF(fan_ans, total) == 44 &&
		       OFF(fan_ans, offset) == 48 && OFF(fan_ans, len) == 52 &&
		       OFF(fan_ans, flags) == 56 && OFF(fan_ans, reserved) == 60,
	       "fan_ans layout");
_Static_assert(sizeof(struct shf_wire_raw_fwd_lost) == SHF_WIRE_FWD_LOST_BYTES, "fwd_lost");
_Static_assert(OFF(fwd_lost, lost) == 32 && OFF(fwd_lost, reserved) == 36, "fwd_lost layout");
_Static_assert(SHF_WIRE_FWD_HDR == sizeof(struct shf_wire_raw_hdr), "fwd: one common header");
_Static_assert(sizeof(struct shf_wire_raw_fwd_bundle) == SHF_WIRE_BUNDLE_HDR, "bundle");
_Static_assert(OFF(fwd_bundle, count) == 32 && OFF(fwd_bundle, reserved) == 36, "bundle layout");
_Static_assert(sizeof(struct shf_wire_raw_bundle_item) == SHF_WIRE_BUNDLE_ITEM, "bundle item");
_Static_assert(SHF_JOB_MAX == 64, "join name field is 64 bytes");
_Static_assert(SHF_WIRE_BATCH_HDR % SHF_WIRE_REC_ALIGN == 0 &&
		       SHF_WIRE_REC_HDR % SHF_WIRE_REC_ALIGN == 0,
	       "records stay 8-aligned");


uint64_t shf_wire_job_hash(const char *name)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

const char *shf_wire_kind_name(unsigned kind)
{
	switch (kind) {
	case SHF_WIRE_BATCH: return "batch";
	case SHF_WIRE_ACK: return "ack";
	case SHF_WIRE_HEARTBEAT: return "heartbeat";
	case SHF_WIRE_JOB_JOIN: return "job-join";
	case SHF_WIRE_JOB_LEAVE: return "job-leave";
	case SHF_WIRE_JOB_MAP: return "job-map";
	case SHF_WIRE_JOB_DENY: return "job-deny";
	case SHF_WIRE_JOB_LEAVE_ASK: return "job-leave-ask";
	case SHF_WIRE_DROP: return "drop";
	case SHF_WIRE_FAN_REQ: return "fan-req";
	case SHF_WIRE_FAN_ANS: return "fan-ans";
	case SHF_WIRE_EPOCH_UP: return "epoch-up";
	case SHF_WIRE_EPOCH_DOWN: return "epoch-down";
	case SHF_WIRE_EPOCH_ABORT: return "epoch-abort";
	case SHF_WIRE_FWD: return "fwd";
	case SHF_WIRE_FWD_LOST: return "fwd-lost";
	case SHF_WIRE_FWD_BUNDLE: return "fwd-bundle";
	default: return "?";
	}
}

static bool neg_errno_ok(int32_t e)
{
	return e < 0 && e >= -4095;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Exact body size of the fixed kinds; 0 for the variable ones. */
static size_t fixed_len(unsigned kind)
{
	switch (kind) {
	case SHF_WIRE_ACK: return SHF_WIRE_ACK_BYTES;
	case SHF_WIRE_HEARTBEAT: return SHF_WIRE_HEARTBEAT_BYTES;
	case SHF_WIRE_JOB_DENY: return SHF_WIRE_DENY_BYTES;
	case SHF_WIRE_JOB_LEAVE_ASK: return SHF_WIRE_LEAVE_ASK_BYTES;
	case SHF_WIRE_EPOCH_UP:
	case SHF_WIRE_EPOCH_DOWN:
	case SHF_WIRE_EPOCH_ABORT: return SHF_WIRE_EPOCH_BYTES;
	case SHF_WIRE_DROP: return SHF_WIRE_DROP_BYTES;
	case SHF_WIRE_FWD_LOST: return SHF_WIRE_FWD_LOST_BYTES;
	default: return 0;
	}
}

static int check_batch(const uint8_t *b, size_t n, struct shf_wire_batch *o)
{
	if (n < SHF_WIRE_BATCH_HDR)
		return -EBADMSG;
	o->seq = G64(b, batch, seq);
	o->job_hash = G64(b, batch, job_hash);
	o->count = G32(b, batch, count);
	o->bytes = G32(b, batch, bytes);
	if (o->seq == 0 || o->count == 0)
		return -EBADMSG;
	if ((uint64_t)o->bytes != n - SHF_WIRE_BATCH_HDR || o->bytes % SHF_WIRE_REC_ALIGN)
		return -EBADMSG;
	if ((uint64_t)o->count * SHF_WIRE_REC_HDR > o->bytes)
		return -EBADMSG;
	return 0;
}

static int check_join(const uint8_t *b, size_t n, struct shf_wire_join *o)
{
	if (n < SHF_WIRE_JOIN_FIXED)
		return -EBADMSG;
	o->job_hash = G64(b, join, job_hash);
	o->world = GI32(b, join, world);
	o->nranges = G32(b, join, nranges);
	o->uid = G32(b, join, uid);
	o->flags = G32(b, join, flags);
	if (o->flags & ~(uint32_t)SHF_WIRE_JOIN_FLAGS)
		return -EBADMSG;
	if (o->nranges == 0 || shf_wire_join_bytes(o->nranges) != n)
		return -EBADMSG;
	if (o->world < 1 || o->world > SHF_WORLD_MAX)
		return -EBADMSG;
	memcpy(o->name, b + OFF(join, name), SHF_JOB_MAX);
	if (shf_ipc_job_check(o->name) != 0)
		return -EBADMSG;
	size_t nl = strlen(o->name);
	if (!all_zero((const uint8_t *)o->name + nl, SHF_JOB_MAX - nl))
		return -EBADMSG;
	if (shf_wire_job_hash(o->name) != o->job_hash)
		return -EBADMSG;
	o->ranges = b + SHF_WIRE_JOIN_FIXED;
	int64_t next = 0; /* lowest rank the next range may start at */
	for (uint32_t i = 0; i < o->nranges; i++) {
		struct shf_wire_range r = shf_wire_join_range(o, i);
		if (r.first < next || r.count < 1 || (int64_t)r.first + r.count > o->world)
			return -EBADMSG;
		next = (int64_t)r.first + r.count;
	}
	return 0;
}

/* A job name field at b: valid, zero after the NUL, and hashing to hash. */
static bool name_ok(const uint8_t *b, char *name, uint64_t hash)
{
	memcpy(name, b, SHF_JOB_MAX);
	if (shf_ipc_job_check(name) != 0)
		return false;
	size_t nl = strlen(name);
	return all_zero((const uint8_t *)name + nl, SHF_JOB_MAX - nl) &&
	       shf_wire_job_hash(name) == hash;
}

static int check_map(const uint8_t *b, size_t n, uint32_t n_nodes, struct shf_wire_map *o)
{
	if (n < SHF_WIRE_MAP_FIXED)
		return -EBADMSG;
	o->job_hash = G64(b, map, job_hash);
	o->world = GI32(b, map, world);
	o->nents = G32(b, map, nents);
	o->uid = G32(b, map, uid);
	o->flags = G32(b, map, flags);
	if (o->flags & ~(uint32_t)SHF_WIRE_MAP_FLAGS)
		return -EBADMSG;
	if (o->nents == 0 || shf_wire_map_bytes(o->nents) != n)
		return -EBADMSG;
	if (o->world < 1 || o->world > SHF_WORLD_MAX)
		return -EBADMSG;
	if (!name_ok(b + OFF(map, name), o->name, o->job_hash))
		return -EBADMSG;
	o->ents = b + SHF_WIRE_MAP_FIXED;
	int64_t next = 0; /* lowest rank the next entry may start at */
	for (uint32_t i = 0; i < o->nents; i++) {
		struct shf_wire_map_ent e = shf_wire_map_entry(o, i);
		/* the entry's ranks (blocks x rounds, saturated) end inside
		 * the world: at most world blocks to expand in all */
		if (e.first < next || e.count < 1 || e.node >= n_nodes ||
		    e.repeat >= n_nodes - e.node ||
		    shf_wire_map_ent_ranks(&e) > (int64_t)o->world - e.first)
			return -EBADMSG;
		next = (int64_t)e.first + shf_wire_map_ent_ranks(&e);
	}
	return 0;
}

static int check_deny(const uint8_t *b, uint32_t n_nodes, uint32_t dst, struct shf_wire_deny *o)
{
	o->job_hash = G64(b, deny, job_hash);
	o->reason = GI32(b, deny, reason);
	o->other_node = G32(b, deny, other_node);
	o->other_uid = G32(b, deny, other_uid);
	o->other_world = GI32(b, deny, other_world);
	if (o->reason != -EACCES && o->reason != -EINVAL && o->reason != -EEXIST)
		return -EBADMSG;
	if (o->other_node >= n_nodes || o->other_node == dst)
		return -EBADMSG;
	if (o->other_world < 1 || o->other_world > SHF_WORLD_MAX)
		return -EBADMSG;
	if (!name_ok(b + OFF(deny, name), o->name, o->job_hash))
		return -EBADMSG;
	return 0;
}

bool shf_wire_fan_cmd_name_ok(const char *c)
{
	size_t l = strnlen(c, SHF_WIRE_FAN_CMD_MAX);
	if (l == 0 || l == SHF_WIRE_FAN_CMD_MAX)
		return false;
	for (size_t i = 0; i < l; i++)
		if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '_' ||
		      c[i] == '-'))
			return false;
	return true;
}

/* on the wire, also zero-padded */
static bool fan_cmd_ok(const char *c)
{
	return shf_wire_fan_cmd_name_ok(c) &&
	       all_zero((const uint8_t *)c + strlen(c), SHF_WIRE_FAN_CMD_MAX - strlen(c));
}

static int check_fan_req(const uint8_t *b, size_t n, uint32_t n_nodes, uint32_t src,
			 uint32_t dst, struct shf_wire_fan_req *o)
{
	if (n < SHF_WIRE_FAN_REQ_FIXED)
		return -EBADMSG;
	o->req_id = G64(b, fan_req, req_id);
	o->origin = G32(b, fan_req, origin);
	o->uid = G32(b, fan_req, uid);
	o->budget_ms = G32(b, fan_req, budget_ms);
	o->fanout = G32(b, fan_req, fanout);
	o->ntargets = G32(b, fan_req, ntargets);
	o->args_len = G32(b, fan_req, args_len);
	memcpy(o->cmd, b + OFF(fan_req, cmd), SHF_WIRE_FAN_CMD_MAX);
	if (o->req_id == 0 || o->origin >= n_nodes || o->origin == dst || o->budget_ms == 0 ||
	    o->budget_ms > SHF_WIRE_FAN_BUDGET_MAX || o->fanout < SHF_WIRE_FAN_K_MIN ||
	    o->fanout > SHF_WIRE_FAN_K_MAX || o->ntargets >= n_nodes ||
	    o->args_len > SHF_WIRE_FAN_ARGS_MAX || !fan_cmd_ok(o->cmd))
		return -EBADMSG;
	if (shf_wire_fan_req_bytes(o->ntargets, o->args_len) != n)
		return -EBADMSG;
	o->targets = b + SHF_WIRE_FAN_REQ_FIXED;
	int64_t prev = -1;
	for (uint32_t i = 0; i < o->ntargets; i++) {
		uint32_t t = shf_wire_fan_target(o, i);
		if ((int64_t)t <= prev || t >= n_nodes || t == dst || t == src || t == o->origin)
			return -EBADMSG;
		prev = t;
	}
	o->args = (const char *)o->targets + (size_t)o->ntargets * 4u;
	if (memchr(o->args, 0, o->args_len))
		return -EBADMSG;
	return 0;
}

static int check_fan_ans(const uint8_t *b, size_t n, uint32_t n_nodes, struct shf_wire_fan_ans *o)
{
	if (n <= SHF_WIRE_FAN_ANS_HDR)
		return -EBADMSG;
	o->req_id = G64(b, fan_ans, req_id);
	o->origin = G32(b, fan_ans, origin);
	o->total = G32(b, fan_ans, total);
	o->offset = G32(b, fan_ans, offset);
	o->len = G32(b, fan_ans, len);
	if (o->req_id == 0 || o->origin >= n_nodes || o->total == 0 ||
	    o->total > SHF_WIRE_FAN_ANS_MAX || o->len == 0 ||
	    (uint64_t)o->offset + o->len > o->total || SHF_WIRE_FAN_ANS_HDR + (uint64_t)o->len != n ||
	    G32(b, fan_ans, flags) != 0 || G32(b, fan_ans, reserved) != 0)
		return -EBADMSG;
	o->data = b + SHF_WIRE_FAN_ANS_HDR;
	return 0;
}

uint32_t shf_wire_fan_target(const struct shf_wire_fan_req *r, uint32_t i)
{
	return shf_wire_get32(r->targets + (size_t)i * 4u);
}

/* FWD_BUNDLE: every item a whole FWD of the bundle's own hop (its tags
 * zero), checked as its receiver checks a FWD (so one level: a bundle
 * never carries a bundle), the items filling the message exactly. */
static int check_bundle(const uint8_t *b, size_t n, uint32_t n_nodes,
			const struct shf_wire_hdr *hop, struct shf_wire_fwd_bundle *o)
{
	if (n < SHF_WIRE_BUNDLE_HDR)
		return -EBADMSG;
	o->count = G32(b, fwd_bundle, count);
	if (o->count == 0 || G32(b, fwd_bundle, reserved) != 0)
		return -EBADMSG;
	size_t off = SHF_WIRE_BUNDLE_HDR;
	for (uint32_t i = 0; i < o->count; i++) {
		if (n - off < SHF_WIRE_BUNDLE_ITEM)
			return -EBADMSG;
		const uint8_t *it = b + off;
		uint32_t len = G32(it, bundle_item, len);
		if (G32(it, bundle_item, reserved) != 0 || len < SHF_WIRE_FWD_HDR + SHF_WIRE_HDR)
			return -EBADMSG;
		uint64_t need = shf_wire_bundle_item_bytes(len);
		if (need > n - off)
			return -EBADMSG; /* past the end */
		const uint8_t *m = it + SHF_WIRE_BUNDLE_ITEM;
		struct shf_wire_hdr f;
		if (G16(m, hdr, kind) != SHF_WIRE_FWD ||
		    shf_wire_check(m, len, n_nodes, hop->dst_node, &f) != 0 ||
		    f.src_node != hop->src_node || f.src_session || f.dst_session ||
		    !all_zero(m + len, (size_t)(need - SHF_WIRE_BUNDLE_ITEM - len)))
			return -EBADMSG;
		off += (size_t)need;
	}
	if (off != n)
		return -EBADMSG; /* bytes beyond the last item */
	o->items = b + SHF_WIRE_BUNDLE_HDR;
	o->bytes = (uint32_t)(n - SHF_WIRE_BUNDLE_HDR);
	return 0;
}

int shf_wire_bundle_next(const struct shf_wire_fwd_bundle *b, uint32_t *off, const uint8_t **msg,
			 uint32_t *len)
{
	if (*off >= b->bytes)
		return 0;
	const uint8_t *it = b->items + *off;
	*len = G32(it, bundle_item, len);
	*msg = it + SHF_WIRE_BUNDLE_ITEM;
	*off += (uint32_t)shf_wire_bundle_item_bytes(*len);
	return 1;
}

static int check_ack(const uint8_t *b, struct shf_wire_ack *o)
{
	o->acked_seq = G64(b, ack, acked_seq);
	o->window = G32(b, ack, window);
	o->dropped = G32(b, ack, dropped);
	return o->window > SHF_WIRE_WINDOW_MAX ? -EBADMSG : 0;
}

static int check_heartbeat(const uint8_t *b, struct shf_wire_heartbeat *o)
{
	o->time_ns = G64(b, heartbeat, time_ns);
	o->incarnation = G64(b, heartbeat, incarnation);
	o->flags = G32(b, heartbeat, flags);
	o->counter = G32(b, heartbeat, counter);
	memcpy(o->nonce, b + OFF(heartbeat, nonce), SHF_WIRE_NONCE_BYTES);
	memcpy(o->mac, b + OFF(heartbeat, mac), SHF_WIRE_MAC_BYTES);
	if (o->incarnation == 0 || (o->flags & ~SHF_WIRE_HB_FLAGS) ||
	    (o->counter != 0 && !(o->flags & SHF_WIRE_HB_CTR)) ||
	    ((o->flags & SHF_WIRE_HB_CTR) && !(o->flags & SHF_WIRE_HB_MAC)) ||
	    /* ECHO only with a MAC */
	    ((o->flags & SHF_WIRE_HB_ECHO) && !(o->flags & SHF_WIRE_HB_MAC)))
		return -EBADMSG;
	/* no MAC: the MAC field is zero */
	if (!(o->flags & SHF_WIRE_HB_MAC) && !all_zero(o->mac, SHF_WIRE_MAC_BYTES))
		return -EBADMSG;
	return 0;
}

/* JOB_LEAVE: ranges of ranks inside the world, sorted and disjoint (a
 * receiver touches each rank of the world at most once per message), each
 * of the sender's own ranks, or, forwarded by the job's home, of any node
 * (the receiver's own too: they came through); per entry a lost node only
 * with -EHOSTDOWN, and
 * then a node of the set other than the entry's (it cannot have lost
 * itself). */
static int check_leave(const uint8_t *b, size_t n, uint32_t n_nodes, const struct shf_wire_hdr *h,
		       struct shf_wire_leave *o)
{
	if (n < SHF_WIRE_LEAVE_FIXED)
		return -EBADMSG;
	o->job_hash = G64(b, leave, job_hash);
	o->world = GI32(b, leave, world);
	o->nents = G32(b, leave, nents);
	o->flags = G32(b, leave, flags);
	if (o->nents == 0 || shf_wire_leave_bytes(o->nents) != n)
		return -EBADMSG;
	/* at most one flag */
	if (o->world < 1 || o->world > SHF_WORLD_MAX || (o->flags & ~(uint32_t)SHF_WIRE_LEAVE_FLAGS) ||
	    (o->flags & (o->flags - 1)) || G32(b, leave, reserved) != 0)
		return -EBADMSG;
	bool fwd = o->flags & SHF_WIRE_LEAVE_FORWARDED;
	o->ents = b + SHF_WIRE_LEAVE_FIXED;
	int64_t next = 0; /* lowest rank the next entry may start at */
	for (uint32_t i = 0; i < o->nents; i++) {
		struct shf_wire_leave_ent e = shf_wire_leave_entry(o, i);
		if (e.first < next || e.count < 1 || (int64_t)e.first + e.count > o->world)
			return -EBADMSG;
		if (fwd ? e.node >= n_nodes : e.node != h->src_node)
			return -EBADMSG;
		if (!(e.reason == 0 || neg_errno_ok(e.reason)))
			return -EBADMSG;
		if (e.reason == -EHOSTDOWN ? e.lost_node >= n_nodes || e.lost_node == e.node
					   : e.lost_node != SHF_WIRE_NODE_NONE)
			return -EBADMSG;
		next = (int64_t)e.first + e.count;
	}
	return 0;
}

static int check_leave_ask(const uint8_t *b, struct shf_wire_leave_ask *o)
{
	o->job_hash = G64(b, leave_ask, job_hash);
	o->world = GI32(b, leave_ask, world);
	o->flags = G32(b, leave_ask, flags);
	if (o->world < 1 || o->world > SHF_WORLD_MAX || (o->flags & ~(uint32_t)SHF_WIRE_ASK_FLAGS))
		return -EBADMSG;
	return 0;
}

/* EPOCH_UP, EPOCH_DOWN and EPOCH_ABORT (whose count is the reason) */
static int check_epoch(const uint8_t *b, uint16_t kind, struct shf_wire_epoch *o)
{
	o->job_hash = G64(b, epoch, job_hash);
	o->epoch = G64(b, epoch, epoch);
	o->phase = G32(b, epoch, phase);
	o->count = G32(b, epoch, count);
	if (o->epoch == 0 || o->phase == 0 || o->phase >= SHF_WIRE_EPOCH_PHASE_MAX ||
	    o->count > SHF_WORLD_MAX)
		return -EBADMSG;
	if (kind == SHF_WIRE_EPOCH_ABORT && o->count != ESRCH && o->count != EHOSTDOWN)
		return -EBADMSG;
	return 0;
}

static int check_drop(const uint8_t *b, struct shf_wire_drop *o)
{
	o->job_hash = G64(b, drop, job_hash);
	o->seq = G64(b, drop, seq);
	o->src_rank = GI32(b, drop, src_rank);
	o->dst_rank = GI32(b, drop, dst_rank);
	o->count = G32(b, drop, count);
	o->reason = GI32(b, drop, reason);
	if (o->seq == 0 || !shf_wire_rank_ok(o->src_rank) || !shf_wire_dst_ok(o->dst_rank) || o->count == 0 ||
	    !neg_errno_ok(o->reason))
		return -EBADMSG;
	return 0;
}

/* The carried message is checked whole, as its destination will check it
 * (one level: it may not be a FWD itself).  h: the FWD's own header. */
static int check_fwd(const uint8_t *b, size_t n, uint32_t n_nodes, const struct shf_wire_hdr *h,
		     struct shf_wire_fwd *o)
{
	struct shf_wire_hdr in;
	const uint8_t *m = b + SHF_WIRE_FWD_HDR;
	if (n < SHF_WIRE_FWD_HDR + SHF_WIRE_HDR)
		return -EBADMSG;
	size_t mlen = n - SHF_WIRE_FWD_HDR;
	uint32_t idst = shf_wire_get32(m + OFF(hdr, dst_node));
	uint16_t ikind = shf_wire_get16(m + OFF(hdr, kind));
	if (ikind == SHF_WIRE_FWD || ikind == SHF_WIRE_FWD_LOST || ikind == SHF_WIRE_FWD_BUNDLE ||
	    shf_wire_check(m, mlen, n_nodes, idst, &in) != 0 ||
	    /* a hop carries another pair's message, never its own */
	    (in.src_node == h->src_node && in.dst_node == h->dst_node))
		return -EBADMSG;
	o->inner_src = in.src_node;
	o->inner_dst = in.dst_node;
	o->inner_kind = in.kind;
	o->len = (uint32_t)mlen;
	o->msg = m;
	return 0;
}

static int check_fwd_lost(const uint8_t *b, uint32_t n_nodes, const struct shf_wire_hdr *h,
			  uint32_t *lost)
{
	*lost = G32(b, fwd_lost, lost);
	if (*lost >= n_nodes || *lost == h->src_node || *lost == h->dst_node ||
	    G32(b, fwd_lost, reserved) != 0)
		return -EBADMSG;
	return 0;
}

/* The common header: magic, version, length, and a pair of nodes that
 * ends here.  0 or -EPROTO/-EBADMSG; h's union is left zero. */
static int check_hdr(const uint8_t *b, size_t n, uint32_t n_nodes, uint32_t my_node,
		     struct shf_wire_hdr *h)
{
	if (n < SHF_WIRE_HDR)
		return -EBADMSG;
	if (G32(b, hdr, magic) != SHF_WIRE_MAGIC)
		return -EPROTO;
	memset(h, 0, sizeof(*h));
	h->version = G16(b, hdr, version);
	if (h->version != SHF_WIRE_VERSION)
		return -EPROTO;
	if (n > UINT32_MAX)
		return -EBADMSG;
	h->len = (uint32_t)n;
	h->kind = G16(b, hdr, kind);
	h->src_node = G32(b, hdr, src_node);
	h->dst_node = G32(b, hdr, dst_node);
	h->src_session = G64(b, hdr, src_session);
	h->dst_session = G64(b, hdr, dst_session);
	if (h->src_node >= n_nodes || h->dst_node >= n_nodes || h->dst_node != my_node ||
	    h->src_node == h->dst_node)
		return -EBADMSG;
	size_t fixed = fixed_len(h->kind);
	if (fixed && n != fixed)
		return -EBADMSG;
	return 0;
}

int shf_wire_check(const void *buf, size_t n, uint32_t n_nodes, uint32_t my_node,
		   struct shf_wire_hdr *out)
{
	const uint8_t *b = buf;
	struct shf_wire_hdr h;
	int r = check_hdr(b, n, n_nodes, my_node, &h);
	if (r)
		return r;

	switch (h.kind) {
	case SHF_WIRE_BATCH: r = check_batch(b, n, &h.u.batch); break;
	case SHF_WIRE_ACK: r = check_ack(b, &h.u.ack); break;
	case SHF_WIRE_HEARTBEAT: r = check_heartbeat(b, &h.u.heartbeat); break;
	case SHF_WIRE_JOB_JOIN: r = check_join(b, n, &h.u.join); break;
	case SHF_WIRE_JOB_MAP: r = check_map(b, n, n_nodes, &h.u.map); break;
	case SHF_WIRE_JOB_DENY: r = check_deny(b, n_nodes, h.dst_node, &h.u.deny); break;
	case SHF_WIRE_JOB_LEAVE: r = check_leave(b, n, n_nodes, &h, &h.u.leave); break;
	case SHF_WIRE_JOB_LEAVE_ASK: r = check_leave_ask(b, &h.u.leave_ask); break;
	case SHF_WIRE_EPOCH_UP:
	case SHF_WIRE_EPOCH_DOWN:
	case SHF_WIRE_EPOCH_ABORT: r = check_epoch(b, h.kind, &h.u.epoch); break;
	case SHF_WIRE_DROP: r = check_drop(b, &h.u.drop); break;
	case SHF_WIRE_FAN_REQ:
		r = check_fan_req(b, n, n_nodes, h.src_node, h.dst_node, &h.u.fan_req);
		break;
	case SHF_WIRE_FAN_ANS: r = check_fan_ans(b, n, n_nodes, &h.u.fan_ans); break;
	case SHF_WIRE_FWD: r = check_fwd(b, n, n_nodes, &h, &h.u.fwd); break;
	case SHF_WIRE_FWD_BUNDLE: r = check_bundle(b, n, n_nodes, &h, &h.u.bundle); break;
	case SHF_WIRE_FWD_LOST: r = check_fwd_lost(b, n_nodes, &h, &h.u.fwd_lost); break;
	default: r = -EBADMSG; break;
	}
	if (r)
		return r;
	*out = h;
	return 0;
}

struct shf_wire_map_ent shf_wire_map_entry(const struct shf_wire_map *m, uint32_t i)
{
	const uint8_t *p = m->ents + (size_t)i * SHF_WIRE_MAP_ENT_BYTES;
	return (struct shf_wire_map_ent){GI32(p, map_ent, first), GI32(p, map_ent, count),
					 G32(p, map_ent, node), G32(p, map_ent, repeat),
					 G32(p, map_ent, again)};
}

struct shf_wire_leave_ent shf_wire_leave_entry(const struct shf_wire_leave *l, uint32_t i)
{
	const uint8_t *p = l->ents + (size_t)i * SHF_WIRE_LEAVE_ENT_BYTES;
	return (struct shf_wire_leave_ent){GI32(p, leave_ent, first), GI32(p, leave_ent, count),
					   GI32(p, leave_ent, reason), G32(p, leave_ent, lost_node),
					   G32(p, leave_ent, node)};
}

struct shf_wire_range shf_wire_join_range(const struct shf_wire_join *j, uint32_t i)
{
	const uint8_t *p = j->ranges + (size_t)i * SHF_WIRE_RANGE_BYTES;
	struct shf_wire_range r = {GI32(p, range, first), GI32(p, range, count)};
	return r;
}

/* ---- batch records ----------------------------------------------------- */

/* A run's items cross the wire as the ring holds them (host order). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "runs are little-endian");

void shf_wire_iter_init(struct shf_wire_iter *it, const void *buf, const struct shf_wire_hdr *h,
			uint32_t max_msg)
{
	it->buf = buf;
	it->off = SHF_WIRE_BATCH_HDR;
	it->end = h->len;
	it->left = h->kind == SHF_WIRE_BATCH ? h->u.batch.count : 0;
	it->max_msg = max_msg;
	/* A header that did not come from a successful check of a batch. */
	it->err = (h->kind != SHF_WIRE_BATCH || h->len < SHF_WIRE_BATCH_HDR ||
		   (uint64_t)h->u.batch.bytes + SHF_WIRE_BATCH_HDR != h->len)
			  ? -EBADMSG
			  : 0;
}

int shf_wire_iter_next(struct shf_wire_iter *it, struct shf_wire_rec *rec)
{
	if (it->err)
		return it->err;
	if (it->left == 0) {
		if (it->off != it->end)
			return it->err = -EBADMSG; /* bytes beyond the last record */
		return 0;
	}
	/* off <= end always holds: it only advances by checked amounts. */
	uint32_t room = it->end - it->off;
	if (room < SHF_WIRE_REC_HDR)
		return it->err = -EBADMSG;
	const uint8_t *p = it->buf + it->off;
	struct shf_wire_rec r;
	r.dst_rank = GI32(p, rec, dst_rank);
	r.src_rank = GI32(p, rec, src_rank);
	r.type = G32(p, rec, type);
	r.len = G32(p, rec, len);
	r.count = 0;
	r.packed = false;
	r.data = p + SHF_WIRE_REC_HDR;
	if (r.len & SHF_WIRE_REC_RUN) {
		/* a run: its items fill len exactly (a multiple of 8) */
		uint32_t count = r.type;
		r.count = shf_run_n(count);
		r.packed = (count & SHF_RUN_PACKED) != 0;
		r.type = 0;
		r.len &= ~SHF_WIRE_REC_RUN;
		if (!shf_wire_rank_ok(r.dst_rank) || !shf_wire_rank_ok(r.src_rank) || r.len > room - SHF_WIRE_REC_HDR)
			return it->err = -EBADMSG;
		int64_t pl = shf_run_check(r.data, r.len, count, it->max_msg);
		if (pl < 0)
			return it->err = -EBADMSG;
		r.payload = (uint32_t)pl;
		it->off += SHF_WIRE_REC_HDR + r.len;
		it->left--;
		*rec = r;
		return 1;
	}
	if (!shf_wire_dst_ok(r.dst_rank) || !shf_wire_rank_ok(r.src_rank) || r.len > it->max_msg)
		return it->err = -EBADMSG;
	uint64_t need = shf_wire_rec_bytes(r.len);
	if (need > room)
		return it->err = -EBADMSG;
	if (!all_zero(p + SHF_WIRE_REC_HDR + r.len, (size_t)(need - SHF_WIRE_REC_HDR - r.len)))
		return it->err = -EBADMSG;
	r.payload = r.len;
	it->off += (uint32_t)need;
	it->left--;
	*rec = r;
	return 1;
}

int shf_wire_batch_verify(const void *buf, const struct shf_wire_hdr *h, uint32_t max_msg)
{
	struct shf_wire_iter it;
	struct shf_wire_rec rec;
	int r;
	shf_wire_iter_init(&it, buf, h, max_msg);
	while ((r = shf_wire_iter_next(&it, &rec)) == 1)
		;
	return r;
}
