/* SPDX-License-Identifier: MIT */
/*
 * daemon/jobhome.c - job start through a home node (jobhome.h).
 *
 * Two roles, often on different nodes:
 *   - a job node (ranks of the job registered here) announces its local
 *     ranks to the job's home, waits for the home's map before READY, and
 *     sends its leaves (10 ms windows) to its homes and, once confirmed,
 *     to the job's nodes; the window that ends its part to the home only;
 *   - the home keeps a record per job it is the home of (struct shd_home):
 *     the owner and world of the first announcement, each node's ranks as
 *     sorted ranges.  A complete, consistent record is confirmed once: the
 *     map goes to every node of the job.  A record that names two owners or
 *     two worlds is denied: both sides hear of it (JOB_DENY), and it never
 *     confirms.  It relays the last leaves of the job's nodes to the nodes
 *     its map went to (JOB_LEAVE RELAY, then FORWARDED).
 * The home is the node with the highest hash of (job, node) among the nodes
 * this daemon sees up, itself included (rendezvous hashing): nodes that see
 * the same set pick the same home, and a node that comes or goes moves only
 * the jobs it wins or held.  When a node's pick changes (a session began or
 * ended), it announces its ranks again to the new home, and an unconfirmed
 * job withdraws them from the old one; views converge with the sessions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/job.h"
#include "daemon/jobhome.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/net/fabric.h"
#include "daemon/net/net.h"
#include "daemon/net/tx.h"
#include "daemon/sched.h"
#include "proto/wire.h"

/* One node's ranks of a job, at the home. */
struct home_node {
	uint32_t node;
	uint32_t n;                  /* ranges */
	struct shf_wire_range *rg;   /* sorted, disjoint, never adjacent */
};

/* A job this node is the home of. */
struct shd_home {
	struct shd_list link;        /* in d->homes */
	char name[SHF_JOB_MAX];
	uint64_t hash;
	int32_t world;               /* of the first announcement */
	uint32_t uid;                /* owner of the first announcement */
	int deny;                    /* 0, or the conflict that failed it (-EACCES, -EINVAL) */
	bool confirmed;              /* the map went out (or a node announced it running) */
	int64_t ranks;               /* ranks held by its nodes */
	uint32_t n;
	struct home_node *nodes;     /* [n] */
	/* leaves it relays (JOB_LEAVE RELAY: a node's part ended): forwarded
	 * to every node its map went to, at most FORWARD_LINGER_MS after the
	 * first, or at once when the record empties */
	uint32_t *mnodes;            /* [n_mnodes]: the nodes its map went to */
	uint32_t n_mnodes;
	struct shf_wire_leave_ent *fw; /* [n_fw] */
	uint32_t n_fw, cap_fw;
	uint64_t fw_due_ns;
};

/* Leaves this node sent through a home (its part of the job ended), kept
 * until the home's forward names them (they reached it), or sent to the
 * job's nodes directly if the session with the home ends first. */
struct shd_relay_pend {
	uint64_t hash;
	int32_t world;
	uint32_t home;
	uint32_t *nodes;             /* [nn]: the job's other nodes and homes */
	uint32_t nn;
	struct shf_wire_leave_ent *e; /* [ne] */
	uint32_t ne;
};

static struct shd_ratelimit rl_home = SHD_RATELIMIT_INIT(1000, 5);

/* ------------------------------------------------------------- the pick */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* The job's home as this node sees the set: O(nodes) hashes. */
static uint32_t home_pick(struct shd_daemon *d, uint64_t hash)
{
	uint32_t best = d->node_id;
	uint64_t bs = mix64(hash ^ mix64((uint64_t)d->node_id + 1));
	if (!d->net)
		return best;
	for (uint32_t i = 0; i < d->n_nodes; i++) {
		if (i == d->node_id || !shd_net_peer_is_up(d, i))
			continue;
		uint64_t s = mix64(hash ^ mix64((uint64_t)i + 1));
		if (s > bs || (s == bs && i < best)) {
			bs = s;
			best = i;
		}
	}
	return best;
}

/* ------------------------------------------------------------- sending */

static void home_join(struct shd_daemon *d, uint32_t from, const char *name, int32_t world,
		      uint32_t uid, uint32_t flags, const struct shf_wire_range *rg, uint32_t nr);
static void home_leave(struct shd_daemon *d, uint32_t from, uint64_t hash, int32_t world,
		       const struct shf_wire_leave_ent *e, bool relay);
static void map_apply(struct shd_daemon *d, uint32_t from, const char *name, uint64_t hash,
		      int32_t world, uint32_t uid, uint32_t flags,
		      const struct shf_wire_map_ent *e, uint32_t ne);
static void deny_apply(struct shd_daemon *d, uint64_t hash, int reason, uint32_t other,
		       uint32_t uid, int32_t world);
static void leaves_now(struct shd_daemon *d, struct shd_job *j, bool may_relay);
static void home_forward(struct shd_daemon *d, struct shd_home *h);
static struct shd_home *home_find(struct shd_daemon *d, uint64_t hash);

/* Encode items [off, off + k) of a message that carries n items (the last
 * part: off + k == n) to node into buf (cap bytes): its length or a
 * negative errno. */
typedef long (*part_enc_fn)(const void *ctx, uint8_t *buf, uint32_t cap, uint32_t from,
			    uint32_t node, uint32_t off, uint32_t k, uint32_t n);

/*
 * n items of `item` bytes after a `fixed` part to node, in as few messages
 * of at most cap bytes (shd_net_msg_max() at most) as they fit, or, when no
 * pool buffer is free, of the fabric's small copy.  Each message sent
 * counts in *sent.  Returns the items that went: fewer than n when node
 * went down (it loses what they were about anyway) or out of memory.
 */
static uint32_t send_parts(struct shd_daemon *d, uint32_t node, uint32_t n, uint32_t fixed,
			   uint32_t item, uint32_t cap, part_enc_fn enc, const void *ctx,
			   uint64_t *sent, const char *what)
{
	if (cap > shd_net_msg_max(d))
		cap = shd_net_msg_max(d);
	uint8_t *buf = malloc(cap);
	if (!buf) {
		shd_err("out of memory: %s not sent to node %u", what, node);
		return 0;
	}
	uint32_t off = 0;
	bool small = false;
	while (off < n) {
		uint32_t max = small ? SHD_FABRIC_SMALL : cap;
		uint32_t k = max > fixed + item ? (max - fixed) / item : 1;
		if (k > n - off)
			k = n - off;
		long len = enc(ctx, buf, cap, d->node_id, node, off, k, n);
		int r = len > 0 ? shd_net_send_msg(d, node, buf, (size_t)len) : (int)len;
		if (r == -ENOBUFS && !small) {
			small = true;
			continue;
		}
		if (r < 0) {
			shd_debug("%s to node %u not sent: %s", what, node, strerror(-r));
			break;
		}
		(*sent)++;
		off += k;
	}
	free(buf);
	return off;
}

/* Why rank (-1: every local rank) of j (NULL: none here) leaves, fixed
 * when it leaves: a job that lost a node names it (one cause, one error on
 * every node: events.c, on_left); a rank that left after another had is no
 * culprit of the job's failures (-ESRCH); else 0. */
