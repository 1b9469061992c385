/* SPDX-License-Identifier: MIT */
/*
 * tests/multi/wire-inject.c - a fake node: it opens its own fabric endpoint
 * (daemon/net/fabric.c) at an address that a static rendezvous lists as node
 * `me`, keeps itself alive with heartbeats, and speaks the wire protocol
 * (proto/wire.h) to real daemons: badly on purpose, or in an order no real
 * daemon would choose.
 *
 * Sessions (docs/protocol-wire.md): toward each daemon it keeps a random
 * tag of its own and the daemon's tag, learned from the daemon's
 * heartbeats.  Before injecting it does the handshake with its targets:
 * heartbeats (my tag, 0) until the daemon's heartbeat carries my tag, then
 * at once a heartbeat (my tag, its tag), which makes the daemon UP; every
 * later message follows that one on the same connection, so the daemon
 * handles it as UP.  Every message it means to be well-formed is stamped
 * (my tag, its tag); so are the malformed ones (the stamp only writes bytes
 * 16..31, never past a message's length), so that each keeps exactly the one
 * defect it is meant to have.  What the daemons send it must belong to the
 * current sessions too (a heartbeat with a new tag of the daemon's starts a
 * new one); anything else fails the run.
 *
 *   wire-inject --me ID --nodes N --bind HOST:PORT --peer ID=HOST:PORT...
 *               [--key FILE] [--hb-ms MS] [--timeout MS] MODE [ARGS]
 *
 * --key FILE: the cluster key (daemon/net/auth.h): its heartbeats carry the
 * handshake MAC as a daemon's do, so daemons that have the key take it as
 * a member.  Without it, daemons with a key never do.
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
 *                 daemons A and B) on the lowest node id, the root of the
 *                 job's epoch tree (daemon/epoch.c; A and B are its
 *                 children): announce it; when both sent their PLACED
 *                 count up (EPOCH_UP), send the phase's completion
 *                 (EPOCH_DOWN) to both; when both sent DRAINED up, send
 *                 its completion to B only; wait until B reports that rank
 *                 1 left (B finished the epoch and its rank closed), wait
 *                 `--gap-ms`, then send it to A.  Every node's
 *                 contribution to the epoch was made before rank 1 left,
 *                 so rank 0's epoch on A must succeed.
 *                 --order benign: the completion to A first, to B gap-ms
 *                 later (the control case).
 *
 *   withdrawmap JOB A B
 *                 JOB (world 3: rank 0 on A, rank 1 on B, rank 2 here) has
 *                 this node as its home once up, A before: a session with
 *                 A only (A moves here; the map to A), then, once
 *                 "opened.0" exists, with B (B withdraws its ranks from A,
 *                 which has the map); the map to B, "mapped"; heartbeats
 *                 until "inject-exit".
 *   leavemix JOB A
 *                 play ranks 1 and 2 of JOB (world 3; rank 0 lives on
 *                 daemon A) on the lowest node id; once A counted rank 0
 *                 into an epoch, send A one JOB_LEAVE: rank 1 with -ESRCH,
 *                 rank 2 with 0 (the culprit); wait for "epoch.0".
 *
 *   straymap T JOB WORLD
 *                 send node T the final JOB_MAP of a job T has no record of
 *                 (its ranks all left before the map came): WORLD ranks
 *                 round-robin over all nodes, one entry; count T's leaves
 *                 of the job to us for 1.5 s and print them.
 *
 *   mapto T NODE JOB [NODE JOB ...]
 *                 play the home of each JOB (world 2): do the handshake
 *                 with T only; for each pair in turn, wait for the sync
 *                 point "map.JOB", send T the final JOB_MAP of JOB with
 *                 rank 0 on T and rank 1 on NODE, and post "mapped.JOB";
 *                 keep heartbeating until "inject-exit".  A NODE that
 *                 nobody plays has no session with T, so T must hold its
 *                 rank 0 back from READY (daemon/job.c).
 *   replay T MS   a member (--key) that dies: after 1.5 s of its session
 *                 with T, only its recorded heartbeats are sent again from
 *                 its address for MS ms (mode_replay); T must declare it
 *                 down within its peer timeout all the same.
 *   forge T CLAIM JOB RANK (CLAIM: a node id below 2^20, or FIRST-LAST)
 *                 a non-member (bound to any address the rendezvous did not
 *                 give out): claiming to be node CLAIM, send node T one
 *                 message of every kind with session tags it cannot know
 *                 (a heartbeat opening a new session with a new
 *                 incarnation, one naming a made-up tag of T's, a batch
 *                 with a record for rank RANK of JOB, an ACK, a JOIN and a
 *                 LEAVE of JOB, an EPOCH and a DROP), then print "forged N"
 *                 and exit.  A member that took any of it at face value
 *                 would lose its session with CLAIM or place the record.
 *   squat T JOB RANK
 *                 play node `me` (its listed address: a vacant member slot)
 *                 without the cluster key (or with --key, a wrong one):
 *                 try the handshake with T for --hs-ms, then send T a JOIN
 *                 of JOB (a phantom rank RANK + 1), a batch with a record
 *                 for RANK of JOB, a LEAVE, an EPOCH, an ACK and a DROP in
 *                 whatever session it has; print "session yes|no" and
 *                 "squatted N"; keep heartbeating until "inject-exit".
 *
 *   early T       (--key) the handshake with T left one step short, as when
 *                 the heartbeat that ends it is lost (mode_early): two
 *                 batches of the coming session and one of another tag
 *                 go before the proof; prints "woken yes|no" (T asked
 *                 for the proof with HB_WAKE) and "acked N" (T took the
 *                 two once up: N = 2), posts "early-sent", heartbeats
 *                 until "inject-exit".
 *
 *   bundle T D    (with --2d: the daemons route in 2-D, node `me` is in T's
 *                 row or column, D in T's other line, so that me -> D goes
 *                 through T) FWD_BUNDLE (routing=2d, daemon/net/tx.c): do
 *                 the handshake with T, send it a well-formed bundle of two
 *                 FWDs, each carrying a heartbeat probe of mine for D, and
 *                 wait until D's answer comes back (forwarded) while T's
 *                 session stays; then three malformed bundles, each in a
 *                 new session with T: a zero count, an item whose length
 *                 runs past the end, a bundle inside a bundle.  T must cut
 *                 the session after each (a new tag of T's, handshaken
 *                 again).  Prints "sent N cut" and posts "bundle-sent";
 *                 keeps heartbeating until "inject-exit".
 *
 * --2d: its heartbeats carry the 2-D routing flag (SHF_WIRE_HB_2D).
 *
 * Sync points are files in $SHF_TEST_SYNC.  Exit 0, 1 on failure, 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "daemon/net/auth.h"
#include "daemon/net/fabric.h"
#include "proto/wire.h"
#include "tests/lib/check.h"

#define MAX_NODES 16

static struct {
	struct shd_fabric *f;
	struct shd_fabric_cb cb;
	uint32_t me, n;
	uint64_t incarnation;
	int hb_ms, timeout, gap_ms, hs_ms;
	bool in_order;                            /* epochleave: the benign order */
	bool no_hb;                               /* forge: no heartbeats of its own */
	bool grid;                                /* --2d: heartbeats say routing=2d */
	uint32_t fwd_from;                        /* bundle: the node whose answer
						     we wait for through T */
	bool fwd_answered;                        /* ... came, naming my tag */
	int64_t next_hb;
	const char *sync;
	/* what came in */
	uint64_t bad_in;                          /* messages a daemon should never send */
	uint64_t placed_from[MAX_NODES], drained_from[MAX_NODES];
	uint64_t epoch_no;                        /* epoch number the daemons use */
	bool left[MAX_NODES];                     /* a LEAVE came from that node */
	uint32_t leaves[MAX_NODES];               /* straymap: LEAVEs of our job from it */
	bool joined[MAX_NODES];                   /* epochleave: its JOB_JOIN came (we are
						     the job's home) */
	struct shf_wire_range joined_rg[MAX_NODES]; /* ... its first range */
	uint64_t job_hash;                        /* epochleave: our job */
	uint64_t recv_seq[MAX_NODES];             /* batches from each node, to ACK */
	uint64_t send_errors;
	/* sessions, per daemon */
	uint64_t my_session[MAX_NODES];           /* my tag toward it: random, != 0 */
	uint64_t peer_session[MAX_NODES];         /* its tag; 0 until its heartbeat */
	bool knows_me[MAX_NODES];                 /* its heartbeat carried my tag */
	uint64_t stale_in;                        /* its messages outside the session */
	struct shd_auth *auth;                    /* --key; NULL: no MAC */
	uint8_t my_nonce[MAX_NODES][SHD_AUTH_NONCE_BYTES];
	uint8_t peer_nonce[MAX_NODES][SHD_AUTH_NONCE_BYTES]; /* from its heartbeats */
	bool have_peer_nonce[MAX_NODES];
	uint32_t hb_ctr[MAX_NODES]; /* heartbeats sent to each (HB_CTR counter) */
	/* early: the handshake with early_t left unfinished on purpose */
	uint32_t early_t;                         /* UINT32_MAX: none */
	bool early_open;                          /* its handshake's end not sent yet */
	bool woken;                               /* it sent HB_WAKE meanwhile */
	uint64_t acked[MAX_NODES];                /* the highest ACK from each */
} g = {.hb_ms = 100, .timeout = 30000, .gap_ms = 300, .hs_ms = 3000, .early_t = UINT32_MAX};

