/* SPDX-License-Identifier: MIT */
/*
 * daemon/job.c - jobs: registration, the rank directory, world readiness
 * and the epoch barrier.
 *
 * A job is named by its clients; it belongs to the uid of its first
 * client.  rank_node[] maps every rank of the job to its node (O(world)
 * words per job per daemon, not per process).  A job lives while any of
 * its ranks is live anywhere; when the last local rank leaves and no rank
 * is live, it is freed.
 *
 * Epoch, for each client (see proto/ipc.h):
 *   1. its EPOCH mark is relayed after everything it sent before (so those
 *      records sit in their destination rings): it counts in phase 1;
 *   2. when all `world` ranks counted, every client gets FLUSH_DONE and
 *      drains its own delivery ring;
 *   3. it sends EPOCH phase 2; when all ranks did, EPOCH_DONE.
 * Counts are summed per node and exchanged between daemons once per phase,
 * so the cost grows with nodes, not ranks.  A rank that leaves during or
 * before an epoch fails it with -ESRCH everywhere, never a hang.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/net.h"
#include "proto/wire.h"

static const char *const epoch_names[SHD_EPOCH_MAX] = {
	[SHD_EPOCH_NONE] = "none", [SHD_EPOCH_P1] = "phase1",
	[SHD_EPOCH_DELIVER] = "deliver", [SHD_EPOCH_P2] = "phase2",
};

const char *shd_epoch_state_name(enum shd_epoch_state s)
{
	return (unsigned)s < SHD_EPOCH_MAX ? epoch_names[s] : "?";
}

uint64_t shd_job_hash(const char *name)
{
	return shf_wire_job_hash(name);
}

struct shd_job *shd_job_find(struct shd_daemon *d, const char *name)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->jobs) {
		struct shd_job *j = shd_container_of(p, struct shd_job, link);
		if (strcmp(j->name, name) == 0)
			return j;
	}
	return NULL;
}

struct shd_job *shd_job_find_hash(struct shd_daemon *d, uint64_t hash)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->jobs) {
		struct shd_job *j = shd_container_of(p, struct shd_job, link);
		if (j->hash == hash)
			return j;
	}
	return NULL;
}

static struct shd_job *job_new(struct shd_daemon *d, const char *name, int32_t world, uid_t uid)
{
	struct shd_job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	size_t words = (d->n_nodes + 63) / 64;
	j->rank_node = malloc(sizeof(*j->rank_node) * (size_t)world);
	j->clients = calloc((size_t)world, sizeof(*j->clients));
	j->reported[0] = calloc(words, sizeof(uint64_t));
	j->reported[1] = calloc(words, sizeof(uint64_t));
	j->reported_words = words;
	if (!j->rank_node || !j->clients || !j->reported[0] || !j->reported[1]) {
		free(j->rank_node);
		free(j->clients);
		free(j->reported[0]);
		free(j->reported[1]);
		free(j);
		return NULL;
	}
	for (int32_t i = 0; i < world; i++)
		j->rank_node[i] = SHD_NODE_NONE;
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->hash = shd_job_hash(name);
	j->world = world;
	j->uid = uid;
	j->created_ns = shd_now_ns();
	shd_list_init(&j->waiting);
	shd_list_add_tail(&d->jobs, &j->link);
	shd_info("job %s created: world %d, owner uid %d", name, world, (int)uid);
	return j;
}

static void job_free(struct shd_daemon *d, struct shd_job *j)
{
	shd_info("job %s ended (%llu epochs)", j->name, (unsigned long long)j->epoch_seq);
	shd_list_del(&j->link);
	free(j->rank_node);
	free(j->clients);
	free(j->reported[0]);
	free(j->reported[1]);
	free(j);
	(void)d;
}

void shd_job_free_all(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->jobs)
		job_free(d, shd_container_of(p, struct shd_job, link));
}

int shd_job_register(struct shd_daemon *d, struct shd_client *c, const char *name, int32_t rank,
		     int32_t world, char *why, size_t whylen)
{
	struct shd_job *j = shd_job_find(d, name);
	if (j) {
		if (c->uid != j->uid && c->uid != 0) {
			snprintf(why, whylen, "job %s belongs to uid %d (you are uid %d)", name,
				 (int)j->uid, (int)c->uid);
			return -EACCES;
		}
		if (world != j->world) {
			snprintf(why, whylen, "job %s has world %d, not %d", name, j->world, world);
			return -EINVAL;
		}
		if (j->rank_node[rank] != SHD_NODE_NONE) {
			if (j->rank_node[rank] == SHD_NODE_GONE)
				snprintf(why, whylen, "rank %d of job %s has already left the job", rank,
					 name);
			else if (j->rank_node[rank] == SHD_NODE_LOST)
				snprintf(why, whylen, "rank %d of job %s was lost with its node", rank,
					 name);
			else
				snprintf(why, whylen, "rank %d of job %s is already registered (node %u)",
					 rank, name, j->rank_node[rank]);
			return -EEXIST;
		}
	} else {
		j = job_new(d, name, world, c->uid);
		if (!j) {
			snprintf(why, whylen, "out of memory for job %s (world %d)", name, world);
			return -ENOMEM;
		}
	}
	j->rank_node[rank] = d->node_id;
	j->clients[rank] = c;
	j->registered++;
	j->local++;
	c->job = j;
	c->rank = rank;
	if (d->net)
		shd_net_job_rank(d, j, rank, true);
	return 0;
}

static void epoch_fail_all(struct shd_job *j, int err);
static bool leave_is_benign(const struct shd_job *j, uint32_t node);
static int gone_err(const struct shd_job *j);

void shd_job_leave(struct shd_client *c, bool gone, bool keep_route)
{
	struct shd_job *j = c->job;
	struct shd_daemon *d = c->d;
	if (!j)
		return;
	int32_t rank = c->rank;
	shd_list_del(&c->job_link);
	if (j->clients[rank] == c) {
		j->clients[rank] = NULL;
		j->local--;
		if (gone && j->ready) {
			j->rank_node[rank] = SHD_NODE_GONE;
			j->gone++;
		} else {
			j->rank_node[rank] = SHD_NODE_NONE;
			j->registered--;
		}
		c->epoch = SHD_EPOCH_NONE;
		if (d->net)
			shd_net_job_rank(d, j, rank, false);
		if (j->ready && j->gone)
			epoch_fail_all(j, gone_err(j));
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
	shd_client_stats_add(&j->st, &c->st); /* the job keeps its departed clients' counts */
	c->job = NULL;
	if (j->local == 0 && j->registered == j->gone && j->drainers == 0)
		job_free(d, j);
}

