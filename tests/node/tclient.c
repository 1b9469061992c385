/* SPDX-License-Identifier: MIT */
/*
 * tests/node/tclient.c - the test client: one rank of a job, using only the
 * public API (include/shuffle.h).  The drivers in this directory start many
 * of these, by fork/exec (SHF_RANK/SHF_WORLD) or under mpirun.
 *
 *   tclient MODE [key=value ...]
 *
 * Modes:
 *   traffic     rounds of self-checking messages to pseudo-random
 *               destinations, each round closed by a flush and/or an epoch
 *               (or by waiting for the expected counts); checks exactly
 *               once, per-(src,dst) order, checksums, job isolation, and
 *               that an epoch leaves nothing of its round undelivered
 *   victim      sends (to dsts) forever, optionally going into a REMOTE
 *               flush after `victim_flush` messages, or flushing once the
 *               sync point `victim_until` exists; the driver kills it
 *   open        just shf_open(); `expect` the result (ok, ETIMEDOUT,
 *               EEXIST, EACCES, ...; or several: EACCES,ETIMEDOUT),
 *               `detail` a substring of the error text; `then`: once
 *               `hold` came, a REMOTE flush and an epoch must return this
 *   nonblock    rank 0 fills rank 1's rings with SHF_NONBLOCK sends until
 *               -EAGAIN, then finishes once rank 1 starts consuming
 *   deadpeer    sends to a rank that left: dropped, next flush -ESRCH
 *   blocked     blocks in shf_send (rank 0) or shf_flush (rank 1) on a peer
 *               that never consumes; expects -ENOTCONN once the driver
 *               kills the daemon
 *   flushes     the three flush targets: what shf_flush(REMOTE) in one
 *               rank and shf_flush(DELIVERY) in another promise together,
 *               while a third rank streams at the same receiver
 *
 * Exit status 0 when every check held, 1 otherwise (reasons on stderr),
 * 2 for usage errors.  Sync points (files in $SHF_TEST_SYNC) coordinate
 * with the driver.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/args.h"
#include "tests/lib/daemon.h"
#include "tmsg.h"

#define MAX_WORLD 256
#define MAX_ROUNDS 64

/* ------------------------------------------------------------------ options */

struct cfg {
	const char *mode;
	long n;            /* messages per sending rank per round */
	unsigned rounds;   /* traffic rounds */
	uint64_t seed;
	int poll;          /* 1: delivery_thread = 0, shf_poll() */
	uint32_t minlen, maxlen, big; /* payload lengths; big: 1 in 32 up to this */
	uint32_t ring;     /* opts.ring_bytes */
	int flush;         /* REMOTE flush after each round's sends (-1: default) */
	int epoch;         /* epoch after each round */
	int wait;          /* wait for the expected counts after each round */
	const char *expect_epoch; /* ok, ESRCH, any */
	const char *expect;       /* mode open: expected result */
	const char *detail;       /* mode open: substring of shf_error_detail() */
	const char *then;         /* mode open: after `hold`, a flush and an epoch expect this */
	long slow_us, slow_every; /* callback sleeps slow_us every slow_every msgs */
	const char *stall;  /* the first callback for a slow_src message waits for
			     * this sync point (holding the delivery ring) */
	int timeout;       /* open/flush/epoch timeout (ms) */
	const char *hold;  /* wait for this sync point before shf_close() */
	const char *post;  /* post "<post>.<rank>" once open */
	int check_blocked; /* senders must have seen a full ring */
	long victim_flush; /* victim: go into a flush after this many messages */
	const char *victim_until; /* victim: once this sync point exists, flush
				   * (REMOTE) expecting -ESRCH, post "victim-reported.<rank>",
				   * then wait to be killed */
	int steps;         /* mode flushes: steps of n messages */
	int rank, world;   /* -1: environment */
	bool srcs[MAX_WORLD], dsts[MAX_WORLD], prefix[MAX_WORLD], slow_src[MAX_WORLD];
	bool srcs_set, dsts_set, slow_src_set;
};

static struct cfg cfg = {
	.n = 1000, .rounds = 1, .seed = 1, .minlen = sizeof(struct tmsg), .maxlen = 512,
	.flush = -1, .epoch = 1, .expect_epoch = "ok", .expect = "ok", .timeout = 30000,
	.slow_every = 1, .rank = -1, .world = -1,
};

static const char *g_sync;
static char g_job[128] = "default";
static uint32_t g_job_tag;
static int g_rank = -1, g_world;

/* g_rank, and the name failed checks give (tests/lib/check.h) */
static void set_rank(int rank)
{
	static char name[32];
	g_rank = rank;
	snprintf(name, sizeof(name), "tclient rank %d", rank);
	program_invocation_short_name = name;
}

static void usage(const char *why)
{
	fprintf(stderr, "tclient: %s\nusage: tclient MODE [key=value ...] (see the source)\n",
		why);
	exit(2);
}

/* "1,3,5-7" into set[]. */
static void parse_set(const char *v, bool *set)
{
	memset(set, 0, sizeof(bool) * MAX_WORLD);
	while (*v) {
		char *end;
		long a = strtol(v, &end, 10), b = a;
		if (end == v)
			usage("bad rank list");
		if (*end == '-') {
			v = end + 1;
			b = strtol(v, &end, 10);
			if (end == v)
				usage("bad rank range");
		}
		if (a < 0 || b >= MAX_WORLD || a > b)
			usage("rank out of range");
		for (long i = a; i <= b; i++)
			set[i] = true;
		v = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			usage("bad rank list");
	}
}

static void set_srcs(const char *v)
{
	parse_set(v, cfg.srcs);
	cfg.srcs_set = true;
}

static void set_dsts(const char *v)
{
	parse_set(v, cfg.dsts);
	cfg.dsts_set = true;
}

static void set_prefix(const char *v)
{
	parse_set(v, cfg.prefix);
}

static void set_slow_src(const char *v)
{
	parse_set(v, cfg.slow_src);
	cfg.slow_src_set = true;
}

