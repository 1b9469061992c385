/* SPDX-License-Identifier: MIT */
/*
 * client/sync.c - the calls that wait for what was sent so far:
 * shf_flush() and shf_epoch(), and the epoch's hold of the delivery ring.
 * Above data.c (which publishes their marks, after any held records) and
 * deliver.c (which runs the callbacks while they wait).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "client/data.h"
#include "client/deliver.h"
#include "client/wait.h"
#include "proto/shm.h"

/* ----------------------------------------------------------- epoch hold */

/*
 * The epoch as a phase boundary: no callback for a record sent after its
 * sender returned from epoch k runs here before this rank has returned
 * from epoch k.  Such a record can exist only once every rank has sent
 * phase 2 (DRAINED) of epoch k, this one too; so from the moment this rank
 * sends its phase 2 until its EPOCH_DONE came, its delivery ring is held:
 * the records stay in it, in order, and run after (shf_poll(), the
 * delivery thread).  Nothing else is needed for it: no byte in any
 * record header, no daemon state.  Records sent by callbacks while their
 * rank is inside the same epoch may wait with them (docs/api.md, "The
 * epoch as a phase boundary").
 *
 * Ordering: the hold is stored (seq_cst) before the phase-2 datagram is
 * sent, and a record sent after another rank returned reaches this ring
 * only after the daemons saw that datagram; the delivery loop loads the
 * hold (seq_cst) after peeking each record, so it sees it set.
 */
static void epoch_hold_begin(struct shf_ctx *c)
{
	atomic_store_explicit(&c->epoch_hold, true, memory_order_seq_cst);
}

/* The epoch returned (or failed): deliver what waited.  Wakes the delivery
 * thread, or makes shf_event_fd() readable in poll mode, when records do. */
static void epoch_hold_end(struct shf_ctx *c)
{
	if (!atomic_exchange_explicit(&c->epoch_hold, false, memory_order_seq_cst))
		return;
	if (c->thread_mode)
		shf_bell_ring(c->deliver_bell); /* the thread re-looks at the ring */
	else
		shc_poll_restore(c);
}

/* 0, or -ESRCH / -EHOSTDOWN when a FLUSH_DONE reported drops. */
static int drop_result(uint64_t dead, uint64_t down)
{
	if (dead && down)
		return shc_fail(-ESRCH, "%llu message(s) dropped: destination rank gone; %llu "
				"more: destination node down", (unsigned long long)dead,
				(unsigned long long)down);
	if (dead)
		return shc_fail(-ESRCH, "%llu message(s) dropped: destination rank gone",
				(unsigned long long)dead);
	if (down)
		return shc_fail(-EHOSTDOWN, "%llu message(s) dropped: destination node down",
				(unsigned long long)down);
	return 0;
}

static int flush_remote(struct shf_ctx *c, int64_t deadline)
{
	struct shc_waiter w;
	uint64_t id;
	int r = shc_mark_publish(c, SHF_MARK_FLUSH, &w, deadline, &id);
	if (r)
		return r;
	r = shc_waiter_wait(c, &w, deadline);
	shc_waiter_del(c, &w);
	if (r == -ETIMEDOUT)
		return shc_fail(-ETIMEDOUT, "flush %llu: my records were not all placed within the "
				"timeout", (unsigned long long)id);
	if (r < 0)
		return r;
	if (w.status < 0)
		return shc_fail(w.status, "flush %llu failed: %s%s%.150s", (unsigned long long)id,
				shf_strerror(w.status), w.text[0] ? ": " : "", w.text);
	return drop_result(w.dropped_dead, w.dropped_down);
}

