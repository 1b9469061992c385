/* SPDX-License-Identifier: MIT */
/*
 * tests/net/wire-unit.c - proto/wire: byte layout, round trip of every
 * kind, and rejection of each malformed field.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

static int failures;

#define CHECK(cond, ...)                                                             \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "wire-unit: FAIL %s:%d: `%s`: ", __FILE__,   \
				__LINE__, #cond);                                    \
			fprintf(stderr, __VA_ARGS__);                                \
			fprintf(stderr, "\n");                                       \
			failures++;                                                  \
		}                                                                    \
	} while (0)

#define NODES 4u
#define SRC 2u
#define DST 1u
#define MAX_MSG 4096u

/* Check buf as node DST of NODES; the result code. */
static int chk(const void *buf, size_t n, struct shf_wire_hdr *h)
{
	struct shf_wire_hdr tmp;
	return shf_wire_check(buf, n, NODES, DST, h ? h : &tmp);
}

/* Copy, patch one little-endian field, check. */
static int chk_patched32(const uint8_t *msg, size_t n, size_t off, uint32_t v)
{
	uint8_t *b = malloc(n);
	memcpy(b, msg, n);
	shf_wire_put32(b + off, v);
	int r = chk(b, n, NULL);
	free(b);
	return r;
}

static int chk_patched64(const uint8_t *msg, size_t n, size_t off, uint64_t v)
{
	uint8_t *b = malloc(n);
	memcpy(b, msg, n);
	shf_wire_put64(b + off, v);
	int r = chk(b, n, NULL);
	free(b);
	return r;
}

static int chk_patched8(const uint8_t *msg, size_t n, size_t off, uint8_t v)
{
	uint8_t *b = malloc(n);
	memcpy(b, msg, n);
	b[off] = v;
	int r = chk(b, n, NULL);
	free(b);
	return r;
}

static void test_le_and_hash(void)
{
	uint8_t b[8];
	shf_wire_put32(b, 0x11223344u);
	CHECK(b[0] == 0x44 && b[3] == 0x11, "put32 is little-endian");
	shf_wire_put64(b, UINT64_C(0x0102030405060708));
	CHECK(b[0] == 0x08 && b[7] == 0x01, "put64 is little-endian");
	CHECK(shf_wire_get64(b) == UINT64_C(0x0102030405060708), "get64");
	shf_wire_put16(b, 0xa1b2);
	CHECK(b[0] == 0xb2 && shf_wire_get16(b) == 0xa1b2, "16-bit");
	/* FNV-1a 64 reference values */
	CHECK(shf_wire_job_hash("") == UINT64_C(0xcbf29ce484222325), "hash of empty");
	CHECK(shf_wire_job_hash("a") == UINT64_C(0xaf63dc4c8601ec8c), "hash of a");
	CHECK(shf_wire_rec_bytes(0) == 16 && shf_wire_rec_bytes(1) == 24 &&
		      shf_wire_rec_bytes(8) == 24 && shf_wire_rec_bytes(9) == 32,
	      "record sizes");
	CHECK(!strcmp(shf_wire_kind_name(SHF_WIRE_BATCH), "batch") &&
		      !strcmp(shf_wire_kind_name(99), "?"),
	      "kind names");
}

/* A golden ACK: every byte of the layout. */
static void test_golden_ack(void)
{
	uint8_t b[64];
	struct shf_wire_ack a = {UINT64_C(0x1122334455667788), 8, 3};
	long n = shf_wire_enc_ack(b, sizeof(b), SRC, DST, &a);
	static const uint8_t want[32] = {
		'S',  'H',  'F',  'W',  1,    0,    2,    0,    /* magic, version, kind */
		2,    0,    0,    0,    1,    0,    0,    0,    /* src 2, dst 1 */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* acked_seq */
		8,    0,    0,    0,    3,    0,    0,    0,    /* window, dropped */
	};
	CHECK(n == 32 && !memcmp(b, want, 32), "ack bytes (n=%ld)", n);
}

