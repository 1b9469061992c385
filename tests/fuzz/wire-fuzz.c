/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/wire-fuzz.c - mutation fuzzing of the daemon <-> daemon wire
 * format (proto/wire.c).
 *
 * Valid messages of every kind are generated (batches with plain, broadcast
 * and run records), mutated (bit flips, byte and
 * field overwrites with boundary values, truncation, extension, record
 * splicing) and fed to shf_wire_check() and the batch iterator from an
 * exactly-sized heap copy, so the sanitizer build turns any read past the
 * end into a crash.  Beyond "no crash", each accepted message must be
 * canonical: re-encoding the decoded fields with the encoders (and
 * stamping the decoded session tags, which the encoders leave zero and the
 * check does not judge) reproduces it byte for byte, so no byte of an
 * accepted message escaped validation or decoding, and every record the
 * iterator hands out lies inside the message.
 *
 * Default: a fixed seed and SHF_FUZZ_ITERS (default 200000) iterations,
 * a few seconds under ASan.  SHF_FUZZ_SEED picks another seed.  Built with
 * -DSHF_LIBFUZZER (clang -fsanitize=fuzzer) the same checks run as a
 * libFuzzer target instead (see tests/fuzz/meson.build).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/shm.h"
#include "proto/wire.h"
#include "tests/lib/check.h"

