/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/grow.c - growing the record reserved last (proto/ring.h,
 * shf_ring_grow_room(), shf_ring_grow(), shf_ring_set_len()): at every
 * 8-byte offset of a 4 KiB ring, the room is what is left before the end
 * of the array, under max_rec and within the free space the cached tail
 * shows; 0 when the record ends at the end of the array, when another was
 * reserved after it, and on a broken ring; the consumer reads the grown
 * record whole, with its bytes, and the next record after it.
 */
#include "tests/ring/ring-test.h"

#define SIZE 4096u

int main(void)
{
	struct t_guarded g;
	t_guarded_open(&g, SIZE);
	for (uint32_t max_rec = 64; max_rec <= shf_ring_max_payload(SIZE); max_rec *= 4) {
		for (uint64_t start = 0; start < SIZE; start += 8) {
			struct shf_ring p, c;
			CHECK(shf_ring_init(&p, g.ctl, g.data, SIZE, max_rec, true) == 0);
			shf_ring_init_producer(&p);
			CHECK(shf_ring_init(&c, g.ctl, g.data, SIZE, max_rec, false) == 0);
			shf_ring_init_consumer(&c);
			/* move both sides to `start` */
			p.pos = p.done = p.peer = start;
			atomic_store(&g.ctl->head, start);
			atomic_store(&g.ctl->tail, start);
			shf_ring_init_consumer(&c);

			uint8_t *rec = shf_ring_reserve(&p, 8, SHF_REC_MSG);
			CHECK(rec != NULL);
			memset(rec, 0xa0, 8);
			uint64_t end = (uint64_t)(rec - g.data) + 8; /* offset after it */
			uint32_t room = shf_ring_grow_room(&p, rec, 8);
			uint64_t want = end == SIZE ? 0 : SIZE - end;
			if (want > max_rec - 8)
				want = max_rec - 8;
			CHECKF(room == (uint32_t)want, "start %llu max_rec %u: room %u, expected %llu",
			       (unsigned long long)start, max_rec, room, (unsigned long long)want);
			uint32_t len = 8;
			if (room >= 16) {
				/* grow in two steps, writing the new bytes */
				shf_ring_grow(&p, 8);
				memset(rec + len, 0xa1, 8);
				len += 8;
				CHECK(shf_ring_grow_room(&p, rec, len) == room - 8);
				shf_ring_grow(&p, 8);
				memset(rec + len, 0xa2, 8);
				len += 8;
			}
			shf_ring_set_len(rec, len);
			/* not the last record any more: no room */
			uint8_t *next = shf_ring_reserve(&p, 0, SHF_REC_MARK);
			CHECK(next != NULL);
			CHECK(shf_ring_grow_room(&p, rec, len) == 0);
			CHECK(!shf_ring_publish(&p)); /* nobody armed: no bell */
			struct shf_ring_view v;
			CHECK(shf_ring_peek(&c, &v) == 1);
			CHECKF(v.len == len && v.data == rec, "start %llu: read %u bytes, grown to %u",
			       (unsigned long long)start, v.len, len);
			for (uint32_t i = 0; i < len; i++)
				CHECK(v.data[i] == (uint8_t)(0xa0 + i / 8));
			CHECK(shf_ring_peek(&c, &v) == 1);
			CHECK(v.kind == SHF_REC_MARK && v.len == 0);
			CHECK(shf_ring_peek(&c, &v) == 0);
			shf_ring_release(&c);
		}
	}

	/* the free space the cached tail shows bounds the room; a broken ring
	 * has none */
	struct shf_ring p;
	CHECK(shf_ring_init(&p, g.ctl, g.data, SIZE, shf_ring_max_payload(SIZE), true) == 0);
	shf_ring_init_producer(&p);
	/* the consumer is 3,200 bytes behind a producer at offset 104 */
	p.pos = p.done = SIZE + 104;
	p.peer = 1000;
	atomic_store(&g.ctl->head, SIZE + 104);
	atomic_store(&g.ctl->tail, 1000);
	uint8_t *b = shf_ring_reserve(&p, 8, SHF_REC_MSG);
	CHECK(b != NULL);
	uint32_t room = shf_ring_grow_room(&p, b, 8);
	CHECKF(room == ((SIZE - (SIZE + 120 - 1000)) & ~7u), "room %u with %llu bytes used", room,
	       (unsigned long long)(p.pos - p.peer));
	p.err = -EPROTO;
	CHECK(shf_ring_grow_room(&p, b, 8) == 0);
	t_guarded_close(&g);
	fprintf(stderr, "ring-grow: ok\n");
	return 0;
}
