/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/_core.c - the C half of the Python package
 * `shuffle`: a thin extension on the CPython and numpy C APIs over
 * libshuffle-client (include/shuffle.h).  shuffle/__init__.py subclasses
 * _core.Context and adds the Python-side conveniences (errors, dataclass,
 * batches); every hot call (send, send_many, recv_many) is a method of the
 * C type, so it costs one C method call and no Python frame.
 *
 * Delivery: the context is opened in poll mode (delivery_thread = 0).  Our
 * C callback copies each record into a per-context receive buffer (struct
 * rbuf) and never touches a Python object, so it may run inside any
 * library call made with the GIL released (shf_poll, and shf_send /
 * shf_flush / shf_epoch while they wait: poll mode delivers there too).
 * recv_many() hands the buffered records out as numpy arrays.  The buffer
 * grows with what the library delivers, which in poll mode is only what
 * the application's own calls pull in; stats() reports its size.
 *
 * Blocking calls (poll with a timeout, flush, epoch) run in slices of at
 * most SLICE_MS with the GIL released, checking for signals between
 * slices, so Ctrl-C raises KeyboardInterrupt within a slice and leaves
 * the context usable (an interrupted epoch is resumed by the next
 * epoch() call: shf_epoch() after -ETIMEDOUT resumes the same epoch).
 *
 * send_many() and the receive buffer each go through one function on the
 * C library's batch calls: batch_send() (shf_send_many, 1024 records a
 * call) and on_records() (batch delivery, one lock per batch).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shuffle.h>

#define SLICE_MS 100

/* ------------------------------------------------------------ errors */

static PyObject *raise_error; /* shuffle._raise(errno, detail, extra) set by __init__.py */

/* Raise the package's Error subclass for the negative errno r. */
static PyObject *fail(int r, const char *detail)
{
	if (r == -EINTR && PyErr_Occurred())
		return NULL; /* KeyboardInterrupt or another signal's exception */
	if (!raise_error) {
		errno = -r;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	PyObject *res = PyObject_CallFunction(raise_error, "is", -r, detail ? detail : "");
	Py_XDECREF(res); /* _raise always raises */
	if (!PyErr_Occurred())
		PyErr_SetString(PyExc_RuntimeError, "shuffle._raise did not raise");
	return NULL;
}

/* A failed call with the Python error raised and an attribute `sent`. */
static PyObject *fail_sent(int r, const char *detail, Py_ssize_t sent)
{
	fail(r, detail);
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (v) {
		PyObject *n = PyLong_FromSsize_t(sent);
		if (n) {
			PyObject_SetAttrString(v, "sent", n);
			Py_DECREF(n);
		}
	}
	PyErr_Restore(t, v, tb);
	return NULL;
}

/* ---------------------------------------------------- receive buffer */

/* Records delivered but not yet handed out.  Written by on_record() on
 * whatever thread runs the library's callbacks (GIL maybe not held),
 * read by recv_many() (GIL held): mu guards everything. */
struct rbuf {
	pthread_mutex_t mu;
	int32_t *src;
	uint32_t *type;
	uint64_t *off;    /* off[i]: start of record i in bytes; n+1 entries */
	size_t head;      /* records before head were handed out */
	size_t n, cap;    /* records held (from 0), capacity of src/type/off-1 */
	uint8_t *bytes;
	size_t bcap;      /* bytes capacity; used = off[n] */
	uint64_t lost;    /* records lost to allocation failure (reported once) */
};

static int rbuf_init(struct rbuf *b)
{
	memset(b, 0, sizeof(*b));
	b->off = calloc(1, sizeof(uint64_t));
	if (!b->off)
		return -ENOMEM;
	return -pthread_mutex_init(&b->mu, NULL);
}

static void rbuf_fini(struct rbuf *b)
{
	free(b->src);
	free(b->type);
	free(b->off);
	free(b->bytes);
	b->src = NULL;
	b->type = NULL;
	b->off = NULL;
	b->bytes = NULL;
	pthread_mutex_destroy(&b->mu);
}

/* mu held: drop the records before head (amortised: only when half used). */
static void rbuf_compact(struct rbuf *b)
{
	if (b->head == 0)
		return;
	if (b->head == b->n) {
		b->head = b->n = 0;
		b->off[0] = 0;
		return;
	}
	if (b->head < b->n / 2)
		return;
	size_t keep = b->n - b->head;
	uint64_t base = b->off[b->head];
	memmove(b->src, b->src + b->head, keep * sizeof(*b->src));
	memmove(b->type, b->type + b->head, keep * sizeof(*b->type));
	memmove(b->bytes, b->bytes + base, b->off[b->n] - base);
	for (size_t i = 0; i <= keep; i++)
		b->off[i] = b->off[b->head + i] - base;
	b->head = 0;
	b->n = keep;
}

/* One record into b (b->mu held).  Copies it: the pointer is valid only
 * during the library's callback. */
static void rbuf_put(struct rbuf *b, int src, uint32_t type, const void *data, uint32_t len)
{
	rbuf_compact(b);
	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 1024;
		int32_t *s = realloc(b->src, nc * sizeof(*s));
		if (s)
			b->src = s;
		uint32_t *t = realloc(b->type, nc * sizeof(*t));
		if (t)
			b->type = t;
		uint64_t *o = realloc(b->off, (nc + 1) * sizeof(*o));
		if (o)
			b->off = o;
		if (!s || !t || !o)
			goto lost;
		b->cap = nc;
	}
	uint64_t used = b->off[b->n];
	if (used + len > b->bcap) {
		size_t nc = b->bcap ? b->bcap : 65536;
		while (nc < used + len)
			nc *= 2;
		uint8_t *p = realloc(b->bytes, nc);
		if (!p)
			goto lost;
		b->bytes = p;
		b->bcap = nc;
	}
	memcpy(b->bytes + used, data, len);
	b->src[b->n] = src;
	b->type[b->n] = type;
	b->off[b->n + 1] = used + len;
	b->n++;
	return;
lost:
	b->lost++;
}