static struct shf_wire_leave_ent leave_why(const struct shd_daemon *d, const struct shd_job *j,
					   int32_t rank)
{
	bool lost = j && j->lost;
	bool after = j && j->ready && rank >= 0 && !shd_job_is_culprit(j, rank);
	return (struct shf_wire_leave_ent){rank, 1, lost ? -EHOSTDOWN : after ? -ESRCH : 0,
					   lost ? j->lost_node : SHF_WIRE_NODE_NONE, d->node_id};
}

/* A JOB_LEAVE stays under rxm's eager limit (with room for a FWD header):
 * the fabric then completes it in the order posted relative to the epoch
 * messages sent after it (docs/protocol-wire.md, "A held leave and the
 * order of messages"); 813 ranges. */
#define LEAVE_MSG_MAX (SHD_FABRIC_RXM_EAGER - 64u)

struct leave_parts {
	const struct shf_wire_leave *l;
	const struct shf_wire_leave_ent *e;
};

static long leave_enc(const void *ctx, uint8_t *buf, uint32_t cap, uint32_t from, uint32_t node,
		      uint32_t off, uint32_t k, uint32_t n)
{
	(void)n;
	const struct leave_parts *p = ctx;
	return shf_wire_enc_leave(buf, cap, from, node, p->l, p->e + off, k);
}

/* JOB_LEAVE of e[0..ne) (sorted, disjoint, inside the world) to node: one
 * message, or several if they do not fit one (flags: enum
 * shf_wire_leave_flag).  false: node is down, not everything went. */
static bool leave_send(struct shd_daemon *d, uint32_t node, uint64_t hash, int32_t world,
		       const struct shf_wire_leave_ent *e, uint32_t ne, uint32_t flags)
{
	if (node == d->node_id) {
		for (uint32_t i = 0; i < ne; i++)
			home_leave(d, d->node_id, hash, world, &e[i], flags & SHF_WIRE_LEAVE_RELAY);
		return true;
	}
	struct shf_wire_leave l = {.job_hash = hash, .world = world, .flags = flags};
	struct leave_parts p = {&l, e};
	return send_parts(d, node, ne, SHF_WIRE_LEAVE_FIXED, SHF_WIRE_LEAVE_ENT_BYTES,
			  LEAVE_MSG_MAX, leave_enc, &p, &d->st.leave_msgs_out, "leaves") == ne;
}

/* Every rank of this node's side of a job (hash, world) leaves at once:
 * one entry, the whole world (the receiver takes the ranks it holds of
 * this node), to node. */
static void leave_all_send(struct shd_daemon *d, uint32_t node, uint64_t hash, int32_t world,
			   const struct shd_job *j, uint32_t flags)
{
	struct shf_wire_leave_ent e = leave_why(d, j, -1);
	e.first = 0;
	e.count = world;
	leave_send(d, node, hash, world, &e, 1, flags);
}

/* The local ranks of j as ranges (*nr_p of them; NULL and 0: none or no
 * memory). */
static struct shf_wire_range *local_ranges(struct shd_daemon *d, const struct shd_job *j,
					   uint32_t *nr_p)
{
	*nr_p = 0;
	if (j->local <= 0)
		return NULL;
	struct shf_wire_range *rg = malloc(sizeof(*rg) * (size_t)j->local);
	if (!rg) {
		shd_err("out of memory announcing job %s", j->name);
		return NULL;
	}
	uint32_t nr = 0, seen = 0;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world && seen < (uint32_t)j->local;
	     r = shd_jobtab_next(j, r + 1)) {
		if (shd_jobtab_node(j, r) != d->node_id || !shd_jobtab_client(j, r))
			continue;
		seen++;
		if (nr && rg[nr - 1].first + rg[nr - 1].count == r)
			rg[nr - 1].count++;
		else
			rg[nr++] = (struct shf_wire_range){r, 1};
	}
	*nr_p = nr;
	return rg;
}

struct join_parts {
	const struct shf_wire_join *jn;
	const struct shf_wire_range *rg;
};

static long join_enc(const void *ctx, uint8_t *buf, uint32_t cap, uint32_t from, uint32_t node,
		     uint32_t off, uint32_t k, uint32_t n)
{
	(void)n;
	const struct join_parts *p = ctx;
	return shf_wire_enc_join(buf, cap, from, node, p->jn, p->rg + off, k);
}

/* JOB_JOIN of j's local ranks to home (several if they do not fit one; a
 * home that went down: the pick moves at the peers step). */
static void join_send(struct shd_daemon *d, struct shd_job *j, uint32_t home)
{
	uint32_t nr;
	struct shf_wire_range *rg = local_ranges(d, j, &nr);
	uint32_t flags = j->ready ? SHF_WIRE_JOIN_RUNNING : 0;
	if (nr && home == d->node_id) {
		home_join(d, d->node_id, j->name, j->world, (uint32_t)j->uid, flags, rg, nr);
	} else if (nr) {
		struct shf_wire_join jn = {.world = j->world, .uid = (uint32_t)j->uid, .flags = flags};
		snprintf(jn.name, sizeof(jn.name), "%s", j->name);
		struct join_parts p = {&jn, rg};
		send_parts(d, home, nr, SHF_WIRE_JOIN_FIXED, SHF_WIRE_RANGE_BYTES, UINT32_MAX,
			   join_enc, &p, &d->st.join_msgs_out, "join");
	}
	free(rg);
}

struct map_parts {
	const struct shf_wire_map *m;
	const struct shf_wire_map_ent *e;
	bool final;
};

static long map_enc(const void *ctx, uint8_t *buf, uint32_t cap, uint32_t from, uint32_t node,
		    uint32_t off, uint32_t k, uint32_t n)
{
	const struct map_parts *p = ctx;
	struct shf_wire_map m = *p->m;
	m.flags = p->final && off + k == n ? SHF_WIRE_MAP_FINAL : 0;
	return shf_wire_enc_map(buf, cap, from, node, &m, p->e + off, k);
}

/* JOB_MAP of e[0..ne) to node (the last part FINAL when final; a node that
 * went down loses its ranks everywhere anyway). */
static void map_send(struct shd_daemon *d, const struct shd_home *h, uint32_t node,
		     const struct shf_wire_map_ent *e, uint32_t ne, bool final)
{
	if (node == d->node_id) {
		map_apply(d, d->node_id, h->name, h->hash, h->world, h->uid,
			  final ? SHF_WIRE_MAP_FINAL : 0, e, ne);
		return;
	}
	struct shf_wire_map m = {.world = h->world, .uid = h->uid};
	snprintf(m.name, sizeof(m.name), "%s", h->name);
	struct map_parts p = {&m, e, final};
	send_parts(d, node, ne, SHF_WIRE_MAP_FIXED, SHF_WIRE_MAP_ENT_BYTES, UINT32_MAX, map_enc, &p,
		   &d->st.join_msgs_out, "map");
}

