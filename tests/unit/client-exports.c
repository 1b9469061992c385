/* SPDX-License-Identifier: MIT */
/*
 * client-exports: libshuffle-client.so exports exactly the public API.
 * Every function of include/shuffle.h resolves at its version (SHUFFLE_1
 * for the first 13, SHUFFLE_1.1 for those added in 1.1), and
 * none of the internals does - not the client's shc_* functions and not
 * the statically linked proto/ code (named shf_* too).
 * argv[1]: path of the built library.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	static const char *const public_fns[] = {
		"shf_opts_init", "shf_open",      "shf_send",    "shf_flush",
		"shf_epoch",     "shf_poll",      "shf_event_fd", "shf_stats_get",
		"shf_rank",      "shf_world",     "shf_close",   "shf_strerror",
		"shf_error_detail",
	};
	static const char *const public_fns_1_1[] = {"shf_bcast", "shf_node_info"};
	static const char *const private_fns[] = {
		"shf_ipc_send", "shf_ipc_recv", "shf_ipc_check", "shf_ipc_job_check",
		"shf_shm_check", "shf_shm_layout", "shf_shm_format", "shf_shm_ring",
		"shc_env_job", "shc_env_rank_world", "shc_env_launcher", "shc_discover",
		"shc_discover_in", "shc_parse_int",
		"shc_fail", "shc_wait", "shc_deliver_batch", "shc_delivery_main", "shc_in_cb",
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
	for (size_t i = 0; i < sizeof(private_fns) / sizeof(private_fns[0]); i++) {
		if (dlsym(h, private_fns[i])) {
			fprintf(stderr, "%s is exported but internal\n", private_fns[i]);
			bad++;
		}
	}
	dlclose(h);
	return bad ? 1 : 0;
}
