/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/net.c - the peer protocol's frame: dispatching received wire
 * messages, liveness, the peers step of the pass, fabric progress, and the
 * peers' JSON (net.h).  The sending half is net/tx.c (over net/fwd.c
 * and net/post.c), the receiving half
 * net/rx.c, the session rules net/session.c; net/open.c opens the endpoint
 * and the rendezvous and tears it all down.
 *
 * Sessions and liveness (docs/protocol-wire.md, "Sessions"): every pair of
 * daemons runs a session, named by one random tag from each side; a
 * message is taken only with both current tags (shd_net_session_admit()).
 * A peer starts UNKNOWN and is probed; three heartbeats make it UP.  Every
 * message counts as a sign of life; a heartbeat goes to every peer each
 * heartbeat_ms, but (peer_idle_ms) to an idle or quiet one: see lazy() and
 * docs/protocol-wire.md, "Idle peers".  A peer silent for peer_timeout_ms,
 * whose send fails, or that starts a new session (it restarted, or declared us down) fails
 * (PEER_FAILED).  At the next peers step it is carried out: what was queued
 * for it is dropped and reported, parked batches from it are dropped and
 * counted, its marks complete with possible loss, and ev->peer_lost makes
 * its ranks lost (-EHOSTDOWN for flushes and epochs).  Then it is DOWN and
 * probed; when it answers it rejoins as a new session (fresh tags,
 * sequence numbers, credits and acks), never resuming the old one.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/net/net.h"
#include "daemon/jobtab.h"
#include "daemon/net/fwd.h"
#include "daemon/net/int.h"
#include "daemon/net/post.h"
#include "daemon/stats.h"

/* foreign senders: a line now and then, not one per probe */
static struct shd_ratelimit rl_foreign = SHD_RATELIMIT_INIT(10000, 2);

/* ------------------------------------------------------------- receiving */

static int take(struct shd_net *n, struct shd_peer *p, void *buf, struct shf_wire_hdr *hp);

static int dispatch(struct shd_net *n, struct shd_peer *p, void *buf, struct shf_wire_hdr *hp);

static int fwd_take(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h);

/* The session rules for h (buf: the message, h->len bytes) from p: true
 * when it is to be processed now; an early one is kept (session.c). */
static bool admitted(struct shd_peer *p, const void *buf, const struct shf_wire_hdr *h)
{
	enum shd_admit a = shd_net_session_admit(p, h);
	if (a == SHD_ADMIT_EARLY)
		shd_net_early_hold(p, buf, h);
	return a == SHD_ADMIT_TAKE;
}

/* FWD from neighbour p: its session checked first, then fwd_take(). */
static int on_fwd(struct shd_net *n, struct shd_peer *p, const void *buf,
		  const struct shf_wire_hdr *h)
{
	if (!admitted(p, buf, h))
		return 0;
	p->last_heard_ns = shd_now_ns();
	return fwd_take(n, p, h);
}

/* FWD_BUNDLE from neighbour p: its session admits the whole bundle, then
 * each FWD in it is taken as if it had come alone (in order). */
static int on_bundle(struct shd_net *n, struct shd_peer *p, const void *buf,
		     const struct shf_wire_hdr *h)
{
	if (!admitted(p, buf, h))
		return 0;
	p->last_heard_ns = shd_now_ns();
	uint32_t off = 0, len;
	const uint8_t *m;
	while (shf_wire_bundle_next(&h->u.bundle, &off, &m, &len)) {
		struct shf_wire_hdr f;
		if (shf_wire_check(m, len, n->n_nodes, n->d->node_id, &f) != 0)
			continue; /* (checked whole by shf_wire_check of the bundle) */
		f.src_session = h->src_session; /* the bundle's tags, admitted */
		f.dst_session = h->dst_session;
		fwd_take(n, p, &f);
	}
	return 0;
}

/* A bundle that fails its check, from peer p's own address and with the
 * tags of its current session: p's session is cut off (nothing in it is
 * taken, and a sender of broken bundles would lose forwards silently). */
static void bad_bundle(struct shd_net *n, uint32_t node, const uint8_t *b, size_t len)
{
#define RAW(f) (b + offsetof(struct shf_wire_raw_hdr, f)) /* the layout, read raw */
	if (len < SHF_WIRE_HDR || shf_wire_get16(RAW(kind)) != SHF_WIRE_FWD_BUNDLE ||
	    shf_wire_get32(RAW(dst_node)) != n->d->node_id)
		return;
	uint32_t src = shf_wire_get32(RAW(src_node));
	if (src >= n->n_nodes || src == n->d->node_id ||
	    (node != src && !(node == SHD_FABRIC_NODE_UNKNOWN && !n->by_address)))
		return;
	struct shd_peer *p = &n->peers[src];
	if (p->state != PEER_UP || shf_wire_get64(RAW(src_session)) != p->cold->peer_session ||
	    shf_wire_get64(RAW(dst_session)) != p->cold->my_session)
		return;
#undef RAW
	shd_net_peer_fail(p, "it sent a malformed FWD_BUNDLE");
}

