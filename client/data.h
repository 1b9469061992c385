/* SPDX-License-Identifier: MIT */
/*
 * client/data.h - the data path (client/data.c) as the rest of the library
 * sees it: delivery, the wait step that delivers while it waits, and the
 * origin flush shf_close() runs.  Included by open.c only.
 */
#ifndef SHC_DATA_H
#define SHC_DATA_H

#include "client/client.h"

/* The send side's lock: biased to the calling thread (the opener) when
 * membarrier(2) can revoke it (data.c).  Called once, before the context
 * is shared. */
void shc_send_lock_init(struct shf_ctx *c);

/* Deliver up to `max` records; deliver_lock held.  Count, or -ENOTCONN. */
int shc_deliver_batch(struct shf_ctx *c, unsigned max);
/* Poll mode, not in a callback: deliver a batch if the consumer is free, else
 * arm it.  Count delivered (0: armed or busy), or -ENOTCONN. */
int shc_poll_progress(struct shf_ctx *c);
/* Poll mode: after an internal wait may have consumed the DELIVER bell,
 * leave either an armed consumer or a readable event fd behind. */
void shc_poll_restore(struct shf_ctx *c);
/* The delivery thread (thread mode); starts once c->go is set. */
void *shc_delivery_main(void *arg);

/* One step of a blocking wait: in poll mode first deliver what is waiting
 * (the daemon may be stuck on my full delivery ring) and arm the consumer;
 * then shc_wait().  Same returns. */
int shc_wait_step(struct shf_ctx *c, uint64_t gen, int64_t deadline);
/* Wait until w->done.  0, -ETIMEDOUT or -ENOTCONN (detail set). */
int shc_waiter_wait(struct shf_ctx *c, struct shc_waiter *w, int64_t deadline);

/* Wait until the daemon took every record published so far. */
int shc_flush_origin(struct shf_ctx *c, int64_t deadline);

#endif /* SHC_DATA_H */
