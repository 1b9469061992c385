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
 *
 * Files: _core.c (this: the type, open and close, epoch, flush, info and
 * the module), send.c, recv.c (the receive buffer and receives) and
 * common.c (errors, timeouts).
 */
#define SHP_IMPORT_ARRAY /* this file fills the numpy API table */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "recv.h"
#include "send.h"

/* ---------------------------------------------------------- the type */

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
		int e = shp_rbuf_init(&self->rb);
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
	o.deliver_many = shp_on_records;
	r = shf_open(&o, NULL, &self->rb, &c);
	if (r < 0)
		snprintf(detail, sizeof(detail), "%s", shf_error_detail());
	Py_END_ALLOW_THREADS
	if (r < 0) {
		shp_fail(r, detail);
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
		shp_rbuf_fini(&self->rb);
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
		return shp_fail(r, detail);
	Py_RETURN_NONE;
}

/* ------------------------------------------------- flush, epoch, misc */

/* epoch() and flush() wait in slices of at most SLICE_MS with the GIL
 * released, checking for signals between slices: what = 0 is an epoch,
 * else a flush target.  An interrupted epoch is resumed by the next one
 * (shf_epoch() after -ETIMEDOUT resumes the same epoch). */
static PyObject *sliced_wait(CtxObject *self, unsigned what, PyObject *timeout_o)
{
	int t = shp_timeout_ms_of(self, timeout_o);
	if (t == -2)
		return NULL;
	int64_t end = t < 0 ? -1 : shp_now_ms() + t;
	struct shf_ctx *c = self->ctx;
	char detail[512] = "";
	for (;;) {
		int slice = shp_slice_ms(end, 1);
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
		if (r != -ETIMEDOUT || (end >= 0 && shp_now_ms() >= end))
			return shp_fail(r, detail);
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
		return shp_fail(r, detail);
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
		shp_fail(r, detail);
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
		return shp_fail(r, shf_error_detail());
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
		return shp_fail(fd, shf_error_detail());
	return PyLong_FromLong(fd);
}

static PyObject *ctx_pending(CtxObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	return PyLong_FromSize_t(shp_rbuf_count(self));
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
	{"send", (PyCFunction)(void (*)(void))shp_ctx_send, METH_FASTCALL | METH_KEYWORDS,
	 "send(dst, data, type=0): write-behind send of any buffer-protocol object to rank dst."},
	{"bcast", (PyCFunction)(void (*)(void))shp_ctx_bcast, METH_VARARGS | METH_KEYWORDS,
	 "bcast(data, type=0, *, self=False): send data once to every other rank (and this one "
	 "with self=True)."},
	{"send_many", (PyCFunction)(void (*)(void))shp_ctx_send_many, METH_VARARGS | METH_KEYWORDS,
	 "send_many(dst, records, type=0, offsets=None) -> n: send n records in one call "
	 "(GIL released)."},
	{"_recv_raw", (PyCFunction)(void (*)(void))shp_ctx_recv_raw, METH_VARARGS | METH_KEYWORDS,
	 "_recv_raw(max=None, timeout=None) -> (src, type, data, offsets)"},
	{"_pull", (PyCFunction)(void (*)(void))shp_ctx_pull, METH_VARARGS | METH_KEYWORDS,
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
	Py_XSETREF(shp_raise_error, fn);
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
