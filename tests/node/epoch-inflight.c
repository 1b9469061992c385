/* SPDX-License-Identifier: MIT */
/*
 * tests/node/epoch-inflight.c - epochs close rounds of traffic that is
 * still in flight.
 *
 *   epoch-inflight thread|poll
 *
 * Each rank sends a round of messages and enters shf_epoch() at once, with
 * no flush, while some ranks' callbacks are slow.  When shf_epoch()
 * returns, every rank must have received exactly what each other rank
 * sent it in that round (counts recomputed from the deterministic
 * pattern), and no message of a closed round may show up later
 * (tclient.c).  Eight rounds with the state carried over between them.
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

int main(int argc, char **argv)
{
	bool poll = argc > 1 && !strcmp(argv[1], "poll");
	struct td_env *e = td_init(poll ? "epoch-inflight-poll" : "epoch-inflight-thread",
				   100, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	enum { WORLD = 6, ROUNDS = 8, MSGS = 1500 };
	const char *fast[] = {"traffic", "n=1500", "rounds=8", "flush=0", "seed=11",
			      "big=40000", poll ? "poll=1" : "poll=0", NULL};
	const char *slow[] = {"traffic", "n=1500", "rounds=8", "flush=0", "seed=11",
			      "big=40000", poll ? "poll=1" : "poll=0", "slow_us=300",
			      "slow_every=40", NULL};
	pid_t pids[WORLD];
	for (int r = 0; r < WORLD; r++)
		pids[r] = td_spawn_client("ep", r, WORLD, r % 3 == 1 ? slow : fast, NULL);
	CHECKF(td_wait_all(pids, WORLD, 90000, "rank") == 0, "a rank failed (see above)");
	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	CHECK(td_num(st, "clients_total.msgs_out") == (long long)WORLD * ROUNDS * MSGS);
	CHECKF(td_num(st, "daemon.epochs") == ROUNDS, "daemon.epochs %lld",
	       td_num(st, "daemon.epochs"));
	json_decref(st);
	td_stop(e->d);
	return 0;
}
