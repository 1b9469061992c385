/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/rx.c - the receiving half of the peer protocol.
 *
 * A batch is placed record by record into local delivery rings (deliver.c).
 * A full ring parks the batch: it is copied out of the fabric's receive
 * buffer, which goes back at once (holding receive buffers could starve
 * the endpoint of the very ACKs and batches that would unblock it:
 * completions arrive out of order on tcp;ofi_rxm), and its credit is not
 * returned until it is placed.  At most peer_credits batches per peer can
 * wait, so the copies are bounded.  Once a batch is placed and the rings
 * are published (the pass's network step), an ACK returns its credit;
 * records for a rank that is gone come back to the sender as DROP reports,
 * which its next flush turns into -ESRCH.
 *
 * A broadcast record (dst SHF_WIRE_DST_BCAST) is placed into the ring of
 * every local rank of its job, in rank order; a full ring parks the batch
 * with the record part-placed (rx->bcast_next), so no rank gets it twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/deliver.h"
#include "daemon/jobtab.h"
#include "daemon/net/int.h"
#include "daemon/net/post.h"
#include "daemon/sched.h"

static void send_drop(struct shd_peer *p, uint64_t job, uint64_t seq, int32_t src, int32_t dst,
		      uint32_t count, int reason)
{
	uint8_t buf[SHF_WIRE_DROP_BYTES];
	struct shf_wire_drop dr = {job, seq, src, dst, count, reason};
	shd_net_send_small(p, buf, shf_wire_enc_drop(buf, sizeof(buf), p->net->d->node_id, p->node,
						   &dr));
}

/*
 * The broadcast rx->cur into every local rank of j from rx->bcast_next on.
 * 1 when done, 0 when parked on a full ring (progress kept in rx).
 */
static int place_bcast(struct shd_peer *p, struct net_rx *rx, struct shd_job *j)
{
	struct shd_daemon *d = p->net->d;
	const struct shf_wire_rec *rec = &rx->cur;
	int32_t r = shd_jobtab_next(j, rx->bcast_next);
	while (r < j->world) {
		struct shd_client *t = shd_jobtab_node(j, r) == d->node_id
					       ? shd_jobtab_client(j, r) : NULL;
		if (t && r != rec->src_rank) {
			int e = shd_deliver_place(d, t, rec->src_rank, rec->type, rec->data,
						  rec->len);
			if (e == -EAGAIN) {
				if (shd_deliver_wait_room(t, &p->cold->rx_wait, rec->len)) {
					rx->bcast_next = r; /* resume here */
					p->rx_waiting = true;
					d->st.batches_parked++;
					shd_sched_pass(d); /* publish what was placed so far */
					return 0;
				}
				continue; /* room appeared: retry */
			}
			if (e < 0) {
				/* the rank is going away here: its sender hears of it */
				d->st.msgs_unroutable++;
				p->ack_dropped++;
				send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq,
					  rec->src_rank, r, 1, -ESRCH);
			} else {
				d->st.bcast_deliveries++;
			}
		}
		r = shd_jobtab_next(j, r + 1);
	}
	rx->bcast_next = 0;
	d->st.bcast_rx++;
	return 1;
}

/*
 * Place the records of a batch from where its iterator stands.  Returns 1
 * when the batch is done, 0 when it waits for room (parked on a ring).
 */
static int place_batch(struct shd_peer *p, struct net_rx *rx)
{
	struct shd_net *n = p->net;
	struct shd_daemon *d = n->d;
	struct shd_job *j = shd_jobtab_find_hash(d, rx->h.u.batch.job_hash);
	/* a job failed by an owner conflict takes nothing from the network */
	bool denied = j && j->deny;
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
		if (rec->dst_rank == SHF_WIRE_DST_BCAST) {
			if (!j || denied) {
				d->st.msgs_unroutable++;
				d->st.rx_drops_owner += denied;
				p->ack_dropped++;
				rx->have_cur = false;
				send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq,
					  rec->src_rank, SHF_WIRE_DST_BCAST, 1, -ESRCH);
				continue;
			}
			if (place_bcast(p, rx, j) == 0) {
				if (drops)
					send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src,
						  drop_dst, drops, -ESRCH);
				return 0;
			}
			rx->have_cur = false;
			p->cold->st.msgs_in++;
			d->st.batch_msgs_in++;
			continue;
		}
		struct shd_client *t = denied ? NULL : shd_jobtab_local(d, j, rec->dst_rank);
		uint32_t rc = rec->count | (rec->packed ? SHF_RUN_PACKED : 0); /* a run's count */
		if (!t)
			r = -ESRCH;
		else if (rec->count)
			r = shd_deliver_run(d, t, rec->src_rank, rec->data, rec->len, rc,
					    rec->payload, &rx->run_pos);
		else
			r = shd_deliver_place(d, t, rec->src_rank, rec->type, rec->data, rec->len);
		if (r == -EAGAIN) {
			/* (a run: all of it, as a plain run) */
			uint32_t need = rec->count ? shf_run_plain_bytes(rec->data, rec->len, rc)
						   : rec->len;
			if (shd_deliver_wait_room(t, &p->cold->rx_wait, need)) {
				p->rx_waiting = true;
				d->st.batches_parked++;
				shd_sched_pass(d); /* publish what was placed so far */
				if (drops)
					send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src,
						  drop_dst, drops, -ESRCH);
				return 0;
			}
			continue; /* room appeared: retry */
		}
		rx->have_cur = false;
		/* a run: its messages (a part-placed one: those not placed) */
		uint32_t k = rec->count ? rec->count - rx->run_pos.done : 1;
		rx->run_pos = (struct shd_run_pos){0, 0};
		if (r < 0) {
			d->st.msgs_unroutable += k;
			d->st.rx_drops_owner += denied ? k : 0;
			p->ack_dropped += k;
			if (drops && (drop_src != rec->src_rank || drop_dst != rec->dst_rank)) {
				send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src,
					  drop_dst, drops, -ESRCH);
				drops = 0;
			}
			drop_src = rec->src_rank;
			drop_dst = rec->dst_rank;
			drops += k;
			continue;
		}
		p->cold->st.msgs_in += k;
		d->st.batch_msgs_in += k;
	}
	if (drops)
		send_drop(p, rx->h.u.batch.job_hash, rx->h.u.batch.seq, drop_src, drop_dst, drops,
			  -ESRCH);
	p->seq_recv = rx->h.u.batch.seq;
	if (!shd_list_linked(&p->ack_link))
		shd_list_add_tail(&n->ackq, &p->ack_link);
	shd_sched_pass(d); /* publish, then ACK at the network step */
	return 1;
}

