/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/tx.c - the sending half of the peer protocol.
 *
 * Batches: one open batch per destination node, filled by the relay
 * (shd_net_append) and closed when it reaches batch_bytes, when its oldest
 * record is linger_us old, when its job changes, or for a flush.  A closed
 * batch gets the next per-peer sequence number and is posted when the peer
 * has credit (at most peer_credits unacknowledged batches per peer,
 * max_inflight in total).  When a peer has no credit and its batch is full
 * the client whose record is next waits (head of line), so backpressure
 * reaches shf_send().
 *
 * Buffers: batches come from one slab of batch_budget bytes cut into
 * batch-sized buffers, registered with the fabric once (providers with
 * FI_MR_LOCAL need it); its pages are touched only when a buffer is first
 * used, and the lowest free buffer is reused first.  Control messages
 * (ACK, HEARTBEAT, JOB_JOIN, JOB_LEAVE, EPOCH, DROP) are at most
 * SHD_FABRIC_SMALL bytes and go through the fabric's small-message path,
 * which copies them into its own registered slot: no allocation, unless
 * every slot is busy (then a copy waits in the retry queue, in order).
 *
 * Routing (routing=2d, daemon/net/route.h): a message for a peer that is not
 * in this node's row or column is stamped with that pair's tags as usual,
 * then wrapped in a FWD header (written into the 32 bytes of room before
 * every pool buffer and small-message copy) and sent to the intermediate
 * (shd_net_hop); the intermediate passes it on unopened
 * (shd_net_forward).  A routed peer whose intermediate is not up cannot
 * be sent to: its session fails (-ENETUNREACH).
 *
 * Bundles: the intermediate gathers the FWDs it passes on to the same
 * next node into one FWD_BUNDLE (one open bundle per next node, in a pool
 * buffer), sent like a batch when it holds batch_bytes, when its first
 * FWD is linger_us old (the same linger timer), or at the end of the
 * progress round when it carries anything but batches (credits, liveness
 * and epochs do not wait); alone, a FWD goes as itself.  Forwarding holds
 * at most half of the pool (fwd_max): beyond it, and when the pool is
 * empty, a copy waits in fwd_wait, in arrival order, for a buffer that
 * forwarding gives back; the other half stays for this node's own batches.
 *
 * Failure: a send the fabric refuses, or that completes with an error,
 * marks the peer PEER_FAILED (shd_net_peer_fail): from then on nothing is
 * queued for it and appends answer -EHOSTDOWN.  The records of a batch
 * that failed are reported to their senders (ev->drops, -EHOSTDOWN).
 * The rest (queued batches, marks, credit) is carried out at the pass's
 * peers step (shd_net_tx_down), never inside the caller's update.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/jobtab.h"
#include "daemon/net/int.h"
#include "daemon/net/tx.h"
#include "daemon/sched.h"

void shd_net_kick(struct shd_net *n)
{
	shd_ev_activate(n->progress_ev);
}

void shd_net_peer_fail(struct shd_peer *p, const char *why)
{
	struct shd_net *n = p->net;
	if (p->state != PEER_UP)
		return;
	p->state = PEER_FAILED;
	snprintf(p->cold->down_why, sizeof(p->cold->down_why), "%s", why);
	shd_list_add_tail(&n->downq, &p->cold->down_link);
	shd_sched_pass(n->d);
}

/* ------------------------------------------------------------- buffers */

int shd_net_pool_init(struct shd_net *n)
{
	const struct shd_config *cfg = &n->d->cfg;
	n->pool_max = (uint32_t)(cfg->batch_budget / n->batch_cap);
	if (n->pool_max < 1)
		n->pool_max = 1;
	/* each buffer: room for a FWD header (2d), then batch_cap bytes */
	size_t stride = (size_t)n->room + n->batch_cap;
	n->slab_bytes = (size_t)n->pool_max * stride;
	/* anonymous memory: a page is committed when a batch first uses it */
	void *slab = mmap(NULL, n->slab_bytes, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slab == MAP_FAILED)
		return -errno;
	n->slab = slab;
	n->msgs = calloc(n->pool_max, sizeof(*n->msgs));
	n->pool = calloc(n->pool_max, sizeof(*n->pool));
	if (!n->msgs || !n->pool)
		return -ENOMEM;
	for (uint32_t i = 0; i < n->pool_max; i++) {
		struct net_msg *m = &n->msgs[i];
		shd_list_init(&m->link);
		m->kind = NET_MSG_BATCH;
		m->buf = n->slab + (size_t)i * stride + n->room;
		n->pool[n->pool_max - 1 - i] = m; /* lowest address on top */
	}
	n->pool_free = n->pool_max;
	n->fwd_max = n->pool_max / 2 ? n->pool_max / 2 : 1;
	return shd_fabric_mr_reg(n->fab, n->slab, n->slab_bytes);
}

void shd_net_pool_fini(struct shd_net *n)
{
	if (n->slab)
		munmap(n->slab, n->slab_bytes);
	free(n->msgs);
	free(n->pool);
}

struct net_msg *shd_net_pool_get(struct shd_net *n)
{
	if (!n->pool_free)
		return NULL;
	struct net_msg *m = n->pool[--n->pool_free];
	if (n->pool_max - n->pool_free > n->pool_used_max)
		n->pool_used_max = n->pool_max - n->pool_free;
	return m;
}

static void post(struct shd_net *n, struct net_msg *m);
static void fwd_drain(struct shd_net *n);

void shd_net_pool_put(struct shd_net *n, struct net_msg *m)
{
	n->pool[n->pool_free++] = m;
	fwd_drain(n); /* forwards that waited for a buffer first */
	if (n->pool_free)
		shd_sched_wake(&n->pool_waiters);
}

/* ------------------------------------------------------------- posting */