static int flush_delivery(struct shf_ctx *c, int64_t deadline)
{
	/* everything the daemon published by now */
	uint64_t target = shf_ring_head_snapshot(&c->deliver);
	if (c->thread_mode) {
		pthread_mutex_lock(&c->mu);
		int r = 0;
		/* c->released lags the shared tail a little; the tail, read after
		 * the head, bounds any honest head */
		if (!shf_ring_head_plausible(&c->deliver, target,
					     shf_ring_tail_snapshot(&c->deliver))) {
			pthread_mutex_unlock(&c->mu);
			shc_protocol_error(c, "delivery ring head index is corrupt");
			return shc_dead_err(c);
		}
		struct timespec ts = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
		while ((int64_t)(c->released - target) < 0 && !shc_is_dead(c)) {
			if (deadline < 0)
				pthread_cond_wait(&c->dcond, &c->mu);
			else if (pthread_cond_timedwait(&c->dcond, &c->mu, &ts) == ETIMEDOUT &&
				 (int64_t)(c->released - target) < 0) {
				r = -ETIMEDOUT;
				break;
			}
		}
		bool reached = (int64_t)(c->released - target) >= 0;
		pthread_mutex_unlock(&c->mu);
		if (reached)
			return 0;
		if (r == -ETIMEDOUT)
			return shc_fail(-ETIMEDOUT, "delivery callbacks did not drain the ring within "
					"the timeout");
		return shc_dead_err(c);
	}
	/* poll mode: run the callbacks here */
	if (shc_lock_until(&c->deliver_lock, deadline))
		return shc_fail(-ETIMEDOUT, "another thread kept delivering past the timeout");
	int r = 0;
	if (!shf_ring_head_plausible(&c->deliver, target, c->deliver.done)) {
		shc_protocol_error(c, "delivery ring head index is corrupt");
		r = shc_dead_err(c);
	}
	while (!r && (int64_t)(c->deliver.done - target) < 0) {
		uint64_t before = c->deliver.done;
		int n = shc_deliver_batch(c, SHC_BATCH);
		if (n < 0) {
			r = n;
		} else if (n == 0 && shc_epoch_holds(c)) {
			/* another thread's shf_epoch() holds the ring */
			r = shc_fail(-EBUSY, "the delivery ring is held until the epoch under way "
				     "in another thread returns");
		} else if (c->deliver.done == before) {
			shc_protocol_error(c, "delivery ring: published records vanished");
			r = shc_dead_err(c);
		} else if ((int64_t)(c->deliver.done - target) < 0 && deadline >= 0 &&
			   shc_now_ns() >= (uint64_t)deadline) {
			r = shc_fail(-ETIMEDOUT, "delivery callbacks did not drain the ring within "
				     "the timeout");
		}
	}
	pthread_mutex_unlock(&c->deliver_lock);
	shc_poll_restore(c);
	return r;
}

SHF_EXPORT int shf_flush(struct shf_ctx *c, unsigned what, int timeout_ms)
{
	if (!c)
		return shc_fail(-EINVAL, "no context");
	int64_t deadline;
	int r = shc_call_deadline(c, timeout_ms, &deadline);
	if (r)
		return r;
	switch (what) {
	case SHF_FLUSH_ORIGIN:
		r = shc_flush_origin(c, deadline);
		break;
	case SHF_FLUSH_REMOTE:
		r = flush_remote(c, deadline);
		break;
	case SHF_FLUSH_DELIVERY:
		if (shc_in_cb == c)
			return shc_fail(-EDEADLK, "SHF_FLUSH_DELIVERY from a delivery callback would "
					"wait for itself");
		r = shc_hold_flush(c, deadline);
		if (!r)
			r = flush_delivery(c, deadline);
		break;
	default:
		return shc_fail(-EINVAL, "unknown flush target %u", what);
	}
	if (r == 0 || r == -ESRCH || r == -EHOSTDOWN)
		shc_stat_add(&c->st.flushes, 1);
	return r;
}

/* ---------------------------------------------------------------- epoch */

/*
 * The epoch protocol, one stage after the other (enum shc_epoch_stage).
 * A call that times out leaves the stage as it is, and the next shf_epoch()
 * resumes there: the daemon still counts this rank in the epoch, and a
 * second EPOCH mark would be a protocol error.
 */
/* Wait for the epoch's reply; a timeout names who holds it up ("not
 * every rank <what> within the timeout: ..."). */
static int epoch_wait(struct shf_ctx *c, int64_t deadline, const char *what)
{
	int r = shc_waiter_wait(c, &c->epoch_w, deadline);
	if (r != -ETIMEDOUT)
		return r;
	char who[SHC_DETAIL_MAX / 2];
	shc_epoch_who(c, who, sizeof(who));
	return shc_fail(-ETIMEDOUT, "epoch %llu: not every rank %s within the timeout%s "
			"(shf_epoch() again resumes it)", (unsigned long long)c->epoch_n, what, who);
}