static void deny_send(struct shd_daemon *d, uint32_t node, const char *name, int reason,
		      uint32_t other, uint32_t uid, int32_t world)
{
	if (node == d->node_id) {
		deny_apply(d, shf_wire_job_hash(name), reason, other, uid, world);
		return;
	}
	uint8_t buf[SHF_WIRE_DENY_BYTES];
	struct shf_wire_deny dn = {.reason = reason, .other_node = other, .other_uid = uid,
				   .other_world = world};
	snprintf(dn.name, sizeof(dn.name), "%s", name);
	long len = shf_wire_enc_deny(buf, sizeof(buf), d->node_id, node, &dn);
	if (len > 0 && shd_net_send_msg(d, node, buf, (size_t)len) == 0)
		d->st.join_msgs_out++;
}

/* ------------------------------------------------------------- job nodes */

/* Registrations of one node's ranks coalesce into one JOB_JOIN: the first
 * opens a window of JOIN_LINGER_MS, and what registered in it goes at its
 * end.  Ranks started together (a job's launch) cost one message per node;
 * each later window one more.  The latency it adds (10 ms) is small
 * against a process start. */
#define JOIN_LINGER_MS 10u

static void join_timer_fired(int fd, void *arg)
{
	(void)fd;
	shd_sched_pass(arg); /* the network step sends what is due */
}

/* The network step runs again in delay_ms (0: at once) or earlier. */
static void timer_in(struct shd_daemon *d, uint32_t delay_ms)
{
	if (!delay_ms || !d->loop) {
		shd_sched_pass(d);
		return;
	}
	if (!d->join_timer)
		d->join_timer = shd_loop_timer(d->loop, join_timer_fired, d);
	if (!d->join_timer) {
		shd_sched_pass(d); /* no timer: at once rather than never */
		return;
	}
	if (!shd_ev_armed(d->join_timer))
		shd_ev_arm(d->join_timer, (uint64_t)delay_ms * 1000u);
}

/* Announce j at now + delay_ms (at once: 0) or earlier if already due. */
static void mark(struct shd_daemon *d, struct shd_job *j, uint32_t delay_ms)
{
	uint64_t due = shd_now_ns() + (uint64_t)delay_ms * 1000000u;
	if (!j->join_dirty) {
		j->join_dirty = true;
		d->joins_dirty++;
		j->join_due_ns = due;
	} else if (due < j->join_due_ns) {
		j->join_due_ns = due;
	}
	timer_in(d, delay_ms);
}

void shd_home_announce(struct shd_daemon *d, struct shd_job *j)
{
	if (d->net)
		mark(d, j, JOIN_LINGER_MS);
}

/* j's local ranks go to home h from now on. */
static void home_move(struct shd_daemon *d, struct shd_job *j, uint32_t h)
{
	if (j->home != SHD_NODE_NONE && j->home != h && !j->ready) {
		/* withdraw from the old home: its record must not count them */
		leaves_now(d, j, false); /* what left before goes first */
		/* a withdrawal, not a leave: the old home may be a node of the
		 * job that took the map meanwhile, and its ranks live on */
		leave_all_send(d, j->home, j->hash, j->world, j, SHF_WIRE_LEAVE_WITHDRAW);
		for (uint8_t i = 0; i < j->n_homes; i++)
			if (j->homes[i] == j->home) {
				j->homes[i] = j->homes[--j->n_homes];
				break;
			}
	}
	j->home = h;
	for (uint8_t i = 0; i < j->n_homes; i++)
		if (j->homes[i] == h)
			return;
	if (j->n_homes == sizeof(j->homes) / sizeof(j->homes[0])) {
		/* the oldest is forgotten: it keeps a record until those nodes
		 * leave its view (docs/protocol-wire.md, "Job start") */
		memmove(j->homes, j->homes + 1, sizeof(j->homes) - sizeof(j->homes[0]));
		j->n_homes--;
	}
	j->homes[j->n_homes++] = h;
}

void shd_home_flush(struct shd_daemon *d)
{
	if (!d->joins_dirty && !d->leaves_dirty && !d->forwards_dirty)
		return;
	struct shd_list *q, *t;
	uint64_t now = shd_now_ns(), next = 0;
	shd_list_for_each_safe(q, t, &d->homes) {
		struct shd_home *h = shd_container_of(q, struct shd_home, link);
		if (!h->n_fw)
			continue;
		if (h->fw_due_ns <= now)
			home_forward(d, h);
		else if (!next || h->fw_due_ns < next)
			next = h->fw_due_ns;
	}
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		if (j->n_lv) {
			if (j->leave_due_ns <= now)
				leaves_now(d, j, true);
			else if (!next || j->leave_due_ns < next)
				next = j->leave_due_ns;
		}
		if (!j->join_dirty)
			continue;
		if (j->join_due_ns > now) {
			if (!next || j->join_due_ns < next)
				next = j->join_due_ns;
			continue;
		}
		j->join_dirty = false;
		d->joins_dirty--;
		if (j->local <= 0 || j->deny)
			continue;
		/* a rank that left and registered again: its leave goes
		 * before the join that names it again */
		leaves_now(d, j, false);
		uint32_t h = home_pick(d, j->hash);
		home_move(d, j, h);
		join_send(d, j, h);
	}
	if (next && d->join_timer)
		shd_ev_arm(d->join_timer, (next - now + 999) / 1000);
}

/*
 * Leaves of one node's ranks coalesce like its registrations: the first
 * leave of a job opens a window of LEAVE_LINGER_MS, and the leaves held in
 * it go at its end as one JOB_LEAVE to each node that is to hear them (the
 * job's homes and, once confirmed, its other nodes), in ranges of ranks,
 * each rank with the reason it had when it left (leave_why).  r ranks of
 * a node that end together cost k - 1 messages, not r(k - 1).  The window
 * closes early, before anything that must not pass a leave sent before it
 * (docs/protocol-wire.md, "Leaves"): an epoch message of the job
 * (epoch.c), a join of the job (shd_home_flush), a withdrawal from a home
 * (home_move), the job's end here (job.c, at the reap) and the daemon's
 * stop.  A home on this node takes its leaves at once (no message).
 */
#define LEAVE_LINGER_MS 10u

/* Leaves e[0..ne) of j to every node that is to hear them, directly: its
 * homes, then its other nodes that are not homes. */
static void leaves_to_all(struct shd_daemon *d, struct shd_job *j,
			  const struct shf_wire_leave_ent *e, uint32_t ne)
{
	for (uint8_t i = 0; i < j->n_homes; i++)
		leave_send(d, j->homes[i], j->hash, j->world, e, ne, 0);
	for (uint32_t i = 0; i < j->n_jnodes; i++) {
		bool home = false;
		for (uint8_t k = 0; k < j->n_homes; k++)
			home |= j->homes[k] == j->jnodes[i];
		if (!home)
			leave_send(d, j->jnodes[i], j->hash, j->world, e, ne, 0);
	}
}

void shd_home_local_left(struct shd_daemon *d, struct shd_job *j, int32_t rank)
{
	if (!d->net)
		return;
	struct shf_wire_leave_ent e = leave_why(d, j, rank);
	if (j->n_lv == j->cap_lv) {
		uint32_t cap = j->cap_lv ? 2 * j->cap_lv : 8;
		struct shf_wire_leave_ent *g = realloc(j->lv, sizeof(*g) * cap);
		if (!g) {
			/* no room to hold it: what is held and it go now */
			shd_err("job %s: out of memory holding the leave of rank %d: sent at once",
				j->name, rank);
			leaves_now(d, j, false);
			leaves_to_all(d, j, &e, 1);
			return;
		}
		j->lv = g;
		j->cap_lv = cap;
	}
	j->lv[j->n_lv++] = e;
	if (j->n_lv > 1)
		return;
	d->leaves_dirty++;
	j->leave_due_ns = shd_now_ns() + (uint64_t)LEAVE_LINGER_MS * 1000000u;
	timer_in(d, LEAVE_LINGER_MS);
}

