/* SPDX-License-Identifier: MIT */
/*
 * daemon/jobhome.h - job start through a home node (docs/protocol-wire.md,
 * "Job start").  Every job has a home: the node that wins a rendezvous
 * hash of the job's name among the nodes this daemon sees up (itself
 * included).  A node with ranks of a job announces them to the home only
 * (JOB_JOIN); the home checks that every node names the same owner and
 * world, and when the world is complete it sends each of the job's nodes
 * the whole rank -> node map (JOB_MAP, the last part FINAL), or, on a
 * conflict, JOB_DENY to both sides.  A node sends READY only after the
 * FINAL map (or when every rank of the world is its own).  Starting a job
 * on k nodes costs at most 2k messages, and no other node hears of it.
 */
#ifndef SHD_JOBHOME_H
#define SHD_JOBHOME_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

struct shf_wire_join;
struct shf_wire_map;
struct shf_wire_deny;
struct shf_wire_leave;
struct shf_wire_leave_ent;
struct shf_wire_leave_ask;

/* A local rank of j registered: announce j's local ranks to its home at
 * the network step (shd_home_flush). */
void shd_home_announce(struct shd_daemon *d, struct shd_job *j);
/* The network step: announce the jobs marked by shd_home_announce(). */
void shd_home_flush(struct shd_daemon *d);
/* Local rank `rank` of j left: tell j's homes and, once the world was
 * confirmed, j's other nodes (JOB_LEAVE), at the end of a window of 10 ms
 * from the first leave held: one JOB_LEAVE per node for them all. */
void shd_home_local_left(struct shd_daemon *d, struct shd_job *j, int32_t rank);
/* j's leaves held in their window go now (before an epoch message of j:
 * directly; at j's end, ending: through its home if this node's part
 * ended: job.c). */
void shd_home_leaves_now(struct shd_daemon *d, struct shd_job *j, bool ending);
/* Every job's held leaves go now (the daemon stops). */
void shd_home_leaves_all(struct shd_daemon *d);

/* What the network brought (events.c). */
void shd_home_on_join(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn);
/* node's ranks e->first .. + e->count - 1 of job_hash left (those of them
 * it holds): the home's side; relay: node's part ended, forward them to
 * the job's nodes */
void shd_home_on_leave(struct shd_daemon *d, uint32_t node, uint64_t job_hash, int32_t world,
		       const struct shf_wire_leave_ent *e, bool relay);
/* node, a job's home, forwarded leaves it relays (JOB_LEAVE FORWARDED):
 * ours among them came through. */
void shd_home_forwarded(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave *l);
/* node lost the relay of job's leaves (or this home could not relay ours):
 * our departed ranks of it to node (to all its nodes with ASK_ALL), and
 * no more relaying. */
void shd_home_on_ask(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave_ask *a);
void shd_home_on_map(struct shd_daemon *d, uint32_t node, const struct shf_wire_map *m);
void shd_home_on_deny(struct shd_daemon *d, uint32_t node, const struct shf_wire_deny *dn);
/* A session with node began (or ended): homes move, joins are sent again. */
void shd_home_peer_up(struct shd_daemon *d, uint32_t node);
void shd_home_peer_lost(struct shd_daemon *d, uint32_t node);
/* The home records held here (shufflectl status: home_jobs). */
uint32_t shd_home_count(const struct shd_daemon *d);
void shd_home_free_all(struct shd_daemon *d);

#endif
