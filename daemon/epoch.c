/* SPDX-License-Identifier: MIT */
/*
 * daemon/epoch.c - the epoch barrier.
 *
 * Epoch, for each client (see proto/ipc.h):
 *   1. its EPOCH mark is relayed after everything it sent before (so those
 *      records sit in their destination rings): it counts in phase 1
 *      (SHF_WIRE_EPOCH_PLACED);
 *   2. when all `world` ranks counted, every client gets FLUSH_DONE and
 *      drains its own delivery ring;
 *   3. it sends EPOCH phase 2 (SHF_WIRE_EPOCH_DRAINED); when all ranks did,
 *      EPOCH_DONE.
 * Counts go over a binary tree of the job's nodes (the nodes that host
 * ranks of it, in ascending node id; the lowest is the root, node at index
 * i has children 2i+1 and 2i+2): a node sends its subtree's count up
 * (SHF_WIRE_EPOCH_UP) once all its ranks and both children are in; the
 * root, once its count is the world, completes the phase and sends
 * SHF_WIRE_EPOCH_DOWN to its children, each of which completes it and
 * passes it on.  A phase costs each daemon at most 3 messages (1 up, 2
 * down) and its critical path is 2 x floor(log2 M) messages on M nodes
 * (docs/scale.md).  The tree is worked out once per job (epoch_tree()),
 * when the job is ready: from then on its ranks' nodes are fixed.
 *
 * Ranks that leave: a rank lost with its node fails the pending epoch with
 * -EHOSTDOWN on every node (each learns the loss from membership itself, so
 * a lost interior node never hangs its subtree).  A rank that closes after
 * its node completed the epoch does not fail it elsewhere: a node still
 * waiting in phase 2 takes another node's leave as benign
 * (shd_epoch_leave_is_benign), because the leaving rank's own node knows
 * better: if that rank left with an epoch pending on its node, the node
 * fails it there and floods SHF_WIRE_EPOCH_ABORT over the tree's edges
 * (shd_epoch_left_here), which fails it everywhere (-ESRCH).  A leave seen
 * in phase 1 fails the epoch at once.  Once a job has lost ranks, every later epoch fails at entry
 * with shd_epoch_gone_err().  A rank still draining when its epoch fails
 * learns it at phase 2 with the error and culprits of that failure
 * (fail_err, fail_why), not those of later.  Never a hang.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobtab.h"
#include "daemon/client.h"
#include "daemon/epoch.h"
#include "daemon/job.h"
#include "daemon/log.h"
#include "daemon/net/net.h"
#include "daemon/net/tx.h"
#include "proto/wire.h"

#define PLACED SHF_WIRE_EPOCH_PLACED
#define DRAINED SHF_WIRE_EPOCH_DRAINED

static const char *const epoch_names[SHD_EPOCH_MAX] = {
	[SHD_EPOCH_NONE] = "none", [SHD_EPOCH_P1] = "phase1",
	[SHD_EPOCH_DELIVER] = "deliver", [SHD_EPOCH_P2] = "phase2",
};

const char *shd_epoch_state_name(enum shd_epoch_state s)
{
	return (unsigned)s < SHD_EPOCH_MAX ? epoch_names[s] : "?";
}

#define UP SHF_WIRE_EPOCH_UP
#define DOWN SHF_WIRE_EPOCH_DOWN
#define ABORT SHF_WIRE_EPOCH_ABORT

/* An abort fails the epoch pending here (or a later one, once it begins). */
static bool aborted(const struct shd_job *j)
{
	return j->epoch_abort && j->epoch_seq + 1 >= j->abort_epoch;
}

int shd_epoch_gone_err(const struct shd_job *j)
{
	if (j->deny)
		return j->deny; /* an owner conflict (events.c) */
	if (j->lost)
		return -EHOSTDOWN;
	return j->epoch_abort ? j->epoch_abort : -ESRCH;
}

/*
 * The job's tree: the nodes hosting its ranks, ascending; this node's
 * parent and children.  Needs the job ready (every rank's node known);
 * false until then, or when this node hosts none of its ranks.
 */
