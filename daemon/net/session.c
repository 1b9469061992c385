/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/session.c - a peer's session rules (docs/protocol-wire.md,
 * "Sessions"): which message a session admits, the handshake that proves
 * the cluster key, the one routing per set, and a peer's address (learned
 * from the store or the directory, put back into the address vector).
 * net.c dispatches what these admit; declarations in net/int.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/int.h"
#include "daemon/net/post.h"
#include "daemon/stats.h"

struct shd_ratelimit shd_net_rl_wire = SHD_RATELIMIT_INIT(1000, 5);
/* failed handshakes and refused routing: a line now and then, not one per
 * probe (a peer with another key probes every second, forever) */
static struct shd_ratelimit rl_auth = SHD_RATELIMIT_INIT(10000, 2);
static struct shd_ratelimit rl_route = SHD_RATELIMIT_INIT(10000, 2);
static struct shd_ratelimit rl_held = SHD_RATELIMIT_INIT(10000, 2);

void shd_net_set_state(struct shd_peer *p, enum peer_state st)
{
	p->state = st;
	p->cold->state_since_ns = shd_now_ns();
}

/* Both tags agree: the session is established. */
static void become_up(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	shd_net_set_state(p, PEER_UP);
	p->last_heard_ns = shd_now_ns();
	p->cold->last_used_ns = p->last_heard_ns; /* a new session is a use */
	p->cold->st.sessions++;
	n->ev->peer_up(n->d, p->node, p->cold->host);
	shd_net_heartbeat(p, shd_now_ns()); /* so that it agrees too, at once */
	if (n->route.grid && shd_route_neighbor(&n->route, p->node)) {
		/* the way to the nodes behind it is open: probe them now
		 * rather than at the next probe period */
		for (uint32_t i = 0; i < n->n_nodes; i++) {
			struct shd_peer *q = &n->peers[i];
			if ((q->state == PEER_UNKNOWN || q->state == PEER_DOWN) &&
			    shd_route_is_via(&n->route, n->d->node_id, i, p->node)) {
				q->cold->last_probe_ns = shd_now_ns();
				shd_net_heartbeat(q, q->cold->last_probe_ns);
			}
		}
	}
}

/* p (UNKNOWN, DOWN or JOINING) sent a heartbeat of session tag s. */
void shd_net_join(struct shd_peer *p, uint64_t s, uint64_t incarnation)
{
	if (p->state != PEER_JOINING || p->cold->peer_session != s) {
		shd_net_early_discard(p); /* (kept for another tag of its) */
		p->cold->peer_session = s;
		p->cold->hb_ctr_in = 0; /* its counters of this session start afresh */
		p->cold->incarnation = incarnation;
		shd_net_set_state(p, PEER_JOINING);
		p->last_heard_ns = shd_now_ns();
	}
	shd_net_heartbeat(p, shd_now_ns()); /* tell it our tag */
}

static void stale(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h)
{
	n->d->st.wire_stale++;
	shd_log_rl(&shd_net_rl_wire, SHD_LOG_DEBUG, "node %u: %s of another session dropped "
		   "(state %d)", p->node, shf_wire_kind_name(h->kind), (int)p->state);
}

/* A handshake that does not prove the cluster key: refused and counted. */
static void auth_failed(struct shd_net *n, struct shd_peer *p, const char *why)
{
	n->d->st.auth_failed++;
	shd_log_rl(&rl_auth, SHD_LOG_WARN, "node %u (%s, %s): authentication failed: %s; its "
		   "handshake is refused (same cluster_key file on every node?)", p->node, p->cold->host,
		   p->cold->addr, why);
}

/*
 * With a key: does heartbeat h prove that its sender holds the cluster key
 * and saw our current nonce (a MAC over both nodes, both tags, both
 * nonces)?  Refused ones are counted (auth_failed) unless they merely come
 * too early: a probe that cannot carry our nonce yet (no ECHO: its sender
 * never heard from us in this session of ours) is not a failure, only not
 * a proof.  Without a key: only that the peer has none either.
 */
static bool hb_proves(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h,
		      bool count_early)
{
	const struct shf_wire_heartbeat *hb = &h->u.heartbeat;
	if (!n->auth) {
		if (hb->flags & SHF_WIRE_HB_MAC) {
			auth_failed(n, p, "it uses a cluster key, this daemon has none");
			return false;
		}
		return true;
	}
	if (!(hb->flags & SHF_WIRE_HB_MAC)) {
		auth_failed(n, p, "it has no cluster key");
		return false;
	}
	if (!(hb->flags & SHF_WIRE_HB_ECHO)) {
		if (count_early)
			auth_failed(n, p, "its heartbeat does not answer our nonce");
		else
			stale(n, p, h);
		return false;
	}
	struct shd_auth_hb m = {h->src_node, h->dst_node, h->src_session, h->dst_session,
				hb->nonce, p->cold->my_nonce, !!(hb->flags & SHF_WIRE_HB_CTR), hb->counter};
	if (!shd_auth_verify(n->auth, &m, hb->mac)) {
		auth_failed(n, p, "wrong MAC (another cluster key, or forged)");
		return false;
	}
	return true;
}

