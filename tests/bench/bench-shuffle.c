/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench-shuffle.c - the shuffle mode of shuffle-bench: every
 * message is one shf_send() to the node daemon (--batch N: N of them go
 * in one shf_send_many(), and delivery is by batch callback); delivery
 * runs the harness check in the callback.  Only the public API (include/shuffle.h) is used.
 *
 * The run ends with shf_epoch(), the API's "everything anyone sent has been
 * delivered" point.  With -e N an epoch also runs every N sends; in time
 * mode the ranks then agree at each epoch whether to stop (an epoch is
 * collective, so they must all run the same number of them).
 *
 * -m bcast (bench_bcast_ops): -n N rounds of shf_send() to every other rank
 * (ended by an epoch), then N shf_bcast() (ended by an epoch), each phase
 * timed from a barrier to its epoch on every rank.  Both phases deliver
 * N x world x (world - 1) messages with the same per-pair sequence numbers
 * (a broadcast carries the same number to every destination: all of them
 * are equal then), so the harness checks them as one run.
 */
#include <errno.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "shuffle.h"

#define TIMEOUT_MS 120000 /* flush, epoch, open: a hang fails instead of hanging */
#define MSG_TYPE 1u

struct bench_shuffle_extra bench_shuffle_extra;

static struct shf_ctx *ctx;
static char *msgbuf;
/* --batch N: N payloads and their records for one shf_send_many() */
static char *slab;
static struct shf_msg *batch;

static void on_deliver(void *arg, int src, int dst, uint32_t type, const void *data,
		       uint32_t len)
{
	struct bench *b = arg;
	if (dst != b->rank || type != MSG_TYPE) {
		/* counted as an error by an impossible source: keeps one error path */
		bench_check(b, -1, data, len);
		return;
	}
	bench_check(b, src, data, len);
}

static void on_deliver_many(void *arg, const struct shf_rec *recs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		on_deliver(arg, recs[i].src, recs[i].dst, recs[i].type, recs[i].data, recs[i].len);
}

