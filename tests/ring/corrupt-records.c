/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/corrupt-records.c - a hostile producer writes bad records.
 *
 * A record longer than max_rec, one longer than what was published, one
 * that would cross the end of the array, PAD records with a wrong length
 * or beyond the published bytes: each must make shf_ring_peek() fail with
 * -EBADMSG (sticky) instead of returning it.  Then a fuzz loop scribbles
 * random bytes over records and head and checks that every record the
 * consumer does accept lies inside the data array, which has PROT_NONE
 * pages on both sides: an out-of-bounds read faults (and ASan reports).
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

static struct t_guarded g;
static struct shf_ring p, c;
static const uint32_t max_rec = 1000;
static int cases;

/* Fresh ring with both sides at `off` (8-aligned, reached through the API
 * with zero-length records). */
static void at(uint64_t off)
{
	struct shf_ring_view v;
	t_guarded_views(&g, max_rec, &p, &c);
	for (uint64_t i = 0; i < off / 8; i++)
		CHECK(shf_ring_reserve(&p, 0, SHF_REC_MARK));
	shf_ring_publish(&p);
	while (shf_ring_peek(&c, &v) == 1)
		;
	shf_ring_release(&c);
	CHECK(c.err == 0 && c.pos == off);
}

/* Write a raw record header at array offset `off`. */
static void raw(uint64_t off, uint32_t len, uint32_t kind)
{
	struct shf_ring_rec h = {len, kind};
	memcpy(g.data + off, &h, sizeof(h));
}

/* Publish `bytes` past the consumer's position as if the producer did. */
static void publish_raw(uint64_t bytes)
{
	atomic_store(&g.ctl->head, c.pos + bytes);
}

static void expect_bad(const char *what, int line)
{
	struct shf_ring_view v = {0};
	int rc = shf_ring_peek(&c, &v);
	if (rc != -EBADMSG || c.err != -EBADMSG) {
		fprintf(stderr, "corrupt-records.c:%d: %s: peek %d err %d (len %u)\n", line, what,
			rc, c.err, v.len);
		exit(1);
	}
	CHECKF(shf_ring_peek(&c, &v) == -EBADMSG, "%s: not sticky", what);
	CHECKF(!shf_ring_cons_arm(&c), "%s: a broken consumer must not sleep", what);
	cases++;
}
#define EXPECT_BAD(what) expect_bad((what), __LINE__)

/* Read every byte of a view: faults if it reaches a guard page. */
static uint64_t touch(const struct shf_ring_view *v)
{
	uint64_t sum = 0;
	const volatile uint8_t *b = v->data;
	for (uint32_t i = 0; i < v->len; i++)
		sum += b[i];
	return sum;
}

static void fuzz(void)
{
	uint64_t rng = 0x243f6a8885a308d3ull;
	uint64_t broken = 0, records = 0, sum = 0;
	for (int round = 0; round < 20000; round++) {
		/* valid traffic from a random offset, then corruption */
		at(t_below(&rng, SIZE / 8) * 8);
		int n = (int)t_below(&rng, 12);
		for (int i = 0; i < n; i++) {
			uint32_t len = (uint32_t)t_below(&rng, max_rec + 1);
			uint8_t *d = shf_ring_reserve(&p, len, SHF_REC_MSG);
			if (!d)
				break;
			t_pattern_fill(d, len, (uint64_t)i);
		}
		shf_ring_publish(&p);
		int hits = 1 + (int)t_below(&rng, 4);
		for (int k = 0; k < hits; k++) {
			switch (t_below(&rng, 5)) {
			case 0: /* a random byte anywhere */
				g.data[t_below(&rng, SIZE)] = (uint8_t)t_xorshift(&rng);
				break;
			case 1: /* a random word at an aligned (header) offset */
			case 2: {
				uint64_t off = (c.pos + 8 * t_below(&rng, 64)) % SIZE;
				uint32_t w = (uint32_t)t_xorshift(&rng);
				if (t_below(&rng, 2))
					w %= 2 * SIZE; /* plausible lengths are nastier */
				memcpy(g.data + off + 4 * t_below(&rng, 2), &w, 4);
				break;
			}
			case 3: /* a PAD header at an aligned offset */
				raw((c.pos + 8 * t_below(&rng, 64)) % SIZE,
				    (uint32_t)t_below(&rng, 2 * SIZE), SHF_REC_PAD);
				break;
			default: /* head moved within the ring, maybe misaligned */
				atomic_store(&g.ctl->head, c.pos + t_below(&rng, SIZE + 1));
				break;
			}
		}
		struct shf_ring_view v;
		int rc, guard = 0;
		while ((rc = shf_ring_peek(&c, &v)) == 1) {
			CHECK(t_view_inside(&c, &v));
			CHECK(v.len <= max_rec);
			sum += touch(&v);
			records++;
			CHECK(++guard <= (int)(SIZE / 8)); /* never more records than fit */
		}
		if (rc < 0) {
			CHECK(rc == -EBADMSG || rc == -EPROTO);
			CHECK(c.err == rc);
			broken++;
		} else {
			shf_ring_release(&c);
		}
	}
	/* the fuzzer must have exercised both outcomes */
	CHECKF(broken > 1000 && records > 10000,
	       "fuzz: %" PRIu64 " broken rounds, %" PRIu64 " records", broken, records);
	printf("fuzz: %" PRIu64 " broken rounds, %" PRIu64 " records accepted (sum %" PRIu64 ")\n",
	       broken, records, sum);
}

