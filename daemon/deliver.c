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

static inline bool can_take(const struct shd_client *t)
{
	return t && !t->doomed && (t->state == SHD_SESS_ACTIVE || t->state == SHD_SESS_WAITWORLD);
}

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

/* One record of `kind`: an 8-byte header, then len bytes; it holds msgs
 * messages of `bytes` payload bytes in all. */
static int put(struct shd_daemon *d, struct shd_client *t, uint32_t kind, const void *hdr8,
	       const void *data, uint32_t len, uint32_t msgs, uint64_t bytes)
{
	int e;
	uint8_t *p = reserve(d, t, 8 + len, kind, &e);
	if (!p)
		return e;
	memcpy(p, hdr8, 8);
	memcpy(p + 8, data, len);
	if (!shd_list_linked(&t->dirty_link))
		shd_list_add_tail(&d->dirty, &t->dirty_link);
	t->st.msgs_out += msgs;
	t->st.bytes_out += bytes;
	return 0;
}

int shd_deliver_place(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t type,
		      const void *data, uint32_t len)
{
	if (!can_take(t))
		return -ESRCH;
	struct shf_msg_hdr h = {src, type};
	return put(d, t, SHF_REC_MSG, &h, data, len, 1, len);
}

int shd_deliver_run(struct shd_daemon *d, struct shd_client *t, int32_t src,
		    const uint8_t *items, uint32_t bytes, uint32_t count, uint64_t payload,
		    struct shd_run_pos *pos)
{
	if (!can_take(t))
		return -ESRCH;
	if (t->runs && pos->done == 0 && SHF_RUN_HDR_BYTES + bytes <= t->deliver.max_rec) {
		struct shf_run_hdr h = {src, count};
		return put(d, t, SHF_REC_RUN, &h, items, bytes, count, payload);
	}
	/* a client without runs (or a ring too small for this one) */
	while (pos->done < count) {
		struct shf_run_item it;
		if (pos->off > bytes - SHF_RUN_ITEM_BYTES)
			return -ESRCH; /* not the run *pos was made for: cannot happen */
		memcpy(&it, items + pos->off, sizeof(it));
		if (it.len > bytes - pos->off - SHF_RUN_ITEM_BYTES)
			return -ESRCH;
		int e = shd_deliver_place(d, t, src, it.type, items + pos->off + SHF_RUN_ITEM_BYTES,
				      it.len);
		if (e)
			return e;
		pos->done++;
		pos->off += shf_run_item_bytes(it.len);
	}
	return 0;
}

bool shd_deliver_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len)
{
	if (!shf_ring_prod_arm(&dst->deliver, len + SHF_MSG_HDR_BYTES))
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
		if (shf_ring_publish(&c->deliver))
			shf_bell_ring(c->bell_deliver);
		uint64_t used = shf_ring_used(&c->deliver);
		if (used > c->st.deliver_ring_hwm)
			c->st.deliver_ring_hwm = used;
	}
}
