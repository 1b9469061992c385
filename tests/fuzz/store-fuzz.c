/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/store-fuzz.c - mutation fuzzing of the key-value store's
 * parser and request handling (proto/store.c, daemon/store.c).
 *
 * Valid requests of every query type, in both dialects, are generated,
 * mutated (bit flips, boundary values in length fields, truncation,
 * extension, splicing of two requests) and fed
 *   1. to shd_sp_parse() from an exactly-sized heap copy, so the sanitizer
 *      build turns a read past the end into a crash; an accepted request
 *      must be canonical (re-encoding its fields gives its bytes back) and
 *      every key of its list must lie inside it;
 *   2. to a detached store (shd_store_feed(): the server's own input
 *      buffering and handlers, answers discarded) in random-sized pieces,
 *      with small bounds so that every refusal path runs.
 * A connection lives until it is cut (leftover bytes of one input run
 * into the next); the store is recreated every 500 inputs; ASan's leak check at
 * exit covers what the handlers allocate.
 *
 * Default: a fixed seed and SHF_FUZZ_ITERS (default 100000) iterations;
 * SHF_FUZZ_SEED picks another seed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/store.h"
#include "proto/store.h"
#include "tests/lib/check.h"

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void)
{
	uint64_t x = rng_state; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static const struct shd_sp_limits plim = {32, 256, 8};
static const struct shd_store_limits slim = {16, 32, 256, 4, 4};

static uint64_t accepted, rejected, incomplete;

/* a short key from a small alphabet, so that requests meet each other */
static void put_key(struct shd_sp_buf *b)
{
	char k[8];
	uint32_t n = 1 + below(3);
	for (uint32_t i = 0; i < n; i++)
		k[i] = (char)('a' + below(4));
	shd_sp_put_str(b, k, n);
}

static void put_value(struct shd_sp_buf *b)
{
	uint8_t v[300];
	uint32_t n = below(5) == 0 ? below(sizeof(v)) : below(4);
	if (below(3) == 0) { /* a number, for ADD */
		int len = snprintf((char *)v, sizeof(v), "%d", (int)below(2000) - 1000);
		n = (uint32_t)len;
	} else {
		for (uint32_t i = 0; i < n; i++)
			v[i] = (uint8_t)rnd();
	}
	shd_sp_put_str(b, v, n);
}

static void gen(struct shd_sp_buf *b, int dialect)
{
	enum shd_sp_op op;
	do
		op = (enum shd_sp_op)below(SHD_SP_OP_MAX);
	while (shd_sp_op_byte(dialect, op) < 0);
	shd_sp_put_u8(b, (uint8_t)shd_sp_op_byte(dialect, op));
	switch (op) {
	case SHD_SP_SET:
	case SHD_SP_APPEND:
		put_key(b);
		put_value(b);
		break;
	case SHD_SP_COMPARE_SET:
		put_key(b);
		put_value(b);
		put_value(b);
		break;
	case SHD_SP_GET:
	case SHD_SP_DELETE_KEY:
	case SHD_SP_WATCH_KEY:
		put_key(b);
		break;
	case SHD_SP_ADD:
		put_key(b);
		shd_sp_put_u64(b, (uint64_t)(int64_t)((int)below(200) - 100));
		break;
	case SHD_SP_CHECK:
	case SHD_SP_WAIT:
	case SHD_SP_MULTI_GET:
	case SHD_SP_MULTI_SET: {
		uint32_t n = below(4);
		shd_sp_put_u64(b, n);
		for (uint32_t i = 0; i < n; i++) {
			put_key(b);
			if (op == SHD_SP_MULTI_SET)
				put_value(b);
		}
		break;
	}
	case SHD_SP_VALIDATE:
		shd_sp_put_u32(b, below(4) ? SHD_SP_MAGIC : (uint32_t)rnd());
		break;
	case SHD_SP_PING:
		shd_sp_put_u32(b, (uint32_t)rnd());
		break;
	case SHD_SP_NUM_KEYS:
	case SHD_SP_CANCEL_WAIT:
	case SHD_SP_OP_MAX:
		break;
	}
}

static void mutate(struct shd_sp_buf *b)
{
	if (b->len == 0)
		return;
	switch (below(6)) {
	case 0: /* bit flips */
		for (uint32_t i = 0, n = 1 + below(4); i < n; i++)
			b->p[below((uint32_t)b->len)] ^= (uint8_t)(1u << below(8));
		break;
	case 1: { /* a boundary value over 8 bytes */
		static const uint64_t vals[] = {0, 1, 31, 32, 33, 255, 256, 257, UINT32_MAX,
						UINT64_MAX, UINT64_MAX / 2, 0x3C85F7CE00ULL};
		if (b->len > 9) {
			uint32_t at = 1 + below((uint32_t)b->len - 9);
			uint64_t v = vals[below(sizeof(vals) / sizeof(vals[0]))];
			for (int i = 0; i < 8; i++)
				b->p[at + i] = (uint8_t)(v >> (8 * i));
		}
		break;
	}
	case 2: /* truncate */
		b->len = below((uint32_t)b->len);
		break;
	case 3: /* extend with noise */
		for (uint32_t i = 0, n = 1 + below(16); i < n; i++)
			shd_sp_put_u8(b, (uint8_t)rnd());
		break;
	case 4: /* query byte */
		b->p[0] = (uint8_t)below(20);
		break;
	default: /* leave it valid */
		break;
	}
}

static void check_parse(const uint8_t *src, size_t n, int dialect)
{
	uint8_t *p = calloc(1, n ? n : 1);
	CHECKF(p, "oom");
	if (n)
		memcpy(p, src, n);
	struct shd_sp_req q;
	const char *why = NULL;
	long r = shd_sp_parse(p, n, dialect, &plim, &q, &why);
	if (r > 0) {
		accepted++;
		CHECKF((size_t)r <= n, "took %ld of %zu", r, n);
		struct shd_sp_buf o = {0};
		CHECKF(shd_sp_encode(&o, dialect, &q) == 0, "re-encode");
		CHECKF(o.len == (size_t)r && memcmp(o.p, p, o.len) == 0, "not canonical");
		shd_sp_buf_free(&o);
		size_t pos = 0;
		uint64_t strs = q.op == SHD_SP_MULTI_SET ? 2 * q.n : q.n;
		for (uint64_t i = 0; q.list && i < strs; i++) {
			struct shd_sp_str s = shd_sp_list_next(q.list, &pos);
			CHECKF(s.p >= p && s.p + s.len <= p + r, "list string outside");
		}
		CHECKF(pos == q.list_len, "list length");
	} else if (r == 0) {
		incomplete++;
	} else {
		rejected++;
		CHECKF(why && *why, "no reason for %ld", r);
	}
	free(p);
}

int main(void)
{
	const char *it = getenv("SHF_FUZZ_ITERS"), *seed = getenv("SHF_FUZZ_SEED");
	uint64_t iters = it ? strtoull(it, NULL, 0) : 100000;
	if (seed)
		rng_state = strtoull(seed, NULL, 0) | 1;
	shd_log_max = 0; /* refusals are expected by the thousand */
	struct shd_store *s = NULL;
	uint64_t cut = 0;
	for (uint64_t i = 0; i < iters; i++) {
		if (i % 500 == 0) {
			shd_store_close(s);
			CHECKF(shd_store_new_detached(&slim, &s) == 0, "store");
		}
		int dialect = below(2) ? SHD_SP_V1 : SHD_SP_V2;
		struct shd_sp_buf b = {0};
		if (dialect == SHD_SP_V2 && below(2))
			shd_sp_put(&b, "\x00\xce\xf7\x85\x3c", 5); /* VALIDATE */
		for (uint32_t k = 0, n = 1 + below(4); k < n; k++) {
			struct shd_sp_buf one = {0};
			gen(&one, dialect);
			if (below(3) == 0)
				mutate(&one);
			if (k == 0)
				check_parse(one.p, one.len, dialect);
			shd_sp_put(&b, one.p, one.len);
			shd_sp_buf_free(&one);
		}
		if (below(4) == 0)
			mutate(&b);
		check_parse(b.p, b.len, dialect);
		/* the server, in random pieces */
		size_t off = 0;
		int r = 0;
		while (off < b.len && r == 0) {
			size_t piece = 1 + below((uint32_t)(b.len - off));
			r = shd_store_feed(s, b.p + off, piece);
			off += piece;
		}
		if (r < 0)
			cut++; /* the next input starts a new connection */
		shd_sp_buf_free(&b);
	}
	struct shd_store_stats st;
	shd_store_get_stats(s, &st);
	shd_store_close(s);
	printf("store-fuzz: %llu iterations: parse accepted %llu, rejected %llu, incomplete %llu; "
	       "connections cut %llu\n",
	       (unsigned long long)iters, (unsigned long long)accepted,
	       (unsigned long long)rejected, (unsigned long long)incomplete,
	       (unsigned long long)cut);
	return 0;
}