#define MAX_BUF 8192u

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void)
{
	/* xorshift64* */
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* ---- the property checked for every input ------------------------------- */

struct counts {
	uint64_t accepted, rejected, records, packed;
	uint64_t by_kind[256];
};

static struct counts cnt;

/* Re-encode a checked message from its decoded fields; must give buf back. */
static void check_canonical(const uint8_t *buf, size_t n, uint32_t n_nodes,
			    const struct shf_wire_hdr *h, uint32_t max_msg)
{
	static uint8_t re[MAX_BUF + 64];
	long m = -1;
	switch (h->kind) {
	case SHF_WIRE_BATCH: {
		struct shf_wire_iter it;
		struct shf_wire_rec r;
		struct shf_wire_batch_enc e;
		uint64_t sum = 0, seen = 0;
		int rc;
		CHECKF(shf_wire_batch_begin(&e, re, sizeof(re), h->src_node, h->dst_node,
					    h->u.batch.job_hash) == 0,
		       "begin");
		shf_wire_iter_init(&it, buf, h, max_msg);
		while ((rc = shf_wire_iter_next(&it, &r)) == 1) {
			const uint8_t *d = r.data;
			CHECKF(d >= buf + SHF_WIRE_BATCH_HDR + SHF_WIRE_REC_HDR &&
				       d + r.len <= buf + n,
			       "record outside the message");
			if (r.count) { /* a run: its items were checked */
				CHECKF(r.dst_rank >= 0 && r.dst_rank < SHF_WORLD_MAX &&
					       r.src_rank >= 0 && r.src_rank < SHF_WORLD_MAX &&
					       r.type == 0 && r.len <= SHF_RUN_MAX_BYTES &&
					       shf_run_check(d, r.len,
							     r.count | (r.packed ? SHF_RUN_PACKED : 0),
							     max_msg) == (int64_t)r.payload,
				       "run fields unchecked");
				for (uint32_t k = 0; k < r.len; k++)
					sum += d[k];
				uint8_t *q = shf_wire_batch_add_run(
					&e, r.dst_rank, r.src_rank,
					r.count | (r.packed ? SHF_RUN_PACKED : 0), r.len);
				CHECKF(q != NULL, "re-encode run");
				memcpy(q, d, r.len);
				seen++;
				cnt.records++;
				cnt.packed += r.packed;
				continue;
			}
			CHECKF(r.len <= max_msg && r.src_rank >= 0 && r.src_rank < SHF_WORLD_MAX &&
				       ((r.dst_rank >= 0 && r.dst_rank < SHF_WORLD_MAX) ||
					r.dst_rank == SHF_WIRE_DST_BCAST),
			       "record fields unchecked");
			for (uint32_t k = 0; k < r.len; k++) /* touch every byte */
				sum += d[k];
			CHECKF(shf_wire_batch_put(&e, r.dst_rank, r.src_rank, r.type, r.data,
						  r.len) == 0,
			       "re-encode record");
			seen++;
			cnt.records++;
		}
		(void)sum;
		CHECKF(seen <= h->u.batch.count, "more records than count");
		if (rc < 0) {
			CHECKF(rc == -EBADMSG, "iterator error %d", rc);
			CHECKF(shf_wire_batch_verify(buf, h, max_msg) == -EBADMSG, "verify agrees");
			return; /* a rejected batch: nothing to compare */
		}
		CHECKF(seen == h->u.batch.count, "count not enforced");
		CHECKF(shf_wire_batch_verify(buf, h, max_msg) == 0, "verify agrees");
		m = (long)shf_wire_batch_end(&e, h->u.batch.seq);
		break;
	}
	case SHF_WIRE_ACK:
		m = shf_wire_enc_ack(re, sizeof(re), h->src_node, h->dst_node, &h->u.ack);
		break;
	case SHF_WIRE_HEARTBEAT:
		m = shf_wire_enc_heartbeat(re, sizeof(re), h->src_node, h->dst_node, &h->u.heartbeat);
		break;
	case SHF_WIRE_JOB_JOIN: {
		static struct shf_wire_range rg[MAX_BUF / SHF_WIRE_RANGE_BYTES];
		CHECKF(h->u.join.nranges <= sizeof(rg) / sizeof(rg[0]), "nranges vs length");
		for (uint32_t i = 0; i < h->u.join.nranges; i++) {
			rg[i] = shf_wire_join_range(&h->u.join, i);
			CHECKF(rg[i].first >= 0 && rg[i].count >= 1 &&
				       (int64_t)rg[i].first + rg[i].count <= h->u.join.world,
			       "range unchecked");
			CHECKF(i == 0 || rg[i].first >= rg[i - 1].first + rg[i - 1].count,
			       "ranges unsorted");
		}
		m = shf_wire_enc_join(re, sizeof(re), h->src_node, h->dst_node, &h->u.join, rg,
				      h->u.join.nranges);
		break;
	}
	case SHF_WIRE_JOB_LEAVE: {
		static struct shf_wire_leave_ent le[MAX_BUF / SHF_WIRE_LEAVE_ENT_BYTES];
		CHECKF(h->u.leave.nents <= sizeof(le) / sizeof(le[0]), "leave nents vs length");
		for (uint32_t i = 0; i < h->u.leave.nents; i++) {
			le[i] = shf_wire_leave_entry(&h->u.leave, i);
			CHECKF(le[i].first >= 0 && le[i].count >= 1 &&
				       (int64_t)le[i].first + le[i].count <= h->u.leave.world,
			       "leave entry unchecked");
			CHECKF(i == 0 || le[i].first >= le[i - 1].first + le[i - 1].count,
			       "leave entries unsorted");
			/* whose: the sender's, or forwarded, any node's */
			CHECKF((h->u.leave.flags & SHF_WIRE_LEAVE_FORWARDED)
				       ? le[i].node < n_nodes
				       : le[i].node == h->src_node,
			       "leave: node %u unchecked", le[i].node);
			/* a lost node only with -EHOSTDOWN, one of the set, not its own */
			CHECKF(le[i].reason == -EHOSTDOWN
				       ? le[i].lost_node < n_nodes && le[i].lost_node != le[i].node
				       : le[i].lost_node == SHF_WIRE_NODE_NONE,
			       "leave: lost node %u (reason %d) unchecked", le[i].lost_node,
			       le[i].reason);
			CHECKF(le[i].reason == 0 || (le[i].reason < 0 && le[i].reason >= -4095),
			       "leave: reason %d unchecked", le[i].reason);
		}
		CHECKF(!(h->u.leave.flags & (h->u.leave.flags - 1)) &&
			       !(h->u.leave.flags & ~(uint32_t)SHF_WIRE_LEAVE_FLAGS),
		       "leave flags unchecked");
		m = shf_wire_enc_leave(re, sizeof(re), h->src_node, h->dst_node, &h->u.leave, le,
				       h->u.leave.nents);
		break;
	}
	case SHF_WIRE_JOB_LEAVE_ASK:
		CHECKF(h->u.leave_ask.world >= 1 && h->u.leave_ask.world <= SHF_WORLD_MAX &&
			       !(h->u.leave_ask.flags & ~(uint32_t)SHF_WIRE_ASK_FLAGS),
		       "leave ask unchecked");
		m = shf_wire_enc_leave_ask(re, sizeof(re), h->src_node, h->dst_node, &h->u.leave_ask);
		break;
	case SHF_WIRE_JOB_MAP: {
		static struct shf_wire_map_ent me[MAX_BUF / SHF_WIRE_MAP_ENT_BYTES];
		CHECKF(h->u.map.nents <= sizeof(me) / sizeof(me[0]), "nents vs length");
		uint64_t blocks = 0; /* what a receiver expands: at most world */
		for (uint32_t i = 0; i < h->u.map.nents; i++) {
			me[i] = shf_wire_map_entry(&h->u.map, i);
			blocks += ((uint64_t)me[i].repeat + 1) * ((uint64_t)me[i].again + 1);
			CHECKF(blocks <= (uint64_t)h->u.map.world, "map expands past the world");
			CHECKF(me[i].first >= 0 && me[i].count >= 1 &&
				       (int64_t)me[i].first + shf_wire_map_ent_ranks(&me[i]) <=
					       h->u.map.world,
			       "map entry unchecked");
			CHECKF(i == 0 || me[i].first >= me[i - 1].first +
							       shf_wire_map_ent_ranks(&me[i - 1]),
			       "map entries unsorted");
		}
		m = shf_wire_enc_map(re, sizeof(re), h->src_node, h->dst_node, &h->u.map, me,
				     h->u.map.nents);
		break;
	}
	case SHF_WIRE_JOB_DENY:
		m = shf_wire_enc_deny(re, sizeof(re), h->src_node, h->dst_node, &h->u.deny);
		break;
	case SHF_WIRE_EPOCH_UP:
	case SHF_WIRE_EPOCH_DOWN:
	case SHF_WIRE_EPOCH_ABORT:
		m = shf_wire_enc_epoch_kind(re, sizeof(re), h->kind, h->src_node, h->dst_node,
					    &h->u.epoch);
		break;
	case SHF_WIRE_DROP:
		m = shf_wire_enc_drop(re, sizeof(re), h->src_node, h->dst_node, &h->u.drop);
		break;
	default:
		FAIL("accepted unknown kind %u", h->kind);
	}
	CHECKF(m == (long)n, "re-encoded %s is %ld bytes, message %zu",
	       shf_wire_kind_name(h->kind), m, n);
	/* the encoders write zero tags: put the decoded ones back */
	CHECKF(shf_wire_get64(re + 16) == 0 && shf_wire_get64(re + 24) == 0,
	       "encoder wrote session tags");
	shf_wire_stamp(re, h->src_session, h->dst_session);
	CHECKF(!memcmp(re, buf, n), "accepted %s is not canonical", shf_wire_kind_name(h->kind));
}

/* Check one input of n bytes at data (any alignment, exactly n readable). */
static int check_one(const uint8_t *data, size_t n, uint32_t n_nodes, uint32_t me,
		     uint32_t max_msg)
{
	struct shf_wire_hdr h;
	memset(&h, 0xa5, sizeof(h));
	int rc = shf_wire_check(data, n, n_nodes, me, &h);
	if (rc) {
		CHECKF(rc == -EBADMSG || rc == -EPROTO, "check returned %d", rc);
		cnt.rejected++;
		return rc;
	}
	CHECKF(h.len == n && h.dst_node == me && h.src_node < n_nodes && h.src_node != me,
	       "header fields unchecked");
	CHECKF(h.kind > 0 && h.kind < 256 && strcmp(shf_wire_kind_name(h.kind), "?"), "kind");
	CHECKF(h.version == SHF_WIRE_VERSION && n >= SHF_WIRE_HDR, "version or length unchecked");
	CHECKF(h.src_session == shf_wire_get64(data + 16) &&
		       h.dst_session == shf_wire_get64(data + 24),
	       "session tags not decoded");
	cnt.accepted++;
	cnt.by_kind[h.kind]++;
	check_canonical(data, n, n_nodes, &h, max_msg);
	return 0;
}

#ifdef SHF_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The first bytes of a valid message decide nodes; accept any. */
	if (size > MAX_BUF)
		return 0;
	check_one(data, size, 8, size >= 16 ? shf_wire_get32(data + 12) : 0, 1024);
	return 0;
}
#else