uint32_t shd_net_hop(struct shd_net *n, struct shd_peer *p)
{
	uint32_t v[2];
	unsigned k = shd_route_vias(&n->route, n->d->node_id, p->node, v);
	uint32_t hop = p->node;
	if (k) {
		/* the preferred intermediate if it is up, else the other if
		 * that one is (a way around an intermediate that is down or
		 * not running), else the first not known to be down */
		hop = SHD_ROUTE_NONE;
		for (unsigned i = 0; i < k && hop == SHD_ROUTE_NONE; i++)
			if (n->peers[v[i]].state == PEER_UP)
				hop = v[i];
		for (unsigned i = 0; i < k && hop == SHD_ROUTE_NONE; i++)
			if (n->peers[v[i]].state != PEER_FAILED && n->peers[v[i]].state != PEER_DOWN)
				hop = v[i];
		if (hop == SHD_ROUTE_NONE)
			hop = v[0];
	}
	p->via_out = hop == p->node ? SHD_ROUTE_NONE : hop;
	return hop;
}

/* Put a FWD header for hop in the room before msg (len bytes for p, its
 * tags stamped); 0, or -ENETUNREACH when the hop is not up (the message
 * cannot go: it is p's failure, not the hop's). */
static int wrap(struct shd_net *n, struct shd_peer *p, uint32_t hop, uint8_t *msg)
{
	struct shd_peer *h = &n->peers[hop];
	(void)p;
	if (h->state != PEER_UP)
		return -ENETUNREACH;
	shf_wire_enc_fwd_hdr(msg - SHF_WIRE_FWD_HDR, SHF_WIRE_FWD_HDR, n->d->node_id, hop);
	shf_wire_stamp(msg - SHF_WIRE_FWD_HDR, h->cold->my_session, h->cold->peer_session);
	h->linked = true;
	return 0;
}

static int fab_send(struct shd_net *n, struct net_msg *m)
{
	if (m->kind == NET_MSG_FWD) {
		/* forwarded: the hop's tags, the carried message untouched */
		uint8_t *b = m->buf - n->room;
		shf_wire_stamp(b, m->peer->cold->my_session, m->peer->cold->peer_session);
		m->peer->linked = true;
		return shd_fabric_send(n->fab, m->peer->node, b, m->len, m);
	}
	/* the session it belongs to (a queued message of an earlier session
	 * never gets here: it was dropped when that session ended) */
	shf_wire_stamp(m->buf, m->peer->cold->my_session, m->peer->cold->peer_session);
	uint32_t hop = shd_net_hop(n, m->peer);
	uint8_t *b = m->buf;
	size_t len = m->len;
	if (hop != m->peer->node) {
		int r = wrap(n, m->peer, hop, m->buf);
		if (r < 0)
			return r;
		b -= SHF_WIRE_FWD_HDR;
		len += SHF_WIRE_FWD_HDR;
	} else {
		m->peer->linked = true;
	}
	if (m->kind == NET_MSG_SMALL)
		return shd_fabric_send_small(n->fab, hop, b, len, &m->peer->cold->inline_ctx[m->gen & 1]);
	return shd_fabric_send(n->fab, hop, b, len, m);
}

/* The fabric took m (0: posted, 1: queued inside the fabric). */
static void handed_over(struct shd_net *n, struct net_msg *m)
{
	if (m->kind == NET_MSG_SMALL)
		free(m); /* the fabric copied it */
	shd_net_kick(n);
}

/* Hand a message to the fabric, keeping per-peer order behind any queued. */
static void post(struct shd_net *n, struct net_msg *m)
{
	if (!shd_list_empty(&n->retry)) {
		shd_list_add_tail(&n->retry, &m->link);
		return;
	}
	int r = fab_send(n, m);
	if (r == 0 || r == 1) {
		handed_over(n, m);
		return;
	}
	if (r == -EAGAIN) {
		shd_list_add_tail(&n->retry, &m->link);
		return;
	}
	/* refused outright: the peer is unusable (send_done marks it) */
	shd_net_send_done(n, m, r);
}

void shd_net_retry_posts(struct shd_net *n)
{
	while (!shd_list_empty(&n->retry)) {
		struct net_msg *m = shd_container_of(n->retry.next, struct net_msg, link);
		if (m->gen != m->peer->gen || m->peer->state == PEER_FAILED) {
			/* of an ended or ending session: never posted, reported
			 * now (before peer_lost); a probe or handshake heartbeat
			 * of the current session goes on */
			shd_list_del(&m->link);
			shd_net_send_done(n, m, -EHOSTDOWN);
			continue;
		}
		int r = fab_send(n, m);
		if (r == -EAGAIN)
			return;
		shd_list_del(&m->link);
		if (r == 0 || r == 1)
			handed_over(n, m);
		else
			shd_net_send_done(n, m, r);
	}
}

/* A heap copy of a control message for p (the retry queue, a wake's
 * held queue), with room for a FWD header before it; NULL: no memory. */
static struct net_msg *small_copy(struct shd_peer *p, const void *msg, size_t len)
{
	struct net_msg *m = malloc(sizeof(*m) + SHD_FABRIC_HOP_ROOM + len);
	if (!m)
		return NULL;
	shd_list_init(&m->link);
	m->peer = p;
	m->kind = NET_MSG_SMALL;
	m->gen = p->gen;
	m->len = (uint32_t)len;
	m->buf = (uint8_t *)(m + 1) + SHD_FABRIC_HOP_ROOM; /* room for a FWD header */
	memcpy(m->buf, msg, len);
	return m;
}

/* What an inline send to p did (r from shd_fabric_send_small): true when
 * it is over (sent, or p failed with the reason); false on -EAGAIN, when
 * the caller queues a copy instead. */
static bool small_sent(struct shd_peer *p, int r)
{
	if (r == 0 || r == 1) {
		shd_net_kick(p->net);
		return true;
	}
	if (r == -EAGAIN)
		return false;
	char why[96];
	snprintf(why, sizeof(why), "send failed: %s", strerror(-r));
	shd_net_peer_fail(p, why);
	return true;
}

