/* SPDX-License-Identifier: MIT */
/*
 * client/deliver.c - delivery from the delivery ring (the library's thread
 * or shf_poll()), records and runs handed to the callbacks, and the waits
 * that deliver while they wait (deliver.h).  Called by data.c (flushes,
 * epochs, sends that wait), open.c and info.c; calls wait.c only.  The
 * ring's shared indices are touched only through proto/ring.h's labelled
 * helpers (docs/ring.md).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/deliver.h"
#include "client/wait.h"
#include "proto/shm.h"

/* Lock m, giving up at the (CLOCK_MONOTONIC) deadline, -1: never.  0 or
 * ETIMEDOUT.  pthread_mutex_timedlock() takes CLOCK_REALTIME: convert (a
 * clock step meanwhile only moves this rare timeout). */
int shc_lock_until(pthread_mutex_t *m, int64_t deadline)
{
	if (deadline < 0)
		return pthread_mutex_lock(m);
	if (pthread_mutex_trylock(m) == 0)
		return 0;
	int64_t left = deadline - (int64_t)shc_now_ns();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t abs_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (left > 0 ? left : 0);
	ts.tv_sec = (time_t)(abs_ns / 1000000000);
	ts.tv_nsec = (long)(abs_ns % 1000000000);
	return pthread_mutex_timedlock(m, &ts);
}

/* ------------------------------------------------------------- delivery */

/* Hand recs[0..n) (bytes of payload in all) to the batch callback; count
 * them once it returned (deliver_lock held: the only writer of the
 * delivery counters). */
static void deliver_many(struct shf_ctx *c, const struct shf_rec *recs, unsigned n,
			 uint64_t bytes)
{
	if (!n)
		return;
	c->fn_many(c->arg, recs, n);
	shc_stat_add1w(&c->st.delivered_msgs, n);
	shc_stat_add1w(&c->st.delivered_bytes, bytes);
}

/*
 * The items of a run record v, checked one by one as they are handed out
 * (each header read once): to the batch callback through recs (handing out
 * what recs holds first when the run does not fit beside it), or one by
 * one.  Returns the items delivered, or -1 on a corrupt run (the items
 * before the corrupt one are good and delivered).
 */
static int deliver_run(struct shf_ctx *c, const struct shf_ring_view *v, struct shf_rec *recs,
		       unsigned *k, uint64_t *k_bytes)
{
	struct shf_run_hdr rh;
	if (v->len < SHF_RUN_HDR_BYTES + SHF_RUN_ITEM_BYTES) {
		shc_protocol_error(c, "delivery ring: run of %u bytes", v->len);
		return -1;
	}
	memcpy(&rh, v->data, sizeof(rh)); /* read once */
	bool packed = rh.count & SHF_RUN_PACKED;
	rh.count = shf_run_n(rh.count);
	if (rh.rank < 0 || rh.rank >= c->world || rh.count == 0 ||
	    rh.count > SHF_RUN_MAX_COUNT || (packed && !c->packed)) {
		shc_protocol_error(c, "delivery ring: %srun of %u from rank %d of %d",
				   packed ? "packed " : "", rh.count, rh.rank, c->world);
		return -1;
	}
	if (c->fn_many && *k + rh.count > SHC_BATCH) {
		deliver_many(c, recs, *k, *k_bytes);
		*k = 0;
		*k_bytes = 0;
	}
	const uint8_t *p = v->data + SHF_RUN_HDR_BYTES;
	uint32_t left = v->len - SHF_RUN_HDR_BYTES;
	int done = 0;
	if (packed) {
		/* one item header for all: sizes checked once, then views */
		struct shf_run_item it;
		memcpy(&it, p, sizeof(it)); /* read once (left >= 8: checked above) */
		uint32_t stride = (it.len + 7u) & ~7u;
		if (it.len > c->max_msg ||
		    (uint64_t)left != SHF_RUN_ITEM_BYTES + (uint64_t)rh.count * stride)
			goto bad;
		p += SHF_RUN_ITEM_BYTES;
		if (c->fn_many) {
			for (uint32_t i = 0; i < rh.count; i++, p += stride)
				recs[(*k)++] = (struct shf_rec){rh.rank, c->rank, it.type, it.len, p};
			*k_bytes += (uint64_t)rh.count * it.len;
			return (int)rh.count;
		}
		for (uint32_t i = 0; i < rh.count; i++, p += stride) {
			c->fn(c->arg, rh.rank, c->rank, it.type, p, it.len);
			shc_stat_add1w(&c->st.delivered_msgs, 1);
			shc_stat_add1w(&c->st.delivered_bytes, it.len);
		}
		return (int)rh.count;
	}
	for (uint32_t i = 0; i < rh.count; i++) {
		struct shf_run_item it;
		if (left < SHF_RUN_ITEM_BYTES)
			goto bad;
		memcpy(&it, p, sizeof(it)); /* read once */
		if (it.len > c->max_msg || it.len > left - SHF_RUN_ITEM_BYTES)
			goto bad;
		uint32_t sz = shf_run_item_bytes(it.len);
		if (sz > left)
			goto bad;
		if (c->fn_many) {
			recs[(*k)++] = (struct shf_rec){rh.rank, c->rank, it.type, it.len,
							p + SHF_RUN_ITEM_BYTES};
			*k_bytes += it.len;
		} else {
			c->fn(c->arg, rh.rank, c->rank, it.type, p + SHF_RUN_ITEM_BYTES, it.len);
			shc_stat_add1w(&c->st.delivered_msgs, 1);
			shc_stat_add1w(&c->st.delivered_bytes, it.len);
		}
		done++;
		p += sz;
		left -= sz;
	}
	if (left == 0)
		return done;
bad:
	shc_protocol_error(c, "delivery ring: corrupt run from rank %d (item %d of %u)", rh.rank,
			   done, rh.count);
	return -1;
}

