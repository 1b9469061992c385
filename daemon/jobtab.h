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

/* A new job in d->jobs (every rank SHD_NODE_NONE); NULL on ENOMEM. */
struct shd_job *shd_jobtab_new(struct shd_daemon *d, const char *name, int32_t world, uid_t uid);
/* Unlink and free j.  Only the reap step (job.c) and shut-down call it. */
void shd_jobtab_free(struct shd_job *j);
void shd_jobtab_free_all(struct shd_daemon *d);
struct shd_job *shd_jobtab_find(struct shd_daemon *d, const char *name);
struct shd_job *shd_jobtab_find_hash(struct shd_daemon *d, uint64_t hash);
/* The local session of rank, or NULL (rank out of range, elsewhere, gone). */
struct shd_client *shd_jobtab_local(const struct shd_daemon *d, const struct shd_job *j,
				    int32_t rank);
/* "0,3-5,9" of the ranks not registered yet, in buf (truncated with
 * ",...").  Returns how many ranges were written. */
int shd_jobtab_missing(const struct shd_job *j, char *buf, size_t len);

#endif
