/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench-mpi.c - the MPI baselines of shuffle-bench, measured by
 * the same harness, patterns, payloads and checks as the shuffle mode.
 *
 * mpi-isend      one MPI_Isend per message, at most --window outstanding;
 *                --window MPI_Irecv(MPI_ANY_SOURCE) kept pre-posted.  Count
 *                mode: every rank learns how many it will receive by an
 *                MPI_Alltoall of per-destination counts first (replaying
 *                the destination sequence); time mode: an END message per
 *                destination carries the count sent.
 * mpi-agg        what a careful user writes in an afternoon: one buffer of
 *                --agg-bytes per destination, filled with fixed-size
 *                records behind an 8-byte header {count, last}; a full
 *                buffer goes out with MPI_Isend and is replaced from a free
 *                list, at most --agg-inflight in flight; a pool of as many
 *                MPI_Irecv(MPI_ANY_SOURCE) of the buffer size; at the end
 *                every destination gets its last buffer marked `last`.
 * mpi-alltoallv  rounds of --round messages per rank: bucket by
 *                destination, MPI_Alltoall the counts, MPI_Alltoallv the
 *                records.  Time mode: the ranks agree after each round
 *                whether to stop (MPI_Allreduce).
 *
 * Pre-posted receives are handled strictly in the order they were posted.
 * MPI matches messages of one source to receives in posting order, so this
 * keeps each source's messages in the order sent; handling completions in
 * the order MPI_Waitsome lists them would not.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define TAG_DATA 1
#define TAG_END 2

static void *xmalloc(struct bench *b, size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		bench_die(b, "out of memory (%zu bytes)", n);
	return p;
}

/* ------------------------------------------------ pre-posted receives + sends */

struct xfer;
typedef void (*recv_fn)(struct bench *b, struct xfer *x, int src, int tag, const char *data,
			int len);
typedef void (*sent_fn)(struct xfer *x, int slot);

/* nr receives (request slots [0, nr)) and ns sends ([nr, nr + ns)). */
struct xfer {
	int nr, ns;
	MPI_Request *req;   /* nr + ns */
	int *idx;           /* scratch for Waitsome */
	MPI_Status *st;     /* scratch for Waitsome */
	size_t rbytes;      /* size of each receive buffer */
	char *rbuf;         /* nr * rbytes */
	bool *rdone;        /* receive completed, not yet handled */
	MPI_Status *rst;    /* its status */
	int rhead;          /* the oldest posted receive */
	int tag;            /* receives match this tag, or MPI_ANY_TAG */
	int *sfree;         /* free send slots (stack) */
	int nsfree;
	recv_fn on_recv;
	sent_fn on_sent;    /* may be NULL */
	void *user;
};

static void x_init(struct bench *b, struct xfer *x, int nr, int ns, size_t rbytes, int tag,
		   recv_fn on_recv, sent_fn on_sent)
{
	memset(x, 0, sizeof(*x));
	x->nr = nr;
	x->ns = ns;
	x->req = xmalloc(b, sizeof(*x->req) * (size_t)(nr + ns));
	x->idx = xmalloc(b, sizeof(*x->idx) * (size_t)(nr + ns));
	x->st = xmalloc(b, sizeof(*x->st) * (size_t)(nr + ns));
	x->rbytes = rbytes;
	x->rbuf = xmalloc(b, rbytes * (size_t)nr);
	x->rdone = calloc((size_t)nr, sizeof(bool));
	x->rst = xmalloc(b, sizeof(*x->rst) * (size_t)nr);
	x->sfree = xmalloc(b, sizeof(int) * (size_t)ns);
	x->tag = tag;
	x->on_recv = on_recv;
	x->on_sent = on_sent;
	for (int i = 0; i < nr + ns; i++)
		x->req[i] = MPI_REQUEST_NULL;
	for (int i = 0; i < ns; i++)
		x->sfree[x->nsfree++] = ns - 1 - i;
}

static void x_post(struct xfer *x, int i)
{
	MPI_Irecv(x->rbuf + (size_t)i * x->rbytes, (int)x->rbytes, MPI_BYTE, MPI_ANY_SOURCE, x->tag,
		  MPI_COMM_WORLD, &x->req[i]);
}

