/* SPDX-License-Identifier: MIT */
/*
 * tests/store/store-proto.c - the TCPStore codec (proto/store.c)
 * without sockets: requests captured from torch 1.13 parse to the right
 * fields and re-encode byte for byte; every strict prefix asks for more;
 * oversized lengths are refused from the length field alone; unknown
 * query bytes refused; the dialect guess; ADD's decimal format.
 */
#include <stdint.h>
#include <string.h>

#include "proto/store.h"
#include "tests/lib/check.h"

static const struct shd_sp_limits lim = {64, 1024, 16};

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	for (; h[0] && h[1]; h += 2)
		sscanf(h, "%2hhx", &out[n++]);
	return n;
}

/* Parse, check every prefix is incomplete, re-encode. */
static struct shd_sp_req roundtrip(int dialect, const char *hex, enum shd_sp_op op)
{
	static uint8_t b[4096];
	size_t n = unhex(hex, b);
	struct shd_sp_req q;
	const char *why = NULL;
	for (size_t i = 0; i < n; i++)
		CHECKF(shd_sp_parse(b, i, dialect, &lim, &q, &why) == 0, "%s prefix %zu", hex, i);
	long r = shd_sp_parse(b, n, dialect, &lim, &q, &why);
	CHECKF(r == (long)n, "%s: %ld (%s)", hex, r, why ? why : "");
	CHECK(q.op == op);
	struct shd_sp_buf o = {0};
	CHECK(shd_sp_encode(&o, dialect, &q) == 0);
	CHECK(o.len == n && memcmp(o.p, b, n) == 0);
	shd_sp_buf_free(&o);
	return q;
}

static int streq(struct shd_sp_str s, const char *c)
{
	return s.len == strlen(c) && memcmp(s.p, c, s.len) == 0;
}

int main(void)
{
	struct shd_sp_req q;
	const char *why;
	uint8_t b[64];

	/* captured from python3-torch 1.13.1's TCPStore client */
	q = roundtrip(SHD_SP_V1, "0003000000000000002f6b3102000000000000007631", SHD_SP_SET);
	CHECK(streq(q.key, "/k1") && streq(q.v1, "v1"));
	q = roundtrip(SHD_SP_V1, "05010000000000000003000000000000002f6b31", SHD_SP_WAIT);
	CHECK(q.n == 1);
	size_t pos = 0;
	CHECK(streq(shd_sp_list_next(q.list, &pos), "/k1") && pos == q.list_len);
	q = roundtrip(SHD_SP_V1, "0203000000000000002f6b31", SHD_SP_GET);
	q = roundtrip(SHD_SP_V1, "0304000000000000002f637472feffffffffffffff", SHD_SP_ADD);
	CHECK(streq(q.key, "/ctr") && q.num == -2);
	q = roundtrip(SHD_SP_V1,
		      "0103000000000000002f6b3102000000000000007a7a02000000000000007632",
		      SHD_SP_COMPARE_SET);
	CHECK(streq(q.v1, "zz") && streq(q.v2, "v2"));
	q = roundtrip(SHD_SP_V1, "06", SHD_SP_NUM_KEYS);
	q = roundtrip(SHD_SP_V1, "0803000000000000002f6b31", SHD_SP_DELETE_KEY);
	q = roundtrip(SHD_SP_V1, "040200000000000000010000000000000061010000000000000062",
		      SHD_SP_CHECK);
	/* the newer dialect */
	q = roundtrip(SHD_SP_V2, "00cef7853c", SHD_SP_VALIDATE);
	CHECK((uint32_t)q.num == SHD_SP_MAGIC);
	q = roundtrip(SHD_SP_V2, "0d78563412", SHD_SP_PING);
	q = roundtrip(SHD_SP_V2, "0c", SHD_SP_CANCEL_WAIT);
	q = roundtrip(SHD_SP_V2,
		      "0b01000000000000000100000000000000610200000000000000767a",
		      SHD_SP_MULTI_SET);

	/* dialects */
	CHECK(shd_sp_dialect(b, 0) == 0);
	unhex("00cef7853c", b);
	for (size_t i = 1; i < 5; i++)
		CHECK(shd_sp_dialect(b, i) == 0);
	CHECK(shd_sp_dialect(b, 5) == SHD_SP_V2);
	unhex("0003000000", b);
	CHECK(shd_sp_dialect(b, 2) == SHD_SP_V1);
	unhex("06", b);
	CHECK(shd_sp_dialect(b, 1) == SHD_SP_V1);

	/* bounds from the length field alone */
	unhex("004100000000000000", b); /* SET, key of 65 bytes > 64 */
	CHECK(shd_sp_parse(b, 9, SHD_SP_V1, &lim, &q, &why) == -EMSGSIZE);
	CHECK_HAS(why, "key");
	unhex("000100000000000000610104000000000000", b); /* value of 1025 */
	CHECK(shd_sp_parse(b, 18, SHD_SP_V1, &lim, &q, &why) == -EMSGSIZE);
	CHECK_HAS(why, "value");
	unhex("00ffffffffffffffff", b); /* 2^64-1 */
	CHECK(shd_sp_parse(b, 9, SHD_SP_V1, &lim, &q, &why) == -EMSGSIZE);
	unhex("051100000000000000", b); /* WAIT of 17 keys > 16 */
	CHECK(shd_sp_parse(b, 9, SHD_SP_V1, &lim, &q, &why) == -E2BIG);
	b[0] = 9;
	CHECK(shd_sp_parse(b, 1, SHD_SP_V1, &lim, &q, &why) == -EBADMSG);
	b[0] = 0xff;
	CHECK(shd_sp_parse(b, 1, SHD_SP_V2, &lim, &q, &why) == -EBADMSG);
	b[0] = 7; /* WATCH_KEY exists in V1 only */
	CHECK(shd_sp_op_byte(SHD_SP_V2, SHD_SP_WATCH_KEY) < 0);
	CHECK(shd_sp_op_byte(SHD_SP_V1, SHD_SP_PING) < 0);

	/* ADD's values */
	int64_t v;
	CHECK(shd_sp_parse_i64((const uint8_t *)"13", 2, &v) == 0 && v == 13);
	CHECK(shd_sp_parse_i64((const uint8_t *)"-9223372036854775808", 20, &v) == 0 &&
	      v == INT64_MIN);
	CHECK(shd_sp_parse_i64((const uint8_t *)"9223372036854775808", 19, &v) == -EINVAL);
	CHECK(shd_sp_parse_i64((const uint8_t *)"", 0, &v) == -EINVAL);
	CHECK(shd_sp_parse_i64((const uint8_t *)"-", 1, &v) == -EINVAL);
	CHECK(shd_sp_parse_i64((const uint8_t *)"1x", 2, &v) == -EINVAL);
	printf("store-proto: ok\n");
	return 0;
}
