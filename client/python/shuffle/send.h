/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/send.h - Context.send, .bcast and .send_many.
 */
#ifndef SHP_SEND_H
#define SHP_SEND_H

#include "common.h"

PyObject *shp_ctx_send(CtxObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *shp_ctx_bcast(CtxObject *self, PyObject *args, PyObject *kw);
PyObject *shp_ctx_send_many(CtxObject *self, PyObject *args, PyObject *kw);

#endif /* SHP_SEND_H */