static int sh_setup(struct bench *b)
{
	struct shf_opts so;
	shf_opts_init(&so);
	so.rank = b->rank;
	so.world = b->world;
	so.delivery_thread = !b->o.poll_mode;
	so.ring_bytes = b->o.ring_bytes;
	so.timeout_ms = TIMEOUT_MS;
	if (b->o.batch)
		so.deliver_many = on_deliver_many;
	int r = shf_open(&so, on_deliver, b, &ctx);
	if (r < 0)
		bench_die(b, "shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	msgbuf = malloc(b->o.size);
	if (!msgbuf)
		bench_die(b, "out of memory");
	bench_prefill(msgbuf, b->o.size);
	if (b->o.batch) {
		slab = malloc((size_t)b->o.batch * b->o.size);
		batch = calloc(b->o.batch, sizeof(*batch));
		if (!slab || !batch)
			bench_die(b, "out of memory");
		for (uint32_t i = 0; i < b->o.batch; i++) {
			bench_prefill(slab + (size_t)i * b->o.size, b->o.size);
			batch[i] = (struct shf_msg){0, MSG_TYPE, slab + (size_t)i * b->o.size,
						    b->o.size};
		}
	}
	return 0;
}

/* --batch: the first n records of batch[], all of them sent in order. */
static void send_batch(struct bench *b, unsigned n)
{
	unsigned flags = b->o.nonblock ? SHF_NONBLOCK : 0;
	unsigned done = 0;
	while (done < n) {
		int r = shf_send_many(ctx, batch + done, n - done, flags);
		if (r > 0) {
			done += (unsigned)r;
			continue;
		}
		if (r != -EAGAIN)
			bench_die(b, "shf_send_many of %u: %s (%s)", n - done, shf_strerror(r),
				  shf_error_detail());
		if (!b->o.poll_mode || shf_poll(ctx, 0) <= 0)
			sched_yield();
	}
}

static void send_one(struct bench *b, int dst)
{
	unsigned flags = (b->o.nonblock ? SHF_NONBLOCK : 0) | (b->o.more ? SHF_MORE : 0);
	for (;;) {
		int r = shf_send(ctx, dst, MSG_TYPE, msgbuf, b->o.size, flags);
		if (r == 0)
			return;
		if (r != -EAGAIN)
			bench_die(b, "shf_send to %d: %s (%s)", dst, shf_strerror(r),
				  shf_error_detail());
		/* ring full: let deliveries run (poll mode) or give the CPU away */
		if (!b->o.poll_mode || shf_poll(ctx, 0) <= 0)
			sched_yield();
	}
}

static void epoch(struct bench *b)
{
	int r = shf_epoch(ctx, TIMEOUT_MS);
	if (r < 0)
		bench_die(b, "shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
}

static int sh_run(struct bench *b)
{
	bool agree = b->o.epoch_every && !b->o.count; /* time mode: stop at an epoch */
	unsigned queued = 0; /* --batch: records in batch[] not sent yet */
	for (;;) {
		if (agree ? false : bench_send_done(b))
			break;
		int dst = bench_next_dst(b);
		if (b->o.batch) {
			/* bench_fill counts the record as sent; it goes with the
			 * batch, before any flush or epoch below */
			batch[queued].dst = dst;
			bench_fill(b, slab + (size_t)queued * b->o.size, dst);
			bool last = b->o.count && b->sent >= b->o.count;
			bool mark = (b->o.flush_every && b->sent % b->o.flush_every == 0) ||
				    (b->o.epoch_every && b->sent % b->o.epoch_every == 0);
			if (++queued == b->o.batch || last || mark) {
				send_batch(b, queued);
				queued = 0;
			}
		} else {
			bench_fill(b, msgbuf, dst);
			send_one(b, dst);
		}
		if (b->o.poll_mode && (b->sent & 63) == 0) {
			int r = shf_poll(ctx, 0);
			if (r < 0)
				bench_die(b, "shf_poll: %s (%s)", shf_strerror(r),
					  shf_error_detail());
		}
		if (b->o.flush_every && b->sent % b->o.flush_every == 0) {
			int r = shf_flush(ctx, SHF_FLUSH_REMOTE, TIMEOUT_MS);
			if (r < 0)
				bench_die(b, "shf_flush: %s (%s)", shf_strerror(r),
					  shf_error_detail());
		}
		if (b->o.epoch_every && b->sent % b->o.epoch_every == 0) {
			epoch(b);
			if (agree) {
				int mine = bench_time_up(b), any = 0;
				MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
				if (any)
					break;
			}
		}
	}
	if (queued)
		send_batch(b, queued);
	epoch(b);
	struct shf_stats st;
	if (shf_stats_get(ctx, &st) == 0) {
		bench_shuffle_extra.valid = true;
		bench_shuffle_extra.sent_msgs = st.sent_msgs;
		bench_shuffle_extra.delivered_msgs = st.delivered_msgs;
		bench_shuffle_extra.send_eagain = st.send_eagain;
		bench_shuffle_extra.send_blocked_ns = st.send_blocked_ns;
	}
	return 0;
}

static void sh_teardown(struct bench *b)
{
	int r = shf_close(ctx);
	if (r < 0)
		fprintf(stderr, "shuffle-bench: rank %d: shf_close: %s\n", b->rank,
			shf_strerror(r));
	ctx = NULL;
	free(msgbuf);
	free(slab);
	free(batch);
}

const struct bench_mode_ops bench_shuffle_ops = {
	.name = "shuffle",
	.setup = sh_setup,
	.run = sh_run,
	.teardown = sh_teardown,
};

/* -m bcast: one phase's wall time, the slowest rank's. */
static double phase_end(uint64_t t0)
{
	double mine = (double)(bench_now_ns() - t0) / 1e9, max = 0;
	MPI_Allreduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return max;
}

static int bc_run(struct bench *b)
{
	uint64_t n = b->o.count;
	if (b->world < 2)
		bench_die(b, "-m bcast needs at least 2 ranks");
	int d0 = b->rank == 0 ? 1 : 0; /* some other rank */
	/* phase 1: a loop of shf_send() to every other rank */
	MPI_Barrier(MPI_COMM_WORLD);
	uint64_t t0 = bench_now_ns();
	for (uint64_t i = 0; i < n; i++)
		for (int d = 0; d < b->world; d++) {
			if (d == b->rank)
				continue;
			bench_fill(b, msgbuf, d);
			send_one(b, d);
		}
	epoch(b);
	bench_shuffle_extra.loop_s = phase_end(t0);
	/* phase 2: shf_bcast(); every destination's sequence number is equal */
	unsigned flags = b->o.nonblock ? SHF_NONBLOCK : 0;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = bench_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		bench_fill(b, msgbuf, d0);
		for (int d = 0; d < b->world; d++) {
			if (d == b->rank || d == d0)
				continue;
			b->send_seq[d]++;
			b->sent++;
			b->sent_cross += b->node_of[d] != b->node;
		}
		int r;
		while ((r = shf_bcast(ctx, MSG_TYPE, msgbuf, b->o.size, flags)) == -EAGAIN)
			sched_yield();
		if (r < 0)
			bench_die(b, "shf_bcast: %s (%s)", shf_strerror(r), shf_error_detail());
	}
	epoch(b);
	bench_shuffle_extra.bcast_s = phase_end(t0);
	bench_shuffle_extra.rounds = n;
	struct shf_stats st;
	if (shf_stats_get(ctx, &st) == 0) {
		bench_shuffle_extra.valid = true;
		/* a broadcast is one record for world - 1 deliveries */
		bench_shuffle_extra.sent_msgs = st.sent_msgs + n * (uint64_t)(b->world - 2);
		bench_shuffle_extra.delivered_msgs = st.delivered_msgs;
		bench_shuffle_extra.send_eagain = st.send_eagain;
		bench_shuffle_extra.send_blocked_ns = st.send_blocked_ns;
	}
	return 0;
}

const struct bench_mode_ops bench_bcast_ops = {
	.name = "bcast",
	.setup = sh_setup,
	.run = bc_run,
	.teardown = sh_teardown,
};
