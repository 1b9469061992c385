/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/int.h - what rdv.c, rdv/dir.c and rdv/mpi.c share, and nobody
 * else sees: struct shd_rdv, the dir ident, the startup waits.  Calls go
 * one way: rdv.c -> rdv/dir.c and rdv.c -> rdv/mpi.c.
 */
#ifndef SHD_RDV_INT_H
#define SHD_RDV_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "daemon/rdv/types.h"
#include "proto/addr.h"

#define NAME_MAX_DIR SHF_NODE_NAME_MAX /* node names: < 64 chars */
#define POLL_MIN_NS 1000000L   /* 1 ms */
#define POLL_MAX_NS 50000000L  /* 50 ms */

/* dir: who wrote a file (see rdv.h, "dir files"). */
#define BOOT_ID_MAX 40
struct ident {
	uint64_t incarnation;
	long pid;
	char boot[BOOT_ID_MAX]; /* "-" unknown */
	uint64_t pidns;         /* 0 unknown */
	uint64_t start;         /* 0 unknown */
};

struct shd_rdv {
	enum shd_rdv_kind kind;
	uint32_t n_nodes;
	int my_node;           /* -1 until known */
	int timeout_ms;
	bool exchanged;        /* exchange() ran (successfully or not) */
	bool mpi_ours;         /* we called MPI_Init */
	bool mpi_broken;       /* a collective failed or timed out: do not finalize */
	char name[SHD_RDV_HOST_MAX];
	char path[PATH_MAX];   /* dir */
	bool dir_n;            /* dir: N given */
	uint32_t cap;          /* dir without N: the set's capacity (max_nodes) */
	struct shd_rdv_node *list; /* static: parsed entries */
	struct ident me;       /* incarnation; dir: what my file says about me */
	/* tcp */
	char store_host[SHD_RDV_HOST_MAX];
	char store_port[SHD_RDV_PORT_MAX];
	struct shd_sc *sc;     /* connection to the store; NULL after a failure */
	char record[2 * SHD_RDV_ADDR_MAX + SHD_RDV_HOST_MAX + 48 + 4 + 2 * SHD_RDV_MAC_BYTES]; /* my published record (signed) */
	uint32_t next_floor;   /* one past the highest node id this daemon knows of:
				* a refresh raises /shuffle/next to it */
	char warning[512];
	const struct shd_rdv_signer *signer; /* tcp: NULL without a cluster key */
	uint64_t bad_records;  /* tcp: records read whose MAC did not verify */
	char bad_key[SHD_RDV_HOST_MAX + 32]; /* the last such record's key */     /* tcp: what open had to work around, for the log */
};

static inline int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep for a growing interval: the waits here are startup-only. */
static inline void backoff(long *ns)
{
	struct timespec ts = {0, *ns};
	nanosleep(&ts, NULL);
	*ns = *ns * 2 > POLL_MAX_NS ? POLL_MAX_NS : *ns * 2;
}

static inline bool expired(int64_t deadline)
{
	return deadline >= 0 && now_ms() >= deadline;
}

/* Every kind's exchange ends here: fill out and move the node table
 * [n_nodes] into it (*nodes is NULL after, so the caller's cleanup frees
 * nothing). */
static inline void rdv_result_take(struct shd_rdv_result *out, enum shd_rdv_kind kind,
				   bool grows, uint32_t n_nodes, int my_node,
				   struct shd_rdv_node **nodes)
{
	out->kind = kind;
	out->grows = grows;
	out->n_nodes = n_nodes;
	out->my_node = (uint32_t)my_node;
	out->nodes = *nodes;
	*nodes = NULL;
}

/* rdv/dir.c: the dir kind */
/* Who I am, for my file (and the incarnation of every kind).  inc 0: draw
 * one. */
void shd_rdv_dir_ident(struct ident *me, uint64_t inc);
int shd_rdv_dir_open(struct shd_rdv *r, uint32_t max_nodes, char *err, size_t errlen);
int shd_rdv_dir_lookup(struct shd_rdv *r, uint32_t node, struct shd_rdv_node *out, char *err,
		       size_t errlen);
int shd_rdv_dir_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
			 struct shd_rdv_result *out, char *err, size_t errlen);

/* rdv/mpi.c: the mpi kind, the only MPI user */
int shd_rdv_mpi_open(struct shd_rdv *r, char *err, size_t errlen);
int shd_rdv_mpi_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
			 struct shd_rdv_result *out, char *err, size_t errlen);
/* MPI_Finalize if we initialised MPI and no collective failed. */
void shd_rdv_mpi_close(struct shd_rdv *r);

/* rdv/tcp.c */
int shd_rdv_tcp_parse(struct shd_rdv *r, const char *rest, char *err, size_t errlen);
int shd_rdv_tcp_open(struct shd_rdv *r, uint32_t max_nodes, char *err, size_t errlen);
int shd_rdv_tcp_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
			 struct shd_rdv_result *out, char *err, size_t errlen);
int shd_rdv_tcp_lookup(struct shd_rdv *r, uint32_t node, int timeout_ms,
		       struct shd_rdv_node *out, char *err, size_t errlen);
void shd_rdv_tcp_close(struct shd_rdv *r);
int shd_rdv_tcp_restore_claim(struct shd_rdv *r, uint32_t node, const char *name, char *err,
			      size_t errlen);
int shd_rdv_tcp_refresh(struct shd_rdv *r, int timeout_ms, char *err, size_t errlen);

#endif /* SHD_RDV_INT_H */
