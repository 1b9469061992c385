/* SPDX-License-Identifier: MIT */
/*
 * tests/net/wire-unit.c - proto/wire: byte layout, round trip of every
 * kind, and rejection of each malformed field.  Wire version 10 (packed
 * runs; version 9: JOB_LEAVE
 * carries ranges of ranks with a reason each, JOB_MAP entries rounds; a
 * JOB_LEAVE names a lost node since 7; joins to a job's home, JOB_MAP and
 * JOB_DENY since 6; broadcast records since 4): a 32-byte
 * common header whose session tags (offsets 16 and 24) are written by
 * shf_wire_stamp(), decoded by shf_wire_check() and never judged by it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/shm.h"
#include "proto/wire.h"
#include "tests/lib/check.h"

#define NODES 4u
#define SRC 2u
#define DST 1u
#define MAX_MSG 4096u
#define B SHF_WIRE_BATCH_HDR /* 56: where a batch's records start */

/* Session tags used below: arbitrary, with every byte distinct. */
#define TAG_S UINT64_C(0x0123456789abcdef)
#define TAG_D UINT64_C(0xfedcba9876543210)

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
	EXPECTF(b[0] == 0x44 && b[3] == 0x11, "put32 is little-endian");
	shf_wire_put64(b, UINT64_C(0x0102030405060708));
	EXPECTF(b[0] == 0x08 && b[7] == 0x01, "put64 is little-endian");
	EXPECTF(shf_wire_get64(b) == UINT64_C(0x0102030405060708), "get64");
	shf_wire_put16(b, 0xa1b2);
	EXPECTF(b[0] == 0xb2 && shf_wire_get16(b) == 0xa1b2, "16-bit");
	/* FNV-1a 64 reference values */
	EXPECTF(shf_wire_job_hash("") == UINT64_C(0xcbf29ce484222325), "hash of empty");
	EXPECTF(shf_wire_job_hash("a") == UINT64_C(0xaf63dc4c8601ec8c), "hash of a");
	EXPECTF(shf_wire_rec_bytes(0) == 16 && shf_wire_rec_bytes(1) == 24 &&
		      shf_wire_rec_bytes(8) == 24 && shf_wire_rec_bytes(9) == 32,
	      "record sizes");
	EXPECTF(!strcmp(shf_wire_kind_name(SHF_WIRE_BATCH), "batch") &&
		      !strcmp(shf_wire_kind_name(99), "?"),
	      "kind names");
}

/* A golden ACK: every byte of the layout. */
static void test_golden_ack(void)
{
	uint8_t b[64];
	struct shf_wire_ack a = {UINT64_C(0x1122334455667788), 8, 3};
	memset(b, 0xee, sizeof(b)); /* the encoder must write every byte */
	long n = shf_wire_enc_ack(b, sizeof(b), SRC, DST, &a);
	static const uint8_t want[48] = {
		'S',  'H',  'F',  'W',  10,   0,    2,    0,    /* magic, version 10, kind */
		2,    0,    0,    0,    1,    0,    0,    0,    /* src 2, dst 1 */
		0,    0,    0,    0,    0,    0,    0,    0,    /* src_session: encoders 0 */
		0,    0,    0,    0,    0,    0,    0,    0,    /* dst_session: encoders 0 */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* acked_seq */
		8,    0,    0,    0,    3,    0,    0,    0,    /* window, dropped */
	};
	EXPECTF(n == 48 && !memcmp(b, want, 48), "ack bytes (n=%ld)", n);
	EXPECTF(b[48] == 0xee, "the encoder wrote past the message");
	struct shf_wire_hdr h;
	EXPECTF(chk(b, (size_t)n, &h) == 0 && h.src_session == 0 && h.dst_session == 0,
	      "unstamped tags decode as 0 (and are not judged)");

	/* stamped: the tags land at 16 and 24, little-endian, nothing else moves */
	shf_wire_stamp(b, TAG_S, TAG_D);
	static const uint8_t tags[16] = {
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* src_session */
		0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, /* dst_session */
	};
	EXPECTF(!memcmp(b, want, 16) && !memcmp(b + 16, tags, 16) && !memcmp(b + 32, want + 32, 16) &&
		      b[48] == 0xee,
	      "stamped ack bytes");
	EXPECTF(chk(b, (size_t)n, &h) == 0 && h.src_session == TAG_S && h.dst_session == TAG_D &&
		      h.u.ack.acked_seq == a.acked_seq && h.u.ack.window == 8 && h.u.ack.dropped == 3,
	      "stamped ack decodes its tags and body");
	/* restamping overwrites; the checker takes any tags (the peer protocol
	 * judges them) */
	shf_wire_stamp(b, 0, ~(uint64_t)0);
	EXPECTF(chk(b, (size_t)n, &h) == 0 && h.src_session == 0 && h.dst_session == ~(uint64_t)0,
	      "tags 0 and ~0 pass the check");
	shf_wire_stamp(b, 0, 0);
	EXPECTF(!memcmp(b, want, 48), "stamp(0, 0) gives the encoder's bytes back");
}

