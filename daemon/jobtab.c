/* SPDX-License-Identifier: MIT */
/*
 * daemon/jobtab.c - the job table (jobtab.h).
 *
 * A job is named by its clients; it belongs to the uid of its first
 * client.  rank_node[] maps every rank of the job to its node (O(world)
 * words per job per daemon, not per process).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (!j || rank < 0 || rank >= j->world || j->rank_node[rank] != d->node_id)
		return NULL;
	return j->clients[rank];
}

struct shd_job *shd_jobtab_new(struct shd_daemon *d, const char *name, int32_t world, uid_t uid)
{
	struct shd_job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	size_t words = (d->n_nodes + 63) / 64;
	j->rank_node = malloc(sizeof(*j->rank_node) * (size_t)world);
	j->clients = calloc((size_t)world, sizeof(*j->clients));
	j->reported[0] = calloc(words, sizeof(uint64_t));
	j->reported[1] = calloc(words, sizeof(uint64_t));
	j->reported_words = words;
	if (!j->rank_node || !j->clients || !j->reported[0] || !j->reported[1]) {
		free(j->rank_node);
		free(j->clients);
		free(j->reported[0]);
		free(j->reported[1]);
		free(j);
		return NULL;
	}
	for (int32_t i = 0; i < world; i++)
		j->rank_node[i] = SHD_NODE_NONE;
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->hash = shf_wire_job_hash(name);
	j->world = world;
	j->uid = uid;
	j->created_ns = shd_now_ns();
	shd_list_init(&j->waiting);
	shd_list_init(&j->end_link);
	shd_list_add_tail(&d->jobs, &j->link);
	shd_info("job %s created: world %d, owner uid %d", name, world, (int)uid);
	return j;
}

void shd_jobtab_free(struct shd_job *j)
{
	shd_info("job %s ended (%llu epochs)", j->name, (unsigned long long)j->epoch_seq);
	shd_list_del(&j->link);
	shd_list_del(&j->end_link);
	free(j->rank_node);
	free(j->clients);
	free(j->reported[0]);
	free(j->reported[1]);
	free(j);
}

void shd_jobtab_free_all(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->jobs)
		shd_jobtab_free(shd_container_of(p, struct shd_job, link));
}

int shd_jobtab_missing(const struct shd_job *j, char *buf, size_t len)
{
	size_t o = 0;
	int n = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < j->world; i++) {
		if (j->rank_node[i] != SHD_NODE_NONE)
			continue;
		int32_t k = i;
		while (k + 1 < j->world && j->rank_node[k + 1] == SHD_NODE_NONE)
			k++;
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
