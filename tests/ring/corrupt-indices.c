/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/corrupt-indices.c - a hostile peer scribbles on head or tail.
 *
 * Consumer side (head written by the producer): head beyond the ring,
 * misaligned, going backwards.  Producer side (tail written by the
 * consumer): tail ahead of what was published, going backwards,
 * misaligned.  Attaching to a ring with corrupt indices.  Every case must
 * leave r->err negative (sticky: later calls fail the same way, the arm
 * functions refuse to sleep) and must not touch memory outside the data
 * array, which has PROT_NONE pages on both sides.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

static struct t_guarded g;
static struct shf_ring p, c;
static int cases;

/* Fresh ring; the producer publishes up to `n` 24-byte records (170 fit)
 * and the consumer takes and releases `taken` of them. */
static void setup(int n, int taken)
{
	struct shf_ring_view v;
	t_guarded_views(&g, shf_ring_max_payload(SIZE), &p, &c);
	for (int i = 0; i < n; i++) {
		uint8_t *d = shf_ring_reserve(&p, 16, SHF_REC_MSG);
		if (!d)
			break; /* full: 170 records */
		t_pattern_fill(d, 16, (uint64_t)i);
	}
	CHECK(p.err == 0);
	shf_ring_publish(&p);
	for (int i = 0; i < taken; i++)
		CHECK(shf_ring_peek(&c, &v) == 1);
	shf_ring_release(&c);
}

/* The consumer must now report `want` and stay broken.  Records it has
 * already seen published (below its cached head) are still delivered: it
 * reads head again only once it has caught up with them. */
static void consumer_broken(int want, const char *what)
{
	struct shf_ring_view v;
	while (c.pos != c.peer)
		CHECKF(shf_ring_peek(&c, &v) == 1, "%s: cached record lost", what);
	uint64_t pos = c.pos, done = c.done;
	int rc = shf_ring_peek(&c, &v);
	CHECKF(rc == want && c.err == want, "%s: peek %d err %d, want %d", what, rc, c.err, want);
	CHECKF(shf_ring_peek(&c, &v) == want, "%s: not sticky", what);
	CHECKF(!shf_ring_cons_arm(&c), "%s: a broken consumer must not sleep", what);
	CHECKF(atomic_load(&g.ctl->cons_wait) == 0, "%s: flag left armed", what);
	CHECKF(c.pos == pos && c.done == done, "%s: consumer moved", what);
	cases++;
}

/* The producer must now report `want` and stay broken. */
static void producer_broken(int want, const char *what)
{
	CHECKF(shf_ring_reserve(&p, 16, SHF_REC_MSG) == NULL, "%s: reserve worked", what);
	CHECKF(p.err == want, "%s: err %d, want %d", what, p.err, want);
	CHECKF(shf_ring_reserve(&p, 0, SHF_REC_MSG) == NULL && p.err == want, "%s: not sticky",
	       what);
	CHECKF(!shf_ring_prod_arm(&p, 16), "%s: a broken producer must not sleep", what);
	CHECKF(atomic_load(&g.ctl->prod_wait) == 0, "%s: flag left armed", what);
	cases++;
}

