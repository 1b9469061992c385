/* SPDX-License-Identifier: MIT */
/*
 * daemon/epoch.c - the epoch barrier.
 *
 * Epoch, for each client (see proto/ipc.h):
 *   1. its EPOCH mark is relayed after everything it sent before (so those
 *      records sit in their destination rings): it counts in phase 1
 *      (SHF_WIRE_EPOCH_PLACED);
 *   2. when all `world` ranks counted, every client gets FLUSH_DONE and
 *      drains its own delivery ring;
 *   3. it sends EPOCH phase 2 (SHF_WIRE_EPOCH_DRAINED); when all ranks did,
 *      EPOCH_DONE.
 * Counts are summed per node and exchanged between daemons once per phase,
 * so the cost grows with nodes, not ranks.
 *
 * Ranks that leave: a rank lost with its node fails the pending epoch with
 * -EHOSTDOWN.  A rank that closes after its node counted it in the phase in
 * progress does not fail it (shd_epoch_leave_is_benign); any other leave
 * fails it with -ESRCH.  Once a job has lost ranks, every later epoch fails
 * at entry with shd_epoch_gone_err().  Never a hang.
 */
#include <errno.h>
#include <string.h>

#include "daemon/jobtab.h"
#include "daemon/client.h"
#include "daemon/epoch.h"
#include "daemon/log.h"
#include "daemon/net_tx.h"
#include "proto/wire.h"

#define PLACED SHF_WIRE_EPOCH_PLACED
#define DRAINED SHF_WIRE_EPOCH_DRAINED

static const char *const epoch_names[SHD_EPOCH_MAX] = {
	[SHD_EPOCH_NONE] = "none", [SHD_EPOCH_P1] = "phase1",
	[SHD_EPOCH_DELIVER] = "deliver", [SHD_EPOCH_P2] = "phase2",
};

const char *shd_epoch_state_name(enum shd_epoch_state s)
{
	return (unsigned)s < SHD_EPOCH_MAX ? epoch_names[s] : "?";
}

static bool bit_get(const uint64_t *b, uint32_t i)
{
	return b[i / 64] >> (i % 64) & 1;
}

int shd_epoch_gone_err(const struct shd_job *j)
{
	if (j->deny)
		return j->deny; /* an owner conflict (events.c) */
	return j->lost ? -EHOSTDOWN : -ESRCH;
}

/*
 * The epoch pending here can still finish if the departed rank's node
 * already counted it in the phase in progress: the rank went through the
 * epoch on its node and merely closed first.  With nothing pending the
 * next epoch fails at entry instead.
 */
bool shd_epoch_leave_is_benign(const struct shd_job *j, uint32_t node)
{
	if (j->p2_total > 0)
		return bit_get(j->reported[DRAINED - 1], node);
	if (j->p1_total > 0)
		return false;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		const struct shd_client *c = shd_jobtab_client(j, r);
		if (c && c->epoch != SHD_EPOCH_NONE)
			return false;
	}
	return true;
}

static void reply_p1(struct shd_client *c, int status)
{
	struct shf_ipc_flush_done m = {c->mark_id, c->report_dead, c->report_down, status, 0};
	c->report_dead = c->report_down = 0;
	shd_client_send(c, SHF_IPC_FLUSH_DONE, (uint32_t)c->mark_id, &m, sizeof(m));
}

static void reply_p2(struct shd_client *c, int status)
{
	struct shf_ipc_epoch_done m = {c->epoch_id, DRAINED, status};
	shd_client_send(c, SHF_IPC_EPOCH_DONE, c->epoch_ipc_id, &m, sizeof(m));
}

void shd_epoch_fail_all(struct shd_job *j, int err)
{
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		struct shd_client *c = shd_jobtab_client(j, r);
		if (!c)
			continue;
		if (c->epoch == SHD_EPOCH_P1)
			reply_p1(c, err);
		else if (c->epoch == SHD_EPOCH_P2)
			reply_p2(c, err);
		/* DELIVER: it will send phase 2 and get the error then */
		if (c->epoch != SHD_EPOCH_DELIVER)
			c->epoch = SHD_EPOCH_NONE;
	}
	j->p1_local = j->p2_local = j->p1_total = j->p2_total = 0;
	j->p1_sent = j->p2_sent = false;
	j->epoch_start_ns = 0;
	memset(j->reported[0], 0, j->reported_words * sizeof(uint64_t));
	memset(j->reported[1], 0, j->reported_words * sizeof(uint64_t));
}