static void test_batch(void)
{
	uint8_t buf[1024];
	struct shf_wire_batch_enc e;
	EXPECTF(shf_wire_batch_begin(&e, buf, B, SRC, DST, 77) == -ENOBUFS, "tiny buffer");
	EXPECTF(shf_wire_batch_begin(&e, buf, B + SHF_WIRE_REC_HDR - 1, SRC, DST, 77) == -ENOBUFS,
	      "no room for one empty record");
	EXPECTF(shf_wire_batch_begin(&e, buf, sizeof(buf), SRC, DST, 77) == 0, "begin");
	EXPECTF(shf_wire_batch_end(&e, 5) == 0, "empty batch is not a message");
	const char *p1 = "hello";
	EXPECTF(shf_wire_batch_put(&e, 3, 4, 9, p1, 5) == 0, "put 1");
	EXPECTF(shf_wire_batch_put(&e, 0, 0, 0, NULL, 0) == 0, "put empty payload");
	uint8_t *dst = shf_wire_batch_add(&e, 100, 200, 0xdeadbeef, 16);
	EXPECTF(dst != NULL, "add");
	for (int i = 0; i < 16; i++)
		dst[i] = (uint8_t)i;
	EXPECTF(shf_wire_batch_put(&e, -2, 0, 0, p1, 1) == -EINVAL, "negative rank");
	EXPECTF(shf_wire_batch_put(&e, 0, SHF_WIRE_DST_BCAST, 0, p1, 1) == -EINVAL,
	      "broadcast marker as a source");
	EXPECTF(shf_wire_batch_put(&e, 0, SHF_WORLD_MAX, 0, p1, 1) == -EINVAL, "rank too big");
	EXPECTF(!shf_wire_batch_fits(&e, 2000) && shf_wire_batch_put(&e, 1, 1, 1, buf, 2000) == -ENOSPC,
	      "does not fit");
	size_t n = shf_wire_batch_end(&e, 42);
	size_t want = B + shf_wire_rec_bytes(5) + shf_wire_rec_bytes(0) + shf_wire_rec_bytes(16);
	EXPECTF(n == want && n == 56 + 24 + 16 + 32, "batch length %zu, want %zu", n, want);
	EXPECTF(shf_wire_get64(buf + 32) == 42 && shf_wire_get64(buf + 40) == 77 &&
		      shf_wire_get32(buf + 48) == 3 && shf_wire_get32(buf + 52) == n - B,
	      "batch body at 32..55");

	struct shf_wire_hdr h;
	EXPECTF(chk(buf, n, &h) == 0, "check");
	EXPECTF(h.kind == SHF_WIRE_BATCH && h.src_node == SRC && h.dst_node == DST && h.len == n &&
		      h.version == SHF_WIRE_VERSION && h.src_session == 0 && h.dst_session == 0,
	      "header");
	EXPECTF(h.u.batch.seq == 42 && h.u.batch.job_hash == 77 && h.u.batch.count == 3 &&
		      h.u.batch.bytes == n - B,
	      "batch fields");
	/* a stamped batch: same fields and records, the tags decoded */
	{
		uint8_t b2[1024];
		struct shf_wire_hdr h2;
		memcpy(b2, buf, n);
		shf_wire_stamp(b2, TAG_S, TAG_D);
		EXPECTF(!memcmp(b2 + 32, buf + 32, n - 32) && shf_wire_get64(b2 + 16) == TAG_S &&
			      shf_wire_get64(b2 + 24) == TAG_D,
		      "stamp writes bytes 16..31 only");
		EXPECTF(chk(b2, n, &h2) == 0 && h2.src_session == TAG_S && h2.dst_session == TAG_D &&
			      h2.u.batch.seq == 42 && h2.u.batch.count == 3 &&
			      shf_wire_batch_verify(b2, &h2, MAX_MSG) == 0,
		      "stamped batch");
	}
	struct shf_wire_iter it;
	struct shf_wire_rec r;
	shf_wire_iter_init(&it, buf, &h, MAX_MSG);
	EXPECTF(shf_wire_iter_next(&it, &r) == 1 && r.dst_rank == 3 && r.src_rank == 4 &&
		      r.type == 9 && r.len == 5 && !memcmp(r.data, "hello", 5),
	      "record 1");
	EXPECTF(((const uint8_t *)r.data - buf) % 8 == 0, "payload 8-aligned");
	EXPECTF(shf_wire_iter_next(&it, &r) == 1 && r.len == 0 && r.dst_rank == 0, "record 2");
	EXPECTF(shf_wire_iter_next(&it, &r) == 1 && r.len == 16 && r.dst_rank == 100 &&
		      r.src_rank == 200 && r.type == 0xdeadbeef && ((const uint8_t *)r.data)[15] == 15,
	      "record 3");
	EXPECTF(shf_wire_iter_next(&it, &r) == 0 && shf_wire_iter_next(&it, &r) == 0, "end");
	EXPECTF(shf_wire_batch_verify(buf, &h, MAX_MSG) == 0, "verify");
	EXPECTF(shf_wire_batch_verify(buf, &h, 15) == -EBADMSG, "max_msg enforced");

	/* header field corruption */
	EXPECTF(chk_patched32(buf, n, 0, 0x12345678) == -EPROTO, "magic");
	EXPECTF(chk_patched8(buf, n, 4, 1) == -EPROTO, "version 1 (16-byte header)");
	EXPECTF(chk_patched8(buf, n, 4, SHF_WIRE_VERSION + 1) == -EPROTO, "version + 1");
	EXPECTF(chk_patched8(buf, n, 4, 3) == -EPROTO, "version 3 (no broadcast records)");
	EXPECTF(chk_patched8(buf, n, 4, 4) == -EPROTO, "version 4 (no epoch tree)");
	EXPECTF(chk_patched8(buf, n, 4, 5) == -EPROTO, "version 5 (joins to every node, no runs)");
	EXPECTF(chk_patched8(buf, n, 6, 0) == -EBADMSG, "kind 0");
	EXPECTF(chk_patched8(buf, n, 6, SHF_WIRE_KIND_MAX) == -EBADMSG, "kind max");
	EXPECTF(chk_patched8(buf, n, 6, 6) == -EBADMSG, "kind 6 (EPOCH of version 4)");
	EXPECTF(chk_patched32(buf, n, 8, NODES) == -EBADMSG, "src out of range");
	EXPECTF(chk_patched32(buf, n, 8, DST) == -EBADMSG, "src == dst");
	EXPECTF(chk_patched32(buf, n, 12, 0) == -EBADMSG, "not for me");
	EXPECTF(chk_patched64(buf, n, 16, 0) == 0 && chk_patched64(buf, n, 24, ~(uint64_t)0) == 0,
	      "session tags are not judged by the check");
	EXPECTF(chk_patched64(buf, n, 32, 0) == -EBADMSG, "seq 0");
	EXPECTF(chk_patched32(buf, n, 48, 0) == -EBADMSG, "count 0");
	EXPECTF(chk_patched32(buf, n, 52, (uint32_t)(n - B + 8)) == -EBADMSG, "bytes too big");
	EXPECTF(chk_patched32(buf, n, 52, (uint32_t)(n - B - 8)) == -EBADMSG, "bytes too small");
	EXPECTF(chk_patched32(buf, n, 48, (uint32_t)(n - B) / 16 + 1) == -EBADMSG,
	      "count cannot fit in bytes");
	EXPECTF(chk(buf, n - 8, NULL) == -EBADMSG && chk(buf, 15, NULL) == -EBADMSG &&
		      chk(buf, SHF_WIRE_HDR - 1, NULL) == -EBADMSG &&
		      chk(buf, SHF_WIRE_HDR, NULL) == -EBADMSG && chk(buf, B, NULL) == -EBADMSG,
	      "truncated");
	EXPECTF(chk(buf, 0, NULL) == -EBADMSG, "empty");

	/* record corruption: each must stop the iterator */
	struct {
		size_t off;
		uint32_t v;
		const char *what;
	} recbad[] = {
		{B + 0, (uint32_t)-2, "negative dst (not the broadcast marker)"},
		{B + 4, SHF_WORLD_MAX, "src too big"},
		{B + 12, 9, "len one past its padding: later records misparse"},
		{B + 12, 100000, "len > max_msg"},
		{B + 12, 4000, "len beyond the batch"},
		{48, 2, "count smaller than records"},
		{48, 4, "count larger than records"},
	};
	for (size_t i = 0; i < sizeof(recbad) / sizeof(recbad[0]); i++) {
		uint8_t b2[1024];
		memcpy(b2, buf, n);
		shf_wire_put32(b2 + recbad[i].off, recbad[i].v);
		struct shf_wire_hdr h2;
		int rc = chk(b2, n, &h2);
		if (rc == 0)
			rc = shf_wire_batch_verify(b2, &h2, MAX_MSG);
		EXPECTF(rc == -EBADMSG, "%s: %d", recbad[i].what, rc);
	}
	/* non-zero padding after "hello" */
	{
		uint8_t b2[1024];
		memcpy(b2, buf, n);
		b2[B + 16 + 6] = 1;
		struct shf_wire_hdr h2;
		EXPECTF(chk(b2, n, &h2) == 0 && shf_wire_batch_verify(b2, &h2, MAX_MSG) == -EBADMSG,
		      "padding must be zero");
	}
	/* the iterator is sticky after an error */
	{
		uint8_t b2[1024];
		memcpy(b2, buf, n);
		shf_wire_put32(b2 + B + 24 + 0, (uint32_t)-5); /* record 2 dst */
		struct shf_wire_hdr h2;
		EXPECTF(chk(b2, n, &h2) == 0, "header still fine");
		shf_wire_iter_init(&it, b2, &h2, MAX_MSG);
		EXPECTF(shf_wire_iter_next(&it, &r) == 1, "record 1 fine");
		EXPECTF(shf_wire_iter_next(&it, &r) == -EBADMSG && shf_wire_iter_next(&it, &r) == -EBADMSG,
		      "sticky error");
	}
	/* an iterator over a non-batch header refuses */
	{
		struct shf_wire_hdr h2 = h;
		h2.kind = SHF_WIRE_ACK;
		shf_wire_iter_init(&it, buf, &h2, MAX_MSG);
		EXPECTF(shf_wire_iter_next(&it, &r) == -EBADMSG, "not a batch");
	}
	/* a full batch: fill to the byte */
	{
		uint8_t big[B + 16 * 4];
		EXPECTF(shf_wire_batch_begin(&e, big, sizeof(big), SRC, DST, 1) == 0, "begin");
		int k = 0;
		while (shf_wire_batch_add(&e, 1, 2, 3, 0))
			k++;
		EXPECTF(k == 4, "4 empty records fit exactly (%d)", k);
		size_t bn = shf_wire_batch_end(&e, 1);
		EXPECTF(bn == sizeof(big) && chk(big, bn, &h) == 0 &&
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
	EXPECTF(n == SHF_WIRE_ACK_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_ACK &&
		      h.u.ack.acked_seq == 9 && h.u.ack.window == 16 && h.u.ack.dropped == 2,
	      "ack round trip");
	EXPECTF(chk(b, (size_t)n + 1, NULL) == -EBADMSG, "ack with a trailing byte");
	EXPECTF(shf_wire_enc_ack(b, SHF_WIRE_ACK_BYTES - 1, SRC, DST, &a) == -ENOBUFS, "ack cap");
	a.window = SHF_WIRE_WINDOW_MAX + 1;
	EXPECTF(shf_wire_enc_ack(b, sizeof(b), SRC, DST, &a) == -EINVAL, "ack window");
	EXPECTF(shf_wire_enc_ack(b, sizeof(b), SRC, SRC, &a) == -EINVAL, "to myself");

	struct shf_wire_heartbeat hb = {.time_ns = 123456789, .incarnation = 0xabcdef};
	n = shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb);
	EXPECTF(n == SHF_WIRE_HEARTBEAT_BYTES && chk(b, (size_t)n, &h) == 0 &&
		      h.kind == SHF_WIRE_HEARTBEAT && h.u.heartbeat.time_ns == 123456789 &&
		      h.u.heartbeat.incarnation == 0xabcdef,
	      "heartbeat round trip");
	hb.incarnation = 0;
	EXPECTF(shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb) == -EINVAL, "incarnation 0");
	/* v3: flags, nonce and MAC (the handshake's authentication) */
	hb.incarnation = 5;
	hb.flags = SHF_WIRE_HB_MAC | SHF_WIRE_HB_ECHO;
	for (unsigned i = 0; i < SHF_WIRE_NONCE_BYTES; i++) {
		hb.nonce[i] = (uint8_t)(i + 1);
		hb.mac[i] = (uint8_t)(0xa0 + i);
	}
	n = shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb);
	EXPECTF(n == SHF_WIRE_HEARTBEAT_BYTES && chk(b, (size_t)n, &h) == 0 &&
		      h.u.heartbeat.flags == hb.flags &&
		      !memcmp(h.u.heartbeat.nonce, hb.nonce, SHF_WIRE_NONCE_BYTES) &&
		      !memcmp(h.u.heartbeat.mac, hb.mac, SHF_WIRE_MAC_BYTES) &&
		      shf_wire_get32(b + 48) == hb.flags && shf_wire_get32(b + 52) == 0 &&
		      b[56] == 1 && b[88] == 0xa0 && b[119] == 0xa0 + 31,
	      "heartbeat v3 fields round trip, at 48, 56 and 88");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 4) == -EBADMSG, "heartbeat: unknown flag");
	EXPECTF(chk_patched32(b, (size_t)n, 48, SHF_WIRE_HB_ECHO) == -EBADMSG,
	      "heartbeat: ECHO without MAC");
	EXPECTF(chk_patched32(b, (size_t)n, 52, 1) == -EBADMSG, "heartbeat: reserved");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 0) == -EBADMSG, "heartbeat: a MAC without the flag");
	hb.flags = 0;
	EXPECTF(shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb) == -EINVAL,
	      "heartbeat: MAC bytes without the flag");
	memset(hb.mac, 0, sizeof(hb.mac));
	EXPECTF(shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb) == SHF_WIRE_HEARTBEAT_BYTES,
	      "heartbeat: no MAC, zero MAC bytes");

	/* version 9: a window's leaves in one, ranges of ranks, a reason each */
	struct shf_wire_leave l = {.job_hash = 0x55, .world = 100};
	struct shf_wire_leave_ent le[3] = {{7, 1, 0, SHF_WIRE_NODE_NONE, SRC},
					   {8, 4, -ESRCH, SHF_WIRE_NODE_NONE, SRC},
					   {20, 2, -EHOSTDOWN, 3, SRC}};
	n = shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 3);
	EXPECTF(n == (long)shf_wire_leave_bytes(3) && n == 56 + 3 * 20 && chk(b, (size_t)n, &h) == 0 &&
		      h.kind == SHF_WIRE_JOB_LEAVE && h.u.leave.job_hash == 0x55 &&
		      h.u.leave.world == 100 && h.u.leave.nents == 3 && h.u.leave.flags == 0,
	      "leave round trip");
	{
		struct shf_wire_leave_ent x = shf_wire_leave_entry(&h.u.leave, 1);
		struct shf_wire_leave_ent y = shf_wire_leave_entry(&h.u.leave, 2);
		EXPECTF(x.first == 8 && x.count == 4 && x.reason == -ESRCH &&
			      x.lost_node == SHF_WIRE_NODE_NONE && x.node == SRC && y.first == 20 &&
			      y.count == 2 && y.reason == -EHOSTDOWN && y.lost_node == 3 && y.node == SRC,
		      "leave entries decoded with their own reasons");
	}
	EXPECTF(shf_wire_get32(b + 40) == 100 && shf_wire_get32(b + 44) == 3 &&
		      shf_wire_get32(b + 48) == 0 && shf_wire_get32(b + 52) == 0 &&
		      shf_wire_get32(b + 56) == 7 && shf_wire_get32(b + 60) == 1 &&
		      shf_wire_get32(b + 64) == 0 && shf_wire_get32(b + 68) == SHF_WIRE_NODE_NONE &&
		      shf_wire_get32(b + 72) == SRC && shf_wire_get32(b + 76) == 8 &&
		      (int32_t)shf_wire_get32(b + 84) == -ESRCH && shf_wire_get32(b + 108) == 3 &&
		      shf_wire_get32(b + 112) == SRC,
	      "leave: world at 40, nents at 44, flags at 48, reserved at 52, entries of 20 "
	      "bytes from 56");
	/* the header's fields */
	EXPECTF(chk_patched32(b, (size_t)n, 40, 0) == -EBADMSG, "leave: world 0");
	EXPECTF(chk_patched32(b, (size_t)n, 40, SHF_WORLD_MAX + 1) == -EBADMSG,
	      "leave: world past the maximum");
	EXPECTF(chk_patched32(b, (size_t)n, 40, 21) == -EBADMSG, "leave: a range past the world");
	EXPECTF(chk_patched32(b, (size_t)n, 40, 22) == 0, "leave: a range up to the world");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 0) == -EBADMSG, "leave: no entry");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 2) == -EBADMSG, "leave: nents shorter than the message");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 4) == -EBADMSG, "leave: nents longer than the message");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 16) == -EBADMSG, "leave: unknown flag");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 3) == -EBADMSG, "leave: RELAY and FORWARDED");
	EXPECTF(chk_patched32(b, (size_t)n, 48, SHF_WIRE_LEAVE_RELAY) == 0, "leave: RELAY");
	EXPECTF(chk_patched32(b, (size_t)n, 48, SHF_WIRE_LEAVE_WITHDRAW) == 0, "leave: WITHDRAW");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 5) == -EBADMSG, "leave: WITHDRAW and RELAY");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 6) == -EBADMSG, "leave: WITHDRAW and FORWARDED");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 8) == -EBADMSG, "leave: flag 8");
	EXPECTF(chk_patched32(b, (size_t)n, 52, 1) == -EBADMSG, "leave: reserved not zero");
	EXPECTF(chk(b, (size_t)n - 20, NULL) == -EBADMSG, "truncated leave");
	EXPECTF(chk(b, 55, NULL) == -EBADMSG, "leave shorter than its fixed part");
	/* each entry's fields */
	EXPECTF(chk_patched32(b, (size_t)n, 56, (uint32_t)-1) == -EBADMSG, "leave: first -1");
	EXPECTF(chk_patched32(b, (size_t)n, 60, 0) == -EBADMSG, "leave: count 0");
	EXPECTF(chk_patched32(b, (size_t)n, 60, (uint32_t)-1) == -EBADMSG, "leave: count -1");
	EXPECTF(chk_patched32(b, (size_t)n, 60, 2) == -EBADMSG, "leave: entries overlap");
	EXPECTF(chk_patched32(b, (size_t)n, 76, 6) == -EBADMSG, "leave: entries unsorted");
	EXPECTF(chk_patched32(b, (size_t)n, 80, 0x7fffffff) == -EBADMSG,
	      "leave: first + count wraps 32 bits");
	EXPECTF(chk_patched32(b, (size_t)n, 64, 5) == -EBADMSG, "leave: positive reason");
	EXPECTF(chk_patched32(b, (size_t)n, 64, (uint32_t)-4096) == -EBADMSG,
	      "leave: reason below -4095");
	EXPECTF(chk_patched32(b, (size_t)n, 68, 3) == -EBADMSG, "leave: a lost node with reason 0");
	EXPECTF(chk_patched32(b, (size_t)n, 88, 3) == -EBADMSG,
	      "leave: a lost node with reason ESRCH");
	/* version 7: a leave after the sender's job lost a node names it */
	EXPECTF(chk_patched32(b, (size_t)n, 108, NODES) == -EBADMSG, "leave: lost node >= nodes");
	EXPECTF(chk_patched32(b, (size_t)n, 108, SRC) == -EBADMSG, "leave: the sender lost itself");
	EXPECTF(chk_patched32(b, (size_t)n, 108, DST) == 0, "leave: the sender lost the receiver");
	EXPECTF(chk_patched32(b, (size_t)n, 108, SHF_WIRE_NODE_NONE) == -EBADMSG,
	      "leave: EHOSTDOWN without its node");
	/* whose ranks: the sender's own, unless forwarded by the home */
	EXPECTF(chk_patched32(b, (size_t)n, 72, 0) == -EBADMSG, "leave: another node's ranks");
	EXPECTF(chk_patched32(b, (size_t)n, 72, DST) == -EBADMSG, "leave: the receiver's ranks");
	{
		/* FORWARDED: entries of any node of the set (the receiver's own:
		 * its leaves came through), each lost node not its own node */
		struct shf_wire_leave fl = {.job_hash = 0x55, .world = 100,
					    .flags = SHF_WIRE_LEAVE_FORWARDED};
		struct shf_wire_leave_ent fe[3] = {{1, 2, 0, SHF_WIRE_NODE_NONE, 0},
						   {3, 1, -ESRCH, SHF_WIRE_NODE_NONE, DST},
						   {9, 1, -EHOSTDOWN, SRC, 3}};
		long fn = shf_wire_enc_leave(b, sizeof(b), SRC, DST, &fl, fe, 3);
		EXPECTF(fn == 116 && chk(b, (size_t)fn, &h) == 0 &&
			      h.u.leave.flags == SHF_WIRE_LEAVE_FORWARDED &&
			      shf_wire_leave_entry(&h.u.leave, 2).node == 3,
			"forwarded leave of three nodes");
		EXPECTF(chk_patched32(b, (size_t)fn, 112, NODES) == -EBADMSG,
			"forwarded leave: a node >= nodes");
		EXPECTF(chk_patched32(b, (size_t)fn, 108, 3) == -EBADMSG,
			"forwarded leave: its node lost itself");
		EXPECTF(chk_patched32(b, (size_t)fn, 48, SHF_WIRE_LEAVE_RELAY) == -EBADMSG,
			"relayed leave of another node's ranks");
		fe[2].lost_node = 3;
		EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &fl, fe, 3) == -EINVAL,
			"forwarded leave: encoder refuses a node that lost itself");
	}
	/* every rank of the sender: one entry, the whole world */
	le[0] = (struct shf_wire_leave_ent){0, 100, 0, SHF_WIRE_NODE_NONE, SRC};
	EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 1) == 76, "leave of all ranks");
	le[0].count = 101;
	EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 1) == -EINVAL,
	      "leave: encoder refuses a range past the world");
	le[0] = (struct shf_wire_leave_ent){1, 1, 5, SHF_WIRE_NODE_NONE, SRC};
	EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 1) == -EINVAL, "positive reason");
	le[0] = (struct shf_wire_leave_ent){1, 1, -EHOSTDOWN, SRC, SRC};
	EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 1) == -EINVAL,
	      "leave: encoder refuses the sender as the lost node");
	le[0] = (struct shf_wire_leave_ent){1, 1, 0, 0, SRC};
	EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 1) == -EINVAL,
	      "leave: encoder refuses a node without EHOSTDOWN");
	le[0] = (struct shf_wire_leave_ent){1, 1, 0, SHF_WIRE_NODE_NONE, SRC};
	EXPECTF(shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, le, 0) == -EINVAL,
	      "leave: encoder refuses no entry");
	EXPECTF(shf_wire_enc_leave(b, 75, SRC, DST, &l, le, 1) == -ENOBUFS, "leave: no room");

	/* JOB_LEAVE_ASK */
	struct shf_wire_leave_ask ask = {0x77, 12, SHF_WIRE_ASK_ALL};
	n = shf_wire_enc_leave_ask(b, sizeof(b), SRC, DST, &ask);
	EXPECTF(n == SHF_WIRE_LEAVE_ASK_BYTES && n == 48 && chk(b, (size_t)n, &h) == 0 &&
		      h.kind == SHF_WIRE_JOB_LEAVE_ASK && h.u.leave_ask.job_hash == 0x77 &&
		      h.u.leave_ask.world == 12 && h.u.leave_ask.flags == SHF_WIRE_ASK_ALL &&
		      shf_wire_get32(b + 40) == 12 && shf_wire_get32(b + 44) == 1,
	      "leave ask round trip: world at 40, flags at 44");
	EXPECTF(chk_patched32(b, (size_t)n, 40, 0) == -EBADMSG, "leave ask: world 0");
	EXPECTF(chk_patched32(b, (size_t)n, 40, SHF_WORLD_MAX + 1) == -EBADMSG,
	      "leave ask: world past the maximum");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 2) == -EBADMSG, "leave ask: unknown flag");
	EXPECTF(chk(b, (size_t)n - 8, NULL) == -EBADMSG, "truncated leave ask");
	EXPECTF(chk(b, (size_t)n + 8, NULL) == -EBADMSG, "leave ask too long");

	struct shf_wire_epoch ep = {0x66, 3, SHF_WIRE_EPOCH_DRAINED, 12};
	n = shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_UP, SRC, DST, &ep);
	EXPECTF(n == SHF_WIRE_EPOCH_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_EPOCH_UP &&
		      h.u.epoch.job_hash == 0x66 && h.u.epoch.epoch == 3 &&
		      h.u.epoch.phase == SHF_WIRE_EPOCH_DRAINED && h.u.epoch.count == 12,
	      "epoch round trip");
	ep.phase = SHF_WIRE_EPOCH_PHASE_MAX;
	EXPECTF(shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_UP, SRC, DST, &ep) == -EINVAL,
	      "bad phase");
	ep.phase = 1;
	ep.epoch = 0;
	EXPECTF(shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_UP, SRC, DST, &ep) == -EINVAL,
	      "epoch 0");
	ep.epoch = 3;
	EXPECTF(shf_wire_enc_epoch_kind(b, sizeof(b), 6, SRC, DST, &ep) == -EINVAL,
	      "kind 6 (EPOCH, gone)");

	struct shf_wire_drop d = {0x77, 4, 1, 2, 10, -ESRCH};
	n = shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d);
	EXPECTF(n == SHF_WIRE_DROP_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_DROP &&
		      h.u.drop.job_hash == 0x77 && h.u.drop.seq == 4 && h.u.drop.src_rank == 1 &&
		      h.u.drop.dst_rank == 2 && h.u.drop.count == 10 && h.u.drop.reason == -ESRCH,
	      "drop round trip");
	d.dst_rank = SHF_WIRE_DST_BCAST;
	n = shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d);
	EXPECTF(n == SHF_WIRE_DROP_BYTES && chk(b, (size_t)n, &h) == 0 &&
		      h.u.drop.dst_rank == SHF_WIRE_DST_BCAST, "drop of a broadcast round trip");
	d.dst_rank = -2;
	EXPECTF(shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d) == -EINVAL ||
		      (n = shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d), chk(b, (size_t)n, &h) < 0),
	      "drop dst -2");
	d.dst_rank = 2;
	d.count = 0;
	EXPECTF(shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d) == -EINVAL, "drop count 0");
	d.count = 1;
	d.reason = 0;
	EXPECTF(shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d) == -EINVAL, "drop reason 0");
}

