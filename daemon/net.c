/* SPDX-License-Identifier: MIT */
/*
 * daemon/net.c - the network hop between daemons.
 *
 * Outgoing: one open batch per destination node, filled by the relay
 * (shd_net_append) and closed when it reaches batch_bytes, when its oldest
 * record is linger_us old, when its job changes, or for a flush.  A closed
 * batch gets the next per-peer sequence number and is posted when the
 * peer has credit (at most peer_credits unacknowledged batches per peer,
 * max_inflight in total).  When a peer has no credit and its batch is full
 * the client whose record is next waits (head of line), so backpressure
 * reaches shf_send().  Batch buffers come from a pool bounded by
 * batch_budget, allocated on first use.
 *
 * Incoming: a batch is placed record by record into local delivery rings.
 * A full ring parks the batch (its fabric buffer is kept, its credit is not
 * returned) until the ring's owner makes room.  Once a batch is placed and
 * the rings are published (end of the relay pass), an ACK returns its
 * credit; records for a rank that is gone come back as DROP reports, which
 * the sender's next flush turns into -ESRCH.
 *
 * Liveness: every message counts as a sign of life; a heartbeat goes to
 * every peer each heartbeat_ms; a peer silent for peer_timeout_ms, or one
 * whose send fails, is down for good: its ranks are gone (-EHOSTDOWN for
 * flushes and epochs), records for it are dropped and counted.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/fabric.h"
#include "daemon/log.h"
#include "daemon/net.h"
#include "daemon/rdv.h"
#include "proto/wire.h"

/* One outgoing wire message: a batch (pooled buffer) or a control message. */
struct net_msg {
	struct shd_list link;  /* peer->sendq (closed batch) or net->retry */
	struct shd_peer *peer;
	uint64_t seq;          /* batches: sequence number */
	uint32_t len;          /* bytes to send */
	bool batch;            /* pooled, counts against credit */
	uint8_t *buf;          /* message bytes */
};

/* A received batch that could not be placed at once. */
struct net_rx {
	struct shd_list link;  /* peer->rxq, in seq order */
	void *buf;             /* a copy of the message, right after this struct */
	struct shf_wire_hdr h;
	struct shf_wire_iter it;
	struct shf_wire_rec cur;
	bool have_cur;         /* cur waits for room */
};

/* A client's mark waiting for this peer to acknowledge batch `seq`. */
struct net_mark {
	struct shd_list link;  /* peer->marks, in seq order */
	struct shd_client *c;  /* NULL once the client went away */
	uint64_t seq;
};

enum peer_state { PEER_UP, PEER_DOWN };

struct shd_peer {
	struct shd_net *net;
	uint32_t node;
	enum peer_state state;
	char host[SHD_RDV_HOST_MAX];
	char addr[SHD_RDV_HOST_MAX + SHD_RDV_PORT_MAX + 8];
	uint64_t last_heard_ns;
	bool heard;                 /* anything received from it yet */
	uint64_t incarnation;
	/* sending */
	struct net_msg *open;       /* batch being filled */
	struct shf_wire_batch_enc enc;
	uint64_t open_since_ns;
	struct shd_list linger_link;/* in net->linger while open has records */
	struct shd_list sendq;      /* closed batches waiting for credit */
	uint64_t seq_closed;        /* last sequence number given to a batch */
	uint64_t seq_sent;          /* last one posted */
	uint64_t seq_acked;         /* last one acknowledged */
	struct shd_list waiters;    /* shd_waiters: clients waiting for this peer */
	struct shd_list marks;      /* struct net_mark */
	struct shd_list credit_link;/* in net->credit_wait: sendq blocked by max_inflight */
	/* receiving */
	uint64_t seq_recv;          /* last batch fully placed */
	uint64_t ack_sent;          /* last seq acknowledged to it */
	uint32_t ack_dropped;       /* records dropped since the last ACK */
	struct shd_list rxq;        /* parked batches */
	struct shd_waiter rx_wait;  /* parked on a full delivery ring */
	bool rx_waiting;
	struct shd_list ack_link;   /* in net->ackq */
	struct shd_list drain_link; /* in net->drainq: rxq may be placeable */
	/* statistics */
	uint64_t batches_out, bytes_out, msgs_out, batches_in, bytes_in, msgs_in;
	uint64_t credit_stalls, drops_down;
};

struct shd_net {
	struct shd_daemon *d;
	struct shd_fabric *fab;
	struct shd_fabric_cb cb;
	struct shd_peer *peers;     /* [n_nodes]; peers[my node] unused */
	uint32_t n_nodes;
	uint64_t incarnation;
	struct shd_ev *fab_ev;      /* CQ wait fd */
	struct shd_ev *progress_ev; /* deferred progress */
	struct shd_ev *retry_ev;    /* queued sends need a retry */
	struct shd_ev *linger_ev;
	struct shd_ev *hb_ev;
	uint32_t batch_cap;         /* bytes of a batch buffer */
	uint32_t inflight;          /* batches posted, not acknowledged */
	struct shd_list linger;     /* peers with open batches, oldest first */
	struct shd_list retry;      /* messages the fabric had no slot for */
	struct shd_list ackq;       /* peers owed an ACK */
	struct shd_list drainq;     /* peers whose parked batches may go on */
	struct shd_list credit_wait;/* peers whose sendq waits for max_inflight */
	struct shd_list pool_waiters; /* clients waiting for a batch buffer */
	struct net_msg **pool;      /* free batch buffers */
	uint32_t pool_free, pool_alloc, pool_max;
	/* pending JOB_JOIN announcements */
	struct { uint64_t hash; int32_t rank; } *joins;
	uint32_t n_joins, cap_joins;
};

static struct shd_ratelimit rl_wire = SHD_RATELIMIT_INIT(1000, 5);

static void net_progress(struct shd_net *n);

/* ------------------------------------------------------------- sending */

static void kick_progress(struct shd_net *n)
{
	shd_ev_activate(n->progress_ev);
}

static void peer_down(struct shd_peer *p, const char *why);

