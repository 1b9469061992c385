/* SPDX-License-Identifier: MIT */
/*
 * daemon/loop.h - the daemon's event loop.  Every libevent call of the
 * project lives in loop.c; the rest of the daemon sees only this API.
 */
#ifndef SHD_LOOP_H
#define SHD_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct shd_loop;
struct shd_ev;

/* fd: the watched fd (-1 for timers and deferred work). */
typedef void (*shd_ev_fn)(int fd, void *arg);

int shd_loop_new(struct shd_loop **loop_p);
void shd_loop_free(struct shd_loop *loop);
/* Run until shd_loop_stop().  0 or negative errno. */
int shd_loop_run(struct shd_loop *loop);
void shd_loop_stop(struct shd_loop *loop);

/* Persistent read-readiness watch on fd; active at once.  NULL on ENOMEM. */
struct shd_ev *shd_loop_fd(struct shd_loop *loop, int fd, shd_ev_fn fn, void *arg);
/* One-shot timer, armed with shd_ev_arm(). */
struct shd_ev *shd_loop_timer(struct shd_loop *loop, shd_ev_fn fn, void *arg);
/* Deferred work: runs once per shd_ev_activate() burst, after pending I/O. */
struct shd_ev *shd_loop_defer(struct shd_loop *loop, shd_ev_fn fn, void *arg);
/* Persistent signal handler (runs in the loop, not in signal context). */
struct shd_ev *shd_loop_signal(struct shd_loop *loop, int signo, shd_ev_fn fn, void *arg);

void shd_ev_arm(struct shd_ev *ev, uint64_t usec); /* (re)arm a timer */
void shd_ev_disarm(struct shd_ev *ev);             /* timer, or stop watching fd */
void shd_ev_watch(struct shd_ev *ev);              /* watch a disarmed fd again */
bool shd_ev_armed(const struct shd_ev *ev);
void shd_ev_activate(struct shd_ev *ev);           /* schedule deferred work */
void shd_ev_free(struct shd_ev *ev);               /* NULL ok */

uint64_t shd_now_ns(void); /* CLOCK_MONOTONIC */

#endif
