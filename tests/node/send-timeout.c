/* SPDX-License-Identifier: MIT */
/*
 * tests/node/send-timeout.c - a blocking shf_send() honours the context's
 * timeout (shf_opts.timeout_ms): on a send ring that stays full it returns
 * -ETIMEDOUT, having sent nothing of that message, and the caller may retry.
 *
 *   node-send-timeout stall|sigstop|threads
 *
 * Rank 1 (a forked child, poll mode) consumes nothing until told; rank 0
 * (this process) opens with timeout_ms = 400 and sends 1 KiB messages that
 * carry a per-thread sequence number.
 *   stall    the consumer never reads: the rings fill, a send returns
 *            -ETIMEDOUT within bounds; then the consumer reads, the same
 *            message is sent again and 2000 more follow
 *   sigstop  the daemon is stopped (SIGSTOP): the send ring fills, a send
 *            returns -ETIMEDOUT; the daemon continues, the rest as above
 *   threads  two threads send on one context to a stalled consumer: both
 *            get -ETIMEDOUT; then both continue
 *   forever  opened with timeout_ms = -1: the send still blocks 3 s later
 *            (well past the 400 ms of the other modes), and completes once
 *            the consumer reads
 * The consumer checks that every sequence number arrives exactly once and
 * in order, and that the total is what rank 0 reports through a pipe: the
 * timed-out attempts sent nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/daemon.h"
#include "tests/node/seq-consumer.h"

#define LEN 1024
#define TMO_MS 400
#define MORE 2000
#define NTHREADS 2
/* both rings together hold about 2 MiB: far fewer than this many 1 KiB records */
#define FILL_BOUND 100000

static struct td_env *e;
static const char *mode;

/* ---------------------------------------------------------------- rank 0 */

struct sender {
	struct shf_ctx *c;
	uint32_t id;
	uint64_t seq;       /* next sequence number: messages sent so far */
	int64_t tmo_ms;     /* how long the send that timed out took */
	int first_err;      /* what ended the filling */
	int retry_err;      /* what the retry and the rest returned */
};

static int send_seq(struct sender *s)
{
	char buf[LEN] = {0};
	memcpy(buf, &s->seq, sizeof(s->seq));
	int r = shf_send(s->c, 1, s->id, buf, LEN, 0);
	if (r == 0)
		s->seq++;
	return r;
}

/* Send until a send fails; that one is timed. */
static void *fill(void *arg)
{
	struct sender *s = arg;
	for (long i = 0; i < FILL_BOUND; i++) {
		int64_t t0 = td_now_ms();
		int r = send_seq(s);
		if (r) {
			s->tmo_ms = td_now_ms() - t0;
			s->first_err = r;
			return NULL;
		}
	}
	s->first_err = 0; /* never blocked: the test proves nothing */
	return NULL;
}

/* The failed message again, then MORE. */
static void *resume(void *arg)
{
	struct sender *s = arg;
	for (int i = 0; i <= MORE; i++) {
		int r = send_seq(s);
		if (r) {
			s->retry_err = r;
			return NULL;
		}
	}
	return NULL;
}

static void check_timed_out(const struct sender *s)
{
	CHECKF(s->first_err == -ETIMEDOUT, "thread %u: the filling ended with %s after %llu sends, "
	       "not ETIMEDOUT", s->id, s->first_err ? shf_strerror(s->first_err) : "no block",
	       (unsigned long long)s->seq);
	/* within bounds: not before the timeout, not long after it */
	CHECKF(s->tmo_ms >= TMO_MS - 20 && s->tmo_ms <= TMO_MS + 5000,
	       "thread %u: the send timed out after %lld ms (timeout %d ms)", s->id,
	       (long long)s->tmo_ms, TMO_MS);
	fprintf(stderr, "send-timeout: thread %u: -ETIMEDOUT after %llu sends, the blocked call "
		"took %lld ms (timeout %d ms)\n", s->id, (unsigned long long)s->seq,
		(long long)s->tmo_ms, TMO_MS);
}