/* Hand a message to the fabric, keeping per-peer order behind any queued. */
static void post(struct shd_net *n, struct net_msg *m)
{
	if (!shd_list_empty(&n->retry)) {
		shd_list_add_tail(&n->retry, &m->link);
		return;
	}
	int r = shd_fabric_send(n->fab, m->peer->node, m->buf, m->len, m);
	if (r == 0 || r == 1) {
		kick_progress(n);
		return;
	}
	if (r == -EAGAIN) {
		shd_list_add_tail(&n->retry, &m->link);
		return;
	}
	/* the fabric refused outright: the peer is unusable */
	char why[96];
	snprintf(why, sizeof(why), "send failed: %s", strerror(-r));
	shd_list_init(&m->link);
	n->cb.on_send_done(n, m, r);
	peer_down(m->peer, why);
}

static void retry_posts(struct shd_net *n)
{
	while (!shd_list_empty(&n->retry)) {
		struct net_msg *m = shd_container_of(n->retry.next, struct net_msg, link);
		int r = shd_fabric_send(n->fab, m->peer->node, m->buf, m->len, m);
		if (r == -EAGAIN)
			return;
		shd_list_del(&m->link);
		if (r < 0 && r != 1) {
			n->cb.on_send_done(n, m, r);
			peer_down(m->peer, "send failed");
		}
	}
}

/* A control message (not a batch): heap buffer, freed on completion. */
static struct net_msg *ctl_new(struct shd_peer *p, size_t cap)
{
	struct net_msg *m = calloc(1, sizeof(*m) + cap);
	if (!m)
		return NULL;
	shd_list_init(&m->link);
	m->peer = p;
	m->buf = (uint8_t *)(m + 1);
	return m;
}

static void ctl_send(struct shd_net *n, struct net_msg *m, long len)
{
	if (len <= 0) {
		shd_warn("cannot encode a wire message for node %u (%ld)", m->peer->node, len);
		free(m);
		return;
	}
	m->len = (uint32_t)len;
	post(n, m);
}

static struct net_msg *pool_get(struct shd_net *n)
{
	if (n->pool_free)
		return n->pool[--n->pool_free];
	if (n->pool_alloc >= n->pool_max)
		return NULL;
	struct net_msg *m = calloc(1, sizeof(*m) + n->batch_cap);
	if (!m)
		return NULL;
	m->buf = (uint8_t *)(m + 1);
	m->batch = true;
	shd_list_init(&m->link);
	n->pool_alloc++;
	return m;
}

static void wake_list(struct shd_list *l)
{
	struct shd_list woken, *p, *t;
	shd_list_init(&woken);
	shd_list_splice_tail(&woken, l);
	shd_list_for_each_safe(p, t, &woken) {
		struct shd_waiter *w = shd_container_of(p, struct shd_waiter, link);
		shd_list_del(&w->link);
		w->wake(w);
	}
}

static void pool_put(struct shd_net *n, struct net_msg *m)
{
	n->pool[n->pool_free++] = m;
	wake_list(&n->pool_waiters);
}

static bool has_credit(const struct shd_peer *p)
{
	const struct shd_net *n = p->net;
	return p->seq_sent - p->seq_acked < n->d->cfg.peer_credits &&
	       n->inflight < n->d->cfg.max_inflight;
}

static void try_send(struct shd_peer *p)
{
	struct shd_net *n = p->net;
	while (!shd_list_empty(&p->sendq) && p->state == PEER_UP) {
		if (!has_credit(p)) {
			if (n->inflight >= n->d->cfg.max_inflight && !shd_list_linked(&p->credit_link))
				shd_list_add_tail(&n->credit_wait, &p->credit_link);
			return;
		}
		struct net_msg *m = shd_container_of(p->sendq.next, struct net_msg, link);
		shd_list_del(&m->link);
		p->seq_sent = m->seq;
		n->inflight++;
		post(n, m);
	}
	/* room for a new open batch again */
	if (shd_list_empty(&p->sendq))
		wake_list(&p->waiters);
}

enum close_why { CLOSE_SIZE, CLOSE_LINGER, CLOSE_FLUSH, CLOSE_JOB };

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
	p->open = NULL;
	shd_list_del(&p->linger_link);
	d->st.batches_out++;
	d->st.batch_bytes_out += m->len;
	d->st.batch_msgs_out += count;
	p->batches_out++;
	p->bytes_out += m->len;
	p->msgs_out += count;
	switch (why) {
	case CLOSE_SIZE:
	case CLOSE_JOB: d->st.batches_by_size++; break;
	case CLOSE_LINGER: d->st.batches_by_linger++; break;
	case CLOSE_FLUSH: d->st.batches_by_flush++; break;
	}
	shd_list_add_tail(&p->sendq, &m->link);
	try_send(p);
}

int shd_net_append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		   const struct shd_job *j, int32_t dst, uint32_t type, const void *data,
		   uint32_t len)
{
	struct shd_net *n = d->net;
	if (node >= n->n_nodes || node == d->node_id)
		return -EHOSTDOWN;
	struct shd_peer *p = &n->peers[node];
	if (p->state != PEER_UP)
		return -EHOSTDOWN;
	if (p->open && (p->enc.job_hash != j->hash || !shf_wire_batch_fits(&p->enc, len)))
		close_open(p, p->enc.job_hash != j->hash ? CLOSE_JOB : CLOSE_SIZE);
	if (!p->open) {
		struct net_msg *m = NULL;
		/* one closed batch may wait for credit; beyond that, wait */
		if (shd_list_empty(&p->sendq))
			m = pool_get(n);
		if (!m) {
			struct shd_list *q = shd_list_empty(&p->sendq) ? &n->pool_waiters : &p->waiters;
			shd_list_add_tail(q, &src->wait.link);
			src->blocked = true;
			p->credit_stalls++;
			d->st.credit_stalls++;
			return -EAGAIN;
		}
		shf_wire_batch_begin(&p->enc, m->buf, n->batch_cap, d->node_id, node, j->hash);
		p->open = m;
		p->open_since_ns = shd_now_ns();
		shd_list_add_tail(&n->linger, &p->linger_link);
		if (!shd_ev_armed(n->linger_ev))
			shd_ev_arm(n->linger_ev, d->cfg.linger_us);
	}
	if (!src->sent_to) {
		src->sent_to = calloc((n->n_nodes + 63) / 64, sizeof(uint64_t));
		if (!src->sent_to)
			return -EHOSTDOWN; /* cannot track it for flushes: drop, counted */
	}
	src->sent_to[node / 64] |= UINT64_C(1) << (node % 64);
	void *to = shf_wire_batch_add(&p->enc, dst, src->rank, type, len);
	if (!to)
		return -EHOSTDOWN; /* cannot happen: fits() was checked, ranks are bounded */
	memcpy(to, data, len);
	if (p->enc.off - SHF_WIRE_BATCH_HDR >= d->cfg.batch_bytes)
		close_open(p, CLOSE_SIZE);
	return 0;
}

