/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/harness.h - one daemon's net (daemon/net/net.c, net/tx.c,
 * net/rx.c, with the real deliver.c, jobtab.c and sched.c) over the fake
 * fabric (fake-fabric.h) and a fake event loop, with net's upward events
 * recorded.
 *
 * The fake loop (harness.c implements daemon/loop.h) runs nothing by
 * itself: h_run() runs the deferred events that were activated (fabric
 * progress; the pass event only counts, see below) until none is left,
 * h_advance_us() moves the fake clock (shd_now_ns) and fires the timers
 * that are due.  The pass is never run behind the test's back: tests call
 * its steps themselves (shd_deliver_publish, shd_net_after_publish,
 * shd_net_reap), in pass.c's order, so they can look between them.
 *
 * The daemon is node 0 of opts.n_nodes, opened through shd_net_open()
 * with a static rendezvous (no I/O); peers are nodes 1..n-1.
 *
 * Sessions (wire version 2): each fake peer has a session tag of its own
 * and knows the daemon's tag toward it once the handshake has shown it.
 * h_open() brings every peer UP through the real handshake (h_up: the
 * peer's heartbeat with dst_session 0, the daemon's reply read from the
 * sends, a heartbeat with both tags), unless opts.manual_up.  Every
 * message injected afterwards (fake_inject*, h_recv_*) is stamped with the
 * peer's current (tag, daemon tag) by the fake fabric; fake_inject_raw*
 * with h_stamp() injects other tags.  So the sends include the handshake's
 * heartbeats (and JOB_JOINs for jobs that exist at the handshake): tests
 * count sends by kind (FAKE_NO_HEARTBEAT: all but heartbeats).
 */
#ifndef SHF_TESTS_NETUNIT_HARNESS_H
#define SHF_TESTS_NETUNIT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "daemon/deliver.h"
#include "daemon/net/net.h"
#include "daemon/net/int.h"
#include "daemon/net/post.h"
#include "daemon/net/tx.h"
#include "proto/wire.h"
#include "tests/lib/check.h"
#include "tests/netunit/fake-fabric.h"

#define H_MAX_NODES 16u
#define H_MAX_RANKS 64

struct h_opts {
	uint32_t n_nodes;      /* >= 2 */
	uint32_t batch_bytes;
	uint32_t max_msg;
	uint32_t peer_credits;
	uint32_t max_inflight;
	uint32_t linger_us;
	uint32_t ack_delay_us;  /* 0: ACK at the network step */
	bool linger_idle;       /* linger even with nothing in flight */
	uint64_t batch_budget; /* 0: 16 batches */
	uint32_t heartbeat_ms;    /* 0: the default (1000) */
	uint32_t peer_timeout_ms; /* 0: the default (5000) */
	bool manual_up;        /* peers stay UNKNOWN: the test calls h_up() */
	const char *cluster_key; /* the daemon's key file; NULL: none (needs manual_up:
				    h_up() speaks without MACs) */
};

/* A local session with a real delivery ring over heap memory and a
 * consumer view of it (what the client library would read). */
struct h_client {
	struct shd_client c;
	void *ctl_mem, *data_mem;
	struct shf_ring cons;
	uint64_t acked, acked_lost; /* ev->mark_acked calls */
	uint64_t acked_seq[16];     /* H.seq of each call */
};

/* What net reported upward. */
struct h_events {
	uint64_t seq; /* bumped by every event: their order */
	uint64_t peer_up[H_MAX_NODES];
	uint64_t peer_lost[H_MAX_NODES];
	uint64_t peer_lost_seq[H_MAX_NODES];
	uint64_t drops_calls;
	uint64_t drops_down[H_MAX_RANKS];  /* per source rank, why -EHOSTDOWN */
	uint64_t drops_dead[H_MAX_RANKS];  /* per source rank, why -ESRCH */
	uint64_t drops_last_seq;           /* H.seq of the last drops call */
	uint64_t drops_job;                /* job hash of the last call */
	uint64_t drops_bad;                /* calls with another why, or a bad rank */
	uint64_t joined, left, epoch;
	uint64_t pass_requests;            /* shd_sched_pass() bursts seen by h_run */
};

extern struct shd_daemon *D;
extern struct h_events H;

/* Defaults: 2 nodes, batch_bytes 256, max_msg 1024, credits 2,
 * max_inflight 256, linger 100 us. */
