/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench.h - what the files of shuffle-bench share: the options,
 * the harness (message generation and checking, identical for every mode),
 * the latency histogram, /proc probes, and the modes themselves.
 *
 * The harness is transport-agnostic.  A mode asks it for the next
 * destination (bench_next_dst), has it write the message header into the
 * place the payload will be sent from (bench_fill), and hands every
 * received payload to bench_check() with the source the transport reports.
 * Everything that is counted and checked is counted and checked here, so
 * all modes are measured and verified the same way.
 *
 * Payload layout (little-endian host order, one machine):
 *   bytes 0..7    (src << 40) | seq   seq = per (src, dst) pair, from 0
 *   bytes 8..15   CLOCK_MONOTONIC send time in ns (payloads >= 16 B only;
 *                 0 in messages left out by --lat-every)
 *   bytes 16..    0xA5 filler; the last byte is checked
 * An 8-byte payload has room for src and seq only, so 8-byte runs report
 * no latency.
 */
#ifndef SHF_BENCH_H
#define SHF_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_SEQ_BITS 40
#define BENCH_SEQ_MASK ((UINT64_C(1) << BENCH_SEQ_BITS) - 1)
#define BENCH_MAX_RANKS (1 << 23)  /* src must fit the 24 bits above seq */
#define BENCH_FILL 0xA5u
#define BENCH_MAX_PAYLOAD (60u * 1024u)
#define BENCH_MAX_DAEMON_PIDS 8     /* per node leader */

enum bench_mode {
	MODE_SHUFFLE,       /* shf_send() through the node daemons */
	MODE_MPI_ISEND,     /* one MPI_Isend per message */
	MODE_MPI_AGG,       /* hand-written per-destination aggregation over MPI_Isend */
	MODE_MPI_ALLTOALLV, /* rounds of MPI_Alltoallv */
	MODE_BCAST,         /* shuffle: N rounds of shf_send to every other rank, then
			       N shf_bcast(); the two timed apart */
	MODE_MAX
};

enum bench_pattern {
	PAT_UNIFORM, /* destination uniform over all ranks, self included */
	PAT_RR,      /* round robin: rank+1, rank+2, ... (self once per cycle) */
	PAT_HOTSPOT, /* half of every rank's messages to rank 0, the rest uniform */
	PAT_NOSELF,  /* uniform over the other ranks */
	PAT_MAX
};

struct bench_opts {
	uint64_t count;        /* messages per rank (count mode); 0 in time mode */
	double seconds;        /* time mode: send for this long (per rank) */
	uint32_t size;         /* payload bytes, >= 8 */
	enum bench_pattern pattern;
	uint64_t flush_every;  /* shuffle: SHF_FLUSH_REMOTE every N sends (0: never) */
	uint64_t epoch_every;  /* shuffle: shf_epoch() every N sends (0: only at the end) */
	unsigned delay_us;     /* artificial delay in the delivery path, per message */
	double rate;           /* messages per second per rank, paced (0: as fast as possible) */
	uint32_t lat_every;    /* timestamp one message in N (1: all); the others carry 0 */
	bool nonblock;         /* shuffle: SHF_NONBLOCK, retry on -EAGAIN */
	bool more;             /* shuffle: shf_send(SHF_MORE): the library holds and groups */
	bool poll_mode;        /* shuffle: delivery_thread = 0, shf_poll() */
	uint32_t ring_bytes;   /* shuffle: per-direction ring size (0: daemon default) */
	uint32_t batch;        /* shuffle: shf_send_many() of this many records and batch
				  delivery (opts.deliver_many); 0: shf_send() one by one */
	enum bench_mode mode;
	uint32_t window;       /* mpi-isend: outstanding sends and pre-posted receives */
	uint32_t agg_bytes;    /* mpi-agg: buffer per destination */
	uint32_t agg_inflight; /* mpi-agg: buffers in flight (and pre-posted receives) */
	uint32_t round;        /* mpi-alltoallv: messages per rank per round */
	uint64_t seed;
	bool json;
	const char *label;     /* copied into the JSON (scripts/bench: transport etc.) */
};

/* Log-linear histogram of nanosecond values: exact below 32, then 32
 * sub-buckets per power of two (relative error under 1.6 %).  Mergeable by
 * adding the arrays (MPI_Reduce with MPI_SUM). */
#define BENCH_HIST_SUB 32
#define BENCH_HIST_BUCKETS (BENCH_HIST_SUB + (64 - 5) * BENCH_HIST_SUB)
struct bench_hist {
	uint64_t n[BENCH_HIST_BUCKETS];
};
void bench_hist_add(struct bench_hist *h, uint64_t v);
/* The q-quantile (0 < q <= 1) as the middle of its bucket; 0 if empty. */
double bench_hist_quantile(const struct bench_hist *h, double q);
uint64_t bench_hist_count(const struct bench_hist *h);

struct bench {
	struct bench_opts o;
	int rank, world;
	int nodes;            /* distinct node names ($SHF_NODE or host name) */
	int hosts;            /* distinct real host names */
	int node;             /* my node index */
	int *node_of;         /* [world]: node index of every rank */
	bool node_leader;     /* lowest rank of its node */
	bool timestamps;      /* payload >= 16: carries the send time */
	bool progress;        /* rank 0 with a terminal on stderr */
	bool progress_shown;  /* a progress line was printed (end it with a newline) */

