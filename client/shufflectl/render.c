/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/render.c - shufflectl's default output: the daemon's
 * JSON document as aligned tables for people (they may change between
 * versions; scripts use --json): status, stats, config, dump and top, on
 * table.c's engine (the per-row tables of clients, jobs and peers are
 * there too).
 * The counter tables list every member of a scope, described from
 * proto/stats.h; a member this build does not know is shown without a
 * description.
 */
#include <errno.h>
#include <libsmartcols.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/shufflectl/shufflectl.h"
#include "client/shufflectl/table.h"
#include "proto/stats.h"

/* ---------------------------------------------------- the counter lists */

#define KIND_COUNTER true
#define KIND_GAUGE false
#define STAT_DESC(name, kind, help) {#name, KIND_##kind, help},
const struct stat_desc daemon_stats[] = {SHF_DAEMON_STATS(STAT_DESC)};
const struct stat_desc client_stats[] = {SHF_CLIENT_STATS(STAT_DESC)};
const struct stat_desc peer_stats[] = {SHF_PEER_STATS(STAT_DESC)};
const struct stat_desc fabric_stats[] = {SHF_FABRIC_STATS(STAT_DESC)};
#undef STAT_DESC
const size_t n_daemon_stats = NELEM(daemon_stats);
const size_t n_client_stats = NELEM(client_stats);
const size_t n_peer_stats = NELEM(peer_stats);
const size_t n_fabric_stats = NELEM(fabric_stats);

/* The peer gauges: members of peers[] beside the SHF_PEER_STATS counters,
 * the state of the link (credit, queues) rather than counters. */
const struct stat_desc peer_gauges[] = {
	{"inflight", false, "batches sent to this peer and not yet acknowledged"},
	{"queued", false, "closed batches to this peer waiting for credit"},
	{"open_bytes", false, "bytes in the batch being filled for this peer"},
	{"waiters", false, "clients waiting for room toward this peer"},
	{"parked", false, "1 while batches from this peer are parked on a full delivery ring"},
};
const size_t n_peer_gauges = NELEM(peer_gauges);

const struct stat_desc *stat_find(const struct stat_desc *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

/* ------------------------------------------------------ other renderers */

/* A key/value list: keys padded to a common width. */
struct kv {
	unsigned n;
	char *k[32], *v[32];
};

static void kv_add(struct kv *l, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kv_add(struct kv *l, const char *k, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	if (l->n == NELEM(l->k))
		return;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	l->k[l->n] = strdup(k);
	l->v[l->n++] = s;
}

static void kv_print(struct kv *l, FILE *f)
{
	int w = 0;
	for (unsigned i = 0; i < l->n; i++)
		if (l->k[i] && (int)strlen(l->k[i]) > w)
			w = (int)strlen(l->k[i]);
	for (unsigned i = 0; i < l->n; i++) {
		fprintf(f, "%-*s  %s\n", w, l->k[i] ? l->k[i] : "?", l->v[i]);
		free(l->k[i]);
		free(l->v[i]);
	}
	l->n = 0;
}

void show_status(const json_t *s, const json_t *peers, const json_t *jobs, FILE *f)
{
	char up[64];
	struct kv l = {0};
	fmt_secs(jreal(s, "uptime_s", 0), up, sizeof(up));
	kv_add(&l, "daemon", "shuffled %s, pid %lld", jstr(s, "version", "?"), jint(s, "pid", -1));
	kv_add(&l, "node", "%s (node %lld of %lld)", jstr(s, "node_name", "?"),
	       jint(s, "node_id", -1), jint(s, "nodes", -1));
	kv_add(&l, "socket", "%s", jstr(s, "socket", "?"));
	kv_add(&l, "uptime", "%s", up);
	kv_add(&l, "sessions", "%lld connected, %lld registered clients", jint(s, "sessions", 0),
	       jint(s, "clients", 0));
	if (!peers && !jobs) {
		kv_add(&l, "jobs", "%lld", jint(s, "jobs", 0));
	} else {
		/* peers: "2 up, 1 down (node 2 n3)"; jobs: "3, 1 failing (a: why)" */
		static const char *const states[] = {"up", "idle", "joining", "unknown", "failing",
						       "down"};
		char line[512] = "", bad[256] = "";
		size_t o = 0, ob = 0, i;
		json_t *v;
		for (size_t k = 0; k < NELEM(states); k++) {
			size_t cnt = 0;
			json_array_foreach(peers, i, v)
				cnt += !strcmp(jstr(v, "state", ""), states[k]);
			if (cnt && o < sizeof(line))
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%zu %s",
						      o ? ", " : "", cnt, states[k]);
		}
		json_array_foreach(peers, i, v)
			if (!peer_ok(v) && ob < sizeof(bad))
				ob += (size_t)snprintf(bad + ob, sizeof(bad) - ob, "%snode %lld %s %s",
						       ob ? ", " : "", jint(v, "node", -1),
						       jstr(v, "host", "?"), jstr(v, "state", "?"));
		if (!json_array_size(peers))
			kv_add(&l, "peers", "none (this daemon is alone)");
		else
			kv_add(&l, "peers", "%s%s%s%s", line, ob ? " (" : "", bad, ob ? ")" : "");
		size_t nfail = 0;
		ob = 0;
		bad[0] = '\0';
		json_array_foreach(jobs, i, v)
		{
			char why[128];
			if (!job_failing(v, why, sizeof(why)))
				continue;
			nfail++;
			if (ob < sizeof(bad))
				ob += (size_t)snprintf(bad + ob, sizeof(bad) - ob, "%s%s: %s",
						       ob ? "; " : "", jstr(v, "name", "?"), why);
		}
		if (nfail)
			kv_add(&l, "jobs", "%lld, %zu failing (%s)", jint(s, "jobs", 0), nfail, bad);
		else
			kv_add(&l, "jobs", "%lld", jint(s, "jobs", 0));
	}
	/* scalars a newer daemon adds */
	static const char *const known[] = {"version", "pid", "node_name", "node_id", "nodes",
					    "socket", "uptime_s", "sessions", "clients", "jobs",
					    "schema", "command", NULL};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)s, k, v)
	{
		bool seen = false;
		for (const char *const *q = known; *q; q++)
			seen |= !strcmp(*q, k);
		if (seen || json_is_object(v) || json_is_array(v))
			continue;
		if (json_is_string(v)) { /* peer_auth  key, not "key" */
			kv_add(&l, k, "%s", json_string_value(v));
			continue;
		}
		char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
		kv_add(&l, k, "%s", txt ? txt : "?");
		free(txt);
	}
	if (peers || jobs) { /* the verdict last */
		char h[160];
		health_check(peers, jobs, h, sizeof(h));
		kv_add(&l, "health", "%s", h);
	}
	kv_print(&l, f);
}

