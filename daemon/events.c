/* SPDX-License-Identifier: MIT */
/*
 * daemon/events.c - net's events, carried to the modules above it
 * (events.h).  net calls these from its receive path and from the pass's
 * peers step; none of them frees anything (jobs end at the reap).
 */
#include <errno.h>

#include "daemon/client.h"
#include "daemon/epoch.h"
#include "daemon/events.h"
#include "daemon/admin/fanout.h"
#include "daemon/job.h"
#include "daemon/jobhome.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/relay.h"
#include "proto/wire.h"

static struct shd_ratelimit rl_fwd = SHD_RATELIMIT_INIT(10000, 2);

static void on_peer_up(struct shd_daemon *d, uint32_t node, const char *host)
{
	shd_info("peer node %u (%s) up", node, host);
	shd_home_peer_up(d, node);
	/* a confirmed job may have waited for this session (job.c) */
	struct shd_list *q;
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		if (j->confirmed && !j->ready)
			shd_job_check_ready(d, j);
	}
}

/* The peer is down: every rank it hosted is lost (-EHOSTDOWN). */
static void on_peer_lost(struct shd_daemon *d, uint32_t node)
{
	shd_fanout_peer_lost(d, node);
	struct shd_list *q;
	for (q = d->jobs.next; q != &d->jobs; q = q->next)
		shd_job_node_lost(d, shd_container_of(q, struct shd_job, link), node);
	shd_home_peer_lost(d, node);
}

/* node announced ranks of a job to this node, its home (jobhome.c). */
static void on_joined(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn)
{
	shd_home_on_join(d, node, jn);
}

static void on_mapped(struct shd_daemon *d, uint32_t node, const struct shf_wire_map *m)
{
	shd_home_on_map(d, node, m);
}

static void on_denied(struct shd_daemon *d, uint32_t node, const struct shf_wire_deny *dn)
{
	shd_home_on_deny(d, node, dn);
}

/*
 * Ranks of node left: one entry of its JOB_LEAVE.  A leave that says
 * node's job had lost another node (-EHOSTDOWN) brings that loss here
 * first, as if this node had seen it: the ranks of one job fail with one
 * error for one cause, the lost node's, even on a node that hears the
 * leave of a rank that failed of it before its own sessions find the loss
 * (docs/protocol-wire.md, JOB_LEAVE).
 */
static void left_range(struct shd_daemon *d, struct shd_job *j, uint32_t node,
		       const struct shf_wire_leave_ent *e)
{
	bool lost = e->reason == -EHOSTDOWN;
	if (lost)
		shd_job_node_lost(d, j, e->lost_node);
	/* reason 0: the rank left before its node knew of any other gone,
	 * a culprit of the job's failures (job.c, shd_job_culprit) */
	int64_t end = (int64_t)e->first + e->count;
	for (int32_t r = shd_jobtab_next(j, e->first); r < j->world && r < end;
	     r = shd_jobtab_next(j, r + 1)) {
		if (shd_jobtab_node(j, r) != node)
			continue;
		if (!e->reason && j->ready)
			shd_job_culprit(j, r);
		shd_job_remote_rank(d, j, r, node, false, -ESRCH);
	}
	/* never benign: node's epochs have failed since its loss, so it counts
	 * none any more (and sends no abort), whether or not the loss changed
	 * anything here (node lost this one, or its ranks had left here) */
	if (lost && j->ready)
		shd_epoch_fail_all(j, shd_epoch_gone_err(j));
}

/* The order in which a node's ranks left: while its side of the job
 * knows no other gone (0), then after one (-ESRCH, or another errno),
 * then once the job lost a node (-EHOSTDOWN, for good). */
static int leave_class(int reason)
{
	return reason == 0 ? 0 : reason == -EHOSTDOWN ? 2 : 1;
}

