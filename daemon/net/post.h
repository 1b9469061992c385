/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/post.h - posting (net/post.c): the buffer pool, handing a
 * message to the fabric in per-peer order (the retry queue, the FWD
 * wrapping of routing=2d), small control messages, completions, a
 * peer's wake and heartbeats, a session's reset.  Used by the batches
 * (net/tx.c), forwarding (net/fwd.c) and the dispatcher (net.c, rx.c,
 * session.c); it calls none of them: what it has to tell them goes
 * through struct shd_net_post_events (n->post_ev).
 */
#ifndef SHD_NET_POST_H
#define SHD_NET_POST_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/net/int.h"

/* What posting tells the sending modules above it; the table is net/tx.c's
 * (shd_net_tx_post_events), set by shd_net_open.  Every pointer is set. */
struct shd_net_post_events {
	/* A pool buffer was given back (shd_net_pool_put): forwards waiting
	 * for one go on now, before clients waiting for a batch buffer are
	 * woken. */
	void (*pool_freed)(struct shd_net *n);
	/* p answered a wake: post its closed batches of sequence number
	 * <= upto now (the held control messages go between them, in order). */
	void (*send_batches)(struct shd_peer *p, uint64_t upto);
};

void shd_net_kick(struct shd_net *n);
/* A send to p failed, or p fell silent: PEER_FAILED now, carried out at
 * the pass's peers step (shd_net_tx_down). */
void shd_net_peer_fail(struct shd_peer *p, const char *why);

/* The pool of batch-sized buffers (one registered slab). */
int shd_net_pool_init(struct shd_net *n);
void shd_net_pool_fini(struct shd_net *n);
/* A free buffer (lowest address first); NULL: none. */
struct net_msg *shd_net_pool_get(struct shd_net *n);
/* Give m's buffer back (n->post_ev->pool_freed runs). */
void shd_net_pool_put(struct shd_net *n, struct net_msg *m);

/* The node a message for p goes to first: p itself, or (routing=2d) an
 * intermediate; sets p->via_out. */
uint32_t shd_net_hop(struct shd_net *n, struct shd_peer *p);
/* Hand m (of m->peer's current session) to the fabric, behind whatever
 * waits in the retry queue; a refusal completes it (shd_net_send_done). */
void shd_net_post(struct shd_net *n, struct net_msg *m);
/* Post what waits in the retry queue, in order, until the fabric has no
 * slot (dropping what belongs to an ended or failed session). */
void shd_net_retry_posts(struct shd_net *n);
/* m completed (status 0) or never went (< 0): free or pool its buffer,
 * report a lost batch's records, fail its peer on an error of the
 * current session. */
void shd_net_send_done(struct shd_net *n, struct net_msg *m, int status);
/* Report the records of encoded batch m to p as dropped (ev->drops,
 * -EHOSTDOWN). */
void shd_net_charge_batch(struct shd_peer *p, const struct net_msg *m);

/* Send a small encoded control message (len from an shf_wire_enc_*:
 * <= 0 is an encoding failure, logged) to p if it is up. */
void shd_net_send_small(struct shd_peer *p, const void *buf, long len);
/* Send a HEARTBEAT to p in any state but FAILED (probes included). */
void shd_net_heartbeat(struct shd_peer *p, uint64_t now);

/* The wake (docs/protocol-wire.md, "Idle peers").
 * p (up) is used: a message other than a heartbeat goes to it now.  An
 * idle or quiet peer is woken: heartbeats resume, and it must answer
 * within peer_timeout_ms like any active peer.  Inline: the batches call
 * it per appended message (a flag, no clock read: the heartbeat tick
 * turns it into last_used_ns). */
void shd_net_use_wake(struct shd_peer *p); /* (its slow half) */
static inline void shd_net_use(struct shd_peer *p)
{
	p->used = true;
	if (p->idle || p->quiet || p->released)
		shd_net_use_wake(p);
}
/* A message other than an HB_IDLE heartbeat came from p (up), idle, quiet
 * or released here: it is awake, so we are too (a heartbeat answers it at
 * once); nothing of ours is held for this wake (it started it). */
void shd_net_woken(struct shd_peer *p);
/* A message other than an HB_IDLE heartbeat came from p (up) in its
 * current session: a wake of ours is answered, what it held goes now. */
void shd_net_heard(struct shd_peer *p);
/* Messages held per peer while it is being woken; one more fails it. */
#define SHD_NET_HELD_MAX 1024u
/* Hold m (SMALL or POOLED, of p's current session) until p answers the
 * wake; false when the held queue is full: p fails (its loss is what
 * reports the messages), and the caller drops m. */
bool shd_net_hold(struct shd_peer *p, struct net_msg *m);

/* A new session with p: fresh sequence numbers, acks and tag. */
void shd_net_session_reset(struct shd_peer *p);
/* p is carried out: what waits for it in the retry queue and what was
 * held for its wake never went (completed -EHOSTDOWN, reported). */
void shd_net_post_down(struct shd_peer *p);
/* The net's teardown: free the queued and held copies (pooled buffers go
 * with the slab). */
void shd_net_post_close(struct shd_net *n);

#endif