static int cmp_leave(const void *a, const void *b)
{
	const struct shf_wire_leave_ent *x = a, *y = b;
	if (x->first != y->first)
		return (x->first > y->first) - (x->first < y->first);
	if (x->node != y->node)
		return (x->node > y->node) - (x->node < y->node);
	if (x->reason != y->reason)
		return (x->reason > y->reason) - (x->reason < y->reason);
	return (x->lost_node > y->lost_node) - (x->lost_node < y->lost_node);
}

/* e[0..n) sorted by rank, each rank once (a rank held twice, e.g. one that
 * left, registered again and left again within one window, keeps the
 * first of its entries in cmp_leave's order), ranges of consecutive ranks
 * of one node with one reason merged: returns the entries left at the
 * front, sorted and disjoint as JOB_LEAVE wants them. */
static uint32_t leaves_compact(struct shf_wire_leave_ent *e, uint32_t n)
{
	qsort(e, n, sizeof(*e), cmp_leave);
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct shf_wire_leave_ent x = e[i];
		struct shf_wire_leave_ent *t = k ? &e[k - 1] : NULL;
		int64_t tend = t ? (int64_t)t->first + t->count : 0, xend = (int64_t)x.first + x.count;
		if (t && tend > x.first) {
			if (xend <= tend)
				continue; /* every rank of it is held already */
			x.first = (int32_t)tend;
			x.count = (int32_t)(xend - tend);
		}
		if (t && tend == x.first && t->node == x.node && t->reason == x.reason &&
		    t->lost_node == x.lost_node && xend - t->first <= INT32_MAX) {
			t->count = (int32_t)(xend - t->first);
			continue;
		}
		e[k++] = x;
	}
	return k;
}

/* e[0..ne) into j's history of departed local ranks (JOB_LEAVE_ASK). */
static void hist_add(struct shd_job *j, const struct shf_wire_leave_ent *e, uint32_t ne)
{
	struct shf_wire_leave_ent *g = realloc(j->hist, sizeof(*g) * ((size_t)j->n_hist + ne));
	if (!g) {
		shd_err("job %s: out of memory for its departed ranks: a node that asks for them "
			"will not hear of %u range(s)", j->name, ne);
		return;
	}
	memcpy(g + j->n_hist, e, sizeof(*g) * ne);
	j->hist = g;
	j->n_hist = leaves_compact(g, j->n_hist + ne);
}

/* ------------------------------------------------- leaves through the home */

/* Leaves sent through j->relay_home wait for its forward. */
static void relay_pend_add(struct shd_daemon *d, struct shd_job *j,
			   const struct shf_wire_leave_ent *e, uint32_t ne)
{
	struct shd_relay_pend *g = realloc(d->relays, sizeof(*g) * (d->n_relays + 1));
	uint32_t *nodes = malloc(sizeof(*nodes) * ((size_t)j->n_jnodes + j->n_homes + 1));
	struct shf_wire_leave_ent *c = malloc(sizeof(*c) * ne);
	if (g)
		d->relays = g;
	if (!g || !nodes || !c) {
		/* cannot keep them: directly as well, at once */
		free(nodes);
		free(c);
		leaves_to_all(d, j, e, ne);
		return;
	}
	uint32_t nn = 0;
	for (uint32_t i = 0; i < j->n_jnodes; i++)
		nodes[nn++] = j->jnodes[i];
	for (uint8_t i = 0; i < j->n_homes; i++)
		if (j->homes[i] != d->node_id)
			nodes[nn++] = j->homes[i];
	memcpy(c, e, sizeof(*c) * ne);
	d->relays[d->n_relays++] = (struct shd_relay_pend){j->hash, j->world, j->relay_home, nodes,
							  nn, c, ne};
}

static void relay_pend_drop(struct shd_daemon *d, uint32_t i)
{
	free(d->relays[i].nodes);
	free(d->relays[i].e);
	d->relays[i] = d->relays[--d->n_relays];
}

/* The leaves of pending relay i go to the job's nodes directly after all
 * (its home's session ended, or the home could not relay them). */
static void relay_pend_direct(struct shd_daemon *d, uint32_t i)
{
	struct shd_relay_pend *r = &d->relays[i];
	char to[96];
	size_t o = 0;
	to[0] = 0;
	for (uint32_t k = 0; k < r->nn; k++) {
		if (r->nodes[k] == r->home)
			continue;
		leave_send(d, r->nodes[k], r->hash, r->world, r->e, r->ne, 0);
		if (o < sizeof(to))
			o += (size_t)snprintf(to + o, sizeof(to) - o, "%s%u", o ? "," : "",
					      r->nodes[k]);
	}
	shd_info("leaves of %u range(s) sent through home node %u go to node(s) %s directly",
		 r->ne, r->home, to[0] ? to : "(none)");
	relay_pend_drop(d, i);
}

/* This node's part of j ended: its last window to j's home only.  Its
 * other homes (the pick moved) still hear it directly. */
static bool leaves_relay(struct shd_daemon *d, struct shd_job *j,
			 const struct shf_wire_leave_ent *e, uint32_t ne)
{
	uint32_t h = j->relay_home;
	if (h == d->node_id) {
		struct shd_home *r = home_find(d, j->hash);
		if (!r || !r->n_mnodes)
			return false; /* no record to relay from (a restart) */
	}
	if (!leave_send(d, h, j->hash, j->world, e, ne, SHF_WIRE_LEAVE_RELAY))
		return false;
	for (uint8_t i = 0; i < j->n_homes; i++)
		if (j->homes[i] != h)
			leave_send(d, j->homes[i], j->hash, j->world, e, ne, 0);
	if (h != d->node_id)
		relay_pend_add(d, j, e, ne);
	return true;
}

static void leaves_now(struct shd_daemon *d, struct shd_job *j, bool may_relay)
{
	if (!j->n_lv)
		return;
	uint32_t ne = leaves_compact(j->lv, j->n_lv);
	if (j->ready)
		hist_add(j, j->lv, ne);
	/* through the home: the window that ends this node's part (nothing
	 * of the job will follow it from here), unless an epoch message
	 * waits behind it (may_relay false: it must reach each node before
	 * that message does) or a window went directly before it (the two
	 * could cross on their two ways) */
	bool relayed = may_relay && j->local == 0 && j->relay_home != SHD_NODE_NONE &&
		       !j->left_direct && leaves_relay(d, j, j->lv, ne);
	if (!relayed) {
		leaves_to_all(d, j, j->lv, ne);
		if (j->confirmed)
			j->left_direct = true;
	}
	j->n_lv = 0;
	d->leaves_dirty--;
	if (j->cap_lv > 64) {
		/* a job's end held many: give the memory back */
		free(j->lv);
		j->lv = NULL;
		j->cap_lv = 0;
	}
}

