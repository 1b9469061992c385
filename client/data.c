/* SPDX-License-Identifier: MIT */
/*
 * client/data.c - the send side of a context: shf_send(), shf_send_many()
 * and shf_bcast() into the send ring, SHF_MORE's held records, shf_poll()
 * (it pushes them first), and what flushes and epochs publish (sync.c
 * waits for them); delivery and the waits that deliver are deliver.c's.
 *
 * The middle of the client's call graph: it calls the wait engine
 * (wait.c) and is called by open.c; wait.c never calls back here.  Every
 * access to the shared ring indices goes through proto/ring.h's labelled
 * helpers (docs/ring.md lists them).
 *
 * Record format in both rings: kind SHF_REC_MSG, payload struct shf_msg_hdr
 * {rank, type} then the data, or SHF_REC_RUN (runs.c).  `rank` is the
 * destination in the send ring and the source in the delivery ring.  Flush
 * and epoch requests travel in the send ring as SHF_REC_MARK records
 * (struct shf_mark), behind the records they cover; the daemon answers on
 * the control socket.
 *
 * Poll mode (delivery_thread = 0): every blocking wait here (a full send
 * ring, a flush, an epoch) also runs the callbacks of waiting records, so
 * two ranks blocked sending to each other still make progress.  Callbacks
 * can therefore run inside shf_send(), shf_flush(), shf_epoch() and
 * shf_close() in poll mode, on the calling thread.
 */
#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/data.h"
#include "client/deliver.h"
#include "client/runs.h"
#include "client/wait.h"
#include "proto/shm.h"

/* ------------------------------------------------ the send side's lock */

/*
 * send_lock, biased to the thread that opened the context.  Most
 * programs send from one thread: that thread (the owner) enters with two
 * relaxed stores and a relaxed load, no atomic read-modify-write and no
 * fence.  The first time any other thread enters, it takes the mutex and
 * revokes the bias for good (send_shared); from then on every thread,
 * the owner too, takes the mutex.  The owner's entry and the revocation
 * are an asymmetric Dekker pair (docs/ring.md):
 *
 *   [L1] owner:   store busy = 1; compiler barrier; load shared
 *   [L2] revoker: store shared = 1; membarrier(PRIVATE_EXPEDITED);
 *                 load busy (acquire) until 0
 *   [L3] owner:   store busy = 0 (release) on leaving; the revoker's
 *                 acquire load of it orders the owner's last section
 *                 before everything the revoker does under the mutex
 *
 * membarrier() runs a full barrier on every running thread of this
 * process, so the owner's [L1] either completed before it (the revoker
 * then sees busy = 1 and waits for [L3]) or starts after it (the owner
 * then sees shared = 1 and takes the mutex).  Without a usable
 * membarrier (old kernel, seccomp) the bias is never given: every send
 * takes the mutex, as before.
 */
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;
static bool membarrier_ok;

/* Per process and for good; may be refused (old kernel, seccomp): then
 * the bias is never given. */
static void membarrier_register(void)
{
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	membarrier_ok = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
			syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* Publish the send ring's reservations ([P1], then the [D2] fence and the
 * daemon's flag: its bell is rung when it sleeps). */
static inline bool send_publish(struct shf_ctx *c)
{
	return shf_ring_publish(&c->send);
}

void shc_send_lock_init(struct shf_ctx *c)
{
	pthread_once(&membarrier_once, membarrier_register);
	c->send_owner = pthread_self();
	/* [R]: the context reaches other threads only through shf_open()'s
	 * return (or the delivery thread's start, which synchronises) */
	atomic_store_explicit(&c->send_shared, !membarrier_ok, memory_order_relaxed);
	atomic_store_explicit(&c->send_busy, false, memory_order_relaxed);
}

/* A second thread takes the send side: end the bias (send_lock held). */
static void send_revoke(struct shf_ctx *c)
{
	atomic_store_explicit(&c->send_shared, true, memory_order_relaxed);        /* [L2] */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) { /* [L2] */
		/* registered at start, so this cannot fail; if it does, the
		 * owner may not see the flag: give up the context, loudly */
		shc_mark_dead(c, "membarrier() failed (%s): the send lock is unsafe",
			      strerror(errno));
	}
	/* the owner's section is short and never sleeps ([L3] before any wait) */
	while (atomic_load_explicit(&c->send_busy, memory_order_acquire)) /* [L2]/[L3] */
		sched_yield();
}

