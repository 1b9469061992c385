/* SPDX-License-Identifier: MIT */
/*
 * daemon/job.c - jobs over time (job.h): registration, the rank directory's
 * updates, world readiness, and the end of a job.
 *
 * A job lives while any of its ranks is live anywhere or a departed local
 * client still drains into it.  When that stops being true it is queued
 * (d->ended) and freed at the pass's reap step, never inside the update
 * that ended it: a leave, a remote leave or a lost node may all end a job
 * while their callers still hold it.
 */
#include <errno.h>
#include <stdio.h>

#include "daemon/client.h"
#include "daemon/deliver.h"
#include "daemon/epoch.h"
#include "daemon/job.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/net/net.h"
#include "daemon/sched.h"
#include "daemon/stats.h"

static bool job_unused(const struct shd_job *j)
{
	return j->local == 0 && j->registered == j->gone && j->drainers == 0;
}

/* Queue j for the reap if nothing refers to it any more. */
static void job_maybe_end(struct shd_daemon *d, struct shd_job *j)
{
	if (!job_unused(j) || shd_list_linked(&j->end_link))
		return;
	shd_list_add_tail(&d->ended, &j->end_link);
	shd_sched_pass(d);
}

void shd_job_reap(struct shd_daemon *d)
{
	while (!shd_list_empty(&d->ended)) {
		struct shd_job *j = shd_container_of(d->ended.next, struct shd_job, end_link);
		shd_list_del(&j->end_link);
		if (!job_unused(j)) /* a rank may have registered since */
			continue;
		if (d->job_ev)
			d->job_ev->leaves_now(d, j, true); /* held leaves go before it is freed */
		shd_jobtab_free(d, j);
	}
}

int shd_job_register(struct shd_daemon *d, struct shd_client *c, const char *name, int32_t rank,
		     int32_t world, char *why, size_t whylen)
{
	struct shd_job *j = shd_jobtab_find(d, name);
	if (j) {
		if (j->deny) {
			if (j->deny == -EACCES)
				snprintf(why, whylen, "job %s is failed: node %u runs it with owner uid "
					 "%d, here it belongs to uid %d", name, j->deny_node,
					 (int)j->deny_uid, (int)j->uid);
			else if (j->deny == -EINVAL)
				snprintf(why, whylen, "job %s is failed: node %u runs it with world %d, "
					 "here it has world %d", name, j->deny_node, j->deny_world,
					 j->world);
			else
				snprintf(why, whylen, "job %s is failed: it runs on node %u and others "
					 "without this node's ranks", name, j->deny_node);
			return j->deny;
		}
		if (c->uid != j->uid && c->uid != 0) {
			snprintf(why, whylen, "job %s belongs to uid %d (you are uid %d)", name,
				 (int)j->uid, (int)c->uid);
			return -EACCES;
		}
		if (j->drained) {
			snprintf(why, whylen, "job %s drained by uid %d (shufflectl drain)", name,
				 (int)j->drained_by);
			return -ECANCELED;
		}
		if (world != j->world) {
			snprintf(why, whylen, "job %s has world %d, not %d", name, j->world, world);
			/* the ranks waiting for this job's world hear of it (session.c) */
			j->bad_world = world;
			j->bad_world_rank = rank;
			j->bad_worlds++;
			return -EINVAL;
		}
		uint32_t node = shd_jobtab_node(j, rank);
		if (node != SHD_NODE_NONE) {
			if (node == SHD_NODE_GONE)
				snprintf(why, whylen, "rank %d of job %s has already left the job", rank,
					 name);
			else if (node == SHD_NODE_LOST)
				snprintf(why, whylen, "rank %d of job %s was lost with its node", rank,
					 name);
			else
				snprintf(why, whylen, "rank %d of job %s is already registered (node %u)",
					 rank, name, node);
			return -EEXIST;
		}
	} else {
		int err;
		j = shd_jobtab_new(d, name, world, c->uid, false, &err, why, whylen);
		if (!j)
			return err;
	}
	/* the directory's chunk is charged to the job's owner, within budget */
	int r = shd_jobtab_set(d, j, rank, d->node_id, c, false, why, whylen);
	if (r) {
		job_maybe_end(d, j); /* a job this registration created goes again */
		return r;
	}
	j->registered++;
	j->local++;
	c->job = j;
	c->rank = rank;
	if (d->job_ev)
		d->job_ev->registered(d, j);
	return 0;
}

