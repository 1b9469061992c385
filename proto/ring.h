/* SPDX-License-Identifier: MIT */
/*
 * proto/ring.h - single-producer / single-consumer byte ring in shared memory.
 *
 * Variable-length records live in a power-of-two byte array.  Each record is
 * an 8-byte header {len, kind} followed by `len` payload bytes, padded to
 * 8 bytes.  A record never wraps: when it does not fit before the end of the
 * array the producer writes a PAD record that covers the rest of the array
 * and starts the record at offset 0.
 *
 * head and tail are free-running 64-bit byte counters on separate cache
 * lines.  The producer owns head, the consumer owns tail.  Every atomic
 * access is labelled with the edge it pairs with; docs/ring.md draws them:
 *
 *   [P1] producer: store-release head      pairs with [C1]
 *   [C1] consumer: load-acquire head       pairs with [P1]
 *   [C2] consumer: store-release tail      pairs with [P2]
 *   [P2] producer: load-acquire tail       pairs with [C2]
 *   [C3] consumer: relaxed load of its own tail by another thread, after
 *        a [C1]: that [C1] already carries the happens-before edge
 *   [D1] waiter:   store wait flag; fence(seq_cst); re-load index
 *   [D2] waker:    store index;     fence(seq_cst); load wait flag
 *        D1/D2 are a Dekker pair: at least one side sees the other's store,
 *        so either the waiter sees the new index or the waker sees the flag
 *        and rings the eventfd.  No wake-up is lost.
 *   [R]  relaxed, pairs with nothing: initialisation before the region is
 *        shared, a side's own index, statistics, clearing a flag
 *
 * These helpers are the only code that touches the shared indices and
 * flags: callers (client/, daemon/) never say memory_order about them.
 *
 * Trust: either side may be another process that scribbles on the shared
 * control block or the data.  Each side keeps the geometry (size, mask,
 * max_rec) in its own private struct, reads every record header exactly
 * once into a local copy, and bounds every index and length before use.
 * A violation sets r->err (negative errno) and is sticky; the owner then
 * disconnects the peer.  Nothing here can read or write outside
 * [data, data + size).
 *
 * Header-only: everything is static inline so the hot path has no calls.
 */
#ifndef SHF_PROTO_RING_H
#define SHF_PROTO_RING_H

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define SHF_RING_CACHELINE 64u
#define SHF_RING_ALIGN 8u             /* record alignment */
#define SHF_RING_HDR_BYTES 8u         /* sizeof(struct shf_ring_rec) */
#define SHF_RING_MIN_BYTES 4096u      /* smallest data array */
#define SHF_RING_MAX_BYTES (1u << 30) /* largest data array: 1 GiB */

/* Record kinds.  The ring itself only interprets SHF_REC_PAD. */
enum shf_rec_kind {
	SHF_REC_PAD = 0,  /* filler up to the end of the array; skip it */
	SHF_REC_MSG = 1,  /* application message: struct shf_msg_hdr + data */
	SHF_REC_MARK = 2, /* in-band marker (flush request), see proto/ipc.h */
	SHF_REC_RUN = 3,  /* messages of one pair of ranks: struct shf_run_hdr +
			     items, see proto/shm.h */
	SHF_REC_KIND_MAX
};

/* Record header as it sits in the ring (8 bytes, naturally aligned). */
struct shf_ring_rec {
	uint32_t len;  /* payload bytes that follow the header */
	uint32_t kind; /* enum shf_rec_kind */
};

/*
 * Shared control block.  Producer fields and consumer fields sit on
 * separate cache lines so the two sides do not false-share their indices.
 */
