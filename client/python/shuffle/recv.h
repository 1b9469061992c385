/* SPDX-License-Identifier: MIT */
/*
 * client/python/shuffle/recv.h - the receive buffer (struct rbuf, filled
 * by the library's batch delivery) and Context._recv_raw and ._pull.
 */
#ifndef SHP_RECV_H
#define SHP_RECV_H

#include "common.h"

/* 0 or -errno */
int shp_rbuf_init(struct rbuf *b);
void shp_rbuf_fini(struct rbuf *b);
/* The library's batch delivery callback (opts.deliver_many, arg: the rbuf). */
void shp_on_records(void *arg, const struct shf_rec *recs, unsigned n);
/* Records buffered and not handed out yet. */
size_t shp_rbuf_count(CtxObject *self);
PyObject *shp_ctx_recv_raw(CtxObject *self, PyObject *args, PyObject *kw);
PyObject *shp_ctx_pull(CtxObject *self, PyObject *args, PyObject *kw);

#endif /* SHP_RECV_H */
