/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fabric_io.c - the libfabric endpoint's data path: send slots
 * and the queue of sends the provider could not take yet, progress
 * (completions, errors, reposts) and the wait fd.  Opening, memory
 * registration and the address vector are in fabric.c.
 *
 * Queued sends: fi_send() returns -FI_EAGAIN while rxm sets up the
 * connection to a peer, or when the transmit queue is full.  Such a send
 * goes to a FIFO of slots; later sends to the same node go behind it (per
 * node order), sends to other nodes do not.  progress() retries the FIFO
 * once per call; within one pass the first -FI_EAGAIN for a node skips the
 * node's later entries.  The FIFO is bounded by send_slots.
 */
#include "daemon/net/fabric.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "daemon/net/fabric_int.h"

/* ---- send slots ---------------------------------------------------------- */

/* Slot i at the tail of the list *head_p .. *tail_p (NIL: empty). */
static inline void slot_append(struct shd_fabric *f, uint32_t *head_p, uint32_t *tail_p,
			       uint32_t i)
{
	f->slots[i].next = NIL;
	if (*tail_p == NIL)
		*head_p = i;
	else
		f->slots[*tail_p].next = i;
	*tail_p = i;
}

/* Queued slot i, after prev (NIL: i is the head), out of the send queue. */
static inline void queue_unlink(struct shd_fabric *f, uint32_t prev, uint32_t i)
{
	uint32_t next = f->slots[i].next;
	if (prev == NIL)
		f->q_head = next;
	else
		f->slots[prev].next = next;
	if (f->q_tail == i)
		f->q_tail = prev;
	f->n_queued--;
}

static void fail_push(struct shd_fabric *f, uint32_t i, int status)
{
	struct slot *s = &f->slots[i];
	s->state = SL_FAILED;
	s->status = status;
	slot_append(f, &f->fail_head, &f->fail_tail, i);
}

static void slot_free(struct shd_fabric *f, uint32_t i)
{
	struct slot *s = &f->slots[i];
	s->state = SL_FREE;
	s->next = f->free_head;
	f->free_head = i;
	f->outstanding--;
}

static void queue_push(struct shd_fabric *f, uint32_t i)
{
	struct slot *s = &f->slots[i];
	s->state = SL_QUEUED;
	slot_append(f, &f->q_head, &f->q_tail, i);
	f->n_queued++;
	f->peers[s->node].queued++;
}

int shd_fabric_remove(struct shd_fabric *f, uint32_t node)
{
	if (node >= f->max_nodes || !f->peers[node].present)
		return -EINVAL;
	uint32_t prev = NIL, i = f->q_head;
	while (i != NIL) {
		uint32_t next = f->slots[i].next;
		if (f->slots[i].node == node) {
			queue_unlink(f, prev, i);
			fail_push(f, i, -EHOSTDOWN);
		} else {
			prev = i;
		}
		i = next;
	}
	fi_addr_t a = f->peers[node].addr;
	if (a < f->fiaddr_cap)
		f->fiaddr_node[a] = NIL;
	f->peers[node].present = false;
	f->peers[node].queued = 0;
	int r = fi_av_remove(f->av, &a, 1, 0);
	return ferr(r);
}

#ifdef SHD_FAULT_INJECTION
/* Test builds only (tests/multi's shuffled-fault, never the installed
 * shuffled): tests/multi/fault-inject.c reads SHD_FAULT_SEND and returns a
 * negative errno for the sends it must fail synchronously, as a hard
 * fi_send() error would, or 0.  The node stays in the AV: net.c takes the
 * peer down and removes it, as after a real error. */
int shd_fault_send(uint32_t node, const void *buf, size_t len);
#endif

static int send_common(struct shd_fabric *f, uint32_t node, const void *buf, size_t len,
		       void *ctx, bool copy)
{
	if (node >= f->max_nodes || !f->peers[node].present)
		return -EHOSTUNREACH;
#ifdef SHD_FAULT_INJECTION
	int fault = shd_fault_send(node, buf, len);
	if (fault)
		return fault;
#endif
	if (len > f->buf_bytes || (copy && len > SMALL_BYTES))
		return -EMSGSIZE;
	bool ok;
	void *desc = copy ? f->sreg.desc : shd_fabric_find_desc(f, buf, len, &ok);
	if (!copy && !ok)
		return -EINVAL;
	uint32_t i;
	if (f->free_head != NIL) {
		i = f->free_head;
		f->free_head = f->slots[i].next;
	} else if (f->slot_fresh < f->nslots) {
		i = f->slot_fresh++;
	} else {
		return -EAGAIN;
	}
	struct slot *s = &f->slots[i];
	f->outstanding++;
	if (copy) {
		memcpy(s->small, buf, len);
		buf = s->small;
	}
	s->buf = buf;
	s->len = len;
	s->desc = desc;
	s->uctx = ctx;
	s->node = node;
	f->st.sends++;
	if (f->peers[node].queued) {
		queue_push(f, i);
		f->st.sends_queued++;
		return 1;
	}
	ssize_t r = fi_send(f->ep, s->buf, len, desc, f->peers[node].addr, &s->ctx);
	if (r == 0) {
		s->state = SL_POSTED;
		return 0;
	}
	if (r == -FI_EAGAIN) {
		queue_push(f, i);
		f->st.sends_queued++;
		return 1;
	}
	f->st.sends--;
	slot_free(f, i);
	return ferr(r);
}

