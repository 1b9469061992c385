/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-flood.c - the daemon's log under a flood of bad clients.
 *
 * 200 connections each send one garbage datagram.  Every one of them is
 * cut off (daemon.disc_proto counts 200), but the log stays bounded: the
 * "cut off" warnings go through a rate limiter of SHD_RATELIMIT_INIT(1000,
 * 10) in daemon/session.c (10 lines per 1 s interval), so the log holds at
 * most 10 such lines per interval the flood spanned, and the rest are
 * accounted for by "N similar messages suppressed" lines.  One more bad
 * client after the flood (more than an interval later) makes the daemon
 * report the last interval's count, so printed + suppressed must equal the
 * number of bad clients exactly.  Afterwards the daemon still answers.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define BAD_CLIENTS 200
#define RL_BURST 10         /* daemon/session.c rl_fail */
#define RL_INTERVAL_MS 1000 /* daemon/session.c rl_fail */

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s", strerror(errno));
	return fd;
}

static void send_garbage(int fd, unsigned seed)
{
	unsigned char junk[64];
	for (size_t i = 0; i < sizeof(junk); i++) {
		seed = seed * 1103515245u + 12345u;
		junk[i] = (unsigned char)(seed >> 16);
	}
	junk[0] = 'X'; /* never the magic */
	CHECKF(send(fd, junk, sizeof(junk), MSG_NOSIGNAL) == (ssize_t)sizeof(junk), "send: %s",
	       strerror(errno));
}

/* Read until the daemon hangs up; the ERROR it sends first is allowed. */
static void wait_hangup(int *fds, int n, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	int open_n = n;
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	CHECK(p);
	while (open_n > 0) {
		int k = 0;
		for (int i = 0; i < n; i++) {
			p[i].fd = fds[i];
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		int left = (int)(end - td_now_ms());
		CHECKF(left > 0, "%d bad clients were never cut off", open_n);
		k = poll(p, (nfds_t)n, left);
		CHECK(k >= 0 || errno == EINTR);
		for (int i = 0; i < n; i++) {
			if (fds[i] < 0 || !p[i].revents)
				continue;
			char buf[1024];
			ssize_t r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (r > 0 || (r < 0 && errno == EAGAIN))
				continue;
			close(fds[i]);
			fds[i] = -1;
			open_n--;
		}
	}
	free(p);
}

static unsigned count_lines(const char *log, const char *needle, unsigned long long *sum)
{
	unsigned n = 0;
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
		n++;
		if (sum) {
			/* "... WARN: 123 similar messages suppressed" */
			const char *q = p;
			while (q > log && q[-1] == ' ')
				q--;
			while (q > log && q[-1] >= '0' && q[-1] <= '9')
				q--;
			*sum += strtoull(q, NULL, 10);
		}
	}
	return n;
}

int main(void)
{
	struct td_env *e = td_init("ctl-flood", 120, 0);
	struct td_daemon *d = e->d;
	CHECK(td_start(d, (const char *const[]){"--max-clients", "1024", NULL}, NULL) == 0);

	static int fds[BAD_CLIENTS];
	for (int i = 0; i < BAD_CLIENTS; i++)
		fds[i] = connect_to(d->sock);
	int64_t t0 = td_now_ms();
	for (int i = 0; i < BAD_CLIENTS; i++)
		send_garbage(fds[i], (unsigned)i);
	wait_hangup(fds, BAD_CLIENTS, 60000);
	int64_t t1 = td_now_ms();

	/* one more, a whole interval later: reports what the flood's last
	 * interval suppressed */
	td_sleep_ms(RL_INTERVAL_MS + 200);
	int last = connect_to(d->sock);
	send_garbage(last, 4242);
	wait_hangup(&last, 1, 20000);

	/* the daemon is still fine */
	struct td_out o;
	td_ctl(d->sock, &o, "ping", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "pong"), "ping after the flood: %d %s", o.status,
	       o.err);
	td_out_free(&o);
	json_t *st = td_ctl_json(d->sock, "stats");
	CHECKF(td_num(st, "daemon.disc_proto") == BAD_CLIENTS + 1, "disc_proto %lld",
	       td_num(st, "daemon.disc_proto"));
	CHECK(td_num(st, "daemon.clients_attached") == 0);
	json_decref(st);
	json_t *cl = td_ctl_json(d->sock, "clients");
	CHECK(json_array_size(json_object_get(cl, "clients")) == 0);
	json_decref(cl);
	json_t *status = td_ctl_json(d->sock, "status");
	CHECKF(td_num(status, "sessions") == 1, "sessions %lld (bad clients not freed?)",
	       td_num(status, "sessions"));
	json_decref(status);
	td_stop(d);

	char *log = td_read_file(d->log);
	unsigned long long suppressed = 0;
	unsigned cut = count_lines(log, ") cut off: ", NULL);
	unsigned sup_lines = count_lines(log, " similar messages suppressed", &suppressed);
	long long intervals = (t1 - t0) / RL_INTERVAL_MS + 1;
	fprintf(stderr, "ctl-flood: %u cut-off lines, %u suppressed lines (%llu messages) over "
		"%lld ms\n", cut, sup_lines, suppressed, (long long)(t1 - t0));
	CHECKF(cut >= 2, "only %u cut-off lines", cut);
	CHECKF(cut <= RL_BURST * intervals + 1, "%u cut-off lines for a flood of %lld ms (at most "
	       "%d per %d ms)", cut, (long long)(t1 - t0), RL_BURST, RL_INTERVAL_MS);
	CHECKF(cut + suppressed == BAD_CLIENTS + 1, "%u printed + %llu suppressed != %d", cut,
	       suppressed, BAD_CLIENTS + 1);
	if (cut < BAD_CLIENTS + 1)
		CHECKF(sup_lines >= 1 && sup_lines <= (unsigned)intervals,
		       "%u suppressed lines for %lld intervals", sup_lines, intervals);
	/* the reason is in the log: what was wrong with the message */
	CHECKF(strstr(log, "malformed control message"), "no reason in the log");
	free(log);
	return 0;
}