/* A small control message to p, stamped with the current session. */
static void small_send(struct shd_peer *p, const void *msg, long len)
{
	struct shd_net *n = p->net;
	_Alignas(8) uint8_t room[SHD_FABRIC_HOP_ROOM + SHD_FABRIC_SMALL];
	uint8_t *buf = room + SHD_FABRIC_HOP_ROOM;
	_Static_assert(SHD_FABRIC_HOP_ROOM == SHF_WIRE_FWD_HDR, "a FWD header fits the room");
	if (len <= 0 || len > (long)SHD_FABRIC_SMALL) {
		shd_warn("cannot encode a wire message for node %u (%ld)", p->node, len);
		return;
	}
	memcpy(buf, msg, (size_t)len);
	shf_wire_stamp(buf, p->cold->my_session, p->cold->peer_session);
	if (shd_list_empty(&n->retry)) {
		uint32_t hop = shd_net_hop(n, p);
		uint8_t *b = buf;
		size_t blen = (size_t)len;
		if (hop != p->node) {
			if (wrap(n, p, hop, buf) < 0) {
				/* the way to it is down: so is it, for us (a
				 * probe or handshake just waits for the way) */
				char why[96];
				snprintf(why, sizeof(why), "its route through node %u is down "
					 "(routing=2d)", hop);
				shd_net_peer_fail(p, why);
				return;
			}
			b -= SHF_WIRE_FWD_HDR;
			blen += SHF_WIRE_FWD_HDR;
		} else {
			p->linked = true;
		}
		if (small_sent(p, shd_fabric_send_small(n->fab, hop, b, blen,
							&p->cold->inline_ctx[p->gen & 1])))
			return;
	}
	/* every send slot is busy (or others wait): a copy waits its turn */
	struct net_msg *m = small_copy(p, buf, (size_t)len);
	if (!m) {
		shd_err("node %u: out of memory queueing a control message", p->node);
		return;
	}
	shd_list_add_tail(&n->retry, &m->link);
	shd_net_kick(n); /* progress arms the retry timer */
}

/*
 * The wake (docs/protocol-wire.md, "Idle peers").  A peer that is idle or
 * quiet may be releasing its connection to us right now, and a release
 * drops what it has not read.  So a wake sends only heartbeats (HB_WAKE,
 * each heartbeat_ms) until the peer answers: every other message is held,
 * control messages in p->cold->held (in order, each with the batch sequence
 * number closed before it), batches in p->sendq (try_send waits).  A
 * wake heartbeat lost in a release is sent again at the next tick; the
 * answer proves that the peer is awake (it never releases while awake),
 * and what was held goes then, in order.  No answer within
 * peer_timeout_ms: it fails like any silent peer and what was held is
 * dropped, counted and reported (shd_net_tx_down).
 */
static void held_drop(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	while (!shd_list_empty(&p->cold->held)) {
		struct net_msg *m = shd_container_of(p->cold->held.next, struct net_msg, link);
		shd_list_del(&m->link);
		n->d->st.wake_dropped++;
		shd_net_send_done(n, m, -EHOSTDOWN);
	}
	p->n_held = 0;
	p->waking = false;
}

/* Hold m (SMALL or POOLED, of p's current session) until p answers the
 * wake; false when the held queue is full: p fails (its loss is what
 * reports the messages), and the caller drops m. */
static bool hold(struct shd_peer *p, struct net_msg *m)
{
	if (p->n_held >= SHD_NET_HELD_MAX) {
		char why[96];
		snprintf(why, sizeof(why), "woken, no answer while %u messages were held", p->n_held);
		shd_net_peer_fail(p, why);
		p->net->d->st.wake_dropped++;
		return false;
	}
	m->seq = p->seq_closed; /* the batches closed before it go before it */
	shd_list_add_tail(&p->cold->held, &m->link);
	p->n_held++;
	p->net->d->st.wake_held++;
	return true;
}

/* A copy of a small control message, held while p is being woken. */
static void hold_small(struct shd_peer *p, const void *msg, long len)
{
	if (len <= 0 || len > (long)SHD_FABRIC_SMALL) {
		shd_warn("cannot encode a wire message for node %u (%ld)", p->node, len);
		return;
	}
	struct net_msg *m = small_copy(p, msg, (size_t)len); /* stamped when posted (fab_send) */
	if (!m) {
		shd_net_peer_fail(p, "out of memory holding a control message during a wake");
		p->net->d->st.wake_dropped++;
		return;
	}
	if (!hold(p, m))
		free(m);
}

static void try_send_upto(struct shd_peer *p, uint64_t upto);

void shd_net_heard(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	if (!p->waking)
		return;
	p->waking = false;
	shd_debug("peer node %u answered the wake: %u held messages go", p->node, p->n_held);
	while (!shd_list_empty(&p->cold->held) && p->state == PEER_UP) {
		struct net_msg *m = shd_container_of(p->cold->held.next, struct net_msg, link);
		try_send_upto(p, m->seq); /* the batches closed before it */
		shd_list_del(&m->link);
		p->n_held--;
		post(n, m);
	}
	try_send_upto(p, UINT64_MAX);
	/* (a post that failed p leaves the rest held: shd_net_tx_down drops
	 * and counts it) */
}

/* p was idle, quiet or released and is used again: active, heartbeated
 * from now on (one at once); hold: our own use, held until it answers. */
static void wake(struct shd_peer *p, bool hold)
{
	uint64_t now = shd_now_ns();
	p->cold->last_used_ns = now;
	if (p->quiet) {
		p->quiet = false;
		p->last_heard_ns = now; /* its answer is due within peer_timeout_ms */
	}
	if (p->idle) {
		p->idle = false;
		p->net->d->st.peers_woken++;
	}
	p->released = false;
	if (hold && !p->waking) {
		p->waking = true; /* hold everything but heartbeats until it answers */
		p->net->d->st.wakes++;
	}
	shd_net_heartbeat(p, now); /* heartbeats resume (HB_WAKE while waking) */
}

void shd_net_use(struct shd_peer *p)
{
	/* per appended message: a flag, no clock read (the heartbeat tick
	 * turns it into last_used_ns) */
	p->used = true;
	if (p->idle || p->quiet || p->released)
		wake(p, true);
}

void shd_net_woken(struct shd_peer *p)
{
	p->used = true;
	if (p->idle || p->quiet || p->released)
		wake(p, false);
}

/* A small control message to p: held while p is being woken. */
static void small_out(struct shd_peer *p, const void *buf, long len)
{
	if (p->waking)
		hold_small(p, buf, len);
	else
		small_send(p, buf, len);
}

void shd_net_send_small(struct shd_peer *p, const void *buf, long len)
{
	if (p->state == PEER_UP) {
		shd_net_use(p);
		small_out(p, buf, len);
	}
}