/* One FWD of neighbour p's current session (alone or from a bundle): p
 * is the origin and we are the intermediate (forward it to the
 * destination, our neighbour), or we are the destination (take the
 * carried message as from its origin, which the route allows p to speak
 * for). */
static int fwd_take(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h)
{
	struct shd_daemon *d = n->d;
	const struct shf_wire_fwd *f = &h->u.fwd;
	uint32_t me = d->node_id;
	if (f->inner_dst == me) {
		if (!shd_route_is_via(&n->route, f->inner_src, me, p->node)) {
			d->st.wire_bad++;
			shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u forwarded a %s of node "
				   "%u, which does not route through it: dropped", p->node,
				   shf_wire_kind_name(f->inner_kind), f->inner_src);
			return 0;
		}
		struct shd_peer *o = &n->peers[f->inner_src];
		struct shf_wire_hdr in;
		if (shf_wire_check(f->msg, f->len, n->n_nodes, me, &in) != 0 || !shd_net_has_address(o))
			return 0; /* (checked whole by shf_wire_check of the FWD) */
		o->cold->via_in = p->node;
		return take(n, o, (void *)f->msg, &in);
	}
	/* one intermediate: only the origin hands a message to us, and only
	 * for a destination in our row or column that routes through us */
	if (f->inner_src != p->node || !shd_route_neighbor(&n->route, f->inner_dst) ||
	    !shd_route_is_via(&n->route, f->inner_src, f->inner_dst, me)) {
		d->st.wire_bad++;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u asked us to forward a %s of "
			   "node %u to node %u, which does not route through this node: dropped",
			   p->node, shf_wire_kind_name(f->inner_kind), f->inner_src, f->inner_dst);
		return 0;
	}
	struct shd_peer *q = &n->peers[f->inner_dst];
	if (q->state != PEER_UP) {
		/* lost on the way: the origin ends its session with the
		 * destination, which reports the loss (never silent).  Not for
		 * a heartbeat: one goes every period anyway, and at start-up
		 * the origin's first ones reach us before our own link to the
		 * destination is up; a lost one ending a session that came up
		 * the other way round made the job's first sends fail */
		d->st.fwd_dropped++;
		if (f->inner_kind != SHF_WIRE_HEARTBEAT)
			shd_net_fwd_lost(p, q->node);
		return 0;
	}
	shd_net_forward(n, q, f->msg - SHF_WIRE_FWD_HDR, f->len + SHF_WIRE_FWD_HDR);
	return 0;
}

/* Neighbour p lost its link to node `lost`: what it forwarded between us
 * may be lost, so our session with `lost` ends (if it went through p). */
static void on_fwd_lost(struct shd_net *n, struct shd_peer *p, uint32_t lost)
{
	struct shd_peer *q = &n->peers[lost];
	uint32_t me = n->d->node_id;
	if (q->state != PEER_UP || shd_route_neighbor(&n->route, lost) ||
	    !(shd_route_is_via(&n->route, me, lost, p->node) ||
	      shd_route_is_via(&n->route, lost, me, p->node)))
		return;
	char why[96];
	snprintf(why, sizeof(why), "node %u, its intermediate, lost its link to it", p->node);
	shd_net_peer_fail(q, why);
}

static int on_recv(void *arg, uint32_t node, void *buf, size_t len)
{
	struct shd_net *n = arg;
	struct shd_daemon *d = n->d;
	struct shf_wire_hdr h;
	int r = shf_wire_check(buf, len, n->n_nodes, d->node_id, &h);
	if (r == -EPROTO && len >= SHF_WIRE_HDR && shf_wire_get32(buf) == SHF_WIRE_MAGIC) {
		/* another release: say which, so that a mixed cluster is obvious */
		d->st.wire_bad++;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN,
			   "rejected a %zu-byte wire message of wire version %u from node %d: "
			   "this daemon speaks wire version %u (all daemons of a set must run "
			   "one release)", len, shf_wire_get16((const uint8_t *)buf + 4),
			   node == SHD_FABRIC_NODE_UNKNOWN ? -1 : (int)node, SHF_WIRE_VERSION);
		return 0;
	}
	if (r < 0 || (node != SHD_FABRIC_NODE_UNKNOWN && node != h.src_node)) {
		d->st.wire_bad++;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "rejected a %zu-byte wire message: %s",
			   len, r < 0 ? (r == -EPROTO ? "bad magic or version"
						      : "bad header or lengths")
				      : "source node does not match its address");
		if (r == -EBADMSG && n->route.grid)
			bad_bundle(n, node, buf, len);
		return 0;
	}
	struct shd_peer *p = &n->peers[h.src_node];
	/* Membership: only what comes from the address the rendezvous gave
	 * for the node it claims.  From an address not in the address
	 * vector: a node that joined after our rendezvous, or one that
	 * restarted on another address (a growing set publishes it, and the
	 * lookup puts it in), or anyone else: dropped either way. */
	if (node == SHD_FABRIC_NODE_UNKNOWN && n->by_address) {
		if (n->rdv && !p->cold->port[0])
			shd_net_learn_address(p);
		d->st.wire_foreign++;
		shd_log_rl(&rl_foreign, SHD_LOG_WARN, "a %s claiming to be node %u from an "
			   "address that is not its own: dropped", shf_wire_kind_name(h.kind),
			   h.src_node);
		return 0;
	}
	if (!shd_net_has_address(p)) {
		d->st.wire_foreign++; /* (no sources) cannot be answered: not a member yet */
		return 0;
	}
	if (!shd_net_routing_ok(n, p, &h))
		return 0;
	p->linked = true; /* it sent to us directly, from its own address */
	return dispatch(n, p, buf, &h);
}

