/* SPDX-License-Identifier: MIT */
/*
 * examples/shuffle-example.c - the smallest complete user of libshuffle-client.
 *
 * Every rank sends N messages to pseudo-random destinations (itself
 * included), flushes, takes part in an epoch and then knows that every
 * message any rank sent before the epoch has been delivered.  It checks
 * what it received and prints one line:
 *
 *   rank R: sent S delivered D
 *
 * The exit status is 0 only if its checks hold: messages from each source
 * arrived in order, without gaps or duplicates, with intact contents, and
 * exactly as many as the other ranks sent it.  (The destinations are drawn
 * from a generator seeded by the sending rank, so every rank can work out
 * what it should get: that is only for the check, not something the API
 * needs.)
 *
 * Run it under an MPI launcher or with explicit variables, next to a
 * running shuffled (SHF_SOCKET names its socket when it is not in the
 * default place):
 *
 *   mpirun -np 4 ./shuffle-example -n 10000
 *   for r in 0 1 2 3; do SHF_RANK=$r SHF_WORLD=4 ./shuffle-example & done; wait
 *
 * Options: -n MSGS (default 1000), -s BYTES payload size (default 64,
 * at least 16), -p poll mode (callbacks from shf_poll() instead of a
 * library thread), -j JOB (default $SHF_JOB or "default"), -t MS timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shuffle.h>

/* What travels in each message: who sent it, its number in the stream
 * from that sender to this receiver, and a value derived from both. */
struct example_msg {
	int32_t src;
	uint32_t seq;
	uint64_t value;
};

/* Receiver state.  The callback runs on the library's thread (or inside
 * shf_poll()), the main thread reads the results: a mutex keeps it simple. */
struct example_rx {
	pthread_mutex_t mu;
	uint32_t *next_seq; /* [world] next sequence number expected per source */
	int nsrc;           /* entries in next_seq */
	uint64_t delivered;
	uint64_t errors;
};

