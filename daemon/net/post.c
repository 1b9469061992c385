/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/post.c - posting: how a message of the peer protocol reaches
 * the fabric (post.h).  The batches above it are net/tx.c's, the bundles
 * this node forwards net/fwd.c's; neither is called from here: a buffer
 * given back and a wake answered are told to them through n->post_ev.
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
 * (shd_net_forward, net/fwd.c).  A routed peer whose intermediate is not
 * up cannot be sent to: its session fails (-ENETUNREACH).
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

#include "daemon/net/int.h"
#include "daemon/net/post.h"
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

void shd_net_pool_put(struct shd_net *n, struct net_msg *m)
{
	n->pool[n->pool_free++] = m;
	n->post_ev->pool_freed(n); /* forwards that waited for a buffer first */
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

/* A small copy is done with: it is no longer its peer's waiting
 * heartbeat, if it was. */
static void small_free(struct net_msg *m)
{
	if (m->peer->cold->hb_wait == m)
		m->peer->cold->hb_wait = NULL;
	free(m);
}

/* The fabric took m (0: posted, 1: queued inside the fabric). */
static void handed_over(struct shd_net *n, struct net_msg *m)
{
	if (m->kind == NET_MSG_SMALL)
		small_free(m); /* the fabric copied it */
	shd_net_kick(n);
}

/* Hand a message to the fabric, keeping per-peer order behind any queued. */
void shd_net_post(struct shd_net *n, struct net_msg *m)
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

/* A small control message to p, stamped with the current session.  hb:
 * it is a heartbeat.  A heartbeat that finds an older one of the same
 * session still waiting for a send slot takes its bytes, in its place in
 * the queue, instead of queueing behind it: at most one heartbeat per
 * peer ever waits, however many rounds pass while every slot is busy
 * (docs/protocol-wire.md, "HEARTBEAT").  The newest one says the most: its
 * flags (HB_IDLE, HB_WAKE, HB_ECHO) and, with a key, its counter, above
 * any the peer took. */
static void small_send(struct shd_peer *p, const void *msg, long len, bool hb)
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
	struct net_msg *w = p->cold->hb_wait;
	if (hb && w && w->gen == p->gen && w->len == (uint32_t)len) { /* (one size: 120 B) */
		memcpy(w->buf, buf, (size_t)len);
		n->d->st.hb_merged++;
		return;
	}
	struct net_msg *m = small_copy(p, buf, (size_t)len);
	if (!m) {
		shd_err("node %u: out of memory queueing a control message", p->node);
		return;
	}
	if (hb)
		p->cold->hb_wait = m;
	shd_list_add_tail(&n->retry, &m->link);
	shd_net_kick(n); /* progress arms the retry timer */
}

/*
 * The wake (docs/protocol-wire.md, "Idle peers").  A peer that is idle or
 * quiet may be releasing its connection to us right now, and a release
 * drops what it has not read.  So a wake sends only heartbeats (HB_WAKE,
 * each heartbeat_ms) until the peer answers: every other message is held,
 * control messages in p->cold->held (in order, each with the batch sequence
 * number closed before it), batches in p->sendq (net/tx.c waits).  A
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
bool shd_net_hold(struct shd_peer *p, struct net_msg *m)
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
	if (!shd_net_hold(p, m))
		free(m);
}

void shd_net_heard(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	if (!p->waking)
		return;
	p->waking = false;
	shd_debug("peer node %u answered the wake: %u held messages go", p->node, p->n_held);
	while (!shd_list_empty(&p->cold->held) && p->state == PEER_UP) {
		struct net_msg *m = shd_container_of(p->cold->held.next, struct net_msg, link);
		n->post_ev->send_batches(p, m->seq); /* the batches closed before it */
		shd_list_del(&m->link);
		p->n_held--;
		shd_net_post(n, m);
	}
	n->post_ev->send_batches(p, UINT64_MAX);
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

void shd_net_use_wake(struct shd_peer *p)
{
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
		small_send(p, buf, len, false);
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
	else if ((p->waking && p->state == PEER_UP) || (p->state == PEER_JOINING && p->cold->n_early))
		hb.flags |= SHF_WIRE_HB_WAKE; /* answer me: our other messages wait (waking),
					       or yours do (early: session.c) */
	n->d->st.hb_out++;
	small_send(p, buf, shf_wire_enc_heartbeat(buf, sizeof(buf), n->d->node_id, p->node, &hb), true);
}

/* Report the records of an encoded batch to p as dropped (node down). */
void shd_net_charge_batch(struct shd_peer *p, const struct net_msg *m)
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
			shd_net_charge_batch(p, m); /* never arrived: its senders hear of it */
		/* fallthrough */
	case NET_MSG_POOLED:
		shd_net_pool_put(n, m);
		break;
	case NET_MSG_FWD:
		n->fwd_held--;
		shd_net_pool_put(n, m);
		break;
	case NET_MSG_SMALL:
		small_free(m);
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

void shd_net_post_down(struct shd_peer *p)
{
	struct shd_net *n = p->net;
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
}

void shd_net_post_close(struct shd_net *n)
{
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		while (p->n_held && !shd_list_empty(&p->cold->held)) {
			struct net_msg *m = shd_container_of(p->cold->held.next, struct net_msg, link);
			shd_list_del(&m->link);
			if (m->kind == NET_MSG_SMALL)
				small_free(m);
		}
		p->n_held = 0;
	}
	/* queued small copies are ours; pooled buffers go with the slab */
	while (!shd_list_empty(&n->retry)) {
		struct net_msg *m = shd_container_of(n->retry.next, struct net_msg, link);
		shd_list_del(&m->link);
		if (m->kind == NET_MSG_SMALL)
			small_free(m);
	}
}
