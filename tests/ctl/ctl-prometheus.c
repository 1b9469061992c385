/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-prometheus.c - `shufflectl stats --prometheus` against a
 * daemon with traffic (a job of ctl_client ranks) and a few bad clients:
 * every line is valid text exposition format (prom_parse), and every
 * value equals the daemon's JSON taken right after - daemon counters
 * (shuffle_<name>_total), the all-clients sum (shuffle_clients_<name>_...),
 * per client (shuffle_client_<name>_...{job,rank}, only with --per-rank:
 * none by default) and per job.  Names follow the naming rules as
 * metric_name() spells them: nanoseconds become seconds (the value scaled),
 * high-water marks get _bytes, one _total.  Only ctl_requests moves
 * between the snapshots, by exactly one per request.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/stats.h"
#include "tests/ctl/prom.h"
#include "tests/lib/daemon.h"

#define WORLD 3
#define COUNT 40
#define LEN 24

struct desc {
	const char *name;
	bool counter;
};
#define KIND_COUNTER true
#define KIND_GAUGE false
#define DESC(name, kind, help) {#name, KIND_##kind},
static const struct desc daemon_stats[] = {SHF_DAEMON_STATS(DESC){NULL, false}};
static const struct desc client_stats[] = {SHF_CLIENT_STATS(DESC){NULL, false}};
static const struct desc fabric_stats[] = {SHF_FABRIC_STATS(DESC){NULL, false}};
#undef DESC

static void bad_clients(const char *sock, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		td_fmt(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		CHECK(fd >= 0);
		CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "%s", strerror(errno));
		CHECK(send(fd, "garbage!garbage!garbage!", 24, MSG_NOSIGNAL) == 24);
		char buf[512];
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			; /* the ERROR, then the hang-up */
		close(fd);
	}
}

/* The metric of JSON member name (client/shufflectl/prom.c's rules, spelled
 * out independently): "_ns" -> "_seconds" with the value times 1e-9, a
 * "_hwm" gauge gets "_bytes", a counter ends in exactly one "_total". */
static double metric_name(char *buf, size_t n, const char *prefix, const char *name,
			  bool counter)
{
	static const struct {
		const char *json, *metric;
		double scale;
	} map[] = {
		{"epoch_ns_total", "epoch_seconds_total", 1e-9},
		{"epoch_ns_max", "epoch_seconds_max", 1e-9},
		{"send_ring_hwm", "send_ring_hwm_bytes", 1},
		{"deliver_ring_hwm", "deliver_ring_hwm_bytes", 1},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].json, name)) {
			snprintf(buf, n, "%s%s", prefix, map[i].metric);
			return map[i].scale;
		}
	CHECKF(!strstr(name, "_ns") && !strstr(name, "_hwm"), "%s: a unit this test does not map",
	       name);
	snprintf(buf, n, "%s%s%s", prefix, name, counter ? "_total" : "");
	return 1;
}

/* One scope: series `metric<labels>` equals obj.<name> (scaled). */
static void compare_scope(const struct prom *p, json_t *obj, const char *prefix,
			  const char *labels, const struct desc *d, long long ctl_bias)
{
	CHECKF(json_is_object(obj), "scope %s missing in JSON", prefix);
	for (; d->name; d++) {
		char series[512], metric[256];
		double scale = metric_name(metric, sizeof(metric), prefix, d->name, d->counter);
		snprintf(series, sizeof(series), "%s%s", metric, labels);
		long long want = td_num(obj, d->name);
		double got = prom_get(p, series);
		if (!strcmp(d->name, "ctl_requests")) {
			want -= ctl_bias;
		} else if (!strcmp(d->name, "disc_bye") && ctl_bias && got == (double)(want - 1)) {
			/* the daemon counts shufflectl's own goodbye (BYE) after the
			 * exposition's snapshot as a client detaching cleanly */
			want--;
		}
		/* reals carry 9 significant digits (%.9g); counts are exact */
		CHECKF(scale == 1.0 ? got == (double)want
				    : fabs(got - (double)want * scale) <= 1e-8 * (double)want * scale,
		       "%s = %.17g, JSON says %lld (x %g)", series, got, want, scale);
	}
}

