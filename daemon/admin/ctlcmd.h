/* SPDX-License-Identifier: MIT */
/*
 * daemon/admin/ctlcmd.h - shufflectl's answers: JSON documents (schema
 * "shuffle/1", docs/shufflectl.md).
 */
#ifndef SHD_CTLCMD_H
#define SHD_CTLCMD_H

#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"

struct shd_fanout_ops;

/* Answer command cmd of session c (request id; args: its NUL-terminated
 * JSON arguments or NULL) with CTL_REPLY chunks, or an ERROR for an
 * unknown command, bad arguments or a refusal.  A negative errno when c's socket
 * failed (the caller ends the session). */
int shd_ctlcmd(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd,
	       const char *args);
/* The same for every node up (shufflectl --all; daemon/admin/fanout.h): the
 * combined answer comes later, when the fan-out completes (timeout_ms: its
 * bound, 0 the default), or an ERROR now.  The read commands status,
 * peers, jobs, clients, stats, ping, top, and the control commands
 * (args: their JSON arguments), these only with authenticated peers
 * (shd_control_relay_check(): refused here, before any node acts). */
int shd_ctlcmd_all(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd,
		   const char *args, uint32_t timeout_ms);
/* The fan-out's handler (this node's answer) and its completion: given to
 * shd_fanout_open(). */
extern const struct shd_fanout_ops shd_ctlcmd_fanout;

/*
 * Any command as a function, for this node's shufflectl and for a request
 * that reached this node otherwise (a fan-out from another daemon): cmd
 * with req (a JSON object of arguments, NULL: none) as asked by uid.  The
 * answer document (schema, command set; new reference), with "error" (a
 * negative errno) and "message" when refused or failed (control.h); NULL
 * for an unknown command or out of memory.  The read commands (status,
 * clients, jobs, peers, stats, config, top, dump, ping) show what uid may
 * see; the control commands are in shd_ctlcmd_find().
 */
struct json_t *shd_ctlcmd_run(struct shd_daemon *d, const char *cmd, const struct json_t *req,
			      uid_t uid);

/* A control command (log-level, cutoff, drain: control.h). */
struct shd_ctl_cmd {
	const char *name;
	struct json_t *(*run)(struct shd_daemon *d, const struct json_t *req, uid_t uid);
};
/* The control command named cmd, or NULL (a read command, or unknown). */
const struct shd_ctl_cmd *shd_ctlcmd_find(const char *cmd);
/* The "dump" document to the log, one line per JSON line (SIGUSR1). */
void shd_ctlcmd_dump_log(struct shd_daemon *d);

#endif
