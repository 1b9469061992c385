/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/tx.h - the network's sending API, used by the relay (records
 * and marks), jobs (announcements) and epochs (counts).  See net.h for the
 * module, net/tx.c for batches and credits, net/post.c for buffers.
 */
#ifndef SHD_NET_TX_H
#define SHD_NET_TX_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* Append one message for rank dst (on node) to that node's batch.
 * 0; -EAGAIN when there is no room and no credit (src->wait is linked and
 * src is kicked later); -EHOSTDOWN when the node is down or failing (the
 * caller drops and counts it). */
int shd_net_append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		   const struct shd_job *j, int32_t dst, uint32_t type, const void *data,
		   uint32_t len);
/* The same for a run of count messages to rank dst whose items (checked,
 * shf_run_check) take bytes: one record of the batch. */
int shd_net_append_run(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		       const struct shd_job *j, int32_t dst, uint32_t count, const void *items,
		       uint32_t bytes);

/*
 * Writing a gathered burst (daemon/gather.c): the relay first makes sure
 * node's open batch has room for all it will write, then writes records
 * straight into it, then says it is done.
 *
 * shd_net_reserve: an open batch of job j to node with room for `bytes`
 * bytes of records (headers included), opened if needed, or the one open
 * closed and a new one opened when it lacks the room (so the caller writes
 * nothing it reserved earlier into the one open: it wrote it before).  0,
 * -EAGAIN (src->wait linked) or -EHOSTDOWN, as shd_net_append.
 * shd_net_room: the bytes of records node's open batch of job j still
 * takes (0: none open).
 * shd_net_put_msg / shd_net_put_run: a message record or a run record's
 * header in node's open batch, returning where its payload or items go;
 * only within the room reserved (NULL otherwise: a bug of the caller).
 * shd_net_put_done: node's batch is closed if it reached batch_bytes.
 */
int shd_net_reserve(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		    const struct shd_job *j, uint32_t bytes);
uint32_t shd_net_room(const struct shd_daemon *d, uint32_t node, const struct shd_job *j);
void *shd_net_put_msg(struct shd_daemon *d, uint32_t node, int32_t dst, int32_t src,
		      uint32_t type, uint32_t len);
void *shd_net_put_run(struct shd_daemon *d, uint32_t node, int32_t dst, int32_t src,
		      uint32_t count, uint32_t bytes);
void shd_net_put_done(struct shd_daemon *d, uint32_t node);

/* src took a MARK: flush the batches holding its earlier records; returns
 * how many peers must acknowledge before the mark is done (0: done now);
 * each reports through ev->mark_acked(src). */
uint64_t shd_net_mark(struct shd_daemon *d, struct shd_client *src);
/* src is going away: forget it in pending mark bookkeeping. */
void shd_net_forget(struct shd_daemon *d, struct shd_client *src);

/* Send one encoded control message of len bytes (its session tags are
 * stamped here) to node: small ones (<= SHD_FABRIC_SMALL) by the fabric's
 * copy, larger ones (<= shd_net_msg_max()) in a buffer of the pool.  0;
 * -EHOSTDOWN node is not up (or is this one, or there is no network);
 * -EMSGSIZE too large; -ENOBUFS no pool buffer free now (send it in small
 * pieces, or later). */
int shd_net_send_msg(struct shd_daemon *d, uint32_t node, const void *msg, size_t len);
/* The largest message shd_net_send_msg() takes (and a peer receives). */
uint32_t shd_net_msg_max(const struct shd_daemon *d);

/* An epoch step of j's epoch number `epoch` (kind SHF_WIRE_EPOCH_UP/_DOWN/
 * _ABORT) to node, if it is up (a peer that is not is lost, and its loss
 * fails the epoch). */
void shd_net_epoch(struct shd_daemon *d, uint32_t node, unsigned kind, struct shd_job *j,
		   uint64_t epoch, uint32_t phase, int32_t count);

#endif
