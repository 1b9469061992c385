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
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/relay.h"
#include "proto/wire.h"

static struct shd_ratelimit rl_ev = SHD_RATELIMIT_INIT(1000, 5);

static void on_peer_up(struct shd_daemon *d, uint32_t node, const char *host)
{
	shd_info("peer node %u (%s) up", node, host);
}

/* The peer is down: every rank it hosted is lost (-EHOSTDOWN). */
static void on_peer_lost(struct shd_daemon *d, uint32_t node)
{
	shd_fanout_peer_lost(d, node);
	struct shd_list *q;
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1))
			if (shd_jobtab_node(j, r) == node)
				shd_job_remote_rank(d, j, r, node, false, -EHOSTDOWN);
	}
}

/*
 * node announced job j with another owner.  Both nodes had accepted a
 * registration of their own user before hearing of the other's (the joins
 * crossed: a node that knows a job refuses other users locally, session.c);
 * there is no order to say who came first, so each side fails its job
 * alone, and both do, since each sees the other's join: the ranks waiting
 * for their world get -EACCES and are unregistered, running ranks' epochs
 * and flushes fail with -EACCES (epoch.c, relay.c), later registrations
 * are refused (job.c), records received for the job are dropped and
 * counted (net/rx.c: rx_drops_owner).  The other node's ranks are never
 * entered into the job, so nothing is routed to them.  Owners must be
 * equal: root's job does not merge with a user's either (a local root
 * client may join a user's job, which keeps its owner).
 */
static void owner_conflict(struct shd_daemon *d, struct shd_job *j, uint32_t node, uint32_t uid)
{
	d->st.owner_conflicts++;
	if (j->deny)
		return;
	j->deny = -EACCES;
	j->deny_node = node;
	j->deny_uid = (uid_t)uid;
	shd_warn("job %s: node %u announced it with owner uid %u, here it belongs to uid %d: "
		 "a job's owner must be the same on every node; the job fails with EACCES",
		 j->name, node, uid, (int)j->uid);
	while (!shd_list_empty(&j->waiting)) {
		struct shd_client *w = shd_container_of(j->waiting.next, struct shd_client, job_link);
		d->st.refused++;
		shd_client_error(w, 0, -EACCES,
				 "job %s: node %u runs a job of that name owned by uid %u; here it "
				 "belongs to uid %d; a job's owner must be the same on every node",
				 j->name, node, uid, (int)j->uid);
		shd_job_leave(w, false, false); /* takes it off j->waiting */
		shd_client_close_sock(w);
		shd_client_reap_later(w);
	}
	if (j->ready)
		shd_epoch_fail_all(j, -EACCES);
}

static void on_joined(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn)
{
	struct shd_job *j = shd_job_remote(d, jn->name, jn->world, jn->uid);
	if (!j) {
		shd_log_rl(&rl_ev, SHD_LOG_WARN,
			   "node %u: join of job %s (world %d) conflicts with what this node knows",
			   node, jn->name, jn->world);
		return;
	}
	if ((uint32_t)j->uid != jn->uid) {
		owner_conflict(d, j, node, jn->uid);
		return;
	}
	for (uint32_t i = 0; i < jn->nranges; i++) {
		struct shf_wire_range r = shf_wire_join_range(jn, i);
		for (int32_t k = 0; k < r.count && r.first + k < j->world; k++)
			shd_job_remote_rank(d, j, r.first + k, node, true, 0);
	}
}

static void on_left(struct shd_daemon *d, uint32_t node, uint64_t job_hash, int32_t rank)
{
	struct shd_job *j = shd_jobtab_find_hash(d, job_hash);
	if (!j)
		return;
	if (rank >= 0) {
		shd_job_remote_rank(d, j, rank, node, false, -ESRCH);
		return;
	}
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1))
		if (shd_jobtab_node(j, r) == node)
			shd_job_remote_rank(d, j, r, node, false, -ESRCH);
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

const struct shd_net_events shd_events = {
	.peer_up = on_peer_up,
	.peer_lost = on_peer_lost,
	.joined = on_joined,
	.left = on_left,
	.epoch = on_epoch,
	.drops = on_drops,
	.mark_acked = shd_relay_mark_acked,
	.fan_req = on_fan_req,
	.fan_ans = on_fan_ans,
};
