/* SPDX-License-Identifier: MIT */
/*
 * tests/multi/mn-client.c - one rank of a multi-node test, for what the
 * general test client (tests/node/tclient) does not cover: losing a node,
 * an epoch racing a departing rank, one-way latency.  Public API only.
 *
 *   mn-client MODE [key=value ...]
 *
 * Rank and world come from SHF_RANK/SHF_WORLD (or the launcher), the job
 * from SHF_JOB, the daemon from SHF_SOCKET; sync points are files in
 * $SHF_TEST_SYNC (the driver and the ranks post and wait for them).
 *
 * Modes:
 *   peerloss   per_node=K victim=V (0-based node id, not 0): rank r lives
 *              on node r / K.
 *              A. everyone sends m messages to every other rank, flushes,
 *                 epoch; exact counts and per-pair order are checked.
 *              B. the victim node's ranks stop consuming (poll mode, small
 *                 ring) and post "victim.R"; rank 0 sends `burst` bytes to
 *                 the first victim rank, posts "s-flushing" and blocks in
 *                 shf_flush(REMOTE); every other survivor posts
 *                 "in-epoch.R" and blocks in shf_epoch().  The driver then
 *                 kills the victim's daemon or cuts its link.  Expected:
 *                 the flush returns -EHOSTDOWN and the epochs what
 *                 `inflight_epoch` says (EHOSTDOWN, ESRCH, or any: either),
 *                 none before hold_min_ms (they really waited for the
 *                 loss); rank 0's dropped_down > 0.  Then every survivor
 *                 starts a new epoch and checks it against `post_epoch`.
 *                 Every result is printed.
 *              C. survivors exchange c messages with every survivor: flush
 *                 returns 0, exact counts, per-pair order.
 *              Victim ranks leave when their daemon is gone (-ENOTCONN)
 *              or the driver posts "v-exit".
 *   epochleave ranks 0 and 1 of world 3 (rank 2 is played by wire-inject):
 *              both call shf_epoch(); rank 1 closes as soon as its epoch
 *              returns; rank 0 posts "epoch.0", waits for "close.0" (from
 *              wire-inject) and expects `expect` (default ok).
 *   leavemix   rank 0 of world 3 (ranks 1 and 2 are played by wire-inject):
 *              calls shf_epoch(), prints "rank 0: epoch: ERR (detail)",
 *              posts "epoch.0" and expects `expect`.
 *   onecause   per_node=K victim=V (0-based node id): every rank takes part in
 *              one epoch (ok), then the victim node's ranks post
 *              "victim.R" and wait for "v-exit"; every other rank posts
 *              "in-epoch.R", calls shf_epoch() (the driver kills the
 *              victim's daemon), prints "rank R: epoch: ERR (detail)" and
 *              closes at once, as an application that exits on an error
 *              does (tests/multi/one-cause.sh checks the lines).
 *   epochwho   victim=R (the late rank): every other rank waits until the
 *              others but R opened, calls shf_epoch() with a 1 s timeout,
 *              expects -ETIMEDOUT with `expect` in shf_error_detail() (who
 *              holds it up, as its daemon knows it), posts "JOB.timed.r"
 *              and calls shf_epoch() again; rank R enters once every other
 *              rank timed out; every epoch then completes (the resumed ones
 *              too).
 *   epochtime  (scripts/scale) times shf_open(), then `count` + 1 epochs
 *              with nothing sent (the first absorbs the ranks' start skew
 *              and is not counted) and prints "rank R: open_ms X epochs N
 *              median_us Y min_us Z max_us W"; then the load: m messages
 *              to every other rank, a REMOTE flush, an epoch, exact counts;
 *              posts "held.R" and waits for "release" before closing.
 *   epochabort victim=R (a rank): rank R's delivery callback blocks for
 *              good on the one message rank 0 sends it (posting
 *              "stuck.R"), so R stays inside its epoch's drain; every
 *              other rank posts "in-epoch.r" and enters the epoch, which
 *              must return `expect` (ESRCH, say) once the driver kills
 *              R, within `timeout`; prints how long it waited.
 *   phases     thread=0|1 count=L m=M: L levels, each M sends to random
 *              ranks and a broadcast, then an epoch; every record must run
 *              in the level it was sent in (the epoch as a phase boundary,
 *              tests/multi/epoch-phase.sh); posts "held.R", waits "release".
 *   latency    world 2: rank 0 sends `count` messages of `size` bytes to
 *              rank 1, one every gap_ms, each stamped with CLOCK_MONOTONIC;
 *              rank 1 prints one-way latency statistics (same host, same
 *              clock) and checks the maximum against `bound_us` if set.
 *
 * Fault modes (tests/multi/fault-*.sh; world 2, rank 0 on daemon node 0,
 * rank 1 on node 1, daemons are shuffled-fault).  The driver creates the
 * fault's trigger file and then posts "armed".  Phase A, every mode: each
 * rank sends m messages (rank 1: none in appenddown) to the other and
 * flushes; exact counts are checked.
 *   parkdrop   rank 1 polls (ring `vring`) and stops consuming after A
 *              ("stopped.1"); rank 0 sends `count` messages of `size` bytes
 *              (they park at node 1), posts "sent.0" and flushes: -EHOSTDOWN
 *              expected once node 0 sees node 1 down, 1 <= dropped_down
 *              <= count ("flushed.0").  Rank 1, once armed, sends one
 *              message to rank 0 (its batch fails: node 1 takes node 0
 *              down), posts "sent.1", and on "exit.1" exits without
 *              reading or closing (a rank that has left).  Rank 0 closes
 *              on "end".
 *   appenddown once armed, rank 0 sends `count` messages of `size` bytes to
 *              rank 1 (the first batch of them fails) and flushes: exactly
 *              -EHOSTDOWN with dropped_down == count (every record after
 *              phase A was lost, so every one must be reported), posts
 *              "B.0"; rank 1 then checks it got exactly phase A.
 *   leavefree  phase A ends with an epoch; once armed, rank 0 closes (its
 *              JOB_LEAVE to node 1 fails) and posts "closed.0"; rank 1
 *              closes on "exit.1".
 *
 * Exit 0 when every check held, 1 otherwise (reasons on stderr), 2 for
 * usage errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/args.h"
#include "tests/lib/tclient.h"

#define MAX_WORLD 256
#define MSG_MAGIC 0x4e4d4d4du /* "MMMN" */

