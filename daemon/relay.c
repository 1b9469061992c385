/* SPDX-License-Identifier: MIT */
/*
 * daemon/relay.c - hop 1 (relay.h).
 *
 * The relay step takes the clients in the run queue in turn and drains up
 * to RELAY_BUDGET records from each send ring (fairness: a busy client
 * cannot starve the others).  Each message goes by its destination rank
 * either into a local delivery ring (deliver.c: reserved now, published at
 * the pass's publish step) or into the destination node's batch (net).
 * When the destination ring is full or the peer has no credit, the record
 * is put back and that client waits (head of line, so per-pair order
 * holds); nobody else is held up, nothing is dropped, nothing spins.  Each
 * send ring is released (and its producer's bell rung if it sleeps) at the
 * end of the client's turn.
 *
 * A broadcast record (rank SHF_MSG_BCAST[_SELF]) goes to every local rank
 * of the job and once to every other node with ranks of it (that node's
 * daemon fans it out, net/rx.c), in rank order, through the same rings and
 * batches as sends: so it keeps per-pair order, takes the credit a send to
 * each node would, and the client's next flush or epoch covers it.  When a
 * ring or a peer's credit stops it part-way, the record is put back and
 * the client's bcast_next / bcast_sent say where to resume: no rank gets
 * it twice.
 *
 * A MARK record (flush or epoch) is answered at the marks step, after the
 * records before it are published here and acknowledged by every peer the
 * client sent to (net's marks).
 *
 * A send ring found empty is armed ([D1]) and re-checked; the daemon then
 * sleeps on its bell (send_sleeps counts them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/deliver.h"
#include "daemon/epoch.h"
#include "daemon/gather.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/net/tx.h"
#include "daemon/relay.h"
#include "daemon/sched.h"
#include "proto/shm.h"
#include "proto/wire.h"

#define RELAY_BUDGET 1024u /* records per client per turn */

void shd_relay_detach(struct shd_client *c)
{
	shd_list_del(&c->run_link);
	shd_list_del(&c->dirty_link);
	shd_list_del(&c->wait.link);
	shd_list_del(&c->mark_link);
	shd_list_del(&c->doom_link);
	c->blocked = false;
	/* whoever waited for my ring retries: their records to me now drop */
	shd_deliver_wake(c);
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
	shd_deliver_wake(c);
	shd_sched_kick(c);
}

/* Drop k messages of s: their destination rank or node is gone. */
static void drop_n(struct shd_client *s, bool down, uint32_t k)
{
	if (down) {
		s->st.drops_down += k;
		s->report_down += k;
	} else {
		s->st.drops_dead += k;
		s->report_dead += k;
	}
}

static void drop(struct shd_client *s, bool down)
{
	drop_n(s, down, 1);
}

/* Block s (head of line) until dst has room for len bytes. */
static bool block_on_ring(struct shd_client *s, struct shd_client *dst, uint32_t len)
{
	s->st.ring_full_stalls++;
	if (!shd_deliver_wait_room(dst, &s->wait, len))
		return false; /* room already: retry at once */
	s->blocked = true;
	return true;
}

enum relay_result { RELAY_IDLE, RELAY_MORE, RELAY_BLOCKED, RELAY_CUT };

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
	shd_gather_flush(d, s); /* what came before the fault goes as it would have */
	d->st.disc_ring++;
	shd_client_cutoff(s, -EPROTO, "%s", why);
	return RELAY_CUT;
}

/* One MARK record of s.  Returns RELAY_MORE to go on. */
static enum relay_result take_mark(struct shd_daemon *d, struct shd_client *s,
				   struct shf_ring_view *v)
{
	struct shf_mark m;
	if (v->len != sizeof(m))
		return ring_fault(d, s, "mark record of %u bytes", v->len);
	memcpy(&m, v->data, sizeof(m));
	if (m.what != SHF_MARK_FLUSH && m.what != SHF_MARK_EPOCH)
		return ring_fault(d, s, "mark of unknown kind %u", m.what);
	if (s->state == SHD_SESS_DRAINING)
		return RELAY_MORE; /* nobody to answer */
	if (m.what == SHF_MARK_EPOCH && s->epoch != SHD_EPOCH_NONE) {
		d->st.disc_proto++;
		shd_client_cutoff(s, -EPROTO, "epoch mark while in epoch state %s",
				  shd_epoch_state_name(s->epoch));
		return RELAY_CUT;
	}
	if (s->mark_pending) {
		/* one mark at a time: wait until the previous one is answered */
		shf_ring_unpeek(&s->send, v);
		s->blocked = true;
		return RELAY_BLOCKED;
	}
	s->mark_pending = true;
	s->mark_id = m.id;
	s->mark_what = m.what;
	s->mark_need = d->net ? shd_net_mark(d, s) : 0;
	if (s->mark_need == 0)
		shd_list_add_tail(&d->marks, &s->mark_link);
	return RELAY_MORE;
}

