/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/unpeek.c - a consumer that cannot take a record yet puts it
 * back with shf_ring_unpeek(): the next peek returns the same record (same
 * place, length, kind, bytes), a release in between gives back only the
 * records before it, and it works for zero-length records and for the
 * first record after a PAD.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

static void put(struct shf_ring *p, uint32_t len, uint32_t kind, uint64_t seq)
{
	uint8_t *d = shf_ring_reserve(p, len, kind);
	CHECK(d);
	t_pattern_fill(d, len, seq);
}

static void get(struct shf_ring *c, struct shf_ring_view *v, uint32_t len, uint32_t kind,
		uint64_t seq)
{
	CHECK(shf_ring_peek(c, v) == 1);
	CHECK(t_view_inside(c, v));
	CHECKF(v->len == len && v->kind == kind, "len %u kind %u", v->len, v->kind);
	CHECK(t_pattern_check(v->data, len, seq) < 0);
}

int main(void)
{
	struct t_guarded g;
	struct shf_ring p, c;
	struct shf_ring_view v, w;

	t_guarded_open(&g, SIZE);
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);

	/* peek, unpeek, peek: the same record */
	put(&p, 40, SHF_REC_MSG, 1);
	put(&p, 0, SHF_REC_MARK, 2);
	put(&p, 9, SHF_REC_MSG, 3);
	shf_ring_publish(&p);
	get(&c, &v, 40, SHF_REC_MSG, 1);
	shf_ring_unpeek(&c, &v);
	get(&c, &w, 40, SHF_REC_MSG, 1);
	CHECK(w.data == v.data);

	/* peek two, unpeek the second, release: only the first is given back */
	get(&c, &v, 0, SHF_REC_MARK, 2);
	shf_ring_unpeek(&c, &v); /* zero-length record */
	uint64_t tail0 = atomic_load(&g.ctl->tail);
	shf_ring_release(&c);
	CHECK(atomic_load(&g.ctl->tail) == tail0 + shf_ring_rec_bytes(40));
	get(&c, &w, 0, SHF_REC_MARK, 2);
	CHECK(w.data == v.data);
	get(&c, &v, 9, SHF_REC_MSG, 3);
	shf_ring_unpeek(&c, &v);
	/* a release after an unpeek gives back only the records before it */
	shf_ring_release(&c);
	CHECK(atomic_load(&g.ctl->tail) ==
	      tail0 + shf_ring_rec_bytes(40) + shf_ring_rec_bytes(0));
	get(&c, &w, 9, SHF_REC_MSG, 3);
	CHECK(w.data == v.data);
	CHECK(shf_ring_peek(&c, &v) == 0);
	shf_ring_release(&c);
	CHECK(shf_ring_used(&c) == 0);

	/* the first record after a PAD: move both sides to offset 3000, wrap
	 * with a 1500-byte record (a 1096-byte pad, the record at offset 0),
	 * unpeek it, peek it again at offset 0 */
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);
	put(&p, 1992, SHF_REC_MSG, 10); /* [0, 2000) */
	put(&p, 992, SHF_REC_MSG, 11);  /* [2000, 3000) */
	shf_ring_publish(&p);
	get(&c, &v, 1992, SHF_REC_MSG, 10);
	get(&c, &v, 992, SHF_REC_MSG, 11);
	shf_ring_release(&c);
	CHECK(atomic_load(&g.ctl->tail) == 3000);
	put(&p, 1500, SHF_REC_MSG, 12);
	shf_ring_publish(&p);
	get(&c, &v, 1500, SHF_REC_MSG, 12);
	CHECK(v.data == g.data + 8);
	shf_ring_unpeek(&c, &v);
	get(&c, &w, 1500, SHF_REC_MSG, 12);
	CHECK(w.data == v.data);
	shf_ring_unpeek(&c, &w);
	/* releasing now gives back the pad only: the record stays */
	shf_ring_release(&c);
	CHECK(atomic_load(&g.ctl->tail) == SIZE);
	get(&c, &w, 1500, SHF_REC_MSG, 12);
	CHECK(w.data == v.data);
	shf_ring_release(&c);
	CHECK(atomic_load(&g.ctl->tail) == SIZE + shf_ring_rec_bytes(1500));
	CHECK(shf_ring_peek(&c, &v) == 0);

	/* unpeek many times in a stream: every record is seen twice by
	 * peek and delivered once, in order */
	uint64_t seq = 100, rseq = 100;
	for (int round = 0; round < 500; round++) {
		for (int k = 0; k < 5; k++) {
			uint32_t len = (uint32_t)(seq * 7 % 400);
			uint8_t *d = shf_ring_reserve(&p, len, SHF_REC_MSG);
			if (!d)
				break;
			t_pattern_fill(d, len, seq++);
		}
		shf_ring_publish(&p);
		int rc;
		while ((rc = shf_ring_peek(&c, &v)) == 1) {
			shf_ring_unpeek(&c, &v);
			get(&c, &w, (uint32_t)(rseq * 7 % 400), SHF_REC_MSG, rseq);
			CHECK(w.data == v.data);
			rseq++;
		}
		CHECK(rc == 0);
		shf_ring_release(&c);
	}
	CHECK(seq == rseq && seq > 2000);
	CHECK(p.err == 0 && c.err == 0);

	t_guarded_close(&g);
	return 0;
}
