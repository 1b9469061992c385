/* SPDX-License-Identifier: MIT */
/*
 * daemon/sleeper.c - the sleeper pays (sleeper.h).
 *
 * A fence-free client stores its send ring's head and then loads the
 * ring's cons_wait flag with no fence between ([M1]): the store may still
 * sit in its CPU's store buffer when the load runs, so the daemon's [D1]
 * re-check may miss the new head while the client misses the flag, and
 * nobody rings the bell.  The daemon closes that window itself ([M2]):
 * every armed fence-free ring is listed here, and sleeper_wait_us later
 * (one one-shot timer for all of them, armed by the first) the daemon
 * runs membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), a full barrier on
 * every CPU that runs a thread of a registered process, and re-loads each
 * listed ring's head.  A publish whose head store preceded that barrier
 * is visible now; one after it sees the flag and rings.  Rings whose flag
 * was taken meanwhile (the client saw it and rang, or the relay took
 * records) need no barrier; if no listed ring still has its flag, none is
 * run.  So an idle daemon pays one membarrier (about 20 us) after the
 * last traffic and then sleeps without a timer: about 0 CPU.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/sched.h"
#include "daemon/sleeper.h"
#include "proto/ring.h"

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/* The timer: barrier, then re-check every listed ring. */
static void on_timer(int fd, void *arg)
{
	(void)fd;
	struct shd_daemon *d = arg;
	bool need = false;
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->sleepers) {
		struct shd_client *c = shd_container_of(p, struct shd_client, sleep_link);
		if (!c->doomed && shf_ring_cons_armed(&c->send))
			need = true;
	}
	if (need) {
		if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) {
			/* QUERY said it works; if it stops working, no listed
			 * ring may sleep for good: look again after the wait,
			 * and offer the fence-free path to nobody new */
			shd_err("membarrier(GLOBAL_EXPEDITED) failed: %s; fence-free send rings "
				"are now polled every %u us", strerror(errno), d->cfg.sleeper_wait_us);
			d->sleeper_ok = false;
			shd_ev_arm(d->sleeper_timer, d->cfg.sleeper_wait_us ? d->cfg.sleeper_wait_us
									     : 1000u);
			shd_list_for_each_safe(p, t, &d->sleepers) {
				struct shd_client *c =
					shd_container_of(p, struct shd_client, sleep_link);
				if (!c->doomed && shf_ring_cons_avail(&c->send))
					shd_sched_kick(c);
			}
			return;
		}
		d->st.sleep_barriers++;                                       /* [M2] */
	}
	shd_list_for_each_safe(p, t, &d->sleepers) {
		struct shd_client *c = shd_container_of(p, struct shd_client, sleep_link);
		shd_list_del(&c->sleep_link);
		/* a flag taken meanwhile: the client rang, or the relay took
		 * records; either way the loop will look at the ring */
		if (c->doomed || !shf_ring_cons_armed(&c->send))
			continue;
		if (shf_ring_cons_recheck(&c->send)) {                        /* [M2] */
			d->st.sleep_barrier_wakes++;
			shd_sched_kick(c);
		}
	}
}

int shd_sleeper_init(struct shd_daemon *d)
{
	shd_list_init(&d->sleepers);
	d->sleeper_ok = false;
	if (!d->cfg.sleeper_pays)
		return 0;
	long q = membarrier(MEMBARRIER_CMD_QUERY);
	if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED)) {
		shd_info("membarrier(GLOBAL_EXPEDITED) is not available (%s): every client "
			 "keeps the fence on its send ring", q < 0 ? strerror(errno) : "not offered");
		return 0;
	}
	d->sleeper_timer = shd_loop_timer(d->loop, on_timer, d);
	if (!d->sleeper_timer)
		return -ENOMEM;
	d->sleeper_ok = true;
	return 0;
}

void shd_sleeper_fini(struct shd_daemon *d)
{
	shd_ev_free(d->sleeper_timer);
	d->sleeper_timer = NULL;
	d->sleeper_ok = false;
}

bool shd_sleeper_can_pay(const struct shd_daemon *d)
{
	return d->sleeper_ok;
}

void shd_sleeper_armed(struct shd_client *c)
{
	struct shd_daemon *d = c->d;
	if (!shd_list_linked(&c->sleep_link))
		shd_list_add_tail(&d->sleepers, &c->sleep_link);
	/* one timer for all: a ring armed while it runs is covered by that
	 * barrier too (armed before it fires) */
	if (!shd_ev_armed(d->sleeper_timer))
		shd_ev_arm(d->sleeper_timer, d->cfg.sleeper_wait_us);
}

void shd_sleeper_forget(struct shd_client *c)
{
	shd_list_del(&c->sleep_link);
}