/* A message from p itself (FWD, FWD_BUNDLE: p is the neighbour that hands
 * it over), or carried for it (anything else; the route was checked). */
static int dispatch(struct shd_net *n, struct shd_peer *p, void *buf, struct shf_wire_hdr *hp)
{
	if (hp->kind == SHF_WIRE_FWD)
		return on_fwd(n, p, buf, hp);
	if (hp->kind == SHF_WIRE_FWD_BUNDLE)
		return on_bundle(n, p, buf, hp);
	return take(n, p, buf, hp);
}

/* p's session came up: what came early is taken now, in order, as if it
 * had just come (its checks are those of any message: it was checked
 * whole when it came, and is checked again here). */
static void take_early(struct shd_net *n, struct shd_peer *p)
{
	struct net_early *e;
	while ((e = shd_net_early_next(p)) != NULL) {
		struct shf_wire_hdr h;
		if (shf_wire_check(e->buf, e->len, n->n_nodes, n->d->node_id, &h) == 0)
			dispatch(n, p, e->buf, &h);
		free(e);
	}
}

/* A message of p's session with us, whether it came directly or through
 * an intermediate (on_fwd): the session rules, then its kind's handler. */
static int take(struct shd_net *n, struct shd_peer *p, void *buf, struct shf_wire_hdr *hp)
{
	struct shd_daemon *d = n->d;
	struct shf_wire_hdr h = *hp;
	if (h.kind == SHF_WIRE_HEARTBEAT) {
		/* its current nonce: what our MACs answer (echo) */
		bool news = !p->have_peer_nonce ||
			    memcmp(p->cold->peer_nonce, h.u.heartbeat.nonce, sizeof(p->cold->peer_nonce));
		memcpy(p->cold->peer_nonce, h.u.heartbeat.nonce, sizeof(p->cold->peer_nonce));
		p->have_peer_nonce = true;
		if (news && n->auth && h.dst_session != 0 && h.dst_session != p->cold->my_session &&
		    (p->state == PEER_UNKNOWN || p->state == PEER_DOWN)) {
			/* it still runs a session with an earlier start of ours
			 * (we restarted): its session ends only on a probe that
			 * proves the key over its nonce, which we have now:
			 * probe at once instead of at the next probe period */
			uint64_t now = shd_now_ns();
			p->cold->last_probe_ns = now;
			shd_net_heartbeat(p, now);
		}
		if (p->state == PEER_UP && (p->idle || p->quiet) &&
		    h.src_session != p->cold->peer_session) {
			/* an idle peer restarted (or began a new session): it
			 * proves the key over our nonce, which it learns from
			 * our heartbeats, and those stopped: wake the pair */
			shd_net_use(p);
		}
	}
	if (!admitted(p, buf, &h))
		return 0;
	p->last_heard_ns = shd_now_ns();
	if (h.kind == SHF_WIRE_HEARTBEAT && (h.u.heartbeat.flags & SHF_WIRE_HB_IDLE)) {
		p->quiet = true; /* it stops heartbeating us: not timed out now */
	} else {
		if (h.kind != SHF_WIRE_HEARTBEAT || p->quiet || p->idle || p->released) {
			/* a use of the session, or a wake: nobody heartbeats a
			 * peer that is quiet toward it, so a heartbeat without
			 * HB_IDLE from a quiet peer, or to us while idle, asks
			 * for ours again (shd_net_woken sends it at once) */
			shd_net_woken(p);
		} else if (h.kind == SHF_WIRE_HEARTBEAT &&
			   (h.u.heartbeat.flags & SHF_WIRE_HB_WAKE) && p->state == PEER_UP) {
			/* it holds its messages until it hears from us: at once
			 * (one answer per wake heartbeat, which it sends at most
			 * each heartbeat_ms) */
			shd_net_heartbeat(p, shd_now_ns());
		}
		/* anything but HB_IDLE from it: it is awake (it never releases
		 * while awake), so what our wake held may go */
		if (p->state == PEER_UP)
			shd_net_heard(p);
	}
	switch (h.kind) {
	case SHF_WIRE_BATCH: return shd_net_rx_batch(p, buf, &h);
	case SHF_WIRE_ACK: shd_net_tx_ack(p, &h.u.ack); break;
	case SHF_WIRE_HEARTBEAT:
		p->cold->incarnation = h.u.heartbeat.incarnation;
		break;
	case SHF_WIRE_JOB_JOIN: n->ev->joined(d, p->node, &h.u.join); break;
	case SHF_WIRE_JOB_MAP: n->ev->mapped(d, p->node, &h.u.map); break;
	case SHF_WIRE_JOB_DENY: n->ev->denied(d, p->node, &h.u.deny); break;
	case SHF_WIRE_JOB_LEAVE: n->ev->left(d, p->node, &h.u.leave); break;
	case SHF_WIRE_JOB_LEAVE_ASK: n->ev->left_ask(d, p->node, &h.u.leave_ask); break;
	case SHF_WIRE_EPOCH_UP:
	case SHF_WIRE_EPOCH_DOWN:
	case SHF_WIRE_EPOCH_ABORT:
		d->st.epoch_msgs_in++;
		n->ev->epoch(d, p->node, h.kind, h.u.epoch.job_hash, h.u.epoch.epoch,
			     h.u.epoch.phase, (int32_t)h.u.epoch.count);
		break;
	case SHF_WIRE_DROP:
		n->ev->drops(d, h.u.drop.job_hash, h.u.drop.src_rank, h.u.drop.count, -ESRCH);
		break;
	case SHF_WIRE_FAN_REQ: n->ev->fan_req(d, p->node, &h.u.fan_req); break;
	case SHF_WIRE_FAN_ANS: n->ev->fan_ans(d, p->node, &h.u.fan_ans); break;
	case SHF_WIRE_FWD_LOST: on_fwd_lost(n, p, h.u.fwd_lost); break;
	default: break;
	}
	if (h.kind == SHF_WIRE_HEARTBEAT && (p->cold->n_early || p->cold->early_lost))
		take_early(n, p); /* this heartbeat brought the session up */
	return 0;
}