void shd_net_heartbeat(struct shd_peer *p, uint64_t now)
{
	struct shd_net *n = p->net;
	if (p->state == PEER_FAILED)
		return;
	uint8_t buf[SHF_WIRE_HEARTBEAT_BYTES];
	struct shf_wire_heartbeat hb = {.time_ns = now, .incarnation = n->incarnation};
	memcpy(hb.nonce, p->cold->my_nonce, sizeof(hb.nonce));
	if (n->auth) {
		/* the handshake MAC (daemon/net/auth.h) over the tags it is stamped
		 * with; UNKNOWN and DOWN: a probe, its tag unknown (stamped 0) */
		hb.counter = ++p->cold->hb_ctr_out; /* (wraps after 2^32: that session times out) */
		struct shd_auth_hb m = {n->d->node_id, p->node, p->cold->my_session, p->cold->peer_session,
					p->cold->my_nonce, p->have_peer_nonce ? p->cold->peer_nonce : NULL,
					true, hb.counter};
		hb.flags = SHF_WIRE_HB_MAC | SHF_WIRE_HB_CTR |
			   (p->have_peer_nonce ? SHF_WIRE_HB_ECHO : 0);
		shd_auth_mac(n->auth, &m, hb.mac);
	}
	if (n->route.grid)
		hb.flags |= SHF_WIRE_HB_2D; /* checked at join: one routing per set */
	if (p->idle)
		hb.flags |= SHF_WIRE_HB_IDLE; /* the last one until it is used again */
	else if (p->waking && p->state == PEER_UP)
		hb.flags |= SHF_WIRE_HB_WAKE; /* answer me: our other messages wait */
	n->d->st.hb_out++;
	small_send(p, buf, shf_wire_enc_heartbeat(buf, sizeof(buf), n->d->node_id, p->node, &hb));
}

/* Report the records of an encoded batch to p as dropped (node down). */
static void charge_batch(struct shd_peer *p, const struct net_msg *m)
{
	struct shd_net *n = p->net;
	struct shf_wire_hdr h;
	if (shf_wire_check(m->buf, m->len, n->n_nodes, p->node, &h) != 0)
		return; /* cannot happen: we encoded it */
	struct shf_wire_iter it;
	struct shf_wire_rec rec;
	int32_t src = -1;
	uint32_t count = 0;
	shf_wire_iter_init(&it, m->buf, &h, UINT32_MAX);
	while (shf_wire_iter_next(&it, &rec) > 0) {
		uint32_t k = rec.count ? rec.count : 1; /* a run: its messages */
		p->cold->st.drops_down += k;
		if (count && rec.src_rank != src) {
			n->ev->drops(n->d, h.u.batch.job_hash, src, count, -EHOSTDOWN);
			count = 0;
		}
		src = rec.src_rank;
		count += k;
	}
	if (count)
		n->ev->drops(n->d, h.u.batch.job_hash, src, count, -EHOSTDOWN);
}

void shd_net_send_done(struct shd_net *n, struct net_msg *m, int status)
{
	struct shd_peer *p = m->peer; /* m may be gone below */
	uint32_t gen = m->gen;
	switch (m->kind) {
	case NET_MSG_BATCH:
		if (status < 0)
			charge_batch(p, m); /* never arrived: its senders hear of it */
		/* fallthrough */
	case NET_MSG_POOLED:
		shd_net_pool_put(n, m);
		break;
	case NET_MSG_FWD:
		n->fwd_held--;
		shd_net_pool_put(n, m);
		break;
	case NET_MSG_SMALL:
		free(m);
		break;
	case NET_MSG_INLINE:
		break;
	}
	/* a late completion of an earlier session says nothing of this one */
	if (status < 0 && status != -EHOSTDOWN && p->state == PEER_UP && gen == p->gen) {
		char why[96];
		snprintf(why, sizeof(why), "send failed: %s", strerror(-status));
		shd_net_peer_fail(p, why);
	}
}

/* ------------------------------------------------------------- batches */

static bool has_credit(const struct shd_peer *p)
{
	const struct shd_net *n = p->net;
	return p->seq_sent - p->seq_acked < n->d->cfg.peer_credits &&
	       n->inflight < n->d->cfg.max_inflight;
}

/* Post p's closed batches of sequence number <= upto while it has
 * credit; none while p is being woken (they wait in sendq, not copied). */
static void try_send_upto(struct shd_peer *p, uint64_t upto)
{
	struct shd_net *n = p->net;
	while (!shd_list_empty(&p->sendq) && p->state == PEER_UP && !p->waking) {
		if (!has_credit(p)) {
			if (n->inflight >= n->d->cfg.max_inflight && !shd_list_linked(&p->credit_link))
				shd_list_add_tail(&n->credit_wait, &p->credit_link);
			return;
		}
		struct net_msg *m = shd_container_of(p->sendq.next, struct net_msg, link);
		if (m->seq > upto)
			return;
		shd_list_del(&m->link);
		p->seq_sent = m->seq;
		n->inflight++;
		post(n, m);
	}
	/* room for a new open batch again */
	if (shd_list_empty(&p->sendq))
		shd_sched_wake(&p->cold->waiters);
}

static void try_send(struct shd_peer *p)
{
	try_send_upto(p, UINT64_MAX);
}

enum close_why { CLOSE_SIZE, CLOSE_LINGER, CLOSE_FLUSH, CLOSE_JOB, CLOSE_IDLE };

/* Close p's open batch: give it a sequence number and send it if credit
 * allows.  The send may fail synchronously: callers re-check p->state. */
static void close_open(struct shd_peer *p, enum close_why why)
{
	struct shd_net *n = p->net;
	struct shd_daemon *d = n->d;
	struct net_msg *m = p->open;
	if (!m)
		return;
	uint32_t count = p->enc.count;
	m->seq = ++p->seq_closed;
	m->len = (uint32_t)shf_wire_batch_end(&p->enc, m->seq);
	m->peer = p;
	m->gen = p->gen;
	p->open = NULL;
	p->closed_ns = shd_now_ns();
	shd_list_del(&p->linger_link);
	d->st.batches_out++;
	d->st.batch_bytes_out += m->len;
	d->st.batch_msgs_out += count;
	p->cold->st.batches_out++;
	p->cold->st.bytes_out += m->len;
	p->cold->st.msgs_out += count;
	switch (why) {
	case CLOSE_SIZE:
	case CLOSE_JOB: d->st.batches_by_size++; break;
	case CLOSE_LINGER: d->st.batches_by_linger++; break;
	case CLOSE_FLUSH: d->st.batches_by_flush++; break;
	case CLOSE_IDLE: break; /* counted by the caller */
	}
	shd_list_add_tail(&p->sendq, &m->link);
	try_send(p);
}

