/* SPDX-License-Identifier: MIT */
/*
 * tests/net/rdv-dir.c - "dir:PATH:N" rendezvous with three processes.
 *
 * Three processes (names n-b, n-c, n-a: node ids follow the sorted names,
 * not the start order) open endpoints on 127.0.0.10..12, publish through
 * the directory, and then every node sends one wire message to every
 * other (t_mesh_run), which fails unless all three tables agree.  Then the
 * error paths: the dead children's files are stale and ignored (timeout
 * naming them), more live files than N, timeout naming the count, a
 * malformed file, bad specs and names.  Restarts and dir:PATH without N:
 * rdv-dir-restart.c.
 */
#include "net-common.h"

#include <dirent.h>

static const char *names[3] = {"n-b", "n-c", "n-a"};
static const int want_id[3] = {1, 2, 0};

static void rm_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	char fn[4096];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(fn, sizeof(fn), "%s/%s", path, de->d_name);
		unlink(fn);
	}
	closedir(d);
	rmdir(path);
}

static void child(int i, const char *dir)
{
	char spec[4200], ip[32], err[256];
	t_timeout(60);
	snprintf(ip, sizeof(ip), "127.0.0.%d", 10 + i);
	struct shd_fabric *f = t_fabric_open(ip, "0", NULL);
	uint8_t addr[SHD_FABRIC_ADDR_MAX];
	size_t alen = sizeof(addr);
	T_ASSERT(shd_fabric_addr(f, addr, &alen) == 0, "addr");
	snprintf(spec, sizeof(spec), "dir:%s:3", dir);
	struct shd_rdv_self self = {.name = names[i], .timeout_ms = 20000};
	struct shd_rdv_result res;
	int r = shd_rdv_run(spec, addr, alen, &self, &res, err, sizeof(err));
	T_ASSERT(r == 0, "rdv: %d %s", r, err);
	T_ASSERT(res.kind == SHD_RDV_DIR && res.n_nodes == 3, "result kind/nodes");
	T_ASSERT((int)res.my_node == want_id[i], "my node %u, want %d", res.my_node, want_id[i]);
	T_ASSERT(!strcmp(res.nodes[0].host, "n-a") && !strcmp(res.nodes[1].host, "n-b") &&
			 !strcmp(res.nodes[2].host, "n-c"),
		 "names sorted");
	T_ASSERT(res.nodes[res.my_node].addr_len == alen &&
			 !memcmp(res.nodes[res.my_node].addr, addr, alen),
		 "my address round trip");
	t_mesh_run(f, &res, dir);
	shd_rdv_result_fini(&res);
	shd_fabric_close(f);
	_exit(0);
}