static bool epoch_tree(struct shd_daemon *d, struct shd_job *j)
{
	if (j->tree_known)
		return true;
	if (!j->ready)
		return false;
	uint32_t nn = d->n_nodes ? d->n_nodes : 1;
	uint64_t *has = calloc((nn + 63) / 64, sizeof(uint64_t));
	if (!has) {
		shd_err("job %s: out of memory for its epoch tree", j->name);
		return false;
	}
	has[d->node_id / 64] |= UINT64_C(1) << (d->node_id % 64);
	for (int32_t r = 0; r < j->world; r++) {
		uint32_t node = shd_jobtab_node(j, r);
		if (node < nn)
			has[node / 64] |= UINT64_C(1) << (node % 64);
	}
	/* index of each node in the ascending list; the parent's and the
	 * children's indexes give their node ids on a second walk */
	uint32_t me = 0, m = 0;
	for (uint32_t x = 0; x < nn; x++)
		if (has[x / 64] >> (x % 64) & 1) {
			if (x == d->node_id)
				me = m;
			m++;
		}
	uint32_t want_parent = me ? (me - 1) / 2 : UINT32_MAX;
	uint32_t idx = 0;
	j->tree_parent = SHD_NODE_NONE;
	j->tree_nchild = 0;
	for (uint32_t x = 0; x < nn; x++) {
		if (!(has[x / 64] >> (x % 64) & 1))
			continue;
		if (idx == want_parent)
			j->tree_parent = x;
		if (idx == 2 * me + 1 || idx == 2 * me + 2)
			j->tree_child[j->tree_nchild++] = x;
		idx++;
	}
	free(has);
	j->tree_known = true;
	shd_debug("job %s: epoch tree of %u nodes, index %u, parent %d, %u children", j->name, m,
		  me, j->tree_parent == SHD_NODE_NONE ? -1 : (int)j->tree_parent,
		  j->tree_nchild);
	return true;
}

/* Ranks of phase `phase` counted in this node's subtree so far. */
int32_t shd_epoch_subtree_count(const struct shd_job *j, uint32_t phase)
{
	int32_t n = phase == PLACED ? j->p1_local : j->p2_local;
	for (unsigned i = 0; i < j->n_up[phase - 1]; i++)
		n += j->up[phase - 1][i].count;
	return n;
}

static bool epoch_pending(const struct shd_job *j)
{
	if (j->p1_local || j->p2_local || j->n_up[0] || j->n_up[1] || j->p2_open ||
	    j->p1_sent || j->p2_sent)
		return true;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		const struct shd_client *c = shd_jobtab_client(j, r);
		if (c && c->epoch != SHD_EPOCH_NONE)
			return true;
	}
	return false;
}

/*
 * Another node's rank left the complete job j.  In phase 2 here, the
 * epoch can still end: the rank went through it and merely closed first,
 * or its node fails it and sends EPOCH_ABORT.  In phase 1 it cannot.
 * With nothing pending the next epoch fails at entry instead.
 */
bool shd_epoch_leave_is_benign(const struct shd_job *j, uint32_t node)
{
	(void)node;
	if (j->p2_open)
		return true;
	return !epoch_pending(j);
}
/* Append "R" or ",R" for the ranks of j at node `where` (at most 8, then
 * ",... (N in all)"); returns how many there are. */
static int32_t ranks_at(const struct shd_job *j, uint32_t where, char *buf, size_t n)
{
	size_t o = 0;
	int32_t k = 0;
	buf[0] = '\0';
	for (int32_t r = 0; r < j->world; r++) {
		if (shd_jobtab_node(j, r) != where)
			continue;
		if (k < 8 && o < n)
			o += (size_t)snprintf(buf + o, n - o, "%s%d", k ? "," : "", r);
		k++;
	}
	if (k > 8 && o < n)
		snprintf(buf + o, n - o, ",... (%d in all)", k);
	return k;
}

/* The same for j's culprits (job.c, shd_job_culprit). */
static int32_t culprits(const struct shd_job *j, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < j->n_culprits && i < 8 && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%d", i ? "," : "", j->culprit[i]);
	if (j->n_culprits > 8 && o < n)
		snprintf(buf + o, n - o, ",... (%d in all)", j->n_culprits);
	return j->n_culprits;
}

void shd_epoch_why(const struct shd_daemon *d, const struct shd_job *j, int err, char *buf,
		   size_t n)
{
	char list[160], name[80] = "";
	int32_t k;
	buf[0] = '\0';
	if (err == -EHOSTDOWN && j->lost) {
		const char *host = shd_net_peer_host(d, j->lost_node);
		if (host)
			snprintf(name, sizeof(name), " (%.64s)", host);
		k = ranks_at(j, SHD_NODE_LOST, list, sizeof(list));
		snprintf(buf, n, "rank%s %s of job %s lost with node %u%s, which is down",
			 k == 1 ? "" : "s", list, j->name, j->lost_node, name);
	} else if (err == -ESRCH) {
		/* the culprits when known, not who left because of them */
		k = j->n_culprits ? culprits(j, list, sizeof(list))
				  : ranks_at(j, SHD_NODE_GONE, list, sizeof(list));
		if (k)
			snprintf(buf, n, "rank%s %s of job %s left the job (closed or exited) before "
				 "this epoch completed", k == 1 ? "" : "s", list, j->name);
		else
			snprintf(buf, n, "a rank of job %s on another node left the job before this "
				 "epoch completed", j->name);
	}
}