struct shf_ring_ctl {
	/* producer's line */
	alignas(SHF_RING_CACHELINE) _Atomic uint64_t head; /* bytes published */
	_Atomic uint32_t prod_wait; /* 1: producer sleeps until space frees */
	uint32_t pad0;
	/* consumer's line */
	alignas(SHF_RING_CACHELINE) _Atomic uint64_t tail; /* bytes released */
	_Atomic uint32_t cons_wait; /* 1: consumer sleeps until data comes */
	uint32_t pad1;
	alignas(SHF_RING_CACHELINE) char end[];
};
_Static_assert(sizeof(struct shf_ring_ctl) == 2 * SHF_RING_CACHELINE,
	       "ring control block is two cache lines");
_Static_assert(sizeof(struct shf_ring_rec) == SHF_RING_HDR_BYTES, "record header");

/* One side's private view of a ring.  Never placed in shared memory. */
struct shf_ring {
	struct shf_ring_ctl *ctl; /* shared control block */
	uint8_t *data;            /* shared data array */
	uint64_t size;            /* private copy: bytes in data, power of two */
	uint64_t mask;            /* size - 1 */
	uint32_t max_rec;         /* private copy: largest payload accepted */
	int err;                  /* sticky: 0 or negative errno */
	uint64_t pos;  /* producer: end of reserved records; consumer: end of peeked ones */
	uint64_t done; /* producer: last published head; consumer: last released tail */
	uint64_t peer; /* cached peer index: producer caches tail, consumer head */
};

/* A record handed to the consumer, pointing into the ring (zero copy). */
struct shf_ring_view {
	const uint8_t *data; /* payload, valid until shf_ring_release() */
	uint32_t len;        /* validated: <= max_rec */
	uint32_t kind;       /* as written by the producer: validate before use */
};

static inline uint64_t shf_ring_rec_bytes(uint32_t len)
{
	return ((uint64_t)SHF_RING_HDR_BYTES + len + (SHF_RING_ALIGN - 1)) &
	       ~(uint64_t)(SHF_RING_ALIGN - 1);
}

/* Largest payload a ring of `size` bytes can carry: a record plus the worst
 * pad in front of it must fit in the array, so a record is <= size/2. */
static inline uint32_t shf_ring_max_payload(uint64_t size)
{
	uint64_t m = size / 2 - SHF_RING_HDR_BYTES;
	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static inline bool shf_ring_size_ok(uint64_t size)
{
	return size >= SHF_RING_MIN_BYTES && size <= SHF_RING_MAX_BYTES &&
	       (size & (size - 1)) == 0;
}

/*
 * Bind a private view to a control block and data array.  `size` and
 * `max_rec` come from the caller's own knowledge (the daemon's config, or a
 * header it validated), never re-read from shared memory later.
 * `zero` resets the shared indices (only the creator does that); otherwise
 * the view starts at the shared indices, which are validated first.
 */
static inline int shf_ring_init(struct shf_ring *r, struct shf_ring_ctl *ctl,
				void *data, uint64_t size, uint32_t max_rec, bool zero)
{
	if (!shf_ring_size_ok(size) || max_rec > shf_ring_max_payload(size))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->ctl = ctl;
	r->data = (uint8_t *)data;
	r->size = size;
	r->mask = size - 1;
	r->max_rec = max_rec;
	if (zero) {
		/* [R]: the region reaches the other side only after its ready
		 * flag (release, proto/shm.c) and its fd crossed a socket */
		atomic_store_explicit(&ctl->head, 0, memory_order_relaxed);      /* [R] */
		atomic_store_explicit(&ctl->tail, 0, memory_order_relaxed);      /* [R] */
		atomic_store_explicit(&ctl->prod_wait, 0, memory_order_relaxed); /* [R] */
		atomic_store_explicit(&ctl->cons_wait, 0, memory_order_relaxed); /* [R] */
		return 0;
	}
	uint64_t h = atomic_load_explicit(&ctl->head, memory_order_acquire); /* [C1] */
	uint64_t t = atomic_load_explicit(&ctl->tail, memory_order_acquire); /* [P2] */
	if (h - t > size || (h | t) % SHF_RING_ALIGN)
		return -EPROTO;
	return 0;
}

/*
 * Start a producer view at the shared head (after shf_ring_init).  The
 * indices are read again here, so they are validated again: a peer that
 * changed them since shf_ring_init() leaves the view broken (r->err).
 */
static inline void shf_ring_init_producer(struct shf_ring *r)
{
	uint64_t h = atomic_load_explicit(&r->ctl->head, memory_order_relaxed); /* [R] own */
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_acquire); /* [P2] */
	r->pos = r->done = h;
	r->peer = t;
	if (h - t > r->size || h % SHF_RING_ALIGN)
		r->err = -EPROTO;
}