void shd_job_check_ready(struct shd_job *j)
{
	if (j->ready || j->registered != j->world || j->gone)
		return;
	j->ready = true;
	struct shd_daemon *d = NULL;
	struct shd_list *p, *t;
	struct shf_ipc_ready m = {j->world, 1};
	shd_list_for_each_safe(p, t, &j->waiting) {
		struct shd_client *c = shd_container_of(p, struct shd_client, job_link);
		d = c->d;
		m.nodes = d->n_nodes;
		shd_list_del(&c->job_link);
		shd_ev_disarm(c->world_timer);
		c->state = SHD_SESS_ACTIVE;
		if (shd_client_send(c, SHF_IPC_READY, 0, &m, sizeof(m)) < 0)
			shd_debug("job %s rank %d: READY not sent", j->name, c->rank);
		/* records may already wait in its send ring */
		shd_relay_kick(c);
	}
	shd_info("job %s: world of %d complete (%.1f ms after creation)", j->name, j->world,
		 (double)(shd_now_ns() - j->created_ns) / 1e6);
}

int shd_job_missing(const struct shd_job *j, char *buf, size_t len)
{
	size_t o = 0;
	int n = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < j->world; i++) {
		if (j->rank_node[i] != SHD_NODE_NONE)
			continue;
		int32_t k = i;
		while (k + 1 < j->world && j->rank_node[k + 1] == SHD_NODE_NONE)
			k++;
		char item[32];
		if (k > i)
			snprintf(item, sizeof(item), "%s%d-%d", n ? "," : "", i, k);
		else
			snprintf(item, sizeof(item), "%s%d", n ? "," : "", i);
		if (o + strlen(item) + 4 >= len) {
			snprintf(buf + o, len - o, ",...");
			break;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s", item);
		n++;
		i = k;
	}
	return n;
}

