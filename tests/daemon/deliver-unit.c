/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/deliver-unit.c - hop 3 (daemon/deliver.c) alone, into a
 * real ring in guarded memory read back by a consumer view: the runs that
 * grow (docs/ring.md, "Runs that grow").
 *
 *   - bounds: consecutive messages of one source go as one run, closed at
 *     256 items, at 16 KiB of items, at a change of source, at the publish
 *     step, and where the next bytes would wrap (then a PAD and a new run);
 *   - the daemon writes a run's header from its own copies: a client that
 *     scribbles on it before the publish does not change what it reads;
 *   - a full ring says -EAGAIN and nothing of the message is in it; after
 *     the consumer made room the same message goes;
 *   - a client that did not ask for runs gets one message record each;
 *   - packed runs: as they are to a client that reads them; else plain, one
 *     run with an item header each (grown by the next message of the
 *     source), or one record each; a full ring takes none of one;
 *   - random traffic from 3 sources, places, runs and packed runs, random publishes and
 *     drains, 4 KiB and 64 KiB rings: every message exactly once, in order
 *     per source, intact, every run valid (shf_run_check), padding zero.
 *
 * shd_client_cutoff() and shd_sched_wake() are stand-ins: this module only
 * calls them when a ring index is corrupt or room appears.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/client.h"
#include "daemon/deliver.h"
#include "daemon/sched.h"
#include "proto/shm.h"
#include "tests/ring/ring-test.h"

static int cutoffs;

void shd_client_cutoff(struct shd_client *c, int err, const char *fmt, ...)
{
	(void)c;
	(void)err;
	(void)fmt;
	cutoffs++;
}

void shd_sched_wake(struct shd_list *waiters)
{
	(void)waiters;
}

struct fixture {
	struct t_guarded g;
	struct shd_daemon d;
	struct shd_client t;
	struct shf_ring cons;
	uint64_t next[3]; /* per source: next sequence number expected */
	uint64_t msgs, records, runs, packed_runs;
	uint32_t max_count, max_bytes; /* largest run seen */
};

static void fx_open(struct fixture *f, uint64_t size, bool runs)
{
	memset(f, 0, sizeof(*f));
	t_guarded_open(&f->g, size);
	uint32_t max_rec = shf_ring_max_payload(size);
	CHECK(shf_ring_init(&f->t.deliver, f->g.ctl, f->g.data, size, max_rec, true) == 0);
	shf_ring_init_producer(&f->t.deliver);
	CHECK(shf_ring_init(&f->cons, f->g.ctl, f->g.data, size, max_rec, false) == 0);
	shf_ring_init_consumer(&f->cons);
	shd_list_init(&f->d.dirty);
	shd_list_init(&f->t.dirty_link);
	shd_list_init(&f->t.waiters);
	f->t.d = &f->d;
	f->t.state = SHD_SESS_ACTIVE;
	f->t.runs = runs;
	f->t.bell_deliver = -1; /* the publish rings nobody */
}

/* payload byte i of message seq from src */
static uint8_t pat(int32_t src, uint64_t seq, uint32_t i)
{
	return (uint8_t)(src * 71 + seq * 13 + i * 7 + 1);
}

static void fill(uint8_t *p, int32_t src, uint64_t seq, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pat(src, seq, i);
}

/* The type of a packed run's messages (one for all): each carries its
 * sequence number in its first 4 bytes instead. */
#define PACKED_TYPE 0x40000005u

static void check_msg(struct fixture *f, int32_t src, uint32_t type, const uint8_t *p,
		      uint32_t len)
{
	CHECKF(src >= 0 && src < 3, "source %d", src);
	uint32_t seq = type, from = 0;
	if (type == PACKED_TYPE) {
		CHECKF(len >= 4, "a packed run's message of %u bytes", len);
		memcpy(&seq, p, 4);
		from = 4;
	}
	CHECKF(seq == f->next[src], "source %d: message %u, expected %llu", src, seq,
	       (unsigned long long)f->next[src]);
	for (uint32_t i = from; i < len; i++)
		CHECKF(p[i] == pat(src, seq, i), "source %d message %u: byte %u corrupt", src,
		       seq, i);
	f->next[src]++;
	f->msgs++;
}

