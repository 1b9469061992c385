/* SPDX-License-Identifier: MIT */
/*
 * tests/node/mem-budget.c - what one unprivileged user can make a root
 * daemon hold (issue 15, item 7).
 *
 * A root daemon with uid_mem_max=300M and mem_max=400M.  Clients run as
 * other uids (setpriv):
 *  1. uid 65534 opens 8 jobs of world 2^24, each registering its last rank
 *     (16777215) and waiting for a world that never comes.  The rank
 *     directory must follow the ranks that came, not the world claimed:
 *     the daemon's VmRSS grows by less than 32 MiB (a world-sized
 *     directory is 64 MiB of node ids per job, touched).  Then they go.
 *  2. uid 65534 registers ranks with 64 MiB rings (128 MiB regions): two
 *     fit its 300 MiB, the third is refused with -EDQUOT naming
 *     uid_mem_max.
 *  3. uid 65533 registers one such rank (the total is now 384 MiB), and a
 *     second is refused with -ENOMEM naming mem_max.
 *  4. uid 65532 still registers with a default ring (2 MiB) and runs a
 *     small job; root, exempt, registers a 64 MiB-ring job too.
 *  Throughout, the ring memory the daemon maps (its memfd mappings in
 *  /proc/PID/maps) never passes mem_max plus root's share, and the stats
 *  count the refusals (daemon.mem_refused).
 * Skipped unless run as root with setpriv(1).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define SETPRIV TD_SETPRIV
#define MiB (1024LL * 1024)

static pid_t spawn_as(int uid, const char *job, int rank, int world, const char *const *args)
{
	return td_spawn_client_as(uid == 0 ? -1 : uid, job, rank, world, args, NULL);
}

/* Wait until the daemon lists (job, rank) as a registered client. */
static void wait_registered(struct td_env *e, const char *job, int rank)
{
	bool reg = false;
	for (int64_t end = td_now_ms() + 15000; !reg && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		reg = td_client_find(cl, job, rank) != NULL;
		json_decref(cl);
	}
	CHECKF(reg, "rank %d of job %s never registered", rank, job);
}

/* Bytes of client regions the daemon has mapped (memfd "shuffle:*"). */
static long long region_bytes(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	long long sum = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (strstr(line, "memfd:shuffle:") && sscanf(line, "%llx-%llx", &a, &b) == 2)
			sum += (long long)(b - a);
	}
	fclose(f);
	return sum;
}

