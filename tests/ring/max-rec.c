/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/max-rec.c - the largest record.
 *
 * A record plus the worst pad in front of it must fit in the array, so the
 * largest payload of a ring of `size` bytes is size/2 - 8.  Check the
 * formula, that init and layout refuse more, that reserve refuses longer
 * records without breaking the ring, that a maximum record fits into an
 * empty ring at every offset, and that a configured max_rec below the
 * maximum is enforced on both sides.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

int main(void)
{
	struct t_guarded g;
	struct shf_ring p, c;
	struct shf_ring_view v;

	/* the formula and the size rules */
	CHECK(shf_ring_max_payload(4096) == 2040);
	CHECK(shf_ring_max_payload(1u << 20) == (1u << 19) - 8);
	CHECK(shf_ring_max_payload(SHF_RING_MAX_BYTES) == SHF_RING_MAX_BYTES / 2 - 8);
	CHECK(shf_ring_size_ok(SHF_RING_MIN_BYTES) && shf_ring_size_ok(SHF_RING_MAX_BYTES));
	CHECK(!shf_ring_size_ok(0) && !shf_ring_size_ok(2048) && !shf_ring_size_ok(4097));
	CHECK(!shf_ring_size_ok(6144) && !shf_ring_size_ok((uint64_t)SHF_RING_MAX_BYTES * 2));

	t_guarded_open(&g, SIZE);
	CHECK(shf_ring_init(&p, g.ctl, g.data, SIZE, 2041, true) == -EINVAL);
	CHECK(shf_ring_init(&p, g.ctl, g.data, 2048, 1000, true) == -EINVAL);
	CHECK(shf_ring_init(&p, g.ctl, g.data, 4095, 1000, true) == -EINVAL);
	struct shf_shm_layout l;
	CHECK(shf_shm_layout(SIZE, 2041, &l) == -EINVAL);
	CHECK(shf_shm_layout(SIZE, 2040, &l) == 0);

	t_guarded_views(&g, 2040, &p, &c);
	/* too long: NULL, and the ring is not broken by the attempt */
	CHECK(shf_ring_reserve(&p, 2041, SHF_REC_MSG) == NULL && p.err == 0);
	CHECK(shf_ring_reserve(&p, UINT32_MAX, SHF_REC_MSG) == NULL && p.err == 0);
	CHECK(!shf_ring_pending(&p));

	/* a maximum record into an empty ring at every offset: it always
	 * fits (the pad in front of it is < 2048 bytes), and lies inside */
	uint64_t seq = 0;
	for (uint64_t start = 0; start < SIZE; start += 8) {
		t_guarded_views(&g, 2040, &p, &c);
		for (uint64_t i = 0; i < start / 8; i++)
			CHECK(shf_ring_reserve(&p, 0, SHF_REC_MARK));
		shf_ring_publish(&p);
		while (shf_ring_peek(&c, &v) == 1)
			;
		shf_ring_release(&c);
		uint8_t *d = shf_ring_reserve(&p, 2040, SHF_REC_MSG);
		CHECKF(d != NULL, "offset %" PRIu64, start);
		uint64_t want = start + 2048 <= SIZE ? start : 0;
		CHECK(d == g.data + want + 8);
		t_pattern_fill(d, 2040, seq);
		/* a second one fits only where the first started at 0 and left
		 * exactly half the ring */
		uint8_t *d2 = shf_ring_reserve(&p, 2040, SHF_REC_MSG);
		CHECK((d2 != NULL) == (start == 0 || start == 2048));
		if (d2)
			t_pattern_fill(d2, 2040, seq + 1);
		CHECK(p.err == 0);
		shf_ring_publish(&p);
		CHECK(shf_ring_peek(&c, &v) == 1);
		CHECK(v.len == 2040 && t_view_inside(&c, &v));
		CHECK(t_pattern_check(v.data, v.len, seq) < 0);
		if (d2) {
			CHECK(shf_ring_peek(&c, &v) == 1);
			CHECK(v.len == 2040 && t_view_inside(&c, &v));
			CHECK(t_pattern_check(v.data, v.len, seq + 1) < 0);
		}
		CHECK(shf_ring_peek(&c, &v) == 0);
		shf_ring_release(&c);
		seq += 2;
	}

	/* back-to-back maximum records stream through, one at a time */
	t_guarded_views(&g, 2040, &p, &c);
	for (int i = 0; i < 100; i++) {
		uint8_t *d = shf_ring_reserve(&p, 2040, SHF_REC_MSG);
		CHECK(d);
		t_pattern_fill(d, 2040, 1000 + (uint64_t)i);
		shf_ring_publish(&p);
		CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 2040);
		CHECK(t_pattern_check(v.data, 2040, 1000 + (uint64_t)i) < 0);
		shf_ring_release(&c);
	}

	/* a configured limit below the maximum: reserve refuses more, and a
	 * consumer with that limit rejects a longer record as corrupt */
	CHECK(shf_ring_init(&p, g.ctl, g.data, SIZE, 100, true) == 0);
	shf_ring_init_producer(&p);
	CHECK(shf_ring_init(&c, g.ctl, g.data, SIZE, 100, false) == 0);
	shf_ring_init_consumer(&c);
	CHECK(shf_ring_reserve(&p, 101, SHF_REC_MSG) == NULL && p.err == 0);
	CHECK(shf_ring_reserve(&p, 100, SHF_REC_MSG) != NULL);
	shf_ring_publish(&p);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 100);
	shf_ring_release(&c);
	struct shf_ring big; /* a producer that believes in a larger limit */
	CHECK(shf_ring_init(&big, g.ctl, g.data, SIZE, 2040, false) == 0);
	shf_ring_init_producer(&big);
	CHECK(shf_ring_reserve(&big, 101, SHF_REC_MSG) != NULL);
	shf_ring_publish(&big);
	CHECK(shf_ring_peek(&c, &v) == -EBADMSG && c.err == -EBADMSG);

	t_guarded_close(&g);
	return 0;
}
