/* SPDX-License-Identifier: MIT */
/*
 * client/data.h - the send side (client/data.c) as the rest of the library
 * sees it: the send lock's set-up and the origin flush shf_close() runs.
 * Included by open.c only.
 */
#ifndef SHC_DATA_H
#define SHC_DATA_H

#include "client/client.h"

/* The send side's lock: biased to the calling thread (the opener) when
 * membarrier(2) can revoke it (data.c).  Called once, before the context
 * is shared. */
void shc_send_lock_init(struct shf_ctx *c);

/* Wait until the daemon took every record published so far. */
int shc_flush_origin(struct shf_ctx *c, int64_t deadline);

#endif /* SHC_DATA_H */
