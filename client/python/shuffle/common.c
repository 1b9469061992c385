/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/common.c - errors, timeouts and the clock shared
 * by the extension's methods (see common.h).
 */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

PyObject *shp_raise_error; /* shuffle._raise(errno, detail, extra) set by __init__.py */

/* Raise the package's Error subclass for the negative errno r. */
PyObject *shp_fail(int r, const char *detail)
{
	if (r == -EINTR && PyErr_Occurred())
		return NULL; /* KeyboardInterrupt or another signal's exception */
	if (!shp_raise_error) {
		errno = -r;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	PyObject *res = PyObject_CallFunction(shp_raise_error, "is", -r, detail ? detail : "");
	Py_XDECREF(res); /* _raise always raises */
	if (!PyErr_Occurred())
		PyErr_SetString(PyExc_RuntimeError, "shuffle._raise did not raise");
	return NULL;
}

/* A failed call with the Python error raised and an attribute `sent`. */
PyObject *shp_fail_sent(int r, const char *detail, Py_ssize_t sent)
{
	shp_fail(r, detail);
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

PyObject *shp_closed_error(void)
{
	return shp_fail(-EBADF, "the context is closed");
}

/* Python timeout (None: the context's; seconds; negative: forever) to ms
 * for the C calls (-1: forever).  -2: error raised. */
int shp_timeout_ms_of(CtxObject *self, PyObject *t)
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

int64_t shp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next wait's slice: SLICE_MS, or what is left until end (a
 * CLOCK_MONOTONIC ms deadline; -1: none), at least `floor`. */
int shp_slice_ms(int64_t end, int floor)
{
	if (end < 0)
		return SLICE_MS;
	int64_t left = end - shp_now_ms();
	return left <= floor ? floor : left > SLICE_MS ? SLICE_MS : (int)left;
}
