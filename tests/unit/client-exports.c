/* SPDX-License-Identifier: MIT */
/*
 * client-exports: libshuffle-client.so exports exactly the public API.
 * Every function of include/shuffle.h resolves at its version (SHUFFLE_1
 * for the first 13, SHUFFLE_1.1 for those added in 1.1, SHUFFLE_1.2 for
 * shf_send_many and the version-2 shf_opts_init), and
 * none of the internals does - not the client's shc_* functions and not
 * the statically linked proto/ code (named shf_* too).
 * argv[1]: path of the built library.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "shuffle.h"

int main(int argc, char **argv)
{
	static const char *const public_fns[] = {
		"shf_opts_init", "shf_open",      "shf_send",    "shf_flush",
		"shf_epoch",     "shf_poll",      "shf_event_fd", "shf_stats_get",
		"shf_rank",      "shf_world",     "shf_close",   "shf_strerror",
		"shf_error_detail",
	};
	static const char *const public_fns_1_1[] = {"shf_bcast", "shf_node_info"};
	static const char *const public_fns_1_2[] = {"shf_send_many", "shf_opts_init"};
	static const char *const private_fns[] = {
		"shf_ipc_send", "shf_ipc_recv", "shf_ipc_check", "shf_ipc_job_check",
		"shf_shm_check", "shf_shm_layout", "shf_shm_format", "shf_shm_ring",
		"shc_env_job", "shc_env_rank_world", "shc_env_launcher", "shc_discover",
		"shc_discover_in", "shc_parse_int",
		"shc_fail", "shc_wait", "shc_deliver_batch", "shc_delivery_main", "shc_in_cb",
		"shc_opts_init_v1", "shc_opts_init_v2",
	};
	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	int bad = 0;
	for (size_t i = 0; i < sizeof(public_fns) / sizeof(public_fns[0]); i++) {
		if (!dlvsym(h, public_fns[i], "SHUFFLE_1")) {
			fprintf(stderr, "%s@SHUFFLE_1 not exported\n", public_fns[i]);
			bad++;
		}
	}
	for (size_t i = 0; i < sizeof(public_fns_1_1) / sizeof(public_fns_1_1[0]); i++) {
		if (!dlvsym(h, public_fns_1_1[i], "SHUFFLE_1.1")) {
			fprintf(stderr, "%s@SHUFFLE_1.1 not exported\n", public_fns_1_1[i]);
			bad++;
		}
		if (dlvsym(h, public_fns_1_1[i], "SHUFFLE_1")) {
			fprintf(stderr, "%s is in the old node SHUFFLE_1\n", public_fns_1_1[i]);
			bad++;
		}
	}
	for (size_t i = 0; i < sizeof(public_fns_1_2) / sizeof(public_fns_1_2[0]); i++) {
		if (!dlvsym(h, public_fns_1_2[i], "SHUFFLE_1.2")) {
			fprintf(stderr, "%s@SHUFFLE_1.2 not exported\n", public_fns_1_2[i]);
			bad++;
		}
	}
	if (dlvsym(h, "shf_send_many", "SHUFFLE_1") || dlvsym(h, "shf_send_many", "SHUFFLE_1.1")) {
		fprintf(stderr, "shf_send_many is in an old node\n");
		bad++;
	}
	/* shf_opts_init@SHUFFLE_1 fills only the version-1 struct (a program
	 * built against 1.0 or 1.1 passes that), @SHUFFLE_1.2 the whole one */
	void (*init1)(struct shf_opts *), (*init2)(struct shf_opts *);
	void *a1 = dlvsym(h, "shf_opts_init", "SHUFFLE_1");
	void *a2 = dlvsym(h, "shf_opts_init", "SHUFFLE_1.2");
	memcpy(&init1, &a1, sizeof(a1)); /* POSIX: a dlsym() result is callable */
	memcpy(&init2, &a2, sizeof(a2));
	if (init1 && init2) {
		struct shf_opts o;
		memset(&o, 0xa5, sizeof(o));
		init1(&o);
		const unsigned char *tail = (const unsigned char *)&o.deliver_many;
		for (size_t i = 0; i < sizeof(o.deliver_many); i++)
			if (tail[i] != 0xa5) {
				fprintf(stderr, "shf_opts_init@SHUFFLE_1 wrote past the version-1 "
					"struct\n");
				bad++;
				break;
			}
		if (o.version != 1 || o.rank != -1 || o.delivery_thread != 1) {
			fprintf(stderr, "shf_opts_init@SHUFFLE_1: version %u rank %d\n", o.version,
				o.rank);
			bad++;
		}
		memset(&o, 0xa5, sizeof(o));
		init2(&o);
		if (o.version != SHF_API_VERSION || o.deliver_many != NULL) {
			fprintf(stderr, "shf_opts_init@SHUFFLE_1.2: version %u\n", o.version);
			bad++;
		}
	}
	for (size_t i = 0; i < sizeof(private_fns) / sizeof(private_fns[0]); i++) {
		if (dlsym(h, private_fns[i])) {
			fprintf(stderr, "%s is exported but internal\n", private_fns[i]);
			bad++;
		}
	}
	dlclose(h);
	return bad ? 1 : 0;
}