/* The next line of words of text, at most w columns (a longer word whole):
 * its length; *next_p is where the line after it starts. */
static size_t wrap_line(const char *text, size_t w, const char **next_p)
{
	size_t len = 0, l = 0;
	for (;;) {
		size_t word = strcspn(text + l, " ");
		if (len && l + word > w)
			break;
		len = l + word;
		l = len + strspn(text + len, " ");
		if (!text[len])
			break;
	}
	*next_p = text + l;
	return len;
}

/* One scope of counters: NAME, VALUE, DESCRIPTION.  On a terminal the
 * descriptions are wrapped between words to the room the names and
 * values leave (continuation lines under DESCRIPTION), or left out when
 * less than 24 columns remain. */
static void show_counters(const json_t *o, const struct stat_desc *d, size_t nd, FILE *f,
			  int indent)
{
	struct table t;
	const char *k;
	json_t *v;
	size_t kw = strlen("COUNTER"), vw = strlen("VALUE"), room = 0;
	int term = table_term_width();
	json_object_foreach((json_t *)o, k, v)
	{
		char val[96];
		fmt_stat(k, v, val, sizeof(val));
		kw = strlen(k) > kw ? strlen(k) : kw;
		vw = strlen(val) > vw ? strlen(val) : vw;
	}
	if (term > 0)
		room = (size_t)term > indent + kw + vw + 4 ? (size_t)term - indent - kw - vw - 4 : 0;
	table_init(&t);
	table_col(&t, "COUNTER");
	table_col(&t, "VALUE>");
	table_col_drop(&t, "DESCRIPTION", 1);
	json_object_foreach((json_t *)o, k, v)
	{
		char val[96], desc[256];
		const struct stat_desc *sd = stat_find(d, nd, k);
		fmt_stat(k, v, val, sizeof(val));
		snprintf(desc, sizeof(desc), "%s%s", sd ? sd->help : "",
			 sd && !sd->counter ? " [gauge]" : "");
		table_cell(&t, "%s", k);
		table_cell(&t, "%s", val);
		if (term <= 0 || room < 24) {
			table_cell(&t, "%s", desc);
			continue;
		}
		const char *p = desc, *next;
		size_t len = wrap_line(p, room, &next);
		table_cell(&t, "%.*s", (int)len, p);
		for (p = next; *p; p = next) {
			len = wrap_line(p, room, &next);
			table_cell(&t, "%s", "");
			table_cell(&t, "%s", "");
			table_cell(&t, "%.*s", (int)len, p);
		}
	}
	table_print(&t, f, indent);
}

