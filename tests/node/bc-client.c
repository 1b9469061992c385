/* SPDX-License-Identifier: MIT */
/*
 * tests/node/bc-client.c - one rank of the broadcast and node-query tests
 * (tests/node/bcast.c on one node; tests/multi/bcast.sh, bcast-lost.sh on
 * several).  Public API only.
 *
 *   bc-client MODE [key=value ...]
 *
 * Rank and world from SHF_RANK/SHF_WORLD, the job from SHF_JOB, the
 * daemon from SHF_SOCKET; sync points are files in $SHF_TEST_SYNC.
 *
 * Modes:
 *   exact    per_node=K (rank r lives on node r / K, K ranks per node,
 *            the last node may hold fewer) ops=N size=S info=1.
 *            1. (info=1) shf_node_info() is checked against that layout: node id,
 *               nodes, local count, local ranks (array exactly the size,
 *               and one entry short), per-node counts.
 *            2. Every rank issues N operations, op k of kind k % 3:
 *               0: shf_bcast() (not to itself), 1: shf_send() to every
 *               other rank, 2: shf_bcast(SHF_BCAST_SELF).  Each message
 *               carries (src, k).  shf_flush(REMOTE) must return 0, then
 *               shf_epoch() must return 0.
 *            3. After the epoch every rank must have got from every source
 *               exactly the ops meant for it, each once, in issue order
 *               (sends and broadcasts interleaved); it prints
 *               "rank R: bcast exact: ok (M messages)" and posts held.R;
 *               it closes on "release".
 *   lost     world 3, one rank per node; node 3 (rank 2) is the victim.
 *            Rank 2 opens in poll mode with a small ring, posts "ready.2"
 *            and never consumes (it calls nothing: in poll mode every wait
 *            delivers); it exits on "v-exit".  Rank 1 counts what it gets.  Rank 0 broadcasts
 *            count=N messages of size=S (each with its number), posting
 *            "started.0" after the first; the driver kills node 3's daemon
 *            once rank 0's daemon reports a credit stall.  Rank 0 then
 *            must finish (no call hangs: every call has the default
 *            timeout), its shf_flush(REMOTE) must return -EHOSTDOWN with
 *            dropped_down >= 1, it posts "sent.0"; rank 1 must have got
 *            all N, once each, in order ("rank 1: got N").
 *   left     world 3: rank 0 on node 1, ranks 1 and 2 on node 2.  Rank 2
 *            opens, posts "ready.2", closes on "leave" and posts
 *            "closed.2".  Once the driver saw node 2's daemon detach it
 *            and posted "go", rank 0 broadcasts count=N messages (each
 *            with its number) and flushes (REMOTE): the flush must return
 *            -ESRCH with dropped_dead exactly N (one copy per broadcast
 *            had nobody to go to on node 2), and rank 1 must have got all
 *            N, once each, in order ("rank 1: got N").
 *
 *   many-sizes  ops=N calls of shf_send_many() of 1..300 records each (so
 *            some take two windows), to random ranks (itself too), of 16 B
 *            to 20000 B (past a run's 16 KiB; every fourth call one
 *            length for all its records: packed runs), every third call with
 *            SHF_NONBLOCK (a short count is resent from there); after an
 *            epoch, every rank has from every source exactly what it was
 *            sent, each pair in order, every byte right.
 *            more=1: the records go one by one with shf_send(SHF_MORE)
 *            (held, then grouped), mixed with calls of shf_send_many(),
 *            plain sends, SHF_NONBLOCK, flushes, and bursts left for the
 *            next call to push.
 *   more-echo  poll mode, a 128 KiB ring, ops records with SHF_MORE to
 *            random other ranks; callbacks answer every third record with
 *            SHF_MORE | SHF_NONBLOCK, so they send while the rank's held
 *            records wait for room (nested pushes).  Each pair's records
 *            are numbered when taken: every rank gets 0, 1, 2, ... from
 *            each source, as many as its T_END says.
 *   many-to  world 2: rank 0 sends count=N records to rank 1 with
 *            shf_send_many(), 32 per call, record k carrying k, flushes
 *            (REMOTE) and closes (more=1: one shf_send(SHF_MORE) each,
 *            then the close alone); rank 1 is the driver's (rawclient
 *            old-reader, a client that never said it reads runs).
 *
 * Exit 0 when every check held, 1 otherwise (reasons on stderr), 2 for
 * usage errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/tclient.h"

#define MAX_WORLD 64
#define BC_MAGIC 0x54534342u /* "BCST" */
#define T_SEND 1u
#define T_BCAST 2u
#define T_REPLY 3u /* more-echo: a callback's answer */
#define T_END 4u   /* more-echo: how many records the sender sent me */

static struct {
	const char *mode;
	int per_node;
	long ops, count;
	uint32_t size;
	int timeout;
	int info; /* exact: check shf_node_info() first */
	int many;    /* exact: half the sends go as one shf_send_many() per op */
	int more;    /* exact, many-sizes: plain sends with SHF_MORE (held) */
	int batchcb; /* deliver through opts.deliver_many */
	int poll;    /* poll mode (delivery_thread 0) */
	int threads; /* many-threads: sending threads */
} cfg = {.threads = 4, .info = 1, .per_node = 1, .ops = 300, .count = 2000, .size = 64, .timeout = 60000};

static int g_rank = -1, g_world;

struct bmsg {
	uint32_t magic;
	int32_t src;
	int64_t k; /* op number (exact) or message number (lost) */
};

/* What arrived: per source, the op numbers in arrival order. */
static struct {
	pthread_mutex_t mu;
	int64_t *got[MAX_WORLD];
	long n[MAX_WORLD], cap[MAX_WORLD];
	long bad;
	char why[256];
} rx = {.mu = PTHREAD_MUTEX_INITIALIZER};

