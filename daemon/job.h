/* SPDX-License-Identifier: MIT */
/*
 * daemon/job.h - what happens to a job as ranks come and go, here and on
 * other nodes: registration, leaving, world readiness, and the end of a
 * job.  A job is freed only at the reap step of the pass (shd_job_reap):
 * callers may keep using a job pointer for the rest of their update.
 */
#ifndef SHD_JOB_H
#define SHD_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* Register c as rank of job name (created if new).  0, or -EACCES (other
 * owner), -EINVAL (world differs), -EEXIST (rank taken/left/lost), -EDQUOT
 * / -ENOMEM (the rank directory over the owner's or the total memory
 * budget, or out of memory); why gets a one-line reason. */
int shd_job_register(struct shd_daemon *d, struct shd_client *c, const char *name,
		     int32_t rank, int32_t world, char *why, size_t whylen);
/* Take c's rank out of the job (gone: it had been part of a complete
 * world).  keep_route: c keeps its job pointer to relay what it published. */
void shd_job_leave(struct shd_client *c, bool gone, bool keep_route);
/* The world is complete, confirmed, and this node's sessions with the
 * job's other nodes are up: READY to every waiting client. */
void shd_job_check_ready(struct shd_daemon *d, struct shd_job *j);
/* The job's other nodes (known once confirmed) this node has no session
 * with yet: how many, and the first of them in *first (may be NULL). */
uint32_t shd_job_nodes_not_up(const struct shd_daemon *d, const struct shd_job *j,
			      uint32_t *first);
/* Find or create a job announced by another node (NULL: world conflict).
 * The caller compares the announced owner uid with the job's (events.c). */
struct shd_job *shd_job_remote(struct shd_daemon *d, const char *name, int32_t world,
			       uint32_t uid);
/* A rank joined or left on another node; err is why it left (-ESRCH: it
 * closed, -EHOSTDOWN: lost with its node, as shd_job_node_lost). */
void shd_job_remote_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, uint32_t node,
			 bool joined, int err);
/* node was lost to j: seen here (its session ended) or told by another
 * node's JOB_LEAVE (events.c).  Its ranks are lost (-EHOSTDOWN for their
 * records and for j's epochs); the first such node is j->lost_node, which
 * the epochs' error names.  Nothing if node is this one or holds no rank
 * of j any more. */
void shd_job_node_lost(struct shd_daemon *d, struct shd_job *j, uint32_t node);
/* rank, gone, is a culprit of j's failures: it left before any other rank
 * had (here: shd_job_leave; elsewhere: its leave's reason was 0); listed
 * by the epochs' -ESRCH error instead of every rank gone. */
void shd_job_culprit(struct shd_job *j, int32_t rank);
bool shd_job_is_culprit(const struct shd_job *j, int32_t rank);
/* Fail j on this node: node runs it with owner uid / world (reason
 * -EACCES / -EINVAL), or it runs without this node (-EEXIST). */
void shd_job_deny(struct shd_daemon *d, struct shd_job *j, int reason, uint32_t node,
		  uint32_t uid, int32_t world);
/* What job.c tells the layer above it (job start through a home,
 * jobhome.c; wired in events.c): calls go down, these come up. */
struct shd_job_events {
	/* a local rank of j registered: its home is to hear of it */
	void (*registered)(struct shd_daemon *d, struct shd_job *j);
	/* local rank `rank` of j left */
	void (*local_left)(struct shd_daemon *d, struct shd_job *j, int32_t rank);
	/* j's local leaves still held in their window go now: before an
	 * epoch message of j leaves this node (epoch.c: directly), and when j
	 * ends here (ending: through its home if its part ended) */
	void (*leaves_now)(struct shd_daemon *d, struct shd_job *j, bool ending);
};

/* The reap step: free the jobs nothing refers to any more. */
void shd_job_reap(struct shd_daemon *d);

#endif
