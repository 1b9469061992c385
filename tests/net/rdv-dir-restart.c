/* SPDX-License-Identifier: MIT */
/*
 * tests/net/rdv-dir-restart.c - the dir rendezvous across restarts, in the
 * same directory (no fabric: made-up addresses).
 *
 * - dir:PATH:N, restart: a second open with the same name and a new
 *   incarnation replaces its file (new address and incarnation, atomically)
 *   and keeps its id; the other node's entry is unchanged.
 * - staleness: the file of a dead process (same boot id and pid namespace)
 *   is ignored; so is one whose pid is alive but with another start time
 *   (pid reused); a file from another boot cannot be judged and counts.
 * - dir:PATH without N: 4 processes started at once get the distinct ids
 *   0..3; restarted at once (new incarnations) they get the same ids back;
 *   a fifth name gets 4 and sees the dead four as claimed but stale
 *   (addr_len 0, names kept); a lost PATH/<name>.id index is rebuilt from
 *   the claim; an address file without a claim is refused.
 */
#include "net-common.h"

#include <dirent.h>
#include <inttypes.h>

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

static void fake_addr(uint8_t *a, int seed)
{
	for (int i = 0; i < 16; i++)
		a[i] = (uint8_t)(seed * 16 + i);
}

/* open + exchange as name with incarnation inc; 0 or the error. */
static int run(const char *spec, const char *name, uint64_t inc, int seed, int timeout_ms,
	       struct shd_rdv_result *res, char *err, size_t errlen)
{
	uint8_t addr[16];
	fake_addr(addr, seed);
	struct shd_rdv_self self = {.name = name, .timeout_ms = timeout_ms, .incarnation = inc};
	struct shd_rdv_result tmp;
	int r = shd_rdv_run(spec, addr, sizeof(addr), &self, res ? res : &tmp, err, errlen);
	if (r == 0 && !res)
		shd_rdv_result_fini(&tmp);
	return r;
}

static void slurp(const char *fn, char *buf, size_t cap)
{
	FILE *fp = fopen(fn, "r");
	T_ASSERT(fp, "open %s: %s", fn, strerror(errno));
	size_t n = fread(buf, 1, cap - 1, fp);
	buf[n] = '\0';
	fclose(fp);
}

static void put(const char *fn, const char *text)
{
	FILE *fp = fopen(fn, "w");
	T_ASSERT(fp, "create %s", fn);
	fputs(text, fp);
	fclose(fp);
}

static void restart_with_n(void)
{
	char dir[] = "/tmp/shf-rdv-rst-XXXXXX", spec[256], err[256], fn[300], text[1024];
	struct shd_rdv_result res;
	uint8_t a1[16], a2[16];
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	snprintf(spec, sizeof(spec), "dir:%s:2", dir);

	/* r-b publishes (and times out alone; its file stays, this pid is alive) */
	int r = run(spec, "r-b", 0x100, 9, 200, NULL, err, sizeof(err));
	T_ASSERT(r == -ETIMEDOUT, "r-b alone: %d %s", r, err);
	r = run(spec, "r-a", 0x1, 1, 5000, &res, err, sizeof(err));
	T_ASSERT(r == 0, "r-a: %d %s", r, err);
	fake_addr(a1, 1);
	T_ASSERT(res.n_nodes == 2 && res.my_node == 0 && !strcmp(res.nodes[1].host, "r-b") &&
			 res.nodes[0].incarnation == 0x1 && res.nodes[1].incarnation == 0x100 &&
			 !memcmp(res.nodes[0].addr, a1, 16),
		 "first incarnation");
	shd_rdv_result_fini(&res);

	/* r-a restarts: new incarnation, new address, same id */
	r = run(spec, "r-a", 0x2, 2, 5000, &res, err, sizeof(err));
	T_ASSERT(r == 0, "r-a again: %d %s", r, err);
	fake_addr(a2, 2);
	T_ASSERT(res.n_nodes == 2 && res.my_node == 0 && res.nodes[0].incarnation == 0x2 &&
			 !memcmp(res.nodes[0].addr, a2, 16) && res.nodes[1].incarnation == 0x100,
		 "restart keeps the id, replaces the file");
	shd_rdv_result_fini(&res);
	snprintf(fn, sizeof(fn), "%s/r-a.addr", dir);
	slurp(fn, text, sizeof(text));
	T_ASSERT(strstr(text, " 0000000000000002 ") && !strstr(text, " 0000000000000001 "),
		 "file holds the new incarnation: %s", text);
	/* r-b restarts too, with a drawn incarnation */
	struct shd_rdv_self self = {.name = "r-b", .timeout_ms = 5000};
	struct shd_rdv *rv;
	T_ASSERT(shd_rdv_open(spec, &self, &rv, err, sizeof(err)) == 0, "open: %s", err);
	uint64_t drawn = shd_rdv_incarnation(rv);
	T_ASSERT(drawn != 0 && drawn != 0x100, "drawn incarnation %" PRIx64, drawn);
	fake_addr(a1, 3);
	T_ASSERT(shd_rdv_exchange(rv, a1, 16, &res, err, sizeof(err)) == 0, "r-b: %s", err);
	shd_rdv_close(rv);
	T_ASSERT(res.my_node == 1 && res.nodes[1].incarnation == drawn &&
			 res.nodes[0].incarnation == 0x2,
		 "r-b restarted");
	shd_rdv_result_fini(&res);
	rm_dir(dir);
}

