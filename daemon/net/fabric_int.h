/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fabric_int.h - what fabric.c and fabric_io.c share, and nobody
 * else sees: struct shd_fabric, its receive buffers, send slots, peers and
 * memory regions.  Calls go one way: fabric_io.c -> fabric.c.
 */
#ifndef SHD_FABRIC_INT_H
#define SHD_FABRIC_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "proto/stats.h"

#define FABRIC_API FI_VERSION(1, 17)
#define MAX_REGIONS 8u
/* inline copy buffer of a slot: SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM
 * (fabric.h, asserted in fabric.c; this header does not include it) */
#define SMALL_BYTES 288u
#define NIL UINT32_MAX
#define CQ_CHUNK 16u

enum rbuf_state {
	RB_POSTED,  /* owned by the provider */
	RB_KEPT,    /* owned by on_recv's caller (inside the callback, or kept) */
	RB_REPOST,  /* waiting for progress() to post it (fi_recv said EAGAIN) */
};

struct rbuf {
	struct fi_context2 ctx; /* first: op_context of its completion */
	uint8_t *buf;           /* buf_bytes, inside f->rbase */
	uint32_t state;         /* enum rbuf_state */
	uint32_t next_repost;   /* RB_REPOST list link */
};

enum slot_state {
	SL_FREE,   /* on the free list */
	SL_QUEUED, /* on the FIFO, not posted yet */
	SL_POSTED, /* owned by the provider until its completion */
	SL_FAILED, /* finished with an error, to be reported by progress() */
};

struct slot {
	struct fi_context2 ctx; /* first: op_context of its completion */
	const void *buf;        /* what to send (the caller's, or small[]) */
	size_t len;
	void *desc;             /* MR descriptor of buf, or NULL */
	void *uctx;             /* the caller's ctx for on_send_done */
	uint32_t node;          /* destination */
	uint32_t state;         /* enum slot_state */
	uint32_t next;          /* free / FIFO / failed list link */
	int status;             /* SL_FAILED: negative errno */
	_Alignas(8) uint8_t small[SMALL_BYTES]; /* copy of a small message */
};

struct peer {
	fi_addr_t addr;      /* AV index */
	bool present;        /* inserted and not removed */
	uint32_t queued;     /* slots of this node on the FIFO */
	uint64_t blocked;    /* retry pass in which it last returned EAGAIN */
};

struct region {
	uint8_t *base;
	size_t len;
	struct fid_mr *mr;
	void *desc;
};

struct shd_fabric {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int wait_fd;
	size_t addrlen; /* length of my (and so every peer's) raw address */
	bool need_mr;   /* register buffers and pass descriptors */
	bool source;    /* the CQ reports sources (FI_SOURCE) */
	char prov[64];  /* resolved provider name */

	uint32_t max_nodes;
	struct peer *peers;       /* [max_nodes] */
	uint32_t *fiaddr_node;    /* AV index -> node, NIL when none */
	size_t fiaddr_cap;

	size_t buf_bytes;
	uint32_t nrbuf;
	uint8_t *rbase;           /* nrbuf * buf_bytes */
	struct rbuf *rbufs;
	struct region rreg;       /* the receive slab's registration */
	uint32_t repost_head;     /* RB_REPOST list */
	uint32_t n_repost;

	uint32_t nslots;
	struct slot *slots;
	struct region sreg;       /* the slots' (small buffers') registration */
	uint32_t free_head;
	/* slots [slot_fresh, nslots) were never used: not on the free list
	 * and never written, so their pages stay untouched (not in RSS)
	 * until that many sends are in flight at once */
	uint32_t slot_fresh;
	uint32_t q_head, q_tail;  /* FIFO of SL_QUEUED */
	uint32_t n_queued;
	uint32_t fail_head, fail_tail; /* SL_FAILED, in failure order */
	uint32_t outstanding;     /* QUEUED + POSTED + FAILED not yet reported */
	uint64_t pass;            /* retry pass counter */

	struct region regions[MAX_REGIONS];
	unsigned nregions;
	uint64_t mr_keys;         /* last requested MR key */
	uint32_t cq_batch;
	struct shf_fabric_stats st;
};

/* libfabric returns -FI_Exxx; those below FI_ERRNO_OFFSET are errno values. */
static inline int ferr(long r)
{
	if (r >= 0)
		return 0;
	if (-r >= FI_ERRNO_OFFSET)
		return -r == FI_ETRUNC ? -EMSGSIZE : -EIO;
	return (int)r;
}

/* fabric.c: post receive buffer rb (-FI_EAGAIN: it waits on the repost
 * list); 0, or a negative errno with rb lost to the caller. */
int shd_fabric_post_recv(struct shd_fabric *f, struct rbuf *rb);
/* fabric.c: the MR descriptor of [buf, buf+len), NULL when the provider
 * needs none; *ok false when no registered region holds it. */
void *shd_fabric_find_desc(struct shd_fabric *f, const void *buf, size_t len, bool *ok);

#endif /* SHD_FABRIC_INT_H */
