/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/epoch-who.c - an epoch that times out names the ranks that
 * have not entered it (docs/api.md, shf_epoch), against one daemon with a
 * job of 4 ctl-steer ranks:
 *   - ranks 0 and 2 enter an epoch with a 400 ms timeout, ranks 1 and 3
 *     do not: each gets -ETIMEDOUT, and its detail says "ranks 1,3 (on
 *     this node) have not entered it";
 *   - then all four enter: the epoch the timed-out ranks resume completes
 *     (0 everywhere), so asking did not disturb it;
 *   - the same with 11 ranks of which only rank 0 enters: the list stops
 *     after 8 and gives the count ("1,...,8,... (10 in all)").
 * A failed epoch names the culprit of its failure, not of later: ranks 0,
 * 1, 3 wait in phase 2 while rank 2's callback holds it in the delivery
 * stage; rank 3 is killed (the epoch fails: -ESRCH naming rank 3), then
 * rank 1 closes after its own failed epoch; rank 2, released, gets -ESRCH
 * naming rank 3 alone.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "tests/ctl/steer.h"

int main(void)
{
	struct td_env *e = td_init("epoch-who", 60, 0);
	struct td_daemon *d = e->d;
	if (!getenv("SHF_TEST_CTL_STEER") || !*getenv("SHF_TEST_CTL_STEER"))
		SKIP("no ctl-steer client (client library not built)");
	CHECK(td_start(d, NULL, NULL) == 0);

	struct steer s;
	char detail[512];
	steer_start(&s, e, d->sock, "who4", 4, -1, "tttt");
	steer_ask(&s, 0, "epoch 400");
	steer_ask(&s, 2, "epoch 400");
	for (int r = 0; r <= 2; r += 2) {
		int st = steer_result(&s, r, NULL, detail, sizeof(detail));
		CHECKF(st == -ETIMEDOUT, "rank %d: epoch with ranks 1 and 3 absent gave %d (%s)", r,
		       st, detail);
		CHECKF(strstr(detail, "ranks 1,3 (on this node) have not entered it"),
		       "rank %d: the timeout does not name ranks 1 and 3: '%s'", r, detail);
	}
	for (int r = 0; r < 4; r++)
		steer_ask(&s, r, "epoch");
	for (int r = 0; r < 4; r++) {
		int st = steer_result(&s, r, NULL, detail, sizeof(detail));
		CHECKF(st == 0, "rank %d: the resumed epoch gave %d (%s)", r, st, detail);
	}
	for (int r = 0; r < 4; r++) {
		CHECK(steer_cmd(&s, r, "close", NULL, NULL, 0) == 0);
		CHECK(steer_wait(&s, r) == 0);
	}

	/* more late ranks than the list shows */
	struct steer b;
	int n = 11;
	char modes[STEER_MAX + 1];
	memset(modes, 't', (size_t)n);
	modes[n] = '\0';
	steer_start(&b, e, d->sock, "whomany", n, -1, modes);
	int st = steer_cmd(&b, 0, "epoch 300", NULL, detail, sizeof(detail));
	char want[128];
	td_fmt(want, sizeof(want), "ranks 1,2,3,4,5,6,7,8,... (10 in all) (on this node) have not entered it");
	CHECKF(st == -ETIMEDOUT && strstr(detail, want), "%d ranks, only rank 0 in: %d '%s'", n, st,
	       detail);
	for (int r = 0; r < n; r++)
		steer_ask(&b, r, "close");
	for (int r = 0; r < n; r++) {
		steer_result(&b, r, NULL, NULL, 0);
		CHECK(steer_wait(&b, r) == 0);
	}

	/* the culprit of the failure, not a rank that left after it */
	struct steer f;
	steer_start(&f, e, d->sock, "cul", 4, -1, "tttt");
	CHECK(steer_cmd(&f, 2, "hold", NULL, NULL, 0) == 0);
	CHECK(steer_cmd(&f, 0, "send 2 1 8", NULL, NULL, 0) == 0);
	for (int r = 0; r < 4; r++)
		steer_ask(&f, r, "epoch");
	bool held = false;
	for (int64_t end = td_now_ms() + 10000; !held && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *doc = td_query(d, "clients");
		int in = 0;
		for (int r = 0; r < 4; r++) {
			const char *es = json_string_value(
				json_object_get(td_client_find(doc, "cul", r), "epoch"));
			in += es && !strcmp(es, r == 2 ? "deliver" : "phase2");
		}
		json_decref(doc);
		held = in == 4;
	}
	CHECKF(held, "ranks 0, 1, 3 not in phase 2 with rank 2 delivering within 10 s");
	kill(f.pid[3], SIGKILL);
	steer_wait(&f, 3);
	for (int r = 0; r < 2; r++) {
		int sr = steer_result(&f, r, NULL, detail, sizeof(detail));
		CHECKF(sr == -ESRCH && strstr(detail, "rank 3 of job cul left"),
		       "rank %d: epoch with rank 3 killed: %d '%s'", r, sr, detail);
	}
	CHECK(steer_cmd(&f, 1, "close", NULL, NULL, 0) == 0);
	CHECK(steer_wait(&f, 1) == 0);
	char rel[TD_PATH_MAX + 16];
	td_fmt(rel, sizeof(rel), "%s/2.release", f.dir);
	td_write_file(rel, "");
	int st2 = steer_result(&f, 2, NULL, detail, sizeof(detail));
	CHECKF(st2 == -ESRCH && strstr(detail, "rank 3 of job cul left"),
	       "rank 2, released after rank 1 closed: %d '%s' (the failure's culprit is rank 3 "
	       "alone)", st2, detail);
	CHECK(steer_cmd(&f, 0, "close", NULL, NULL, 0) == 0);
	CHECK(steer_cmd(&f, 2, "close", NULL, NULL, 0) == 0);
	td_stop(d);
	return 0;
}