static void test_join(void)
{
	uint8_t b[512];
	struct shf_wire_hdr h;
	struct shf_wire_join j = {.world = 64, .uid = 1000};
	snprintf(j.name, sizeof(j.name), "job.42");
	struct shf_wire_range rg[3] = {{0, 4}, {10, 1}, {60, 4}};
	long n = shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 3);
	EXPECTF(n == (long)shf_wire_join_bytes(3) && n == 120 + 24, "join length %ld", n);
	EXPECTF(shf_wire_get64(b + 32) == shf_wire_job_hash("job.42") && shf_wire_get32(b + 40) == 64 &&
		      shf_wire_get32(b + 44) == 3 && shf_wire_get32(b + 48) == 1000 &&
		      !strcmp((const char *)b + 56, "job.42") && shf_wire_get32(b + 120) == 0 &&
		      shf_wire_get32(b + 124) == 4,
	      "join body at 32..119, ranges from 120");
	EXPECTF(chk(b, (size_t)n, &h) == 0, "join checks");
	EXPECTF(h.kind == SHF_WIRE_JOB_JOIN && h.u.join.world == 64 && h.u.join.uid == 1000 &&
		      h.u.join.nranges == 3 && !strcmp(h.u.join.name, "job.42") &&
		      h.u.join.job_hash == shf_wire_job_hash("job.42"),
	      "join fields");
	for (uint32_t i = 0; i < 3; i++) {
		struct shf_wire_range r = shf_wire_join_range(&h.u.join, i);
		EXPECTF(r.first == rg[i].first && r.count == rg[i].count, "range %u", i);
	}
	EXPECTF(shf_wire_enc_join(b, (size_t)n - 1, SRC, DST, &j, rg, 3) == -ENOBUFS, "join cap");

	/* encoder refuses what the checker would refuse */
	struct shf_wire_range overlap[2] = {{0, 4}, {3, 2}};
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, overlap, 2) == -EINVAL, "overlap");
	struct shf_wire_range unsorted[2] = {{10, 1}, {0, 1}};
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, unsorted, 2) == -EINVAL, "unsorted");
	struct shf_wire_range beyond[1] = {{60, 5}};
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, beyond, 1) == -EINVAL, "beyond world");
	struct shf_wire_range empty[1] = {{1, 0}};
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, empty, 1) == -EINVAL, "count 0");
	struct shf_wire_range neg[1] = {{-1, 2}};
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, neg, 1) == -EINVAL, "negative");
	struct shf_wire_range huge[1] = {{0x7fffffff, 0x7fffffff}};
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, huge, 1) == -EINVAL, "overflow");
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 0) == -EINVAL, "no ranges");
	struct shf_wire_join bad = j;
	snprintf(bad.name, sizeof(bad.name), "bad/name");
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &bad, rg, 3) == -EINVAL, "bad name");
	bad = j;
	bad.world = 0;
	EXPECTF(shf_wire_enc_join(b, sizeof(b), SRC, DST, &bad, rg, 3) == -EINVAL, "world 0");

	/* raw corruption of a good join */
	n = shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 3);
	EXPECTF(chk_patched64(b, (size_t)n, 32, 1) == -EBADMSG, "hash mismatch");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 2) == -EBADMSG, "nranges vs length");
	EXPECTF(chk_patched32(b, (size_t)n, 52, 2) == -EBADMSG, "flags: an unknown bit");
	EXPECTF(chk_patched32(b, (size_t)n, 52, SHF_WIRE_JOIN_RUNNING) == 0, "flags: RUNNING");
	EXPECTF(chk_patched8(b, (size_t)n, 56 + 63, 'x') == -EBADMSG, "name not terminated");
	EXPECTF(chk_patched8(b, (size_t)n, 56 + 10, 'x') == -EBADMSG, "junk after the NUL");
	EXPECTF(chk(b, (size_t)n - 8, NULL) == -EBADMSG, "truncated join");
}