/* The library's batch delivery callback (opts.deliver_many; poll mode:
 * runs inside our own calls, GIL released): one lock for the batch. */
static void on_records(void *arg, const struct shf_rec *recs, unsigned n)
{
	struct rbuf *b = arg;
	pthread_mutex_lock(&b->mu);
	for (unsigned i = 0; i < n; i++)
		rbuf_put(b, recs[i].src, recs[i].type, recs[i].data, recs[i].len);
	pthread_mutex_unlock(&b->mu);
}

/* ---------------------------------------------------------- the type */

typedef struct {
	PyObject_HEAD
	struct shf_ctx *ctx;
	struct rbuf rb;
	bool rb_ok;
	int rank, world;
	int timeout_ms;  /* the context's default (shf_opts.timeout_ms) */
	int inflight;    /* calls running with the GIL released (close waits) */
	PyObject *weakrefs;
} CtxObject;

static PyObject *closed_error(void)
{
	return fail(-EBADF, "the context is closed");
}

#define CHECK_OPEN(self)                                                                           \
	do {                                                                                       \
		if (!(self)->ctx)                                                                  \
			return closed_error();                                                     \
	} while (0)

/* Python timeout (None: the context's; seconds; negative: forever) to ms
 * for the C calls (-1: forever).  -2: error raised. */
static int timeout_ms_of(CtxObject *self, PyObject *t)
{
	if (!t || t == Py_None) {
		if (self->timeout_ms == 0)
			return 60000;
		return self->timeout_ms;
	}
	double s = PyFloat_AsDouble(t);
	if (s == -1.0 && PyErr_Occurred())
		return -2;
	if (s < 0)
		return -1;
	if (s * 1000.0 > (double)INT_MAX)
		return -1;
	return (int)(s * 1000.0 + 0.5);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int ctx_init(CtxObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"rank", "world", "job", "socket", "ring_bytes", "timeout", NULL};
	PyObject *rank_o = Py_None, *world_o = Py_None, *timeout_o = Py_None;
	const char *job = NULL, *sock = NULL;
	unsigned long ring = 0;
	if (self->ctx) {
		PyErr_SetString(PyExc_RuntimeError, "Context is already open");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOzzkO", kwlist, &rank_o, &world_o, &job,
					 &sock, &ring, &timeout_o))
		return -1;
	struct shf_opts o;
	shf_opts_init(&o);
	if ((rank_o == Py_None) != (world_o == Py_None)) {
		PyErr_SetString(PyExc_ValueError, "give both rank and world, or neither");
		return -1;
	}
	if (rank_o != Py_None) {
		long r = PyLong_AsLong(rank_o), w = PyLong_AsLong(world_o);
		if (PyErr_Occurred())
			return -1;
		if (w < 1 || w > INT_MAX || r < 0 || r >= w) {
			PyErr_Format(PyExc_ValueError, "rank %ld of world %ld: need 0 <= rank < world", r, w);
			return -1;
		}
		o.rank = (int)r;
		o.world = (int)w;
	}
	if (ring > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "ring_bytes is above 4 GiB");
		return -1;
	}
	o.ring_bytes = (uint32_t)ring;
	o.job = job;
	o.socket_path = sock;
	o.delivery_thread = 0;
	if (timeout_o == Py_None) {
		o.timeout_ms = 0;
	} else {
		double s = PyFloat_AsDouble(timeout_o);
		if (s == -1.0 && PyErr_Occurred())
			return -1;
		o.timeout_ms = s < 0 || s * 1000.0 > INT_MAX ? -1 : (int)(s * 1000.0 + 0.5);
		if (o.timeout_ms == 0)
			o.timeout_ms = 1; /* 0 means "default" to the library */
	}
	if (!self->rb_ok) {
		int e = rbuf_init(&self->rb);
		if (e) {
			errno = -e;
			PyErr_SetFromErrno(PyExc_OSError);
			return -1;
		}
		self->rb_ok = true;
	}
	struct shf_ctx *c = NULL;
	int r;
	char detail[512] = "";
	Py_BEGIN_ALLOW_THREADS
	o.deliver_many = on_records;
	r = shf_open(&o, NULL, &self->rb, &c);
	if (r < 0)
		snprintf(detail, sizeof(detail), "%s", shf_error_detail());
	Py_END_ALLOW_THREADS
	if (r < 0) {
		fail(r, detail);
		return -1;
	}
	self->ctx = c;
	self->rank = shf_rank(c);
	self->world = shf_world(c);
	self->timeout_ms = o.timeout_ms;
	return 0;
}

