/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/stress.h - the producer and consumer loops of the ring stress
 * tests, shared by stress.c (two processes) and stress-threads.c (two
 * threads, for ThreadSanitizer).
 *
 * The producer sends records 0..n-1.  Record seq has a length and kind
 * that are functions of seq (mostly small, some up to max_rec) and the
 * payload t_pattern_fill(seq), so the consumer can verify every record
 * independently: sequence, length, kind and every byte.  Both sides batch
 * (publish / release every few records), both sleep on eventfd doorbells
 * with the arm / re-check / wait protocol, and both pause now and then so
 * that the other side runs dry (consumer sleeps) or fills up (producer
 * sleeps).  The consumer also unpeeks records at random.
 */
#ifndef SHF_TESTS_RING_STRESS_H
#define SHF_TESTS_RING_STRESS_H

#include <poll.h>
#include <stdatomic.h>
#include <sys/eventfd.h>

#include "tests/ring/ring-test.h"

#define STRESS_RING_BYTES (64u << 10)
#define STRESS_STALL_S 30 /* no wake-up for this long: fail */

/* State both sides see (shared memory or a global). */
struct stress_shared {
	_Atomic int abort;          /* set by a side that failed */
	_Atomic uint64_t produced;  /* records published so far */
	_Atomic uint64_t consumed;  /* records verified so far */
};

/* One side: its ring view, its doorbells, its counters. */
struct stress_side {
	const char *name;          /* "producer" or "consumer" */
	struct shf_ring *r;        /* private view */
	int my_bell;               /* eventfd this side sleeps on */
	int peer_bell;             /* eventfd the other side sleeps on */
	int peer_gone;             /* fd readable when the peer died, or -1 */
	struct stress_shared *sh;  /* shared state */
	uint64_t records;          /* records to send / expect */
	uint64_t rng;              /* private generator for batching, pauses */
	uint64_t sleeps;           /* times this side slept on its doorbell */
	uint64_t bells;            /* times this side rang the other's doorbell */
	uint64_t unpeeks;          /* consumer: records put back */
};

static inline uint32_t stress_len(uint64_t seq, uint32_t max_rec)
{
	uint64_t h = t_mix(seq ^ UINT64_C(0x5bd1e995));
	uint64_t pick = h % 100, v = h >> 8;
	if (pick < 70)
		return (uint32_t)(v % 65);
	if (pick < 99)
		return (uint32_t)(v % 1025);
	return (uint32_t)(v % ((uint64_t)max_rec + 1));
}

static inline uint32_t stress_kind(uint64_t seq)
{
	return (t_mix(seq) >> 40) % 16 ? SHF_REC_MSG : SHF_REC_MARK;
}

static inline void stress_fail(struct stress_side *s)
{
	atomic_store(&s->sh->abort, 1);
	shf_bell_ring(s->peer_bell);
}

static inline void stress_ring(struct stress_side *s)
{
	shf_bell_ring(s->peer_bell);
	s->bells++;
}

/* Sleep on this side's doorbell after a successful arm.  0 when woken,
 * -1 when the test must stop (the other side failed or died, or no
 * wake-up came for STRESS_STALL_S seconds). */
static inline int stress_sleep(struct stress_side *s)
{
	struct pollfd pfd[2] = {{s->my_bell, POLLIN, 0}, {s->peer_gone, POLLIN, 0}};
	int waited_ms = 0;
	s->sleeps++;
	for (;;) {
		int n = poll(pfd, s->peer_gone >= 0 ? 2 : 1, 200);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: poll: %s\n", s->name, strerror(errno));
			return -1;
		}
		if (atomic_load(&s->sh->abort))
			return -1;
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			uint64_t v;
			if (read(s->my_bell, &v, sizeof(v)) != sizeof(v) && errno != EAGAIN) {
				fprintf(stderr, "%s: read bell: %s\n", s->name, strerror(errno));
				return -1;
			}
			return 0;
		}
		if (n > 0) {
			fprintf(stderr, "%s: the other side exited while this one slept\n", s->name);
			return -1;
		}
		waited_ms += 200;
		if (waited_ms >= STRESS_STALL_S * 1000) {
			fprintf(stderr,
				"%s: no wake-up for %d s (lost wake-up?): produced %" PRIu64
				" consumed %" PRIu64 " head %" PRIu64 " tail %" PRIu64
				" cons_wait %u prod_wait %u\n",
				s->name, STRESS_STALL_S, atomic_load(&s->sh->produced),
				atomic_load(&s->sh->consumed), atomic_load(&s->r->ctl->head),
				atomic_load(&s->r->ctl->tail), atomic_load(&s->r->ctl->cons_wait),
				atomic_load(&s->r->ctl->prod_wait));
			return -1;
		}
	}
}

