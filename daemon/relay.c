/* SPDX-License-Identifier: MIT */
/*
 * daemon/relay.c - the data path inside the daemon.
 *
 * A relay pass takes the clients in the run queue in turn and drains up to
 * RELAY_BUDGET records from each send ring (fairness: a busy client cannot
 * starve the others).  Each message goes by its destination rank either
 * into a local delivery ring (reserved now, published for the whole pass
 * with one release store per ring) or into the destination node's batch
 * (net.c).  When the destination ring is full or the peer has no credit,
 * the record is put back and that client waits (head of line, so per-pair
 * order holds); nobody else is held up, nothing is dropped, nothing spins.
 *
 * After the pass: publish every dirty delivery ring (ringing sleepers),
 * release every send ring, then answer the flush marks whose records are
 * now in place.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/net.h"
#include "proto/shm.h"

#define RELAY_BUDGET 1024u /* records per client per pass */

static void relay_pass(int fd, void *arg);

int shd_relay_init(struct shd_daemon *d)
{
	shd_list_init(&d->runq);
	shd_list_init(&d->dirty);
	shd_list_init(&d->marks);
	d->work_ev = shd_loop_defer(d->loop, relay_pass, d);
	return d->work_ev ? 0 : -ENOMEM;
}

void shd_relay_fini(struct shd_daemon *d)
{
	shd_ev_free(d->work_ev);
	d->work_ev = NULL;
}

void shd_relay_schedule(struct shd_daemon *d)
{
	shd_ev_activate(d->work_ev);
}

void shd_relay_kick(struct shd_client *c)
{
	if (c->blocked || shd_list_linked(&c->run_link) || !c->region)
		return;
	if (c->state != SHD_SESS_ACTIVE && c->state != SHD_SESS_DRAINING)
		return; /* nothing flows before the world is complete */
	shd_list_add_tail(&c->d->runq, &c->run_link);
	shd_ev_activate(c->d->work_ev);
}

static void client_unblock(struct shd_waiter *w)
{
	struct shd_client *c = shd_container_of(w, struct shd_client, wait);
	c->blocked = false;
	shd_relay_kick(c);
}

void shd_relay_client_init(struct shd_client *c)
{
	shd_list_init(&c->run_link);
	shd_list_init(&c->dirty_link);
	shd_list_init(&c->mark_link);
	shd_list_init(&c->waiters);
	shd_list_init(&c->wait.link);
	c->wait.wake = client_unblock;
}

/* Room appeared in c's delivery ring: everyone waiting on it retries. */
static void wake_waiters(struct shd_client *c)
{
	struct shd_list *p, *t;
	struct shd_list woken;
	shd_list_init(&woken);
	shd_list_splice_tail(&woken, &c->waiters);
	shd_list_for_each_safe(p, t, &woken) {
		struct shd_waiter *w = shd_container_of(p, struct shd_waiter, link);
		shd_list_del(&w->link);
		w->wake(w);
	}
}

void shd_relay_detach(struct shd_client *c)
{
	shd_list_del(&c->run_link);
	shd_list_del(&c->dirty_link);
	shd_list_del(&c->wait.link);
	shd_list_del(&c->mark_link);
	c->blocked = false;
	/* whoever waited for my ring retries: their records to me now drop */
	wake_waiters(c);
	if (c->d->net)
		shd_net_forget(c->d, c);
	c->mark_pending = false;
	c->mark_need = 0;
}

void shd_relay_bell(int fd, void *arg)
{
	struct shd_client *c = arg;
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof(v)); /* clear; EAGAIN is fine */
	(void)n;
	/* the bell means "send ring has data" or "delivery ring has room" */
	wake_waiters(c);
	shd_relay_kick(c);
}

bool shd_relay_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len)
{
	if (!shf_ring_prod_arm(&dst->deliver, len + SHF_MSG_HDR_BYTES))
		return false;
	shd_list_add_tail(&dst->waiters, &w->link);
	return true;
}

static void doom(struct shd_client *c, const char *why)
{
	if (c->doomed)
		return;
	c->doomed = true;
	c->d->doomed = true;
	snprintf(c->doom_why, sizeof(c->doom_why), "%s", why);
}