/* Every kind: the encoders leave both tags 0; stamped, it still checks, its
 * tags decode, and nothing but bytes 16..31 changed. */
static void stamp_round_trip(uint8_t *b, long n, unsigned kind, const char *what)
{
	struct shf_wire_hdr h0, h1;
	uint8_t before[512];
	EXPECTF(n >= (long)SHF_WIRE_HDR && (size_t)n <= sizeof(before), "%s: length %ld", what, n);
	if (n < (long)SHF_WIRE_HDR || (size_t)n > sizeof(before))
		return;
	memcpy(before, b, (size_t)n);
	EXPECTF(shf_wire_get64(b + 16) == 0 && shf_wire_get64(b + 24) == 0, "%s: encoder tags", what);
	EXPECTF(chk(b, (size_t)n, &h0) == 0 && h0.kind == kind && h0.src_session == 0 &&
		      h0.dst_session == 0,
	      "%s: unstamped", what);
	shf_wire_stamp(b, TAG_S + kind, TAG_D - kind);
	EXPECTF(!memcmp(b, before, 16) && !memcmp(b + 32, before + 32, (size_t)n - 32),
	      "%s: stamp wrote outside 16..31", what);
	EXPECTF(chk(b, (size_t)n, &h1) == 0 && h1.kind == kind && h1.len == (uint32_t)n &&
		      h1.src_node == SRC && h1.dst_node == DST && h1.src_session == TAG_S + kind &&
		      h1.dst_session == TAG_D - kind,
	      "%s: stamped", what);
	/* a heartbeat's first probe: our tag, theirs not known yet */
	shf_wire_stamp(b, TAG_S, 0);
	EXPECTF(chk(b, (size_t)n, &h1) == 0 && h1.src_session == TAG_S && h1.dst_session == 0,
	      "%s: stamped (s, 0)", what);
	/* truncating into the tags is a short message whatever the tags */
	EXPECTF(chk(b, 24, NULL) == -EBADMSG && chk(b, SHF_WIRE_HDR - 1, NULL) == -EBADMSG,
	      "%s: cut in the tags", what);
}

/* The epoch tree's kinds (0x60-0x62): EPOCH's body and rules; an abort
 * carries ESRCH or EHOSTDOWN only. */
static void test_epoch_tree(void)
{
	uint8_t b[SHF_WIRE_EPOCH_BYTES + 8];
	struct shf_wire_hdr h;
	const unsigned kinds[] = {SHF_WIRE_EPOCH_UP, SHF_WIRE_EPOCH_DOWN, SHF_WIRE_EPOCH_ABORT};
	for (unsigned k = 0; k < 3; k++) {
		struct shf_wire_epoch ep = {77, 3, SHF_WIRE_EPOCH_DRAINED,
					    kinds[k] == SHF_WIRE_EPOCH_ABORT ? ESRCH : 5};
		long n = shf_wire_enc_epoch_kind(b, sizeof(b), kinds[k], SRC, DST, &ep);
		EXPECTF(n == SHF_WIRE_EPOCH_BYTES && chk(b, (size_t)n, &h) == 0 && h.kind == kinds[k] &&
			      h.u.epoch.job_hash == 77 && h.u.epoch.epoch == 3 &&
			      h.u.epoch.phase == SHF_WIRE_EPOCH_DRAINED && h.u.epoch.count == ep.count,
		      "epoch kind %#x round trip", kinds[k]);
		EXPECTF(chk(b, (size_t)n - 1, NULL) == -EBADMSG, "epoch kind %#x cut short", kinds[k]);
		ep.phase = 3;
		n = shf_wire_enc_epoch_kind(b, sizeof(b), kinds[k], SRC, DST, &ep);
		EXPECTF(chk(b, (size_t)n, NULL) == -EBADMSG, "epoch kind %#x phase 3", kinds[k]);
	}
	struct shf_wire_epoch ab = {77, 1, SHF_WIRE_EPOCH_PLACED, 5};
	long n = shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_ABORT, SRC, DST, &ab);
	EXPECTF(chk(b, (size_t)n, NULL) == -EBADMSG, "an abort with errno 5");
	ab.count = EHOSTDOWN;
	n = shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_ABORT, SRC, DST, &ab);
	EXPECTF(chk(b, (size_t)n, NULL) == 0, "an abort with EHOSTDOWN");
	EXPECTF(shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_ACK, SRC, DST, &ab) == -EINVAL,
	      "enc_epoch_kind refuses another kind");
	EXPECTF(!strcmp(shf_wire_kind_name(SHF_WIRE_EPOCH_UP), "epoch-up") &&
		      !strcmp(shf_wire_kind_name(SHF_WIRE_EPOCH_ABORT), "epoch-abort"),
	      "epoch tree kind names");
}

/* JOB_MAP and JOB_DENY (a job's home): layout, round trip, every rule. */
/* A block layout compacts to one entry per run of equal blocks on
 * consecutive nodes (repeat), a cyclic or block-cyclic one to one entry per
 * run of such rounds (again); a job on all of 10,000 nodes x 32 ranks is
 * one entry either way, one 140-byte JOB_MAP per node (issue 25: job start
 * <= 3k messages). */
static struct shf_wire_map_ent cyc[320000];

/* Message b[0..n) as checked by node 1 of `nodes`: its entries, at most
 * max, in out; the result code. */
static int map_back(const uint8_t *b, long n, uint32_t nodes, struct shf_wire_map_ent *out,
		    uint32_t max, uint32_t *ne_p)
{
	struct shf_wire_hdr h;
	if (n <= 0)
		return (int)n;
	int r = shf_wire_check(b, (size_t)n, nodes, 1, &h);
	if (r)
		return r;
	*ne_p = h.u.map.nents;
	for (uint32_t i = 0; i < h.u.map.nents && i < max; i++)
		out[i] = shf_wire_map_entry(&h.u.map, i);
	return 0;
}

/* Every rank of e[0..ne) on the node the expansion gives it, as dealt:
 * rank r of the world on node_of[r]. */
static bool map_expands_to(const struct shf_wire_map_ent *e, uint32_t ne, const uint32_t *node_of,
			   int32_t world)
{
	int32_t r = 0;
	for (uint32_t i = 0; i < ne; i++) {
		if (e[i].first != r)
			return false;
		for (uint32_t t = 0; t <= e[i].again; t++)
			for (uint32_t b = 0; b <= e[i].repeat; b++)
				for (int32_t c = 0; c < e[i].count; c++, r++)
					if (r >= world || node_of[r] != e[i].node + b)
						return false;
	}
	return r == world;
}

static void test_map_compact(void)
{
	static struct shf_wire_map_ent e[10000];
	static uint32_t node_of[320000];
	for (uint32_t i = 0; i < 10000; i++)
		e[i] = (struct shf_wire_map_ent){(int32_t)i * 32, 32, i, 0, 0};
	uint32_t k = shf_wire_map_compact(e, 10000);
	EXPECTF(k == 1 && e[0].first == 0 && e[0].count == 32 && e[0].node == 0 &&
			e[0].repeat == 9999 && e[0].again == 0,
		"10,000 blocks of 32: %u entries (repeat %u)", k, e[0].repeat);
	static uint8_t b[256];
	struct shf_wire_map m = {.world = 320000, .uid = 1, .flags = SHF_WIRE_MAP_FINAL};
	snprintf(m.name, sizeof(m.name), "all");
	long n = shf_wire_enc_map(b, sizeof(b), 0, 1, &m, e, k);
	struct shf_wire_hdr h;
	EXPECTF(n == 140 && shf_wire_check(b, (size_t)n, 10000, 1, &h) == 0 &&
			shf_wire_map_entry(&h.u.map, 0).repeat == 9999,
		"the whole map in one %ld-byte message", n);
	EXPECTF(shf_wire_check(b, (size_t)n, 9999, 1, &h) == -EBADMSG,
		"a repeat past the receiver's nodes");

	/* version 9: 320,000 ranks dealt round-robin over 10,000 nodes
	 * (--distribution=cyclic): one entry, 32 rounds of 10,000 blocks */
	for (uint32_t r = 0; r < 320000; r++) {
		cyc[r] = (struct shf_wire_map_ent){(int32_t)r, 1, r % 10000, 0, 0};
		node_of[r] = r % 10000;
	}
	k = shf_wire_map_compact(cyc, 320000);
	EXPECTF(k == 1 && cyc[0].first == 0 && cyc[0].count == 1 && cyc[0].node == 0 &&
			cyc[0].repeat == 9999 && cyc[0].again == 31,
		"10,000 x 32 cyclic: %u entries (repeat %u, again %u)", k, cyc[0].repeat,
		cyc[0].again);
	n = shf_wire_enc_map(b, sizeof(b), 0, 1, &m, cyc, k);
	struct shf_wire_map_ent back[8];
	uint32_t nb = 0;
	EXPECTF(n == 140 && map_back(b, n, 10000, back, 8, &nb) == 0 && nb == 1 &&
			back[0].repeat == 9999 && back[0].again == 31 &&
			map_expands_to(back, nb, node_of, 320000),
		"the cyclic map in one %ld-byte message, expanding to the layout", n);
	m.world = 319999;
	EXPECTF(shf_wire_enc_map(b, sizeof(b), 0, 1, &m, cyc, k) == -EINVAL,
		"rounds past the world refused");
	m.world = 320000;

	/* 3 nodes x 1,000 ranks dealt round-robin: one entry (version 8,
	 * which merged only each round's blocks: 1,000) */
	for (uint32_t r = 0; r < 3000; r++)
		cyc[r] = (struct shf_wire_map_ent){(int32_t)r, 1, r % 3, 0, 0};
	k = shf_wire_map_compact(cyc, 3000);
	EXPECTF(k == 1 && cyc[0].repeat == 2 && cyc[0].again == 999,
		"3 x 1,000 cyclic: %u entries (repeat %u, again %u)", k, cyc[0].repeat,
		cyc[0].again);

	/* block-cyclic, blocks of 4 over nodes 3..10, 5 rounds, and a world
	 * that ends mid-round: the whole rounds in one entry, the rest in one */
	int32_t world = 8 * 4 * 5 + 4 * 3 + 2;
	k = 0;
	for (int32_t r = 0; r < world; r += 4) {
		int32_t c = world - r < 4 ? world - r : 4;
		cyc[k++] = (struct shf_wire_map_ent){r, c, 3 + (uint32_t)(r / 4) % 8, 0, 0};
		for (int32_t x = 0; x < c; x++)
			node_of[r + x] = 3 + (uint32_t)(r / 4) % 8;
	}
	k = shf_wire_map_compact(cyc, k);
	EXPECTF(k == 3 && cyc[0].count == 4 && cyc[0].node == 3 && cyc[0].repeat == 7 &&
			cyc[0].again == 4 && cyc[1].first == 160 && cyc[1].repeat == 2 &&
			cyc[1].again == 0 && cyc[2].first == 172 && cyc[2].count == 2 &&
			cyc[2].node == 6 && map_expands_to(cyc, k, node_of, world),
		"block-cyclic with a partial last round: %u entries", k);
	m.world = world;
	n = shf_wire_enc_map(b, sizeof(b), 0, 1, &m, cyc, k);
	EXPECTF(n == 120 + 3 * 20 && map_back(b, n, 11, back, 8, &nb) == 0 && nb == 3 &&
			map_expands_to(back, nb, node_of, world),
		"block-cyclic round trip (%ld bytes)", n);
	EXPECTF(map_back(b, n, 10, back, 8, &nb) == -EBADMSG, "block-cyclic past the nodes");

	/* where compaction stops: rounds on other nodes, a round of another
	 * size, nodes that are not consecutive (one entry per block) */
	struct shf_wire_map_ent g[9] = {
		{0, 1, 0, 0, 0}, {1, 1, 1, 0, 0}, {2, 1, 2, 0, 0}, /* round on 0..2 */
		{3, 1, 1, 0, 0}, {4, 1, 2, 0, 0}, {5, 1, 3, 0, 0}, /* on 1..3: new entry */
		{6, 2, 1, 0, 0}, {8, 2, 2, 0, 0}, {10, 2, 3, 0, 0}, /* blocks of 2 */
	};
	k = shf_wire_map_compact(g, 9);
	EXPECTF(k == 3 && g[0].repeat == 2 && g[0].again == 0 && g[1].first == 3 &&
			g[1].node == 1 && g[1].repeat == 2 && g[1].again == 0 && g[2].first == 6 &&
			g[2].count == 2 && g[2].repeat == 2,
		"rounds on other nodes or of another size stay apart: %u entries", k);
	struct shf_wire_map_ent sp[12];
	for (uint32_t r = 0; r < 12; r++)
		sp[r] = (struct shf_wire_map_ent){(int32_t)r, 1, 2 * (r % 3), 0, 0};
	k = shf_wire_map_compact(sp, 12);
	EXPECTF(k == 12, "cyclic over nodes 0, 2, 4 (not consecutive): %u entries", k);
	/* where the pattern breaks: another size, a node skipped, a rank gap */
	struct shf_wire_map_ent f[7] = {{0, 4, 0, 0, 0},  {4, 4, 1, 0, 0},  {8, 4, 2, 0, 0},
					{12, 2, 3, 0, 0}, {14, 2, 5, 0, 0}, {16, 2, 6, 0, 0},
					{20, 2, 7, 0, 0}};
	k = shf_wire_map_compact(f, 7);
	EXPECTF(k == 4 && f[0].repeat == 2 && f[1].first == 12 && f[1].repeat == 0 &&
			f[2].first == 14 && f[2].node == 5 && f[2].repeat == 1 && f[3].first == 20 &&
			f[3].repeat == 0,
		"compaction breaks at size, node and rank gaps: %u entries", k);
}