void show_stats(const json_t *s, FILE *f)
{
	fprintf(f, "Daemon:\n");
	show_counters(jget(s, "daemon"), daemon_stats, n_daemon_stats, f, 2);
	fprintf(f, "\nAll clients (connected and departed):\n");
	show_counters(jget(s, "clients_total"), client_stats, n_client_stats, f, 2);
	/* a daemon without a fabric endpoint (or an older one) sends none */
	const json_t *fab = jget(s, "fabric");
	if (json_is_object(fab)) {
		fprintf(f, "\nFabric (libfabric endpoint):\n");
		show_counters(fab, fabric_stats, n_fabric_stats, f, 2);
	}
}

void show_config(const json_t *cfg, FILE *f)
{
	struct table t;
	table_init(&t);
	table_col(&t, "OPTION");
	table_col(&t, "VALUE");
	table_col(&t, "SOURCE");
	const char *k;
	json_t *e;
	json_object_foreach((json_t *)cfg, k, e)
	{
		json_t *v = jget(e, "value");
		const char *type = jstr(e, "type", "");
		char val[4200];
		if (json_is_string(v)) {
			const char *s = json_string_value(v);
			snprintf(val, sizeof(val), "%s", s[0] ? s : "\"\"");
		} else if (json_is_integer(v) && !strcmp(type, "size")) {
			long long x = json_integer_value(v);
			char iec[32];
			fmt_iec((unsigned long long)x, iec, sizeof(iec));
			if (x >= 1024)
				snprintf(val, sizeof(val), "%s (%lld)", iec, x);
			else
				snprintf(val, sizeof(val), "%lld", x);
		} else {
			char *s = json_dumps(v, JSON_ENCODE_ANY);
			snprintf(val, sizeof(val), "%s", s ? s : "?");
			free(s);
		}
		table_cell(&t, "%s", k);
		table_cell(&t, "%s", val);
		table_cell(&t, "%s", jstr(e, "source", "?"));
	}
	table_print(&t, f, 0);
}

static void show_ids(const char *what, const json_t *a, FILE *f)
{
	fprintf(f, "%-6s", what);
	if (!json_array_size(a))
		fprintf(f, " (empty)");
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
		fprintf(f, " %lld", (long long)json_integer_value(v));
	fputc('\n', f);
}

void show_dump(const json_t *d, FILE *f)
{
	fprintf(f, "== status ==\n");
	show_status(jget(d, "status"), jget(d, "peers"), jget(d, "jobs"), f);
	fprintf(f, "\n== stats ==\n");
	show_stats(jget(d, "stats"), f);
	fprintf(f, "\n== jobs ==\n");
	show_jobs(jget(d, "jobs"), f);
	fprintf(f, "\n== clients ==\n");
	show_clients(jget(d, "clients"), f);
	show_others(d, f);
	fprintf(f, "\n== peers ==\n");
	show_peers(jget(d, "peers"), f);
	fprintf(f, "\n== relay (client ids) ==\n");
	const json_t *r = jget(d, "relay");
	show_ids("runq", jget(r, "runq"), f);
	show_ids("dirty", jget(r, "dirty"), f);
	show_ids("marks", jget(r, "marks"), f);
}

/* ---------------------------------------------------------------- top */

/* a rate: "0.5", "12,345" */
static const char *cell_rate(const json_t *row, const struct col *c, char *buf, size_t n)
{
	double v = col_real(row, c);
	if (v < 10.0)
		snprintf(buf, n, "%.1f", v);
	else
		fmt_count((unsigned long long)(v + 0.5), buf, n);
	return buf;
}

/* bytes per second: "1.5 MiB/s" */
static const char *cell_byte_rate(const json_t *row, const struct col *c, char *buf, size_t n)
{
	char s[32];
	fmt_iec((unsigned long long)(col_real(row, c) + 0.5), s, sizeof(s));
	snprintf(buf, n, "%s/s", s);
	return buf;
}

/* a percentage: "37%" */
static const char *cell_pct(const json_t *row, const struct col *c, char *buf, size_t n)
{
	snprintf(buf, n, "%.0f%%", col_real(row, c));
	return buf;
}

static const struct col top_cols[] = {
	{"JOB", "name", cell_str, NULL, "job name (the last row: the node's total)", 0},
	{"LOCAL>", "local", cell_int, "-", "ranks on this node", 3},
	{"MSGS/S>", "msgs_per_s", cell_rate, NULL, "messages taken from send rings per second", 0},
	{"BYTES/S>", "bytes_per_s", cell_byte_rate, NULL, "their payload bytes per second", 1},
	{"DELIV/S>", "msgs_out_per_s", cell_rate, NULL,
	 "messages placed in delivery rings per second", 2},
	{"STALLS/S>", "credit_stalls_per_s", cell_rate, NULL,
	 "times per second a sender waited for network credit", 4},
	{"DROPS>", "drops", cell_count, NULL, "messages dropped in the interval (rank gone, node down)", 0},
	{"RING%>", "ring_max_pct", cell_pct, NULL, "fill of the fullest ring (send or delivery)", 5},
	{"RINGS>", "ring_used", cell_iec, NULL, "bytes waiting in all rings", 6},
};

