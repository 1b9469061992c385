/* SPDX-License-Identifier: MIT */
/*
 * daemon/pass.c - the loop's order.
 *
 * The loop (loop.c, libevent) runs I/O callbacks and timers: bells, control
 * sockets, fabric completions, linger and heartbeat timers.  Those only
 * record work: a client to relay, a ring to publish, a mark to answer, a
 * session to cut off, a peer that failed, a job that may have ended.  Then,
 * once per loop iteration when anything was recorded (sched.h), one pass
 * does it all, in this order:
 *
 *   1. relay     drain the clients' send rings: local messages into
 *                delivery rings, remote ones into per-node batches
 *                (relay.c -> deliver.c, net/tx.c)
 *   2. publish   one release store per dirty delivery ring, bells rung
 *                (deliver.c)
 *   3. network   close the batches that go now (linger_us 0, or an idle
 *                link), ACK the batches placed (only now, after the
 *                publish; ack_delay_us may hold them for the ACK timer's
 *                pass), announce newly registered ranks to their jobs'
 *                homes (jobhome.c)
 *   4. marks     answer the flushes and count the epoch marks whose
 *                records are now in place everywhere (relay.c -> epoch.c)
 *   5. clients   free the sessions cut off or drained since the last pass
 *                (session.c); their ranks leave their jobs
 *   6. peers     carry out the peers that failed since the last pass: drop
 *                and count what was queued for them, fail their marks,
 *                their ranks are lost (net.c -> events.c -> job.c)
 *   7. jobs      free the jobs nothing refers to any more (job.c)
 *
 * Steps 5-7 are the only places where a session, a peer's queues or a job
 * are torn down: everything else marks and queues (shd_client_cutoff,
 * peer failure inside net, job_maybe_end), so no update ever runs with
 * the object it is updating freed under it.  Each step may queue work for
 * an earlier one (a freed client wakes its waiters, a lost peer wakes the
 * clients blocked on it): the pass then runs again in the next iteration.
 * Fabric progress is its own deferred event (net.c), kicked by step 3.
 */
#include "daemon/job.h"
#include "daemon/jobhome.h"
#include "daemon/deliver.h"
#include "daemon/net/net.h"
#include "daemon/pass.h"
#include "daemon/relay.h"
#include "daemon/sched.h"
#include "daemon/session.h"

static void pass(int fd, void *arg)
{
	struct shd_daemon *d = arg;
	shd_relay_run(d);              /* 1 */
	shd_deliver_publish(d);        /* 2 */
	if (d->net) {
		shd_home_flush(d);        /* 3: joins to the jobs' homes (jobhome.c) */
		shd_net_after_publish(d);
	}
	shd_relay_answer_marks(d);     /* 4 */
	shd_session_reap(d);           /* 5 */
	if (d->net)
		shd_net_reap(d);       /* 6 */
	shd_job_reap(d);               /* 7 */
	if (!shd_list_empty(&d->runq) || !shd_list_empty(&d->dirty) ||
	    !shd_list_empty(&d->marks) || !shd_list_empty(&d->doomed))
		shd_sched_pass(d);
}

int shd_pass_init(struct shd_daemon *d)
{
	return shd_sched_init(d, pass);
}

void shd_pass_fini(struct shd_daemon *d)
{
	shd_sched_fini(d);
}
