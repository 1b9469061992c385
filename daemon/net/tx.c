/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/tx.c - the sending half of the peer protocol (tx.h): batches,
 * credit, the linger timer, acknowledgements and marks, a peer's sending
 * state when it goes down.  It posts through net/post.c (the pool, the
 * fabric, control messages, the wake) and drives net/fwd.c's bundles
 * from the linger timer; both are below it, and posting's news comes up
 * through shd_net_tx_post_events.
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
 * Failure: a batch that failed is reported to its senders by posting
 * (ev->drops, -EHOSTDOWN); the rest (queued batches, marks, credit) is
 * carried out at the pass's peers step (shd_net_tx_down), never inside the
 * caller's update.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobtab.h"
#include "daemon/net/fwd.h"
#include "daemon/net/int.h"
#include "daemon/net/post.h"
#include "daemon/net/tx.h"
#include "daemon/sched.h"

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
		shd_net_post(n, m);
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
	uint32_t count = p->enc.msgs; /* messages: a run counts its items */
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

int shd_net_reserve(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		    const struct shd_job *j, uint32_t bytes)
{
	int e;
	/* batch_for() checks room for one record of len payload bytes:
	 * SHF_WIRE_REC_HDR + len rounded up to 8 */
	uint32_t len = bytes > SHF_WIRE_REC_HDR ? bytes - SHF_WIRE_REC_HDR : 0;
	return batch_for(d, src, node, j, len, &e) ? 0 : e;
}

uint32_t shd_net_room(const struct shd_daemon *d, uint32_t node, const struct shd_job *j)
{
	const struct shd_peer *p = &d->net->peers[node];
	if (!p->open || p->state != PEER_UP || p->enc.job_hash != j->hash)
		return 0;
	return p->enc.cap - p->enc.off;
}

void *shd_net_put_msg(struct shd_daemon *d, uint32_t node, int32_t dst, int32_t src,
		      uint32_t type, uint32_t len)
{
	struct shd_peer *p = &d->net->peers[node];
	return p->open ? shf_wire_batch_add(&p->enc, dst, src, type, len) : NULL;
}

void *shd_net_put_run(struct shd_daemon *d, uint32_t node, int32_t dst, int32_t src,
		      uint32_t count, uint32_t bytes)
{
	struct shd_peer *p = &d->net->peers[node];
	return p->open ? shf_wire_batch_add_run(&p->enc, dst, src, count, bytes) : NULL;
}

void shd_net_put_done(struct shd_daemon *d, uint32_t node)
{
	struct shd_peer *p = &d->net->peers[node];
	if (p->open)
		appended(d, p);
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
	uint64_t fwd_next = shd_net_fwd_linger(n, now, lg);
	if (fwd_next < next)
		next = fwd_next;
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

/* ------------------------------------------------------------- teardown */

void shd_net_tx_down(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	/* forwards gathered for it: their origins hear FWD_LOST as it is
	 * carried out (net.c), as for any forward that cannot go on */
	shd_net_fwd_down(p);
	/* records not yet sent are lost: tell their senders */
	if (p->open) {
		struct net_msg *m = p->open;
		m->len = (uint32_t)shf_wire_batch_end(&p->enc, ++p->seq_closed);
		p->open = NULL;
		shd_list_del(&p->linger_link);
		shd_net_charge_batch(p, m);
		shd_net_pool_put(n, m);
	}
	while (!shd_list_empty(&p->sendq)) {
		struct net_msg *m = shd_container_of(p->sendq.next, struct net_msg, link);
		shd_list_del(&m->link);
		shd_net_charge_batch(p, m);
		shd_net_pool_put(n, m);
	}
	/* waiting in the retry queue or held for a wake it never answered:
	 * never sent */
	shd_net_post_down(p);
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
		while (!shd_list_empty(&p->cold->marks)) {
			struct net_mark *mk = shd_container_of(p->cold->marks.next, struct net_mark, link);
			shd_list_del(&mk->link);
			free(mk);
		}
	}
	shd_net_fwd_fini(n);
	shd_net_post_close(n);
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
		shd_net_send_small(p, msg, (long)len); /* (up and used: as small_out) */
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
		shd_net_post(n, m);
	else if (!shd_net_hold(p, m))
		shd_net_pool_put(n, m);
	return 0;
}

uint32_t shd_net_msg_max(const struct shd_daemon *d)
{
	return d->net ? d->net->batch_cap : SHD_FABRIC_SMALL;
}

/* ------------------------------------------------------------- posting's news */

const struct shd_net_post_events shd_net_tx_post_events = {
	.pool_freed = shd_net_fwd_drain,
	.send_batches = try_send_upto,
};
