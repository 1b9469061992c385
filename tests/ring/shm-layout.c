/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/shm-layout.c - shf_shm_layout / shf_shm_format / shf_shm_check
 * round trip on a real memfd region.
 *
 * The layout is sane for every ring size (aligned, disjoint, inside the
 * region), format writes a header that check accepts and turns back into
 * the same layout, check waits for `ready`, and rings bound through a
 * second mapping of the same memfd at another address carry data both
 * ways (offsets, not pointers).
 */
#include "tests/ring/ring-test.h"

static bool disjoint(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a + alen <= b || b + blen <= a;
}

static void check_layout(const struct shf_shm_layout *l, uint64_t ring_bytes, uint32_t max_rec)
{
	uint64_t ctl = sizeof(struct shf_ring_ctl);
	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		const struct shf_shm_ring_desc *d = &l->ring[i];
		CHECK(d->data_bytes == ring_bytes && d->max_rec == max_rec && d->reserved == 0);
		CHECK(d->ctl_off % SHF_RING_CACHELINE == 0);
		CHECK(d->data_off % SHF_SHM_PAGE == 0);
		CHECK(d->ctl_off >= sizeof(struct shf_shm_hdr));
		CHECK(d->data_off >= sizeof(struct shf_shm_hdr));
		CHECK(d->ctl_off + ctl <= l->region_bytes);
		CHECK(d->data_off + d->data_bytes <= l->region_bytes);
		CHECK(disjoint(d->ctl_off, ctl, d->data_off, d->data_bytes));
		for (int j = 0; j < i; j++) {
			const struct shf_shm_ring_desc *e = &l->ring[j];
			CHECK(disjoint(d->ctl_off, ctl, e->ctl_off, ctl));
			CHECK(disjoint(d->data_off, d->data_bytes, e->data_off, e->data_bytes));
			CHECK(disjoint(d->ctl_off, ctl, e->data_off, e->data_bytes));
			CHECK(disjoint(e->ctl_off, ctl, d->data_off, d->data_bytes));
		}
	}
	CHECK(l->region_bytes % SHF_SHM_PAGE == 0);
	/* no waste beyond one page of header + control blocks */
	CHECK(l->region_bytes == SHF_SHM_PAGE + SHF_SHM_RING_MAX * ring_bytes);
}

/* Send records through ring `id`: produce via view `p`, consume via `c`. */
static void carry(struct shf_ring *p, struct shf_ring *c, uint64_t seq0, int n)
{
	struct shf_ring_view v;
	for (int i = 0; i < n; i++) {
		uint32_t len = (uint32_t)((seq0 + (uint64_t)i) * 13 % 1000);
		uint8_t *d = shf_ring_reserve(p, len, SHF_REC_MSG);
		CHECK(d);
		t_pattern_fill(d, len, seq0 + (uint64_t)i);
		shf_ring_publish(p);
		CHECK(shf_ring_peek(c, &v) == 1);
		CHECK(t_view_inside(c, &v) && v.len == len);
		CHECK(t_pattern_check(v.data, len, seq0 + (uint64_t)i) < 0);
		shf_ring_release(c);
	}
}