void shd_job_leave(struct shd_client *c, bool gone, bool keep_route)
{
	struct shd_job *j = c->job;
	struct shd_daemon *d = c->d;
	if (!j)
		return;
	int32_t rank = c->rank;
	shd_list_del(&c->job_link);
	if (shd_jobtab_client(j, rank) == c) {
		j->local--;
		if (gone && j->ready) {
			/* the first to go is a culprit; who goes once the job
			 * failed here left because of it (its leave says so) */
			bool first = !j->gone && !j->epoch_abort && !j->lost && !j->deny;
			shd_jobtab_set(d, j, rank, SHD_NODE_GONE, NULL, true, NULL, 0);
			j->gone++;
			if (first)
				shd_job_culprit(j, rank);
		} else {
			shd_jobtab_set(d, j, rank, SHD_NODE_NONE, NULL, true, NULL, 0);
			j->registered--;
		}
		/* nobody will drain c's delivery ring any more: whoever waits for
		 * room in it (c itself included, when it sent to itself) retries,
		 * and their records to this rank now drop, counted on the sender */
		shd_deliver_wake(c);
		enum shd_epoch_state was = c->epoch;
		c->epoch = SHD_EPOCH_NONE;
		if (d->job_ev)
			d->job_ev->local_left(d, j, rank);
		if (j->ready && j->gone)
			shd_epoch_left_here(d, j, was);
	}
	if (keep_route) {
		if (!c->drain_ref)
			j->drainers++;
		c->drain_ref = true;
		return;
	}
	if (c->drain_ref)
		j->drainers--;
	c->drain_ref = false;
	shd_stats_client_add(&j->st, &c->st); /* the job keeps its departed clients' counts */
	c->job = NULL;
	job_maybe_end(d, j);
}

uint32_t shd_job_nodes_not_up(const struct shd_daemon *d, const struct shd_job *j,
			      uint32_t *first)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < j->n_jnodes; i++)
		if (!shd_net_peer_is_up(d, j->jnodes[i]) && n++ == 0 && first)
			*first = j->jnodes[i];
	return n;
}

void shd_job_check_ready(struct shd_daemon *d, struct shd_job *j)
{
	/* a world with ranks on other nodes waits for the home's confirmation
	 * (jobhome.c: every node of it named the same owner and world); a
	 * confirmed map may already count ranks that left meanwhile */
	if (j->ready || j->registered != j->world || j->deny)
		return;
	if (j->local != j->world && !j->confirmed)
		return;
	if (j->gone && !j->confirmed)
		return;
	/* and for this node's sessions with the job's other nodes: the home
	 * confirmed the world over its own sessions, and a session of this
	 * node's may still be on its way (routing=2d: one outside the row and
	 * column comes up after the links it is forwarded over).  Records for
	 * a node that is not up drop as "node down" (net/tx.c), so the ranks
	 * wait for it, within the world timeout; events.c checks again when a
	 * session comes up. */
	if (shd_job_nodes_not_up(d, j, NULL))
		return;
	j->ready = true;
	struct shd_list *p, *t;
	struct shf_ipc_ready m = {j->world, 1};
	shd_list_for_each_safe(p, t, &j->waiting) {
		struct shd_client *c = shd_container_of(p, struct shd_client, job_link);
		m.nodes = c->d->n_nodes;
		shd_list_del(&c->job_link);
		shd_ev_disarm(c->world_timer);
		c->state = SHD_SESS_ACTIVE;
		if (shd_client_send(c, SHF_IPC_READY, 0, &m, sizeof(m)) < 0)
			shd_debug("job %s rank %d: READY not sent", j->name, c->rank);
		/* records may already wait in its send ring */
		shd_sched_kick(c);
	}
	shd_info("job %s: world of %d complete (%.1f ms after creation)", j->name, j->world,
		 (double)(shd_now_ns() - j->created_ns) / 1e6);
}

/*
 * The job's home found that node runs job j with another owner (-EACCES)
 * or world (-EINVAL), or that j runs without this node's ranks (-EEXIST),
 * and told both sides (jobhome.c).  There is no order to say who came
 * first, so each side fails its job alone: the ranks waiting for their
 * world get the error and are unregistered, running ranks' epochs and
 * flushes fail (epoch.c, relay.c), later registrations are refused
 * (above), records received for the job are dropped and counted
 * (net/rx.c: rx_drops_owner).  The other node's ranks are never entered
 * into the job, so nothing is routed to them.  Owners must be equal: root's
 * job does not merge with a user's either (a local root client may join a
 * user's job, which keeps its owner).
 */
