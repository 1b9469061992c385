/* SPDX-License-Identifier: MIT */
/*
 * daemon/sched.h - what the next pass does: the run queue of clients with
 * records to relay, waiter lists, and the pass event itself.  The pass
 * (pass.c) is one deferred event; anything that creates work for it calls
 * shd_sched_pass() and returns.
 */
#ifndef SHD_SCHED_H
#define SHD_SCHED_H

#include "daemon/daemon.h"

/* Create d->pass_ev, which runs fn(d) once per burst of shd_sched_pass(). */
int shd_sched_init(struct shd_daemon *d, shd_ev_fn fn);
void shd_sched_fini(struct shd_daemon *d);
/* Run a pass soon (after pending I/O of this loop iteration). */
void shd_sched_pass(struct shd_daemon *d);
/* c may have records to relay: queue it, unless it is blocked, doomed or
 * not in a state that relays. */
void shd_sched_kick(struct shd_client *c);
/* Set up the scheduling fields of a new session. */
void shd_sched_client_init(struct shd_client *c);
/* Every waiter of the list retries (the list is emptied first, so a waiter
 * may link itself again). */
void shd_sched_wake(struct shd_list *waiters);

#endif