static int epoch_run(struct shf_ctx *c, int64_t deadline)
{
	int r;
	if (c->epoch_stage == SHC_EPOCH_IDLE) {
		r = shc_mark_publish(c, SHF_MARK_EPOCH, &c->epoch_w, deadline, &c->epoch_id);
		if (r)
			return r;
		c->epoch_n++;
		c->epoch_stage = SHC_EPOCH_P1;
	}
	if (c->epoch_stage == SHC_EPOCH_P1) {
		r = epoch_wait(c, deadline, "entered");
		if (r < 0)
			return r;
		shc_waiter_del(c, &c->epoch_w);
		if (c->epoch_w.status < 0) {
			c->epoch_stage = SHC_EPOCH_IDLE;
			return shc_fail(c->epoch_w.status, "epoch %llu failed: %s%s%.150s",
					(unsigned long long)c->epoch_n,
					shf_strerror(c->epoch_w.status),
					c->epoch_w.text[0] ? ": " : "", c->epoch_w.text);
		}
		c->epoch_dropped_dead = c->epoch_w.dropped_dead;
		c->epoch_dropped_down = c->epoch_w.dropped_down;
		c->epoch_stage = SHC_EPOCH_DELIVER;
	}
	if (c->epoch_stage == SHC_EPOCH_DELIVER) {
		/* every rank's records for me are in my ring now: run them */
		r = flush_delivery(c, deadline);
		if (r)
			return r;
		shc_waiter_add(c, &c->epoch_w, SHF_IPC_EPOCH_DONE, c->epoch_id);
		struct shf_ipc_epoch m = {c->epoch_id, 2, 0};
		epoch_hold_begin(c); /* before anyone can leave this epoch */
		r = shf_ipc_send(c->sock, SHF_IPC_EPOCH, (uint32_t)c->epoch_id, &m, sizeof(m),
				 NULL, 0);
		if (r) {
			epoch_hold_end(c);
			shc_waiter_del(c, &c->epoch_w);
			shc_mark_dead(c, "cannot send to the daemon: %s", strerror(-r));
			return shc_dead_err(c);
		}
		c->epoch_stage = SHC_EPOCH_P2;
	}
	/* SHC_EPOCH_P2 */
	r = epoch_wait(c, deadline, "drained its deliveries");
	if (r < 0)
		return r; /* still inside the epoch (a later call resumes it): held */
	shc_waiter_del(c, &c->epoch_w);
	c->epoch_stage = SHC_EPOCH_IDLE;
	if (c->epoch_w.status < 0) {
		epoch_hold_end(c);
		return shc_fail(c->epoch_w.status, "epoch %llu failed: %s%s%.150s",
				(unsigned long long)c->epoch_n, shf_strerror(c->epoch_w.status),
				c->epoch_w.text[0] ? ": " : "", c->epoch_w.text);
	}
	/* counted before the hold ends: a callback that reads shf_stats.epochs
	 * sees k for every record sent between its sender's epochs k and k+1
	 * (docs/api.md) */
	shc_stat_add(&c->st.epochs, 1);
	epoch_hold_end(c);
	return drop_result(c->epoch_dropped_dead, c->epoch_dropped_down);
}

SHF_EXPORT int shf_epoch(struct shf_ctx *c, int timeout_ms)
{
	if (!c)
		return shc_fail(-EINVAL, "no context");
	if (shc_in_cb == c)
		return shc_fail(-EDEADLK, "shf_epoch() from a delivery callback would wait for "
				"itself");
	int64_t deadline;
	int r = shc_call_deadline(c, timeout_ms, &deadline);
	if (r)
		return r;
	pthread_mutex_lock(&c->mu);
	bool busy = c->epoch_busy;
	c->epoch_busy = true;
	pthread_mutex_unlock(&c->mu);
	if (busy)
		return shc_fail(-EBUSY, "another thread is in shf_epoch() on this context");
	r = epoch_run(c, deadline);
	pthread_mutex_lock(&c->mu);
	c->epoch_busy = false;
	pthread_mutex_unlock(&c->mu);
	return r;
}