static void usage(const char *why) __attribute__((noreturn));
static void usage(const char *why)
{
	fprintf(stderr, "wire-inject: %s\n"
		"usage: wire-inject --me ID --nodes N --bind HOST:PORT --peer ID=HOST:PORT...\n"
		"                   [--key FILE] [--hb-ms MS] [--timeout MS] [--gap-ms MS] [--order benign]\n"
		"                   [--hs-ms MS] [--2d 0|1]\n"
		"                   garbage T | epochleave JOB A B | forge T CLAIM JOB RANK |\n"
		"                   squat T JOB RANK | early T | bundle T D (with --2d 1)\n", why);
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
static void send_msg(uint32_t node, void *buf, size_t len);
static void send_heartbeat(uint32_t node, int64_t t_ms);

/* Daemons this node neither heartbeats nor answers yet (withdrawmap: no
 * session with them until it chooses). */
static bool g_mute[MAX_NODES];

/* Session bookkeeping for a checked message from daemon s; true when it
 * belongs to the current session and is to be used. */
static bool session_take(uint32_t s, const struct shf_wire_hdr *h)
{
	uint64_t st = h->src_session, dt = h->dst_session;
	if (st == 0 || (dt != 0 && dt != g.my_session[s])) {
		g.stale_in++;
		fprintf(stderr, "wire-inject: node %u sent a %s of another session (%#" PRIx64
			" -> %#" PRIx64 ")\n", s, shf_wire_kind_name(h->kind), st, dt);
		return false;
	}
	if (h->kind == SHF_WIRE_HEARTBEAT) {
		bool news = false;
		memcpy(g.peer_nonce[s], h->u.heartbeat.nonce, SHD_AUTH_NONCE_BYTES);
		g.have_peer_nonce[s] = true;
		if (st != g.peer_session[s]) { /* its first, or a new session of its */
			if (g.peer_session[s])
				fprintf(stderr, "wire-inject: node %u started a new session\n", s);
			g.peer_session[s] = st;
			g.knows_me[s] = false;
			news = true;
		}
		if (dt == g.my_session[s] && !g.knows_me[s]) {
			g.knows_me[s] = true;
			news = true;
		}
		if (s == g.early_t && g.early_open) {
			/* early: the handshake's end waits; note a wake */
			if (h->u.heartbeat.flags & SHF_WIRE_HB_WAKE)
				g.woken = true;
			return true;
		}
		if (news && shd_fabric_has_node(g.f, s) && !g_mute[s]) /* answer at once, as a daemon does */
			send_heartbeat(s, now_ms());
		return true;
	}
	if (st != g.peer_session[s] || dt != g.my_session[s]) {
		/* only heartbeats may come before the session is agreed */
		g.stale_in++;
		fprintf(stderr, "wire-inject: node %u sent a %s outside the session (%#" PRIx64
			" -> %#" PRIx64 ")\n", s, shf_wire_kind_name(h->kind), st, dt);
		return false;
	}
	return true;
}

/* A FWD that reached me: is it the answer of g.fwd_from to my probe? */
static void fwd_seen(const struct shf_wire_hdr *h)
{
	struct shf_wire_hdr in;
	if (shf_wire_check(h->u.fwd.msg, h->u.fwd.len, g.n, g.me, &in) == 0 &&
	    in.kind == SHF_WIRE_HEARTBEAT && in.src_node == g.fwd_from &&
	    in.dst_session == g.my_session[g.fwd_from])
		g.fwd_answered = true;
}

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
	if (!session_take(s, &h))
		return 0;
	switch (h.kind) {
	case SHF_WIRE_FWD:
		fwd_seen(&h);
		break;
	case SHF_WIRE_FWD_BUNDLE: {
		uint32_t off = 0, ilen;
		const uint8_t *m;
		while (shf_wire_bundle_next(&h.u.bundle, &off, &m, &ilen)) {
			struct shf_wire_hdr f;
			if (shf_wire_check(m, ilen, g.n, g.me, &f) == 0)
				fwd_seen(&f);
		}
		break;
	}
	case SHF_WIRE_EPOCH_UP:
		if (h.u.epoch.job_hash != g.job_hash)
			break;
		g.epoch_no = h.u.epoch.epoch;
		if (h.u.epoch.phase == SHF_WIRE_EPOCH_PLACED)
			g.placed_from[s]++;
		else
			g.drained_from[s]++;
		break;
	case SHF_WIRE_JOB_LEAVE:
		if (h.u.leave.job_hash == g.job_hash) {
			g.left[s] = true;
			g.leaves[s]++;
		}
		break;
	case SHF_WIRE_JOB_JOIN:
		if (h.u.join.job_hash == g.job_hash) {
			g.joined[s] = true;
			g.joined_rg[s] = shf_wire_join_range(&h.u.join, 0);
		}
		break;
	case SHF_WIRE_ACK:
		if (h.u.ack.acked_seq > g.acked[s])
			g.acked[s] = h.u.ack.acked_seq;
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
			send_msg(s, a, (size_t)l);
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

/* Stamp an encoded message with the session of node and send it. */
static void send_msg(uint32_t node, void *buf, size_t len)
{
	if (len < SHF_WIRE_HDR)
		FAIL("send_msg: %zu bytes cannot be stamped", len);
	shf_wire_stamp(buf, g.my_session[node], g.peer_session[node]);
	send_raw(node, buf, len);
}

/* replay: the heartbeats sent while recording, as they went on the wire */
#define REC_MAX 256
static uint8_t g_rec[REC_MAX][SHF_WIRE_HEARTBEAT_BYTES];
static int g_nrec;
static bool g_recording, g_replaying;

/* A heartbeat of the session: (my tag, its tag or 0 while unknown). */
static void send_heartbeat(uint32_t node, int64_t t_ms)
{
	if (g_replaying)
		return; /* what replays has no key: nothing new */
	uint8_t b[SHF_WIRE_HEARTBEAT_BYTES];
	struct shf_wire_heartbeat hb = {.time_ns = (uint64_t)t_ms * 1000000u, .incarnation = g.incarnation};
	memcpy(hb.nonce, g.my_nonce[node], SHD_AUTH_NONCE_BYTES);
	/* early: probes only (its tag unsaid) until the handshake's end */
	uint64_t its = node == g.early_t && g.early_open ? 0 : g.peer_session[node];
	if (g.auth) { /* as daemon/net/post.c's shd_net_heartbeat() */
		hb.counter = ++g.hb_ctr[node];
		struct shd_auth_hb m = {g.me, node, g.my_session[node], its,
					g.my_nonce[node],
					g.have_peer_nonce[node] ? g.peer_nonce[node] : NULL, true,
					hb.counter};
		hb.flags = SHF_WIRE_HB_MAC | SHF_WIRE_HB_CTR |
			   (g.have_peer_nonce[node] ? SHF_WIRE_HB_ECHO : 0);
		shd_auth_mac(g.auth, &m, hb.mac);
	}
	if (g.grid)
		hb.flags |= SHF_WIRE_HB_2D;
	long l = shf_wire_enc_heartbeat(b, sizeof(b), g.me, node, &hb);
	if (l <= 0)
		FAIL("encode heartbeat: %ld", l);
	shf_wire_stamp(b, g.my_session[node], its);
	send_raw(node, b, (size_t)l);
	if (g_recording && g_nrec < REC_MAX)
		memcpy(g_rec[g_nrec++], b, sizeof(b)); /* (stamped by send_msg) */
}

static void heartbeat_due(void)
{
	int64_t t = now_ms();
	if (t < g.next_hb || g.no_hb)
		return;
	g.next_hb = t + g.hb_ms;
	for (uint32_t i = 0; i < g.n; i++) {
		if (i == g.me || !shd_fabric_has_node(g.f, i) || g_mute[i] ||
		    (i == g.early_t && g.early_open && g.knows_me[i]))
			continue;
		send_heartbeat(i, t);
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

/* ------------------------------------------------------------ sessions */

static const uint32_t *g_hs_nodes;
static size_t g_hs_n;

static bool handshaken(void)
{
	for (size_t i = 0; i < g_hs_n; i++)
		if (!g.knows_me[g_hs_nodes[i]] || !g.peer_session[g_hs_nodes[i]])
			return false;
	return true;
}

/* Do the handshake with each of nodes[]: wait until its heartbeat carried
 * my tag (its reply to mine); session_take() answered that one at once
 * with (my tag, its tag), which makes it UP.  Whatever is sent after this
 * follows that answer, so the daemon takes it in the UP state. */
static void handshake(const uint32_t *nodes, size_t nn)
{
	g_hs_nodes = nodes;
	g_hs_n = nn;
	g.next_hb = 0; /* the first heartbeats now */
	if (!pump(g.timeout, handshaken))
		FAIL("no session with the target daemons within %d ms", g.timeout);
	for (size_t i = 0; i < nn; i++)
		printf("session with node %u: mine %016" PRIx64 ", its %016" PRIx64 "\n", nodes[i],
		       g.my_session[nodes[i]], g.peer_session[nodes[i]]);
}

/* ------------------------------------------------------------ garbage */

/* A valid heartbeat from me to t, as raw bytes (48), not stamped. */
static void make_hb(uint8_t *b, uint32_t src, uint32_t dst, uint64_t incarnation)
{
	struct shf_wire_heartbeat hb = {.time_ns = 1, .incarnation = incarnation};
	long l = shf_wire_enc_heartbeat(b, SHF_WIRE_HEARTBEAT_BYTES, src, dst, &hb);
	if (l != SHF_WIRE_HEARTBEAT_BYTES)
		FAIL("encode heartbeat %u->%u: %ld", src, dst, l);
}

/* A valid one-record batch me -> t of seq, not stamped; returns its length. */
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

/* Stamp b (at least SHF_WIRE_HDR bytes of buffer) with the session of t. */
static void stamp(uint8_t *b, uint32_t t)
{
	shf_wire_stamp(b, g.my_session[t], g.peer_session[t]);
}

/* Keep answering (heartbeats) until the test posts "inject-exit". */
static int serve_until_exit(void)
{
	int64_t end = now_ms() + 4 * (int64_t)g.timeout;
	while (!sync_exists("inject-exit")) {
		if (now_ms() > end)
			FAIL("never told to exit");
		pump(20, NULL);
	}
	return 0;
}

static int mode_garbage(uint32_t t)
{
	uint8_t b[1024];
	unsigned counted = 0, stale = 0;
	size_t l;
	uint32_t other = 0; /* a real node that is neither t nor me */
	while (other == t || other == g.me)
		other++;
	if (other >= g.n)
		FAIL("garbage needs at least 3 nodes (the target, another real node, me)");
	/* be a peer in a session first: the checks that come after the header
	 * and the session (batch records, ACK bounds, duplicates) only run
	 * for an UP peer's messages of the current session */
	uint32_t both[2] = {t, other};
	handshake(both, 2);

	/* Each of 1-18 raises wire_bad by exactly one.  Those meant to fail
	 * shf_wire_check() are stamped with the session too (bytes 16..31, all
	 * inside them but the 1-byte one, which is not stamped): a session
	 * defect would be judged only after the check, so the one defect each
	 * has is what counts.  The well-formed ones (12, 13, 16, 18) must be of
	 * the session to reach the daemon's checks at all. */
	/* 1. noise (its bytes 16..31 too) */
	for (size_t i = 0; i < 64; i++)
		b[i] = (uint8_t)(i * 37 + 11);
	shf_wire_put32(b, 0xdeadbeefu);
	send_raw(t, b, 64), counted++;
	/* 2. bad magic */
	make_hb(b, g.me, t, g.incarnation);
	stamp(b, t);
	shf_wire_put32(b, SHF_WIRE_MAGIC ^ 0x01000000u);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 3. the previous version (a daemon of the last release): the log
	 * names both versions (wire-inject.sh) */
	make_hb(b, g.me, t, g.incarnation);
	stamp(b, t);
	shf_wire_put16(b + 4, SHF_WIRE_VERSION - 1);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 4. unknown kind */
	make_hb(b, g.me, t, g.incarnation);
	stamp(b, t);
	shf_wire_put16(b + 6, 99);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 5. a kind with the wrong length */
	memset(b, 0, sizeof(b));
	make_hb(b, g.me, t, g.incarnation);
	stamp(b, t);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES + 8), counted++;
	/* 6. shorter than any header (1 byte: nothing to stamp) */
	send_raw(t, b, 1), counted++;
	/* 7. addressed to another node */
	make_hb(b, g.me, other, g.incarnation);
	stamp(b, other);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 8. src == dst */
	make_hb(b, g.me, t, g.incarnation);
	stamp(b, t);
	shf_wire_put32(b + 8, t);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 9. src out of range */
	make_hb(b, g.me, t, g.incarnation);
	stamp(b, t);
	shf_wire_put32(b + 8, g.n + 5);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 10. a forged source: a valid heartbeat of `other` with a new
	 * incarnation, opening a new session (tag made up, dst 0).  Taken at
	 * face value it would end t's session with `other` (a restart), and
	 * the real traffic would fail. */
	make_hb(b, other, t, 0x1234567u);
	shf_wire_stamp(b, 0x5e55107u, 0);
	send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), counted++;
	/* 11. a truncated batch: its header promises more than arrives (the
	 * stamp is inside the 64 bytes sent) */
	l = make_batch(b, sizeof(b), t, 1, 100);
	stamp(b, t);
	send_raw(t, b, 64), counted++;
	/* 12. a record whose length runs past the end of the batch */
	l = make_batch(b, sizeof(b), t, 1, 104);
	shf_wire_put32(b + SHF_WIRE_BATCH_HDR + 12, 4096);
	send_msg(t, b, l), counted++;
	/* 13. count says two records, there is one */
	l = make_batch(b, sizeof(b), t, 1, 104);
	shf_wire_put32(b + offsetof(struct shf_wire_raw_batch, count), 2);
	send_msg(t, b, l), counted++;
	/* 14. an epoch step of an unknown phase */
	{
		struct shf_wire_epoch ep = {shf_wire_job_hash("wire-inject-nojob"), 1, 1, 1};
		long el = shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_UP, g.me, t, &ep);
		if (el != SHF_WIRE_EPOCH_BYTES)
			FAIL("encode epoch");
		shf_wire_put32(b + offsetof(struct shf_wire_raw_epoch, phase), 3);
		send_msg(t, b, (size_t)el), counted++;
	}
	/* 15. a JOIN with an unknown flag (bit 0, RUNNING, is defined) */
	{
		struct shf_wire_join j = {0};
		struct shf_wire_range rg = {0, 1};
		snprintf(j.name, sizeof(j.name), "wire-inject-nojob");
		j.world = 1;
		long jl = shf_wire_enc_join(b, sizeof(b), g.me, t, &j, &rg, 1);
		if (jl <= 0)
			FAIL("encode join");
		shf_wire_put32(b + offsetof(struct shf_wire_raw_join, flags), 2);
		send_msg(t, b, (size_t)jl), counted++;
	}
	/* 16. an ACK for batches never sent to me */
	{
		struct shf_wire_ack a = {1000, 8, 0};
		long al = shf_wire_enc_ack(b, sizeof(b), g.me, t, &a);
		if (al != SHF_WIRE_ACK_BYTES)
			FAIL("encode ack");
		send_msg(t, b, (size_t)al), counted++;
	}
	/* 17. a DROP report of zero records */
	{
		struct shf_wire_drop d = {shf_wire_job_hash("wire-inject-nojob"), 1, 0, 0, 1, -ESRCH};
		long dl = shf_wire_enc_drop(b, sizeof(b), g.me, t, &d);
		if (dl != SHF_WIRE_DROP_BYTES)
			FAIL("encode drop");
		shf_wire_put32(b + offsetof(struct shf_wire_raw_drop, count), 0);
		send_msg(t, b, (size_t)dl), counted++;
	}
	/* 18. a valid batch (for a job nobody has: dropped, not counted as
	 * bad), then the same batch again: a duplicate */
	l = make_batch(b, sizeof(b), t, 1, 104);
	send_msg(t, b, l);
	pump(100, NULL);
	send_msg(t, b, l), counted++;
	/* 19. well-formed, but of another session: an ACK for nothing (it
	 * would be wire_bad if it got that far) whose dst_session is a tag t
	 * never gave out.  It must be dropped as stale (wire_stale + 1) before
	 * anything looks at its body, and not count as bad. */
	{
		uint64_t madeup = g.peer_session[t] ^ UINT64_C(0x00c0ffee00c0ffee);
		if (madeup == 0) /* 0 would be "not known yet", not stale */
			madeup = ~g.peer_session[t];
		struct shf_wire_ack a = {1000, 8, 0};
		long al = shf_wire_enc_ack(b, sizeof(b), g.me, t, &a);
		if (al != SHF_WIRE_ACK_BYTES)
			FAIL("encode ack");
		shf_wire_stamp(b, g.my_session[t], madeup);
		send_raw(t, b, (size_t)al), stale++;
	}
	pump(200, NULL);
	printf("sent %u counted\n", counted);
	printf("sent %u stale\n", stale);
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
			stamp(p, t);
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
	if (g.stale_in)
		FAIL("the daemons sent %" PRIu64 " messages outside their sessions", g.stale_in);
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
	struct shf_wire_epoch ep = {g.job_hash, g.epoch_no, phase, 3};
	long l = shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_DOWN, g.me, to, &ep);
	if (l != SHF_WIRE_EPOCH_BYTES)
		FAIL("encode epoch: %ld", l);
	send_msg(to, b, (size_t)l);
}

