/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench-shuffle.c - the shuffle mode of shuffle-bench: every
 * message is one shf_send() to the node daemon; delivery runs the harness
 * check in the callback.  Only the public API (include/shuffle.h) is used.
 *
 * The run ends with shf_epoch(), the API's "everything anyone sent has been
 * delivered" point.  With -e N an epoch also runs every N sends; in time
 * mode the ranks then agree at each epoch whether to stop (an epoch is
 * collective, so they must all run the same number of them).
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

static int sh_setup(struct bench *b)
{
	struct shf_opts so;
	shf_opts_init(&so);
	so.rank = b->rank;
	so.world = b->world;
	so.delivery_thread = !b->o.poll_mode;
	so.ring_bytes = b->o.ring_bytes;
	so.timeout_ms = TIMEOUT_MS;
	int r = shf_open(&so, on_deliver, b, &ctx);
	if (r < 0)
		bench_die(b, "shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	msgbuf = malloc(b->o.size);
	if (!msgbuf)
		bench_die(b, "out of memory");
	bench_prefill(msgbuf, b->o.size);
	return 0;
}

static void send_one(struct bench *b, int dst)
{
	unsigned flags = b->o.nonblock ? SHF_NONBLOCK : 0;
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
	for (;;) {
		if (agree ? false : bench_send_done(b))
			break;
		int dst = bench_next_dst(b);
		bench_fill(b, msgbuf, dst);
		send_one(b, dst);
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
}

const struct bench_mode_ops bench_shuffle_ops = {
	.name = "shuffle",
	.setup = sh_setup,
	.run = sh_run,
	.teardown = sh_teardown,
};