void shd_home_leaves_now(struct shd_daemon *d, struct shd_job *j, bool ending)
{
	if (d->net)
		leaves_now(d, j, ending);
}

void shd_home_leaves_all(struct shd_daemon *d)
{
	struct shd_list *q;
	if (!d->net)
		return;
	for (q = d->jobs.next; q != &d->jobs; q = q->next)
		leaves_now(d, shd_container_of(q, struct shd_job, link), false);
	while (d->n_relays)
		relay_pend_direct(d, d->n_relays - 1);
}

/* Ask every other node of j for its departed ranks, directly (and from
 * now on its leaves directly): the home that relays j's leaves to this
 * node is no more, or could not relay them. */
static void leaves_ask(struct shd_daemon *d, struct shd_job *j, uint32_t flags)
{
	uint8_t buf[SHF_WIRE_LEAVE_ASK_BYTES];
	struct shf_wire_leave_ask a = {j->hash, j->world, flags};
	for (uint32_t i = 0; i < j->n_jnodes; i++) {
		long len = shf_wire_enc_leave_ask(buf, sizeof(buf), d->node_id, j->jnodes[i], &a);
		if (len > 0 && shd_net_send_msg(d, j->jnodes[i], buf, (size_t)len) == 0)
			d->st.leave_msgs_out++;
	}
}

/* The session with node ended or began anew: leaves relayed through it,
 * or to be relayed to this node by it, may be lost. */
static void relay_lost(struct shd_daemon *d, uint32_t node)
{
	for (uint32_t i = d->n_relays; i-- > 0;)
		if (d->relays[i].home == node)
			relay_pend_direct(d, i);
	struct shd_list *q;
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		if (j->relay_home == node)
			j->relay_home = SHD_NODE_NONE;
		if (j->map_home != node || !j->confirmed)
			continue;
		j->map_home = SHD_NODE_NONE;
		shd_info("job %s: its home, node %u, relayed its nodes' last leaves: they are "
			 "asked for them directly", j->name, node);
		leaves_ask(d, j, 0);
	}
}

void shd_home_forwarded(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave *l)
{
	bool ours = false;
	for (uint32_t i = 0; i < l->nents && !ours; i++)
		ours = shf_wire_leave_entry(l, i).node == d->node_id;
	for (uint32_t i = d->n_relays; ours && i-- > 0;)
		if (d->relays[i].hash == l->job_hash && d->relays[i].home == node)
			relay_pend_drop(d, i);
}

void shd_home_on_ask(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave_ask *a)
{
	d->st.leave_msgs_in++;
	bool all = a->flags & SHF_WIRE_ASK_ALL;
	bool had = false;
	for (uint32_t i = d->n_relays; i-- > 0;) {
		if (d->relays[i].hash != a->job_hash)
			continue;
		had = true;
		if (all) {
			relay_pend_direct(d, i);
		} else {
			struct shd_relay_pend *r = &d->relays[i];
			leave_send(d, node, r->hash, r->world, r->e, r->ne, 0);
		}
	}
	struct shd_job *j = shd_jobtab_find_hash(d, a->job_hash);
	if (j) {
		/* no more through a home: every later window directly */
		j->relay_home = SHD_NODE_NONE;
		j->left_direct = true;
		if (j->n_hist && !had) {
			if (all)
				leaves_to_all(d, j, j->hist, j->n_hist);
			else
				leave_send(d, node, j->hash, j->world, j->hist, j->n_hist, 0);
		}
		return;
	}
	if (had || all)
		return;
	/* a job this node no longer has: every rank of it here left (it ended
	 * only once all had), for reasons forgotten with it */
	struct shf_wire_leave_ent e = {0, a->world, -ESRCH, SHF_WIRE_NODE_NONE, d->node_id};
	leave_send(d, node, a->job_hash, a->world, &e, 1, 0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The nodes of the map e[ne] other than this one, and `extra` unless it is
 * this one (SHD_NODE_NONE: none), sorted and each once (the blocks of an
 * expanded map name a node many times: a cyclic layout, once per rank):
 * *nn_p of them, NULL when out of memory. */
static uint32_t *map_nodes(const struct shd_daemon *d, const struct shf_wire_map_ent *e,
			   uint32_t ne, uint32_t extra, uint32_t *nn_p)
{
	uint32_t *nodes = malloc(sizeof(*nodes) * ((size_t)ne + 1));
	uint32_t nn = 0;
	if (!nodes)
		return NULL;
	for (uint32_t i = 0; i < ne; i++)
		if (e[i].node != d->node_id)
			nodes[nn++] = e[i].node;
	if (extra != SHD_NODE_NONE && extra != d->node_id)
		nodes[nn++] = extra;
	qsort(nodes, nn, sizeof(*nodes), cmp_u32);
	uint32_t u = 0;
	for (uint32_t i = 0; i < nn; i++)
		if (!u || nodes[u - 1] != nodes[i])
			nodes[u++] = nodes[i];
	*nn_p = u;
	return nodes;
}

/* Every rank of ours in the map e[ne] from `from` left before it came: one
 * leave (the whole world) to each other node of the map, and to the home. */
static void left_before_map(struct shd_daemon *d, uint32_t from, uint64_t hash, int32_t world,
			    const struct shf_wire_map_ent *e, uint32_t ne)
{
	uint32_t nn;
	uint32_t *nodes = map_nodes(d, e, ne, from, &nn);
	if (!nodes) {
		shd_err("out of memory: the job's nodes do not hear that our ranks left");
		return;
	}
	for (uint32_t i = 0; i < nn; i++)
		leave_all_send(d, nodes[i], hash, world, NULL, 0);
	free(nodes);
}

/* The home's map of a job this node has (or had) ranks of. */
static void map_apply(struct shd_daemon *d, uint32_t from, const char *name, uint64_t hash,
		      int32_t world, uint32_t uid, uint32_t flags,
		      const struct shf_wire_map_ent *e, uint32_t ne)
{
	struct shd_job *j = shd_jobtab_find_hash(d, hash);
	if (!j || j->deny) {
		/* every rank of ours left before the map came: they left for
		 * the job's nodes too (once; a later map part finds nothing) */
		if (!j && (flags & SHF_WIRE_MAP_FINAL))
			for (uint32_t i = 0; i < ne; i++)
				if (e[i].node == d->node_id) {
					left_before_map(d, from, hash, world, e, ne);
					break;
				}
		return;
	}
	if ((uint32_t)j->uid != uid || j->world != world) {
		/* the home saw another owner or world than ours: cannot be,
		 * since it takes the first announcement's; refuse all the same */
		shd_job_deny(d, j, (uint32_t)j->uid != uid ? -EACCES : -EINVAL, from, uid, world);
		return;
	}
	for (uint32_t i = 0; i < ne; i++) {
		if (e[i].node == d->node_id)
			continue;
		for (int32_t k = 0; k < e[i].count; k++)
			shd_job_remote_rank(d, j, e[i].first + k, e[i].node, true, 0);
	}
	if (!(flags & SHF_WIRE_MAP_FINAL) || j->confirmed)
		return;
	/* ranks the home counts here that left meanwhile: gone for everyone */
	int32_t *stale = NULL;
	uint32_t nstale = 0, capstale = 0;
	for (uint32_t i = 0; i < ne; i++) {
		if (e[i].node != d->node_id)
			continue;
		for (int32_t k = 0; k < e[i].count; k++) {
			int32_t r = e[i].first + k;
			if (shd_jobtab_node(j, r) != SHD_NODE_NONE)
				continue;
			if (nstale == capstale) {
				capstale = capstale ? 2 * capstale : 16;
				int32_t *s = realloc(stale, sizeof(*s) * capstale);
				if (!s)
					break;
				stale = s;
			}
			if (shd_jobtab_set(d, j, r, SHD_NODE_GONE, NULL, true, NULL, 0) == 0) {
				j->registered++;
				j->gone++;
				stale[nstale++] = r;
			}
		}
	}
	uint32_t nn;
	uint32_t *nodes = map_nodes(d, e, ne, SHD_NODE_NONE, &nn);
	if (nodes) {
		free(j->jnodes);
		j->jnodes = nodes;
		j->n_jnodes = nn;
	}
	j->confirmed = true;
	/* this node's part, when it ends, goes to the job's nodes through
	 * this home (while the session with it lasts) */
	j->map_home = j->relay_home = from;
	shd_job_check_ready(d, j);
	for (uint32_t i = 0; i < nstale; i++)
		shd_home_local_left(d, j, stale[i]);
	free(stale);
}

static void deny_apply(struct shd_daemon *d, uint64_t hash, int reason, uint32_t other,
		       uint32_t uid, int32_t world)
{
	struct shd_job *j = shd_jobtab_find_hash(d, hash);
	if (j)
		shd_job_deny(d, j, reason, other, uid, world);
}

void shd_home_on_map(struct shd_daemon *d, uint32_t node, const struct shf_wire_map *m)
{
	d->st.join_msgs_in++;
	/* one entry per block: at most world of them (shf_wire_check(): every
	 * block holds >= 1 rank, the entries' runs are disjoint inside the
	 * world) */
	uint64_t nb = 0;
	for (uint32_t i = 0; i < m->nents; i++) {
		struct shf_wire_map_ent x = shf_wire_map_entry(m, i);
		nb += ((uint64_t)x.repeat + 1) * ((uint64_t)x.again + 1);
		if (nb > (uint64_t)m->world)
			break;
	}
	struct shf_wire_map_ent *e = nb <= (uint64_t)m->world ? malloc(sizeof(*e) * nb) : NULL;
	if (!e) {
		shd_err("job %s: out of memory for the map from node %u", m->name, node);
		return;
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < m->nents; i++) {
		struct shf_wire_map_ent x = shf_wire_map_entry(m, i);
		int32_t r = x.first;
		for (uint32_t t = 0; t <= x.again; t++)
			for (uint32_t b = 0; b <= x.repeat; b++, r += x.count)
				e[k++] = (struct shf_wire_map_ent){r, x.count, x.node + b, 0, 0};
	}
	map_apply(d, node, m->name, m->job_hash, m->world, m->uid, m->flags, e, k);
	free(e);
}

void shd_home_on_deny(struct shd_daemon *d, uint32_t node, const struct shf_wire_deny *dn)
{
	(void)node;
	d->st.join_msgs_in++;
	deny_apply(d, dn->job_hash, dn->reason, dn->other_node, dn->other_uid, dn->other_world);
}

/* ------------------------------------------------------------- the home */

static struct shd_home *home_find(struct shd_daemon *d, uint64_t hash)
{
	struct shd_list *q;
	for (q = d->homes.next; q != &d->homes; q = q->next) {
		struct shd_home *h = shd_container_of(q, struct shd_home, link);
		if (h->hash == hash)
			return h;
	}
	return NULL;
}

static struct home_node *hn_find(struct shd_home *h, uint32_t node)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->nodes[i].node == node)
			return &h->nodes[i];
	return NULL;
}