/*
 * With a key: a heartbeat of p's current session (up) is taken only when
 * its MAC, over both tags, both nonces and its counter, verifies and its
 * counter is above the last one taken (docs/protocol-wire.md,
 * "Authentication"): a heartbeat captured on the wire and sent again, from
 * a dead node's vacant address say, does not keep the session alive.
 * Refused ones count in hb_refused.  Without a key: taken.
 */
static bool hb_fresh(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h)
{
	const struct shf_wire_heartbeat *hb = &h->u.heartbeat;
	if (!n->auth)
		return true;
	const char *why = NULL;
	if ((hb->flags & (SHF_WIRE_HB_MAC | SHF_WIRE_HB_ECHO | SHF_WIRE_HB_CTR)) !=
	    (SHF_WIRE_HB_MAC | SHF_WIRE_HB_ECHO | SHF_WIRE_HB_CTR)) {
		why = "it carries no counted MAC (an older daemon?)";
	} else if (hb->counter <= p->cold->hb_ctr_in) {
		why = "its counter is not above the last one taken (a replay)";
	} else {
		struct shd_auth_hb m = {h->src_node, h->dst_node, h->src_session, h->dst_session,
					hb->nonce, p->cold->my_nonce, true, hb->counter};
		if (!shd_auth_verify(n->auth, &m, hb->mac))
			why = "wrong MAC";
	}
	if (why) {
		n->d->st.hb_refused++;
		shd_log_rl(&rl_auth, SHD_LOG_WARN, "node %u (%s, %s): a heartbeat of its session "
			   "refused: %s; it does not count as liveness", p->node, p->cold->host, p->cold->addr,
			   why);
		return false;
	}
	p->cold->hb_ctr_in = hb->counter;
	return true;
}

/* The names of a peer without any: shared, never freed. */
static const char no_name[] = "";

static bool name_dup(const char **dst, const char *src)
{
	*dst = no_name;
	return !src || !src[0] || (*dst = strdup(src)) != NULL;
}

static void name_free(const char *s)
{
	if (s && s != no_name)
		free((void *)s);
}

bool shd_net_peer_names(struct shd_peer *p, const char *host, const char *addr, const char *port,
			const void *raw, uint32_t raw_len)
{
	struct shd_peer_cold *c = p->cold;
	const char *h = NULL, *a = NULL, *o = NULL;
	uint8_t *r = NULL;
	if ((host && !name_dup(&h, host)) || (addr && !name_dup(&a, addr)) ||
	    (port && !name_dup(&o, port)) || (raw && raw_len && !(r = malloc(raw_len)))) {
		name_free(h);
		name_free(a);
		name_free(o);
		return false;
	}
	if (host) {
		name_free(c->host);
		c->host = h;
	}
	if (addr) {
		name_free(c->addr);
		c->addr = a;
	}
	if (port) {
		name_free(c->port);
		c->port = o;
	}
	if (raw) {
		if (raw_len)
			memcpy(r, raw, raw_len);
		free((void *)c->raw_addr);
		c->raw_addr = r;
		c->raw_len = raw_len;
	}
	return true;
}

void shd_net_peer_names_free(struct shd_peer *p)
{
	struct shd_peer_cold *c = p->cold;
	if (!c)
		return;
	name_free(c->host);
	name_free(c->addr);
	name_free(c->port);
	free((void *)c->raw_addr);
	c->host = c->addr = c->port = no_name;
	c->raw_addr = NULL;
	c->raw_len = 0;
}

bool shd_net_has_address(const struct shd_peer *p)
{
	return p->cold->raw_len || p->cold->port[0];
}

/* Records in the store without a MAC that verifies (a key): counted in
 * store_bad_mac, a line now and then naming the key file. */
void shd_net_store_bad_records(struct shd_net *n)
{
	static struct shd_ratelimit rl = SHD_RATELIMIT_INIT(10000, 2);
	const char *key = NULL;
	uint64_t bad = shd_rdv_bad_records(n->rdv, &key);
	if (bad <= n->store_bad_seen)
		return;
	n->d->st.store_bad_mac += bad - n->store_bad_seen;
	n->store_bad_seen = bad;
	shd_log_rl(&rl, SHD_LOG_WARN, "store: %s has no valid MAC under the cluster key %s: "
		   "ignored (%" PRIu64 " such records so far; forged, or a node with another "
		   "key)", key, n->d->cfg.cluster_key, bad);
}