static void test_batch(void)
{
	uint8_t buf[1024];
	struct shf_wire_batch_enc e;
	CHECK(shf_wire_batch_begin(&e, buf, 40, SRC, DST, 77) == -ENOBUFS, "tiny buffer");
	CHECK(shf_wire_batch_begin(&e, buf, sizeof(buf), SRC, DST, 77) == 0, "begin");
	CHECK(shf_wire_batch_end(&e, 5) == 0, "empty batch is not a message");
	const char *p1 = "hello";
	CHECK(shf_wire_batch_put(&e, 3, 4, 9, p1, 5) == 0, "put 1");
	CHECK(shf_wire_batch_put(&e, 0, 0, 0, NULL, 0) == 0, "put empty payload");
	uint8_t *dst = shf_wire_batch_add(&e, 100, 200, 0xdeadbeef, 16);
	CHECK(dst != NULL, "add");
	for (int i = 0; i < 16; i++)
		dst[i] = (uint8_t)i;
	CHECK(shf_wire_batch_put(&e, -1, 0, 0, p1, 1) == -EINVAL, "negative rank");
	CHECK(shf_wire_batch_put(&e, 0, SHF_WORLD_MAX, 0, p1, 1) == -EINVAL, "rank too big");
	CHECK(!shf_wire_batch_fits(&e, 2000) && shf_wire_batch_put(&e, 1, 1, 1, buf, 2000) == -ENOSPC,
	      "does not fit");
	size_t n = shf_wire_batch_end(&e, 42);
	size_t want = 40 + shf_wire_rec_bytes(5) + shf_wire_rec_bytes(0) + shf_wire_rec_bytes(16);
	CHECK(n == want && n == 40 + 24 + 16 + 32, "batch length %zu, want %zu", n, want);

	struct shf_wire_hdr h;
	CHECK(chk(buf, n, &h) == 0, "check");
	CHECK(h.kind == SHF_WIRE_BATCH && h.src_node == SRC && h.dst_node == DST && h.len == n,
	      "header");
	CHECK(h.u.batch.seq == 42 && h.u.batch.job_hash == 77 && h.u.batch.count == 3 &&
		      h.u.batch.bytes == n - 40,
	      "batch fields");
	struct shf_wire_iter it;
	struct shf_wire_rec r;
	shf_wire_iter_init(&it, buf, &h, MAX_MSG);
	CHECK(shf_wire_iter_next(&it, &r) == 1 && r.dst_rank == 3 && r.src_rank == 4 &&
		      r.type == 9 && r.len == 5 && !memcmp(r.data, "hello", 5),
	      "record 1");
	CHECK(((const uint8_t *)r.data - buf) % 8 == 0, "payload 8-aligned");
	CHECK(shf_wire_iter_next(&it, &r) == 1 && r.len == 0 && r.dst_rank == 0, "record 2");
	CHECK(shf_wire_iter_next(&it, &r) == 1 && r.len == 16 && r.dst_rank == 100 &&
		      r.src_rank == 200 && r.type == 0xdeadbeef && ((const uint8_t *)r.data)[15] == 15,
	      "record 3");
	CHECK(shf_wire_iter_next(&it, &r) == 0 && shf_wire_iter_next(&it, &r) == 0, "end");
	CHECK(shf_wire_batch_verify(buf, &h, MAX_MSG) == 0, "verify");
	CHECK(shf_wire_batch_verify(buf, &h, 15) == -EBADMSG, "max_msg enforced");

	/* header field corruption */
	CHECK(chk_patched32(buf, n, 0, 0x12345678) == -EPROTO, "magic");
	CHECK(chk_patched8(buf, n, 4, 2) == -EPROTO, "version");
	CHECK(chk_patched8(buf, n, 6, 0) == -EBADMSG, "kind 0");
	CHECK(chk_patched8(buf, n, 6, SHF_WIRE_KIND_MAX) == -EBADMSG, "kind max");
	CHECK(chk_patched32(buf, n, 8, NODES) == -EBADMSG, "src out of range");
	CHECK(chk_patched32(buf, n, 8, DST) == -EBADMSG, "src == dst");
	CHECK(chk_patched32(buf, n, 12, 0) == -EBADMSG, "not for me");
	CHECK(chk_patched64(buf, n, 16, 0) == -EBADMSG, "seq 0");
	CHECK(chk_patched32(buf, n, 32, 0) == -EBADMSG, "count 0");
	CHECK(chk_patched32(buf, n, 36, (uint32_t)(n - 40 + 8)) == -EBADMSG, "bytes too big");
	CHECK(chk_patched32(buf, n, 36, (uint32_t)(n - 40 - 8)) == -EBADMSG, "bytes too small");
	CHECK(chk_patched32(buf, n, 32, (uint32_t)(n - 40) / 16 + 1) == -EBADMSG,
	      "count cannot fit in bytes");
	CHECK(chk(buf, n - 8, NULL) == -EBADMSG && chk(buf, 15, NULL) == -EBADMSG, "truncated");
	CHECK(chk(buf, 0, NULL) == -EBADMSG, "empty");

	/* record corruption: each must stop the iterator */
	struct {
		size_t off;
		uint32_t v;
		const char *what;
	} recbad[] = {
		{40 + 0, (uint32_t)-1, "negative dst"},
		{40 + 4, SHF_WORLD_MAX, "src too big"},
		{40 + 12, 9, "len one past its padding: later records misparse"},
		{40 + 12, 100000, "len > max_msg"},
		{40 + 12, 4000, "len beyond the batch"},
		{32, 2, "count smaller than records"},
		{32, 4, "count larger than records"},
	};
	for (size_t i = 0; i < sizeof(recbad) / sizeof(recbad[0]); i++) {
		uint8_t b2[1024];
		memcpy(b2, buf, n);
		shf_wire_put32(b2 + recbad[i].off, recbad[i].v);
		struct shf_wire_hdr h2;
		int rc = chk(b2, n, &h2);
		if (rc == 0)
			rc = shf_wire_batch_verify(b2, &h2, MAX_MSG);
		CHECK(rc == -EBADMSG, "%s: %d", recbad[i].what, rc);
	}
	/* non-zero padding after "hello" */
	{
		uint8_t b2[1024];
		memcpy(b2, buf, n);
		b2[40 + 16 + 6] = 1;
		struct shf_wire_hdr h2;
		CHECK(chk(b2, n, &h2) == 0 && shf_wire_batch_verify(b2, &h2, MAX_MSG) == -EBADMSG,
		      "padding must be zero");
	}
	/* the iterator is sticky after an error */
	{
		uint8_t b2[1024];
		memcpy(b2, buf, n);
		shf_wire_put32(b2 + 40 + 24 + 0, (uint32_t)-5); /* record 2 dst */
		struct shf_wire_hdr h2;
		CHECK(chk(b2, n, &h2) == 0, "header still fine");
		shf_wire_iter_init(&it, b2, &h2, MAX_MSG);
		CHECK(shf_wire_iter_next(&it, &r) == 1, "record 1 fine");
		CHECK(shf_wire_iter_next(&it, &r) == -EBADMSG && shf_wire_iter_next(&it, &r) == -EBADMSG,
		      "sticky error");
	}
	/* an iterator over a non-batch header refuses */
	{
		struct shf_wire_hdr h2 = h;
		h2.kind = SHF_WIRE_ACK;
		shf_wire_iter_init(&it, buf, &h2, MAX_MSG);
		CHECK(shf_wire_iter_next(&it, &r) == -EBADMSG, "not a batch");
	}
	/* a full batch: fill to the byte */
	{
		uint8_t big[40 + 16 * 4];
		CHECK(shf_wire_batch_begin(&e, big, sizeof(big), SRC, DST, 1) == 0, "begin");
		int k = 0;
		while (shf_wire_batch_add(&e, 1, 2, 3, 0))
			k++;
		CHECK(k == 4, "4 empty records fit exactly (%d)", k);
		size_t bn = shf_wire_batch_end(&e, 1);
		CHECK(bn == sizeof(big) && chk(big, bn, &h) == 0 &&
			      shf_wire_batch_verify(big, &h, 0) == 0,
		      "full batch");
	}
}

