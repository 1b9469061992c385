/* SPDX-License-Identifier: MIT */
/*
 * tests/node/mem-idle.c - idle registrations cost what they use (issue 24,
 * item 5).
 *
 * A root daemon with its default budgets (derived from the node's memory).
 * uid 65534 opens four connections, each registering rank 0 of a fresh job
 * of world 2^24 with 256 MiB rings, and waits for a world that never
 * completes.  Each registration is either taken (listed by the daemon) or
 * refused by the default budget with -EDQUOT naming uid_mem_max (checked
 * by a second client in the same conditions).  The shared memory the
 * daemon's client regions commit (the blocks of its memfds, which count in
 * the system's Shmem) must stay below 64 MiB in all: ring pages are
 * committed when first written, never at registration.  The system's
 * Shmem growth is printed too (other processes move it: not asserted).
 * Skipped unless run as root with setpriv(1).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define SETPRIV TD_SETPRIV
#define MiB (1024LL * 1024)
#define N 4

/* Bytes the daemon's client regions commit: st_blocks of each memfd
 * "shuffle:*" it maps (stat follows /proc/PID/map_files/RANGE to the memfd;
 * the daemon passes the fd on and keeps only its mapping), each once. */
static long long committed(pid_t pid, int *regions)
{
	char dir[64], link[600], target[512];
	snprintf(dir, sizeof(dir), "/proc/%d/map_files", (int)pid);
	ino_t seen[64];
	int nseen = 0;
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	long long sum = 0;
	*regions = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		struct stat st;
		if (!strstr(target, "memfd:shuffle:") || stat(link, &st) != 0)
			continue;
		bool dup = false;
		for (int i = 0; i < nseen; i++)
			dup = dup || seen[i] == st.st_ino;
		if (dup || nseen == 64)
			continue;
		seen[nseen++] = st.st_ino;
		sum += (long long)st.st_blocks * 512;
		(*regions)++;
	}
	closedir(d);
	return sum;
}

static long long shmem_kib(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Shmem: %lld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* Registered (listed by the daemon), or exited: which, within 15 s. */
static bool registered_or_gone(struct td_env *e, const char *job, pid_t pid, int *status)
{
	for (int64_t end = td_now_ms() + 15000; td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		bool reg = td_client_find(cl, job, 0) != NULL;
		json_decref(cl);
		if (reg)
			return true;
		int st = td_poll_exit(pid);
		if (st != TD_RUNNING) {
			*status = st;
			return false;
		}
	}
	CHECKF(false, "rank 0 of job %s neither registered nor exited in 15 s", job);
	return false;
}

int main(void)
{
	struct td_env *e = td_init("mem-idle", 100, TD_SOCKET_ENV);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon and setpriv to another uid)");
	if (access(SETPRIV, X_OK) != 0)
		SKIP("%s not found", SETPRIV);
	CHECK(chmod(e->dir, 0755) == 0);
	CHECK(chmod(e->sync, 01777) == 0);
	const char *usage_only[] = {NULL};
	int r = td_wait(td_spawn_client_as(65534, "x", 0, 1, usage_only, NULL), 10000);
	if (r != 2)
		SKIP("the test client cannot run as uid 65534 (status %d): is the build "
		     "directory readable by everyone?", r);
	CHECK(td_start(e->d, NULL, NULL) == 0); /* default budgets */
	pid_t dpid = e->d->pid;

	const char *idle[] = {"open", "expect=ETIMEDOUT", "timeout=60000", "ring=268435456", NULL};
	const char *dq[] = {"open", "expect=EDQUOT", "detail=uid_mem_max", "timeout=10000",
			    "ring=268435456", NULL};
	long long shm0 = shmem_kib();
	pid_t held[N];
	int taken = 0, refused = 0;
	char job[32];
	for (int i = 0; i < N; i++) {
		snprintf(job, sizeof(job), "idle%d", i);
		held[i] = td_spawn_client_as(65534, job, 0, 1 << 24, idle, NULL);
		int st = 0;
		if (registered_or_gone(e, job, held[i], &st)) {
			taken++;
			continue;
		}
		held[i] = -1;
		/* gone: it must be the default budget refusing it */
		snprintf(job, sizeof(job), "idle%db", i);
		CHECKF(td_wait(td_spawn_client_as(65534, job, 0, 1 << 24, dq, NULL), 15000) == 0,
		       "registration %d of 256 MiB rings exited (status %d) but is not refused "
		       "with EDQUOT naming uid_mem_max", i, st);
		refused++;
	}
	int regions = 0;
	long long c = committed(dpid, &regions);
	long long shm1 = shmem_kib();
	fprintf(stderr, "%s: %d idle registrations of 256 MiB rings (uid 65534): %d taken, %d "
		"refused (EDQUOT); %d regions commit %lld KiB; system Shmem %lld -> %lld KiB "
		"(%+lld KiB, other processes included)\n", e->name, N, taken, refused, regions,
		c / 1024, shm0, shm1, shm1 - shm0);
	CHECKF(regions == taken, "the daemon holds %d regions, %d registrations taken", regions,
	       taken);
	CHECKF(c < 64 * MiB, "%d idle registrations commit %lld MiB of shared memory; bound 64 MiB",
	       taken, c / MiB);
	for (int i = 0; i < N; i++) {
		if (held[i] > 0) {
			kill(held[i], SIGKILL);
			td_wait(held[i], 5000);
		}
	}
	td_stop(e->d);
	return 0;
}