/* Enter the send side; returns true on the owner's fast path.  Pass the
 * result to send_leave(). */
static inline bool send_enter(struct shf_ctx *c)
{
	if (!atomic_load_explicit(&c->send_shared, memory_order_relaxed) &&
	    pthread_equal(pthread_self(), c->send_owner)) {
		atomic_store_explicit(&c->send_busy, true, memory_order_relaxed); /* [L1] */
		atomic_signal_fence(memory_order_seq_cst);                        /* [L1] */
		if (!atomic_load_explicit(&c->send_shared, memory_order_relaxed)) /* [L1] */
			return true;
		atomic_store_explicit(&c->send_busy, false, memory_order_release); /* [L3] */
	}
	pthread_mutex_lock(&c->send_lock);
	if (!atomic_load_explicit(&c->send_shared, memory_order_relaxed))
		send_revoke(c);
	return false;
}

static inline void send_leave(struct shf_ctx *c, bool fast)
{
	if (fast)
		atomic_store_explicit(&c->send_busy, false, memory_order_release); /* [L3] */
	else
		pthread_mutex_unlock(&c->send_lock);
}

/* ----------------------------------------------------------------- send */

/*
 * Reserve a record in the send ring; send_lock held.  Blocks while the ring
 * is full unless nonblock (then -EAGAIN), up to the deadline.  send_lock is
 * dropped while asleep: other senders (a callback's SHF_NONBLOCK reply, say)
 * must never wait for a sleeper, or two ranks could stall each other.
 * deadline: CLOCK_MONOTONIC ns, -1 never, or SEND_DEADLINE_LAZY: the
 * context's timeout counted from the first wait, so a send that finds room
 * (nearly all of them) reads no clock.
 */
#define SEND_DEADLINE_LAZY INT64_MIN

/* What a send waits for: one record's reservation (*p set), or `need`
 * bytes free in the ring (p NULL). */
struct send_want {
	uint32_t kind, plen;
	uint64_t need;
	void *p;
};

static bool send_try(struct shf_ctx *c, struct send_want *w)
{
	if (w->need)
		return shf_ring_prod_free(&c->send) >= w->need;
	w->p = shf_ring_reserve(&c->send, w->plen, w->kind);
	return w->p != NULL;
}

static int send_wait(struct shf_ctx *c, struct send_want *w, bool nonblock, int64_t deadline,
		     bool *fast)
{
	uint64_t t0 = 0;
	bool waited = false;
	int r = 0;
	for (;;) {
		if (shc_is_dead(c)) {
			r = shc_dead_err(c);
			break;
		}
		bool ok = send_try(c, w);
		if (!ok && !c->send.err && !nonblock) {
			if (!t0) {
				t0 = shc_now_ns();
				if (deadline == SEND_DEADLINE_LAZY)
					deadline = shc_deadline(c->timeout_ms);
			}
			uint64_t gen = shc_wait_gen(c);
			/* Arm, then retry ([D1] with the daemon's release [D2]).
			 * The flag stays set: other threads may sleep on it too
			 * (shf_flush ORIGIN). */
			shf_ring_prod_want_space(&c->send);
			ok = send_try(c, w);
			if (!ok && !c->send.err) {
				waited = true;
				send_leave(c, *fast);
				r = shc_wait_step(c, gen, deadline);
				*fast = send_enter(c);
				if (r == -ETIMEDOUT) {
					r = shc_fail(-ETIMEDOUT, "send ring still full at the timeout "
						     "(the daemon or the consumers do not keep up); "
						     "nothing of this record was sent");
					break;
				}
				if (r < 0)
					break;
				continue;
			}
		}
		if (ok && !c->send.err)
			break;
		if (c->send.err) {
			shc_protocol_error(c, "send ring: the daemon's tail index is corrupt");
			r = shc_dead_err(c);
			break;
		}
		shc_stat_add(&c->st.send_eagain, 1);
		r = shc_fail_str(-EAGAIN, "send ring full");
		break;
	}
	if (t0 && w->kind != SHF_REC_MARK) /* a send's waits, not a flush's */
		shc_stat_add(&c->st.send_blocked_ns, shc_now_ns() - t0);
	if (waited)
		shc_poll_restore(c);
	return r;
}

