/* SPDX-License-Identifier: MIT */
/* proto/shm.c - layout, formatting and validation of a client region. */
#include "proto/shm.h"

#include <errno.h>
#include <string.h>

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

int shf_shm_layout(uint64_t ring_bytes, uint32_t max_rec, struct shf_shm_layout *l)
{
	if (!shf_ring_size_ok(ring_bytes) || max_rec > shf_ring_max_payload(ring_bytes))
		return -EINVAL;
	struct shf_shm_layout t;
	memset(&t, 0, sizeof(t));
	uint64_t off = round_up(sizeof(struct shf_shm_hdr), SHF_RING_CACHELINE);
	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		t.ring[i].ctl_off = off;
		off += sizeof(struct shf_ring_ctl);
	}
	off = round_up(off, SHF_SHM_PAGE);
	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		t.ring[i].data_off = off;
		t.ring[i].data_bytes = ring_bytes;
		t.ring[i].max_rec = max_rec;
		off += ring_bytes;
	}
	t.region_bytes = off;
	*l = t;
	return 0;
}

void shf_shm_format(void *base, const struct shf_shm_layout *l, int32_t rank,
		    int32_t world)
{
	struct shf_shm_hdr *h = base;
	memset(h, 0, sizeof(*h));
	h->magic = SHF_SHM_MAGIC;
	h->version = SHF_SHM_VERSION;
	h->hdr_bytes = sizeof(*h);
	h->region_bytes = l->region_bytes;
	memcpy(h->ring, l->ring, sizeof(h->ring));
	h->rank = rank;
	h->world = world;
	for (int i = 0; i < SHF_SHM_RING_MAX; i++)
		memset((char *)base + l->ring[i].ctl_off, 0, sizeof(struct shf_ring_ctl));
	/* everything above is visible before ready; pairs with the acquire
	 * load in shf_shm_check() */
	atomic_store_explicit(&h->ready, 1, memory_order_release);
}

/* [a, a+alen) and [b, b+blen) overlap? */
static int overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int shf_shm_check(const void *base, uint64_t mapped, struct shf_shm_layout *l)
{
	const struct shf_shm_hdr *h = base;
	if (mapped < sizeof(*h))
		return -EBADMSG;
	if (!atomic_load_explicit(&((struct shf_shm_hdr *)h)->ready, memory_order_acquire))
		return -EAGAIN;
	/* copy once, then validate the private copy only */
	struct shf_shm_hdr c;
	memcpy(&c, h, sizeof(c));
	if (c.magic != SHF_SHM_MAGIC || c.version != SHF_SHM_VERSION)
		return -EPROTO;
	if (c.hdr_bytes != sizeof(c) || c.region_bytes != mapped)
		return -EBADMSG;
	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		const struct shf_shm_ring_desc *d = &c.ring[i];
		if (!shf_ring_size_ok(d->data_bytes) ||
		    d->max_rec > shf_ring_max_payload(d->data_bytes))
			return -EBADMSG;
		if (d->ctl_off % SHF_RING_CACHELINE || d->data_off % SHF_RING_ALIGN)
			return -EBADMSG;
		if (d->ctl_off < sizeof(c) || d->ctl_off > mapped ||
		    mapped - d->ctl_off < sizeof(struct shf_ring_ctl))
			return -EBADMSG;
		if (d->data_off < sizeof(c) || d->data_off > mapped ||
		    mapped - d->data_off < d->data_bytes)
			return -EBADMSG;
		if (overlaps(d->ctl_off, sizeof(struct shf_ring_ctl), d->data_off, d->data_bytes))
			return -EBADMSG;
		for (int j = 0; j < i; j++) {
			const struct shf_shm_ring_desc *e = &c.ring[j];
			if (overlaps(d->data_off, d->data_bytes, e->data_off, e->data_bytes) ||
			    overlaps(d->ctl_off, sizeof(struct shf_ring_ctl), e->data_off,
				     e->data_bytes) ||
			    overlaps(e->ctl_off, sizeof(struct shf_ring_ctl), d->data_off,
				     d->data_bytes) ||
			    overlaps(d->ctl_off, sizeof(struct shf_ring_ctl), e->ctl_off,
				     sizeof(struct shf_ring_ctl)))
				return -EBADMSG;
		}
	}
	l->region_bytes = c.region_bytes;
	memcpy(l->ring, c.ring, sizeof(l->ring));
	return 0;
}

int shf_shm_ring(void *base, const struct shf_shm_layout *l, enum shf_shm_ring_id id,
		 struct shf_ring *r, bool zero)
{
	if ((unsigned)id >= SHF_SHM_RING_MAX)
		return -EINVAL;
	const struct shf_shm_ring_desc *d = &l->ring[id];
	return shf_ring_init(r, (struct shf_ring_ctl *)((char *)base + d->ctl_off),
			     (char *)base + d->data_off, d->data_bytes, d->max_rec, zero);
}
