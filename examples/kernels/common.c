/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/common.c - see common.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common.h"

#define K_TYPES 4
#define END_TAG 100 /* + phase parity */
#define MAX_RECV 64 /* receives posted */

/* --------------------------------------------------------------- basics */

void k_die(struct kern *k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s rank %d: ", k->name, k->rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

double k_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(const char *name, struct kopt *opts, const char *why)
{
	fprintf(stderr, "%s: %s\nusage: %s --impl shuffle|shuffle-more|shuffle-batch|mpi [--seed N] [--agg N]",
		name, why,
		name);
	for (struct kopt *o = opts; o && o->name; o++)
		fprintf(stderr, " [--%s N]", o->name);
	fprintf(stderr, "\n  --agg N  mpi: messages per aggregation buffer (default 512: 4 KiB)\n");
	for (struct kopt *o = opts; o && o->name; o++)
		fprintf(stderr, "  --%s N  %s (default %ld)\n", o->name, o->help, *o->val);
	exit(2);
}

void k_init(struct kern *k, const char *name, int *argc, char ***argv, struct kopt *opts)
{
	memset(k, 0, sizeof(*k));
	k->name = name;
	k->seed = 1;
	k->agg = 512;
	k->pend.size = 16;
	int impl = -1;
	for (int i = 1; i < *argc; i++) {
		const char *a = (*argv)[i];
		if (strncmp(a, "--", 2) || i + 1 >= *argc)
			usage(name, opts, a);
		const char *v = (*argv)[++i];
		char *end;
		if (!strcmp(a, "--impl")) {
			if (!strcmp(v, "shuffle"))
				impl = K_SHUFFLE;
			else if (!strcmp(v, "shuffle-batch"))
				impl = K_BATCH;
			else if (!strcmp(v, "shuffle-more"))
				impl = K_MORE;
			else if (!strcmp(v, "mpi"))
				impl = K_MPI;
			else
				usage(name, opts, "--impl is shuffle, shuffle-more, shuffle-batch or mpi");
			continue;
		}
		long n = strtol(v, &end, 0);
		if (*end || n < 0)
			usage(name, opts, a);
		if (!strcmp(a, "--seed")) {
			k->seed = (uint64_t)n;
			continue;
		}
		if (!strcmp(a, "--agg")) {
			if (n < 1)
				usage(name, opts, "--agg must be >= 1");
			k->agg = n;
			continue;
		}
		struct kopt *o;
		for (o = opts; o && o->name; o++)
			if (!strcmp(a + 2, o->name))
				break;
		if (!o || !o->name)
			usage(name, opts, a);
		*o->val = n;
	}
	if (impl < 0)
		usage(name, opts, "--impl is required");
	k->impl = (enum k_impl)impl;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &k->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &k->world);
	const char *nodes = getenv("NODES");
	k->nodes = nodes ? atoi(nodes) : 1;
	if (k->nodes < 1 || k->nodes > k->world)
		k->nodes = 1;
}

const char *k_impl_name(const struct kern *k)
{
	return k->impl == K_SHUFFLE ? "shuffle"
	       : k->impl == K_MORE  ? "shuffle-more"
	       : k->impl == K_BATCH ? "shuffle-batch"
				    : "mpi";
}

