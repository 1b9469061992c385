/* SPDX-License-Identifier: MIT */
/*
 * daemon/deliver.c - hop 3 (deliver.h).  Records are reserved in the
 * destination ring as they come and published together at the pass's
 * publish step: one release store and at most one bell per ring per pass.
 */
#include <errno.h>
#include <string.h>

#include "daemon/client.h"
#include "daemon/deliver.h"
#include "daemon/sched.h"
#include "proto/shm.h"

/* Reserve a record in t's ring: the payload pointer, or NULL with the
 * error (-EAGAIN full; -ESRCH its tail index is corrupt: cut off). */
static uint8_t *reserve(struct shd_daemon *d, struct shd_client *t, uint32_t plen, uint32_t kind,
			int *err)
{
	uint8_t *p = shf_ring_reserve(&t->deliver, plen, kind);
	if (p)
		return p;
	if (t->deliver.err) {
		/* it scribbled on its tail index */
		d->st.disc_ring++;
		shd_client_cutoff(t, -EPROTO, "corrupt delivery ring index");
		*err = -ESRCH;
	} else {
		*err = -EAGAIN;
	}
	return NULL;
}

_Static_assert(SHF_MSG_HDR_BYTES == 8 && SHF_RUN_HDR_BYTES == 8, "both headers are 8 bytes");

static inline void count_out(struct shd_daemon *d, struct shd_client *t, uint32_t msgs,
			     uint64_t bytes)
{
	if (!shd_list_linked(&t->dirty_link))
		shd_list_add_tail(&d->dirty, &t->dirty_link);
	t->st.msgs_out += msgs;
	t->st.bytes_out += bytes;
}

/* One message as a record of its own (a client that does not read runs,
 * or a message too long for a run). */
static int put_msg(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t type,
		   const void *data, uint32_t len)
{
	int e;
	uint8_t *p = reserve(d, t, SHF_MSG_HDR_BYTES + len, SHF_REC_MSG, &e);
	if (!p)
		return e;
	struct shf_msg_hdr h = {src, type};
	memcpy(p, &h, sizeof(h));
	memcpy(p + SHF_MSG_HDR_BYTES, data, len);
	count_out(d, t, 1, len);
	return 0;
}

/* Write t's open run's length and count into the ring: it grows no more. */
static void close_run(struct shd_client *t)
{
	struct shf_run_hdr h = {t->orun.src, t->orun.count};
	memcpy(t->orun.rec, &h, sizeof(h));
	shf_ring_set_len(t->orun.rec, t->orun.len);
	t->orun.rec = NULL;
}

/* A new run from src in t's ring, with room for `bytes` bytes of `count`
 * items (returned), open for more (shd_deliver_append()); NULL and *err
 * when the ring is full. */
static uint8_t *run_open(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t bytes,
			 uint32_t count, int *err)
{
	if (t->orun.rec)
		close_run(t);
	uint8_t *p = reserve(d, t, SHF_RUN_HDR_BYTES + bytes, SHF_REC_RUN, err);
	if (!p)
		return NULL;
	t->orun.rec = p; /* its header is written when it closes */
	t->orun.src = src;
	t->orun.len = SHF_RUN_HDR_BYTES + bytes;
	t->orun.count = count;
	p += SHF_RUN_HDR_BYTES;
	t->orun.end = p + bytes;
	uint32_t room = shf_ring_grow_room(&t->deliver, t->orun.rec, t->orun.len);
	uint32_t cap = bytes < SHF_RUN_MAX_BYTES ? SHF_RUN_MAX_BYTES - bytes : 0;
	t->orun.room = room < cap ? room : cap;
	return p;
}

/*
 * Room for `bytes` bytes of `count` items from src in a client that reads
 * runs: at the end of the run reserved last in its ring when that run is
 * from src, unpublished, and has room within a run's bounds; else in a new
 * run.  So the relay's plain records and short runs reach the client as
 * long runs, one record per source and pass (docs/ring.md, "Runs that
 * grow").  The items are counted here, their payload bytes by the caller.
 */
static uint8_t *run_room(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t bytes,
			 uint32_t count, int *err)
{
	uint8_t *p = shd_deliver_append(t, src, bytes, count);
	if (p)
		return p;
	p = run_open(d, t, src, bytes, count, err);
	if (p)
		count_out(d, t, count, 0);
	return p;
}

/* shd_deliver_place() when no open run takes the message: a new run for
 * a client that reads runs, else a record of its own. */
