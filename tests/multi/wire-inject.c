/* SPDX-License-Identifier: MIT */
/*
 * tests/multi/wire-inject.c - a fake node: it opens its own fabric endpoint
 * (daemon/fabric.c) at an address that a static rendezvous lists as node
 * `me`, keeps itself alive with heartbeats, and speaks the wire protocol
 * (proto/wire.h) to real daemons: badly on purpose, or in an order no real
 * daemon would choose.
 *
 *   wire-inject --me ID --nodes N --bind HOST:PORT --peer ID=HOST:PORT...
 *               [--hb-ms MS] [--timeout MS] MODE [ARGS]
 *
 * Modes:
 *   garbage T     send node T the malformed set below, one message each,
 *                 and print "sent N counted" (each must raise T's
 *                 stats.daemon.wire_bad by exactly one); then, when the
 *                 sync point "oversize" appears, a message larger than any
 *                 receive buffer (not counted: the provider truncates it);
 *                 keep heartbeating until "inject-exit" appears.
 *   epochleave JOB A B
 *                 play rank 2 of JOB (world 3; ranks 0 and 1 live on
 *                 daemons A and B): announce it, answer the epoch's PLACED
 *                 step to both, then the DRAINED step to B only; wait until
 *                 B reports that rank 1 left (B finished the epoch and its
 *                 rank closed), wait `--gap-ms`, then send DRAINED to A.
 *                 Every node's contribution to the epoch was made before
 *                 rank 1 left, so rank 0's epoch on A must succeed.
 *                 --order benign: DRAINED to A first, to B gap-ms later
 *                 (the control case).
 *
 * Sync points are files in $SHF_TEST_SYNC.  Exit 0, 1 on failure, 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/fabric.h"
#include "proto/wire.h"

#define MAX_NODES 16

#define FAIL(...)                                                                      \
	do {                                                                           \
		fprintf(stderr, "wire-inject: FAIL: ");                                \
		fprintf(stderr, __VA_ARGS__);                                          \
		fputc('\n', stderr);                                                   \
		exit(1);                                                               \
	} while (0)

static struct {
	struct shd_fabric *f;
	struct shd_fabric_cb cb;
	uint32_t me, n;
	uint64_t incarnation;
	int hb_ms, timeout, gap_ms;
	bool in_order;                            /* epochleave: the benign order */
	int64_t next_hb;
	const char *sync;
	/* what came in */
	uint64_t bad_in;                          /* messages a daemon should never send */
	uint64_t placed_from[MAX_NODES], drained_from[MAX_NODES];
	uint64_t epoch_no;                        /* epoch number the daemons use */
	bool left[MAX_NODES];                     /* a LEAVE came from that node */
	uint64_t job_hash;                        /* epochleave: our job */
	uint64_t recv_seq[MAX_NODES];             /* batches from each node, to ACK */
	uint64_t send_errors;
} g = {.hb_ms = 100, .timeout = 30000, .gap_ms = 300};

