/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/zero-len.c - zero-length records: an 8-byte header and no
 * payload.  They carry their kind, fill the ring 8 bytes at a time, fit in
 * the very last 8 bytes of the array without a pad, mix with payload
 * records, and a zero-length record is never mistaken for a PAD.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

int main(void)
{
	struct t_guarded g;
	struct shf_ring p, c;
	struct shf_ring_view v;

	t_guarded_open(&g, SIZE);
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);

	CHECK(shf_ring_rec_bytes(0) == SHF_RING_HDR_BYTES);

	/* a zero-length record of every non-PAD kind, including kinds the ring
	 * does not know (it passes them through for the owner to validate) */
	static const uint32_t kinds[] = {SHF_REC_MSG, SHF_REC_MARK, 7, UINT32_MAX};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		uint8_t *d = shf_ring_reserve(&p, 0, kinds[i]);
		CHECK(d != NULL);
		CHECK((uintptr_t)d % SHF_RING_ALIGN == 0);
	}
	/* PAD is the ring's own kind; a producer cannot reserve one */
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_PAD) == NULL && p.err == 0);
	shf_ring_publish(&p);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		CHECK(shf_ring_peek(&c, &v) == 1);
		CHECK(v.len == 0 && v.kind == kinds[i]);
		CHECK(t_view_inside(&c, &v));
	}
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);

	/* 512 of them fill the 4 KiB ring exactly, across the end */
	uint64_t n = 0;
	while (shf_ring_reserve(&p, 0, SHF_REC_MARK))
		n++;
	CHECK(p.err == 0);
	CHECKF(n == SIZE / 8, "%" PRIu64 " zero-length records fitted", n);
	shf_ring_publish(&p);
	CHECK(shf_ring_used(&c) == SIZE);
	for (uint64_t i = 0; i < n; i++)
		CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0 && v.kind == SHF_REC_MARK);
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);

	/* From a fresh ring: fill up to the last 8 bytes with one big record
	 * and zero-length ones; the last zero-length record sits at
	 * SIZE - 8 with no pad, and the next record starts at offset 0. */
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);
	uint8_t *d = shf_ring_reserve(&p, 2040, SHF_REC_MSG); /* [0, 2048) */
	CHECK(d == g.data + 8);
	t_pattern_fill(d, 2040, 1);
	for (uint64_t off = 2048; off < SIZE - 8; off += 8)
		CHECK(shf_ring_reserve(&p, 0, SHF_REC_MARK) == g.data + off + 8);
	shf_ring_publish(&p);
	/* consumer frees the big one, then the last slot is taken */
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 2040);
	CHECK(t_pattern_check(v.data, 2040, 1) < 0);
	shf_ring_release(&c);
	d = shf_ring_reserve(&p, 0, SHF_REC_MSG);
	CHECK(d == g.data + SIZE); /* header at SIZE - 8: payload pointer at the end */
	d = shf_ring_reserve(&p, 3, SHF_REC_MSG);
	CHECK(d == g.data + 8); /* no pad needed: straight to offset 0 */
	memcpy(d, "abc", 3);
	shf_ring_publish(&p);
	for (uint64_t off = 2048; off < SIZE - 8; off += 8)
		CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0 && v.kind == SHF_REC_MARK);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0 && v.kind == SHF_REC_MSG);
	CHECK(v.data == g.data + SIZE && t_view_inside(&c, &v));
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 3 && !memcmp(v.data, "abc", 3));
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);

	/* interleaved zero-length and payload records keep order and bytes */
	uint64_t seq = 0, rseq = 0;
	for (int round = 0; round < 200; round++) {
		for (int k = 0; k < 7; k++) {
			uint32_t len = (seq % 2) ? (uint32_t)(seq % 300) : 0;
			d = shf_ring_reserve(&p, len, SHF_REC_MSG);
			if (!d)
				break;
			t_pattern_fill(d, len, seq++);
		}
		shf_ring_publish(&p);
		while (shf_ring_peek(&c, &v) == 1) {
			CHECK(t_view_inside(&c, &v));
			CHECK(v.len == ((rseq % 2) ? rseq % 300 : 0));
			CHECKF(t_pattern_check(v.data, v.len, rseq) < 0, "seq %" PRIu64, rseq);
			rseq++;
		}
		shf_ring_release(&c);
	}
	CHECK(seq == rseq && seq > 1000);
	CHECK(p.err == 0 && c.err == 0);

	t_guarded_close(&g);
	return 0;
}