static void parse_args(int argc, char **argv)
{
	static const struct targ keys[] = {
		{"n", TARG_LONG, &cfg.n, NULL},
		{"rounds", TARG_UNSIGNED, &cfg.rounds, NULL},
		{"seed", TARG_U64, &cfg.seed, NULL},
		{"poll", TARG_INT, &cfg.poll, NULL},
		{"minlen", TARG_U32, &cfg.minlen, NULL},
		{"maxlen", TARG_U32, &cfg.maxlen, NULL},
		{"big", TARG_U32, &cfg.big, NULL},
		{"ring", TARG_U32, &cfg.ring, NULL},
		{"flush", TARG_INT, &cfg.flush, NULL},
		{"epoch", TARG_INT, &cfg.epoch, NULL},
		{"wait", TARG_INT, &cfg.wait, NULL},
		{"expect_epoch", TARG_STR, &cfg.expect_epoch, NULL},
		{"expect", TARG_STR, &cfg.expect, NULL},
		{"detail", TARG_STR, &cfg.detail, NULL},
		{"then", TARG_STR, &cfg.then, NULL},
		{"slow_us", TARG_LONG, &cfg.slow_us, NULL},
		{"slow_every", TARG_LONG, &cfg.slow_every, NULL},
		{"stall", TARG_STR, &cfg.stall, NULL},
		{"timeout", TARG_INT, &cfg.timeout, NULL},
		{"hold", TARG_STR, &cfg.hold, NULL},
		{"post", TARG_STR, &cfg.post, NULL},
		{"check_blocked", TARG_INT, &cfg.check_blocked, NULL},
		{"victim_flush", TARG_LONG, &cfg.victim_flush, NULL},
		{"victim_until", TARG_STR, &cfg.victim_until, NULL},
		{"steps", TARG_INT, &cfg.steps, NULL},
		{"rank", TARG_INT, &cfg.rank, NULL},
		{"world", TARG_INT, &cfg.world, NULL},
		{"srcs", TARG_FN, NULL, set_srcs},
		{"dsts", TARG_FN, NULL, set_dsts},
		{"prefix", TARG_FN, NULL, set_prefix},
		{"slow_src", TARG_FN, NULL, set_slow_src},
	};
	cfg.mode = targs_parse(argc, argv, keys, TARGS_N(keys), usage);
	if (cfg.rounds < 1 || cfg.rounds > MAX_ROUNDS)
		usage("rounds out of range");
	if (cfg.maxlen < cfg.minlen || cfg.minlen < sizeof(struct tmsg))
		usage("bad lengths");
	if (cfg.big && cfg.big < cfg.minlen)
		usage("bad big");
	if (cfg.flush < 0)
		cfg.flush = !cfg.poll;
}

/* ------------------------------------------------------------------ errors */

static int err_code(const char *name)
{
	static const struct { const char *n; int e; } t[] = {
		{"ETIMEDOUT", ETIMEDOUT}, {"EEXIST", EEXIST}, {"EACCES", EACCES},
		{"ESRCH", ESRCH}, {"ENOTCONN", ENOTCONN}, {"ECONNREFUSED", ECONNREFUSED},
		{"EINVAL", EINVAL}, {"EPROTO", EPROTO}, {"EAGAIN", EAGAIN},
		{"EMSGSIZE", EMSGSIZE}, {"EHOSTDOWN", EHOSTDOWN}, {"EPERM", EPERM},
		{"EDQUOT", EDQUOT}, {"ENOMEM", ENOMEM}, {"ECANCELED", ECANCELED},
	};
	if (!strcmp(name, "ok"))
		return 0;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].n, name))
			return -t[i].e;
	usage("unknown error name");
	return 0;
}

/* ------------------------------------------------------------------ traffic state */

/* Everything the delivery callback touches, under `mu`. */
static struct {
	pthread_mutex_t mu;
	uint64_t next_seq[MAX_WORLD];          /* next pair_seq expected from src */
	uint64_t count[MAX_ROUNDS][MAX_WORLD]; /* received per (round, src) */
	uint64_t total;                        /* callbacks */
	uint64_t bytes;
	long epoch_done;                       /* last round whose epoch returned */
	uint64_t errors;
	uint64_t slow_n;
	bool stalled;                          /* the stall happened */
	bool ready;                            /* cfg sets filled in: see rx_set_ready() */
	pthread_cond_t cond;                   /* ready became true */
} rx = {.mu = PTHREAD_MUTEX_INITIALIZER, .epoch_done = -1, .cond = PTHREAD_COND_INITIALIZER};

/* The callback may run as soon as shf_open() returns (thread mode), before
 * the mode has set up what it checks against: it waits for this. */
static void rx_set_ready(void)
{
	pthread_mutex_lock(&rx.mu);
	rx.ready = true;
	pthread_cond_broadcast(&rx.cond);
	pthread_mutex_unlock(&rx.mu);
}

/* Messages of round 0 received from src. */
static uint64_t count_from(int src)
{
	pthread_mutex_lock(&rx.mu);
	uint64_t n = rx.count[0][src];
	pthread_mutex_unlock(&rx.mu);
	return n;
}

static uint64_t g_sent_pair[MAX_WORLD]; /* pair_seq of my next message to dst */
static uint64_t g_gseq;
static uint64_t g_sent, g_sent_bytes;
static int g_ndst;
static int g_dst_list[MAX_WORLD];

static void rx_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rx_error(const char *fmt, ...)
{
	/* called with rx.mu held */
	if (rx.errors++ < 10) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "tclient rank %d: delivery error: ", g_rank);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

