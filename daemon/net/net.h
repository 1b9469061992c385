/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/net.h - the peer protocol between daemons: per-node batches,
 * credits and acks, flush marks, heartbeats and peer loss, and the job and
 * epoch messages.  Built on fabric.h (libfabric) and rdv.h (rendezvous).
 *
 * Calls go down into net; net's news goes up through struct
 * shd_net_events (registered at open), the way fabric reports to net.
 * net never frees a session or a job, and a peer that fails is only
 * marked: its queues are dropped, counted and reported at the pass's
 * peers step (shd_net_reap), never inside the caller's update.
 *
 * Files: net.h + net.c (open/close, receive dispatch, liveness, the peers
 * step, progress), net/tx.h + net/tx.c (the sending API: batches, credits,
 * marks, control messages), net/fwd.c (forwarding), net/post.c (buffer
 * pool, posting, the wake), net/rx.c (placing received batches, parking,
 * ACK and DROP), net/upcalls.h (the events table), net/int.h (their
 * shared structs).
 */
#ifndef SHD_NET_H
#define SHD_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

#include "daemon/net/upcalls.h"

/* Open the endpoint and run the rendezvous.  Sets d->node_id, d->n_nodes
 * and d->net (left NULL when the daemon is alone).  ev must outlive net. */
int shd_net_open(struct shd_daemon *d, const struct shd_net_events *ev);
void shd_net_close(struct shd_daemon *d);

/* The network step of the pass (rings are published): ACK what was placed,
 * announce newly registered ranks, kick fabric progress. */
void shd_net_after_publish(struct shd_daemon *d);
/* The peers step of the pass: carry out the peers that failed. */
void shd_net_reap(struct shd_daemon *d);

/* "nodes not up: 2 (n3, unknown), 5 (n6, down)" into buf (truncated with
 * ",..."); returns how many peers are not up (0: buf is ""). */
int shd_net_not_up(struct shd_daemon *d, char *buf, size_t len);

/* Nodes up, this one included (1 when alone). */
uint32_t shd_net_nodes_up(const struct shd_daemon *d);
/* Is node's peer up (in a session; idle peers too)?  False for this node. */
bool shd_net_peer_is_up(const struct shd_daemon *d, uint32_t node);
/* Is node a member of the set: this node, or a node whose address is known
 * (published; for static, mpi and dir:PATH:N every node) or that was heard
 * from.  A growing set (tcp://, dir:PATH) holds max_nodes slots, and a
 * slot no daemon ever claimed and published is not a node.  A member that
 * went silent or down stays one. */
bool shd_net_is_member(const struct shd_daemon *d, uint32_t node);
/* The members (this node included): what "nodes" means everywhere. */
uint32_t shd_net_members(const struct shd_daemon *d);
/* A member's name (its host in the rendezvous), NULL when not known. */
const char *shd_net_peer_host(const struct shd_daemon *d, uint32_t node);

/* The state of node's peer as shufflectl peers names it: "up", "idle" (up,
 * heartbeats paused: peer_idle_ms), "joining", "unknown", "failing", "down";
 * "self" for this node, NULL for no such node. */
const char *shd_net_peer_state(const struct shd_daemon *d, uint32_t node);

/* JSON array describing the peers, for shufflectl. */
struct json_t;
struct json_t *shd_net_json(struct shd_daemon *d);
void shd_net_fabric_stats(struct shd_daemon *d, struct shf_fabric_stats *s);
/* How peers are authenticated, for status: "key" (cluster_key), "none"
 * (members by address only), "alone" (no peers). */
const char *shd_net_auth_mode(const struct shd_daemon *d);

#endif