static void test_small_kinds(void)
{
	uint8_t b[256];
	struct shf_wire_hdr h;
	long n;

	struct shf_wire_ack a = {9, 16, 2};
	n = shf_wire_enc_ack(b, sizeof(b), SRC, DST, &a);
	CHECK(n == SHF_WIRE_ACK_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_ACK &&
		      h.u.ack.acked_seq == 9 && h.u.ack.window == 16 && h.u.ack.dropped == 2,
	      "ack round trip");
	CHECK(chk(b, (size_t)n + 1, NULL) == -EBADMSG, "ack with a trailing byte");
	CHECK(shf_wire_enc_ack(b, 31, SRC, DST, &a) == -ENOBUFS, "ack cap");
	a.window = SHF_WIRE_WINDOW_MAX + 1;
	CHECK(shf_wire_enc_ack(b, sizeof(b), SRC, DST, &a) == -EINVAL, "ack window");
	CHECK(shf_wire_enc_ack(b, sizeof(b), SRC, SRC, &a) == -EINVAL, "to myself");

	struct shf_wire_heartbeat hb = {123456789, 0xabcdef};
	n = shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb);
	CHECK(n == SHF_WIRE_HEARTBEAT_BYTES && chk(b, (size_t)n, &h) == 0 &&
		      h.kind == SHF_WIRE_HEARTBEAT && h.u.heartbeat.time_ns == 123456789 &&
		      h.u.heartbeat.incarnation == 0xabcdef,
	      "heartbeat round trip");
	hb.incarnation = 0;
	CHECK(shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb) == -EINVAL, "incarnation 0");

	struct shf_wire_leave l = {0x55, 7, -ECONNRESET};
	n = shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l);
	CHECK(n == SHF_WIRE_LEAVE_BYTES && chk(b, (size_t)n, &h) == 0 &&
		      h.kind == SHF_WIRE_JOB_LEAVE && h.u.leave.job_hash == 0x55 &&
		      h.u.leave.rank == 7 && h.u.leave.reason == -ECONNRESET,
	      "leave round trip");
	l.rank = -1;
	l.reason = 0;
	CHECK(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l) == SHF_WIRE_LEAVE_BYTES,
	      "leave of all ranks");
	l.rank = -2;
	CHECK(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l) == -EINVAL, "rank -2");
	l.rank = 1;
	l.reason = 5;
	CHECK(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l) == -EINVAL, "positive reason");

	struct shf_wire_epoch ep = {0x66, 3, SHF_WIRE_EPOCH_DRAINED, 12};
	n = shf_wire_enc_epoch(b, sizeof(b), SRC, DST, &ep);
	CHECK(n == SHF_WIRE_EPOCH_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_EPOCH &&
		      h.u.epoch.job_hash == 0x66 && h.u.epoch.epoch == 3 &&
		      h.u.epoch.phase == SHF_WIRE_EPOCH_DRAINED && h.u.epoch.count == 12,
	      "epoch round trip");
	ep.phase = SHF_WIRE_EPOCH_PHASE_MAX;
	CHECK(shf_wire_enc_epoch(b, sizeof(b), SRC, DST, &ep) == -EINVAL, "bad phase");
	ep.phase = 1;
	ep.epoch = 0;
	CHECK(shf_wire_enc_epoch(b, sizeof(b), SRC, DST, &ep) == -EINVAL, "epoch 0");

	struct shf_wire_drop d = {0x77, 4, 1, 2, 10, -ESRCH};
	n = shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d);
	CHECK(n == SHF_WIRE_DROP_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_DROP &&
		      h.u.drop.job_hash == 0x77 && h.u.drop.seq == 4 && h.u.drop.src_rank == 1 &&
		      h.u.drop.dst_rank == 2 && h.u.drop.count == 10 && h.u.drop.reason == -ESRCH,
	      "drop round trip");
	d.count = 0;
	CHECK(shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d) == -EINVAL, "drop count 0");
	d.count = 1;
	d.reason = 0;
	CHECK(shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d) == -EINVAL, "drop reason 0");
}

