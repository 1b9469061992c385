/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-peers.c - `shufflectl peers` with two daemons on this host
 * (static rendezvous over 127.0.0.1, provider tcp): each lists the other
 * as up; with a job spanning both (rank 0 on node 0, rank 1 on node 1,
 * when the client library is built) the per-peer counters equal the
 * traffic; the Prometheus series per peer ({node="1"}) equal the JSON;
 * once the other daemon stops, the peer shows as down in JSON, table and
 * Prometheus.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/ctl/prom.h"
#include "tests/lib/daemon.h"

#define COUNT 100
#define LEN 64

static json_t *peer_of(json_t *doc)
{
	json_t *a = json_object_get(doc, "peers");
	CHECKF(json_array_size(a) == 1, "%zu peers", json_array_size(a));
	return json_array_get(a, 0);
}

int main(void)
{
	td_init("ctl-peers", 150, 0);
	struct td_pair pair;
	td_pair_start(&pair, true);
	struct td_daemon *a = pair.a, *b = pair.b;
	char addr_b[64];
	snprintf(addr_b, sizeof(addr_b), "%s", pair.bind_b);
	td_wait_peer_state(a, "up", 20000);
	td_wait_peer_state(b, "up", 20000);

	json_t *doc = td_ctl_json(a->sock, "peers");
	json_t *p = peer_of(doc);
	CHECK(td_num(p, "node") == 1);
	CHECK(!strcmp(json_string_value(json_object_get(p, "addr")), addr_b));
	json_decref(doc);
	doc = td_ctl_json(a->sock, "status");
	CHECK(td_num(doc, "nodes") == 2 && td_num(doc, "node_id") == 0);
	json_decref(doc);

	bool traffic = getenv("SHF_TEST_CTL_CLIENT") && *getenv("SHF_TEST_CTL_CLIENT");
	struct td_job j = {.name = "pj", .world = 2, .count = COUNT, .len = LEN};
	if (traffic) {
		td_job_start(&j, a->sock, 0, 1);
		td_job_start(&j, b->sock, 1, 1);
		td_job_wait_done(&j, 0, 2);
		doc = td_ctl_json(a->sock, "peers");
		p = peer_of(doc);
		CHECKF(td_num(p, "msgs_out") == COUNT, "a -> b msgs_out %lld", td_num(p, "msgs_out"));
		CHECKF(td_num(p, "msgs_in") == COUNT, "b -> a msgs_in %lld", td_num(p, "msgs_in"));
		CHECK(td_num(p, "batches_out") >= 1 && td_num(p, "bytes_out") > COUNT * LEN);
		CHECK(td_num(p, "drops_down") == 0);
		json_decref(doc);
		doc = td_ctl_json(a->sock, "stats");
		CHECK(td_num(doc, "clients_total.msgs_remote") == COUNT);
		CHECK(td_num(doc, "clients_total.msgs_local") == COUNT);
		CHECK(td_num(doc, "clients_total.msgs_out") == 2 * COUNT);
		json_decref(doc);
	} else {
		fprintf(stderr, "ctl-peers: no test client (client library not built): checking "
			"peer state only, not per-peer traffic\n");
	}

	/* Prometheus per peer = JSON per peer (counters do not move: idle) */
	struct td_out o;
	td_ctl(a->sock, &o, "stats", "--prometheus", NULL);
	CHECKF(o.status == 0, "%s", o.err);
	doc = td_ctl_json(a->sock, "peers");
	p = peer_of(doc);
	struct prom pr;
	prom_parse(o.out, &pr);
	static const char *const counters[] = {"batches_out", "bytes_out", "msgs_out", "batches_in",
					       "bytes_in", "msgs_in", "credit_stalls", "drops_down",
					       NULL};
	for (const char *const *c = counters; *c; c++) {
		char s[128];
		snprintf(s, sizeof(s), "shuffle_peer_%s_total{node=\"1\"}", *c);
		CHECKF(prom_get(&pr, s) == (double)td_num(p, *c), "%s = %g, JSON %lld", s,
		       prom_get(&pr, s), td_num(p, *c));
	}
	CHECK(prom_get(&pr, "shuffle_peer_up{node=\"1\"}") == 1);
	char info[160];
	snprintf(info, sizeof(info), "shuffle_peer_info{node=\"1\",host=\"127.0.0.1\",addr=\"%s\"}",
		 addr_b);
	CHECK(prom_get(&pr, info) == 1);
	prom_free(&pr);
	json_decref(doc);
	td_out_free(&o);
	td_ctl(a->sock, &o, "peers", NULL);
	CHECKF(o.status == 0 && strstr(o.out, addr_b) && strstr(o.out, " up "), "%s", o.out);
	td_out_free(&o);

	if (traffic)
		td_job_finish(&j, 0, 2);

	/* the other node goes away */
	td_stop(b);
	td_wait_peer_state(a, "down", 20000);
	td_ctl(a->sock, &o, "peers", NULL);
	CHECKF(o.status == 0 && strstr(o.out, " down "), "%s", o.out);
	td_out_free(&o);
	td_ctl(a->sock, &o, "stats", "--prometheus", NULL);
	CHECKF(o.status == 0, "%s", o.err);
	prom_parse(o.out, &pr);
	CHECK(prom_get(&pr, "shuffle_peer_up{node=\"1\"}") == 0);
	prom_free(&pr);
	td_out_free(&o);
	td_stop(a);
	return 0;
}