int main(void)
{
	t_guarded_open(&g, SIZE);
	struct shf_ring_view v;

	/* a record longer than max_rec, with plenty published */
	at(0);
	raw(0, max_rec + 1, SHF_REC_MSG);
	publish_raw(2048);
	EXPECT_BAD("len = max_rec + 1");
	at(512);
	raw(512, UINT32_MAX, SHF_REC_MSG);
	publish_raw(2048);
	EXPECT_BAD("len = UINT32_MAX");
	at(512);
	raw(512, UINT32_MAX - 6, SHF_REC_MSG); /* rec_bytes would wrap in 32 bits */
	publish_raw(2048);
	EXPECT_BAD("len near UINT32_MAX");

	/* a record longer than what was published */
	at(0);
	raw(0, 100, SHF_REC_MSG);
	publish_raw(104);
	EXPECT_BAD("record beyond head by 8 bytes");
	at(64);
	raw(64, 0, SHF_REC_MSG);
	raw(72, 16, SHF_REC_MSG);
	publish_raw(8 + 16);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 0); /* the first one is fine */
	EXPECT_BAD("second record beyond head");

	/* a record that would cross the end of the array: the bytes are
	 * published (head far enough), but the record must not wrap */
	at(SIZE - 16);
	raw(SIZE - 16, 64, SHF_REC_MSG);
	publish_raw(1024);
	EXPECT_BAD("record crosses the end");
	at(SIZE - 8);
	raw(SIZE - 8, 1, SHF_REC_MSG); /* needs 16, 8 left */
	publish_raw(64);
	EXPECT_BAD("1-byte record in the last 8 bytes");
	at(SIZE - 1000);
	raw(SIZE - 1000, 993, SHF_REC_MSG); /* 1008 bytes from SIZE-1000 */
	publish_raw(2000);
	EXPECT_BAD("record crosses the end by 8");
	/* the boundary case that is legal: ends exactly at the end */
	at(SIZE - 1000);
	raw(SIZE - 1000, 992, SHF_REC_MSG);
	publish_raw(1000);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 992 && t_view_inside(&c, &v));
	CHECK(v.data + v.len == g.data + SIZE);
	CHECK(shf_ring_peek(&c, &v) == 0 && c.err == 0);
	cases++;

	/* PAD records: must run exactly to the end, within what was published */
	at(1024);
	raw(1024, SIZE - 1024 - 8 - 8, SHF_REC_PAD); /* 8 short */
	publish_raw(SIZE);
	EXPECT_BAD("pad 8 bytes short of the end");
	at(1024);
	raw(1024, SIZE - 1024, SHF_REC_PAD); /* 8 long: past the end */
	publish_raw(SIZE);
	EXPECT_BAD("pad 8 bytes past the end");
	at(0);
	raw(0, 0, SHF_REC_PAD);
	publish_raw(64);
	EXPECT_BAD("zero-length pad at offset 0");
	at(2048);
	raw(2048, UINT32_MAX, SHF_REC_PAD);
	publish_raw(SIZE);
	EXPECT_BAD("pad with len UINT32_MAX");
	at(3000 & ~7u);
	raw(3000 & ~7u, SIZE - (3000 & ~7u) - 8, SHF_REC_PAD); /* right length... */
	publish_raw(64);                                       /* ...not published */
	EXPECT_BAD("pad beyond head");
	/* a correct pad is skipped and the record at offset 0 comes next */
	at(SIZE - 64);
	raw(SIZE - 64, 56, SHF_REC_PAD);
	raw(0, 5, SHF_REC_MSG);
	memcpy(g.data + 8, "hello", 5);
	publish_raw(64 + 16);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 5 && !memcmp(v.data, "hello", 5));
	CHECK(v.data == g.data + 8);
	cases++;
	/* a pad followed by a pad at offset 0 (which claims the whole array) */
	at(SIZE - 64);
	raw(SIZE - 64, 56, SHF_REC_PAD);
	raw(0, SIZE - 8, SHF_REC_PAD);
	publish_raw(64 + 64);
	EXPECT_BAD("whole-array pad beyond head");

	/* kinds the ring does not know pass through for the owner to judge */
	at(128);
	raw(128, 0, 99);
	publish_raw(8);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.kind == 99 && v.len == 0);
	cases++;

	/* the header is read once: rewriting it after the peek does not
	 * change the view the consumer got */
	at(256);
	raw(256, 16, SHF_REC_MSG);
	publish_raw(24);
	CHECK(shf_ring_peek(&c, &v) == 1 && v.len == 16);
	raw(256, 4000, SHF_REC_PAD);
	CHECK(v.len == 16 && v.kind == SHF_REC_MSG);
	CHECK(c.pos == 256 + 24);
	cases++;

	fuzz();
	printf("corrupt-records: %d cases\n", cases);
	t_guarded_close(&g);
	return 0;
}