static void home_free(struct shd_daemon *d, struct shd_home *h)
{
	shd_list_del(&h->link);
	if (h->n_fw)
		d->forwards_dirty--;
	free(h->fw);
	free(h->mnodes);
	for (uint32_t i = 0; i < h->n; i++)
		free(h->nodes[i].rg);
	free(h->nodes);
	free(h);
	d->st.home_jobs--;
}

void shd_home_free_all(struct shd_daemon *d)
{
	shd_ev_free(d->join_timer);
	d->join_timer = NULL;
	while (d->n_relays)
		relay_pend_drop(d, d->n_relays - 1);
	free(d->relays);
	d->relays = NULL;
	while (d->homes.next && !shd_list_empty(&d->homes))
		home_free(d, shd_container_of(d->homes.next, struct shd_home, link));
}

uint32_t shd_home_count(const struct shd_daemon *d)
{
	return (uint32_t)d->st.home_jobs;
}

/* Add [a, a + c) to hn's ranges; returns the ranks newly added (-1: no
 * memory). */
static int64_t rs_add(struct home_node *hn, int32_t a, int32_t c)
{
	int64_t lo = a, hi = (int64_t)a + c, had = 0;
	struct shf_wire_range *out = malloc(sizeof(*out) * (hn->n + 1));
	if (!out)
		return -1;
	uint32_t k = 0, i = 0;
	while (i < hn->n && (int64_t)hn->rg[i].first + hn->rg[i].count < lo)
		out[k++] = hn->rg[i++];
	while (i < hn->n && hn->rg[i].first <= hi) {
		int64_t f = hn->rg[i].first, e = f + hn->rg[i].count;
		int64_t ov = (e < (int64_t)a + c ? e : (int64_t)a + c) - (f > a ? f : a);
		if (ov > 0)
			had += ov;
		if (f < lo)
			lo = f;
		if (e > hi)
			hi = e;
		i++;
	}
	out[k++] = (struct shf_wire_range){(int32_t)lo, (int32_t)(hi - lo)};
	while (i < hn->n)
		out[k++] = hn->rg[i++];
	free(hn->rg);
	hn->rg = out;
	hn->n = k;
	return c - had;
}

/* Take the ranks [a, a + c) out of hn's ranges: returns how many were
 * there (0 and nothing changed when out of memory: the record only ends
 * later). */
static int64_t rs_del(struct home_node *hn, int32_t a, int32_t c)
{
	int64_t lo = a, hi = (int64_t)a + c, gone = 0;
	struct shf_wire_range *out = malloc(sizeof(*out) * (hn->n + 1));
	if (!out)
		return 0;
	uint32_t k = 0;
	for (uint32_t i = 0; i < hn->n; i++) {
		int64_t f = hn->rg[i].first, e = f + hn->rg[i].count;
		if (e <= lo || f >= hi) {
			out[k++] = hn->rg[i];
			continue;
		}
		gone += (e < hi ? e : hi) - (f > lo ? f : lo);
		if (f < lo)
			out[k++] = (struct shf_wire_range){(int32_t)f, (int32_t)(lo - f)};
		if (e > hi)
			out[k++] = (struct shf_wire_range){(int32_t)hi, (int32_t)(e - hi)};
	}
	free(hn->rg);
	hn->rg = out;
	hn->n = k;
	return gone;
}

/* The node (not `not`) of another side of h, for a refusal's text. */
static uint32_t other_node(const struct shd_home *h, uint32_t not)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->nodes[i].node != not)
			return h->nodes[i].node;
	return SHD_NODE_NONE;
}

