/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/send.c - the sends: send() and bcast() of one
 * buffer, send_many() of n records through batch_send() (shf_send_many,
 * 1024 records a call, GIL released).
 */
#include "send.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
		return shp_fail(r, detail);
	Py_RETURN_NONE;
}

PyObject *shp_ctx_send(CtxObject *self, PyObject *const *args, Py_ssize_t nargs,
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

PyObject *shp_ctx_bcast(CtxObject *self, PyObject *args, PyObject *kw)
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

/* What send_many() holds while it sends: the arrays it made (new
 * references or NULL) and the buffer it viewed. */
struct held {
	PyArrayObject *dst64, *dst, *types, *offs, *rec;
	Py_buffer view;
	bool have_view;
};

static void held_release(struct held *h)
{
	if (h->have_view)
		PyBuffer_Release(&h->view);
	Py_XDECREF(h->dst64);
	Py_XDECREF(h->dst);
	Py_XDECREF(h->types);
	Py_XDECREF(h->offs);
	Py_XDECREF(h->rec);
}

/* dst: n ranks of the world, as int32; sets b->n.  0, or -1 (raised). */
static int batch_dst(CtxObject *self, PyObject *dst_o, struct held *h, struct batch *b)
{
	h->dst64 = int_array(dst_o, "dst", NPY_INT64);
	if (!h->dst64)
		return -1;
	b->n = (size_t)PyArray_SIZE(h->dst64);
	const int64_t *d64 = PyArray_DATA(h->dst64);
	for (size_t i = 0; i < b->n; i++)
		if (check_dst(self, d64[i]) < 0)
			return -1;
	h->dst = (PyArrayObject *)PyArray_FromArray(h->dst64, PyArray_DescrFromType(NPY_INT32),
						    NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
	if (!h->dst)
		return -1;
	b->dst = PyArray_DATA(h->dst);
	return 0;
}

/* type: absent, one integer for all, or n integers in 0 .. 2**32-1.  0, or
 * -1 (raised). */
static int batch_types(PyObject *type_o, struct held *h, struct batch *b)
{
	if (!type_o || PyLong_Check(type_o) || PyArray_IsScalar(type_o, Integer))
		return type_o && type_of(type_o, &b->type0) < 0 ? -1 : 0;
	PyArrayObject *t64 = int_array(type_o, "type", NPY_INT64);
	if (!t64)
		return -1;
	if ((size_t)PyArray_SIZE(t64) != b->n) {
		PyErr_Format(PyExc_ValueError, "type has %zd entries for %zu records",
			     PyArray_SIZE(t64), b->n);
		Py_DECREF(t64);
		return -1;
	}
	const int64_t *t = PyArray_DATA(t64);
	for (size_t i = 0; i < b->n; i++)
		if (t[i] < 0 || t[i] > UINT32_MAX) {
			PyErr_Format(PyExc_ValueError, "type[%zu] = %lld is outside 0 .. 2**32-1",
				     i, (long long)t[i]);
			Py_DECREF(t64);
			return -1;
		}
	h->types = (PyArrayObject *)PyArray_FromArray(t64, PyArray_DescrFromType(NPY_UINT32),
						      NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
	Py_DECREF(t64);
	if (!h->types)
		return -1;
	b->types = PyArray_DATA(h->types);
	return 0;
}

/* records as bytes-like + offsets (n+1, non-decreasing, within the
 * buffer).  0, or -1 (raised). */
static int batch_offsets(PyObject *rec_o, PyObject *off_o, struct held *h, struct batch *b)
{
	if (PyObject_GetBuffer(rec_o, &h->view, PyBUF_SIMPLE) < 0)
		return -1;
	h->have_view = true;
	h->offs = int_array(off_o, "offsets", NPY_INT64);
	if (!h->offs)
		return -1;
	if ((size_t)PyArray_SIZE(h->offs) != b->n + 1) {
		PyErr_Format(PyExc_ValueError, "offsets has %zd entries for %zu records (need n+1)",
			     PyArray_SIZE(h->offs), b->n);
		return -1;
	}
	const int64_t *o = PyArray_DATA(h->offs);
	for (size_t i = 0; i <= b->n; i++) {
		if (o[i] < 0 || o[i] > h->view.len || (i > 0 && o[i] < o[i - 1]) ||
		    (i > 0 && o[i] - o[i - 1] > UINT32_MAX)) {
			PyErr_Format(PyExc_ValueError,
				     "offsets[%zu] = %lld: offsets must be non-decreasing and "
				     "within the %zd bytes of records", i, (long long)o[i],
				     h->view.len);
			return -1;
		}
	}
	b->base = h->view.buf;
	b->offs = o;
	return 0;
}

/* records as a numpy array of n fixed-size records: (n, k) uint8 or 1-D
 * of a fixed-size dtype, C-contiguous.  0, or -1 (raised). */
static int batch_records(PyObject *rec_o, struct held *h, struct batch *b)
{
	if (!PyArray_Check(rec_o)) {
		PyErr_Format(PyExc_TypeError,
			     "records must be a numpy array (or bytes with offsets=), not %s",
			     Py_TYPE(rec_o)->tp_name);
		return -1;
	}
	PyArrayObject *rec = h->rec = (PyArrayObject *)rec_o;
	Py_INCREF(rec);
	PyArray_Descr *dt = PyArray_DESCR(rec);
	if (PyDataType_REFCHK(dt)) {
		PyErr_SetString(PyExc_TypeError,
				"records of an object dtype cannot be sent: use a fixed-size dtype");
		return -1;
	}
	if (!PyArray_IS_C_CONTIGUOUS(rec)) {
		PyErr_SetString(PyExc_ValueError,
				"records must be C-contiguous (np.ascontiguousarray(records))");
		return -1;
	}
	if (PyArray_NDIM(rec) == 2) {
		if (PyArray_TYPE(rec) != NPY_UINT8) {
			PyErr_Format(PyExc_TypeError,
				     "2-D records must be uint8 (n, k), not %s: pass a 1-D array "
				     "of a fixed-size dtype instead", dt->typeobj->tp_name);
			return -1;
		}
		b->fixed = (size_t)PyArray_DIM(rec, 1);
	} else if (PyArray_NDIM(rec) == 1) {
		b->fixed = (size_t)PyArray_ITEMSIZE(rec);
	} else {
		PyErr_Format(PyExc_ValueError,
			     "records must be (n, k) uint8 or 1-D (it has %d dimensions)",
			     PyArray_NDIM(rec));
		return -1;
	}
	if ((size_t)PyArray_DIM(rec, 0) != b->n) {
		PyErr_Format(PyExc_ValueError, "%zd records for %zu destinations",
			     PyArray_DIM(rec, 0), b->n);
		return -1;
	}
	if (b->fixed > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "records larger than 4 GiB");
		return -1;
	}
	b->base = PyArray_DATA(rec);
	return 0;
}

PyObject *shp_ctx_send_many(CtxObject *self, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	static char *kwlist[] = {"dst", "records", "type", "offsets", NULL};
	PyObject *dst_o, *rec_o, *type_o = NULL, *off_o = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO", kwlist, &dst_o, &rec_o, &type_o, &off_o))
		return NULL;
	struct held h = {0};
	struct batch b = {0};
	PyObject *ret = NULL;
	if (batch_dst(self, dst_o, &h, &b) < 0 || batch_types(type_o, &h, &b) < 0 ||
	    (off_o != Py_None ? batch_offsets(rec_o, off_o, &h, &b)
			      : batch_records(rec_o, &h, &b)) < 0)
		goto out;

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
		shp_fail_sent(err, detail, (Py_ssize_t)sent);
		goto out;
	}
	ret = PyLong_FromSize_t(sent);
out:
	held_release(&h);
	return ret;
}