/* The batch to node that a record of `len` bytes (a run: its item bytes)
 * from src goes into, opened if needed: the peer, or NULL with the error
 * (-EHOSTDOWN, or -EAGAIN with src->wait linked). */
static struct shd_peer *batch_for(struct shd_daemon *d, struct shd_client *src, uint32_t node,
				  const struct shd_job *j, uint32_t len, int *err)
{
	struct shd_net *n = d->net;
	*err = -EHOSTDOWN;
	if (node >= n->n_nodes || node == d->node_id)
		return NULL;
	struct shd_peer *p = &n->peers[node];
	if (p->state != PEER_UP)
		return NULL;
	shd_net_use(p);
	if (p->open && (p->enc.job_hash != j->hash || !shf_wire_batch_fits(&p->enc, len))) {
		close_open(p, p->enc.job_hash != j->hash ? CLOSE_JOB : CLOSE_SIZE);
		if (p->state != PEER_UP)
			return NULL; /* that send failed: the record is dropped, counted */
	}
	if (!p->open) {
		struct net_msg *m = NULL;
		/* one closed batch may wait for credit; beyond that, wait */
		if (shd_list_empty(&p->sendq))
			m = shd_net_pool_get(n);
		if (!m) {
			struct shd_list *q = shd_list_empty(&p->sendq) ? &n->pool_waiters : &p->cold->waiters;
			shd_list_add_tail(q, &src->wait.link);
			src->blocked = true;
			p->cold->st.credit_stalls++;
			d->st.credit_stalls++;
			*err = -EAGAIN;
			return NULL;
		}
		m->peer = p;
		m->kind = NET_MSG_BATCH; /* the buffer may have carried a control
					    message or a forward before */
		shf_wire_batch_begin(&p->enc, m->buf, n->batch_cap, d->node_id, node, j->hash);
		p->open = m;
		p->open_since_ns = shd_now_ns();
		shd_list_add_tail(&n->linger, &p->linger_link);
		if (d->cfg.linger_us && !shd_ev_armed(n->linger_ev))
			shd_ev_arm(n->linger_ev, d->cfg.linger_us);
	}
	if (!src->sent_to) {
		src->sent_to = calloc((n->n_nodes + 63) / 64, sizeof(uint64_t));
		if (!src->sent_to)
			return NULL; /* cannot track it for flushes: drop, counted */
	}
	src->sent_to[node / 64] |= UINT64_C(1) << (node % 64);
	return p;
}

/* A record was added to p's open batch: close it once it is full. */
static inline void appended(struct shd_daemon *d, struct shd_peer *p)
{
	/* if this send fails, the record is reported through ev->drops */
	if (p->enc.off - SHF_WIRE_BATCH_HDR >= d->cfg.batch_bytes)
		close_open(p, CLOSE_SIZE);
}

/* One record for rank dst into node's batch: a message (type, len bytes
 * of data) or, with count > 0, a run of count messages (len bytes of
 * checked items). */
static int append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		  const struct shd_job *j, int32_t dst, uint32_t type, uint32_t count,
		  const void *data, uint32_t len)
{
	int e;
	struct shd_peer *p = batch_for(d, src, node, j, len, &e);
	if (!p)
		return e;
	void *to = count ? shf_wire_batch_add_run(&p->enc, dst, src->rank, count, len)
			 : shf_wire_batch_add(&p->enc, dst, src->rank, type, len);
	if (!to)
		return -EHOSTDOWN; /* cannot happen: fits() was checked, ranks and run are */
	memcpy(to, data, len);
	appended(d, p);
	return 0;
}

int shd_net_append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		   const struct shd_job *j, int32_t dst, uint32_t type, const void *data,
		   uint32_t len)
{
	return append(d, src, node, j, dst, type, 0, data, len);
}

int shd_net_append_run(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		       const struct shd_job *j, int32_t dst, uint32_t count, const void *items,
		       uint32_t bytes)
{
	return append(d, src, node, j, dst, 0, count, items, bytes);
}

static void fwd_close(struct shd_peer *q);

/* Close the open batches, and the bundles this node forwards, whose
 * oldest record is linger_us old (oldest first); arm the timer for the
 * next one. */
static void close_lingered(struct shd_net *n)
{
	uint64_t now = shd_now_ns(), lg = (uint64_t)n->d->cfg.linger_us * 1000u;
	uint64_t next = UINT64_MAX; /* the next deadline of either list */
	while (!shd_list_empty(&n->linger)) {
		struct shd_peer *p = shd_container_of(n->linger.next, struct shd_peer, linger_link);
		if (p->open_since_ns + lg > now) {
			next = p->open_since_ns + lg;
			break;
		}
		close_open(p, CLOSE_LINGER);
	}
	/* the bundles this node forwards linger on the same timer */
	while (!shd_list_empty(&n->fwd_linger)) {
		struct shd_peer *q = shd_container_of(n->fwd_linger.next, struct shd_peer_fwd, link)->peer;
		if (q->fwd->since_ns + lg > now) {
			if (q->fwd->since_ns + lg < next)
				next = q->fwd->since_ns + lg;
			break;
		}
		fwd_close(q);
	}
	if (next != UINT64_MAX)
		shd_ev_arm(n->linger_ev, (next - now) / 1000u + 1);
}

void shd_net_on_linger(int fd, void *arg)
{
	struct shd_net *n = arg;
	close_lingered(n);
	shd_net_kick(n);
}

