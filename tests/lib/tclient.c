/* SPDX-License-Identifier: MIT */
/* tests/lib/tclient.c - what the test clients share (see tclient.h). */
#include "tclient.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	const char *who;
	const int *rank;
	const char *sync;
} tc = {.who = "tclient", .sync = "."};

void tc_setup(const char *who, const int *rank)
{
	tc.who = who;
	tc.rank = rank;
	const char *s = getenv("SHF_TEST_SYNC");
	if (s && *s)
		tc.sync = s;
}

void tc_fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s rank %d: FAIL: ", tc.who, tc.rank ? *tc.rank : -1);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

int64_t tc_now_ms(void)
{
	return (int64_t)(tc_now_ns() / 1000000u);
}

uint64_t tc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tc_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void vname(char *name, size_t n, const char *fmt, va_list ap)
{
	int w = vsnprintf(name, n, fmt, ap);
	if (w < 0 || (size_t)w >= n)
		tc_fail("sync point name too long: %s", fmt);
}

void tc_sync_post(const char *fmt, ...)
{
	char name[128], path[4096], tmp[4200];
	va_list ap;
	va_start(ap, fmt);
	vname(name, sizeof(name), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", tc.sync, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d", tc.sync, name, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f || fclose(f) != 0 || rename(tmp, path) != 0)
		tc_fail("cannot post sync point %s: %s", path, strerror(errno));
}

bool tc_sync_exists(const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", tc.sync, name);
	return access(path, F_OK) == 0;
}

void tc_sync_wait(int timeout_ms, const char *fmt, ...)
{
	char name[128];
	va_list ap;
	va_start(ap, fmt);
	vname(name, sizeof(name), fmt, ap);
	va_end(ap);
	int64_t end = tc_now_ms() + timeout_ms;
	while (!tc_sync_exists(name)) {
		if (tc_now_ms() > end)
			tc_fail("sync point %s never came (%d ms)", name, timeout_ms);
		tc_sleep_ms(5);
	}
}

struct shf_ctx *tc_open(const struct shf_opts *o, shf_deliver_fn cb, void *arg, int *rank,
			int *world, int max_world)
{
	const char *er = getenv("SHF_RANK"), *ew = getenv("SHF_WORLD");
	if (er && ew) {
		*rank = atoi(er);
		*world = atoi(ew);
	}
	struct shf_ctx *c = NULL;
	int r = shf_open(o, cb, arg, &c);
	if (r != 0 || !c)
		tc_fail("shf_open: %s (%s)", shf_strerror(r), shf_error_detail());
	if (*rank != shf_rank(c) || *world != shf_world(c)) {
		if (o->delivery_thread && er && ew)
			tc_fail("SHF_RANK/SHF_WORLD %s/%s, but the library says rank %d of %d", er,
				ew, shf_rank(c), shf_world(c));
		*rank = shf_rank(c);
		*world = shf_world(c);
	}
	if (*world < 1 || *world > max_world)
		tc_fail("world %d outside the test's range 1..%d", *world, max_world);
	return c;
}
