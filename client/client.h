/* SPDX-License-Identifier: MIT */
/*
 * client/client.h - libshuffle-client internals shared across its files:
 * the context (struct shf_ctx), error.c and env.c.  Never installed.
 * Everything here is hidden (-fvisibility=hidden); only functions marked
 * SHF_EXPORT leave the library, and the version script
 * (libshuffle-client.map) lists exactly those.
 *
 * Files, each calling only the ones below it (one private header each):
 *
 *   open.c   shf_open()/shf_close(): connect, handshake, map, start, stop
 *   sync.c   flush, epoch (the epoch's hold of the delivery ring); beside open.c
 *   data.c   data.h: send, SHF_MORE's hold, shf_poll, the marks flushes publish
 *   deliver.c deliver.h: delivery (thread, shf_poll), the waits that deliver
 *   runs.c   runs.h: shf_send_many()'s grouping into runs
 *   wait.c   wait.h: deadlines, death, reply waiters, leader/gen, socket reader
 *   error.c, env.c, discover.c   (this header): error details, debug output,
 *            the launcher's environment, finding the daemon
 *
 * Threads and locks of a context (struct shf_ctx):
 *
 *   send_lock    owns the send ring's producer view and the mark counter.
 *                Taken through send_enter()/send_leave() (data.c): the
 *                opening thread skips the mutex until a second thread
 *                uses the send side (a biased lock, docs/ring.md [L1]-[L3]).
 *                Held only for short non-blocking work: a sender that has
 *                to wait for room drops it while asleep, so a callback's
 *                SHF_NONBLOCK send never waits behind a sleeping sender.
 *   deliver_lock owns the delivery ring's consumer view; held while
 *                callbacks run, so a record is never released under one.
 *   mu           innermost; the wait machinery (leader, gen, waiters),
 *                the death state and the delivery progress.  No callback
 *                and no other lock is ever taken while mu is held.
 *   Order: deliver_lock -> send_lock -> mu.  A thread holding send_lock
 *   only ever *tries* deliver_lock, and runs no callback.
 *
 * Waiting (shc_wait): any thread that must sleep reads `gen`, arms what it
 * waits for (prod_wait, cons_wait, a reply waiter), re-checks, then calls
 * shc_wait(gen).  One sleeper at a time is the leader: it poll()s the
 * control socket, the SPACE bell and (poll mode) the DELIVER bell, reads
 * whatever is ready - the socket is only ever read by the leader - then
 * bumps gen and wakes everyone to re-check.  The others sleep on `cond`.
 * A bell rung after a thread armed is either still pending in its eventfd
 * (the next leader sees it) or was consumed by a leader that then bumped
 * gen: no wake-up is lost, and nobody spins.
 */
#ifndef SHC_CLIENT_H
#define SHC_CLIENT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/ipc.h"
#include "proto/ring.h"
#include "shuffle.h"

#define SHF_EXPORT __attribute__((visibility("default")))

#define SHC_DETAIL_MAX 512u        /* error detail strings, NUL included (the
                                      discovery error lists two socket paths) */
#define SHC_DEFAULT_TIMEOUT_MS 60000
#define SHC_OPEN_GRACE_MS 5000     /* open waits the daemon's world timeout plus this */
#define SHC_CLOSE_FLUSH_MS 10000   /* shf_close's bounded origin flush */
#define SHC_BATCH 256u             /* records delivered per batch */

/* ------------------------------------------------------------------ error.c */