/* ---- generators of valid messages --------------------------------------- */

#define NODES 8u

/* A session tag as the peer protocol sends them: mostly random, sometimes
 * 0 (unstamped, or a first heartbeat's dst) or all ones.  The check must
 * take every value and decode it. */
static uint64_t gen_tag(void)
{
	switch (below(8)) {
	case 0: return 0;
	case 1: return ~(uint64_t)0;
	default: return rnd();
	}
}

/* A packed run of 2..256 messages of one random type and length (<=
 * max_msg, mostly short) with random payloads, within the limits of the
 * plain run it stands for (proto/shm.h). */
static void add_packed_run(struct shf_wire_batch_enc *e, uint32_t max_msg)
{
	static uint8_t items[SHF_RUN_MAX_BYTES];
	uint32_t len = below(2) ? below(33) : below(max_msg + 1);
	if (len > max_msg)
		len = max_msg;
	uint32_t most = SHF_RUN_MAX_BYTES / shf_run_item_bytes(len);
	if (most > SHF_RUN_MAX_COUNT)
		most = SHF_RUN_MAX_COUNT;
	if (most < 2)
		return;
	uint32_t n = 2 + below(most - 1), stride = (len + 7u) & ~7u;
	uint32_t bytes = shf_run_packed_bytes(n, len);
	struct shf_run_item it = {(uint32_t)rnd(), len};
	memset(items, 0, bytes);
	memcpy(items, &it, sizeof(it));
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < len; i++)
			items[SHF_RUN_ITEM_BYTES + k * stride + i] = (uint8_t)rnd();
	CHECKF(shf_run_check(items, bytes, n | SHF_RUN_PACKED, max_msg) == (int64_t)n * len,
	       "a well-formed packed run is refused");
	uint8_t *p = shf_wire_batch_add_run(e, (int32_t)below(SHF_WORLD_MAX), (int32_t)below(1000),
					    n | SHF_RUN_PACKED, bytes);
	if (p)
		memcpy(p, items, bytes);
}