/* The job's home as the daemons pick it when every node is up
 * (daemon/jobhome.c, home_pick: rendezvous hashing). */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint32_t home_of(uint64_t hash)
{
	uint32_t best = 0;
	uint64_t bs = 0;
	for (uint32_t i = 0; i < g.n; i++) {
		uint64_t s = mix64(hash ^ mix64((uint64_t)i + 1));
		if (i == 0 || s > bs) {
			bs = s;
			best = i;
		}
	}
	return best;
}

static bool joined_both(void) { return g.joined[g_a] && g.joined[g_b]; }

/* A session with every daemon the fabric knows: a JOIN, a MAP or an EPOCH
 * is taken only from an UP peer, in its current session. */
static void handshake_all(void)
{
	uint32_t peers[MAX_NODES];
	size_t np = 0;
	for (uint32_t to = 0; to < g.n; to++)
		if (to != g.me && shd_fabric_has_node(g.f, to))
			peers[np++] = to;
	handshake(peers, np);
}

/*
 * mapto T NODE JOB [NODE JOB ...]: the confirmation of 2-rank jobs whose
 * rank 1 lives on NODE, which may be a node T has no session with (one
 * nobody plays), as when a 2-D route's session is still on its way.
 */
static int mode_mapto(uint32_t t, char **pairs, int npairs)
{
	handshake(&t, 1);
	for (int k = 0; k + 1 < npairs; k += 2) {
		uint32_t node = (uint32_t)atoi(pairs[k]);
		const char *job = pairs[k + 1];
		char name[96];
		snprintf(name, sizeof(name), "map.%s", job);
		int64_t end = now_ms() + g.timeout;
		while (!sync_exists(name)) {
			if (now_ms() > end)
				FAIL("no sync point %s", name);
			pump(20, NULL);
		}
		struct shf_wire_map_ent e[2] = {{0, 1, t, 0, 0}, {1, 1, node, 0, 0}};
		struct shf_wire_map m = {.world = 2, .uid = (uint32_t)getuid(),
					 .flags = SHF_WIRE_MAP_FINAL};
		snprintf(m.name, sizeof(m.name), "%s", job);
		uint8_t mb[512];
		long l = shf_wire_enc_map(mb, sizeof(mb), g.me, t, &m, e, 2);
		if (l <= 0)
			FAIL("encode map: %ld", l);
		send_msg(t, mb, (size_t)l);
		printf("mapto: job %s: rank 0 on node %u, rank 1 on node %u\n", job, t, node);
		snprintf(name, sizeof(name), "mapped.%s", job);
		sync_post(name);
	}
	return serve_until_exit();
}

