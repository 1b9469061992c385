/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/all.c - shufflectl --all: the combined answer of every
 * node (docs/shufflectl.md, "--all") as one table, a row per node (those
 * without an answer marked with why) and a row of totals; for the control
 * commands, each node's outcome.  The tables are render.c's (libsmartcols).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/shufflectl/shufflectl.h"
#include "client/shufflectl/table.h"

#define ALL_COLS 10

/* The sum of member k of member scope (NULL: the answer itself) over nodes. */
struct sums {
	long long v[ALL_COLS];
};

static long long num(const json_t *a, const char *scope, const char *k)
{
	return jint(scope ? jget(a, scope) : a, k, 0);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

long long *all_node_ids(const json_t *doc, size_t *n)
{
	const json_t *objs[2] = {jget(doc, "nodes"), jget(doc, "missing")};
	long long *ids = NULL;
	size_t k = 0;
	for (int i = 0; i < 2; i++) {
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)objs[i], key, v) {
			ids = xrealloc(ids, sizeof(*ids) * (k + 1));
			ids[k++] = strtoll(key, NULL, 10);
		}
	}
	if (k > 1)
		qsort(ids, k, sizeof(*ids), cmp_ll);
	*n = k;
	return ids;
}

/* One command's columns after ID, NAME, STATE: header (as table_col's:
 * '>' right-aligned numbers, grouped as in the one-node tables) and value.
 * On a narrow terminal they are left out from the right; NODE, NAME and
 * STATE always show. */
struct all_col {
	const char *head;
	const char *scope; /* member holding k; NULL: the answer itself */
	const char *k;     /* NULL: computed (see value()) */
};

static const struct all_col status_cols[] = {
	{"VERSION", NULL, "version"}, {"UPTIME>", NULL, "uptime_s"},
	{"SESSIONS>", NULL, "sessions"}, {"CLIENTS>", NULL, "clients"}, {"JOBS>", NULL, "jobs"},
};
static const struct all_col peers_cols[] = {
	{"PEERS>", NULL, NULL}, {"UP>", NULL, NULL}, {"NOT_UP", NULL, NULL},
};
static const struct all_col jobs_cols[] = {
	{"JOBS>", NULL, NULL}, {"LOCAL_RANKS>", NULL, NULL}, {"MSGS_OUT>", NULL, NULL},
	{"MSGS_IN>", NULL, NULL}, {"OTHER_USERS_JOBS>", "other_users", "jobs"},
};
static const struct all_col clients_cols[] = {
	{"CLIENTS>", NULL, NULL}, {"MSGS_OUT>", NULL, NULL}, {"MSGS_IN>", NULL, NULL},
	{"OTHER_USERS_CLIENTS>", "other_users", "clients"},
};
static const struct all_col stats_cols[] = {
	{"MSGS_OUT>", "clients_total", "msgs_out"}, {"MSGS_IN>", "clients_total", "msgs_in"},
	{"DROPS_DEAD>", "clients_total", "drops_dead"}, {"DROPS_DOWN>", "clients_total", "drops_down"},
	{"BATCHES_OUT>", "daemon", "batches_out"}, {"WIRE_BAD>", "daemon", "wire_bad"},
};

/* Computed cells: true and *v set when (cmd, col) is one. */
static bool value(const char *cmd, unsigned col, const json_t *a, long long *v, char *text,
		  size_t n)
{
	*text = '\0';
	if (!strcmp(cmd, "peers")) {
		const json_t *ps = jget(a, "peers");
		long long up = 0, all = (long long)json_array_size(ps);
		size_t i, used = 0;
		json_t *p;
		json_array_foreach(ps, i, p) {
			if (!strcmp(jstr(p, "state", ""), "up") ||
			    !strcmp(jstr(p, "state", ""), "idle")) {
				up++;
			} else if (used + 16 < n) {
				used += (size_t)snprintf(text + used, n - used, "%s%lld",
							 used ? "," : "", jint(p, "node", -1));
			}
		}
		*v = col == 0 ? all : col == 1 ? up : all - up;
		if (col != 2)
			*text = '\0'; /* the list is NOT_UP's */
		return true;
	}
	const char *arr = !strcmp(cmd, "jobs") ? "jobs" : !strcmp(cmd, "clients") ? "clients" : NULL;
	if (!arr)
		return false;
	const json_t *rows = jget(a, arr);
	size_t i;
	json_t *r;
	*v = 0;
	if (col == 0) {
		*v = (long long)json_array_size(rows);
		return true;
	}
	unsigned base = !strcmp(cmd, "jobs") ? 1 : 0; /* jobs: LOCAL_RANKS first */
	json_array_foreach(rows, i, r) {
		if (base && col == 1)
			*v += jint(r, "local", 0);
		else if (col == 1 + base)
			*v += num(r, "stats", "msgs_out");
		else if (col == 2 + base)
			*v += num(r, "stats", "msgs_in");
		else
			return false;
	}
	return true;
}