/* A run of 1..12 items of random lengths (<= max_msg) with random payload,
 * as a client writes one (proto/shm.h); one in three packed instead. */
static void add_run(struct shf_wire_batch_enc *e, uint32_t max_msg)
{
	if (below(3) == 0) {
		add_packed_run(e, max_msg);
		return;
	}
	uint8_t items[SHF_RUN_MAX_BYTES];
	uint32_t count = 1 + below(12), bytes = 0, k = 0;
	for (; k < count; k++) {
		uint32_t len = below(3) == 0 ? 0 : below(below(2) ? 24 : max_msg + 1);
		if (len > max_msg)
			len = max_msg;
		uint32_t sz = shf_run_item_bytes(len);
		if (bytes + sz > sizeof(items))
			break;
		struct shf_run_item it = {(uint32_t)rnd(), len};
		memset(items + bytes, 0, sz);
		memcpy(items + bytes, &it, sizeof(it));
		for (uint32_t i = 0; i < len; i++)
			items[bytes + SHF_RUN_ITEM_BYTES + i] = (uint8_t)rnd();
		bytes += sz;
	}
	if (k == 0)
		return;
	CHECKF(shf_run_check(items, bytes, k, max_msg) >= 0, "a well-formed run is refused");
	uint8_t *p = shf_wire_batch_add_run(e, (int32_t)below(SHF_WORLD_MAX), (int32_t)below(1000),
					    k, bytes);
	if (p)
		memcpy(p, items, bytes);
}