/*
 * straymap T JOB WORLD: send node T the final JOB_MAP of a job it has no
 * record of (as when its ranks of the job all left before the map came),
 * WORLD ranks dealt round-robin over every node: one compacted entry that T
 * expands into WORLD blocks, WORLD / nodes of them on each node.  T must tell
 * every other node of the map once (rank -1), not once per block; print how
 * many leaves came to us.
 */
static int mode_straymap(uint32_t t, const char *job, int32_t world)
{
	handshake_all();
	g.job_hash = shf_wire_job_hash(job);
	if (world % (int32_t)g.n)
		FAIL("world %d is not a multiple of %u nodes", world, g.n);
	struct shf_wire_map_ent e = {0, 1, 0, g.n - 1, (uint32_t)world / g.n - 1};
	struct shf_wire_map m = {.world = world, .uid = (uint32_t)getuid(),
				 .flags = SHF_WIRE_MAP_FINAL};
	snprintf(m.name, sizeof(m.name), "%s", job);
	uint8_t mb[512];
	long l = shf_wire_enc_map(mb, sizeof(mb), g.me, t, &m, &e, 1);
	if (l <= 0)
		FAIL("encode map: %ld", l);
	send_msg(t, mb, (size_t)l);
	pump(1500, NULL);
	printf("straymap: %u leave(s) of job %s from node %u\n", g.leaves[t], job, t);
	if (g.bad_in || g.stale_in)
		FAIL("the daemons sent %" PRIu64 " malformed messages, %" PRIu64
		     " outside their sessions", g.bad_in, g.stale_in);
	return 0;
}