/* my boot id and pid namespace, as rdv.c reads them */
static void my_ident(char *boot, size_t bl, uint64_t *pidns, uint64_t *start)
{
	char link[64], text[1024];
	slurp("/proc/sys/kernel/random/boot_id", boot, bl);
	boot[strcspn(boot, "\n")] = '\0';
	ssize_t ll = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	T_ASSERT(ll > 0, "readlink");
	link[ll] = '\0';
	T_ASSERT(sscanf(link, "pid:[%" SCNu64 "]", pidns) == 1, "pidns %s", link);
	slurp("/proc/self/stat", text, sizeof(text));
	char *p = strrchr(text, ')') + 2;
	for (int f = 3; f < 22; f++)
		p = strchr(p, ' ') + 1;
	*start = strtoull(p, NULL, 10);
}

static void stale(void)
{
	char dir[] = "/tmp/shf-rdv-stl-XXXXXX", spec[256], err[256], fn[300], text[512];
	char boot[64];
	uint64_t pidns, start;
	struct shd_rdv_result res;
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	snprintf(spec, sizeof(spec), "dir:%s:1", dir);
	my_ident(boot, sizeof(boot), &pidns, &start);

	/* a node that ran and died */
	fflush(NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		int r = run(spec, "ghost", 0, 7, 5000, NULL, err, sizeof(err));
		_exit(r == 0 ? 0 : 1);
	}
	t_wait_child(pid, "ghost");
	snprintf(fn, sizeof(fn), "%s/ghost.addr", dir);
	T_ASSERT(access(fn, F_OK) == 0, "ghost's file is there");

	int r = run(spec, "live", 0, 1, 2000, &res, err, sizeof(err));
	T_ASSERT(r == 0 && res.n_nodes == 1 && res.my_node == 0 &&
			 !strcmp(res.nodes[0].host, "live"),
		 "dead node's file ignored: %d %s", r, err);
	shd_rdv_result_fini(&res);

	/* my pid, but another start time: the pid was reused */
	snprintf(fn, sizeof(fn), "%s/reused.addr", dir);
	snprintf(text, sizeof(text), "shuffle-rdv 2 reused 0a0b 00000000000000aa %ld %s %" PRIu64
		 " %" PRIu64 "\n", (long)getpid(), boot, pidns, start + 1);
	put(fn, text);
	r = run(spec, "live", 0, 1, 2000, NULL, err, sizeof(err));
	T_ASSERT(r == 0, "reused pid ignored: %d %s", r, err);
	/* the same with my start time: alive, one live node too many */
	snprintf(text, sizeof(text), "shuffle-rdv 2 reused 0a0b 00000000000000aa %ld %s %" PRIu64
		 " %" PRIu64 "\n", (long)getpid(), boot, pidns, start);
	put(fn, text);
	r = run(spec, "live", 0, 1, 2000, NULL, err, sizeof(err));
	T_ASSERT(r == -EEXIST && strstr(err, "2 live"), "live writer counted: %d %s", r, err);
	unlink(fn);
	/* another boot: cannot be judged, counts */
	snprintf(fn, sizeof(fn), "%s/remote.addr", dir);
	put(fn, "shuffle-rdv 2 remote 0a0b 00000000000000bb 1 "
		"00000000-0000-0000-0000-000000000000 4026531836 5\n");
	r = run(spec, "live", 0, 1, 2000, NULL, err, sizeof(err));
	T_ASSERT(r == -EEXIST, "another boot's file counts: %d %s", r, err);
	/* a timeout names the stale files it ignored */
	unlink(fn);
	snprintf(spec, sizeof(spec), "dir:%s:2", dir);
	r = run(spec, "live", 0, 1, 300, NULL, err, sizeof(err));
	T_ASSERT(r == -ETIMEDOUT && strstr(err, "1 of 2") && strstr(err, "ghost"),
		 "timeout names the stale: %d %s", r, err);
	rm_dir(dir);
}