void shd_net_tx_pass_end(struct shd_net *n)
{
	/* linger_us 0: a batch leaves at the end of the pass that opened it,
	 * not one loop iteration later from a timer */
	if (n->d->cfg.linger_us == 0) {
		close_lingered(n);
		return;
	}
	if (n->d->cfg.linger_idle)
		return;
	/* An idle link sends at once: nothing in flight to that node (as
	 * Nagle's rule) and no batch closed for it within linger_us, so a
	 * lone message does not wait for the timer, and a stream of records
	 * still leaves at most one batch per linger_us (as the timer would). */
	if (shd_list_empty(&n->linger))
		return;
	uint64_t now = shd_now_ns(), lg = (uint64_t)n->d->cfg.linger_us * 1000u;
	struct shd_list *q, *t;
	shd_list_for_each_safe(q, t, &n->linger) {
		struct shd_peer *p = shd_container_of(q, struct shd_peer, linger_link);
		if (p->seq_acked == p->seq_closed && now - p->closed_ns >= lg) {
			n->d->st.batches_by_idle++;
			close_open(p, CLOSE_IDLE);
		}
	}
}

/* ------------------------------------------------------------- acks, marks */

static void mark_release(struct shd_net *n, struct net_mark *mk, bool lost)
{
	struct shd_client *c = mk->c;
	shd_list_del(&mk->link);
	free(mk);
	if (c)
		n->ev->mark_acked(c, lost);
}

void shd_net_tx_ack(struct shd_peer *p, const struct shf_wire_ack *a)
{
	struct shd_net *n = p->net;
	if (a->acked_seq <= p->seq_acked)
		return;
	if (a->acked_seq > p->seq_sent) {
		n->d->st.wire_bad++;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u acked batch %llu, beyond %llu sent",
			   p->node, (unsigned long long)a->acked_seq,
			   (unsigned long long)p->seq_sent);
		return;
	}
	n->inflight -= (uint32_t)(a->acked_seq - p->seq_acked);
	p->seq_acked = a->acked_seq;
	while (!shd_list_empty(&p->cold->marks)) {
		struct net_mark *mk = shd_container_of(p->cold->marks.next, struct net_mark, link);
		if (mk->seq > p->seq_acked)
			break;
		mark_release(n, mk, false);
	}
	try_send(p);
	/* global credit freed: peers held back by max_inflight go again, once
	 * each (one still without credit links itself again, to the list that
	 * is no longer being walked) */
	struct shd_list waiting;
	shd_list_init(&waiting);
	shd_list_splice_tail(&waiting, &n->credit_wait);
	while (!shd_list_empty(&waiting)) {
		struct shd_peer *o = shd_container_of(waiting.next, struct shd_peer, credit_link);
		shd_list_del(&o->credit_link);
		try_send(o);
	}
}

uint64_t shd_net_mark(struct shd_daemon *d, struct shd_client *src)
{
	struct shd_net *n = d->net;
	uint64_t need = 0;
	if (!src->sent_to)
		return 0; /* never sent off this node */
	/* only the peers this client sent to since its last mark: a flush costs
	 * what the client touched, and a lost node is reported to its senders only */
	for (uint32_t w = 0; w < (n->n_nodes + 63) / 64; w++) {
		uint64_t bits = src->sent_to[w];
		src->sent_to[w] = 0;
		while (bits) {
			uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			struct shd_peer *p = &n->peers[i];
			if (p->state != PEER_UP)
				continue; /* its records are reported as it goes down */
			if (p->open)
				close_open(p, CLOSE_FLUSH);
			if (p->state != PEER_UP || p->seq_closed <= p->seq_acked)
				continue;
			struct net_mark *mk = malloc(sizeof(*mk));
			if (!mk) {
				src->report_down++; /* cannot track: report possible loss */
				continue;
			}
			mk->c = src;
			mk->seq = p->seq_closed;
			shd_list_add_tail(&p->cold->marks, &mk->link);
			need++;
		}
	}
	shd_net_kick(n);
	return need;
}

void shd_net_forget(struct shd_daemon *d, struct shd_client *src)
{
	struct shd_net *n = d->net;
	if (!src->mark_need)
		return;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_list *q;
		for (q = n->peers[i].cold->marks.next; q != &n->peers[i].cold->marks; q = q->next) {
			struct net_mark *mk = shd_container_of(q, struct net_mark, link);
			if (mk->c == src)
				mk->c = NULL;
		}
	}
}

/* ------------------------------------------------------------- control plane */

void shd_net_epoch(struct shd_daemon *d, uint32_t node, unsigned kind, struct shd_job *j,
		   uint64_t epoch, uint32_t phase, int32_t count)
{
	struct shd_net *n = d->net;
	if (node >= n->n_nodes || node == d->node_id || n->peers[node].state != PEER_UP)
		return;
	uint8_t buf[SHF_WIRE_EPOCH_BYTES];
	struct shf_wire_epoch ep = {j->hash, epoch, phase, (uint32_t)count};
	shd_net_send_small(&n->peers[node], buf,
			 shf_wire_enc_epoch_kind(buf, sizeof(buf), kind, d->node_id, node, &ep));
	d->st.epoch_msgs_out++;
}

/* ------------------------------------------------------------- sessions */

/* A random, non-zero session tag. */
static uint64_t new_tag(const struct shd_peer *p)
{
	uint64_t t = shd_auth_random64();
	return t ? t : 1;
}

void shd_net_session_reset(struct shd_peer *p)
{
	p->seq_closed = p->seq_sent = p->seq_acked = 0;
	p->seq_recv = p->ack_sent = 0;
	p->ack_dropped = 0;
	p->cold->peer_session = 0;
	p->cold->incarnation = 0;
	p->cold->my_session = new_tag(p);
	shd_auth_nonce(p->cold->my_nonce); /* a new nonce with each tag of ours */
	p->gen++;
	p->cold->inline_ctx[p->gen & 1].gen = p->gen;
	p->idle = p->quiet = p->released = false;
	if (p->n_held)
		held_drop(p); /* (tx_down dropped them already when it went down) */
	p->waking = false;
}

/* ------------------------------------------------------------- teardown */