/* Announce ranks rg of job (world 3) to the job's home when that is
 * another node (true), saying so as "as"; false: we are its home. */
static bool join_via_home(const char *job, struct shf_wire_range rg, const char *as)
{
	uint8_t b[256];
	struct shf_wire_join j = {.world = 3, .uid = (uint32_t)getuid()};
	snprintf(j.name, sizeof(j.name), "%s", job);
	uint32_t home = home_of(g.job_hash);
	if (home == g.me)
		return false;
	long l = shf_wire_enc_join(b, sizeof(b), g.me, home, &j, &rg, 1);
	if (l <= 0)
		FAIL("encode join: %ld", l);
	send_msg(home, b, (size_t)l);
	printf("joined job %s as %s (JOB_JOIN to its home, node %u)\n", job, as, home);
	return true;
}

static int mode_epochleave(const char *job, uint32_t a, uint32_t bn)
{
	g_a = a;
	g_b = bn;
	if (a >= g.n || bn >= g.n || a == g.me || bn == g.me || a == bn || g.me > a || g.me > bn)
		usage("epochleave: bad A/B (and --me must be the lowest node id: the tree's root)");
	g.job_hash = shf_wire_job_hash(job);
	handshake_all();
	/* rank 2 of the job lives here */
	if (!join_via_home(job, (struct shf_wire_range){2, 1}, "rank 2")) {
		/* we are the job's home: collect both joins, confirm with the map */
		if (!pump(g.timeout, joined_both))
			FAIL("no JOB_JOIN from nodes %u and %u", a, bn);
		struct shf_wire_map_ent e[3] = {{g.joined_rg[a].first, g.joined_rg[a].count, a, 0, 0},
						{g.joined_rg[bn].first, g.joined_rg[bn].count, bn, 0, 0},
						{2, 1, g.me, 0, 0}};
		/* sorted by first rank */
		for (int x = 0; x < 3; x++)
			for (int y = x + 1; y < 3; y++)
				if (e[y].first < e[x].first) {
					struct shf_wire_map_ent t = e[x];
					e[x] = e[y];
					e[y] = t;
				}
		struct shf_wire_map m = {.world = 3, .uid = (uint32_t)getuid(),
					 .flags = SHF_WIRE_MAP_FINAL};
		snprintf(m.name, sizeof(m.name), "%s", job);
		uint8_t mb[512];
		for (uint32_t to = 0; to < g.n; to++) {
			if (to == g.me)
				continue;
			long l = shf_wire_enc_map(mb, sizeof(mb), g.me, to, &m, e, 3);
			if (l <= 0)
				FAIL("encode map: %ld", l);
			send_msg(to, mb, (size_t)l);
		}
		printf("joined job %s as rank 2 (its home: the map sent to both)\n", job);
	}
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
		if (g.bad_in || g.stale_in)
			FAIL("the daemons sent %" PRIu64 " malformed messages, %" PRIu64
			     " outside their sessions", g.bad_in, g.stale_in);
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
	if (g.stale_in)
		FAIL("the daemons sent %" PRIu64 " messages outside their sessions", g.stale_in);
	return 0;
}

/* ------------------------------------------------------------ leavemix */

static bool joined_a(void) { return g.joined[g_a]; }
static bool placed_a(void) { return g.placed_from[g_a]; }

/*
 * leavemix JOB A: play ranks 1 and 2 of JOB (world 3; rank 0 lives on
 * daemon A) on the lowest node id, the root of the job's epoch tree.  Once
 * A counted rank 0 into an epoch (EPOCH_UP PLACED), send A one JOB_LEAVE
 * for both: rank 1 left with -ESRCH (after another rank had, as this node
 * knew it), rank 2 with 0 (the first to leave: the culprit).  The entries
 * are sorted by rank, so rank 1's comes first; A must still name rank 2
 * as the culprit of its failed epoch (docs/protocol-wire.md, JOB_LEAVE:
 * the entries are taken in the order their ranks left).
 */