/* Start a consumer view at the shared tail (after shf_ring_init).  A
 * misaligned tail would put record headers across the end of the array,
 * so it breaks the view (r->err) instead. */
static inline void shf_ring_init_consumer(struct shf_ring *r)
{
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_relaxed); /* [R] own */
	r->pos = r->done = r->peer = t;
	if (t % SHF_RING_ALIGN)
		r->err = -EPROTO;
}

/* ---------------------------------------------------------------- producer */

/* Bytes free as far as the producer knows; refreshes the cached tail. */
static inline uint64_t shf_ring_prod_free(struct shf_ring *r)
{
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_acquire); /* [P2] */
	/* The consumer may be hostile: a tail ahead of what we published,
	 * behind the tail we saw last, or misaligned is corruption. */
	if (r->done - t > r->size || t - r->peer > r->size || t % SHF_RING_ALIGN) {
		r->err = -EPROTO;
		return 0;
	}
	r->peer = t;
	return r->size - (r->pos - t);
}

/*
 * Reserve a record of `len` payload bytes.  On success returns a pointer to
 * the payload area (8-byte aligned) and the record becomes part of the next
 * shf_ring_publish().  Returns NULL when the ring is full (r->err == 0) or
 * the ring is broken (r->err < 0) or len exceeds max_rec or kind is
 * SHF_REC_PAD (r->err untouched: the caller validates len and kind first).
 */
static inline void *shf_ring_reserve(struct shf_ring *r, uint32_t len, uint32_t kind)
{
	if (len > r->max_rec || kind == SHF_REC_PAD || r->err)
		return NULL;
	uint64_t need = shf_ring_rec_bytes(len);
	uint64_t off = r->pos & r->mask;
	uint64_t pad = (off + need > r->size) ? r->size - off : 0;
	/* Fast path: the cached tail already shows enough room. */
	if (r->size - (r->pos - r->peer) < pad + need) {
		if (shf_ring_prod_free(r) < pad + need)
			return NULL;
	}
	if (pad) {
		struct shf_ring_rec p = {(uint32_t)(pad - SHF_RING_HDR_BYTES), SHF_REC_PAD};
		memcpy(r->data + off, &p, sizeof(p));
		r->pos += pad;
		off = 0;
	}
	struct shf_ring_rec h = {len, kind};
	memcpy(r->data + off, &h, sizeof(h));
	r->pos += need;
	return r->data + off + SHF_RING_HDR_BYTES;
}

/*
 * Growing the record reserved last (docs/ring.md, "Runs that grow"), whose
 * payload is `rec` and whose length is `len` now: private copies the
 * producer kept from shf_ring_reserve() (a consumer may scribble on the
 * header in shared memory, so the producer writes it, never reads it back).
 * Nothing may be reserved after it before it is published, and the
 * consumer never sees its old length: [P1] publishes the grown record whole.
 *
 * shf_ring_grow_room(): how many bytes it can grow by at its end, as the
 * cached tail shows it: the room before the end of the array (0 when it ends
 * there: the next bytes wrap) and under max_rec; 0 when rec is not the
 * last record or the ring is broken.
 * shf_ring_grow(): take `more` of that room (a multiple of 8); the caller
 * writes the bytes, and the new length with shf_ring_set_len() before the
 * publish.
 */