static void usage(const char *why) __attribute__((noreturn));
static void usage(const char *why)
{
	fprintf(stderr, "wire-inject: %s\n"
		"usage: wire-inject --me ID --nodes N --bind HOST:PORT --peer ID=HOST:PORT...\n"
		"                   [--hb-ms MS] [--timeout MS] [--gap-ms MS] [--order benign]\n"
		"                   garbage T | epochleave JOB A B\n", why);
	exit(2);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool sync_exists(const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", g.sync, name);
	return access(path, F_OK) == 0;
}

static void sync_post(const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", g.sync, name);
	FILE *f = fopen(path, "w");
	if (!f || fclose(f) != 0)
		FAIL("cannot post %s", path);
}

/* ------------------------------------------------------------ fabric glue */

static void send_raw(uint32_t node, const void *buf, size_t len);

static int on_recv(void *arg, uint32_t node, void *buf, size_t len)
{
	(void)arg;
	struct shf_wire_hdr h;
	int r = shf_wire_check(buf, len, g.n, g.me, &h);
	if (r < 0 || (node != SHD_FABRIC_NODE_UNKNOWN && node != h.src_node)) {
		g.bad_in++;
		fprintf(stderr, "wire-inject: a daemon sent a bad %zu-byte message (%d)\n", len, r);
		return 0;
	}
	uint32_t s = h.src_node;
	switch (h.kind) {
	case SHF_WIRE_EPOCH:
		if (h.u.epoch.job_hash != g.job_hash)
			break;
		g.epoch_no = h.u.epoch.epoch;
		if (h.u.epoch.phase == SHF_WIRE_EPOCH_PLACED)
			g.placed_from[s]++;
		else
			g.drained_from[s]++;
		break;
	case SHF_WIRE_JOB_LEAVE:
		if (h.u.leave.job_hash == g.job_hash)
			g.left[s] = true;
		break;
	case SHF_WIRE_BATCH: {
		/* nobody should send to our ranks; acknowledge anyway so the
		 * sender is not left without credit */
		if (h.u.batch.seq == g.recv_seq[s] + 1)
			g.recv_seq[s]++;
		uint8_t a[SHF_WIRE_ACK_BYTES];
		struct shf_wire_ack ack = {g.recv_seq[s], 8, 0};
		long l = shf_wire_enc_ack(a, sizeof(a), g.me, s, &ack);
		if (l > 0)
			send_raw(s, a, (size_t)l);
		break;
	}
	default:
		break;
	}
	return 0;
}

/* Buffers handed to the fabric and not completed yet: freed after the
 * endpoint is closed if their completion never came (LeakSanitizer). */
static void **g_out;
static size_t g_nout, g_capout;

static void out_add(void *p)
{
	if (g_nout == g_capout) {
		size_t cap = g_capout ? 2 * g_capout : 64;
		void **q = realloc(g_out, cap * sizeof(*q));
		if (!q)
			FAIL("out of memory");
		g_out = q;
		g_capout = cap;
	}
	g_out[g_nout++] = p;
}

static void out_del(void *p)
{
	for (size_t i = 0; i < g_nout; i++)
		if (g_out[i] == p) {
			g_out[i] = g_out[--g_nout];
			return;
		}
}

static void on_send_done(void *arg, void *ctx, int status)
{
	(void)arg;
	out_del(ctx);
	free(ctx);
	if (status < 0)
		g.send_errors++;
}

static void on_error(void *arg, uint32_t node, int err, const char *msg)
{
	(void)arg;
	fprintf(stderr, "wire-inject: fabric error (node %d): %s: %s\n",
		node == SHD_FABRIC_NODE_UNKNOWN ? -1 : (int)node, strerror(-err), msg);
}

static void progress(int wait_ms)
{
	int r = shd_fabric_progress(g.f, &g.cb, NULL);
	if (r < 0)
		FAIL("shd_fabric_progress: %s", strerror(-r));
	if (r > 0 || wait_ms <= 0)
		return;
	if (shd_fabric_has_pending(g.f) && wait_ms > 2)
		wait_ms = 2;
	if (!shd_fabric_trywait(g.f))
		return;
	struct pollfd pfd = {.fd = shd_fabric_wait_fd(g.f), .events = POLLIN};
	poll(&pfd, 1, wait_ms);
}

/* Send a copy of buf (freed on completion); waits for a send slot. */
static void send_raw(uint32_t node, const void *buf, size_t len)
{
	void *copy = malloc(len ? len : 1);
	if (!copy)
		FAIL("out of memory");
	memcpy(copy, buf, len);
	int64_t end = now_ms() + g.timeout;
	for (;;) {
		int r = shd_fabric_send(g.f, node, copy, len, copy);
		if (r == 0 || r == 1) {
			out_add(copy);
			return;
		}
		if (r != -EAGAIN)
			FAIL("shd_fabric_send(%zu bytes to node %u): %s", len, node, strerror(-r));
		if (now_ms() > end)
			FAIL("no send slot for %d ms", g.timeout);
		progress(1);
	}
}

static void heartbeat_due(void)
{
	int64_t t = now_ms();
	if (t < g.next_hb)
		return;
	g.next_hb = t + g.hb_ms;
	for (uint32_t i = 0; i < g.n; i++) {
		if (i == g.me || !shd_fabric_has_node(g.f, i))
			continue;
		uint8_t b[SHF_WIRE_HEARTBEAT_BYTES];
		struct shf_wire_heartbeat hb = {(uint64_t)t * 1000000u, g.incarnation};
		long l = shf_wire_enc_heartbeat(b, sizeof(b), g.me, i, &hb);
		if (l <= 0)
			FAIL("encode heartbeat: %ld", l);
		send_raw(i, b, (size_t)l);
	}
}

/* Keep the endpoint going (progress + heartbeats) for ms, or until done(). */
static bool pump(int ms, bool (*done)(void))
{
	int64_t end = now_ms() + ms;
	for (;;) {
		heartbeat_due();
		if (done && done())
			return true;
		if (now_ms() >= end)
			return false;
		progress(5);
	}
}

/* ------------------------------------------------------------ garbage */

/* A valid heartbeat from me to t, as raw bytes (32). */
static void make_hb(uint8_t *b, uint32_t src, uint32_t dst, uint64_t incarnation)
{
	struct shf_wire_heartbeat hb = {1, incarnation};
	long l = shf_wire_enc_heartbeat(b, SHF_WIRE_HEARTBEAT_BYTES, src, dst, &hb);
	if (l != SHF_WIRE_HEARTBEAT_BYTES)
		FAIL("encode heartbeat %u->%u: %ld", src, dst, l);
}

/* A valid one-record batch me -> t of seq; returns its length. */
static size_t make_batch(uint8_t *b, size_t cap, uint32_t t, uint64_t seq, uint32_t paylen)
{
	struct shf_wire_batch_enc e;
	uint8_t payload[256];
	memset(payload, 0x5a, sizeof(payload));
	if (shf_wire_batch_begin(&e, b, cap, g.me, t, shf_wire_job_hash("wire-inject-nojob")) != 0 ||
	    shf_wire_batch_put(&e, 0, 0, 7, payload, paylen) != 0)
		FAIL("encode batch");
	size_t l = shf_wire_batch_end(&e, seq);
	if (!l)
		FAIL("batch_end");
	return l;
}

static int mode_garbage(uint32_t t)
{
	uint8_t b[1024];
	unsigned counted = 0;
	size_t l;
	uint32_t other = 0; /* a real node that is neither t nor me */
	while (other == t || other == g.me)
		other++;
	if (other >= g.n)
		FAIL("garbage needs at least 3 nodes (the target, another real node, me)");
	/* be known as alive first: the checks that come after the header
	 * (batch records, ACK bounds, duplicates) only run for a live peer */
	pump(500, NULL);

	/* 1. noise */
	for (size_t i = 0; i < 64; i++)
		b[i] = (uint8_t)(i * 37 + 11);
	shf_wire_put32(b, 0xdeadbeefu);
	send_raw(t, b, 64), counted++;
	/* 2. bad magic */
	make_hb(b, g.me, t, g.incarnation);
	shf_wire_put32(b, SHF_WIRE_MAGIC ^ 0x01000000u);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 3. bad version */
	make_hb(b, g.me, t, g.incarnation);
	shf_wire_put16(b + 4, SHF_WIRE_VERSION + 1);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 4. unknown kind */
	make_hb(b, g.me, t, g.incarnation);
	shf_wire_put16(b + 6, 99);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 5. a kind with the wrong length */
	memset(b, 0, sizeof(b));
	make_hb(b, g.me, t, g.incarnation);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES + 8), counted++;
	/* 6. shorter than any header */
	send_raw(t, b, 1), counted++;
	/* 7. addressed to another node */
	make_hb(b, g.me, other, g.incarnation);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 8. src == dst */
	make_hb(b, g.me, t, g.incarnation);
	shf_wire_put32(b + 8, t);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 9. src out of range */
	make_hb(b, g.me, t, g.incarnation);
	shf_wire_put32(b + 8, g.n + 5);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 10. a forged source: a valid heartbeat of `other` with a new
	 * incarnation.  Taken at face value it would declare `other` restarted,
	 * hence down, and the real traffic would fail. */
	make_hb(b, other, t, 0x1234567u);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 11. a truncated batch: its header promises more than arrives */
	l = make_batch(b, sizeof(b), t, 1, 100);
	send_raw(t, b, 64), counted++;
	/* 12. a record whose length runs past the end of the batch */
	l = make_batch(b, sizeof(b), t, 1, 104);
	shf_wire_put32(b + SHF_WIRE_BATCH_HDR + 12, 4096);
	send_raw(t, b, l), counted++;
	/* 13. count says two records, there is one */
	l = make_batch(b, sizeof(b), t, 1, 104);
	shf_wire_put32(b + 32, 2);
	send_raw(t, b, l), counted++;
	/* 14. an epoch step of an unknown phase */
	{
		struct shf_wire_epoch ep = {shf_wire_job_hash("wire-inject-nojob"), 1, 1, 1};
		long el = shf_wire_enc_epoch(b, sizeof(b), g.me, t, &ep);
		if (el != SHF_WIRE_EPOCH_BYTES)
			FAIL("encode epoch");
		shf_wire_put32(b + 32, 3);
		send_raw(t, b, (size_t)el), counted++;
	}
	/* 15. a JOIN with flags set */
	{
		struct shf_wire_join j = {0};
		struct shf_wire_range rg = {0, 1};
		snprintf(j.name, sizeof(j.name), "wire-inject-nojob");
		j.world = 1;
		long jl = shf_wire_enc_join(b, sizeof(b), g.me, t, &j, &rg, 1);
		if (jl <= 0)
			FAIL("encode join");
		shf_wire_put32(b + 36, 1);
		send_raw(t, b, (size_t)jl), counted++;
	}
	/* 16. an ACK for batches never sent to me */
	{
		struct shf_wire_ack a = {1000, 8, 0};
		long al = shf_wire_enc_ack(b, sizeof(b), g.me, t, &a);
		if (al != SHF_WIRE_ACK_BYTES)
			FAIL("encode ack");
		send_raw(t, b, (size_t)al), counted++;
	}
	/* 17. a DROP report of zero records */
	{
		struct shf_wire_drop d = {shf_wire_job_hash("wire-inject-nojob"), 1, 0, 0, 1, -ESRCH};
		long dl = shf_wire_enc_drop(b, sizeof(b), g.me, t, &d);
		if (dl != SHF_WIRE_DROP_BYTES)
			FAIL("encode drop");
		shf_wire_put32(b + 40, 0);
		send_raw(t, b, (size_t)dl), counted++;
	}
	/* 18. a valid batch (for a job nobody has: dropped, not counted as
	 * bad), then the same batch again: a duplicate */
	l = make_batch(b, sizeof(b), t, 1, 104);
	send_raw(t, b, l);
	pump(100, NULL);
	send_raw(t, b, l), counted++;
	pump(200, NULL);
	printf("sent %u counted\n", counted);
	fflush(stdout);
	sync_post("inject-sent");

	int64_t end = now_ms() + 4 * (int64_t)g.timeout;
	bool oversized = false;
	while (!sync_exists("inject-exit")) {
		if (now_ms() > end)
			FAIL("never told to exit");
		if (!oversized && sync_exists("oversize")) {
			/* larger than every receive buffer: truncated at the receiver */
			size_t big = 256 * 1024;
			uint8_t *p = calloc(1, big);
			if (!p)
				FAIL("out of memory");
			make_hb(p, g.me, t, g.incarnation);
			send_raw(t, p, big);
			free(p);
			oversized = true;
			printf("sent one %zu-byte message\n", big);
			fflush(stdout);
			sync_post("oversize-sent");
		}
		pump(20, NULL);
	}
	if (g.bad_in)
		FAIL("the daemons sent %" PRIu64 " malformed messages", g.bad_in);
	return 0;
}

