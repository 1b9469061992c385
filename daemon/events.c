/* SPDX-License-Identifier: MIT */
/*
 * daemon/events.c - net's events, carried to the modules above it
 * (events.h).  net calls these from its receive path and from the pass's
 * peers step; none of them frees anything (jobs end at the reap).
 */
#include <errno.h>

#include "daemon/epoch.h"
#include "daemon/events.h"
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
	struct shd_list *q;
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1))
			if (shd_jobtab_node(j, r) == node)
				shd_job_remote_rank(d, j, r, node, false, -EHOSTDOWN);
	}
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

static void on_epoch(struct shd_daemon *d, uint32_t node, uint64_t job_hash, uint32_t phase,
		     int32_t count)
{
	struct shd_job *j = shd_jobtab_find_hash(d, job_hash);
	if (j)
		shd_epoch_remote(d, j, node, phase, count);
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

const struct shd_net_events shd_events = {
	.peer_up = on_peer_up,
	.peer_lost = on_peer_lost,
	.joined = on_joined,
	.left = on_left,
	.epoch = on_epoch,
	.drops = on_drops,
	.mark_acked = shd_relay_mark_acked,
};