static void test_map_deny(void)
{
	uint8_t b[512];
	struct shf_wire_hdr h;
	struct shf_wire_map m = {.world = 64, .uid = 1000, .flags = SHF_WIRE_MAP_FINAL};
	snprintf(m.name, sizeof(m.name), "job.42");
	struct shf_wire_map_ent e[3] = {{0, 4, 0, 0, 0}, {10, 1, 2, 0, 0}, {60, 4, 3, 0, 0}};
	long n = shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, e, 3);
	EXPECTF(n == (long)shf_wire_map_bytes(3) && n == 120 + 60, "map length %ld", n);
	EXPECTF(shf_wire_get64(b + 32) == shf_wire_job_hash("job.42") &&
		      shf_wire_get32(b + 40) == 64 && shf_wire_get32(b + 44) == 3 &&
		      shf_wire_get32(b + 48) == 1000 && shf_wire_get32(b + 52) == SHF_WIRE_MAP_FINAL &&
		      !strcmp((const char *)b + 56, "job.42") && shf_wire_get32(b + 140) == 10 &&
		      shf_wire_get32(b + 144) == 1 && shf_wire_get32(b + 148) == 2 &&
		      shf_wire_get32(b + 152) == 0 && shf_wire_get32(b + 156) == 0 &&
		      shf_wire_get32(b + 160) == 60,
	      "map body at 32..119, 20-byte entries from 120");
	EXPECTF(chk(b, (size_t)n, &h) == 0, "map checks");
	EXPECTF(h.kind == SHF_WIRE_JOB_MAP && h.u.map.world == 64 && h.u.map.uid == 1000 &&
		      h.u.map.nents == 3 && h.u.map.flags == SHF_WIRE_MAP_FINAL &&
		      !strcmp(h.u.map.name, "job.42"),
	      "map fields");
	for (uint32_t i = 0; i < 3; i++) {
		struct shf_wire_map_ent x = shf_wire_map_entry(&h.u.map, i);
		EXPECTF(x.first == e[i].first && x.count == e[i].count && x.node == e[i].node,
			"map entry %u", i);
	}
	EXPECTF(shf_wire_enc_map(b, (size_t)n - 1, SRC, DST, &m, e, 3) == -ENOBUFS, "map cap");
	struct shf_wire_map_ent overlap[2] = {{0, 4, 0, 0, 0}, {3, 2, 2, 0, 0}};
	EXPECTF(shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, overlap, 2) == -EINVAL, "map overlap");
	struct shf_wire_map_ent beyond[1] = {{60, 5, 0, 0, 0}};
	EXPECTF(shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, beyond, 1) == -EINVAL, "map beyond");
	EXPECTF(shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, e, 0) == -EINVAL, "map empty");
	n = shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, e, 3);
	EXPECTF(chk_patched32(b, (size_t)n, 52, 2) == -EBADMSG, "map flags");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 2) == -EBADMSG, "nents vs length");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 8, NODES) == -EBADMSG, "entry node >= nodes");
	/* version 8: an entry's repeat (block b on node + b) */
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 12, 1) == 0, "entry repeat within bounds");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 12, 3) == -EBADMSG,
		"entry repeat overlaps the next entry");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 40 + 12, 1) == -EBADMSG,
		"entry repeat beyond the world and the nodes");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 12, NODES - 2) == -EBADMSG,
		"entry repeat beyond the last node");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 12, UINT32_MAX) == -EBADMSG,
		"entry repeat wraps");
	/* version 9: an entry's again (more rounds of its blocks) */
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 16, 1) == 0, "entry again within bounds");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 16, 2) == -EBADMSG,
		"entry again overlaps the next entry");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 40 + 16, 1) == -EBADMSG,
		"entry again beyond the world");
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 16, UINT32_MAX) == -EBADMSG,
		"entry again of 2^32 rounds");
	{
		/* count x (repeat + 1) x (again + 1) past 2^63: saturates, refused */
		uint8_t *w = malloc((size_t)n);
		memcpy(w, b, (size_t)n);
		shf_wire_put32(w + 120 + 40 + 4, INT32_MAX);
		shf_wire_put32(w + 120 + 40 + 12, 0);
		shf_wire_put32(w + 120 + 40 + 16, UINT32_MAX);
		int r1 = chk(w, (size_t)n, NULL);
		struct shf_wire_hdr hh;
		shf_wire_put32(w + 120 + 40 + 8, 0);
		shf_wire_put32(w + 120 + 40 + 12, UINT32_MAX - 1);
		int r2 = shf_wire_check(w, (size_t)n, UINT32_MAX, DST, &hh);
		free(w);
		EXPECTF(r1 == -EBADMSG && r2 == -EBADMSG, "entry ranks overflow: %d %d", r1, r2);
	}
	struct shf_wire_map_ent cy[2] = {{0, 1, 0, 3, 9}, {40, 3, 1, 2, 1}}; /* 40 + 18 */
	n = shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, cy, 2);
	uint32_t nb = 0;
	struct shf_wire_map_ent cb[2];
	EXPECTF(n == 160 && map_back(b, n, NODES, cb, 2, &nb) == 0 && nb == 2 &&
			cb[0].repeat == 3 && cb[0].again == 9 && cb[1].again == 1,
		"cyclic entries round trip (%ld bytes)", n);
	EXPECTF(chk_patched32(b, (size_t)n, 120 + 20 + 16, 2) == -EBADMSG,
		"a third round past the world (40 + 27 > 64)");
	n = shf_wire_enc_map(b, sizeof(b), SRC, DST, &m, e, 3);
	test_map_compact();
	EXPECTF(chk_patched64(b, (size_t)n, 32, 1) == -EBADMSG, "map hash mismatch");

	struct shf_wire_deny dn = {.reason = -EACCES, .other_node = 3, .other_uid = 77,
				   .other_world = 8};
	snprintf(dn.name, sizeof(dn.name), "job.42");
	n = shf_wire_enc_deny(b, sizeof(b), SRC, DST, &dn);
	EXPECTF(n == SHF_WIRE_DENY_BYTES && n == 120, "deny length %ld", n);
	EXPECTF((int32_t)shf_wire_get32(b + 40) == -EACCES && shf_wire_get32(b + 44) == 3 &&
		      shf_wire_get32(b + 48) == 77 && shf_wire_get32(b + 52) == 8 &&
		      !strcmp((const char *)b + 56, "job.42"),
	      "deny body");
	EXPECTF(chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_JOB_DENY &&
		      h.u.deny.reason == -EACCES && h.u.deny.other_node == 3 &&
		      h.u.deny.other_uid == 77 && h.u.deny.other_world == 8 &&
		      h.u.deny.job_hash == shf_wire_job_hash("job.42"),
	      "deny fields");
	EXPECTF(chk_patched32(b, (size_t)n, 40, (uint32_t)-ESRCH) == -EBADMSG, "deny reason");
	EXPECTF(chk_patched32(b, (size_t)n, 40, (uint32_t)-EINVAL) == 0, "deny EINVAL");
	EXPECTF(chk_patched32(b, (size_t)n, 40, (uint32_t)-EEXIST) == 0, "deny EEXIST");
	EXPECTF(chk_patched32(b, (size_t)n, 44, DST) == -EBADMSG, "deny names the receiver");
	EXPECTF(chk_patched32(b, (size_t)n, 44, NODES) == -EBADMSG, "deny other >= nodes");
	EXPECTF(chk_patched32(b, (size_t)n, 52, 0) == -EBADMSG, "deny world 0");
	EXPECTF(chk(b, (size_t)n - 8, NULL) == -EBADMSG, "truncated deny");
	EXPECTF(!strcmp(shf_wire_kind_name(SHF_WIRE_JOB_MAP), "job-map") &&
		      !strcmp(shf_wire_kind_name(SHF_WIRE_JOB_DENY), "job-deny") &&
		      !strcmp(shf_wire_kind_name(SHF_WIRE_JOB_LEAVE_ASK), "job-leave-ask"),
	      "map and deny kind names");
}