static void on_linger(int fd, void *arg)
{
	struct shd_net *n = arg;
	uint64_t now = shd_now_ns(), lg = (uint64_t)n->d->cfg.linger_us * 1000u;
	(void)fd;
	while (!shd_list_empty(&n->linger)) {
		struct shd_peer *p = shd_container_of(n->linger.next, struct shd_peer, linger_link);
		if (p->open_since_ns + lg > now) {
			shd_ev_arm(n->linger_ev, (p->open_since_ns + lg - now) / 1000u + 1);
			break;
		}
		close_open(p, CLOSE_LINGER);
	}
	kick_progress(n);
}

/* ------------------------------------------------------------- marks */

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
				continue; /* its records were reported when it went down */
			if (p->open)
				close_open(p, CLOSE_FLUSH);
			if (p->seq_closed <= p->seq_acked)
				continue;
			struct net_mark *mk = malloc(sizeof(*mk));
			if (!mk) {
				src->report_down++; /* cannot track: report possible loss */
				continue;
			}
			mk->c = src;
			mk->seq = p->seq_closed;
			shd_list_add_tail(&p->marks, &mk->link);
			need++;
		}
	}
	kick_progress(n);
	return need;
}

static void mark_release(struct net_mark *mk, bool lost)
{
	struct shd_client *c = mk->c;
	shd_list_del(&mk->link);
	free(mk);
	if (!c)
		return;
	if (lost)
		c->report_down++;
	if (c->mark_need && --c->mark_need == 0)
		shd_relay_mark_done(c);
}

void shd_net_forget(struct shd_daemon *d, struct shd_client *src)
{
	struct shd_net *n = d->net;
	if (!src->mark_need)
		return;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_list *q, *t;
		shd_list_for_each_safe(q, t, &n->peers[i].marks) {
			struct net_mark *mk = shd_container_of(q, struct net_mark, link);
			if (mk->c == src)
				mk->c = NULL;
		}
	}
}

/* ------------------------------------------------------------- receiving */

static void send_drop(struct shd_peer *p, uint64_t job, uint64_t seq, int32_t src, int32_t dst,
		      uint32_t count, int reason)
{
	struct net_msg *m = ctl_new(p, SHF_WIRE_DROP_BYTES);
	if (!m)
		return;
	struct shf_wire_drop dr = {job, seq, src, dst, count, reason};
	ctl_send(p->net, m, shf_wire_enc_drop(m->buf, SHF_WIRE_DROP_BYTES, p->net->d->node_id,
					      p->node, &dr));
}

/*
 * Place the records of a batch from where its iterator stands.  Returns 1
 * when the batch is done, 0 when it waits for room (parked on a ring).
 */
static int place_batch(struct shd_peer *p, struct net_rx *rx)
{
	struct shd_net *n = p->net;
	struct shd_daemon *d = n->d;
	struct shd_job *j = shd_job_find_hash(d, rx->h.u.batch.job_hash);
	int32_t drop_src = -1, drop_dst = -1;
	uint32_t drops = 0;
	int r;
	for (;;) {
		if (!rx->have_cur) {
			r = shf_wire_iter_next(&rx->it, &rx->cur);
			if (r <= 0)
				break; /* verified before: r < 0 cannot happen */
			rx->have_cur = true;
		}
		const struct shf_wire_rec *rec = &rx->cur;
		struct shd_client *t = NULL;
		if (j && rec->dst_rank < j->world && j->rank_node[rec->dst_rank] == d->node_id)
			t = j->clients[rec->dst_rank];
		r = t ? shd_relay_place(d, t, rec->src_rank, rec->type, rec->data, rec->len) : -ESRCH;
		if (r == -EAGAIN) {
			if (shd_relay_wait_room(t, &p->rx_wait, rec->len)) {
				p->rx_waiting = true;
				d->st.batches_parked++;
				shd_relay_schedule(d); /* publish what was placed so far */
				if (drops)
					send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src,
						  drop_dst, drops, -ESRCH);
				return 0;
			}
			continue; /* room appeared: retry */
		}
		rx->have_cur = false;
		if (r < 0) {
			d->st.msgs_unroutable++;
			p->ack_dropped++;
			if (drops && (drop_src != rec->src_rank || drop_dst != rec->dst_rank)) {
				send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src,
					  drop_dst, drops, -ESRCH);
				drops = 0;
			}
			drop_src = rec->src_rank;
			drop_dst = rec->dst_rank;
			drops++;
			continue;
		}
		p->msgs_in++;
		d->st.batch_msgs_in++;
	}
	if (drops)
		send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src, drop_dst, drops,
			  -ESRCH);
	p->seq_recv = rx->h.u.batch.seq;
	if (!shd_list_linked(&p->ack_link))
		shd_list_add_tail(&n->ackq, &p->ack_link);
	shd_relay_schedule(d); /* publish, then ACK from shd_net_after_pass */
	return 1;
}

/* Place parked batches in sequence order while they fit. */
static void drain_rxq(struct shd_peer *p)
{
	while (!shd_list_empty(&p->rxq) && !p->rx_waiting) {
		struct net_rx *rx = shd_container_of(p->rxq.next, struct net_rx, link);
		if (rx->h.u.batch.seq != p->seq_recv + 1)
			return; /* a gap: wait for the missing batch */
		if (!place_batch(p, rx))
			return;
		shd_list_del(&rx->link);
		free(rx);
	}
}