static size_t gen_batch(uint8_t *b, uint32_t src, uint32_t dst, uint32_t max_msg)
{
	struct shf_wire_batch_enc e;
	uint32_t cap = SHF_WIRE_BATCH_HDR + 24 + below(MAX_BUF - SHF_WIRE_BATCH_HDR - 24);
	CHECKF(shf_wire_batch_begin(&e, b, cap, src, dst, rnd()) == 0, "begin");
	uint32_t want = 1 + below(24);
	for (uint32_t i = 0; i < want; i++) {
		uint32_t len = below(4) == 0 ? 0 : below(below(2) ? 16 : max_msg + 1);
		if (len > max_msg)
			len = max_msg;
		if (below(4) == 0) { /* one record in 4 a run */
			add_run(&e, max_msg);
			continue;
		}
		/* one record in 8 a broadcast copy */
		int32_t to = below(8) == 0 ? SHF_WIRE_DST_BCAST : (int32_t)below(SHF_WORLD_MAX);
		uint8_t *p = shf_wire_batch_add(&e, to, (int32_t)below(1000), (uint32_t)rnd(), len);
		if (!p)
			break;
		for (uint32_t k = 0; k < len; k++)
			p[k] = (uint8_t)rnd();
	}
	if (e.count == 0)
		CHECKF(shf_wire_batch_put(&e, 0, 0, 0, NULL, 0) == 0, "one record");
	return shf_wire_batch_end(&e, 1 + below(1000));
}

