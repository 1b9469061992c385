/* SPDX-License-Identifier: MIT */
/*
 * tests/net/rdv-static.c - "static:HOST:PORT,..." rendezvous.
 *
 * Parsing and matching (node id = list position, mine = the entry equal to
 * my bind address, IPv6 in brackets, every malformed entry refused), then
 * two processes that bind the ports of a static list on 127.0.0.20/21 and
 * exchange wire messages through shd_fabric_insert_svc (t_mesh_run).
 */
#include "net-common.h"

static int open_static(const char *spec, const char *bind, struct shd_rdv **r_p)
{
	char err[256];
	struct shd_rdv_self self = {.bind = bind};
	return shd_rdv_open(spec, &self, r_p, err, sizeof(err));
}

static void parsing(void)
{
	struct shd_rdv *r;
	char err[256];
	const char *spec = "static:127.0.0.2:7000,127.0.0.3:7001,[::1]:7002,host-x.example:80";
	T_ASSERT(open_static(spec, "127.0.0.3:7001", &r) == 0, "open");
	T_ASSERT(shd_rdv_kind(r) == SHD_RDV_STATIC && shd_rdv_my_node(r) == 1 &&
			 shd_rdv_nodes(r) == 4,
		 "known before the exchange");
	struct shd_rdv_result res;
	T_ASSERT(shd_rdv_exchange(r, NULL, 0, &res, err, sizeof(err)) == 0, "exchange");
	T_ASSERT(shd_rdv_exchange(r, NULL, 0, &res, err, sizeof(err)) == -EALREADY, "twice");
	shd_rdv_close(r);
	T_ASSERT(res.kind == SHD_RDV_STATIC && res.n_nodes == 4 && res.my_node == 1, "result");
	T_ASSERT(!strcmp(res.nodes[0].host, "127.0.0.2") && !strcmp(res.nodes[0].port, "7000") &&
			 !strcmp(res.nodes[2].host, "::1") && !strcmp(res.nodes[2].port, "7002") &&
			 !strcmp(res.nodes[3].host, "host-x.example") &&
			 !strcmp(res.nodes[3].port, "80") && res.nodes[1].addr_len == 0,
		 "entries");
	shd_rdv_result_fini(&res);
	shd_rdv_result_fini(&res); /* idempotent */

	T_ASSERT(open_static(spec, "[::1]:7002", &r) == 0 && shd_rdv_my_node(r) == 2, "v6 bind");
	shd_rdv_close(r);
	T_ASSERT(open_static("static:a:1", "a:1", &r) == 0 && shd_rdv_nodes(r) == 1, "one node");
	shd_rdv_close(r);

	static const struct {
		const char *spec, *bind;
		int want;
	} bad[] = {
		{"static:127.0.0.2:7000", "127.0.0.2:7001", -ENOENT},
		{"static:127.0.0.2:7000", NULL, -EINVAL},
		{"static:127.0.0.2:7000", "garbage", -EINVAL},
		{"static:", "a:1", -EINVAL},
		{"static:a", "a:1", -EINVAL},
		{"static:a:", "a:1", -EINVAL},
		{":1", "a:1", -EINVAL},
		{"static::1", "a:1", -EINVAL},
		{"static:a:0", "a:1", -EINVAL},
		{"static:a:65536", "a:1", -EINVAL},
		{"static:a:1x", "a:1", -EINVAL},
		{"static:a:1,,b:2", "a:1", -EINVAL},
		{"static:a:1,b:2,", "a:1", -EINVAL},
		{"static:a:1,a:1", "a:1", -EINVAL},
		{"static:::1:80", "a:1", -EINVAL},
		{"static:[::1:80", "a:1", -EINVAL},
		{"static:[::1]80", "a:1", -EINVAL},
		{"static:[]:80", "a:1", -EINVAL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = NULL;
		int rc = open_static(bad[i].spec, bad[i].bind, &r);
		T_ASSERT(rc == bad[i].want && r == NULL, "\"%s\" bind %s: %d, want %d", bad[i].spec,
			 bad[i].bind ? bad[i].bind : "NULL", rc, bad[i].want);
	}
}

static void node(int me, const char *spec, const char *host, const char *port, const char *dir)
{
	char err[256], bind[64];
	snprintf(bind, sizeof(bind), "%s:%s", host, port);
	struct shd_rdv_self self = {.bind = bind};
	struct shd_rdv *r;
	T_ASSERT(shd_rdv_open(spec, &self, &r, err, sizeof(err)) == 0, "open: %s", err);
	T_ASSERT(shd_rdv_my_node(r) == me, "my node %d", shd_rdv_my_node(r));
	struct shd_fabric *f = t_fabric_open(host, port, NULL);
	struct shd_rdv_result res;
	T_ASSERT(shd_rdv_exchange(r, NULL, 0, &res, err, sizeof(err)) == 0, "exchange: %s", err);
	shd_rdv_close(r);
	t_mesh_run(f, &res, dir);
	shd_rdv_result_fini(&res);
	shd_fabric_close(f);
}

int main(void)
{
	char dir[] = "/tmp/shf-rdv-static-XXXXXX";
	char spec[128], p0[16], p1[16];
	t_name = "rdv-static";
	t_timeout(60);
	parsing();

	T_ASSERT(mkdtemp(dir), "mkdtemp");
	snprintf(p0, sizeof(p0), "%u", t_free_port("127.0.0.20"));
	snprintf(p1, sizeof(p1), "%u", t_free_port("127.0.0.21"));
	snprintf(spec, sizeof(spec), "static:127.0.0.20:%s,127.0.0.21:%s", p0, p1);
	fflush(NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		t_timeout(60);
		node(1, spec, "127.0.0.21", p1, dir);
		_exit(0);
	}
	node(0, spec, "127.0.0.20", p0, dir);
	t_wait_child(pid, "node 1");
	char fn[128];
	for (int i = 0; i < 2; i++) {
		snprintf(fn, sizeof(fn), "%s/mesh.%d", dir, i);
		unlink(fn);
	}
	rmdir(dir);
	fprintf(stderr, "%s: PASS\n", t_name);
	return 0;
}