static void test_stamp(void)
{
	_Static_assert(offsetof(struct shf_wire_raw_hdr, src_session) == 16 &&
			       offsetof(struct shf_wire_raw_hdr, dst_session) == 24 &&
			       sizeof(struct shf_wire_raw_hdr) == 32 && SHF_WIRE_HDR == 32,
		       "v2 common header");
	_Static_assert(SHF_WIRE_VERSION == 10 && SHF_WIRE_BATCH_HDR == 56 &&
			       SHF_WIRE_ACK_BYTES == 48 && SHF_WIRE_HEARTBEAT_BYTES == 120 &&
			       SHF_WIRE_JOIN_FIXED == 120 && SHF_WIRE_LEAVE_FIXED == 56 &&
			       SHF_WIRE_LEAVE_ENT_BYTES == 20 && SHF_WIRE_LEAVE_ASK_BYTES == 48 &&
			       SHF_WIRE_EPOCH_BYTES == 56 && SHF_WIRE_DROP_BYTES == 64,
		       "v3-v10 sizes");
	uint8_t b[512];
	struct shf_wire_batch_enc e;
	EXPECTF(shf_wire_batch_begin(&e, b, sizeof(b), SRC, DST, 5) == 0 &&
		      shf_wire_batch_put(&e, 1, 2, 3, "xyz", 3) == 0,
	      "batch");
	stamp_round_trip(b, (long)shf_wire_batch_end(&e, 1), SHF_WIRE_BATCH, "batch");
	struct shf_wire_ack a = {1, 2, 3};
	stamp_round_trip(b, shf_wire_enc_ack(b, sizeof(b), SRC, DST, &a), SHF_WIRE_ACK, "ack");
	struct shf_wire_heartbeat hb = {.time_ns = 1, .incarnation = 2};
	stamp_round_trip(b, shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb),
			 SHF_WIRE_HEARTBEAT, "heartbeat");
	EXPECTF(shf_wire_get64(b + 32) == 1 && shf_wire_get64(b + 40) == 2, "heartbeat body at 32");
	struct shf_wire_join j = {.world = 4, .uid = 1};
	snprintf(j.name, sizeof(j.name), "j");
	struct shf_wire_range rg[1] = {{0, 4}};
	stamp_round_trip(b, shf_wire_enc_join(b, sizeof(b), SRC, DST, &j, rg, 1), SHF_WIRE_JOB_JOIN,
			 "join");
	struct shf_wire_leave l = {.job_hash = 7, .world = 2};
	struct shf_wire_leave_ent le = {1, 1, -EHOSTDOWN, 0, SRC};
	stamp_round_trip(b, shf_wire_enc_leave(b, sizeof(b), SRC, DST, &l, &le, 1),
			 SHF_WIRE_JOB_LEAVE, "leave");
	EXPECTF(shf_wire_get64(b + 32) == 7 && shf_wire_get32(b + 40) == 2 &&
		      shf_wire_get32(b + 44) == 1 && shf_wire_get32(b + 56) == 1 &&
		      (int32_t)shf_wire_get32(b + 64) == -EHOSTDOWN && shf_wire_get32(b + 68) == 0 &&
		      shf_wire_get32(b + 72) == SRC,
	      "leave body at 32");
	struct shf_wire_leave_ask ask = {9, 3, 0};
	stamp_round_trip(b, shf_wire_enc_leave_ask(b, sizeof(b), SRC, DST, &ask),
			 SHF_WIRE_JOB_LEAVE_ASK, "leave ask");
	struct shf_wire_epoch ep = {8, 9, SHF_WIRE_EPOCH_PLACED, 1};
	stamp_round_trip(b, shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_UP, SRC, DST, &ep),
			 SHF_WIRE_EPOCH_UP, "epoch");
	EXPECTF(shf_wire_get64(b + 32) == 8 && shf_wire_get64(b + 40) == 9 &&
		      shf_wire_get32(b + 48) == SHF_WIRE_EPOCH_PLACED && shf_wire_get32(b + 52) == 1,
	      "epoch body at 32");
	struct shf_wire_drop d = {10, 11, 1, 2, 3, -ESRCH};
	stamp_round_trip(b, shf_wire_enc_drop(b, sizeof(b), SRC, DST, &d), SHF_WIRE_DROP, "drop");
	EXPECTF(shf_wire_get64(b + 32) == 10 && shf_wire_get64(b + 40) == 11 &&
		      shf_wire_get32(b + 56) == 3 && (int32_t)shf_wire_get32(b + 60) == -ESRCH,
	      "drop body at 32");
}

/* FAN_REQ and FAN_ANS (the fan-out tree): round trip, then every field's rule. */
static void test_fan(void)
{
	uint8_t b[512];
	struct shf_wire_hdr h;
	const uint32_t tg[2] = {0, 3};
	struct shf_wire_fan_req r = {.req_id = 77, .origin = SRC, .uid = 1000, .budget_ms = 1500,
				     .fanout = 8, .ntargets = 2, .args_len = 2, .args = "{}"};
	snprintf(r.cmd, sizeof(r.cmd), "status");
	long n = shf_wire_enc_fan_req(b, sizeof(b), SRC, DST, NODES, &r, tg);
	EXPECTF(n == 96 + 8 + 2, "fan_req length %ld", n);
	EXPECTF(chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_FAN_REQ && h.u.fan_req.req_id == 77 &&
		      h.u.fan_req.uid == 1000 && h.u.fan_req.ntargets == 2 &&
		      shf_wire_fan_target(&h.u.fan_req, 1) == 3 && !strcmp(h.u.fan_req.cmd, "status") &&
		      h.u.fan_req.args_len == 2 && !memcmp(h.u.fan_req.args, "{}", 2),
	      "fan_req round trip");
	EXPECTF(chk(b, (size_t)n - 1, NULL) == -EBADMSG, "fan_req short by one");
	EXPECTF(chk_patched64(b, (size_t)n, 32, 0) == -EBADMSG, "req_id 0");
	EXPECTF(chk_patched32(b, (size_t)n, 40, DST) == -EBADMSG, "origin is the receiver");
	EXPECTF(chk_patched32(b, (size_t)n, 40, NODES) == -EBADMSG, "origin outside the nodes");
	EXPECTF(chk_patched32(b, (size_t)n, 48, 0) == -EBADMSG, "budget 0");
	EXPECTF(chk_patched32(b, (size_t)n, 48, SHF_WIRE_FAN_BUDGET_MAX + 1) == -EBADMSG, "budget");
	EXPECTF(chk_patched32(b, (size_t)n, 52, 1) == -EBADMSG, "fanout 1");
	EXPECTF(chk_patched32(b, (size_t)n, 52, SHF_WIRE_FAN_K_MAX + 1) == -EBADMSG, "fanout 65");
	EXPECTF(chk_patched32(b, (size_t)n, 56, 3) == -EBADMSG, "ntargets disagrees with the length");
	EXPECTF(chk_patched32(b, (size_t)n, 60, 3) == -EBADMSG, "args_len disagrees with the length");
	EXPECTF(chk_patched8(b, (size_t)n, 64, 'S') == -EBADMSG, "cmd with an upper-case letter");
	EXPECTF(chk_patched8(b, (size_t)n, 64, 0) == -EBADMSG, "empty cmd");
	EXPECTF(chk_patched8(b, (size_t)n, 64 + 8, 'x') == -EBADMSG, "cmd padding not zero");
	EXPECTF(chk_patched32(b, (size_t)n, 96, 3) == -EBADMSG, "targets not increasing");
	EXPECTF(chk_patched32(b, (size_t)n, 96, DST) == -EBADMSG, "the receiver as a target");
	EXPECTF(chk_patched32(b, (size_t)n, 100, NODES) == -EBADMSG, "a target outside the nodes");
	EXPECTF(chk_patched32(b, (size_t)n, 100, SRC) == -EBADMSG, "the sender as a target");
	EXPECTF(chk_patched8(b, (size_t)n, 104, 0) == -EBADMSG, "a NUL in args");
	r.ntargets = 1;
	EXPECTF(shf_wire_enc_fan_req(b, sizeof(b), SRC, DST, NODES, &r, (const uint32_t[]){DST}) ==
		      -EINVAL,
	      "the encoder refuses what the check refuses");

	struct shf_wire_fan_ans a = {77, SRC, 10, 4, 6, (const uint8_t *)"abcdef"};
	n = shf_wire_enc_fan_ans(b, sizeof(b), SRC, DST, NODES, &a);
	EXPECTF(n == 64 + 6, "fan_ans length %ld", n);
	EXPECTF(chk(b, (size_t)n, &h) == 0 && h.kind == SHF_WIRE_FAN_ANS && h.u.fan_ans.total == 10 &&
		      h.u.fan_ans.offset == 4 && h.u.fan_ans.len == 6 &&
		      !memcmp(h.u.fan_ans.data, "abcdef", 6),
	      "fan_ans round trip");
	EXPECTF(chk(b, (size_t)n + 1, NULL) == -EBADMSG, "fan_ans with a byte more");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 9) == -EBADMSG, "offset + len above total");
	EXPECTF(chk_patched32(b, (size_t)n, 44, SHF_WIRE_FAN_ANS_MAX + 1) == -EBADMSG, "total above the bound");
	EXPECTF(chk_patched32(b, (size_t)n, 44, 0) == -EBADMSG, "total 0");
	EXPECTF(chk_patched32(b, (size_t)n, 52, 0) == -EBADMSG, "len 0");
	EXPECTF(chk_patched32(b, (size_t)n, 56, 1) == -EBADMSG, "flags");
	EXPECTF(chk_patched32(b, (size_t)n, 60, 1) == -EBADMSG, "reserved");
	EXPECTF(chk_patched64(b, (size_t)n, 32, 0) == -EBADMSG, "req_id 0");
	EXPECTF(!strcmp(shf_wire_kind_name(SHF_WIRE_FAN_REQ), "fan-req"), "kind name");
}

/* routing=2d: FWD carries one whole message of another pair one hop on;
 * FWD_LOST names the node an intermediate lost.  Hop SRC -> DST here;
 * the carried message is 0 -> DST (at the destination) or SRC -> 3 (at
 * the intermediate). */