/* A sender not in the address vector claims to be p (tcp, dir without N:
 * a node that published itself after our rendezvous, or moved): look p up
 * in the store or the directory, at most once a second per node.  A store
 * lookup blocks the loop for up to LOOKUP_MS, and anyone can claim any
 * id: all lookups together get at most LOOKUP_MS of each second (when the
 * store answers, that is hundreds of lookups; when it does not, one), so
 * claims cannot stall the loop into missing its own heartbeats.  A new address found there
 * is put into the address vector; the message that prompted the lookup is
 * dropped all the same (the caller counts it foreign): only what comes
 * from the published address is taken, and the node's next heartbeat, or
 * our probe's answer, does.  Only for a peer that is unknown or down: the
 * address of a peer in a session is never replaced on the store's word
 * (docs/design.md, "Threat model").  true when an address was learned. */
bool shd_net_learn_address(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	uint64_t now = shd_now_ns();
	if (!n->rdv || now - p->cold->last_lookup_ns < 1000000000u)
		return false;
	if (now - n->lookup_window_ns >= 1000000000u) {
		n->lookup_window_ns = now;
		n->lookup_spent_ns = 0;
	}
	uint64_t left_ns = (uint64_t)LOOKUP_MS * 1000000u - n->lookup_spent_ns;
	if (n->lookup_spent_ns >= (uint64_t)LOOKUP_MS * 1000000u || left_ns < 1000000u) {
		n->d->st.lookups_deferred++; /* this second's budget is spent */
		return false;
	}
	p->cold->last_lookup_ns = now;
	struct shd_rdv_node rn;
	char err[256] = "";
	int r = shd_rdv_lookup(n->rdv, p->node, (int)(left_ns / 1000000u), &rn, err, sizeof(err));
	n->lookup_spent_ns += shd_now_ns() - now;
	if (r == -EBADMSG)
		shd_net_store_bad_records(n); /* (with a key: no valid MAC) */
	if (r < 0) {
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u contacted us but its address "
			   "is not known: %s", p->node, r == -ENOENT ? "not in the store (yet)" : err);
		return false;
	}
	if (p->cold->raw_len == rn.addr_len && !memcmp(p->cold->raw_addr, rn.addr, rn.addr_len))
		return false; /* the address we have: the sender is not at it */
	bool moved = shd_net_has_address(p);
	if (moved && p->state != PEER_UNKNOWN && p->state != PEER_DOWN) {
		/* The store's word alone never moves a peer we hear from (up,
		 * joining, or failing): anyone who reaches the store can write
		 * a record.  If it really moved, its old address falls silent,
		 * its session ends after peer_timeout_ms, and the next message
		 * from the new address finds it down: then the address is
		 * taken.  With a key, what comes from the new address must
		 * still prove it before the peer is up. */
		n->d->st.addr_held++;
		char got[SHD_NET_ADDR_STR_MAX];
		shd_fabric_addr_str(n->fab, rn.addr, rn.addr_len, got, sizeof(got));
		shd_log_rl(&rl_held, SHD_LOG_WARN, "node %u (%s) is %s at %s; the store names "
			   "another address (%s): kept until the old one is silent for "
			   "peer_timeout_ms", p->node, p->cold->host,
			   p->state == PEER_UP ? "up" : "in a session", p->cold->addr, got);
		return false;
	}
	if (moved)
		shd_fabric_remove(n->fab, p->node);
	char as[SHD_NET_ADDR_STR_MAX];
	shd_fabric_addr_str(n->fab, rn.addr, rn.addr_len, as, sizeof(as));
	if (!shd_net_peer_names(p, rn.host, as, NULL, rn.addr, rn.addr_len)) {
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u: no memory for its address "
			   "(%s); not taken", p->node, as);
		if (moved)
			shd_net_reinsert(p); /* the old one, as it was */
		return false;
	}
	shd_net_reinsert(p);
	shd_info("node %u (%s) %s: %s", p->node, p->cold->host, moved ? "has a new address"
								: "joined the set", p->cold->addr);
	if (p->state == PEER_UNKNOWN || p->state == PEER_DOWN) {
		p->cold->last_probe_ns = now; /* probe it there now: its answer is taken */
		shd_net_heartbeat(p, now);
	}
	return true;
}