/* Close the C context (GIL released while it flushes).  0 or -errno. */
static int ctx_do_close(CtxObject *self, char *detail, size_t dlen)
{
	struct shf_ctx *c = self->ctx;
	if (!c)
		return 0;
	self->ctx = NULL; /* every later call raises Closed */
	int r;
	Py_BEGIN_ALLOW_THREADS
	r = shf_close(c);
	if (r < 0 && detail)
		snprintf(detail, dlen, "%s", shf_error_detail());
	Py_END_ALLOW_THREADS
	return r;
}

static void ctx_dealloc(CtxObject *self)
{
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	if (self->ctx && self->inflight == 0)
		ctx_do_close(self, NULL, 0);
	if (self->rb_ok)
		rbuf_fini(&self->rb);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ctx_close(CtxObject *self, PyObject *unused)
{
	if (!self->ctx)
		Py_RETURN_NONE; /* closing twice is fine */
	if (self->inflight) {
		PyErr_SetString(PyExc_RuntimeError,
				"close(): another thread is inside a call on this context");
		return NULL;
	}
	char detail[512] = "";
	int r = ctx_do_close(self, detail, sizeof(detail));
	if (r < 0 && r != -ENOTCONN && r != -ECANCELED)
		return fail(r, detail);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------- sends */

static int check_dst(CtxObject *self, long long dst)
{
	if (dst < 0 || dst >= self->world) {
		PyErr_Format(PyExc_ValueError, "dst %lld is not a rank of this job (world %d)", dst,
			     self->world);
		return -1;
	}
	return 0;
}

static int type_of(PyObject *o, uint32_t *t)
{
	unsigned long long v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyErr_Clear();
			PyErr_SetString(PyExc_ValueError, "type must be in 0 .. 2**32-1");
		}
		return -1;
	}
	if (v > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "type must be in 0 .. 2**32-1");
		return -1;
	}
	*t = (uint32_t)v;
	return 0;
}

/* send one record: a non-blocking try with the GIL held (the common case
 * costs no GIL release), else a blocking send with the GIL released. */
static PyObject *send_one(CtxObject *self, int dst, uint32_t type, PyObject *data, bool bcast,
			  unsigned bflags)
{
	Py_buffer v;
	if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
		return NULL;
	if ((size_t)v.len > UINT32_MAX) {
		PyBuffer_Release(&v);
		PyErr_SetString(PyExc_ValueError, "message larger than 4 GiB");
		return NULL;
	}
	int r = bcast ? shf_bcast(self->ctx, type, v.buf, (uint32_t)v.len, bflags | SHF_NONBLOCK)
		      : shf_send(self->ctx, dst, type, v.buf, (uint32_t)v.len, SHF_NONBLOCK);
	char detail[512] = "";
	if (r == -EAGAIN) {
		struct shf_ctx *c = self->ctx;
		self->inflight++;
		Py_BEGIN_ALLOW_THREADS
		r = bcast ? shf_bcast(c, type, v.buf, (uint32_t)v.len, bflags)
			  : shf_send(c, dst, type, v.buf, (uint32_t)v.len, 0);
		if (r < 0)
			snprintf(detail, sizeof(detail), "%s", shf_error_detail());
		Py_END_ALLOW_THREADS
		self->inflight--;
	} else if (r < 0) {
		snprintf(detail, sizeof(detail), "%s", shf_error_detail());
	}
	PyBuffer_Release(&v);
	if (r < 0)
		return fail(r, detail);
	Py_RETURN_NONE;
}

static PyObject *ctx_send(CtxObject *self, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames)
{
	CHECK_OPEN(self);
	static const char *const names[] = {"dst", "data", "type"};
	PyObject *a[3] = {NULL, NULL, NULL};
	if (nargs > 3) {
		PyErr_SetString(PyExc_TypeError, "send(dst, data, type=0)");
		return NULL;
	}
	for (Py_ssize_t i = 0; i < nargs; i++)
		a[i] = args[i];
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t k = 0; k < nk; k++) {
		const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
		int j = -1;
		for (int i = 0; i < 3; i++)
			if (kn && strcmp(kn, names[i]) == 0)
				j = i;
		if (j < 0 || a[j]) {
			PyErr_Format(PyExc_TypeError, "send(): unexpected or repeated argument %s",
				     kn ? kn : "?");
			return NULL;
		}
		a[j] = args[nargs + k];
	}
	if (!a[0] || !a[1]) {
		PyErr_SetString(PyExc_TypeError, "send(dst, data, type=0): dst and data are required");
		return NULL;
	}
	long long dst = PyLong_AsLongLong(a[0]);
	if (dst == -1 && PyErr_Occurred())
		return NULL;
	if (check_dst(self, dst) < 0)
		return NULL;
	uint32_t type = 0;
	if (a[2] && type_of(a[2], &type) < 0)
		return NULL;
	return send_one(self, (int)dst, type, a[1], false, 0);
}

