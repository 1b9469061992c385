/* SPDX-License-Identifier: MIT */
/*
 * proto/store.h - the key-value store's wire format: PyTorch's
 * TCPStore protocol (docs/protocol-store.md), encode and decode, shared by
 * the server (store.c) and the blocking client (rdv/store_client.c).  No
 * sockets, no logging, no allocation except in struct shd_sp_buf: unit
 * tests and the fuzzer drive it directly.
 *
 * Two dialects share the framing (a query byte, then fields: strings as a
 * u64 length + bytes, integers as 8 raw bytes, all little-endian on the
 * hosts torch supports) but number the queries differently:
 *   SHD_SP_V1   torch <= 1.13 (Debian 12's python3-torch): SET = 0 ...
 *   SHD_SP_V2   newer torch: the first query is VALIDATE (0) with a u32
 *               magic, and SET = 1 ...
 * shd_sp_dialect() tells them apart from a connection's first bytes.
 */
#ifndef SHD_STORE_PROTO_H
#define SHD_STORE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SHD_SP_MAGIC UINT32_C(0x3C85F7CE) /* VALIDATE's magic (V2) */
#define SHD_SP_REQ_KEYS_MAX 1024u         /* keys in one CHECK/WAIT/MULTI_* */

enum shd_sp_dialect { SHD_SP_V1 = 1, SHD_SP_V2 = 2 };

/* Queries, dialect-independent. */
enum shd_sp_op {
	SHD_SP_SET,         /* key, value            -> nothing */
	SHD_SP_COMPARE_SET, /* key, expected, desired -> value (bytes) */
	SHD_SP_GET,         /* key                   -> value (bytes) */
	SHD_SP_ADD,         /* key, i64 delta        -> i64 new value */
	SHD_SP_CHECK,       /* u64 n, n keys         -> u8 0 ready / 1 not ready */
	SHD_SP_WAIT,        /* u64 n, n keys         -> u8 0 when all exist */
	SHD_SP_NUM_KEYS,    /*                       -> i64 */
	SHD_SP_WATCH_KEY,   /* key (V1 only; refused by our server) */
	SHD_SP_DELETE_KEY,  /* key                   -> i64 deleted (0/1) */
	SHD_SP_VALIDATE,    /* u32 magic (V2)        -> nothing */
	SHD_SP_APPEND,      /* key, value (V2)       -> nothing */
	SHD_SP_MULTI_GET,   /* u64 n, n keys (V2)    -> n values */
	SHD_SP_MULTI_SET,   /* u64 n, n (key, value) (V2) -> nothing */
	SHD_SP_CANCEL_WAIT, /* (V2)                  -> u8 1 (WAIT_CANCELED) */
	SHD_SP_PING,        /* u32 nonce (V2)        -> u32 nonce */
	SHD_SP_OP_MAX
};

#define SHD_SP_CHECK_READY 0
#define SHD_SP_CHECK_NOT_READY 1
#define SHD_SP_WAIT_STOP 0
#define SHD_SP_WAIT_CANCELED 1

struct shd_sp_limits {
	uint64_t max_key_bytes;   /* longest key accepted */
	uint64_t max_value_bytes; /* longest value accepted */
	uint64_t max_req_keys;    /* keys in one request, <= SHD_SP_REQ_KEYS_MAX */
};

struct shd_sp_str {
	const uint8_t *p; /* into the parsed buffer */
	uint64_t len;
};

/* A parsed request; pointers point into the caller's buffer. */
struct shd_sp_req {
	enum shd_sp_op op;
	struct shd_sp_str key; /* SET CAS GET ADD DELETE APPEND WATCH */
	struct shd_sp_str v1;  /* SET APPEND: the value; CAS: expected */
	struct shd_sp_str v2;  /* CAS: desired */
	int64_t num;           /* ADD: delta; VALIDATE, PING: the u32 */
	uint64_t n;            /* CHECK WAIT MULTI_GET: keys; MULTI_SET: pairs */
	const uint8_t *list;   /* their encoding: n strings (MULTI_SET: 2n) */
	size_t list_len;
};

/* The dialect of a connection from its first n bytes: SHD_SP_V1, SHD_SP_V2,
 * or 0 when more bytes are needed to tell. */
int shd_sp_dialect(const uint8_t *b, size_t n);

/*
 * Parse one request at the start of b[0..n).  Returns the bytes it takes
 * (> 0) with *req filled, 0 when b holds only a prefix of a valid request
 * (read more), or a negative errno with *why a static English reason:
 * -EBADMSG unknown query byte, -EMSGSIZE a key or value longer than lim
 * allows, -E2BIG too many keys in one request.  A length field is checked
 * as soon as its 8 bytes are in: an oversized request is refused before
 * its body arrives.  Every string of req->list lies inside the request.
 */
long shd_sp_parse(const uint8_t *b, size_t n, int dialect, const struct shd_sp_limits *lim,
		  struct shd_sp_req *req, const char **why);

/* Walk a validated list: the string at *pos, which moves past it. */
struct shd_sp_str shd_sp_list_next(const uint8_t *list, size_t *pos);

/* The query byte of op in dialect, or -1 when that dialect lacks op. */
int shd_sp_op_byte(int dialect, enum shd_sp_op op);
const char *shd_sp_op_name(enum shd_sp_op op);

/* A growable output buffer. */
struct shd_sp_buf {
	uint8_t *p;
	size_t len, cap;
	int oom; /* an append failed: the content is incomplete */
};
void shd_sp_buf_free(struct shd_sp_buf *b);
void shd_sp_put(struct shd_sp_buf *b, const void *p, size_t n);
void shd_sp_put_u8(struct shd_sp_buf *b, uint8_t v);
void shd_sp_put_u32(struct shd_sp_buf *b, uint32_t v);
void shd_sp_put_u64(struct shd_sp_buf *b, uint64_t v); /* also i64 */
void shd_sp_put_str(struct shd_sp_buf *b, const void *p, uint64_t len);

/* Encode req in dialect (the inverse of shd_sp_parse): 0, or -EINVAL when
 * the dialect lacks the op, -ENOMEM. */
int shd_sp_encode(struct shd_sp_buf *b, int dialect, const struct shd_sp_req *req);

/* Little-endian loads (unaligned). */
uint64_t shd_sp_get_u64(const uint8_t *p);
uint32_t shd_sp_get_u32(const uint8_t *p);

/* ADD's value format: a decimal int64 ("-12"), as torch stores it.
 * 0, or -EINVAL when v is not one (then the server refuses the ADD). */
int shd_sp_parse_i64(const uint8_t *v, size_t len, int64_t *out);

#endif /* SHD_STORE_PROTO_H */
