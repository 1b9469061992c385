/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-control.c - runtime control as root: log-level, cutoff,
 * drain (the refusals of other uids: ctl-control-uid).
 *
 *   - log-level debug: `config` shows it, source "runtime (shufflectl)",
 *     the log says who set it; a bad level is refused and changes nothing;
 *     --all on this daemon alone: its one row acts (log-level), or says
 *     "not here" (drain of no job, exit 1);
 *   - cutoff JOB RANK: that rank's next call fails with -ENOTCONN and a
 *     detail naming shufflectl; its partner's records to it are dropped
 *     and reported by its next flush (-ESRCH); the daemon goes on; a rank
 *     without a session, a job that does not exist: exit 1;
 *   - drain JOB: both ranks of the job get -ECANCELED ("drained by uid
 *     0") on their next call; another job on the same daemon then
 *     exchanges 2 x COUNT messages and completes an epoch, each rank
 *     receiving exactly COUNT; counters ctl_cutoffs / ctl_drained.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ctl/steer.h"

#define COUNT 500

int main(void)
{
	struct td_env *e = td_init("ctl-control", 120, 0);
	td_prog("SHF_TEST_SHUFFLECTL");
	td_prog("SHF_TEST_CTL_STEER");
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);
	struct td_out o;
	char detail[600];

	/* log-level */
	td_ctl(d->sock, &o, "log-level", "debug", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "log level debug (was info)"), "log-level: %d: %s%s",
	       o.status, o.out, o.err);
	td_out_free(&o);
	json_t *cfg = td_ctl_json(d->sock, "config");
	json_t *ll = json_object_get(json_object_get(cfg, "config"), "log_level");
	CHECKF(!strcmp(json_string_value(json_object_get(ll, "value")), "debug"), "log_level %s",
	       json_string_value(json_object_get(ll, "value")));
	CHECK(!strcmp(json_string_value(json_object_get(ll, "source")), "runtime (shufflectl)"));
	json_decref(cfg);
	CHECK(td_log_contains(d, "log level debug (was info), set by uid 0"));
	td_ctl(d->sock, &o, "log-level", "loud", NULL);
	CHECKF(o.status == 1 && strstr(o.err, "bad level 'loud'"), "log-level loud: %d: %s",
	       o.status, o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "log-level", NULL);
	CHECKF(o.status == 2, "log-level without a level: exit %d", o.status);
	td_out_free(&o);
	cfg = td_ctl_json(d->sock, "config");
	ll = json_object_get(json_object_get(cfg, "config"), "log_level");
	CHECK(!strcmp(json_string_value(json_object_get(ll, "value")), "debug"));
	json_decref(cfg);
	td_ctl(d->sock, &o, "log-level", "info", NULL);
	CHECK(o.status == 0);
	td_out_free(&o);
	/* --all on a daemon alone (no peers, no key needed: nothing is
	 * relayed): the one node acts for its own asker, a row for it */
	td_ctl(d->sock, &o, "--all", "log-level", "notice", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "log level notice (was info)") &&
	       strstr(o.out, " 1 ok ") && strstr(o.out, "\ntotal "),
	       "--all log-level alone: %d: %s%s", o.status, o.out, o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "--all", "drain", "nojob", NULL);
	CHECKF(o.status == 1 && strstr(o.out, "not here") && strstr(o.out, "no job nojob"),
	       "--all drain nojob alone: %d: %s%s", o.status, o.out, o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "log-level", "info", NULL);
	CHECK(o.status == 0);
	td_out_free(&o);

	/* cutoff */
	struct steer cut;
	steer_start(&cut, e, d->sock, "cutjob", 2, -1, "tt");
	CHECK(steer_cmd(&cut, 0, "send 1 10 32", NULL, NULL, 0) == 0);
	td_ctl(d->sock, &o, "cutoff", "cutjob", "1", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "cut off client") && strstr(o.out, "rank 1"),
	       "cutoff: %d: %s%s", o.status, o.out, o.err);
	td_out_free(&o);
	int r = steer_cmd(&cut, 1, "flush", NULL, detail, sizeof(detail));
	CHECKF(r == -ENOTCONN && strstr(detail, "cut off by uid 0 (shufflectl cutoff)"),
	       "cut-off rank: %d (%s)", r, detail);
	r = steer_cmd(&cut, 0, "send 1 5 32", NULL, detail, sizeof(detail));
	CHECKF(r == -ESRCH, "sending to the cut-off rank: %d (%s), not -ESRCH", r, detail);
	td_ctl(d->sock, &o, "ping", NULL);
	CHECK(o.status == 0);
	td_out_free(&o);
	CHECK(td_stat(d, "daemon.ctl_cutoffs") == 1);
	td_ctl(d->sock, &o, "cutoff", "cutjob", "1", NULL);
	CHECKF(o.status == 1 && strstr(o.err, "has no session"), "second cutoff: %d: %s", o.status,
	       o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "cutoff", "nojob", "0", NULL);
	CHECKF(o.status == 1 && strstr(o.err, "no job nojob"), "cutoff nojob: %d: %s", o.status,
	       o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "cutoff", "cutjob", "x", NULL);
	CHECK(o.status == 2);
	td_out_free(&o);
	r = steer_cmd(&cut, 1, "close", NULL, NULL, 0);
	CHECKF(r == 0 || r == -ENOTCONN, "close of the cut-off rank: %d", r);
	CHECK(steer_wait(&cut, 1) == (r < 0));
	CHECK(steer_cmd(&cut, 0, "close", NULL, NULL, 0) == 0);
	CHECK(steer_wait(&cut, 0) == 0);

	/* drain one job while another runs */
	struct steer dr, ok;
	steer_start(&dr, e, d->sock, "drainjob", 2, -1, "tt");
	steer_start(&ok, e, d->sock, "okjob", 2, -1, "tt");
	CHECK(steer_cmd(&dr, 0, "send 1 10 32", NULL, NULL, 0) == 0);
	CHECK(steer_cmd(&ok, 0, "send 1 10 32", NULL, NULL, 0) == 0);
	td_ctl(d->sock, &o, "drain", "drainjob", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "job drainjob drained: 2 sessions cut off"),
	       "drain: %d: %s%s", o.status, o.out, o.err);
	td_out_free(&o);
	for (int rk = 0; rk < 2; rk++) {
		r = steer_cmd(&dr, rk, rk ? "send 0 1 32" : "send 1 1 32", NULL, detail,
			      sizeof(detail));
		CHECKF(r == -ECANCELED && strstr(detail, "job drainjob drained by uid 0"),
		       "drained rank %d: %d (%s)", rk, r, detail);
	}
	/* the other job: exact */
	char cmd[64];
	long long got[2];
	for (int rk = 0; rk < 2; rk++) {
		snprintf(cmd, sizeof(cmd), "send %d %d 100", 1 - rk, COUNT);
		CHECK(steer_cmd(&ok, rk, cmd, NULL, NULL, 0) == 0);
	}
	steer_ask(&ok, 0, "epoch");
	steer_ask(&ok, 1, "epoch");
	CHECK(steer_result(&ok, 0, &got[0], NULL, 0) == 0);
	CHECK(steer_result(&ok, 1, &got[1], NULL, 0) == 0);
	CHECKF(got[0] == COUNT && got[1] == COUNT + 10, "okjob received %lld and %lld, want %d and "
	       "%d", got[0], got[1], COUNT, COUNT + 10);
	json_t *st = td_ctl_json(d->sock, "stats");
	CHECK(td_num(st, "daemon.ctl_drained") == 2 && td_num(st, "daemon.ctl_cutoffs") == 1);
	CHECK(td_num(st, "daemon.ctl_refused") == 0);
	json_decref(st);
	for (int rk = 0; rk < 2; rk++) {
		CHECK(steer_cmd(&ok, rk, "close", NULL, NULL, 0) == 0);
		CHECK(steer_wait(&ok, rk) == 0);
		r = steer_cmd(&dr, rk, "close", NULL, detail, sizeof(detail));
		CHECKF(r == 0 || r == -ECANCELED, "close of a drained rank: %d (%s)", r, detail);
		CHECK(steer_wait(&dr, rk) == (r < 0));
	}
	CHECK(td_log_contains(d, "control: uid 0 drains job drainjob: 2 sessions cut off"));
	td_stop(d);
	return 0;
}