struct shd_job *shd_job_remote(struct shd_daemon *d, const char *name, int32_t world, uint32_t uid)
{
	struct shd_job *j = shd_job_find(d, name);
	if (j)
		return j->world == world ? j : NULL;
	return job_new(d, name, world, (uid_t)uid);
}

void shd_job_remote_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, uint32_t node,
			 bool joined, int err)
{
	if (rank < 0 || rank >= j->world || node == d->node_id)
		return;
	if (joined) {
		if (j->rank_node[rank] == SHD_NODE_NONE) {
			j->rank_node[rank] = node;
			j->registered++;
		} else if (j->rank_node[rank] != node) {
			shd_warn("job %s: rank %d claimed by node %u but known on node %u", j->name,
				 rank, node, j->rank_node[rank]);
		}
		shd_job_check_ready(j);
		return;
	}
	if (j->rank_node[rank] != node)
		return;
	if (j->ready) {
		/* a lost node's ranks drop with -EHOSTDOWN, a departed rank's -ESRCH */
		bool lost = err == -EHOSTDOWN;
		j->rank_node[rank] = lost ? SHD_NODE_LOST : SHD_NODE_GONE;
		j->gone++;
		j->lost += lost;
		if (lost || !leave_is_benign(j, node))
			epoch_fail_all(j, lost ? -EHOSTDOWN : -ESRCH);
	} else {
		j->rank_node[rank] = SHD_NODE_NONE;
		j->registered--;
	}
	if (j->local == 0 && j->registered == j->gone && j->drainers == 0)
		job_free(d, j);
}

/* ------------------------------------------------------------------ epochs */

static bool bit_get(const uint64_t *b, uint32_t i)
{
	return b[i / 64] >> (i % 64) & 1;
}

/* What an epoch answers once ranks are gone: a lost node wins. */
static int gone_err(const struct shd_job *j)
{
	return j->lost ? -EHOSTDOWN : -ESRCH;
}

/*
 * A rank of `node` left a complete job.  The epoch pending here can still
 * finish if that rank's node already counted it in the phase in progress:
 * its rank went through the epoch on its node and merely closed first.
 * With nothing pending the next epoch fails at entry instead.
 */
static bool leave_is_benign(const struct shd_job *j, uint32_t node)
{
	if (j->p2_total > 0)
		return bit_get(j->reported[1], node);
	if (j->p1_total > 0)
		return false;
	for (int32_t r = 0; r < j->world; r++)
		if (j->clients[r] && j->clients[r]->epoch != SHD_EPOCH_NONE)
			return false;
	return true;
}

static void reply_p1(struct shd_client *c, int status)
{
	struct shf_ipc_flush_done m = {c->mark_id, c->report_dead, c->report_down, status, 0};
	c->report_dead = c->report_down = 0;
	shd_client_send(c, SHF_IPC_FLUSH_DONE, (uint32_t)c->mark_id, &m, sizeof(m));
}

static void reply_p2(struct shd_client *c, int status)
{
	struct shf_ipc_epoch_done m = {c->epoch_id, 2, status};
	shd_client_send(c, SHF_IPC_EPOCH_DONE, c->epoch_ipc_id, &m, sizeof(m));
}

/* A rank left: every local client in an epoch gets -ESRCH now. */
static void epoch_fail_all(struct shd_job *j, int err)
{
	for (int32_t r = 0; r < j->world; r++) {
		struct shd_client *c = j->clients[r];
		if (!c)
			continue;
		if (c->epoch == SHD_EPOCH_P1)
			reply_p1(c, err);
		else if (c->epoch == SHD_EPOCH_P2)
			reply_p2(c, err);
		/* DELIVER: it will send phase 2 and get the error then */
		if (c->epoch != SHD_EPOCH_DELIVER)
			c->epoch = SHD_EPOCH_NONE;
	}
	j->p1_local = j->p2_local = j->p1_total = j->p2_total = 0;
	j->p1_sent = j->p2_sent = false;
	j->epoch_start_ns = 0;
	memset(j->reported[0], 0, j->reported_words * sizeof(uint64_t));
	memset(j->reported[1], 0, j->reported_words * sizeof(uint64_t));
}