/* ------------------------------------------------------------ who waits */

/* Append to buf at *o (bounded). */
static void put(char *buf, size_t n, size_t *o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *o, const char *fmt, ...)
{
	if (*o >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *o, n - *o, fmt, ap);
	va_end(ap);
	*o = k < 0 ? n : *o + (size_t)k > n ? n : *o + (size_t)k;
}

/* "R,R,R,... (N in all)": the first 8 of k ranks in r[]. */
static void put_ranks(char *buf, size_t n, size_t *o, const int32_t *r, int32_t k)
{
	for (int32_t i = 0; i < k && i < 8; i++)
		put(buf, n, o, "%s%d", i ? "," : "", r[i]);
	if (k > 8)
		put(buf, n, o, ",... (%d in all)", k);
}

/* The ascending node list of j's tree (epoch_tree's order): count, or 0
 * (out of memory); *ids_p to free. */
static uint32_t tree_ids(const struct shd_daemon *d, const struct shd_job *j, uint32_t **ids_p)
{
	uint32_t nn = d->n_nodes ? d->n_nodes : 1, m = 0;
	uint8_t *has = calloc(nn, 1);
	uint32_t *ids = calloc(nn, sizeof(*ids));
	if (!has || !ids) {
		free(has);
		free(ids);
		return 0;
	}
	has[d->node_id < nn ? d->node_id : 0] = 1;
	for (int32_t r = 0; r < j->world; r++) {
		uint32_t node = shd_jobtab_node(j, r);
		if (node < nn)
			has[node] = 1;
	}
	for (uint32_t x = 0; x < nn; x++)
		if (has[x])
			ids[m++] = x;
	free(has);
	*ids_p = ids;
	return m;
}

int32_t shd_epoch_who(struct shd_client *c, char *buf, size_t n)
{
	struct shd_daemon *d = c->d;
	struct shd_job *j = c->job;
	size_t o = 0;
	buf[0] = '\0';
	if (!j || (c->epoch != SHD_EPOCH_P1 && c->epoch != SHD_EPOCH_P2)) {
		put(buf, n, &o, "its phase has completed meanwhile");
		return 0;
	}
	bool p2 = c->epoch == SHD_EPOCH_P2;
	const char *verb = p2 ? "not finished its deliveries (phase 2)" : "not entered it";
	int32_t *late = malloc((size_t)j->world * sizeof(*late)), k = 0;
	if (!late) {
		put(buf, n, &o, "out of memory");
		return 0;
	}
	/* this node's ranks: exact */
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		const struct shd_client *x = shd_jobtab_client(j, r);
		if (x && x->epoch != (p2 ? SHD_EPOCH_P2 : SHD_EPOCH_P1))
			late[k++] = r;
	}
	int32_t here = k;
	if (k) {
		put(buf, n, &o, "rank%s ", k == 1 ? "" : "s");
		put_ranks(buf, n, &o, late, k);
		put(buf, n, &o, " (on this node) ha%s %s", k == 1 ? "s" : "ve", verb);
	}
	/* the other nodes, through the tree: a child's subtree that has not
	 * reported is late somewhere; a count sent up waits for the rest */
	uint32_t *ids = NULL, m = d->net && epoch_tree(d, j) ? tree_ids(d, j, &ids) : 0;
	unsigned ph = p2 ? 1 : 0;
	bool sent = p2 ? j->p2_sent : j->p1_sent;
	for (unsigned ci = 0; ci < j->tree_nchild && m; ci++) {
		uint32_t child = j->tree_child[ci], cidx = 0;
		bool in = false;
		for (unsigned u = 0; u < j->n_up[ph]; u++)
			in |= j->up[ph][u].node == child;
		if (in)
			continue;
		while (cidx < m && ids[cidx] != child)
			cidx++;
		k = 0;
		for (int32_t r = 0; r < j->world && cidx < m; r++) {
			uint32_t node = shd_jobtab_node(j, r), idx = 0;
			while (idx < m && ids[idx] != node)
				idx++;
			while (idx < m && idx > cidx)
				idx = (idx - 1) / 2;
			if (idx == cidx)
				late[k++] = r;
		}
		const char *host = shd_net_peer_host(d, child);
		put(buf, n, &o, "%sranks ", o ? "; " : "");
		put_ranks(buf, n, &o, late, k);
		put(buf, n, &o, " (the subtree of node %u%s%.64s) have not all %s", child,
		    host ? " " : "", host ? host : "", p2 ? "finished phase 2" : "entered it");
	}
	if (sent && j->tree_parent != SHD_NODE_NONE) {
		const char *host = shd_net_peer_host(d, j->tree_parent);
		put(buf, n, &o, "%severy rank of this node's part of the job is in; the other nodes' "
		    "are not (waiting for node %u%s%.64s)", o ? "; " : "", j->tree_parent,
		    host ? " " : "", host ? host : "");
	}
	if (!o)
		put(buf, n, &o, "every rank this node knows of has %s", p2 ? "finished phase 2" :
		    "entered it");
	free(ids);
	free(late);
	return here;
}

