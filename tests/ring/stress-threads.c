/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/stress-threads.c - the ring stress test with two threads
 * standing in for the two processes, so that ThreadSanitizer (suite 'tsan',
 * built with -Db_sanitize=thread) sees both sides of every access: a
 * missing acquire/release edge shows up as a data race on the payload.
 * The loops are the ones of stress.c (stress.h).  Both threads use the
 * same mapping of the memfd region: ThreadSanitizer tracks memory by
 * address, so two mappings of the same bytes would hide every race.
 *
 * Usage: ring-stress-threads [records]   (or SHF_RING_STRESS_RECORDS)
 */
#include <pthread.h>

#include "tests/ring/stress.h"

static struct stress_shared shared;

static void *producer_main(void *arg)
{
	struct stress_side *s = arg;
	return (void *)(intptr_t)stress_produce(s);
}

int main(int argc, char **argv)
{
	uint64_t n = t_count_arg(argc, argv, 1, "SHF_RING_STRESS_RECORDS", 200000);
	struct t_region reg;
	t_region_open(&reg, STRESS_RING_BYTES, shf_ring_max_payload(STRESS_RING_BYTES));
	int prod_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int cons_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(prod_bell >= 0 && cons_bell >= 0);

	struct shf_ring cons, prod;
	CHECK(shf_shm_ring(reg.base, &reg.l, SHF_SHM_SEND, &cons, true) == 0);
	shf_ring_init_consumer(&cons);

	/* the producer validates the region on its own, as a client would */
	struct shf_shm_layout pl;
	CHECK(shf_shm_check(reg.base, reg.l.region_bytes, &pl) == 0);
	CHECK(shf_shm_ring(reg.base, &pl, SHF_SHM_SEND, &prod, false) == 0);
	shf_ring_init_producer(&prod);

	struct stress_side ps = {
		.name = "producer", .r = &prod, .my_bell = prod_bell, .peer_bell = cons_bell,
		.peer_gone = -1, .sh = &shared, .records = n, .rng = 0x9e3779b97f4a7c15ull,
	};
	struct stress_side cs = {
		.name = "consumer", .r = &cons, .my_bell = cons_bell, .peer_bell = prod_bell,
		.peer_gone = -1, .sh = &shared, .records = n, .rng = 0x2545f4914f6cdd1dull,
	};
	double t0 = t_now();
	pthread_t th;
	CHECK(pthread_create(&th, NULL, producer_main, &ps) == 0);
	int crc = stress_consume(&cs);
	void *ret;
	CHECK(pthread_join(th, &ret) == 0);
	int prc = (int)(intptr_t)ret;
	printf("%" PRIu64 " records in %.2f s; producer slept %" PRIu64 " rang %" PRIu64
	       "; consumer slept %" PRIu64 " rang %" PRIu64 " unpeeked %" PRIu64 "\n",
	       atomic_load(&shared.consumed), t_now() - t0, ps.sleeps, ps.bells, cs.sleeps,
	       cs.bells, cs.unpeeks);
	CHECKF(crc == 0 && prc == 0, "consumer %d producer %d", crc, prc);
	CHECK(atomic_load(&shared.consumed) == n && atomic_load(&shared.produced) == n);
	CHECKF(ps.sleeps > 0 && cs.sleeps > 0,
	       "a side never slept: the doorbell path was not exercised");
	CHECK(cons.err == 0 && prod.err == 0);

	close(prod_bell);
	close(cons_bell);
	t_region_close(&reg);
	return 0;
}