/* Read everything published. */
static void drain(struct fixture *f)
{
	struct shf_ring_view v;
	int r;
	while ((r = shf_ring_peek(&f->cons, &v)) > 0) {
		f->records++;
		if (v.kind == SHF_REC_RUN) {
			struct shf_run_hdr h;
			CHECK(v.len >= SHF_RUN_HDR_BYTES);
			memcpy(&h, v.data, sizeof(h));
			uint32_t bytes = v.len - SHF_RUN_HDR_BYTES;
			const uint8_t *items = v.data + SHF_RUN_HDR_BYTES;
			CHECKF(shf_run_check(items, bytes, h.count, f->cons.max_rec) >= 0,
			       "invalid run: %u items in %u bytes", h.count, bytes);
			f->runs++;
			if (h.count & SHF_RUN_PACKED) {
				CHECKF(f->t.packed, "a packed run for a client that did not ask");
				f->packed_runs++;
				uint32_t n = shf_run_n(h.count);
				struct shf_run_item it;
				memcpy(&it, items, sizeof(it));
				uint32_t stride = (it.len + 7u) & ~7u;
				for (uint32_t k = 0; k < n; k++)
					check_msg(f, h.rank, it.type,
						  items + SHF_RUN_ITEM_BYTES + k * stride, it.len);
				continue;
			}
			if (h.count > f->max_count)
				f->max_count = h.count;
			if (bytes > f->max_bytes)
				f->max_bytes = bytes;
			for (uint32_t k = 0, off = 0; k < h.count; k++) {
				struct shf_run_item it;
				memcpy(&it, items + off, sizeof(it));
				check_msg(f, h.rank, it.type, items + off + SHF_RUN_ITEM_BYTES, it.len);
				off += shf_run_item_bytes(it.len);
			}
		} else {
			CHECKF(v.kind == SHF_REC_MSG, "record kind %u", v.kind);
			struct shf_msg_hdr h;
			memcpy(&h, v.data, sizeof(h));
			check_msg(f, h.rank, h.type, v.data + SHF_MSG_HDR_BYTES,
				  v.len - SHF_MSG_HDR_BYTES);
		}
	}
	CHECKF(r == 0, "consumer: ring corrupt (%d)", r);
	shf_ring_release(&f->cons);
}

static uint64_t sent[3];

static int place(struct fixture *f, int32_t src, uint32_t len)
{
	uint8_t buf[8192];
	CHECK(len <= sizeof(buf));
	fill(buf, src, sent[src], len);
	int e = shd_deliver_place(&f->d, &f->t, src, (uint32_t)sent[src], buf, len);
	if (e == 0)
		sent[src]++;
	return e;
}

/* A run of n messages of len bytes each from src. */
static int run(struct fixture *f, int32_t src, uint32_t n, const uint32_t *lens)
{
	uint8_t items[SHF_RUN_MAX_BYTES];
	uint32_t off = 0;
	uint64_t payload = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct shf_run_item it = {(uint32_t)(sent[src] + k), lens[k]};
		CHECK(off + shf_run_item_bytes(lens[k]) <= sizeof(items));
		memset(items + off, 0, shf_run_item_bytes(lens[k]));
		memcpy(items + off, &it, sizeof(it));
		fill(items + off + SHF_RUN_ITEM_BYTES, src, sent[src] + k, lens[k]);
		off += shf_run_item_bytes(lens[k]);
		payload += lens[k];
	}
	struct shd_run_pos pos = {0, 0};
	int e = shd_deliver_run(&f->d, &f->t, src, items, off, n, payload, &pos);
	if (e == 0)
		sent[src] += n;
	return e;
}

/* A packed run of n messages of len (>= 4) bytes each from src, as a
 * client or a relay writes one: one item header, the payloads padded. */
static int packed(struct fixture *f, int32_t src, uint32_t n, uint32_t len)
{
	static uint8_t items[SHF_RUN_MAX_BYTES];
	uint32_t stride = (len + 7u) & ~7u, bytes = shf_run_packed_bytes(n, len);
	CHECK(len >= 4 && bytes <= sizeof(items));
	memset(items, 0, bytes);
	struct shf_run_item it = {PACKED_TYPE, len};
	memcpy(items, &it, sizeof(it));
	for (uint32_t k = 0; k < n; k++) {
		uint8_t *q = items + SHF_RUN_ITEM_BYTES + k * stride;
		uint32_t seq = (uint32_t)(sent[src] + k);
		fill(q, src, seq, len);
		memcpy(q, &seq, 4);
	}
	CHECKF(shf_run_check(items, bytes, n | SHF_RUN_PACKED, 1u << 20) == (int64_t)n * len,
	       "the test's packed run is not valid");
	struct shd_run_pos pos = {0, 0};
	int e = shd_deliver_run(&f->d, &f->t, src, items, bytes, n | SHF_RUN_PACKED,
				(uint64_t)n * len, &pos);
	if (e == 0)
		sent[src] += n;
	return e;
}

static void fx_close(struct fixture *f)
{
	shd_deliver_publish(&f->d);
	drain(f);
	for (int s = 0; s < 3; s++)
		CHECKF(f->next[s] == sent[s], "source %d: %llu of %llu messages read", s,
		       (unsigned long long)f->next[s], (unsigned long long)sent[s]);
	t_guarded_close(&f->g);
	memset(sent, 0, sizeof(sent));
}