int main(void)
{
	t_guarded_open(&g, SIZE);
	uint64_t h;

	/* ---- consumer side: head */
	setup(10, 4);
	atomic_store(&g.ctl->head, atomic_load(&g.ctl->tail) + SIZE + 8);
	consumer_broken(-EPROTO, "head beyond the ring");

	setup(10, 10);
	atomic_store(&g.ctl->head, atomic_load(&g.ctl->tail) + SIZE + 8);
	consumer_broken(-EPROTO, "head beyond the ring, consumer caught up");

	setup(10, 10);
	atomic_store(&g.ctl->head, UINT64_MAX & ~(uint64_t)7);
	consumer_broken(-EPROTO, "head far ahead");

	setup(0, 0);
	atomic_store(&g.ctl->head, 12);
	consumer_broken(-EPROTO, "head misaligned");

	setup(10, 10);
	atomic_store(&g.ctl->head, atomic_load(&g.ctl->head) + 4);
	consumer_broken(-EPROTO, "head misaligned after records");

	setup(10, 10); /* consumer has seen head = 240 */
	h = atomic_load(&g.ctl->head);
	atomic_store(&g.ctl->head, h - 24);
	consumer_broken(-EPROTO, "head going backwards by one record");

	setup(10, 10);
	atomic_store(&g.ctl->head, 0);
	consumer_broken(-EPROTO, "head reset to 0");

	setup(10, 3); /* peeked 3 and released, 7 still to read */
	{
		struct shf_ring_view v;
		/* peek the rest: the consumer now knows head */
		for (int i = 0; i < 7; i++)
			CHECK(shf_ring_peek(&c, &v) == 1);
		atomic_store(&g.ctl->head, c.done + 8); /* behind what was peeked */
		consumer_broken(-EPROTO, "head behind the peeked records");
	}

	/* arming notices a corrupt head too */
	setup(2, 2);
	atomic_store(&g.ctl->head, atomic_load(&g.ctl->head) + SIZE * 2);
	CHECK(!shf_ring_cons_arm(&c) && c.err == -EPROTO);
	CHECK(atomic_load(&g.ctl->cons_wait) == 0);
	cases++;

	/* ---- producer side: tail */
	setup(200, 0); /* 200 * 24 > 4096: 170 fitted, ring full */
	CHECK(shf_ring_prod_free(&p) < 24);
	atomic_store(&g.ctl->tail, atomic_load(&g.ctl->head) + 24);
	producer_broken(-EPROTO, "tail ahead of head");

	setup(200, 0);
	atomic_store(&g.ctl->tail, atomic_load(&g.ctl->head) + SIZE * 4);
	producer_broken(-EPROTO, "tail far ahead");

	setup(200, 100); /* the producer has not looked at tail since */
	CHECK(shf_ring_reserve(&p, 16, SHF_REC_MSG)); /* reads tail = 2400 */
	CHECK(p.peer == 2400);
	for (;;) /* fill again so the next reserve must re-read tail */
		if (!shf_ring_reserve(&p, 16, SHF_REC_MSG))
			break;
	shf_ring_publish(&p);
	atomic_store(&g.ctl->tail, 2400 - 24);
	producer_broken(-EPROTO, "tail going backwards");

	setup(200, 100);
	atomic_store(&g.ctl->tail, 2400 + 4);
	producer_broken(-EPROTO, "tail misaligned");

	setup(200, 170);
	while (shf_ring_reserve(&p, 16, SHF_REC_MSG)) /* fill: reads tail */
		;
	shf_ring_publish(&p);
	CHECK(p.peer == 170 * 24);
	atomic_store(&g.ctl->tail, 0);
	producer_broken(-EPROTO, "tail reset to 0");

	/* the arm path notices a corrupt tail too */
	setup(200, 0);
	atomic_store(&g.ctl->tail, UINT64_MAX & ~(uint64_t)7);
	CHECK(!shf_ring_prod_arm(&p, 16) && p.err == -EPROTO);
	CHECK(atomic_load(&g.ctl->prod_wait) == 0);
	cases++;

	/* ---- attaching: shf_ring_init(zero=false) validates the indices */
	struct shf_ring x;
	uint32_t mr = shf_ring_max_payload(SIZE);
	atomic_store(&g.ctl->tail, 64);
	atomic_store(&g.ctl->head, 64 + SIZE + 8);
	CHECK(shf_ring_init(&x, g.ctl, g.data, SIZE, mr, false) == -EPROTO);
	atomic_store(&g.ctl->head, 60);
	CHECK(shf_ring_init(&x, g.ctl, g.data, SIZE, mr, false) == -EPROTO);
	atomic_store(&g.ctl->head, 72);
	atomic_store(&g.ctl->tail, 68);
	CHECK(shf_ring_init(&x, g.ctl, g.data, SIZE, mr, false) == -EPROTO);
	atomic_store(&g.ctl->head, 64);
	atomic_store(&g.ctl->tail, 72); /* tail ahead of head */
	CHECK(shf_ring_init(&x, g.ctl, g.data, SIZE, mr, false) == -EPROTO);
	cases += 4;
	/* indices changed between shf_ring_init and shf_ring_init_*: the
	 * views are broken, not trusting */
	atomic_store(&g.ctl->head, 64);
	atomic_store(&g.ctl->tail, 64);
	CHECK(shf_ring_init(&x, g.ctl, g.data, SIZE, mr, false) == 0);
	atomic_store(&g.ctl->tail, 68);
	shf_ring_init_consumer(&x);
	CHECK(x.err == -EPROTO);
	{
		struct shf_ring_view v;
		CHECK(shf_ring_peek(&x, &v) == -EPROTO);
	}
	atomic_store(&g.ctl->tail, 64);
	CHECK(shf_ring_init(&x, g.ctl, g.data, SIZE, mr, false) == 0);
	atomic_store(&g.ctl->head, 64 + 2 * SIZE);
	shf_ring_init_producer(&x);
	CHECK(x.err == -EPROTO && shf_ring_reserve(&x, 0, SHF_REC_MSG) == NULL);
	cases += 2;

	printf("corrupt-indices: %d cases\n", cases);
	t_guarded_close(&g);
	return 0;
}