static struct {
	const char *mode;
	int per_node, victim;
	long m, c, count;
	long burst;      /* peerloss: bytes rank 0 sends to the victim */
	uint32_t vring;  /* peerloss: victims' ring bytes */
	int timeout;     /* ms, for open/flush/epoch/waits */
	int hold_min_ms; /* peerloss: the blocked calls must have waited this long */
	const char *post_epoch;
	const char *inflight_epoch;
	const char *expect;
	int gap_ms;
	uint32_t size;
	long bound_us;
	bool thread; /* phases: delivery thread (1) or poll mode (0) */
} cfg = {
	.per_node = 1, .victim = -1, .m = 200, .c = 200, .count = 200, .burst = 256 * 1024,
	.vring = 128 * 1024, .timeout = 30000, .hold_min_ms = 300, .post_epoch = "any",
	.inflight_epoch = "any",
	.expect = "ok", .gap_ms = 10, .size = 64,
};

static int g_rank = -1, g_world;

static void usage(const char *why) __attribute__((noreturn));
static void usage(const char *why)
{
	fprintf(stderr, "mn-client: %s\nusage: mn-client MODE [key=value ...] (see the source)\n",
		why);
	exit(2);
}

/* ------------------------------------------------------------ messages */

/* Every test message starts with this; the rest is a byte pattern. */
struct mmsg {
	uint32_t magic;
	uint32_t phase;
	int32_t src, dst;
	uint64_t seq;     /* n-th message of (phase, src -> dst) */
	uint64_t sent_ns; /* CLOCK_MONOTONIC at shf_send() */
};

#define NPHASE 3

static struct {
	pthread_mutex_t mu;
	uint64_t next[NPHASE][MAX_WORLD]; /* next seq expected per (phase, src) */
	uint64_t errors;
	uint64_t *lat_ns;                 /* latency mode: one per message */
	long nlat;
} rx = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t sent_seq[NPHASE][MAX_WORLD];

static int g_stick_type = -1; /* epochabort: the victim's callback blocks on this type */

static void on_deliver(void *arg, int src, int dst, uint32_t type, const void *data,
		       uint32_t len)
{
	(void)arg;
	if (g_stick_type >= 0 && type == (uint32_t)g_stick_type) {
		tc_sync_post("stuck.%d", g_rank);
		for (;;)
			tc_sleep_ms(1000); /* until the driver kills us */
	}
	uint64_t t = tc_now_ns();
	struct mmsg h;
	pthread_mutex_lock(&rx.mu);
	if (len < sizeof(h)) {
		if (rx.errors++ < 10)
			fprintf(stderr, "mn-client rank %d: %u-byte message from %d\n", g_rank, len,
				src);
		goto out;
	}
	memcpy(&h, data, sizeof(h));
	if (h.magic != MSG_MAGIC || h.phase >= NPHASE || h.src != src || h.dst != dst ||
	    dst != g_rank || src < 0 || src >= g_world || type != h.phase) {
		if (rx.errors++ < 10)
			fprintf(stderr, "mn-client rank %d: bad message from %d (magic %#x phase %u "
				"src %d dst %d type %u)\n", g_rank, src, h.magic, h.phase, h.src,
				h.dst, type);
		goto out;
	}
	const uint8_t *body = (const uint8_t *)data + sizeof(h);
	for (uint32_t i = 0; i < len - sizeof(h); i++) {
		if (body[i] != (uint8_t)(h.seq + i)) {
			if (rx.errors++ < 10)
				fprintf(stderr, "mn-client rank %d: payload of seq %" PRIu64
					" from %d corrupt at byte %u\n", g_rank, h.seq, src, i);
			goto out;
		}
	}
	if (h.seq != rx.next[h.phase][src]) {
		if (rx.errors++ < 10)
			fprintf(stderr, "mn-client rank %d: phase %u from %d: seq %" PRIu64
				", expected %" PRIu64 " (%s)\n", g_rank, h.phase, src, h.seq,
				rx.next[h.phase][src],
				h.seq < rx.next[h.phase][src] ? "duplicate or reordered" : "lost");
		rx.next[h.phase][src] = h.seq + 1;
		goto out;
	}
	rx.next[h.phase][src]++;
	if (rx.lat_ns && rx.nlat < cfg.count)
		rx.lat_ns[rx.nlat++] = t - h.sent_ns;
out:
	pthread_mutex_unlock(&rx.mu);
}

static uint64_t rx_count(unsigned phase, int src)
{
	pthread_mutex_lock(&rx.mu);
	uint64_t n = rx.next[phase][src];
	pthread_mutex_unlock(&rx.mu);
	return n;
}

static uint64_t rx_errors(void)
{
	pthread_mutex_lock(&rx.mu);
	uint64_t e = rx.errors;
	pthread_mutex_unlock(&rx.mu);
	return e;
}

static uint8_t g_buf[64 * 1024];

/* Build message (phase, me -> dst) of len bytes into g_buf. */
static void build(unsigned phase, int dst, uint32_t len)
{
	struct mmsg h = {MSG_MAGIC, phase, g_rank, dst, sent_seq[phase][dst], 0};
	for (uint32_t i = 0; i < len - sizeof(h); i++)
		g_buf[sizeof(h) + i] = (uint8_t)(h.seq + i);
	h.sent_ns = tc_now_ns();
	memcpy(g_buf, &h, sizeof(h));
}

/* Send one message.  poll: non-blocking, consuming my own deliveries while
 * my send ring is full (two polling ranks must not wait for each other). */
static int send_msg(struct shf_ctx *c, bool poll, unsigned phase, int dst, uint32_t len,
		    unsigned flags)
{
	build(phase, dst, len);
	int r;
	for (;;) {
		r = shf_send(c, dst, phase, g_buf, len, poll ? SHF_NONBLOCK : flags);
		if (r != -EAGAIN || !poll || (flags & SHF_NONBLOCK))
			break;
		if ((r = shf_poll(c, 1)) < 0)
			break;
	}
	if (r == 0)
		sent_seq[phase][dst]++;
	return r;
}

