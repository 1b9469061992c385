/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/common.h - what the extension's files share: the
 * context object, its receive buffer, errors, timeouts.  _core.c (the type
 * and the module) calls send.c and recv.c; all three call common.c.
 */
#ifndef SHP_COMMON_H
#define SHP_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* one numpy API table for the extension's files: _core.c fills it
 * (import_array, with SHP_IMPORT_ARRAY), the others only use it */
#define PY_ARRAY_UNIQUE_SYMBOL shp_numpy_api
#ifndef SHP_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shuffle.h>

#define SLICE_MS 100

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

#define CHECK_OPEN(self)                                                                           \
	do {                                                                                       \
		if (!(self)->ctx)                                                                  \
			return shp_closed_error();                                                 \
	} while (0)

/* shuffle._raise(errno, detail, extra), set by __init__.py */
extern PyObject *shp_raise_error;

/* Raise the package's Error subclass for the negative errno r; NULL. */
PyObject *shp_fail(int r, const char *detail);
/* The same with an attribute `sent` on the exception; NULL. */
PyObject *shp_fail_sent(int r, const char *detail, Py_ssize_t sent);
/* Closed("the context is closed"); NULL. */
PyObject *shp_closed_error(void);
/* Python timeout (None: the context's; seconds; negative: forever) to ms
 * for the C calls (-1: forever).  -2: error raised. */
int shp_timeout_ms_of(CtxObject *self, PyObject *t);
/* CLOCK_MONOTONIC in ms */
int64_t shp_now_ms(void);
/* The next wait's slice: SLICE_MS, or what is left until end (a
 * CLOCK_MONOTONIC ms deadline; -1: none), at least `floor`. */
int shp_slice_ms(int64_t end, int floor);

#endif /* SHP_COMMON_H */
