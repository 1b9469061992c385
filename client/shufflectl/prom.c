/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/prom.c - `shufflectl stats --prometheus`: the daemon's
 * state in Prometheus text exposition format 0.0.4, from one "dump" (one
 * consistent snapshot).
 *
 * Per family "# HELP", "# TYPE", then its samples, every family once.
 * Names follow Prometheus' naming rules (and pass `promtool check
 * metrics`, tests/ctl/ctl-prometheus.c): base units spelled out as the
 * last word before _total (seconds, bytes), exactly one _total, on
 * counters only.  prom_metric() maps a member of the JSON to its metric:
 * "<x>_ns..." is in seconds (the value scaled by 1e-9: epoch_ns_total ->
 * shuffle_epoch_seconds_total, epoch_ns_max -> shuffle_epoch_seconds_max),
 * "<x>_hwm" is a byte gauge (send_ring_hwm -> ..._send_ring_hwm_bytes),
 * and a counter whose name already ends in _total gets no second one.
 * Scopes: the daemon unprefixed, the all-clients sum shuffle_clients_*,
 * the fabric endpoint shuffle_fabric_*, per job shuffle_job_*{job}, per
 * peer shuffle_peer_*{node}, and per client shuffle_client_*{job,rank}
 * only with --per-rank (prom_opts.per_rank): about 25 series per rank,
 * with job ids as label values, is a cardinality a cluster's Prometheus
 * should not get by default.  HELP texts and kinds come from
 * proto/stats.h; a member this build does not know is "untyped" with its
 * name as help.
 */
#include <stdlib.h>
#include <string.h>

#include "client/shufflectl/shufflectl.h"

/*
 * A JSON member as a metric: the name after "shuffle_<scope>" and the
 * factor its value is multiplied by.  Known counters end in exactly one
 * _total; "ns" becomes "seconds" (factor 1e-9); a "_hwm" gauge (ring
 * high-water marks, bytes) gets the _bytes unit.  Unknown members keep
 * their name, untyped.
 */
struct prom_metric {
	char name[160];
	double scale;
};

static void prom_metric(struct prom_metric *m, const char *scope, const char *key,
			bool counter, bool known)
{
	char base[128];
	size_t kl = strlen(key);
	m->scale = 1.0;
	snprintf(base, sizeof(base), "%s", key);
	if (known) {
		/* "_ns" as a word: epoch_ns_total, epoch_ns_max, blocked_ns */
		char *ns = strstr(base, "_ns");
		if (ns && (ns[3] == '\0' || ns[3] == '_')) {
			char rest[128];
			snprintf(rest, sizeof(rest), "%s", ns + 3);
			snprintf(ns, sizeof(base) - (size_t)(ns - base), "_seconds%s", rest);
			m->scale = 1e-9;
		} else if (!counter && kl > 4 && !strcmp(key + kl - 4, "_hwm")) {
			snprintf(base + kl, sizeof(base) - kl, "_bytes");
		}
	}
	size_t bl = strlen(base);
	bool has_total = bl > 6 && !strcmp(base + bl - 6, "_total");
	int len = snprintf(m->name, sizeof(m->name), "shuffle_%s%s%s", scope, base,
			   counter && known && !has_total ? "_total" : "");
	/* Metric name characters: [a-zA-Z0-9_]; anything else becomes '_'. */
	for (int i = 0; i < len && (size_t)i < sizeof(m->name); i++) {
		char c = m->name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			m->name[i] = '_';
	}
}

/* HELP of a metric converted to seconds: the list's "(ns)" would lie. */
static void prom_help_unit(const struct prom_metric *m, char *help)
{
	char *u = m->scale != 1.0 ? strstr(help, "(ns)") : NULL;
	if (u) /* "(ns)" -> "(s)" */
		memmove(u + 1, u + 2, strlen(u + 2) + 1);
}

static void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

static void prom_label_value(FILE *f, const char *v)
{
	fputc('"', f);
	for (const char *p = v; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '"')
			fputs("\\\"", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* Sample value: integers exactly, reals with 9 significant digits (%.9g:
 * no binary noise such as 0.025066027000000001), booleans 0/1; scaled (a
 * unit conversion) as a real, except nanoseconds to seconds of an integer,
 * exact ("12.000345678"). */
static void prom_value_scaled(FILE *f, const json_t *v, double scale)
{
	if (scale == 1e-9 && json_is_integer(v) && json_integer_value(v) >= 0) {
		long long ns = (long long)json_integer_value(v);
		char frac[16];
		int l = snprintf(frac, sizeof(frac), "%09lld", ns % 1000000000);
		while (l > 0 && frac[l - 1] == '0')
			frac[--l] = '\0';
		fprintf(f, "%lld%s%s", ns / 1000000000, l ? "." : "", frac);
	} else if (scale != 1.0 && json_is_number(v))
		fprintf(f, "%.9g", json_number_value(v) * scale);
	else if (json_is_integer(v))
		fprintf(f, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%.9g", json_real_value(v));
	else if (json_is_boolean(v))
		fprintf(f, "%d", json_is_true(v) ? 1 : 0);
	else
		fprintf(f, "NaN");
}

static void prom_value(FILE *f, const json_t *v)
{
	prom_value_scaled(f, v, 1.0);
}

/* Does v render as a sample?  (strings, objects, arrays do not) */
static bool prom_sampleable(const json_t *v)
{
	return json_is_number(v) || json_is_boolean(v);
}

/* One unlabelled scope: every member of o. */
static void prom_scope(FILE *f, const json_t *o, const char *scope, const char *what,
		       const struct stat_desc *d, size_t nd)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		if (!prom_sampleable(v))
			continue;
		const struct stat_desc *sd = stat_find(d, nd, k);
		struct prom_metric m;
		char help[400];
		prom_metric(&m, scope, k, sd && sd->counter, sd != NULL);
		snprintf(help, sizeof(help), "%s%s", what, sd ? sd->help : k);
		prom_help_unit(&m, help);
		prom_family(f, m.name, sd ? (sd->counter ? "counter" : "gauge") : "untyped", help);
		fprintf(f, "%s ", m.name);
		prom_value_scaled(f, v, m.scale);
		fputc('\n', f);
	}
}

static void prom_gauge(FILE *f, const char *name, const char *help, const json_t *v)
{
	if (!prom_sampleable(v))
		return;
	prom_family(f, name, "gauge", help);
	fprintf(f, "%s ", name);
	prom_value(f, v);
	fputc('\n', f);
}

/* Per-client entries merged by (job, rank): a rank whose old session is
 * still draining while a new one is registered must not give two series
 * with the same labels.  Counters are summed, gauges take the maximum. */
struct prom_client {
	const char *job;
	long long rank;
	json_t *stats;  /* merged "stats" object (owned) */
	json_t *gauges; /* ring_bytes, send_used, ... (owned) */
};

static int prom_client_cmp(const void *a, const void *b)
{
	const struct prom_client *x = a, *y = b;
	int c = strcmp(x->job, y->job);
	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static void merge_num(json_t *into, const char *k, const json_t *v, bool counter)
{
	json_t *old = json_object_get(into, k);
	if (!old) {
		json_object_set_new(into, k, json_deep_copy(v));
		return;
	}
	if (json_is_integer(old) && json_is_integer(v)) {
		json_int_t a = json_integer_value(old), b = json_integer_value(v);
		json_object_set_new(into, k, json_integer(counter ? a + b : (a > b ? a : b)));
	} else if (json_is_number(old) && json_is_number(v)) {
		double a = json_number_value(old), b = json_number_value(v);
		json_object_set_new(into, k, json_real(counter ? a + b : (a > b ? a : b)));
	}
}

static const char *const client_gauges[][2] = {
	{"ring_bytes", "size of each of the client's rings (bytes)"},
	{"send_used", "bytes in use in the client's send ring"},
	{"deliver_used", "bytes in use in the client's delivery ring"},
	{"blocked", "1 while the client's next record waits (delivery ring or credit)"},
	{"waiters", "senders and batches waiting for room in the client's delivery ring"},
	{"connected_s", "seconds since the client connected"},
};

static size_t prom_clients_collect(const json_t *a, struct prom_client **out)
{
	size_t n = json_array_size(a), m = 0;
	struct prom_client *pc = xrealloc(NULL, (n ? n : 1) * sizeof(*pc));
	size_t i;
	json_t *c;
	json_array_foreach(a, i, c)
	{
		const char *job = jstr(c, "job", NULL);
		if (!job)
			continue;
		pc[m].job = job;
		pc[m].rank = jint(c, "rank", -1);
		pc[m].stats = json_deep_copy(jget(c, "stats"));
		if (!json_is_object(pc[m].stats)) {
			json_decref(pc[m].stats);
			pc[m].stats = json_object();
		}
		pc[m].gauges = json_object();
		for (size_t g = 0; g < NELEM(client_gauges); g++) {
			json_t *v = jget(c, client_gauges[g][0]);
			if (prom_sampleable(v))
				json_object_set_new(pc[m].gauges, client_gauges[g][0],
						    json_is_boolean(v) ? json_integer(json_is_true(v))
								       : json_deep_copy(v));
		}
		m++;
	}
	qsort(pc, m, sizeof(*pc), prom_client_cmp);
	size_t k = 0;
	for (i = 0; i < m; i++) {
		if (k > 0 && !prom_client_cmp(&pc[k - 1], &pc[i])) {
			const char *key;
			json_t *v;
			json_object_foreach(pc[i].stats, key, v)
			{
				const struct stat_desc *sd =
					stat_find(client_stats, n_client_stats, key);
				merge_num(pc[k - 1].stats, key, v, !sd || sd->counter);
			}
			json_object_foreach(pc[i].gauges, key, v)
				merge_num(pc[k - 1].gauges, key, v, false);
			json_decref(pc[i].stats);
			json_decref(pc[i].gauges);
			continue;
		}
		pc[k++] = pc[i];
	}
	*out = pc;
	return k;
}

static void prom_client_labels(FILE *f, const struct prom_client *c)
{
	fputs("{job=", f);
	prom_label_value(f, c->job);
	fprintf(f, ",rank=\"%lld\"}", c->rank);
}

static void prom_clients(FILE *f, const json_t *clients)
{
	struct prom_client *pc;
	size_t n = prom_clients_collect(clients, &pc);
	if (n > 0) {
		/* families: the stats.h list, then keys only a newer daemon sends */
		json_t *keys = json_object();
		for (size_t i = 0; i < n_client_stats; i++)
			json_object_set_new(keys, client_stats[i].name, json_true());
		for (size_t c = 0; c < n; c++) {
			const char *key;
			json_t *v;
			json_object_foreach(pc[c].stats, key, v)
				if (prom_sampleable(v) && !json_object_get(keys, key))
					json_object_set_new(keys, key, json_true());
		}
		const char *key;
		json_t *dummy;
		json_object_foreach(keys, key, dummy)
		{
			const struct stat_desc *sd = stat_find(client_stats, n_client_stats, key);
			struct prom_metric m;
			char help[400];
			bool any = false;
			for (size_t c = 0; c < n && !any; c++)
				any = prom_sampleable(json_object_get(pc[c].stats, key));
			if (!any)
				continue;
			prom_metric(&m, "client_", key, sd && sd->counter, sd != NULL);
			snprintf(help, sizeof(help), "Per client (job, rank): %s", sd ? sd->help : key);
			prom_help_unit(&m, help);
			prom_family(f, m.name, sd ? (sd->counter ? "counter" : "gauge") : "untyped",
				    help);
			for (size_t c = 0; c < n; c++) {
				json_t *v = json_object_get(pc[c].stats, key);
				if (!prom_sampleable(v))
					continue;
				fputs(m.name, f);
				prom_client_labels(f, &pc[c]);
				fputc(' ', f);
				prom_value_scaled(f, v, m.scale);
				fputc('\n', f);
			}
		}
		json_decref(keys);
		for (size_t g = 0; g < NELEM(client_gauges); g++) {
			char name[160], help[200];
			bool any = false;
			for (size_t c = 0; c < n && !any; c++)
				any = json_object_get(pc[c].gauges, client_gauges[g][0]) != NULL;
			if (!any)
				continue;
			if (!strcmp(client_gauges[g][0], "connected_s"))
				snprintf(name, sizeof(name), "shuffle_client_connected_seconds");
			else if (!strcmp(client_gauges[g][0], "ring_bytes"))
				snprintf(name, sizeof(name), "shuffle_client_ring_bytes");
			else if (!strcmp(client_gauges[g][0], "send_used") ||
				 !strcmp(client_gauges[g][0], "deliver_used"))
				snprintf(name, sizeof(name), "shuffle_client_%s_bytes",
					 client_gauges[g][0]);
			else
				snprintf(name, sizeof(name), "shuffle_client_%s", client_gauges[g][0]);
			snprintf(help, sizeof(help), "Per client (job, rank): %s", client_gauges[g][1]);
			prom_family(f, name, "gauge", help);
			for (size_t c = 0; c < n; c++) {
				json_t *v = json_object_get(pc[c].gauges, client_gauges[g][0]);
				if (!v)
					continue;
				fputs(name, f);
				prom_client_labels(f, &pc[c]);
				fputc(' ', f);
				prom_value(f, v);
				fputc('\n', f);
			}
		}
	}
	for (size_t c = 0; c < n; c++) {
		json_decref(pc[c].stats);
		json_decref(pc[c].gauges);
	}
	free(pc);
}

static void prom_jobs(FILE *f, const json_t *jobs)
{
	static const char *const fields[][3] = {
		{"world", "gauge", "ranks in the job"},
		{"registered", "gauge", "ranks registered on any node"},
		{"local", "gauge", "ranks registered on this node"},
		{"gone", "gauge", "ranks that have left"},
		{"ready", "gauge", "1 once the job's world is complete"},
		{"epochs", "counter", "epochs the job completed"},
	};
	if (!json_array_size(jobs))
		return;
	for (size_t k = 0; k < NELEM(fields); k++) {
		char name[96], help[160];
		bool counter = !strcmp(fields[k][1], "counter");
		snprintf(name, sizeof(name), "shuffle_job_%s%s", fields[k][0], counter ? "_total" : "");
		snprintf(help, sizeof(help), "Per job: %s", fields[k][2]);
		prom_family(f, name, fields[k][1], help);
		size_t i;
		json_t *j;
		json_array_foreach(jobs, i, j)
		{
			json_t *v = jget(j, fields[k][0]);
			if (!prom_sampleable(v))
				continue;
			fprintf(f, "%s{job=", name);
			prom_label_value(f, jstr(j, "name", "?"));
			fputs("} ", f);
			prom_value(f, v);
			fputc('\n', f);
		}
	}
}

/* One family per entry of list, one sample per peer. */
static void prom_peer_list(FILE *f, const json_t *peers, const struct stat_desc *list, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct stat_desc *sd = &list[k];
		struct prom_metric m;
		char help[300];
		prom_metric(&m, "peer_", sd->name, sd->counter, true);
		snprintf(help, sizeof(help), "Per peer: %s", sd->help);
		prom_help_unit(&m, help);
		prom_family(f, m.name, sd->counter ? "counter" : "gauge", help);
		size_t i;
		json_t *p;
		json_array_foreach(peers, i, p)
		{
			json_t *v = jget(p, sd->name);
			if (!prom_sampleable(v))
				continue;
			fprintf(f, "%s{node=\"%lld\"} ", m.name, jint(p, "node", -1));
			prom_value_scaled(f, v, m.scale);
			fputc('\n', f);
		}
	}
}

static void prom_peers(FILE *f, const json_t *peers)
{
	if (!json_array_size(peers))
		return;
	size_t i;
	json_t *p;
	prom_family(f, "shuffle_peer_info", "gauge",
		    "Per peer: always 1; the labels name the peer's host and fabric address");
	json_array_foreach(peers, i, p)
	{
		fprintf(f, "shuffle_peer_info{node=\"%lld\",host=", jint(p, "node", -1));
		prom_label_value(f, jstr(p, "host", ""));
		fputs(",addr=", f);
		prom_label_value(f, jstr(p, "addr", ""));
		fputs("} 1\n", f);
	}
	prom_family(f, "shuffle_peer_up", "gauge", "Per peer: 1 while the peer is up, 0 once down");
	json_array_foreach(peers, i, p)
		fprintf(f, "shuffle_peer_up{node=\"%lld\"} %d\n", jint(p, "node", -1),
			!strcmp(jstr(p, "state", ""), "up") || !strcmp(jstr(p, "state", ""), "idle"));
	prom_family(f, "shuffle_peer_last_heard_seconds", "gauge",
		    "Per peer: seconds since anything was heard from the peer");
	json_array_foreach(peers, i, p)
		fprintf(f, "shuffle_peer_last_heard_seconds{node=\"%lld\"} %.9g\n",
			jint(p, "node", -1), jreal(p, "last_heard_ms", 0) / 1e3);
	prom_peer_list(f, peers, peer_stats, n_peer_stats);
	prom_peer_list(f, peers, peer_gauges, n_peer_gauges);
}

static void prom_up(FILE *f, int up)
{
	prom_family(f, "shuffle_up", "gauge", "1 when shufflectl could read the daemon's state");
	fprintf(f, "shuffle_up %d\n", up);
}

void show_prometheus_down(FILE *f)
{
	prom_up(f, 0);
}

void show_prometheus(const json_t *d, const struct prom_opts *o, FILE *f)
{
	const json_t *st = jget(d, "status");
	prom_up(f, 1);
	prom_family(f, "shuffle_info", "gauge",
		    "Always 1; the labels give the daemon's version and node");
	fputs("shuffle_info{version=", f);
	prom_label_value(f, jstr(st, "version", ""));
	fputs(",node_name=", f);
	prom_label_value(f, jstr(st, "node_name", ""));
	fprintf(f, ",node_id=\"%lld\"} 1\n", jint(st, "node_id", -1));
	prom_gauge(f, "shuffle_uptime_seconds", "Seconds since the daemon started",
		   jget(st, "uptime_s"));
	prom_gauge(f, "shuffle_nodes", "Nodes in the daemon's rendezvous", jget(st, "nodes"));
	prom_gauge(f, "shuffle_sessions", "Control connections (clients and shufflectl)",
		   jget(st, "sessions"));
	prom_gauge(f, "shuffle_clients_registered", "Registered client processes",
		   jget(st, "clients"));
	prom_gauge(f, "shuffle_jobs", "Jobs known to the daemon", jget(st, "jobs"));
	const json_t *stats = jget(d, "stats");
	prom_scope(f, jget(stats, "daemon"), "", "", daemon_stats, n_daemon_stats);
	prom_scope(f, jget(stats, "clients_total"), "clients_",
		   "Sum over all clients, connected and departed: ", client_stats,
		   n_client_stats);
	/* only from a daemon that reports its fabric endpoint */
	prom_scope(f, jget(stats, "fabric"), "fabric_", "", fabric_stats, n_fabric_stats);
	if (o->per_rank)
		prom_clients(f, jget(d, "clients"));
	prom_jobs(f, jget(d, "jobs"));
	prom_peers(f, jget(d, "peers"));
}

/* ---- --all: every node's stats with a node label (docs/shufflectl.md) */

static void prom_all_labels(FILE *f, const char *id, const json_t *a)
{
	fputs("{node=", f);
	prom_label_value(f, id);
	if (a) {
		fputs(",node_name=", f);
		prom_label_value(f, jstr(a, "node_name", ""));
	}
	fputc('}', f);
}

/* One family of a scope: a sample per node that has it. */
static void prom_all_scope(FILE *f, const json_t *nodes, const char *member, const char *scope,
			   const char *what, const struct stat_desc *d, size_t nd)
{
	for (size_t i = 0; i < nd; i++) {
		struct prom_metric m;
		char help[400];
		bool any = false;
		const char *id;
		json_t *a;
		prom_metric(&m, scope, d[i].name, d[i].counter, true);
		json_object_foreach((json_t *)nodes, id, a) {
			const json_t *v = jget(jget(a, member), d[i].name);
			if (!prom_sampleable(v))
				continue;
			if (!any) {
				snprintf(help, sizeof(help), "%s%s", what, d[i].help);
				prom_help_unit(&m, help);
				prom_family(f, m.name, d[i].counter ? "counter" : "gauge", help);
				any = true;
			}
			fputs(m.name, f);
			prom_all_labels(f, id, a);
			fputc(' ', f);
			prom_value_scaled(f, v, m.scale);
			fputc('\n', f);
		}
	}
}

void show_prometheus_all(const json_t *doc, FILE *f)
{
	const json_t *nodes = jget(doc, "nodes"), *missing = jget(doc, "missing");
	const char *id;
	json_t *a;
	prom_family(f, "shuffle_up", "gauge",
		    "1 when the node's daemon answered the cluster-wide request");
	json_object_foreach((json_t *)nodes, id, a) {
		fputs("shuffle_up", f);
		prom_all_labels(f, id, a);
		fputs(" 1\n", f);
	}
	json_object_foreach((json_t *)missing, id, a) {
		fputs("shuffle_up", f);
		prom_all_labels(f, id, NULL);
		fputs(" 0\n", f);
	}
	prom_all_scope(f, nodes, "daemon", "", "", daemon_stats, n_daemon_stats);
	prom_all_scope(f, nodes, "clients_total", "clients_",
		       "Sum over all clients, connected and departed: ", client_stats,
		       n_client_stats);
	prom_all_scope(f, nodes, "fabric", "fabric_", "", fabric_stats, n_fabric_stats);
}