static PyObject *ctx_bcast(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"data", "type", "self", NULL};
	PyObject *data, *type_o = NULL;
	int to_self = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$p", kwlist, &data, &type_o, &to_self))
		return NULL;
	uint32_t type = 0;
	if (type_o && type_of(type_o, &type) < 0)
		return NULL;
	return send_one(self, 0, type, data, true, to_self ? SHF_BCAST_SELF : 0);
}

/* One batch for batch_send(): n records; record i is dst[i], type (types
 * ? types[i] : type0), bytes base + off[i] .. base + off[i] + len (len
 * fixed: lens == NULL, else off[i+1] - off[i]). */
struct batch {
	size_t n;
	const int32_t *dst;
	const uint32_t *types;
	uint32_t type0;
	const uint8_t *base;
	size_t fixed;          /* record size when offs == NULL */
	const int64_t *offs;   /* n+1 offsets, or NULL */
};

/*
 * The whole batch, GIL released by the caller: shf_send_many() of up to
 * BATCH_CHUNK records at a time.  Returns the number sent (n on success)
 * and sets *err to 0 or the error that stopped it.
 */
#define BATCH_CHUNK 1024u
static size_t batch_send(struct shf_ctx *c, const struct batch *b, int *err, char *detail,
			 size_t dlen)
{
	struct shf_msg m[BATCH_CHUNK];
	size_t done = 0;
	*err = 0;
	while (done < b->n) {
		unsigned k = (unsigned)(b->n - done < BATCH_CHUNK ? b->n - done : BATCH_CHUNK);
		for (unsigned j = 0; j < k; j++) {
			size_t i = done + j;
			if (b->offs) {
				m[j].data = b->base + b->offs[i];
				m[j].len = (uint32_t)(b->offs[i + 1] - b->offs[i]);
			} else {
				m[j].data = b->base + i * b->fixed;
				m[j].len = (uint32_t)b->fixed;
			}
			m[j].dst = b->dst[i];
			m[j].type = b->types ? b->types[i] : b->type0;
		}
		int r = shf_send_many(c, m, k, 0);
		if (r < 0) {
			*err = r;
			snprintf(detail, dlen, "%s", shf_error_detail());
			return done;
		}
		done += (size_t)r; /* a short count: the next call says what stops it */
	}
	return done;
}

