/* SPDX-License-Identifier: MIT */
/*
 * daemon/main.c - shuffled: start-up, the loop, shut-down.
 *
 * Start-up order: configuration, log, loop, network + rendezvous (so the
 * node id is known), control socket, then READY=1 to systemd.  SIGTERM and
 * SIGINT stop cleanly (socket and lock removed, regions freed); SIGUSR1
 * writes the whole state to the log.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/budget.h"
#include "daemon/ctlcmd.h"
#include "daemon/events.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/net.h"
#include "daemon/pass.h"
#include "daemon/session.h"
#include "daemon/store.h"

/* systemd's notify protocol: one datagram to $NOTIFY_SOCKET. */
static void sd_notify_ready(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	if (n >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	static const char msg[] = "READY=1";
	if (sendto(fd, msg, sizeof(msg) - 1, 0, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		shd_warn("sd_notify: %s", strerror(errno));
	close(fd);
}

static void on_stop(int sig, void *arg)
{
	struct shd_daemon *d = arg;
	shd_notice("signal %d: stopping", sig);
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
	shd_dump_log(arg);
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
	int rc = 1;
	struct shd_store *store = NULL; /* --store-listen: the key-value store */
	if ((r = shd_loop_new(&d->loop)) < 0 || (r = shd_pass_init(d)) < 0) {
		shd_err("cannot set up the event loop: %s", strerror(-r));
		goto out;
	}
	if (d->cfg.store_listen[0] && (r = shd_store_open_cfg(d->loop, &d->cfg, &store)) < 0)
		goto out; /* store.c said why */
	if ((r = shd_net_open(d, &shd_events)) < 0)
		goto out; /* net.c said why */
	if ((r = shd_ctl_listen(d)) < 0)
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
	sd_notify_ready();
	if (shd_loop_run(d->loop) < 0)
		shd_err("event loop failed");
	else
		rc = 0;
out_ctl:
	for (unsigned i = 0; i < sizeof(d->sig_ev) / sizeof(d->sig_ev[0]); i++)
		shd_ev_free(d->sig_ev[i]);
	shd_ctl_close(d);
out_net:
	shd_net_close(d);
out:
	shd_store_close(store);
	shd_jobtab_free_all(d);
	shd_budget_fini(d);
	shd_pass_fini(d);
	shd_loop_free(d->loop);
	shd_notice("shuffled stopped");
	shd_log_close();
	return rc;
}