/*
 * A JOB_LEAVE: node's leaves of one window, in ranges sorted by rank.
 * Their reasons were fixed when each rank left, and on node they come in
 * the order of leave_class() (a window never holds a culprit after a
 * rank that left because of one, nor anything but -EHOSTDOWN after a
 * loss), so applying the classes in that order does here what the ranks'
 * leaves one by one did: the culprits are known before the failure they
 * caused is taken, and a loss comes after the leaves that preceded it.
 */
static void on_left(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave *l)
{
	d->st.leave_msgs_in++;
	bool relay = l->flags & SHF_WIRE_LEAVE_RELAY;
	bool fwd = l->flags & SHF_WIRE_LEAVE_FORWARDED;
	struct shd_job *j = shd_jobtab_find_hash(d, l->job_hash);
	if (fwd) {
		shd_home_forwarded(d, node, l); /* ours among them: they came through */
		/* other nodes' ranks: taken only from the home whose map this
		 * node took (the one its nodes relay through) */
		if (!j || j->map_home != node) {
			if (j)
				shd_log_rl(&rl_fwd, SHD_LOG_WARN, "job %s: leaves forwarded by node %u, "
					   "which is not the home whose map this node took: ignored",
					   j->name, node);
			return;
		}
	}
	for (uint32_t i = 0; i < l->nents && !fwd; i++) {
		struct shf_wire_leave_ent e = shf_wire_leave_entry(l, i);
		/* if this node is the job's home */
		shd_home_on_leave(d, node, l->job_hash, l->world, &e, relay);
	}
	/* a withdrawal from this node as a home: the ranks live on */
	if (!j || (l->flags & SHF_WIRE_LEAVE_WITHDRAW))
		return;
	for (int c = 0; c < 3; c++)
		for (uint32_t i = 0; i < l->nents; i++) {
			struct shf_wire_leave_ent e = shf_wire_leave_entry(l, i);
			if (leave_class(e.reason) == c && e.node != d->node_id)
				left_range(d, j, e.node, &e);
		}
}

static void on_left_ask(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave_ask *a)
{
	shd_home_on_ask(d, node, a);
}

static void on_epoch(struct shd_daemon *d, uint32_t node, unsigned kind, uint64_t job_hash,
		     uint64_t epoch, uint32_t phase, int32_t count)
{
	struct shd_job *j = shd_jobtab_find_hash(d, job_hash);
	if (j)
		shd_epoch_remote(d, j, node, kind, epoch, phase, count);
}

/* Records of local rank src were dropped: its next flush reports them. */
static void on_drops(struct shd_daemon *d, uint64_t job_hash, int32_t src, uint32_t count,
		     int why)
{
	struct shd_job *j = shd_jobtab_find_hash(d, job_hash);
	struct shd_client *c = shd_jobtab_local(d, j, src);
	if (!c) {
		/* the sender has gone too: nobody is left to tell */
		if (j && src >= 0 && src < j->world) {
			if (why == -EHOSTDOWN)
				j->st.drops_down += count;
			else
				j->st.drops_dead += count;
		}
		return;
	}
	if (why == -EHOSTDOWN) {
		c->report_down += count;
		c->st.drops_down += count;
	} else {
		c->report_dead += count;
		c->st.drops_dead += count;
	}
}

static void on_fan_req(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_req *r)
{
	shd_fanout_on_req(d, node, r);
}

static void on_fan_ans(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_ans *a)
{
	shd_fanout_on_ans(d, node, a);
}

const struct shd_job_events shd_job_events = {
	.registered = shd_home_announce,
	.local_left = shd_home_local_left,
	.leaves_now = shd_home_leaves_now,
};

const struct shd_net_events shd_events = {
	.peer_up = on_peer_up,
	.peer_lost = on_peer_lost,
	.joined = on_joined,
	.mapped = on_mapped,
	.denied = on_denied,
	.left = on_left,
	.left_ask = on_left_ask,
	.epoch = on_epoch,
	.drops = on_drops,
	.mark_acked = shd_relay_mark_acked,
	.fan_req = on_fan_req,
	.fan_ans = on_fan_ans,
};