static void rx_wake(struct shd_waiter *w)
{
	struct shd_peer *p = shd_container_of(w, struct shd_peer, rx_wait);
	p->rx_waiting = false;
	drain_rxq(p);
}

static int on_batch(struct shd_peer *p, void *buf, const struct shf_wire_hdr *h)
{
	struct shd_net *n = p->net;
	struct shd_daemon *d = n->d;
	if (shf_wire_batch_verify(buf, h, d->cfg.max_msg) < 0) {
		d->st.wire_bad++;
		shd_log_rl(&rl_wire, SHD_LOG_WARN, "node %u: batch %llu has a bad record; dropped",
			   p->node, (unsigned long long)h->u.batch.seq);
		return 0;
	}
	if (h->u.batch.seq <= p->seq_recv) {
		d->st.wire_bad++;
		shd_log_rl(&rl_wire, SHD_LOG_WARN, "node %u: duplicate batch %llu dropped", p->node,
			   (unsigned long long)h->u.batch.seq);
		return 0;
	}
	d->st.batches_in++;
	d->st.batch_bytes_in += h->len;
	p->batches_in++;
	p->bytes_in += h->len;
	struct net_rx tmp, *rx;
	memset(&tmp, 0, sizeof(tmp));
	tmp.buf = buf;
	tmp.h = *h;
	shf_wire_iter_init(&tmp.it, buf, h, d->cfg.max_msg);
	bool in_order = shd_list_empty(&p->rxq) && !p->rx_waiting &&
			h->u.batch.seq == p->seq_recv + 1;
	/* fast path: in order, nothing parked, everything fits */
	if (in_order && place_batch(p, &tmp))
		return 0;
	/* It waits (parked on a full ring, or out of order): copy it out and
	 * give the fabric buffer back at once.  Holding receive buffers could
	 * starve the endpoint of the very ACKs and batches that would unblock
	 * it (completions arrive out of order on tcp;ofi_rxm).  At most
	 * peer_credits batches per peer can wait, so the copies are bounded. */
	rx = malloc(sizeof(*rx) + h->len);
	if (!rx) {
		shd_err("node %u: out of memory parking batch %llu", p->node,
			(unsigned long long)h->u.batch.seq);
		return 0;
	}
	*rx = tmp;
	rx->buf = rx + 1;
	memcpy(rx->buf, buf, h->len);
	rx->it.buf = rx->buf; /* the iterator keeps offsets from its base */
	if (rx->have_cur)
		rx->cur.data = (const uint8_t *)rx->buf + ((const uint8_t *)tmp.cur.data -
							   (const uint8_t *)buf);
	/* keep the queue in sequence order */
	struct shd_list *q = p->rxq.prev;
	while (q != &p->rxq &&
	       shd_container_of(q, struct net_rx, link)->h.u.batch.seq > h->u.batch.seq)
		q = q->prev;
	rx->link.prev = q;
	rx->link.next = q->next;
	q->next->prev = &rx->link;
	q->next = &rx->link;
	/* an out-of-order batch may be placeable once the gap closes */
	if (!in_order && !shd_list_linked(&p->drain_link))
		shd_list_add_tail(&n->drainq, &p->drain_link);
	return 0;
}

static void on_ack(struct shd_peer *p, const struct shf_wire_ack *a)
{
	struct shd_net *n = p->net;
	if (a->acked_seq <= p->seq_acked)
		return;
	if (a->acked_seq > p->seq_sent) {
		n->d->st.wire_bad++;
		shd_log_rl(&rl_wire, SHD_LOG_WARN, "node %u acked batch %llu, beyond %llu sent",
			   p->node, (unsigned long long)a->acked_seq,
			   (unsigned long long)p->seq_sent);
		return;
	}
	n->inflight -= (uint32_t)(a->acked_seq - p->seq_acked);
	p->seq_acked = a->acked_seq;
	while (!shd_list_empty(&p->marks)) {
		struct net_mark *mk = shd_container_of(p->marks.next, struct net_mark, link);
		if (mk->seq > p->seq_acked)
			break;
		mark_release(mk, false);
	}
	try_send(p);
	/* global credit freed: peers held back by max_inflight go again */
	struct shd_list *q, *t;
	shd_list_for_each_safe(q, t, &n->credit_wait) {
		struct shd_peer *o = shd_container_of(q, struct shd_peer, credit_link);
		shd_list_del(&o->credit_link);
		try_send(o);
	}
}

static void on_join(struct shd_peer *p, const struct shf_wire_join *jn)
{
	struct shd_daemon *d = p->net->d;
	struct shd_job *j = shd_job_remote(d, jn->name, jn->world, jn->uid);
	if (!j) {
		shd_log_rl(&rl_wire, SHD_LOG_WARN,
			   "node %u: join of job %s (world %d) conflicts with what this node knows",
			   p->node, jn->name, jn->world);
		return;
	}
	for (uint32_t i = 0; i < jn->nranges; i++) {
		struct shf_wire_range r = shf_wire_join_range(jn, i);
		for (int32_t k = 0; k < r.count && r.first + k < j->world; k++)
			shd_job_remote_rank(d, j, r.first + k, p->node, true, 0);
	}
}

static void on_leave(struct shd_peer *p, const struct shf_wire_leave *l)
{
	struct shd_daemon *d = p->net->d;
	struct shd_job *j = shd_job_find_hash(d, l->job_hash);
	if (!j)
		return;
	if (l->rank >= 0) {
		shd_job_remote_rank(d, j, l->rank, p->node, false, -ESRCH);
		return;
	}
	for (int32_t r = 0; r < j->world; r++)
		if (j->rank_node[r] == p->node)
			shd_job_remote_rank(d, j, r, p->node, false, -ESRCH);
}

static void on_drop(struct shd_peer *p, const struct shf_wire_drop *dr)
{
	struct shd_daemon *d = p->net->d;
	struct shd_job *j = shd_job_find_hash(d, dr->job_hash);
	if (!j || dr->src_rank >= j->world || !j->clients[dr->src_rank])
		return;
	struct shd_client *c = j->clients[dr->src_rank];
	c->report_dead += dr->count;
	c->st.drops_dead += dr->count;
}