static void test_join(void)
{
	uint8_t b[512];
	struct shf_wire_hdr h;
	struct shf_wire_join j = {.world = 64, .uid = 1000};
	snprintf(j.name, sizeof(j.name), "job.42");
	struct shf_wire_range rg[3] = {{0, 4}, {10, 1}, {60, 4}};
	long n = shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 3);
	CHECK(n == (long)shf_wire_join_bytes(3) && n == 104 + 24, "join length %ld", n);
	CHECK(chk(b, (size_t)n, &h) == 0, "join checks");
	CHECK(h.kind == SHF_WIRE_JOB_JOIN && h.u.join.world == 64 && h.u.join.uid == 1000 &&
		      h.u.join.nranges == 3 && !strcmp(h.u.join.name, "job.42") &&
		      h.u.join.job_hash == shf_wire_job_hash("job.42"),
	      "join fields");
	for (uint32_t i = 0; i < 3; i++) {
		struct shf_wire_range r = shf_wire_join_range(&h.u.join, i);
		CHECK(r.first == rg[i].first && r.count == rg[i].count, "range %u", i);
	}
	CHECK(shf_wire_enc_join(b, 100, SRC, DST, &j, rg, 3) == -ENOBUFS, "join cap");

	/* encoder refuses what the checker would refuse */
	struct shf_wire_range overlap[2] = {{0, 4}, {3, 2}};
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, overlap, 2) == -EINVAL, "overlap");
	struct shf_wire_range unsorted[2] = {{10, 1}, {0, 1}};
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, unsorted, 2) == -EINVAL, "unsorted");
	struct shf_wire_range beyond[1] = {{60, 5}};
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, beyond, 1) == -EINVAL, "beyond world");
	struct shf_wire_range empty[1] = {{1, 0}};
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, empty, 1) == -EINVAL, "count 0");
	struct shf_wire_range neg[1] = {{-1, 2}};
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, neg, 1) == -EINVAL, "negative");
	struct shf_wire_range huge[1] = {{0x7fffffff, 0x7fffffff}};
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, huge, 1) == -EINVAL, "overflow");
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 0) == -EINVAL, "no ranges");
	struct shf_wire_join bad = j;
	snprintf(bad.name, sizeof(bad.name), "bad/name");
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &bad, rg, 3) == -EINVAL, "bad name");
	bad = j;
	bad.world = 0;
	CHECK(shf_wire_enc_join(b, sizeof(b), SRC, DST, &bad, rg, 3) == -EINVAL, "world 0");

	/* raw corruption of a good join */
	n = shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 3);
	CHECK(chk_patched64(b, (size_t)n, 16, 1) == -EBADMSG, "hash mismatch");
	CHECK(chk_patched32(b, (size_t)n, 28, 2) == -EBADMSG, "nranges vs length");
	CHECK(chk_patched32(b, (size_t)n, 36, 1) == -EBADMSG, "flags");
	CHECK(chk_patched8(b, (size_t)n, 40 + 63, 'x') == -EBADMSG, "name not terminated");
	CHECK(chk_patched8(b, (size_t)n, 40 + 10, 'x') == -EBADMSG, "junk after the NUL");
	CHECK(chk(b, (size_t)n - 8, NULL) == -EBADMSG, "truncated join");
}

int main(void)
{
	test_le_and_hash();
	test_golden_ack();
	test_batch();
	test_small_kinds();
	test_join();
	if (failures) {
		fprintf(stderr, "wire-unit: %d failures\n", failures);
		return 1;
	}
	fprintf(stderr, "wire-unit: PASS\n");
	return 0;
}
