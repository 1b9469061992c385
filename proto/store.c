/* SPDX-License-Identifier: MIT */
/*
 * proto/store.c - TCPStore wire format: see store.h and
 * docs/protocol-store.md.
 */
#include "proto/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Query bytes per dialect; -1: the dialect has no such query. */
static const int8_t op_byte[3][SHD_SP_OP_MAX] = {
	[SHD_SP_V1] = {
		[SHD_SP_SET] = 0, [SHD_SP_COMPARE_SET] = 1, [SHD_SP_GET] = 2, [SHD_SP_ADD] = 3,
		[SHD_SP_CHECK] = 4, [SHD_SP_WAIT] = 5, [SHD_SP_NUM_KEYS] = 6,
		[SHD_SP_WATCH_KEY] = 7, [SHD_SP_DELETE_KEY] = 8, [SHD_SP_VALIDATE] = -1,
		[SHD_SP_APPEND] = -1, [SHD_SP_MULTI_GET] = -1, [SHD_SP_MULTI_SET] = -1,
		[SHD_SP_CANCEL_WAIT] = -1, [SHD_SP_PING] = -1,
	},
	[SHD_SP_V2] = {
		[SHD_SP_VALIDATE] = 0, [SHD_SP_SET] = 1, [SHD_SP_COMPARE_SET] = 2, [SHD_SP_GET] = 3,
		[SHD_SP_ADD] = 4, [SHD_SP_CHECK] = 5, [SHD_SP_WAIT] = 6, [SHD_SP_NUM_KEYS] = 7,
		[SHD_SP_DELETE_KEY] = 8, [SHD_SP_APPEND] = 9, [SHD_SP_MULTI_GET] = 10,
		[SHD_SP_MULTI_SET] = 11, [SHD_SP_CANCEL_WAIT] = 12, [SHD_SP_PING] = 13,
		[SHD_SP_WATCH_KEY] = -1,
	},
};

static const char *const op_names[SHD_SP_OP_MAX] = {
	[SHD_SP_SET] = "SET", [SHD_SP_COMPARE_SET] = "COMPARE_SET", [SHD_SP_GET] = "GET",
	[SHD_SP_ADD] = "ADD", [SHD_SP_CHECK] = "CHECK", [SHD_SP_WAIT] = "WAIT",
	[SHD_SP_NUM_KEYS] = "GETNUMKEYS", [SHD_SP_WATCH_KEY] = "WATCH_KEY",
	[SHD_SP_DELETE_KEY] = "DELETE_KEY", [SHD_SP_VALIDATE] = "VALIDATE",
	[SHD_SP_APPEND] = "APPEND", [SHD_SP_MULTI_GET] = "MULTI_GET",
	[SHD_SP_MULTI_SET] = "MULTI_SET", [SHD_SP_CANCEL_WAIT] = "CANCEL_WAIT",
	[SHD_SP_PING] = "PING",
};

int shd_sp_op_byte(int dialect, enum shd_sp_op op)
{
	if ((dialect != SHD_SP_V1 && dialect != SHD_SP_V2) || (unsigned)op >= SHD_SP_OP_MAX)
		return -1;
	return op_byte[dialect][op];
}

const char *shd_sp_op_name(enum shd_sp_op op)
{
	return (unsigned)op < SHD_SP_OP_MAX ? op_names[op] : "?";
}

static int op_of_byte(int dialect, uint8_t b)
{
	for (int op = 0; op < SHD_SP_OP_MAX; op++)
		if (op_byte[dialect][op] == (int)b)
			return op;
	return -1;
}

uint64_t shd_sp_get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint32_t shd_sp_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int shd_sp_dialect(const uint8_t *b, size_t n)
{
	static const uint8_t magic[4] = {0xCE, 0xF7, 0x85, 0x3C};
	if (n == 0)
		return 0;
	if (b[0] != 0)
		return SHD_SP_V1;
	size_t m = n - 1 < 4 ? n - 1 : 4;
	if (memcmp(b + 1, magic, m) != 0)
		return SHD_SP_V1; /* a V1 SET, whose key length cannot start so */
	return m == 4 ? SHD_SP_V2 : 0;
}