/* A 1-D array of n integers as int64 (a copy only when needed). */
static PyArrayObject *int_array(PyObject *o, const char *what, int typenum)
{
	PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(o, NPY_NOTYPE, 0, 0, 0);
	if (!a)
		return NULL;
	if (PyArray_NDIM(a) != 1) {
		PyErr_Format(PyExc_ValueError, "%s must be 1-D (it has %d dimensions)", what,
			     PyArray_NDIM(a));
		Py_DECREF(a);
		return NULL;
	}
	if (!PyArray_ISINTEGER(a) && !(PyArray_SIZE(a) == 0)) {
		PyErr_Format(PyExc_TypeError, "%s must be an integer array, not %s", what,
			     PyArray_DESCR(a)->typeobj->tp_name);
		Py_DECREF(a);
		return NULL;
	}
	PyArrayObject *c = (PyArrayObject *)PyArray_FromArray(
		a, PyArray_DescrFromType(typenum), NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
	Py_DECREF(a);
	return c;
}

static PyObject *ctx_send_many(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"dst", "records", "type", "offsets", NULL};
	PyObject *dst_o, *rec_o, *type_o = NULL, *off_o = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO", kwlist, &dst_o, &rec_o, &type_o, &off_o))
		return NULL;
	PyArrayObject *dst64 = NULL, *dst = NULL, *types = NULL, *offs = NULL, *rec = NULL;
	Py_buffer view = {0};
	bool have_view = false;
	PyObject *ret = NULL;
	struct batch b = {0};

	dst64 = int_array(dst_o, "dst", NPY_INT64);
	if (!dst64)
		goto out;
	b.n = (size_t)PyArray_SIZE(dst64);
	const int64_t *d64 = PyArray_DATA(dst64);
	for (size_t i = 0; i < b.n; i++)
		if (check_dst(self, d64[i]) < 0)
			goto out;
	dst = (PyArrayObject *)PyArray_FromArray(dst64, PyArray_DescrFromType(NPY_INT32),
						 NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
	if (!dst)
		goto out;
	b.dst = PyArray_DATA(dst);

	if (!type_o || PyLong_Check(type_o) || PyArray_IsScalar(type_o, Integer)) {
		if (type_o && type_of(type_o, &b.type0) < 0)
			goto out;
	} else {
		PyArrayObject *t64 = int_array(type_o, "type", NPY_INT64);
		if (!t64)
			goto out;
		if ((size_t)PyArray_SIZE(t64) != b.n) {
			PyErr_Format(PyExc_ValueError, "type has %zd entries for %zu records",
				     PyArray_SIZE(t64), b.n);
			Py_DECREF(t64);
			goto out;
		}
		const int64_t *t = PyArray_DATA(t64);
		for (size_t i = 0; i < b.n; i++)
			if (t[i] < 0 || t[i] > UINT32_MAX) {
				PyErr_Format(PyExc_ValueError, "type[%zu] = %lld is outside 0 .. 2**32-1",
					     i, (long long)t[i]);
				Py_DECREF(t64);
				goto out;
			}
		types = (PyArrayObject *)PyArray_FromArray(t64, PyArray_DescrFromType(NPY_UINT32),
							   NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
		Py_DECREF(t64);
		if (!types)
			goto out;
		b.types = PyArray_DATA(types);
	}

	if (off_o != Py_None) {
		/* bytes-like + offsets (n+1, non-decreasing, within the buffer) */
		if (PyObject_GetBuffer(rec_o, &view, PyBUF_SIMPLE) < 0)
			goto out;
		have_view = true;
		offs = int_array(off_o, "offsets", NPY_INT64);
		if (!offs)
			goto out;
		if ((size_t)PyArray_SIZE(offs) != b.n + 1) {
			PyErr_Format(PyExc_ValueError, "offsets has %zd entries for %zu records (need n+1)",
				     PyArray_SIZE(offs), b.n);
			goto out;
		}
		const int64_t *o = PyArray_DATA(offs);
		for (size_t i = 0; i <= b.n; i++) {
			if (o[i] < 0 || o[i] > view.len || (i > 0 && o[i] < o[i - 1]) ||
			    (i > 0 && o[i] - o[i - 1] > UINT32_MAX)) {
				PyErr_Format(PyExc_ValueError,
					     "offsets[%zu] = %lld: offsets must be non-decreasing and "
					     "within the %zd bytes of records", i, (long long)o[i],
					     view.len);
				goto out;
			}
		}
		b.base = view.buf;
		b.offs = o;
	} else {
		if (!PyArray_Check(rec_o)) {
			PyErr_Format(PyExc_TypeError,
				     "records must be a numpy array (or bytes with offsets=), not %s",
				     Py_TYPE(rec_o)->tp_name);
			goto out;
		}
		rec = (PyArrayObject *)rec_o;
		Py_INCREF(rec);
		PyArray_Descr *dt = PyArray_DESCR(rec);
		if (PyDataType_REFCHK(dt)) {
			PyErr_SetString(PyExc_TypeError,
					"records of an object dtype cannot be sent: use a fixed-size dtype");
			goto out;
		}
		if (!PyArray_IS_C_CONTIGUOUS(rec)) {
			PyErr_SetString(PyExc_ValueError,
					"records must be C-contiguous (np.ascontiguousarray(records))");
			goto out;
		}
		if (PyArray_NDIM(rec) == 2) {
			if (PyArray_TYPE(rec) != NPY_UINT8) {
				PyErr_Format(PyExc_TypeError,
					     "2-D records must be uint8 (n, k), not %s: pass a 1-D array "
					     "of a fixed-size dtype instead", dt->typeobj->tp_name);
				goto out;
			}
			b.fixed = (size_t)PyArray_DIM(rec, 1);
		} else if (PyArray_NDIM(rec) == 1) {
			b.fixed = (size_t)PyArray_ITEMSIZE(rec);
		} else {
			PyErr_Format(PyExc_ValueError,
				     "records must be (n, k) uint8 or 1-D (it has %d dimensions)",
				     PyArray_NDIM(rec));
			goto out;
		}
		if ((size_t)PyArray_DIM(rec, 0) != b.n) {
			PyErr_Format(PyExc_ValueError, "%zd records for %zu destinations",
				     PyArray_DIM(rec, 0), b.n);
			goto out;
		}
		if (b.fixed > UINT32_MAX) {
			PyErr_SetString(PyExc_ValueError, "records larger than 4 GiB");
			goto out;
		}
		b.base = PyArray_DATA(rec);
	}

	int err;
	size_t sent;
	char detail[512] = "";
	struct shf_ctx *c = self->ctx;
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	sent = batch_send(c, &b, &err, detail, sizeof(detail));
	Py_END_ALLOW_THREADS
	self->inflight--;
	if (err < 0) {
		fail_sent(err, detail, (Py_ssize_t)sent);
		goto out;
	}
	ret = PyLong_FromSize_t(sent);
out:
	if (have_view)
		PyBuffer_Release(&view);
	Py_XDECREF(dst64);
	Py_XDECREF(dst);
	Py_XDECREF(types);
	Py_XDECREF(offs);
	Py_XDECREF(rec);
	return ret;
}

/* ------------------------------------------------------------ receive */

static size_t rbuf_count(CtxObject *self)
{
	pthread_mutex_lock(&self->rb.mu);
	size_t n = self->rb.n - self->rb.head;
	pthread_mutex_unlock(&self->rb.mu);
	return n;
}

/* The next wait's slice: SLICE_MS, or what is left until end (a
 * CLOCK_MONOTONIC ms deadline; -1: none), at least `floor`. */
static int slice_ms(int64_t end, int floor)
{
	if (end < 0)
		return SLICE_MS;
	int64_t left = end - now_ms();
	return left <= floor ? floor : left > SLICE_MS ? SLICE_MS : (int)left;
}

/* Pull what the library has into the buffer, waiting up to timeout_ms
 * (-1: forever) for the first record, in slices; signals checked between
 * slices.  0, -errno (error raised unless -EINTR with a Python error). */
static int pull(CtxObject *self, int timeout_ms, size_t want)
{
	int64_t end = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct shf_ctx *c = self->ctx;
	char detail[512] = "";
	for (;;) {
		int slice = slice_ms(end, 0);
		int r;
		self->inflight++;
		Py_BEGIN_ALLOW_THREADS
		/* shf_poll returns after one batch; take what is waiting */
		r = shf_poll(c, slice);
		while (r > 0) {
			int r2 = shf_poll(c, 0);
			if (r2 <= 0)
				break;
		}
		if (r < 0)
			snprintf(detail, sizeof(detail), "%s", shf_error_detail());
		Py_END_ALLOW_THREADS
		self->inflight--;
		if (r < 0) {
			fail(r, detail);
			return r;
		}
		if (rbuf_count(self) >= want || (end >= 0 && now_ms() >= end))
			return 0;
		if (PyErr_CheckSignals() < 0)
			return -EINTR;
	}
}

static PyObject *take(CtxObject *self, size_t max)
{
	struct rbuf *b = &self->rb;
	pthread_mutex_lock(&b->mu);
	if (b->lost) {
		uint64_t lost = b->lost;
		b->lost = 0;
		pthread_mutex_unlock(&b->mu);
		PyErr_Format(PyExc_MemoryError,
			     "%llu delivered records were lost: no memory to buffer them",
			     (unsigned long long)lost);
		return NULL;
	}
	size_t m = b->n - b->head;
	if (m > max)
		m = max;
	npy_intp n1 = (npy_intp)m, n2 = (npy_intp)m + 1;
	uint64_t base = b->off[b->head], total = b->off[b->head + m] - base;
	npy_intp nb = (npy_intp)total;
	PyObject *src = PyArray_SimpleNew(1, &n1, NPY_INT32);
	PyObject *type = PyArray_SimpleNew(1, &n1, NPY_UINT32);
	PyObject *offs = PyArray_SimpleNew(1, &n2, NPY_INT64);
	PyObject *data = PyArray_SimpleNew(1, &nb, NPY_UINT8);
	if (!src || !type || !offs || !data) {
		pthread_mutex_unlock(&b->mu);
		Py_XDECREF(src);
		Py_XDECREF(type);
		Py_XDECREF(offs);
		Py_XDECREF(data);
		return NULL;
	}
	memcpy(PyArray_DATA((PyArrayObject *)src), b->src + b->head, m * sizeof(int32_t));
	memcpy(PyArray_DATA((PyArrayObject *)type), b->type + b->head, m * sizeof(uint32_t));
	memcpy(PyArray_DATA((PyArrayObject *)data), b->bytes + base, total);
	int64_t *o = PyArray_DATA((PyArrayObject *)offs);
	for (size_t i = 0; i <= m; i++)
		o[i] = (int64_t)(b->off[b->head + i] - base);
	b->head += m;
	rbuf_compact(b);
	pthread_mutex_unlock(&b->mu);
	return Py_BuildValue("(NNNN)", src, type, data, offs);
}

/* _recv_many(max, timeout) -> (src, type, data, offsets) */
static PyObject *ctx_recv_raw(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"max", "timeout", NULL};
	PyObject *max_o = Py_None, *timeout_o = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", kwlist, &max_o, &timeout_o))
		return NULL;
	size_t max = SIZE_MAX;
	if (max_o != Py_None) {
		Py_ssize_t m = PyLong_AsSsize_t(max_o);
		if (m == -1 && PyErr_Occurred())
			return NULL;
		if (m < 1) {
			PyErr_SetString(PyExc_ValueError, "max must be >= 1 (or None)");
			return NULL;
		}
		max = (size_t)m;
	}
	/* timeout None here: do not wait (recv_many's default); the wrapper
	 * passes seconds */
	int t = 0;
	if (timeout_o && timeout_o != Py_None) {
		t = timeout_ms_of(self, timeout_o);
		if (t == -2)
			return NULL;
	}
	if (rbuf_count(self) < max && pull(self, rbuf_count(self) ? 0 : t, 1) < 0)
		return NULL;
	return take(self, max);
}

/* _pull(timeout) -> records buffered, after pulling what waits */
static PyObject *ctx_pull(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"timeout", NULL};
	PyObject *timeout_o = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &timeout_o))
		return NULL;
	int t = 0;
	if (timeout_o && timeout_o != Py_None) {
		t = timeout_ms_of(self, timeout_o);
		if (t == -2)
			return NULL;
	}
	if (pull(self, rbuf_count(self) ? 0 : t, 1) < 0)
		return NULL;
	return PyLong_FromSize_t(rbuf_count(self));
}