static void test_fwd(void)
{
	uint8_t b[512], in[256];
	struct shf_wire_hdr h;
	struct shf_wire_heartbeat hb = {.time_ns = 1, .incarnation = 7, .flags = SHF_WIRE_HB_2D};
	long m = shf_wire_enc_heartbeat(in, sizeof(in), 0, DST, &hb);
	EXPECTF(m == SHF_WIRE_HEARTBEAT_BYTES, "inner heartbeat with flag 2D");
	EXPECTF(shf_wire_enc_fwd_hdr(b, sizeof(b), SRC, DST) == SHF_WIRE_FWD_HDR, "fwd header");
	memcpy(b + SHF_WIRE_FWD_HDR, in, (size_t)m);
	size_t n = SHF_WIRE_FWD_HDR + (size_t)m;
	EXPECTF(chk(b, n, &h) == 0 && h.kind == SHF_WIRE_FWD && h.src_node == SRC &&
		      h.u.fwd.inner_src == 0 && h.u.fwd.inner_dst == DST &&
		      h.u.fwd.inner_kind == SHF_WIRE_HEARTBEAT && h.u.fwd.len == (uint32_t)m &&
		      h.u.fwd.msg == b + SHF_WIRE_FWD_HDR,
	      "fwd to the destination");
	/* at the intermediate: a message of SRC for node 3 */
	m = shf_wire_enc_heartbeat(in, sizeof(in), SRC, 3, &hb);
	memcpy(b + SHF_WIRE_FWD_HDR, in, (size_t)m);
	EXPECTF(chk(b, n, &h) == 0 && h.u.fwd.inner_src == SRC && h.u.fwd.inner_dst == 3,
	      "fwd to an intermediate");
	EXPECTF(chk(b, n - 1, NULL) == -EBADMSG, "fwd: carried message cut short");
	EXPECTF(chk(b, SHF_WIRE_FWD_HDR + 16, NULL) == -EBADMSG, "fwd: no whole header carried");
	EXPECTF(chk_patched32(b, n, SHF_WIRE_FWD_HDR + 12, 9) == -EBADMSG,
	      "fwd: carried dst out of range");
	EXPECTF(chk_patched8(b, n, SHF_WIRE_FWD_HDR + 52, 1) == -EBADMSG,
	      "fwd: carried message invalid (reserved byte)");
	/* the hop's own pair is not another pair's message */
	m = shf_wire_enc_heartbeat(in, sizeof(in), SRC, DST, &hb);
	memcpy(b + SHF_WIRE_FWD_HDR, in, (size_t)m);
	EXPECTF(chk(b, n, NULL) == -EBADMSG, "fwd of the hop's own pair");
	/* no nesting, no FWD_LOST carried */
	uint8_t b2[600];
	EXPECTF(shf_wire_enc_fwd_hdr(b2, sizeof(b2), SRC, DST) == SHF_WIRE_FWD_HDR, "outer");
	EXPECTF(shf_wire_enc_fwd_hdr(b2 + 32, sizeof(b2) - 32, 0, DST) == SHF_WIRE_FWD_HDR, "inner");
	m = shf_wire_enc_heartbeat(b2 + 64, sizeof(b2) - 64, 3, DST, &hb);
	EXPECTF(chk(b2, 64 + (size_t)m, NULL) == -EBADMSG, "fwd inside a fwd");
	long l = shf_wire_enc_fwd_lost(in, sizeof(in), 0, DST, 3);
	memcpy(b + SHF_WIRE_FWD_HDR, in, (size_t)l);
	EXPECTF(chk(b, SHF_WIRE_FWD_HDR + (size_t)l, NULL) == -EBADMSG, "fwd_lost carried");
	EXPECTF(shf_wire_enc_fwd_hdr(b, sizeof(b), SRC, SRC) == -EINVAL, "fwd to myself");
	EXPECTF(shf_wire_enc_fwd_hdr(b, 31, SRC, DST) == -ENOBUFS, "fwd cap");

	/* FWD_LOST */
	l = shf_wire_enc_fwd_lost(b, sizeof(b), SRC, DST, 3);
	EXPECTF(l == SHF_WIRE_FWD_LOST_BYTES && chk(b, (size_t)l, &h) == 0 &&
		      h.kind == SHF_WIRE_FWD_LOST && h.u.fwd_lost == 3,
	      "fwd_lost round trip");
	EXPECTF(chk_patched32(b, (size_t)l, 32, SRC) == -EBADMSG, "fwd_lost of the sender");
	EXPECTF(chk_patched32(b, (size_t)l, 32, DST) == -EBADMSG, "fwd_lost of the receiver");
	EXPECTF(chk_patched32(b, (size_t)l, 32, NODES) == -EBADMSG, "fwd_lost out of range");
	EXPECTF(chk_patched32(b, (size_t)l, 36, 1) == -EBADMSG, "fwd_lost reserved");
	EXPECTF(chk(b, (size_t)l + 8, NULL) == -EBADMSG, "fwd_lost length");
	EXPECTF(shf_wire_enc_fwd_lost(b, sizeof(b), SRC, DST, DST) == -EINVAL, "enc fwd_lost of dst");
	/* IDLE (bit 3, peer_idle_ms) round-trips; bits beyond WAKE stay invalid */
	hb.flags = SHF_WIRE_HB_IDLE;
	l = shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb);
	EXPECTF(l == SHF_WIRE_HEARTBEAT_BYTES && chk(b, (size_t)l, &h) == 0 &&
		      h.u.heartbeat.flags == SHF_WIRE_HB_IDLE, "heartbeat flag IDLE round trip");
	/* WAKE (bit 4, the wake of an idle pair) round-trips too */
	hb.flags = SHF_WIRE_HB_WAKE;
	l = shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb);
	EXPECTF(l == SHF_WIRE_HEARTBEAT_BYTES && chk(b, (size_t)l, &h) == 0 &&
		      h.u.heartbeat.flags == SHF_WIRE_HB_WAKE, "heartbeat flag WAKE round trip");
	hb.flags = 32;
	EXPECTF(shf_wire_enc_heartbeat(b, sizeof(b), SRC, DST, &hb) == -EINVAL, "heartbeat flag 32");
}

/* FWD_BUNDLE: several whole FWDs of one hop (SRC -> DST) in one message;
 * every item checked as a FWD, the items filling the message exactly. */
static void test_bundle(void)
{
	uint8_t b[1024], f[256], in[256];
	struct shf_wire_hdr h;
	struct shf_wire_heartbeat hb = {.time_ns = 1, .incarnation = 7, .flags = SHF_WIRE_HB_2D};
	long m = shf_wire_enc_heartbeat(in, sizeof(in), 0, DST, &hb);
	EXPECTF(shf_wire_enc_fwd_hdr(f, sizeof(f), SRC, DST) == SHF_WIRE_FWD_HDR, "fwd header");
	memcpy(f + SHF_WIRE_FWD_HDR, in, (size_t)m);
	uint32_t flen = SHF_WIRE_FWD_HDR + (uint32_t)m; /* 152: a multiple of 8 */
	struct shf_wire_ack a = {5, 8, 0};
	long am = shf_wire_enc_ack(in, sizeof(in), 3, DST, &a);
	uint8_t f2[128];
	EXPECTF(shf_wire_enc_fwd_hdr(f2, sizeof(f2), SRC, DST) == SHF_WIRE_FWD_HDR, "fwd header 2");
	memcpy(f2 + SHF_WIRE_FWD_HDR, in, (size_t)am);
	uint32_t flen2 = SHF_WIRE_FWD_HDR + (uint32_t)am;
	long off = shf_wire_enc_bundle_begin(b, sizeof(b), SRC, DST);
	EXPECTF(off == SHF_WIRE_BUNDLE_HDR, "bundle begin");
	off = shf_wire_enc_bundle_add(b, sizeof(b), (size_t)off, f, flen);
	off = shf_wire_enc_bundle_add(b, sizeof(b), (size_t)off, f2, flen2);
	EXPECTF(off == 40 + 8 + 152 + 8 + 80, "bundle length %ld", off);
	size_t n = (size_t)off;
	EXPECTF(chk(b, n, &h) == 0 && h.kind == SHF_WIRE_FWD_BUNDLE && h.u.bundle.count == 2,
	      "bundle round trip");
	uint32_t it = 0, len = 0;
	const uint8_t *msg = NULL;
	EXPECTF(shf_wire_bundle_next(&h.u.bundle, &it, &msg, &len) == 1 && len == flen &&
		      !memcmp(msg + SHF_WIRE_FWD_HDR, f + SHF_WIRE_FWD_HDR, (size_t)m),
	      "bundle item 1");
	EXPECTF(shf_wire_bundle_next(&h.u.bundle, &it, &msg, &len) == 1 && len == flen2,
	      "bundle item 2");
	EXPECTF(shf_wire_bundle_next(&h.u.bundle, &it, &msg, &len) == 0, "bundle: two items");
	EXPECTF(shf_wire_enc_bundle_add(b, n + 100, n, f, flen) == -ENOBUFS, "bundle add: no room");
	EXPECTF(chk(b, n - 1, NULL) == -EBADMSG, "bundle cut short");
	EXPECTF(chk(b, n + 8, NULL) == -EBADMSG, "bundle: bytes beyond the last item");
	EXPECTF(chk_patched32(b, n, 32, 0) == -EBADMSG, "bundle: zero count");
	EXPECTF(chk_patched32(b, n, 32, 3) == -EBADMSG, "bundle: count above its items");
	EXPECTF(chk_patched32(b, n, 32, 1) == -EBADMSG, "bundle: count below its items");
	EXPECTF(chk_patched32(b, n, 36, 1) == -EBADMSG, "bundle: reserved");
	EXPECTF(chk_patched32(b, n, 40, 4096) == -EBADMSG, "bundle: item length past the end");
	EXPECTF(chk_patched32(b, n, 40, 16) == -EBADMSG, "bundle: item shorter than a header");
	EXPECTF(chk_patched32(b, n, 40, flen - 8) == -EBADMSG, "bundle: item length inside it");
	EXPECTF(chk_patched32(b, n, 44, 1) == -EBADMSG, "bundle: item reserved");
	EXPECTF(chk_patched32(b, n, 48 + 12, 3) == -EBADMSG, "bundle: item of another hop");
	EXPECTF(chk_patched32(b, n, 48 + 16, 9) == -EBADMSG, "bundle: item with tags");
	EXPECTF(chk_patched8(b, n, 48 + SHF_WIRE_FWD_HDR + 52, 1) == -EBADMSG,
	      "bundle: carried message invalid");
	/* an item that is not a FWD: a bundle inside a bundle, a bare message */
	uint8_t b2[1024];
	off = shf_wire_enc_bundle_begin(b2, sizeof(b2), SRC, DST);
	shf_wire_put32(b2 + off, (uint32_t)n);
	shf_wire_put32(b2 + off + 4, 0);
	memcpy(b2 + off + 8, b, n);
	shf_wire_put32(b2 + 32, 1);
	EXPECTF(chk(b2, (size_t)off + 8 + n, NULL) == -EBADMSG, "bundle inside a bundle");
	shf_wire_put32(b2 + off, (uint32_t)am);
	memcpy(b2 + off + 8, in, (size_t)am);
	EXPECTF(chk(b2, (size_t)off + 8 + (size_t)am, NULL) == -EBADMSG, "bare message in a bundle");
	/* a FWD may not carry a bundle */
	uint8_t b3[1100];
	EXPECTF(shf_wire_enc_fwd_hdr(b3, sizeof(b3), 3, DST) == SHF_WIRE_FWD_HDR, "outer fwd");
	memcpy(b3 + SHF_WIRE_FWD_HDR, b, n);
	EXPECTF(shf_wire_check(b3, SHF_WIRE_FWD_HDR + n, NODES, DST, &h) == -EBADMSG,
	      "bundle inside a fwd");
	EXPECTF(shf_wire_enc_bundle_begin(b, sizeof(b), SRC, SRC) == -EINVAL, "bundle to myself");
	EXPECTF(!strcmp(shf_wire_kind_name(SHF_WIRE_FWD_BUNDLE), "fwd-bundle"), "bundle kind name");
}

/* One malformed variant of a batch: the 32-bit word at off set to v. */
struct bad_word {
	size_t off;
	uint32_t v;
	const char *what;
};

/* Each variant of batch buf (n bytes) in bad[] is refused by the iterator
 * and by verify. */
static void expect_refused(const uint8_t *buf, size_t n, const struct bad_word *bad, size_t nbad,
			   const char *kind)
{
	for (size_t i = 0; i < nbad; i++) {
		uint8_t b2[512];
		struct shf_wire_hdr h2;
		EXPECTF(n <= sizeof(b2), "batch of %zu bytes", n);
		memcpy(b2, buf, n);
		shf_wire_put32(b2 + bad[i].off, bad[i].v);
		EXPECTF(chk(b2, n, &h2) == 0 && shf_wire_batch_verify(b2, &h2, MAX_MSG) == -EBADMSG,
			"%s refused: %s", kind, bad[i].what);
	}
}

/* Run records: the layout (one 16-byte record header, then the items as a
 * ring holds them), the iterator's view, and each malformed variant
 * refused by shf_run_check() and by the iterator. */