static size_t gen(uint8_t *b, uint32_t src, uint32_t dst, uint32_t max_msg)
{
	long n = 0;
	switch (below(7)) {
	case 0:
	case 1: n = (long)gen_batch(b, src, dst, max_msg); break;
	case 2: {
		struct shf_wire_ack a = {rnd(), below(SHF_WIRE_WINDOW_MAX + 1), (uint32_t)rnd()};
		n = shf_wire_enc_ack(b, MAX_BUF, src, dst, &a);
		break;
	}
	case 3: {
		struct shf_wire_heartbeat hb = {.time_ns = rnd(), .incarnation = rnd() | 1};
		n = shf_wire_enc_heartbeat(b, MAX_BUF, src, dst, &hb);
		break;
	}
	case 4: {
		struct shf_wire_join j = {.world = 1 + (int32_t)below(5000), .uid = (uint32_t)rnd()};
		static const char *names[] = {"a", "job.1", "slurm:12345@x", "A-b_c+d"};
		snprintf(j.name, sizeof(j.name), "%s", names[below(4)]);
		struct shf_wire_range rg[32];
		uint32_t nr = 0;
		int32_t next = 0;
		while (nr < 32 && next < j.world) {
			int32_t first = next + (int32_t)below(3);
			if (first >= j.world)
				break;
			int32_t count = 1 + (int32_t)below((uint32_t)(j.world - first));
			if (count > 50)
				count = 1 + (int32_t)below(50);
			rg[nr].first = first;
			rg[nr].count = count;
			nr++;
			next = first + count;
			if (below(4) == 0)
				break;
		}
		if (nr == 0) {
			rg[0].first = 0;
			rg[0].count = 1;
			nr = 1;
		}
		if (below(3) == 0) {
			/* the same ranges as a home's JOB_MAP, on both nodes */
			struct shf_wire_map mp = {.world = j.world, .uid = j.uid,
						  .flags = (uint32_t)below(2)};
			memcpy(mp.name, j.name, sizeof(mp.name));
			static struct shf_wire_map_ent me[256];
			if (below(2)) {
				for (uint32_t i = 0; i < nr; i++)
					me[i] = (struct shf_wire_map_ent){rg[i].first, rg[i].count,
									  below(2) ? src : dst, 0, 0};
			} else {
				/* ranks dealt round-robin in blocks of c over nodes
				 * base .. base + span - 1 (cyclic, block-cyclic), from a
				 * random first rank, maybe ending mid-round */
				uint32_t span = 1 + below(NODES), base = below(NODES - span + 1);
				int32_t c = 1 + (int32_t)below(4);
				int32_t r = (int32_t)below((uint32_t)j.world);
				nr = 0;
				for (uint32_t x = 0; nr < 256 && r < j.world; x++, r += c)
					me[nr++] = (struct shf_wire_map_ent){
						r, j.world - r < c ? j.world - r : c, base + x % span, 0, 0};
			}
			/* version 8: blocks on consecutive nodes in one entry;
			 * version 9: rounds of them too */
			nr = shf_wire_map_compact(me, nr);
			n = shf_wire_enc_map(b, MAX_BUF, src, dst, &mp, me, nr);
		} else if (below(2) == 0) {
			static const int reasons[] = {-EACCES, -EINVAL, -EEXIST};
			struct shf_wire_deny dn = {.reason = reasons[below(3)], .other_node = src,
						   .other_uid = (uint32_t)rnd(), .other_world = j.world};
			memcpy(dn.name, j.name, sizeof(dn.name));
			n = shf_wire_enc_deny(b, MAX_BUF, src, dst, &dn);
		} else {
			j.flags = (uint32_t)below(2);
			n = shf_wire_enc_join(b, MAX_BUF, src, dst, &j, rg, nr);
		}
		break;
	}
	case 5: {
		if (below(2)) {
			/* a window's leaves: sorted, disjoint ranges of one reason
			 * each, some after a loss (version 7's lost node); or a
			 * home's forward of several nodes' (the receiver's too),
			 * or the ask for them */
			struct shf_wire_leave l = {.job_hash = rnd(), .world = 1 + (int32_t)below(1000)};
			if (below(6) == 0) {
				struct shf_wire_leave_ask a = {l.job_hash, l.world, below(2)};
				n = shf_wire_enc_leave_ask(b, MAX_BUF, src, dst, &a);
				break;
			}
			static const uint32_t lflags[] = {0, SHF_WIRE_LEAVE_RELAY,
							  SHF_WIRE_LEAVE_FORWARDED,
							  SHF_WIRE_LEAVE_WITHDRAW};
			uint32_t flags = lflags[below(4)];
			struct shf_wire_leave_ent le[16];
			uint32_t ne = 0;
			int32_t next = 0;
			uint32_t lost = (src + 1 + below(NODES - 1)) % NODES;
			while (ne < 16 && next < l.world) {
				int32_t first = next + (int32_t)below(3);
				if (first >= l.world)
					break;
				int32_t count = 1 + (int32_t)below((uint32_t)(l.world - first));
				if (count > 20)
					count = 1 + (int32_t)below(20);
				uint32_t who = flags == SHF_WIRE_LEAVE_FORWARDED ? below(NODES) : src;
				le[ne] = (struct shf_wire_leave_ent){first, count,
								     -(int32_t)below(4096),
								     SHF_WIRE_NODE_NONE, who};
				if (le[ne].reason == -EHOSTDOWN) /* only with its lost node */
					le[ne].reason = 0;
				if (below(3) == 0) {
					le[ne].reason = -EHOSTDOWN;
					le[ne].lost_node = lost == who ? (who + 1) % NODES : lost;
				}
				ne++;
				next = first + count;
				if (below(3) == 0)
					break;
			}
			if (ne == 0) {
				le[0] = (struct shf_wire_leave_ent){0, l.world, 0, SHF_WIRE_NODE_NONE, src};
				ne = 1;
			}
			l.flags = flags;
			n = shf_wire_enc_leave(b, MAX_BUF, src, dst, &l, le, ne);
		} else {
			struct shf_wire_epoch ep = {rnd(), 1 + below(100), 1 + below(2), below(99)};
			n = shf_wire_enc_epoch_kind(b, MAX_BUF, SHF_WIRE_EPOCH_UP, src, dst, &ep);
		}
		break;
	}
	default: {
		struct shf_wire_drop d = {rnd(), 1 + rnd() % 1000, (int32_t)below(100),
					  below(8) == 0 ? SHF_WIRE_DST_BCAST : (int32_t)below(100),
					  1 + below(10), -1 - (int32_t)below(4095)};
		n = shf_wire_enc_drop(b, MAX_BUF, src, dst, &d);
		break;
	}
	}
	CHECKF(n >= (long)SHF_WIRE_HDR, "generator produced an invalid message (%ld)", n);
	CHECKF(shf_wire_get64(b + 16) == 0 && shf_wire_get64(b + 24) == 0, "encoder tags not 0");
	shf_wire_stamp(b, gen_tag(), gen_tag());
	return (size_t)n;
}