int shd_fabric_send(struct shd_fabric *f, uint32_t node, const void *buf, size_t len, void *ctx)
{
	return send_common(f, node, buf, len, ctx, false);
}

int shd_fabric_send_small(struct shd_fabric *f, uint32_t node, const void *buf, size_t len,
			  void *ctx)
{
	return send_common(f, node, buf, len, ctx, true);
}

/* One pass over the FIFO.  Hard errors move slots to the failed list. */
static void retry_queued(struct shd_fabric *f)
{
	if (f->q_head == NIL)
		return;
	uint64_t pass = ++f->pass;
	uint32_t prev = NIL, i = f->q_head;
	while (i != NIL) {
		struct slot *s = &f->slots[i];
		uint32_t next = s->next;
		struct peer *p = &f->peers[s->node];
		if (p->blocked == pass) {
			prev = i;
			i = next;
			continue;
		}
		ssize_t r = fi_send(f->ep, s->buf, s->len, s->desc, p->addr, &s->ctx);
		if (r == -FI_EAGAIN) {
			p->blocked = pass;
			f->st.send_retries++;
			prev = i;
			i = next;
			continue;
		}
		/* posted or failed: unlink */
		queue_unlink(f, prev, i);
		p->queued--;
		if (r == 0)
			s->state = SL_POSTED;
		else
			fail_push(f, i, ferr(r));
		i = next;
	}
}

static void retry_reposts(struct shd_fabric *f)
{
	uint32_t i = f->repost_head;
	f->repost_head = NIL;
	f->n_repost = 0;
	while (i != NIL) {
		struct rbuf *rb = &f->rbufs[i];
		i = rb->next_repost;
		shd_fabric_post_recv(f, rb); /* re-queues itself on EAGAIN */
	}
}

static void report_failed(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	while (f->fail_head != NIL) {
		uint32_t i = f->fail_head;
		struct slot *s = &f->slots[i];
		f->fail_head = s->next;
		if (f->fail_head == NIL)
			f->fail_tail = NIL;
		int status = s->status;
		void *uctx = s->uctx;
		f->st.send_errors++;
		slot_free(f, i);
		if (cb->on_send_done)
			cb->on_send_done(arg, uctx, status);
	}
}

/* ---- progress ------------------------------------------------------------ */

static struct rbuf *as_rbuf(struct shd_fabric *f, void *ctx)
{
	uint8_t *p = ctx, *lo = (uint8_t *)f->rbufs, *hi = (uint8_t *)(f->rbufs + f->nrbuf);
	if (p < lo || p >= hi || (size_t)(p - lo) % sizeof(struct rbuf))
		return NULL;
	return (struct rbuf *)(void *)p;
}

static struct slot *as_slot(struct shd_fabric *f, void *ctx)
{
	uint8_t *p = ctx, *lo = (uint8_t *)f->slots, *hi = (uint8_t *)(f->slots + f->nslots);
	if (p < lo || p >= hi || (size_t)(p - lo) % sizeof(struct slot))
		return NULL;
	return (struct slot *)(void *)p;
}

static uint32_t node_of(struct shd_fabric *f, fi_addr_t a)
{
	if (!f->source || a == FI_ADDR_NOTAVAIL || a >= f->fiaddr_cap)
		return SHD_FABRIC_NODE_UNKNOWN;
	return f->fiaddr_node[a] == NIL ? SHD_FABRIC_NODE_UNKNOWN : f->fiaddr_node[a];
}

static void repost_after(struct shd_fabric *f, struct rbuf *rb, const struct shd_fabric_cb *cb,
			 void *arg)
{
	int r = shd_fabric_post_recv(f, rb);
	if (r && cb->on_error)
		cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, r, "fi_recv failed: receive buffer lost");
}

static void on_recv_done(struct shd_fabric *f, struct rbuf *rb, size_t len, fi_addr_t src,
			 const struct shd_fabric_cb *cb, void *arg)
{
	rb->state = RB_KEPT;
	f->st.recvs++;
	f->st.recv_bytes += len;
	int keep = cb->on_recv ? cb->on_recv(arg, node_of(f, src), rb->buf, len) : 0;
	if (keep == SHD_FABRIC_KEEP) {
		f->st.recvs_kept++;
		return;
	}
	if (rb->state == RB_KEPT) /* not already reposted from the callback */
		repost_after(f, rb, cb, arg);
}