struct h_opts h_defaults(void);
void h_open(const struct h_opts *o);
/* shd_net_close and free everything (leak-checked under ASan). */
void h_close(void);
struct shd_net *h_net(void);
struct shd_peer *h_peer(uint32_t node);

/* Fail the test (exit 1, naming `what`) if it runs longer than seconds:
 * a call that never returns is a failure, not a hang until meson's
 * timeout.  h_step() says what runs now. */
void h_watchdog(unsigned seconds);
void h_step(const char *what);

/* fake loop: h_run() also fires the fabric's wait fd while the fake
 * fabric has events queued (fake_inject, fake_complete) */
void h_run(void);
void h_advance_us(uint64_t us);

/* A job (every rank SHD_NODE_NONE) and its ranks' homes. */
struct shd_job *h_job(const char *name, int32_t world);
void h_rank_on(struct shd_job *j, int32_t rank, uint32_t node);
/* A local client (ACTIVE) of rank in j; ring_bytes a power of two >= 4096. */
struct h_client *h_client(struct shd_job *j, int32_t rank, uint32_t ring_bytes);

/* Message payloads: byte i of message `type` from src to dst. */
uint8_t h_pat(int32_t src, int32_t dst, uint32_t type, uint32_t i);
void h_fill(void *buf, int32_t src, int32_t dst, uint32_t type, uint32_t len);
/* shd_net_append of a patterned message. */
int h_append(struct h_client *c, uint32_t node, const struct shd_job *j, int32_t dst,
	     uint32_t type, uint32_t len);

/* A batch from node to us being built (records carry patterned payloads). */
struct h_batch {
	uint8_t buf[64 << 10];
	struct shf_wire_batch_enc enc;
	uint32_t node;
};
void h_batch_begin(struct h_batch *b, uint32_t node, uint64_t job_hash);
void h_batch_put(struct h_batch *b, int32_t dst, int32_t src, uint32_t type, uint32_t len);
/* Finish as batch seq; returns its length. */
size_t h_batch_end(struct h_batch *b, uint64_t seq);

/* Control messages from node to us, delivered at once (fake_inject_now). */
void h_recv_ack(uint32_t node, uint64_t acked_seq);
void h_recv_heartbeat(uint32_t node, uint64_t incarnation);

/* ---- sessions: the fake peers' side */

/* The handshake with node (UNKNOWN, DOWN or JOINING): node's heartbeat
 * with its tag (a fresh one when it has none) and dst_session 0, the
 * daemon's heartbeat in reply (read from the sends: its src_session is the
 * daemon's tag), node's heartbeat with both tags: the peer is UP (checked,
 * ev->peer_up once more).  Returns the daemon's tag. */
uint64_t h_up(uint32_t node);
/* node restarts (or starts a new session): a fresh tag of its own, the
 * daemon's unknown; it sends a heartbeat (tag, 0) of incarnation inc.  The
 * session it leaves stays in h_old_tag/h_old_dtag. */
void h_restart(uint32_t node, uint64_t incarnation);
/* node's current tag, the daemon's tag as node knows it (0: not yet), and
 * those of the session before the last h_restart (0: none). */
uint64_t h_tag(uint32_t node);
uint64_t h_dtag(uint32_t node);
uint64_t h_old_tag(uint32_t node);
uint64_t h_old_dtag(uint32_t node);
/* A fresh tag, never used before in this process (non-zero). */
uint64_t h_new_tag(uint32_t node);
/* Write tags into an encoded message (for fake_inject_raw*). */
void h_stamp(void *msg, uint64_t src_session, uint64_t dst_session);
/* Index of the last send to node of kind (fake_find semantics), or -1. */
long h_last_send(uint32_t node, unsigned kind);

/* Decode send i (checked as the receiver, its node, would). */
void h_decode(size_t i, struct shf_wire_hdr *h);
/* Walk the records of batch send i: calls fn for each; returns the count. */
uint32_t h_batch_records(size_t i, void (*fn)(const struct shf_wire_rec *r, void *arg),
			 void *arg);

/* Consume what the client's delivery ring has published: up to max
 * messages, each checked against the pattern; src/type of each go to the
 * arrays (may be NULL).  Releases them; returns the count. */
uint32_t h_consume(struct h_client *c, uint32_t max, int32_t *src, uint32_t *type);
/* Fill c's delivery ring with local messages until it is full; they are
 * published.  Returns how many. */
uint32_t h_fill_ring(struct h_client *c, uint32_t len);

/* The pool: every free buffer is distinct; returns pool_free. */
uint32_t h_pool_check(void);

#endif