/* ------------------------------------------------- flush, epoch, misc */

/* epoch() and flush() wait in slices of at most SLICE_MS with the GIL
 * released, checking for signals between slices: what = 0 is an epoch,
 * else a flush target.  An interrupted epoch is resumed by the next one
 * (shf_epoch() after -ETIMEDOUT resumes the same epoch). */
static PyObject *sliced_wait(CtxObject *self, unsigned what, PyObject *timeout_o)
{
	int t = timeout_ms_of(self, timeout_o);
	if (t == -2)
		return NULL;
	int64_t end = t < 0 ? -1 : now_ms() + t;
	struct shf_ctx *c = self->ctx;
	char detail[512] = "";
	for (;;) {
		int slice = slice_ms(end, 1);
		int r;
		self->inflight++;
		Py_BEGIN_ALLOW_THREADS
		r = what ? shf_flush(c, what, slice) : shf_epoch(c, slice);
		if (r < 0)
			snprintf(detail, sizeof(detail), "%s", shf_error_detail());
		Py_END_ALLOW_THREADS
		self->inflight--;
		if (r == 0)
			Py_RETURN_NONE;
		if (r != -ETIMEDOUT || (end >= 0 && now_ms() >= end))
			return fail(r, detail);
		if (PyErr_CheckSignals() < 0)
			return NULL;
	}
}