/*
 * The session rules (docs/protocol-wire.md, "Sessions").  A message is
 * taken only when its tags are the current ones of an UP peer; a heartbeat
 * with a new tag starts (or, from an UP peer, restarts) a session.  With a
 * key, a JOINING peer's message with both tags of the coming session is
 * early (SHD_ADMIT_EARLY): the peer is up already, and the heartbeat that
 * ends our side of the handshake was lost or comes later (routing=2d: an
 * intermediate drops heartbeats for a node it has no session with yet).
 * Anything else belongs to another session and is dropped (wire_stale).
 */
enum shd_admit shd_net_session_admit(struct shd_peer *p, const struct shf_wire_hdr *h)
{
	struct shd_net *n = p->net;
	uint64_t s = h->src_session, t = h->dst_session;
	bool hb = h->kind == SHF_WIRE_HEARTBEAT;
	uint64_t inc = hb ? h->u.heartbeat.incarnation : 0;
	if (s == 0 || (t != 0 && t != p->cold->my_session)) {
		stale(n, p, h);
		return SHD_ADMIT_DROP;
	}
	switch (p->state) {
	case PEER_UP:
		if (s == p->cold->peer_session && t == p->cold->my_session)
			return !hb || hb_fresh(n, p, h) ? SHD_ADMIT_TAKE : SHD_ADMIT_DROP;
		if (hb && s != p->cold->peer_session) {
			/* with a key, only a heartbeat proving the key over our
			 * current nonce ends a session (a restarted peer learns
			 * our nonce from the heartbeats we keep sending it) */
			if (!hb_proves(n, p, h, false))
				return SHD_ADMIT_DROP;
			/* it restarted, or declared us down: this session ends, the
			 * next one starts once the old one is carried out */
			p->cold->next_session = s;
			p->cold->next_incarnation = inc;
			shd_net_peer_fail(p, inc != p->cold->incarnation ? "it restarted"
								  : "it started a new session");
			return SHD_ADMIT_DROP;
		}
		break;
	case PEER_FAILED:
		if (hb && s != p->cold->peer_session) {
			/* remembered, answered once the old session is carried out */
			p->cold->next_session = s;
			p->cold->next_incarnation = inc;
			return SHD_ADMIT_DROP;
		}
		break;
	case PEER_UNKNOWN:
	case PEER_DOWN:
	case PEER_JOINING:
		if (!hb && !n->auth && p->state == PEER_JOINING && s == p->cold->peer_session &&
		    t == p->cold->my_session) {
			/* without a key any message of the session completes the
			 * handshake; with one, only a heartbeat proving the key */
			become_up(p);
			return SHD_ADMIT_TAKE; /* data may follow the handshake at once */
		}
		if (hb) {
			if (t == p->cold->my_session) { /* it knows us already: the handshake's end */
				if (!hb_proves(n, p, h, true))
					return SHD_ADMIT_DROP;
				shd_net_join(p, s, inc);
				p->cold->hb_ctr_in = h->u.heartbeat.counter;
				become_up(p);
				return SHD_ADMIT_TAKE;
			}
			/* a probe: answered, which grants nothing; with a key it
			 * must at least carry one (another mode never joins) */
			if ((h->u.heartbeat.flags & SHF_WIRE_HB_MAC) != (n->auth ? SHF_WIRE_HB_MAC : 0u)) {
				auth_failed(n, p, n->auth ? "it has no cluster key"
							  : "it uses a cluster key, this daemon has none");
				return SHD_ADMIT_DROP;
			}
			shd_net_join(p, s, inc);
			return SHD_ADMIT_DROP;
		}
		if (p->state == PEER_JOINING && s == p->cold->peer_session &&
		    t == p->cold->my_session)
			return SHD_ADMIT_EARLY; /* (with a key) it is up on its side */
		break;
	case PEER_STATE_MAX:
		break;
	}
	stale(n, p, h);
	return SHD_ADMIT_DROP;
}

/*
 * Messages that came early (SHD_ADMIT_EARLY): the peer is up on its side,
 * our side waits for its heartbeat that proves the key.  Kept in arrival
 * order and taken, in that order, right after that heartbeat; dropped
 * with the tag they belong to.  Bounded by what a sender may have in
 * flight before it hears back (peer_credits batches of batch_bytes, and
 * its small messages: SHD_NET_EARLY_SLACK) and by batch_budget / 4 over
 * all peers; a message over the bound is dropped, counted, and the session
 * restarts once up (shd_net_early_next), so that its sender charges what
 * it did not hear acknowledged: never a silent gap in the batch sequence.
 */
#define SHD_NET_EARLY_SLACK (64u * 1024u)

