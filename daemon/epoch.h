/* SPDX-License-Identifier: MIT */
/*
 * daemon/epoch.h - the epoch barrier of a job (see epoch.c for the
 * protocol).  Phases are enum shf_wire_epoch_phase: PLACED (1), DRAINED (2).
 */
#ifndef SHD_EPOCH_H
#define SHD_EPOCH_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* c's EPOCH mark was relayed (everything it sent before is placed). */
void shd_epoch_mark(struct shd_client *c);
/* c asked for phase 2 (request id ipc_id, its epoch id). */
void shd_epoch_phase2(struct shd_client *c, uint32_t ipc_id, uint64_t id);
/* An epoch step of j from node (kind SHF_WIRE_EPOCH_UP/_DOWN/_ABORT). */
void shd_epoch_remote(struct shd_daemon *d, struct shd_job *j, uint32_t node, unsigned kind,
		      uint64_t epoch, uint32_t phase, int32_t count);
/* A local rank of the ready job j left, in epoch state `was`: every local
 * epoch fails; if one was pending here, the other nodes are told (abort). */
void shd_epoch_left_here(struct shd_daemon *d, struct shd_job *j, enum shd_epoch_state was);
/* Ranks counted in phase `phase` in this node's subtree of the job's tree. */
int32_t shd_epoch_subtree_count(const struct shd_job *j, uint32_t phase);
/* Every local client of j in an epoch gets err now; the counts restart. */
void shd_epoch_fail_all(struct shd_job *j, int err);
/* A rank of another node left the complete job j: can the pending epoch
 * still end here? */
bool shd_epoch_leave_is_benign(const struct shd_job *j, uint32_t node);
/* Why j's epoch (or a flush) fails with err, naming the culprit as far as
 * this node knows it: the ranks that left, or the ranks lost with a node
 * and that node's id and name ("ranks 4,5 of job J lost with node 2 (n3),
 * which is down").  "" when there is nothing to add to err. */
void shd_epoch_why(const struct shd_daemon *d, const struct shd_job *j, int err, char *buf,
		   size_t n);
/* What an epoch answers once ranks are gone: -EHOSTDOWN if any was lost
 * with its node, else -ESRCH. */
int shd_epoch_gone_err(const struct shd_job *j);
const char *shd_epoch_state_name(enum shd_epoch_state s);
/* Who holds up the epoch c waits in (EPOCH_WHO), as far as this node
 * knows: its local ranks that have not reached c's phase, exactly; the
 * ranks of the tree's subtrees that have not reported, as "not all"; or
 * that this node's part is in.  Returns the local ranks named. */
int32_t shd_epoch_who(struct shd_client *c, char *buf, size_t n);

#endif
