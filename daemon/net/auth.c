/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/auth.c - the cluster key and the handshake MAC (auth.h), over
 * libsodium: crypto_auth (HMAC-SHA-512-256), randombytes, sodium_memcmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/net/auth.h"
#include "proto/wire.h"

_Static_assert(SHD_AUTH_KEY_BYTES == crypto_auth_KEYBYTES, "key size");
_Static_assert(SHD_AUTH_MAC_BYTES == crypto_auth_BYTES, "mac size");
_Static_assert(SHD_AUTH_NONCE_BYTES == SHF_WIRE_NONCE_BYTES &&
		       SHD_AUTH_MAC_BYTES == SHF_WIRE_MAC_BYTES,
	       "the heartbeat carries them");

struct shd_auth {
	unsigned char key[SHD_AUTH_KEY_BYTES];
};

static const char domain[] = "shuffle-hb-v3"; /* never reused for another MAC */
static const char domain4[] = "shuffle-hb-v4"; /* with a counter (HB_CTR) */
_Static_assert(sizeof(domain) == sizeof(domain4), "same length");

int shd_auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

int shd_auth_load(const char *path, struct shd_auth **a_p, char *err, size_t errlen)
{
	int r = shd_auth_init();
	if (r < 0) {
		snprintf(err, errlen, "cluster_key: libsodium failed to initialise");
		return r;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cluster_key %s: %s (generate one with shuffle-keygen %s)",
			 path, strerror(errno), path);
		return r;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "cluster_key %s: %s", path, strerror(errno));
		goto out;
	}
	r = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cluster_key %s: not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "cluster_key %s: owned by uid %u, not by this daemon's "
			 "user (uid %u); fix: chown %u %s", path, (unsigned)st.st_uid,
			 (unsigned)geteuid(), (unsigned)geteuid(), path);
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "cluster_key %s: mode %04o lets group or others read or "
			 "write it; fix: chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_size != SHD_AUTH_KEY_BYTES) {
		r = -EINVAL;
		snprintf(err, errlen, "cluster_key %s: %lld bytes, expected %u (generate one with "
			 "shuffle-keygen)", path, (long long)st.st_size, SHD_AUTH_KEY_BYTES);
		goto out;
	}
	struct shd_auth *a = malloc(sizeof(*a));
	if (!a) {
		r = -ENOMEM;
		snprintf(err, errlen, "cluster_key: out of memory");
		goto out;
	}
	sodium_mlock(a, sizeof(*a)); /* best effort: kept out of swap */
	ssize_t got = read(fd, a->key, sizeof(a->key));
	if (got != (ssize_t)sizeof(a->key)) {
		r = got < 0 ? -errno : -EIO;
		snprintf(err, errlen, "cluster_key %s: short read", path);
		shd_auth_free(a);
		goto out;
	}
	*a_p = a;
	r = 0;
out:
	close(fd);
	return r;
}

void shd_auth_free(struct shd_auth *a)
{
	if (!a)
		return;
	sodium_munlock(a, sizeof(*a)); /* also wipes it */
	sodium_memzero(a, sizeof(*a));
	free(a);
}

void shd_auth_nonce(uint8_t nonce[SHD_AUTH_NONCE_BYTES])
{
	randombytes_buf(nonce, SHD_AUTH_NONCE_BYTES);
}

uint64_t shd_auth_random64(void)
{
	uint64_t v;
	randombytes_buf(&v, sizeof(v));
	return v;
}

/* The bytes the MAC covers (auth.h): v3, and v4 with the counter. */
#define MSG_BYTES (sizeof(domain) - 1 + 4 + 4 + 8 + 8 + 2 * SHD_AUTH_NONCE_BYTES)
#define MSG4_BYTES (MSG_BYTES + 4)

static void encode(const struct shd_auth_hb *m, uint8_t *b)
{
	size_t o = sizeof(domain) - 1;
	memcpy(b, m->counted ? domain4 : domain, o);
	shf_wire_put32(b + o, m->src_node);
	shf_wire_put32(b + o + 4, m->dst_node);
	shf_wire_put64(b + o + 8, m->src_session);
	shf_wire_put64(b + o + 16, m->dst_session);
	o += 24;
	memcpy(b + o, m->src_nonce, SHD_AUTH_NONCE_BYTES);
	if (m->echo)
		memcpy(b + o + SHD_AUTH_NONCE_BYTES, m->echo, SHD_AUTH_NONCE_BYTES);
	else
		memset(b + o + SHD_AUTH_NONCE_BYTES, 0, SHD_AUTH_NONCE_BYTES);
	if (m->counted)
		shf_wire_put32(b + MSG_BYTES, m->counter);
}

void shd_auth_mac(const struct shd_auth *a, const struct shd_auth_hb *m,
		  uint8_t mac[SHD_AUTH_MAC_BYTES])
{
	uint8_t b[MSG4_BYTES];
	encode(m, b);
	crypto_auth(mac, b, m->counted ? MSG4_BYTES : MSG_BYTES, a->key);
}

bool shd_auth_verify(const struct shd_auth *a, const struct shd_auth_hb *m,
		     const uint8_t mac[SHD_AUTH_MAC_BYTES])
{
	uint8_t want[SHD_AUTH_MAC_BYTES];
	shd_auth_mac(a, m, want);
	bool ok = sodium_memcmp(want, mac, SHD_AUTH_MAC_BYTES) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

/* Store records (tcp rendezvous): HMAC-SHA-512-256(key, "shuffle-rec-v1"
 * || store key || 0 || value), so that a record is bound to the key it
 * was published under (a node record to its id, an id claim to its name). */
static const char rec_domain[] = "shuffle-rec-v1";

void shd_auth_mac_record(const struct shd_auth *a, const char *key, const void *val,
			 size_t len, uint8_t mac[SHD_AUTH_MAC_BYTES])
{
	crypto_auth_hmacsha512256_state st;
	crypto_auth_hmacsha512256_init(&st, a->key, sizeof(a->key));
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)rec_domain,
					 sizeof(rec_domain) - 1);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)key, strlen(key) + 1);
	crypto_auth_hmacsha512256_update(&st, val, len);
	crypto_auth_hmacsha512256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

bool shd_auth_verify_record(const struct shd_auth *a, const char *key, const void *val,
			    size_t len, const uint8_t mac[SHD_AUTH_MAC_BYTES])
{
	uint8_t want[SHD_AUTH_MAC_BYTES];
	shd_auth_mac_record(a, key, val, len, want);
	bool ok = sodium_memcmp(want, mac, SHD_AUTH_MAC_BYTES) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}
