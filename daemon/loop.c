/* SPDX-License-Identifier: MIT */
/* daemon/loop.c - thin wrapper over libevent_core (the only file using it). */
#include "daemon/loop.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <time.h>

struct shd_loop {
	struct event_base *base;
};

struct shd_ev {
	struct event *ev;
	shd_ev_fn fn;
	void *arg;
	int fd;
};

uint64_t shd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int shd_loop_new(struct shd_loop **loop_p)
{
	struct shd_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	struct event_config *cfg = event_config_new();
	if (!cfg) {
		free(l);
		return -ENOMEM;
	}
	/* one thread owns the loop: no locks */
	event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	l->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (!l->base) {
		free(l);
		return -ENOMEM;
	}
	*loop_p = l;
	return 0;
}

void shd_loop_free(struct shd_loop *l)
{
	if (!l)
		return;
	event_base_free(l->base);
	free(l);
}

int shd_loop_run(struct shd_loop *l)
{
	return event_base_dispatch(l->base) < 0 ? -EIO : 0;
}

void shd_loop_stop(struct shd_loop *l)
{
	event_base_loopbreak(l->base);
}

static void trampoline(evutil_socket_t fd, short what, void *arg)
{
	struct shd_ev *e = arg;
	(void)what;
	e->fn((int)fd, e->arg);
}

static struct shd_ev *ev_new(struct shd_loop *l, int fd, short flags, shd_ev_fn fn, void *arg)
{
	struct shd_ev *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->fn = fn;
	e->arg = arg;
	e->fd = fd;
	e->ev = event_new(l->base, fd, flags, trampoline, e);
	if (!e->ev) {
		free(e);
		return NULL;
	}
	return e;
}

struct shd_ev *shd_loop_fd(struct shd_loop *l, int fd, shd_ev_fn fn, void *arg)
{
	struct shd_ev *e = ev_new(l, fd, EV_READ | EV_PERSIST, fn, arg);
	if (e && event_add(e->ev, NULL) < 0) {
		shd_ev_free(e);
		return NULL;
	}
	return e;
}

struct shd_ev *shd_loop_timer(struct shd_loop *l, shd_ev_fn fn, void *arg)
{
	return ev_new(l, -1, 0, fn, arg);
}

struct shd_ev *shd_loop_defer(struct shd_loop *l, shd_ev_fn fn, void *arg)
{
	return ev_new(l, -1, 0, fn, arg);
}

struct shd_ev *shd_loop_signal(struct shd_loop *l, int signo, shd_ev_fn fn, void *arg)
{
	struct shd_ev *e = ev_new(l, signo, EV_SIGNAL | EV_PERSIST, fn, arg);
	if (e && event_add(e->ev, NULL) < 0) {
		shd_ev_free(e);
		return NULL;
	}
	return e;
}

void shd_ev_arm(struct shd_ev *e, uint64_t usec)
{
	struct timeval tv = {(time_t)(usec / 1000000u), (suseconds_t)(usec % 1000000u)};
	event_add(e->ev, &tv);
}

void shd_ev_disarm(struct shd_ev *e)
{
	if (e)
		event_del(e->ev);
}

void shd_ev_watch(struct shd_ev *e)
{
	event_add(e->ev, NULL);
}

bool shd_ev_armed(const struct shd_ev *e)
{
	return event_pending(e->ev, EV_TIMEOUT | EV_READ | EV_SIGNAL, NULL) != 0;
}

void shd_ev_activate(struct shd_ev *e)
{
	/* activating an already active event only merges flags: bursts of
	 * activations run the callback once */
	event_active(e->ev, EV_TIMEOUT, 0);
}

void shd_ev_free(struct shd_ev *e)
{
	if (!e)
		return;
	event_free(e->ev);
	free(e);
}