static void x_post_all(struct xfer *x)
{
	for (int i = 0; i < x->nr; i++)
		x_post(x, i);
}

static void x_handle(struct bench *b, struct xfer *x, int i, MPI_Status *st)
{
	int len = 0;
	MPI_Get_count(st, MPI_BYTE, &len);
	x->on_recv(b, x, st->MPI_SOURCE, st->MPI_TAG, x->rbuf + (size_t)i * x->rbytes, len);
}

/* Collect completions (waiting for at least one if `block`), then handle
 * finished receives from the oldest on, reposting each. */
static void x_progress(struct bench *b, struct xfer *x, bool block)
{
	int out = 0;
	int rc = block ? MPI_Waitsome(x->nr + x->ns, x->req, &out, x->idx, x->st)
		       : MPI_Testsome(x->nr + x->ns, x->req, &out, x->idx, x->st);
	if (rc != MPI_SUCCESS)
		bench_die(b, "MPI_%s failed", block ? "Waitsome" : "Testsome");
	if (out == MPI_UNDEFINED)
		return; /* nothing active */
	for (int k = 0; k < out; k++) {
		int i = x->idx[k];
		if (i < x->nr) {
			x->rdone[i] = true;
			x->rst[i] = x->st[k];
		} else {
			x->sfree[x->nsfree++] = i - x->nr;
			if (x->on_sent)
				x->on_sent(x, i - x->nr);
		}
	}
	while (x->rdone[x->rhead]) {
		int i = x->rhead;
		x->rdone[i] = false;
		x_handle(b, x, i, &x->rst[i]);
		x_post(x, i);
		x->rhead = (x->rhead + 1) % x->nr;
	}
}

/* A free send slot, waiting (and receiving) until there is one. */
static int x_slot(struct bench *b, struct xfer *x)
{
	while (x->nsfree == 0)
		x_progress(b, x, true);
	return x->sfree[--x->nsfree];
}

/* Cancel the receives still posted (a receive that completed instead is a
 * message nobody expected: it goes through the check, which flags it), then
 * wait for every send. */
static void x_finish(struct bench *b, struct xfer *x)
{
	for (int k = 0; k < x->nr; k++) {
		int i = (x->rhead + k) % x->nr;
		if (x->rdone[i]) {
			x->rdone[i] = false;
			x_handle(b, x, i, &x->rst[i]);
			continue;
		}
		if (x->req[i] == MPI_REQUEST_NULL)
			continue;
		MPI_Status st;
		MPI_Cancel(&x->req[i]);
		MPI_Wait(&x->req[i], &st);
		int cancelled = 0;
		MPI_Test_cancelled(&st, &cancelled);
		if (!cancelled)
			x_handle(b, x, i, &st);
	}
	MPI_Waitall(x->ns, x->req + x->nr, MPI_STATUSES_IGNORE);
	for (int i = 0; i < x->ns; i++)
		if (x->on_sent)
			x->on_sent(x, i);
	x->nsfree = 0;
	for (int i = 0; i < x->ns; i++)
		x->sfree[x->nsfree++] = i;
}

static void x_free(struct xfer *x)
{
	free(x->req);
	free(x->idx);
	free(x->st);
	free(x->rbuf);
	free(x->rdone);
	free(x->rst);
	free(x->sfree);
	memset(x, 0, sizeof(*x));
}

/* ---------------------------------------------------------------- mpi-isend */

static struct {
	struct xfer x;
	char *sbuf;          /* window * size: one buffer per send slot */
	uint64_t expect;     /* count mode: messages this rank will receive */
	uint64_t ends;       /* time mode: END messages received */
	uint64_t end_total;  /* time mode: sum of their counts */
} is;

static void is_recv(struct bench *b, struct xfer *x, int src, int tag, const char *data, int len)
{
	(void)x;
	if (tag == TAG_END && len == 8) {
		uint64_t n;
		memcpy(&n, data, 8);
		is.ends++;
		is.end_total += n;
		return;
	}
	bench_check(b, src, data, (uint32_t)len);
}

static void is_idle(struct bench *b)
{
	x_progress(b, &is.x, false);
}

