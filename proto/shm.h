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
#include <string.h>

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

/*
 * Payload of a SHF_REC_RUN record: several messages between one pair of
 * ranks, in order, with one header (docs/ring.md, "Runs").  In the send
 * ring `rank` is the destination, in the delivery ring the source.  Then
 * `count` items follow back to back, each a struct shf_run_item and `len`
 * payload bytes padded with zeros to 8, filling the record exactly.  A
 * client writes runs only when its daemon granted SHF_REG_OK_RUNS, and a
 * daemon writes them only into the delivery ring of a client that said
 * SHF_IPC_RUNS (proto/ipc.h); a batch on the wire carries them as they are.
 *
 * A packed run (count | SHF_RUN_PACKED): its messages share one type and
 * one length, so one struct shf_run_item stands for all, followed by the
 * count payloads, each padded with zeros to 8: 8 bytes of headers per run
 * instead of 8 per message.  It obeys the limits of the run it stands for
 * (count items of shf_run_item_bytes(len) each, at most
 * SHF_RUN_MAX_BYTES), so that a daemon can always write it out as one
 * plain run.  A client writes one only when its daemon granted
 * SHF_REG_OK_PACKED; a batch on the wire carries it as it is; a daemon
 * writes one into the delivery ring only of a client that said
 * SHF_IPC_PACKED (for any other it writes the run out plain).
 */
struct shf_run_hdr {
	int32_t rank;   /* send ring: destination; delivery ring: source */
	uint32_t count; /* items, 1 .. SHF_RUN_MAX_COUNT; | SHF_RUN_PACKED */
};
struct shf_run_item {
	uint32_t type; /* application-defined */
	uint32_t len;  /* payload bytes, <= max_msg */
};
_Static_assert(sizeof(struct shf_run_hdr) == 8 && sizeof(struct shf_run_item) == 8,
	       "run headers are 8 bytes");
#define SHF_RUN_HDR_BYTES 8u
#define SHF_RUN_ITEM_BYTES 8u
#define SHF_RUN_MAX_COUNT 256u      /* items in one run */
#define SHF_RUN_MAX_BYTES (16u << 10) /* items' bytes (headers, payload, padding) */

#define SHF_RUN_PACKED 0x80000000u /* count's flag: a packed run */

/* Bytes an item of len payload bytes takes in a run. */
static inline uint32_t shf_run_item_bytes(uint32_t len)
{
	return SHF_RUN_ITEM_BYTES + ((len + 7u) & ~7u);
}

/* The messages of a run whose header says count (packed or not). */
static inline uint32_t shf_run_n(uint32_t count)
{
	return count & ~SHF_RUN_PACKED;
}

/* Bytes of a packed run's items: n messages of len payload bytes. */
static inline uint32_t shf_run_packed_bytes(uint32_t n, uint32_t len)
{
	return SHF_RUN_ITEM_BYTES + n * ((len + 7u) & ~7u);
}

/* Bytes a checked run's items take as a plain run (packed or not). */
static inline uint32_t shf_run_plain_bytes(const uint8_t *items, uint32_t bytes, uint32_t count)
{
	if (!(count & SHF_RUN_PACKED))
		return bytes;
	struct shf_run_item it;
	memcpy(&it, items, sizeof(it));
	return shf_run_n(count) * shf_run_item_bytes(it.len);
}

/* Zero padding after len bytes of an item whose padded end is at end. */
static inline bool shf_run_pad_ok(const uint8_t *end, uint32_t len)
{
	uint32_t pad = ((len + 7u) & ~7u) - len;
	if (!pad)
		return true;
	uint64_t tail = 0; /* the last 8 bytes hold the padding */
	memcpy(&tail, end - 8, 8);
	return !(tail >> (8 * (8 - pad)));
}

/* shf_run_check() of a packed run of n messages. */
static inline int64_t shf_run_check_packed(const uint8_t *items, uint32_t bytes, uint32_t n,
					   uint32_t max_msg)
{
	struct shf_run_item it;
	if (bytes < SHF_RUN_ITEM_BYTES)
		return -EBADMSG;
	memcpy(&it, items, sizeof(it));
	if (it.len > max_msg || it.len > SHF_RUN_MAX_BYTES ||
	    (uint64_t)n * shf_run_item_bytes(it.len) > SHF_RUN_MAX_BYTES ||
	    shf_run_packed_bytes(n, it.len) != bytes)
		return -EBADMSG;
	uint32_t stride = (it.len + 7u) & ~7u;
	if (stride != it.len) /* unaligned: each payload's padding */
		for (uint32_t i = 1; i <= n; i++)
			if (!shf_run_pad_ok(items + SHF_RUN_ITEM_BYTES + i * stride, it.len))
				return -EBADMSG;
	return (int64_t)n * it.len;
}

/*
 * Check the items of a run: `bytes` bytes at `items` (8-aligned, private
 * memory: each header is read once), `count` items in [1,
 * SHF_RUN_MAX_COUNT], each len <= max_msg, padding zero, filling `bytes`
 * exactly.  A packed run (count | SHF_RUN_PACKED): its one item header,
 * then the payloads, within the limits of the plain run it stands for.
 * Returns the payload bytes in all, or -EBADMSG.
 */
static inline int64_t shf_run_check(const uint8_t *items, uint32_t bytes, uint32_t count,
				    uint32_t max_msg)
{
	uint32_t n = shf_run_n(count);
	if (n == 0 || n > SHF_RUN_MAX_COUNT || bytes > SHF_RUN_MAX_BYTES)
		return -EBADMSG;
	if (count & SHF_RUN_PACKED)
		return shf_run_check_packed(items, bytes, n, max_msg);
	uint32_t off = 0;
	uint64_t payload = 0;
	for (uint32_t i = 0; i < count; i++) {
		struct shf_run_item it;
		if (bytes - off < SHF_RUN_ITEM_BYTES)
			return -EBADMSG;
		memcpy(&it, items + off, sizeof(it));
		if (it.len > max_msg || it.len > bytes - off - SHF_RUN_ITEM_BYTES)
			return -EBADMSG;
		uint32_t sz = shf_run_item_bytes(it.len);
		if (sz > bytes - off)
			return -EBADMSG;
		if (!shf_run_pad_ok(items + off + sz, it.len))
			return -EBADMSG;
		payload += it.len;
		off += sz;
	}
	return off == bytes ? (int64_t)payload : -EBADMSG;
}

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