static inline int send_reserve(struct shf_ctx *c, uint32_t kind, uint32_t plen, bool nonblock,
			       int64_t deadline, void **p_out, bool *fast)
{
	/* nearly always there is room: no wait loop then */
	if (!shc_is_dead(c) && (*p_out = shf_ring_reserve(&c->send, plen, kind)) != NULL)
		return 0;
	struct send_want w = {kind, plen, 0, NULL};
	int r = send_wait(c, &w, nonblock, deadline, fast);
	if (!r)
		*p_out = w.p;
	return r;
}

/* ------------------------------------------------------- held records */

/*
 * shf_send(SHF_MORE): "more sends follow".  The record is copied into
 * c->hold, and the held records go together, grouped by destination into
 * runs with one publication (one [P1], one [D2]: the fence per burst of
 * docs/ring.md), as shf_send_many()'s records do.  They go before
 * anything else the thread sends or waits for: its next shf_send()
 * without the flag, shf_send_many(), shf_bcast(), shf_flush(),
 * shf_epoch(), shf_poll(), shf_close(); and when the hold is full (a
 * window: SHC_RUN_WIN records or SHC_HOLD_CAP bytes).  So per-pair order
 * is kept, and nothing is held across a wait.
 *
 * Only the opener thread holds (and pushes) records: another thread's
 * SHF_MORE record (the delivery thread's callbacks, say) goes at once, so
 * no thread ever depends on another to push its records.  In poll mode
 * callbacks run on the opener thread, inside its waits, a push's wait for
 * room too: their sends hold or push like any other (a push nested in a
 * push is safe, send_runs() regroups after every wait, and records leave
 * the hold only from its front), so none overtakes a held record.  The
 * copy is the price: the payload bytes, once.
 */
static unsigned send_runs(struct shf_ctx *c, const struct shf_msg *msgs, unsigned n,
			  struct shc_hold *hold, bool nonblock, int64_t deadline, bool *fast,
			  uint64_t *bytes_out, int *err);
static void send_push(struct shf_ctx *c);

/* The hold, or NULL (relaxed: the pointer is stored once, by the opener
 * thread, and only that thread uses what it points to). */
static inline struct shc_hold *hold_of(const struct shf_ctx *c)
{
	return atomic_load_explicit(&((struct shf_ctx *)c)->hold, memory_order_relaxed);
}

/* May this thread hold and push records here? */
static inline bool hold_mine(const struct shf_ctx *c)
{
	return c->runs && pthread_equal(pthread_self(), c->send_owner);
}

/* Has this thread held records to push? */
static inline bool hold_pending(const struct shf_ctx *c)
{
	struct shc_hold *h = hold_of(c);
	return h && hold_mine(c) && h->n; /* the owner only reads n */
}

/* Send the held records (send side entered, hold_mine()): 0 when none is
 * left, else the error (-EAGAIN, -ETIMEDOUT, dead) with the rest still
 * held, in order. */
static int hold_push(struct shf_ctx *c, bool nonblock, int64_t deadline, bool *fast)
{
	struct shc_hold *h = hold_of(c);
	if (!h || !h->n)
		return 0;
	uint64_t bytes = 0;
	int err = 0;
	unsigned done = send_runs(c, NULL, 0, h, nonblock, deadline, fast, &bytes, &err);
	if (done) {
		send_push(c);
		shc_stat_add1w(&c->st.sent_msgs, done);
		shc_stat_add1w(&c->st.sent_bytes, bytes);
		if (!c->thread_mode && (c->send_count += done) >= 256) {
			c->send_count = 0;
			c->check_sock = true; /* as shf_send_many() */
		}
	}
	return h->n ? (err ? err : -EAGAIN) : 0;
}

/* shf_send(SHF_MORE) (send side entered, hold_mine()): 0 held, 1 not
 * held (send it at once: too big to hold, or no memory; what was held
 * went first), or the error of pushing a full hold. */
