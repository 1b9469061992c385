/* SPDX-License-Identifier: MIT */
/*
 * daemon/main.c - shuffled: start-up, the loop, shut-down.
 *
 * Start-up order: configuration, log, loop, network + rendezvous (so the
 * node id is known), control socket, then READY=1 to systemd (notify.c:
 * STATUS=, WATCHDOG=1 from a timer, STOPPING=1).  SIGTERM and SIGINT stop
 * cleanly (socket and lock file removed, regions freed); SIGHUP reopens
 * the log file; SIGUSR1 writes the whole state to the log.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/budget.h"
#include "daemon/admin/ctlcmd.h"
#include "daemon/events.h"
#include "daemon/admin/fanout.h"
#include "daemon/jobtab.h"
#include "daemon/jobhome.h"
#include "daemon/log.h"
#include "daemon/net/net.h"
#include "daemon/notify.h"
#include "daemon/pass.h"
#include "daemon/session.h"
#include "daemon/store.h"

/* "nodes up 3/4, jobs 2, clients 17": the service's STATUS= line */
static void status_line(struct shd_daemon *d, char *buf, size_t n)
{
	unsigned jobs = 0, clients = 0;
	const struct shd_list *p;
	for (p = d->jobs.next; p != &d->jobs; p = p->next)
		jobs++;
	for (p = d->clients.next; p != &d->clients; p = p->next)
		clients += shd_container_of(p, struct shd_client, all_link)->job != NULL;
	snprintf(buf, n, "nodes up %u/%u, jobs %u, clients %u", shd_net_nodes_up(d),
		 shd_net_members(d), jobs, clients);
}

/* Under systemd: STATUS= when it changes and WATCHDOG=1, from one timer
 * that fires every half watchdog period (at most every 2 s). */
#define NOTIFY_STATUS_USEC 2000000u
static struct {
	struct shd_ev *timer;
	uint64_t period_us; /* the timer's period */
	uint64_t watchdog_us; /* 0: no watchdog */
	bool warned;        /* one log line for a failing notify socket */
} notify;

static void notify_check(int r, const char *what)
{
	if (r < 0 && !notify.warned) {
		notify.warned = true;
		shd_warn("sd_notify %s: %s (further failures are not logged)", what, strerror(-r));
	}
}

static void on_notify_tick(int fd, void *arg)
{
	struct shd_daemon *d = arg;
	char st[128];
	(void)fd;
	if (notify.watchdog_us)
		notify_check(shd_notify_watchdog(), "WATCHDOG=1");
	status_line(d, st, sizeof(st));
	notify_check(shd_notify_status(st), "STATUS");
	shd_ev_arm(notify.timer, notify.period_us);
}

/* READY=1 and, under systemd, the timer. */
static int notify_start(struct shd_daemon *d)
{
	char st[128];
	status_line(d, st, sizeof(st));
	notify_check(shd_notify_ready(st), "READY=1");
	if (!shd_notify_enabled())
		return 0;
	notify.watchdog_us = shd_notify_watchdog_usec();
	notify.period_us = NOTIFY_STATUS_USEC;
	if (notify.watchdog_us && notify.watchdog_us / 2 < notify.period_us)
		notify.period_us = notify.watchdog_us / 2 ? notify.watchdog_us / 2 : 1;
	if (!(notify.timer = shd_loop_timer(d->loop, on_notify_tick, d)))
		return -ENOMEM;
	shd_ev_arm(notify.timer, notify.period_us);
	if (notify.watchdog_us)
		shd_info("systemd watchdog: %llu ms, fed every %llu ms",
			 (unsigned long long)(notify.watchdog_us / 1000),
			 (unsigned long long)(notify.period_us / 1000));
	return 0;
}

static void on_stop(int sig, void *arg)
{
	struct shd_daemon *d = arg;
	shd_notice("signal %d: stopping", sig);
	if (!d->stopping)
		notify_check(shd_notify_stopping(), "STOPPING=1");
	d->stopping = true;
	shd_loop_stop(d->loop);
}

static void on_hup(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	if (shd_log_reopen() < 0)
		shd_err("SIGHUP: cannot reopen the log file");
	else
		shd_notice("SIGHUP: log reopened");
}