/* The broadcast at the head of s's ring (v).  RELAY_MORE when done (every
 * rank reached or its drop counted), RELAY_BLOCKED when it waits (put back,
 * progress kept in s).  Never cuts s off. */
static enum relay_result relay_bcast(struct shd_daemon *d, struct shd_client *s,
				     struct shf_ring_view *v, const struct shf_msg_hdr *mh,
				     const uint8_t *data, uint32_t len)
{
	struct shd_job *j = s->job;
	bool self = mh->rank == SHF_MSG_BCAST_SELF;
	if (!s->bcast_busy) {
		s->bcast_busy = true;
		s->bcast_next = 0;
		if (s->bcast_sent)
			memset(s->bcast_sent, 0, (d->n_nodes + 63) / 64 * sizeof(uint64_t));
	}
	int32_t r = shd_jobtab_next(j, s->bcast_next);
	while (r < j->world) {
		if (r == s->rank && !self) {
			r = shd_jobtab_next(j, r + 1);
			continue;
		}
		uint32_t node = shd_jobtab_node(j, r);
		if (node == d->node_id) {
			struct shd_client *t = shd_jobtab_client(j, r);
			int e = shd_deliver_place(d, t, s->rank, mh->type, data, len);
			if (e == -EAGAIN) {
				if (block_on_ring(s, t, len)) {
					s->bcast_next = r;
					shf_ring_unpeek(&s->send, v);
					return RELAY_BLOCKED;
				}
				continue; /* room appeared: retry this rank */
			}
			if (e < 0) {
				drop(s, false);
			} else {
				s->st.msgs_local++;
				d->st.bcast_deliveries++;
			}
		} else if (!shd_node_is_real(node) || !d->net || node >= d->n_nodes) {
			drop(s, node == SHD_NODE_LOST);
		} else {
			if (!s->bcast_sent) {
				s->bcast_sent = calloc((d->n_nodes + 63) / 64, sizeof(uint64_t));
				if (!s->bcast_sent) {
					drop(s, true); /* cannot track it: counted, as a failed append */
					r = shd_jobtab_next(j, r + 1);
					continue;
				}
			}
			uint64_t bit = UINT64_C(1) << (node % 64);
			if (!(s->bcast_sent[node / 64] & bit)) {
				int e = shd_net_append(d, s, node, j, SHF_WIRE_DST_BCAST, mh->type,
						       data, len);
				if (e == -EAGAIN) {
					s->bcast_next = r;
					shf_ring_unpeek(&s->send, v);
					s->st.credit_stalls++;
					return RELAY_BLOCKED; /* net linked s->wait */
				}
				if (e < 0) {
					/* each of that node's ranks drops (and counts) alone */
					drop(s, e == -EHOSTDOWN);
				} else {
					s->bcast_sent[node / 64] |= bit;
					s->st.msgs_remote++;
					d->st.bcast_wire_copies++;
				}
			}
		}
		r = shd_jobtab_next(j, r + 1);
	}
	s->bcast_busy = false;
	d->st.bcast_in++;
	s->st.msgs_in++;
	s->st.bytes_in += len;
	return RELAY_MORE;
}

/* The run at the head of s's ring (v): its items are copied out once and
 * checked in that private copy (the client can change its ring at any
 * time), then go on as one record, into the destination's delivery ring
 * or the destination node's batch.  Parked like a message when it waits;
 * a delivery into a client without runs goes item by item and keeps its
 * progress in s->run_pos. */
