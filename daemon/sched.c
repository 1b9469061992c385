/* SPDX-License-Identifier: MIT */
/*
 * daemon/sched.c - the run queue and the pass event (sched.h).
 */
#include <errno.h>

#include "daemon/sched.h"

int shd_sched_init(struct shd_daemon *d, shd_ev_fn fn)
{
	shd_list_init(&d->runq);
	shd_list_init(&d->dirty);
	shd_list_init(&d->marks);
	shd_list_init(&d->doomed);
	shd_list_init(&d->ended);
	d->pass_ev = shd_loop_defer(d->loop, fn, d);
	return d->pass_ev ? 0 : -ENOMEM;
}

void shd_sched_fini(struct shd_daemon *d)
{
	shd_ev_free(d->pass_ev);
	d->pass_ev = NULL;
}

void shd_sched_pass(struct shd_daemon *d)
{
	shd_ev_activate(d->pass_ev);
}

void shd_sched_kick(struct shd_client *c)
{
	if (c->blocked || c->doomed || shd_list_linked(&c->run_link) || !c->region)
		return;
	if (c->state != SHD_SESS_ACTIVE && c->state != SHD_SESS_DRAINING)
		return; /* nothing flows before the world is complete */
	shd_list_add_tail(&c->d->runq, &c->run_link);
	shd_ev_activate(c->d->pass_ev);
}

static void client_unblock(struct shd_waiter *w)
{
	struct shd_client *c = shd_container_of(w, struct shd_client, wait);
	c->blocked = false;
	shd_sched_kick(c);
}

void shd_sched_client_init(struct shd_client *c)
{
	shd_list_init(&c->run_link);
	shd_list_init(&c->dirty_link);
	shd_list_init(&c->mark_link);
	shd_list_init(&c->doom_link);
	shd_list_init(&c->waiters);
	shd_list_init(&c->wait.link);
	c->wait.wake = client_unblock;
}

void shd_sched_wake(struct shd_list *waiters)
{
	struct shd_list woken, *p, *t;
	shd_list_init(&woken);
	shd_list_splice_tail(&woken, waiters);
	shd_list_for_each_safe(p, t, &woken) {
		struct shd_waiter *w = shd_container_of(p, struct shd_waiter, link);
		shd_list_del(&w->link);
		w->wake(w);
	}
}