static inline uint32_t shf_ring_grow_room(const struct shf_ring *r, const uint8_t *rec,
					  uint32_t len)
{
	uint64_t off = r->pos & r->mask;
	if (off == 0 || r->err || len > r->max_rec || rec + len != r->data + off)
		return 0;
	uint64_t room = r->size - off;
	uint64_t free_ = r->size - (r->pos - r->peer);
	if (free_ < room)
		room = free_;
	if (r->max_rec - len < room)
		room = r->max_rec - len;
	return (uint32_t)room & ~(SHF_RING_ALIGN - 1);
}

static inline void shf_ring_grow(struct shf_ring *r, uint32_t more)
{
	r->pos += more;
}

static inline void shf_ring_set_len(uint8_t *rec, uint32_t len)
{
	memcpy(rec - SHF_RING_HDR_BYTES + offsetof(struct shf_ring_rec, len), &len, sizeof(len));
}

/* Give back every reservation made since the last shf_ring_publish()
 * (used when a caller reserved and then failed).  Internal: tests only. */
static inline void shf_ring_unreserve_all(struct shf_ring *r)
{
	r->pos = r->done;
}

/* True when reserved records wait for shf_ring_publish().  Internal:
 * tests only. */
static inline bool shf_ring_pending(const struct shf_ring *r)
{
	return r->pos != r->done;
}

/* The two publishes' common halves: the release store of head (false:
 * nothing reserved), and after the caller's fence, the waker's look at the
 * consumer's flag, taken (exchanged to 0) when set: true = ring the bell. */
static inline bool ring_publish_head(struct shf_ring *r)
{
	if (r->pos == r->done)
		return false;
	r->done = r->pos;
	atomic_store_explicit(&r->ctl->head, r->pos, memory_order_release); /* [P1] */
	return true;
}

static inline bool ring_take_cons_wait(struct shf_ring *r)
{
	return atomic_load_explicit(&r->ctl->cons_wait, memory_order_relaxed) &&
	       atomic_exchange_explicit(&r->ctl->cons_wait, 0, memory_order_relaxed);
}

/*
 * Publish every record reserved since the last publish with one release
 * store.  Returns true when the consumer sleeps and must be woken (the
 * caller then rings the consumer's eventfd, see shf_bell_ring()).
 */
static inline bool shf_ring_publish(struct shf_ring *r)
{
	if (!ring_publish_head(r))
		return false;
	atomic_thread_fence(memory_order_seq_cst); /* [D2] */
	return ring_take_cons_wait(r);              /* [D2] */
}

/*
 * Producer going to sleep for space: arm, then re-check.  Returns true if
 * it may sleep (still no room for a `len`-byte record and a worst-case pad
 * in front of it), false if room appeared (the flag is cleared again).
 * Publish first: the consumer cannot free space that unpublished records
 * hold, so nobody would ring the bell.
 */
static inline bool shf_ring_prod_arm(struct shf_ring *r, uint32_t len)
{
	uint64_t need = shf_ring_rec_bytes(len) * 2; /* room for a worst pad */
	if (need > r->size)
		need = r->size;
	atomic_store_explicit(&r->ctl->prod_wait, 1, memory_order_relaxed); /* [D1] */
	atomic_thread_fence(memory_order_seq_cst);                          /* [D1] */
	if (shf_ring_prod_free(r) >= need || r->err) {
		atomic_store_explicit(&r->ctl->prod_wait, 0, memory_order_relaxed); /* [R] */
		return false;
	}
	return true;
}

/*
 * Sticky arm for a producer-side thread about to sleep until the consumer's
 * tail moves (a full ring, or a flush waiting for its records to be taken):
 * the sleeper's half of [D1] without the re-load.  The caller re-checks
 * after it, with shf_ring_reserve() (which re-loads the tail, [P2], when
 * its cached copy shows too little room) or shf_ring_tail_reached(), and
 * sleeps on the space bell only if that still fails.
 *
 * Unlike shf_ring_prod_arm() the flag is never cleared by the producer, so
 * several threads of the producer's side may wait on one arm (the client's
 * senders and its origin flush); a stale flag costs at most one needless
 * bell.  Touches only the shared flag, not the private view: any thread of
 * the producer's side may call it without the view's lock.
 */