static void on_send_done(void *arg, void *ctx, int status)
{
	shd_net_send_done(arg, ctx, status);
}

static void on_error(void *arg, uint32_t node, int err, const char *msg)
{
	struct shd_net *n = arg;
	/* probes of a node that is not up fail until it comes back: not news */
	bool quiet = node < n->n_nodes && n->peers[node].state != PEER_UP;
	shd_log_rl(&shd_net_rl_wire, quiet ? SHD_LOG_DEBUG : SHD_LOG_WARN,
		   "fabric error (node %d): %s: %s",
		   node == SHD_FABRIC_NODE_UNKNOWN ? -1 : (int)node, strerror(-err), msg);
}

/* ------------------------------------------------------------- liveness */

/* routing=2d: neighbour p is carried out.  Every session that may have
 * gone through it ends (what it held is reported lost like the
 * destination's own loss; the next session takes the other intermediate
 * while p is down), and the neighbours that may have sent through us to p
 * hear that our link to it is gone (FWD_LOST).  The failed sessions join
 * downq and are carried out in this same step. */
static void route_lost(struct shd_net *n, struct shd_peer *p)
{
	uint32_t me = n->d->node_id;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *q = &n->peers[i];
		if (i == me || i == p->node || q->state != PEER_UP)
			continue;
		if (shd_route_neighbor(&n->route, i)) {
			if (shd_route_is_via(&n->route, i, p->node, me) ||
			    shd_route_is_via(&n->route, p->node, i, me))
				shd_net_fwd_lost(q, p->node);
		} else if (shd_route_is_via(&n->route, me, i, p->node) ||
			   shd_route_is_via(&n->route, i, me, p->node)) {
			char why[96];
			snprintf(why, sizeof(why), "node %u, its intermediate, is down", p->node);
			shd_net_peer_fail(q, why);
		}
	}
}

