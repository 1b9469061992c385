/* SPDX-License-Identifier: MIT */
/*
 * daemon/region.h - a client's shared-memory region (rings) and doorbells.
 */
#ifndef SHD_REGION_H
#define SHD_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* Create c's region (two rings of ring_bytes) and eventfds; *memfd_p gets
 * the memfd to pass to the client (the caller closes it).  The region is
 * charged to c->uid: -EDQUOT / -ENOMEM over a budget (budget.h), or the
 * error of a failed allocation; why gets a one-line reason. */
int shd_region_new(struct shd_client *c, uint32_t ring_bytes, uint32_t max_msg, int *memfd_p,
		   char *why, size_t whylen);
void shd_region_free(struct shd_client *c);

#endif