/* A cursor over the request being parsed. */
struct cur {
	const uint8_t *b;
	size_t n, off;
};

/* 1 got it, 0 need more */
static int take_u64(struct cur *c, uint64_t *v)
{
	if (c->n - c->off < 8)
		return 0;
	*v = shd_sp_get_u64(c->b + c->off);
	c->off += 8;
	return 1;
}

/* A string of at most max bytes: 1 got it, 0 need more, -EMSGSIZE. */
static int take_str(struct cur *c, uint64_t max, struct shd_sp_str *s)
{
	uint64_t len;
	size_t save = c->off;
	if (!take_u64(c, &len))
		return 0;
	if (len > max)
		return -EMSGSIZE;
	if (c->n - c->off < len) {
		c->off = save;
		return 0;
	}
	s->p = c->b + c->off;
	s->len = len;
	c->off += (size_t)len;
	return 1;
}

long shd_sp_parse(const uint8_t *b, size_t n, int dialect, const struct shd_sp_limits *lim,
		  struct shd_sp_req *req, const char **why)
{
	static const char *dummy;
	if (!why)
		why = &dummy;
	memset(req, 0, sizeof(*req));
	if (n == 0)
		return 0;
	if (dialect != SHD_SP_V1 && dialect != SHD_SP_V2) {
		*why = "unknown protocol dialect";
		return -EINVAL;
	}
	int op = op_of_byte(dialect, b[0]);
	if (op < 0) {
		*why = "unknown query type";
		return -EBADMSG;
	}
	req->op = (enum shd_sp_op)op;
	struct cur c = {b, n, 1};
	int r;
	uint64_t u;
	const char *key_big = "key longer than store_max_key_bytes";
	const char *val_big = "value longer than store_max_value_bytes";
#define STR(max, dst, msg)                               \
	do {                                             \
		r = take_str(&c, (max), (dst));          \
		if (r < 0) {                             \
			*why = (msg);                    \
			return r;                        \
		}                                        \
		if (r == 0)                              \
			return 0;                        \
	} while (0)
	switch (req->op) {
	case SHD_SP_SET:
	case SHD_SP_APPEND:
		STR(lim->max_key_bytes, &req->key, key_big);
		STR(lim->max_value_bytes, &req->v1, val_big);
		break;
	case SHD_SP_COMPARE_SET:
		STR(lim->max_key_bytes, &req->key, key_big);
		STR(lim->max_value_bytes, &req->v1, val_big);
		STR(lim->max_value_bytes, &req->v2, val_big);
		break;
	case SHD_SP_GET:
	case SHD_SP_DELETE_KEY:
	case SHD_SP_WATCH_KEY:
		STR(lim->max_key_bytes, &req->key, key_big);
		break;
	case SHD_SP_ADD:
		STR(lim->max_key_bytes, &req->key, key_big);
		if (!take_u64(&c, &u))
			return 0;
		req->num = (int64_t)u;
		break;
	case SHD_SP_CHECK:
	case SHD_SP_WAIT:
	case SHD_SP_MULTI_GET:
	case SHD_SP_MULTI_SET: {
		if (!take_u64(&c, &req->n))
			return 0;
		uint64_t max = lim->max_req_keys < SHD_SP_REQ_KEYS_MAX ? lim->max_req_keys
									: SHD_SP_REQ_KEYS_MAX;
		if (req->n > max) {
			*why = "too many keys in one request";
			return -E2BIG;
		}
		size_t start = c.off;
		for (uint64_t i = 0; i < req->n; i++) {
			struct shd_sp_str s;
			STR(lim->max_key_bytes, &s, key_big);
			if (req->op == SHD_SP_MULTI_SET)
				STR(lim->max_value_bytes, &s, val_big);
		}
		req->list = b + start;
		req->list_len = c.off - start;
		break;
	}
	case SHD_SP_VALIDATE:
	case SHD_SP_PING:
		if (n - c.off < 4)
			return 0;
		req->num = shd_sp_get_u32(b + c.off);
		c.off += 4;
		break;
	case SHD_SP_NUM_KEYS:
	case SHD_SP_CANCEL_WAIT:
	case SHD_SP_OP_MAX:
		break;
	}
#undef STR
	return (long)c.off;
}