static int on_recv(void *arg, uint32_t node, void *buf, size_t len)
{
	struct shd_net *n = arg;
	struct shd_daemon *d = n->d;
	struct shf_wire_hdr h;
	int r = shf_wire_check(buf, len, n->n_nodes, d->node_id, &h);
	if (r < 0 || (node != SHD_FABRIC_NODE_UNKNOWN && node != h.src_node)) {
		d->st.wire_bad++;
		shd_log_rl(&rl_wire, SHD_LOG_WARN, "rejected a %zu-byte wire message: %s", len,
			   r < 0 ? (r == -EPROTO ? "bad magic or version" : "bad header or lengths")
				 : "source node does not match its address");
		return 0;
	}
	struct shd_peer *p = &n->peers[h.src_node];
	if (p->state != PEER_UP)
		return 0; /* down is final: ignore a ghost */
	p->last_heard_ns = shd_now_ns();
	if (!p->heard)
		shd_info("peer node %u (%s) up", p->node, p->host);
	p->heard = true;
	switch (h.kind) {
	case SHF_WIRE_BATCH: return on_batch(p, buf, &h);
	case SHF_WIRE_ACK: on_ack(p, &h.u.ack); break;
	case SHF_WIRE_HEARTBEAT:
		if (p->incarnation && p->incarnation != h.u.heartbeat.incarnation)
			peer_down(p, "it restarted");
		else
			p->incarnation = h.u.heartbeat.incarnation;
		break;
	case SHF_WIRE_JOB_JOIN: on_join(p, &h.u.join); break;
	case SHF_WIRE_JOB_LEAVE: on_leave(p, &h.u.leave); break;
	case SHF_WIRE_EPOCH: {
		struct shd_job *j = shd_job_find_hash(d, h.u.epoch.job_hash);
		if (j)
			shd_job_epoch_remote(d, j, h.src_node, h.u.epoch.phase,
					     (int32_t)h.u.epoch.count);
		break;
	}
	case SHF_WIRE_DROP: on_drop(p, &h.u.drop); break;
	default: break;
	}
	return 0;
}

static void on_send_done(void *arg, void *ctx, int status)
{
	struct shd_net *n = arg;
	struct net_msg *m = ctx;
	struct shd_peer *p = m->peer;
	if (m->batch)
		pool_put(n, m);
	else
		free(m);
	if (status < 0 && status != -EHOSTDOWN && p->state == PEER_UP) {
		char why[96];
		snprintf(why, sizeof(why), "send failed: %s", strerror(-status));
		peer_down(p, why);
	}
}

static void on_error(void *arg, uint32_t node, int err, const char *msg)
{
	(void)arg;
	shd_log_rl(&rl_wire, SHD_LOG_WARN, "fabric error (node %d): %s: %s",
		   node == SHD_FABRIC_NODE_UNKNOWN ? -1 : (int)node, strerror(-err), msg);
}

/* ------------------------------------------------------------- liveness */

static void peer_down(struct shd_peer *p, const char *why)
{
	struct shd_net *n = p->net;
	struct shd_daemon *d = n->d;
	if (p->state == PEER_DOWN)
		return;
	p->state = PEER_DOWN;
	shd_warn("peer node %u (%s) down: %s", p->node, p->host, why);
	/* records not yet sent are lost: tell their senders */
	if (p->open) {
		p->open->len = (uint32_t)shf_wire_batch_end(&p->enc, ++p->seq_closed);
		shd_list_add_tail(&p->sendq, &p->open->link);
		p->open = NULL;
		shd_list_del(&p->linger_link);
	}
	while (!shd_list_empty(&p->sendq)) {
		struct net_msg *m = shd_container_of(p->sendq.next, struct net_msg, link);
		struct shf_wire_hdr h;
		shd_list_del(&m->link);
		if (shf_wire_check(m->buf, m->len, n->n_nodes, p->node, &h) == 0) {
			struct shd_job *j = shd_job_find_hash(d, h.u.batch.job_hash);
			struct shf_wire_iter it;
			struct shf_wire_rec rec;
			shf_wire_iter_init(&it, m->buf, &h, UINT32_MAX);
			while (shf_wire_iter_next(&it, &rec) > 0) {
				p->drops_down++;
				if (j && rec.src_rank < j->world && j->clients[rec.src_rank]) {
					j->clients[rec.src_rank]->report_down++;
					j->clients[rec.src_rank]->st.drops_down++;
				}
			}
		}
		pool_put(n, m);
	}
	/* marks waiting for its acks: complete them, reporting possible loss */
	while (!shd_list_empty(&p->marks))
		mark_release(shd_container_of(p->marks.next, struct net_mark, link), true);
	n->inflight -= (uint32_t)(p->seq_sent - p->seq_acked);
	p->seq_acked = p->seq_sent;
	shd_list_del(&p->credit_link);
	shd_list_del(&p->ack_link);
	shd_fabric_remove(n->fab, p->node);
	/* its ranks are gone: -EHOSTDOWN for flushes and epochs */
	struct shd_list *q, *t;
	shd_list_for_each_safe(q, t, &d->jobs) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		for (int32_t r = 0; r < j->world; r++)
			if (j->rank_node[r] == p->node)
				shd_job_remote_rank(d, j, r, p->node, false, -EHOSTDOWN);
	}
	/* whoever waits for this peer retries and finds it down */
	wake_list(&p->waiters);
}

static void on_heartbeat(int fd, void *arg)
{
	struct shd_net *n = arg;
	struct shd_daemon *d = n->d;
	uint64_t now = shd_now_ns();
	(void)fd;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		if (i == d->node_id || p->state != PEER_UP)
			continue;
		/* a peer never heard from may still be starting: it gets the
		 * world timeout (at least peer_timeout_ms) before it is down */
		uint64_t limit_ms = d->cfg.peer_timeout_ms;
		if (!p->heard && d->cfg.world_timeout_ms > limit_ms)
			limit_ms = d->cfg.world_timeout_ms;
		if (now - p->last_heard_ns > limit_ms * 1000000u) {
			char why[64];
			snprintf(why, sizeof(why), "silent for %llu ms",
				 (unsigned long long)((now - p->last_heard_ns) / 1000000u));
			peer_down(p, why);
			continue;
		}
		struct net_msg *m = ctl_new(p, SHF_WIRE_HEARTBEAT_BYTES);
		if (!m)
			continue;
		struct shf_wire_heartbeat hb = {now, n->incarnation};
		ctl_send(n, m, shf_wire_enc_heartbeat(m->buf, SHF_WIRE_HEARTBEAT_BYTES, d->node_id,
						      i, &hb));
	}
	shd_ev_arm(n->hb_ev, (uint64_t)d->cfg.heartbeat_ms * 1000u);
}