	/* sender side (main thread) */
	uint64_t rng;         /* xorshift64* state */
	uint64_t rr;          /* round-robin cursor */
	uint64_t *send_seq;   /* [world]: messages sent to each rank so far */
	uint64_t sent;
	uint64_t sent_cross;  /* to ranks on other nodes */
	uint32_t lat_left;    /* messages until the next timestamped one */
	uint64_t start_ns;    /* after the start barrier */
	int fault;            /* $SHF_BENCH_FAULT self-test of the checks: 0 none, 1 gap, 2 dup */
	/* --rate: called at least every 50 us while a paced sender waits.  The
	 * MPI modes make MPI progress there (MPI moves nothing while a rank
	 * sleeps outside MPI); NULL for shuffle, whose daemon progresses alone. */
	void (*idle)(struct bench *b);
	uint64_t next_progress_ns;

	/* receiver side (the delivery thread, or the main thread) */
	uint64_t *recv_seq;   /* [world]: next expected sequence number per source */
	uint64_t received;
	uint64_t recv_bytes;
	uint64_t errors;      /* order, duplicate, source, length or content errors */
	char first_error[200];
	struct bench_hist *hist;
};

static inline uint64_t bench_rand(struct bench *b)
{
	uint64_t x = b->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	b->rng = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* Next destination of this rank under the pattern.  Deterministic given the
 * rank and the seed, so a mode can replay it to count ahead. */
static inline int bench_next_dst(struct bench *b)
{
	uint64_t P = (uint64_t)b->world;
	switch (b->o.pattern) {
	case PAT_RR:
		return (int)(((uint64_t)b->rank + 1 + b->rr++) % P);
	case PAT_HOTSPOT: {
		uint64_t r = bench_rand(b);
		if (r & 1)
			return 0;
		return (int)(((r >> 32) * P) >> 32);
	}
	case PAT_NOSELF: {
		int d = (int)(((bench_rand(b) >> 32) * (P - 1)) >> 32);
		return d >= b->rank ? d + 1 : d;
	}
	case PAT_UNIFORM:
	default:
		return (int)(((bench_rand(b) >> 32) * P) >> 32);
	}
}

uint64_t bench_now_ns(void);

/* Write the header of the next message to dst at p (size bytes; the filler
 * after the header must already be there) and count it as sent. */
void bench_fill(struct bench *b, void *p, int dst);

/* Check one received payload from src and count it. */
void bench_check(struct bench *b, int src, const void *data, uint32_t len);

/* Time mode: whether this rank's sending time is over (also prints the
 * progress line on rank 0).  Count mode: whether `count` are sent. */
bool bench_send_done(struct bench *b);
/* Time mode: whether the sending time is over (checks the clock now and
 * prints the progress line).  Always false in count mode. */
bool bench_time_up(struct bench *b);

/* Fill a buffer with the payload filler. */
void bench_prefill(void *p, size_t bytes);

/* Abort the whole job with a message (MPI_Abort). */
_Noreturn void bench_die(struct bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ /proc probes */

/* A field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM"); pid 0: self.
 * -1 if unreadable. */
long bench_proc_kib(int pid, const char *field);
/* CPU time of a process (all threads) in seconds: schedstat (ns), else
 * utime + stime of /proc/<pid>/stat (clock ticks).  -1 if unreadable. */
double bench_proc_cpu_s(int pid);
/* user + system CPU of this process (all threads), seconds. */
double bench_self_cpu_s(void);

/* What a node leader learns about its node's daemon(s). */
struct bench_daemons {
	int n;
	int pid[BENCH_MAX_DAEMON_PIDS];
	double cpu0[BENCH_MAX_DAEMON_PIDS];  /* at the start barrier */
	double cpu[BENCH_MAX_DAEMON_PIDS];   /* CPU seconds over the run */
	long hwm_kib[BENCH_MAX_DAEMON_PIDS]; /* VmHWM at the end */
	bool have_ctl;                       /* shufflectl answered */
	int64_t batch_bytes_out0;            /* stats.daemon.batch_bytes_out, before */
	int64_t batch_bytes_out;             /* ... its increase over the run, or -1 */
	int64_t batch_msgs_out0;             /* stats.daemon.batch_msgs_out, before */
	int64_t batch_msgs_out;              /* ... its increase over the run, or -1 */
	char ctl_note[160];                  /* why shufflectl was not used, if not */
};

/* Before the run: find the daemon pids (shufflectl status, else
 * $SHF_BENCH_DAEMON_PIDS) and read the batch counters. */
void bench_daemons_pre(struct bench_daemons *d);
/* At the start / end barriers: CPU of each daemon. */
void bench_daemons_cpu_start(struct bench_daemons *d);
void bench_daemons_cpu_end(struct bench_daemons *d);
/* After the run: VmHWM and the batch counters again. */
void bench_daemons_post(struct bench_daemons *d);

/* ------------------------------------------------------------------ modes */

/* Each mode: setup before the start barrier (not timed), run between the
 * barriers (timed), teardown after the measurements.  They return 0 or
 * call bench_die(). */
struct bench_mode_ops {
	const char *name;
	int (*setup)(struct bench *b);
	int (*run)(struct bench *b);
	void (*teardown)(struct bench *b);
};

extern const struct bench_mode_ops bench_shuffle_ops;
extern const struct bench_mode_ops bench_isend_ops;
extern const struct bench_mode_ops bench_agg_ops;
extern const struct bench_mode_ops bench_alltoallv_ops;
extern const struct bench_mode_ops bench_bcast_ops;

/* Shuffle mode's client counters, for the cross-check and the report. */
struct bench_shuffle_extra {
	bool valid;
	uint64_t sent_msgs, delivered_msgs, send_eagain, send_blocked_ns;
	/* -m bcast (same on every rank): slowest rank's time of each phase */
	double loop_s, bcast_s;
	uint64_t rounds;
};
extern struct bench_shuffle_extra bench_shuffle_extra;

#endif /* SHF_BENCH_H */
