// SPDX-License-Identifier: MIT
// header-cxx: include/shuffle.h compiles on its own as strict C++
// (-pedantic-errors -Werror), has C linkage, and links.
#include <shuffle.h>

#include <cstdio>

extern "C" {
static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
}
}

int main()
{
	shf_opts o;
	shf_opts_init(&o);
	shf_deliver_fn fn = on_msg;
	shf_stats s = shf_stats();
	int (*open_fn)(const shf_opts *, shf_deliver_fn, void *, shf_ctx **) = shf_open;
	int (*send_fn)(shf_ctx *, int, uint32_t, const void *, uint32_t, unsigned) = shf_send;
	const char *(*detail_fn)() = shf_error_detail;
	int (*bcast_fn)(shf_ctx *, uint32_t, const void *, uint32_t, unsigned) = shf_bcast;
	// the function hides the struct's name: C++ says `struct shf_node_info`,
	// as for stat()
	int (*info_fn)(shf_ctx *, struct shf_node_info *) = shf_node_info;
	struct shf_node_info ni = {};
	if (!bcast_fn || !info_fn || ni.local_ranks != nullptr || SHF_BCAST_SELF == 0 ||
	    shf_node_info(nullptr, &ni) >= 0) {
		std::fprintf(stderr, "C++ header checks of 1.1 failed\n");
		return 1;
	}
	if (o.version != SHF_API_VERSION || o.rank != -1 || !fn || !open_fn || !send_fn ||
	    !detail_fn || s.sent_msgs != 0 || shf_close(nullptr) != 0) {
		std::fprintf(stderr, "C++ header checks failed\n");
		return 1;
	}
	return 0;
}
