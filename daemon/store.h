/* SPDX-License-Identifier: MIT */
/*
 * daemon/store.h - the key-value store server (`store_listen`): an
 * in-memory, bounded store speaking PyTorch's TCPStore protocol
 * (docs/protocol-store.md), driven by the daemon's loop.
 *
 * Every bound (key bytes, value bytes, keys, connections, pending waits)
 * is enforced where it is first known; a request that exceeds one, a
 * malformed request, or a query we do not serve cuts that connection off
 * (the protocol has no error answer) after a rate-limited log line naming
 * the peer and the reason; a connection over store_max_conns is closed at
 * accept.  Nothing a client sends can stop the daemon.
 */
#ifndef SHD_STORE_H
#define SHD_STORE_H

#include <stddef.h>
#include <stdint.h>

struct shd_loop;
struct shd_store;

struct shd_store_limits {
	uint32_t max_keys;        /* keys held */
	uint32_t max_key_bytes;   /* bytes per key */
	uint32_t max_value_bytes; /* bytes per value */
	uint32_t max_conns;       /* connections open */
	uint32_t max_waiters;     /* WAITs pending, all connections together */
};

struct shd_store_stats {
	uint64_t conns;           /* accepted in all */
	uint64_t conns_open;      /* open now */
	uint64_t conns_refused;   /* closed at accept: store_max_conns */
	uint64_t conns_bad;       /* cut off: malformed, refused or unserved request */
	uint64_t requests;        /* requests served */
	uint64_t refused_key_bytes, refused_value_bytes, refused_keys, refused_waiters;
	uint64_t keys;            /* held now */
	uint64_t waiters;         /* pending now */
};

/*
 * Listen on host:port (host "" = every address; port "0" = ephemeral) and
 * serve on loop.  0, or a negative errno after logging why.
 */
int shd_store_open(struct shd_loop *loop, const char *host, const char *port,
		   const struct shd_store_limits *lim, struct shd_store **out);
/* The same for the daemon: cfg->store_listen (HOST:PORT, checked at load)
 * and the store_max_* options. */
struct shd_config;
int shd_store_open_cfg(struct shd_loop *loop, const struct shd_config *cfg,
		       struct shd_store **out);
/* Close every connection and free everything.  NULL ok. */
void shd_store_close(struct shd_store *s);
/* The port listened on (useful with port "0"). */
int shd_store_port(const struct shd_store *s);
void shd_store_get_stats(const struct shd_store *s, struct shd_store_stats *st);

/* Internal, for the fuzzer: a store without a loop or socket, and one
 * connection's bytes fed to it (answers discarded).  feed returns 0 while
 * the connection would stay open, -errno once it would be cut off. */
int shd_store_new_detached(const struct shd_store_limits *lim, struct shd_store **out);
int shd_store_feed(struct shd_store *s, const void *data, size_t len);

#endif /* SHD_STORE_H */