void shd_net_tx_down(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	/* forwards gathered for it: their origins hear FWD_LOST as it is
	 * carried out (net.c), as for any forward that cannot go on */
	if (p->fwd && p->fwd->open) {
		struct net_msg *m = p->fwd->open;
		p->fwd->open = NULL;
		shd_list_del(&p->fwd->link);
		n->d->st.fwd_dropped += p->fwd->count;
		n->fwd_held--;
		shd_net_pool_put(n, m);
	}
	/* records not yet sent are lost: tell their senders */
	if (p->open) {
		struct net_msg *m = p->open;
		m->len = (uint32_t)shf_wire_batch_end(&p->enc, ++p->seq_closed);
		p->open = NULL;
		shd_list_del(&p->linger_link);
		charge_batch(p, m);
		shd_net_pool_put(n, m);
	}
	while (!shd_list_empty(&p->sendq)) {
		struct net_msg *m = shd_container_of(p->sendq.next, struct net_msg, link);
		shd_list_del(&m->link);
		charge_batch(p, m);
		shd_net_pool_put(n, m);
	}
	/* posted but refused for lack of a slot, still waiting in the retry
	 * queue: never sent */
	struct shd_list *q, *t;
	shd_list_for_each_safe(q, t, &n->retry) {
		struct net_msg *m = shd_container_of(q, struct net_msg, link);
		if (m->peer != p)
			continue;
		shd_list_del(&m->link);
		shd_net_send_done(n, m, -EHOSTDOWN);
	}
	/* held for a wake it never answered: never sent (its loss reports them) */
	held_drop(p);
	/* marks waiting for its acks: complete them, reporting possible loss */
	while (!shd_list_empty(&p->cold->marks))
		mark_release(n, shd_container_of(p->cold->marks.next, struct net_mark, link), true);
	n->inflight -= (uint32_t)(p->seq_sent - p->seq_acked);
	p->seq_acked = p->seq_sent;
	shd_list_del(&p->credit_link);
	/* whoever waits for this peer retries and finds it down */
	shd_sched_wake(&p->cold->waiters);
}

void shd_net_tx_close(struct shd_net *n)
{
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		while (p->n_held && !shd_list_empty(&p->cold->held)) {
			struct net_msg *m = shd_container_of(p->cold->held.next, struct net_msg, link);
			shd_list_del(&m->link);
			if (m->kind == NET_MSG_SMALL)
				free(m);
		}
		p->n_held = 0;
		while (!shd_list_empty(&p->cold->marks)) {
			struct net_mark *mk = shd_container_of(p->cold->marks.next, struct net_mark, link);
			shd_list_del(&mk->link);
			free(mk);
		}
	}
	while (!shd_list_empty(&n->fwd_wait)) {
		struct net_fwd *w = shd_container_of(n->fwd_wait.next, struct net_fwd, link);
		shd_list_del(&w->link);
		free(w);
	}
	/* queued small copies are ours; pooled buffers go with the slab */
	while (!shd_list_empty(&n->retry)) {
		struct net_msg *m = shd_container_of(n->retry.next, struct net_msg, link);
		shd_list_del(&m->link);
		if (m->kind == NET_MSG_SMALL)
			free(m);
	}
}

/* ------------------------------------------------ other control messages */

int shd_net_send_msg(struct shd_daemon *d, uint32_t node, const void *msg, size_t len)
{
	struct shd_net *n = d->net;
	if (!n || node >= n->n_nodes || node == d->node_id || n->peers[node].state != PEER_UP)
		return -EHOSTDOWN;
	struct shd_peer *p = &n->peers[node];
	shd_net_use(p);
	if (len <= SHD_FABRIC_SMALL) {
		small_out(p, msg, (long)len);
		return 0;
	}
	if (len > n->batch_cap)
		return -EMSGSIZE;
	struct net_msg *m = shd_net_pool_get(n);
	if (!m)
		return -ENOBUFS;
	memcpy(m->buf, msg, len);
	m->peer = p;
	m->kind = NET_MSG_POOLED;
	m->gen = p->gen;
	m->len = (uint32_t)len;
	if (!p->waking)
		post(n, m);
	else if (!hold(p, m))
		shd_net_pool_put(n, m);
	return 0;
}

uint32_t shd_net_msg_max(const struct shd_daemon *d)
{
	return d->net ? d->net->batch_cap : SHD_FABRIC_SMALL;
}

/* ------------------------------------------------------------- forwarding */

/* A pool buffer for forwarding, within its share (fwd_max); NULL: none. */
static struct net_msg *fwd_buf(struct shd_net *n)
{
	if (n->fwd_held >= n->fwd_max)
		return NULL;
	struct net_msg *m = shd_net_pool_get(n);
	if (m)
		n->fwd_held++;
	return m;
}

/* The most a bundle (or a FWD alone) fills: a pool buffer and its room. */
static uint32_t fwd_cap(const struct shd_net *n)
{
	return n->room + n->batch_cap;
}

/* Hand m (a forward: len bytes at buf - room, for q) to the fabric. */
static void fwd_post(struct shd_net *n, struct shd_peer *q, struct net_msg *m, uint32_t len)
{
	m->peer = q;
	m->kind = NET_MSG_FWD;
	m->gen = q->gen;
	m->len = len;
	n->d->st.fwd_sends++;
	post(n, m);
}

/* Send q's open bundle; alone, its one FWD goes as itself. */
static void fwd_close(struct shd_peer *q)
{
	struct shd_net *n = q->net;
	struct shd_daemon *d = n->d;
	struct net_msg *m = q->fwd ? q->fwd->open : NULL;
	if (!m)
		return;
	q->fwd->open = NULL;
	shd_list_del(&q->fwd->link);
	if (q->state != PEER_UP || m->gen != q->gen) {
		/* q failed meanwhile: its origins hear FWD_LOST as it is
		 * carried out (net.c) */
		d->st.fwd_dropped += q->fwd->count;
		n->fwd_held--;
		shd_net_pool_put(n, m);
		return;
	}
	uint8_t *b = m->buf - n->room;
	uint32_t len = q->fwd->off;
	if (q->fwd->count == 1) {
		len = shf_wire_get32(b + SHF_WIRE_BUNDLE_HDR);
		memmove(b, b + SHF_WIRE_BUNDLE_HDR + SHF_WIRE_BUNDLE_ITEM, len);
	} else {
		d->st.fwd_bundles++;
		d->st.fwd_bundled_msgs += q->fwd->count;
	}
	fwd_post(n, q, m, len);
}

