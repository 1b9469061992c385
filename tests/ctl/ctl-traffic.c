/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-traffic.c - shufflectl against a daemon carrying traffic.
 *
 * WORLD ctl-client processes of one job each send COUNT messages of LEN
 * bytes to every rank and complete an epoch, then stay connected.  Then:
 * `clients --json` lists each rank with its pid and exact counters,
 * `jobs --json` shows the complete job, `stats --json` clients_total
 * msgs_in / msgs_out / bytes equal what was sent, the tables show the same
 * ranks.  After the clients leave, the totals keep their counts (departed
 * clients are folded in) and `clients` is empty.
 */
#include <string.h>

#include "tests/lib/daemon.h"

#define WORLD 4
#define COUNT 250
#define LEN 100

int main(void)
{
	struct td_env *e = td_init("ctl-traffic", 150, 0);
	td_prog("SHF_TEST_CTL_CLIENT"); /* skip early without the client library */
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);

	struct td_job j = {.name = "ctljob", .world = WORLD, .count = COUNT, .len = LEN};
	td_job_start(&j, d->sock, 0, WORLD);
	td_job_wait_done(&j, 0, WORLD);

	const long long per_rank = (long long)COUNT * WORLD; /* sent = received, per rank */
	const long long total = per_rank * WORLD;

	/* clients: every rank, its pid, its counters */
	json_t *doc = td_ctl_json(d->sock, "clients");
	json_t *cl = json_object_get(doc, "clients");
	CHECKF(json_array_size(cl) == WORLD, "%zu clients listed", json_array_size(cl));
	bool seen[WORLD] = {false};
	size_t i;
	json_t *c;
	json_array_foreach(cl, i, c)
	{
		long long rank = td_num(c, "rank");
		CHECKF(rank >= 0 && rank < WORLD && !seen[rank], "rank %lld", rank);
		seen[rank] = true;
		CHECK(!strcmp(json_string_value(json_object_get(c, "job")), "ctljob"));
		CHECK(!strcmp(json_string_value(json_object_get(c, "state")), "active"));
		CHECKF(td_num(c, "pid") == j.pid[rank], "rank %lld: pid %lld, spawned %d", rank,
		       td_num(c, "pid"), (int)j.pid[rank]);
		CHECKF(td_num(c, "stats.msgs_in") == per_rank, "rank %lld msgs_in %lld", rank,
		       td_num(c, "stats.msgs_in"));
		CHECKF(td_num(c, "stats.msgs_out") == per_rank, "rank %lld msgs_out %lld", rank,
		       td_num(c, "stats.msgs_out"));
		CHECK(td_num(c, "stats.bytes_in") == per_rank * LEN);
		CHECK(td_num(c, "stats.bytes_out") == per_rank * LEN);
		CHECK(td_num(c, "stats.msgs_local") == per_rank);
		CHECK(td_num(c, "stats.msgs_remote") == 0);
		CHECK(td_num(c, "stats.drops_dead") == 0 && td_num(c, "stats.drops_down") == 0);
		CHECK(td_num(c, "stats.epochs") == 1);
		CHECK(td_num(c, "ring_bytes") == 1 << 20);
		CHECK(td_num(c, "send_used") == 0);
	}
	json_decref(doc);

	/* jobs: the job, complete */
	doc = td_ctl_json(d->sock, "jobs");
	json_t *jobs = json_object_get(doc, "jobs");
	CHECK(json_array_size(jobs) == 1);
	json_t *job = json_array_get(jobs, 0);
	CHECK(!strcmp(json_string_value(json_object_get(job, "name")), "ctljob"));
	CHECK(td_num(job, "world") == WORLD && td_num(job, "registered") == WORLD);
	CHECK(td_num(job, "local") == WORLD && td_num(job, "gone") == 0);
	CHECK(json_is_true(json_object_get(job, "ready")));
	CHECK(td_num(job, "epochs") == 1);
	CHECK(!strcmp(json_string_value(json_object_get(job, "missing")), ""));
	json_decref(doc);

	/* stats: totals equal what was sent */
	doc = td_ctl_json(d->sock, "stats");
	CHECKF(td_num(doc, "clients_total.msgs_in") == total, "msgs_in %lld, sent %lld",
	       td_num(doc, "clients_total.msgs_in"), total);
	CHECKF(td_num(doc, "clients_total.msgs_out") == total, "msgs_out %lld, sent %lld",
	       td_num(doc, "clients_total.msgs_out"), total);
	CHECK(td_num(doc, "clients_total.bytes_in") == total * LEN);
	CHECK(td_num(doc, "clients_total.bytes_out") == total * LEN);
	CHECK(td_num(doc, "clients_total.msgs_local") == total);
	CHECK(td_num(doc, "daemon.clients_attached") == WORLD);
	CHECK(td_num(doc, "daemon.epochs") == 1);
	CHECK(td_num(doc, "daemon.batches_out") == 0);
	json_decref(doc);

	doc = td_ctl_json(d->sock, "status");
	CHECK(td_num(doc, "clients") == WORLD && td_num(doc, "jobs") == 1);
	json_decref(doc);

	/* the tables show the same */
	struct td_out o;
	td_ctl(d->sock, &o, "clients", NULL);
	CHECKF(o.status == 0, "%s", o.err);
	unsigned lines = 0;
	for (const char *p = o.out; (p = strstr(p, " ctljob ")) != NULL; p++)
		lines++;
	CHECKF(lines == WORLD, "clients table has %u ctljob rows:\n%s", lines, o.out);
	CHECKF(strstr(o.out, "1,000"), "per-rank counts not in the table:\n%s", o.out);
	td_out_free(&o);
	td_ctl(d->sock, &o, "jobs", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "ctljob") && strstr(o.out, "yes"), "%s", o.out);
	td_out_free(&o);
	td_ctl(d->sock, &o, "stats", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "4,000"), "stats table:\n%s", o.out);
	td_out_free(&o);

	/* the clients leave; the counts stay */
	td_job_finish(&j, 0, WORLD);
	doc = td_ctl_json(d->sock, "stats");
	CHECK(td_num(doc, "clients_total.msgs_in") == total);
	CHECK(td_num(doc, "clients_total.msgs_out") == total);
	json_decref(doc);
	doc = td_ctl_json(d->sock, "clients");
	CHECK(json_array_size(json_object_get(doc, "clients")) == 0);
	json_decref(doc);
	td_stop(d);
	return 0;
}