static enum relay_result relay_run(struct shd_daemon *d, struct shd_client *s,
				   struct shf_ring_view *v)
{
	static uint8_t items[SHF_RUN_MAX_BYTES]; /* the relay runs on one thread */
	struct shd_job *j = s->job;
	struct shf_run_hdr rh;
	if (v->len < SHF_RUN_HDR_BYTES || v->len - SHF_RUN_HDR_BYTES > sizeof(items))
		return ring_fault(d, s, "run record of %u bytes", v->len);
	memcpy(&rh, v->data, sizeof(rh)); /* read once */
	uint32_t bytes = v->len - SHF_RUN_HDR_BYTES;
	if ((uint32_t)rh.rank >= (uint32_t)j->world)
		return ring_fault(d, s, "run to rank %d outside world %d", rh.rank, j->world);
	memcpy(items, v->data + SHF_RUN_HDR_BYTES, bytes);
	/* (packed runs: this daemon told every client SHF_REG_OK_PACKED) */
	int64_t payload = shf_run_check(items, bytes, rh.count, d->cfg.max_msg);
	if (payload < 0)
		return ring_fault(d, s, "corrupt %srun of %u messages in %u bytes to rank %d",
				  rh.count & SHF_RUN_PACKED ? "packed " : "", shf_run_n(rh.count),
				  bytes, rh.rank);
	uint32_t n = shf_run_n(rh.count);
	d->st.packed_runs += rh.count >> 31;
	const struct shd_dir_chunk *ch = j->dir[(uint32_t)rh.rank >> SHD_DIR_SHIFT];
	uint32_t node = ch->node[shd_dir_slot(rh.rank)];
	if (node == d->node_id) {
		struct shd_client *t = ch->client[shd_dir_slot(rh.rank)];
		for (;;) {
			int r = shd_deliver_run(d, t, s->rank, items, bytes, rh.count,
						(uint64_t)payload, &s->run_pos);
			if (r == -EAGAIN) {
				if (block_on_ring(s, t, shf_run_plain_bytes(items, bytes, rh.count))) {
					shf_ring_unpeek(&s->send, v);
					return RELAY_BLOCKED;
				}
				continue; /* room appeared: retry */
			}
			if (r < 0)
				drop_n(s, false, n - s->run_pos.done);
			else
				s->st.msgs_local += n;
			break;
		}
		s->run_pos = (struct shd_run_pos){0, 0};
	} else if (!shd_node_is_real(node) || !d->net) {
		drop_n(s, node == SHD_NODE_LOST, n);
	} else {
		int r = shd_net_append_run(d, s, node, j, rh.rank, rh.count, items, bytes);
		if (r == -EAGAIN) {
			shf_ring_unpeek(&s->send, v);
			s->st.credit_stalls++;
			return RELAY_BLOCKED; /* net linked s->wait */
		}
		if (r < 0)
			drop_n(s, r == -EHOSTDOWN, n);
		else
			s->st.msgs_remote += n;
	}
	s->st.msgs_in += n;
	s->st.bytes_in += (uint64_t)payload;
	return RELAY_MORE;
}