static const char *nn_names[5] = {"n-c", "n-a", "n-d", "n-b", "n-e"};

struct report {
	int i, id_open, id, n_nodes, ok;
};

/* Child i of a round: wait at the gate, open dir:PATH, exchange, report. */
static void nn_child(int i, const char *spec, int gate, int rep, uint64_t inc)
{
	char err[256], c;
	struct report rp = {.i = i};
	t_timeout(30);
	(void)!read(gate, &c, 1); /* EOF: everyone goes */
	struct shd_rdv_self self = {.name = nn_names[i], .timeout_ms = 5000, .incarnation = inc};
	struct shd_rdv *r;
	T_ASSERT(shd_rdv_open(spec, &self, &r, err, sizeof(err)) == 0, "open %s: %s", nn_names[i],
		 err);
	rp.id_open = shd_rdv_my_node(r);
	T_ASSERT(rp.id_open >= 0 && shd_rdv_nodes(r) > (uint32_t)rp.id_open, "id after open");
	uint8_t addr[16];
	fake_addr(addr, i + 1);
	struct shd_rdv_result res;
	T_ASSERT(shd_rdv_exchange(r, addr, 16, &res, err, sizeof(err)) == 0, "exchange: %s", err);
	shd_rdv_close(r);
	rp.id = (int)res.my_node;
	rp.n_nodes = (int)res.n_nodes;
	rp.ok = !strcmp(res.nodes[rp.id].host, nn_names[i]) && res.nodes[rp.id].addr_len == 16 &&
		!memcmp(res.nodes[rp.id].addr, addr, 16) && res.nodes[rp.id].incarnation == inc;
	shd_rdv_result_fini(&res);
	t_write(rep, &rp, sizeof(rp));
	_exit(0);
}

/* 4 processes open dir:PATH at once; ids[i] for name i. */
static void nn_round(const char *spec, int ids[4], uint64_t inc_base)
{
	int gate[2], rep[2];
	pid_t pids[4];
	T_ASSERT(pipe(gate) == 0 && pipe(rep) == 0, "pipe");
	fflush(NULL);
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		T_ASSERT(pids[i] >= 0, "fork");
		if (pids[i] == 0) {
			close(gate[1]);
			close(rep[0]);
			nn_child(i, spec, gate[0], rep[1], inc_base + (uint64_t)i);
		}
	}
	close(gate[0]);
	close(rep[1]);
	t_sleep_ms(50);
	close(gate[1]); /* go */
	for (int i = 0; i < 4; i++)
		t_wait_child(pids[i], nn_names[i]);
	for (int k = 0; k < 4; k++) {
		struct report rp;
		t_read(rep[0], &rp, sizeof(rp));
		T_ASSERT(rp.i >= 0 && rp.i < 4 && rp.ok && rp.id == rp.id_open && rp.n_nodes >= rp.id + 1,
			 "child %d: id %d (open %d), %d nodes, ok %d", rp.i, rp.id, rp.id_open,
			 rp.n_nodes, rp.ok);
		ids[rp.i] = rp.id;
	}
	close(rep[0]);
}