void k_open_shuffle(struct kern *k, shf_deliver_fn fn, shf_deliver_many_fn many, void *arg)
{
	struct shf_opts o;
	shf_opts_init(&o);
	o.delivery_thread = k->thread;
	if (k->impl == K_BATCH) {
		o.deliver_many = many;
		fn = NULL;
	}
	int r = shf_open(&o, fn, arg, &k->shf);
	if (r)
		k_die(k, "shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	if (shf_rank(k->shf) != k->rank || shf_world(k->shf) != k->world)
		k_die(k, "shuffle rank %d of %d, MPI rank %d of %d", shf_rank(k->shf),
		      shf_world(k->shf), k->rank, k->world);
}

void k_timer_start(struct kern *k)
{
	MPI_Barrier(MPI_COMM_WORLD);
	k->t0 = k_now();
}

double k_timer_stop(struct kern *k)
{
	double t = k_now() - k->t0, mx = 0;
	MPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return mx;
}

/* ------------------------------------------------------- shuffle conduit */

/*
 * A handler that sends (ig's reply) must not block inside the callback:
 * every rank could be blocked in a callback sending to another whose ring
 * is full, and none would read.  So a send from a handler is non-blocking,
 * and what does not fit waits in `pend` (in order) until the kernel's own
 * thread sends it: before its next message, and in k_phase_end() before
 * the epoch.  (The awkward spot of request/reply on shuffle: docs/api.md,
 * "Patterns".)
 */
struct kpend {
	int32_t dst;
	uint32_t type;
	uint64_t val;
};

static void shf_cb(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	struct kern *k = arg;
	(void)dst;
	if (len != 8 || type >= K_TYPES)
		k_die(k, "a %u-byte message of type %u from rank %d", len, type, src);
	uint64_t v;
	memcpy(&v, data, 8);
	k->in_handler = true;
	k->handler(k, src, type, v);
	k->in_handler = false;
}

/* One non-blocking send: true when sent, false on a full ring. */
static bool shf_try(struct kern *k, int dst, uint32_t type, uint64_t v)
{
	int r = shf_send(k->shf, dst, type, &v, 8, SHF_NONBLOCK | k_send_flags(k->impl));
	if (r == -EAGAIN)
		return false;
	if (r)
		k_die(k, "shf_send to %d: %s (%s)", dst, shf_strerror(r), shf_error_detail());
	return true;
}

/* Wait a little for room (or deliveries, which may add to pend). */
static void shf_wait_room(struct kern *k)
{
	int r = shf_poll(k->shf, 1);
	if (r < 0)
		k_die(k, "shf_poll: %s (%s)", shf_strerror(r), shf_error_detail());
}

/* Send what handlers left waiting, in order, until it is all sent. */
static void pend_drain(struct kern *k)
{
	struct kpend *q = k->pend.p;
	while (k->pend_head < k->pend.n) {
		struct kpend e = q[k->pend_head];
		if (!shf_try(k, e.dst, e.type, e.val)) {
			shf_wait_room(k);
			q = k->pend.p; /* handlers may have grown it */
			continue;
		}
		k->pend_head++;
	}
	k->pend.n = k->pend_head = 0;
}

static void shf_send8(struct kern *k, int dst, uint32_t type, uint64_t v)
{
	if (k->in_handler) {
		if (k->pend_head < k->pend.n || !shf_try(k, dst, type, v)) {
			struct kpend e = {dst, type, v};
			kvec_push(&k->pend, &e);
		}
		return;
	}
	pend_drain(k);
	while (!shf_try(k, dst, type, v)) {
		shf_wait_room(k);
		pend_drain(k);
	}
}

/* ------------------------------------------------- shuffle-batch conduit */

/*
 * Two stages, one per call site: the kernel's thread stages into
 * k->stage (sent by shf_send_many() when full and before every phase
 * end); a handler (inside a deliver_many callback) appends to k->pend,
 * sent non-blocking when the callback's batch is done, the rest by the
 * kernel's thread before its next stage and before the epoch.  Nothing
 * here blocks inside a callback, and pend keeps its order (ig's replies
 * match their requests by order).  Poll mode: callbacks run only inside
 * shf_poll() / the waiting calls, never inside a non-blocking send.
 */

/* Send from pend, non-blocking, up to K_BATCH_MAX records a call: true
 * when pend is empty. */
static bool pend_send_some(struct kern *k)
{
	while (k->pend_head < k->pend.n) {
		struct kpend *q = (struct kpend *)k->pend.p + k->pend_head;
		struct shf_msg m[K_BATCH_MAX];
		unsigned n = 0;
		while (n < K_BATCH_MAX && k->pend_head + n < k->pend.n) {
			m[n] = (struct shf_msg){q[n].dst, q[n].type, &q[n].val, 8};
			n++;
		}
		int r = shf_send_many(k->shf, m, n, SHF_NONBLOCK);
		if (r == -EAGAIN)
			return false;
		if (r < 0)
			k_die(k, "shf_send_many: %s (%s)", shf_strerror(r), shf_error_detail());
		k->batch_calls++;
		k->pend_head += (unsigned)r;
		if ((unsigned)r < n)
			return false;
	}
	k->pend.n = k->pend_head = 0;
	return true;
}

static void shf_cb_many(void *arg, const struct shf_rec *recs, unsigned n)
{
	struct kern *k = arg;
	k->in_handler = true;
	for (unsigned i = 0; i < n; i++) {
		const struct shf_rec *r = &recs[i];
		if (r->len != 8 || r->type >= K_TYPES)
			k_die(k, "a %u-byte message of type %u from rank %d", r->len, r->type,
			      r->src);
		uint64_t v;
		memcpy(&v, r->data, 8);
		k->handler(k, r->src, r->type, v);
	}
	k->in_handler = false;
	pend_send_some(k);
}

void k_stage_flush(struct kern *k)
{
	unsigned off = 0;
	for (;;) {
		bool idle = pend_send_some(k);
		if (off == k->nstage) {
			if (idle)
				break;
			shf_wait_room(k);
			continue;
		}
		int r = shf_send_many(k->shf, k->stage + off, k->nstage - off, SHF_NONBLOCK);
		if (r == -EAGAIN) {
			shf_wait_room(k);
			continue;
		}
		if (r < 0)
			k_die(k, "shf_send_many: %s (%s)", shf_strerror(r), shf_error_detail());
		k->batch_calls++;
		off += (unsigned)r;
		if (off < k->nstage)
			shf_wait_room(k);
	}
	k->nstage = 0;
}

bool k_stage(struct kern *k, int dst, uint32_t type, const void *data, uint32_t len)
{
	k->stage[k->nstage++] = (struct shf_msg){dst, type, data, len};
	if (k->nstage < K_BATCH_MAX)
		return false;
	k_stage_flush(k);
	return true;
}

static void batch_send8(struct kern *k, int dst, uint32_t type, uint64_t v)
{
	if (k->in_handler) {
		struct kpend e = {dst, type, v};
		kvec_push(&k->pend, &e);
		return;
	}
	k->stage_val[k->nstage] = v;
	k_stage(k, dst, type, &k->stage_val[k->nstage], 8);
}

/* ----------------------------------------------------------- MPI conduit */

/* A completed receive waiting to be handled: in its receive buffer (slot),
 * or copied out (slot -1) when it completed inside a handler's wait. */
struct kq {
	uint64_t *data;
	int slot, src, tag, bytes;
};

struct kmpi {
	uint64_t *buf;      /* [world][K_TYPES][2][agg] */
	int *fill;          /* [world][K_TYPES]: messages in the current buffer */
	unsigned char *cur; /* [world][K_TYPES]: which of the two is filled */
	MPI_Request *sreq;  /* [world][K_TYPES][2] */
	MPI_Request *ereq;  /* [world]: the ENDs */
	int nrecv;
	MPI_Request *rreq;  /* [nrecv] */
	uint64_t *rbuf;     /* [nrecv][agg] */
	uint64_t *pseq;     /* [nrecv]: when each receive was posted */
	uint64_t posts;
	struct kvec q;      /* struct kq: completed receives, in matching order */
	size_t qhead;
	bool busy;          /* handling the queue (a handler's send must not recurse) */
	int ends[2];        /* ENDs received, by phase parity */
};

static void mpi_post(struct kern *k, int i)
{
	struct kmpi *m = k->mpi;
	m->pseq[i] = m->posts++;
	MPI_Irecv(m->rbuf + (size_t)i * (size_t)k->agg, (int)k->agg * 8, MPI_BYTE, MPI_ANY_SOURCE,
		  MPI_ANY_TAG, MPI_COMM_WORLD, &m->rreq[i]);
}

/*
 * Queue the receives that completed, in the order they were posted: MPI
 * matches a source's messages to receives in posting order, so this is
 * each source's sending order (ig's replies rely on it; MPI_Testsome lists
 * them by index, which is not).  Inside a handler's wait the data is
 * copied out and the receive reposted at once, so a rank that waits for a
 * send never runs out of posted receives (two ranks waiting for each
 * other's sends both keep receiving); otherwise the buffer is reposted
 * once handled.
 */
static void mpi_poll(struct kern *k)
{
	struct kmpi *m = k->mpi;
	int n = 0, idx[MAX_RECV];
	MPI_Status st[MAX_RECV];
	MPI_Testsome(m->nrecv, m->rreq, &n, idx, st);
	if (n == MPI_UNDEFINED || n <= 0)
		return;
	for (int a = 1; a < n; a++) /* insertion sort by posting order: n is small */
		for (int b = a; b > 0 && m->pseq[idx[b]] < m->pseq[idx[b - 1]]; b--) {
			int ti = idx[b];
			idx[b] = idx[b - 1], idx[b - 1] = ti;
			MPI_Status ts = st[b];
			st[b] = st[b - 1], st[b - 1] = ts;
		}
	for (int j = 0; j < n; j++) {
		int i = idx[j], bytes = 0;
		MPI_Get_count(&st[j], MPI_BYTE, &bytes);
		struct kq e = {m->rbuf + (size_t)i * (size_t)k->agg, i, st[j].MPI_SOURCE,
			       st[j].MPI_TAG, bytes};
		if (m->busy) {
			e.data = malloc((size_t)bytes + 8);
			if (!e.data)
				k_die(k, "out of memory");
			memcpy(e.data, m->rbuf + (size_t)i * (size_t)k->agg, (size_t)bytes);
			e.slot = -1;
			mpi_post(k, i);
		}
		kvec_push(&m->q, &e);
	}
}

/* Handle every completed receive, in order.  From inside a handler (its
 * send waits for a buffer) only queues: handling there would run a
 * source's later message before the rest of its earlier one. */
static void mpi_progress(struct kern *k)
{
	struct kmpi *m = k->mpi;
	mpi_poll(k);
	if (m->busy)
		return;
	m->busy = true;
	while (m->qhead < m->q.n) {
		struct kq e = ((struct kq *)m->q.p)[m->qhead++];
		if (e.tag >= END_TAG) {
			m->ends[e.tag - END_TAG]++;
		} else {
			for (int v = 0; v < e.bytes / 8; v++)
				k->handler(k, e.src, (uint32_t)e.tag, e.data[v]);
		}
		if (e.slot >= 0)
			mpi_post(k, e.slot);
		else
			free(e.data);
	}
	m->q.n = m->qhead = 0;
	m->busy = false;
}

static size_t pair(struct kern *k, int dst, uint32_t type)
{
	return (size_t)dst * K_TYPES + type;
}

/* Wait for a send request, handling receives meanwhile (never deadlocks
 * against a rank that waits for us the same way; inside a handler the
 * receives are only queued, see mpi_progress()). */
static void mpi_wait_send(struct kern *k, MPI_Request *r)
{
	while (*r != MPI_REQUEST_NULL) {
		int done = 0;
		MPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (!done)
			mpi_progress(k);
	}
}

static void mpi_flush_one(struct kern *k, int dst, uint32_t type)
{
	struct kmpi *m = k->mpi;
	size_t p = pair(k, dst, type);
	if (m->fill[p] == 0)
		return;
	int c = m->cur[p];
	uint64_t *b = m->buf + (p * 2 + (size_t)c) * (size_t)k->agg;
	MPI_Isend(b, m->fill[p] * 8, MPI_BYTE, dst, (int)type, MPI_COMM_WORLD, &m->sreq[p * 2 + c]);
	m->fill[p] = 0;
	m->cur[p] = (unsigned char)(c ^ 1);
	mpi_wait_send(k, &m->sreq[p * 2 + (c ^ 1)]); /* the other one is free again */
}

static void mpi_init(struct kern *k)
{
	struct kmpi *m = calloc(1, sizeof(*m));
	size_t w = (size_t)k->world, a = (size_t)k->agg;
	if (!m)
		k_die(k, "out of memory");
	m->nrecv = k->world < MAX_RECV / 2 ? 2 * k->world : MAX_RECV;
	m->buf = malloc(w * K_TYPES * 2 * a * 8);
	m->fill = calloc(w * K_TYPES, sizeof(int));
	m->cur = calloc(w * K_TYPES, 1);
	m->sreq = malloc(w * K_TYPES * 2 * sizeof(MPI_Request));
	m->ereq = malloc(w * sizeof(MPI_Request));
	m->rreq = malloc((size_t)m->nrecv * sizeof(MPI_Request));
	m->rbuf = malloc((size_t)m->nrecv * a * 8);
	m->pseq = malloc((size_t)m->nrecv * 8);
	m->q.size = sizeof(struct kq);
	if (!m->buf || !m->fill || !m->cur || !m->sreq || !m->ereq || !m->rreq || !m->rbuf ||
	    !m->pseq)
		k_die(k, "out of memory for %zu x %zu aggregation buffers", w * K_TYPES * 2, a);
	for (size_t i = 0; i < w * K_TYPES * 2; i++)
		m->sreq[i] = MPI_REQUEST_NULL;
	for (size_t i = 0; i < w; i++)
		m->ereq[i] = MPI_REQUEST_NULL;
	k->mpi = m;
	for (int i = 0; i < m->nrecv; i++)
		mpi_post(k, i);
}

static void mpi_phase_end(struct kern *k)
{
	struct kmpi *m = k->mpi;
	int par = (int)(k->phase & 1);
	for (int d = 0; d < k->world; d++)
		for (uint32_t t = 0; t < K_TYPES; t++)
			if (d != k->rank)
				mpi_flush_one(k, d, t);
	for (int d = 0; d < k->world; d++)
		if (d != k->rank)
			MPI_Isend(NULL, 0, MPI_BYTE, d, END_TAG + par, MPI_COMM_WORLD, &m->ereq[d]);
	while (m->ends[par] < k->world - 1)
		mpi_progress(k);
	m->ends[par] = 0;
	for (int d = 0; d < k->world; d++)
		mpi_wait_send(k, &m->ereq[d]);
}

static void mpi_fini(struct kern *k)
{
	struct kmpi *m = k->mpi;
	if (!m)
		return;
	size_t w = (size_t)k->world;
	for (size_t i = 0; i < w * K_TYPES * 2; i++)
		mpi_wait_send(k, &m->sreq[i]);
	/* every rank is past its last phase: nothing more comes */
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < m->nrecv; i++) {
		MPI_Cancel(&m->rreq[i]);
		MPI_Wait(&m->rreq[i], MPI_STATUS_IGNORE);
	}
	free(m->buf), free(m->fill), free(m->cur), free(m->sreq), free(m->ereq);
	free(m->rreq), free(m->rbuf), free(m->pseq);
	kvec_free(&m->q);
	free(m);
	k->mpi = NULL;
}