void shd_net_reap(struct shd_daemon *d)
{
	struct shd_net *n = d->net;
	while (!shd_list_empty(&n->downq)) {
		struct shd_peer *p = shd_container_of(n->downq.next, struct shd_peer_cold, down_link)->peer;
		shd_list_del(&p->cold->down_link);
		shd_net_set_state(p, PEER_DOWN);
		shd_warn("peer node %u (%s) down: %s", p->node, p->cold->host, p->cold->down_why);
		shd_net_tx_down(p);
		shd_net_rx_down(p);
		shd_fabric_remove(n->fab, p->node);
		n->ev->peer_lost(d, p->node);
		if (n->route.grid && shd_route_neighbor(&n->route, p->node))
			route_lost(n, p);
		/* a new session later: fresh numbers and a new tag of ours, so
		 * nothing of this one is ever taken in the next */
		shd_net_session_reset(p);
		shd_net_reinsert(p);
		if (p->cold->next_session) {
			/* it already opened its next session: answer it now */
			shd_net_join(p, p->cold->next_session, p->cold->next_incarnation);
			p->cold->next_session = 0;
		}
	}
}

/* tcp: keep our id claim and address in the store (one round trip a
 * second; a store that restarted empty gets them again).  Blocks the loop
 * for at most LOOKUP_MS per round trip while the store is unreachable. */
static void store_refresh(struct shd_net *n)
{
	static struct shd_ratelimit rl_conflict = SHD_RATELIMIT_INIT(10000, 3);
	char err[256] = "";
	int r = shd_rdv_refresh(n->rdv, LOOKUP_MS, err, sizeof(err));
	shd_net_store_bad_records(n);
	if (r < 0) {
		if (!n->store_lost)
			shd_warn("store: %s; running jobs are not affected, nodes that start "
				 "meanwhile cannot join", err);
		n->store_lost = true;
		return;
	}
	if (r == 1) {
		/* the store lost our keys: it lost the others' id claims too;
		 * put back those of the nodes we know, so that one restarting
		 * now gets its own id again (never a new one, nor another's) */
		for (uint32_t i = 0; i < n->n_nodes; i++) {
			struct shd_peer *p = &n->peers[i];
			if (i != n->d->node_id && p->cold->host[0] && p->cold->raw_len &&
			    shd_rdv_restore_claim(n->rdv, i, p->cold->host, err, sizeof(err)) < 0)
				break; /* the store went away again: next second */
		}
	}
	if (r == 2)
		shd_log_rl(&rl_conflict, SHD_LOG_WARN, "%s", err);
	else if (n->store_lost || r == 1)
		shd_notice("store reachable again%s", r == 1 ? "; it had lost our id and "
							     "address: published again" : "");
	n->store_lost = false;
}

/* Probes to peers that are not up (unknown or down): often enough that a
 * node that comes back is seen within a second or two, rarely enough that
 * a dead node costs nothing. */
#define PROBE_MS 1000u

/* Sets a bit per node holding a rank of a job that has ranks here: a job
 * in common keeps a peer active.  O(the jobs' known ranks) per heartbeat. */
static void jobs_in_common(struct shd_net *n, uint64_t *busy)
{
	struct shd_daemon *d = n->d;
	memset(busy, 0, sizeof(uint64_t) * ((n->n_nodes + 63) / 64));
	for (struct shd_list *q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		if (j->local == 0)
			continue;
		for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
			uint32_t node = shd_jobtab_node(j, r);
			if (node < n->n_nodes)
				busy[node / 64] |= UINT64_C(1) << (node % 64);
		}
	}
}

/* Has up peer p a reason to stay active: a job in common, something in
 * flight or owed either way, or (routing=2d) a route through it? */
static bool peer_needed(struct shd_net *n, const struct shd_peer *p, const uint64_t *busy)
{
	if (busy[p->node / 64] & (UINT64_C(1) << (p->node % 64)))
		return true;
	if (n->route.grid && shd_route_neighbor(&n->route, p->node))
		return true;
	return p->waking || p->n_held || p->open || !shd_list_empty(&p->sendq) ||
	       p->seq_sent != p->seq_acked ||
	       !shd_list_empty(&p->rxq) || p->rx_waiting || p->ack_sent != p->seq_recv ||
	       !shd_list_empty(&p->cold->marks) || !shd_list_empty(&p->cold->waiters);
}

static void net_progress(struct shd_net *n);

/* What the heartbeat step does with an up peer under peer_idle_ms. */
enum lazy_do {
	LAZY_ACTIVE,  /* heartbeated and timed out as always */
	LAZY_TIMEOUT, /* timed out (it heartbeats us), not heartbeated */
	LAZY_NONE,    /* neither: it told us it is idle (quiet) */
};

/*
 * peer_idle_ms (docs/protocol-wire.md, "Idle peers").  An up peer unused
 * for idle_ns and without a reason to stay active goes idle: one last
 * heartbeat tells it (HB_IDLE), then none.  A peer that told us so
 * (quiet) is neither heartbeated nor timed out; once both ends are idle
 * the connection is released (on a later tick than our HB_IDLE).  Any use
 * (shd_net_use), or its next message, wakes the pair, and from then on it
 * must answer within peer_timeout_ms like any active peer.
 */
