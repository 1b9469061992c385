/* SPDX-License-Identifier: MIT */
/*
 * tests/net/rdv-static.c - "static:HOST:PORT,..." rendezvous.
 *
 * Parsing and matching (node id = list position, mine = the entry equal to
 * my bind address, IPv6 in brackets, every malformed entry refused), the
 * hostfile form static:@FILE (comments, blank lines, portless lines taking
 * my bind's port, bad lines refused by check and open alike with their
 * line number), then
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

/* "static:@FILE": the hostfile goes through the same entry parser. */
static void hostfile(void)
{
	char dir[] = "/tmp/shf-rdv-hf-XXXXXX", fn[128], spec[160], err[256];
	struct shd_rdv *r;
	struct shd_rdv_result res;
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	snprintf(fn, sizeof(fn), "%s/hosts", dir);
	snprintf(spec, sizeof(spec), "static:@%s", fn);

	FILE *fp = fopen(fn, "w");
	T_ASSERT(fp, "create");
	fputs("# the nodes of the service\n"
	      "\n"
	      "  h1:7000   # first\n"
	      "h2\t\r\n"
	      "\t[::1]:7002\n"
	      "#h9:1\n"
	      "10.0.0.4:7003\n"
	      "fe80::5", fp); /* bare IPv6, no port, no final newline */
	fclose(fp);
	T_ASSERT(shd_rdv_spec_check(spec, err, sizeof(err)) == 0, "check: %s", err);
	/* a portless line takes my bind's port */
	T_ASSERT(open_static(spec, "h2:7000", &r) == 0, "open");
	T_ASSERT(shd_rdv_my_node(r) == 1 && shd_rdv_nodes(r) == 5, "id = entry position");
	T_ASSERT(shd_rdv_exchange(r, NULL, 0, &res, err, sizeof(err)) == 0, "exchange");
	shd_rdv_close(r);
	T_ASSERT(!strcmp(res.nodes[0].host, "h1") && !strcmp(res.nodes[0].port, "7000") &&
			 !strcmp(res.nodes[1].host, "h2") && !strcmp(res.nodes[1].port, "7000") &&
			 !strcmp(res.nodes[2].host, "::1") && !strcmp(res.nodes[2].port, "7002") &&
			 !strcmp(res.nodes[3].host, "10.0.0.4") && !strcmp(res.nodes[3].port, "7003") &&
			 !strcmp(res.nodes[4].host, "fe80::5") && !strcmp(res.nodes[4].port, "7000"),
		 "entries");
	shd_rdv_result_fini(&res);
	T_ASSERT(open_static(spec, "[fe80::5]:7000", &r) == 0 && shd_rdv_my_node(r) == 4,
		 "bare IPv6 line");
	shd_rdv_close(r);
	/* portless lines follow my bind's port (every daemon should bind the same) */
	T_ASSERT(open_static(spec, "h2:7001", &r) == 0 && shd_rdv_my_node(r) == 1, "other port");
	shd_rdv_close(r);
	T_ASSERT(open_static(spec, "h1:7001", &r) == -ENOENT, "a ported line keeps its port");
	T_ASSERT(open_static(spec, "h2", &r) == -EINVAL, "bind without a port");

	/* bad files: check and open refuse alike, naming the line */
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"h1:7000\nh2:x\n", "line 2"},
		{"h1:7000\n\n# c\nh1:7000\n", "line 4 \"h1:7000\" repeats line 1"},
		{"h1:7000\nh1\n", "line 2 \"h1\" repeats line 1"},
		{"h1\nh1:7001\n", "repeats line 1"},
		{"h1:7000 h2:7000\n", "line 1"},
		{"h1:7000 slots=4\n", "one HOST[:PORT] per line"},
		{"# nothing\n\n", "no node"},
		{"", "no node"},
		{"h1:0\n", "line 1"},
		{"[::1\n", "line 1"},
		{"a,b\n", "line 1"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fp = fopen(fn, "w");
		T_ASSERT(fp, "create");
		fputs(bad[i].text, fp);
		fclose(fp);
		err[0] = '\0';
		int c = shd_rdv_spec_check(spec, err, sizeof(err));
		T_ASSERT(c == -EINVAL && strstr(err, bad[i].want), "bad file %zu: check %d \"%s\"", i,
			 c, err);
		r = NULL;
		struct shd_rdv_self self = {.bind = "h1:7000"};
		int o = shd_rdv_open(spec, &self, &r, err, sizeof(err));
		T_ASSERT(o == -EINVAL && r == NULL && strstr(err, bad[i].want),
			 "bad file %zu: open %d \"%s\"", i, o, err);
	}
	/* a long line */
	fp = fopen(fn, "w");
	for (int i = 0; i < 2000; i++)
		fputc('a', fp);
	fputs(":1\n", fp);
	fclose(fp);
	T_ASSERT(shd_rdv_spec_check(spec, err, sizeof(err)) == -EINVAL && strstr(err, "line 1"),
		 "long line: %s", err);
	unlink(fn);
	T_ASSERT(shd_rdv_spec_check(spec, err, sizeof(err)) == -EINVAL && strstr(err, "hostfile"),
		 "missing file: %s", err);
	T_ASSERT(open_static(spec, "h1:7000", &r) == -EINVAL, "missing file at open");
	T_ASSERT(shd_rdv_spec_check("static:@", err, sizeof(err)) == -EINVAL, "no file name");
	/* {node} is refused with a hostfile too, even an unreadable one */
	T_ASSERT(shd_rdv_bind_check("h{node}:1", spec, err, sizeof(err)) == -EINVAL, "bind {node}");
	rmdir(dir);
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
	hostfile();

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