int shd_deliver_place_new(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t type,
			  const void *data, uint32_t len)
{
	if (!shd_deliver_can_take(t))
		return -ESRCH;
	uint32_t ib = shf_run_item_bytes(len);
	if (t->runs && ib <= SHF_RUN_MAX_BYTES && SHF_RUN_HDR_BYTES + ib <= t->deliver.max_rec) {
		int e;
		uint8_t *p = run_room(d, t, src, ib, 1, &e);
		if (!p)
			return e;
		shd_deliver_item(p, ib, type, data, len);
		t->st.bytes_out += len;
		return 0;
	}
	if (t->orun.rec)
		close_run(t);
	return put_msg(d, t, src, type, data, len);
}

int shd_deliver_run(struct shd_daemon *d, struct shd_client *t, int32_t src,
		    const uint8_t *items, uint32_t bytes, uint32_t count, uint64_t payload,
		    struct shd_run_pos *pos)
{
	if (!shd_deliver_can_take(t))
		return -ESRCH;
	uint32_t n = shf_run_n(count);
	bool packed = count & SHF_RUN_PACKED;
	if (packed && t->packed && pos->done == 0 && SHF_RUN_HDR_BYTES + bytes <= t->deliver.max_rec) {
		/* as it came: a record of its own (a packed run does not grow) */
		if (t->orun.rec)
			close_run(t);
		int e = 0;
		uint8_t *p = reserve(d, t, SHF_RUN_HDR_BYTES + bytes, SHF_REC_RUN, &e);
		if (!p)
			return e;
		struct shf_run_hdr h = {src, count};
		memcpy(p, &h, sizeof(h));
		memcpy(p + SHF_RUN_HDR_BYTES, items, bytes);
		count_out(d, t, n, payload);
		return 0;
	}
	uint32_t plain = shf_run_plain_bytes(items, bytes, count);
	if (t->runs && pos->done == 0 && SHF_RUN_HDR_BYTES + plain <= t->deliver.max_rec) {
		int e = 0;
		uint8_t *p = run_room(d, t, src, plain, n, &e);
		if (!p)
			return e;
		if (!packed) {
			memcpy(p, items, bytes);
		} else {
			/* a packed run for a client that does not read them:
			 * plain, its item header before each payload */
			uint32_t stride = plain / n - SHF_RUN_ITEM_BYTES;
			const uint8_t *q = items + SHF_RUN_ITEM_BYTES;
			for (uint32_t i = 0; i < n; i++, q += stride, p += SHF_RUN_ITEM_BYTES + stride) {
				memcpy(p, items, SHF_RUN_ITEM_BYTES);
				memcpy(p + SHF_RUN_ITEM_BYTES, q, stride);
			}
		}
		t->st.bytes_out += payload;
		return 0;
	}
	/* a client without runs (or a ring too small for this one) */
	struct shf_run_item it;
	if (packed)
		memcpy(&it, items, sizeof(it));
	while (pos->done < n) {
		const uint8_t *data;
		if (packed) {
			data = items + SHF_RUN_ITEM_BYTES + pos->done * (plain / n - SHF_RUN_ITEM_BYTES);
		} else {
			if (pos->off > bytes - SHF_RUN_ITEM_BYTES)
				return -ESRCH; /* not the run *pos was made for: cannot happen */
			memcpy(&it, items + pos->off, sizeof(it));
			if (it.len > bytes - pos->off - SHF_RUN_ITEM_BYTES)
				return -ESRCH;
			data = items + pos->off + SHF_RUN_ITEM_BYTES;
		}
		int e = shd_deliver_place(d, t, src, it.type, data, it.len);
		if (e)
			return e;
		pos->done++;
		if (!packed)
			pos->off += shf_run_item_bytes(it.len);
	}
	return 0;
}

bool shd_deliver_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len)
{
	/* a message as a new run: a run header, an item header, padding */
	uint32_t extra = dst->runs ? SHF_RUN_HDR_BYTES + SHF_RUN_ITEM_BYTES + 7 : SHF_MSG_HDR_BYTES;
	if (!shf_ring_prod_arm(&dst->deliver, len + extra))
		return false;
	shd_list_add_tail(&dst->waiters, &w->link);
	return true;
}

void shd_deliver_wake(struct shd_client *c)
{
	shd_sched_wake(&c->waiters);
}

void shd_deliver_publish(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->dirty) {
		struct shd_client *c = shd_container_of(p, struct shd_client, dirty_link);
		shd_list_del(&c->dirty_link);
		if (c->orun.rec)
			close_run(c);
		if (shf_ring_publish(&c->deliver))
			shf_bell_ring(c->bell_deliver);
		uint64_t used = shf_ring_used(&c->deliver);
		if (used > c->st.deliver_ring_hwm)
			c->st.deliver_ring_hwm = used;
	}
}