static int mode_leavemix(const char *job, uint32_t a)
{
	g_a = a;
	if (a >= g.n || a == g.me || g.me > a)
		usage("leavemix: bad A (and --me must be the lowest node id: the tree's root)");
	g.job_hash = shf_wire_job_hash(job);
	handshake_all();
	uint8_t b[512];
	if (!join_via_home(job, (struct shf_wire_range){1, 2}, "ranks 1-2")) {
		if (!pump(g.timeout, joined_a))
			FAIL("no JOB_JOIN from node %u", a);
		struct shf_wire_map_ent e[2] = {{0, 1, a, 0, 0}, {1, 2, g.me, 0, 0}};
		struct shf_wire_map m = {.world = 3, .uid = (uint32_t)getuid(),
					 .flags = SHF_WIRE_MAP_FINAL};
		snprintf(m.name, sizeof(m.name), "%s", job);
		long l = shf_wire_enc_map(b, sizeof(b), g.me, a, &m, e, 2);
		if (l <= 0)
			FAIL("encode map: %ld", l);
		send_msg(a, b, (size_t)l);
		printf("joined job %s as ranks 1-2 (its home: the map sent)\n", job);
	}
	if (!pump(g.timeout, placed_a))
		FAIL("no PLACED step from node %u", a);
	struct shf_wire_leave lv = {.job_hash = g.job_hash, .world = 3};
	struct shf_wire_leave_ent le[2] = {{1, 1, -ESRCH, SHF_WIRE_NODE_NONE, g.me},
					   {2, 1, 0, SHF_WIRE_NODE_NONE, g.me}};
	long l = shf_wire_enc_leave(b, sizeof(b), g.me, a, &lv, le, 2);
	if (l <= 0)
		FAIL("encode leave: %ld", l);
	send_msg(a, b, (size_t)l);
	printf("one JOB_LEAVE to node %u: rank 1 (-ESRCH), rank 2 (0, the culprit)\n", a);
	if (!pump(g.timeout, rank0_done))
		FAIL("rank 0 never finished its epoch");
	pump(200, NULL);
	if (g.bad_in || g.stale_in)
		FAIL("the daemons sent %" PRIu64 " malformed messages, %" PRIu64
		     " outside their sessions", g.bad_in, g.stale_in);
	return 0;
}

/* ------------------------------------------------------------ withdrawmap */

static bool joined_b(void) { return g.joined[g_b]; }
static bool a_opened(void) { return sync_exists("opened.0"); }
static bool inject_exit(void) { return sync_exists("inject-exit"); }

/* The FINAL map of JOB (world 3: rank 0 on A, 1 on B, 2 here) to node to. */
static void withdrawmap_send(const char *job, uint32_t to)
{
	uint8_t b[512];
	struct shf_wire_map_ent e[3] = {{0, 1, g_a, 0, 0}, {1, 1, g_b, 0, 0}, {2, 1, g.me, 0, 0}};
	struct shf_wire_map m = {.world = 3, .uid = (uint32_t)getuid(), .flags = SHF_WIRE_MAP_FINAL};
	snprintf(m.name, sizeof(m.name), "%s", job);
	long l = shf_wire_enc_map(b, sizeof(b), g.me, to, &m, e, 3);
	if (l <= 0)
		FAIL("encode map: %ld", l);
	send_msg(to, b, (size_t)l);
}

/*
 * withdrawmap JOB A B: JOB (world 3: rank 0 on daemon A, rank 1 on B, rank
 * 2 here) has this node as its home once it is up, and A before (the
 * rendezvous hash: the driver picks such a name).  A session with A only:
 * A moves its ranks here (JOB_JOIN), and gets the FINAL map at once, while
 * B, which sees no session with this node yet, still has A as its home.
 * Once rank 0 runs on A ("opened.0"), a session with B: B moves its ranks
 * here too, withdrawing them from A, which took the map already.  Then B
 * gets the map; "mapped" is posted; heartbeats go on until "inject-exit".
 */
static int mode_withdrawmap(const char *job, uint32_t a, uint32_t bn)
{
	g_a = a;
	g_b = bn;
	if (a >= g.n || bn >= g.n || a == g.me || bn == g.me || a == bn)
		usage("withdrawmap: bad A/B");
	g.job_hash = shf_wire_job_hash(job);
	if (home_of(g.job_hash) != g.me)
		usage("withdrawmap: JOB's home must be this node");
	g_mute[bn] = true;
	handshake(&g_a, 1);
	if (!pump(g.timeout, joined_a))
		FAIL("no JOB_JOIN from node %u", a);
	withdrawmap_send(job, a);
	printf("the map of job %s to node %u\n", job, a);
	if (!pump(g.timeout, a_opened))
		FAIL("rank 0 never ran on node %u", a);
	g_mute[bn] = false;
	handshake(&g_b, 1);
	if (!pump(g.timeout, joined_b))
		FAIL("no JOB_JOIN from node %u", bn);
	/* its withdrawal from A went before that join: let it arrive */
	pump(300, NULL);
	withdrawmap_send(job, bn);
	printf("node %u moved its ranks here; the map to it\n", bn);
	sync_post("mapped");
	pump(g.timeout, inject_exit);
	if (g.bad_in || g.stale_in)
		FAIL("the daemons sent %" PRIu64 " malformed messages, %" PRIu64
		     " outside their sessions", g.bad_in, g.stale_in);
	return 0;
}

/* ------------------------------------------------------------ forge, squat */

/* One of every kind from `src` (claimed) to t, into job (rank for the
 * batch record, rank + 1 for the JOIN), each stamped (st, dt).  Returns how
 * many were sent. */
static unsigned send_every_kind(uint32_t src, uint32_t t, const char *job, int32_t rank,
				uint64_t st, uint64_t dt, bool with_hb)
{
	uint8_t b[1024];
	unsigned sent = 0;
	uint64_t jh = shf_wire_job_hash(job);
	long l;
	if (with_hb) {
		/* a new session of `src` with a new incarnation: a restart */
		make_hb(b, src, t, g.incarnation ^ 0x5a5a0000u);
		shf_wire_stamp(b, st, 0);
		send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), sent++;
		/* and one that names a tag of t's it made up */
		make_hb(b, src, t, g.incarnation ^ 0x5a5a0000u);
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, SHF_WIRE_HEARTBEAT_BYTES), sent++;
	}
	/* a batch with one record for a real rank of the job */
	{
		struct shf_wire_batch_enc e;
		uint8_t payload[64];
		memset(payload, 0xf0, sizeof(payload));
		if (shf_wire_batch_begin(&e, b, sizeof(b), src, t, jh) != 0 ||
		    shf_wire_batch_put(&e, rank, 0, 7, payload, sizeof(payload)) != 0)
			FAIL("encode batch");
		size_t bl = shf_wire_batch_end(&e, 1);
		if (!bl)
			FAIL("batch_end");
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, bl), sent++;
	}
	{
		struct shf_wire_ack a = {0, 8, 0};
		l = shf_wire_enc_ack(b, sizeof(b), src, t, &a);
		if (l <= 0)
			FAIL("encode ack");
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, (size_t)l), sent++;
	}
	{
		struct shf_wire_join j = {0};
		struct shf_wire_range rg = {rank + 1, 1};
		snprintf(j.name, sizeof(j.name), "%s", job);
		j.world = rank + 2;
		j.uid = (uint32_t)getuid();
		l = shf_wire_enc_join(b, sizeof(b), src, t, &j, &rg, 1);
		if (l <= 0)
			FAIL("encode join");
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, (size_t)l), sent++;
	}
	{
		struct shf_wire_leave lv = {.job_hash = jh, .world = rank + 2};
		struct shf_wire_leave_ent le = {0, rank + 2, -ECONNRESET, SHF_WIRE_NODE_NONE, src};
		l = shf_wire_enc_leave(b, sizeof(b), src, t, &lv, &le, 1);
		if (l <= 0)
			FAIL("encode leave");
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, (size_t)l), sent++;
	}
	{
		struct shf_wire_epoch ep = {jh, 1, SHF_WIRE_EPOCH_PLACED, 1};
		l = shf_wire_enc_epoch_kind(b, sizeof(b), SHF_WIRE_EPOCH_UP, src, t, &ep);
		if (l <= 0)
			FAIL("encode epoch");
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, (size_t)l), sent++;
	}
	{
		struct shf_wire_drop d = {jh, 1, 0, rank, 1, -ESRCH};
		l = shf_wire_enc_drop(b, sizeof(b), src, t, &d);
		if (l <= 0)
			FAIL("encode drop");
		shf_wire_stamp(b, st, dt);
		send_raw(t, b, (size_t)l), sent++;
	}
	return sent;
}