void shd_net_early_hold(struct shd_peer *p, const void *buf, const struct shf_wire_hdr *h)
{
	struct shd_net *n = p->net;
	const struct shd_config *c = &n->d->cfg;
	uint64_t need = sizeof(struct net_early) + h->len;
	uint64_t peer_max = (uint64_t)c->peer_credits * c->batch_bytes + SHD_NET_EARLY_SLACK;
	struct net_early *e = NULL;
	if (p->cold->early_bytes + need <= peer_max && n->early_bytes + need <= c->batch_budget / 4)
		e = malloc(need);
	if (!e) {
		n->d->st.early_dropped++;
		p->cold->early_lost = true;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u: a %s of its session came before "
			   "the handshake ended here and does not fit (%u kept, %u bytes): dropped; the "
			   "session restarts once up", p->node, shf_wire_kind_name(h->kind),
			   p->cold->n_early, p->cold->early_bytes);
		return;
	}
	e->len = h->len;
	memcpy(e->buf, buf, h->len);
	shd_list_add_tail(&p->cold->early, &e->link);
	p->cold->early_bytes += (uint32_t)need;
	n->early_bytes += need;
	n->d->st.early_held++;
	if (p->cold->n_early++ == 0)
		shd_net_heartbeat(p, shd_now_ns()); /* HB_WAKE: "answer me" (post.c) */
}

struct net_early *shd_net_early_next(struct shd_peer *p)
{
	if (p->cold->early_lost && p->state == PEER_UP) {
		p->cold->early_lost = false;
		shd_net_early_discard(p);
		shd_net_peer_fail(p, "messages of its session came before the handshake ended "
				  "and did not fit");
		return NULL;
	}
	if (!p->cold->n_early || p->state != PEER_UP)
		return NULL;
	struct net_early *e = shd_container_of(p->cold->early.next, struct net_early, link);
	shd_list_del(&e->link);
	p->cold->n_early--;
	p->cold->early_bytes -= (uint32_t)(sizeof(*e) + e->len);
	p->net->early_bytes -= sizeof(*e) + e->len;
	return e;
}

void shd_net_early_discard(struct shd_peer *p)
{
	struct shd_peer_cold *c = p->cold;
	while (c->n_early) {
		struct net_early *e = shd_container_of(c->early.next, struct net_early, link);
		shd_list_del(&e->link);
		c->n_early--;
		p->net->early_bytes -= sizeof(*e) + e->len;
		free(e);
	}
	c->early_bytes = 0;
}

/* One routing per set (routing=direct or 2d), checked at join like the
 * cluster key: a heartbeat of the other kind is refused, and so is
 * anything that comes directly from a node that is not a neighbour under
 * 2d, or a FWD under direct.  true: go on. */
bool shd_net_routing_ok(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h)
{
	bool grid = n->route.grid;
	const char *why = NULL;
	if (h->kind == SHF_WIRE_HEARTBEAT && !!(h->u.heartbeat.flags & SHF_WIRE_HB_2D) != grid)
		why = grid ? "it routes direct, this daemon 2d" : "it routes 2d, this daemon direct";
	else if ((h->kind == SHF_WIRE_FWD || h->kind == SHF_WIRE_FWD_LOST ||
		  h->kind == SHF_WIRE_FWD_BUNDLE) && !grid)
		why = "it forwards (routing=2d), this daemon routes direct";
	else if (grid && !shd_route_neighbor(&n->route, p->node))
		why = "it is not in this node's row or column but sent directly "
		      "(routing=2d here; is its routing or node count another?)";
	if (!why)
		return true;
	n->d->st.routing_refused++;
	shd_log_rl(&rl_route, SHD_LOG_WARN, "node %u (%s, %s): %s refused: %s; routing must be "
		   "the same on every daemon", p->node, p->cold->host, p->cold->addr, shf_wire_kind_name(h->kind),
		   why);
	return false;
}

/* Put p back into the address vector (a down removed it, dropping what the
 * fabric still queued for it), so that it can be probed and rejoin. */
void shd_net_reinsert(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	if (!p->cold->raw_len && !p->cold->port[0])
		return; /* its address was never known (dir without N) */
	int r = p->cold->raw_len ? shd_fabric_insert(n->fab, p->cold->raw_addr, p->cold->raw_len, p->node)
			   : shd_fabric_insert_svc(n->fab, p->cold->host, p->cold->port, p->node);
	if (r < 0 && r != -EEXIST)
		shd_err("node %u (%s): cannot put it back into the address vector: %s; it cannot "
			"rejoin", p->node, p->cold->host, strerror(-r));
}
