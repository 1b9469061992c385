/* SPDX-License-Identifier: MIT */
/*
 * daemon/admin/fanout.h - one request to every daemon that is up, through a
 * tree, and the answers combined on the way back (docs/protocol-wire.md,
 * "FAN_REQ" and "FAN_ANS"; shufflectl --all).
 *
 * A request is a command name and arguments (JSON text), asked for a uid.
 * The daemon that starts it (the root) takes the sorted ids of the nodes
 * it sees up and splits them into at most K contiguous groups (K: option
 * fanout); the first node of each group is a child and gets the rest of
 * its group as its subtree, which it splits the same way: depth
 * O(log_K N).  Every node adds its own answer (ops->answer, the function
 * the control socket uses for that command) under its node id; a subtree's
 * answer is a JSON object
 *
 *   {"nodes": {"ID": ANSWER, ...}, "missing": {"ID": {"state": S, ...}, ...}}
 *
 * and combining is a merge by node id (each node's ANSWER gets a member
 * "fan_parent": the node that asked it, null at the root).  S says why a node has no answer:
 * "down", "failing", "unknown", "joining" (as its parent saw the peer),
 * "silent" (a child that did not answer before its deadline), "unreached"
 * (in the subtree of a child that did not answer; "via" names that
 * child), "unsendable" (the request could not be sent), "bad_answer" (its
 * answer did not parse or named nodes outside its subtree), "too_large"
 * (its subtree's answer was above SHF_WIRE_FAN_ANS_MAX).  Nothing is
 * waited for past the deadline: each level gives its children 3/4 of
 * the time it has left.
 *
 * Calls come down from ctlcmd.c (start) and events.c (what net received);
 * results go up through struct shd_fanout_ops.  Pending requests are
 * completed and freed in one place only: the module's own timer callback
 * (fan_step), armed at the earliest deadline, or at once when a request
 * has every answer.
 */
#ifndef SHD_FANOUT_H
#define SHD_FANOUT_H

#include <stdint.h>

#include "daemon/daemon.h"

struct json_t;
struct shf_wire_fan_req;
struct shf_wire_fan_ans;

#define SHD_FANOUT_TIMEOUT_MS 2000u /* a request's bound when the asker gives none */
#define SHD_FANOUT_PENDING_MAX 64u  /* requests pending on one node at once */

struct shd_fanout_ops {
	/* This node's answer to cmd (args: a JSON value or NULL) for uid: a
	 * new reference, or NULL when cmd is not a command for --all. */
	struct json_t *(*answer)(struct shd_daemon *d, const char *cmd, const struct json_t *args,
				 uint32_t uid);
	/* A request started here is complete: doc (the combined answer, see
	 * above, plus "root", "fanout", "timeout_ms", "elapsed_ms") is the
	 * callee's.  cookie, tag: as given to shd_fanout_start(). */
	void (*done)(struct shd_daemon *d, uint64_t cookie, uint32_t tag, struct json_t *doc);
};

/* Set up (after shd_net_open); ops must outlive the module. */
int shd_fanout_open(struct shd_daemon *d, const struct shd_fanout_ops *ops);
/* Free every pending request without answering (shut-down). */
void shd_fanout_close(struct shd_daemon *d);

/* Start cmd for uid on every node up, answering within timeout_ms
 * (0: SHD_FANOUT_TIMEOUT_MS; at most SHF_WIRE_FAN_BUDGET_MAX).  0: ops->done
 * will be called, later, from the module's timer (never from here);
 * -EINVAL unknown command or bad args; -EBUSY too many pending; -ENOMEM. */
int shd_fanout_start(struct shd_daemon *d, const char *cmd, const struct json_t *args,
		     uint32_t uid, uint32_t timeout_ms, uint64_t cookie, uint32_t tag);

/* What net received from node (events.c). */
void shd_fanout_on_req(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_req *r);
void shd_fanout_on_ans(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_ans *a);
/* node went down (events.c, at the peers step): a child waited for on
 * it is marked "down" at once instead of at the deadline. */
void shd_fanout_peer_lost(struct shd_daemon *d, uint32_t node);

#endif