static int mode_forge(uint32_t t, const char *claims, const char *job, int32_t rank)
{
	/* CLAIM is only written into headers: any id the target's set may
	 * have (its max_nodes), not just this injector's --nodes; FIRST-LAST
	 * claims each id of the range in turn */
	char *end;
	unsigned long first = strtoul(claims, &end, 10), last = first;
	if (*end == '-')
		last = strtoul(end + 1, &end, 10);
	if (*end || last < first || last >= (1u << 20) || t >= g.n ||
	    (t >= first && t <= last) || !shd_fabric_has_node(g.f, t))
		usage("forge: bad T or CLAIM (T needs --peer; CLAIM or FIRST-LAST, not T)");
	uint64_t st = g.my_session[t], dt = st * UINT64_C(0x9e3779b97f4a7c15) | 1u;
	g.no_hb = true; /* exactly what it says it sent */
	unsigned sent = 0;
	for (unsigned long claim = first; claim <= last; claim++)
		sent += send_every_kind((uint32_t)claim, t, job, rank, st, dt, true);
	pump(300, NULL);
	printf("forged %u\n", sent);
	return 0;
}

static uint32_t g_sq;
static bool squat_up(void) { return g.knows_me[g_sq] && g.peer_session[g_sq]; }

static int mode_squat(uint32_t t, const char *job, int32_t rank)
{
	if (t >= g.n || t == g.me || !shd_fabric_has_node(g.f, t))
		usage("squat: bad T (needs --peer)");
	g_sq = t;
	g.next_hb = 0;
	bool up = pump(g.hs_ms, squat_up);
	printf("session %s\n", up ? "yes" : "no");
	unsigned sent = send_every_kind(g.me, t, job, rank, g.my_session[t], g.peer_session[t],
					false);
	pump(300, NULL);
	printf("squatted %u\n", sent);
	fflush(stdout);
	sync_post("squat-sent");
	return serve_until_exit();
}

/* ------------------------------------------------------------ early */

static bool early_known(void) { return g.knows_me[g.early_t] && g.peer_session[g.early_t]; }
static bool early_woken(void) { return g.woken; }
static bool early_acked(void) { return g.acked[g.early_t] >= 2; }

/* early T: the handshake with T (a member, --key) left one step short,
 * as when the heartbeat that ends it is lost on the way (routing=2d: an
 * intermediate drops heartbeats for a node it has no session with yet):
 * probe T until its heartbeat carries my tag (T is JOINING), then, in
 * that session and before the heartbeat that proves the key, send T two
 * one-record batches (seq 1 and 2, for a job T does not know: each record
 * comes back as a DROP, each batch is acknowledged) and one more (seq 3)
 * stamped with another tag of mine (stale: never taken).  Wait up to
 * 2 s for T's heartbeat with HB_WAKE ("answer me"), then send the
 * proving heartbeat and wait up to 3 s for T to acknowledge seq 2.
 * Prints "woken yes|no" and "acked N"; posts "early-sent"; heartbeats
 * until "inject-exit". */
static int mode_early(uint32_t t)
{
	if (t >= g.n || t == g.me || !shd_fabric_has_node(g.f, t) || !g.auth)
		usage("early: bad T (needs --peer) or no --key");
	g.early_t = t;
	g.early_open = true;
	g.next_hb = 0;
	if (!pump(g.timeout, early_known))
		FAIL("node %u never answered my probe", t);
	uint8_t b[1024];
	for (uint64_t seq = 1; seq <= 3; seq++) {
		size_t l = make_batch(b, sizeof(b), t, seq, 16);
		shf_wire_stamp(b, seq == 3 ? g.my_session[t] ^ 1u : g.my_session[t], g.peer_session[t]);
		send_raw(t, b, l);
	}
	bool woken = pump(2000, early_woken);
	printf("woken %s\n", woken ? "yes" : "no");
	g.early_open = false;
	send_heartbeat(t, now_ms()); /* the handshake's end */
	pump(3000, early_acked);
	printf("acked %" PRIu64 "\n", g.acked[t]);
	sync_post("early-sent");
	return serve_until_exit();
}

/* ------------------------------------------------------------ replay */

/* replay T MS: a member (with --key) does the handshake with T and
 * heartbeats it normally for 1.5 s, keeping each heartbeat as it went on
 * the wire; then it "dies": no new message, but whoever holds its address
 * (this process, as one that captured the traffic and bound the vacant
 * address would) sends the captured heartbeats again, in order and over
 * and over, one per --hb-ms, for MS ms.  Prints "session yes|no",
 * "recorded N", then posts sync point "replay-start" and at the end
 * prints "replayed K". */
static int mode_replay(uint32_t t, int ms)
{
	if (t >= g.n || t == g.me || !shd_fabric_has_node(g.f, t) || ms <= 0)
		usage("replay: bad T (needs --peer) or MS");
	g_sq = t;
	g.next_hb = 0;
	bool up = pump(g.hs_ms, squat_up);
	printf("session %s\n", up ? "yes" : "no");
	g_recording = true;
	pump(1500, NULL);
	g_recording = false;
	g_replaying = true;
	printf("recorded %d\n", g_nrec);
	fflush(stdout);
	if (!up || g_nrec == 0)
		return 1;
	sync_post("replay-start");
	int k = 0;
	for (int64_t end = now_ms() + ms; now_ms() < end; k++) {
		send_raw(t, g_rec[k % g_nrec], SHF_WIRE_HEARTBEAT_BYTES);
		for (int64_t next = now_ms() + g.hb_ms; now_ms() < next;)
			progress(5);
	}
	printf("replayed %d\n", k);
	return 0;
}

/* ------------------------------------------------------------ bundle */

static uint32_t g_bt;         /* bundle: the target */
static uint64_t g_bt_old;     /* its tag in the session the bad bundle went in */

static bool answered(void)
{
	return g.fwd_answered;
}

static bool recut(void)
{
	return g.peer_session[g_bt] != g_bt_old && g.knows_me[g_bt];
}

/* A FWD of mine for t carrying a heartbeat probe of mine for d: f (256). */
static uint32_t make_fwd(uint8_t *f, uint32_t t, uint32_t d)
{
	if (shf_wire_enc_fwd_hdr(f, 256, g.me, t) != SHF_WIRE_FWD_HDR)
		FAIL("encode fwd header");
	uint8_t *in = f + SHF_WIRE_FWD_HDR;
	struct shf_wire_heartbeat hb = {.time_ns = 1, .incarnation = g.incarnation,
					.flags = g.grid ? SHF_WIRE_HB_2D : 0u};
	memcpy(hb.nonce, g.my_nonce[d], SHD_AUTH_NONCE_BYTES);
	if (g.auth) {
		struct shd_auth_hb m = {g.me, d, g.my_session[d], 0, g.my_nonce[d], NULL, false, 0};
		hb.flags |= SHF_WIRE_HB_MAC;
		shd_auth_mac(g.auth, &m, hb.mac);
	}
	if (shf_wire_enc_heartbeat(in, SHF_WIRE_HEARTBEAT_BYTES, g.me, d, &hb) !=
	    SHF_WIRE_HEARTBEAT_BYTES)
		FAIL("encode heartbeat for node %u", d);
	shf_wire_stamp(in, g.my_session[d], 0); /* a probe: its tag unknown */
	return SHF_WIRE_FWD_HDR + SHF_WIRE_HEARTBEAT_BYTES;
}