static void epoch_check(struct shd_daemon *d, struct shd_job *j, uint32_t phase)
{
	int32_t *local = phase == 1 ? &j->p1_local : &j->p2_local;
	int32_t *total = phase == 1 ? &j->p1_total : &j->p2_total;
	bool *sent = phase == 1 ? &j->p1_sent : &j->p2_sent;
	/* tell the other nodes once, when all our ranks are in */
	if (d->net && !*sent && *local == j->local && *local > 0) {
		shd_net_epoch(d, j, phase, *local);
		*sent = true;
	}
	if (*total < j->world)
		return;
	for (int32_t r = 0; r < j->world; r++) {
		struct shd_client *c = j->clients[r];
		if (!c)
			continue;
		if (phase == 1 && c->epoch == SHD_EPOCH_P1) {
			c->epoch = SHD_EPOCH_DELIVER;
			c->st.flushes++;
			reply_p1(c, 0);
		} else if (phase == 2 && c->epoch == SHD_EPOCH_P2) {
			c->epoch = SHD_EPOCH_NONE;
			c->st.epochs++;
			reply_p2(c, 0);
		}
	}
	*local = *total = 0;
	*sent = false;
	memset(j->reported[phase - 1], 0, j->reported_words * sizeof(uint64_t));
	if (phase == 2 && j->epoch_start_ns) {
		uint64_t ns = shd_now_ns() - j->epoch_start_ns;
		j->epoch_start_ns = 0;
		j->epoch_seq++;
		d->st.epochs++;
		d->st.epoch_ns_total += ns;
		if (ns > d->st.epoch_ns_max)
			d->st.epoch_ns_max = ns;
		shd_debug("job %s: epoch %llu done in %.3f ms", j->name,
			  (unsigned long long)j->epoch_seq, (double)ns / 1e6);
	}
}

void shd_job_epoch_mark(struct shd_client *c)
{
	struct shd_job *j = c->job;
	if (!j || c->state != SHD_SESS_ACTIVE)
		return;
	if (j->gone) {
		reply_p1(c, gone_err(j));
		return;
	}
	if (j->p1_total == 0 && j->p2_total == 0)
		j->epoch_start_ns = shd_now_ns();
	c->epoch = SHD_EPOCH_P1;
	j->p1_local++;
	j->p1_total++;
	epoch_check(c->d, j, 1);
}

void shd_job_epoch_phase2(struct shd_client *c, uint32_t ipc_id, uint64_t id)
{
	struct shd_job *j = c->job;
	c->epoch_ipc_id = ipc_id;
	c->epoch_id = id;
	if (j->gone) {
		c->epoch = SHD_EPOCH_NONE;
		reply_p2(c, gone_err(j));
		return;
	}
	c->epoch = SHD_EPOCH_P2;
	j->p2_local++;
	j->p2_total++;
	epoch_check(c->d, j, 2);
}

void shd_job_epoch_remote(struct shd_daemon *d, struct shd_job *j, uint32_t node, uint32_t phase,
			  int32_t count)
{
	if (phase != 1 && phase != 2)
		return;
	if (count < 0 || count > j->world || node >= d->n_nodes) {
		shd_warn("job %s: epoch phase %u count %d from node %u out of range", j->name,
			 phase, count, node);
		return;
	}
	if (phase == 1 && j->p1_total == 0 && j->p2_total == 0)
		j->epoch_start_ns = shd_now_ns();
	j->reported[phase - 1][node / 64] |= UINT64_C(1) << (node % 64);
	if (phase == 1)
		j->p1_total += count;
	else
		j->p2_total += count;
	epoch_check(d, j, phase);
}
