/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/corrupt-shm.c - shf_shm_check() against corrupt headers.
 *
 * A region comes from another process and is trusted for nothing: every
 * bad field must be refused with the documented error (-EPROTO for magic
 * and version, -EBADMSG for sizes and offsets, -EAGAIN before ready), the
 * out-parameter must stay untouched on failure, and nothing outside the
 * mapping may be read (the region is followed by a PROT_NONE page).
 */
#include "tests/ring/ring-test.h"

#define RING 4096u

static uint8_t *map_region(uint64_t bytes)
{
	uint8_t *m = mmap(NULL, bytes + T_PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK(mprotect(m + bytes, T_PAGE, PROT_NONE) == 0);
	return m;
}

struct env {
	uint8_t *base;            /* the region, guard page after it */
	struct shf_shm_layout l;  /* the good layout */
	struct shf_shm_hdr good;  /* the good header */
	int cases;
};

static struct shf_shm_hdr *hdr(struct env *e)
{
	memcpy(e->base, &e->good, sizeof(e->good));
	return (struct shf_shm_hdr *)e->base;
}

/* Check the header as it is now: expect `want`; on failure the layout must
 * be untouched, on success it must equal `expect` when given. */
static void expect(struct env *e, uint64_t mapped, int want, const char *what, int line)
{
	struct shf_shm_layout out;
	memset(&out, 0x5a, sizeof(out));
	int rc = shf_shm_check(e->base, mapped, &out);
	if (rc != want) {
		fprintf(stderr, "corrupt-shm.c:%d: %s: got %d, want %d\n", line, what, rc, want);
		exit(1);
	}
	if (rc < 0) {
		for (size_t i = 0; i < sizeof(out); i++)
			CHECKF(((uint8_t *)&out)[i] == 0x5a, "%s: layout written on failure", what);
	}
	e->cases++;
}
#define EXPECT_REGION(e, want, what) expect((e), (e)->l.region_bytes, (want), (what), __LINE__)

int main(void)
{
	struct env e = {0};
	CHECK(shf_shm_layout(RING, shf_ring_max_payload(RING), &e.l) == 0);
	uint64_t R = e.l.region_bytes;
	e.base = map_region(R);
	shf_shm_format(e.base, &e.l, 3, 8);
	memcpy(&e.good, e.base, sizeof(e.good));
	struct shf_shm_hdr *h;
	struct shf_shm_ring_desc *d0, *d1;

	EXPECT_REGION(&e, 0, "good header");

	/* a mapping shorter than the header: refused without reading it.  Put
	 * a 64-byte "region" right before the guard page. */
	{
		uint8_t *tiny = map_region(T_PAGE);
		CHECK(shf_shm_check(tiny + T_PAGE - 64, 64, &e.l) == -EBADMSG);
		CHECK(shf_shm_check(tiny + T_PAGE - 64, 0, &e.l) == -EBADMSG);
		munmap(tiny, 2 * T_PAGE);
		e.cases += 2;
	}

	h = hdr(&e);
	atomic_store(&h->ready, 0);
	EXPECT_REGION(&e, -EAGAIN, "not ready");

	h = hdr(&e);
	h->magic ^= 1;
	EXPECT_REGION(&e, -EPROTO, "bad magic");
	h = hdr(&e);
	h->magic = 0;
	EXPECT_REGION(&e, -EPROTO, "zero magic");
	h = hdr(&e);
	h->version = SHF_SHM_VERSION + 1;
	EXPECT_REGION(&e, -EPROTO, "future version");
	h = hdr(&e);
	h->version = 0;
	EXPECT_REGION(&e, -EPROTO, "version 0");

	h = hdr(&e);
	h->hdr_bytes = sizeof(*h) - 8;
	EXPECT_REGION(&e, -EBADMSG, "hdr_bytes short");
	h = hdr(&e);
	h->hdr_bytes = sizeof(*h) + 8;
	EXPECT_REGION(&e, -EBADMSG, "hdr_bytes long");
	h = hdr(&e);
	h->hdr_bytes = UINT32_MAX;
	EXPECT_REGION(&e, -EBADMSG, "hdr_bytes huge");

	/* region_bytes must equal what the attacher actually mapped */
	h = hdr(&e);
	h->region_bytes = R + T_PAGE;
	EXPECT_REGION(&e, -EBADMSG, "region_bytes larger than the mapping");
	h = hdr(&e);
	h->region_bytes = R - T_PAGE;
	EXPECT_REGION(&e, -EBADMSG, "region_bytes smaller than the mapping");
	hdr(&e);
	expect(&e, R - T_PAGE, -EBADMSG, "mapping smaller than region_bytes", __LINE__);

	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		/* ring geometry */
		h = hdr(&e);
		h->ring[i].data_bytes = RING + 8;
		EXPECT_REGION(&e, -EBADMSG, "data_bytes not a power of two");
		h = hdr(&e);
		h->ring[i].data_bytes = RING / 2;
		EXPECT_REGION(&e, -EBADMSG, "data_bytes below the minimum");
		h = hdr(&e);
		h->ring[i].data_bytes = (uint64_t)SHF_RING_MAX_BYTES * 2;
		EXPECT_REGION(&e, -EBADMSG, "data_bytes above the maximum");
		h = hdr(&e);
		h->ring[i].data_bytes = 0;
		EXPECT_REGION(&e, -EBADMSG, "data_bytes zero");
		h = hdr(&e);
		h->ring[i].max_rec = shf_ring_max_payload(RING) + 1;
		EXPECT_REGION(&e, -EBADMSG, "max_rec above size/2 - 8");
		h = hdr(&e);
		h->ring[i].max_rec = UINT32_MAX;
		EXPECT_REGION(&e, -EBADMSG, "max_rec huge");

		/* offsets out of the mapping, including ones that overflow */
		h = hdr(&e);
		h->ring[i].ctl_off = R;
		EXPECT_REGION(&e, -EBADMSG, "ctl_off at the end");
		h = hdr(&e);
		h->ring[i].ctl_off = R - SHF_RING_CACHELINE; /* half outside */
		EXPECT_REGION(&e, -EBADMSG, "ctl block crosses the end");
		h = hdr(&e);
		h->ring[i].ctl_off = UINT64_MAX - (SHF_RING_CACHELINE - 1);
		EXPECT_REGION(&e, -EBADMSG, "ctl_off wraps");
		h = hdr(&e);
		h->ring[i].ctl_off = e.good.ring[i].ctl_off + 8;
		EXPECT_REGION(&e, -EBADMSG, "ctl_off not cache-line aligned");
		h = hdr(&e);
		h->ring[i].data_off = R;
		EXPECT_REGION(&e, -EBADMSG, "data_off at the end");
		h = hdr(&e);
		h->ring[i].data_off = R - RING + T_PAGE;
		EXPECT_REGION(&e, -EBADMSG, "data crosses the end");
		h = hdr(&e);
		h->ring[i].data_off = UINT64_MAX - 7;
		EXPECT_REGION(&e, -EBADMSG, "data_off wraps");
		h = hdr(&e);
		h->ring[i].data_off = (UINT64_MAX - RING + 1) & ~(uint64_t)7;
		EXPECT_REGION(&e, -EBADMSG, "data_off + data_bytes wraps");
		h = hdr(&e);
		h->ring[i].data_off = e.good.ring[i].data_off + 4;
		EXPECT_REGION(&e, -EBADMSG, "data_off not 8-aligned");
		h = hdr(&e);
		h->ring[i].data_bytes = (uint64_t)RING * 4; /* runs out of the region */
		h->ring[i].max_rec = 100;
		EXPECT_REGION(&e, -EBADMSG, "data_bytes runs past the region");

		/* over the header */
		h = hdr(&e);
		h->ring[i].ctl_off = 64;
		EXPECT_REGION(&e, -EBADMSG, "ctl block over the header");
		h = hdr(&e);
		h->ring[i].ctl_off = 0;
		EXPECT_REGION(&e, -EBADMSG, "ctl block at offset 0");
		h = hdr(&e);
		h->ring[i].data_off = 0;
		EXPECT_REGION(&e, -EBADMSG, "data over the header");
		h = hdr(&e);
		h->ring[i].data_off = 96;
		EXPECT_REGION(&e, -EBADMSG, "data overlaps the header's tail");

		/* a ring's control block inside its own data */
		h = hdr(&e);
		h->ring[i].ctl_off = e.good.ring[i].data_off + 128;
		EXPECT_REGION(&e, -EBADMSG, "ctl block inside own data");
	}

	/* overlapping rings */
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d1->data_off = d0->data_off;
	EXPECT_REGION(&e, -EBADMSG, "both rings share data");
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d1->data_off = d0->data_off + RING / 2;
	EXPECT_REGION(&e, -EBADMSG, "data arrays overlap by half");
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d0->data_off = d1->data_off - 8; /* overlaps ring 1's first 8 bytes */
	EXPECT_REGION(&e, -EBADMSG, "data arrays overlap by 8 bytes");
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d1->ctl_off = d0->ctl_off;
	EXPECT_REGION(&e, -EBADMSG, "both rings share a control block");
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d1->ctl_off = d0->ctl_off + SHF_RING_CACHELINE; /* half overlap */
	EXPECT_REGION(&e, -EBADMSG, "control blocks overlap");
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d1->ctl_off = d0->data_off + 256;
	EXPECT_REGION(&e, -EBADMSG, "ring 1 control inside ring 0 data");
	h = hdr(&e);
	d0 = &h->ring[0], d1 = &h->ring[1];
	d0->ctl_off = d1->data_off + RING - 128;
	EXPECT_REGION(&e, -EBADMSG, "ring 0 control inside ring 1 data");

	/* layouts that are unusual but sound must still be accepted */
	h = hdr(&e);
	struct shf_shm_ring_desc tmp = h->ring[0];
	h->ring[0] = h->ring[1];
	h->ring[1] = tmp;
	EXPECT_REGION(&e, 0, "rings swapped");
	h = hdr(&e);
	h->ring[0].max_rec = 0;
	EXPECT_REGION(&e, 0, "max_rec 0");
	h = hdr(&e);
	h->ring[1].ctl_off = h->ring[0].ctl_off + sizeof(struct shf_ring_ctl); /* adjacent */
	h->ring[0].ctl_off = h->ring[1].ctl_off + sizeof(struct shf_ring_ctl);
	EXPECT_REGION(&e, 0, "control blocks adjacent, reordered");

	/* the good header once more, and the layout it yields */
	hdr(&e);
	struct shf_shm_layout out;
	CHECK(shf_shm_check(e.base, R, &out) == 0);
	CHECK(memcmp(&out, &e.l, sizeof(out)) == 0);

	printf("corrupt-shm: %d cases\n", e.cases);
	munmap(e.base, R + T_PAGE);
	return 0;
}