static PyObject *ctx_epoch(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"timeout", NULL};
	PyObject *timeout_o = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &timeout_o))
		return NULL;
	return sliced_wait(self, 0, timeout_o);
}

static PyObject *ctx_flush(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"what", "timeout", NULL};
	unsigned what;
	PyObject *timeout_o = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "I|O", kwlist, &what, &timeout_o))
		return NULL;
	if (what < SHF_FLUSH_ORIGIN || what > SHF_FLUSH_DELIVERY) {
		PyErr_Format(PyExc_ValueError, "flush target %u: use FLUSH_ORIGIN, FLUSH_REMOTE "
			     "or FLUSH_DELIVERY", what);
		return NULL;
	}
	return sliced_wait(self, what, timeout_o);
}

static PyObject *ctx_node_info_raw(CtxObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	struct shf_node_info ni = {0};
	char detail[512] = "";
	int r;
	struct shf_ctx *c = self->ctx;
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	r = shf_node_info(c, &ni);
	if (r < 0)
		snprintf(detail, sizeof(detail), "%s", shf_error_detail());
	Py_END_ALLOW_THREADS
	self->inflight--;
	if (r < 0)
		return fail(r, detail);
	int lc = ni.local_count > 0 ? ni.local_count : 0, nn = ni.nodes > 0 ? ni.nodes : 0;
	int *local = calloc((size_t)lc + 1, sizeof(int)), *counts = calloc((size_t)nn + 1, sizeof(int));
	if (!local || !counts) {
		free(local);
		free(counts);
		return PyErr_NoMemory();
	}
	struct shf_node_info n2 = {0};
	n2.local_ranks = local;
	n2.local_cap = lc;
	n2.node_counts = counts;
	n2.node_counts_cap = nn;
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	r = shf_node_info(c, &n2);
	if (r < 0)
		snprintf(detail, sizeof(detail), "%s", shf_error_detail());
	Py_END_ALLOW_THREADS
	self->inflight--;
	PyObject *ret = NULL;
	if (r < 0) {
		fail(r, detail);
		goto out;
	}
	int lk = n2.local_count < lc ? n2.local_count : lc, nk = n2.nodes < nn ? n2.nodes : nn;
	PyObject *l = PyList_New(lk), *k = PyList_New(nk);
	if (!l || !k) {
		Py_XDECREF(l);
		Py_XDECREF(k);
		goto out;
	}
	for (int i = 0; i < lk; i++)
		PyList_SET_ITEM(l, i, PyLong_FromLong(local[i]));
	for (int i = 0; i < nk; i++)
		PyList_SET_ITEM(k, i, PyLong_FromLong(counts[i]));
	ret = Py_BuildValue("(iiiNN)", n2.node, n2.nodes, n2.local_count, l, k);
out:
	free(local);
	free(counts);
	return ret;
}

static PyObject *ctx_stats(CtxObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	struct shf_stats s;
	int r = shf_stats_get(self->ctx, &s);
	if (r < 0)
		return fail(r, shf_error_detail());
	pthread_mutex_lock(&self->rb.mu);
	unsigned long long bm = self->rb.n - self->rb.head;
	unsigned long long bb = self->rb.off[self->rb.n] - self->rb.off[self->rb.head];
	pthread_mutex_unlock(&self->rb.mu);
	return Py_BuildValue(
		"{sKsKsKsKsKsKsKsKsKsKsKsK}", "sent_msgs", (unsigned long long)s.sent_msgs,
		"sent_bytes", (unsigned long long)s.sent_bytes, "delivered_msgs",
		(unsigned long long)s.delivered_msgs, "delivered_bytes",
		(unsigned long long)s.delivered_bytes, "send_blocked_ns",
		(unsigned long long)s.send_blocked_ns, "send_eagain", (unsigned long long)s.send_eagain,
		"dropped_dead", (unsigned long long)s.dropped_dead, "dropped_down",
		(unsigned long long)s.dropped_down, "flushes", (unsigned long long)s.flushes, "epochs",
		(unsigned long long)s.epochs, "buffered_msgs", bm, "buffered_bytes", bb);
}

static PyObject *ctx_fileno(CtxObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	int fd = shf_event_fd(self->ctx);
	if (fd < 0)
		return fail(fd, shf_error_detail());
	return PyLong_FromLong(fd);
}

static PyObject *ctx_pending(CtxObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	return PyLong_FromSize_t(rbuf_count(self));
}

static PyObject *ctx_get_rank(CtxObject *self, void *unused)
{
	CHECK_OPEN(self);
	return PyLong_FromLong(self->rank);
}

