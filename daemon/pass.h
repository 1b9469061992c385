/* SPDX-License-Identifier: MIT */
/*
 * daemon/pass.h - the pass: the one place that says in which order the
 * daemon's deferred work and its teardown happen in each loop iteration.
 */
#ifndef SHD_PASS_H
#define SHD_PASS_H

#include "daemon/daemon.h"

int shd_pass_init(struct shd_daemon *d);
void shd_pass_fini(struct shd_daemon *d);

#endif
