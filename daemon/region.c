/* SPDX-License-Identifier: MIT */
/*
 * daemon/region.c - a client's shared-memory region and doorbells.
 *
 * The region is a memfd, sized with ftruncate, sealed against shrink, grow
 * and further sealing, and passed to the client by fd: it never has a name
 * another user could open, and nothing is left behind after a crash.  Its
 * pages are committed when first written (only the header at registration),
 * so an idle registration costs a few pages, not its rings.  Its whole size
 * is charged to the client's uid (budget.c) from creation to free: that
 * reservation is what keeps first touches safe.  A memfd lives on the
 * kernel's internal shmem mount, which has no size= limit (the SIGBUS of a
 * full /dev/shm cannot happen), and all regions together are bounded by
 * mem_max (at most 1/8 of the node's memory by default), so a registration
 * that would not fit fails cleanly at registration (-EDQUOT, -ENOMEM) rather
 * than at first touch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/budget.h"
#include "daemon/region.h"
#include "proto/shm.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int shd_region_new(struct shd_client *c, uint32_t ring_bytes, uint32_t max_msg, int *memfd_p,
		   char *why, size_t whylen)
{
	struct shf_shm_layout l;
	int r = shf_shm_layout(ring_bytes, max_msg + SHF_MSG_HDR_BYTES, &l);
	if (r) {
		snprintf(why, whylen, "no region layout for %u B rings", ring_bytes);
		return r;
	}
	/* the whole region may be committed later (first touches): charge it now */
	r = shd_budget_charge(c->d, c->uid, l.region_bytes, "ring region", why, whylen);
	if (r)
		return r;
	char name[SHF_JOB_MAX + 32];
	snprintf(name, sizeof(name), "shuffle:%s:%d", c->job ? c->job->name : "?", c->rank);
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		goto fail_charge;
	}
	if (ftruncate(fd, (off_t)l.region_bytes) < 0) {
		r = -errno;
		goto fail_fd;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		goto fail_fd;
	}
	void *base = mmap(NULL, l.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		r = -errno;
		goto fail_fd;
	}
	shf_shm_format(base, &l, c->rank, c->job ? c->job->world : 0);
	/* our views keep their own geometry, from the layout we computed */
	if ((r = shf_shm_ring(base, &l, SHF_SHM_SEND, &c->send, false)) ||
	    (r = shf_shm_ring(base, &l, SHF_SHM_DELIVER, &c->deliver, false)))
		goto fail_map;
	shf_ring_init_consumer(&c->send);
	shf_ring_init_producer(&c->deliver);
	c->bell_daemon = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->bell_deliver = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->bell_space = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->bell_daemon < 0 || c->bell_deliver < 0 || c->bell_space < 0) {
		r = -errno;
		goto fail_bells;
	}
	c->region = base;
	c->region_bytes = l.region_bytes;
	*memfd_p = fd;
	return 0;

fail_bells:
	close_fd(&c->bell_daemon);
	close_fd(&c->bell_deliver);
	close_fd(&c->bell_space);
fail_map:
	munmap(base, l.region_bytes);
fail_fd:
	close(fd);
fail_charge:
	shd_budget_release(c->d, c->uid, l.region_bytes);
	snprintf(why, whylen, "daemon cannot create shared memory (%u B rings): %s", ring_bytes,
		 strerror(-r));
	return r;
}

void shd_region_free(struct shd_client *c)
{
	shd_ev_free(c->bell_ev);
	c->bell_ev = NULL;
	close_fd(&c->bell_daemon);
	close_fd(&c->bell_deliver);
	close_fd(&c->bell_space);
	if (c->region) {
		munmap(c->region, c->region_bytes);
		shd_budget_release(c->d, c->uid, c->region_bytes);
	}
	c->region = NULL;
	c->region_bytes = 0;
}