/* ------------------------------------------------------------ epochleave */

static uint32_t g_a, g_b;

static bool placed_both(void) { return g.placed_from[g_a] && g.placed_from[g_b]; }
static bool drained_both(void) { return g.drained_from[g_a] && g.drained_from[g_b]; }
static bool b_left(void) { return g.left[g_b]; }
static bool rank0_done(void) { return sync_exists("epoch.0"); }

static void send_epoch(uint32_t to, uint32_t phase)
{
	uint8_t b[SHF_WIRE_EPOCH_BYTES];
	struct shf_wire_epoch ep = {g.job_hash, g.epoch_no, phase, 1};
	long l = shf_wire_enc_epoch(b, sizeof(b), g.me, to, &ep);
	if (l != SHF_WIRE_EPOCH_BYTES)
		FAIL("encode epoch: %ld", l);
	send_raw(to, b, (size_t)l);
}

static int mode_epochleave(const char *job, uint32_t a, uint32_t bn)
{
	g_a = a;
	g_b = bn;
	if (a >= g.n || bn >= g.n || a == g.me || bn == g.me || a == bn)
		usage("epochleave: bad A/B");
	g.job_hash = shf_wire_job_hash(job);
	pump(300, NULL);
	/* rank 2 of the job lives here */
	uint8_t b[256];
	struct shf_wire_join j = {0};
	struct shf_wire_range rg = {2, 1};
	snprintf(j.name, sizeof(j.name), "%s", job);
	j.world = 3;
	j.uid = (uint32_t)getuid();
	for (uint32_t to = 0; to < g.n; to++) {
		if (to == g.me)
			continue;
		long l = shf_wire_enc_join(b, sizeof(b), g.me, to, &j, &rg, 1);
		if (l <= 0)
			FAIL("encode join: %ld", l);
		send_raw(to, b, (size_t)l);
	}
	printf("joined job %s as rank 2\n", job);
	if (!pump(g.timeout, placed_both))
		FAIL("no PLACED step from nodes %u and %u", a, bn);
	send_epoch(a, SHF_WIRE_EPOCH_PLACED);
	send_epoch(bn, SHF_WIRE_EPOCH_PLACED);
	printf("epoch %" PRIu64 ": PLACED sent to both\n", g.epoch_no);
	if (!pump(g.timeout, drained_both))
		FAIL("no DRAINED step from nodes %u and %u", a, bn);
	if (g.in_order) {
		/* control run: A gets its DRAINED before B's rank can leave */
		send_epoch(a, SHF_WIRE_EPOCH_DRAINED);
		pump(g.gap_ms, NULL);
		send_epoch(bn, SHF_WIRE_EPOCH_DRAINED);
		printf("DRAINED sent to node %u, %d ms later to node %u\n", a, g.gap_ms, bn);
		if (!pump(g.timeout, rank0_done))
			FAIL("rank 0 never finished its epoch");
		if (!pump(g.timeout, b_left))
			FAIL("node %u never reported rank 1 leaving", bn);
		sync_post("close.0"); /* rank 0 may leave now */
		pump(200, NULL);
		return 0;
	}
	send_epoch(bn, SHF_WIRE_EPOCH_DRAINED);
	printf("DRAINED sent to node %u only\n", bn);
	if (!pump(g.timeout, b_left))
		FAIL("node %u never reported rank 1 leaving", bn);
	printf("node %u: rank 1 left; DRAINED to node %u in %d ms\n", bn, a, g.gap_ms);
	pump(g.gap_ms, NULL);
	send_epoch(a, SHF_WIRE_EPOCH_DRAINED);
	if (!pump(g.timeout, rank0_done))
		FAIL("rank 0 never finished its epoch");
	sync_post("close.0");
	pump(200, NULL);
	if (g.bad_in)
		FAIL("the daemons sent %" PRIu64 " malformed messages", g.bad_in);
	return 0;
}