static int is_setup(struct bench *b)
{
	b->idle = is_idle;
	int W = (int)b->o.window;
	size_t rbytes = b->o.size > 8 ? b->o.size : 8;
	x_init(b, &is.x, W, W, rbytes, MPI_ANY_TAG, is_recv, NULL);
	is.sbuf = xmalloc(b, (size_t)W * b->o.size);
	bench_prefill(is.sbuf, (size_t)W * b->o.size);
	is.expect = is.ends = is.end_total = 0;
	if (b->o.count) {
		/* replay this rank's destinations to count per destination */
		uint64_t *cnt = calloc((size_t)b->world, 8), *from = xmalloc(b, (size_t)b->world * 8);
		if (!cnt)
			bench_die(b, "out of memory");
		uint64_t rng = b->rng, rr = b->rr;
		for (uint64_t i = 0; i < b->o.count; i++)
			cnt[bench_next_dst(b)]++;
		b->rng = rng;
		b->rr = rr;
		MPI_Alltoall(cnt, 1, MPI_UINT64_T, from, 1, MPI_UINT64_T, MPI_COMM_WORLD);
		for (int s = 0; s < b->world; s++)
			is.expect += from[s];
		free(cnt);
		free(from);
	}
	x_post_all(&is.x);
	return 0;
}

static bool is_all_received(struct bench *b)
{
	if (b->o.count)
		return b->received >= is.expect;
	return is.ends == (uint64_t)b->world && b->received >= is.end_total;
}

static int is_run(struct bench *b)
{
	struct xfer *x = &is.x;
	while (!bench_send_done(b)) {
		int slot = x_slot(b, x);
		char *p = is.sbuf + (size_t)slot * b->o.size;
		int dst = bench_next_dst(b);
		bench_fill(b, p, dst);
		MPI_Isend(p, (int)b->o.size, MPI_BYTE, dst, TAG_DATA, MPI_COMM_WORLD,
			  &x->req[x->nr + slot]);
		if ((b->sent & 15) == 0)
			x_progress(b, x, false);
	}
	if (!b->o.count) {
		for (int k = 1; k <= b->world; k++) {
			int dst = (b->rank + k) % b->world;
			int slot = x_slot(b, x);
			char *p = is.sbuf + (size_t)slot * b->o.size;
			memcpy(p, &b->send_seq[dst], 8);
			MPI_Isend(p, 8, MPI_BYTE, dst, TAG_END, MPI_COMM_WORLD,
				  &x->req[x->nr + slot]);
		}
	}
	while (!is_all_received(b))
		x_progress(b, x, true);
	x_finish(b, x);
	return 0;
}

static void is_teardown(struct bench *b)
{
	(void)b;
	x_free(&is.x);
	free(is.sbuf);
}

const struct bench_mode_ops bench_isend_ops = {
	.name = "mpi-isend",
	.setup = is_setup,
	.run = is_run,
	.teardown = is_teardown,
};

/* ------------------------------------------------------------------ mpi-agg */

/* Header of an aggregation buffer; fixed-size records follow. */
struct agg_hdr {
	uint32_t n;    /* records in the buffer */
	uint32_t last; /* 1: the sender's last buffer to this destination */
};

static struct {
	struct xfer x;
	size_t bufsz;        /* header + cap records */
	uint32_t cap;        /* records per buffer */
	char **cur;          /* [world]: the buffer being filled for each destination */
	char **freel;        /* free buffers (stack) */
	int nfree, freecap;
	char **inflight;     /* [agg_inflight]: the buffer of each send slot */
	char *msg;           /* the message as the application builds it */
	uint64_t lasts;      /* `last` buffers received */
	uint64_t nbuffers;   /* buffers allocated */
} ag;

static const struct agg_hdr agg_empty_last = {0, 1};

static void ag_recv(struct bench *b, struct xfer *x, int src, int tag, const char *data, int len)
{
	(void)x;
	(void)tag;
	struct agg_hdr h;
	if (len < (int)sizeof(h)) {
		bench_check(b, -1, data, 0); /* counted as an error */
		return;
	}
	memcpy(&h, data, sizeof(h));
	if ((size_t)len != sizeof(h) + (size_t)h.n * b->o.size) {
		bench_check(b, -1, data, 0);
		return;
	}
	for (uint32_t k = 0; k < h.n; k++)
		bench_check(b, src, data + sizeof(h) + (size_t)k * b->o.size, b->o.size);
	ag.lasts += h.last != 0;
}

