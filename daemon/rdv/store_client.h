/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/store_client.h - a blocking client of a TCPStore-protocol store
 * (ours, `store_listen`, or one a PyTorch program serves), for the
 * daemon's rendezvous and the tests.  Speaks torch 1.13's dialect
 * (docs/protocol-store.md); keys are sent as given (torch's Python API
 * prefixes its keys with "/": pass "/name" to meet them).
 *
 * No logging: a failing call returns a negative errno and writes one
 * sentence into err[errlen] (daemon/errbuf.h).  Every call is bounded by
 * the client's I/O timeout, wait and get by their own timeout_ms (-1:
 * forever).  A call that breaks the byte stream (timeout, reset, a short
 * answer) closes the connection; the next call reconnects.
 *
 * Errors: -ETIMEDOUT, -ECONNREFUSED, -ECONNRESET (the store closed the
 * connection: it refused a request over one of its bounds or found it
 * malformed; its log says which), -EHOSTUNREACH, -EADDRNOTAVAIL (name
 * does not resolve), -EMSGSIZE (answer larger than the client accepts),
 * -EPROTO (malformed answer), -ENOMEM, -EINVAL.
 */
#ifndef SHD_STORE_CLIENT_H
#define SHD_STORE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct shd_sc;

/* Connect to host:port within timeout_ms (also the I/O timeout of later
 * calls; <= 0: 30 s).  *out set only on success. */
int shd_sc_connect(const char *host, const char *port, int timeout_ms, struct shd_sc **out,
		   char *err, size_t errlen);
void shd_sc_close(struct shd_sc *c); /* NULL ok */

/* Largest value the client accepts in an answer (default 64 MiB). */
void shd_sc_set_max_value(struct shd_sc *c, uint64_t bytes);

/* SET, confirmed: returns once the store has applied it (a GETNUMKEYS
 * round trip follows, so a refusal shows here as -ECONNRESET). */
int shd_sc_set(struct shd_sc *c, const char *key, const void *val, size_t len, char *err,
	       size_t errlen);
/* WAIT for key (timeout_ms), then GET.  *val (malloc'd, NUL-terminated
 * past len) and *len on success. */
int shd_sc_get(struct shd_sc *c, const char *key, int timeout_ms, void **val, size_t *len,
	       char *err, size_t errlen);
/* ADD delta; the new value in *result (NULL ok). */
int shd_sc_add(struct shd_sc *c, const char *key, int64_t delta, int64_t *result, char *err,
	       size_t errlen);
/* 1 every key exists, 0 not. */
int shd_sc_check(struct shd_sc *c, const char *const *keys, size_t n, char *err, size_t errlen);
/* 0 once every key exists, -ETIMEDOUT after timeout_ms. */
int shd_sc_wait(struct shd_sc *c, const char *const *keys, size_t n, int timeout_ms, char *err,
		size_t errlen);
/* COMPARE_SET: the store's answer (the value now, see the protocol) in
 * *cur (malloc'd, NUL-terminated past *cur_len), if cur is not NULL. */
int shd_sc_compare_set(struct shd_sc *c, const char *key, const void *expected, size_t elen,
		       const void *desired, size_t dlen, void **cur, size_t *cur_len, char *err,
		       size_t errlen);
/* 1 deleted, 0 there was no such key. */
int shd_sc_delete(struct shd_sc *c, const char *key, char *err, size_t errlen);
int shd_sc_num_keys(struct shd_sc *c, int64_t *n, char *err, size_t errlen);

#endif /* SHD_STORE_CLIENT_H */