/* A failed phase: an ERROR naming the culprit (the client's waiter takes
 * its errno and text), else the plain answer. */
/* The reason a failed epoch gives its ranks, in why (empty: none). */
static void failure_why(struct shd_client *c, int status, char *why, size_t len)
{
	why[0] = '\0';
	if (status < 0 && c->job && c->epoch_failed && c->job->fail_why[0])
		snprintf(why, len, "%s", c->job->fail_why); /* the culprit then, not now */
	else if (status < 0 && c->job)
		shd_epoch_why(c->d, c->job, status, why, len);
	c->epoch_failed = false;
}

/* Phase 1's answer.  A failure with a reason: the FLUSH_DONE (its drops,
 * flag SHF_FLUSH_DONE_WHY) goes first, then the ERROR that ends the
 * client's wait with the reason; so the drops are in the client's stats
 * when its shf_epoch() returns, never lost or late. */
static void reply_p1(struct shd_client *c, int status)
{
	char why[300];
	failure_why(c, status, why, sizeof(why));
	struct shf_ipc_flush_done m = {c->mark_id, c->report_dead, c->report_down, status,
				       why[0] ? SHF_FLUSH_DONE_WHY : 0};
	c->report_dead = c->report_down = 0;
	shd_client_send(c, SHF_IPC_FLUSH_DONE, (uint32_t)c->mark_id, &m, sizeof(m));
	if (why[0])
		shd_client_error(c, (uint32_t)c->mark_id, status, "%s", why);
}

static void reply_p2(struct shd_client *c, int status)
{
	struct shf_ipc_epoch_done m = {c->epoch_id, DRAINED, status};
	char why[300];
	failure_why(c, status, why, sizeof(why));
	if (why[0]) {
		shd_client_error(c, c->epoch_ipc_id, status, "%s", why);
		return;
	}
	shd_client_send(c, SHF_IPC_EPOCH_DONE, c->epoch_ipc_id, &m, sizeof(m));
}

void shd_epoch_fail_all(struct shd_job *j, int err)
{
	/* A rank draining (DELIVER) learns the failure at its phase 2: it is
	 * told the culprits and the error of this first failure, not those of
	 * then (a rank that left after its own failed epoch is no culprit). */
	bool kept = false;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		const struct shd_client *c = shd_jobtab_client(j, r);
		kept |= c && c->epoch_failed;
	}
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		struct shd_client *c = shd_jobtab_client(j, r);
		if (!c)
			continue;
		if (c->epoch == SHD_EPOCH_DELIVER && !c->epoch_failed) {
			if (!kept) {
				shd_epoch_why(c->d, j, err, j->fail_why, sizeof(j->fail_why));
				j->fail_err = err;
				kept = true;
			}
			c->epoch_failed = true;
		}
		if (c->epoch == SHD_EPOCH_P1)
			reply_p1(c, err);
		else if (c->epoch == SHD_EPOCH_P2)
			reply_p2(c, err);
		/* DELIVER: it will send phase 2 and get the error then */
		if (c->epoch != SHD_EPOCH_DELIVER)
			c->epoch = SHD_EPOCH_NONE;
	}
	j->p1_local = j->p2_local = 0;
	j->p1_sent = j->p2_sent = j->p2_open = false;
	j->n_up[0] = j->n_up[1] = 0;
	j->epoch_start_ns = 0;
}

