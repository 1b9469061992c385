/* SPDX-License-Identifier: MIT */
/*
 * daemon/deliver.h - hop 3: copying a message into a local client's
 * delivery ring, waiting for room there, and publishing the rings once per
 * pass.  Called by the relay (local messages) and by the network's receive
 * half (messages from other nodes).
 */
#ifndef SHD_DELIVER_H
#define SHD_DELIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "daemon/daemon.h"
#include "proto/ring.h"
#include "proto/shm.h"

/* Copy one message into dst's delivery ring (published at the pass's
 * publish step).  0; -EAGAIN when the ring is full; -ESRCH when dst cannot
 * take it (NULL, doomed, not registered, or its ring index is corrupt: then
 * it is cut off).  Inline below: the common case, one more item for the
 * run that is open in dst's ring (docs/ring.md, "Runs that grow"). */
static inline int shd_deliver_place(struct shd_daemon *d, struct shd_client *dst, int32_t src,
				    uint32_t type, const void *data, uint32_t len);
int shd_deliver_place_new(struct shd_daemon *d, struct shd_client *dst, int32_t src,
			  uint32_t type, const void *data, uint32_t len);
/*
 * Place a run of `count` messages from src (its header's count: |
 * SHF_RUN_PACKED for a packed run; its items: `bytes` bytes, checked by
 * shf_run_check(), `payload` bytes of messages) into dst's ring: a packed
 * run as it is when dst reads packed runs; as one plain SHF_REC_RUN
 * record when dst reads runs (a packed run written out with an item
 * header each), else item by item from *pos on (*pos starts
 * zeroed; it says where a -EAGAIN stopped, and how many items were placed
 * before an error).  0 when all are placed; -EAGAIN (wait for room for
 * shf_run_plain_bytes() bytes, then call again with the same *pos);
 * -ESRCH as for shd_deliver_place (shf_run_n(count) - pos->done are
 * lost).
 */
int shd_deliver_run(struct shd_daemon *d, struct shd_client *dst, int32_t src,
		    const uint8_t *items, uint32_t bytes, uint32_t count, uint64_t payload,
		    struct shd_run_pos *pos);
/* Wait for room for a len-byte message in dst's ring: w->wake runs when
 * dst makes room.  Returns false when room appeared meanwhile (retry now;
 * w is not linked). */
bool shd_deliver_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len);
/* Room appeared in c's delivery ring (or c goes away): its waiters retry. */
void shd_deliver_wake(struct shd_client *c);
/* The publish step: one release store per dirty ring, bells rung. */
void shd_deliver_publish(struct shd_daemon *d);

/* dst takes messages: registered, not doomed. */
static inline bool shd_deliver_can_take(const struct shd_client *t)
{
	return t && !t->doomed && (t->state == SHD_SESS_ACTIVE || t->state == SHD_SESS_WAITWORLD);
}

/* Room for `bytes` bytes of `count` more items from src at the end of the
 * run open in t's ring (t reads runs, is on d->dirty and had room when the
 * run opened; only its session may have changed since), or NULL. */
static inline uint8_t *shd_deliver_append(struct shd_client *t, int32_t src, uint32_t bytes,
					  uint32_t count)
{
	if (!t || !t->orun.rec || t->orun.src != src || bytes > t->orun.room ||
	    count > SHF_RUN_MAX_COUNT - t->orun.count || !shd_deliver_can_take(t))
		return NULL;
	uint8_t *p = t->orun.end;
	shf_ring_grow(&t->deliver, bytes);
	t->orun.end += bytes;
	t->orun.room -= bytes;
	t->orun.len += bytes;
	t->orun.count += count;
	t->st.msgs_out += count;
	return p;
}

/* One message as a run item at p (ib = shf_run_item_bytes(len) bytes). */
static inline void shd_deliver_item(uint8_t *p, uint32_t ib, uint32_t type, const void *data,
				    uint32_t len)
{
	struct shf_run_item it = {type, len};
	memcpy(p, &it, sizeof(it));
	if (len & 7u) /* zero padding: the last word, before the copy */
		memset(p + ib - 8, 0, 8);
	memcpy(p + SHF_RUN_ITEM_BYTES, data, len);
}

static inline int shd_deliver_place(struct shd_daemon *d, struct shd_client *t, int32_t src,
				    uint32_t type, const void *data, uint32_t len)
{
	uint32_t ib = shf_run_item_bytes(len);
	uint8_t *p = shd_deliver_append(t, src, ib, 1);
	if (!p)
		return shd_deliver_place_new(d, t, src, type, data, len);
	shd_deliver_item(p, ib, type, data, len);
	t->st.bytes_out += len;
	return 0;
}

#endif