/* Now and then stop for a while so the other side runs dry or fills up. */
static inline void stress_pause(struct stress_side *s)
{
	if (t_below(&s->rng, 4096) == 0) {
		struct timespec ts = {0, (long)(100000 + t_below(&s->rng, 1900000))};
		nanosleep(&ts, NULL);
	}
}

static inline int stress_produce(struct stress_side *s)
{
	struct shf_ring *r = s->r;
	uint64_t seq = 0, batch = 1;
	while (seq < s->records) {
		uint32_t len = stress_len(seq, r->max_rec);
		uint8_t *d = shf_ring_reserve(r, len, stress_kind(seq));
		if (!d) {
			if (r->err) {
				fprintf(stderr, "producer: ring error %d at seq %" PRIu64 "\n",
					r->err, seq);
				goto fail;
			}
			/* full: publish what is pending, then arm, re-check, sleep */
			if (shf_ring_publish(r))
				stress_ring(s);
			atomic_store_explicit(&s->sh->produced, seq, memory_order_relaxed);
			if (shf_ring_prod_arm(r, len) && stress_sleep(s))
				goto fail;
			continue;
		}
		t_pattern_fill(d, len, seq);
		seq++;
		if (--batch == 0) {
			if (shf_ring_publish(r))
				stress_ring(s);
			atomic_store_explicit(&s->sh->produced, seq, memory_order_relaxed);
			batch = 1 + t_below(&s->rng, 32);
			stress_pause(s);
		}
	}
	if (shf_ring_publish(r))
		stress_ring(s);
	atomic_store(&s->sh->produced, seq);
	return 0;
fail:
	stress_fail(s);
	return -1;
}

static inline int stress_consume(struct stress_side *s)
{
	struct shf_ring *r = s->r;
	struct shf_ring_view v;
	uint64_t seq = 0, batch = 1;
	while (seq < s->records) {
		int rc = shf_ring_peek(r, &v);
		if (rc < 0) {
			fprintf(stderr, "consumer: ring error %d at seq %" PRIu64 "\n", rc, seq);
			goto fail;
		}
		if (rc == 0) {
			/* empty: give back what was read, then arm, re-check, sleep */
			if (shf_ring_release(r))
				stress_ring(s);
			if (atomic_load(&s->sh->abort))
				goto fail;
			if (shf_ring_cons_arm(r) && stress_sleep(s))
				goto fail;
			continue;
		}
		if (t_below(&s->rng, 64) == 0) {
			shf_ring_unpeek(r, &v);
			s->unpeeks++;
			continue;
		}
		uint32_t len = stress_len(seq, r->max_rec);
		long bad = -1;
		if (!t_view_inside(r, &v) || v.len != len || v.kind != stress_kind(seq) ||
		    (bad = t_pattern_check(v.data, v.len, seq)) >= 0) {
			fprintf(stderr,
				"consumer: record %" PRIu64 ": len %u kind %u (want %u %u), "
				"first bad byte %ld\n",
				seq, v.len, v.kind, len, stress_kind(seq), bad);
			goto fail;
		}
		seq++;
		if (--batch == 0) {
			if (shf_ring_release(r))
				stress_ring(s);
			atomic_store_explicit(&s->sh->consumed, seq, memory_order_relaxed);
			batch = 1 + t_below(&s->rng, 64);
			stress_pause(s);
		}
	}
	if (shf_ring_release(r))
		stress_ring(s);
	atomic_store(&s->sh->consumed, seq);
	/* nothing beyond the last record */
	if (shf_ring_peek(r, &v) != 0) {
		fprintf(stderr, "consumer: data after the last record\n");
		goto fail;
	}
	return 0;
fail:
	stress_fail(s);
	return -1;
}

#endif /* SHF_TESTS_RING_STRESS_H */
