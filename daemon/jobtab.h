/* SPDX-License-Identifier: MIT */
/*
 * daemon/jobtab.h - the table of jobs this daemon knows: create, find,
 * free, and read the rank directory.  No behaviour: what happens when
 * ranks come and go is job.c's.
 */
#ifndef SHD_JOBTAB_H
#define SHD_JOBTAB_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* A new job in d->jobs (every rank SHD_NODE_NONE).  Its directory's
 * index (a pointer per SHD_DIR_CHUNK ranks of world) is charged to uid:
 * limited (budget.h) unless force (a job another node announced).  NULL
 * with a reason in why (*err_p: -ENOMEM or -EDQUOT). */
struct shd_job *shd_jobtab_new(struct shd_daemon *d, const char *name, int32_t world, uid_t uid,
			       bool force, int *err_p, char *why, size_t whylen);
/* Unlink and free j.  Only the reap step (job.c) and shut-down call it. */
void shd_jobtab_free(struct shd_daemon *d, struct shd_job *j);
void shd_jobtab_free_all(struct shd_daemon *d);
struct shd_job *shd_jobtab_find(struct shd_daemon *d, const char *name);
struct shd_job *shd_jobtab_find_hash(struct shd_daemon *d, uint64_t hash);
/* The local session of rank, or NULL (rank out of range, elsewhere, gone). */
struct shd_client *shd_jobtab_local(const struct shd_daemon *d, const struct shd_job *j,
				    int32_t rank);

/* The chunk every index slot points to until a rank of it is known: all
 * SHD_NODE_NONE, no sessions; shared, never written (shd_jobtab_set
 * replaces it).  Lookups need no NULL test. */
extern struct shd_dir_chunk shd_dir_empty;

/* rank's chunk (0 <= rank < world): the relay's lookup per record is this
 * load plus the entry's, as with a flat array plus one shift. */
static inline const struct shd_dir_chunk *shd_jobtab_chunk(const struct shd_job *j,
							   int32_t rank)
{
	return j->dir[(uint32_t)rank >> SHD_DIR_SHIFT];
}
static inline uint32_t shd_dir_slot(int32_t rank)
{
	return (uint32_t)rank & (SHD_DIR_CHUNK - 1);
}
/* Where rank (0 <= rank < world) lives: a node id or SHD_NODE_*. */
static inline uint32_t shd_jobtab_node(const struct shd_job *j, int32_t rank)
{
	return shd_jobtab_chunk(j, rank)->node[shd_dir_slot(rank)];
}
/* rank's local session (0 <= rank < world), NULL when none. */
static inline struct shd_client *shd_jobtab_client(const struct shd_job *j, int32_t rank)
{
	return shd_jobtab_chunk(j, rank)->client[shd_dir_slot(rank)];
}
/* The first rank >= rank whose chunk exists (world when none): loops over
 * the known ranks skip the parts of a world nobody registered in.
 *   for (r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) */
int32_t shd_jobtab_next(const struct shd_job *j, int32_t rank);
/* Set rank's node and local session.  Its chunk is allocated if needed and
 * charged to the job's owner: limited unless force (a rank another node
 * admitted).  0, or -ENOMEM / -EDQUOT with a reason in why (may be NULL
 * when force). */
int shd_jobtab_set(struct shd_daemon *d, struct shd_job *j, int32_t rank, uint32_t node,
		   struct shd_client *c, bool force, char *why, size_t whylen);
/* The job's layout as known here, for shf_node_info() (proto/ipc.h): live
 * ranks only (on a real node).  Fills ok's node, nodes, local and count,
 * and out[] with at most max entries of `what` (enum shf_node_info_what)
 * from index first.  0, or -ENOMEM. */
int shd_jobtab_layout(const struct shd_daemon *d, const struct shd_job *j, uint32_t what,
		      uint32_t first, uint32_t max, int32_t *out,
		      struct shf_ipc_node_info_ok *ok);
/* "0,3-5,9" of the ranks not registered yet, in buf (truncated with
 * ",...").  Returns how many ranges were written. */
int shd_jobtab_missing(const struct shd_job *j, char *buf, size_t len);

#endif