void show_top(const json_t *top, FILE *f)
{
	const json_t *node = jget(top, "node");
	char secs[40];
	fmt_secs(jreal(top, "interval_s", 0), secs, sizeof(secs));
	fprintf(f, "node %s (id %lld): %lld client(s), rates over %s\n", jstr(top, "node_name", "?"),
		jint(top, "node_id", -1), jint(node, "clients", 0), secs);
	json_t *rows = json_copy(jget(top, "jobs"));
	json_t *total = json_copy((json_t *)node);
	if (!rows || !total)
		oom();
	json_object_set_new(total, "name", json_string("(node)"));
	json_array_append_new(rows, total);
	show_rows(rows, top_cols, NELEM(top_cols), f);
	json_decref(rows);
	show_others(top, f);
}

static const struct col top_all_cols[] = {
	{"NODE", "node", cell_str, "-", "node id (the last row: every node's total)", 0},
	{"NAME", "node_name", cell_str, "-",
	 "node name, or why the node has no row: (down), (silent), ...", 0},
	{"JOB", "name", cell_str, "-", "job name ((node): the node's total)", 0},
	{"LOCAL>", "local", cell_int, "-", "ranks on this node (node and total rows: clients)", 4},
	{"MSGS/S>", "msgs_per_s", cell_rate, "-", "messages taken from send rings per second", 0},
	{"BYTES/S>", "bytes_per_s", cell_byte_rate, "-", "their payload bytes per second", 2},
	{"DELIV/S>", "msgs_out_per_s", cell_rate, "-",
	 "messages placed in delivery rings per second", 3},
	{"STALLS/S>", "credit_stalls_per_s", cell_rate, "-",
	 "times per second a sender waited for network credit", 5},
	{"DROPS>", "drops", cell_count, "-", "messages dropped in the interval", 1},
	{"RING%>", "ring_max_pct", cell_pct, "-", "fill of the fullest ring (send or delivery)", 6},
	{"RINGS>", "ring_used", cell_iec, "-", "bytes waiting in all rings", 7},
};

/* row o (a copy) with the node's id and name set */
static void top_all_row(json_t *rows, const json_t *o, const char *id, const char *name)
{
	json_t *r = o ? json_copy((json_t *)o) : json_object();
	if (!r)
		oom();
	json_object_set_new(r, "node", json_string(id));
	json_object_set_new(r, "node_name", json_string(name));
	json_array_append_new(rows, r);
}

void show_top_all(const json_t *doc, FILE *f)
{
	const json_t *nodes = jget(doc, "nodes"), *missing = jget(doc, "missing");
	size_t k;
	long long *ids = all_node_ids(doc, &k);
	json_t *rows = json_array();
	if (!rows)
		oom();
	for (size_t i = 0; i < k; i++) {
		char id[32];
		snprintf(id, sizeof(id), "%lld", ids[i]);
		const json_t *a = jget(nodes, id);
		if (!a) {
			char why[64];
			const json_t *m = jget(missing, id); /* a silent member keeps its name */
			if (jget(m, "host"))
				snprintf(why, sizeof(why), "%.40s (%s)", jstr(m, "host", ""),
					 jstr(m, "state", "?"));
			else
				snprintf(why, sizeof(why), "(%s)", jstr(m, "state", "?"));
			top_all_row(rows, NULL, id, why);
			continue;
		}
		const char *name = jstr(a, "node_name", "?");
		size_t x;
		json_t *j;
		json_array_foreach(jget(a, "jobs"), x, j)
			top_all_row(rows, j, id, name);
		json_t *node = json_copy(jget(a, "node"));
		if (!node)
			oom();
		json_object_set_new(node, "name", json_string("(node)"));
		json_object_set(node, "local", jget(node, "clients"));
		top_all_row(rows, node, id, name);
		json_decref(node);
	}
	json_t *tot = json_copy(jget(doc, "totals"));
	if (!tot)
		tot = json_object();
	if (!tot)
		oom();
	char nn[48];
	snprintf(nn, sizeof(nn), "%zu nodes", k);
	json_object_set_new(tot, "name", json_string("(all)"));
	json_object_set(tot, "local", jget(tot, "clients"));
	top_all_row(rows, tot, "total", nn);
	json_decref(tot);
	fprintf(f, "%zu nodes, %zu answered; rates over %.1f s (each node's own clock)\n", k,
		json_object_size(nodes), jreal(doc, "interval_s", 0));
	show_rows(rows, top_all_cols, NELEM(top_all_cols), f);
	json_decref(rows);
	free(ids);
}
