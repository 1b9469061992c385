/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/types.h - the rendezvous' data types: a node's record, the
 * result of an exchange, who this node is.  Shared by the API (rdv.h) and
 * the kinds' files (rdv/int.h), so that the kinds need not include the API
 * they sit below.
 */
#ifndef SHD_RDV_TYPES_H
#define SHD_RDV_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHD_RDV_HOST_MAX 256u  /* host / node name, NUL included */
#define SHD_RDV_PORT_MAX 16u   /* port string, NUL included */
#define SHD_RDV_ADDR_MAX 128u  /* raw fabric address bytes */
#define SHD_RDV_NODES_MAX (1u << 20)

enum shd_rdv_kind {
	SHD_RDV_MPI = 1,
	SHD_RDV_STATIC,
	SHD_RDV_DIR,
	SHD_RDV_TCP,
	SHD_RDV_KIND_MAX
};

struct shd_rdv_node {
	char host[SHD_RDV_HOST_MAX]; /* mpi: hostname; dir: node name; static: host */
	char port[SHD_RDV_PORT_MAX]; /* static: port; else "" */
	uint32_t addr_len;           /* raw address bytes; 0 for static, and for a
	                                dir node without a live file (no N) */
	uint64_t incarnation;        /* dir: the writer's incarnation; else 0 */
	uint8_t addr[SHD_RDV_ADDR_MAX];
};

struct shd_rdv_result {
	enum shd_rdv_kind kind;
	bool grows;                 /* tcp, dir without N: nodes may appear later
	                               (shd_rdv_lookup() finds them); n_nodes is
	                               then the set's capacity */
	uint32_t n_nodes;           /* >= 1 */
	uint32_t my_node;           /* < n_nodes */
	struct shd_rdv_node *nodes; /* [n_nodes], indexed by node id; heap */
};

struct shd_rdv_self {
	const char *name; /* my node name: mpi records it as the hostname; dir
	                     uses it as the file name and requires a valid node
	                     name (shf_node_name_check).  NULL: gethostname() */
	const char *bind; /* static: my "HOST:PORT" as it appears in the list */
	int timeout_ms;   /* bound on waiting for the others; 0: 60 s; -1: forever */
	uint64_t incarnation; /* this daemon's start (random, not 0); 0: rdv draws
	                         one (shd_rdv_incarnation() tells which).  Keep
	                         it last: callers initialise this struct by
	                         position. */
	uint32_t max_nodes;   /* tcp, dir without N: node ids < max_nodes (the
	                         set's capacity); 0: 1024 */
	const struct shd_rdv_signer *signer; /* tcp: MACs on records; NULL: none */
};

/* tcp with a cluster key: every record this daemon publishes in the store
 * (id claims, node records) carries " m=" and the hex MAC of key and value
 * under the cluster key (daemon/net/auth.c); a record read without a MAC
 * that verifies is ignored.  Kept a callback so that rdv links no crypto. */
#define SHD_RDV_MAC_BYTES 32u
struct shd_rdv_signer {
	const void *ctx;
	void (*mac)(const void *ctx, const char *key, const void *val, size_t len,
		    uint8_t mac[SHD_RDV_MAC_BYTES]);
	/* true when mac is the MAC of key and val (constant time) */
	bool (*verify)(const void *ctx, const char *key, const void *val, size_t len,
		       const uint8_t mac[SHD_RDV_MAC_BYTES]);
};

#endif