static void epoch_check(struct shd_daemon *d, struct shd_job *j, uint32_t phase)
{
	int32_t *local = phase == PLACED ? &j->p1_local : &j->p2_local;
	int32_t *total = phase == PLACED ? &j->p1_total : &j->p2_total;
	bool *sent = phase == PLACED ? &j->p1_sent : &j->p2_sent;
	/* tell the other nodes once, when all our ranks are in */
	if (d->net && !*sent && *local == j->local && *local > 0) {
		shd_net_epoch(d, j, phase, *local);
		*sent = true;
	}
	if (*total < j->world)
		return;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		struct shd_client *c = shd_jobtab_client(j, r);
		if (!c)
			continue;
		if (phase == PLACED && c->epoch == SHD_EPOCH_P1) {
			c->epoch = SHD_EPOCH_DELIVER;
			c->st.flushes++;
			reply_p1(c, 0);
		} else if (phase == DRAINED && c->epoch == SHD_EPOCH_P2) {
			c->epoch = SHD_EPOCH_NONE;
			c->st.epochs++;
			reply_p2(c, 0);
		}
	}
	*local = *total = 0;
	*sent = false;
	memset(j->reported[phase - 1], 0, j->reported_words * sizeof(uint64_t));
	if (phase == DRAINED && j->epoch_start_ns) {
		uint64_t ns = shd_now_ns() - j->epoch_start_ns;
		j->epoch_start_ns = 0;
		j->epoch_seq++;
		d->st.epochs++;
		d->st.epoch_ns_total += ns;
		if (ns > d->st.epoch_ns_max)
			d->st.epoch_ns_max = ns;
		shd_debug("job %s: epoch %llu done in %.3f ms", j->name,
			  (unsigned long long)j->epoch_seq, (double)ns / 1e6);
	}
}

void shd_epoch_mark(struct shd_client *c)
{
	struct shd_job *j = c->job;
	if (!j || c->state != SHD_SESS_ACTIVE)
		return;
	if (j->gone || j->deny) {
		reply_p1(c, shd_epoch_gone_err(j));
		return;
	}
	if (j->p1_total == 0 && j->p2_total == 0)
		j->epoch_start_ns = shd_now_ns();
	c->epoch = SHD_EPOCH_P1;
	j->p1_local++;
	j->p1_total++;
	epoch_check(c->d, j, PLACED);
}

void shd_epoch_phase2(struct shd_client *c, uint32_t ipc_id, uint64_t id)
{
	struct shd_job *j = c->job;
	c->epoch_ipc_id = ipc_id;
	c->epoch_id = id;
	if (j->gone || j->deny) {
		c->epoch = SHD_EPOCH_NONE;
		reply_p2(c, shd_epoch_gone_err(j));
		return;
	}
	c->epoch = SHD_EPOCH_P2;
	j->p2_local++;
	j->p2_total++;
	epoch_check(c->d, j, DRAINED);
}

void shd_epoch_remote(struct shd_daemon *d, struct shd_job *j, uint32_t node, uint32_t phase,
		      int32_t count)
{
	if (phase != PLACED && phase != DRAINED)
		return;
	if (count < 0 || count > j->world || node >= d->n_nodes) {
		shd_warn("job %s: epoch phase %u count %d from node %u out of range", j->name,
			 phase, count, node);
		return;
	}
	if (phase == PLACED && j->p1_total == 0 && j->p2_total == 0)
		j->epoch_start_ns = shd_now_ns();
	j->reported[phase - 1][node / 64] |= UINT64_C(1) << (node % 64);
	if (phase == PLACED)
		j->p1_total += count;
	else
		j->p2_total += count;
	epoch_check(d, j, phase);
}
