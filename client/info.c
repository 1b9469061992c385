/* SPDX-License-Identifier: MIT */
/*
 * client/info.c - shf_node_info(): the job's layout, asked of the daemon
 * (NODE_INFO, proto/ipc.h) in slices of at most SHF_IPC_NODE_INFO_MAX
 * entries.  Every answer is checked before the caller sees it: a daemon
 * that answers out of bounds is a protocol error.
 *
 * Calls data.c (the wait that delivers while it waits) and wait.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/deliver.h"
#include "client/wait.h"
#include "proto/ipc.h"

struct info_reply {
	struct shf_ipc_node_info_ok ok;
	int32_t v[SHF_IPC_NODE_INFO_MAX];
};

/* One request; *rep checked against what was asked.  0 or -errno. */
static int ask(struct shf_ctx *c, uint32_t what, uint32_t first, uint32_t max,
	       struct info_reply *rep, int64_t deadline)
{
	struct shc_waiter w;
	uint32_t id = SHC_REQ_ID_BASE |
		      (atomic_fetch_add_explicit(&c->req_seq, 1, memory_order_relaxed) &
		       (SHC_REQ_ID_BASE - 1));
	shc_waiter_add(c, &w, SHF_IPC_NODE_INFO_OK, id);
	/* under mu, like every field the leader's dispatch reads */
	pthread_mutex_lock(&c->mu);
	w.reply = rep;
	w.reply_cap = sizeof(rep->ok) + (size_t)max * sizeof(int32_t);
	pthread_mutex_unlock(&c->mu);
	struct shf_ipc_node_info m = {what, first, max, 0};
	int r = shf_ipc_send(c->sock, SHF_IPC_NODE_INFO, id, &m, sizeof(m), NULL, 0);
	if (r) {
		shc_waiter_del(c, &w);
		shc_mark_dead(c, "cannot send to the daemon: %s", strerror(-r));
		return shc_dead_err(c);
	}
	r = shc_waiter_wait(c, &w, deadline);
	shc_waiter_del(c, &w);
	if (r == -ETIMEDOUT)
		return shc_fail(-ETIMEDOUT, "the daemon did not answer the node query in time");
	if (r < 0)
		return r;
	if (w.status < 0)
		return shc_fail(w.status, "node query: %s%s%.150s", shf_strerror(w.status),
				w.text[0] ? ": " : "", w.text);
	const struct shf_ipc_node_info_ok *ok = &rep->ok;
	bool bad = w.reply_len < sizeof(*ok) || ok->what != what || ok->first != first ||
		   ok->count > max || ok->nodes == 0 || ok->node >= ok->nodes ||
		   ok->local == 0 || ok->local > (uint32_t)c->world ||
		   ok->nodes > (uint32_t)c->world;
	for (uint32_t i = 0; !bad && i < ok->count; i++) {
		int32_t x = rep->v[i];
		if (what == SHF_NODE_INFO_LOCAL)
			bad = x < 0 || x >= c->world || (i > 0 && x <= rep->v[i - 1]) ||
			      first + i >= ok->local;
		else
			bad = x < 1 || x > c->world || first + i >= ok->nodes;
	}
	if (bad) {
		shc_protocol_error(c, "NODE_INFO_OK out of bounds (node %u of %u, %u local, "
				   "%u entries)", ok->node, ok->nodes, ok->local, ok->count);
		return shc_dead_err(c);
	}
	return 0;
}

/* Fill out[0 .. min(cap, total)) with list `what`, slice by slice. */
static int fetch(struct shf_ctx *c, uint32_t what, int *out, uint32_t cap,
		 struct info_reply *rep, int64_t deadline)
{
	uint32_t got = 0;
	while (got < cap) {
		uint32_t max = cap - got < SHF_IPC_NODE_INFO_MAX ? cap - got : SHF_IPC_NODE_INFO_MAX;
		int r = ask(c, what, got, max, rep, deadline);
		if (r)
			return r;
		for (uint32_t i = 0; i < rep->ok.count; i++)
			out[got + i] = rep->v[i];
		got += rep->ok.count;
		uint32_t total = what == SHF_NODE_INFO_LOCAL ? rep->ok.local : rep->ok.nodes;
		if (rep->ok.count == 0 || got >= total)
			break; /* the list ended (it may have shrunk meanwhile) */
	}
	return 0;
}

SHF_EXPORT int shf_node_info(struct shf_ctx *c, struct shf_node_info *ni)
{
	if (!c || !ni)
		return shc_fail(-EINVAL, "no context or no struct shf_node_info");
	if (ni->local_cap < 0 || (ni->local_cap > 0 && !ni->local_ranks) ||
	    ni->node_counts_cap < 0 || (ni->node_counts_cap > 0 && !ni->node_counts))
		return shc_fail(-EINVAL, "local_cap %d / node_counts_cap %d without an array or "
				"negative", ni->local_cap, ni->node_counts_cap);
	int64_t deadline;
	int r = shc_call_deadline(c, 0, &deadline);
	if (r)
		return r;
	struct info_reply *rep = malloc(sizeof(*rep));
	if (!rep)
		return shc_fail(-ENOMEM, "out of memory");
	if (ni->local_cap > 0)
		r = fetch(c, SHF_NODE_INFO_LOCAL, ni->local_ranks, (uint32_t)ni->local_cap, rep,
			  deadline);
	else
		r = ask(c, SHF_NODE_INFO_NONE, 0, 0, rep, deadline);
	if (!r) {
		ni->node = (int)rep->ok.node;
		ni->nodes = (int)rep->ok.nodes;
		ni->local_count = (int)rep->ok.local;
	}
	if (!r && ni->node_counts_cap > 0)
		r = fetch(c, SHF_NODE_INFO_COUNTS, ni->node_counts, (uint32_t)ni->node_counts_cap,
			  rep, deadline);
	free(rep);
	return r;
}

void shc_epoch_who(struct shf_ctx *c, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!(c->reg_flags & SHF_REG_OK_EPOCH_WHO) || shc_is_dead(c))
		return;
	struct shc_waiter w;
	uint32_t id = SHC_REQ_ID_BASE |
		      (atomic_fetch_add_explicit(&c->req_seq, 1, memory_order_relaxed) &
		       (SHC_REQ_ID_BASE - 1));
	shc_waiter_add(c, &w, SHF_IPC_EPOCH_WHO_OK, id);
	struct shf_ipc_epoch_who m = {0, 0};
	int r = shf_ipc_send(c->sock, SHF_IPC_EPOCH_WHO, id, &m, sizeof(m), NULL, 0);
	if (r == 0)
		r = shc_waiter_wait(c, &w, shc_deadline(500));
	shc_waiter_del(c, &w);
	if (r == 0 && w.status == 0 && w.text[0])
		snprintf(buf, n, "; %s", w.text);
}