static int err_code(const char *name)
{
	static const struct { const char *n; int e; } t[] = {
		{"ok", 0}, {"EHOSTDOWN", -EHOSTDOWN}, {"ESRCH", -ESRCH},
		{"ETIMEDOUT", -ETIMEDOUT}, {"ENOTCONN", -ENOTCONN},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].n, name))
			return t[i].e;
	usage("unknown error name");
	return 0;
}

/* r matches want: an error name, or "any" for EHOSTDOWN or ESRCH (what
 * a call may return once a node of the job is lost). */
static bool err_ok(int r, const char *want)
{
	if (!strcmp(want, "any"))
		return r == -EHOSTDOWN || r == -ESRCH;
	return r == err_code(want);
}

static const char *err_name(int r)
{
	switch (-r) {
	case 0: return "ok";
	case EHOSTDOWN: return "EHOSTDOWN";
	case ESRCH: return "ESRCH";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ENOTCONN: return "ENOTCONN";
	default: return shf_strerror(r);
	}
}

static struct shf_ctx *open_ctx(bool thread, uint32_t ring)
{
	struct shf_opts o;
	shf_opts_init(&o);
	o.delivery_thread = thread;
	o.ring_bytes = ring;
	o.timeout_ms = cfg.timeout;
	return tc_open(&o, on_deliver, NULL, &g_rank, &g_world, MAX_WORLD);
}

/* Wait until I hold `want` messages of `phase` from every src in [lo, hi)
 * but those for which skip(src) holds. */
static void wait_counts(struct shf_ctx *c, bool poll, unsigned phase, uint64_t want,
			bool (*skip)(int))
{
	int64_t end = tc_now_ms() + cfg.timeout;
	for (;;) {
		bool done = true;
		for (int s = 0; s < g_world && done; s++)
			if (s != g_rank && !skip(s) && rx_count(phase, s) < want)
				done = false;
		if (done)
			break;
		if (tc_now_ms() > end) {
			for (int s = 0; s < g_world; s++)
				if (s != g_rank && !skip(s) && rx_count(phase, s) != want)
					fprintf(stderr, "mn-client rank %d: phase %u: %" PRIu64
						" messages from %d, expected %" PRIu64 "\n", g_rank,
						phase, rx_count(phase, s), s, want);
			tc_fail("phase %u: counts incomplete after %d ms", phase, cfg.timeout);
		}
		if (poll) {
			int r = shf_poll(c, 10);
			if (r < 0)
				tc_fail("shf_poll: %s", shf_strerror(r));
		} else {
			tc_sleep_ms(1);
		}
	}
	for (int s = 0; s < g_world; s++)
		if (s != g_rank && !skip(s) && rx_count(phase, s) != want)
			tc_fail("phase %u: %" PRIu64 " messages from %d, expected exactly %" PRIu64,
			     phase, rx_count(phase, s), s, want);
}

/* ------------------------------------------------------------ peerloss */

static bool is_victim(int r)
{
	return r / cfg.per_node == cfg.victim;
}

static bool skip_none(int r)
{
	(void)r;
	return false;
}