int main(void)
{
	struct shf_shm_layout l, l2;

	/* sizes: every power of two from the minimum to 64 MiB */
	for (uint64_t sz = SHF_RING_MIN_BYTES; sz <= (64u << 20); sz *= 2) {
		uint32_t mr = shf_ring_max_payload(sz);
		CHECK(shf_shm_layout(sz, mr, &l) == 0);
		check_layout(&l, sz, mr);
		CHECK(shf_shm_layout(sz, 0, &l) == 0);
		check_layout(&l, sz, 0);
	}
	CHECK(shf_shm_layout(SHF_RING_MAX_BYTES, 60 << 10, &l) == 0);
	check_layout(&l, SHF_RING_MAX_BYTES, 60 << 10);
	/* refused: not a power of two, too small, too large, max_rec too big */
	CHECK(shf_shm_layout(0, 0, &l) == -EINVAL);
	CHECK(shf_shm_layout(2048, 0, &l) == -EINVAL);
	CHECK(shf_shm_layout(12288, 0, &l) == -EINVAL);
	CHECK(shf_shm_layout((uint64_t)SHF_RING_MAX_BYTES * 2, 0, &l) == -EINVAL);
	CHECK(shf_shm_layout(1u << 20, (1u << 19) - 7, &l) == -EINVAL);

	/* format + check on a real memfd */
	struct t_region reg;
	t_region_open(&reg, 1u << 16, 4000); /* formats (rank 0, world 1) and checks */
	CHECK(shf_shm_layout(1u << 16, 4000, &l) == 0);
	CHECK(memcmp(&l, &reg.l, sizeof(l)) == 0);
	shf_shm_format(reg.base, &l, 17, 64);
	const struct shf_shm_hdr *h = reg.base;
	CHECK(h->magic == SHF_SHM_MAGIC && h->version == SHF_SHM_VERSION);
	CHECK(h->hdr_bytes == sizeof(*h) && h->region_bytes == l.region_bytes);
	CHECK(h->rank == 17 && h->world == 64 && h->reserved == 0);
	CHECK(atomic_load(&((struct shf_shm_hdr *)reg.base)->ready) == 1);
	memset(&l2, 0xa5, sizeof(l2));
	CHECK(shf_shm_check(reg.base, l.region_bytes, &l2) == 0);
	CHECK(memcmp(&l, &l2, sizeof(l)) == 0);

	/* not ready yet: -EAGAIN, and the layout out-parameter is untouched */
	atomic_store(&((struct shf_shm_hdr *)reg.base)->ready, 0);
	memset(&l2, 0xa5, sizeof(l2));
	CHECK(shf_shm_check(reg.base, l.region_bytes, &l2) == -EAGAIN);
	for (size_t i = 0; i < sizeof(l2); i++)
		CHECK(((uint8_t *)&l2)[i] == 0xa5);
	atomic_store(&((struct shf_shm_hdr *)reg.base)->ready, 1);

	/* a bad ring id is refused */
	struct shf_ring p;
	CHECK(shf_shm_ring(reg.base, &l, SHF_SHM_RING_MAX, &p, true) == -EINVAL);
	CHECK(shf_shm_ring(reg.base, &l, (enum shf_shm_ring_id)-1, &p, true) == -EINVAL);

	/* A second mapping of the same memfd at another address, validated on
	 * its own, as a client would.  The "daemon" mapping consumes the send
	 * ring and produces into the delivery ring; the "client" mapping does
	 * the opposite. */
	void *base2 = mmap(NULL, l.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, reg.fd, 0);
	CHECK(base2 != MAP_FAILED && base2 != reg.base);
	struct shf_shm_layout cl;
	CHECK(shf_shm_check(base2, l.region_bytes, &cl) == 0);
	CHECK(memcmp(&cl, &l, sizeof(l)) == 0);

	struct shf_ring d_send, d_deliver, c_send, c_deliver;
	CHECK(shf_shm_ring(reg.base, &l, SHF_SHM_SEND, &d_send, true) == 0);
	shf_ring_init_consumer(&d_send);
	CHECK(shf_shm_ring(reg.base, &l, SHF_SHM_DELIVER, &d_deliver, true) == 0);
	shf_ring_init_producer(&d_deliver);
	CHECK(shf_shm_ring(base2, &cl, SHF_SHM_SEND, &c_send, false) == 0);
	shf_ring_init_producer(&c_send);
	CHECK(shf_shm_ring(base2, &cl, SHF_SHM_DELIVER, &c_deliver, false) == 0);
	shf_ring_init_consumer(&c_deliver);
	CHECK(d_send.max_rec == 4000 && c_deliver.size == (1u << 16));
	CHECK((uint8_t *)d_send.data == (uint8_t *)reg.base + l.ring[SHF_SHM_SEND].data_off);
	CHECK((uint8_t *)c_send.data == (uint8_t *)base2 + l.ring[SHF_SHM_SEND].data_off);

	carry(&c_send, &d_send, 0, 500);       /* client -> daemon */
	carry(&d_deliver, &c_deliver, 1000, 500); /* daemon -> client */
	/* the two rings are independent: each moved only its own indices */
	CHECK(atomic_load(&d_send.ctl->head) == atomic_load(&d_send.ctl->tail));
	CHECK(atomic_load(&d_deliver.ctl->head) == atomic_load(&d_deliver.ctl->tail));
	CHECK(atomic_load(&d_send.ctl->head) > 0 && d_send.ctl != d_deliver.ctl);
	CHECK(d_send.err == 0 && d_deliver.err == 0 && c_send.err == 0 && c_deliver.err == 0);

	/* re-attaching to live rings (zero=false) starts at the shared indices */
	CHECK(shf_shm_ring(base2, &cl, SHF_SHM_SEND, &c_send, false) == 0);
	shf_ring_init_producer(&c_send);
	CHECK(c_send.pos == atomic_load(&d_send.ctl->head) && c_send.err == 0);
	carry(&c_send, &d_send, 5000, 10);

	munmap(base2, l.region_bytes);
	t_region_close(&reg);
	return 0;
}