static void test_runs(void)
{
	/* items: {type 7, len 3, "abc" + 5 zero}, {type 8, len 0}, {type 9, len 8} */
	_Alignas(8) uint8_t items[48];
	memset(items, 0, sizeof(items));
	struct shf_run_item a = {7, 3}, b = {8, 0}, c = {9, 8};
	memcpy(items, &a, 8);
	memcpy(items + 8, "abc", 3);
	memcpy(items + 16, &b, 8);
	memcpy(items + 24, &c, 8);
	memcpy(items + 32, "12345678", 8);
	EXPECTF(shf_run_check(items, 40, 3, MAX_MSG) == 11, "a good run: 11 payload bytes");
	EXPECTF(shf_run_check(items, 40, 0, MAX_MSG) == -EBADMSG, "count 0");
	EXPECTF(shf_run_check(items, 40, 2, MAX_MSG) == -EBADMSG, "count short: bytes left");
	EXPECTF(shf_run_check(items, 40, 4, MAX_MSG) == -EBADMSG, "count long");
	EXPECTF(shf_run_check(items, 32, 3, MAX_MSG) == -EBADMSG, "bytes cut");
	EXPECTF(shf_run_check(items, 40, 3, 7) == -EBADMSG, "an item over max_msg");
	EXPECTF(shf_run_check(items, 40, SHF_RUN_MAX_COUNT + 1, MAX_MSG) == -EBADMSG,
		"count over SHF_RUN_MAX_COUNT");
	items[15] = 1;
	EXPECTF(shf_run_check(items, 40, 3, MAX_MSG) == -EBADMSG, "padding not zero");
	items[15] = 0;

	uint8_t buf[512];
	struct shf_wire_batch_enc e;
	EXPECTF(shf_wire_batch_begin(&e, buf, sizeof(buf), SRC, DST, 77) == 0, "begin");
	uint8_t *p = shf_wire_batch_add_run(&e, 5, 6, 3, 40);
	EXPECTF(p != NULL, "add_run");
	memcpy(p, items, 40);
	EXPECTF(shf_wire_batch_add_run(&e, SHF_WIRE_DST_BCAST, 6, 3, 40) == NULL &&
		      shf_wire_batch_add_run(&e, 5, 6, 0, 40) == NULL &&
		      shf_wire_batch_add_run(&e, 5, 6, 3, 36) == NULL &&
		      shf_wire_batch_add_run(&e, 5, 6, 3, SHF_RUN_MAX_BYTES + 8) == NULL,
	      "add_run refuses a broadcast, count 0, an unaligned or oversized run");
	EXPECTF(shf_wire_batch_put(&e, 5, 6, 1, "x", 1) == 0, "a plain record after it");
	size_t n = shf_wire_batch_end(&e, 1);
	EXPECTF(n == 56 + 16 + 40 + 16 + 8, "batch of a run and a record: %zu bytes", n);
	EXPECTF(shf_wire_get32(p - 16) == 5 && shf_wire_get32(p - 12) == 6 &&
		      shf_wire_get32(p - 8) == 3 && shf_wire_get32(p - 4) == (SHF_WIRE_REC_RUN | 40),
	      "run header: dst, src, count, SHF_WIRE_REC_RUN | bytes");
	struct shf_wire_hdr h;
	struct shf_wire_iter it;
	struct shf_wire_rec r;
	EXPECTF(chk(buf, n, &h) == 0 && h.u.batch.count == 2, "check");
	shf_wire_iter_init(&it, buf, &h, MAX_MSG);
	EXPECTF(shf_wire_iter_next(&it, &r) == 1 && r.count == 3 && r.len == 40 && r.payload == 11 &&
		      r.dst_rank == 5 && r.src_rank == 6 && r.type == 0 &&
		      !memcmp(r.data, items, 40),
	      "the run as the iterator gives it");
	EXPECTF(shf_wire_iter_next(&it, &r) == 1 && r.count == 0 && r.len == 1 && r.payload == 1,
		"the plain record after it");
	EXPECTF(shf_wire_iter_next(&it, &r) == 0, "end");
	/* malformed on the wire: each refused by the iterator and by verify */
	static const struct bad_word bad[] = {
		{56 + 0, (uint32_t)SHF_WIRE_DST_BCAST, "a run to every rank"},
		{56 + 8, 0, "count 0"},
		{56 + 8, 4, "count beyond the items"},
		{56 + 12, SHF_WIRE_REC_RUN | 48, "bytes beyond the items"},
		{56 + 12, SHF_WIRE_REC_RUN | 32, "bytes cut"},
		{56 + 16 + 4, MAX_MSG + 1, "an item over max_msg"},
	};
	expect_refused(buf, n, bad, sizeof(bad) / sizeof(bad[0]), "run");
}

/* Packed runs (wire version 10): one item header for messages of one type
 * and length, then the payloads padded to 8; the limits of the plain run
 * they stand for; every malformed variant refused, on the wire too. */
static void test_packed_runs(void)
{
	const uint32_t P = SHF_RUN_PACKED;
	/* three messages of type 7, len 3: {7, 3}, "abc" "def" "ghi", each padded */
	_Alignas(8) uint8_t items[32];
	memset(items, 0, sizeof(items));
	struct shf_run_item a = {7, 3};
	memcpy(items, &a, 8);
	memcpy(items + 8, "abc", 3);
	memcpy(items + 16, "def", 3);
	memcpy(items + 24, "ghi", 3);
	EXPECTF(shf_run_packed_bytes(3, 3) == 32 && shf_run_n(3 | P) == 3, "packed geometry");
	EXPECTF(shf_run_check(items, 32, 3 | P, MAX_MSG) == 9, "a good packed run: 9 payload bytes");
	EXPECTF(shf_run_plain_bytes(items, 32, 3 | P) == 48 && shf_run_plain_bytes(items, 32, 3) == 32,
		"as a plain run: 3 x 16 bytes");
	EXPECTF(shf_run_check(items, 32, 0 | P, MAX_MSG) == -EBADMSG, "count 0");
	EXPECTF(shf_run_check(items, 32, 2 | P, MAX_MSG) == -EBADMSG, "count short");
	EXPECTF(shf_run_check(items, 32, 4 | P, MAX_MSG) == -EBADMSG, "count long");
	EXPECTF(shf_run_check(items, 24, 3 | P, MAX_MSG) == -EBADMSG, "bytes cut");
	EXPECTF(shf_run_check(items, 4, 3 | P, MAX_MSG) == -EBADMSG, "no room for the item header");
	EXPECTF(shf_run_check(items, 32, 3 | P, 2) == -EBADMSG, "len over max_msg");
	EXPECTF(shf_run_check(items, 32, (SHF_RUN_MAX_COUNT + 1) | P, MAX_MSG) == -EBADMSG,
		"count over SHF_RUN_MAX_COUNT");
	items[16 + 5] = 1; /* the second payload's padding */
	EXPECTF(shf_run_check(items, 32, 3 | P, MAX_MSG) == -EBADMSG, "padding not zero");
	items[16 + 5] = 0;
	/* 256 messages of 56 bytes: 8 + 256 x 56 fits SHF_RUN_MAX_BYTES, the
	 * plain run it stands for (256 x 64) too; of 60 bytes (stride 64): the
	 * packed bytes are 8 over, and the plain run would be 256 x 72 */
	static _Alignas(8) uint8_t big[8 + 256 * 64 + 8];
	struct shf_run_item b56 = {1, 56}, b48 = {1, 48};
	memset(big, 0, sizeof(big));
	memcpy(big, &b56, 8);
	EXPECTF(shf_run_check(big, shf_run_packed_bytes(256, 56), 256 | P, MAX_MSG) == 256 * 56,
		"256 x 56 bytes: within a plain run's limits");
	memcpy(big, &b48, 8);
	EXPECTF(shf_run_check(big, shf_run_packed_bytes(256, 48), 256 | P, MAX_MSG) == 256 * 48,
		"256 x 48 bytes");
	struct shf_run_item b1k = {1, 1024};
	memcpy(big, &b1k, 8);
	/* 15 x 1024: 8 + 15360 packed, 15 x 1032 = 15480 plain: fits; 16 x
	 * 1024 packed (16392) passes SHF_RUN_MAX_BYTES */
	EXPECTF(shf_run_check(big, shf_run_packed_bytes(15, 1024), 15 | P, MAX_MSG) == 15 * 1024,
		"15 x 1 KiB");
	EXPECTF(shf_run_check(big, shf_run_packed_bytes(16, 1024), 16 | P, MAX_MSG) == -EBADMSG,
		"16 x 1 KiB: over SHF_RUN_MAX_BYTES");
	struct shf_run_item b1016 = {1, 1016};
	memcpy(big, &b1016, 8);
	/* 16 x 1016: packed 8 + 16256 fits, but the plain run (16 x 1024 =
	 * 16384) is exactly the limit: fits; 16 x 1020 (stride 1024): packed
	 * 16392 over */
	EXPECTF(shf_run_check(big, shf_run_packed_bytes(16, 1016), 16 | P, MAX_MSG) == 16 * 1016,
		"16 x 1016 bytes: its plain run exactly SHF_RUN_MAX_BYTES");

	uint8_t buf[512];
	struct shf_wire_batch_enc e;
	EXPECTF(shf_wire_batch_begin(&e, buf, sizeof(buf), SRC, DST, 77) == 0, "begin");
	uint8_t *p = shf_wire_batch_add_run(&e, 5, 6, 3 | P, 32);
	EXPECTF(p != NULL, "add_run packed");
	memcpy(p, items, 32);
	EXPECTF(e.msgs == 3, "it counts 3 messages");
	EXPECTF(shf_wire_batch_add_run(&e, 5, 6, 0 | P, 32) == NULL, "add_run refuses count 0");
	size_t n = shf_wire_batch_end(&e, 1);
	EXPECTF(n == 56 + 16 + 32, "batch of a packed run: %zu bytes", n);
	EXPECTF(shf_wire_get32(p - 8) == (3 | P) && shf_wire_get32(p - 4) == (SHF_WIRE_REC_RUN | 32),
		"run header: count | SHF_RUN_PACKED, SHF_WIRE_REC_RUN | bytes");
	struct shf_wire_hdr h;
	struct shf_wire_iter it;
	struct shf_wire_rec r;
	EXPECTF(chk(buf, n, &h) == 0, "check");
	shf_wire_iter_init(&it, buf, &h, MAX_MSG);
	EXPECTF(shf_wire_iter_next(&it, &r) == 1 && r.count == 3 && r.packed && r.len == 32 &&
			r.payload == 9 && r.type == 0 && !memcmp(r.data, items, 32),
		"the packed run as the iterator gives it");
	EXPECTF(shf_wire_iter_next(&it, &r) == 0, "end");
	static const struct bad_word bad[] = {
		{56 + 8, 0 | SHF_RUN_PACKED, "count 0"},
		{56 + 8, 4 | SHF_RUN_PACKED, "count beyond the payloads"},
		{56 + 16 + 4, 2, "len 2: the padding holds a payload's third byte"},
		{56 + 16 + 4, 9, "len 9: the stride is 16"},
		{56 + 16 + 4, MAX_MSG + 1, "len over max_msg"},
		{56 + 16 + 8 + 4, 1, "padding not zero"},
	};
	expect_refused(buf, n, bad, sizeof(bad) / sizeof(bad[0]), "packed run");
}

int main(void)
{
	test_runs();
	test_packed_runs();
	test_fwd();
	test_bundle();
	test_le_and_hash();
	test_golden_ack();
	test_batch();
	test_small_kinds();
	test_join();
	test_map_deny();
	test_stamp();
	test_epoch_tree();
	test_fan();
	if (check_result())
		return 1;
	fprintf(stderr, "wire-unit: PASS\n");
	return 0;
}
