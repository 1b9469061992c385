/* SPDX-License-Identifier: MIT */
/*
 * client/runs.h - shf_send_many()'s runs: a window of records grouped by
 * destination, sized, and written into the send ring as SHF_REC_RUN
 * records (docs/ring.md, "Runs"), packed when the window's records share
 * one type and length and the daemon takes packed runs.  Called by data.c
 * with the send side entered; calls nothing of the library.
 */
#ifndef SHC_RUNS_H
#define SHC_RUNS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client/client.h"

#define SHC_RUN_WIN 256u   /* records per window (<= SHF_RUN_MAX_COUNT) */
#define SHC_RUN_SLOTS 512u /* hash slots, a power of two >= 2 * SHC_RUN_WIN */

struct shc_run_win {
	unsigned n;                /* records in the window */
	unsigned nruns;            /* groups */
	uint64_t ring;             /* ring bytes the window takes */
	uint64_t payload;          /* payload bytes */
	uint32_t biggest;          /* largest ring record of the window */
	bool packed;               /* its runs go packed: all its records have one
				      type and length, and the daemon takes them */
	uint16_t next[SHC_RUN_WIN];    /* next record of the same group, or SHC_RUN_WIN */
	uint16_t first[SHC_RUN_WIN];   /* per group, in order of first appearance */
	uint16_t last[SHC_RUN_WIN];
	uint16_t count[SHC_RUN_WIN];   /* per group: records */
	uint32_t bytes[SHC_RUN_WIN];   /* per group: item bytes (at most SHC_RUN_WIN
					  items of max_msg <= 1 MiB: no overflow) */
	int32_t key[SHC_RUN_SLOTS];    /* destination, or -1 */
	uint16_t slot[SHC_RUN_SLOTS];  /* its group */
};

/* Group msgs[0, n) (checked, n <= SHC_RUN_WIN) by destination and size
 * the window: w->n records (a prefix of msgs, at least one) whose ring
 * records take w->ring bytes, at most `budget` unless one record is more. */
void shc_run_group(const struct shf_ctx *c, const struct shf_msg *msgs, unsigned n,
		   uint64_t budget, struct shc_run_win *w);
/* Write the window grouped by shc_run_group() into the send ring, whose
 * room for w->ring + w->biggest bytes the caller has checked: one record
 * per group (a run, or a plain record for a group of one), more where a
 * group passes the run's limits. */
void shc_run_write(struct shf_ctx *c, const struct shf_msg *msgs, const struct shc_run_win *w);

/*
 * Records held by shf_send(SHF_MORE) (data.c, "Held records"): at most a
 * window of them, their payloads copied, waiting to go as runs with one
 * publication.  Touched only by the thread that opened the context.
 */
#define SHC_HOLD_CAP (16u << 10) /* payload bytes held, at most */

struct shc_hold {
	unsigned n;    /* records held, <= SHC_RUN_WIN */
	uint32_t used; /* bytes of buf taken (payloads padded to 8) */
	uint32_t cap;  /* bytes of buf */
	struct shf_msg msgs[SHC_RUN_WIN]; /* data points into buf */
	unsigned char buf[];
};

/* A hold of cap payload bytes, or NULL without memory. */
struct shc_hold *shc_hold_new(uint32_t cap);
/* Has the hold room for one more record of len bytes? */
static inline bool shc_hold_fits(const struct shc_hold *h, uint32_t len)
{
	return h->n < SHC_RUN_WIN && ((len + 7u) & ~7u) <= h->cap - h->used;
}
/* Hold one record (room checked). */
static inline void shc_hold_add(struct shc_hold *h, int dst, uint32_t type, const void *data,
				uint32_t len)
{
	unsigned char *p = h->buf + h->used;
	if (len)
		memcpy(p, data, len);
	h->msgs[h->n++] = (struct shf_msg){.dst = dst, .type = type, .data = p, .len = len};
	h->used += (len + 7u) & ~7u;
}
/* The first k held records went: forget them. */
void shc_hold_shift(struct shc_hold *h, unsigned k);

#endif