void shd_job_deny(struct shd_daemon *d, struct shd_job *j, int reason, uint32_t node,
		  uint32_t uid, int32_t world)
{
	if (reason == -EACCES)
		d->st.owner_conflicts++;
	if (j->deny)
		return;
	j->deny = reason;
	j->deny_node = node;
	j->deny_uid = (uid_t)uid;
	j->deny_world = world;
	char what[160];
	if (reason == -EACCES)
		snprintf(what, sizeof(what), "node %u runs a job of that name owned by uid %u; here "
			 "it belongs to uid %d; a job's owner must be the same on every node", node,
			 uid, (int)j->uid);
	else if (reason == -EINVAL)
		snprintf(what, sizeof(what), "node %u runs it with world %d; here it has world %d; "
			 "a job's world must be the same on every node", node, world, j->world);
	else
		snprintf(what, sizeof(what), "it already runs on node %u and others without this "
			 "node's ranks", node);
	shd_warn("job %s: %s; the job fails with %s", j->name, what,
		 reason == -EACCES ? "EACCES" : reason == -EINVAL ? "EINVAL" : "EEXIST");
	while (!shd_list_empty(&j->waiting)) {
		struct shd_client *w = shd_container_of(j->waiting.next, struct shd_client, job_link);
		d->st.refused++;
		shd_client_error(w, 0, reason, "job %s: %s", j->name, what);
		shd_job_leave(w, false, false); /* takes it off j->waiting */
		shd_client_close_sock(w);
		shd_client_reap_later(w);
	}
	if (j->ready)
		shd_epoch_fail_all(j, reason);
}

struct shd_job *shd_job_remote(struct shd_daemon *d, const char *name, int32_t world, uint32_t uid)
{
	struct shd_job *j = shd_jobtab_find(d, name);
	if (j)
		return j->world == world ? j : NULL;
	int err;
	/* another node admitted its ranks (within its budgets): not refused here */
	j = shd_jobtab_new(d, name, world, (uid_t)uid, true, &err, NULL, 0);
	if (!j)
		shd_err("out of memory for job %s (world %d) announced by another node", name,
			world);
	return j;
}

void shd_job_remote_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, uint32_t node,
			 bool joined, int err)
{
	if (rank < 0 || rank >= j->world || node == d->node_id)
		return;
	uint32_t known = shd_jobtab_node(j, rank);
	if (joined) {
		if (known == SHD_NODE_NONE) {
			if (shd_jobtab_set(d, j, rank, node, NULL, true, NULL, 0) < 0) {
				shd_err("job %s: out of memory for rank %d of node %u", j->name, rank,
					node);
				return;
			}
			j->registered++;
		} else if (known != node) {
			shd_warn("job %s: rank %d claimed by node %u but known on node %u", j->name,
				 rank, node, known);
		}
		shd_job_check_ready(d, j);
		return;
	}
	if (known != node)
		return;
	if (err == -EHOSTDOWN) {
		shd_job_node_lost(d, j, node);
		return;
	}
	if (j->ready) {
		/* a departed rank's records drop with -ESRCH; the epoch fails with
		 * the job's first cause (a lost node's, if it had one) */
		shd_jobtab_set(d, j, rank, SHD_NODE_GONE, NULL, true, NULL, 0);
		j->gone++;
		if (!shd_epoch_leave_is_benign(j, node))
			shd_epoch_fail_all(j, shd_epoch_gone_err(j));
	} else {
		shd_jobtab_set(d, j, rank, SHD_NODE_NONE, NULL, true, NULL, 0);
		j->registered--;
	}
	job_maybe_end(d, j);
}

void shd_job_node_lost(struct shd_daemon *d, struct shd_job *j, uint32_t node)
{
	if (node == d->node_id)
		return;
	/* every rank first, then one failure: its text names them all */
	int32_t k = 0;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		if (shd_jobtab_node(j, r) != node)
			continue;
		k++;
		if (!j->ready) {
			shd_jobtab_set(d, j, r, SHD_NODE_NONE, NULL, true, NULL, 0);
			j->registered--;
			continue;
		}
		/* its records drop with -EHOSTDOWN from now on */
		shd_jobtab_set(d, j, r, SHD_NODE_LOST, NULL, true, NULL, 0);
		j->gone++;
		if (!j->lost)
			j->lost_node = node;
		j->lost++;
	}
	if (k && j->ready)
		shd_epoch_fail_all(j, -EHOSTDOWN);
	if (k)
		job_maybe_end(d, j);
}

void shd_job_culprit(struct shd_job *j, int32_t rank)
{
	int32_t k = j->n_culprits < 8 ? j->n_culprits : 8;
	for (int32_t i = 0; i < k; i++)
		if (j->culprit[i] == rank)
			return;
	j->n_culprits++;
	if (k == 8)
		return; /* counted, not listed */
	int32_t i = k;
	for (; i > 0 && j->culprit[i - 1] > rank; i--)
		j->culprit[i] = j->culprit[i - 1];
	j->culprit[i] = rank;
}

bool shd_job_is_culprit(const struct shd_job *j, int32_t rank)
{
	for (int32_t i = 0; i < j->n_culprits && i < 8; i++)
		if (j->culprit[i] == rank)
			return true;
	return false;
}
