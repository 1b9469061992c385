/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/wrap.c - wrap-around at every offset.
 *
 * For every 8-byte start offset of a 4 KiB ring and records of several
 * sizes (0 up to max_rec), run the ring for several laps with the consumer
 * sometimes behind and sometimes caught up, and check that:
 *   - every record lands exactly where the layout rule says (contiguous,
 *     a PAD to the end of the array when it would not fit, then offset 0);
 *   - the consumer gets every record once, in order, intact, inside the
 *     array (guard pages on both sides of the data array);
 *   - the 64-bit free-running indices also survive their own wrap at 2^64.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

/* Where a record of `need` bytes starts when the producer is at `pos`:
 * the layout rule, computed independently of ring.h. */
static uint64_t place(uint64_t *pos, uint64_t need)
{
	uint64_t off = *pos % SIZE;
	if (off + need > SIZE) {
		*pos += SIZE - off; /* pad to the end */
		off = 0;
	}
	*pos += need;
	return off;
}

struct run {
	struct shf_ring p, c;
	uint64_t ppos, cpos; /* expected positions (mirror of the rule) */
	uint64_t pseq, cseq; /* next sequence number to send / to receive */
	uint32_t len;
};

/* Produce up to `max` records; returns how many went in. */
static uint64_t produce(struct run *x, uint64_t max)
{
	uint64_t n = 0;
	for (; n < max; n++) {
		uint8_t *d = shf_ring_reserve(&x->p, x->len, SHF_REC_MSG);
		if (!d)
			break;
		uint64_t want = place(&x->ppos, shf_ring_rec_bytes(x->len));
		CHECKF(d == x->p.data + want + SHF_RING_HDR_BYTES,
		       "len %u: record at %td, expected %" PRIu64, x->len,
		       d - x->p.data - SHF_RING_HDR_BYTES, want);
		t_pattern_fill(d, x->len, x->pseq++);
	}
	CHECK(x->p.err == 0);
	CHECK(x->p.pos == x->ppos);
	shf_ring_publish(&x->p);
	return n;
}

/* Consume up to `max` records, verifying them; returns how many. */
static uint64_t consume(struct run *x, uint64_t max)
{
	struct shf_ring_view v;
	uint64_t n = 0;
	for (; n < max; n++) {
		int rc = shf_ring_peek(&x->c, &v);
		CHECKF(rc >= 0, "peek: %d", rc);
		if (rc == 0)
			break;
		uint64_t want = place(&x->cpos, shf_ring_rec_bytes(x->len));
		CHECK(t_view_inside(&x->c, &v));
		CHECK(v.data == x->c.data + want + SHF_RING_HDR_BYTES);
		CHECK(v.len == x->len && v.kind == SHF_REC_MSG);
		CHECKF(t_pattern_check(v.data, v.len, x->cseq) < 0, "len %u seq %" PRIu64,
		       x->len, x->cseq);
		x->cseq++;
	}
	shf_ring_release(&x->c);
	return n;
}

/* Run a few laps from wherever the ring is now. */
static void laps(struct run *x)
{
	uint64_t start = x->ppos;
	int round = 0;
	while (x->ppos - start < 3 * SIZE) {
		produce(x, UINT64_MAX); /* fill it */
		/* then alternately drain half (the producer wraps into a ring that
		 * is not empty) and drain all (it wraps into an empty one) */
		uint64_t inflight = x->pseq - x->cseq;
		consume(x, round++ % 2 ? inflight : (inflight + 1) / 2);
		produce(x, 3);
		consume(x, UINT64_MAX);
		CHECK(x->pseq == x->cseq);
		CHECK(shf_ring_used(&x->c) == 0);
	}
}

int main(void)
{
	static const uint32_t lens[] = {0, 1, 7, 8, 9, 100, 1000, 2039, 2040};
	struct t_guarded g;
	t_guarded_open(&g, SIZE);
	uint32_t max_rec = shf_ring_max_payload(SIZE);
	CHECK(max_rec == 2040);

	uint64_t scenarios = 0;
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (uint64_t start = 0; start < SIZE; start += SHF_RING_ALIGN) {
			struct run x = {.len = lens[li]};
			t_guarded_views(&g, max_rec, &x.p, &x.c);
			/* walk both sides to `start` through the API: zero-length
			 * fillers, each 8 bytes, consumed and released */
			for (uint64_t i = 0; i < start / 8; i++)
				CHECK(shf_ring_reserve(&x.p, 0, SHF_REC_MARK));
			shf_ring_publish(&x.p);
			struct shf_ring_view v;
			for (uint64_t i = 0; i < start / 8; i++)
				CHECK(shf_ring_peek(&x.c, &v) == 1 && v.len == 0);
			CHECK(shf_ring_peek(&x.c, &v) == 0);
			shf_ring_release(&x.c);
			x.ppos = x.cpos = start;
			laps(&x);
			CHECK(x.p.err == 0 && x.c.err == 0);
			scenarios++;
		}
	}

	/* The indices are free-running 64-bit counters: start just below 2^64
	 * (as if after 2^64 bytes of traffic) and run across the wrap. */
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		uint64_t start = UINT64_MAX - 2 * SIZE + 1 - 8 * li; /* 8-aligned */
		atomic_store(&g.ctl->head, start);
		atomic_store(&g.ctl->tail, start);
		struct run x = {.len = lens[li]};
		CHECK(shf_ring_init(&x.p, g.ctl, g.data, SIZE, max_rec, false) == 0);
		shf_ring_init_producer(&x.p);
		CHECK(shf_ring_init(&x.c, g.ctl, g.data, SIZE, max_rec, false) == 0);
		shf_ring_init_consumer(&x.c);
		CHECK(x.p.err == 0 && x.c.err == 0);
		x.ppos = x.cpos = start;
		laps(&x);
		CHECK(atomic_load(&g.ctl->head) < start); /* it did wrap */
		CHECK(x.p.err == 0 && x.c.err == 0);
		scenarios++;
	}

	printf("wrap: %" PRIu64 " scenarios passed\n", scenarios);
	t_guarded_close(&g);
	return 0;
}
