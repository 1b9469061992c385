/* SPDX-License-Identifier: MIT */
/*
 * daemon/net.h - the peer protocol between daemons: per-node batches,
 * credits and acks, flush marks, heartbeats and peer loss, and the job and
 * epoch messages.  Built on fabric.h (libfabric) and rdv.h (rendezvous).
 *
 * Calls go down into net; net's news goes up through struct
 * shd_net_events (registered at open), the way fabric reports to net.
 * net never frees a session or a job, and a peer that fails is only
 * marked: its queues are dropped, counted and reported at the pass's
 * peers step (shd_net_reap), never inside the caller's update.
 *
 * Files: net.c (open/close, receive dispatch, liveness, the peers step,
 * progress), net_tx.c (batches, credits, buffer pool, posting, marks,
 * control messages), net_rx.c (placing received batches, parking, ACK and
 * DROP), net_int.h (their shared structs).
 */
#ifndef SHD_NET_H
#define SHD_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

struct shf_wire_join;

/* What net tells the modules above it (daemon/events.c).  Every pointer is
 * set.  None may free a session or a job (they queue for the reap). */
struct shd_net_events {
	/* First message from a peer (incarnation known from then on). */
	void (*peer_up)(struct shd_daemon *d, uint32_t node, const char *host);
	/* At the peers step: node is down; what was queued for it is already
	 * dropped and reported; its ranks must be lost now. */
	void (*peer_lost)(struct shd_daemon *d, uint32_t node);
	/* node announced ranks of a job (JOB_JOIN). */
	void (*joined)(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn);
	/* A rank of job_hash left node (rank -1: all of node's ranks). */
	void (*left)(struct shd_daemon *d, uint32_t node, uint64_t job_hash, int32_t rank);
	/* node counted `count` ranks of job_hash in epoch phase `phase`. */
	void (*epoch)(struct shd_daemon *d, uint32_t node, uint64_t job_hash, uint32_t phase,
		      int32_t count);
	/* count records sent by local rank src of job_hash were dropped: why
	 * -ESRCH (destination rank gone) or -EHOSTDOWN (destination node down). */
	void (*drops)(struct shd_daemon *d, uint64_t job_hash, int32_t src, uint32_t count,
		      int why);
	/* One peer acknowledged what c's pending mark covered there (lost: the
	 * peer went down first). */
	void (*mark_acked)(struct shd_client *c, bool lost);
};

/* Open the endpoint and run the rendezvous.  Sets d->node_id, d->n_nodes
 * and d->net (left NULL when the daemon is alone).  ev must outlive net. */
int shd_net_open(struct shd_daemon *d, const struct shd_net_events *ev);
void shd_net_close(struct shd_daemon *d);

/* Append one message for rank dst (on node) to that node's batch.
 * 0; -EAGAIN when there is no room and no credit (src->wait is linked and
 * src is kicked later); -EHOSTDOWN when the node is down or failing (the
 * caller drops and counts it). */
int shd_net_append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		   const struct shd_job *j, int32_t dst, uint32_t type, const void *data,
		   uint32_t len);

/* src took a MARK: flush the batches holding its earlier records; returns
 * how many peers must acknowledge before the mark is done (0: done now);
 * each reports through ev->mark_acked(src). */
uint64_t shd_net_mark(struct shd_daemon *d, struct shd_client *src);
/* src is going away: forget it in pending mark bookkeeping. */
void shd_net_forget(struct shd_daemon *d, struct shd_client *src);

/* The network step of the pass (rings are published): ACK what was placed,
 * announce newly registered ranks, kick fabric progress. */
void shd_net_after_publish(struct shd_daemon *d);
/* The peers step of the pass: carry out the peers that failed. */
void shd_net_reap(struct shd_daemon *d);

/* Announce that a local rank of j joined (batched to the network step) or
 * left (sent now) to every peer that is up. */
void shd_net_announce(struct shd_daemon *d, struct shd_job *j, int32_t rank, bool joined);
/* Our count of j's ranks in epoch phase `phase` to every peer that is up. */
void shd_net_epoch(struct shd_daemon *d, struct shd_job *j, uint32_t phase, int32_t count);

/* JSON array describing the peers, for shufflectl. */
struct json_t;
struct json_t *shd_net_json(struct shd_daemon *d);
void shd_net_fabric_stats(struct shd_daemon *d, struct shf_fabric_stats *s);

#endif