/*
 * more-echo: two streams per pair, the main loop's records (T_SEND) and
 * the callbacks' answers (T_REPLY).  A record carries its number in its
 * stream and how many of the other stream's records to the same rank had
 * returned from shf_send() when it was sent (a nested answer is sent
 * while the main record around it has not returned, so it is not
 * counted).  The receiver checks each stream in order, and that every
 * record comes after the other stream's records it counted: a held
 * record overtaken by a later one fails.
 */
struct me_msg {
	struct bmsg b; /* b.k: number in its stream */
	int64_t other; /* records of the other stream sent before it */
};
static int64_t me_sent[2][MAX_WORLD]; /* [0] main, [1] answers: per destination */
static int64_t me_got[2][MAX_WORLD];  /* per source */
static int64_t me_end[2][MAX_WORLD];  /* per source: its T_END */
static struct shf_ctx *me_ctx;

static int me_send(int dst, int stream, unsigned flags)
{
	struct me_msg m = {{BC_MAGIC, g_rank, me_sent[stream][dst]}, me_sent[!stream][dst]};
	int r = shf_send(me_ctx, dst, stream ? T_REPLY : T_SEND, &m, sizeof(m), flags);
	if (r == 0)
		me_sent[stream][dst]++; /* counted once it returned */
	return r;
}

static void me_bad(const char *fmt, ...)
{
	pthread_mutex_lock(&rx.mu);
	if (!rx.bad++) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(rx.why, sizeof(rx.why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&rx.mu);
}

/* more-echo's callback (poll mode: on the rank's own thread) */
static void me_on_msg(int src, uint32_t type, const void *data, uint32_t len)
{
	struct me_msg m;
	if (len != sizeof(m) || src < 0 || src >= g_world || src == g_rank) {
		me_bad("bad delivery: src %d type %u len %u", src, type, len);
		return;
	}
	memcpy(&m, data, sizeof(m));
	if (type == T_END) {
		me_end[0][src] = m.b.k;
		me_end[1][src] = m.other;
		return;
	}
	int st = type == T_REPLY;
	if (m.b.magic != BC_MAGIC || m.b.src != src || (type != T_SEND && type != T_REPLY))
		me_bad("bad payload from %d (type %u)", src, type);
	else if (m.b.k != me_got[st][src])
		me_bad("from rank %d: %s record %" PRId64 " came as number %" PRId64
		       " (order or loss)", src, st ? "answer" : "main", m.b.k, me_got[st][src]);
	else if (m.other > me_got[!st][src])
		me_bad("from rank %d: %s record %" PRId64 " overtook %s record %" PRId64, src,
		       st ? "answer" : "main", m.b.k, st ? "main" : "answer", me_got[!st][src]);
	me_got[st][src]++;
	/* answer every third main record: held, never blocking (a full ring
	 * means no answer; it was never counted) */
	if (!st && m.b.k % 3 == 0) {
		int r = me_send(src, 1, SHF_MORE | SHF_NONBLOCK);
		if (r && r != -EAGAIN)
			me_bad("answer to %d: %s (%s)", src, shf_strerror(r), shf_error_detail());
	}
}

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	if (me_ctx) {
		me_on_msg(src, type, data, len);
		return;
	}
	(void)arg;
	struct bmsg m;
	pthread_mutex_lock(&rx.mu);
	if (len < sizeof(m) || dst != g_rank || src < 0 || src >= g_world ||
	    (type != T_SEND && type != T_BCAST && type != T_REPLY && type != T_END)) {
		if (!rx.bad++)
			snprintf(rx.why, sizeof(rx.why), "bad delivery: src %d dst %d type %u len %u",
				 src, dst, type, len);
		pthread_mutex_unlock(&rx.mu);
		return;
	}
	memcpy(&m, data, sizeof(m));
	if (m.magic != BC_MAGIC || m.src != src) {
		if (!rx.bad++)
			snprintf(rx.why, sizeof(rx.why), "bad payload from %d (claims %d)", src,
				 m.src);
	} else {
		if (rx.n[src] == rx.cap[src]) {
			rx.cap[src] = rx.cap[src] ? 2 * rx.cap[src] : 1024;
			rx.got[src] = realloc(rx.got[src], (size_t)rx.cap[src] * sizeof(int64_t));
			if (!rx.got[src])
				abort();
		}
		/* many-sizes: the payload after the header is a pattern of k */
		if (!strcmp(cfg.mode, "many-sizes")) {
			const uint8_t *d = data;
			for (uint32_t i = sizeof(m); i < len; i++)
				if (d[i] != (uint8_t)(m.k * 7 + i) && !rx.bad++) {
					snprintf(rx.why, sizeof(rx.why), "record %" PRId64 " from %d: "
						 "byte %u of %u is wrong", m.k, src, i, len);
					break;
				}
		}
		/* the type must match the op's kind (exact mode) */
		if (!strcmp(cfg.mode, "exact") &&
		    (type == T_SEND) != (m.k % 3 == 1) && !rx.bad++)
			snprintf(rx.why, sizeof(rx.why), "op %" PRId64 " from %d came as type %u",
				 m.k, src, type);
		rx.got[src][rx.n[src]++] = m.k;
	}
	pthread_mutex_unlock(&rx.mu);
}