static int mode_peerloss(void)
{
	/* the victims' rank numbers are known before opening: rank from env */
	const char *rs = getenv("SHF_RANK");
	if (!rs)
		rs = getenv("OMPI_COMM_WORLD_RANK");
	int my = rs ? atoi(rs) : -1;
	if (cfg.victim < 1)
		usage("peerloss needs victim=V >= 1 (node 0 hosts rank 0, the sender)");
	bool victim = my >= 0 && is_victim(my);
	struct shf_ctx *c = open_ctx(!victim, victim ? cfg.vring : 0);
	if (is_victim(g_rank) != victim)
		tc_fail("SHF_RANK %d but shf_rank() %d", my, g_rank);
	if (g_world % cfg.per_node || cfg.victim >= g_world / cfg.per_node)
		tc_fail("world %d, per_node %d, victim %d do not fit", g_world, cfg.per_node,
		     cfg.victim);
	int r;
	/* A: everyone to everyone */
	for (long i = 0; i < cfg.m; i++)
		for (int k = 1; k < g_world; k++) {
			int dst = (g_rank + k) % g_world;
			if ((r = send_msg(c, victim, 0, dst, sizeof(struct mmsg) + (uint32_t)(i % 200),
					  0)) != 0)
				tc_fail("phase A: send to %d: %s", dst, shf_strerror(r));
		}
	if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
		tc_fail("phase A: flush(REMOTE): %s (%s)", shf_strerror(r), shf_error_detail());
	if ((r = shf_epoch(c, cfg.timeout)) != 0)
		tc_fail("phase A: epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	wait_counts(c, victim, 0, (uint64_t)cfg.m, skip_none);
	printf("rank %d: phase A ok (%ld messages to each of %d ranks)\n", g_rank, cfg.m,
	       g_world - 1);
	tc_sync_post("A.%d", g_rank);

	if (victim) {
		/* consume nothing from now on; leave when the daemon is gone or
		 * the driver says so */
		tc_sync_post("victim.%d", g_rank);
		int64_t end = tc_now_ms() + 4 * (int64_t)cfg.timeout;
		for (;;) {
			struct shf_stats st;
			if (tc_sync_exists("v-exit"))
				break;
			r = shf_stats_get(c, &st);
			if (r == -ENOTCONN)
				break;
			if (r != 0)
				tc_fail("victim: shf_stats_get: %s", shf_strerror(r));
			if (tc_now_ms() > end)
				tc_fail("victim: never released");
			tc_sleep_ms(20);
		}
		printf("rank %d: victim done (%s)\n", g_rank,
		       r == -ENOTCONN ? "daemon gone" : "released");
		shf_close(c);
		return 0;
	}

	/* B: block on the victim, then see the loss */
	for (int v = 0; v < g_world; v++)
		if (is_victim(v))
			tc_sync_wait(cfg.timeout, "victim.%d", v);
	int64_t t0;
	if (g_rank == 0) {
		int v0 = cfg.victim * cfg.per_node;
		long n = cfg.burst / 1024;
		for (long i = 0; i < n; i++)
			if ((r = send_msg(c, false, 1, v0, 1024, SHF_NONBLOCK)) != 0)
				tc_fail("burst to rank %d: message %ld of %ld: %s (the burst must fit "
				     "my send ring)", v0, i, n, shf_strerror(r));
		tc_sync_post("s-flushing");
		t0 = tc_now_ms();
		r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
		long dt = (long)(tc_now_ms() - t0);
		char detail[512], want[48];
		snprintf(detail, sizeof(detail), "%s", shf_error_detail());
		printf("rank 0: flush(REMOTE) with %ld messages to lost rank %d: %s after %ld ms "
		       "(%s)\n", n, v0, err_name(r), dt, detail);
		if (r != -EHOSTDOWN)
			tc_fail("flush after losing the destination node: %s, expected EHOSTDOWN",
			     err_name(r));
		/* named as the epochs name it (one cause, one error) */
		snprintf(want, sizeof(want), "lost with node %d (", cfg.victim);
		if (!strstr(detail, want))
			tc_fail("the flush's detail does not name the lost node ('%s'): %s", want,
				detail);
		if (dt < cfg.hold_min_ms)
			tc_fail("flush returned after %ld ms, before the node was lost (>= %d ms)",
			     dt, cfg.hold_min_ms);
		struct shf_stats st;
		if ((r = shf_stats_get(c, &st)) != 0)
			tc_fail("shf_stats_get: %s", shf_strerror(r));
		printf("rank 0: dropped_down %" PRIu64 ", dropped_dead %" PRIu64 "\n",
		       st.dropped_down, st.dropped_dead);
		if (st.dropped_down == 0)
			tc_fail("stats.dropped_down is 0 after a flush returned EHOSTDOWN");
	} else {
		tc_sync_post("in-epoch.%d", g_rank);
		t0 = tc_now_ms();
		r = shf_epoch(c, cfg.timeout);
		long dt = (long)(tc_now_ms() - t0);
		printf("rank %d: epoch in flight when the node was lost: %s after %ld ms (%s)\n",
		       g_rank, err_name(r), dt, shf_error_detail());
		if (!err_ok(r, cfg.inflight_epoch))
			tc_fail("epoch in flight at the loss: %s, expected %s", err_name(r),
			     cfg.inflight_epoch);
		if (dt < cfg.hold_min_ms)
			tc_fail("epoch returned after %ld ms, before the node was lost (>= %d ms)",
			     dt, cfg.hold_min_ms);
	}
	r = shf_epoch(c, cfg.timeout);
	printf("rank %d: epoch begun after the loss: %s (%s)\n", g_rank, err_name(r),
	       shf_error_detail());
	if (!err_ok(r, cfg.post_epoch))
		tc_fail("epoch after the loss: %s, expected %s", err_name(r), cfg.post_epoch);
	if (r == -EHOSTDOWN) {
		/* the detail names the lost node and its ranks */
		char want[64];
		snprintf(want, sizeof(want), "lost with node %d (", cfg.victim);
		if (!strstr(shf_error_detail(), want) || !strstr(shf_error_detail(), "of job"))
			tc_fail("epoch after the loss: detail '%s' does not name node %d and its ranks",
			     shf_error_detail(), cfg.victim);
	}
	tc_sync_post("B.%d", g_rank);
	for (int s = 0; s < g_world; s++)
		if (!is_victim(s))
			tc_sync_wait(cfg.timeout, "B.%d", s);

	/* C: the survivors carry on */
	for (long i = 0; i < cfg.c; i++)
		for (int k = 1; k < g_world; k++) {
			int dst = (g_rank + k) % g_world;
			if (is_victim(dst))
				continue;
			if ((r = send_msg(c, false, 2, dst, sizeof(struct mmsg) + (uint32_t)(i % 300),
					  0)) != 0)
				tc_fail("phase C: send to %d: %s", dst, shf_strerror(r));
		}
	if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
		tc_fail("phase C: flush(REMOTE) among survivors: %s (%s)", shf_strerror(r),
		     shf_error_detail());
	wait_counts(c, false, 2, (uint64_t)cfg.c, is_victim);
	if (rx_errors())
		tc_fail("%" PRIu64 " delivery errors", rx_errors());
	printf("rank %d: phase C ok (%ld messages to each survivor)\n", g_rank, cfg.c);
	tc_sync_post("C.%d", g_rank);
	for (int s = 0; s < g_world; s++)
		if (!is_victim(s))
			tc_sync_wait(cfg.timeout, "C.%d", s);
	r = shf_close(c);
	if (r != 0)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ------------------------------------------------------------ epochleave */

static int mode_epochleave(void)
{
	struct shf_ctx *c = open_ctx(true, 0);
	if (g_world != 3 || g_rank > 1)
		tc_fail("epochleave is for ranks 0 and 1 of world 3");
	tc_sync_post("open.%d", g_rank);
	int64_t t0 = tc_now_ms();
	int r = shf_epoch(c, cfg.timeout);
	printf("rank %d: epoch: %s after %ld ms (%s)\n", g_rank, err_name(r),
	       (long)(tc_now_ms() - t0), shf_error_detail());
	int want = err_code(cfg.expect);
	if (g_rank == 1) {
		/* leave at once, as a job's last epoch followed by exit does */
		int rc = shf_close(c);
		if (r != 0)
			tc_fail("rank 1's epoch: %s, expected ok", err_name(r));
		if (rc != 0)
			tc_fail("shf_close: %s", shf_strerror(rc));
		return 0;
	}
	tc_sync_post("epoch.0");
	tc_sync_wait(cfg.timeout, "close.0"); /* leave only when the fake node says so */
	if (r != want)
		tc_fail("epoch completed everywhere else before rank 1 left, yet here: %s, expected %s",
		     err_name(r), cfg.expect);
	shf_close(c);
	return 0;
}

/* ------------------------------------------------------------ leavemix */

static int mode_leavemix(void)
{
	struct shf_ctx *c = open_ctx(true, 0);
	if (g_world != 3 || g_rank != 0)
		tc_fail("leavemix is for rank 0 of world 3");
	int r = shf_epoch(c, cfg.timeout);
	printf("rank 0: epoch: %s (%s)\n", err_name(r), shf_error_detail());
	fflush(stdout);
	tc_sync_post("epoch.0");
	int want = err_code(cfg.expect);
	if (r != want)
		tc_fail("rank 0's epoch: %s, expected %s", err_name(r), cfg.expect);
	shf_close(c);
	return 0;
}

/* ------------------------------------------------------------ onecause */

static int mode_onecause(void)
{
	if (cfg.victim < 0)
		usage("onecause needs victim=V (a node id)");
	struct shf_ctx *c = open_ctx(true, 0);
	int r = shf_epoch(c, cfg.timeout);
	if (r != 0)
		tc_fail("rank %d: the first epoch: %s (%s)", g_rank, err_name(r), shf_error_detail());
	if (is_victim(g_rank)) {
		tc_sync_post("victim.%d", g_rank);
		tc_sync_wait(cfg.timeout, "v-exit");
		shf_close(c); /* its daemon is gone: whatever it says */
		return 0;
	}
	tc_sync_post("in-epoch.%d", g_rank);
	int64_t t0 = tc_now_ms();
	r = shf_epoch(c, cfg.timeout);
	printf("rank %d: epoch: %s after %ld ms (%s)\n", g_rank, err_name(r),
	       (long)(tc_now_ms() - t0), shf_error_detail());
	shf_close(c); /* at once: its leave may reach a node before the loss does */
	if (r == 0)
		tc_fail("rank %d: the epoch completed without the victim's ranks", g_rank);
	return 0;
}

/* ------------------------------------------------------------ epochwho */

static int mode_epochwho(void)
{
	struct shf_ctx *c = open_ctx(true, 0);
	/* sync points of this job: a script runs several jobs in one directory */
	const char *job = getenv("SHF_JOB") ? getenv("SHF_JOB") : "";
	int r;
	if (g_rank == cfg.victim) {
		for (int x = 0; x < g_world; x++)
			if (x != g_rank)
				tc_sync_wait(cfg.timeout, "%s.timed.%d", job, x);
	} else {
		/* every rank but the victim in before the timed epoch starts: a
		 * neighbour that is slow to start on a loaded machine would
		 * otherwise be named instead of the victim */
		tc_sync_post("%s.open.%d", job, g_rank);
		for (int x = 0; x < g_world; x++)
			if (x != g_rank && x != cfg.victim)
				tc_sync_wait(cfg.timeout, "%s.open.%d", job, x);
		r = shf_epoch(c, 1000);
		printf("rank %d: epoch without rank %d: %s (%s)\n", g_rank, cfg.victim, err_name(r),
		       shf_error_detail());
		if (r != -ETIMEDOUT || !strstr(shf_error_detail(), cfg.expect))
			tc_fail("rank %d: the timeout does not say '%s'", g_rank, cfg.expect);
		tc_sync_post("%s.timed.%d", job, g_rank);
	}
	r = shf_epoch(c, cfg.timeout);
	if (r != 0)
		tc_fail("rank %d: the epoch with every rank in: %s (%s)", g_rank, err_name(r),
			shf_error_detail());
	shf_close(c);
	return 0;
}

/* ------------------------------------------------------------ fault modes */

static bool skip_self(int r)
{
	return r == g_rank;
}

/* Phase A of the fault modes: send m messages to the other rank (unless
 * quiet), flush, wait for the other's m (unless none are coming). */
static void fault_phase_a(struct shf_ctx *c, bool poll, bool send, bool recv)
{
	int other = 1 - g_rank, r;
	for (long i = 0; send && i < cfg.m; i++)
		if ((r = send_msg(c, poll, 0, other, sizeof(struct mmsg) + (uint32_t)(i % 200), 0)))
			tc_fail("phase A: send to %d: %s", other, shf_strerror(r));
	if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
		tc_fail("phase A: flush(REMOTE): %s (%s)", err_name(r), shf_error_detail());
	if (recv)
		wait_counts(c, poll, 0, (uint64_t)cfg.m, skip_self);
	printf("rank %d: phase A ok\n", g_rank);
	tc_sync_post("A.%d", g_rank);
}

static void get_stats(struct shf_ctx *c, struct shf_stats *st)
{
	int r = shf_stats_get(c, st);
	if (r)
		tc_fail("shf_stats_get: %s", shf_strerror(r));
}

static int mode_parkdrop(void)
{
	const char *rs = getenv("SHF_RANK");
	bool receiver = rs && atoi(rs) == 1;
	struct shf_ctx *c = open_ctx(!receiver, receiver ? cfg.vring : 0);
	if (g_world != 2 || (g_rank == 1) != receiver)
		tc_fail("parkdrop is for ranks 0 and 1 of world 2 (SHF_RANK %s)", rs ? rs : "unset");
	if (cfg.size < sizeof(struct mmsg) || cfg.size > sizeof(g_buf))
		usage("size out of range");
	fault_phase_a(c, receiver, true, true);
	int r;
	if (receiver) {
		/* from here on nothing here reads: the daemon parks node 0's batches */
		tc_sync_post("stopped.1");
		tc_sync_wait(cfg.timeout, "armed");
		if ((r = send_msg(c, false, 2, 0, sizeof(struct mmsg), SHF_NONBLOCK)) != 0)
			tc_fail("send to rank 0 once armed: %s", shf_strerror(r));
		tc_sync_post("sent.1");
		tc_sync_wait(cfg.timeout, "exit.1");
		printf("rank 1: leaving without reading or closing (%" PRIu64 " phase-1 messages "
		       "delivered)\n", rx_count(1, 0));
		fflush(NULL);
		_exit(0);
	}
	tc_sync_wait(cfg.timeout, "stopped.1");
	struct shf_stats st0, st1;
	get_stats(c, &st0);
	for (long i = 0; i < cfg.count; i++)
		if ((r = send_msg(c, false, 1, 1, cfg.size, 0)) != 0)
			tc_fail("send %ld of %ld to rank 1: %s", i, cfg.count, shf_strerror(r));
	tc_sync_post("sent.0");
	int64_t t0 = tc_now_ms();
	r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
	get_stats(c, &st1);
	uint64_t down = st1.dropped_down - st0.dropped_down, dead = st1.dropped_dead - st0.dropped_dead;
	printf("rank 0: flush(REMOTE) of %ld messages parked at node 1: %s after %ld ms (%s); "
	       "dropped_down %" PRIu64 ", dropped_dead %" PRIu64 "\n", cfg.count, err_name(r),
	       (long)(tc_now_ms() - t0), shf_error_detail(), down, dead);
	if (r != -EHOSTDOWN)
		tc_fail("flush once node 1 was lost: %s, expected EHOSTDOWN", err_name(r));
	if (down < 1 || down > (uint64_t)cfg.count || dead)
		tc_fail("dropped_down %" PRIu64 " (expected 1..%ld: possible loss of the records in "
		     "flight), dropped_dead %" PRIu64 " (expected 0)", down, cfg.count, dead);
	tc_sync_post("flushed.0");
	tc_sync_wait(cfg.timeout, "end");
	shf_close(c);
	return 0;
}

static int mode_appenddown(void)
{
	struct shf_ctx *c = open_ctx(true, 0);
	if (g_world != 2)
		tc_fail("appenddown is for world 2");
	if (cfg.size < sizeof(struct mmsg) || cfg.size > sizeof(g_buf))
		usage("size out of range");
	int r;
	fault_phase_a(c, false, g_rank == 0, g_rank == 1);
	if (g_rank == 1) {
		tc_sync_wait(cfg.timeout, "B.0");
		uint64_t a = rx_count(0, 0), b = rx_count(1, 0);
		printf("rank 1: got %" PRIu64 " phase-A and %" PRIu64 " phase-B messages\n", a, b);
		if (a != (uint64_t)cfg.m || b != 0 || rx_errors())
			tc_fail("expected exactly %ld phase-A and 0 phase-B messages, no errors "
			     "(%" PRIu64 ")", cfg.m, rx_errors());
		if ((r = shf_close(c)) != 0)
			tc_fail("shf_close: %s", shf_strerror(r));
		return 0;
	}
	tc_sync_wait(cfg.timeout, "armed");
	struct shf_stats st0, st1;
	get_stats(c, &st0);
	for (long i = 0; i < cfg.count; i++)
		if ((r = send_msg(c, false, 1, 1, cfg.size, 0)) != 0)
			tc_fail("send %ld of %ld to rank 1: %s", i, cfg.count, shf_strerror(r));
	r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
	get_stats(c, &st1);
	uint64_t down = st1.dropped_down - st0.dropped_down, dead = st1.dropped_dead - st0.dropped_dead;
	printf("rank 0: sent %ld messages after the fault was armed; flush(REMOTE): %s (%s); "
	       "dropped_down %" PRIu64 ", dropped_dead %" PRIu64 "\n", cfg.count, err_name(r),
	       shf_error_detail(), down, dead);
	tc_sync_post("B.0");
	if (r != -EHOSTDOWN)
		tc_fail("flush after node 1 went down: %s, expected EHOSTDOWN", err_name(r));
	if (down != (uint64_t)cfg.count || dead)
		tc_fail("sent %ld, delivered 0, reported dropped %" PRIu64 " (down) + %" PRIu64
		     " (dead): %ld record(s) lost without a report", cfg.count, down, dead,
		     cfg.count - (long)(down + dead));
	if ((r = shf_close(c)) != 0)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

static int mode_leavefree(void)
{
	struct shf_ctx *c = open_ctx(true, 0);
	if (g_world != 2)
		tc_fail("leavefree is for world 2");
	int r;
	fault_phase_a(c, false, true, true);
	if ((r = shf_epoch(c, cfg.timeout)) != 0)
		tc_fail("phase A: epoch: %s (%s)", err_name(r), shf_error_detail());
	if (rx_errors())
		tc_fail("%" PRIu64 " delivery errors", rx_errors());
	tc_sync_post("E.%d", g_rank);
	if (g_rank == 0) {
		tc_sync_wait(cfg.timeout, "armed");
		r = shf_close(c);
		printf("rank 0: closed (its JOB_LEAVE to node 1 fails): %s\n", err_name(r));
		tc_sync_post("closed.0");
		if (r != 0)
			tc_fail("shf_close: %s", err_name(r));
		return 0;
	}
	tc_sync_wait(cfg.timeout, "exit.1");
	r = shf_close(c);
	printf("rank 1: closed: %s\n", err_name(r));
	if (r != 0)
		tc_fail("shf_close: %s", err_name(r));
	return 0;
}

/* ------------------------------------------------------------ epochtime */

static int mode_epochabort(void)
{
	const char *rs = getenv("SHF_RANK");
	int my = rs ? atoi(rs) : -1;
	if (cfg.victim < 1)
		usage("epochabort needs victim=R >= 1 (rank 0 sends to it)");
	if (my == cfg.victim)
		g_stick_type = 2;
	struct shf_ctx *c = open_ctx(true, 0);
	int r;
	if (g_rank == 0 && (r = send_msg(c, false, 2, cfg.victim, sizeof(struct mmsg), 0)) != 0)
		tc_fail("send to the victim: %s", shf_strerror(r));
	if (g_rank != cfg.victim)
		tc_sync_post("in-epoch.%d", g_rank);
	int64_t t0 = tc_now_ms();
	r = shf_epoch(c, cfg.timeout);
	long dt = (long)(tc_now_ms() - t0);
	/* the victim never gets here: its delivery thread is stuck */
	const char *want = cfg.expect;
	printf("rank %d: epoch with rank %d gone inside it: %s after %ld ms (%s)\n", g_rank,
	       cfg.victim, err_name(r), dt, shf_error_detail());
	if (r != err_code(want))
		tc_fail("epoch: %s, expected %s", err_name(r), want);
	shf_close(c);
	return 0;
}

static int cmp_u64(const void *a, const void *b);

static int mode_epochtime(void)
{
	uint64_t t0 = tc_now_ns();
	struct shf_ctx *c = open_ctx(true, 0);
	double open_ms = (double)(tc_now_ns() - t0) / 1e6;
	int r;
	uint64_t *ns = calloc((size_t)cfg.count, sizeof(*ns));
	if (!ns)
		tc_fail("out of memory");
	for (long i = 0; i <= cfg.count; i++) {
		uint64_t a = tc_now_ns();
		if ((r = shf_epoch(c, cfg.timeout)) != 0)
			tc_fail("epoch %ld: %s (%s)", i, shf_strerror(r), shf_error_detail());
		if (i > 0)
			ns[i - 1] = tc_now_ns() - a;
	}
	qsort(ns, (size_t)cfg.count, sizeof(*ns), cmp_u64);
	printf("rank %d: open_ms %.1f epochs %ld median_us %.1f min_us %.1f max_us %.1f\n", g_rank,
	       open_ms, cfg.count, (double)ns[cfg.count / 2] / 1e3, (double)ns[0] / 1e3,
	       (double)ns[cfg.count - 1] / 1e3);
	free(ns);
	for (long i = 0; i < cfg.m; i++)
		for (int k = 1; k < g_world; k++) {
			int dst = (g_rank + k) % g_world;
			if ((r = send_msg(c, false, 0, dst, sizeof(struct mmsg) + (uint32_t)(i % 200),
					  0)) != 0)
				tc_fail("load: send to %d: %s", dst, shf_strerror(r));
		}
	if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
		tc_fail("load: flush(REMOTE): %s (%s)", shf_strerror(r), shf_error_detail());
	if ((r = shf_epoch(c, cfg.timeout)) != 0)
		tc_fail("load: epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	wait_counts(c, false, 0, (uint64_t)cfg.m, skip_none);
	if (rx_errors())
		tc_fail("%" PRIu64 " delivery errors", rx_errors());
	tc_sync_post("held.%d", g_rank);
	tc_sync_wait(cfg.timeout, "release");
	if ((r = shf_close(c)) != 0)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ------------------------------------------------------------- phases */

/*
 * The epoch as a phase boundary (level-synchronous, as a BFS): in level L
 * every rank sends m messages to random ranks and one broadcast, each
 * carrying L, then calls shf_epoch().  Every callback checks that the
 * record's level is the level its rank is in: the number of epochs it has
 * completed (poll mode: the main loop's level, set after shf_epoch()
 * returned; thread mode: shf_stats.epochs, which the library counts before
 * it lets the next level's records run).  A record of level L+1 run while
 * its rank still waits in epoch L (a faster rank left it and sent on) is a
 * violation, so is a record of level L run after epoch L returned.  At
 * the end each rank sends every rank what it sent it, and the totals are
 * checked (nothing lost or run twice).  thread=0|1, count levels, m sends
 * per level.
 */
static struct {
	struct shf_ctx *c;
	bool thread;
	_Atomic uint32_t level;      /* poll mode: levels completed */
	_Atomic uint64_t viol, got, bc_got;
	_Atomic uint64_t total_from[MAX_WORLD]; /* end: what each rank sent me */
	_Atomic int totals;
} ph;

#define PH_TYPE 7
#define PH_TOTAL 8

static void ph_deliver(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg;
	(void)dst;
	if (type == PH_TOTAL && len == 8 && src >= 0 && src < g_world) {
		uint64_t n;
		memcpy(&n, data, 8);
		atomic_store(&ph.total_from[src], n);
		atomic_fetch_add(&ph.totals, 1);
		return;
	}
	uint32_t lv[2];
	if (type != PH_TYPE || len != sizeof(lv)) {
		atomic_fetch_add(&ph.viol, 1);
		return;
	}
	memcpy(lv, data, sizeof(lv));
	uint64_t cur;
	if (ph.thread) {
		struct shf_stats st;
		shf_stats_get(ph.c, &st);
		cur = st.epochs;
	} else {
		cur = atomic_load(&ph.level);
	}
	if (lv[0] != cur) {
		if (atomic_fetch_add(&ph.viol, 1) < 10)
			fprintf(stderr, "mn-client rank %d: a level-%u record from rank %d ran in "
				"level %" PRIu64 "\n", g_rank, lv[0], src, cur);
	}
	if (lv[1])
		atomic_fetch_add(&ph.bc_got, 1);
	atomic_fetch_add(&ph.got, 1);
}

static int mode_phases(void)
{
	ph.thread = cfg.thread;
	struct shf_opts o;
	shf_opts_init(&o);
	o.delivery_thread = cfg.thread;
	o.timeout_ms = cfg.timeout;
	ph.c = tc_open(&o, ph_deliver, NULL, &g_rank, &g_world, MAX_WORLD);
	struct shf_ctx *c = ph.c;
	uint64_t sent_to[MAX_WORLD] = {0};
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(g_rank + 1);
	int r;
	for (uint32_t lv = 0; lv < (uint32_t)cfg.count; lv++) {
		uint32_t msg[2] = {lv, 0};
		for (long i = 0; i < cfg.m; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			int dst = (int)((seed >> 33) % (uint64_t)g_world);
			if ((r = shf_send(c, dst, PH_TYPE, msg, sizeof(msg), 0)) != 0)
				tc_fail("level %u: send to %d: %s", lv, dst, shf_strerror(r));
			sent_to[dst]++;
		}
		msg[1] = 1;
		if ((r = shf_bcast(c, PH_TYPE, msg, sizeof(msg), SHF_BCAST_SELF)) != 0)
			tc_fail("level %u: bcast: %s", lv, shf_strerror(r));
		for (int d = 0; d < g_world; d++)
			sent_to[d]++;
		if ((r = shf_epoch(c, cfg.timeout)) != 0)
			tc_fail("level %u: epoch: %s (%s)", lv, shf_strerror(r), shf_error_detail());
		atomic_store(&ph.level, lv + 1);
	}
	/* what I sent each rank, then one more epoch: they all arrived */
	for (int d = 0; d < g_world; d++)
		if ((r = shf_send(c, d, PH_TOTAL, &sent_to[d], 8, 0)) != 0)
			tc_fail("total to %d: %s", d, shf_strerror(r));
	if ((r = shf_epoch(c, cfg.timeout)) != 0)
		tc_fail("last epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	if (atomic_load(&ph.totals) != g_world)
		tc_fail("%d totals of %d after the last epoch", atomic_load(&ph.totals), g_world);
	uint64_t want = 0;
	for (int s = 0; s < g_world; s++)
		want += atomic_load(&ph.total_from[s]);
	uint64_t got = atomic_load(&ph.got), viol = atomic_load(&ph.viol);
	printf("rank %d: levels %ld received %" PRIu64 " (expected %" PRIu64 ", %" PRIu64
	       " broadcasts) out-of-level %" PRIu64 "\n", g_rank, cfg.count, got, want,
	       atomic_load(&ph.bc_got), viol);
	if (got != want)
		tc_fail("received %" PRIu64 " level records, senders sent %" PRIu64, got, want);
	if (atomic_load(&ph.bc_got) != (uint64_t)cfg.count * (uint64_t)g_world)
		tc_fail("received %" PRIu64 " broadcasts, expected %ld", atomic_load(&ph.bc_got),
		     cfg.count * g_world);
	if (viol)
		tc_fail("%" PRIu64 " records ran outside the level they were sent in", viol);
	tc_sync_post("held.%d", g_rank);
	tc_sync_wait(cfg.timeout, "release");
	if ((r = shf_close(c)) != 0)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ------------------------------------------------------------ latency */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int mode_latency(void)
{
	if (cfg.size < sizeof(struct mmsg) || cfg.size > sizeof(g_buf))
		usage("size out of range");
	rx.lat_ns = calloc((size_t)cfg.count, sizeof(uint64_t));
	if (!rx.lat_ns)
		tc_fail("out of memory");
	struct shf_ctx *c = open_ctx(true, 0);
	if (g_world != 2)
		tc_fail("latency needs world 2");
	int r;
	if (g_rank == 0) {
		for (long i = 0; i < cfg.count; i++) {
			if ((r = send_msg(c, false, 0, 1, cfg.size, 0)) != 0)
				tc_fail("send #%ld: %s", i, shf_strerror(r));
			tc_sleep_ms(cfg.gap_ms);
		}
		if ((r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout)) != 0)
			tc_fail("flush: %s", shf_strerror(r));
		tc_sync_wait(cfg.timeout, "lat-done");
		shf_close(c);
		return 0;
	}
	int64_t end = tc_now_ms() + cfg.timeout + cfg.count * (cfg.gap_ms + 5);
	for (;;) {
		pthread_mutex_lock(&rx.mu);
		long n = rx.nlat;
		pthread_mutex_unlock(&rx.mu);
		if (n >= cfg.count)
			break;
		if (tc_now_ms() > end)
			tc_fail("received %ld of %ld messages", n, cfg.count);
		tc_sleep_ms(5);
	}
	tc_sync_post("lat-done");
	if (rx_errors())
		tc_fail("%" PRIu64 " delivery errors", rx_errors());
	uint64_t *l = rx.lat_ns;
	long n = cfg.count;
	qsort(l, (size_t)n, sizeof(*l), cmp_u64);
	double sum = 0;
	for (long i = 0; i < n; i++)
		sum += (double)l[i];
#define US(x) ((double)(x) / 1e3)
	printf("one-way latency over %ld messages of %u B, one every %d ms: min %.1f us, "
	       "median %.1f us, mean %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n", n,
	       cfg.size, cfg.gap_ms, US(l[0]), US(l[n / 2]), sum / (double)n / 1e3,
	       US(l[n * 9 / 10]), US(l[n * 99 / 100]), US(l[n - 1]));
	if (cfg.bound_us > 0) {
		long over = 0;
		for (long i = 0; i < n; i++)
			over += l[i] > (uint64_t)cfg.bound_us * 1000u;
		printf("%ld of %ld messages above the bound of %ld us (median %s the bound)\n", over,
		       n, cfg.bound_us, l[n / 2] <= (uint64_t)cfg.bound_us * 1000u ? "within"
										   : "ABOVE");
	}
#undef US
	shf_close(c);
	free(rx.lat_ns);
	return 0;
}

/* ------------------------------------------------------------ main */

static void set_thread(const char *v)
{
	cfg.thread = atoi(v) != 0;
}

static void parse_args(int argc, char **argv)
{
	static const struct targ keys[] = {
		{"per_node", TARG_INT, &cfg.per_node, NULL},
		{"victim", TARG_INT, &cfg.victim, NULL},
		{"m", TARG_LONG, &cfg.m, NULL},
		{"c", TARG_LONG, &cfg.c, NULL},
		{"count", TARG_LONG, &cfg.count, NULL},
		{"burst", TARG_LONG, &cfg.burst, NULL},
		{"vring", TARG_U32, &cfg.vring, NULL},
		{"timeout", TARG_INT, &cfg.timeout, NULL},
		{"hold_min_ms", TARG_INT, &cfg.hold_min_ms, NULL},
		{"post_epoch", TARG_STR, &cfg.post_epoch, NULL},
		{"inflight_epoch", TARG_STR, &cfg.inflight_epoch, NULL},
		{"expect", TARG_STR, &cfg.expect, NULL},
		{"gap_ms", TARG_INT, &cfg.gap_ms, NULL},
		{"size", TARG_U32, &cfg.size, NULL},
		{"bound_us", TARG_LONG, &cfg.bound_us, NULL},
		{"thread", TARG_FN, NULL, set_thread},
	};
	cfg.mode = targs_parse(argc, argv, keys, TARGS_N(keys), usage);
	if (cfg.per_node < 1 || cfg.m < 0 || cfg.c < 0 || cfg.count < 1 || cfg.timeout < 1)
		usage("bad numbers");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv);
	tc_setup("mn-client", &g_rank);
	if (!strcmp(cfg.mode, "peerloss"))
		return mode_peerloss();
	if (!strcmp(cfg.mode, "epochleave"))
		return mode_epochleave();
	if (!strcmp(cfg.mode, "leavemix"))
		return mode_leavemix();
	if (!strcmp(cfg.mode, "epochwho"))
		return mode_epochwho();
	if (!strcmp(cfg.mode, "onecause"))
		return mode_onecause();
	if (!strcmp(cfg.mode, "latency"))
		return mode_latency();
	if (!strcmp(cfg.mode, "epochtime"))
		return mode_epochtime();
	if (!strcmp(cfg.mode, "epochabort"))
		return mode_epochabort();
	if (!strcmp(cfg.mode, "parkdrop"))
		return mode_parkdrop();
	if (!strcmp(cfg.mode, "appenddown"))
		return mode_appenddown();
	if (!strcmp(cfg.mode, "leavefree"))
		return mode_leavefree();
	if (!strcmp(cfg.mode, "phases"))
		return mode_phases();
	usage("unknown mode");
	return 2;
}