static void on_deliver(void *arg, int src, int dst, uint32_t type, const void *data,
		       uint32_t len)
{
	(void)arg;
	struct tmsg h;
	bool slow = false, stall = false;
	pthread_mutex_lock(&rx.mu);
	while (!rx.ready)
		pthread_cond_wait(&rx.cond, &rx.mu);
	rx.total++;
	rx.bytes += len;
	if (len < sizeof(h)) {
		rx_error("message of %u bytes from %d is shorter than its header", len, src);
		goto out;
	}
	memcpy(&h, data, sizeof(h));
	if (h.magic != TMSG_MAGIC) {
		rx_error("bad magic %#x from %d", h.magic, src);
		goto out;
	}
	if (h.job_tag != g_job_tag) {
		rx_error("message from another job (tag %#x, mine %#x) src %d", h.job_tag,
			 g_job_tag, src);
		goto out;
	}
	if (h.src != src || h.dst != dst || dst != g_rank) {
		rx_error("addressing: callback src %d dst %d, header src %d dst %d, me %d", src,
			 dst, h.src, h.dst, g_rank);
		goto out;
	}
	if (src < 0 || src >= g_world || (!cfg.srcs[src] && !cfg.prefix[src])) {
		rx_error("message from rank %d, which sends nothing", src);
		goto out;
	}
	if (h.len != len) {
		rx_error("length %u, header says %u (src %d seq %" PRIu64 ")", len, h.len, src,
			 h.pair_seq);
		goto out;
	}
	if (type != tmsg_type(src, h.gseq)) {
		rx_error("type %#x, expected %#x (src %d gseq %" PRIu64 ")", type,
			 tmsg_type(src, h.gseq), src, h.gseq);
		goto out;
	}
	if (h.pair_seq != rx.next_seq[src]) {
		rx_error("from %d: pair seq %" PRIu64 ", expected %" PRIu64 " (%s)", src,
			 h.pair_seq, rx.next_seq[src],
			 h.pair_seq < rx.next_seq[src] ? "duplicate or reordered" : "lost");
		rx.next_seq[src] = h.pair_seq + 1;
		goto out;
	}
	rx.next_seq[src]++;
	const uint8_t *body = (const uint8_t *)data + sizeof(h);
	if (tmsg_fnv(body, len - sizeof(h)) != h.sum) {
		rx_error("checksum mismatch from %d seq %" PRIu64, src, h.pair_seq);
		goto out;
	}
	if (h.round >= cfg.rounds) {
		rx_error("round %u out of range", h.round);
		goto out;
	}
	if ((long)h.round <= rx.epoch_done)
		rx_error("message of round %u from %d delivered after that round's epoch returned",
			 h.round, src);
	rx.count[h.round][src]++;
	slow = cfg.slow_us && (!cfg.slow_src_set || cfg.slow_src[src]) &&
	       ++rx.slow_n % (uint64_t)cfg.slow_every == 0;
	stall = cfg.stall && !rx.stalled && (!cfg.slow_src_set || cfg.slow_src[src]);
	if (stall)
		rx.stalled = true;
out:
	pthread_mutex_unlock(&rx.mu);
	if (slow)
		usleep((useconds_t)cfg.slow_us);
	if (stall && !td_sync_wait(g_sync, cfg.stall, 60000)) {
		fprintf(stderr, "tclient rank %d: sync point %s never came\n", g_rank, cfg.stall);
		exit(1);
	}
}

/* Destination and length of message i of (src, round). */
static void draw(int src, unsigned round, uint64_t i, int *dst, uint32_t *len)
{
	uint64_t x = tmsg_draw(cfg.seed, src, round, i);
	*dst = g_dst_list[x % (uint64_t)g_ndst];
	uint64_t y = x >> 20;
	if (cfg.big && ((x >> 8) & 31) == 0)
		*len = cfg.minlen + (uint32_t)(y % (cfg.big - cfg.minlen + 1));
	else
		*len = cfg.minlen + (uint32_t)(y % (cfg.maxlen - cfg.minlen + 1));
}

/* How many messages each src sends me in `round`. */
static void expected(unsigned round, uint64_t exp[MAX_WORLD])
{
	memset(exp, 0, sizeof(uint64_t) * MAX_WORLD);
	for (int s = 0; s < g_world; s++) {
		if (!cfg.srcs[s])
			continue;
		for (long i = 0; i < cfg.n; i++) {
			int d;
			uint32_t l;
			draw(s, round, (uint64_t)i, &d, &l);
			if (d == g_rank)
				exp[s]++;
		}
	}
}

static uint8_t g_buf[1 << 20];

/* Build message i of this rank's round into g_buf; returns its length. */
static uint32_t build(unsigned round, long i, int *dst, uint32_t *type)
{
	uint32_t len;
	draw(g_rank, round, (uint64_t)i, dst, &len);
	struct tmsg h = {
		.magic = TMSG_MAGIC, .job_tag = g_job_tag, .src = g_rank, .dst = *dst,
		.round = round, .len = len, .pair_seq = g_sent_pair[*dst], .gseq = g_gseq,
	};
	tmsg_fill(g_buf + sizeof(h), len - sizeof(h), g_rank, g_gseq);
	h.sum = tmsg_fnv(g_buf + sizeof(h), len - sizeof(h));
	memcpy(g_buf, &h, sizeof(h));
	*type = tmsg_type(g_rank, g_gseq);
	return len;
}

/* Send one message: blocking in thread mode; in poll mode non-blocking,
 * delivering our own records while the ring is full (else two ranks
 * that fill each other's rings would wait for each other forever). */
static int send_one(struct shf_ctx *c, int dst, uint32_t type, uint32_t len)
{
	if (!cfg.poll)
		return shf_send(c, dst, type, g_buf, len, 0);
	for (;;) {
		int r = shf_send(c, dst, type, g_buf, len, SHF_NONBLOCK);
		if (r != -EAGAIN)
			return r;
		r = shf_poll(c, 1);
		if (r < 0)
			return r;
	}
}

static void send_round(struct shf_ctx *c, unsigned round)
{
	for (long i = 0; i < cfg.n; i++) {
		int dst;
		uint32_t type;
		uint32_t len = build(round, i, &dst, &type);
		int r = send_one(c, dst, type, len);
		if (r != 0)
			FAIL("shf_send #%ld of round %u to %d (%u bytes): %s (%s)", i, round, dst,
			     len, shf_strerror(r), shf_error_detail());
		g_sent_pair[dst]++;
		g_gseq++;
		g_sent++;
		g_sent_bytes += len;
	}
}

/* Compare the counts of `round` with what the senders sent. */
static bool round_complete(unsigned round, const uint64_t exp[MAX_WORLD], bool report)
{
	bool ok = true;
	pthread_mutex_lock(&rx.mu);
	for (int s = 0; s < g_world; s++) {
		if (!cfg.srcs[s] || rx.count[round][s] == exp[s])
			continue;
		ok = false;
		if (report)
			fprintf(stderr, "tclient rank %d: round %u: %" PRIu64 " messages from %d, "
				"expected %" PRIu64 "\n", g_rank, round, rx.count[round][s], s,
				exp[s]);
	}
	pthread_mutex_unlock(&rx.mu);
	return ok;
}

static bool round_reached(unsigned round, const uint64_t exp[MAX_WORLD])
{
	bool ok = true;
	pthread_mutex_lock(&rx.mu);
	for (int s = 0; s < g_world && ok; s++)
		ok = !cfg.srcs[s] || rx.count[round][s] >= exp[s];
	pthread_mutex_unlock(&rx.mu);
	return ok;
}

static bool epoch_result_ok(int r)
{
	if (!strcmp(cfg.expect_epoch, "any"))
		return r == 0 || r == -ESRCH || r == -EHOSTDOWN;
	return r == err_code(cfg.expect_epoch);
}

static uint64_t rx_errors(void)
{
	pthread_mutex_lock(&rx.mu);
	uint64_t e = rx.errors;
	pthread_mutex_unlock(&rx.mu);
	return e;
}