static inline void shf_ring_prod_want_space(const struct shf_ring *r)
{
	atomic_store_explicit(&r->ctl->prod_wait, 1, memory_order_relaxed); /* [D1] */
	atomic_thread_fence(memory_order_seq_cst);                          /* [D1] */
}

/*
 * True once the consumer has released everything up to `target`, a head
 * this producer published (its r->done at some point).  Loads the shared
 * tail, not the cached copy, and changes nothing in the view: any thread
 * of the producer's side may call it without the view's lock.  No bounds
 * check: the caller only waits on the answer, and a corrupt tail can only
 * end that wait early or let it time out.
 */
static inline bool shf_ring_tail_reached(const struct shf_ring *r, uint64_t target)
{
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_acquire); /* [P2] */
	return (int64_t)(t - target) >= 0;
}

/* ---------------------------------------------------------------- consumer */

/* Bytes published and not yet peeked; refreshes the cached head. */
static inline uint64_t shf_ring_cons_avail(struct shf_ring *r)
{
	if (r->pos != r->peer)
		return r->peer - r->pos;
	uint64_t h = atomic_load_explicit(&r->ctl->head, memory_order_acquire); /* [C1] */
	/* A hostile producer: head behind what we consumed, too far ahead, or
	 * misaligned.  All are corruption. */
	if (h - r->done > r->size || h - r->pos > r->size || h % SHF_RING_ALIGN) {
		r->err = -EPROTO;
		return 0;
	}
	r->peer = h;
	return h - r->pos;
}

/*
 * Look at the next record without copying.  Returns 1 and fills *v, 0 when
 * the ring is empty, or a negative errno when the ring is corrupt.  PAD
 * records are skipped here.  Records stay valid until shf_ring_release().
 */
static inline int shf_ring_peek(struct shf_ring *r, struct shf_ring_view *v)
{
	/* defined contents on every return (and no maybe-uninitialized
	 * warnings in callers that test the return value) */
	v->data = NULL;
	v->len = 0;
	v->kind = SHF_REC_PAD;
	if (r->err)
		return r->err;
	for (;;) {
		uint64_t avail = shf_ring_cons_avail(r);
		if (r->err)
			return r->err;
		if (avail == 0)
			return 0;
		uint64_t off = r->pos & r->mask;
		struct shf_ring_rec h;
		/* read the header once into private memory, then validate */
		memcpy(&h, r->data + off, sizeof(h));
		if (h.kind == SHF_REC_PAD) {
			uint64_t pad = r->size - off;
			/* a pad always runs to the end of the array */
			if ((uint64_t)h.len + SHF_RING_HDR_BYTES != pad || pad > avail) {
				r->err = -EBADMSG;
				return r->err;
			}
			r->pos += pad;
			continue;
		}
		uint64_t need = shf_ring_rec_bytes(h.len);
		if (h.len > r->max_rec || need > avail || off + need > r->size) {
			r->err = -EBADMSG;
			return r->err;
		}
		v->data = r->data + off + SHF_RING_HDR_BYTES;
		v->len = h.len;
		v->kind = h.kind;
		r->pos += need;
		return 1;
	}
}

/* Undo the last peek (for a record the consumer cannot take yet).  Only
 * valid for the record returned by the most recent shf_ring_peek(). */
static inline void shf_ring_unpeek(struct shf_ring *r, const struct shf_ring_view *v)
{
	r->pos -= shf_ring_rec_bytes(v->len);
}

/*
 * Release every record peeked so far with one release store.  Returns true
 * when the producer sleeps waiting for space and must be woken.
 */
