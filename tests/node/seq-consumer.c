/* SPDX-License-Identifier: MIT */
/* tests/node/seq-consumer.c - see seq-consumer.h. */
#include "tests/node/seq-consumer.h"

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shuffle.h"

struct state {
	const struct seq_consumer *sc;
	uint64_t *next_seq;
	uint64_t got, bad;
};

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	struct state *st = arg;
	(void)dst;
	uint64_t seq;
	if (src != 0 || type >= st->sc->types || len != st->sc->len) {
		st->bad++;
		return;
	}
	memcpy(&seq, data, sizeof(seq));
	if (seq != st->next_seq[type]) {
		if (!st->sc->max_reports || st->bad < st->sc->max_reports)
			fprintf(stderr, "consumer: thread %u: seq %llu, expected %llu\n", type,
				(unsigned long long)seq, (unsigned long long)st->next_seq[type]);
		st->bad++;
	}
	st->next_seq[type] = seq + 1;
	st->got++;
}

int seq_consume(const struct seq_consumer *sc, int rfd)
{
	struct state st = {sc, calloc(sc->types, sizeof(uint64_t)), 0, 0};
	if (!st.next_seq)
		return 1;
	struct shf_opts o;
	shf_opts_init(&o);
	o.rank = 1;
	o.world = 2;
	o.delivery_thread = 0;
	struct shf_ctx *c;
	int r = shf_open(&o, on_msg, &st, &c);
	if (r) {
		fprintf(stderr, "consumer: shf_open: %s\n", shf_strerror(r));
		return 1;
	}
	if (sc->wait_sync && !td_sync_wait(sc->env->sync, sc->wait_sync, 30000)) {
		fprintf(stderr, "consumer: never told to consume\n");
		return 1;
	}
	/* consume until rank 0 has said how many it sent (through the pipe,
	 * once it is done) and that many have come */
	unsigned long long total = 0;
	bool have_total = false;
	char line[64];
	size_t used = 0;
	int64_t end = td_now_ms() + sc->timeout_ms;
	while ((!have_total || st.got < total) && td_now_ms() < end) {
		r = shf_poll(c, 50);
		if (r < 0) {
			fprintf(stderr, "consumer: shf_poll: %s\n", shf_strerror(r));
			return 1;
		}
		struct pollfd pf = {rfd, POLLIN, 0};
		if (!have_total && poll(&pf, 1, 0) == 1) {
			ssize_t n = read(rfd, line + used, sizeof(line) - 1 - used);
			if (n <= 0) {
				fprintf(stderr, "consumer: no total from rank 0\n");
				return 1;
			}
			used += (size_t)n;
			line[used] = '\0';
			if (strchr(line, '\n')) {
				total = strtoull(line, NULL, 10);
				have_total = true;
			}
		}
	}
	/* anything beyond the total (a timed-out attempt that was sent after all) */
	shf_poll(c, 200);
	fprintf(stderr, "consumer: %llu delivered, %llu expected, %llu bad\n",
		(unsigned long long)st.got, total, (unsigned long long)st.bad);
	shf_close(c);
	free(st.next_seq);
	return have_total && st.got == total && st.bad == 0 ? 0 : 1;
}

void seq_none(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
}

struct shf_ctx *seq_start(const struct seq_consumer *sc, int timeout_ms, int *wfd,
			  pid_t *child)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	pid_t pid = td_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(pfd[1]);
		_exit(seq_consume(sc, pfd[0]));
	}
	close(pfd[0]);
	struct shf_opts o;
	shf_opts_init(&o);
	o.rank = 0;
	o.world = 2;
	o.timeout_ms = timeout_ms;
	struct shf_ctx *c;
	int r = shf_open(&o, seq_none, NULL, &c);
	CHECKF(r == 0, "shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	*wfd = pfd[1];
	*child = pid;
	return c;
}

int seq_finish(int wfd, pid_t child, unsigned long long total)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "%llu\n", total);
	CHECK(write(wfd, line, (size_t)len) == len);
	close(wfd);
	return td_wait(child, 90000);
}
