/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl_traffic.c - shufflectl against a daemon carrying traffic.
 *
 * WORLD ctl_client processes of one job each send COUNT messages of LEN
 * bytes to every rank and complete an epoch, then stay connected.  Then:
 * `clients --json` lists each rank with its pid and exact counters,
 * `jobs --json` shows the complete job, `stats --json` clients_total
 * msgs_in / msgs_out / bytes equal what was sent, the tables show the same
 * ranks.  After the clients leave, the totals keep their counts (departed
 * clients are folded in) and `clients` is empty.
 */
#include <string.h>

#include "tests/ctl/ctl_harness.h"

#define WORLD 4
#define COUNT 250
#define LEN 100

int main(void)
{
	struct ch_env *e = ch_init("ctl-traffic", 150);
	ch_client(); /* skip early without the client library */
	struct ch_daemon d;
	CHECK(ch_daemon_start(e, &d, "d", NULL, NULL) == 0);

	struct ch_job j = {.name = "ctljob", .world = WORLD, .count = COUNT, .len = LEN};
	ch_job_start(e, &j, d.sock, 0, WORLD);
	ch_job_wait_done(&j, 0, WORLD);

	const long long per_rank = (long long)COUNT * WORLD; /* sent = received, per rank */
	const long long total = per_rank * WORLD;

	/* clients: every rank, its pid, its counters */
	json_t *doc = ch_ctl_json(e, d.sock, "clients");
	json_t *cl = json_object_get(doc, "clients");
	CHECKF(json_array_size(cl) == WORLD, "%zu clients listed", json_array_size(cl));
	bool seen[WORLD] = {false};
	size_t i;
	json_t *c;
	json_array_foreach(cl, i, c)
	{
		long long rank = ch_num(c, "rank");
		CHECKF(rank >= 0 && rank < WORLD && !seen[rank], "rank %lld", rank);
		seen[rank] = true;
		CHECK(!strcmp(json_string_value(json_object_get(c, "job")), "ctljob"));
		CHECK(!strcmp(json_string_value(json_object_get(c, "state")), "active"));
		CHECKF(ch_num(c, "pid") == j.pid[rank], "rank %lld: pid %lld, spawned %d", rank,
		       ch_num(c, "pid"), (int)j.pid[rank]);
		CHECKF(ch_num(c, "stats.msgs_in") == per_rank, "rank %lld msgs_in %lld", rank,
		       ch_num(c, "stats.msgs_in"));
		CHECKF(ch_num(c, "stats.msgs_out") == per_rank, "rank %lld msgs_out %lld", rank,
		       ch_num(c, "stats.msgs_out"));
		CHECK(ch_num(c, "stats.bytes_in") == per_rank * LEN);
		CHECK(ch_num(c, "stats.bytes_out") == per_rank * LEN);
		CHECK(ch_num(c, "stats.msgs_local") == per_rank);
		CHECK(ch_num(c, "stats.msgs_remote") == 0);
		CHECK(ch_num(c, "stats.drops_dead") == 0 && ch_num(c, "stats.drops_down") == 0);
		CHECK(ch_num(c, "stats.epochs") == 1);
		CHECK(ch_num(c, "ring_bytes") == 1 << 20);
		CHECK(ch_num(c, "send_used") == 0);
	}
	json_decref(doc);

	/* jobs: the job, complete */
	doc = ch_ctl_json(e, d.sock, "jobs");
	json_t *jobs = json_object_get(doc, "jobs");
	CHECK(json_array_size(jobs) == 1);
	json_t *job = json_array_get(jobs, 0);
	CHECK(!strcmp(json_string_value(json_object_get(job, "name")), "ctljob"));
	CHECK(ch_num(job, "world") == WORLD && ch_num(job, "registered") == WORLD);
	CHECK(ch_num(job, "local") == WORLD && ch_num(job, "gone") == 0);
	CHECK(json_is_true(json_object_get(job, "ready")));
	CHECK(ch_num(job, "epochs") == 1);
	CHECK(!strcmp(json_string_value(json_object_get(job, "missing")), ""));
	json_decref(doc);

	/* stats: totals equal what was sent */
	doc = ch_ctl_json(e, d.sock, "stats");
	CHECKF(ch_num(doc, "clients_total.msgs_in") == total, "msgs_in %lld, sent %lld",
	       ch_num(doc, "clients_total.msgs_in"), total);
	CHECKF(ch_num(doc, "clients_total.msgs_out") == total, "msgs_out %lld, sent %lld",
	       ch_num(doc, "clients_total.msgs_out"), total);
	CHECK(ch_num(doc, "clients_total.bytes_in") == total * LEN);
	CHECK(ch_num(doc, "clients_total.bytes_out") == total * LEN);
	CHECK(ch_num(doc, "clients_total.msgs_local") == total);
	CHECK(ch_num(doc, "daemon.clients_attached") == WORLD);
	CHECK(ch_num(doc, "daemon.epochs") == 1);
	CHECK(ch_num(doc, "daemon.batches_out") == 0);
	json_decref(doc);

	doc = ch_ctl_json(e, d.sock, "status");
	CHECK(ch_num(doc, "clients") == WORLD && ch_num(doc, "jobs") == 1);
	json_decref(doc);

	/* the tables show the same */
	struct ch_out o;
	ch_ctl(e, d.sock, &o, "clients", NULL);
	CHECKF(o.status == 0, "%s", o.err);
	unsigned lines = 0;
	for (const char *p = o.out; (p = strstr(p, " ctljob ")) != NULL; p++)
		lines++;
	CHECKF(lines == WORLD, "clients table has %u ctljob rows:\n%s", lines, o.out);
	CHECKF(strstr(o.out, "1,000"), "per-rank counts not in the table:\n%s", o.out);
	ch_out_free(&o);
	ch_ctl(e, d.sock, &o, "jobs", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "ctljob") && strstr(o.out, "yes"), "%s", o.out);
	ch_out_free(&o);
	ch_ctl(e, d.sock, &o, "stats", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "4,000"), "stats table:\n%s", o.out);
	ch_out_free(&o);

	/* the clients leave; the counts stay */
	ch_job_finish(&j, 0, WORLD);
	doc = ch_ctl_json(e, d.sock, "stats");
	CHECK(ch_num(doc, "clients_total.msgs_in") == total);
	CHECK(ch_num(doc, "clients_total.msgs_out") == total);
	json_decref(doc);
	doc = ch_ctl_json(e, d.sock, "clients");
	CHECK(json_array_size(json_object_get(doc, "clients")) == 0);
	json_decref(doc);
	ch_daemon_stop(e, &d);
	return 0;
}
