/* SPDX-License-Identifier: MIT */
/*
 * client/wait.h - the wait engine (client/wait.c): deadlines, the death of
 * the connection, reply waiters, the leader/gen wait (see "Waiting" in
 * client.h) and the control-socket reader.  Included by data.c and open.c;
 * wait.c includes no other client module header.
 */
#ifndef SHC_WAIT_H
#define SHC_WAIT_H

#include "client/client.h"

/* Set when the current thread runs a callback of this context (data.c
 * sets it around callbacks; shc_wait() does not poll the DELIVER bell for
 * a thread that cannot deliver). */
extern _Thread_local struct shf_ctx *shc_in_cb;

/* ------------------------------------------------------------------- time */

uint64_t shc_now_ns(void);
/* Absolute CLOCK_MONOTONIC deadline in ns, or -1 for "forever". */
int64_t shc_deadline(int timeout_ms);
/* The start of a call that waits: resolve its timeout (0: the context's,
 * -1: forever) to a deadline, on a live context.  0, -EINVAL, or the
 * context's death. */
int shc_call_deadline(struct shf_ctx *c, int timeout_ms, int64_t *deadline_p);
/* poll() timeout for a deadline: -1 forever, else ms left, rounded up. */
int shc_poll_ms(int64_t deadline);

/* ------------------------------------------------------------------ death */

/* Mark the context dead (first reason wins) and wake every waiter. */
void shc_mark_dead(struct shf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, for a daemon that broke the protocol: also shuts the socket
 * down so the daemon lets go of us. */
void shc_protocol_error(struct shf_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* -ENOTCONN with the death reason as the calling thread's detail. */
int shc_dead_err(struct shf_ctx *c);
static inline bool shc_is_dead(struct shf_ctx *c)
{
	return atomic_load_explicit(&c->dead, memory_order_acquire) != 0;
}

/* ---------------------------------------------------------------- waiting */

uint64_t shc_wait_gen(struct shf_ctx *c);
/* Sleep until the leader saw something (gen moved past `gen`), the
 * deadline, or death.  0 (re-check), -ETIMEDOUT, -ENOTCONN (detail set).
 * Runs no callback: a wait that must also deliver is shc_wait_step()
 * (data.h). */
int shc_wait(struct shf_ctx *c, uint64_t gen, int64_t deadline);
/* Non-blocking hang-up check of the socket (poll mode sends). */
void shc_sock_check(struct shf_ctx *c);
/* The socket hung up: read the daemon's last words and mark c dead (or let
 * the current leader do it and wait for the end of its round). */
void shc_sock_hangup(struct shf_ctx *c);

/* Link / unlink a reply waiter (the leader's dispatch completes it). */
void shc_waiter_add(struct shf_ctx *c, struct shc_waiter *w, uint16_t type, uint64_t id);
void shc_waiter_del(struct shf_ctx *c, struct shc_waiter *w);

/* (info.c) Who holds up the epoch this rank waits in, asked of the daemon
 * (EPOCH_WHO) after the epoch's wait timed out: "; " and the daemon's
 * answer into buf, or "" when the daemon cannot say (an older daemon, no
 * answer within 500 ms).  Never fails the caller. */
void shc_epoch_who(struct shf_ctx *c, char *buf, size_t n);

#endif /* SHC_WAIT_H */