/* -------------------------------------------------------------- conduit */

void k_conduit_init(struct kern *k, k_handler h, void *user)
{
	k->handler = h;
	k->user = user;
	if (k_is_shuffle(k))
		k_open_shuffle(k, shf_cb, shf_cb_many, k);
	else
		mpi_init(k);
}

void k_send8(struct kern *k, int dst, uint32_t type, uint64_t val)
{
	if (dst == k->rank) {
		k->handler(k, dst, type, val); /* mine: no message, in both */
		return;
	}
	if (k->impl == K_SHUFFLE || k->impl == K_MORE) {
		shf_send8(k, dst, type, val);
		return;
	}
	if (k->impl == K_BATCH) {
		batch_send8(k, dst, type, val);
		return;
	}
	struct kmpi *m = k->mpi;
	size_t p = pair(k, dst, type);
	m->buf[(p * 2 + m->cur[p]) * (size_t)k->agg + (size_t)m->fill[p]] = val;
	if (++m->fill[p] == k->agg)
		mpi_flush_one(k, dst, type);
}

void k_phase_end(struct kern *k)
{
	if (k_is_shuffle(k)) {
		if (k->impl == K_BATCH)
			k_stage_flush(k);
		else
			pend_drain(k);
		int r = shf_epoch(k->shf, 0);
		if (r)
			k_die(k, "shf_epoch: %s (%s)", shf_strerror(r), shf_error_detail());
	} else {
		mpi_phase_end(k);
	}
	k->phase++;
}