int main(void)
{
	struct td_env *e = td_init("ctl-prometheus", 150, 0);
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);
	bool traffic = getenv("SHF_TEST_CTL_CLIENT") && *getenv("SHF_TEST_CTL_CLIENT");
	/* every character a job name may have (proto/ipc.h) */
	struct td_job j = {.name = "prom.job-1:a@b+c_", .world = WORLD, .count = COUNT, .len = LEN};
	if (traffic) {
		td_job_start(&j, d->sock, 0, WORLD);
		td_job_wait_done(&j, 0, WORLD);
	} else {
		fprintf(stderr, "ctl-prometheus: no test client (client library not built): "
			"checking daemon counters only, not per-client series\n");
	}
	bad_clients(d->sock, 5);

	/* by default no per-rank series: their cardinality is the job's size */
	struct td_out o;
	struct prom p;
	td_ctl(d->sock, &o, "stats", "--prometheus", NULL);
	CHECKF(o.status == 0, "exit %d: %s", o.status, o.err);
	prom_parse(o.out, &p);
	for (size_t i = 0; i < p.n; i++)
		CHECKF(strncmp(p.s[i].series, "shuffle_client_", 15),
		       "per-rank series %s without --per-rank", p.s[i].series);
	CHECK(prom_get(&p, "shuffle_up") == 1);
	prom_free(&p);
	td_out_free(&o);
	td_ctl(d->sock, &o, "stats", "--per-rank", NULL);
	CHECKF(o.status == 2, "--per-rank without --prometheus: exit %d", o.status);
	td_out_free(&o);

	td_ctl(d->sock, &o, "stats", "--prometheus", "--per-rank", NULL);
	CHECKF(o.status == 0, "exit %d: %s", o.status, o.err);
	json_t *dump = td_ctl_json(d->sock, "dump");
	prom_parse(o.out, &p);

	CHECK(prom_get(&p, "shuffle_up") == 1);
	json_t *status = json_object_get(dump, "status");
	CHECK(prom_get(&p, "shuffle_nodes") == (double)td_num(status, "nodes"));
	CHECK(prom_get(&p, "shuffle_clients_registered") == (double)td_num(status, "clients"));
	CHECK(prom_get(&p, "shuffle_jobs") == (double)td_num(status, "jobs"));
	CHECK(prom_get(&p, "shuffle_sessions") == (double)td_num(status, "sessions"));
	CHECK(prom_get(&p, "shuffle_uptime_seconds") > 0);
	char info[256];
	snprintf(info, sizeof(info), "shuffle_info{version=\"%s\",node_name=\"%s\",node_id=\"0\"}",
		 json_string_value(json_object_get(status, "version")),
		 json_string_value(json_object_get(status, "node_name")));
	CHECK(prom_get(&p, info) == 1);

	json_t *stats = json_object_get(dump, "stats");
	/* the dump is one request later than the exposition */
	compare_scope(&p, json_object_get(stats, "daemon"), "shuffle_", "", daemon_stats, 1);
	compare_scope(&p, json_object_get(stats, "clients_total"), "shuffle_clients_", "",
		      client_stats, 0);
	/* the fabric endpoint (shuffle_fabric_<name>_total) only when reported */
	if (json_object_get(stats, "fabric"))
		compare_scope(&p, json_object_get(stats, "fabric"), "shuffle_fabric_", "",
			      fabric_stats, 0);
	else
		for (size_t i = 0; i < p.n; i++)
			CHECKF(strncmp(p.s[i].series, "shuffle_fabric_", 15),
			       "fabric series %s without stats.fabric", p.s[i].series);
	CHECK(td_num(stats, "daemon.disc_proto") == 5);
	char t[32];
	CHECK(prom_type(&p, "shuffle_disc_proto_total", t, sizeof(t)) && !strcmp(t, "counter"));
	CHECK(prom_type(&p, "shuffle_epoch_seconds_max", t, sizeof(t)) && !strcmp(t, "gauge"));
	CHECK(prom_type(&p, "shuffle_epoch_seconds_total", t, sizeof(t)) && !strcmp(t, "counter"));
	/* no abbreviated units, no double _total, anywhere */
	for (size_t i = 0; i < p.n; i++)
		CHECKF(!strstr(p.s[i].family, "_ns") && !strstr(p.s[i].family, "_total_total"),
		       "family %s breaks the naming rules", p.s[i].family);

	if (traffic) {
		CHECK(prom_get(&p, "shuffle_clients_msgs_in_total") == WORLD * WORLD * COUNT);
		json_t *clients = json_object_get(dump, "clients");
		CHECK(json_array_size(clients) == WORLD);
		size_t i;
		json_t *c;
		json_array_foreach(clients, i, c)
		{
			char labels[128];
			snprintf(labels, sizeof(labels), "{job=\"prom.job-1:a@b+c_\",rank=\"%lld\"}",
				 td_num(c, "rank"));
			compare_scope(&p, json_object_get(c, "stats"), "shuffle_client_", labels,
				      client_stats, 0);
			char s[256];
			snprintf(s, sizeof(s), "shuffle_client_ring_bytes%s", labels);
			CHECK(prom_get(&p, s) == (double)td_num(c, "ring_bytes"));
			snprintf(s, sizeof(s), "shuffle_client_send_used_bytes%s", labels);
			CHECK(prom_get(&p, s) == (double)td_num(c, "send_used"));
			snprintf(s, sizeof(s), "shuffle_client_msgs_out_total%s", labels);
			CHECK(prom_get(&p, s) == WORLD * COUNT);
		}
		CHECK(prom_get(&p, "shuffle_job_world{job=\"prom.job-1:a@b+c_\"}") == WORLD);
		CHECK(prom_get(&p, "shuffle_job_ready{job=\"prom.job-1:a@b+c_\"}") == 1);
		CHECK(prom_get(&p, "shuffle_job_epochs_total{job=\"prom.job-1:a@b+c_\"}") == 1);
	}
	/* one node: no peer series */
	for (size_t i = 0; i < p.n; i++)
		CHECKF(strncmp(p.s[i].series, "shuffle_peer_", 13), "peer series %s on a lone daemon",
		       p.s[i].series);
	prom_free(&p);
	json_decref(dump);
	td_out_free(&o);

	if (traffic)
		td_job_finish(&j, 0, WORLD);
	td_stop(d);
	return 0;
}