static inline bool shf_ring_release(struct shf_ring *r)
{
	if (r->pos == r->done)
		return false;
	r->done = r->pos;
	atomic_store_explicit(&r->ctl->tail, r->pos, memory_order_release); /* [C2] */
	atomic_thread_fence(memory_order_seq_cst);                          /* [D2] */
	if (atomic_load_explicit(&r->ctl->prod_wait, memory_order_relaxed) &&   /* [D2] */
	    atomic_exchange_explicit(&r->ctl->prod_wait, 0, memory_order_relaxed)) /* [D2] */
		return true;
	return false;
}

/*
 * Consumer going to sleep: arm, then re-check.  Returns true if it may
 * sleep (still empty), false if data appeared (flag cleared again).
 * Release first: the producer may be asleep waiting for exactly the space
 * that peeked-but-unreleased records hold.
 */
static inline bool shf_ring_cons_arm(struct shf_ring *r)
{
	atomic_store_explicit(&r->ctl->cons_wait, 1, memory_order_relaxed); /* [D1] */
	atomic_thread_fence(memory_order_seq_cst);                          /* [D1] */
	if (shf_ring_cons_avail(r) || r->err) {
		atomic_store_explicit(&r->ctl->cons_wait, 0, memory_order_relaxed); /* [R] */
		return false;
	}
	return true;
}

/*
 * Everything the producer has published so far, for a consumer-side
 * thread that waits until the consumer got that far (the client's
 * SHF_FLUSH_DELIVERY).  Loads the shared head, not the cached copy, and
 * changes nothing in the view: any thread of the consumer's side may call
 * it without the view's lock.  Not validated: check it with
 * shf_ring_head_plausible() before waiting on it.
 */
static inline uint64_t shf_ring_head_snapshot(const struct shf_ring *r)
{
	return atomic_load_explicit(&r->ctl->head, memory_order_acquire); /* [C1] */
}

/*
 * The consumer's own shared tail, read by a thread of the consumer's side
 * other than the one that releases (which stores it, [C2]).  Call it after
 * shf_ring_head_snapshot(): relaxed is enough [C3], because the tail the
 * producer had seen when it published that head was stored by us ([C2]),
 * loaded by the producer ([P2]) before its [P1], which our [C1] read.  That
 * chain makes the store happen before this load, so the load returns that
 * tail or a later one, and an honest head is at most `size` ahead of it.
 */
static inline uint64_t shf_ring_tail_snapshot(const struct shf_ring *r)
{
	return atomic_load_explicit(&r->ctl->tail, memory_order_relaxed); /* [C3] */
}

/*
 * Could an honest producer have published `head`, given a `tail` this
 * consumer released (read after the head, so it may already be past it)?
 * False for a head misaligned or more than `size` ahead of the tail.
 */
static inline bool shf_ring_head_plausible(const struct shf_ring *r, uint64_t head, uint64_t tail)
{
	return (int64_t)(head - tail) <= (int64_t)r->size && head % SHF_RING_ALIGN == 0;
}

/* Bytes in use as the consumer sees them (for occupancy statistics). */
static inline uint64_t shf_ring_used(const struct shf_ring *r)
{
	uint64_t h = atomic_load_explicit(&r->ctl->head, memory_order_relaxed); /* [R] */
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_relaxed); /* [R] */
	uint64_t u = h - t;
	return u > r->size ? r->size : u;
}

/* ---------------------------------------------------------------- doorbell */

/* Ring a doorbell eventfd (the sleeper's side of a ring, see docs/ring.md
 * §4; no ring state is touched).  Errors are ignored on purpose: EAGAIN
 * means the counter is saturated (the sleeper will wake anyway), EBADF
 * means the peer is being torn down. */
static inline void shf_bell_ring(int efd)
{
	uint64_t one = 1;
	ssize_t n = write(efd, &one, sizeof(one));
	(void)n;
}

#endif /* SHF_PROTO_RING_H */