static void no_n(void)
{
	char dir[] = "/tmp/shf-rdv-non-XXXXXX", spec[256], err[256], fn[300], text[256];
	int ids[4], again[4];
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	snprintf(spec, sizeof(spec), "dir:%s", dir);

	nn_round(spec, ids, 0x1000);
	unsigned seen = 0;
	for (int i = 0; i < 4; i++) {
		T_ASSERT(ids[i] >= 0 && ids[i] < 4 && !(seen & 1u << ids[i]), "distinct ids 0..3: "
			 "%s got %d", nn_names[i], ids[i]);
		seen |= 1u << ids[i];
		snprintf(fn, sizeof(fn), "%s/%s.id", dir, nn_names[i]);
		slurp(fn, text, sizeof(text));
		T_ASSERT(atoi(text) == ids[i], "%s: index says %s", fn, text);
	}
	fprintf(stderr, "%s: concurrent ids %d %d %d %d\n", t_name, ids[0], ids[1], ids[2], ids[3]);
	/* all four restart at once: same ids */
	nn_round(spec, again, 0x2000);
	for (int i = 0; i < 4; i++)
		T_ASSERT(again[i] == ids[i], "%s: id %d after restart, was %d", nn_names[i],
			 again[i], ids[i]);

	/* a fifth node: id 4; the four are claimed, their files stale */
	struct shd_rdv_result res;
	int r = run(spec, nn_names[4], 0x5, 5, 5000, &res, err, sizeof(err));
	/* n_nodes is the set's capacity (max_nodes, 1024 by default): the set
	 * may grow; the ids nobody claimed are empty */
	T_ASSERT(r == 0 && res.my_node == 4 && res.n_nodes == 1024 && res.grows &&
			 !res.nodes[5].host[0] && res.nodes[5].addr_len == 0,
		 "fifth: %d %s (n_nodes %u)", r, err, res.n_nodes);
	for (int i = 0; i < 4; i++)
		T_ASSERT(res.nodes[ids[i]].addr_len == 0 && !strcmp(res.nodes[ids[i]].host, nn_names[i]),
			 "dead %s: stale, name kept", nn_names[i]);
	T_ASSERT(res.nodes[4].addr_len == 16 && res.nodes[4].incarnation == 0x5, "mine");
	shd_rdv_result_fini(&res);

	/* a lost index: the claim gives the id back */
	snprintf(fn, sizeof(fn), "%s/%s.id", dir, nn_names[2]);
	unlink(fn);
	r = run(spec, nn_names[2], 0x6, 6, 5000, &res, err, sizeof(err));
	T_ASSERT(r == 0 && (int)res.my_node == ids[2] && res.n_nodes == 1024 &&
			 res.nodes[4].addr_len == 16,
		 "index rebuilt: %d %s", r, err);
	shd_rdv_result_fini(&res);
	T_ASSERT(access(fn, F_OK) == 0, "index rewritten");

	/* an address file with no claim: the directory was used with N */
	snprintf(fn, sizeof(fn), "%s/zz.addr", dir);
	put(fn, "shuffle-rdv 2 zz 0a0b 00000000000000cc 1 - 0 0\n");
	r = run(spec, nn_names[4], 0x7, 5, 5000, NULL, err, sizeof(err));
	T_ASSERT(r == -EEXIST && strstr(err, "no id claim"), "unclaimed file: %d %s", r, err);
	rm_dir(dir);
}

int main(void)
{
	t_name = "rdv-dir-restart";
	t_timeout(90);
	restart_with_n();
	fprintf(stderr, "%s: restart with N ok\n", t_name);
	stale();
	fprintf(stderr, "%s: stale files ok\n", t_name);
	no_n();
	fprintf(stderr, "%s: PASS\n", t_name);
	return 0;
}