/* One FWD (len bytes at buf) on to q, behind what q already has: into its
 * bundle, or alone if it is too large for one.  false: no buffer (the
 * caller keeps it waiting). */
static bool bundle_add(struct shd_net *n, struct shd_peer *q, const void *buf, uint32_t len)
{
	struct shd_daemon *d = n->d;
	uint32_t cap = fwd_cap(n);
	uint64_t need = shf_wire_bundle_item_bytes(len);
	if (SHF_WIRE_BUNDLE_HDR + need > cap) {
		/* too large to share a buffer: alone, after q's bundle */
		fwd_close(q);
		struct net_msg *m = fwd_buf(n);
		if (!m)
			return false;
		memcpy(m->buf - n->room, buf, len);
		shf_wire_enc_fwd_hdr(m->buf - n->room, SHF_WIRE_FWD_HDR, d->node_id, q->node);
		fwd_post(n, q, m, len);
		return true;
	}
	if (q->fwd->open && q->fwd->off + need > cap)
		fwd_close(q);
	if (!q->fwd->open) {
		struct net_msg *m = fwd_buf(n);
		if (!m)
			return false;
		m->peer = q;
		m->kind = NET_MSG_FWD;
		m->gen = q->gen;
		shf_wire_enc_bundle_begin(m->buf - n->room, cap, d->node_id, q->node);
		q->fwd->open = m;
		q->fwd->off = SHF_WIRE_BUNDLE_HDR;
		q->fwd->count = 0;
		q->fwd->urgent = false;
		q->fwd->since_ns = shd_now_ns();
		shd_list_add_tail(&n->fwd_linger, &q->fwd->link);
		if (!shd_ev_armed(n->linger_ev))
			shd_ev_arm(n->linger_ev, d->cfg.linger_us);
	}
	long off = shf_wire_enc_bundle_add(q->fwd->open->buf - n->room, cap, q->fwd->off, buf, len);
	if (off < 0)
		return false; /* cannot happen: the room was checked */
	q->fwd->off = (uint32_t)off;
	q->fwd->count++;
	if (shf_wire_get16((const uint8_t *)buf + SHF_WIRE_FWD_HDR + 6) != SHF_WIRE_BATCH)
		q->fwd->urgent = true;
	if (q->fwd->off - SHF_WIRE_BUNDLE_HDR >= d->cfg.batch_bytes)
		fwd_close(q);
	return true;
}

/* Forwards waiting for a buffer go on, in arrival order, while forwarding
 * has buffers: each opens a bundle for its next node, which takes the
 * later waiting ones for that node too, and goes at once (they waited). */
static void fwd_drain(struct shd_net *n)
{
	if (n->fwd_draining)
		return; /* the outer call goes on with the buffer */
	n->fwd_draining = true;
	while (!shd_list_empty(&n->fwd_wait)) {
		struct net_fwd *w = shd_container_of(n->fwd_wait.next, struct net_fwd, link);
		struct shd_peer *q = w->peer;
		if (q->gen != w->gen || q->state != PEER_UP) {
			/* its session ended: FWD_LOST went to our neighbours
			 * when it was carried out */
			shd_list_del(&w->link);
			n->d->st.fwd_dropped++;
			free(w);
			continue;
		}
		if (!bundle_add(n, q, w->buf, w->len))
			break; /* no buffer yet */
		shd_list_del(&w->link);
		free(w);
		/* the later ones for q, in order, while they fit its bundle */
		struct shd_list *l, *t;
		shd_list_for_each_safe(l, t, &n->fwd_wait) {
			struct net_fwd *x = shd_container_of(l, struct net_fwd, link);
			if (x->peer != q || x->gen != q->gen)
				continue;
			if (!q->fwd->open ||
			    q->fwd->off + shf_wire_bundle_item_bytes(x->len) > fwd_cap(n))
				break;
			shd_list_del(&x->link);
			bundle_add(n, q, x->buf, x->len);
			free(x);
		}
		fwd_close(q);
	}
	n->fwd_draining = false;
}

void shd_net_fwd_push(struct shd_net *n)
{
	struct shd_list *l, *t;
	shd_list_for_each_safe(l, t, &n->fwd_linger) {
		struct shd_peer *q = shd_container_of(l, struct shd_peer_fwd, link)->peer;
		if (q->fwd->urgent)
			fwd_close(q);
	}
}

void shd_net_forward(struct shd_net *n, struct shd_peer *q, const void *buf, uint32_t len)
{
	if (!q->fwd) { /* not a next hop (fwd_take lets only route neighbours through) */
		n->d->st.wire_bad++;
		return;
	}
	n->d->st.fwd_msgs++;
	n->d->st.fwd_bytes += len;
	/* behind any that wait (q's own among them: order per pair); q's
	 * open bundle means none of q's waits */
	if ((q->fwd->open || shd_list_empty(&n->fwd_wait)) && bundle_add(n, q, buf, len))
		return;
	/* no buffer for forwarding: a copy waits for the next one freed
	 * (bounded: each origin has at most peer_credits batches in flight
	 * per pair) */
	struct net_fwd *w = malloc(sizeof(*w) + len);
	if (!w) {
		n->d->st.fwd_dropped++;
		shd_err("out of memory forwarding %u bytes to node %u: dropped, its origin "
			"is told (FWD_LOST)", len, q->node);
		uint32_t origin = shf_wire_get32((const uint8_t *)buf + SHF_WIRE_FWD_HDR + 8);
		if (origin < n->n_nodes && origin != n->d->node_id)
			shd_net_fwd_lost(&n->peers[origin], q->node);
		return;
	}
	memcpy(w->buf, buf, len);
	w->peer = q;
	w->gen = q->gen;
	w->len = len;
	shd_list_add_tail(&n->fwd_wait, &w->link);
}

void shd_net_fwd_lost(struct shd_peer *p, uint32_t lost)
{
	uint8_t buf[SHF_WIRE_FWD_LOST_BYTES];
	shd_net_send_small(p, buf, shf_wire_enc_fwd_lost(buf, sizeof(buf), p->net->d->node_id,
						       p->node, lost));
}
