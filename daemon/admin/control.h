/* SPDX-License-Identifier: MIT */
/*
 * daemon/admin/control.h - runtime control (shufflectl log-level, cutoff,
 * drain) and who may use it.
 *
 * Each command is one function: the request's arguments (a JSON object,
 * as shufflectl sends them; NULL counts as {}) and the asker's uid in,
 * the answer document out.  Nothing here knows about sockets, so the same
 * function can run a command on this node for a local shufflectl
 * (ctlcmd.c) or for a request that came from another node (a fan-out).
 *
 * Answer: a new JSON object; on failure it holds "error" (a negative
 * errno) and "message" (one line for the asker).  NULL only when out of
 * memory.
 *
 * Who may: root and the daemon's own uid may do everything; a job's owner
 * may cut off and drain that job's sessions; anyone else is refused with
 * -EPERM, counted (ctl_refused) and logged (WARN, rate-limited).  An
 * unprivileged asker is told the same for a job that does not exist here
 * as for another user's job: job names are not shown to other users.
 *
 * Nothing is freed here: sessions are cut off through shd_client_cutoff()
 * (freed at the pass's reap step), a drained job is only marked.
 */
#ifndef SHD_CONTROL_H
#define SHD_CONTROL_H

#include <sys/types.h>

#include "daemon/daemon.h"

struct json_t;

/* {"level": "err|warn|notice|info|debug"|"3".."7"}: the log level from
 * now on (`config` shows it with source "runtime (shufflectl)").  Root or
 * the daemon's uid.  Answer {"log_level": NEW, "previous": OLD}. */
struct json_t *shd_control_log_level(struct shd_daemon *d, const struct json_t *req, uid_t uid);

/* {"job": NAME, "rank": R}: cut off the session of rank R of job NAME on
 * this node (-ENOTCONN in the client, detail "cut off by uid U").  Answer
 * {"job", "rank", "client": session id, "pid"}. */
struct json_t *shd_control_cutoff(struct shd_daemon *d, const struct json_t *req, uid_t uid);

/* {"job": NAME}: drain the job on this node: every session of it is cut
 * off with -ECANCELED ("job NAME drained by uid U"), registrations into it
 * here are refused with -ECANCELED until it ends; other jobs are not
 * touched.  Records the drained ranks published but the daemon had not
 * taken go with their sessions (their senders got -ECANCELED); records
 * other ranks send to them are dropped and counted (drops_dead), so
 * those senders' next flush or epoch reports -ESRCH.  Answer {"job",
 * "clients": sessions cut off, "drained_by": uid}. */
struct json_t *shd_control_drain(struct shd_daemon *d, const struct json_t *req, uid_t uid);

/* May this node run control command cmd for uid as relayed by the fan-out
 * (shufflectl --all)?  NULL: yes; else the refusal (-EPERM, counted in
 * ctl_refused, logged).  Only when its peers are authenticated
 * (cluster_key: a FAN_REQ is admitted only in a session whose handshake
 * proved the key, so every hop is a key holder) or it is alone.  Without
 * a key anything that reaches a member's address can join as that member
 * and claim any uid, so no relayed uid is trusted to act: the asker's own
 * daemon refuses before any node acts, and every node checks again. */
struct json_t *shd_control_relay_check(struct shd_daemon *d, const char *cmd, uid_t uid);

#endif