struct shd_sp_str shd_sp_list_next(const uint8_t *list, size_t *pos)
{
	struct shd_sp_str s;
	s.len = shd_sp_get_u64(list + *pos);
	s.p = list + *pos + 8;
	*pos += 8 + (size_t)s.len;
	return s;
}

/* ---- output ---- */

void shd_sp_buf_free(struct shd_sp_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void shd_sp_put(struct shd_sp_buf *b, const void *p, size_t n)
{
	if (b->oom || n == 0)
		return;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap - b->len < n) {
			if (cap > SIZE_MAX / 2) {
				b->oom = 1;
				return;
			}
			cap *= 2;
		}
		uint8_t *q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void shd_sp_put_u8(struct shd_sp_buf *b, uint8_t v)
{
	shd_sp_put(b, &v, 1);
}

void shd_sp_put_u32(struct shd_sp_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	shd_sp_put(b, x, 4);
}

void shd_sp_put_u64(struct shd_sp_buf *b, uint64_t v)
{
	uint8_t x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	shd_sp_put(b, x, 8);
}

void shd_sp_put_str(struct shd_sp_buf *b, const void *p, uint64_t len)
{
	shd_sp_put_u64(b, len);
	shd_sp_put(b, p, (size_t)len);
}

int shd_sp_encode(struct shd_sp_buf *b, int dialect, const struct shd_sp_req *req)
{
	int byte = shd_sp_op_byte(dialect, req->op);
	if (byte < 0)
		return -EINVAL;
	shd_sp_put_u8(b, (uint8_t)byte);
	switch (req->op) {
	case SHD_SP_SET:
	case SHD_SP_APPEND:
		shd_sp_put_str(b, req->key.p, req->key.len);
		shd_sp_put_str(b, req->v1.p, req->v1.len);
		break;
	case SHD_SP_COMPARE_SET:
		shd_sp_put_str(b, req->key.p, req->key.len);
		shd_sp_put_str(b, req->v1.p, req->v1.len);
		shd_sp_put_str(b, req->v2.p, req->v2.len);
		break;
	case SHD_SP_GET:
	case SHD_SP_DELETE_KEY:
	case SHD_SP_WATCH_KEY:
		shd_sp_put_str(b, req->key.p, req->key.len);
		break;
	case SHD_SP_ADD:
		shd_sp_put_str(b, req->key.p, req->key.len);
		shd_sp_put_u64(b, (uint64_t)req->num);
		break;
	case SHD_SP_CHECK:
	case SHD_SP_WAIT:
	case SHD_SP_MULTI_GET:
	case SHD_SP_MULTI_SET:
		shd_sp_put_u64(b, req->n);
		shd_sp_put(b, req->list, req->list_len);
		break;
	case SHD_SP_VALIDATE:
	case SHD_SP_PING:
		shd_sp_put_u32(b, (uint32_t)req->num);
		break;
	case SHD_SP_NUM_KEYS:
	case SHD_SP_CANCEL_WAIT:
	case SHD_SP_OP_MAX:
		break;
	}
	return b->oom ? -ENOMEM : 0;
}

int shd_sp_parse_i64(const uint8_t *v, size_t len, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	uint64_t acc = 0;
	if (len > 0 && (v[0] == '-' || v[0] == '+')) {
		neg = v[0] == '-';
		i = 1;
	}
	if (i == len || len > 20)
		return -EINVAL;
	for (; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(v[i] - '0');
		if (acc > (UINT64_C(9223372036854775808) - d) / 10)
			return -EINVAL;
		acc = acc * 10 + d;
	}
	if (!neg && acc > INT64_MAX)
		return -EINVAL;
	*out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return 0;
}