/* ------------------------------------------------------------- jobs */

void shd_net_job_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, bool joined)
{
	struct shd_net *n = d->net;
	if (joined) {
		if (n->n_joins == n->cap_joins) {
			uint32_t cap = n->cap_joins ? 2 * n->cap_joins : 64;
			void *q = realloc(n->joins, sizeof(*n->joins) * cap);
			if (!q) {
				shd_err("out of memory announcing job %s rank %d", j->name, rank);
				return;
			}
			n->joins = q;
			n->cap_joins = cap;
		}
		n->joins[n->n_joins].hash = j->hash;
		n->joins[n->n_joins].rank = rank;
		n->n_joins++;
		shd_relay_schedule(d); /* announced from shd_net_after_pass */
		return;
	}
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		if (i == d->node_id || p->state != PEER_UP)
			continue;
		struct net_msg *m = ctl_new(p, SHF_WIRE_LEAVE_BYTES);
		if (!m)
			continue;
		struct shf_wire_leave l = {j->hash, rank, 0};
		ctl_send(n, m, shf_wire_enc_leave(m->buf, SHF_WIRE_LEAVE_BYTES, d->node_id, i, &l));
	}
}

static int cmp_join(const void *a, const void *b)
{
	const struct { uint64_t hash; int32_t rank; } *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Announce the ranks registered since the last pass, one JOIN per job. */
static void send_joins(struct shd_net *n)
{
	struct shd_daemon *d = n->d;
	if (!n->n_joins)
		return;
	qsort(n->joins, n->n_joins, sizeof(*n->joins), cmp_join);
	uint32_t i = 0;
	while (i < n->n_joins) {
		uint32_t k = i;
		while (k < n->n_joins && n->joins[k].hash == n->joins[i].hash)
			k++;
		struct shd_job *j = shd_job_find_hash(d, n->joins[i].hash);
		struct shf_wire_range *rg = j ? malloc(sizeof(*rg) * (k - i)) : NULL;
		uint32_t nr = 0;
		for (uint32_t x = i; rg && x < k; x++) {
			int32_t r = n->joins[x].rank;
			if (j->rank_node[r] != d->node_id)
				continue; /* left again meanwhile */
			if (nr && rg[nr - 1].first + rg[nr - 1].count == r)
				rg[nr - 1].count++;
			else if (!nr || rg[nr - 1].first + rg[nr - 1].count < r)
				rg[nr++] = (struct shf_wire_range){r, 1};
		}
		if (nr) {
			struct shf_wire_join jn = {0};
			jn.world = j->world;
			jn.uid = (uint32_t)j->uid;
			snprintf(jn.name, sizeof(jn.name), "%s", j->name);
			size_t cap = shf_wire_join_bytes(nr);
			for (uint32_t p = 0; p < n->n_nodes; p++) {
				if (p == d->node_id || n->peers[p].state != PEER_UP)
					continue;
				struct net_msg *m = ctl_new(&n->peers[p], cap);
				if (m)
					ctl_send(n, m, shf_wire_enc_join(m->buf, cap, d->node_id, p, &jn,
									 rg, nr));
			}
		}
		free(rg);
		i = k;
	}
	n->n_joins = 0;
}

void shd_net_epoch(struct shd_daemon *d, struct shd_job *j, uint32_t phase, int32_t count)
{
	struct shd_net *n = d->net;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		if (i == d->node_id || p->state != PEER_UP)
			continue;
		struct net_msg *m = ctl_new(p, SHF_WIRE_EPOCH_BYTES);
		if (!m)
			continue;
		struct shf_wire_epoch ep = {j->hash, j->epoch_seq + 1, phase, (uint32_t)count};
		ctl_send(n, m, shf_wire_enc_epoch(m->buf, SHF_WIRE_EPOCH_BYTES, d->node_id, i, &ep));
	}
}

/* ------------------------------------------------------------- loop glue */

void shd_net_after_pass(struct shd_daemon *d)
{
	struct shd_net *n = d->net;
	/* delivery rings are published: acknowledge what was placed */
	while (!shd_list_empty(&n->ackq)) {
		struct shd_peer *p = shd_container_of(n->ackq.next, struct shd_peer, ack_link);
		shd_list_del(&p->ack_link);
		if (p->seq_recv == p->ack_sent || p->state != PEER_UP)
			continue;
		struct net_msg *m = ctl_new(p, SHF_WIRE_ACK_BYTES);
		if (!m)
			continue;
		struct shf_wire_ack a = {p->seq_recv, d->cfg.peer_credits, p->ack_dropped};
		p->ack_sent = p->seq_recv;
		p->ack_dropped = 0;
		ctl_send(n, m, shf_wire_enc_ack(m->buf, SHF_WIRE_ACK_BYTES, d->node_id, p->node, &a));
	}
	send_joins(n);
	kick_progress(n);
}

static void net_progress(struct shd_net *n)
{
	for (int i = 0; i < 64; i++) {
		int r = shd_fabric_progress(n->fab, &n->cb, n);
		if (r < 0) {
			shd_err("fabric completion queue failed: %s", strerror(-r));
			break;
		}
		retry_posts(n);
		while (!shd_list_empty(&n->drainq)) {
			struct shd_peer *p =
				shd_container_of(n->drainq.next, struct shd_peer, drain_link);
			shd_list_del(&p->drain_link);
			drain_rxq(p);
		}
		if (r == 0)
			break;
	}
	if (shd_fabric_has_pending(n->fab) || !shd_list_empty(&n->retry)) {
		if (!shd_ev_armed(n->retry_ev))
			shd_ev_arm(n->retry_ev, 1000);
	}
	/* sleep on the CQ fd only when libfabric says it is safe */
	if (!shd_fabric_trywait(n->fab))
		kick_progress(n);
}