static enum lazy_do lazy(struct shd_net *n, struct shd_peer *p, uint64_t now, uint64_t idle_ns,
			 const uint64_t *busy)
{
	struct shd_daemon *d = n->d;
	/* peer_idle_ms 0 here: never idle, and a quiet peer is woken (a
	 * set should agree on peer_idle_ms; one that does not still works) */
	bool needed = !idle_ns || peer_needed(n, p, busy);
	if (p->used) { /* used since the last tick: as of now */
		p->used = false;
		p->cold->last_used_ns = now;
	}
	if (needed && (p->idle || p->quiet)) {
		shd_net_use(p); /* wakes it (a heartbeat now) */
		return LAZY_TIMEOUT;
	}
	if (!p->idle) {
		if (needed || now - p->cold->last_used_ns < idle_ns)
			return p->quiet ? LAZY_NONE : LAZY_ACTIVE;
		p->idle = true;
		d->st.peers_idled++;
		shd_net_heartbeat(p, now); /* with HB_IDLE: the last one */
		shd_debug("peer node %u idle: unused for %llu ms", p->node,
			  (unsigned long long)((now - p->cold->last_used_ns) / 1000000u));
		return p->quiet ? LAZY_NONE : LAZY_TIMEOUT;
	}
	if (!p->quiet)
		return LAZY_TIMEOUT; /* it still heartbeats us: its HB_IDLE may follow */
	if (!p->released) {
		/* Closing drops what the peer sent that is not read yet: a wake
		 * racing the release would be lost (a batch gap stalls the
		 * pair).  So release only after it has been silent for a whole
		 * heartbeat period since its HB_IDLE, and after taking what
		 * already arrived (a wake in it keeps the connection).  This
		 * narrows the race to a wake sent a heartbeat period after the
		 * peer's own HB_IDLE and still unread; it does not close it. */
		if (now - p->last_heard_ns < (uint64_t)d->cfg.heartbeat_ms * 1000000u)
			return LAZY_NONE;
		net_progress(n);
		if (p->state != PEER_UP || !p->idle || !p->quiet)
			return p->state == PEER_UP && !p->quiet ? LAZY_TIMEOUT : LAZY_NONE;
		/* never while a wake of ours waits for its answer, nor with
		 * anything held (idle and quiet imply neither: the check
		 * states the rule) */
		if (p->waking || p->n_held)
			return LAZY_NONE;
		int r = shd_fabric_release(n->fab, p->node);
		if (r == 0) {
			p->released = true;
			p->linked = false;
			d->st.conns_released++;
			shd_debug("peer node %u idle both ways: connection released", p->node);
		} else if (r != -EBUSY) {
			shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u: cannot release its "
				   "connection: %s", p->node, strerror(-r));
			p->released = true; /* not again */
		}
	}
	return LAZY_NONE;
}

void shd_net_on_heartbeat(int fd, void *arg)
{
	struct shd_net *n = arg;
	struct shd_daemon *d = n->d;
	uint64_t now = shd_now_ns();
	uint64_t probe_ns = (uint64_t)(d->cfg.heartbeat_ms > PROBE_MS ? d->cfg.heartbeat_ms
									: PROBE_MS) * 1000000u;
	uint64_t idle_ns = (uint64_t)d->cfg.peer_idle_ms * 1000000u;
	uint64_t busy_small[4];
	uint64_t *busy = NULL;
	if (idle_ns) {
		size_t words = (n->n_nodes + 63) / 64;
		busy = words <= 4 ? busy_small : calloc(words, sizeof(*busy));
		if (!busy)
			idle_ns = 0; /* no memory: everyone stays active this tick */
		else
			jobs_in_common(n, busy);
	}
	uint32_t n_idle = 0;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		if (i == d->node_id)
			continue;
		enum lazy_do ld = LAZY_ACTIVE;
		if (p->state == PEER_UP && (idle_ns || p->quiet)) {
			ld = lazy(n, p, now, idle_ns, busy);
			n_idle += p->idle;
			if (ld == LAZY_NONE || p->state != PEER_UP)
				continue; /* (a wake's send may have failed it) */
		}
		switch (p->state) {
		case PEER_UP:
		case PEER_JOINING:
			/* (lazy() may have read messages since `now`, or woken
			 * p: last_heard_ns can be later than now) */
			if (p->last_heard_ns < now &&
			    now - p->last_heard_ns > (uint64_t)d->cfg.peer_timeout_ms * 1000000u) {
				if (p->state == PEER_JOINING) {
					/* the handshake never finished: nothing was exchanged */
					shd_net_set_state(p, PEER_DOWN);
					p->cold->peer_session = 0;
					shd_net_early_discard(p);
					continue;
				}
				char why[64];
				snprintf(why, sizeof(why), "silent for %llu ms",
					 (unsigned long long)((now - p->last_heard_ns) / 1000000u));
				shd_net_peer_fail(p, why);
				continue;
			}
			if (ld == LAZY_ACTIVE)
				shd_net_heartbeat(p, now);
			break;
		case PEER_UNKNOWN:
		case PEER_DOWN:
			if (shd_net_has_address(p) && now - p->cold->last_probe_ns >= probe_ns) {
				p->cold->last_probe_ns = now;
				shd_net_heartbeat(p, now);
			}
			break;
		case PEER_FAILED:
		case PEER_STATE_MAX:
			break;
		}
	}
	if (n->rdv && shd_rdv_kind(n->rdv) == SHD_RDV_TCP &&
	    now - n->last_refresh_ns >= 1000000000u) {
		n->last_refresh_ns = now;
		store_refresh(n);
	}
	if (busy != busy_small)
		free(busy);
	d->st.peers_idle = n_idle;
	shd_ev_arm(n->hb_ev, (uint64_t)d->cfg.heartbeat_ms * 1000u);
}

