/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/empty-full.c - an empty ring yields nothing, a full ring takes
 * nothing, and the boundary is exact: a 4 KiB ring holds exactly 4096 bytes
 * of records.  Also the doorbell flags at both boundaries: arming on an
 * empty (full) ring may sleep, the next publish (release) must wake it.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

/* Fill the ring with records of `len` bytes; returns how many fitted. */
static uint64_t fill(struct shf_ring *p, uint32_t len, uint64_t seq0)
{
	uint64_t n = 0;
	for (;;) {
		uint8_t *d = shf_ring_reserve(p, len, SHF_REC_MSG);
		if (!d)
			break;
		t_pattern_fill(d, len, seq0 + n);
		n++;
	}
	CHECK(p->err == 0);
	return n;
}

/* Consume everything, checking order and contents; returns the count. */
static uint64_t drain(struct shf_ring *c, uint32_t len, uint64_t seq0)
{
	struct shf_ring_view v;
	uint64_t n = 0;
	int rc;
	while ((rc = shf_ring_peek(c, &v)) == 1) {
		CHECK(t_view_inside(c, &v));
		CHECK(v.len == len && v.kind == SHF_REC_MSG);
		CHECKF(t_pattern_check(v.data, v.len, seq0 + n) < 0, "record %" PRIu64, n);
		n++;
	}
	CHECK(rc == 0);
	shf_ring_release(c);
	return n;
}

int main(void)
{
	struct t_guarded g;
	struct shf_ring p, c;
	struct shf_ring_view v;

	t_guarded_open(&g, SIZE);
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);

	/* empty: nothing to peek, nothing to release, nothing to publish */
	CHECK(shf_ring_peek(&c, &v) == 0);
	CHECK(shf_ring_cons_avail(&c) == 0);
	CHECK(!shf_ring_release(&c));
	CHECK(!shf_ring_publish(&p));
	CHECK(shf_ring_used(&c) == 0);
	CHECK(shf_ring_prod_free(&p) == SIZE);

	/* consumer arms on an empty ring: may sleep, and the flag is up */
	CHECK(shf_ring_cons_arm(&c));
	CHECK(atomic_load(&g.ctl->cons_wait) == 1);
	/* the producer's publish sees the flag, takes it and says "ring" */
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_MSG) != NULL);
	CHECK(shf_ring_publish(&p));
	CHECK(atomic_load(&g.ctl->cons_wait) == 0);
	/* a second publish with the flag down does not ring */
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_MSG) != NULL);
	CHECK(!shf_ring_publish(&p));
	/* with data present the consumer must not sleep, and leaves no flag */
	CHECK(!shf_ring_cons_arm(&c));
	CHECK(atomic_load(&g.ctl->cons_wait) == 0);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0);
	CHECK(shf_ring_peek(&c, &v) == 0);
	CHECK(!shf_ring_release(&c));

	/* full, with records that tile the array exactly: 16-byte records */
	uint64_t seq = 1000;
	uint64_t n = fill(&p, 8, seq);
	CHECKF(n == SIZE / 16, "%" PRIu64 " records of 16 bytes fitted", n);
	CHECK(shf_ring_prod_free(&p) == 0);
	/* not published: the consumer sees nothing yet */
	CHECK(shf_ring_peek(&c, &v) == 0);
	CHECK(shf_ring_used(&c) == 0);
	CHECK(!shf_ring_publish(&p));
	CHECK(shf_ring_used(&c) == SIZE);
	/* producer arms on a full ring: may sleep */
	CHECK(shf_ring_prod_arm(&p, 8));
	CHECK(atomic_load(&g.ctl->prod_wait) == 1);
	/* the consumer frees one record: its release must ring */
	CHECK(shf_ring_peek(&c, &v) == 1);
	CHECK(v.len == 8 && t_pattern_check(v.data, 8, seq) < 0);
	CHECK(shf_ring_release(&c));
	CHECK(atomic_load(&g.ctl->prod_wait) == 0);
	/* exactly one more record fits now */
	uint8_t *d = shf_ring_reserve(&p, 8, SHF_REC_MSG);
	CHECK(d != NULL);
	t_pattern_fill(d, 8, seq + n);
	CHECK(shf_ring_reserve(&p, 8, SHF_REC_MSG) == NULL && p.err == 0);
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_MSG) == NULL && p.err == 0);
	CHECK(!shf_ring_publish(&p));
	CHECK(drain(&c, 8, seq + 1) == n);
	CHECK(shf_ring_used(&c) == 0);
	/* with room, the producer must not sleep and leaves no flag */
	CHECK(!shf_ring_prod_arm(&p, 8));
	CHECK(atomic_load(&g.ctl->prod_wait) == 0);

	/* full with records that do not tile, from offset 0 of a fresh ring:
	 * 13 bytes -> 24-byte records.  170 fit (4080 bytes); the 171st would
	 * need a 16-byte pad plus 24. */
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);
	seq = 5000;
	n = fill(&p, 13, seq);
	CHECKF(n == SIZE / 24, "%" PRIu64 " records of 24 bytes fitted", n);
	CHECK(shf_ring_prod_free(&p) == SIZE % 24);
	shf_ring_publish(&p);
	/* a zero-length record (8 bytes) still fits in the 16 left */
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_MARK) != NULL);
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_MARK) != NULL);
	CHECK(shf_ring_reserve(&p, 0, SHF_REC_MARK) == NULL && p.err == 0);
	shf_ring_publish(&p);
	CHECK(shf_ring_used(&c) == SIZE);
	for (uint64_t i = 0; i < n; i++) {
		CHECK(shf_ring_peek(&c, &v) == 1);
		CHECK(v.len == 13 && t_pattern_check(v.data, 13, seq + i) < 0);
	}
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0 && v.kind == SHF_REC_MARK);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0 && v.kind == SHF_REC_MARK);
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);

	/* repeated fill/drain cycles keep the exact capacity across laps */
	for (int lap = 0; lap < 20; lap++) {
		uint32_t len = (uint32_t)(lap * 37 % 200);
		n = fill(&p, len, seq);
		uint64_t rb = shf_ring_rec_bytes(len);
		/* a ring's worth, minus less than one record, one pad (< rb)
		 * and one record plus its pad that did not fit (< 2 rb) */
		CHECK(n * rb <= SIZE && n * rb + 3 * rb > SIZE);
		shf_ring_publish(&p);
		CHECK(drain(&c, len, seq) == n);
		seq += n;
	}
	CHECK(p.err == 0 && c.err == 0);

	t_guarded_close(&g);
	return 0;
}