/* ------------------------------------------------------------ main */

static void split_hostport(char *s, char **host, char **port)
{
	char *c = strrchr(s, ':');
	if (!c)
		usage("HOST:PORT expected");
	*c = '\0';
	*host = s;
	*port = c + 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	char *bind = NULL, *peers[MAX_NODES] = {0};
	int i;
	g.me = UINT32_MAX;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *o = argv[i];
		if (i + 1 >= argc)
			usage(o);
		char *v = argv[++i];
		if (!strcmp(o, "--me")) g.me = (uint32_t)atoi(v);
		else if (!strcmp(o, "--nodes")) g.n = (uint32_t)atoi(v);
		else if (!strcmp(o, "--bind")) bind = v;
		else if (!strcmp(o, "--hb-ms")) g.hb_ms = atoi(v);
		else if (!strcmp(o, "--timeout")) g.timeout = atoi(v);
		else if (!strcmp(o, "--gap-ms")) g.gap_ms = atoi(v);
		else if (!strcmp(o, "--order")) g.in_order = !strcmp(v, "benign");
		else if (!strcmp(o, "--peer")) {
			char *eq = strchr(v, '=');
			int id = eq ? atoi(v) : -1;
			if (id < 0 || id >= MAX_NODES)
				usage("--peer ID=HOST:PORT");
			peers[id] = eq + 1;
		} else {
			usage(o);
		}
	}
	if (i >= argc || !bind || g.n < 2 || g.n > MAX_NODES || g.me >= g.n)
		usage("missing arguments");
	const char *s = getenv("SHF_TEST_SYNC");
	g.sync = s && *s ? s : ".";
	g.incarnation = ((uint64_t)getpid() << 20) ^ (uint64_t)now_ms() ^ 1u;

	char *host, *port;
	split_hostport(bind, &host, &port);
	struct shd_fabric_opts fo = {.node = host, .service = port, .max_nodes = g.n,
				     .buf_bytes = 512 * 1024};
	char err[256];
	int r = shd_fabric_open(&fo, &g.f, err, sizeof(err));
	if (r == -ENODATA) {
		fprintf(stderr, "wire-inject: SKIP: no libfabric provider: %s\n", err);
		return 77;
	}
	if (r < 0)
		FAIL("fabric open %s:%s: %s", host, port, err);
	for (uint32_t k = 0; k < g.n; k++) {
		if (k == g.me || !peers[k])
			continue;
		char *ph, *pp;
		split_hostport(peers[k], &ph, &pp);
		if ((r = shd_fabric_insert_svc(g.f, ph, pp, k)) < 0)
			FAIL("insert node %u (%s:%s): %s", k, ph, pp, strerror(-r));
	}
	g.cb.on_recv = on_recv;
	g.cb.on_send_done = on_send_done;
	g.cb.on_error = on_error;

	const char *mode = argv[i];
	int rc;
	if (!strcmp(mode, "garbage") && i + 1 < argc)
		rc = mode_garbage((uint32_t)atoi(argv[i + 1]));
	else if (!strcmp(mode, "epochleave") && i + 3 < argc)
		rc = mode_epochleave(argv[i + 1], (uint32_t)atoi(argv[i + 2]),
				     (uint32_t)atoi(argv[i + 3]));
	else
		usage("unknown mode or missing arguments");
	/* let the last sends complete, then free whatever never did */
	for (int64_t end = now_ms() + 1000; g_nout && now_ms() < end;)
		progress(5);
	shd_fabric_close(g.f);
	for (size_t k = 0; k < g_nout; k++)
		free(g_out[k]);
	free(g_out);
	return rc;
}
