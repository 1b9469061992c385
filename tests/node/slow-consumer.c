/* SPDX-License-Identifier: MIT */
/*
 * tests/node/slow-consumer.c - backpressure from a slow callback.
 *
 * Rank 0's callback sleeps; ranks 1-3 push 3 x 8000 x 4 KiB (96 MiB) at it
 * through 128 KiB rings.  Required: the senders are throttled (each saw
 * shf_send wait for ring space: tclient check_blocked=1), the daemon
 * reports full delivery rings, every message arrives exactly once and in
 * order, and the daemon's resident memory stays below a fixed bound far
 * under what was pushed: no queue in the daemon grows with the backlog.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/daemon.h"

#define WORLD 4
#define MSGS 8000LL
#define LEN 4096LL
#define RSS_BOUND_KIB (64 * 1024L)

int main(void)
{
	struct td_env *e = td_init("slow-consumer", 110, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	long rss0 = td_rss_kib(e->d->pid);
	CHECK(rss0 > 0);

	const char *consumer[] = {"traffic", "srcs=1-3", "dsts=0", "n=8000", "minlen=4096",
				  "maxlen=4096", "ring=131072", "slow_us=2000", "slow_every=64",
				  NULL};
	const char *sender[] = {"traffic", "srcs=1-3", "dsts=0", "n=8000", "minlen=4096",
				"maxlen=4096", "ring=131072", "check_blocked=1", NULL};
	pid_t pids[WORLD];
	for (int r = 0; r < WORLD; r++)
		pids[r] = td_spawn_client("slow", r, WORLD, r ? sender : consumer, NULL);

	/* sample the daemon's RSS while the clients run */
	long rss_max = rss0;
	int64_t end = td_now_ms() + 100000;
	int running = WORLD, bad = 0;
	while (running && td_now_ms() < end) {
		long rss = td_rss_kib(e->d->pid);
		if (rss > rss_max)
			rss_max = rss;
		for (int r = 0; r < WORLD; r++) {
			if (!pids[r])
				continue;
			int st = td_poll_exit(pids[r]);
			if (st == TD_RUNNING)
				continue;
			if (st != 0) {
				fprintf(stderr, "slow-consumer: rank %d exited with %d\n", r, st);
				bad++;
			}
			pids[r] = 0;
			running--;
		}
		td_sleep_ms(10);
	}
	CHECKF(running == 0, "%d ranks still running after 100 s", running);
	CHECKF(bad == 0, "%d ranks failed", bad);

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	long long total = (WORLD - 1) * MSGS;
	long long bytes = td_num(st, "clients_total.bytes_out");
	CHECKF(td_num(st, "clients_total.msgs_in") == total, "msgs_in %lld, expected %lld",
	       td_num(st, "clients_total.msgs_in"), total);
	CHECKF(td_num(st, "clients_total.msgs_out") == total, "msgs_out %lld, expected %lld",
	       td_num(st, "clients_total.msgs_out"), total);
	CHECKF(bytes == total * LEN, "bytes_out %lld, expected %lld", bytes, total * LEN);
	CHECKF(td_num(st, "clients_total.ring_full_stalls") > 0,
	       "the daemon never found the slow consumer's ring full");
	json_decref(st);
	fprintf(stderr, "slow-consumer: %lld MiB pushed; daemon RSS %ld KiB at start, %ld KiB max "
		"(bound %ld KiB)\n", bytes >> 20, rss0, rss_max, RSS_BOUND_KIB);
	CHECKF(bytes / 1024 > RSS_BOUND_KIB, "the test pushed less than the bound");
	CHECKF(rss_max < RSS_BOUND_KIB, "daemon RSS reached %ld KiB (bound %ld KiB)", rss_max,
	       RSS_BOUND_KIB);
	td_stop(e->d);
	return 0;
}
