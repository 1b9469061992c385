/* SPDX-License-Identifier: MIT */
/*
 * client/deliver.h - delivery (client/deliver.c): the delivery thread,
 * poll mode's progress, and the waits that deliver while they wait.
 */
#ifndef SHC_DELIVER_H
#define SHC_DELIVER_H

#include <pthread.h>
#include <stdint.h>

#include "client/client.h"

/* Deliver up to `max` records; deliver_lock held.  Count, or -ENOTCONN. */
int shc_deliver_batch(struct shf_ctx *c, unsigned max);
/* Poll mode, not in a callback: deliver a batch if the consumer is free, else
 * arm it.  Count delivered (0: armed or busy), or -ENOTCONN. */
int shc_poll_progress(struct shf_ctx *c);
/* Poll mode: after an internal wait may have consumed the DELIVER bell,
 * leave either an armed consumer or a readable event fd behind. */
void shc_poll_restore(struct shf_ctx *c);
/* shf_poll()'s loop (its checks done): deliver a batch, or wait for one
 * until the deadline.  Count delivered, 0 at the deadline, or the error. */
int shc_poll(struct shf_ctx *c, int64_t deadline);
/* The delivery thread (thread mode); starts once c->go is set. */
void *shc_delivery_main(void *arg);

/* One step of a blocking wait: in poll mode first deliver what is waiting
 * (the daemon may be stuck on my full delivery ring) and arm the consumer;
 * then shc_wait().  Same returns. */
int shc_wait_step(struct shf_ctx *c, uint64_t gen, int64_t deadline);
/* Wait until w->done.  0, -ETIMEDOUT or -ENOTCONN (detail set). */
int shc_waiter_wait(struct shf_ctx *c, struct shc_waiter *w, int64_t deadline);

/* Lock m, giving up at the (CLOCK_MONOTONIC) deadline, -1: never.  0 or
 * ETIMEDOUT. */
int shc_lock_until(pthread_mutex_t *m, int64_t deadline);

#endif /* SHC_DELIVER_H */
