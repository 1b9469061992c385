/* SPDX-License-Identifier: MIT */
/*
 * header-c: include/shuffle.h compiles on its own, first, as strict ISO C
 * (built once per standard: c99, c11, c17, with -pedantic-errors -Werror),
 * and every declaration links against libshuffle-client.
 */
#include <shuffle.h>

#include <errno.h>
#include <stdio.h>

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
}

int main(void)
{
	struct shf_opts o;
	struct shf_stats s;
	shf_deliver_fn fn = on_msg;
	/* every function, by address: the link proves the exports */
	void (*fns[])(void) = {
		(void (*)(void))shf_opts_init, (void (*)(void))shf_open,
		(void (*)(void))shf_send,      (void (*)(void))shf_flush,
		(void (*)(void))shf_epoch,     (void (*)(void))shf_poll,
		(void (*)(void))shf_event_fd,  (void (*)(void))shf_stats_get,
		(void (*)(void))shf_rank,      (void (*)(void))shf_world,
		(void (*)(void))shf_close,     (void (*)(void))shf_strerror,
		(void (*)(void))shf_error_detail,
		/* SHUFFLE_1.1 */
		(void (*)(void))shf_bcast,     (void (*)(void))shf_node_info,
		/* SHUFFLE_1.2 */
		(void (*)(void))shf_send_many,
	};
	struct shf_msg m = {0, 0, NULL, 0};
	struct shf_rec rec = {0, 0, 0, 0, NULL};
	shf_deliver_many_fn many = NULL;
	unsigned flags[] = {SHF_NONBLOCK, SHF_FLUSH_ORIGIN, SHF_FLUSH_REMOTE, SHF_FLUSH_DELIVERY,
			    SHF_BCAST_SELF};
	struct shf_node_info ni = {0, 0, 0, NULL, 0, NULL, 0};
	shf_opts_init(&o);
	if (o.version != SHF_API_VERSION || o.rank != -1 || o.world != -1 || !o.delivery_thread ||
	    o.timeout_ms != 0 || o.socket_path || o.job || o.ring_bytes || o.deliver_many) {
		fprintf(stderr, "shf_opts_init: unexpected defaults\n");
		return 1;
	}
	for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (!fns[i]) {
			fprintf(stderr, "function %u has no address\n", i);
			return 1;
		}
	}
	if (!fn || flags[0] == 0 || (SHF_BCAST_SELF & SHF_NONBLOCK) != 0 || ni.local_ranks ||
	    shf_bcast(NULL, 0, NULL, 0, 0) != -EINVAL || shf_node_info(NULL, &ni) != -EINVAL ||
	    sizeof(s.sent_msgs) != 8 || shf_close(NULL) != 0 ||
	    shf_strerror(0)[0] == '\0' || shf_send_many(NULL, &m, 1, 0) != -EINVAL || rec.data ||
	    many) {
		fprintf(stderr, "basic checks failed\n");
		return 1;
	}
	return 0;
}