/* ------------------------------------------------------------- loop glue */

void shd_net_after_publish(struct shd_daemon *d)
{
	struct shd_net *n = d->net;
	shd_net_tx_pass_end(n); /* batches that go now (linger_us 0, an idle link), before ACKs */
	shd_net_rx_acks(n); /* delivery rings are published: acknowledge */
	shd_net_kick(n);
}

/* Completions handled per progress event before yielding to the loop:
 * enough to empty a busy CQ in one go (cq_batch each), few enough that
 * bells and control sockets are not starved. */
#define PROGRESS_ROUNDS 64

static void net_progress(struct shd_net *n)
{
	bool yield = false;
	for (int i = 0; i < PROGRESS_ROUNDS; i++) {
		int r = shd_fabric_progress(n->fab, &n->cb, n);
		if (r < 0) {
			shd_err("fabric completion queue failed: %s", strerror(-r));
			break;
		}
		shd_net_retry_posts(n);
		while (!shd_list_empty(&n->drainq)) {
			struct shd_peer *p =
				shd_container_of(n->drainq.next, struct shd_peer, drain_link);
			shd_list_del(&p->drain_link);
			shd_net_rx_drain(p);
		}
		if (r == 0)
			break;
		if (!shd_list_empty(&n->d->dirty)) {
			/* records were placed: let the pass publish them and
			 * ring their bells first (it is already scheduled, so
			 * it runs before this event again), then go on */
			yield = true;
			break;
		}
	}
	shd_net_fwd_push(n); /* forwarded credits and liveness do not linger */
	if (shd_fabric_has_pending(n->fab) || !shd_list_empty(&n->retry)) {
		if (!shd_ev_armed(n->retry_ev))
			shd_ev_arm(n->retry_ev, 1000);
	}
	if (yield) {
		shd_net_kick(n);
		return;
	}
	/* sleep on the CQ fd only when libfabric says it is safe */
	if (!shd_fabric_trywait(n->fab))
		shd_net_kick(n);
}

void shd_net_on_fabric(int fd, void *arg)
{
	net_progress(arg);
}

static const char *const peer_state_names[PEER_STATE_MAX] = {
	[PEER_UNKNOWN] = "unknown", [PEER_JOINING] = "joining", [PEER_UP] = "up",
	[PEER_FAILED] = "failing",  [PEER_DOWN] = "down",
};

/* An up peer both ends left idle (peer_idle_ms) shows as "idle". */
static const char *peer_state_name(const struct shd_peer *p)
{
	return p->state == PEER_UP && p->idle ? "idle" : peer_state_names[p->state];
}

const char *shd_net_peer_state(const struct shd_daemon *d, uint32_t node)
{
	if (node == d->node_id)
		return "self";
	if (!d->net || node >= d->net->n_nodes)
		return NULL;
	return peer_state_name(&d->net->peers[node]);
}