int shd_relay_place(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t type,
		    const void *data, uint32_t len)
{
	if (!t || t->doomed || (t->state != SHD_SESS_ACTIVE && t->state != SHD_SESS_WAITWORLD))
		return -ESRCH;
	uint8_t *p = shf_ring_reserve(&t->deliver, SHF_MSG_HDR_BYTES + len, SHF_REC_MSG);
	if (!p) {
		if (t->deliver.err) {
			/* it scribbled on its tail index: cut it off after the pass */
			doom(t, "corrupt delivery ring index");
			return -ESRCH;
		}
		return -EAGAIN;
	}
	struct shf_msg_hdr h = {src, type};
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), data, len);
	if (!shd_list_linked(&t->dirty_link))
		shd_list_add_tail(&d->dirty, &t->dirty_link);
	t->st.msgs_out++;
	t->st.bytes_out += len;
	return 0;
}

/* Drop one message of s: its destination rank or node is gone. */
static void drop(struct shd_client *s, bool down)
{
	if (down) {
		s->st.drops_down++;
		s->report_down++;
	} else {
		s->st.drops_dead++;
		s->report_dead++;
	}
}

/* Block s (head of line) until dst has room for len bytes. */
static bool block_on_ring(struct shd_client *s, struct shd_client *dst, uint32_t len)
{
	s->st.ring_full_stalls++;
	if (!shd_relay_wait_room(dst, &s->wait, len))
		return false; /* room already: retry at once */
	s->blocked = true;
	return true;
}

enum relay_result { RELAY_IDLE, RELAY_MORE, RELAY_BLOCKED, RELAY_FREED };