static uint64_t mix(uint64_t z)
{
	z += UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t expected_value(int src, uint32_t seq)
{
	return mix(((uint64_t)(uint32_t)src << 32) | seq);
}

/* Destination of message i of rank src. */
static int destination(int src, long i, int world)
{
	return (int)(mix(((uint64_t)(uint32_t)src << 40) ^ (uint64_t)i) % (uint64_t)world);
}

/* Called once per message, in order per source. */
static void on_message(void *arg, int src, int dst, uint32_t type, const void *data,
		       uint32_t len)
{
	struct example_rx *rx = arg;
	struct example_msg m;
	(void)dst;
	pthread_mutex_lock(&rx->mu);
	rx->delivered++;
	if (len < sizeof(m) || type != 1) {
		rx->errors++;
		goto out;
	}
	memcpy(&m, data, sizeof(m)); /* data is only valid during the callback */
	if (src >= rx->nsrc) {
		/* a fast rank may send before our shf_open() even returned */
		uint32_t *p = realloc(rx->next_seq, sizeof(*p) * (size_t)(src + 1));
		if (!p) {
			rx->errors++;
			goto out;
		}
		memset(p + rx->nsrc, 0, sizeof(*p) * (size_t)(src + 1 - rx->nsrc));
		rx->next_seq = p;
		rx->nsrc = src + 1;
	}
	if (m.src != src || m.seq != rx->next_seq[src] || m.value != expected_value(src, m.seq)) {
		if (rx->errors++ < 5)
			fprintf(stderr, "message from %d: seq %u (expected %u)%s\n", src, m.seq,
				rx->next_seq[src],
				m.value != expected_value(src, m.seq) ? ", bad contents" : "");
	}
	rx->next_seq[src] = m.seq + 1;
out:
	pthread_mutex_unlock(&rx->mu);
}

static int usage(void)
{
	fprintf(stderr, "usage: shuffle-example [-n MSGS] [-s BYTES] [-p] [-j JOB] [-t MS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	long n = 1000;
	long size = 64;
	int poll_mode = 0, timeout_ms = 60000, opt;
	const char *job = NULL;
	while ((opt = getopt(argc, argv, "n:s:pj:t:")) != -1) {
		switch (opt) {
		case 'n': n = atol(optarg); break;
		case 's': size = atol(optarg); break;
		case 'p': poll_mode = 1; break;
		case 'j': job = optarg; break;
		case 't': timeout_ms = atoi(optarg); break;
		default: return usage();
		}
	}
	if (n < 0 || size < (long)sizeof(struct example_msg) || size > 60000)
		return usage();

	struct example_rx rx = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct shf_opts o;
	shf_opts_init(&o);                /* rank, world from the launcher's environment */
	o.job = job;                      /* NULL: $SHF_JOB, else "default" */
	o.delivery_thread = !poll_mode;
	o.timeout_ms = timeout_ms;
	struct shf_ctx *ctx;
	int r = shf_open(&o, on_message, &rx, &ctx); /* returns once all ranks are there */
	if (r < 0) {
		fprintf(stderr, "shf_open: %s (%s)\n", shf_strerror(r), shf_error_detail());
		return 1;
	}
	int me = shf_rank(ctx), world = shf_world(ctx);

	/* send: write-behind into the shared-memory ring */
	char *buf = calloc(1, (size_t)size);
	uint32_t *seq_to = calloc((size_t)world, sizeof(*seq_to));
	if (!buf || !seq_to) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		int dst = destination(me, i, world);
		struct example_msg m = {me, seq_to[dst], expected_value(me, seq_to[dst])};
		memcpy(buf, &m, sizeof(m));
		r = shf_send(ctx, dst, 1, buf, (uint32_t)size, poll_mode ? SHF_NONBLOCK : 0);
		if (r == -EAGAIN) {
			/* poll mode: ring full; deliver what came for us, then retry */
			if ((r = shf_poll(ctx, 10)) < 0)
				break;
			i--;
			continue;
		}
		if (r < 0)
			break;
		seq_to[dst]++;
	}
	if (r < 0) {
		fprintf(stderr, "rank %d: shf_send: %s (%s)\n", me, shf_strerror(r),
			shf_error_detail());
		return 1;
	}
	/* flush: all my messages are in their destinations' rings */
	if ((r = shf_flush(ctx, SHF_FLUSH_REMOTE, timeout_ms)) < 0) {
		fprintf(stderr, "rank %d: shf_flush: %s (%s)\n", me, shf_strerror(r),
			shf_error_detail());
		return 1;
	}
	/* epoch (collective): everything sent by anyone has been delivered */
	if ((r = shf_epoch(ctx, timeout_ms)) < 0) {
		fprintf(stderr, "rank %d: shf_epoch: %s (%s)\n", me, shf_strerror(r),
			shf_error_detail());
		return 1;
	}

	/* check: what each rank sent me, recomputed from its generator */
	pthread_mutex_lock(&rx.mu);
	uint64_t delivered = rx.delivered, errors = rx.errors;
	for (int src = 0; src < world; src++) {
		uint32_t want = 0;
		for (long i = 0; i < n; i++)
			want += destination(src, i, world) == me;
		uint32_t got = src < rx.nsrc ? rx.next_seq[src] : 0;
		if (got != want) {
			fprintf(stderr, "rank %d: %u messages from rank %d, %u sent\n", me, got, src,
				want);
			errors++;
		}
	}
	pthread_mutex_unlock(&rx.mu);

	printf("rank %d: sent %ld delivered %" PRIu64 "\n", me, n, delivered);
	r = shf_close(ctx);
	free(rx.next_seq);
	free(seq_to);
	free(buf);
	if (r < 0) {
		fprintf(stderr, "rank %d: shf_close: %s\n", me, shf_strerror(r));
		return 1;
	}
	return errors ? 1 : 0;
}