/* A count as the one-node tables show it: "1,234,567" (a negative as is). */
static void fmt_num(long long v, char *buf, size_t n)
{
	if (v < 0)
		snprintf(buf, n, "%lld", v);
	else
		fmt_count((unsigned long long)v, buf, n);
}

bool show_all(const json_t *doc, const char *cmd, FILE *f)
{
	const struct all_col *cols;
	size_t nc;
	if (!strcmp(cmd, "status")) {
		cols = status_cols, nc = NELEM(status_cols);
	} else if (!strcmp(cmd, "peers")) {
		cols = peers_cols, nc = NELEM(peers_cols);
	} else if (!strcmp(cmd, "jobs")) {
		cols = jobs_cols, nc = NELEM(jobs_cols);
	} else if (!strcmp(cmd, "clients")) {
		cols = clients_cols, nc = NELEM(clients_cols);
	} else if (!strcmp(cmd, "stats")) {
		cols = stats_cols, nc = NELEM(stats_cols);
	} else {
		cols = NULL, nc = 0; /* ping: who answered */
	}
	struct table t;
	table_init(&t);
	table_col(&t, "NODE");
	table_col(&t, "NAME");
	table_col(&t, "STATE~"); /* an error's text */
	for (size_t c = 0; c < nc; c++)
		table_col_drop(&t, cols[c].head, (unsigned)c + 1);
	struct sums s = {{0}};
	size_t n, answered = 0, missing = 0;
	long long *ids = all_node_ids(doc, &n);
	for (size_t i = 0; i < n; i++) {
		char k[32];
		snprintf(k, sizeof(k), "%lld", ids[i]);
		const json_t *a = jget(jget(doc, "nodes"), k);
		const json_t *m = jget(jget(doc, "missing"), k);
		table_row(&t);
		table_set(&t, 0, "%lld", ids[i]);
		if (!a) {
			missing++;
			table_set(&t, 1, "%s", jstr(m, "host", "-")); /* a silent member's name */
			table_set(&t, 2, "%s", jstr(m, "state", "?"));
			if (jget(m, "via"))
				table_set(&t, 3, "via node %lld", jint(m, "via", -1));
			continue;
		}
		answered++;
		table_set(&t, 1, "%s", jstr(a, "node_name", "?"));
		table_set(&t, 2, "%s", jget(a, "error") ? jstr(a, "error", "") : "ok");
		for (size_t c = 0; c < nc; c++) {
			long long v;
			char text[256];
			if (value(cmd, (unsigned)c, a, &v, text, sizeof(text))) {
				s.v[c] += v;
				if (!text[0])
					fmt_num(v, text, sizeof(text));
				table_set(&t, 3 + (unsigned)c, "%s", text);
				continue;
			}
			const json_t *x = jget(cols[c].scope ? jget(a, cols[c].scope) : a, cols[c].k);
			if (json_is_string(x)) {
				table_set(&t, 3 + (unsigned)c, "%s", json_string_value(x));
			} else if (json_is_real(x)) { /* uptime_s, as status shows it */
				fmt_secs(json_real_value(x), text, sizeof(text));
				table_set(&t, 3 + (unsigned)c, "%s", text);
			} else if (json_is_integer(x)) {
				s.v[c] += json_integer_value(x);
				fmt_num(json_integer_value(x), text, sizeof(text));
				table_set(&t, 3 + (unsigned)c, "%s", text);
			}
		}
	}
	table_row(&t);
	table_set(&t, 0, "total");
	table_set(&t, 1, "%zu nodes", n);
	table_set(&t, 2, "%zu ok, %zu not", answered, missing);
	for (size_t c = 0; c < nc; c++)
		if (strcmp(cols[c].head, "VERSION") && strcmp(cols[c].head, "UPTIME>") &&
		    strcmp(cols[c].head, "NOT_UP")) {
			char text[40];
			fmt_num(s.v[c], text, sizeof(text));
			table_set(&t, 3 + (unsigned)c, "%s", text);
		}
	table_print(&t, f, 0);
	fprintf(f, "answered in %.0f ms (timeout %lld ms, fan-out %lld, from node %lld)\n",
		jreal(doc, "elapsed_ms", 0), jint(doc, "timeout_ms", 0), jint(doc, "fanout", 0),
		jint(doc, "root", -1));
	free(ids);
	return missing == 0;
}