static void on_many(void *arg, const struct shf_rec *recs, unsigned n)
{
	if (n == 0 || n > 256) {
		pthread_mutex_lock(&rx.mu);
		if (!rx.bad++)
			snprintf(rx.why, sizeof(rx.why), "batch callback with n %u", n);
		pthread_mutex_unlock(&rx.mu);
	}
	for (unsigned i = 0; i < n; i++)
		on_msg(arg, recs[i].src, recs[i].dst, recs[i].type, recs[i].data, recs[i].len);
}

static struct shf_ctx *open_ctx(int delivery_thread, uint32_t ring)
{
	struct shf_opts o;
	shf_opts_init(&o);
	if (cfg.batchcb)
		o.deliver_many = on_many;
	o.delivery_thread = delivery_thread;
	o.ring_bytes = ring;
	o.timeout_ms = cfg.timeout;
	return tc_open(&o, on_msg, NULL, &g_rank, &g_world, MAX_WORLD);
}

static void fill(uint8_t *buf, int64_t k)
{
	struct bmsg m = {BC_MAGIC, g_rank, k};
	memcpy(buf, &m, sizeof(m));
	for (uint32_t i = sizeof(m); i < cfg.size; i++)
		buf[i] = (uint8_t)(k + i);
}

/* ------------------------------------------------------------ node info */

static void check_node_info(struct shf_ctx *c)
{
	int K = cfg.per_node, nodes = (g_world + K - 1) / K, me = g_rank / K;
	int first = me * K, local = g_world - first < K ? g_world - first : K;
	int ranks[MAX_WORLD + 1], counts[MAX_WORLD + 1];
	struct shf_node_info ni = {-1, -1, -1, ranks, local, counts, nodes};
	for (int i = 0; i <= MAX_WORLD; i++)
		ranks[i] = counts[i] = -7;
	int r = shf_node_info(c, &ni);
	if (r)
		tc_fail("shf_node_info: %s (%s)", shf_strerror(r), shf_error_detail());
	if (ni.node != me || ni.nodes != nodes || ni.local_count != local)
		tc_fail("shf_node_info: node %d of %d, %d local; expected node %d of %d, %d local",
		     ni.node, ni.nodes, ni.local_count, me, nodes, local);
	for (int i = 0; i < local; i++)
		if (ranks[i] != first + i)
			tc_fail("shf_node_info: local_ranks[%d] = %d, expected %d", i, ranks[i],
			     first + i);
	if (ranks[local] != -7)
		tc_fail("shf_node_info wrote past local_cap");
	for (int n = 0; n < nodes; n++) {
		int want = g_world - n * K < K ? g_world - n * K : K;
		if (counts[n] != want)
			tc_fail("shf_node_info: node_counts[%d] = %d, expected %d", n, counts[n], want);
	}
	if (counts[nodes] != -7)
		tc_fail("shf_node_info wrote past node_counts_cap");
	/* a short array: filled up to its capacity, the count still whole */
	for (int i = 0; i <= MAX_WORLD; i++)
		ranks[i] = -7;
	struct shf_node_info sh = {-1, -1, -1, ranks, local - 1, NULL, 0};
	r = shf_node_info(c, &sh);
	if (r || sh.local_count != local || (local > 1 && ranks[local - 2] != first + local - 2) ||
	    ranks[local - 1] != -7)
		tc_fail("shf_node_info with local_cap %d: r %d, count %d, last %d", local - 1, r,
		     sh.local_count, ranks[local - 1]);
	/* no arrays at all */
	struct shf_node_info none = {-1, -1, -1, NULL, 0, NULL, 0};
	if (shf_node_info(c, &none) || none.node != me || none.nodes != nodes)
		tc_fail("shf_node_info without arrays");
	struct shf_node_info bad = {0, 0, 0, NULL, 3, NULL, 0};
	if (shf_node_info(c, &bad) != -EINVAL)
		tc_fail("shf_node_info with local_cap 3 and no array did not say -EINVAL");
	printf("rank %d: node_info: node %d of %d, %d local: ok\n", g_rank, ni.node, ni.nodes,
	       ni.local_count);
}

/* ------------------------------------------------------------------ exact */

