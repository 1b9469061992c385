/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/recv.c - the receive buffer (struct rbuf: records
 * copied in by the library's batch delivery, one lock per batch) and the
 * receive methods that hand them out as numpy arrays.
 */
#include "recv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int shp_rbuf_init(struct rbuf *b)
{
	memset(b, 0, sizeof(*b));
	b->off = calloc(1, sizeof(uint64_t));
	if (!b->off)
		return -ENOMEM;
	return -pthread_mutex_init(&b->mu, NULL);
}

void shp_rbuf_fini(struct rbuf *b)
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
void shp_on_records(void *arg, const struct shf_rec *recs, unsigned n)
{
	struct rbuf *b = arg;
	pthread_mutex_lock(&b->mu);
	for (unsigned i = 0; i < n; i++)
		rbuf_put(b, recs[i].src, recs[i].type, recs[i].data, recs[i].len);
	pthread_mutex_unlock(&b->mu);
}

/* ------------------------------------------------------------ receive */

size_t shp_rbuf_count(CtxObject *self)
{
	pthread_mutex_lock(&self->rb.mu);
	size_t n = self->rb.n - self->rb.head;
	pthread_mutex_unlock(&self->rb.mu);
	return n;
}

/* Pull what the library has into the buffer, waiting up to timeout_ms
 * (-1: forever) for the first record, in slices; signals checked between
 * slices.  0, -errno (error raised unless -EINTR with a Python error). */
static int pull(CtxObject *self, int timeout_ms, size_t want)
{
	int64_t end = timeout_ms < 0 ? -1 : shp_now_ms() + timeout_ms;
	struct shf_ctx *c = self->ctx;
	char detail[512] = "";
	for (;;) {
		int slice = shp_slice_ms(end, 0);
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
			shp_fail(r, detail);
			return r;
		}
		if (shp_rbuf_count(self) >= want || (end >= 0 && shp_now_ms() >= end))
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
PyObject *shp_ctx_recv_raw(CtxObject *self, PyObject *args, PyObject *kw)
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
		t = shp_timeout_ms_of(self, timeout_o);
		if (t == -2)
			return NULL;
	}
	if (shp_rbuf_count(self) < max && pull(self, shp_rbuf_count(self) ? 0 : t, 1) < 0)
		return NULL;
	return take(self, max);
}

/* _pull(timeout) -> records buffered, after pulling what waits */
PyObject *shp_ctx_pull(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"timeout", NULL};
	PyObject *timeout_o = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &timeout_o))
		return NULL;
	int t = 0;
	if (timeout_o && timeout_o != Py_None) {
		t = shp_timeout_ms_of(self, timeout_o);
		if (t == -2)
			return NULL;
	}
	if (pull(self, shp_rbuf_count(self) ? 0 : t, 1) < 0)
		return NULL;
	return PyLong_FromSize_t(shp_rbuf_count(self));
}