static void test_bounds(void)
{
	struct fixture f;
	fx_open(&f, 1u << 16, true);
	/* 300 messages of 16 B from one source: a run closes at 256 items */
	for (int i = 0; i < 300; i++)
		CHECK(place(&f, 0, 16) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 2 && f.max_count == 256, "300 messages: %llu records, largest %u",
	       (unsigned long long)f.records, f.max_count);
	/* 1,000 B messages: an item is 1,008 B, so 16 fit in 16 KiB */
	f.records = 0;
	for (int i = 0; i < 20; i++)
		CHECK(place(&f, 1, 1000) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 2 && f.max_bytes == 16 * 1008, "20 x 1000 B: %llu records, largest %u B",
	       (unsigned long long)f.records, f.max_bytes);
	/* alternating sources: every change closes the run */
	f.records = 0;
	for (int i = 0; i < 10; i++)
		CHECK(place(&f, i % 2, 8) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 10, "alternating sources: %llu records", (unsigned long long)f.records);
	/* a publish closes the run: the next message starts a new record */
	f.records = 0;
	CHECK(place(&f, 2, 5) == 0);
	shd_deliver_publish(&f.d);
	CHECK(place(&f, 2, 5) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 2, "across a publish: %llu records", (unsigned long long)f.records);
	/* runs merge with runs and with plain messages of the same source */
	f.records = 0;
	uint32_t lens[3] = {1, 0, 30};
	CHECK(run(&f, 0, 3, lens) == 0);
	CHECK(place(&f, 0, 3) == 0);
	CHECK(run(&f, 0, 3, lens) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 1, "run, message, run: %llu records", (unsigned long long)f.records);
	fx_close(&f);
}

/* The run must not wrap: where the array ends, the next message starts a
 * new record (after a PAD, at offset 0). */
static void test_wrap(void)
{
	struct fixture f;
	fx_open(&f, 4096, true);
	uint64_t records = 0;
	for (int lap = 0; lap < 40; lap++) {
		for (int i = 0; i < 30; i++)
			CHECK(place(&f, 0, 24) == 0); /* 32-byte items: 960 B */
		shd_deliver_publish(&f.d);
		drain(&f);
		records = f.records;
	}
	/* 40 x 976 B through a 4 KiB array: a burst that meets the end of the
	 * array is split there */
	CHECKF(records >= 40 + 5, "40 bursts through 4 KiB: %llu records", (unsigned long long)records);
	fx_close(&f);
}

/* The daemon keeps a run's length and count itself: what a client writes
 * into the open run's headers before the publish is overwritten. */
static void test_scribble(void)
{
	struct fixture f;
	fx_open(&f, 1u << 16, true);
	CHECK(place(&f, 0, 16) == 0);
	uint8_t *rec = f.g.data; /* the first record, at offset 0 */
	/* its length (the kind is its own to break) and its run header */
	memset(rec, 0xee, 4);
	memset(rec + SHF_RING_HDR_BYTES, 0xee, SHF_RUN_HDR_BYTES);
	CHECK(place(&f, 0, 16) == 0);
	memset(rec, 0x11, 4);
	memset(rec + SHF_RING_HDR_BYTES, 0x11, SHF_RUN_HDR_BYTES);
	CHECK(place(&f, 0, 16) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 1 && f.max_count == 3, "%llu records, %u items",
	       (unsigned long long)f.records, f.max_count);
	fx_close(&f);
}

/* A full ring: -EAGAIN, nothing written; the same message goes after the
 * consumer made room. */
static void test_full(void)
{
	struct fixture f;
	fx_open(&f, 4096, true);
	int e, n = 0;
	while ((e = place(&f, 0, 100)) == 0)
		n++;
	CHECKF(e == -EAGAIN, "full ring: %d after %d messages", e, n);
	CHECK(cutoffs == 0);
	CHECK(place(&f, 1, 100) == -EAGAIN);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.msgs == (uint64_t)n, "%llu of %d read", (unsigned long long)f.msgs, n);
	CHECK(place(&f, 0, 100) == 0);
	CHECK(place(&f, 1, 100) == 0);
	fx_close(&f);
}

/* A client that did not ask for runs: one message record each. */
static void test_no_runs(void)
{
	struct fixture f;
	fx_open(&f, 1u << 16, false);
	for (int i = 0; i < 50; i++)
		CHECK(place(&f, 0, 16) == 0);
	uint32_t lens[4] = {3, 9, 0, 17};
	CHECK(run(&f, 0, 4, lens) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 54 && f.runs == 0, "%llu records, %llu runs",
	       (unsigned long long)f.records, (unsigned long long)f.runs);
	fx_close(&f);
}

