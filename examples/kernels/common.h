/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/common.h - what the five kernels share: options, the
 * two implementations' set-up, a counter-based random generator, timing,
 * the one JSON line, and the "conduit" that histo, ig and bfs send their
 * 8-byte messages through:
 *
 *   impl shuffle   k_send8() is one shf_send(); the handler runs in the
 *                  delivery callback (poll mode: inside shuffle calls on
 *                  the kernel's thread); k_phase_end() is shf_epoch().
 *   impl shuffle-more
 *                  the same code as impl shuffle, every shf_send() with
 *                  SHF_MORE: the library holds the records and sends them
 *                  grouped by destination, as the batch API does; the
 *                  epoch (or the next call without the flag) pushes them.
 *   impl shuffle-batch
 *                  the batch API: k_send8() stages the message (up to
 *                  K_BATCH) and shf_send_many() sends the stage when it is
 *                  full and before every k_phase_end(); delivery is one
 *                  deliver_many callback per batch (the handler runs per
 *                  record inside it).  A handler's sends are staged apart
 *                  and sent, non-blocking, when the callback's batch is
 *                  done (what does not fit waits for the kernel's thread).
 *   impl mpi       what a careful MPI programmer writes by hand: per
 *                  (destination, type) aggregation buffers sent with
 *                  MPI_Isend when full (two per pair, so filling one
 *                  overlaps sending the other), MPI_Irecv posted from any
 *                  source, messages to oneself applied at once, and
 *                  k_phase_end() as the termination protocol: flush, a
 *                  zero-byte END to every rank (tag by phase parity, so a
 *                  faster rank's next END is not miscounted), receive and
 *                  handle until every rank's END came.
 *
 * MPI is initialised in both implementations: it launches the ranks, and
 * set-up, validation and the report use it outside the timed region.  The
 * shuffle implementation's timed region calls no MPI.
 *
 * sort and particles send their own records; with shuffle-batch they go
 * through k_stage() / k_stage_flush() (the same staging, any length).
 */
#ifndef KERNELS_COMMON_H
#define KERNELS_COMMON_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shuffle.h"

enum k_impl { K_SHUFFLE, K_BATCH, K_MPI, K_MORE };

/* The shuffle implementations that send with shf_send() (shuffle-more:
 * with SHF_MORE, the library holds and groups): its flags. */
static inline unsigned k_send_flags(enum k_impl impl)
{
	return impl == K_MORE ? SHF_MORE : 0;
}

/* shuffle-batch: records per shf_send_many() call (the stage's size). */
#define K_BATCH_MAX 256

/* A kernel's numeric option: --name VALUE. */
struct kopt {
	const char *name;
	long *val;
	const char *help;
};

/* A growable array of elements of `size` bytes. */
struct kvec {
	void *p;
	size_t n, cap, size;
};
void kvec_push(struct kvec *v, const void *e);
void kvec_reserve(struct kvec *v, size_t n);
void kvec_free(struct kvec *v);

struct kern;
typedef void (*k_handler)(struct kern *k, int src, uint32_t type, uint64_t val);

struct kmpi; /* the MPI conduit's state (common.c) */

struct kern {
	const char *name;
	enum k_impl impl;
	int rank, world;
	int nodes;          /* simulated nodes of the run (env NODES), for memory per node */
	uint64_t seed;
	bool thread;        /* shuffle: a delivery thread instead of poll mode */
	long agg;           /* mpi: messages per aggregation buffer */
	struct shf_ctx *shf;
	k_handler handler;  /* the conduit's receiver */
	void *user;         /* the kernel's state, for its handler */
	struct kmpi *mpi;
	unsigned phase;     /* k_phase_end() calls so far */
	bool in_handler;    /* shuffle: inside the conduit's handler */
	struct kvec pend;   /* shuffle: a handler's sends that did not fit (struct kpend);
			     * shuffle-batch: a handler's sends, all of them */
	size_t pend_head;
	/* shuffle-batch: the kernel thread's staged records (data valid until
	 * they are sent) and the 8-byte conduit's payloads */
	struct shf_msg stage[K_BATCH_MAX];
	uint64_t stage_val[K_BATCH_MAX];
	unsigned nstage;
	uint64_t batch_calls; /* shf_send_many() calls that sent something */
	double t0;
};

/* impl shuffle or shuffle-batch */
static inline bool k_is_shuffle(const struct kern *k)
{
	return k->impl != K_MPI;
}
/* "shuffle", "shuffle-batch" or "mpi" */
const char *k_impl_name(const struct kern *k);

/* MPI_Init, options (--impl shuffle|shuffle-batch|mpi, --seed N, --thread, --agg N, and
 * the kernel's), rank and world.  Exits 2 on a bad option. */
void k_init(struct kern *k, const char *name, int *argc, char ***argv, struct kopt *opts);
/* shuffle: shf_open() with fn (impl shuffle) or many as opts.deliver_many
 * (impl shuffle-batch); poll mode. */
void k_open_shuffle(struct kern *k, shf_deliver_fn fn, shf_deliver_many_fn many, void *arg);
/* shuffle-batch, from the kernel's thread (not from a callback): stage one
 * record; `data` must stay valid until it is sent.  Sends the stage with
 * shf_send_many() when it is full; returns true when it did (every staged
 * record is sent, so their buffers may be reused). */
bool k_stage(struct kern *k, int dst, uint32_t type, const void *data, uint32_t len);
/* Send every staged record (and every handler's waiting send). */
void k_stage_flush(struct kern *k);
/* The conduit for 8-byte messages of up to 4 types: opens shuffle (impl
 * shuffle) or sets up the buffers (impl mpi). */
void k_conduit_init(struct kern *k, k_handler h, void *user);
void k_send8(struct kern *k, int dst, uint32_t type, uint64_t val);
/* Every message sent before it, by any rank, has been handled, and none
 * sent after it (by a rank that left it) has (collective). */
void k_phase_end(struct kern *k);
/* Handle what has arrived, without waiting (for long send loops). */
void k_progress(struct kern *k);
void k_fini(struct kern *k);

/* Errors: abort the job with a message. */
void k_die(struct kern *k, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

double k_now(void);
/* Barrier, then start the clock; stop returns the slowest rank's seconds. */
void k_timer_start(struct kern *k);
double k_timer_stop(struct kern *k);

/* splitmix64: a counter-based generator (value i of stream s is
 * k_mix(s ^ i)), so any rank can recompute any other's numbers. */
static inline uint64_t k_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static inline uint64_t k_rand(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	uint64_t z = *state;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * The one JSON line (rank 0) and the exit status: collective.  ok: this
 * rank's validation; errors: its count of failures; msgs: messages this
 * rank sent; rate, rate_name: the kernel's figure of merit (already
 * global); extra: more JSON members ("\"a\":1,\"b\":2") or "".  Adds the
 * ranks' CPU seconds and their peak RSS summed per simulated node.
 * Returns the exit status for main(): 0 when every rank validated.
 */
int k_report(struct kern *k, bool ok, uint64_t errors, uint64_t msgs, double time_s,
	     double rate, const char *rate_name, const char *extra);

#endif