static int run_alone(const char *spec, const char *name, char *err, size_t errlen)
{
	uint8_t addr[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	struct shd_rdv_self self = {.name = name, .timeout_ms = 300};
	struct shd_rdv_result res;
	int r = shd_rdv_run(spec, addr, sizeof(addr), &self, &res, err, errlen);
	if (r == 0)
		shd_rdv_result_fini(&res);
	return r;
}

int main(void)
{
	char dir[] = "/tmp/shf-rdv-dir-XXXXXX";
	char spec[4200], err[256];
	t_name = "rdv-dir";
	t_timeout(90);
	T_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));

	pid_t pids[3];
	fflush(NULL);
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		T_ASSERT(pids[i] >= 0, "fork");
		if (pids[i] == 0)
			child(i, dir);
		if (i == 0)
			t_sleep_ms(200); /* a late joiner: the others wait for it */
	}
	for (int i = 0; i < 3; i++)
		t_wait_child(pids[i], names[i]);
	fprintf(stderr, "%s: 3-node rendezvous and mesh exchange ok\n", t_name);

	/* The three children are gone: their files are stale (dead pids on
	 * this boot), so a fourth node waits for 3 live ones and says which
	 * files it ignored. */
	snprintf(spec, sizeof(spec), "dir:%s:3", dir);
	int r = run_alone(spec, "zz", err, sizeof(err));
	T_ASSERT(r == -ETIMEDOUT && strstr(err, "1 of 3") && strstr(err, "stale") &&
			 strstr(err, "n-a, n-b, n-c"),
		 "stale files ignored: %d %s", r, err);
	/* More live files than N: zz (this process, alive) and yy. */
	snprintf(spec, sizeof(spec), "dir:%s:1", dir);
	r = run_alone(spec, "yy", err, sizeof(err));
	T_ASSERT(r == -EEXIST && strstr(err, "2 live nodes"), "extra live files: %d %s", r, err);

	char d2[] = "/tmp/shf-rdv-dir-XXXXXX";
	T_ASSERT(mkdtemp(d2), "mkdtemp");
	/* Timeout: nobody else comes. */
	snprintf(spec, sizeof(spec), "dir:%s:2", d2);
	int64_t t0 = t_now_ms();
	r = run_alone(spec, "lonely", err, sizeof(err));
	T_ASSERT(r == -ETIMEDOUT && strstr(err, "1 of 2"), "timeout: %d %s", r, err);
	T_ASSERT(t_now_ms() - t0 < 5000, "timeout is bounded");
	/* A malformed file from a second "node". */
	char fn[4200];
	snprintf(fn, sizeof(fn), "%s/broken.addr", d2);
	FILE *fp = fopen(fn, "w");
	T_ASSERT(fp, "fopen");
	fputs("shuffle-rdv 2 broken 12zz 0000000000000001 1 - 0 0\n", fp);
	fclose(fp);
	r = run_alone(spec, "lonely", err, sizeof(err));
	T_ASSERT(r == -EBADMSG && strstr(err, "broken"), "malformed: %d %s", r, err);
	rm_dir(d2);

	/* Bad specs and names. */
	T_ASSERT(run_alone("dir:", "x", err, sizeof(err)) == -EINVAL, "no path");
	T_ASSERT(run_alone("dir:/tmp:", "x", err, sizeof(err)) == -EINVAL, "empty count");
	T_ASSERT(run_alone("dir:/tmp:0", "x", err, sizeof(err)) == -EINVAL, "count 0");
	T_ASSERT(run_alone("dir:/tmp:1048577", "x", err, sizeof(err)) == -EINVAL, "count > max");
	T_ASSERT(run_alone("dir:/tmp:99999999999999999999", "x", err, sizeof(err)) == -EINVAL,
		 "count overflow");
	T_ASSERT(run_alone("dir::3", "x", err, sizeof(err)) == -EINVAL, "empty path");
	T_ASSERT(shd_rdv_spec_check("dir:/tmp:1048576", err, sizeof(err)) == 0, "max count");
	/* not all digits after the last ':': part of PATH, no N */
	T_ASSERT(shd_rdv_spec_check("dir:/tmp:3x", err, sizeof(err)) == 0, "PATH with ':'");
	T_ASSERT(run_alone("dir:/nonexistent-shf:3x", "x", err, sizeof(err)) == -ENOENT,
		 "no-N missing directory: %s", err);
	T_ASSERT(run_alone("dir:/tmp:2", "../x", err, sizeof(err)) == -EINVAL, "name with /");
	T_ASSERT(run_alone("dir:/tmp:2", ".hidden", err, sizeof(err)) == -EINVAL, "dot name");
	T_ASSERT(run_alone("nonsense", "x", err, sizeof(err)) == -EINVAL && strstr(err, "unknown"),
		 "unknown spec: %s", err);
	snprintf(spec, sizeof(spec), "dir:%s/does-not-exist:2", dir);
	T_ASSERT(run_alone(spec, "x", err, sizeof(err)) == -ENOENT, "missing directory: %s", err);

	rm_dir(dir);
	fprintf(stderr, "%s: PASS\n", t_name);
	return 0;
}
