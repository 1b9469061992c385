/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/auth.h - the cluster key and the peer handshake's MAC.  The only
 * user of libsodium in the project.
 *
 * Every daemon of a cluster reads the same key (SHD_AUTH_KEY_BYTES random
 * bytes in a file only the daemon's user can read, like munge's).  Two
 * daemons prove to each other that they hold it once per peer session, in
 * the heartbeats of the session handshake (docs/protocol-wire.md,
 * "Authentication"): each heartbeat carries the sender's nonce (new with
 * each of its session tags) and
 *
 *   MAC = HMAC-SHA-512-256(key, "shuffle-hb-v3" || src_node || dst_node ||
 *                          src_session || dst_session || src_nonce || echo)
 *
 * (integers little-endian, 4 and 8 bytes) where echo is the receiver's
 * nonce as the sender last saw it, or 32 zero bytes.  A receiver checks it
 * with its own nonce as echo, so a MAC proves both the key and that the
 * sender saw this session's nonce: it cannot be replayed into another
 * session, nor reflected (the node ids are ordered src, dst).
 *
 * A heartbeat with HB_CTR (every heartbeat of a daemon with a key) is
 * MACed under the domain "shuffle-hb-v4" with its counter (u32) appended:
 * the counter grows with each heartbeat to that peer, and a receiver takes
 * a heartbeat of a running session only with a counter above the last one
 * it took, so heartbeats captured on the wire cannot be sent again to keep
 * a dead node's session alive.  Nothing on the data path is authenticated
 * (no per-message MAC).
 */
#ifndef SHD_AUTH_H
#define SHD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHD_AUTH_KEY_BYTES 32u
#define SHD_AUTH_NONCE_BYTES 32u /* == SHF_WIRE_NONCE_BYTES */
#define SHD_AUTH_MAC_BYTES 32u   /* == SHF_WIRE_MAC_BYTES */

struct shd_auth;

/* What a handshake MAC covers. */
struct shd_auth_hb {
	uint32_t src_node, dst_node;
	uint64_t src_session, dst_session;
	const uint8_t *src_nonce; /* SHD_AUTH_NONCE_BYTES */
	const uint8_t *echo;      /* the receiver's nonce as the sender saw it; NULL: zeros */
	bool counted;             /* HB_CTR: the MAC covers counter too ("shuffle-hb-v4") */
	uint32_t counter;         /* the heartbeat's counter (only when counted) */
};

/* Initialise the library (idempotent).  0 or -EIO. */
int shd_auth_init(void);

/* Read the key from path.  Refused (-EPERM, err says why and how to fix
 * it) unless path is a regular file owned by the effective uid, with no
 * permission for group or others, of exactly SHD_AUTH_KEY_BYTES bytes.
 * Sets *a_p only on success. */
int shd_auth_load(const char *path, struct shd_auth **a_p, char *err, size_t errlen);
/* Wipe and free.  NULL ok. */
void shd_auth_free(struct shd_auth *a);

/* A fresh random nonce (libsodium's randombytes). */
void shd_auth_nonce(uint8_t nonce[SHD_AUTH_NONCE_BYTES]);
/* A random 64-bit value (session tags). */
uint64_t shd_auth_random64(void);

void shd_auth_mac(const struct shd_auth *a, const struct shd_auth_hb *m,
		  uint8_t mac[SHD_AUTH_MAC_BYTES]);
/* true when mac is m's MAC under a's key; compared in constant time. */
bool shd_auth_verify(const struct shd_auth *a, const struct shd_auth_hb *m,
		     const uint8_t mac[SHD_AUTH_MAC_BYTES]);

/* Records a daemon publishes in the tcp:// store (daemon/rdv/tcp.c): the
 * MAC of store key and value, HMAC-SHA-512-256(key, "shuffle-rec-v1" ||
 * store key || 0 || value).  verify compares in constant time. */
void shd_auth_mac_record(const struct shd_auth *a, const char *key, const void *val,
			 size_t len, uint8_t mac[SHD_AUTH_MAC_BYTES]);
bool shd_auth_verify_record(const struct shd_auth *a, const char *key, const void *val,
			    size_t len, const uint8_t mac[SHD_AUTH_MAC_BYTES]);

#endif