/* Is any rank of [a, a + c) held by a node other than node? (*who_p: one) */
static bool held_elsewhere(const struct shd_home *h, uint32_t node, int32_t a, int32_t c,
			   uint32_t *who_p)
{
	for (uint32_t i = 0; i < h->n; i++) {
		if (h->nodes[i].node == node)
			continue;
		for (uint32_t k = 0; k < h->nodes[i].n; k++) {
			struct shf_wire_range r = h->nodes[i].rg[k];
			if ((int64_t)r.first < (int64_t)a + c && (int64_t)r.first + r.count > a) {
				*who_p = h->nodes[i].node;
				return true;
			}
		}
	}
	return false;
}

static int cmp_ent_first(const void *a, const void *b)
{
	int32_t x = ((const struct shf_wire_map_ent *)a)->first;
	int32_t y = ((const struct shf_wire_map_ent *)b)->first;
	return (x > y) - (x < y);
}

/* The whole map of h (sorted by rank): *ne_p entries, NULL on no memory. */
static struct shf_wire_map_ent *map_of(const struct shd_home *h, uint32_t *ne_p)
{
	uint32_t ne = 0;
	for (uint32_t i = 0; i < h->n; i++)
		ne += h->nodes[i].n;
	struct shf_wire_map_ent *e = malloc(sizeof(*e) * (ne ? ne : 1));
	if (!e)
		return NULL;
	uint32_t k = 0;
	for (uint32_t i = 0; i < h->n; i++)
		for (uint32_t x = 0; x < h->nodes[i].n; x++)
			e[k++] = (struct shf_wire_map_ent){h->nodes[i].rg[x].first,
							   h->nodes[i].rg[x].count, h->nodes[i].node, 0, 0};
	/* by first rank: node after node, the ranges of a cyclic layout
	 * interleave, so no insertion sort (O(k^2) at 10,000 nodes) */
	qsort(e, k, sizeof(*e), cmp_ent_first);
	*ne_p = k;
	return e;
}

/* h is complete and consistent: its map to every node of the job. */
static void confirm(struct shd_daemon *d, struct shd_home *h, uint32_t only)
{
	h->confirmed = true;
	uint32_t ne;
	struct shf_wire_map_ent *e = map_of(h, &ne);
	if (!e) {
		shd_err("job %s: out of memory for its map", h->name);
		return;
	}
	/* on the wire, equal blocks on consecutive nodes go as one entry, and
	 * rounds of them on the same nodes too: a block, cyclic or
	 * block-cyclic layout is one entry, one JOB_MAP per node however many */
	struct shf_wire_map_ent *ce = malloc(sizeof(*ce) * (ne ? ne : 1));
	uint32_t nce = 0;
	if (ce) {
		memcpy(ce, e, sizeof(*ce) * ne);
		nce = shf_wire_map_compact(ce, ne);
	}
	shd_info("job %s: home of the job: world of %d confirmed on %u node(s), its map %u "
		 "entr%s on the wire",
		 h->name, h->world, h->n, ce ? nce : ne, (ce ? nce : ne) == 1 ? "y" : "ies");
	/* the nodes the map goes to: those the leaves it relays go to */
	uint32_t *mn = realloc(h->mnodes, sizeof(*mn) * ((size_t)h->n_mnodes + h->n));
	if (mn) {
		h->mnodes = mn;
		for (uint32_t i = 0; i < h->n; i++) {
			uint32_t k = 0;
			while (k < h->n_mnodes && mn[k] != h->nodes[i].node)
				k++;
			if (k == h->n_mnodes)
				mn[h->n_mnodes++] = h->nodes[i].node;
		}
	}
	/* what the sends need, copied: taking the map here may make a rank of
	 * ours leave (map_apply), and its leave may free h */
	struct shd_home hc = *h;
	bool self = false;
	for (uint32_t i = 0; i < hc.n; i++) {
		uint32_t node = hc.nodes[i].node;
		if (only != SHD_NODE_NONE && node != only)
			continue;
		/* a node that holds the whole world is ready without a map */
		if (hc.n == 1 && node != d->node_id)
			continue;
		if (node == d->node_id)
			self = true; /* last: h is not used after it */
		else
			map_send(d, &hc, node, ce ? ce : e, ce ? nce : ne, true);
	}
	if (self)
		map_send(d, &hc, d->node_id, e, ne, true);
	free(ce);
	free(e);
}

/* from announced another owner or world than h's. */
static void conflict(struct shd_daemon *d, struct shd_home *h, uint32_t from, uint32_t uid,
		     int32_t world, bool running)
{
	int reason = h->uid != uid ? -EACCES : -EINVAL;
	uint32_t other = other_node(h, from);
	shd_log_rl(&rl_home, SHD_LOG_WARN,
		   "job %s: node %u announced it with owner uid %u and world %d, node %u with "
		   "uid %u and world %d: %s", h->name, from, uid, world, other, h->uid, h->world,
		   h->confirmed && !running ? "the newcomer is refused"
					     : "both sides are refused");
	if (other == SHD_NODE_NONE)
		return;
	char name[SHF_JOB_MAX];
	memcpy(name, h->name, sizeof(name));
	uint32_t huid = h->uid;
	int32_t hworld = h->world;
	uint32_t *nodes = NULL, nn = 0;
	/* a late registration never fails a job that runs */
	if (!(h->confirmed && !running) && !h->deny) {
		h->deny = reason;
		nodes = malloc(sizeof(*nodes) * h->n);
		if (!nodes)
			shd_err("job %s: out of memory refusing its nodes", name);
		for (uint32_t i = 0; nodes && i < h->n; i++)
			nodes[nn++] = h->nodes[i].node;
	}
	/* h may be freed from here on: refusing this node's own side makes
	 * its ranks leave, and their leaves empty the record */
	deny_send(d, from, name, reason, other, huid, hworld);
	for (uint32_t i = 0; i < nn; i++)
		deny_send(d, nodes[i], name, reason, from, uid, world);
	free(nodes);
}

