/* SPDX-License-Identifier: MIT */
/*
 * tests/node/wake-idle.c - a client that was just fed sleeps when idle, and
 * a record after a silence still wakes it (docs/ring.md §4).  Two ranks on
 * one node, thread mode:
 *   1. rank 0 streams STREAM records of 16 B to rank 1, then both enter
 *      shf_epoch(): rank 1 as soon as it holds them all, rank 0 after
 *      IDLE_MS.
 *   2. rank 1 holds every record once, in order, when its epoch returns,
 *      and its process used less than CPU_BOUND_MS of CPU while it waited
 *      (an idle client polls nothing: a delivery thread that kept watching
 *      its ring after the stream would burn the wait away);
 *   3. after a silence, rank 0 sends LONE single records one at a time,
 *      each after a gap: each arrives (the thread slept, the bell woke it).
 * A behaviour check with a generous bound, never a speed figure.
 *
 *   node-wake-idle            the driver (starts a daemon, runs 2 ranks)
 *   node-wake-idle client     one rank (SHF_RANK, SHF_WORLD, SHF_JOB)
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/lib/daemon.h"
#include "tests/lib/tclient.h"

#define STREAM 200000u
#define LONE 20u
#define IDLE_MS 1000
#define CPU_BOUND_MS 20

static int g_rank, g_world;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t got, bad;

static void on_deliver(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg;
	(void)dst;
	uint64_t seq;
	pthread_mutex_lock(&mu);
	if (src != 0 || len != 16) {
		bad++;
	} else {
		memcpy(&seq, data, sizeof(seq));
		if (seq != got || type != (seq < STREAM ? 1u : 2u))
			bad++;
		got++;
	}
	pthread_mutex_unlock(&mu);
}

static uint64_t got_now(void)
{
	pthread_mutex_lock(&mu);
	uint64_t n = got;
	pthread_mutex_unlock(&mu);
	return n;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void send_seq(struct shf_ctx *c, uint64_t seq)
{
	uint8_t b[16] = {0};
	memcpy(b, &seq, sizeof(seq));
	int r = shf_send(c, 1, seq < STREAM ? 1 : 2, b, sizeof(b), 0);
	if (r != 0)
		tc_fail("send #%llu: %s", (unsigned long long)seq, shf_strerror(r));
}

static int client(void)
{
	tc_setup("wake-idle", &g_rank);
	struct shf_opts o;
	shf_opts_init(&o);
	o.delivery_thread = 1;
	o.timeout_ms = 30000;
	struct shf_ctx *c = tc_open(&o, on_deliver, NULL, &g_rank, &g_world, 2);
	if (g_world != 2)
		tc_fail("needs world 2");
	int r;
	if (g_rank == 0) {
		for (uint64_t i = 0; i < STREAM; i++)
			send_seq(c, i);
		tc_sleep_ms(IDLE_MS);
		if ((r = shf_epoch(c, -1)) != 0)
			tc_fail("epoch: %s", shf_strerror(r));
		tc_sleep_ms(200);
		for (uint64_t i = 0; i < LONE; i++) {
			send_seq(c, STREAM + i);
			tc_sleep_ms(20);
		}
		tc_sync_wait(30000, "lone-done");
	} else {
		/* the whole stream (rank 0 then waits IDLE_MS before its epoch) */
		int64_t end = tc_now_ms() + 30000;
		while (got_now() < STREAM && tc_now_ms() < end)
			tc_sleep_ms(1);
		uint64_t t0 = tc_now_ns(), c0 = cpu_ns();
		if ((r = shf_epoch(c, -1)) != 0)
			tc_fail("epoch: %s", shf_strerror(r));
		uint64_t wall = tc_now_ns() - t0, cpu = cpu_ns() - c0;
		fprintf(stderr, "wake-idle: %.3f ms of CPU while waiting %.0f ms in shf_epoch\n",
			(double)cpu / 1e6, (double)wall / 1e6);
		if (got_now() != STREAM || bad)
			tc_fail("after the epoch: %llu of %u records, %llu bad",
				(unsigned long long)got_now(), STREAM, (unsigned long long)bad);
		if (wall < (uint64_t)IDLE_MS / 2 * 1000000u)
			tc_fail("the epoch returned after %.0f ms: rank 0 waits %d ms first",
				(double)wall / 1e6, IDLE_MS);
		if (cpu >= (uint64_t)CPU_BOUND_MS * 1000000u)
			tc_fail("%.3f ms of CPU while idle in shf_epoch for %.0f ms (bound %d ms)",
				(double)cpu / 1e6, (double)wall / 1e6, CPU_BOUND_MS);
		/* lone records after a silence: each arrives */
		end = tc_now_ms() + 30000;
		while (got_now() < STREAM + LONE && tc_now_ms() < end)
			tc_sleep_ms(1);
		if (got_now() != STREAM + LONE || bad)
			tc_fail("lone records: %llu of %u, %llu bad",
				(unsigned long long)(got_now() - STREAM), LONE,
				(unsigned long long)bad);
		tc_sync_post("lone-done");
	}
	if ((r = shf_close(c)) != 0)
		tc_fail("close: %s", shf_strerror(r));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "client"))
		return client();
	struct td_env *e = td_init("wake-idle", 120, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *a[] = {argv[0], "client", NULL};
	char sync[TD_PATH_MAX + 16];
	td_fmt(sync, sizeof(sync), "SHF_TEST_SYNC=%s", e->sync);
	pid_t pids[2];
	for (int r = 0; r < 2; r++) {
		char rank[16];
		snprintf(rank, sizeof(rank), "SHF_RANK=%d", r);
		const char *env[] = {"SHF_JOB=wake", rank, "SHF_WORLD=2", sync, NULL};
		pids[r] = td_spawn(a, env, NULL, NULL);
	}
	CHECKF(td_wait_all(pids, 2, 90000, "client") == 0, "wake-idle clients");
	return 0;
}