static enum relay_result relay_client(struct shd_daemon *d, struct shd_client *s)
{
	struct shf_ring_view v;
	struct shd_job *j = s->job; /* kept while draining, for routing */
	/* the directory's index never moves while the job lives (its chunks
	 * may be added, the index slots change, the array stays) */
	struct shd_dir_chunk *const *dir = j->dir;
	enum relay_result res = RELAY_MORE;
	uint64_t used = shf_ring_used(&s->send); /* before draining: the high-water mark */
	if (used > s->st.send_ring_hwm)
		s->st.send_ring_hwm = used;
	for (unsigned n = 0; n < RELAY_BUDGET; n++) {
		int r = shf_ring_peek(&s->send, &v);
		if (r < 0) {
			return ring_fault(d, s, "corrupt send ring (%s)",
					  r == -EBADMSG ? "bad record header" : "bad head index");
		}
		if (r == 0) {
			res = RELAY_IDLE;
			break;
		}
		if (v.kind != SHF_REC_MSG)
			shd_gather_flush(d, s); /* a mark or run comes after what was noted */
		if (v.kind == SHF_REC_MARK) {
			res = take_mark(d, s, &v);
			if (res != RELAY_MORE)
				break;
			continue;
		}
		if (v.kind == SHF_REC_RUN) {
			res = relay_run(d, s, &v);
			if (res != RELAY_MORE)
				break;
			continue;
		}
		if (v.kind != SHF_REC_MSG)
			return ring_fault(d, s, "record of unknown kind %u", v.kind);
		struct shf_msg_hdr mh;
		if (v.len < sizeof(mh)) {
			return ring_fault(d, s, "message record of %u bytes is shorter than its header",
					  v.len);
		}
		memcpy(&mh, v.data, sizeof(mh)); /* read once */
		const uint8_t *data = v.data + sizeof(mh);
		uint32_t len = v.len - (uint32_t)sizeof(mh);
		if (mh.rank == SHF_MSG_BCAST || mh.rank == SHF_MSG_BCAST_SELF) {
			shd_gather_flush(d, s);
			res = relay_bcast(d, s, &v, &mh, data, len);
			if (res != RELAY_MORE)
				break;
			continue;
		}
		if ((uint32_t)mh.rank >= (uint32_t)j->world)
			return ring_fault(d, s, "destination rank %d outside world %d", mh.rank, j->world);
		const struct shd_dir_chunk *ch = dir[(uint32_t)mh.rank >> SHD_DIR_SHIFT];
		uint32_t node = ch->node[shd_dir_slot(mh.rank)];
		if (node == d->node_id) {
			struct shd_client *t = ch->client[shd_dir_slot(mh.rank)];
			r = shd_deliver_place(d, t, s->rank, mh.type, data, len);
			if (r == -EAGAIN) {
				shf_ring_unpeek(&s->send, &v);
				if (block_on_ring(s, t, len)) {
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
		} else if (!shd_node_is_real(node) || !d->net) {
			drop(s, node == SHD_NODE_LOST);
			continue;
		} else {
			r = shd_gather_msg(d, s, node, mh.rank, mh.type, data, len);
			if (r == -EAGAIN) {
				shf_ring_unpeek(&s->send, &v);
				s->st.credit_stalls++;
				res = RELAY_BLOCKED; /* net linked s->wait */
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
	}
	if (res != RELAY_CUT)
		shd_gather_flush(d, s); /* before the ring's records are released */
	if (res != RELAY_CUT && shf_ring_release(&s->send))
		shf_bell_ring(s->bell_space);
	return res;
}

void shd_relay_run(struct shd_daemon *d)
{
	struct shd_list todo;
	shd_list_init(&todo);
	shd_list_splice_tail(&todo, &d->runq);
	while (!shd_list_empty(&todo)) {
		struct shd_client *s = shd_container_of(todo.next, struct shd_client, run_link);
		shd_list_del(&s->run_link);
		if (s->doomed)
			continue;
		switch (relay_client(d, s)) {
		case RELAY_CUT:
			continue;
		case RELAY_MORE:
			shd_list_add_tail(&d->runq, &s->run_link);
			break;
		case RELAY_IDLE:
			if (s->state == SHD_SESS_DRAINING) {
				shd_info("client %llu (job %s rank %d pid %d) detached: drained after "
					 "disconnect", (unsigned long long)s->id,
					 s->job ? s->job->name : "-", s->rank, (int)s->pid);
				shd_client_reap_later(s);
				continue;
			}
			/* sleep on the bell: arm, then re-check (no lost wake-up) */
			if (!shf_ring_cons_arm(&s->send))
				shd_list_add_tail(&d->runq, &s->run_link);
			else
				s->st.send_sleeps++;
			break;
		case RELAY_BLOCKED:
			break;
		}
	}
}

static void complete_mark(struct shd_client *c)
{
	c->mark_pending = false;
	if (c->state == SHD_SESS_ACTIVE && !c->doomed) {
		if (c->mark_what == SHF_MARK_EPOCH) {
			shd_epoch_mark(c); /* answered when every rank is in */
		} else {
			/* a job failed by an owner conflict fails its flushes (events.c);
			 * records dropped for a node the job lost: the flush fails with
			 * the loss, named as the job's epochs name it (the ERROR after
			 * the FLUSH_DONE carries the text) */
			struct shd_job *j = c->job;
			int status = j ? j->deny : 0;
			char why[360] = "", loss[300];
			if (!status && j && j->lost && c->report_down && !c->report_dead) {
				shd_epoch_why(c->d, j, -EHOSTDOWN, loss, sizeof(loss));
				if (loss[0]) {
					status = -EHOSTDOWN;
					snprintf(why, sizeof(why), "%llu message(s) dropped: %s",
						 (unsigned long long)c->report_down, loss);
				}
			}
			struct shf_ipc_flush_done m = {c->mark_id, c->report_dead, c->report_down,
						       status, why[0] ? SHF_FLUSH_DONE_WHY : 0};
			c->report_dead = c->report_down = 0;
			c->st.flushes++;
			shd_client_send(c, SHF_IPC_FLUSH_DONE, (uint32_t)c->mark_id, &m, sizeof(m));
			if (why[0])
				shd_client_error(c, (uint32_t)c->mark_id, status, "%s", why);
		}
	}
	/* a second mark may be waiting behind this one */
	if (c->blocked && !shd_list_linked(&c->wait.link)) {
		c->blocked = false;
		shd_sched_kick(c);
	}
}

void shd_relay_answer_marks(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->marks) {
		struct shd_client *c = shd_container_of(p, struct shd_client, mark_link);
		shd_list_del(&c->mark_link);
		complete_mark(c);
	}
}

void shd_relay_mark_acked(struct shd_client *c, bool lost)
{
	if (lost)
		c->report_down++;
	if (!c->mark_need || --c->mark_need > 0)
		return;
	if (!c->mark_pending || shd_list_linked(&c->mark_link))
		return;
	shd_list_add_tail(&c->d->marks, &c->mark_link);
	shd_sched_pass(c->d);
}
