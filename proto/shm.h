/* SPDX-License-Identifier: MIT */
/*
 * proto/shm.h - the per-client shared-memory region.
 *
 * The daemon creates one region per client (a sealed memfd), formats it and
 * passes the fd over the control socket.  The region is self-describing:
 *
 *   offset 0        struct shf_shm_hdr (magic, version, sizes, offsets)
 *   ring[i].ctl_off struct shf_ring_ctl for ring i (two cache lines)
 *   ring[i].data_off ring i's data array (page aligned, power of two)
 *
 * Ring SHF_SHM_SEND carries client -> daemon records, SHF_SHM_DELIVER
 * daemon -> client.  All offsets are from the start of the region, never
 * pointers.  `ready` is written last with a release store; an attacher
 * checks it with an acquire load before trusting anything else.
 */
#ifndef SHF_PROTO_SHM_H
#define SHF_PROTO_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/ring.h"

#define SHF_SHM_MAGIC UINT64_C(0x314d485346465548) /* "HUFFSHM1" little-endian */
#define SHF_SHM_VERSION 1u
#define SHF_SHM_PAGE 4096u

enum shf_shm_ring_id {
	SHF_SHM_SEND = 0,    /* client produces, daemon consumes */
	SHF_SHM_DELIVER = 1, /* daemon produces, client consumes */
	SHF_SHM_RING_MAX
};

struct shf_shm_ring_desc {
	uint64_t ctl_off;    /* offset of struct shf_ring_ctl */
	uint64_t data_off;   /* offset of the data array */
	uint64_t data_bytes; /* size of the data array: power of two */
	uint32_t max_rec;    /* largest record payload accepted */
	uint32_t reserved;   /* zero */
};

struct shf_shm_hdr {
	uint64_t magic;        /* SHF_SHM_MAGIC */
	uint32_t version;      /* SHF_SHM_VERSION */
	uint32_t hdr_bytes;    /* sizeof(struct shf_shm_hdr) */
	uint64_t region_bytes; /* size of the whole mapping */
	struct shf_shm_ring_desc ring[SHF_SHM_RING_MAX];
	int32_t rank;           /* the client's rank in its job */
	int32_t world;          /* the job's world size */
	_Atomic uint32_t ready; /* 1 when formatted; written last (release) */
	uint32_t reserved;      /* zero */
};
_Static_assert(sizeof(struct shf_shm_hdr) == 104, "shm header layout is ABI");
_Static_assert(offsetof(struct shf_shm_hdr, ring) == 24, "shm header layout is ABI");

/*
 * Payload prefix of every SHF_REC_MSG record in both rings (8 bytes), then
 * the message data.  In the send ring `rank` is the destination, in the
 * delivery ring it is the source.
 */
struct shf_msg_hdr {
	int32_t rank;  /* send ring: destination; delivery ring: source */
	uint32_t type; /* application-defined */
};
_Static_assert(sizeof(struct shf_msg_hdr) == 8, "message header is 8 bytes");
#define SHF_MSG_HDR_BYTES 8u
/* Send ring only: a broadcast (shf_bcast()).  `rank` holds one of these
 * instead of a destination; the daemon delivers the record once to every
 * rank of the job (the sender included only with _SELF).  Any other
 * negative rank is a ring fault. */
#define SHF_MSG_BCAST (-1)      /* every rank but the sender */
#define SHF_MSG_BCAST_SELF (-2) /* every rank, the sender too */

/* Geometry of a region, computed by the creator or validated from a header. */
struct shf_shm_layout {
	uint64_t region_bytes;
	struct shf_shm_ring_desc ring[SHF_SHM_RING_MAX];
};

/* Compute a layout for two rings of `ring_bytes` each.  -EINVAL when the
 * size is not a power of two in [SHF_RING_MIN_BYTES, SHF_RING_MAX_BYTES] or
 * max_rec does not fit. */
int shf_shm_layout(uint64_t ring_bytes, uint32_t max_rec, struct shf_shm_layout *l);

/* Write header and ring control blocks into `base` (region_bytes long) and
 * publish ready.  The caller has sized the mapping from the layout. */
void shf_shm_format(void *base, const struct shf_shm_layout *l, int32_t rank,
		    int32_t world);

/* Validate a region mapped at `base` (`mapped` bytes) and return its layout.
 * -EPROTO on a bad magic or version, -EBADMSG on inconsistent sizes or
 * offsets, -EAGAIN when not ready. */
int shf_shm_check(const void *base, uint64_t mapped, struct shf_shm_layout *l);

/* Bind a private ring view to ring `id` of a validated layout. */
int shf_shm_ring(void *base, const struct shf_shm_layout *l, enum shf_shm_ring_id id,
		 struct shf_ring *r, bool zero);

#endif /* SHF_PROTO_SHM_H */