static void on_send_complete(struct shd_fabric *f, struct slot *s, const struct shd_fabric_cb *cb,
			     void *arg)
{
	void *uctx = s->uctx;
	f->st.sends_done++;
	slot_free(f, (uint32_t)(s - f->slots));
	if (cb->on_send_done)
		cb->on_send_done(arg, uctx, 0);
}

static int handle_error(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	struct fi_cq_err_entry e;
	memset(&e, 0, sizeof(e));
	ssize_t r = fi_cq_readerr(f->cq, &e, 0);
	if (r == -FI_EAGAIN)
		return 0;
	if (r < 0)
		return ferr(r);
	char text[256];
	const char *msg = fi_cq_strerror(f->cq, e.prov_errno, e.err_data, text, sizeof(text));
	int err = e.err ? -e.err : -EIO;
	if (err <= -FI_ERRNO_OFFSET)
		err = e.err == FI_ETRUNC ? -EMSGSIZE : -EIO;
	struct rbuf *rb = as_rbuf(f, e.op_context);
	struct slot *s = rb ? NULL : as_slot(f, e.op_context);
	if (rb) {
		rb->state = RB_KEPT;
		if (e.err == FI_ECANCELED)
			return 1; /* only while closing */
		f->st.recv_errors++;
		if (cb->on_error)
			cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, err, msg ? msg : fi_strerror(e.err));
		repost_after(f, rb, cb, arg);
	} else if (s) {
		uint32_t node = s->node;
		void *uctx = s->uctx;
		f->st.send_errors++;
		slot_free(f, (uint32_t)(s - f->slots));
		if (cb->on_error)
			cb->on_error(arg, node, err, msg ? msg : fi_strerror(e.err));
		if (cb->on_send_done)
			cb->on_send_done(arg, uctx, err);
	} else if (cb->on_error) {
		cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, err, "error completion with unknown context");
	}
	return 1;
}

int shd_fabric_progress(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	struct fi_cq_msg_entry ents[CQ_CHUNK];
	fi_addr_t srcs[CQ_CHUNK];
	int done = 0;

	report_failed(f, cb, arg);
	while ((uint32_t)done < f->cq_batch) {
		size_t want = f->cq_batch - (uint32_t)done;
		if (want > CQ_CHUNK)
			want = CQ_CHUNK;
		ssize_t n = f->source ? fi_cq_readfrom(f->cq, ents, want, srcs)
				      : fi_cq_read(f->cq, ents, want);
		if (n == -FI_EAGAIN)
			break;
		if (n == -FI_EAVAIL) {
			int r = handle_error(f, cb, arg);
			if (r < 0)
				return r;
			done += r;
			if (r == 0)
				break;
			continue;
		}
		if (n < 0)
			return ferr(n);
		for (ssize_t k = 0; k < n; k++) {
			struct rbuf *rb = as_rbuf(f, ents[k].op_context);
			struct slot *s = rb ? NULL : as_slot(f, ents[k].op_context);
			if (rb)
				on_recv_done(f, rb, ents[k].len, f->source ? srcs[k] : FI_ADDR_NOTAVAIL,
					     cb, arg);
			else if (s)
				on_send_complete(f, s, cb, arg);
			else if (cb->on_error)
				cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, -EIO,
					     "completion with unknown context");
		}
		done += (int)n;
		if ((size_t)n < want)
			break;
	}
	retry_queued(f);
	retry_reposts(f);
	report_failed(f, cb, arg);
	return done;
}

int shd_fabric_repost(struct shd_fabric *f, void *buf)
{
	uint8_t *p = buf;
	size_t stride = (f->buf_bytes + 63u) & ~(size_t)63u;
	if (p < f->rbase || (size_t)(p - f->rbase) % stride ||
	    (size_t)(p - f->rbase) / stride >= f->nrbuf)
		return -EINVAL;
	struct rbuf *rb = &f->rbufs[(size_t)(p - f->rbase) / stride];
	if (rb->state != RB_KEPT)
		return -EINVAL;
	return shd_fabric_post_recv(f, rb);
}

int shd_fabric_wait_fd(const struct shd_fabric *f)
{
	return f->wait_fd;
}

bool shd_fabric_trywait(struct shd_fabric *f)
{
	struct fid *fids[1] = {&f->cq->fid};
	return fi_trywait(f->fabric, fids, 1) == FI_SUCCESS;
}

bool shd_fabric_has_pending(const struct shd_fabric *f)
{
	return f->n_queued || f->n_repost || f->fail_head != NIL;
}

uint32_t shd_fabric_sends_outstanding(const struct shd_fabric *f)
{
	return f->outstanding;
}

void shd_fabric_stats_get(const struct shd_fabric *f, struct shf_fabric_stats *s)
{
	*s = f->st;
}
