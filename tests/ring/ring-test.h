/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/ring-test.h - helpers shared by the ring tests: checks, guarded
 * mappings, shared-memory regions and the deterministic record pattern.
 *
 * Everything is static inline so each test includes only what it uses
 * without unused-function warnings.
 */
#ifndef SHF_TESTS_RING_TEST_H
#define SHF_TESTS_RING_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proto/ring.h"
#include "proto/shm.h"
#include "tests/lib/check.h"

#define T_PAGE 4096u

/*
 * A ring whose control block and data array sit in an anonymous mapping
 * with PROT_NONE guard pages directly before and after the data array, so
 * any read or write outside [data, data + size) faults (and ASan reports
 * it).  Layout: [ctl page][guard][data ... size][guard].
 */
struct t_guarded {
	uint8_t *map;             /* whole mapping */
	size_t map_len;           /* its length */
	struct shf_ring_ctl *ctl; /* first page */
	uint8_t *data;            /* size bytes, guarded on both sides */
	uint64_t size;            /* data bytes (power of two, >= 4096) */
};

static inline void t_guarded_open(struct t_guarded *g, uint64_t size)
{
	CHECK(size % T_PAGE == 0);
	g->size = size;
	g->map_len = 3 * T_PAGE + size;
	void *m = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECKF(m != MAP_FAILED, "mmap: %s", strerror(errno));
	g->map = m;
	g->ctl = (struct shf_ring_ctl *)g->map;
	g->data = g->map + 2 * T_PAGE;
	CHECK(mprotect(g->map + T_PAGE, T_PAGE, PROT_NONE) == 0);
	CHECK(mprotect(g->data + size, T_PAGE, PROT_NONE) == 0);
}

static inline void t_guarded_close(struct t_guarded *g)
{
	if (g->map)
		munmap(g->map, g->map_len);
	g->map = NULL;
}

/* Bind a producer and a consumer view to a guarded ring, zeroing it. */
static inline void t_guarded_views(struct t_guarded *g, uint32_t max_rec,
				   struct shf_ring *prod, struct shf_ring *cons)
{
	CHECK(shf_ring_init(prod, g->ctl, g->data, g->size, max_rec, true) == 0);
	shf_ring_init_producer(prod);
	CHECK(shf_ring_init(cons, g->ctl, g->data, g->size, max_rec, false) == 0);
	shf_ring_init_consumer(cons);
	CHECK(prod->err == 0 && cons->err == 0);
}

/*
 * A client region in real shared memory: a memfd, sized with
 * posix_fallocate, mapped MAP_SHARED, laid out and formatted by proto/shm.
 * Mappings survive fork(), so both processes see the same bytes.
 */
struct t_region {
	int fd;                   /* the memfd */
	void *base;               /* MAP_SHARED mapping of region_bytes */
	struct shf_shm_layout l;  /* as validated by shf_shm_check() */
};

static inline void t_region_open(struct t_region *reg, uint64_t ring_bytes, uint32_t max_rec)
{
	struct shf_shm_layout l;
	CHECK(shf_shm_layout(ring_bytes, max_rec, &l) == 0);
	reg->fd = memfd_create("shf-ring-test", MFD_CLOEXEC);
	CHECKF(reg->fd >= 0, "memfd_create: %s", strerror(errno));
	int rc = posix_fallocate(reg->fd, 0, (off_t)l.region_bytes);
	CHECKF(rc == 0, "posix_fallocate: %s", strerror(rc));
	reg->base = mmap(NULL, l.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, reg->fd, 0);
	CHECKF(reg->base != MAP_FAILED, "mmap: %s", strerror(errno));
	shf_shm_format(reg->base, &l, 0, 1);
	CHECK(shf_shm_check(reg->base, l.region_bytes, &reg->l) == 0);
}

static inline void t_region_close(struct t_region *reg)
{
	munmap(reg->base, reg->l.region_bytes);
	close(reg->fd);
}

/* ------------------------------------------------------- record pattern */

/* splitmix64 finaliser: a well-mixed 64-bit hash of x. */
static inline uint64_t t_mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* xorshift64 step; the state must not be zero. */
static inline uint64_t t_xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Uniform-ish value in [0, n) (n > 0) from a private generator. */
static inline uint64_t t_below(uint64_t *s, uint64_t n)
{
	return t_xorshift(s) % n;
}

/*
 * Payload of record `seq`: bytes from a xorshift stream seeded by seq, with
 * seq itself in the first 8 bytes when the record is long enough.  Every
 * byte depends on seq, so a record delivered twice, skipped, reordered,
 * truncated or torn fails t_pattern_check().
 */
static inline void t_pattern_fill(uint8_t *p, uint32_t len, uint64_t seq)
{
	uint64_t s = t_mix(seq) | 1;
	uint32_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t v = t_xorshift(&s);
		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = t_xorshift(&s);
		memcpy(p + i, &v, len - i);
	}
	if (len >= 8)
		memcpy(p, &seq, 8);
}

/* Offset of the first wrong byte, or -1 when p holds record seq's payload. */
static inline long t_pattern_check(const uint8_t *p, uint32_t len, uint64_t seq)
{
	uint64_t s = t_mix(seq) | 1;
	uint32_t i = 0;
	if (len >= 8) {
		uint64_t got;
		memcpy(&got, p, 8);
		t_xorshift(&s);
		if (got != seq)
			return 0;
		i = 8;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t v = t_xorshift(&s), got;
		memcpy(&got, p + i, 8);
		if (got != v)
			return i;
	}
	if (i < len) {
		uint64_t v = t_xorshift(&s);
		if (memcmp(p + i, &v, len - i))
			return i;
	}
	return -1;
}

/* A view must lie entirely inside the data array. */
static inline bool t_view_inside(const struct shf_ring *r, const struct shf_ring_view *v)
{
	return v->data >= r->data + SHF_RING_HDR_BYTES && v->data <= r->data + r->size &&
	       (uint64_t)(r->data + r->size - v->data) >= v->len;
}

static inline double t_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parse a positive count from argv[i] or, failing that, the environment. */
static inline uint64_t t_count_arg(int argc, char **argv, int i, const char *env, uint64_t def)
{
	const char *s = argc > i ? argv[i] : getenv(env);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	CHECKF(!errno && !*end && v > 0, "bad count '%s'", s);
	return v;
}

#endif /* SHF_TESTS_RING_TEST_H */
