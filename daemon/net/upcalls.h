/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/upcalls.h - what the network tells the modules above it: the
 * table given to shd_net_open() (net.h), implemented by daemon/events.c.
 */
#ifndef SHD_NET_UPCALLS_H
#define SHD_NET_UPCALLS_H

#include <stdbool.h>
#include <stdint.h>

struct shd_daemon;
struct shd_client;
struct shf_wire_join;
struct shf_wire_map;
struct shf_wire_deny;
struct shf_wire_leave;
struct shf_wire_leave_ask;
struct shf_wire_fan_req;
struct shf_wire_fan_ans;

/* What net tells the modules above it (daemon/events.c).  Every pointer is
 * set.  None may free a session or a job (they queue for the reap). */
struct shd_net_events {
	/* First message from a peer (incarnation known from then on). */
	void (*peer_up)(struct shd_daemon *d, uint32_t node, const char *host);
	/* At the peers step: node is down; what was queued for it is already
	 * dropped and reported; its ranks must be lost now. */
	void (*peer_lost)(struct shd_daemon *d, uint32_t node);
	/* node announced ranks of a job to this node, its home (JOB_JOIN). */
	void (*joined)(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn);
	/* node, a job's home, sent (part of) its rank map (JOB_MAP) or a
	 * refusal (JOB_DENY); the pointers inside are valid during the call */
	void (*mapped)(struct shd_daemon *d, uint32_t node, const struct shf_wire_map *m);
	void (*denied)(struct shd_daemon *d, uint32_t node, const struct shf_wire_deny *dn);
	/* Ranks of l->job_hash left node (JOB_LEAVE: ranges with a reason each;
	 * FORWARDED by the job's home: ranges of the nodes they name). */
	void (*left)(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave *l);
	/* node asks for this node's departed ranks of a job directly (it lost
	 * the home that relays them) */
	void (*left_ask)(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave_ask *a);
	/* An epoch step of job_hash from node: kind SHF_WIRE_EPOCH_UP (its
	 * subtree counted `count` ranks in `phase`), _DOWN (the phase is
	 * complete) or _ABORT (the pending epoch fails, count: a positive errno). */
	void (*epoch)(struct shd_daemon *d, uint32_t node, unsigned kind, uint64_t job_hash,
		      uint64_t epoch, uint32_t phase, int32_t count);
	/* count records sent by local rank src of job_hash were dropped: why
	 * -ESRCH (destination rank gone) or -EHOSTDOWN (destination node down). */
	void (*drops)(struct shd_daemon *d, uint64_t job_hash, int32_t src, uint32_t count,
		      int why);
	/* One peer acknowledged what c's pending mark covered there (lost: the
	 * peer went down first). */
	void (*mark_acked)(struct shd_client *c, bool lost);
	/* node (up) sent a fan-out request (FAN_REQ) or a fragment of an
	 * answer (FAN_ANS), checked by shf_wire_check(); the pointers inside
	 * are valid during the call only (daemon/admin/fanout.h). */
	void (*fan_req)(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_req *r);
	void (*fan_ans)(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_ans *a);
};

#endif