static int hold_record(struct shf_ctx *c, int32_t rank, uint32_t type, const void *data,
		       uint32_t len, bool nonblock, bool *fast)
{
	struct shc_hold *h = hold_of(c);
	if (!h) {
		uint32_t cap = c->send.size / 8 < SHC_HOLD_CAP ? (uint32_t)(c->send.size / 8)
							      : SHC_HOLD_CAP;
		h = shc_hold_new(cap);
		if (!h)
			return 1;
		atomic_store_explicit(&c->hold, h, memory_order_relaxed);
	}
	if (len > h->cap) {
		int r = hold_push(c, nonblock, SEND_DEADLINE_LAZY, fast);
		return r ? r : 1;
	}
	if (!shc_hold_fits(h, len)) {
		int r = hold_push(c, nonblock, SEND_DEADLINE_LAZY, fast);
		if (r)
			return r;
	}
	shc_hold_add(h, rank, type, data, len);
	return 0;
}

int shc_hold_flush(struct shf_ctx *c, int64_t deadline)
{
	if (!hold_pending(c))
		return 0;
	bool fast = send_enter(c);
	int r = hold_push(c, false, deadline, &fast);
	send_leave(c, fast);
	return r;
}

int shc_hold_close(struct shf_ctx *c, int64_t deadline)
{
	struct shc_hold *h = hold_of(c);
	if (!h || !h->n)
		return 0;
	int r = shc_is_dead(c) ? shc_dead_err(c) : 0; /* then they cannot go */
	if (!r) {
		bool fast = send_enter(c); /* any thread: the context is going */
		r = hold_push(c, false, deadline, &fast);
		send_leave(c, fast);
	}
	if (!h->n)
		return 0;
	return shc_fail(r, "%u record(s) sent with SHF_MORE could not go before the close: %s",
			h->n, shf_strerror(r));
}

/* One message record: rank is the destination, or SHF_MSG_BCAST[_SELF]. */
static int send_record(struct shf_ctx *c, int32_t rank, uint32_t type, const void *data,
		       uint32_t len, bool nonblock)
{
	bool fast = send_enter(c);
	if (c->check_sock) {
		/* poll mode has no thread watching the socket: look now and then */
		c->check_sock = false;
		shc_sock_check(c);
	}
	int r;
	if (__builtin_expect(hold_pending(c), 0)) {
		r = hold_push(c, nonblock, SEND_DEADLINE_LAZY, &fast);
		if (r) {
			send_leave(c, fast);
			return r;
		}
	}
	/* A full ring waits up to the context's timeout (-1: for ever), like
	 * every other wait: a hung daemon or a consumer that stopped reading
	 * must not hold this thread for good.  -ETIMEDOUT reserved nothing:
	 * the message was not sent and may be sent again. */
	void *p;
	r = send_reserve(c, SHF_REC_MSG, SHF_MSG_HDR_BYTES + len, nonblock, SEND_DEADLINE_LAZY, &p,
			 &fast);
	if (r) {
		send_leave(c, fast);
		return r;
	}
	struct shf_msg_hdr h = {rank, type};
	memcpy(p, &h, sizeof(h));
	if (len)
		memcpy((char *)p + SHF_MSG_HDR_BYTES, data, len);
	bool bell = send_publish(c);
	if (bell)
		shf_bell_ring(c->daemon_bell);
	/* An idle daemon (bell) or every 256th send: check for a hang-up at
	 * the next send.  Costs one poll() now and then, none on a busy path. */
	if (!c->thread_mode && (bell || ++c->send_count >= 256)) {
		c->send_count = 0;
		c->check_sock = true;
	}
	/* send_lock held (or the owner's section): the only writer */
	shc_stat_add1w(&c->st.sent_msgs, 1);
	shc_stat_add1w(&c->st.sent_bytes, len);
	send_leave(c, fast);
	return 0;
}

/* The checks every send makes of its context and flags (0 or the error). */
static inline int check_send(struct shf_ctx *c, unsigned flags, unsigned known)
{
	if (!c)
		return shc_fail(-EINVAL, "no context");
	if (shc_is_dead(c))
		return shc_dead_err(c);
	if (flags & ~known)
		return shc_fail(-EINVAL, "unknown flags 0x%x", flags & ~known);
	return 0;
}