/* s broke the ring protocol: cut it off (counted as disc_ring). */
__attribute__((format(printf, 3, 4)))
static enum relay_result ring_fault(struct shd_daemon *d, struct shd_client *s, const char *fmt,
				    ...)
{
	char why[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	d->st.disc_ring++;
	shd_client_fail(s, -EPROTO, "%s", why);
	return RELAY_FREED;
}

static enum relay_result relay_client(struct shd_daemon *d, struct shd_client *s)
{
	struct shf_ring_view v;
	struct shd_job *j = s->job; /* kept while draining, for routing */
	enum relay_result res = RELAY_MORE;
	uint64_t used = shf_ring_used(&s->send); /* before draining: the high-water mark */
	if (used > s->st.send_ring_hwm)
		s->st.send_ring_hwm = used;
	unsigned n;
	for (n = 0; n < RELAY_BUDGET; n++) {
		int r = shf_ring_peek(&s->send, &v);
		if (r < 0) {
			return ring_fault(d, s, "corrupt send ring (%s)",
					  r == -EBADMSG ? "bad record header" : "bad head index");
		}
		if (r == 0) {
			res = RELAY_IDLE;
			break;
		}
		if (v.kind == SHF_REC_MSG) {
			struct shf_msg_hdr mh;
			if (v.len < sizeof(mh)) {
				return ring_fault(d, s, "message record of %u bytes is shorter than "
						  "its header", v.len);
			}
			memcpy(&mh, v.data, sizeof(mh)); /* read once */
			const uint8_t *data = v.data + sizeof(mh);
			uint32_t len = v.len - (uint32_t)sizeof(mh);
			if ((uint32_t)mh.rank >= (uint32_t)j->world) {
				return ring_fault(d, s, "destination rank %d outside world %d",
						  mh.rank, j->world);
			}
			uint32_t node = j->rank_node[mh.rank];
			if (node == d->node_id) {
				r = shd_relay_place(d, j->clients[mh.rank], s->rank, mh.type, data, len);
				if (r == -EAGAIN) {
					shf_ring_unpeek(&s->send, &v);
					if (block_on_ring(s, j->clients[mh.rank], len)) {
						res = RELAY_BLOCKED;
						break;
					}
					n--; /* room appeared: retry this record */
					continue;
				}
				if (r < 0) {
					drop(s, false);
					continue;
				}
				s->st.msgs_local++;
			} else if (node >= SHD_NODE_LOST || !d->net) {
				drop(s, node == SHD_NODE_LOST);
				continue;
			} else {
				r = shd_net_append(d, s, node, j, mh.rank, mh.type, data, len);
				if (r == -EAGAIN) {
					shf_ring_unpeek(&s->send, &v);
					s->st.credit_stalls++;
					res = RELAY_BLOCKED; /* net.c linked s->wait */
					break;
				}
				if (r < 0) {
					drop(s, r == -EHOSTDOWN);
					continue;
				}
				s->st.msgs_remote++;
			}
			s->st.msgs_in++;
			s->st.bytes_in += len;
		} else if (v.kind == SHF_REC_MARK) {
			struct shf_mark m;
			if (v.len != sizeof(m)) {
				return ring_fault(d, s, "mark record of %u bytes", v.len);
			}
			memcpy(&m, v.data, sizeof(m));
			if (m.what != SHF_MARK_FLUSH && m.what != SHF_MARK_EPOCH) {
				return ring_fault(d, s, "mark of unknown kind %u", m.what);
			}
			if (s->state == SHD_SESS_DRAINING)
				continue; /* nobody to answer */
			if (m.what == SHF_MARK_EPOCH && s->epoch != SHD_EPOCH_NONE) {
				d->st.disc_proto++;
				shd_client_fail(s, -EPROTO, "epoch mark while in epoch state %s",
						shd_epoch_state_name(s->epoch));
				return RELAY_FREED;
			}
			if (s->mark_pending) {
				/* one mark at a time: wait until the previous one is answered */
				shf_ring_unpeek(&s->send, &v);
				res = RELAY_BLOCKED;
				s->blocked = true;
				break;
			}
			s->mark_pending = true;
			s->mark_id = m.id;
			s->mark_what = m.what;
			s->mark_need = d->net ? shd_net_mark(d, s) : 0;
			if (s->mark_need == 0)
				shd_list_add_tail(&d->marks, &s->mark_link);
		} else {
			return ring_fault(d, s, "record of unknown kind %u", v.kind);
		}
	}
	if (shf_ring_release(&s->send))
		shf_ring_ring_bell(s->bell_space);
	return res;
}

static void complete_mark(struct shd_client *c)
{
	c->mark_pending = false;
	if (c->state == SHD_SESS_ACTIVE) {
		if (c->mark_what == SHF_MARK_EPOCH) {
			shd_job_epoch_mark(c); /* answered when every rank is in */
		} else {
			struct shf_ipc_flush_done m = {c->mark_id, c->report_dead, c->report_down, 0, 0};
			c->report_dead = c->report_down = 0;
			c->st.flushes++;
			shd_client_send(c, SHF_IPC_FLUSH_DONE, (uint32_t)c->mark_id, &m, sizeof(m));
		}
	}
	/* a second mark may be waiting behind this one */
	if (c->blocked && !shd_list_linked(&c->wait.link)) {
		c->blocked = false;
		shd_relay_kick(c);
	}
}

void shd_relay_mark_done(struct shd_client *c)
{
	if (!c->mark_pending || shd_list_linked(&c->mark_link))
		return;
	c->mark_need = 0;
	shd_list_add_tail(&c->d->marks, &c->mark_link);
	shd_ev_activate(c->d->work_ev);
}

static void relay_pass(int fd, void *arg)
{
	struct shd_daemon *d = arg;
	struct shd_list todo;
	struct shd_list *p, *t;
	(void)fd;
	shd_list_init(&todo);
	shd_list_splice_tail(&todo, &d->runq);
	while (!shd_list_empty(&todo)) {
		struct shd_client *s = shd_container_of(todo.next, struct shd_client, run_link);
		shd_list_del(&s->run_link);
		switch (relay_client(d, s)) {
		case RELAY_FREED:
			continue;
		case RELAY_MORE:
			shd_list_add_tail(&d->runq, &s->run_link);
			break;
		case RELAY_IDLE:
			if (s->state == SHD_SESS_DRAINING) {
				shd_client_drained(s);
				continue;
			}
			/* sleep on the bell: arm, then re-check (no lost wake-up) */
			if (!shf_ring_cons_arm(&s->send))
				shd_list_add_tail(&d->runq, &s->run_link);
			break;
		case RELAY_BLOCKED:
			break;
		}
	}
	/* one release store per destination ring for the whole pass */
	shd_list_for_each_safe(p, t, &d->dirty) {
		struct shd_client *c = shd_container_of(p, struct shd_client, dirty_link);
		shd_list_del(&c->dirty_link);
		if (shf_ring_publish(&c->deliver))
			shf_ring_ring_bell(c->bell_deliver);
		uint64_t used = shf_ring_used(&c->deliver);
		if (used > c->st.deliver_ring_hwm)
			c->st.deliver_ring_hwm = used;
	}
	if (d->net)
		shd_net_after_pass(d);
	/* the records before each mark are now in place */
	shd_list_for_each_safe(p, t, &d->marks) {
		struct shd_client *c = shd_container_of(p, struct shd_client, mark_link);
		shd_list_del(&c->mark_link);
		complete_mark(c);
	}
	if (d->doomed) {
		d->doomed = false;
		shd_list_for_each_safe(p, t, &d->clients) {
			struct shd_client *c = shd_container_of(p, struct shd_client, all_link);
			if (c->doomed)
				ring_fault(d, c, "%s", c->doom_why);
		}
	}
	if (!shd_list_empty(&d->runq))
		shd_ev_activate(d->work_ev);
}