void shd_net_rx_drain(struct shd_peer *p)
{
	while (!shd_list_empty(&p->rxq) && !p->rx_waiting && p->state == PEER_UP) {
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
	struct shd_peer *p = shd_container_of(w, struct shd_peer_cold, rx_wait)->peer;
	p->rx_waiting = false;
	shd_net_rx_drain(p);
}

void shd_net_rx_peer_init(struct shd_peer *p)
{
	shd_list_init(&p->rxq);
	shd_list_init(&p->ack_link);
	shd_list_init(&p->drain_link);
	shd_list_init(&p->cold->rx_wait.link);
	p->cold->rx_wait.wake = rx_wake;
}

int shd_net_rx_batch(struct shd_peer *p, void *buf, const struct shf_wire_hdr *h)
{
	struct shd_net *n = p->net;
	struct shd_daemon *d = n->d;
	if (shf_wire_batch_verify(buf, h, d->cfg.max_msg) < 0) {
		d->st.wire_bad++;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u: batch %llu has a bad record; "
			   "dropped", p->node, (unsigned long long)h->u.batch.seq);
		return 0;
	}
	if (h->u.batch.seq <= p->seq_recv) {
		d->st.wire_bad++;
		shd_log_rl(&shd_net_rl_wire, SHD_LOG_WARN, "node %u: duplicate batch %llu dropped",
			   p->node, (unsigned long long)h->u.batch.seq);
		return 0;
	}
	d->st.batches_in++;
	d->st.batch_bytes_in += h->len;
	p->cold->st.batches_in++;
	p->cold->st.bytes_in += h->len;
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
	/* it waits (parked on a full ring, or out of order): copy it out */
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

/* An ACK may wait (ack_delay_us) while the sender still has at least
 * half its credit and no drop is to be reported: a lone batch's ACK then
 * does not compete with the delivery it announces for the CPU, and one
 * ACK covers the batches of the wait.  It waits for the ACK timer, whose
 * pass (after its publish) sends every ACK owed. */
static bool ack_may_wait(const struct shd_net *n, const struct shd_peer *p)
{
	const struct shd_config *c = &n->d->cfg;
	return c->ack_delay_us && !n->acks_due && !p->ack_dropped &&
	       p->seq_recv - p->ack_sent < (c->peer_credits + 1u) / 2u;
}

void shd_net_on_ack_timer(int fd, void *arg)
{
	struct shd_net *n = arg;
	(void)fd;
	n->acks_due = true;
	shd_sched_pass(n->d); /* ACK after the publish, as always */
}

void shd_net_rx_acks(struct shd_net *n)
{
	struct shd_daemon *d = n->d;
	struct shd_list *q, *t;
	bool held = false;
	shd_list_for_each_safe(q, t, &n->ackq) {
		struct shd_peer *p = shd_container_of(q, struct shd_peer, ack_link);
		if (p->seq_recv != p->ack_sent && p->state == PEER_UP && ack_may_wait(n, p)) {
			held = true;
			continue;
		}
		shd_list_del(&p->ack_link);
		if (p->seq_recv == p->ack_sent || p->state != PEER_UP)
			continue;
		uint8_t buf[SHF_WIRE_ACK_BYTES];
		struct shf_wire_ack a = {p->seq_recv, d->cfg.peer_credits, p->ack_dropped};
		p->ack_sent = p->seq_recv;
		p->ack_dropped = 0;
		shd_net_send_small(p, buf, shf_wire_enc_ack(buf, sizeof(buf), d->node_id, p->node, &a));
	}
	n->acks_due = false;
	if (held && !shd_ev_armed(n->ack_ev))
		shd_ev_arm(n->ack_ev, d->cfg.ack_delay_us);
}

void shd_net_rx_down(struct shd_peer *p)
{
	struct shd_daemon *d = p->net->d;
	shd_list_del(&p->cold->rx_wait.link);
	p->rx_waiting = false;
	shd_list_del(&p->ack_link);
	shd_list_del(&p->drain_link);
	while (!shd_list_empty(&p->rxq)) {
		struct net_rx *rx = shd_container_of(p->rxq.next, struct net_rx, link);
		shd_list_del(&rx->link);
		/* received, never placed, and its sender cannot be told: counted here */
		uint64_t left = !rx->have_cur ? 0 : rx->cur.count ? rx->cur.count - rx->run_pos.done : 1;
		struct shf_wire_rec rec;
		while (shf_wire_iter_next(&rx->it, &rec) > 0)
			left += rec.count ? rec.count : 1;
		d->st.rx_drops_down += left;
		free(rx);
	}
}
