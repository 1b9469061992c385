/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fwd.c - forwarding (routing=2d; fwd.h): the FWDs of other
 * pairs that this node passes on unopened, as an intermediate.
 *
 * Bundles: the intermediate gathers the FWDs it passes on to the same
 * next node into one FWD_BUNDLE (one open bundle per next node, in a pool
 * buffer), sent like a batch when it holds batch_bytes, when its first
 * FWD is linger_us old (the batches' linger timer, net/tx.c), or at the
 * end of the progress round when it carries anything but batches
 * (credits, liveness and epochs do not wait); alone, a FWD goes as
 * itself.  Forwarding holds at most half of the pool (fwd_max): beyond
 * it, and when the pool is empty, a copy waits in fwd_wait, in arrival
 * order, for a buffer that forwarding gives back (posting tells it:
 * shd_net_fwd_drain); the other half stays for this node's own batches.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/net/fwd.h"
#include "daemon/net/int.h"
#include "daemon/net/post.h"

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
	shd_net_post(n, m);
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
void shd_net_fwd_drain(struct shd_net *n)
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

uint64_t shd_net_fwd_linger(struct shd_net *n, uint64_t now, uint64_t lg)
{
	while (!shd_list_empty(&n->fwd_linger)) {
		struct shd_peer *q = shd_container_of(n->fwd_linger.next, struct shd_peer_fwd, link)->peer;
		if (q->fwd->since_ns + lg > now)
			return q->fwd->since_ns + lg;
		fwd_close(q);
	}
	return UINT64_MAX;
}

void shd_net_fwd_down(struct shd_peer *q)
{
	struct shd_net *n = q->net;
	if (q->fwd && q->fwd->open) {
		struct net_msg *m = q->fwd->open;
		q->fwd->open = NULL;
		shd_list_del(&q->fwd->link);
		n->d->st.fwd_dropped += q->fwd->count;
		n->fwd_held--;
		shd_net_pool_put(n, m);
	}
}

void shd_net_fwd_fini(struct shd_net *n)
{
	while (!shd_list_empty(&n->fwd_wait)) {
		struct net_fwd *w = shd_container_of(n->fwd_wait.next, struct net_fwd, link);
		shd_list_del(&w->link);
		free(w);
	}
}
