/* SPDX-License-Identifier: MIT */
/*
 * proto/wire_int.h - private to proto/wire.c and proto/wire_enc.c: field
 * access by the raw structs' offsets (pinned by wire.c's asserts), and
 * the rank rules both the checks and the encoders apply.
 */
#ifndef SHF_PROTO_WIRE_INT_H
#define SHF_PROTO_WIRE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* After proto/wire.h (its structs, constants and get/put helpers): this
 * header names them, and includes nothing of proto/, so that it stays
 * below both its users. */

#define OFF(kind, field) offsetof(struct shf_wire_raw_##kind, field)
#define G16(b, kind, f) shf_wire_get16((const uint8_t *)(b) + OFF(kind, f))
#define G32(b, kind, f) shf_wire_get32((const uint8_t *)(b) + OFF(kind, f))
#define GI32(b, kind, f) ((int32_t)shf_wire_get32((const uint8_t *)(b) + OFF(kind, f)))
#define G64(b, kind, f) shf_wire_get64((const uint8_t *)(b) + OFF(kind, f))
#define P16(b, kind, f, v) shf_wire_put16((uint8_t *)(b) + OFF(kind, f), (v))
#define P32(b, kind, f, v) shf_wire_put32((uint8_t *)(b) + OFF(kind, f), (uint32_t)(v))
#define P64(b, kind, f, v) shf_wire_put64((uint8_t *)(b) + OFF(kind, f), (v))

static inline bool shf_wire_rank_ok(int32_t r)
{
	return r >= 0 && r < SHF_WORLD_MAX;
}

/* A batch record's destination: a rank, or the broadcast marker. */
static inline bool shf_wire_dst_ok(int32_t r)
{
	return shf_wire_rank_ok(r) || r == SHF_WIRE_DST_BCAST;
}

#endif
