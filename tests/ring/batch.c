/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/batch.c - batch publish and batch release.
 *
 * Many reserves become visible with one publish (one store of head): the
 * consumer sees none of them before and all of them, in order, after.
 * Likewise many peeks are given back with one release (one store of tail):
 * the producer gains no space before it.  shf_ring_unreserve_all() drops an
 * unpublished batch without a trace.
 */
#include "tests/ring/ring-test.h"

#define SIZE 65536u

int main(void)
{
	struct t_guarded g;
	struct shf_ring p, c;
	struct shf_ring_view v;
	uint64_t seq = 0, rseq = 0, rng = 12345;

	t_guarded_open(&g, SIZE);
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);

	for (int round = 0; round < 300; round++) {
		uint64_t head0 = atomic_load(&g.ctl->head);
		uint64_t batch = 1 + t_below(&rng, 200), n = 0;
		CHECK(!shf_ring_pending(&p));
		for (; n < batch; n++) {
			uint32_t len = (uint32_t)t_below(&rng, 600);
			uint8_t *d = shf_ring_reserve(&p, len, SHF_REC_MSG);
			if (!d)
				break;
			t_pattern_fill(d, len, seq + n);
			/* nothing is visible while the batch is open */
			if (n % 16 == 0) {
				CHECK(atomic_load(&g.ctl->head) == head0);
				CHECK(shf_ring_peek(&c, &v) == 0);
			}
		}
		CHECK(p.err == 0 && n > 0);
		CHECK(shf_ring_pending(&p));
		CHECK(atomic_load(&g.ctl->head) == head0);
		CHECK(shf_ring_peek(&c, &v) == 0);
		CHECK(shf_ring_used(&c) == 0);

		CHECK(!shf_ring_publish(&p)); /* nobody sleeps: no bell */
		CHECK(!shf_ring_pending(&p));
		CHECK(atomic_load(&g.ctl->head) == p.pos);
		seq += n;

		/* all of it is visible now, in order; take it in a few release
		 * batches and check tail moves only at a release */
		while (rseq < seq) {
			uint64_t tail0 = atomic_load(&g.ctl->tail);
			uint64_t take = 1 + t_below(&rng, 50);
			uint64_t free0 = shf_ring_prod_free(&p);
			for (uint64_t k = 0; k < take && rseq < seq; k++) {
				CHECK(shf_ring_peek(&c, &v) == 1);
				CHECK(t_view_inside(&c, &v));
				CHECKF(t_pattern_check(v.data, v.len, rseq) < 0,
				       "seq %" PRIu64, rseq);
				rseq++;
			}
			CHECK(atomic_load(&g.ctl->tail) == tail0);
			CHECK(shf_ring_prod_free(&p) == free0);
			CHECK(!shf_ring_release(&c));
			CHECK(atomic_load(&g.ctl->tail) == c.pos);
			CHECK(shf_ring_prod_free(&p) > free0);
		}
		CHECK(shf_ring_peek(&c, &v) == 0);
		CHECK(shf_ring_used(&c) == 0);
	}

	/* An unpublished batch can be dropped: nothing reaches the consumer,
	 * head does not move, and the next batch reuses the same space. */
	uint64_t head0 = atomic_load(&g.ctl->head);
	uint8_t *first = shf_ring_reserve(&p, 100, SHF_REC_MSG);
	CHECK(first);
	for (int i = 0; i < 10; i++)
		CHECK(shf_ring_reserve(&p, 50, SHF_REC_MSG));
	shf_ring_unreserve_all(&p);
	CHECK(!shf_ring_pending(&p));
	CHECK(!shf_ring_publish(&p));
	CHECK(atomic_load(&g.ctl->head) == head0);
	CHECK(shf_ring_peek(&c, &v) == 0);
	uint8_t *again = shf_ring_reserve(&p, 100, SHF_REC_MSG);
	CHECK(again == first);
	t_pattern_fill(again, 100, 777);
	shf_ring_publish(&p);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 100 && t_pattern_check(v.data, 100, 777) < 0);
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);

	/* A batch that fills the ring completely is published in one go. */
	uint64_t n = 0;
	while (shf_ring_reserve(&p, 0, SHF_REC_MSG))
		n++;
	CHECK(shf_ring_prod_free(&p) == 0);
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_publish(&p);
	CHECK(shf_ring_used(&c) == SIZE);
	for (uint64_t i = 0; i < n; i++)
		CHECK(shf_ring_peek(&c, &v) == 1);
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);
	CHECK(p.err == 0 && c.err == 0);

	printf("batch: %" PRIu64 " records\n", seq);
	t_guarded_close(&g);
	return 0;
}