static void on_usr1(int sig, void *arg)
{
	(void)sig;
	shd_ctlcmd_dump_log(arg);
}

int main(int argc, char **argv)
{
	static struct shd_daemon daemon_state;
	struct shd_daemon *d = &daemon_state;
	char err[512] = "";
	int r = shd_config_load(&d->cfg, argc, argv, err, sizeof(err));
	if (r == 1)
		return 0;
	if (r < 0) {
		fprintf(stderr, "shuffled: %s\n", err);
		return 2;
	}
	if ((r = shd_log_open(d->cfg.log_file, d->cfg.log_level, -1)) < 0) {
		fprintf(stderr, "shuffled: cannot open log %s: %s\n", d->cfg.log_file, strerror(-r));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* SIGTERM/SIGINT wait (pending) until the loop handles them: a signal
	 * during libfabric's start-up would otherwise run a provider library's
	 * handler, which exit()s into a deadlock in libfabric's destructors */
	sigset_t stop_sigs, old_sigs;
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGHUP);
	sigaddset(&stop_sigs, SIGUSR1);
	sigprocmask(SIG_BLOCK, &stop_sigs, &old_sigs);
	d->start_ns = shd_now_ns();
	d->lock_fd = d->listen_fd = -1;
	d->n_nodes = 1;
	shd_list_init(&d->clients);
	shd_list_init(&d->jobs);
	shd_list_init(&d->homes);
	int rc = 1;
	struct shd_store *store = NULL; /* --store-listen: the key-value store */
	if ((r = shd_loop_new(&d->loop)) < 0 || (r = shd_pass_init(d)) < 0) {
		shd_err("cannot set up the event loop: %s", strerror(-r));
		goto out;
	}
	if (d->cfg.store_listen[0] && (r = shd_store_open_cfg(d->loop, &d->cfg, &store)) < 0)
		goto out; /* store.c said why */
	d->job_ev = &shd_job_events;
	if ((r = shd_net_open(d, &shd_events)) < 0)
		goto out; /* net.c said why */
	if ((r = shd_fanout_open(d, &shd_ctlcmd_fanout)) < 0) {
		shd_err("cannot set up the fan-out: %s", strerror(-r));
		goto out_net;
	}
	if ((r = shd_session_listen(d)) < 0)
		goto out_net;
	d->sig_ev[0] = shd_loop_signal(d->loop, SIGTERM, on_stop, d);
	d->sig_ev[1] = shd_loop_signal(d->loop, SIGINT, on_stop, d);
	d->sig_ev[2] = shd_loop_signal(d->loop, SIGUSR1, on_usr1, d);
	d->sig_ev[3] = shd_loop_signal(d->loop, SIGHUP, on_hup, d);
	if (!d->sig_ev[0] || !d->sig_ev[1] || !d->sig_ev[2] || !d->sig_ev[3]) {
		shd_err("cannot install signal handlers");
		goto out_ctl;
	}
	sigprocmask(SIG_SETMASK, &old_sigs, NULL);
	shd_notice("shuffled %s started: node %u of %u (%s), socket %s, pid %d", SHF_VERSION,
		   d->node_id, d->n_nodes, d->cfg.node_name, d->cfg.socket_path, (int)getpid());
	if (notify_start(d) < 0) {
		shd_err("cannot set up the notify timer");
		goto out_ctl;
	}
	if (shd_loop_run(d->loop) < 0)
		shd_err("event loop failed");
	else
		rc = 0;
out_ctl:
	shd_ev_free(notify.timer);
	notify.timer = NULL;
	for (unsigned i = 0; i < sizeof(d->sig_ev) / sizeof(d->sig_ev[0]); i++)
		shd_ev_free(d->sig_ev[i]);
	shd_session_close(d);
	shd_home_leaves_all(d); /* the leaves of the sessions just closed */
out_net:
	shd_fanout_close(d);
	shd_net_close(d);
out:
	shd_store_close(store);
	shd_jobtab_free_all(d);
	shd_home_free_all(d);
	shd_budget_fini(d);
	shd_pass_fini(d);
	shd_loop_free(d->loop);
	shd_notice("shuffled stopped");
	shd_log_close();
	return rc;
}