void k_progress(struct kern *k)
{
	if (k->impl == K_MPI) {
		mpi_progress(k);
		return;
	}
	if (!k->thread) {
		int r = shf_poll(k->shf, 0);
		if (r < 0)
			k_die(k, "shf_poll: %s (%s)", shf_strerror(r), shf_error_detail());
	}
	if (k->impl == K_BATCH)
		pend_send_some(k);
}

void k_fini(struct kern *k)
{
	if (k->mpi)
		mpi_fini(k);
	kvec_free(&k->pend);
	if (k->shf) {
		int r = shf_close(k->shf);
		k->shf = NULL;
		if (r)
			k_die(k, "shf_close: %s", shf_strerror(r));
	}
	MPI_Finalize();
}

/* --------------------------------------------------------------- report */

int k_report(struct kern *k, bool ok, uint64_t errors, uint64_t msgs, double time_s,
	     double rate, const char *rate_name, const char *extra)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	long rss = ru.ru_maxrss; /* KiB */
	int iok = ok, all_ok = 0;
	unsigned long long e = errors, m = msgs, esum = 0, msum = 0;
	double cpu_sum = 0;
	MPI_Allreduce(&iok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	MPI_Reduce(&e, &esum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&m, &msum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	long *all = k->rank == 0 ? calloc((size_t)k->world, sizeof(long)) : NULL;
	MPI_Gather(&rss, 1, MPI_LONG, all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	if (k->rank == 0) {
		long *node_kb = calloc((size_t)k->nodes, sizeof(long)), mx = 0;
		if (!node_kb || !all)
			k_die(k, "out of memory");
		for (int r = 0; r < k->world; r++)
			node_kb[(long)r * k->nodes / k->world] += all[r];
		char nodes[256] = "";
		size_t o = 0;
		for (int i = 0; i < k->nodes; i++) {
			if (node_kb[i] > mx)
				mx = node_kb[i];
			o += (size_t)snprintf(nodes + o, o < sizeof(nodes) ? sizeof(nodes) - o : 0,
					      "%s%ld", i ? "," : "", node_kb[i]);
		}
		printf("{\"kernel\":\"%s\",\"impl\":\"%s\",\"ranks\":%d,\"nodes\":%d,"
		       "\"time_s\":%.6f,\"msgs\":%llu,\"rate\":%.1f,\"rate_name\":\"%s\","
		       "\"validation\":\"%s\",\"errors\":%llu,\"cpu_s_ranks\":%.3f,"
		       "\"rss_kb_ranks_node\":[%s],\"rss_kb_ranks_node_max\":%ld%s%s}\n",
		       k->name, k_impl_name(k), k->world, k->nodes,
		       time_s, msum, rate, rate_name, all_ok ? "ok" : "failed", esum, cpu_sum,
		       nodes, mx, extra && *extra ? "," : "", extra ? extra : "");
		fflush(stdout);
		free(all);
		free(node_kb);
	}
	return all_ok ? 0 : 1;
}

/* ----------------------------------------------------------------- kvec */

void kvec_reserve(struct kvec *v, size_t n)
{
	if (n <= v->cap)
		return;
	size_t cap = v->cap ? v->cap : 64;
	while (cap < n)
		cap *= 2;
	void *p = realloc(v->p, cap * v->size);
	if (!p) {
		fprintf(stderr, "out of memory (%zu elements of %zu bytes)\n", cap, v->size);
		MPI_Abort(MPI_COMM_WORLD, 1);
		exit(1);
	}
	v->p = p;
	v->cap = cap;
}

void kvec_push(struct kvec *v, const void *e)
{
	if (v->n == v->cap)
		kvec_reserve(v, v->n + 1);
	memcpy((char *)v->p + v->n * v->size, e, v->size);
	v->n++;
}

void kvec_free(struct kvec *v)
{
	free(v->p);
	v->p = NULL;
	v->n = v->cap = 0;
}
