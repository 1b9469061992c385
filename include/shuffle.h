/* SPDX-License-Identifier: MIT */
/*
 * shuffle.h - the public API of libshuffle-client.
 *
 * Application processes talk to their node's shuffled daemon through two
 * shared-memory rings and one control socket.  Every call returns >= 0 on
 * success or a negative errno (see shf_strerror()).  No call blocks forever
 * unless the caller passed a timeout of -1.
 */
#ifndef SHUFFLE_H
#define SHUFFLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2 since 1.2 (shf_opts.deliver_many); a program built against 1 keeps
 * working: shf_opts_init@SHUFFLE_1 fills the version-1 layout. */
#define SHF_API_VERSION 2u

/* shf_send() flags */
#define SHF_NONBLOCK 0x1u /* return -EAGAIN instead of waiting for ring space */

/* shf_send() flag, since 1.2: more sends follow.  The record may be held
 * in the library (its data copied) and go with later ones in one
 * publication, grouped by destination: at the latest with this thread's
 * next shuffle call without SHF_MORE (shf_send, shf_send_many, shf_bcast,
 * shf_flush, shf_epoch, shf_poll, shf_close), or when a window of records
 * is full.  Honoured on the thread that opened the context (poll mode's
 * callbacks run there too); on other threads the record goes at once. */
#define SHF_MORE 0x4u

/* shf_bcast() flags (with SHF_NONBLOCK) */
#define SHF_BCAST_SELF 0x2u /* the sender gets its own broadcast too */

/* shf_flush() targets */
#define SHF_FLUSH_ORIGIN 1u   /* the daemon has taken all my earlier records */
#define SHF_FLUSH_REMOTE 2u   /* all my earlier records sit in their destination rings */
#define SHF_FLUSH_DELIVERY 3u /* my delivery ring at call time has been consumed */

struct shf_ctx; /* opaque */

/* Since 1.2: one record of shf_send_many(). */
struct shf_msg {
	int dst;           /* destination rank */
	uint32_t type;     /* the application's tag, handed to the receiver */
	const void *data;  /* len bytes; may be NULL when len is 0 */
	uint32_t len;
};

/* Since 1.2: one delivered record, as a batch callback sees it.  `data`
 * points into the delivery ring and is valid only until the callback
 * returns. */
struct shf_rec {
	int src;           /* the sender's rank */
	int dst;           /* this rank */
	uint32_t type;
	uint32_t len;
	const void *data;
};

/* Since 1.2: batch delivery.  recs[0..n) are consecutive records of the
 * delivery ring, in arrival order (per-source order kept), n >= 1. */
typedef void (*shf_deliver_many_fn)(void *arg, const struct shf_rec *recs, unsigned n);

struct shf_opts {
	unsigned version;        /* SHF_API_VERSION */
	/* NULL: $SHF_SOCKET, else $SHF_RUNTIME_DIR/shuffled.sock, else the
	 * user's own daemon if one answers, else the node's system daemon
	 * (docs/api.md, "Finding the daemon") */
	const char *socket_path;
	/* NULL: $SHF_JOB, else the launcher's key (per mpirun: PMIX_NAMESPACE;
	 * srun: SLURM_JOB_ID.SLURM_STEP_ID; torchrun: TORCHELASTIC_RUN_ID or
	 * MASTER_ADDR:MASTER_PORT), else "default" (docs/api.md, "Launchers") */
	const char *job;
	/* -1 (both): $SHF_RANK/$SHF_WORLD, else the launcher's, first found of
	 * PyTorch env://, Open MPI mpirun, Open MPI singleton (0 of 1), PMIx,
	 * PMI, Slurm srun.  MPI programs: pass MPI_Comm_rank/size here. */
	int rank, world;
	uint32_t ring_bytes;     /* 0: daemon default; per direction, power of two */
	int delivery_thread;     /* 1: callbacks on a library thread; 0: shf_poll() */
	int timeout_ms;          /* open/send/flush/epoch; 0: default (60 s); -1: forever */
	/* version >= 2: non-NULL: records are handed out in batches to this
	 * function (with shf_open's arg) instead of one by one to shf_open's
	 * fn, which may then be NULL.  Thread and poll mode alike. */
	shf_deliver_many_fn deliver_many;
};

/*
 * Delivery callback.  `data` points into the delivery ring and is valid only
 * until the callback returns.  A callback that blocks holds back its
 * senders (backpressure).  It may call shf_send() on the same context.
 */
typedef void (*shf_deliver_fn)(void *arg, int src, int dst, uint32_t type,
			       const void *data, uint32_t len);

/* Client-side counters, see shf_stats_get(). */
struct shf_stats {
	uint64_t sent_msgs;        /* records written into the send ring */
	uint64_t sent_bytes;       /* their payload bytes */
	uint64_t delivered_msgs;   /* callbacks returned */
	uint64_t delivered_bytes;  /* their payload bytes */
	uint64_t send_blocked_ns;  /* time shf_send() waited for ring space */
	uint64_t send_eagain;      /* SHF_NONBLOCK sends that returned -EAGAIN */
	uint64_t dropped_dead;     /* my records dropped: destination rank gone */
	uint64_t dropped_down;     /* my records dropped: destination node down */
	uint64_t flushes;          /* shf_flush() calls completed */
	uint64_t epochs;           /* shf_epoch() calls completed */
};

void shf_opts_init(struct shf_opts *o);

/* Connect, register, and wait until every rank of the job has registered.
 * -ETIMEDOUT names the missing ranks in shf_error_detail().  The daemon
 * must run as root, as this process's user, or as the system user the
 * library was built for (meson option system_user): any other daemon is
 * refused with -EPERM before anything is sent to it. */