/* Set the calling thread's error detail (shf_error_detail()). */
void shc_detail_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shc_detail_vset(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* Set the detail and return err: `return shc_fail(-EINVAL, "...")`. */
int shc_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a fixed text and no formatting (hot paths: -EAGAIN). */
int shc_fail_str(int err, const char *text);

/* Debug output to stderr, only when $SHF_DEBUG is set (non-empty, not "0"). */
bool shc_debug_on(void);
void shc_debug_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define shc_debug(...)                          \
	do {                                    \
		if (shc_debug_on())             \
			shc_debug_log(__VA_ARGS__); \
	} while (0)

/* -------------------------------------------------------------------- env.c */

/* Strict decimal: [0-9]+ only, no sign, no blanks, <= INT_MAX.  0 or -EINVAL. */
int shc_parse_int(const char *s, int *out);

/*
 * The launcher that started this process, found from its environment.
 * Rank, world and the job key come from the same launcher (a mix of two
 * launchers' variables is how jobs collide).  Tried in this order, the
 * innermost launcher first; the first one whose variables are all there
 * wins:
 *
 *   pytorch    RANK, WORLD_SIZE, and a key: TORCHELASTIC_RUN_ID (unless
 *              "none"), else MASTER_ADDR:MASTER_PORT.  (torchrun, or any
 *              env:// set-up; before MPI and Slurm, which may have started
 *              torchrun itself)
 *   openmpi    OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE; key
 *              ID.HEX16: ID is PMIX_NAMESPACE, else OMPI_MCA_ess_base_jobid,
 *              else OMPI_MCA_orte_ess_jobid (host name and mpirun's pid:
 *              it repeats across pid namespaces), HEX16 the first 16 hex
 *              digits of OMPI_MCA_orte_precondition_transports (random per
 *              launch); without them shc_env_job() refuses (-EINVAL)
 *   singleton  OMPI_MCA_ess=singleton (an Open MPI program started without
 *              mpirun, after MPI_Init): rank 0 of 1 (PMIX_RANK, if set,
 *              must be 0); key as openmpi's, else
 *              "singleton.<pid>.<pid namespace inode>.<host>"
 *   pmix       PMIX_RANK, PMIX_SIZE (PMIx itself has the size only in
 *              PMIx_Get(PMIX_JOB_SIZE)); key PMIX_NAMESPACE
 *   pmi        PMI_RANK, PMI_SIZE (MPICH hydra, srun --mpi=pmi2); key
 *              PMI_JOBID, if set
 *   slurm      SLURM_PROCID, SLURM_NTASKS; key SLURM_JOB_ID.SLURM_STEP_ID
 *              (SLURM_STEPID; just SLURM_JOB_ID without a step)
 */
enum shc_launcher {
	SHC_LAUNCHER_PYTORCH,
	SHC_LAUNCHER_OPENMPI,
	SHC_LAUNCHER_SINGLETON,
	SHC_LAUNCHER_PMIX,
	SHC_LAUNCHER_PMI,
	SHC_LAUNCHER_SLURM,
	SHC_LAUNCHER_MAX /* none found */
};

/* Short name of a launcher ("openmpi", ...; "none" for SHC_LAUNCHER_MAX). */
const char *shc_launcher_name(enum shc_launcher l);

/* The launcher found in the environment, or SHC_LAUNCHER_MAX.  Presence
 * only: values are checked by shc_env_rank_world(). */
enum shc_launcher shc_env_launcher(void);

/* Rank and world: SHF_RANK + SHF_WORLD (both, or neither), else the
 * launcher's (shc_env_launcher()).  Values must parse strictly and satisfy
 * 0 <= rank < world <= SHF_WORLD_MAX.  0, or -EINVAL with the detail set
 * (naming a half-set pair when nothing complete was found). */
int shc_env_rank_world(int *rank_p, int *world_p);

/* Job key: opt, else $SHF_JOB, else the launcher's key (the list above;
 * empty values are skipped); with no launcher found (rank and world from
 * opts or SHF_*), $PMIX_NAMESPACE, else the Slurm key; else "default".  Characters outside
 * [A-Za-z0-9._:@+-] become '_'; the result is cut to SHF_JOB_MAX - 1
 * characters.  0, or -EINVAL (shc_fail: the detail says to set SHF_JOB) when
 * the launcher's id does not tell launches apart. */
int shc_env_job(const char *opt, char job[SHF_JOB_MAX]);

/* ---------------------------------------------------------------- discover.c */

/* A connection to the node's daemon, found by the rule in discover.c. */
struct shc_found {
	int fd;                 /* connected SOCK_SEQPACKET socket (CLOEXEC), or -1 */
	char path[108];         /* the socket it is connected to (sizeof sun_path) */
	const char *source;     /* static: "SHF_SOCKET", "private daemon", ... */
	struct ucred cred;      /* the daemon's (SO_PEERCRED); also set on -EPERM */
};

struct shc_discover_cfg {
	const char *opt;         /* opts.socket_path / shufflectl -s; NULL: none */
	const char *opt_name;    /* how to name opt in errors; NULL: "opts.socket_path" */
	unsigned long uid;       /* effective uid: /tmp/shuffle-UID, root's order */
	const char *system_dir;  /* SHF_SYSTEM_RUNTIME_DIR (tests: a temp dir) */
	const char *system_user; /* trusted daemon user besides root and us */
	int timeout_ms;          /* > 0: bound on connect (SO_SNDTIMEO, left set) */
};

/*
 * Find the daemon and connect to it (the rule: discover.c's head comment,
 * docs/api.md).  The daemon's uid is checked (proto/cred.h) before this
 * returns.  0 with *f filled, or, with the detail set and f->fd = -1:
 * -ECONNREFUSED nothing found (the detail lists every place tried),
 * -EACCES a socket or directory we may not reach, -EPERM an untrusted
 * daemon (f->cred says who), -ETIMEDOUT connect timed out, -EINVAL a bad
 * node name or a path too long, or another -errno.
 */
int shc_discover_in(const struct shc_discover_cfg *cfg, struct shc_found *f);
/* The same with this process's euid, SHF_SYSTEM_RUNTIME_DIR and
 * SHF_SYSTEM_USER (the build's). */
int shc_discover(const char *opt, const char *opt_name, int timeout_ms, struct shc_found *f);

/* ------------------------------------------------------------------ context */

/* A thread waiting for a control reply.  Lives on the waiter's stack (or in
 * the context for the epoch), linked in ctx->waiters under mu. */
struct shc_waiter {
	struct shc_waiter *next;
	uint16_t type;          /* SHF_IPC_FLUSH_DONE, _EPOCH_DONE, _NODE_INFO_OK or _EPOCH_WHO_OK */
	uint64_t id;            /* mark / epoch id (hdr.id is its low 32 bits) */
	bool linked;            /* in ctx->waiters */
	bool done;              /* the reply (or an ERROR for it) arrived */
	int32_t status;         /* 0 or negative errno from the reply */
	uint64_t dropped_dead;  /* FLUSH_DONE: drops reported with it (and unclaimed before) */
	uint64_t dropped_down;
	char text[SHC_DETAIL_MAX]; /* ERROR text, if an ERROR answered */
	void *reply;            /* NODE_INFO_OK: its body is copied here ... */
	size_t reply_cap;       /* ... if it fits (else a protocol error) */
	size_t reply_len;       /* bytes copied */
};

#define SHC_REQ_ID_BASE 0x80000000u

/* Client counters (struct shf_stats), relaxed atomics: several threads
 * write them.  Senders and the delivering thread each get a cache line, so
 * counting one does not slow the other down.  sent_* are written only
 * under send_lock and delivered_* only under deliver_lock: one writer at
 * a time, so those add with a relaxed load and store (shc_stat_add1w below),
 * no locked read-modify-write per message. */
struct shc_stats {
	/* written by shf_send() */
	_Alignas(64) _Atomic uint64_t sent_msgs, sent_bytes, send_blocked_ns, send_eagain;
	/* written after each callback returns */
	_Alignas(64) _Atomic uint64_t delivered_msgs, delivered_bytes;
	/* rare: flushes, epochs, drop reports */
	_Alignas(64) _Atomic uint64_t dropped_dead, dropped_down, flushes, epochs;
};

/* Where this context is in the epoch protocol (see shf_epoch()).  Kept in
 * the context so a call that timed out can be resumed by the next call. */
enum shc_epoch_stage {
	SHC_EPOCH_IDLE,    /* no epoch under way */
	SHC_EPOCH_P1,      /* EPOCH mark published; waiting for FLUSH_DONE */
	SHC_EPOCH_DELIVER, /* phase 1 done; drain my delivery ring, send phase 2 */
	SHC_EPOCH_P2,      /* phase 2 sent; waiting for EPOCH_DONE */
	SHC_EPOCH_MAX
};

struct shf_ctx {
	/* --- fixed after shf_open() */
	int sock;                 /* control socket (SOCK_SEQPACKET) */
	int daemon_bell;          /* SHF_FD_DAEMON_BELL: we ring (send data, delivery room) */
	int deliver_bell;         /* SHF_FD_DELIVER_BELL: the daemon rings (delivery data) */
	int space_bell;           /* SHF_FD_SPACE_BELL: the daemon rings (send room) */
	int stop_fd;              /* eventfd: stops the delivery thread (thread mode) */
	int event_fd;             /* epoll over deliver_bell + sock (poll mode), else -1 */
	void *base;               /* the mapped region (MAP_SHARED) */
	size_t region_bytes;      /* its size, checked against the fd and the header */
	int rank, world;          /* mine, and the job's size */
	uint32_t max_msg;         /* largest payload the daemon accepts */
	uint32_t reg_flags;       /* REGISTER_OK's SHF_REG_OK_* (what the daemon answers) */
	bool runs;                /* the daemon takes runs (SHF_REG_OK_RUNS): shf_send_many
				     writes them */
	bool packed;              /* ... and packed ones (SHF_REG_OK_PACKED), which
				     then come in the delivery ring too (we said
				     SHF_IPC_PACKED) */
	int timeout_ms;           /* resolved: > 0, or -1 forever */
	bool thread_mode;         /* callbacks on our thread, else shf_poll() */
	shf_deliver_fn fn;        /* the application's callback, and its argument */
	shf_deliver_many_fn fn_many; /* or its batch callback (opts.deliver_many) */
	void *arg;
	char job[SHF_JOB_MAX];    /* sanitised job name (for debug output) */
	pthread_t thread;         /* the delivery thread, if thread_started */
	bool thread_started;

	/* 0 while usable; -ENOTCONN once the daemon is gone, broke the
	 * protocol, or shf_close() began.  Sticky.  Written under mu. */
	_Atomic int dead;

	/* --- producer side, under send_lock (or its owner fast path: the
	 * thread that opened the context takes no mutex until another thread
	 * uses the send side; data.c send_enter(), docs/ring.md [L1]-[L3]) */
	pthread_mutex_t send_lock;
	pthread_t send_owner;      /* the opener: may use the fast path */
	_Atomic bool send_shared;  /* sticky: another thread used it, mutex only */
	_Atomic bool send_busy;    /* the owner is inside its lock-free section */
	struct shf_ring send;      /* our producer view of SHF_SHM_SEND */
	/* Last mark / epoch id handed out; the leader reads it to refuse a
	 * reply for a mark never sent.  Relaxed on both sides: it orders
	 * nothing.  A reply to mark N exists only after N's MARK record was
	 * published ([P1], after this store in program order), taken by the
	 * daemon ([C1]) and answered on the socket, and the leader loads
	 * mark_seq after it received that reply: it sees N or later. */
	_Atomic uint64_t mark_seq;
	/* ids of other requests (NODE_INFO): SHC_REQ_ID_BASE + n, apart from
	 * mark ids, which an ERROR reply could otherwise be matched to */
	_Atomic uint32_t req_seq;
	/* shf_send(SHF_MORE)'s held records (data.c, "Held records"); NULL
	 * until first used.  Only the opener thread (send_owner) holds and
	 * pushes them, inside the send side; shf_close() frees them. */
	_Atomic(struct shc_hold *) hold; /* relaxed: stored once, by the opener */
	bool check_sock;           /* poll mode: look for a hang-up at the next send */
	unsigned send_count;       /* poll mode: sends since the last hang-up check */

	/* --- consumer side, under deliver_lock */
	pthread_mutex_t deliver_lock;
	struct shf_ring deliver;   /* our consumer view of SHF_SHM_DELIVER */
	/* The epoch as a phase boundary (sync.c, "epoch hold"): set by the
	 * epoch's thread just before it sends phase 2, cleared when EPOCH_DONE
	 * came.  While set, no callback runs: what lies in the ring then may
	 * have been sent by ranks that already left the epoch.  seq_cst on
	 * both sides (the delivery loop loads it after each peek). */
	_Atomic bool epoch_hold;

	/* --- under mu */
	pthread_mutex_t mu;
	pthread_cond_t cond;       /* gen moved, or death */
	pthread_cond_t dcond;      /* released moved (thread mode), or death */
	uint64_t gen;              /* bumped by every leader wake-up */
	bool leader;               /* someone is in poll() for everybody */
	struct shc_waiter *waiters; /* threads waiting for a control reply */
	uint64_t released;         /* thread mode: delivery ring tail released so far */
	uint64_t unrep_dead;       /* drops from FLUSH_DONEs nobody waited for any more */
	uint64_t unrep_down;
	char dead_detail[SHC_DETAIL_MAX]; /* why dead: the detail of every later -ENOTCONN
	                                   * (or -ECANCELED: the job was drained) */
	bool go;                   /* shf_open() returned: the delivery thread may start */
	bool epoch_busy;           /* a thread is inside shf_epoch() (owns the epoch_*) */

	/* --- owned by the thread that set epoch_busy */
	enum shc_epoch_stage epoch_stage;
	struct shc_waiter epoch_w; /* the epoch's reply waiter; stays linked across a
	                              timed-out call so a late reply is kept */
	uint64_t epoch_id;           /* the current epoch's mark id */
	uint64_t epoch_n;            /* epochs begun: what errors call "epoch N"
					(mark ids count flushes too) */
	uint64_t epoch_dropped_dead; /* drops reported by the epoch's FLUSH_DONE */
	uint64_t epoch_dropped_down;

	struct shc_stats st;       /* shf_stats_get(); relaxed atomics, no lock */

	/* --- the leader's (or shf_open()'s) receive buffer */
	union {
		uint64_t align;
		unsigned char buf[SHF_IPC_MAX_MSG];
	} rx;
};

/* A daemon's errno field: 0 is not an error, and errno values end at 4095. */
static inline bool shc_errno_ok(int32_t e)
{
	return e < 0 && e >= -4095;
}

/* Statistics counters (struct shf_stats' fields). */
static inline void shc_stat_add(_Atomic uint64_t *s, uint64_t v)
{
	atomic_fetch_add_explicit(s, v, memory_order_relaxed);
}

/* A counter with one writer at a time (the holder of send_lock or of
 * deliver_lock): a relaxed load and store instead of a locked
 * read-modify-write, so the hot paths pay no atomic RMW per message.
 * Readers (shf_stats_get) still load it atomically, never torn. */
static inline void shc_stat_add1w(_Atomic uint64_t *s, uint64_t v)
{
	atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/* The delivery ring is held for an epoch (sync.c, "epoch hold"): no
 * callback runs until it is released.  seq_cst: see there. */
static inline bool shc_epoch_holds(struct shf_ctx *c)
{
	return atomic_load_explicit(&c->epoch_hold, memory_order_seq_cst);
}

#endif /* SHC_CLIENT_H */
