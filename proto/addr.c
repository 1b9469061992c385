/* SPDX-License-Identifier: MIT */
/*
 * proto/addr.c - HOST:PORT and node-name grammars; see addr.h.
 */
#include "proto/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

static int fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -EINVAL;
}

/* Copy n bytes of src to dst[cap] with a NUL; false if it does not fit. */
static bool put(char *dst, size_t cap, const char *src, size_t n)
{
	if (!dst)
		return true;
	if (n >= cap)
		return false;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return true;
}

/* "ADDR" or "ADDR%ZONE", n bytes, ADDR an IPv6 address. */
static int check_v6(const char *s, size_t n, const char **why)
{
	char buf[INET6_ADDRSTRLEN];
	struct in6_addr a;
	const char *pct = memchr(s, '%', n);
	size_t alen = pct ? (size_t)(pct - s) : n;
	if (alen == 0 || alen >= sizeof(buf))
		return fail(why, "not an IPv6 address");
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET6, buf, &a) != 1)
		return fail(why, "not an IPv6 address");
	if (pct) {
		size_t zl = n - alen - 1;
		if (zl == 0 || zl >= SHF_NODE_NAME_MAX)
			return fail(why, "bad IPv6 zone after '%' (1 to 63 characters)");
		for (size_t i = 0; i < zl; i++)
			if (!name_char(pct[1 + i]))
				return fail(why, "bad IPv6 zone after '%' (letters, digits, '.', "
						 "'-', '_')");
	}
	return 0;
}

static int parse_port(const char *p, size_t n, char *port, size_t pl, const char **why)
{
	unsigned long v = 0;
	char buf[SHF_ADDR_PORT_MAX];
	if (n == 0)
		return fail(why, "no port after ':'");
	if (n > 5)
		return fail(why, "the port is not a number in 1..65535");
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return fail(why, "the port is not a number in 1..65535");
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return fail(why, "the port is not a number in 1..65535");
	int len = snprintf(buf, sizeof(buf), "%lu", v);
	if (!put(port, pl, buf, (size_t)len))
		return fail(why, "port too long for its buffer");
	return 0;
}

int shf_addr_parse(const char *s, size_t len, unsigned flags, char *host, size_t hl, char *port,
		   size_t pl, const char **why)
{
	const char *h, *p = NULL;
	size_t hn, pn = 0;
	int r;

	if (host && hl)
		host[0] = '\0';
	if (port && pl)
		port[0] = '\0';
	if (!s || len == 0)
		return fail(why, "empty address");
	if (memchr(s, '\0', len))
		return fail(why, "contains a NUL byte");
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return fail(why, "'[' without ']'");
		h = s + 1;
		hn = (size_t)(close - h);
		if (hn == 0)
			return fail(why, "empty IPv6 address in []");
		if ((r = check_v6(h, hn, why)) < 0)
			return r;
		const char *rest = close + 1;
		size_t rn = (size_t)(s + len - rest);
		if (rn) {
			if (rest[0] != ':')
				return fail(why, "expected ':' and a port after ']'");
			p = rest + 1;
			pn = rn - 1;
		}
	} else {
		const char *c1 = memchr(s, ':', len);
		if (c1 && memchr(c1 + 1, ':', (size_t)(s + len - c1 - 1))) {
			/* two or more ':': a bare IPv6 address, never with a port */
			if (flags & SHF_ADDR_NEED_PORT)
				return fail(why, "an IPv6 address with a port must be in brackets: "
						 "[ADDR]:PORT");
			if ((r = check_v6(s, len, why)) < 0)
				return r;
			h = s;
			hn = len;
		} else {
			h = s;
			hn = c1 ? (size_t)(c1 - s) : len;
			if (c1) {
				p = c1 + 1;
				pn = (size_t)(s + len - p);
			}
			if (hn == 0)
				return fail(why, "empty host");
			for (size_t i = 0; i < hn; i++)
				if (!name_char(h[i]))
					return fail(why, "a host name may contain only letters, "
							 "digits, '.', '-' and '_' (IPv6 goes in [])");
		}
	}
	if (hn >= SHF_ADDR_HOST_MAX)
		return fail(why, "host longer than 255 bytes");
	if (!p && (flags & SHF_ADDR_NEED_PORT))
		return fail(why, "no port (HOST:PORT or [IPV6]:PORT)");
	if (p && (r = parse_port(p, pn, port, pl, why)) < 0)
		return r;
	if (!put(host, hl, h, hn)) {
		if (port && pl)
			port[0] = '\0';
		return fail(why, "host too long for its buffer");
	}
	return 0;
}

int shf_node_name_check(const char *name, const char **why)
{
	if (!name || !name[0])
		return fail(why, "must not be empty");
	if (name[0] == '.')
		return fail(why, "must not start with '.'");
	for (size_t i = 0; name[i]; i++) {
		if (i >= SHF_NODE_NAME_MAX - 1)
			return fail(why, "longer than 63 bytes");
		if (!name_char(name[i]))
			return fail(why, "may contain only letters, digits, '.', '_' and '-'");
	}
	return 0;
}
