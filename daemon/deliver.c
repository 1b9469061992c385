/* SPDX-License-Identifier: MIT */
/*
 * daemon/deliver.c - hop 3 (deliver.h).  Records are reserved in the
 * destination ring as they come and published together at the pass's
 * publish step: one release store and at most one bell per ring per pass.
 */
#include <errno.h>
#include <string.h>

#include "daemon/client.h"
#include "daemon/deliver.h"
#include "daemon/sched.h"
#include "proto/shm.h"

int shd_deliver_place(struct shd_daemon *d, struct shd_client *t, int32_t src, uint32_t type,
		      const void *data, uint32_t len)
{
	if (!t || t->doomed || (t->state != SHD_SESS_ACTIVE && t->state != SHD_SESS_WAITWORLD))
		return -ESRCH;
	uint8_t *p = shf_ring_reserve(&t->deliver, SHF_MSG_HDR_BYTES + len, SHF_REC_MSG);
	if (!p) {
		if (t->deliver.err) {
			/* it scribbled on its tail index */
			d->st.disc_ring++;
			shd_client_cutoff(t, -EPROTO, "corrupt delivery ring index");
			return -ESRCH;
		}
		return -EAGAIN;
	}
	struct shf_msg_hdr h = {src, type};
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), data, len);
	if (!shd_list_linked(&t->dirty_link))
		shd_list_add_tail(&d->dirty, &t->dirty_link);
	t->st.msgs_out++;
	t->st.bytes_out += len;
	return 0;
}

bool shd_deliver_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len)
{
	if (!shf_ring_prod_arm(&dst->deliver, len + SHF_MSG_HDR_BYTES))
		return false;
	shd_list_add_tail(&dst->waiters, &w->link);
	return true;
}

void shd_deliver_wake(struct shd_client *c)
{
	shd_sched_wake(&c->waiters);
}

void shd_deliver_publish(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->dirty) {
		struct shd_client *c = shd_container_of(p, struct shd_client, dirty_link);
		shd_list_del(&c->dirty_link);
		if (shf_ring_publish(&c->deliver))
			shf_bell_ring(c->bell_deliver);
		uint64_t used = shf_ring_used(&c->deliver);
		if (used > c->st.deliver_ring_hwm)
			c->st.deliver_ring_hwm = used;
	}
}
