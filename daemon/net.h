/* SPDX-License-Identifier: MIT */
/*
 * daemon/net.h - the network hop: batches to other nodes, credits, acks,
 * heartbeats, and the job/epoch messages between daemons.  Built on
 * fabric.c (libfabric) and rdv.c (rendezvous); the relay calls in here for
 * every record whose destination rank lives on another node.
 */
#ifndef SHD_NET_H
#define SHD_NET_H

#include <stdbool.h>
#include <stdint.h>

struct shd_daemon;
struct shd_client;
struct shd_job;

/* Open the endpoint and run the rendezvous.  Sets d->node_id, d->n_nodes
 * and d->net (left NULL when the daemon is alone). */
int shd_net_open(struct shd_daemon *d);
void shd_net_close(struct shd_daemon *d);

/* Append one message for `dst` (on `node`) to that node's batch.
 * 0; -EAGAIN when there is no room and no credit (src is blocked and kicked
 * later); -EHOSTDOWN when the node is down (drop it). */
int shd_net_append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		   const struct shd_job *j, int32_t dst, uint32_t type, const void *data,
		   uint32_t len);

/* src took a MARK: flush the batches holding its earlier records; returns
 * how many acks must come back before the mark is done (0: done now).
 * net.c calls shd_relay_mark_done(src) when they have. */
uint64_t shd_net_mark(struct shd_daemon *d, struct shd_client *src);
/* src is going away: forget it in pending mark bookkeeping. */
void shd_net_forget(struct shd_daemon *d, struct shd_client *src);

/* End of a relay pass: send batches that are full. */
void shd_net_after_pass(struct shd_daemon *d);

void shd_net_job_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, bool joined);
void shd_net_epoch(struct shd_daemon *d, struct shd_job *j, uint32_t phase, int32_t count);

/* JSON array describing the peers, for shufflectl. */
struct json_t;
struct json_t *shd_net_json(struct shd_daemon *d);

#endif
