/* SPDX-License-Identifier: MIT */
/*
 * daemon/budget.h - memory budgets: what the daemon allocates on behalf of
 * a user (client regions, rank directories) is charged to that uid, and a
 * charge that would pass the uid's budget (uid_mem_max) or the total of all
 * budgeted uids (mem_max) is refused.  root and the daemon's own uid are
 * exempt: their charges are counted (shown) but never refused.
 */
#ifndef SHD_BUDGET_H
#define SHD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"

/* Charge bytes of `what` ("ring region", "rank directory") to uid: 0, or
 * -EDQUOT (uid_mem_max) / -ENOMEM (mem_max) with a one-line reason naming
 * the budget in why.  Nothing is charged on failure. */
int shd_budget_charge(struct shd_daemon *d, uid_t uid, uint64_t bytes, const char *what,
		      char *why, size_t whylen);
/* Charge without a limit: memory for ranks another node admitted. */
void shd_budget_force(struct shd_daemon *d, uid_t uid, uint64_t bytes);
/* Give back a charge (either kind). */
void shd_budget_release(struct shd_daemon *d, uid_t uid, uint64_t bytes);
/* Bytes charged to uid now. */
uint64_t shd_budget_used(const struct shd_daemon *d, uid_t uid);
/* root and the daemon's own uid: never refused. */
bool shd_budget_exempt(uid_t uid);
void shd_budget_fini(struct shd_daemon *d);

#endif
