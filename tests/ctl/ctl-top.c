/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-top.c - `shufflectl top --once` against the traffic sent.
 *
 * Job "topjob": rank 0 sends, rank 1 receives in poll mode and does not
 * consume, so what it was sent stays in its delivery ring.  Job "idlejob"
 * (one rank) sends nothing.  Rank 0 sends BASE messages before top starts.
 * Then `top --once --json --interval MS` runs; once its first sample is
 * taken (the daemon's ctl_requests counter shows its request: polled),
 * rank 0 sends BURST messages of LEN bytes and flushes them into rank 1's
 * ring; if top had already taken its second sample the window was missed
 * and the run is repeated with twice the interval.  Then, exactly:
 *   - topjob: msgs = msgs_out = BURST, bytes = bytes_out = BURST * LEN,
 *     no drops, no credit stalls; msgs_per_s * interval_s = BURST;
 *   - interval_s >= the interval asked for (the daemon's clock);
 *   - idlejob: 0 messages; the node's row: BURST;
 *   - ring occupancy: the bytes waiting in topjob's rings equal the
 *     clients' send_used + deliver_used, at least (BASE + BURST) * LEN,
 *     and the fullest ring's percentage matches rank 1's delivery ring.
 * The table form names both jobs and the node's row; live on a pipe, top
 * prints table after table without escape sequences; `top --json` without
 * --once is a usage error; rank 1 then receives exactly BASE + BURST.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ctl/steer.h"

#define BASE 100
#define BURST 1000
#define LEN 64

static json_t *job_row(json_t *doc, const char *name)
{
	size_t i;
	json_t *j;
	json_array_foreach(json_object_get(doc, "jobs"), i, j)
		if (!strcmp(json_string_value(json_object_get(j, "name")), name))
			return j;
	CHECKF(0, "no job %s in top's answer", name);
	return NULL;
}

static double real(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	CHECKF(json_is_number(v), "%s is not a number", k);
	return json_number_value(v);
}

int main(void)
{
	struct td_env *e = td_init("ctl-top", 150, 0);
	const char *ctl = td_prog("SHF_TEST_SHUFFLECTL");
	td_prog("SHF_TEST_CTL_STEER");
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);

	struct steer top, idle;
	steer_start(&top, e, d->sock, "topjob", 2, -1, "tp");
	steer_start(&idle, e, d->sock, "idlejob", 1, -1, "t");
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "send 1 %d %d", BASE, LEN);
	CHECK(steer_cmd(&top, 0, cmd, NULL, NULL, 0) == 0);

	long long sent = BASE; /* to rank 1, in all */
	json_t *doc = NULL;
	int interval = 2000;
	for (int attempt = 0; !doc; attempt++, interval *= 2) {
		CHECKF(attempt < 3, "the burst never fell between top's samples (last interval %d "
		       "ms)", interval / 2);
		char out[TD_PATH_MAX + 16], err[TD_PATH_MAX + 16], ivl[16];
		td_fmt(out, sizeof(out), "%s/top-%d.out", e->dir, attempt);
		td_fmt(err, sizeof(err), "%s/top-%d.err", e->dir, attempt);
		snprintf(ivl, sizeof(ivl), "%d", interval);
		long long base = td_stat(d, "daemon.ctl_requests"); /* this request included */
		pid_t p = td_spawn((const char *const[]){ctl, "-s", d->sock, "--once", "--json",
							 "--interval", ivl, "top", NULL},
				   NULL, out, err);
		/* top's first sample: one request more than our own polls */
		long long polls = 0, now;
		int64_t end = td_now_ms() + 20000;
		while ((now = td_stat(d, "daemon.ctl_requests")) < base + ++polls + 1) {
			CHECKF(td_now_ms() < end && td_poll_exit(p) == TD_RUNNING,
			       "top never asked: %s", td_read_file(err));
			td_sleep_ms(2);
		}
		snprintf(cmd, sizeof(cmd), "send 1 %d %d", BURST, LEN);
		CHECK(steer_cmd(&top, 0, cmd, NULL, NULL, 0) == 0);
		sent += BURST;
		int st = td_poll_exit(p); /* reaps it if it has exited */
		bool in_window = st == TD_RUNNING;
		if (in_window)
			st = td_wait(p, interval + 20000);
		CHECKF(st == 0, "top --once --json: exit %d: %s", st, td_read_file(err));
		if (!in_window) {
			fprintf(stderr, "ctl-top: top finished before the burst was flushed (interval "
				"%d ms); again with a longer interval\n", interval);
			/* the burst is in the counters now: the next run measures
			 * only its own burst */
			continue;
		}
		char *text = td_read_file(out);
		json_error_t je;
		doc = json_loads(text, 0, &je);
		CHECKF(doc, "top's JSON: %s\n%s", je.text, text);
		free(text);
	}
	interval /= 2; /* the one that worked */

	CHECK(!strcmp(json_string_value(json_object_get(doc, "command")), "top"));
	double dt = real(doc, "interval_s");
	CHECKF(dt >= interval / 1000.0, "interval_s %.6f < the %d ms asked for", dt, interval);
	json_t *tj = job_row(doc, "topjob");
	CHECKF(td_num(tj, "msgs") == BURST, "topjob msgs %lld, sent %d between the samples",
	       td_num(tj, "msgs"), BURST);
	CHECKF(td_num(tj, "msgs_out") == BURST, "topjob msgs_out %lld", td_num(tj, "msgs_out"));
	CHECK(td_num(tj, "bytes") == (long long)BURST * LEN);
	CHECK(td_num(tj, "bytes_out") == (long long)BURST * LEN);
	CHECK(td_num(tj, "drops") == 0 && td_num(tj, "credit_stalls") == 0);
	CHECK(td_num(tj, "local") == 2);
	double rate = real(tj, "msgs_per_s");
	CHECKF(fabs(rate * dt - BURST) < 1e-6 * BURST, "msgs_per_s %.3f over %.6f s is not %d", rate,
	       dt, BURST);
	CHECK(fabs(real(tj, "bytes_per_s") * dt - (double)BURST * LEN) < 1e-6 * BURST * LEN);
	json_t *ij = job_row(doc, "idlejob");
	CHECK(td_num(ij, "msgs") == 0 && td_num(ij, "msgs_out") == 0);
	CHECK(real(ij, "msgs_per_s") == 0.0);
	json_t *node = json_object_get(doc, "node");
	CHECKF(td_num(node, "msgs") == BURST, "node msgs %lld", td_num(node, "msgs"));
	CHECK(td_num(node, "clients") == 3);

	/* ring occupancy: what waits in rank 1's delivery ring (never consumed) */
	long long ring_used = td_num(tj, "ring_used");
	json_t *cl = td_query(d, "clients");
	CHECK(cl);
	long long want_used = 0;
	for (int r = 0; r < 2; r++) {
		json_t *c = td_client_find(cl, "topjob", r);
		CHECK(c);
		want_used += td_num(c, "send_used") + td_num(c, "deliver_used");
	}
	json_t *rx = td_client_find(cl, "topjob", 1);
	double rx_pct = 100.0 * (double)td_num(rx, "deliver_used") / (double)td_num(rx, "ring_bytes");
	CHECKF(ring_used == want_used, "topjob ring_used %lld, the clients hold %lld", ring_used,
	       want_used);
	CHECKF(ring_used >= sent * LEN, "ring_used %lld < %lld payload bytes", ring_used,
	       sent * LEN);
	CHECKF(fabs(real(tj, "ring_max_pct") - rx_pct) < 1e-6 /* %.9g */, "ring_max_pct %.4f, rank 1's ring %.4f",
	       real(tj, "ring_max_pct"), rx_pct);
	CHECK(td_num(tj, "ring_bytes") == 4 * td_num(rx, "ring_bytes"));
	json_decref(cl);
	json_decref(doc);

	/* the table */
	struct td_out o;
	td_ctl(d->sock, &o, "top", "--once", "--interval", "100", NULL);
	CHECKF(o.status == 0, "top --once: %d: %s", o.status, o.err);
	CHECKF(strstr(o.out, "topjob") && strstr(o.out, "idlejob") && strstr(o.out, "(node)") &&
	       strstr(o.out, "MSGS/S") && strstr(o.out, "RING%"), "top's table:\n%s", o.out);
	CHECKF(!strstr(o.out, "\033["), "top --once on a pipe draws no escape sequences");
	td_out_free(&o);
	/* live, on a pipe: table after table, no escape sequences */
	char live[TD_PATH_MAX + 16];
	td_fmt(live, sizeof(live), "%s/top-live.out", e->dir);
	pid_t lp = td_spawn((const char *const[]){ctl, "-s", d->sock, "--interval", "100", "top",
						  NULL},
			    NULL, live, NULL);
	int tables = 0;
	for (int64_t end = td_now_ms() + 20000; tables < 3; td_sleep_ms(10)) {
		char *t = td_read_file(live);
		tables = 0;
		for (const char *q = t; (q = strstr(q, "rates over")) != NULL; q++)
			tables++;
		CHECKF(!strstr(t, "\033["), "top on a pipe drew escape sequences");
		free(t);
		CHECKF(td_now_ms() < end && td_poll_exit(lp) == TD_RUNNING,
		       "live top printed %d table(s) in 20 s", tables);
	}
	kill(lp, SIGTERM);
	CHECK(td_wait(lp, 10000) == 128 + SIGTERM);
	td_ctl(d->sock, &o, "top", "--json", NULL);
	CHECKF(o.status == 2, "top --json without --once: exit %d", o.status);
	td_out_free(&o);

	/* rank 1 gets everything, exactly once */
	long long got = 0;
	char want[32];
	snprintf(want, sizeof(want), "recv %lld", sent);
	CHECK(steer_cmd(&top, 1, want, &got, NULL, 0) == 0);
	CHECKF(got == sent, "rank 1 received %lld, sent %lld", got, sent);
	for (int r = 0; r < 2; r++) {
		CHECK(steer_cmd(&top, r, "close", NULL, NULL, 0) == 0);
		CHECK(steer_wait(&top, r) == 0);
	}
	CHECK(steer_cmd(&idle, 0, "close", NULL, NULL, 0) == 0);
	CHECK(steer_wait(&idle, 0) == 0);
	td_stop(d);
	return 0;
}
