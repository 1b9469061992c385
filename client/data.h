/* SPDX-License-Identifier: MIT */
/*
 * client/data.h - the send side (client/data.c) as the rest of the library
 * sees it: the send lock's set-up, the origin flush shf_close() runs, and
 * the push of SHF_MORE's held records (data.c, "Held records").
 * Included by open.c and sync.c.
 */
#ifndef SHC_DATA_H
#define SHC_DATA_H

#include "client/client.h"

/* The send side's lock: biased to the calling thread (the opener) when
 * membarrier(2) can revoke it (data.c).  Called once, before the context
 * is shared. */
void shc_send_lock_init(struct shf_ctx *c);

/* Wait until the daemon took every record published so far (held ones
 * pushed first). */
int shc_flush_origin(struct shf_ctx *c, int64_t deadline);

/* Publish a MARK record of kind `what` (blocking like a send, held records
 * first) with its reply waiter w, added here: 0 with *id_p set, or the
 * error (w removed). */
int shc_mark_publish(struct shf_ctx *c, uint32_t what, struct shc_waiter *w, int64_t deadline,
		     uint64_t *id_p);

/* Push the calling thread's held records (if it holds any) before it
 * waits: 0, or the error with the rest still held. */
int shc_hold_flush(struct shf_ctx *c, int64_t deadline);

/* shf_close(): push the held records, from any thread: 0, or an error
 * that counts those that could not go (all of them when the context is
 * dead). */
int shc_hold_close(struct shf_ctx *c, int64_t deadline);

#endif /* SHC_DATA_H */