/* One node's outcome of a control command: ok, refused (-EPERM), not here
 * (-ENOENT: no such job or rank on that node), failed. */
static const char *outcome(const json_t *a)
{
	if (!jget(a, "error"))
		return "ok";
	long long e = jint(a, "error", 0);
	return e == -1 ? "refused" : e == -2 ? "not here" : "failed";
}

/* What a node that acted did, in a few words. */
static void acted(const json_t *a, const char *cmd, char *buf, size_t n)
{
	if (!strcmp(cmd, "log-level"))
		snprintf(buf, n, "log level %s (was %s)", jstr(a, "log_level", "?"),
			 jstr(a, "previous", "?"));
	else if (!strcmp(cmd, "cutoff"))
		snprintf(buf, n, "cut off client %lld (rank %lld pid %lld)", jint(a, "client", -1),
			 jint(a, "rank", -1), jint(a, "pid", -1));
	else
		snprintf(buf, n, "drained: %lld session%s cut off", jint(a, "clients", 0),
			 jint(a, "clients", 0) == 1 ? "" : "s");
}

int show_control_all(const json_t *doc, const char *cmd, FILE *f)
{
	struct table t;
	table_init(&t);
	table_col(&t, "NODE");
	table_col(&t, "NAME");
	table_col(&t, "OUTCOME");
	table_col(&t, "DETAIL~"); /* free text */
	size_t n, ok = 0, here_not = 0, bad = 0, missing = 0;
	long long *ids = all_node_ids(doc, &n);
	for (size_t i = 0; i < n; i++) {
		char k[32], text[400];
		snprintf(k, sizeof(k), "%lld", ids[i]);
		const json_t *a = jget(jget(doc, "nodes"), k);
		table_row(&t);
		table_set(&t, 0, "%lld", ids[i]);
		if (!a) {
			const json_t *m = jget(jget(doc, "missing"), k);
			missing++;
			table_set(&t, 1, "%s", jstr(m, "host", "-"));
			table_set(&t, 2, "%s", jstr(m, "state", "?"));
			if (jget(m, "via"))
				table_set(&t, 3, "via node %lld", jint(m, "via", -1));
			continue;
		}
		const char *out = outcome(a);
		table_set(&t, 1, "%s", jstr(a, "node_name", "?"));
		table_set(&t, 2, "%s", out);
		if (!strcmp(out, "ok")) {
			ok++;
			acted(a, cmd, text, sizeof(text));
			table_set(&t, 3, "%s", text);
		} else {
			here_not += !strcmp(out, "not here");
			bad += strcmp(out, "not here") != 0;
			table_set(&t, 3, "%s", jstr(a, "message", "?"));
		}
	}
	table_row(&t);
	table_set(&t, 0, "total");
	table_set(&t, 1, "%zu nodes", n);
	table_set(&t, 2, "%zu ok", ok);
	table_set(&t, 3, "%zu not here, %zu refused or failed, %zu without an answer", here_not, bad,
		 missing);
	if (f) {
		table_print(&t, f, 0);
		fprintf(f, "answered in %.0f ms (timeout %lld ms, fan-out %lld, from node %lld)\n",
			jreal(doc, "elapsed_ms", 0), jint(doc, "timeout_ms", 0),
			jint(doc, "fanout", 0), jint(doc, "root", -1));
	} else {
		table_discard(&t);
	}
	free(ids);
	if (bad || !ok)
		return EXIT_FAIL;
	return missing ? EXIT_DEGRADED : EXIT_OK;
}