/* Why a record fails check_record() (the cold half). */
static __attribute__((noinline, cold)) int record_error(const struct shf_ctx *c, int dst,
							 const void *data, uint32_t len, long idx)
{
	char at[32] = "";
	if (idx >= 0)
		snprintf(at, sizeof(at), "msgs[%ld]: ", idx);
	if (dst < 0 || dst >= c->world)
		return shc_fail(-ESRCH, "%srank %d is outside the world [0, %d)", at, dst, c->world);
	if (len > c->max_msg)
		return shc_fail(-EMSGSIZE, "%s%u bytes exceed the daemon's max_msg of %u", at, len,
				c->max_msg);
	if (!data && len)
		return shc_fail(-EINVAL, "%sdata is NULL and len is %u", at, len);
	return 0;
}

/* The checks of one record: shf_send()'s arguments, or msgs[idx] of
 * shf_send_many() (idx >= 0: the error names it). */
static inline int check_record(const struct shf_ctx *c, int dst, const void *data, uint32_t len,
			       long idx)
{
	if ((uint32_t)dst < (uint32_t)c->world && len <= c->max_msg && (data || !len))
		return 0;
	return record_error(c, dst, data, len, idx);
}

/* shf_send(SHF_MORE) (flags checked, the record too) when the hold has no
 * room or does not exist yet: held, or sent at once when it cannot be
 * (another thread, too big, no memory). */
static __attribute__((noinline)) int send_more(struct shf_ctx *c, int32_t dst, uint32_t type,
					       const void *data, uint32_t len, bool nonblock)
{
	if (!hold_mine(c))
		return send_record(c, dst, type, data, len, nonblock);
	bool fast = send_enter(c);
	int r = hold_record(c, dst, type, data, len, nonblock, &fast);
	send_leave(c, fast);
	return r <= 0 ? r : send_record(c, dst, type, data, len, nonblock);
}

SHF_EXPORT int shf_send(struct shf_ctx *c, int dst, uint32_t type, const void *data, uint32_t len,
			unsigned flags)
{
	/* SHF_MORE on the opener thread with room in its hold: a copy and
	 * nothing else (the hold is that thread's alone: no send lock) */
	struct shc_hold *h;
	if ((flags & ~SHF_NONBLOCK) == SHF_MORE && c && (h = hold_of(c)) && hold_mine(c) &&
	    shc_hold_fits(h, len) && !shc_is_dead(c)) {
		int r = check_record(c, dst, data, len, -1);
		if (!r)
			shc_hold_add(h, dst, type, data, len);
		return r;
	}
	int r = check_send(c, flags, SHF_NONBLOCK | SHF_MORE);
	if (!r)
		r = check_record(c, dst, data, len, -1);
	if (r)
		return r;
	if (flags & SHF_MORE)
		return send_more(c, dst, type, data, len, flags & SHF_NONBLOCK);
	return send_record(c, dst, type, data, len, flags & SHF_NONBLOCK);
}

/* Publish what is written so far; ring the daemon's bell if it sleeps. */
static void send_push(struct shf_ctx *c)
{
	if (send_publish(c))
		shf_bell_ring(c->daemon_bell);
}

/*
 * shf_send_many() as runs (docs/ring.md, "Runs"): the records of a window
 * of the call are grouped by destination, in order within each, and each
 * group goes as one SHF_REC_RUN record (a group of one as a plain record).
 * A window is written only once the ring has room for all of it, so the
 * records sent are always a prefix of msgs: a short count (SHF_NONBLOCK, a
 * timeout) means msgs[0, count) went and the rest did not.
 */
/* Records of msgs[0, n) (checked) as runs, or (hold != NULL) the held
 * records, each window dropped from the hold as it is written.  Returns
 * the count written (not yet published), with *err set when it is short;
 * send side entered.  After a wait for room the window is grouped again:
 * in poll mode a callback on this thread may meanwhile have pushed held
 * records (a nested push) or held more, always at the hold's end. */