static int mode_bundle(uint32_t t, uint32_t d)
{
	uint8_t b[2048], f[256], inner[1024];
	unsigned cut = 0;
	if (t >= g.n || d >= g.n || t == g.me || d == g.me || d == t)
		usage("bundle T D: three different nodes");
	g_bt = t;
	g.fwd_from = d;
	handshake(&t, 1);

	/* a well-formed bundle: forwarded to d, whose answer comes back */
	uint32_t fl = make_fwd(f, t, d);
	long off = shf_wire_enc_bundle_begin(b, sizeof(b), g.me, t);
	off = shf_wire_enc_bundle_add(b, sizeof(b), (size_t)off, f, fl);
	off = shf_wire_enc_bundle_add(b, sizeof(b), (size_t)off, f, fl);
	struct shf_wire_hdr h;
	if (off <= 0 || shf_wire_check(b, (size_t)off, g.n, t, &h) != 0)
		FAIL("encode a well-formed bundle");
	uint64_t tag = g.peer_session[t];
	stamp(b, t);
	send_raw(t, b, (size_t)off);
	if (!pump(g.timeout, answered))
		FAIL("node %u's answer to the probes in a bundle never came back through node %u", d, t);
	if (g.peer_session[t] != tag)
		FAIL("node %u started a new session after a well-formed bundle", t);
	printf("good bundle forwarded, answered\n");

	for (int k = 0; k < 3; k++) {
		const char *what = NULL;
		size_t len = 0;
		if (k)
			handshake(&t, 1);
		fl = make_fwd(f, t, d);
		off = shf_wire_enc_bundle_begin(b, sizeof(b), g.me, t);
		switch (k) {
		case 0: /* zero count: the header alone */
			what = "zero count";
			len = (size_t)off;
			break;
		case 1: /* its one item's length runs past the end */
			what = "item length past the end";
			off = shf_wire_enc_bundle_add(b, sizeof(b), (size_t)off, f, fl);
			shf_wire_put32(b + SHF_WIRE_BUNDLE_HDR, 4096);
			len = (size_t)off;
			break;
		case 2: { /* its item a (well-formed) bundle, not a FWD */
			what = "bundle inside a bundle";
			long il = shf_wire_enc_bundle_begin(inner, sizeof(inner), g.me, t);
			il = shf_wire_enc_bundle_add(inner, sizeof(inner), (size_t)il, f, fl);
			shf_wire_put32(b + off, (uint32_t)il);
			shf_wire_put32(b + off + 4, 0);
			memcpy(b + off + SHF_WIRE_BUNDLE_ITEM, inner, (size_t)il);
			shf_wire_put32(b + 32, 1);
			len = (size_t)off + SHF_WIRE_BUNDLE_ITEM + (size_t)il;
			break;
		}
		}
		if (shf_wire_check(b, len, g.n, t, &h) != -EBADMSG)
			FAIL("malformed bundle (%s) passes the check", what);
		g_bt_old = g.peer_session[t];
		stamp(b, t);
		send_raw(t, b, len);
		if (!pump(g.timeout, recut))
			FAIL("node %u kept the session after a malformed bundle (%s)", t, what);
		printf("bundle with %s: session cut\n", what);
		cut++;
	}
	printf("sent %u cut\n", cut);
	sync_post("bundle-sent");
	return serve_until_exit();
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
	char *bind = NULL, *peers[MAX_NODES] = {0}, *key = NULL;
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
		else if (!strcmp(o, "--hs-ms")) g.hs_ms = atoi(v);
		else if (!strcmp(o, "--key")) key = v;
		else if (!strcmp(o, "--order")) g.in_order = !strcmp(v, "benign");
		else if (!strcmp(o, "--2d")) g.grid = atoi(v) != 0;
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
	if (shd_auth_init() < 0)
		FAIL("libsodium");
	if (key) {
		char kerr[512];
		if (shd_auth_load(key, &g.auth, kerr, sizeof(kerr)) < 0)
			FAIL("%s", kerr);
	}
	for (uint32_t k = 0; k < MAX_NODES; k++)
		shd_auth_nonce(g.my_nonce[k]);
	const char *s = getenv("SHF_TEST_SYNC");
	g.sync = s && *s ? s : ".";
	g.incarnation = ((uint64_t)getpid() << 20) ^ (uint64_t)now_ms() ^ 1u;
	for (uint32_t k = 0; k < g.n; k++) { /* my session tags: random, never 0 */
		uint64_t tag = 0;
		if (getrandom(&tag, sizeof(tag), 0) != (ssize_t)sizeof(tag))
			tag = g.incarnation * UINT64_C(0x9e3779b97f4a7c15) + k;
		g.my_session[k] = tag ? tag : 1;
	}

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
	else if (!strcmp(mode, "withdrawmap") && i + 3 < argc)
		rc = mode_withdrawmap(argv[i + 1], (uint32_t)atoi(argv[i + 2]),
				      (uint32_t)atoi(argv[i + 3]));
	else if (!strcmp(mode, "leavemix") && i + 2 < argc)
		rc = mode_leavemix(argv[i + 1], (uint32_t)atoi(argv[i + 2]));
	else if (!strcmp(mode, "straymap") && i + 3 < argc)
		rc = mode_straymap((uint32_t)atoi(argv[i + 1]), argv[i + 2], atoi(argv[i + 3]));
	else if (!strcmp(mode, "mapto") && i + 3 < argc && (argc - i) % 2 == 0)
		rc = mode_mapto((uint32_t)atoi(argv[i + 1]), argv + i + 2, argc - i - 2);
	else if (!strcmp(mode, "forge") && i + 4 < argc)
		rc = mode_forge((uint32_t)atoi(argv[i + 1]), argv[i + 2], argv[i + 3], atoi(argv[i + 4]));
	else if (!strcmp(mode, "bundle") && i + 2 < argc)
		rc = mode_bundle((uint32_t)atoi(argv[i + 1]), (uint32_t)atoi(argv[i + 2]));
	else if (!strcmp(mode, "replay") && i + 2 < argc)
		rc = mode_replay((uint32_t)atoi(argv[i + 1]), atoi(argv[i + 2]));
	else if (!strcmp(mode, "early") && i + 1 < argc)
		rc = mode_early((uint32_t)atoi(argv[i + 1]));
	else if (!strcmp(mode, "squat") && i + 3 < argc)
		rc = mode_squat((uint32_t)atoi(argv[i + 1]), argv[i + 2], atoi(argv[i + 3]));
	else
		usage("unknown mode or missing arguments");
	/* let the last sends complete, then free whatever never did */
	for (int64_t end = now_ms() + 1000; g_nout && now_ms() < end;)
		progress(5);
	shd_fabric_close(g.f);
	for (size_t k = 0; k < g_nout; k++)
		free(g_out[k]);
	free(g_out);
	shd_auth_free(g.auth);
	return rc;
}