int shf_open(const struct shf_opts *o, shf_deliver_fn fn, void *arg, struct shf_ctx **ctx_p);

/* Write-behind send of `len` bytes to rank `dst`.  Blocks while the send
 * ring is full, up to the context's timeout (shf_opts.timeout_ms; -1: for
 * ever), then -ETIMEDOUT: nothing of the message was sent, it may be sent
 * again.  SHF_NONBLOCK: -EAGAIN instead of waiting.  -EMSGSIZE above the
 * daemon's max_msg, -ESRCH for a rank outside the world. */
int shf_send(struct shf_ctx *c, int dst, uint32_t type, const void *data, uint32_t len,
	     unsigned flags);

/* Since 1.2 (SHUFFLE_1.2): send n records with one entry into the send
 * ring and one publication (while they fit; a full ring publishes what is
 * written and waits, or with SHF_NONBLOCK stops there).  Every record is
 * checked as shf_send() checks it before anything is sent: a bad one fails
 * the call (-EINVAL, -ESRCH, -EMSGSIZE), naming its index in
 * shf_error_detail().  Returns the number of records sent, in order from
 * msgs[0]: n, or fewer when SHF_NONBLOCK found the ring full or the
 * timeout passed while records were already sent (the rest were not sent;
 * the next call reports what stops them).  Nothing sent: -EAGAIN or
 * -ETIMEDOUT as shf_send().  Order, flow control, flushes and epochs treat
 * each record as one shf_send(), mixed in any order with shf_send() and
 * shf_bcast().  n == 0 returns 0. */
int shf_send_many(struct shf_ctx *c, const struct shf_msg *msgs, unsigned n, unsigned flags);

/* Since 1.1 (SHUFFLE_1.1): send `len` bytes once to every rank of the job
 * but the caller (every rank with SHF_BCAST_SELF).  One record in the send
 * ring; the daemon sends one copy to each other node, whose daemon hands it
 * to its ranks.  Blocking, SHF_NONBLOCK, timeouts and errors as shf_send();
 * the credit it takes is a send's to each node.  Order: from one source,
 * sends and broadcasts reach each rank in the order they were issued.
 * Flushes and epochs cover broadcasts; a rank gone or a node down counts
 * one drop per rank it did not reach (-ESRCH / -EHOSTDOWN at the next
 * flush or epoch). */
int shf_bcast(struct shf_ctx *c, uint32_t type, const void *data, uint32_t len, unsigned flags);

/* shf_node_info(): where the job's ranks are, as this rank's daemon knows
 * it (ranks that left or were lost with their node are not counted).
 * Nodes are numbered 0 .. nodes-1 in the order of their daemons' node ids.
 * The caller sets the arrays and capacities; the library fills the rest. */
struct shf_node_info {
	int node;              /* out: this rank's node, 0 <= node < nodes */
	int nodes;             /* out: nodes with ranks of the job */
	int local_count;       /* out: ranks of the job on this node (this one too) */
	int *local_ranks;      /* in: NULL or an array; out: the first local_cap of
	                          this node's ranks, ascending */
	int local_cap;         /* in: entries local_ranks holds (0 with NULL) */
	int *node_counts;      /* in: NULL or an array; out: ranks on node 0, 1, ...
	                          up to node_counts_cap entries (min(nodes, cap) set) */
	int node_counts_cap;   /* in: entries node_counts holds (0 with NULL) */
};

/* Since 1.1 (SHUFFLE_1.1): fill ni from the daemon.  Waits up to the
 * context's timeout for the answer.  0, -EINVAL (bad arrays or caps),
 * -ETIMEDOUT, -ENOTCONN. */
int shf_node_info(struct shf_ctx *c, struct shf_node_info *ni);

/* See SHF_FLUSH_*.  Returns 0, or -ESRCH / -EHOSTDOWN when records sent
 * since the previous flush or epoch were dropped (rank gone / node down). */
int shf_flush(struct shf_ctx *c, unsigned what, int timeout_ms);

/* Collective over the job: returns once everything any rank sent before
 * entering has been delivered (callback returned) at its destination. */
int shf_epoch(struct shf_ctx *c, int timeout_ms);

/* Poll mode (delivery_thread = 0): run callbacks for waiting records.
 * Returns the number delivered, waiting up to timeout_ms for the first.
 * In poll mode callbacks also run inside shf_send/flush/epoch/close while
 * they wait (so two ranks sending to each other cannot deadlock).  To sleep
 * in your own loop: call shf_poll() until it returns 0, then wait on
 * shf_event_fd().  From inside a callback, shf_poll, shf_epoch,
 * shf_flush(SHF_FLUSH_DELIVERY) and shf_close return -EDEADLK; two threads
 * in shf_epoch at once get -EBUSY. */
int shf_poll(struct shf_ctx *c, int timeout_ms);

/* An fd that becomes readable when shf_poll() has work (poll mode). */
int shf_event_fd(const struct shf_ctx *c);

int shf_stats_get(struct shf_ctx *c, struct shf_stats *s);
int shf_rank(const struct shf_ctx *c);
int shf_world(const struct shf_ctx *c);

/* Flush origin, detach, free.  NULL is fine. */
int shf_close(struct shf_ctx *c);
/* A context the daemon ended is dead: every call returns the same error,
 * -ENOTCONN (the daemon went away, cut this process off, or shufflectl
 * cutoff), or -ECANCELED when the operator drained the job (shufflectl
 * drain); shf_error_detail() has the daemon's words.  shf_close() it. */

const char *shf_strerror(int r);

/* A human-readable detail of the calling thread's last failed call
 * (for example the missing ranks after -ETIMEDOUT), or "". */
const char *shf_error_detail(void);

#ifdef __cplusplus
}
#endif
#endif /* SHUFFLE_H */
