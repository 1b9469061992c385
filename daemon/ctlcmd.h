/* SPDX-License-Identifier: MIT */
/*
 * daemon/ctlcmd.h - shufflectl's answers: JSON documents (schema
 * "shuffle/1", docs/shufflectl.md).
 */
#ifndef SHD_CTLCMD_H
#define SHD_CTLCMD_H

#include <stdint.h>

#include "daemon/daemon.h"

struct shd_fanout_ops;

/* Answer command cmd of session c (request id) with CTL_REPLY chunks, or
 * an ERROR for an unknown command.  A negative errno when c's socket
 * failed (the caller ends the session). */
int shd_ctlcmd(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd);
/* The same for every node up (shufflectl --all; daemon/fanout.h): the
 * combined answer comes later, when the fan-out completes (timeout_ms: its
 * bound, 0 the default), or an ERROR now.  Only commands that read. */
int shd_ctlcmd_all(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd,
		   uint32_t timeout_ms);
/* The fan-out's handler (this node's answer) and its completion: given to
 * shd_fanout_open(). */
extern const struct shd_fanout_ops shd_ctlcmd_fanout;
/* The "dump" document to the log, one line per JSON line (SIGUSR1). */
void shd_dump_log(struct shd_daemon *d);

#endif
