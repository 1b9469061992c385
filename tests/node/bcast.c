/* SPDX-License-Identifier: MIT */
/*
 * tests/node/bcast.c - shf_bcast() and shf_node_info() on one node with
 * no network (rendezvous none): ARGV[1] ranks (default 4) each mix
 * broadcasts, with and without SHF_BCAST_SELF, and sends to every other
 * rank; every rank must get every message meant for it exactly once, per
 * source in issue order, and shf_node_info() must say node 0 of 1 with
 * every rank local (bc-client.c mode exact).  Then the daemon's counters:
 * every broadcast taken, none sent on a wire, each delivered to the world
 * minus the sender (plus the sender for the SELF third).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/lib/daemon.h"

int main(int argc, char **argv)
{
	int W = argc > 1 ? atoi(argv[1]) : 4;
	const int OPS = 300;
	CHECKF(W >= 2 && W <= 16, "world %d", W);
	struct td_env *e = td_init("bcast", 100, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	char pn[32], ops[32];
	td_fmt(pn, sizeof(pn), "per_node=%d", W);
	td_fmt(ops, sizeof(ops), "ops=%d", OPS);
	pid_t pids[16];
	for (int r = 0; r < W; r++) {
		char er[32], ew[32];
		td_fmt(er, sizeof(er), "SHF_RANK=%d", r);
		td_fmt(ew, sizeof(ew), "SHF_WORLD=%d", W);
		/* ARGV[2..]: more bc-client arguments (many=1, batchcb=1, poll=1) */
		const char *args[10] = {td_prog("SHF_TEST_BCCLIENT"), "exact", pn, ops, "size=100",
					"timeout=60000", NULL};
		for (int a = 2, k = 6; a < argc && k < 9; a++, k++)
			args[k] = argv[a];
		const char *env[] = {"SHF_JOB=bc1", er, ew, NULL};
		pids[r] = td_spawn(args, env, NULL, NULL);
	}
	for (int r = 0; r < W; r++) {
		char name[32];
		td_fmt(name, sizeof(name), "held.%d", r);
		if (!td_sync_wait(e->sync, name, 80000)) {
			td_sync_post(e->sync, "release");
			CHECKF(0, "rank %d never finished its checks", r);
		}
	}
	td_sync_post(e->sync, "release");
	CHECKF(td_wait_all(pids, W, 30000, "rank") == 0, "a rank failed (see above)");
	long long B = OPS - (OPS + 1) / 3; /* broadcasts per rank: k % 3 != 1 */
	long long in = td_stat(e->d, "daemon.bcast_in");
	long long copies = td_stat(e->d, "daemon.bcast_wire_copies");
	long long del = td_stat(e->d, "daemon.bcast_deliveries");
	long long want = (long long)W * ((W - 1) * B + OPS / 3);
	printf("bcast: %d ranks: bcast_in %lld, wire copies %lld, deliveries %lld\n", W, in,
	       copies, del);
	CHECKF(in == W * B, "bcast_in %lld, expected %lld", in, W * B);
	CHECKF(copies == 0, "%lld wire copies on one node", copies);
	CHECKF(del == want, "bcast_deliveries %lld, expected %lld", del, want);
	CHECKF(td_stat(e->d, "clients_total.drops_dead") == 0, "drops");
	td_stop(e->d);
	return 0;
}
