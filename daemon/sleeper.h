/* SPDX-License-Identifier: MIT */
/*
 * daemon/sleeper.h - "the sleeper pays" (issue 13, third step): clients
 * that registered for membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) publish
 * their send rings without the [D2] fence; before the daemon sleeps for
 * good on such a ring it runs that membarrier and re-checks the ring
 * (docs/ring.md, [M1]/[M2]).  The only membarrier(2) call of the daemon.
 */
#ifndef SHD_SLEEPER_H
#define SHD_SLEEPER_H

#include <stdbool.h>

#include "daemon/daemon.h"

/* At start: ask the kernel (MEMBARRIER_CMD_QUERY) once and create the
 * one-shot timer.  0 or -ENOMEM; a kernel without the command only turns
 * the offer off (logged). */
int shd_sleeper_init(struct shd_daemon *d);
void shd_sleeper_fini(struct shd_daemon *d);
/* May a client that registered (SHF_REG_GLOBAL_MB) publish fence-free? */
bool shd_sleeper_can_pay(const struct shd_daemon *d);
/* c's send ring is fence-free and was just armed ([D1] done, ring empty):
 * within sleeper_wait_us the daemon runs the membarrier and re-checks it,
 * waking c if records came.  c stays listed until then or until
 * shd_sleeper_forget(). */
void shd_sleeper_armed(struct shd_client *c);
/* Unlist c (teardown, shd_relay_detach). */
void shd_sleeper_forget(struct shd_client *c);

#endif