int main(int argc, char **argv)
{
	mode = argc > 1 ? argv[1] : "stall";
	e = td_init("send-timeout", 90, TD_SOCKET_ENV);
	CHECK(!strcmp(mode, "stall") || !strcmp(mode, "sigstop") || !strcmp(mode, "threads") ||
	      !strcmp(mode, "forever"));
	bool forever = !strcmp(mode, "forever");
	CHECK(td_start(e->d, NULL, NULL) == 0);
	setenv("SHF_JOB", "sendtmo", 1);
	setenv("SHF_SOCKET", e->d->sock, 1);
	int wfd;
	pid_t child;
	struct shf_ctx *c = seq_start(&(struct seq_consumer){.types = NTHREADS, .len = LEN,
					     .timeout_ms = 30000, .max_reports = 0,
					     .wait_sync = "consume", .env = e},
				      forever ? -1 : TMO_MS, &wfd, &child);

	int r;
	int n = !strcmp(mode, "threads") ? NTHREADS : 1;
	struct sender s[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		s[i] = (struct sender){c, (uint32_t)i, 0, 0, 0, 0};
	if (!strcmp(mode, "sigstop"))
		CHECK(kill(e->d->pid, SIGSTOP) == 0);

	pthread_t t[NTHREADS];
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, fill, &s[i]) == 0);
	if (forever) {
		/* asked to wait for ever: still blocked long after TMO_MS */
		td_sleep_ms(3000);
		CHECKF(pthread_tryjoin_np(t[0], NULL) != 0, "with timeout_ms -1 the send returned "
		       "(%s) after %llu sends", shf_strerror(s[0].first_err),
		       (unsigned long long)s[0].seq);
		td_sync_post(e->sync, "consume");
		CHECK(pthread_join(t[0], NULL) == 0);
		CHECKF(s[0].first_err == 0, "with timeout_ms -1: %s", shf_strerror(s[0].first_err));
		/* fill stopped at FILL_BOUND sends without an error: all of them went */
		r = shf_flush(c, SHF_FLUSH_REMOTE, 20000);
		CHECKF(r == 0, "shf_flush: %s (%s)", shf_strerror(r), shf_error_detail());
		dprintf(wfd, "%llu\n", (unsigned long long)s[0].seq);
		close(wfd);
		CHECKF(td_wait(child, 30000) == 0, "the consumer saw a missing, duplicated or extra "
		       "message");
		shf_close(c);
		fprintf(stderr, "send-timeout forever: blocked past 3 s, then %llu messages "
			"delivered exactly once\n", (unsigned long long)s[0].seq);
		return 0;
	}
	/* a send that ignores the timeout blocks for good: give up well after it */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 15;
	for (int i = 0; i < n; i++)
		CHECKF(pthread_timedjoin_np(t[i], NULL, &until) == 0,
		       "thread %d: shf_send still blocked 15 s after it started filling, %llu sends "
		       "in (timeout_ms %d)", i, (unsigned long long)s[i].seq, TMO_MS);
	for (int i = 0; i < n; i++)
		check_timed_out(&s[i]);

	/* the context is still usable: let things move and carry on */
	if (!strcmp(mode, "sigstop"))
		CHECK(kill(e->d->pid, SIGCONT) == 0);
	td_sync_post(e->sync, "consume");
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, resume, &s[i]) == 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	unsigned long long total = 0;
	for (int i = 0; i < n; i++) {
		CHECKF(s[i].retry_err == 0, "thread %d: sending after the timeout: %s (%s)", i,
		       shf_strerror(s[i].retry_err), shf_error_detail());
		total += s[i].seq;
	}
	r = shf_flush(c, SHF_FLUSH_REMOTE, 20000);
	CHECKF(r == 0, "shf_flush: %s (%s)", shf_strerror(r), shf_error_detail());
	dprintf(wfd, "%llu\n", total);
	close(wfd);
	CHECKF(td_wait(child, 30000) == 0, "the consumer saw a missing, duplicated or extra message");
	shf_close(c);
	fprintf(stderr, "send-timeout %s: %llu messages delivered exactly once\n", mode, total);
	return 0;
}
