/* SPDX-License-Identifier: MIT */
/*
 * daemon/jobtab.c - the job table (jobtab.h).
 *
 * A job is named by its clients; it belongs to the uid of its first
 * client.  The rank directory maps every rank to its node and, here, its
 * session.  It is chunked: an index of a pointer per SHD_DIR_CHUNK ranks
 * of the world, pointing at a shared empty chunk (shd_dir_empty) until a
 * rank of it is first known, then at its own chunk (12 KiB).  A client that claims a world of 2^24 costs the index (128 KiB),
 * not 192 MiB; a job's directory grows with the ranks that really came
 * (here or on other nodes), and all of it is charged to the job's owner
 * (budget.c).  The relay's lookup is the index load plus the chunk's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/budget.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "proto/wire.h"

struct shd_job *shd_jobtab_find(struct shd_daemon *d, const char *name)
{
	struct shd_list *p;
	for (p = d->jobs.next; p != &d->jobs; p = p->next) {
		struct shd_job *j = shd_container_of(p, struct shd_job, link);
		if (strcmp(j->name, name) == 0)
			return j;
	}
	return NULL;
}

struct shd_job *shd_jobtab_find_hash(struct shd_daemon *d, uint64_t hash)
{
	struct shd_list *p;
	for (p = d->jobs.next; p != &d->jobs; p = p->next) {
		struct shd_job *j = shd_container_of(p, struct shd_job, link);
		if (j->hash == hash)
			return j;
	}
	return NULL;
}

struct shd_client *shd_jobtab_local(const struct shd_daemon *d, const struct shd_job *j,
				    int32_t rank)
{
	if (!j || rank < 0 || rank >= j->world || shd_jobtab_node(j, rank) != d->node_id)
		return NULL;
	return shd_jobtab_client(j, rank);
}

struct shd_dir_chunk shd_dir_empty; /* filled by shd_jobtab_new() */

int32_t shd_jobtab_next(const struct shd_job *j, int32_t rank)
{
	if (rank < 0)
		rank = 0;
	if (rank >= j->world)
		return j->world;
	uint32_t k = (uint32_t)rank >> SHD_DIR_SHIFT;
	if (j->dir[k] != &shd_dir_empty)
		return rank;
	while (++k < j->dir_chunks && j->dir[k] == &shd_dir_empty)
		;
	if (k >= j->dir_chunks)
		return j->world;
	return (int32_t)(k << SHD_DIR_SHIFT);
}

int shd_jobtab_set(struct shd_daemon *d, struct shd_job *j, int32_t rank, uint32_t node,
		   struct shd_client *c, bool force, char *why, size_t whylen)
{
	uint32_t k = (uint32_t)rank >> SHD_DIR_SHIFT, i = shd_dir_slot(rank);
	struct shd_dir_chunk *ch = j->dir[k];
	if (ch == &shd_dir_empty) {
		if (node == SHD_NODE_NONE && !c)
			return 0; /* what a missing chunk says already */
		char tmp[200];
		if (!why) {
			why = tmp;
			whylen = sizeof(tmp);
		}
		int r = 0;
		if (force)
			shd_budget_force(d, j->uid, sizeof(*ch));
		else
			r = shd_budget_charge(d, j->uid, sizeof(*ch), "rank directory", why, whylen);
		if (r)
			return r;
		ch = malloc(sizeof(*ch));
		if (!ch) {
			shd_budget_release(d, j->uid, sizeof(*ch));
			snprintf(why, whylen, "out of memory for the rank directory of job %s",
				 j->name);
			return -ENOMEM;
		}
		for (uint32_t x = 0; x < SHD_DIR_CHUNK; x++) {
			ch->node[x] = SHD_NODE_NONE;
			ch->client[x] = NULL;
		}
		j->dir[k] = ch;
		j->dir_bytes += sizeof(*ch);
	}
	ch->node[i] = node;
	ch->client[i] = c;
	return 0;
}