json_t *shd_net_json(struct shd_daemon *d)
{
	json_t *a = json_array();
	struct shd_net *n = d->net;
	if (!n)
		return a;
	uint64_t now = shd_now_ns();
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		if (i == d->node_id)
			continue;
		const struct shd_peer *p = &n->peers[i];
		if (!shd_net_has_address(p) && p->state == PEER_UNKNOWN)
			continue; /* tcp: an id nobody has claimed, or not learned yet */
		json_t *o = json_object();
		json_object_set_new(o, "node", json_integer(i));
		json_object_set_new(o, "host", json_string(p->cold->host));
		json_object_set_new(o, "addr", json_string(p->cold->addr));
		char inc[24] = "";
		if (p->cold->incarnation)
			snprintf(inc, sizeof(inc), "%016llx", (unsigned long long)p->cold->incarnation);
		json_object_set_new(o, "state", json_string(peer_state_name(p)));
		json_object_set_new(o, "quiet", json_boolean(p->quiet));
		json_object_set_new(o, "waking", json_boolean(p->waking));
		json_object_set_new(o, "held", json_integer(p->n_held));
		json_object_set_new(o, "state_ms",
				    json_real((double)(now - p->cold->state_since_ns) / 1e6));
		json_object_set_new(o, "incarnation", json_string(inc));
		json_object_set_new(o, "last_heard_ms",
				    json_real((double)(now - p->last_heard_ns) / 1e6));
		json_object_set_new(o, "inflight", json_integer((json_int_t)(p->seq_sent - p->seq_acked)));
		json_object_set_new(o, "queued", json_integer((json_int_t)(p->seq_closed - p->seq_sent)));
		json_object_set_new(o, "open_bytes",
				    json_integer(p->open ? p->enc.off - SHF_WIRE_BATCH_HDR : 0));
		json_object_set_new(o, "parked", json_boolean(p->rx_waiting));
		unsigned nw = 0;
		for (const struct shd_list *q = p->cold->waiters.next; q != &p->cold->waiters; q = q->next)
			nw++;
		json_object_set_new(o, "waiters", json_integer(nw));
		/* routing: "direct", or "via N" (2d: the intermediate last used) */
		char via[24] = "direct";
		if (!shd_route_neighbor(&n->route, i) && p->via_out != SHD_ROUTE_NONE)
			snprintf(via, sizeof(via), "via %u", p->via_out);
		else if (!shd_route_neighbor(&n->route, i))
			snprintf(via, sizeof(via), "routed");
		json_object_set_new(o, "route", json_string(via));
		json_object_set_new(o, "linked", json_boolean(p->linked));
		shd_stats_peer_set(o, &p->cold->st);
		json_array_append_new(a, o);
	}
	return a;
}

int shd_net_not_up(struct shd_daemon *d, char *buf, size_t len)
{
	struct shd_net *n = d->net;
	size_t o = 0;
	int count = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		const struct shd_peer *p = &n->peers[i];
		if (i == d->node_id || p->state == PEER_UP || (!shd_net_has_address(p) && !p->cold->host[0]))
			continue;
		char item[96];
		snprintf(item, sizeof(item), "%s%u (%.40s, %s)", count ? ", " : "nodes not up: ", i,
			 p->cold->host[0] ? p->cold->host : "?", peer_state_names[p->state]);
		if (o + strlen(item) + 5 >= len) {
			if (o + 5 < len)
				snprintf(buf + o, len - o, ",...");
			count++;
			break;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s", item);
		count++;
	}
	return count;
}

uint32_t shd_net_nodes_up(const struct shd_daemon *d)
{
	const struct shd_net *n = d->net;
	uint32_t up = 1;
	for (uint32_t i = 0; n && i < n->n_nodes; i++)
		up += i != d->node_id && n->peers[i].state == PEER_UP;
	return up;
}

bool shd_net_peer_is_up(const struct shd_daemon *d, uint32_t node)
{
	const struct shd_net *n = d->net;
	return n && node < n->n_nodes && node != d->node_id && n->peers[node].state == PEER_UP;
}

bool shd_net_is_member(const struct shd_daemon *d, uint32_t node)
{
	if (node == d->node_id)
		return true;
	const struct shd_net *n = d->net;
	if (!n || node >= n->n_nodes)
		return false;
	const struct shd_peer *p = &n->peers[node];
	return shd_net_has_address(p) || p->state != PEER_UNKNOWN;
}

uint32_t shd_net_members(const struct shd_daemon *d)
{
	const struct shd_net *n = d->net;
	if (!n)
		return d->n_nodes;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->n_nodes; i++)
		k += shd_net_is_member(d, i);
	return k;
}

const char *shd_net_peer_host(const struct shd_daemon *d, uint32_t node)
{
	if (node == d->node_id)
		return d->cfg.node_name;
	if (!d->net || node >= d->net->n_nodes || !d->net->peers[node].cold->host[0])
		return NULL;
	return d->net->peers[node].cold->host;
}

const char *shd_net_auth_mode(const struct shd_daemon *d)
{
	if (!d->net)
		return "alone";
	return d->net->auth ? "key" : "none";
}

void shd_net_fabric_stats(struct shd_daemon *d, struct shf_fabric_stats *s)
{
	shd_fabric_stats_get(d->net->fab, s);
}

const struct shd_fabric_cb shd_net_fabric_cb = {
	.on_recv = on_recv,
	.on_send_done = on_send_done,
	.on_error = on_error,
};