static void on_fabric(int fd, void *arg)
{
	(void)fd;
	net_progress(arg);
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
		json_t *o = json_object();
		json_object_set_new(o, "node", json_integer(i));
		json_object_set_new(o, "host", json_string(p->host));
		json_object_set_new(o, "addr", json_string(p->addr));
		json_object_set_new(o, "state", json_string(p->state == PEER_UP ? "up" : "down"));
		json_object_set_new(o, "heard", json_boolean(p->heard));
		json_object_set_new(o, "last_heard_ms",
				    json_real((double)(now - p->last_heard_ns) / 1e6));
		json_object_set_new(o, "inflight", json_integer((json_int_t)(p->seq_sent - p->seq_acked)));
		json_object_set_new(o, "queued", json_integer((json_int_t)(p->seq_closed - p->seq_sent)));
		json_object_set_new(o, "open_bytes",
				    json_integer(p->open ? p->enc.off - SHF_WIRE_BATCH_HDR : 0));
		json_object_set_new(o, "parked", json_boolean(p->rx_waiting));
		unsigned nw = 0;
		for (const struct shd_list *q = p->waiters.next; q != &p->waiters; q = q->next)
			nw++;
		json_object_set_new(o, "waiters", json_integer(nw));
#define PI(f) json_object_set_new(o, #f, json_integer((json_int_t)p->f))
		PI(batches_out); PI(bytes_out); PI(msgs_out);
		PI(batches_in); PI(bytes_in); PI(msgs_in);
		PI(credit_stalls); PI(drops_down);
#undef PI
		json_array_append_new(a, o);
	}
	return a;
}

/* ------------------------------------------------------------- open/close */

static bool alone(const struct shd_config *cfg)
{
	if (!strcmp(cfg->rendezvous, "none"))
		return true;
	if (!strcmp(cfg->rendezvous, "auto"))
		return !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") &&
		       !getenv("PMI_RANK") && !getenv("SLURM_STEP_ID");
	return false;
}

/* "HOST[:PORT]" with "{node}" in HOST replaced by node id + 1. */
static int split_bind(const char *bind, int node, char *host, size_t hl, char *port, size_t pl)
{
	char tmp[300];
	const char *at = strstr(bind, "{node}");
	if (at && node >= 0)
		snprintf(tmp, sizeof(tmp), "%.*s%d%s", (int)(at - bind), bind, node + 1, at + 6);
	else if (at)
		return -EINVAL;
	else
		snprintf(tmp, sizeof(tmp), "%s", bind);
	const char *colon = strrchr(tmp, ':');
	host[0] = port[0] = '\0';
	if (tmp[0] == '[') { /* [v6]:port */
		const char *close = strchr(tmp, ']');
		if (!close)
			return -EINVAL;
		snprintf(host, hl, "%.*s", (int)(close - tmp - 1), tmp + 1);
		if (close[1] == ':')
			snprintf(port, pl, "%s", close + 2);
		return 0;
	}
	if (colon) {
		snprintf(host, hl, "%.*s", (int)(colon - tmp), tmp);
		snprintf(port, pl, "%s", colon + 1);
	} else {
		snprintf(host, hl, "%s", tmp);
	}
	return 0;
}