/* ---- mutations ------------------------------------------------------------ */

static uint32_t interesting32(size_t n)
{
	static const uint32_t v[] = {0,          1,          2,          7,          8,
				     15,         16,         17,         31,         32,
				     40,         48,         56,         63,         64,
				     120,        0x7f,       0x80,       0xff,       0xffff,
				     0x10000,    0x7fffffff, 0x80000000, 0xfffffff8, 0xffffffff,
				     1u << 24,   (1u << 24) - 1};
	uint32_t k = below(sizeof(v) / sizeof(v[0]) + 3);
	if (k == sizeof(v) / sizeof(v[0]))
		return (uint32_t)n;
	if (k == sizeof(v) / sizeof(v[0]) + 1)
		return (uint32_t)n - SHF_WIRE_BATCH_HDR; /* a batch's bytes */
	if (k == sizeof(v) / sizeof(v[0]) + 2)
		return (uint32_t)rnd();
	return v[k];
}

static size_t mutate(uint8_t *b, size_t n)
{
	uint32_t rounds = 1 + below(3);
	for (uint32_t r = 0; r < rounds; r++) {
		switch (below(9)) {
		case 0: /* bit flips */
			for (uint32_t k = 1 + below(4); k-- && n;)
				b[below((uint32_t)n)] ^= (uint8_t)(1u << below(8));
			break;
		case 1: /* random bytes */
			for (uint32_t k = 1 + below(4); k-- && n;)
				b[below((uint32_t)n)] = (uint8_t)rnd();
			break;
		case 2: /* an aligned 32-bit field gets a boundary value */
		case 3:
			if (n >= 4) {
				size_t off = 4 * below((uint32_t)(n / 4));
				if (below(2) && n > SHF_WIRE_BATCH_HDR + 8)
					/* batch count/bytes, first record's ranks; a join's
					 * uid/flags/name */
					off = 48 + 4 * below(4);
				shf_wire_put32(b + off, interesting32(n));
			}
			break;
		case 4: /* truncate */
			n = below((uint32_t)n + 1);
			break;
		case 5: /* extend with zeros or junk */
		{
			uint32_t add = 1 + below(64);
			if (n + add > MAX_BUF)
				break;
			bool zero = below(2);
			for (uint32_t k = 0; k < add; k++)
				b[n + k] = zero ? 0 : (uint8_t)rnd();
			n += add;
			break;
		}
		case 6: /* duplicate a chunk (records) somewhere else */
			if (n > SHF_WIRE_BATCH_HDR) {
				uint32_t from = SHF_WIRE_BATCH_HDR +
						8 * below((uint32_t)(n - SHF_WIRE_BATCH_HDR) / 8);
				uint32_t len = 8 * (1 + below(8));
				if (from + len > n || n + len > MAX_BUF)
					break;
				memmove(b + from + len, b + from, n - from);
				n += len;
			}
			break;
		case 7: /* a 64-bit field gets 0 or ~0 */
			if (n >= 8) {
				size_t off = 8 * below((uint32_t)(n / 8));
				shf_wire_put64(b + off, below(2) ? 0 : ~(uint64_t)0);
			}
			break;
		default: /* new session tags: still valid if the rest is */
			if (n >= SHF_WIRE_HDR)
				shf_wire_stamp(b, gen_tag(), gen_tag());
			break;
		}
	}
	return n;
}