static int mode_exact(void)
{
	struct shf_ctx *c = open_ctx(!cfg.poll, 0);
	if (cfg.info)
		check_node_info(c);
	uint8_t *buf = calloc(1, cfg.size);
	struct shf_msg *msgs = calloc(MAX_WORLD, sizeof(*msgs));
	if (!buf || !msgs)
		tc_fail("out of memory");
	for (long k = 0; k < cfg.ops; k++) {
		fill(buf, k);
		int r = 0;
		switch (k % 3) {
		case 0: r = shf_bcast(c, T_BCAST, buf, cfg.size, 0); break;
		case 2: r = shf_bcast(c, T_BCAST, buf, cfg.size, SHF_BCAST_SELF); break;
		default:
			if (cfg.many && k % 2) {
				/* one call to every other rank, between the
				 * broadcasts and plain sends around it */
				unsigned n = 0;
				for (int d = 0; d < g_world; d++)
					if (d != g_rank)
						msgs[n++] = (struct shf_msg){d, T_SEND, buf, cfg.size};
				r = shf_send_many(c, msgs, n, 0);
				if (r == (int)n)
					r = 0;
				else if (r >= 0)
					tc_fail("op %ld: shf_send_many sent %d of %u", k, r, n);
				break;
			}
			/* more=1: held, and sent by the broadcast, the
			 * shf_send_many() or the flush that follows (buf is
			 * filled anew by then: the library copied it) */
			for (int d = 0; d < g_world && !r; d++)
				if (d != g_rank)
					r = shf_send(c, d, T_SEND, buf, cfg.size,
						     cfg.more ? SHF_MORE : 0);
		}
		if (r)
			tc_fail("op %ld: %s (%s)", k, shf_strerror(r), shf_error_detail());
	}
	int r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
	if (r)
		tc_fail("shf_flush(REMOTE): %s (%s)", shf_strerror(r), shf_error_detail());
	r = shf_epoch(c, cfg.timeout);
	if (r)
		tc_fail("shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	long total = 0;
	pthread_mutex_lock(&rx.mu);
	if (rx.bad)
		tc_fail("%ld bad deliveries, first: %s", rx.bad, rx.why);
	for (int s = 0; s < g_world; s++) {
		long i = 0;
		for (long k = 0; k < cfg.ops; k++) {
			bool mine = s == g_rank ? k % 3 == 2 : true;
			if (!mine)
				continue;
			if (i >= rx.n[s])
				tc_fail("from rank %d: got %ld messages, op %ld never came", s, rx.n[s], k);
			if (rx.got[s][i] != k)
				tc_fail("from rank %d: message %ld is op %" PRId64 ", expected op %ld "
				     "(lost, duplicated or out of order)", s, i, rx.got[s][i], k);
			i++;
		}
		if (i != rx.n[s])
			tc_fail("from rank %d: %ld messages, expected %ld", s, rx.n[s], i);
		total += i;
	}
	pthread_mutex_unlock(&rx.mu);
	struct shf_stats st;
	shf_stats_get(c, &st);
	if (st.dropped_dead || st.dropped_down)
		tc_fail("drops reported: %" PRIu64 " dead, %" PRIu64 " down", st.dropped_dead,
		     st.dropped_down);
	printf("rank %d: bcast exact: ok (%ld messages)\n", g_rank, total);
	fflush(stdout);
	tc_sync_post("held.%d", g_rank);
	tc_sync_wait(cfg.timeout, "release");
	r = shf_close(c);
	if (r)
		tc_fail("shf_close: %s", shf_strerror(r));
	free(buf);
	free(msgs);
	return 0;
}

/* ------------------------------------------------------------ many-check */

/* shf_send_many()'s checks, world 1: every bad record fails the whole call
 * before anything is sent, naming its index; then a good call delivers. */
static void expect_fail(struct shf_ctx *c, const struct shf_msg *m, unsigned n, unsigned flags,
			int want, const char *detail)
{
	int r = shf_send_many(c, m, n, flags);
	if (r != want)
		tc_fail("shf_send_many: %d (%s), expected %d", r, shf_strerror(r), want);
	if (detail && !strstr(shf_error_detail(), detail))
		tc_fail("shf_send_many: detail \"%s\" does not name \"%s\"", shf_error_detail(),
		     detail);
}

static int mode_many_check(void)
{
	struct shf_ctx *c = open_ctx(!cfg.poll, 0);
	if (g_world != 1)
		tc_fail("many-check runs alone (world 1)");
	if (cfg.size > 256)
		tc_fail("many-check: size=%u, at most 256", cfg.size);
	uint8_t big[8] = {0}, buf[16 * 4 + 256]; /* fill() writes cfg.size bytes */
	struct shf_msg m[4];
	for (int i = 0; i < 4; i++) {
		fill(buf, i);
		m[i] = (struct shf_msg){0, T_SEND, buf, sizeof(struct bmsg)};
	}
	if (shf_send_many(c, m, 0, 0) != 0)
		tc_fail("n 0 did not return 0");
	if (shf_send_many(c, NULL, 0, 0) != 0)
		tc_fail("NULL msgs with n 0 did not return 0");
	expect_fail(c, NULL, 2, 0, -EINVAL, "msgs is NULL");
	expect_fail(c, m, 4, 0x80, -EINVAL, "unknown flags");
	m[2].dst = 1;
	expect_fail(c, m, 4, 0, -ESRCH, "msgs[2]");
	m[2].dst = -1;
	expect_fail(c, m, 4, 0, -ESRCH, "msgs[2]");
	m[2].dst = 0;
	m[3].data = NULL;
	expect_fail(c, m, 4, 0, -EINVAL, "msgs[3]");
	m[3].data = buf;
	m[1].data = big;
	m[1].len = UINT32_MAX; /* over any max_msg */
	expect_fail(c, m, 4, 0, -EMSGSIZE, "msgs[1]");
	m[1] = m[0];
	/* nothing of the refused calls was sent */
	int r = shf_epoch(c, cfg.timeout);
	if (r)
		tc_fail("shf_epoch: %s", shf_strerror(r));
	pthread_mutex_lock(&rx.mu);
	long got = rx.n[0];
	pthread_mutex_unlock(&rx.mu);
	if (got)
		tc_fail("%ld records of refused calls arrived", got);
	/* a NULL payload of length 0 is fine */
	struct shf_msg z = {0, T_SEND, NULL, 0};
	r = shf_send_many(c, &z, 1, 0);
	if (r != 1)
		tc_fail("a record of length 0: %d (%s)", r, shf_strerror(r));
	/* ops 0..3 in one call */
	for (int i = 0; i < 4; i++) {
		fill(buf + 16 * i, i);
		m[i] = (struct shf_msg){0, T_SEND, buf + 16 * i, 16};
	}
	r = shf_send_many(c, m, 4, SHF_NONBLOCK);
	if (r != 4)
		tc_fail("4 good records: %d (%s)", r, shf_strerror(r));
	r = shf_epoch(c, cfg.timeout);
	if (r)
		tc_fail("shf_epoch: %s", shf_strerror(r));
	pthread_mutex_lock(&rx.mu);
	if (rx.bad != 1) /* the empty record is a bad delivery to on_msg: counted once */
		tc_fail("%ld bad deliveries (%s), expected the one empty record", rx.bad, rx.why);
	if (rx.n[0] != 4)
		tc_fail("%ld records arrived, expected 4", rx.n[0]);
	for (int i = 0; i < 4; i++)
		if (rx.got[0][i] != i)
			tc_fail("record %d is op %" PRId64, i, rx.got[0][i]);
	pthread_mutex_unlock(&rx.mu);
	struct shf_stats st;
	shf_stats_get(c, &st);
	if (st.sent_msgs != 5 || st.delivered_msgs != 5)
		tc_fail("stats: sent %" PRIu64 ", delivered %" PRIu64 ", expected 5 and 5",
		     st.sent_msgs, st.delivered_msgs);
	printf("rank %d: many-check: ok\n", g_rank);
	r = shf_close(c);
	if (r)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ---------------------------------------------------------- many-threads */

/* cfg.threads threads each send cfg.ops batches of 7 records to every rank
 * with shf_send_many() (world ranks in one process each: run it with
 * world 1 or more); op numbers carry the thread in the top bits, so each
 * thread's records must arrive once each, in its order. */
static struct shf_ctx *mt_ctx;

static void *mt_sender(void *arg)
{
	long t = (long)(intptr_t)arg;
	uint8_t bufs[7][sizeof(struct bmsg)];
	struct shf_msg m[7];
	for (long k = 0; k < cfg.ops; k++) {
		for (int i = 0; i < 7; i++) {
			struct bmsg b = {BC_MAGIC, g_rank, (t << 40) | (k * 7 + i)};
			memcpy(bufs[i], &b, sizeof(b));
			m[i] = (struct shf_msg){(int)((k + i) % g_world), T_SEND, bufs[i],
						sizeof(b)};
		}
		/* more=1: every other group as shf_send(SHF_MORE), held on the
		 * opener thread (the last sender), sent at once on the others */
		if (cfg.more && k % 2) {
			for (int i = 0; i < 7; i++) {
				int r = shf_send(mt_ctx, m[i].dst, T_SEND, m[i].data, m[i].len, SHF_MORE);
				if (r)
					tc_fail("thread %ld: shf_send: %d (%s)", t, r, shf_error_detail());
			}
			continue;
		}
		int r = shf_send_many(mt_ctx, m, 7, 0);
		if (r != 7)
			tc_fail("thread %ld: shf_send_many: %d (%s)", t, r, shf_error_detail());
	}
	return NULL;
}

static int mode_many_threads(void)
{
	mt_ctx = open_ctx(!cfg.poll, 0);
	if (cfg.threads < 1 || cfg.threads > 16)
		tc_fail("threads=%d", cfg.threads);
	pthread_t th[16];
	/* more=1: the opener thread is the last sender */
	int spawn = cfg.more ? cfg.threads - 1 : cfg.threads;
	for (long t = 0; t < spawn; t++)
		if (pthread_create(&th[t], NULL, mt_sender, (void *)(intptr_t)t))
			tc_fail("pthread_create");
	if (spawn < cfg.threads)
		mt_sender((void *)(intptr_t)spawn);
	for (int t = 0; t < spawn; t++)
		pthread_join(th[t], NULL);
	int r = shf_epoch(mt_ctx, cfg.timeout);
	if (r)
		tc_fail("shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	pthread_mutex_lock(&rx.mu);
	if (rx.bad)
		tc_fail("%ld bad deliveries, first: %s", rx.bad, rx.why);
	long total = 0;
	for (int s = 0; s < g_world; s++) {
		int64_t next[16] = {0};
		for (long i = 0; i < rx.n[s]; i++) {
			int64_t v = rx.got[s][i], t = v >> 40, seq = v & ((1LL << 40) - 1);
			if (t < 0 || t >= cfg.threads || seq < next[t])
				tc_fail("from rank %d: record %ld (thread %" PRId64 ", %" PRId64
				     ") out of order or duplicated", s, i, t, seq);
			/* the records of thread t meant for me: every k*7+i with
			 * (k + i) % world == my rank, in order */
			while (next[t] < seq) {
				int64_t kk = next[t] / 7, ii = next[t] % 7;
				if ((kk + ii) % g_world == g_rank)
					tc_fail("from rank %d thread %" PRId64 ": record %" PRId64
					     " lost", s, t, next[t]);
				next[t]++;
			}
			next[t] = seq + 1;
		}
		total += rx.n[s];
	}
	long want = 0;
	for (long k = 0; k < cfg.ops; k++)
		for (int i = 0; i < 7; i++)
			want += (k + i) % g_world == g_rank;
	if (total != want * (long)cfg.threads * g_world)
		tc_fail("%ld records arrived, expected %ld", total, want * (long)cfg.threads * g_world);
	pthread_mutex_unlock(&rx.mu);
	printf("rank %d: many-threads: ok (%ld records)\n", g_rank, total);
	fflush(stdout);
	r = shf_close(mt_ctx);
	if (r)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* --------------------------------------------------------------- many-to */

/* Rank 0 sends count records to rank 1 with shf_send_many(), 32 per call
 * (so they travel as runs), record k carrying k; then flushes (REMOTE) and
 * closes.  Rank 1 is whatever the driver runs (rawclient old-reader). */
static int mode_many_to(void)
{
	struct shf_ctx *c = open_ctx(1, 0);
	uint8_t bufs[32][sizeof(struct bmsg)];
	struct shf_msg m[32];
	if (cfg.more) {
		/* one by one with SHF_MORE, then shf_close() at once: the close
		 * must push what is held (and its flush wait for it) */
		for (long k = 0; k < cfg.count; k++) {
			struct bmsg b = {BC_MAGIC, g_rank, k};
			int r = shf_send(c, 1, T_SEND, &b, sizeof(b), SHF_MORE);
			if (r)
				tc_fail("shf_send: %s (%s)", shf_strerror(r), shf_error_detail());
		}
		printf("rank %d: many-to: held and closing after %ld\n", g_rank, cfg.count);
		fflush(stdout);
		int r = shf_close(c);
		if (r)
			tc_fail("shf_close: %s (%s)", shf_strerror(r), shf_error_detail());
		return 0;
	}
	for (long k = 0; k < cfg.count;) {
		unsigned n = 0;
		for (; n < 32 && k + n < cfg.count; n++) {
			struct bmsg b = {BC_MAGIC, g_rank, k + n};
			memcpy(bufs[n], &b, sizeof(b));
			m[n] = (struct shf_msg){1, T_SEND, bufs[n], sizeof(b)};
		}
		int r = shf_send_many(c, m, n, 0);
		if (r != (int)n)
			tc_fail("shf_send_many: %d (%s)", r, shf_error_detail());
		k += n;
	}
	int r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
	if (r)
		tc_fail("shf_flush: %s (%s)", shf_strerror(r), shf_error_detail());
	printf("rank %d: many-to: sent %ld\n", g_rank, cfg.count);
	fflush(stdout);
	r = shf_close(c);
	if (r)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ------------------------------------------------------------ many-sizes */

/* The records rank src sends in many-sizes, from a generator seeded with
 * src: ops calls of 1..300 records (windows of up to 256, so some calls
 * take two), each to a random rank, of a length from 16 B to 20000 B
 * (past a run's 16 KiB: such records go alone), record k of a pair
 * carrying k.  Every rank replays every source's generator to know what
 * it must get. */
static uint64_t ms_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const uint32_t ms_lens[] = {16, 16, 16, 24, 100, 5000, 20000};

static int mode_many_sizes(void)
{
	struct shf_ctx *c = open_ctx(!cfg.poll, 0);
	int r;
	static uint8_t bufs[300][20000];
	struct shf_msg m[300];
	int64_t seq[MAX_WORLD] = {0};
	uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)g_rank;
	long sent = 0, short_counts = 0;
	for (long op = 0; op < cfg.ops; op++) {
		unsigned n = 1 + (unsigned)(ms_rng(&s) % 300);
		for (unsigned i = 0; i < n; i++) {
			int dst = (int)(ms_rng(&s) % (uint64_t)g_world);
			uint32_t len = ms_lens[ms_rng(&s) % 7];
			if (op % 4 == 2 && i > 0)
				len = m[0].len; /* one length for the call: packed runs */
			int64_t k = seq[dst]++;
			struct bmsg b = {BC_MAGIC, g_rank, k};
			memcpy(bufs[i], &b, sizeof(b));
			for (uint32_t j = sizeof(b); j < len; j++)
				bufs[i][j] = (uint8_t)(k * 7 + j);
			m[i] = (struct shf_msg){dst, T_SEND, bufs[i], len};
		}
		/* every third call without blocking: a short count must be a prefix */
		unsigned flags = op % 3 == 0 ? SHF_NONBLOCK : 0, done = 0;
		if (cfg.more && op % 5 != 4) {
			/* one by one, held; some bursts end with a plain send,
			 * some with a flush, the rest with nothing (the next
			 * op's first call, or the epoch, pushes them) */
			for (unsigned i = 0; i < n; i++) {
				bool last = i + 1 == n;
				unsigned f = flags | (last && op % 5 == 1 ? 0 : SHF_MORE);
				while ((r = shf_send(c, m[i].dst, m[i].type, m[i].data, m[i].len, f)) ==
					       -EAGAIN &&
				       (f & SHF_NONBLOCK)) {
					short_counts++;
					shf_poll(c, 1);
				}
				if (r)
					tc_fail("op %ld: shf_send %u of %u: %d (%s)", op, i, n, r,
						shf_error_detail());
				/* the library copied it: spoil the buffer */
				memset(bufs[i], 0xee, m[i].len);
			}
			if (op % 5 == 2 && (r = shf_flush(c, SHF_FLUSH_ORIGIN, cfg.timeout)))
				tc_fail("op %ld: shf_flush: %d (%s)", op, r, shf_error_detail());
			sent += n;
			continue;
		}
		while (done < n) {
			r = shf_send_many(c, m + done, n - done, flags);
			if (r == -EAGAIN && flags) {
				shf_poll(c, 1); /* poll mode: make room by delivering */
				continue;
			}
			if (r <= 0)
				tc_fail("shf_send_many: %d (%s)", r, shf_error_detail());
			short_counts += (unsigned)r < n - done;
			done += (unsigned)r;
		}
		sent += n;
	}
	r = shf_epoch(c, cfg.timeout);
	if (r)
		tc_fail("shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	pthread_mutex_lock(&rx.mu);
	if (rx.bad)
		tc_fail("%ld bad deliveries, first: %s", rx.bad, rx.why);
	long got = 0;
	for (int src = 0; src < g_world; src++) {
		uint64_t t = 0x9e3779b97f4a7c15ull ^ (uint64_t)src;
		int64_t want = 0;
		for (long op = 0; op < cfg.ops; op++) {
			unsigned n = 1 + (unsigned)(ms_rng(&t) % 300);
			for (unsigned i = 0; i < n; i++) {
				want += (int)(ms_rng(&t) % (uint64_t)g_world) == g_rank;
				(void)ms_rng(&t);
			}
		}
		if (rx.n[src] != want)
			tc_fail("from rank %d: %ld records, expected %" PRId64, src, rx.n[src], want);
		for (long i = 0; i < rx.n[src]; i++)
			if (rx.got[src][i] != i)
				tc_fail("from rank %d: record %ld carries %" PRId64 " (order or loss)",
					src, i, rx.got[src][i]);
		got += rx.n[src];
	}
	pthread_mutex_unlock(&rx.mu);
	printf("rank %d: many-sizes: ok (sent %ld, got %ld, %ld short counts)\n", g_rank, sent,
	       got, short_counts);
	fflush(stdout);
	r = shf_close(c);
	if (r)
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ------------------------------------------------------------ more-echo */

/* Poll mode, the smallest ring the daemon allows: ops records to random other ranks with
 * SHF_MORE (every 7th plain), and callbacks that answer every third
 * record they get, held too: so callbacks send while this rank's held
 * records wait for room (pushes nested in pushes).  Every record carries
 * its pair's number: each rank must get 0, 1, 2, ... from every source,
 * as many as that source's T_END (sent after an epoch) says. */
static int mode_more_echo(void)
{
	me_ctx = open_ctx(0, 128u << 10);
	uint64_t s = 0x2545f4914f6cdd1dull ^ (uint64_t)g_rank;
	int r;
	for (long op = 0; op < cfg.ops; op++) {
		int dst = (int)(ms_rng(&s) % (uint64_t)(g_world - 1));
		dst += dst >= g_rank;
		if ((r = me_send(dst, 0, op % 7 == 6 ? 0 : SHF_MORE)))
			tc_fail("op %ld: shf_send: %s (%s)", op, shf_strerror(r), shf_error_detail());
		if (op % 64 == 0 && (r = shf_poll(me_ctx, 0)) < 0)
			tc_fail("shf_poll: %s (%s)", shf_strerror(r), shf_error_detail());
	}
	if ((r = shf_epoch(me_ctx, cfg.timeout)))
		tc_fail("shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	for (int d = 0; d < g_world; d++) {
		struct me_msg m = {{BC_MAGIC, g_rank, me_sent[0][d]}, me_sent[1][d]};
		if (d != g_rank && (r = shf_send(me_ctx, d, T_END, &m, sizeof(m), 0)))
			tc_fail("end to %d: %s (%s)", d, shf_strerror(r), shf_error_detail());
	}
	if ((r = shf_epoch(me_ctx, cfg.timeout)))
		tc_fail("shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	long got = 0;
	pthread_mutex_lock(&rx.mu);
	if (rx.bad)
		tc_fail("%ld bad deliveries, first: %s", rx.bad, rx.why);
	for (int src = 0; src < g_world; src++) {
		if (src == g_rank)
			continue;
		for (int st = 0; st < 2; st++)
			if (me_got[st][src] != me_end[st][src])
				tc_fail("from rank %d: %" PRId64 " %s records, it sent %" PRId64, src,
					me_got[st][src], st ? "answer" : "main", me_end[st][src]);
		got += me_got[0][src] + me_got[1][src];
	}
	pthread_mutex_unlock(&rx.mu);
	struct shf_stats st;
	shf_stats_get(me_ctx, &st);
	printf("rank %d: more-echo: ok (got %ld; waited for room %.1f ms, %" PRIu64 " -EAGAIN)\n",
	       g_rank, got, st.send_blocked_ns / 1e6, st.send_eagain);
	fflush(stdout);
	if ((r = shf_close(me_ctx)))
		tc_fail("shf_close: %s", shf_strerror(r));
	return 0;
}

/* ------------------------------------------------------------------- lost */

/* Rank 1 of modes lost and left: after "sent.0", every one of rank 0's
 * count broadcasts, once each, in order; "done.1", then close on "end". */
static int rank1_count_all(struct shf_ctx *c)
{
	tc_sync_wait(cfg.timeout, "sent.0");
	/* everything rank 0 sent reached rank 1's node: wait for the last one */
	int64_t end = tc_now_ms() + cfg.timeout;
	for (;;) {
		pthread_mutex_lock(&rx.mu);
		long n = rx.n[0];
		pthread_mutex_unlock(&rx.mu);
		if (n >= cfg.count || tc_now_ms() > end)
			break;
		tc_sleep_ms(5);
	}
	pthread_mutex_lock(&rx.mu);
	if (rx.bad)
		tc_fail("%ld bad deliveries, first: %s", rx.bad, rx.why);
	if (rx.n[0] != cfg.count)
		tc_fail("got %ld broadcasts from rank 0, expected %ld", rx.n[0], cfg.count);
	for (long i = 0; i < cfg.count; i++)
		if (rx.got[0][i] != i)
			tc_fail("broadcast %ld is number %" PRId64, i, rx.got[0][i]);
	pthread_mutex_unlock(&rx.mu);
	printf("rank 1: got %ld\n", cfg.count);
	fflush(stdout);
	tc_sync_post("done.1");
	tc_sync_wait(cfg.timeout, "end");
	shf_close(c);
	return 0;
}

/* Rank 0 of modes lost and left: count broadcasts numbered 0.., each must
 * be taken; posts after_first (unless NULL) once the first was. */
static void bcast_numbered(struct shf_ctx *c, const char *after_first)
{
	uint8_t *buf = calloc(1, cfg.size);
	if (!buf)
		tc_fail("out of memory");
	for (long k = 0; k < cfg.count; k++) {
		fill(buf, k);
		int r = shf_bcast(c, T_BCAST, buf, cfg.size, 0);
		if (r)
			tc_fail("broadcast %ld: %s (%s)", k, shf_strerror(r), shf_error_detail());
		if (k == 0 && after_first)
			tc_sync_post("%s", after_first);
	}
	free(buf);
}

static int mode_lost(void)
{
	bool victim = false;
	{
		/* the victim opens in poll mode with a small ring and never polls */
		const char *e = getenv("SHF_RANK");
		victim = e && atoi(e) == 2;
	}
	struct shf_ctx *c = open_ctx(victim ? 0 : 1, victim ? 128 * 1024 : 0);
	if (g_world != 3)
		tc_fail("mode lost needs world 3");
	if (victim) {
		tc_sync_post("ready.2");
		/* no library call at all: in poll mode every wait would deliver */
		int64_t end = tc_now_ms() + cfg.timeout;
		while (!tc_sync_exists("v-exit") && tc_now_ms() < end)
			tc_sleep_ms(20);
		_exit(0); /* its daemon is gone: nothing to close */
	}
	if (g_rank == 1) {
		return rank1_count_all(c);
	}
	/* rank 0 */
	tc_sync_wait(cfg.timeout, "ready.2");
	bcast_numbered(c, "started.0");
	int64_t t0 = tc_now_ms();
	int r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
	struct shf_stats st;
	shf_stats_get(c, &st);
	printf("rank 0: flush %s after %" PRId64 " ms, dropped_down %" PRIu64 ", dead %" PRIu64
	       "\n", r ? shf_strerror(r) : "ok", tc_now_ms() - t0, st.dropped_down, st.dropped_dead);
	fflush(stdout);
	if (r != -EHOSTDOWN)
		tc_fail("flush returned %d (%s), expected -EHOSTDOWN", r, shf_strerror(r));
	if (st.dropped_down < 1)
		tc_fail("no drop counted for the lost node");
	tc_sync_post("sent.0");
	tc_sync_wait(cfg.timeout, "end");
	shf_close(c);
	return 0;
}

/* ------------------------------------------------------------------- left */

static int mode_left(void)
{
	struct shf_ctx *c = open_ctx(1, 0);
	if (g_world != 3)
		tc_fail("mode left needs world 3");
	if (g_rank == 2) {
		tc_sync_post("ready.2");
		tc_sync_wait(cfg.timeout, "leave");
		int r = shf_close(c);
		if (r)
			tc_fail("shf_close: %s", shf_strerror(r));
		tc_sync_post("closed.2");
		return 0;
	}
	if (g_rank == 1)
		return rank1_count_all(c);
	/* rank 0 */
	tc_sync_wait(cfg.timeout, "go");
	bcast_numbered(c, NULL);
	int r = shf_flush(c, SHF_FLUSH_REMOTE, cfg.timeout);
	struct shf_stats st;
	shf_stats_get(c, &st);
	printf("rank 0: flush %s, dropped_down %" PRIu64 ", dead %" PRIu64 "\n",
	       r ? shf_strerror(r) : "ok", st.dropped_down, st.dropped_dead);
	fflush(stdout);
	if (r != -ESRCH)
		tc_fail("flush returned %d (%s), expected -ESRCH: rank 2 left before the broadcasts", r,
		     shf_strerror(r));
	if (st.dropped_dead != (uint64_t)cfg.count || st.dropped_down != 0)
		tc_fail("dropped_dead %" PRIu64 ", dropped_down %" PRIu64 ": expected %ld and 0 (one "
		     "copy per broadcast for the rank that left)", st.dropped_dead, st.dropped_down,
		     cfg.count);
	tc_sync_post("sent.0");
	tc_sync_wait(cfg.timeout, "end");
	shf_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bc-client exact|lost|left|many-check|many-threads|many-to|many-sizes|more-echo [key=value ...]\n");
		return 2;
	}
	cfg.mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *eq = strchr(a, '=');
		if (!eq) {
			fprintf(stderr, "bc-client: bad argument %s\n", a);
			return 2;
		}
		long v = strtol(eq + 1, NULL, 10);
		if (!strncmp(a, "per_node=", 9))
			cfg.per_node = (int)v;
		else if (!strncmp(a, "ops=", 4))
			cfg.ops = v;
		else if (!strncmp(a, "count=", 6))
			cfg.count = v;
		else if (!strncmp(a, "size=", 5))
			cfg.size = (uint32_t)v;
		else if (!strncmp(a, "info=", 5))
			cfg.info = (int)v;
		else if (!strncmp(a, "timeout=", 8))
			cfg.timeout = (int)v;
		else if (!strncmp(a, "many=", 5))
			cfg.many = (int)v;
		else if (!strncmp(a, "more=", 5))
			cfg.more = (int)v;
		else if (!strncmp(a, "batchcb=", 8))
			cfg.batchcb = (int)v;
		else if (!strncmp(a, "poll=", 5))
			cfg.poll = (int)v;
		else if (!strncmp(a, "threads=", 8))
			cfg.threads = (int)v;
		else {
			fprintf(stderr, "bc-client: unknown argument %s\n", a);
			return 2;
		}
	}
	if (cfg.size < sizeof(struct bmsg) || cfg.per_node < 1)
		return 2;
	tc_setup("bc-client", &g_rank);
	if (!strcmp(cfg.mode, "exact"))
		return mode_exact();
	if (!strcmp(cfg.mode, "many-check"))
		return mode_many_check();
	if (!strcmp(cfg.mode, "many-threads"))
		return mode_many_threads();
	if (!strcmp(cfg.mode, "many-to"))
		return mode_many_to();
	if (!strcmp(cfg.mode, "many-sizes"))
		return mode_many_sizes();
	if (!strcmp(cfg.mode, "more-echo"))
		return mode_more_echo();
	if (!strcmp(cfg.mode, "lost"))
		return mode_lost();
	if (!strcmp(cfg.mode, "left"))
		return mode_left();
	fprintf(stderr, "bc-client: unknown mode %s\n", cfg.mode);
	return 2;
}
