/* SPDX-License-Identifier: MIT */
/*
 * daemon/deliver.h - hop 3: copying a message into a local client's
 * delivery ring, waiting for room there, and publishing the rings once per
 * pass.  Called by the relay (local messages) and by the network's receive
 * half (messages from other nodes).
 */
#ifndef SHD_DELIVER_H
#define SHD_DELIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* Copy one message into dst's delivery ring (published at the pass's
 * publish step).  0; -EAGAIN when the ring is full; -ESRCH when dst cannot
 * take it (NULL, doomed, not registered, or its ring index is corrupt: then
 * it is cut off). */
int shd_deliver_place(struct shd_daemon *d, struct shd_client *dst, int32_t src, uint32_t type,
		      const void *data, uint32_t len);
/*
 * Place a run of `count` messages from src (its items: `bytes` bytes,
 * checked by shf_run_check(), `payload` bytes of messages) into dst's
 * ring: as one SHF_REC_RUN record when dst reads runs, else item by item
 * from *pos on (*pos starts zeroed; it says where a -EAGAIN stopped, and
 * how many items were placed before an error).  0 when all are placed;
 * -EAGAIN (wait for room for `bytes` bytes, then call again with the same
 * *pos); -ESRCH as for shd_deliver_place (count - pos->done are lost).
 */
int shd_deliver_run(struct shd_daemon *d, struct shd_client *dst, int32_t src,
		    const uint8_t *items, uint32_t bytes, uint32_t count, uint64_t payload,
		    struct shd_run_pos *pos);
/* Wait for room for a len-byte message in dst's ring: w->wake runs when
 * dst makes room.  Returns false when room appeared meanwhile (retry now;
 * w is not linked). */
bool shd_deliver_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len);
/* Room appeared in c's delivery ring (or c goes away): its waiters retry. */
void shd_deliver_wake(struct shd_client *c);
/* The publish step: one release store per dirty ring, bells rung. */
void shd_deliver_publish(struct shd_daemon *d);

#endif