int shc_deliver_batch(struct shf_ctx *c, unsigned max)
{
	if (shc_is_dead(c))
		return shc_dead_err(c);
	struct shf_ctx *outer = shc_in_cb;
	uint64_t done0 = c->deliver.done; /* deliver_lock held: ours */
	unsigned n = 0, k = 0;
	uint64_t k_bytes = 0; /* payload bytes of recs[0..k) */
	bool bad = false;
	/* batch callback: views of up to SHC_BATCH records still in the ring */
	struct shf_rec recs[SHC_BATCH];
	if (max > SHC_BATCH)
		max = SHC_BATCH;
	/* poll mode: nobody else watches the socket while callbacks run here */
	uint64_t checked = c->thread_mode ? 0 : shc_now_ns();
	shc_in_cb = c;
	while (n < max) {
		struct shf_ring_view v;
		int r = shf_ring_peek(&c->deliver, &v);
		if (r == 0)
			break;
		if (r < 0) {
			shc_protocol_error(c, "delivery ring corrupt (%s)",
					   r == -EBADMSG ? "bad record header" : "bad head index");
			bad = true;
			break;
		}
		if (shc_epoch_holds(c)) {
			shf_ring_unpeek(&c->deliver, &v); /* runs once the epoch returned */
			break;
		}
		if (__builtin_expect(v.kind == SHF_REC_RUN, 0)) {
			int e = deliver_run(c, &v, recs, &k, &k_bytes);
			if (e < 0) {
				bad = true;
				break;
			}
			n += (unsigned)e;
			if (shc_is_dead(c))
				break;
			continue;
		}
		if (v.kind != SHF_REC_MSG || v.len < SHF_MSG_HDR_BYTES) {
			shc_protocol_error(c, "delivery ring: record of kind %u and %u bytes",
					   v.kind, v.len);
			bad = true;
			break;
		}
		struct shf_msg_hdr h;
		memcpy(&h, v.data, sizeof(h)); /* read once */
		if (h.rank < 0 || h.rank >= c->world) {
			shc_protocol_error(c, "delivery ring: message from rank %d of %d", h.rank,
					   c->world);
			bad = true;
			break;
		}
		uint32_t len = v.len - SHF_MSG_HDR_BYTES;
		n++;
		if (c->fn_many) {
			recs[k++] = (struct shf_rec){h.rank, c->rank, h.type, len,
						     v.data + SHF_MSG_HDR_BYTES};
			k_bytes += len;
			continue;
		}
		c->fn(c->arg, h.rank, c->rank, h.type, v.data + SHF_MSG_HDR_BYTES, len);
		/* counted per record, as soon as its callback returned;
		 * deliver_lock held: the only writer */
		shc_stat_add1w(&c->st.delivered_msgs, 1);
		shc_stat_add1w(&c->st.delivered_bytes, len);
		if (checked && shc_now_ns() - checked > 1000000u) {
			shc_sock_check(c); /* slow callbacks: look for a hang-up every ms */
			checked = shc_now_ns();
		}
		if (shc_is_dead(c))
			break; /* closed or lost meanwhile: stop handing out records */
	}
	/* the records checked before a corrupt one are good: hand them out */
	deliver_many(c, recs, k, k_bytes);
	if (k && checked && shc_now_ns() - checked > 1000000u)
		shc_sock_check(c);
	shc_in_cb = outer;
	if (bad)
		return shc_dead_err(c);
	/* one release for the batch; the daemon may sleep waiting for room */
	if (shf_ring_release(&c->deliver))
		shf_bell_ring(c->daemon_bell);
	if (c->thread_mode && c->deliver.done != done0) { /* else nothing to tell */
		pthread_mutex_lock(&c->mu);
		c->released = c->deliver.done;
		pthread_cond_broadcast(&c->dcond);
		pthread_mutex_unlock(&c->mu);
	}
	return (int)n;
}