static void home_join(struct shd_daemon *d, uint32_t from, const char *name, int32_t world,
		      uint32_t uid, uint32_t flags, const struct shf_wire_range *rg, uint32_t nr)
{
	uint64_t hash = shf_wire_job_hash(name);
	bool running = flags & SHF_WIRE_JOIN_RUNNING;
	struct shd_home *h = home_find(d, hash);
	if (h && h->n == 1 && h->nodes[0].node == from && (h->uid != uid || h->world != world)) {
		/* its own earlier job of that name, whose leave is late (what
		 * it relays of that job goes on first) */
		home_forward(d, h);
		home_free(d, h);
		h = NULL;
	}
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			shd_err("job %s: out of memory for its home record", name);
			return;
		}
		snprintf(h->name, sizeof(h->name), "%s", name);
		h->hash = hash;
		h->world = world;
		h->uid = uid;
		shd_list_add_tail(&d->homes, &h->link);
		d->st.home_jobs++;
	} else if (h->uid != uid || h->world != world) {
		conflict(d, h, from, uid, world, running);
		return;
	} else if (h->deny) {
		uint32_t other = other_node(h, from);
		if (other != SHD_NODE_NONE)
			deny_send(d, from, h->name, h->deny, other, h->uid, h->world);
		return;
	}
	struct home_node *hn = hn_find(h, from);
	if (!hn && h->confirmed && !running) {
		/* the job runs without this node: its ranks came too late */
		uint32_t other = other_node(h, from);
		if (other != SHD_NODE_NONE)
			deny_send(d, from, h->name, -EEXIST, other, h->uid, h->world);
		return;
	}
	if (!hn) {
		struct home_node *g = realloc(h->nodes, sizeof(*g) * (h->n + 1));
		if (!g) {
			shd_err("job %s: out of memory for its home record", name);
			return;
		}
		h->nodes = g;
		hn = &g[h->n++];
		*hn = (struct home_node){from, 0, NULL};
	}
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t who;
		if (!held_elsewhere(h, from, rg[i].first, rg[i].count, &who)) {
			int64_t added = rs_add(hn, rg[i].first, rg[i].count);
			if (added > 0)
				h->ranks += added;
			continue;
		}
		shd_log_rl(&rl_home, SHD_LOG_WARN,
			   "job %s: node %u announced ranks %d-%d, some of them held by node %u: "
			   "those are not taken", h->name, from, rg[i].first,
			   rg[i].first + rg[i].count - 1, who);
		for (int32_t k = 0; k < rg[i].count; k++)
			if (!held_elsewhere(h, from, rg[i].first + k, 1, &who)) {
				int64_t added = rs_add(hn, rg[i].first + k, 1);
				if (added > 0)
					h->ranks += added;
			}
	}
	if (running) {
		h->confirmed = true; /* announced again to a new home: it runs */
		return;
	}
	if (h->ranks == h->world)
		confirm(d, h, h->confirmed ? from : SHD_NODE_NONE);
}

/* The leaves h relays go to every node its map went to (each gets its own
 * too: that tells their sender that they came through), in one JOB_LEAVE
 * per node, FORWARDED. */
static void home_forward(struct shd_daemon *d, struct shd_home *h)
{
	if (!h->n_fw)
		return;
	uint32_t ne = leaves_compact(h->fw, h->n_fw);
	h->n_fw = 0;
	d->forwards_dirty--;
	for (uint32_t i = 0; i < h->n_mnodes; i++)
		if (h->mnodes[i] != d->node_id)
			leave_send(d, h->mnodes[i], h->hash, h->world, h->fw, ne,
				   SHF_WIRE_LEAVE_FORWARDED);
	if (h->cap_fw > 64) {
		free(h->fw);
		h->fw = NULL;
		h->cap_fw = 0;
	}
}

/* How long a home holds the leaves it relays, from the first: the last
 * windows of the job's nodes, when they end together, go on in one
 * message per node. */
#define FORWARD_LINGER_MS 10u

/* e (node from's ranks e->first .. + e->count - 1 of the job) left: out of
 * the record (those it holds); relay: from's part ended, e goes on to the
 * job's nodes. */
static void home_leave(struct shd_daemon *d, uint32_t from, uint64_t hash, int32_t world,
		       const struct shf_wire_leave_ent *e, bool relay)
{
	struct shd_home *h = home_find(d, hash);
	if (relay && (!h || !h->n_mnodes)) {
		/* no map went out from here (this home restarted): the sender
		 * is asked to send its leaves to the job's nodes itself */
		shd_log_rl(&rl_home, SHD_LOG_WARN, "leaves of node %u to relay for a job this node "
			   "sent no map of: node %u is asked to send them itself", from, from);
		uint8_t buf[SHF_WIRE_LEAVE_ASK_BYTES];
		struct shf_wire_leave_ask a = {hash, world, SHF_WIRE_ASK_ALL};
		long len = shf_wire_enc_leave_ask(buf, sizeof(buf), d->node_id, from, &a);
		if (from != d->node_id && len > 0 && shd_net_send_msg(d, from, buf, (size_t)len) == 0)
			d->st.leave_msgs_out++;
		relay = false;
	}
	if (!h)
		return;
	if (relay) {
		if (h->n_fw == h->cap_fw) {
			uint32_t cap = h->cap_fw ? 2 * h->cap_fw : 8;
			struct shf_wire_leave_ent *g = realloc(h->fw, sizeof(*g) * cap);
			if (g) {
				h->fw = g;
				h->cap_fw = cap;
			}
		}
		if (h->n_fw < h->cap_fw) {
			h->fw[h->n_fw++] = *e;
			if (h->n_fw == 1) {
				d->forwards_dirty++;
				h->fw_due_ns = shd_now_ns() + (uint64_t)FORWARD_LINGER_MS * 1000000u;
				timer_in(d, FORWARD_LINGER_MS);
			}
		} else {
			/* not relayed: its sender sends it directly when no
			 * forward names it (its session with this home ends) */
			shd_err("job %s: out of memory relaying the leaves of node %u", h->name, from);
		}
	}
	struct home_node *hn = hn_find(h, from);
	if (!hn)
		return;
	h->ranks -= rs_del(hn, e->first, e->count);
	if (hn->n == 0) {
		free(hn->rg);
		*hn = h->nodes[--h->n];
	}
	if (h->n == 0) {
		/* every node's ranks left: what it relays goes now */
		home_forward(d, h);
		home_free(d, h);
	}
}

void shd_home_on_join(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn)
{
	d->st.join_msgs_in++;
	struct shf_wire_range *rg = malloc(sizeof(*rg) * jn->nranges);
	if (!rg) {
		shd_err("job %s: out of memory for the join of node %u", jn->name, node);
		return;
	}
	for (uint32_t i = 0; i < jn->nranges; i++)
		rg[i] = shf_wire_join_range(jn, i);
	home_join(d, node, jn->name, jn->world, jn->uid, jn->flags, rg, jn->nranges);
	free(rg);
}

void shd_home_on_leave(struct shd_daemon *d, uint32_t node, uint64_t job_hash, int32_t world,
		       const struct shf_wire_leave_ent *e, bool relay)
{
	home_leave(d, node, job_hash, world, e, relay);
}

void shd_home_peer_up(struct shd_daemon *d, uint32_t node)
{
	relay_lost(d, node); /* a new session: nothing of the old one is known */
	struct shd_list *q;
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		if (j->local <= 0 || j->deny || j->home == SHD_NODE_NONE)
			continue; /* (not announced yet: its first window picks the home) */
		/* a new session with the home shares nothing with the old one:
		 * announce again; and a node that comes may win the pick */
		if (j->home == node || home_pick(d, j->hash) != j->home)
			mark(d, j, 0);
	}
}

void shd_home_peer_lost(struct shd_daemon *d, uint32_t node)
{
	relay_lost(d, node);
	struct shd_list *q, *t;
	shd_list_for_each_safe(q, t, &d->homes) {
		struct shd_home *h = shd_container_of(q, struct shd_home, link);
		struct shf_wire_leave_ent e = {0, h->world, 0, SHF_WIRE_NODE_NONE, node};
		home_leave(d, node, h->hash, h->world, &e, false);
	}
	for (q = d->jobs.next; q != &d->jobs; q = q->next) {
		struct shd_job *j = shd_container_of(q, struct shd_job, link);
		if (j->local > 0 && !j->deny && j->home == node)
			mark(d, j, 0);
	}
}