int shd_net_open(struct shd_daemon *d)
{
	const struct shd_config *cfg = &d->cfg;
	char err[512] = "";
	int r;
	d->node_id = 0;
	d->n_nodes = 1;
	d->net = NULL;
	if (alone(cfg))
		return 0;
	const char *spec = strcmp(cfg->rendezvous, "auto") ? cfg->rendezvous : "mpi";
	struct shd_rdv_self self = {cfg->node_name, cfg->bind, 0};
	struct shd_rdv *rdv = NULL;
	if ((r = shd_rdv_open(spec, &self, &rdv, err, sizeof(err))) < 0) {
		shd_err("rendezvous %s: %s", spec, err);
		return r;
	}
	int my = shd_rdv_my_node(rdv);
	uint32_t nn = shd_rdv_nodes(rdv);
	struct shd_net *n = calloc(1, sizeof(*n));
	struct shd_rdv_result res = {0};
	if (!n) {
		r = -ENOMEM;
		goto fail_rdv;
	}
	n->d = d;
	n->batch_cap = SHF_WIRE_BATCH_HDR + (uint32_t)(cfg->batch_bytes > shf_wire_rec_bytes(cfg->max_msg)
						     ? cfg->batch_bytes
						     : shf_wire_rec_bytes(cfg->max_msg));
	char host[320], port[32];
	if (split_bind(cfg->bind, my, host, sizeof(host), port, sizeof(port)) < 0) {
		shd_err("bind '%s': bad address, or {node} with a rendezvous that does not "
			"know node ids before the exchange", cfg->bind);
		r = -EINVAL;
		goto fail_net;
	}
	struct shd_fabric_opts fo = {
		.provider = cfg->provider[0] ? cfg->provider : NULL,
		.node = host[0] ? host : NULL,
		.service = port[0] ? port : NULL,
		.iface = cfg->iface[0] ? cfg->iface : NULL,
		.max_nodes = nn,
		.recv_buffers = cfg->recv_buffers,
		.buf_bytes = n->batch_cap,
		.send_slots = cfg->peer_credits * (nn < 64 ? nn : 64) + 256,
		/* a peer has at most peer_credits batches in flight plus a few
		 * control messages: deeper rxm queues only cost memory */
		.conn_queue = 2 * cfg->peer_credits < 16 ? 16 : 2 * cfg->peer_credits,
	};
	if ((r = shd_fabric_open(&fo, &n->fab, err, sizeof(err))) < 0) {
		shd_err("fabric endpoint (provider %s, bind '%s'): %s", cfg->provider, cfg->bind,
			err);
		goto fail_net;
	}
	uint8_t addr[SHD_FABRIC_ADDR_MAX];
	size_t alen = sizeof(addr);
	if ((r = shd_fabric_addr(n->fab, addr, &alen)) < 0) {
		shd_err("cannot read my fabric address: %s", strerror(-r));
		goto fail_fab;
	}
	if ((r = shd_rdv_exchange(rdv, addr, alen, &res, err, sizeof(err))) < 0) {
		shd_err("rendezvous %s: %s", spec, err);
		goto fail_fab;
	}
	shd_rdv_close(rdv);
	rdv = NULL;
	n->n_nodes = res.n_nodes;
	d->node_id = res.my_node;
	d->n_nodes = res.n_nodes;
	n->peers = calloc(n->n_nodes, sizeof(*n->peers));
	n->pool_max = (uint32_t)(cfg->batch_budget / n->batch_cap);
	if (n->pool_max < 1)
		n->pool_max = 1;
	n->pool = calloc(n->pool_max, sizeof(*n->pool));
	if (!n->peers || !n->pool) {
		r = -ENOMEM;
		goto fail_fab;
	}
	shd_list_init(&n->linger);
	shd_list_init(&n->retry);
	shd_list_init(&n->ackq);
	shd_list_init(&n->drainq);
	shd_list_init(&n->credit_wait);
	shd_list_init(&n->pool_waiters);
	n->incarnation = shd_now_ns() ^ ((uint64_t)getpid() << 32) ^ 1u;
	n->cb.on_recv = on_recv;
	n->cb.on_send_done = on_send_done;
	n->cb.on_error = on_error;
	uint64_t now = shd_now_ns();
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		p->net = n;
		p->node = i;
		p->state = PEER_UP;
		p->last_heard_ns = now;
		snprintf(p->host, sizeof(p->host), "%s", res.nodes[i].host);
		shd_list_init(&p->linger_link);
		shd_list_init(&p->sendq);
		shd_list_init(&p->waiters);
		shd_list_init(&p->marks);
		shd_list_init(&p->credit_link);
		shd_list_init(&p->rxq);
		shd_list_init(&p->ack_link);
		shd_list_init(&p->drain_link);
		shd_list_init(&p->rx_wait.link);
		p->rx_wait.wake = rx_wake;
		if (i == d->node_id)
			continue;
		if (res.kind == SHD_RDV_STATIC) {
			r = shd_fabric_insert_svc(n->fab, res.nodes[i].host, res.nodes[i].port, i);
			snprintf(p->addr, sizeof(p->addr), "%s:%s", res.nodes[i].host,
				 res.nodes[i].port);
		} else {
			r = shd_fabric_insert(n->fab, res.nodes[i].addr, res.nodes[i].addr_len, i);
			shd_fabric_addr_str(n->fab, res.nodes[i].addr, res.nodes[i].addr_len, p->addr,
					    sizeof(p->addr));
		}
		if (r < 0) {
			shd_err("cannot add node %u (%s) to the address vector: %s", i, p->host,
				strerror(-r));
			goto fail_fab;
		}
	}
	n->fab_ev = shd_loop_fd(d->loop, shd_fabric_wait_fd(n->fab), on_fabric, n);
	n->progress_ev = shd_loop_defer(d->loop, on_fabric, n);
	n->retry_ev = shd_loop_timer(d->loop, on_fabric, n);
	n->linger_ev = shd_loop_timer(d->loop, on_linger, n);
	n->hb_ev = shd_loop_timer(d->loop, on_heartbeat, n);
	if (!n->fab_ev || !n->progress_ev || !n->retry_ev || !n->linger_ev || !n->hb_ev) {
		r = -ENOMEM;
		goto fail_fab;
	}
	shd_ev_arm(n->hb_ev, (uint64_t)cfg->heartbeat_ms * 1000u);
	char me[96] = "";
	shd_fabric_addr_str(n->fab, NULL, 0, me, sizeof(me));
	shd_notice("rendezvous %s done: node %u of %u (%s), provider %s, address %s", spec,
		   d->node_id, d->n_nodes, res.nodes[d->node_id].host, shd_fabric_provider(n->fab),
		   me);
	for (uint32_t i = 0; i < n->n_nodes; i++)
		if (i != d->node_id)
			shd_info("peer node %u: %s %s", i, n->peers[i].host, n->peers[i].addr);
	shd_rdv_result_fini(&res);
	d->net = n;
	kick_progress(n);
	return 0;

fail_fab:
	shd_ev_free(n->fab_ev);
	shd_ev_free(n->progress_ev);
	shd_ev_free(n->retry_ev);
	shd_ev_free(n->linger_ev);
	shd_ev_free(n->hb_ev);
	shd_fabric_close(n->fab);
	free(n->peers);
	free(n->pool);
fail_net:
	free(n);
	shd_rdv_result_fini(&res);
fail_rdv:
	shd_rdv_close(rdv);
	d->node_id = 0;
	d->n_nodes = 1;
	return r;
}

void shd_net_close(struct shd_daemon *d)
{
	struct shd_net *n = d->net;
	if (!n)
		return;
	shd_ev_free(n->fab_ev);
	shd_ev_free(n->progress_ev);
	shd_ev_free(n->retry_ev);
	shd_ev_free(n->linger_ev);
	shd_ev_free(n->hb_ev);
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		while (!shd_list_empty(&p->rxq)) {
			struct net_rx *rx = shd_container_of(p->rxq.next, struct net_rx, link);
			shd_list_del(&rx->link);
			free(rx);
		}
		while (!shd_list_empty(&p->marks)) {
			struct net_mark *mk = shd_container_of(p->marks.next, struct net_mark, link);
			shd_list_del(&mk->link);
			free(mk);
		}
		while (!shd_list_empty(&p->sendq)) {
			struct net_msg *m = shd_container_of(p->sendq.next, struct net_msg, link);
			shd_list_del(&m->link);
			free(m);
		}
		free(p->open);
	}
	/* the fabric drops what it still holds without callbacks: free our
	 * retry queue; posted messages die with the endpoint */
	while (!shd_list_empty(&n->retry)) {
		struct net_msg *m = shd_container_of(n->retry.next, struct net_msg, link);
		shd_list_del(&m->link);
		free(m);
	}
	shd_fabric_close(n->fab);
	for (uint32_t i = 0; i < n->pool_free; i++)
		free(n->pool[i]);
	free(n->pool);
	free(n->peers);
	free(n->joins);
	free(n);
	d->net = NULL;
}
