/* SPDX-License-Identifier: MIT */
/*
 * tests/node/tmsg.h - the self-checking test message and the deterministic
 * traffic pattern shared by the test client and the example-free checks.
 *
 * Message i of rank `src` in round `round` goes to a destination and has a
 * length that are pure functions of (seed, src, round, i), so every rank can
 * recompute how many messages every other rank sends it, without talking.
 * The payload starts with struct tmsg; the rest is a pattern derived from
 * (src, gseq) whose FNV-1a checksum sits in the header.
 */
#ifndef SHF_TESTS_NODE_TMSG_H
#define SHF_TESTS_NODE_TMSG_H

#include <stdint.h>
#include <string.h>

#define TMSG_MAGIC 0x47534d54u /* "TMSG" */

struct tmsg {
	uint32_t magic;    /* TMSG_MAGIC */
	uint32_t job_tag;  /* tmsg_hash32(job name): catches cross-job delivery */
	int32_t src, dst;  /* as the sender saw them */
	uint32_t round;    /* traffic round (epoch number) */
	uint32_t len;      /* whole payload length, header included */
	uint64_t pair_seq; /* n-th message from src to dst, from 0 */
	uint64_t gseq;     /* n-th message of src overall */
	uint32_t sum;      /* FNV-1a of the bytes after the header */
	uint32_t pad;      /* zero */
};
_Static_assert(sizeof(struct tmsg) == 48, "test message header");

static inline uint64_t tmsg_mix64(uint64_t z)
{
	z += UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint32_t tmsg_hash32(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static inline uint32_t tmsg_fnv(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* The type field of message gseq of src. */
static inline uint32_t tmsg_type(int src, uint64_t gseq)
{
	return (uint32_t)tmsg_mix64(gseq ^ ((uint64_t)(uint32_t)src << 40) ^ 0x5151);
}

/* Fill the body (bytes after the header) of message gseq of src. */
static inline void tmsg_fill(uint8_t *body, size_t n, int src, uint64_t gseq)
{
	uint64_t x = tmsg_mix64(gseq * 31 + (uint64_t)(uint32_t)src);
	for (size_t k = 0; k < n; k++)
		body[k] = (uint8_t)((x >> ((k & 7) * 8)) + k);
}

/* The draw behind message i of (src, round). */
static inline uint64_t tmsg_draw(uint64_t seed, int src, unsigned round, uint64_t i)
{
	return tmsg_mix64(tmsg_mix64(seed) ^ ((uint64_t)(uint32_t)src << 40) ^
			  ((uint64_t)round << 24) ^ i);
}

#endif /* SHF_TESTS_NODE_TMSG_H */