static void ag_sent(struct xfer *x, int slot)
{
	(void)x;
	char *p = ag.inflight[slot];
	if (!p)
		return;
	ag.inflight[slot] = NULL;
	if (p != (const char *)&agg_empty_last)
		ag.freel[ag.nfree++] = p;
}

static char *ag_buffer(struct bench *b)
{
	if (ag.nfree)
		return ag.freel[--ag.nfree];
	ag.nbuffers++;
	return xmalloc(b, ag.bufsz);
}

static void ag_ship(struct bench *b, int dst, bool last)
{
	struct xfer *x = &ag.x;
	int slot = x_slot(b, x);
	char *p = ag.cur[dst];
	size_t bytes;
	if (p) {
		struct agg_hdr h;
		memcpy(&h, p, sizeof(h));
		h.last = last;
		memcpy(p, &h, sizeof(h));
		bytes = sizeof(h) + (size_t)h.n * b->o.size;
	} else {
		p = (char *)&agg_empty_last; /* MPI only reads it; sends may share it */
		bytes = sizeof(struct agg_hdr);
	}
	ag.inflight[slot] = p;
	ag.cur[dst] = NULL;
	MPI_Isend(p, (int)bytes, MPI_BYTE, dst, TAG_DATA, MPI_COMM_WORLD, &x->req[x->nr + slot]);
}

static void ag_idle(struct bench *b)
{
	x_progress(b, &ag.x, false);
}

static int ag_setup(struct bench *b)
{
	b->idle = ag_idle;
	int F = (int)b->o.agg_inflight;
	size_t h = sizeof(struct agg_hdr);
	ag.cap = b->o.agg_bytes > h + b->o.size ? (uint32_t)((b->o.agg_bytes - h) / b->o.size) : 1;
	ag.bufsz = h + (size_t)ag.cap * b->o.size;
	x_init(b, &ag.x, F, F, ag.bufsz, TAG_DATA, ag_recv, ag_sent);
	ag.cur = calloc((size_t)b->world, sizeof(char *));
	ag.freecap = b->world + F;
	ag.freel = xmalloc(b, sizeof(char *) * (size_t)ag.freecap);
	ag.inflight = calloc((size_t)F, sizeof(char *));
	ag.msg = xmalloc(b, b->o.size);
	if (!ag.cur || !ag.inflight)
		bench_die(b, "out of memory");
	bench_prefill(ag.msg, b->o.size);
	ag.nfree = 0;
	ag.lasts = ag.nbuffers = 0;
	x_post_all(&ag.x);
	return 0;
}

static int ag_run(struct bench *b)
{
	struct xfer *x = &ag.x;
	size_t h = sizeof(struct agg_hdr);
	while (!bench_send_done(b)) {
		int dst = bench_next_dst(b);
		bench_fill(b, ag.msg, dst);
		char *p = ag.cur[dst];
		if (!p) {
			p = ag.cur[dst] = ag_buffer(b);
			struct agg_hdr z = {0, 0};
			memcpy(p, &z, sizeof(z));
		}
		struct agg_hdr hd;
		memcpy(&hd, p, sizeof(hd));
		memcpy(p + h + (size_t)hd.n * b->o.size, ag.msg, b->o.size);
		hd.n++;
		memcpy(p, &hd, sizeof(hd));
		if (hd.n == ag.cap)
			ag_ship(b, dst, false);
		if ((b->sent & 63) == 0)
			x_progress(b, x, false);
	}
	for (int k = 1; k <= b->world; k++)
		ag_ship(b, (b->rank + k) % b->world, true);
	while (ag.lasts < (uint64_t)b->world)
		x_progress(b, x, true);
	x_finish(b, x);
	return 0;
}

static void ag_teardown(struct bench *b)
{
	for (int d = 0; d < b->world; d++)
		free(ag.cur[d]);
	for (int i = 0; i < ag.nfree; i++)
		free(ag.freel[i]);
	free(ag.cur);
	free(ag.freel);
	free(ag.inflight);
	free(ag.msg);
	x_free(&ag.x);
}