/* An epoch message of j to node.  j's leaves that this node holds in their
 * window (jobhome.c) go first: no epoch message passes a leave of the
 * same job from the same node, as when each leave went at once (the
 * EPOCH_ABORT of a rank that left mid-epoch arrives after its leave, so
 * the receiver knows the culprit it names). */
static void epoch_send(struct shd_daemon *d, uint32_t node, unsigned kind, struct shd_job *j,
		       uint64_t epoch, uint32_t phase, int32_t count)
{
	if (d->job_ev)
		d->job_ev->leaves_now(d, j, false);
	shd_net_epoch(d, node, kind, j, epoch, phase, count);
}

/* An abort to every tree neighbour of j but `from`. */
static void abort_flood(struct shd_daemon *d, struct shd_job *j, int err, uint32_t from)
{
	if (!d->net || !epoch_tree(d, j))
		return;
	if (j->tree_parent != SHD_NODE_NONE && j->tree_parent != from)
		epoch_send(d, j->tree_parent, ABORT, j, j->abort_epoch, PLACED, -err);
	for (unsigned i = 0; i < j->tree_nchild; i++)
		if (j->tree_child[i] != from)
			epoch_send(d, j->tree_child[i], ABORT, j, j->abort_epoch, PLACED, -err);
}

void shd_epoch_left_here(struct shd_daemon *d, struct shd_job *j, enum shd_epoch_state was)
{
	bool pending = was != SHD_EPOCH_NONE || epoch_pending(j);
	shd_epoch_fail_all(j, shd_epoch_gone_err(j));
	/* a job that lost a node: the rank's JOB_LEAVE, which goes to every
	 * node of the job at the end of its window (jobhome.c), carries the
	 * loss and fails the epoch there with the loss's error (an abort
	 * would say -ESRCH) */
	if (!pending || j->epoch_abort || j->lost)
		return;
	/* the other nodes cannot complete it without this rank: tell them */
	j->epoch_abort = -ESRCH;
	j->abort_epoch = j->epoch_seq + 1;
	abort_flood(d, j, -ESRCH, SHD_NODE_NONE);
}

/* The phase is complete: answer the local ranks, pass it down the tree. */
static void epoch_complete(struct shd_daemon *d, struct shd_job *j, uint32_t phase)
{
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		struct shd_client *c = shd_jobtab_client(j, r);
		if (!c)
			continue;
		if (phase == PLACED && c->epoch == SHD_EPOCH_P1) {
			c->epoch = SHD_EPOCH_DELIVER;
			c->st.flushes++;
			reply_p1(c, 0);
		} else if (phase == DRAINED && c->epoch == SHD_EPOCH_P2) {
			c->epoch = SHD_EPOCH_NONE;
			c->st.epochs++;
			reply_p2(c, 0);
		}
	}
	if (d->net)
		for (unsigned i = 0; i < j->tree_nchild; i++)
			epoch_send(d, j->tree_child[i], DOWN, j, j->epoch_seq + 1, phase, j->world);
	if (phase == PLACED) {
		j->p1_local = 0;
		j->p1_sent = false;
		j->n_up[0] = 0;
		j->p2_open = true;
		return;
	}
	j->p2_local = 0;
	j->p2_sent = false;
	j->n_up[1] = 0;
	j->p2_open = false;
	j->epoch_seq++;
	d->st.epochs++;
	if (j->epoch_start_ns) {
		uint64_t ns = shd_now_ns() - j->epoch_start_ns;
		j->epoch_start_ns = 0;
		d->st.epoch_ns_total += ns;
		if (ns > d->st.epoch_ns_max)
			d->st.epoch_ns_max = ns;
		shd_debug("job %s: epoch %llu done in %.3f ms", j->name,
			  (unsigned long long)j->epoch_seq, (double)ns / 1e6);
	}
}

/*
 * Once all local ranks and every child's subtree are in: a count up to the
 * parent, or at the root (when it is the world) the phase's completion.
 */
