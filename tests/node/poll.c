/* SPDX-License-Identifier: MIT */
/*
 * tests/node/poll.c - bounded polling of the send rings (option poll_us,
 * issue 13): while a client's records keep coming, the daemon polls its
 * send ring instead of arming the doorbell and sleeping; once they stop,
 * it sleeps again within poll_us, and an idle daemon uses about 0 CPU.
 *
 * Rank 0 sends N messages, each followed by a REMOTE flush (so the next
 * one comes a socket round trip after the daemon took the previous one;
 * no sleeps in the test), to rank 1, which counts them.  The daemon's
 * per-client counters say what it did with rank 0's send ring:
 *   send_sleeps  it found the ring empty and slept on the bell
 *   send_polls   it found the ring empty and polled again
 * With poll_us=0: it sleeps after every message (send_sleeps >= N/2),
 * never polls.  With poll_us=200000 (the gaps are far shorter): it polls
 * (send_polls > 0) and sleeps at most N/4 times; then, with no traffic,
 * send_polls stops growing (it backed off to the bell) and its CPU over 1 s
 * (/proc/PID/schedstat) stays under 2% of a core, as in multi-idle.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/daemon.h"

#define N 40

static long got, bad;

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg;
	(void)dst;
	(void)data;
	if (src != 0 || type != 7 || len != 16)
		bad++;
	else
		got++;
}

static int consumer(const char *job)
{
	struct shf_opts o;
	shf_opts_init(&o);
	o.job = job;
	o.rank = 1;
	o.world = 2;
	o.delivery_thread = 0;
	o.timeout_ms = 30000;
	struct shf_ctx *c;
	int r = shf_open(&o, on_msg, NULL, &c);
	if (r) {
		fprintf(stderr, "consumer: shf_open: %s\n", shf_strerror(r));
		return 1;
	}
	for (int64_t end = td_now_ms() + 30000; got < N && td_now_ms() < end;) {
		r = shf_poll(c, 100);
		if (r < 0) {
			fprintf(stderr, "consumer: shf_poll: %s\n", shf_strerror(r));
			return 1;
		}
	}
	shf_poll(c, 100); /* anything beyond N */
	fprintf(stderr, "consumer: %ld delivered of %d, %ld bad\n", got, N, bad);
	shf_close(c);
	return got == N && bad == 0 ? 0 : 1;
}

static long long stat_of(const struct td_daemon *d, const char *job, const char *name)
{
	json_t *doc = td_query(d, "clients");
	CHECK(doc != NULL);
	json_t *cl = td_client_find(doc, job, 0);
	CHECKF(cl != NULL, "no client rank 0 of job %s", job);
	json_t *v = json_object_get(json_object_get(cl, "stats"), name);
	CHECKF(json_is_integer(v), "client stats have no %s", name);
	long long n = json_integer_value(v);
	json_decref(doc);
	return n;
}

static long long cpu_ns(pid_t pid)
{
	char path[64], *s;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	s = td_read_file(path);
	CHECKF(s != NULL, "cannot read %s", path);
	long long ns = atoll(s);
	free(s);
	return ns;
}

/* One daemon with poll_us; returns rank 0's send_sleeps and send_polls
 * after the N sends, with rank 0 still attached (held until *done). */
static void run(struct td_daemon *d, const char *poll_arg, const char *job, bool idle_check)
{
	const char *args[] = {poll_arg, NULL};
	CHECK(td_start(d, args, NULL) == 0);
	setenv("SHF_SOCKET", d->sock, 1);
	pid_t child = td_fork();
	CHECK(child >= 0);
	if (child == 0)
		_exit(consumer(job));

	struct shf_opts o;
	shf_opts_init(&o);
	o.job = job;
	o.rank = 0;
	o.world = 2;
	o.timeout_ms = 30000;
	struct shf_ctx *c;
	int r = shf_open(&o, on_msg, NULL, &c);
	CHECKF(r == 0, "shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	long long s0 = stat_of(d, job, "send_sleeps");
	char buf[16] = {0};
	for (int i = 0; i < N; i++) {
		r = shf_send(c, 1, 7, buf, sizeof(buf), 0);
		CHECKF(r == 0, "send %d: %s", i, shf_strerror(r));
		r = shf_flush(c, SHF_FLUSH_REMOTE, 10000);
		CHECKF(r == 0, "flush %d: %s", i, shf_strerror(r));
	}
	long long sleeps = stat_of(d, job, "send_sleeps") - s0;
	long long polls = stat_of(d, job, "send_polls");
	fprintf(stderr, "poll: %s: %d sends+flushes: send_sleeps %lld, send_polls %lld\n",
		poll_arg, N, sleeps, polls);
	CHECKF(td_wait(child, 30000) == 0, "%s: the consumer did not get its %d messages",
	       poll_arg, N);
	if (!idle_check) {
		CHECKF(sleeps >= N / 2, "%s: the daemon slept %lld times in %d gaps", poll_arg,
		       sleeps, N);
		CHECKF(polls == 0, "%s: the daemon polled %lld times", poll_arg, polls);
	} else {
		CHECKF(polls > 0, "%s: the daemon never polled the send ring", poll_arg);
		CHECKF(sleeps <= N / 4, "%s: the daemon slept %lld times in %d short gaps",
		       poll_arg, sleeps, N);
		/* traffic stopped: it stops polling within poll_us (send_polls
		 * stays put over longer than the window; a condition, polled) and
		 * then uses about 0 CPU */
		long long p0 = stat_of(d, job, "send_polls"), p1 = -1;
		for (int64_t end = td_now_ms() + 10000; td_now_ms() < end; p0 = p1) {
			td_sleep_ms(300);
			p1 = stat_of(d, job, "send_polls");
			if (p1 == p0)
				break;
		}
		CHECKF(p1 == p0, "%s: no traffic for 10 s and the daemon still polls "
		       "(send_polls %lld -> %lld)", poll_arg, p0, p1);
		CHECKF(stat_of(d, job, "send_sleeps") > s0,
		       "%s: the daemon stopped polling without sleeping on the bell", poll_arg);
		long long c0 = cpu_ns(d->pid), t0 = td_now_ms();
		td_sleep_ms(1000);
		long long c1 = cpu_ns(d->pid), t1 = td_now_ms();
		double pct = 100.0 * (double)(c1 - c0) / (1e6 * (double)(t1 - t0));
		fprintf(stderr, "poll: idle daemon after traffic: %lld us of CPU in %lld ms = "
			"%.3f%% of a core\n", (c1 - c0) / 1000, t1 - t0, pct);
		CHECKF(pct < 2.0, "an idle daemon used %.3f%% of a core (bound 2%%)", pct);
	}
	shf_close(c);
	td_stop(d);
}

int main(void)
{
	struct td_env *e = td_init("poll", 100, 0);
	run(e->d, "--poll-us=0", "poll0", false);
	run(td_daemon("p"), "--poll-us=200000", "poll200", true);
	return check_result();
}