int main(void)
{
	const char *s = getenv("SHF_FUZZ_ITERS");
	uint64_t iters = s ? strtoull(s, NULL, 0) : 200000;
	s = getenv("SHF_FUZZ_SEED");
	if (s)
		rng_state = strtoull(s, NULL, 0) | 1;
	uint64_t seed = rng_state;
	static uint8_t msg[MAX_BUF + 128];

	for (uint64_t i = 0; i < iters; i++) {
		uint32_t src = below(NODES), dst = below(NODES);
		if (src == dst)
			dst = (src + 1) % NODES;
		uint32_t max_msg = below(4) ? 4096 : below(300);
		size_t n = gen(msg, src, dst, max_msg);

		/* the valid message itself is accepted */
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, msg, n);
		CHECKF(check_one(copy, n, NODES, dst, max_msg) == 0, "valid message rejected");
		/* ... whatever its session tags: the check does not judge them */
		uint64_t ts = rnd(), td = below(2) ? 0 : rnd();
		shf_wire_stamp(copy, ts, td);
		struct shf_wire_hdr ht;
		CHECKF(shf_wire_check(copy, n, NODES, dst, &ht) == 0 && ht.src_session == ts &&
			       ht.dst_session == td && ht.kind == shf_wire_get16(msg + 6),
		       "restamped message rejected or tags not decoded");
		free(copy);
		/* ... not by anyone else, and not with fewer nodes */
		struct shf_wire_hdr h;
		CHECKF(shf_wire_check(msg, n, NODES, (dst + 1) % NODES, &h) == -EBADMSG,
		       "accepted by the wrong node");
		CHECKF(shf_wire_check(msg, n, src, dst, &h) == -EBADMSG, "src beyond nodes");

		/* then mutated, from an exactly-sized buffer */
		size_t m = mutate(msg, n);
		copy = malloc(m ? m : 1);
		memcpy(copy, msg, m);
		check_one(copy, m, NODES, dst, max_msg);
		free(copy);
	}
	fprintf(stderr,
		"wire-fuzz: seed %#llx, %llu iterations: mutants accepted %llu, rejected %llu, "
		"records walked %llu (packed runs %llu)\n",
		(unsigned long long)seed, (unsigned long long)iters,
		(unsigned long long)(cnt.accepted - iters), (unsigned long long)cnt.rejected,
		(unsigned long long)cnt.records, (unsigned long long)cnt.packed);
	/* The mutator must produce both outcomes, or it tests nothing; and
	 * packed runs must be among what is walked. */
	if (iters >= 1000 && (cnt.rejected < iters / 10 || cnt.accepted - iters < iters / 100 ||
			      cnt.packed == 0)) {
		fprintf(stderr, "wire-fuzz: FAIL: mutations are not exercising both paths\n");
		return 1;
	}
	fprintf(stderr, "wire-fuzz: PASS\n");
	return 0;
}
#endif
