/* SPDX-License-Identifier: MIT */
/*
 * daemon/ctlcmd.h - shufflectl's answers: JSON documents (schema
 * "shuffle/1", docs/shufflectl.md).
 */
#ifndef SHD_CTLCMD_H
#define SHD_CTLCMD_H

#include <stdint.h>

#include "daemon/daemon.h"

/* Answer command cmd of session c (request id) with CTL_REPLY chunks, or
 * an ERROR for an unknown command.  A negative errno when c's socket
 * failed (the caller ends the session). */
int shd_ctlcmd(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd);
/* The "dump" document to the log, one line per JSON line (SIGUSR1). */
void shd_dump_log(struct shd_daemon *d);

#endif
