/* SPDX-License-Identifier: MIT */
/*
 * proto/addr.h - the two name grammars the daemon and the client library
 * share: network addresses ("HOST:PORT") and node names.  One parser each;
 * every caller (daemon config, rendezvous, bind address, client library)
 * uses these, so a value one of them accepts is accepted by all.
 *
 * HOST:PORT grammar (docs/shuffled.8.scd, "ADDRESSES"):
 *
 *   addr  = name [":" port]        hostname or IPv4; name has no ':'
 *         | "[" ipv6 "]" [":" port]
 *         | ipv6                   bare IPv6, never with a port (only where
 *                                  the port is optional: the bind address)
 *   name  = 1*255 of A-Z a-z 0-9 . - _
 *   ipv6  = an address inet_pton(AF_INET6) accepts, optionally followed by
 *           "%" zone (zone: 1*63 of A-Z a-z 0-9 . - _)
 *   port  = 1*5 DIGIT, 1..65535 (written back without leading zeros)
 *
 * An unbracketed value with two or more ':' is a bare IPv6 address, so
 * "fe80::1:7000" is the address fe80::1:7000 without a port; write
 * "[fe80::1]:7000" for a port.  Where a port is required (static
 * rendezvous lists), a bare IPv6 address is refused.  The host comes back
 * without brackets.
 *
 * Node names: 1..63 bytes of A-Z a-z 0-9 . _ -, not starting with '.'.  A
 * node name is a directory name (runtime dir) and a file name (dir
 * rendezvous), so it can never be "", ".", ".." or contain '/'.
 */
#ifndef SHF_PROTO_ADDR_H
#define SHF_PROTO_ADDR_H

#include <stddef.h>

#define SHF_ADDR_HOST_MAX 256u /* host, NUL included */
#define SHF_ADDR_PORT_MAX 6u   /* "65535" + NUL */
#define SHF_NODE_NAME_MAX 64u  /* node name, NUL included */

#define SHF_ADDR_NEED_PORT 0x1u /* a port is required; bare IPv6 refused */

/*
 * Parse len bytes of s (need not be NUL-terminated) as an address.  On
 * success returns 0 and writes the host (without brackets) to host[hl] and
 * the port ("" when none) to port[pl]; either may be NULL to only check.
 * -EINVAL otherwise, with *why (if why) a static English reason; a host or
 * port that does not fit hl or pl is refused as too long.
 */
int shf_addr_parse(const char *s, size_t len, unsigned flags, char *host, size_t hl, char *port,
		   size_t pl, const char **why);

/* 0 if name is a valid node name, else -EINVAL with *why (if why) set. */
int shf_node_name_check(const char *name, const char **why);

#endif /* SHF_PROTO_ADDR_H */