struct shd_job *shd_jobtab_new(struct shd_daemon *d, const char *name, int32_t world, uid_t uid,
			       bool force, int *err_p, char *why, size_t whylen)
{
	uint32_t chunks = ((uint32_t)world + SHD_DIR_CHUNK - 1) >> SHD_DIR_SHIFT;
	uint64_t index = (uint64_t)chunks * sizeof(struct shd_dir_chunk *);
	char tmp[200];
	if (!why) {
		why = tmp;
		whylen = sizeof(tmp);
	}
	*err_p = 0;
	if (force)
		shd_budget_force(d, uid, index);
	else
		*err_p = shd_budget_charge(d, uid, index, "rank directory", why, whylen);
	if (*err_p)
		return NULL;
	struct shd_job *j = calloc(1, sizeof(*j));
	if (j)
		j->dir = malloc(chunks * sizeof(*j->dir));
	if (!j || !j->dir) {
		if (j)
			free(j->dir);
		free(j);
		shd_budget_release(d, uid, index);
		snprintf(why, whylen, "out of memory for job %s (world %d)", name, world);
		*err_p = -ENOMEM;
		return NULL;
	}
	if (shd_dir_empty.node[0] != SHD_NODE_NONE) /* once */
		for (uint32_t x = 0; x < SHD_DIR_CHUNK; x++)
			shd_dir_empty.node[x] = SHD_NODE_NONE;
	for (uint32_t k = 0; k < chunks; k++)
		j->dir[k] = &shd_dir_empty;
	j->dir_chunks = chunks;
	j->dir_bytes = index;
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->hash = shf_wire_job_hash(name);
	j->world = world;
	j->uid = uid;
	j->home = SHD_NODE_NONE;
	j->map_home = SHD_NODE_NONE;
	j->relay_home = SHD_NODE_NONE;
	j->created_ns = shd_now_ns();
	shd_list_init(&j->waiting);
	shd_list_init(&j->end_link);
	shd_list_add_tail(&d->jobs, &j->link);
	shd_info("job %s created: world %d, owner uid %d", name, world, (int)uid);
	return j;
}

void shd_jobtab_free(struct shd_daemon *d, struct shd_job *j)
{
	shd_info("job %s ended (%llu epochs)", j->name, (unsigned long long)j->epoch_seq);
	shd_list_del(&j->link);
	shd_list_del(&j->end_link);
	for (uint32_t k = 0; k < j->dir_chunks; k++)
		if (j->dir[k] != &shd_dir_empty)
			free(j->dir[k]);
	free(j->dir);
	free(j->jnodes);
	if (j->join_dirty)
		d->joins_dirty--;
	free(j->lv);
	free(j->hist);
	if (j->n_lv)
		d->leaves_dirty--;
	shd_budget_release(d, j->uid, j->dir_bytes);
	free(j);
}

void shd_jobtab_free_all(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->jobs)
		shd_jobtab_free(d, shd_container_of(p, struct shd_job, link));
}

int shd_jobtab_missing(const struct shd_job *j, char *buf, size_t len)
{
	size_t o = 0;
	int n = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < j->world; i++) {
		if (shd_jobtab_node(j, i) != SHD_NODE_NONE)
			continue;
		int32_t k = i;
		while (k + 1 < j->world) {
			uint32_t c = (uint32_t)(k + 1) >> SHD_DIR_SHIFT;
			if (j->dir[c] == &shd_dir_empty) { /* nobody is in this chunk */
				int64_t end = ((int64_t)c + 1) * SHD_DIR_CHUNK - 1;
				k = end < j->world ? (int32_t)end : j->world - 1;
				continue;
			}
			if (shd_jobtab_node(j, k + 1) != SHD_NODE_NONE)
				break;
			k++;
		}
		char item[32];
		if (k > i)
			snprintf(item, sizeof(item), "%s%d-%d", n ? "," : "", i, k);
		else
			snprintf(item, sizeof(item), "%s%d", n ? "," : "", i);
		if (o + strlen(item) + 4 >= len) {
			snprintf(buf + o, len - o, ",...");
			break;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s", item);
		n++;
		i = k;
	}
	return n;
}

int shd_jobtab_layout(const struct shd_daemon *d, const struct shd_job *j, uint32_t what,
		      uint32_t first, uint32_t max, int32_t *out,
		      struct shf_ipc_node_info_ok *ok)
{
	uint32_t nn = d->n_nodes ? d->n_nodes : 1;
	uint32_t *per = calloc(nn, sizeof(*per)); /* live ranks per node id */
	if (!per)
		return -ENOMEM;
	uint32_t count = 0, local = 0;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		uint32_t node = shd_jobtab_node(j, r);
		if (!shd_node_is_real(node) || node >= nn)
			continue;
		per[node]++;
		if (node != d->node_id)
			continue;
		if (what == SHF_NODE_INFO_LOCAL && local >= first && count < max)
			out[count++] = r;
		local++;
	}
	uint32_t nodes = 0, me = 0;
	for (uint32_t k = 0; k < nn; k++) {
		if (!per[k])
			continue;
		if (k == d->node_id)
			me = nodes;
		if (what == SHF_NODE_INFO_COUNTS && nodes >= first && count < max)
			out[count++] = (int32_t)per[k];
		nodes++;
	}
	free(per);
	*ok = (struct shf_ipc_node_info_ok){me, nodes, local, what, first, count};
	return 0;
}