/* deliver_lock held: a batch, or arm the consumer if there is nothing. */
static int deliver_or_arm(struct shf_ctx *c)
{
	int n = shc_deliver_batch(c, SHC_BATCH);
	if (n == 0 && !shf_ring_cons_arm(&c->deliver))
		n = shc_deliver_batch(c, SHC_BATCH); /* came meanwhile (or corrupt: -ENOTCONN) */
	return n;
}

int shc_poll_progress(struct shf_ctx *c)
{
	if (pthread_mutex_trylock(&c->deliver_lock))
		return 0; /* another thread delivers */
	int n = deliver_or_arm(c);
	pthread_mutex_unlock(&c->deliver_lock);
	return n;
}

void shc_poll_restore(struct shf_ctx *c)
{
	if (c->thread_mode || shc_in_cb == c || shc_is_dead(c))
		return;
	if (pthread_mutex_trylock(&c->deliver_lock))
		return; /* its holder delivers and leaves the ring in order */
	if (!shf_ring_cons_arm(&c->deliver))
		shf_bell_ring(c->deliver_bell); /* records wait: make the fd readable */
	pthread_mutex_unlock(&c->deliver_lock);
}

void *shc_delivery_main(void *arg)
{
	struct shf_ctx *c = arg;
	pthread_mutex_lock(&c->mu);
	while (!c->go)
		pthread_cond_wait(&c->cond, &c->mu);
	pthread_mutex_unlock(&c->mu);
	for (;;) {
		if (!shc_is_dead(c)) {
			pthread_mutex_lock(&c->deliver_lock);
			int n = deliver_or_arm(c);
			pthread_mutex_unlock(&c->deliver_lock);
			if (n > 0)
				continue;
		}
		/* Asleep: armed and empty, or dead (then only the stop fd). */
		bool live = !shc_is_dead(c);
		struct pollfd p[3] = {
			{c->stop_fd, POLLIN, 0},
			{c->deliver_bell, POLLIN, 0},
			{c->sock, 0, 0}, /* POLLHUP / POLLERR: the daemon is gone */
		};
		if (poll(p, live ? 3 : 1, -1) < 0)
			continue;
		if (p[0].revents)
			break;
		if (!live)
			continue;
		if (p[1].revents & (POLLERR | POLLNVAL))
			shc_protocol_error(c, "delivery doorbell fd is not a usable eventfd");
		else if (p[1].revents & POLLIN) {
			uint64_t v;
			ssize_t r = read(c->deliver_bell, &v, sizeof(v));
			(void)r;
		}
		if (p[2].revents & (POLLHUP | POLLERR | POLLNVAL))
			shc_sock_hangup(c);
	}
	return NULL;
}

int shc_poll(struct shf_ctx *c, int64_t deadline)
{
	for (;;) {
		uint64_t gen = shc_wait_gen(c);
		if (shc_lock_until(&c->deliver_lock, deadline))
			return 0; /* another thread is delivering the whole time */
		int n = deliver_or_arm(c);
		pthread_mutex_unlock(&c->deliver_lock);
		if (n != 0)
			return n;
		/* empty and armed: the DELIVER bell (and shf_event_fd()) will tell */
		int r = shc_wait(c, gen, deadline);
		if (r == -ETIMEDOUT)
			return 0;
		if (r < 0)
			return r;
	}
}

/* ------------------------------------------------- waits that deliver */

int shc_wait_step(struct shf_ctx *c, uint64_t gen, int64_t deadline)
{
	if (shc_is_dead(c))
		return shc_dead_err(c);
	if (!c->thread_mode && shc_in_cb != c) {
		int n = shc_poll_progress(c);
		if (n < 0)
			return n;
		if (n > 0) {
			/* progress: let the caller re-check, within its deadline */
			if (deadline >= 0 && shc_now_ns() >= (uint64_t)deadline)
				return -ETIMEDOUT;
			return 0;
		}
	}
	return shc_wait(c, gen, deadline);
}

int shc_waiter_wait(struct shf_ctx *c, struct shc_waiter *w, int64_t deadline)
{
	for (;;) {
		pthread_mutex_lock(&c->mu);
		bool done = w->done;
		uint64_t gen = c->gen;
		pthread_mutex_unlock(&c->mu);
		if (done)
			return 0;
		int r = shc_wait_step(c, gen, deadline);
		if (r < 0)
			return r;
	}
}