static unsigned send_runs(struct shf_ctx *c, const struct shf_msg *msgs, unsigned n,
			  struct shc_hold *hold, bool nonblock, int64_t deadline, bool *fast,
			  uint64_t *bytes_out, int *err)
{
	struct shc_run_win w;
	/* a window fits a quarter of the ring, so that it always fits once
	 * the daemon has taken what is there */
	uint64_t budget = c->send.size / 4;
	unsigned done = 0;
	int r = 0;
	for (;;) {
		const struct shf_msg *m = hold ? hold->msgs : msgs + done;
		unsigned left = hold ? hold->n : n - done;
		if (!left)
			break;
		shc_run_group(c, m, left < SHC_RUN_WIN ? left : SHC_RUN_WIN, budget, &w);
		/* room for the window and a pad in front of its biggest record */
		struct send_want sw = {SHF_REC_RUN, 0, w.ring + w.biggest, NULL};
		if (shf_ring_prod_free(&c->send) < sw.need) {
			send_push(c); /* what is written goes first: the daemon makes room */
			r = send_wait(c, &sw, nonblock, deadline, fast);
			if (r)
				break;
			continue;
		}
		shc_run_write(c, m, &w);
		if (c->send.err) {
			shc_protocol_error(c, "send ring: the daemon's tail index is corrupt");
			r = shc_dead_err(c);
			break;
		}
		done += w.n;
		*bytes_out += w.payload;
		if (hold)
			shc_hold_shift(hold, w.n);
	}
	*err = r;
	return done;
}

/* Records of msgs[0, n) (checked) one by one. */
static int send_plain(struct shf_ctx *c, const struct shf_msg *msgs, unsigned n, bool nonblock,
		      bool *fast, uint64_t *bytes_out)
{
	unsigned i = 0;
	int r = 0;
	for (; i < n; i++) {
		const struct shf_msg *m = &msgs[i];
		uint32_t plen = SHF_MSG_HDR_BYTES + m->len;
		void *p = shf_ring_reserve(&c->send, plen, SHF_REC_MSG);
		if (!p) {
			/* full (or broken): what is written goes first, so that
			 * the daemon can make room while this waits */
			send_push(c);
			r = send_reserve(c, SHF_REC_MSG, plen, nonblock, SEND_DEADLINE_LAZY, &p,
					 fast);
			if (r)
				break;
		}
		struct shf_msg_hdr h = {m->dst, m->type};
		memcpy(p, &h, sizeof(h));
		if (m->len)
			memcpy((char *)p + SHF_MSG_HDR_BYTES, m->data, m->len);
		*bytes_out += m->len;
	}
	return i ? (int)i : r;
}

SHF_EXPORT int shf_send_many(struct shf_ctx *c, const struct shf_msg *msgs, unsigned n,
			     unsigned flags)
{
	int e = check_send(c, flags, SHF_NONBLOCK);
	if (e)
		return e;
	if (n == 0)
		return 0;
	if (!msgs)
		return shc_fail(-EINVAL, "msgs is NULL and n is %u", n);
	if (n > INT_MAX)
		return shc_fail(-EINVAL, "n %u is over INT_MAX", n);
	for (unsigned i = 0; i < n; i++) {
		int r = check_record(c, msgs[i].dst, msgs[i].data, msgs[i].len, (long)i);
		if (r)
			return r;
	}
	bool nonblock = flags & SHF_NONBLOCK;
	bool fast = send_enter(c);
	if (c->check_sock) {
		c->check_sock = false;
		shc_sock_check(c);
	}
	uint64_t bytes = 0;
	int r = 0;
	if (hold_pending(c))
		r = hold_push(c, nonblock, SEND_DEADLINE_LAZY, &fast);
	if (!r && c->runs) {
		int err = 0;
		unsigned done = send_runs(c, msgs, n, NULL, nonblock, SEND_DEADLINE_LAZY, &fast,
					  &bytes, &err);
		r = done ? (int)done : err;
	} else if (!r) {
		r = send_plain(c, msgs, n, nonblock, &fast, &bytes);
	}
	unsigned i = r > 0 ? (unsigned)r : 0;
	if (i)
		send_push(c);
	if (!c->thread_mode && (c->send_count += i) >= 256) {
		c->send_count = 0;
		c->check_sock = true;
	}
	shc_stat_add1w(&c->st.sent_msgs, i);
	shc_stat_add1w(&c->st.sent_bytes, bytes);
	send_leave(c, fast);
	return r; /* a short count: -EAGAIN, -ETIMEDOUT or dead stays in the error detail */
}