/* Packed runs: to a client that said it reads them, as they are; to one
 * that reads runs only, as one plain run with an item header each, which
 * the next place from the same source extends; to one that reads no runs,
 * one message record each; a full ring says -EAGAIN for the whole, and
 * nothing of it is in the ring. */
static void test_packed(void)
{
	struct fixture f;
	fx_open(&f, 1u << 16, true);
	CHECK(packed(&f, 0, 100, 16) == 0);
	CHECK(packed(&f, 0, 5, 13) == 0);
	CHECK(place(&f, 0, 9) == 0); /* grows the same run */
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 1 && f.runs == 1 && f.msgs == 106 && f.max_count == 106 &&
		       f.max_bytes == 100 * 24 + 5 * 24 + 24,
	       "%llu records, %llu runs, %llu messages, largest %u items in %u bytes",
	       (unsigned long long)f.records, (unsigned long long)f.runs,
	       (unsigned long long)f.msgs, f.max_count, f.max_bytes);
	fx_close(&f);

	fx_open(&f, 1u << 16, false);
	CHECK(packed(&f, 1, 40, 8) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 40 && f.runs == 0 && f.msgs == 40, "%llu records, %llu runs",
	       (unsigned long long)f.records, (unsigned long long)f.runs);
	fx_close(&f);

	/* a client that reads packed runs gets them as they are, each a
	 * record of its own; the place after one opens a new run */
	fx_open(&f, 1u << 16, true);
	f.t.packed = true;
	CHECK(place(&f, 0, 9) == 0);
	CHECK(packed(&f, 0, 100, 16) == 0);
	CHECK(packed(&f, 0, 5, 13) == 0);
	CHECK(place(&f, 0, 9) == 0);
	shd_deliver_publish(&f.d);
	drain(&f);
	CHECKF(f.records == 4 && f.runs == 4 && f.packed_runs == 2 && f.msgs == 107,
	       "%llu records, %llu runs (%llu packed), %llu messages",
	       (unsigned long long)f.records, (unsigned long long)f.runs,
	       (unsigned long long)f.packed_runs, (unsigned long long)f.msgs);
	fx_close(&f);

	/* a 4 KiB ring filled with packed runs until one does not fit: that
	 * one left nothing in it (fx_close: every message read was sent) */
	fx_open(&f, 4096, true);
	int e, k = 0;
	while ((e = packed(&f, 2, 40, 8)) == 0)
		CHECK(++k < 100);
	CHECK(e == -EAGAIN && k >= 1);
	fx_close(&f);
}

static void test_random(uint64_t size, unsigned seed, bool packed_in)
{
	struct fixture f;
	fx_open(&f, size, true);
	f.t.packed = packed_in;
	srand(seed);
	uint32_t big = size >= (1u << 16) ? 5000 : 600;
	for (int op = 0; op < 200000; op++) {
		int32_t src = rand() % 3;
		int r = rand() % 100;
		int e;
		uint32_t lens[8];
		if (r < 70) {
			uint32_t len = rand() % 10 ? (uint32_t)(rand() % 40) : (uint32_t)rand() % big;
			e = place(&f, src, len);
		} else if (r < 77) {
			uint32_t n = 1 + (uint32_t)(rand() % 8);
			for (uint32_t k = 0; k < n; k++)
				lens[k] = (uint32_t)(rand() % 64);
			e = run(&f, src, n, lens);
		} else if (r < 80) {
			e = packed(&f, src, 2 + (uint32_t)(rand() % 19), 4 + (uint32_t)(rand() % 40));
		} else if (r < 90) {
			shd_deliver_publish(&f.d);
			continue;
		} else {
			drain(&f);
			continue;
		}
		if (e == -EAGAIN) {
			shd_deliver_publish(&f.d);
			drain(&f);
		} else {
			CHECKF(e == 0, "op %d: %d", op, e);
		}
	}
	CHECK(cutoffs == 0);
	fprintf(stderr, "deliver-unit: %llu KiB ring: %llu messages in %llu records (%llu runs, "
		"%llu packed)\n", (unsigned long long)(size >> 10), (unsigned long long)f.msgs,
		(unsigned long long)f.records, (unsigned long long)f.runs,
		(unsigned long long)f.packed_runs);
	CHECK(packed_in ? f.packed_runs > 0 : f.packed_runs == 0);
	fx_close(&f);
}

int main(void)
{
	test_bounds();
	test_wrap();
	test_scribble();
	test_full();
	test_no_runs();
	test_packed();
	test_random(4096, 1, false);
	test_random(1u << 16, 2, false);
	test_random(4096, 3, true);
	test_random(1u << 16, 4, true);
	fprintf(stderr, "deliver-unit: ok\n");
	return 0;
}