static void epoch_check(struct shd_daemon *d, struct shd_job *j, uint32_t phase)
{
	int32_t local = phase == PLACED ? j->p1_local : j->p2_local;
	bool *sent = phase == PLACED ? &j->p1_sent : &j->p2_sent;
	if (*sent || local != j->local || local <= 0 || !epoch_tree(d, j))
		return;
	unsigned k = phase - 1, got = 0;
	for (unsigned i = 0; i < j->n_up[k]; i++) {
		unsigned c;
		for (c = 0; c < j->tree_nchild; c++)
			if (j->up[k][i].node == j->tree_child[c])
				break;
		if (c == j->tree_nchild) {
			/* came before the tree was known, from a node that is no
			 * child here: its count does not belong */
			shd_warn("job %s: epoch count from node %u, not a child of this node: ignored",
				 j->name, j->up[k][i].node);
			j->up[k][i--] = j->up[k][--j->n_up[k]];
			continue;
		}
		got |= 1u << c;
	}
	if (got != (1u << j->tree_nchild) - 1)
		return;
	int32_t total = shd_epoch_subtree_count(j, phase);
	if (j->tree_parent != SHD_NODE_NONE) {
		if (d->net)
			epoch_send(d, j->tree_parent, UP, j, j->epoch_seq + 1, phase, total);
		*sent = true;
		return;
	}
	if (total == j->world)
		epoch_complete(d, j, phase);
	/* else ranks left: their leave fails the epoch (job.c) */
}

void shd_epoch_mark(struct shd_client *c)
{
	struct shd_job *j = c->job;
	if (!j || c->state != SHD_SESS_ACTIVE)
		return;
	if (j->gone || j->deny || aborted(j)) {
		reply_p1(c, shd_epoch_gone_err(j));
		return;
	}
	if (!j->epoch_start_ns)
		j->epoch_start_ns = shd_now_ns();
	c->epoch = SHD_EPOCH_P1;
	j->p1_local++;
	epoch_check(c->d, j, PLACED);
}

void shd_epoch_phase2(struct shd_client *c, uint32_t ipc_id, uint64_t id)
{
	struct shd_job *j = c->job;
	c->epoch_ipc_id = ipc_id;
	c->epoch_id = id;
	if (j->gone || j->deny || aborted(j) || c->epoch_failed) {
		c->epoch = SHD_EPOCH_NONE;
		reply_p2(c, c->epoch_failed ? j->fail_err : shd_epoch_gone_err(j));
		return;
	}
	c->epoch = SHD_EPOCH_P2;
	j->p2_local++;
	epoch_check(c->d, j, DRAINED);
}

void shd_epoch_remote(struct shd_daemon *d, struct shd_job *j, uint32_t node, unsigned kind,
		      uint64_t epoch, uint32_t phase, int32_t count)
{
	if (phase != PLACED && phase != DRAINED)
		return;
	if (node >= d->n_nodes || count < 0 || count > j->world) {
		shd_warn("job %s: epoch %s phase %u count %d from node %u out of range", j->name,
			 shf_wire_kind_name(kind), phase, count, node);
		return;
	}
	unsigned k = phase - 1;
	switch (kind) {
	case UP:
		for (unsigned i = 0; i < j->n_up[k]; i++)
			if (j->up[k][i].node == node) {
				shd_warn("job %s: a second epoch count for phase %u from node %u: ignored",
					 j->name, phase, node);
				return;
			}
		if (j->n_up[k] == 2) {
			shd_warn("job %s: epoch count from node %u: two children already counted: ignored",
				 j->name, node);
			return;
		}
		if (!j->epoch_start_ns)
			j->epoch_start_ns = shd_now_ns();
		j->up[k][j->n_up[k]].node = node;
		j->up[k][j->n_up[k]++].count = count;
		epoch_check(d, j, phase);
		return;
	case DOWN: {
		bool *sent = phase == PLACED ? &j->p1_sent : &j->p2_sent;
		if (!epoch_tree(d, j) || node != j->tree_parent || !*sent || count != j->world) {
			shd_warn("job %s: epoch completion of phase %u from node %u, which is not "
				 "expected here: ignored", j->name, phase, node);
			return;
		}
		epoch_complete(d, j, phase);
		return;
	}
	case ABORT:
		if (j->epoch_abort)
			return; /* seen (the flood reaches a node once per edge) */
		if (count != ESRCH && count != EHOSTDOWN)
			count = ESRCH;
		shd_debug("job %s: epoch %llu aborted by node %u (%s)", j->name,
			  (unsigned long long)epoch, node, count == ESRCH ? "ESRCH" : "EHOSTDOWN");
		j->epoch_abort = -count;
		j->abort_epoch = epoch;
		/* an abort of a later epoch than the one pending here (the
		 * sender completed ours and failed its next): ours completes, the
		 * next fails at entry */
		if (aborted(j))
			shd_epoch_fail_all(j, shd_epoch_gone_err(j));
		abort_flood(d, j, -count, node);
		return;
	default: return;
	}
}
