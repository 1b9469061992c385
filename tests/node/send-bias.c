/* SPDX-License-Identifier: MIT */
/*
 * tests/node/send-bias.c - the send side's biased lock (client/data.c
 * send_enter, docs/ring.md [L1]-[L3]): the thread that opened a context
 * sends without the mutex until a second thread sends; from then on every
 * thread takes the mutex.  The hand-over must lose, duplicate or reorder
 * nothing.  Messages are 8 KiB, so a section (the copy into the ring) is
 * long enough that two threads inside one at once, were the lock broken,
 * corrupt the ring or reorder a thread's messages within a few thousand
 * sends (a lock whose owner ignored the revocation failed 2 runs in 4
 * here; under TSan it is a data race on every overlap).
 *
 *   node-send-bias [THREADS [MSGS]]
 *
 * Rank 1 (a forked child, poll mode) checks every message: per sending
 * thread (the message type) sequence numbers arrive exactly once and in
 * order, and the total is what rank 0 reports through a pipe.  Rank 0
 * (this process, thread mode) sends:
 *   1. MSGS messages from the opening thread alone (the fast path);
 *      every send is SHF_NONBLOCK and retried on -EAGAIN, so no thread
 *      sleeps and the threads' sections overlap as often as they can;
 *   2. THREADS more threads start and each sends MSGS while the opening
 *      thread sends MSGS more at the same time: the bias is revoked while
 *      the owner is inside its section, as often as the timing allows;
 *   3. a REMOTE flush from a helper thread and one from the owner.
 * shf_stats' sent_msgs must equal the number of sends that returned 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/daemon.h"
#include "tests/node/seq-consumer.h"

#define LEN 8192
#define MAXT 8

static struct td_env *e;

/* ---------------------------------------------------------------- rank 0 */

struct sender {
	struct shf_ctx *c;
	uint32_t id;   /* message type: 0 the owner, 1.. the helpers */
	long n;        /* sends to make */
	uint64_t seq;  /* next sequence number: sends that returned 0 */
	int err;       /* first error */
	uint64_t eagain; /* full-ring retries */
	bool flush;    /* end with a REMOTE flush */
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;
	char buf[LEN] = {0};
	for (long i = 0; i < s->n; i++) {
		memcpy(buf, &s->seq, sizeof(s->seq));
		/* SHF_NONBLOCK and retry: the threads never sleep, so their
		 * sections overlap as often as the cores allow */
		int r;
		while ((r = shf_send(s->c, 1, s->id, buf, LEN, SHF_NONBLOCK)) == -EAGAIN)
			s->eagain++;
		if (r) {
			s->err = r;
			return NULL;
		}
		s->seq++;
	}
	if (s->flush) {
		int r = shf_flush(s->c, SHF_FLUSH_REMOTE, 30000);
		if (r)
			s->err = r;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 3;
	long msgs = argc > 2 ? atol(argv[2]) : 10000;
	e = td_init("send-bias", 110, TD_SOCKET_ENV);
	CHECK(nt >= 1 && nt <= MAXT && msgs > 0);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	setenv("SHF_JOB", "sendbias", 1);
	setenv("SHF_SOCKET", e->d->sock, 1);
	int wfd;
	pid_t child;
	struct shf_ctx *c = seq_start(&(struct seq_consumer){.types = MAXT + 1, .len = LEN,
					     .timeout_ms = 60000, .max_reports = 10,
					     .wait_sync = NULL, .env = e},
				      60000, &wfd, &child);

	/* 1. the owner alone */
	struct sender s[MAXT + 1];
	for (int i = 0; i <= nt; i++)
		s[i] = (struct sender){c, (uint32_t)i, msgs, 0, 0, 0, i == 1};
	send_loop(&s[0]);
	CHECKF(s[0].err == 0, "owner alone: %s", shf_strerror(s[0].err));
	struct shf_stats st;
	CHECK(shf_stats_get(c, &st) == 0);
	CHECKF(st.sent_msgs == (uint64_t)msgs, "sent_msgs %llu after %ld sends",
	       (unsigned long long)st.sent_msgs, msgs);

	/* 2. helpers and the owner at once (the owner's section is revoked) */
	pthread_t t[MAXT + 1];
	for (int i = 1; i <= nt; i++)
		CHECK(pthread_create(&t[i], NULL, send_loop, &s[i]) == 0);
	s[0].n = msgs;
	send_loop(&s[0]);
	for (int i = 1; i <= nt; i++)
		pthread_join(t[i], NULL);
	uint64_t total = 0;
	for (int i = 0; i <= nt; i++) {
		CHECKF(s[i].err == 0, "thread %d: %s (%s)", i, shf_strerror(s[i].err),
		       shf_error_detail());
		total += s[i].seq;
	}
	CHECKF(total == (uint64_t)msgs * (uint64_t)(nt + 2), "sent %llu, wanted %llu",
	       (unsigned long long)total, (unsigned long long)msgs * (uint64_t)(nt + 2));

	/* 3. the owner again, now through the mutex */
	int r = shf_flush(c, SHF_FLUSH_REMOTE, 30000);
	CHECKF(r == 0, "owner's flush: %s (%s)", shf_strerror(r), shf_error_detail());
	CHECK(shf_stats_get(c, &st) == 0);
	CHECKF(st.sent_msgs == total, "sent_msgs %llu, sends that returned 0: %llu",
	       (unsigned long long)st.sent_msgs, (unsigned long long)total);
	CHECKF(st.sent_bytes == total * LEN, "sent_bytes %llu, wanted %llu",
	       (unsigned long long)st.sent_bytes, (unsigned long long)(total * LEN));

	int status = seq_finish(wfd, child, (unsigned long long)total);
	CHECKF(status == 0, "the consumer saw a missing, duplicated, reordered or extra message "
	       "(status %d)", status);
	CHECK(shf_close(c) == 0);
	fprintf(stderr, "send-bias: %d threads, %llu messages, exactly once and in order\n",
		nt + 1, (unsigned long long)total);
	return 0;
}