const struct bench_mode_ops bench_agg_ops = {
	.name = "mpi-agg",
	.setup = ag_setup,
	.run = ag_run,
	.teardown = ag_teardown,
};

/* ------------------------------------------------------------ mpi-alltoallv */

static struct {
	MPI_Datatype rec;    /* one record: size bytes */
	int *dsts;           /* [round] */
	int *scnt, *sdis, *rcnt, *rdis, *pos; /* [world] */
	char *sbuf;          /* round * size */
	char *rbuf;
	size_t rcap;         /* records rbuf holds */
	char *msg;
} av;

static int av_setup(struct bench *b)
{
	size_t P = (size_t)b->world;
	MPI_Type_contiguous((int)b->o.size, MPI_BYTE, &av.rec);
	MPI_Type_commit(&av.rec);
	av.dsts = xmalloc(b, sizeof(int) * b->o.round);
	av.scnt = xmalloc(b, sizeof(int) * P);
	av.sdis = xmalloc(b, sizeof(int) * P);
	av.rcnt = xmalloc(b, sizeof(int) * P);
	av.rdis = xmalloc(b, sizeof(int) * P);
	av.pos = xmalloc(b, sizeof(int) * P);
	av.sbuf = xmalloc(b, (size_t)b->o.round * b->o.size);
	av.rcap = b->o.round;
	av.rbuf = xmalloc(b, av.rcap * b->o.size);
	av.msg = xmalloc(b, b->o.size);
	bench_prefill(av.msg, b->o.size);
	return 0;
}

static int av_run(struct bench *b)
{
	int P = b->world;
	size_t S = b->o.size;
	for (;;) {
		uint64_t m = b->o.round;
		if (b->o.count) {
			if (b->sent >= b->o.count)
				break; /* every rank has the same count: they all stop here */
			if (b->o.count - b->sent < m)
				m = b->o.count - b->sent;
		}
		memset(av.scnt, 0, sizeof(int) * (size_t)P);
		for (uint64_t i = 0; i < m; i++) {
			int d = bench_next_dst(b);
			av.dsts[i] = d;
			av.scnt[d]++;
		}
		int acc = 0;
		for (int d = 0; d < P; d++) {
			av.sdis[d] = av.pos[d] = acc;
			acc += av.scnt[d];
		}
		for (uint64_t i = 0; i < m; i++) {
			int d = av.dsts[i];
			bench_fill(b, av.msg, d);
			memcpy(av.sbuf + (size_t)av.pos[d]++ * S, av.msg, S);
		}
		MPI_Alltoall(av.scnt, 1, MPI_INT, av.rcnt, 1, MPI_INT, MPI_COMM_WORLD);
		size_t tot = 0;
		for (int s = 0; s < P; s++) {
			av.rdis[s] = (int)tot;
			tot += (size_t)av.rcnt[s];
		}
		if (tot > av.rcap) {
			free(av.rbuf);
			av.rcap = tot;
			av.rbuf = xmalloc(b, av.rcap * S);
		}
		MPI_Alltoallv(av.sbuf, av.scnt, av.sdis, av.rec, av.rbuf, av.rcnt, av.rdis, av.rec,
			      MPI_COMM_WORLD);
		for (int s = 0; s < P; s++)
			for (int k = 0; k < av.rcnt[s]; k++)
				bench_check(b, s, av.rbuf + ((size_t)av.rdis[s] + (size_t)k) * S,
					    (uint32_t)S);
		if (!b->o.count) {
			int mine = bench_time_up(b), any = 0;
			MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
			if (any)
				break;
		}
	}
	return 0;
}

static void av_teardown(struct bench *b)
{
	(void)b;
	MPI_Type_free(&av.rec);
	free(av.dsts);
	free(av.scnt);
	free(av.sdis);
	free(av.rcnt);
	free(av.rdis);
	free(av.pos);
	free(av.sbuf);
	free(av.rbuf);
	free(av.msg);
}

const struct bench_mode_ops bench_alltoallv_ops = {
	.name = "mpi-alltoallv",
	.setup = av_setup,
	.run = av_run,
	.teardown = av_teardown,
};