static struct shf_ctx *open_ctx(void)
{
	struct shf_opts o;
	shf_opts_init(&o);
	o.rank = cfg.rank;
	o.world = cfg.world;
	o.ring_bytes = cfg.ring;
	o.delivery_thread = !cfg.poll;
	o.timeout_ms = cfg.timeout;
	struct shf_ctx *c = NULL;
	int r = shf_open(&o, on_deliver, NULL, &c);
	if (r != 0)
		FAIL("shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	if (!c)
		FAIL("shf_open returned 0 but no context");
	set_rank(shf_rank(c));
	g_world = shf_world(c);
	if (g_world < 1 || g_world > MAX_WORLD || g_rank < 0 || g_rank >= g_world)
		FAIL("rank %d world %d out of the test's range", g_rank, g_world);
	if (cfg.rank >= 0 && g_rank != cfg.rank)
		FAIL("shf_rank() %d, asked for %d", g_rank, cfg.rank);
	if (cfg.world >= 0 && g_world != cfg.world)
		FAIL("shf_world() %d, asked for %d", g_world, cfg.world);
	if (cfg.post) {
		char name[128];
		snprintf(name, sizeof(name), "%s.%d", cfg.post, g_rank);
		td_sync_post(g_sync, name);
	}
	return c;
}

/* Default sets: everyone sends, everyone receives, minus the prefix ranks. */
static void setup_sets(void)
{
	for (int i = 0; i < g_world; i++) {
		if (!cfg.srcs_set)
			cfg.srcs[i] = !cfg.prefix[i];
		if (!cfg.dsts_set)
			cfg.dsts[i] = !cfg.prefix[i];
	}
	for (int i = g_world; i < MAX_WORLD; i++)
		cfg.srcs[i] = cfg.dsts[i] = false;
	g_ndst = 0;
	for (int i = 0; i < g_world; i++)
		if (cfg.dsts[i])
			g_dst_list[g_ndst++] = i;
	if (!g_ndst)
		FAIL("no destinations");
}

static void hold_and_close(struct shf_ctx *c)
{
	if (cfg.hold) {
		char name[64];
		snprintf(name, sizeof(name), "held.%d", g_rank);
		td_sync_post(g_sync, name);
		/* the driver may do long work meanwhile (restart-cycles: 20
		 * restarts): wait as long as timeout= says, 60 s at least */
		int wait_ms = cfg.timeout > 60000 ? cfg.timeout : 60000;
		if (!td_sync_wait(g_sync, cfg.hold, wait_ms))
			FAIL("sync point %s never came within %d ms", cfg.hold, wait_ms);
	}
	int r = shf_close(c);
	if (r != 0)
		FAIL("shf_close: %s", shf_strerror(r));
}

static int mode_traffic(void)
{
	struct shf_ctx *c = open_ctx();
	setup_sets();
	rx_set_ready();
	uint64_t exp[MAX_ROUNDS][MAX_WORLD];
	bool epoch_failed = false;
	for (unsigned round = 0; round < cfg.rounds; round++) {
		expected(round, exp[round]);
		if (cfg.srcs[g_rank])
			send_round(c, round);
		if (cfg.flush) {
			int r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
			if (r != 0)
				FAIL("round %u: shf_flush(REMOTE): %s (%s)", round, shf_strerror(r),
				     shf_error_detail());
		}
		if (cfg.wait) {
			int64_t end = td_now_ms() + cfg.timeout;
			while (!round_reached(round, exp[round]) && td_now_ms() < end) {
				if (cfg.poll) {
					int r = shf_poll(c, 10);
					if (r < 0)
						FAIL("shf_poll: %s", shf_strerror(r));
				} else {
					td_sleep_ms(1);
				}
			}
			if (!round_complete(round, exp[round], true))
				FAIL("round %u: counts incomplete after waiting %d ms", round,
				     cfg.timeout);
		}
		if (cfg.epoch && !epoch_failed) {
			int r = shf_epoch(c, cfg.timeout);
			if (!epoch_result_ok(r))
				FAIL("round %u: shf_epoch: %s (%s), expected %s", round,
				     shf_strerror(r), shf_error_detail(), cfg.expect_epoch);
			if (r == 0) {
				pthread_mutex_lock(&rx.mu);
				rx.epoch_done = round;
				pthread_mutex_unlock(&rx.mu);
				/* the epoch promises every record sent before it
				 * has been delivered here: all of this round */
				if (!round_complete(round, exp[round], true))
					FAIL("round %u: counts incomplete after shf_epoch returned",
					     round);
			} else {
				epoch_failed = true;
			}
		}
	}
	if (rx_errors())
		FAIL("%" PRIu64 " delivery errors", rx_errors());
	/* exactly once overall: every round complete, nothing extra */
	if (!epoch_failed && (cfg.epoch || cfg.wait)) {
		for (unsigned round = 0; round < cfg.rounds; round++)
			if (!round_complete(round, exp[round], true))
				FAIL("round %u incomplete at the end", round);
	}
	/* The library counts a record once its callback has returned, and
	 * records may still arrive (a failed epoch promises nothing about the
	 * dead rank's tail): compare only a quiet sample, with the callbacks'
	 * count the same before and after the library's. */
	struct shf_stats st;
	uint64_t got = 0, got_bytes = 0;
	for (int64_t end = td_now_ms() + 5000;;) {
		pthread_mutex_lock(&rx.mu);
		uint64_t before = rx.total;
		pthread_mutex_unlock(&rx.mu);
		int r = shf_stats_get(c, &st);
		if (r != 0)
			FAIL("shf_stats_get: %s", shf_strerror(r));
		pthread_mutex_lock(&rx.mu);
		got = rx.total, got_bytes = rx.bytes;
		pthread_mutex_unlock(&rx.mu);
		if ((before == got && st.delivered_msgs == got) || td_now_ms() >= end)
			break;
		td_sleep_ms(10);
	}
	if (st.sent_msgs != g_sent || st.sent_bytes != g_sent_bytes)
		FAIL("stats: sent %" PRIu64 " msgs %" PRIu64 " bytes, I sent %" PRIu64 " / %" PRIu64,
		     st.sent_msgs, st.sent_bytes, g_sent, g_sent_bytes);
	if (st.delivered_msgs != got || st.delivered_bytes != got_bytes)
		FAIL("stats: delivered %" PRIu64 " msgs %" PRIu64 " bytes, callbacks saw %" PRIu64
		     " / %" PRIu64, st.delivered_msgs, st.delivered_bytes, got, got_bytes);
	if (st.dropped_dead || st.dropped_down)
		FAIL("stats: %" PRIu64 " + %" PRIu64 " of my messages dropped", st.dropped_dead,
		     st.dropped_down);
	if (cfg.check_blocked && g_sent && !st.send_blocked_ns && !st.send_eagain)
		FAIL("sent %" PRIu64 " messages into a slow consumer but never waited for ring "
		     "space (send_blocked_ns 0, send_eagain 0)", g_sent);
	printf("rank %d: sent %" PRIu64 " delivered %" PRIu64 " (blocked %.1f ms, eagain %" PRIu64
	       ", epochs %" PRIu64 ")\n", g_rank, g_sent, got, (double)st.send_blocked_ns / 1e6,
	       st.send_eagain, st.epochs);
	hold_and_close(c);
	return 0;
}

/* Send to dsts until killed; optionally block in a REMOTE flush. */
static int mode_victim(void)
{
	struct shf_ctx *c = open_ctx();
	setup_sets();
	rx_set_ready();
	td_sync_post(g_sync, "victim-sending");
	for (long i = 0;; i++) {
		int dst;
		uint32_t type;
		uint32_t len = build(0, i % cfg.n, &dst, &type);
		int r = shf_send(c, dst, type, g_buf, len, 0);
		if (r != 0)
			FAIL("victim: shf_send: %s", shf_strerror(r));
		g_sent_pair[dst]++;
		g_gseq++;
		if (cfg.victim_flush && i + 1 == cfg.victim_flush) {
			td_sync_post(g_sync, "victim-flushing");
			r = shf_flush(c, SHF_FLUSH_REMOTE, -1);
			FAIL("victim: shf_flush returned %s before the kill", shf_strerror(r));
		}
		if (cfg.victim_until && i % 64 == 0 && td_sync_exists(g_sync, cfg.victim_until)) {
			/* the partner died: what went to it was dropped and is reported */
			r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
			if (r != -ESRCH)
				FAIL("victim: flush after the partner died: %s, expected ESRCH (%s)",
				     shf_strerror(r), shf_error_detail());
			char name[48];
			snprintf(name, sizeof(name), "victim-reported.%d", g_rank);
			td_sync_post(g_sync, name);
			for (;;)
				pause();
		}
	}
}

static int mode_open(void)
{
	struct shf_opts o;
	shf_opts_init(&o);
	o.rank = cfg.rank;
	o.world = cfg.world;
	o.timeout_ms = cfg.timeout;
	o.delivery_thread = !cfg.poll;
	o.ring_bytes = cfg.ring;
	struct shf_ctx *c = NULL;
	rx_set_ready(); /* nothing is expected: any delivery is an error */
	int64_t t0 = td_now_ms();
	int r = shf_open(&o, on_deliver, NULL, &c);
	const char *detail = shf_error_detail();
	fprintf(stderr, "tclient open rank %d/%d: %s after %lld ms (detail: \"%s\")\n", cfg.rank,
		cfg.world, r == 0 ? "ok" : shf_strerror(r), (long long)(td_now_ms() - t0),
		r ? detail : "");
	/* expect may list several outcomes: "EACCES,ETIMEDOUT" */
	bool match = false;
	char want_list[128];
	snprintf(want_list, sizeof(want_list), "%s", cfg.expect);
	for (char *sp, *w = strtok_r(want_list, ",", &sp); w; w = strtok_r(NULL, ",", &sp))
		match |= r == err_code(w);
	if (!match)
		FAIL("shf_open returned %d (%s), expected %s", r, shf_strerror(r), cfg.expect);
	if (r != 0) {
		if (c)
			FAIL("failed shf_open wrote the context");
		if (cfg.detail && !strstr(detail, cfg.detail))
			FAIL("error detail \"%s\" does not mention \"%s\"", detail, cfg.detail);
		return 0;
	}
	set_rank(shf_rank(c));
	if (cfg.post) {
		char name[128];
		snprintf(name, sizeof(name), "%s.%d", cfg.post, g_rank);
		td_sync_post(g_sync, name);
	}
	if (cfg.then) {
		/* the job runs; what do a flush and an epoch say once `hold` came? */
		if (cfg.hold && !td_sync_wait(g_sync, cfg.hold, 60000))
			FAIL("sync point %s never came", cfg.hold);
		int want_then = err_code(cfg.then);
		r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
		fprintf(stderr, "tclient open rank %d: flush after hold: %s (%s)\n", g_rank,
			shf_strerror(r), r ? shf_error_detail() : "");
		if (r != want_then)
			FAIL("shf_flush returned %d (%s), expected %s", r, shf_strerror(r), cfg.then);
		r = shf_epoch(c, cfg.timeout);
		fprintf(stderr, "tclient open rank %d: epoch after hold: %s (%s)\n", g_rank,
			shf_strerror(r), r ? shf_error_detail() : "");
		if (r != want_then)
			FAIL("shf_epoch returned %d (%s), expected %s", r, shf_strerror(r), cfg.then);
		cfg.hold = NULL;
		if (want_then) {
			/* a dead context (cut off, drained): close says the same */
			r = shf_close(c);
			if (r != 0 && r != want_then)
				FAIL("shf_close returned %d (%s), expected %s", r, shf_strerror(r),
				     cfg.then);
			return 0;
		}
	}
	hold_and_close(c);
	return 0;
}

/*
 * nonblock: rank 0 sends 1 KiB messages to rank 1 with SHF_NONBLOCK; rank 1
 * (poll mode) does not consume until rank 0 saw -EAGAIN.  Then rank 1
 * consumes everything and rank 0's retries succeed.
 */
static int mode_nonblock(void)
{
	cfg.poll = 1;
	struct shf_ctx *c = open_ctx();
	if (g_world != 2)
		FAIL("nonblock needs world 2");
	cfg.srcs[0] = true;
	cfg.dsts[1] = true;
	g_ndst = 1;
	g_dst_list[0] = 1;
	cfg.minlen = cfg.maxlen = 1024;
	cfg.big = 0;
	rx_set_ready();
	const long total = cfg.n;
	if (g_rank == 0) {
		/* both rings (send + delivery) hold at most 2 * ring / 1 KiB */
		uint32_t ring = cfg.ring ? cfg.ring : (1u << 20);
		long bound = 2L * ring / 1024 + 8;
		long i = 0, sent_before = -1;
		int r;
		for (; i < total; i++) {
			int dst;
			uint32_t type;
			uint32_t len = build(0, i, &dst, &type);
			r = shf_send(c, dst, type, g_buf, len, SHF_NONBLOCK);
			if (r == -EAGAIN)
				break;
			if (r != 0)
				FAIL("non-blocking send #%ld: %s", i, shf_strerror(r));
			g_sent_pair[dst]++;
			g_gseq++;
		}
		if (i == total)
			FAIL("sent all %ld messages without -EAGAIN (ring %u)", total, ring);
		if (i > bound)
			FAIL("-EAGAIN only after %ld messages; the rings hold at most %ld", i, bound);
		sent_before = i;
		/* steady state: the receiver does not consume, so after the daemon
		 * moved what it could, the ring stays full */
		td_sleep_ms(200);
		for (int k = 0; k < 1000 && i < total; k++) {
			int dst;
			uint32_t type;
			uint32_t len = build(0, i, &dst, &type);
			r = shf_send(c, dst, type, g_buf, len, SHF_NONBLOCK);
			if (r == -EAGAIN)
				break;
			if (r != 0)
				FAIL("non-blocking send: %s", shf_strerror(r));
			g_sent_pair[dst]++;
			g_gseq++;
			i++;
		}
		for (int k = 0; k < 10; k++) {
			int dst;
			uint32_t type;
			uint32_t len = build(0, i, &dst, &type);
			r = shf_send(c, dst, type, g_buf, len, SHF_NONBLOCK);
			if (r != -EAGAIN)
				FAIL("send %d to a full ring whose consumer sleeps: %s, expected EAGAIN",
				     k, shf_strerror(r));
			td_sleep_ms(10);
		}
		struct shf_stats st;
		if ((r = shf_stats_get(c, &st)) != 0)
			FAIL("shf_stats_get: %s", shf_strerror(r));
		if (st.send_eagain < 11)
			FAIL("stats: send_eagain %" PRIu64 ", at least 11 expected", st.send_eagain);
		fprintf(stderr, "tclient rank 0: -EAGAIN after %ld messages (bound %ld)\n",
			sent_before, bound);
		td_sync_post(g_sync, "nonblock-full");
		/* now the consumer runs: every retry eventually succeeds */
		int64_t end = td_now_ms() + cfg.timeout;
		while (i < total) {
			int dst;
			uint32_t type;
			uint32_t len = build(0, i, &dst, &type);
			r = shf_send(c, dst, type, g_buf, len, SHF_NONBLOCK);
			if (r == -EAGAIN) {
				if (td_now_ms() > end)
					FAIL("still -EAGAIN %d ms after the consumer started", cfg.timeout);
				td_sleep_ms(1);
				continue;
			}
			if (r != 0)
				FAIL("non-blocking send #%ld: %s", i, shf_strerror(r));
			g_sent_pair[dst]++;
			g_gseq++;
			i++;
		}
		if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
			FAIL("shf_flush: %s", shf_strerror(r));
	} else {
		if (!td_sync_wait(g_sync, "nonblock-full", cfg.timeout))
			FAIL("rank 0 never saw a full ring");
		int64_t end = td_now_ms() + cfg.timeout;
		for (;;) {
			uint64_t got = count_from(0);
			if (got >= (uint64_t)total)
				break;
			if (td_now_ms() > end)
				FAIL("received %" PRIu64 " of %ld messages", got, total);
			int r = shf_poll(c, 100);
			if (r < 0)
				FAIL("shf_poll: %s", shf_strerror(r));
		}
	}
	int r = shf_epoch(c, cfg.timeout);
	if (r != 0)
		FAIL("shf_epoch: %s", shf_strerror(r));
	if (rx_errors())
		FAIL("%" PRIu64 " delivery errors", rx_errors());
	if (g_rank == 1 && count_from(0) != (uint64_t)total)
		FAIL("received %" PRIu64 " messages, %ld sent", count_from(0), total);
	printf("rank %d: nonblock ok\n", g_rank);
	hold_and_close(c);
	return 0;
}

/*
 * deadpeer (world 3, rank 2 has left before the driver posts "gone"):
 * rank 0 sends to rank 1 (flush 0), then to rank 2 (flush -ESRCH, counted),
 * then a clean flush again; argument checks; epochs fail with -ESRCH.
 */
static int mode_deadpeer(void)
{
	struct shf_ctx *c = open_ctx();
	if (g_world != 3 || g_rank > 1)
		FAIL("deadpeer is for ranks 0 and 1 of world 3");
	cfg.srcs[0] = true;
	rx_set_ready();
	td_sync_post(g_sync, g_rank ? "deadpeer-open.1" : "deadpeer-open.0");
	if (!td_sync_wait(g_sync, "gone", cfg.timeout))
		FAIL("driver never said rank 2 is gone");
	int r;
	if (g_rank == 0) {
		struct tmsg h = {.magic = TMSG_MAGIC, .job_tag = g_job_tag, .src = 0, .len = sizeof(h)};
		for (int i = 0; i < 10; i++) {
			h.dst = 1;
			h.pair_seq = (uint64_t)i;
			h.gseq = (uint64_t)i;
			h.sum = tmsg_fnv(NULL, 0);
			if ((r = shf_send(c, 1, tmsg_type(0, h.gseq), &h, sizeof(h), 0)) != 0)
				FAIL("send to live rank 1: %s", shf_strerror(r));
		}
		if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
			FAIL("flush after sends to a live rank: %s, expected 0", shf_strerror(r));
		for (int i = 0; i < 5; i++) {
			r = shf_send(c, 2, 7, "dead", 4, 0);
			if (r != 0 && r != -ESRCH)
				FAIL("send to a departed rank: %s (0 or ESRCH expected)",
				     shf_strerror(r));
		}
		r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
		if (r != -ESRCH)
			FAIL("flush after sends to a departed rank: %s, expected ESRCH",
			     shf_strerror(r));
		struct shf_stats st;
		if ((r = shf_stats_get(c, &st)) != 0)
			FAIL("shf_stats_get: %s", shf_strerror(r));
		if (st.dropped_dead != 5)
			FAIL("stats.dropped_dead %" PRIu64 ", expected 5", st.dropped_dead);
		if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
			FAIL("second flush with nothing sent since: %s, expected 0",
			     shf_strerror(r));
		/* argument checks */
		if ((r = shf_send(c, 3, 0, "x", 1, 0)) != -ESRCH)
			FAIL("send to rank 3 of world 3: %s, expected ESRCH", shf_strerror(r));
		if ((r = shf_send(c, -1, 0, "x", 1, 0)) != -ESRCH && r != -EINVAL)
			FAIL("send to rank -1: %s, expected ESRCH", shf_strerror(r));
		static uint8_t huge[2 << 20];
		if ((r = shf_send(c, 1, 0, huge, sizeof(huge), 0)) != -EMSGSIZE)
			FAIL("send of 2 MiB: %s, expected EMSGSIZE", shf_strerror(r));
		if ((r = shf_flush(c, 99, cfg.timeout)) != -EINVAL)
			FAIL("flush(99): %s, expected EINVAL", shf_strerror(r));
		td_sync_post(g_sync, "deadpeer-sent");
	} else {
		int64_t end = td_now_ms() + cfg.timeout;
		for (;;) {
			pthread_mutex_lock(&rx.mu);
			uint64_t got = rx.total;
			pthread_mutex_unlock(&rx.mu);
			if (got >= 10)
				break;
			if (td_now_ms() > end)
				FAIL("received %" PRIu64 " of 10 messages from rank 0", got);
			td_sleep_ms(2);
		}
		if (!td_sync_wait(g_sync, "deadpeer-sent", cfg.timeout))
			FAIL("rank 0 never finished");
		pthread_mutex_lock(&rx.mu);
		uint64_t total = rx.total;
		pthread_mutex_unlock(&rx.mu);
		if (total != 10 || count_from(0) != 10)
			FAIL("received %" PRIu64 " messages, expected exactly 10", total);
	}
	/* a rank of the job is gone: the epoch cannot complete; rank 0 first
	 * sends 3 more to it, and the failed epoch still counts their drops */
	if (g_rank == 0)
		for (int i = 0; i < 3; i++) {
			r = shf_send(c, 2, 7, "dead", 4, 0);
			if (r != 0 && r != -ESRCH)
				FAIL("send to a departed rank: %s (0 or ESRCH expected)",
				     shf_strerror(r));
		}
	r = shf_epoch(c, cfg.timeout);
	if (r != -ESRCH)
		FAIL("epoch with a departed rank: %s, expected ESRCH", shf_strerror(r));
	if (g_rank == 0) {
		struct shf_stats st;
		if ((r = shf_stats_get(c, &st)) != 0)
			FAIL("shf_stats_get: %s", shf_strerror(r));
		if (st.dropped_dead != 8)
			FAIL("stats.dropped_dead %" PRIu64 " after a failed epoch, expected 8 (5 + 3)",
			     st.dropped_dead);
	}
	/* the detail names the culprit, and the epoch as the user counts it
	 * (this is its first shf_epoch; the flushes before it do not count);
	 * rank 0 may have left too by then, after its own failed epoch: it is
	 * no culprit (job.c, shd_job_culprit) */
	if (!strstr(shf_error_detail(), "rank 2 of job") ||
	    !strstr(shf_error_detail(), "left the job") ||
	    strncmp(shf_error_detail(), "epoch 1 failed", 14) != 0)
		FAIL("epoch with rank 2 gone: detail '%s' does not say 'epoch 1 failed' and "
		     "'rank 2 of job ... left the job'", shf_error_detail());
	if (rx_errors())
		FAIL("%" PRIu64 " delivery errors", rx_errors());
	printf("rank %d: deadpeer ok\n", g_rank);
	hold_and_close(c);
	return 0;
}

/*
 * blocked (world 2, delivery thread, callbacks that never return while the
 * daemon lives): rank 0 blocks in shf_send on its full send ring, rank 1
 * fills rank 0's delivery ring and blocks in a REMOTE flush.  The driver
 * kills the daemon: both calls return -ENOTCONN, and so does every later
 * call.  Then the callbacks are let go and shf_close() works.
 */
static atomic_bool g_release;
static atomic_ulong g_blocked_cb;

static void on_deliver_stuck(void *arg, int src, int dst, uint32_t type, const void *data,
			     uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
	atomic_fetch_add(&g_blocked_cb, 1);
	for (int i = 0; i < 60000 && !atomic_load(&g_release); i++)
		usleep(1000);
}

static int mode_blocked(void)
{
	struct shf_opts o;
	shf_opts_init(&o);
	o.ring_bytes = cfg.ring;
	o.delivery_thread = 1;
	o.timeout_ms = cfg.timeout;
	struct shf_ctx *c = NULL;
	int r = shf_open(&o, on_deliver_stuck, NULL, &c);
	if (r)
		FAIL("shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	set_rank(shf_rank(c));
	if (shf_world(c) != 2)
		FAIL("blocked needs world 2");
	int peer = 1 - g_rank;
	static uint8_t kib[1024];
	if (g_rank == 0) {
		td_sync_post(g_sync, "blocked-sending");
		long i;
		for (i = 0; i < 1000000; i++)
			if ((r = shf_send(c, peer, 1, kib, sizeof(kib), 0)) != 0)
				break;
		fprintf(stderr, "tclient rank 0: shf_send #%ld returned %s (%s)\n", i,
			shf_strerror(r), shf_error_detail());
	} else {
		/* fill the peer's delivery ring and half of my send ring, no more:
		 * these sends complete, the flush cannot */
		uint32_t ring = cfg.ring;
		if (!ring)
			FAIL("blocked needs ring=");
		long n = (long)(ring + ring / 2) / (long)(sizeof(kib) + 16);
		for (long i = 0; i < n; i++)
			if ((r = shf_send(c, peer, 1, kib, sizeof(kib), 0)) != 0)
				FAIL("send #%ld of %ld before the flush: %s", i, n, shf_strerror(r));
		td_sync_post(g_sync, "blocked-flushing");
		r = shf_flush(c, SHF_FLUSH_REMOTE, -1);
		fprintf(stderr, "tclient rank 1: shf_flush returned %s (%s)\n", shf_strerror(r),
			shf_error_detail());
	}
	if (r != -ENOTCONN)
		FAIL("blocked call returned %s, expected ENOTCONN", shf_strerror(r));
	if (!atomic_load(&g_blocked_cb))
		FAIL("no callback ever ran: the test did not block the way it should");
	if ((r = shf_send(c, peer, 1, kib, 8, SHF_NONBLOCK)) != -ENOTCONN)
		FAIL("send after the daemon died: %s", shf_strerror(r));
	if ((r = shf_send(c, peer, 1, kib, 8, 0)) != -ENOTCONN)
		FAIL("blocking send after the daemon died: %s", shf_strerror(r));
	if ((r = shf_flush(c, SHF_FLUSH_ORIGIN, -1)) != -ENOTCONN)
		FAIL("flush(ORIGIN) after the daemon died: %s", shf_strerror(r));
	if ((r = shf_flush(c, SHF_FLUSH_REMOTE, -1)) != -ENOTCONN)
		FAIL("flush(REMOTE) after the daemon died: %s", shf_strerror(r));
	if ((r = shf_epoch(c, -1)) != -ENOTCONN)
		FAIL("epoch after the daemon died: %s", shf_strerror(r));
	atomic_store(&g_release, true);
	r = shf_close(c);
	if (r != 0 && r != -ENOTCONN)
		FAIL("close after the daemon died: %s", shf_strerror(r));
	printf("rank %d: ENOTCONN everywhere\n", g_rank);
	return 0;
}

/*
 * flushes (world 3): rank 1 sends `steps` batches of n messages to rank 0,
 * each followed by shf_flush(REMOTE) (they now sit in rank 0's delivery
 * ring) and shf_flush(ORIGIN), then says so (sync "step.K").  Rank 0 then
 * calls shf_flush(DELIVERY): when it returns, the callbacks must have seen
 * at least K * n messages from rank 1.  Meanwhile rank 2 streams at rank 0
 * without pause, and rank 0 (thread mode) calls shf_flush(DELIVERY) over
 * and over while it waits, or (poll mode) shf_poll().  At the end an epoch
 * and exact counts.
 */
static void post_stop(void)
{
	td_sync_post(g_sync, "stop"); /* also when rank 0 fails: the streamer ends */
}

static int mode_flushes(void)
{
	cfg.prefix[2] = true; /* the streamer stops at an unknown count */
	cfg.srcs[1] = true;
	cfg.srcs_set = true;
	cfg.dsts[0] = true;
	cfg.dsts_set = true;
	cfg.flush = 0;
	struct shf_ctx *c = open_ctx();
	setup_sets();
	rx_set_ready();
	if (g_world != 3)
		FAIL("flushes needs world 3");
	if (cfg.steps < 1)
		FAIL("flushes needs steps=");
	int r;
	char name[32];
	long total = (long)cfg.steps * cfg.n;
	if (g_rank == 1) {
		cfg.n = total; /* one pattern of steps * n messages */
		for (int k = 1; k <= cfg.steps; k++) {
			for (long i = (long)(k - 1) * (total / cfg.steps); i < (long)k * (total / cfg.steps);
			     i++) {
				int dst;
				uint32_t type;
				uint32_t len = build(0, i, &dst, &type);
				if ((r = send_one(c, dst, type, len)) != 0)
					FAIL("send: %s", shf_strerror(r));
				g_sent_pair[dst]++;
				g_gseq++;
				g_sent++;
			}
			if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
				FAIL("step %d: flush(REMOTE): %s (%s)", k, shf_strerror(r),
				     shf_error_detail());
			if ((r = shf_flush(c, SHF_FLUSH_ORIGIN, cfg.timeout)) != 0)
				FAIL("step %d: flush(ORIGIN): %s", k, shf_strerror(r));
			snprintf(name, sizeof(name), "step.%d", k);
			td_sync_post(g_sync, name);
		}
	} else if (g_rank == 2) {
		int64_t end = td_now_ms() + cfg.timeout;
		for (long i = 0; !td_sync_exists(g_sync, "stop"); i++) {
			if (td_now_ms() > end)
				FAIL("stream: never told to stop");
			int dst;
			uint32_t type;
			uint32_t len = build(0, i % 100000, &dst, &type);
			if ((r = send_one(c, dst, type, len)) != 0)
				FAIL("stream: %s", shf_strerror(r));
			g_sent_pair[dst]++;
			g_gseq++;
			g_sent++;
			if (i % 512 == 511 && (r = shf_flush(c, SHF_FLUSH_ORIGIN, cfg.timeout)) != 0)
				FAIL("stream: flush(ORIGIN): %s (%s)", shf_strerror(r),
				     shf_error_detail());
		}
	} else {
		long flushes = 0;
		cfg.n = total;
		atexit(post_stop);
		for (int k = 1; k <= cfg.steps; k++) {
			snprintf(name, sizeof(name), "step.%d", k);
			int64_t end = td_now_ms() + cfg.timeout;
			while (!td_sync_exists(g_sync, name)) {
				if (td_now_ms() > end)
					FAIL("step %d never came", k);
				if (cfg.poll)
					r = shf_poll(c, 1);
				else
					r = shf_flush(c, SHF_FLUSH_DELIVERY, cfg.timeout);
				if (r < 0)
					FAIL("waiting for step %d: %s: %s (%s)", k,
					     cfg.poll ? "shf_poll" : "flush(DELIVERY)", shf_strerror(r),
					     shf_error_detail());
				flushes += !cfg.poll;
			}
			if ((r = shf_flush(c, SHF_FLUSH_DELIVERY, cfg.timeout)) != 0)
				FAIL("step %d: flush(DELIVERY): %s (%s)", k, shf_strerror(r),
				     shf_error_detail());
			uint64_t got = count_from(1);
			if (got < (uint64_t)k * (uint64_t)(total / cfg.steps))
				FAIL("step %d: after rank 1's REMOTE flush and my DELIVERY flush, "
				     "%" PRIu64 " of its %ld messages were delivered", k, got,
				     (long)k * (total / cfg.steps));
		}
		fprintf(stderr, "tclient rank 0: %ld DELIVERY flushes while waiting\n", flushes);
		td_sync_post(g_sync, "stop");
	}
	r = shf_epoch(c, cfg.timeout);
	if (r != 0)
		FAIL("epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	if (rx_errors())
		FAIL("%" PRIu64 " delivery errors", rx_errors());
	if (g_rank == 0 && count_from(1) != (uint64_t)total)
		FAIL("%" PRIu64 " messages from rank 1, %ld sent", count_from(1), total);
	printf("rank %d: flushes ok (sent %" PRIu64 ")\n", g_rank, g_sent);
	hold_and_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv);
	g_sync = getenv("SHF_TEST_SYNC");
	if (!g_sync)
		g_sync = ".";
	const char *job = getenv("SHF_JOB");
	if (job && *job)
		snprintf(g_job, sizeof(g_job), "%s", job);
	g_job_tag = tmsg_hash32(g_job);
	set_rank(cfg.rank);
	if (!strcmp(cfg.mode, "traffic"))
		return mode_traffic();
	if (!strcmp(cfg.mode, "victim"))
		return mode_victim();
	if (!strcmp(cfg.mode, "open"))
		return mode_open();
	if (!strcmp(cfg.mode, "nonblock"))
		return mode_nonblock();
	if (!strcmp(cfg.mode, "deadpeer"))
		return mode_deadpeer();
	if (!strcmp(cfg.mode, "blocked"))
		return mode_blocked();
	if (!strcmp(cfg.mode, "flushes"))
		return mode_flushes();
	usage("unknown mode");
	return 2;
}