int main(int argc, char **argv)
{
	/* "rings": steps 2-4 only (to see them alone against an older daemon) */
	bool rings_only = argc > 1 && !strcmp(argv[1], "rings");
	struct td_env *e = td_init("mem-budget", 100, TD_SOCKET_ENV);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon and setpriv to other uids)");
	if (access(SETPRIV, X_OK) != 0)
		SKIP("%s not found", SETPRIV);
	CHECK(chmod(e->dir, 0755) == 0);
	CHECK(chmod(e->sync, 01777) == 0);
	const char *usage_only[] = {NULL};
	int r = td_wait(spawn_as(65534, "x", 0, 1, usage_only), 10000);
	if (r != 2)
		SKIP("the test client cannot run as uid 65534 (status %d): is the build "
		     "directory readable by everyone?", r);

	/* by environment: an older daemon that has no budgets still starts (and
	 * fails the checks below) */
	const char *env[] = {"SHF_UID_MEM_MAX=300M", "SHF_MEM_MAX=400M", NULL};
	CHECK(td_start(e->d, NULL, env) == 0);
	pid_t dpid = e->d->pid;

	/* 1. huge worlds: the directory follows the ranks that came */
	enum { NWORLD = 8 };
	const char *waiter[] = {"open", "expect=ETIMEDOUT", "timeout=60000", "ring=131072", NULL};
	long rss0 = td_rss_kib(dpid);
	pid_t huge[NWORLD];
	char job[32];
	for (int i = 0; i < NWORLD && !rings_only; i++) {
		snprintf(job, sizeof(job), "huge%d", i);
		huge[i] = spawn_as(65534, job, (1 << 24) - 1, 1 << 24, waiter);
	}
	for (int i = 0; i < NWORLD && !rings_only; i++) {
		snprintf(job, sizeof(job), "huge%d", i);
		wait_registered(e, job, (1 << 24) - 1);
	}
	long rss1 = td_rss_kib(dpid);
	if (!rings_only)
		fprintf(stderr, "%s: %d ranks of worlds of 2^24 (uid 65534): daemon VmRSS %ld -> "
			"%ld KiB (+%ld KiB)\n", e->name, NWORLD, rss0, rss1, rss1 - rss0);
	CHECKF(rss1 - rss0 < 32 * 1024, "daemon VmRSS grew by %ld KiB for %d registrations of "
	       "worlds of 2^24; bound 32768 KiB", rss1 - rss0, NWORLD);
	for (int i = 0; i < NWORLD && !rings_only; i++) {
		kill(huge[i], SIGKILL);
		td_wait(huge[i], 5000);
	}

	/* 2. big rings: uid 65534's budget */
	const char *big_ok[] = {"open", "expect=ETIMEDOUT", "timeout=60000", "ring=67108864", NULL};
	const char *big_dq[] = {"open", "expect=EDQUOT", "detail=uid_mem_max", "timeout=10000",
				"ring=67108864", NULL};
	const char *big_nm[] = {"open", "expect=ENOMEM", "detail=mem_max", "timeout=10000",
				"ring=67108864", NULL};
	pid_t held[4];
	held[0] = spawn_as(65534, "big", 0, 8, big_ok);
	wait_registered(e, "big", 0);
	held[1] = spawn_as(65534, "big", 1, 8, big_ok);
	wait_registered(e, "big", 1);
	CHECKF(td_wait(spawn_as(65534, "big", 2, 8, big_dq), 15000) == 0,
	       "uid 65534's third 128 MiB region: not refused with EDQUOT naming uid_mem_max");
	/* a world of 2^24 still fits: its directory is small */
	const char *wide_dq[] = {"open", "expect=EDQUOT", "detail=uid_mem_max", "timeout=10000",
				 "ring=67108864", NULL};
	CHECKF(td_wait(spawn_as(65534, "wide", 5, 1 << 24, wide_dq), 15000) == 0,
	       "uid 65534 over its budget with a world of 2^24: not EDQUOT");
	long long rb = region_bytes(dpid);
	fprintf(stderr, "%s: uid 65534 holds 2 regions: %lld MiB mapped\n", e->name, rb / MiB);
	CHECKF(rb <= 300 * MiB, "regions mapped: %lld bytes, over uid_mem_max", rb);

	/* 3. the total: uid 65533 */
	held[2] = spawn_as(65533, "other", 0, 4, big_ok);
	wait_registered(e, "other", 0);
	CHECKF(td_wait(spawn_as(65533, "other", 1, 4, big_nm), 15000) == 0,
	       "uid 65533's second 128 MiB region (total over 400 MiB): not refused with ENOMEM "
	       "naming mem_max");
	rb = region_bytes(dpid);
	CHECKF(rb <= 400 * MiB, "regions mapped: %lld bytes, over mem_max", rb);

	/* 4. another user with a default ring is still served; root is exempt */
	const char *small[] = {"traffic", "n=200", NULL};
	CHECKF(td_wait(spawn_as(65532, "small", 0, 1, small), 30000) == 0,
	       "uid 65532 could not run a small job next to the others' refusals");
	held[3] = spawn_as(0, "rootbig", 0, 2, big_ok);
	wait_registered(e, "rootbig", 0);
	rb = region_bytes(dpid);
	fprintf(stderr, "%s: with root's 128 MiB region: %lld MiB mapped\n", e->name, rb / MiB);
	CHECKF(rb <= 400 * MiB + 130 * MiB, "regions mapped: %lld bytes", rb);

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	long long refused = td_num(st, "daemon.mem_refused");
	long long held_bytes = td_num(st, "daemon.mem_bytes");
	fprintf(stderr, "%s: mem_refused %lld, mem_bytes %lld MiB\n", e->name, refused,
		held_bytes / MiB);
	CHECKF(refused == 3, "daemon.mem_refused %lld, expected 3", refused);
	CHECKF(held_bytes >= 4 * 128 * MiB && held_bytes < 4 * 130 * MiB,
	       "daemon.mem_bytes %lld: 4 regions of 128 MiB held", held_bytes);
	json_decref(st);
	for (int i = 0; i < 4; i++) {
		kill(held[i], SIGKILL);
		td_wait(held[i], 5000);
	}
	/* everything given back */
	long long mb = -1;
	for (int64_t end = td_now_ms() + 10000; mb != 0 && td_now_ms() < end; td_sleep_ms(20))
		mb = td_stat(e->d, "daemon.mem_bytes");
	CHECKF(mb == 0, "daemon.mem_bytes %lld after every client left", mb);
	td_stop(e->d);
	return 0;
}