SHF_EXPORT int shf_bcast(struct shf_ctx *c, uint32_t type, const void *data, uint32_t len,
			 unsigned flags)
{
	int r = check_send(c, flags, SHF_NONBLOCK | SHF_BCAST_SELF);
	if (r)
		return r;
	if (len > c->max_msg)
		return shc_fail(-EMSGSIZE, "%u bytes exceed the daemon's max_msg of %u", len,
				c->max_msg);
	if (!data && len)
		return shc_fail(-EINVAL, "data is NULL and len is %u", len);
	return send_record(c, (flags & SHF_BCAST_SELF) ? SHF_MSG_BCAST_SELF : SHF_MSG_BCAST, type,
			   data, len, flags & SHF_NONBLOCK);
}

/* ----------------------------------------------------------------- poll */

/* Here, not in deliver.c, because the held records go first. */
SHF_EXPORT int shf_poll(struct shf_ctx *c, int timeout_ms)
{
	if (!c)
		return shc_fail(-EINVAL, "no context");
	if (c->thread_mode)
		return shc_fail(-EINVAL, "shf_poll() needs opts.delivery_thread = 0");
	if (shc_in_cb == c)
		return shc_fail(-EDEADLK, "shf_poll() from a delivery callback of the same context");
	if (timeout_ms < -1)
		return shc_fail(-EINVAL, "timeout_ms %d: use >= 0 or -1 (forever)", timeout_ms);
	if (shc_is_dead(c))
		return shc_dead_err(c);
	int64_t deadline = shc_deadline(timeout_ms); /* 0: look, do not wait */
	/* SHF_MORE's held records go before this thread waits for anything
	 * (a wait for room delivers meanwhile); what finds no room by the
	 * deadline stays held for the next call */
	int r = shc_hold_flush(c, deadline);
	if (r < 0 && r != -ETIMEDOUT)
		return r;
	return shc_poll(c, deadline);
}

/* ------------------------------------------------------ flush and epoch */

int shc_flush_origin(struct shf_ctx *c, int64_t deadline)
{
	bool fast = send_enter(c);
	int r = hold_pending(c) ? hold_push(c, false, deadline, &fast) : 0;
	uint64_t target = c->send.done; /* everything published so far */
	send_leave(c, fast);
	if (r)
		return r;
	bool waited = false;
	for (;;) {
		uint64_t gen = shc_wait_gen(c);
		if (shc_is_dead(c)) {
			r = shc_dead_err(c);
			break;
		}
		if (shf_ring_tail_reached(&c->send, target))
			break;
		/* arm for the SPACE bell, re-check ([D1]); the flag stays set */
		shf_ring_prod_want_space(&c->send);
		if (shf_ring_tail_reached(&c->send, target))
			break;
		waited = true;
		r = shc_wait_step(c, gen, deadline);
		if (r == -ETIMEDOUT) {
			r = shc_fail(-ETIMEDOUT, "the daemon did not take all my records within the "
				     "timeout");
			break;
		}
		if (r < 0)
			break;
	}
	if (waited)
		shc_poll_restore(c);
	return r;
}

int shc_mark_publish(struct shf_ctx *c, uint32_t what, struct shc_waiter *w, int64_t deadline,
		     uint64_t *id_p)
{
	bool fast = send_enter(c);
	/* held records go first: they were sent before this mark */
	int r = hold_pending(c) ? hold_push(c, false, deadline, &fast) : 0;
	if (r) {
		send_leave(c, fast);
		return r;
	}
	/* One sequence for flushes and epochs; the low 32 bits (the reply's
	 * header id) are never 0, which means "unsolicited". */
	uint64_t id = atomic_load_explicit(&c->mark_seq, memory_order_relaxed) + 1;
	if ((uint32_t)id == 0)
		id++;
	/* relaxed: see mark_seq in client.h */
	atomic_store_explicit(&c->mark_seq, id, memory_order_relaxed);
	shc_waiter_add(c, w, SHF_IPC_FLUSH_DONE, id);
	void *p;
	r = send_reserve(c, SHF_REC_MARK, sizeof(struct shf_mark), false, deadline, &p, &fast);
	if (r) {
		shc_waiter_del(c, w);
		send_leave(c, fast);
		return r;
	}
	struct shf_mark m = {id, what, 0};
	memcpy(p, &m, sizeof(m));
	if (send_publish(c))
		shf_bell_ring(c->daemon_bell);
	send_leave(c, fast);
	*id_p = id;
	return 0;
}