static PyObject *ctx_get_world(CtxObject *self, void *unused)
{
	CHECK_OPEN(self);
	return PyLong_FromLong(self->world);
}

static PyObject *ctx_get_closed(CtxObject *self, void *unused)
{
	return PyBool_FromLong(self->ctx == NULL);
}

static PyMethodDef ctx_methods[] = {
	{"close", (PyCFunction)ctx_close, METH_NOARGS,
	 "close(): flush origin, leave the job, free the context.  A second close() does nothing."},
	{"send", (PyCFunction)(void (*)(void))ctx_send, METH_FASTCALL | METH_KEYWORDS,
	 "send(dst, data, type=0): write-behind send of any buffer-protocol object to rank dst."},
	{"bcast", (PyCFunction)(void (*)(void))ctx_bcast, METH_VARARGS | METH_KEYWORDS,
	 "bcast(data, type=0, *, self=False): send data once to every other rank (and this one "
	 "with self=True)."},
	{"send_many", (PyCFunction)(void (*)(void))ctx_send_many, METH_VARARGS | METH_KEYWORDS,
	 "send_many(dst, records, type=0, offsets=None) -> n: send n records in one call "
	 "(GIL released)."},
	{"_recv_raw", (PyCFunction)(void (*)(void))ctx_recv_raw, METH_VARARGS | METH_KEYWORDS,
	 "_recv_raw(max=None, timeout=None) -> (src, type, data, offsets)"},
	{"_pull", (PyCFunction)(void (*)(void))ctx_pull, METH_VARARGS | METH_KEYWORDS,
	 "_pull(timeout=None) -> records buffered"},
	{"epoch", (PyCFunction)(void (*)(void))ctx_epoch, METH_VARARGS | METH_KEYWORDS,
	 "epoch(timeout=None): collective; every record any rank sent before it is delivered."},
	{"flush", (PyCFunction)(void (*)(void))ctx_flush, METH_VARARGS | METH_KEYWORDS,
	 "flush(what, timeout=None): FLUSH_ORIGIN, FLUSH_REMOTE or FLUSH_DELIVERY."},
	{"_node_info_raw", (PyCFunction)ctx_node_info_raw, METH_NOARGS,
	 "_node_info_raw() -> (node, nodes, local_count, local_ranks, node_counts)"},
	{"stats", (PyCFunction)ctx_stats, METH_NOARGS,
	 "stats() -> dict: the library's counters for this context, plus buffered_msgs/bytes."},
	{"fileno", (PyCFunction)ctx_fileno, METH_NOARGS,
	 "fileno() -> int: readable when records wait in the delivery ring (see pending())."},
	{"pending", (PyCFunction)ctx_pending, METH_NOARGS,
	 "pending() -> int: records already buffered here, returned by recv_many() at once."},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef ctx_getset[] = {
	{"rank", (getter)ctx_get_rank, NULL, "this process's rank in the job", NULL},
	{"world", (getter)ctx_get_world, NULL, "the job's number of ranks", NULL},
	{"closed", (getter)ctx_get_closed, NULL, "True once close() ran", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CtxType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "shuffle._core.Context",
	.tp_basicsize = sizeof(CtxObject),
	.tp_dealloc = (destructor)ctx_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "The C context (see shuffle.Context).",
	.tp_methods = ctx_methods,
	.tp_getset = ctx_getset,
	.tp_init = (initproc)ctx_init,
	.tp_new = PyType_GenericNew,
	.tp_weaklistoffset = offsetof(CtxObject, weakrefs),
};

/* ------------------------------------------------------------ module */

static PyObject *mod_set_raise(PyObject *m, PyObject *fn)
{
	Py_XINCREF(fn);
	Py_XSETREF(raise_error, fn);
	Py_RETURN_NONE;
}

static PyObject *mod_strerror(PyObject *m, PyObject *arg)
{
	long e = PyLong_AsLong(arg);
	if (e == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(shf_strerror(e > 0 ? (int)-e : (int)e));
}

static PyMethodDef mod_methods[] = {
	{"_set_raise", mod_set_raise, METH_O, "internal: the error factory"},
	{"strerror", mod_strerror, METH_O, "strerror(errno) -> the library's message for it"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef mod_def = {
	PyModuleDef_HEAD_INIT, "shuffle._core", "C core of the shuffle package.", -1, mod_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void);
PyMODINIT_FUNC PyInit__core(void)
{
	import_array();
	if (PyType_Ready(&CtxType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&mod_def);
	if (!m)
		return NULL;
	Py_INCREF(&CtxType);
	if (PyModule_AddObject(m, "Context", (PyObject *)&CtxType) < 0 ||
	    PyModule_AddIntConstant(m, "FLUSH_ORIGIN", SHF_FLUSH_ORIGIN) < 0 ||
	    PyModule_AddIntConstant(m, "FLUSH_REMOTE", SHF_FLUSH_REMOTE) < 0 ||
	    PyModule_AddIntConstant(m, "FLUSH_DELIVERY", SHF_FLUSH_DELIVERY) < 0 ||
	    PyModule_AddIntConstant(m, "API_VERSION", SHF_API_VERSION) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
