/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/render.c - shufflectl's default output: the daemon's
 * JSON document as aligned tables for people (they may change between
 * versions; scripts use --json).
 *
 * Tables are libsmartcols tables (two spaces between columns, numbers
 * right-aligned).  On a terminal (or with --width) they fit its width:
 * libsmartcols truncates the text columns flagged SCOLS_FL_TRUNC (names,
 * addresses) first, and cuts what still does not fit; on a pipe every
 * cell is whole.  The per-row tables (clients, jobs, peers) are column
 * specs {header, JSON key, formatter, help}; -o picks and orders them
 * (render_columns()).
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

/* ------------------------------------------------------------ formatting */

/* "12,345,678" */
static void fmt_count(unsigned long long v, char *buf, size_t n)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof(tmp), "%llu", v);
	size_t o = 0;
	for (int i = 0; i < len && o + 1 < n; i++) {
		if (i > 0 && (len - i) % 3 == 0 && o + 2 < n)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
}

/* "512 B", "1.5 KiB", "12.3 MiB" */
static void fmt_iec(unsigned long long v, char *buf, size_t n)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double x = (double)v;
	unsigned u = 0;
	while (x >= 1024.0 && u + 1 < NELEM(unit)) {
		x /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%llu B", v);
	else if (v % (1ull << (10 * u)) == 0) /* exact: "1 MiB", not "1.0 MiB" */
		snprintf(buf, n, "%llu %s", v >> (10 * u), unit[u]);
	else
		snprintf(buf, n, "%.1f %s", x, unit[u]);
}

/* "850 us", "12 ms", "4.2 s", "3m 05s", "2h 03m 04s", "5d 02h 03m" */
static void fmt_secs(double s, char *buf, size_t n)
{
	if (s < 0)
		s = 0;
	if (s < 0.001) {
		snprintf(buf, n, "%.0f us", s * 1e6);
	} else if (s < 1.0) {
		snprintf(buf, n, "%.0f ms", s * 1e3);
	} else if (s < 60.0) {
		snprintf(buf, n, "%.1f s", s);
	} else {
		unsigned long long t = (unsigned long long)s;
		if (t < 3600)
			snprintf(buf, n, "%llum %02llus", t / 60, t % 60);
		else if (t < 86400)
			snprintf(buf, n, "%lluh %02llum %02llus", t / 3600, t / 60 % 60, t % 60);
		else
			snprintf(buf, n, "%llud %02lluh %02llum", t / 86400, t / 3600 % 24,
				 t / 60 % 60);
	}
}

/* A counter for people: grouped digits, and bytes or nanoseconds in units
 * when the name says so ("bytes", "_hwm": bytes; "_ns": nanoseconds). */
static void fmt_stat(const char *name, const json_t *v, char *buf, size_t n)
{
	if (!json_is_integer(v)) {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		snprintf(buf, n, "%s", s ? s : "?");
		free(s);
		return;
	}
	long long x = json_integer_value(v);
	if (x < 0) {
		snprintf(buf, n, "%lld", x);
		return;
	}
	char num[40], unit[40] = "";
	fmt_count((unsigned long long)x, num, sizeof(num));
	if ((strstr(name, "bytes") || strstr(name, "_hwm")) && x >= 1024)
		fmt_iec((unsigned long long)x, unit, sizeof(unit));
	else if (strstr(name, "_ns") && x > 0)
		fmt_secs((double)x / 1e9, unit, sizeof(unit));
	if (unit[0])
		snprintf(buf, n, "%s (%s)", num, unit);
	else
		snprintf(buf, n, "%s", num);
}

/* ------------------------------------------------------------ the tables */

static void oom(void)
{
	errmsg("out of memory");
	exit(EXIT_FAIL);
}

/* --width: 0 means the terminal's (libsmartcols: $COLUMNS, else the tty's;
 * none on a pipe); else tables fit this many columns, tty or not */
static int table_width;

void render_width(int cols)
{
	table_width = cols;
}

void table_init(struct table *t)
{
	memset(t, 0, sizeof(*t));
	t->tb = scols_new_table();
	if (!t->tb)
		oom();
	if (table_width > 0) {
		scols_table_set_termforce(t->tb, SCOLS_TERMFORCE_ALWAYS);
		scols_table_set_termwidth(t->tb, (size_t)table_width);
	}
	/* too narrow even after truncation: cut the line, never wrap it */
	scols_table_enable_nowrap(t->tb, 1);
	scols_table_set_column_separator(t->tb, "  ");
}

void table_col(struct table *t, const char *head)
{
	size_t l = strlen(head);
	bool trunc = l > 0 && head[l - 1] == '~';
	l -= trunc;
	bool right = l > 0 && head[l - 1] == '>';
	if (t->ncols == NELEM(t->head))
		abort(); /* a programming error: the tables here are narrower */
	char *name = t->head[t->ncols++];
	snprintf(name, sizeof(t->head[0]), "%.*s", (int)(right ? l - 1 : l), head);
	if (!scols_table_new_column(t->tb, name, 0,
				    (right ? SCOLS_FL_RIGHT : 0) | (trunc ? SCOLS_FL_TRUNC : 0)))
		oom();
}

/* Cell col of the current line: s (owned by the table from now on), with
 * control characters blanked: one cell is one line, and a newline from a
 * peer-supplied name would break the alignment. */
static void cell_put(struct table *t, unsigned col, char *s)
{
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	if (scols_line_refer_data(t->line, col, s) < 0) /* the line owns s */
		oom();
}

static char *vfmt(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	return s;
}

void table_cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	if (t->col == 0 && !(t->line = scols_table_new_line(t->tb, NULL)))
		oom();
	va_start(ap, fmt);
	char *s = vfmt(fmt, ap);
	va_end(ap);
	cell_put(t, t->col, s);
	t->col = (t->col + 1) % t->ncols;
}

void table_row(struct table *t)
{
	if (!(t->line = scols_table_new_line(t->tb, NULL)))
		oom();
	for (unsigned c = 0; c < t->ncols; c++)
		if (scols_line_set_data(t->line, c, "-") < 0)
			oom();
	t->col = 0;
}

void table_set(struct table *t, unsigned col, const char *fmt, ...)
{
	va_list ap;
	if (!t->line || col >= t->ncols)
		abort(); /* a programming error: table_row() first, and a column it has */
	va_start(ap, fmt);
	char *s = vfmt(fmt, ap);
	va_end(ap);
	cell_put(t, col, s);
}

void table_print(struct table *t, FILE *f, int indent)
{
	if (scols_table_get_nlines(t->tb) == 0) {
		/* libsmartcols prints nothing at all for no rows: the header */
		fprintf(f, "%*s", indent, "");
		for (unsigned i = 0; i < t->ncols; i++)
			fprintf(f, "%s%s", i ? "  " : "", t->head[i]);
		fputc('\n', f);
	} else {
		char *s = NULL;
		if (scols_print_table_to_string(t->tb, &s) < 0 || !s)
			oom();
		for (const char *line = s; *line;) { /* the last line has no '\n' */
			size_t len = strcspn(line, "\n");
			fprintf(f, "%*s%.*s\n", indent, "", (int)len, line);
			line += len + (line[len] == '\n');
		}
		free(s);
	}
	table_discard(t);
}

void table_discard(struct table *t)
{
	scols_unref_table(t->tb);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------- tables of JSON rows */

/*
 * One column of a table whose rows are the objects of a JSON array.  The
 * formatter returns the cell's text: buf, or a string of the document.
 */
struct col;
typedef const char *cell_fn(const json_t *row, const struct col *c, char *buf, size_t n);
struct col {
	const char *head; /* header; a trailing '>' right-aligns (numbers), '~' may be
			   * truncated to fit the terminal (text); -o names a column
			   * by its header without them, in any case */
	const char *key;  /* member of the row; "a.b": member b of the row's object a */
	cell_fn *fmt;
	const char *def;  /* text when the member is absent or of the wrong type (NULL:
			   * as 0 for numbers, "?" for strings) */
	const char *help; /* for -o help */
};

/* The object holding the column's member, and the member's name. */
static const json_t *col_obj(const json_t *row, const struct col *c, const char **k)
{
	const char *key = c->key, *dot;
	char part[64];
	while ((dot = strchr(key, '.')) != NULL) {
		snprintf(part, sizeof(part), "%.*s", (int)(dot - key), key);
		row = jget(row, part);
		key = dot + 1;
	}
	*k = key;
	return row;
}

static bool col_present(const json_t *row, const struct col *c)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	json_t *v = jget(o, k);
	return json_is_number(v) || json_is_boolean(v);
}

static long long col_int(const json_t *row, const struct col *c)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	return jint(o, k, 0);
}

static double col_real(const json_t *row, const struct col *c)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	return jreal(o, k, 0);
}

/* 42 */
static const char *cell_int(const json_t *row, const struct col *c, char *buf, size_t n)
{
	if (c->def && !col_present(row, c))
		return c->def;
	snprintf(buf, n, "%lld", col_int(row, c));
	return buf;
}

/* 12,345 */
static const char *cell_count(const json_t *row, const struct col *c, char *buf, size_t n)
{
	fmt_count((unsigned long long)col_int(row, c), buf, n);
	return buf;
}

/* 1.5 KiB */
static const char *cell_iec(const json_t *row, const struct col *c, char *buf, size_t n)
{
	fmt_iec((unsigned long long)col_int(row, c), buf, n);
	return buf;
}

/* 1.5 KiB, or def when not positive */
static const char *cell_size(const json_t *row, const struct col *c, char *buf, size_t n)
{
	return col_int(row, c) > 0 ? cell_iec(row, c, buf, n) : c->def;
}

/* yes / no */
static const char *cell_yesno(const json_t *row, const struct col *c, char *buf, size_t n)
{
	return col_int(row, c) ? "yes" : "no";
}

/* the string; def ("?" if none) when absent or not a string */
static const char *cell_str(const json_t *row, const struct col *c, char *buf, size_t n)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	return jstr(o, k, c->def ? c->def : "?");
}

/* the string; def when absent or empty */
static const char *cell_nonempty(const json_t *row, const struct col *c, char *buf, size_t n)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	const char *s = jstr(o, k, "");
	return s[0] ? s : c->def;
}

/* seconds, as an age: "4.2 s" */
static const char *cell_secs(const json_t *row, const struct col *c, char *buf, size_t n)
{
	fmt_secs(col_real(row, c), buf, n);
	return buf;
}

/* milliseconds ago: "12 ms ago" */
static const char *cell_ago_ms(const json_t *row, const struct col *c, char *buf, size_t n)
{
	char s[40];
	fmt_secs(col_real(row, c) / 1e3, s, sizeof(s));
	snprintf(buf, n, "%s ago", s);
	return buf;
}

/* a ring's fill: the member (bytes used) over the row's ring_bytes, "37%";
 * def without a ring */
static const char *cell_fill(const json_t *row, const struct col *c, char *buf, size_t n)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	long long ring = jint(row, "ring_bytes", 0), used = jint(o, k, -1);
	if (ring <= 0 || used < 0)
		return c->def;
	snprintf(buf, n, "%lld%%", used * 100 / ring);
	return buf;
}

/* the member is a client stats object: its drops, whatever the cause */
static const char *cell_drops(const json_t *row, const struct col *c, char *buf, size_t n)
{
	const json_t *st = jget(row, c->key);
	fmt_count((unsigned long long)(jint(st, "drops_dead", 0) + jint(st, "drops_down", 0)), buf,
		  n);
	return buf;
}

/* -o: the chosen columns of the one table it applies to (indices into its
 * spec sel_spec), in the order given; nsel 0: all of them */
static const struct col *sel_spec;
static size_t sel[32], nsel;

static void show_rows(const json_t *rows, const struct col *cols, size_t ncols, FILE *f)
{
	struct table t;
	size_t idx[32], n = 0;
	if (sel_spec == cols && nsel > 0) {
		memcpy(idx, sel, nsel * sizeof(sel[0]));
		n = nsel;
	} else {
		for (size_t k = 0; k < ncols && k < NELEM(idx); k++)
			idx[n++] = k;
	}
	table_init(&t);
	for (size_t k = 0; k < n; k++)
		table_col(&t, cols[idx[k]].head);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		for (size_t k = 0; k < n; k++) {
			char buf[128];
			const struct col *c = &cols[idx[k]];
			table_cell(&t, "%s", c->fmt(row, c, buf, sizeof(buf)));
		}
	}
	table_print(&t, f, 0);
}

static const struct col job_cols[] = {
	{"JOB~", "name", cell_str, NULL,
	 "the job's name (launcher job id, SHF_JOB, ...)"},
	{"UID>", "uid", cell_int, "-1",
	 "the job's owner"},
	{"WORLD>", "world", cell_int, NULL,
	 "ranks in the job"},
	{"REGISTERED>", "registered", cell_int, NULL,
	 "ranks registered on any node"},
	{"LOCAL>", "local", cell_int, NULL,
	 "ranks registered on this node"},
	{"GONE>", "gone", cell_int, NULL,
	 "ranks that have left or were lost"},
	{"READY", "ready", cell_yesno, NULL,
	 "yes once every rank has registered"},
	{"EPOCHS>", "epochs", cell_count, NULL,
	 "epochs completed"},
	{"PHASE1>", "epoch_phase1", cell_int, NULL,
	 "ranks in phase 1 of the current epoch"},
	{"PHASE2>", "epoch_phase2", cell_int, NULL,
	 "ranks in phase 2 of the current epoch"},
	{"MISSING~", "missing", cell_nonempty, "-",
	 "ranks not registered yet"},
};

static const struct col client_cols[] = {
	{"ID>", "id", cell_int, "-1",
	 "the daemon's session id"},
	{"PID>", "pid", cell_int, "-1",
	 "the client's process id"},
	{"UID>", "uid", cell_int, "-1",
	 "the client's user id"},
	{"JOB~", "job", cell_str, "-",
	 "its job"},
	{"RANK>", "rank", cell_int, "-1",
	 "its rank in the job"},
	{"STATE", "state", cell_str, NULL,
	 "session state"},
	{"EPOCH", "epoch", cell_str, NULL,
	 "its epoch state"},
	{"BLOCKED", "blocked", cell_yesno, NULL,
	 "yes while its next record waits"},
	{"RING>", "ring_bytes", cell_size, "-",
	 "size of each of its rings"},
	{"SEND>", "send_used", cell_fill, "-",
	 "send ring fill"},
	{"DELIV>", "deliver_used", cell_fill, "-",
	 "delivery ring fill"},
	{"MSGS_IN>", "stats.msgs_in", cell_count, NULL,
	 "messages taken from its send ring"},
	{"MSGS_OUT>", "stats.msgs_out", cell_count, NULL,
	 "messages placed in its delivery ring"},
	{"BYTES_IN>", "stats.bytes_in", cell_iec, NULL,
	 "payload bytes sent"},
	{"BYTES_OUT>", "stats.bytes_out", cell_iec, NULL,
	 "payload bytes delivered"},
	{"DROPS>", "stats", cell_drops, NULL,
	 "its messages dropped (destination gone or down)"},
	{"AGE>", "connected_s", cell_secs, NULL,
	 "time since it connected"},
};

static const struct col peer_cols[] = {
	{"NODE>", "node", cell_int, "-1",
	 "the peer's node id"},
	{"HOST~", "host", cell_str, NULL,
	 "its host name"},
	{"ADDR~", "addr", cell_str, NULL,
	 "its fabric address"},
	{"STATE", "state", cell_str, NULL,
	 "up, joining, unknown, failing or down"},
	{"HEARD>", "last_heard_ms", cell_ago_ms, NULL,
	 "time since anything was heard from it"},
	{"INFLIGHT>", "inflight", cell_int, NULL,
	 "batches sent, not yet acknowledged"},
	{"QUEUED>", "queued", cell_int, NULL,
	 "batches waiting for credit"},
	{"OPEN>", "open_bytes", cell_iec, NULL,
	 "bytes in the batch being filled"},
	{"PARKED", "parked", cell_yesno, NULL,
	 "yes while its batches wait for a full delivery ring"},
	{"MSGS_OUT>", "msgs_out", cell_count, NULL,
	 "messages sent to it"},
	{"MSGS_IN>", "msgs_in", cell_count, NULL,
	 "messages received from it"},
	{"BYTES_OUT>", "bytes_out", cell_iec, NULL,
	 "batch bytes sent to it"},
	{"BYTES_IN>", "bytes_in", cell_iec, NULL,
	 "batch bytes received from it"},
	{"STALLS>", "credit_stalls", cell_count, NULL,
	 "times a batch to it waited for credit"},
	{"DROPS>", "drops_down", cell_count, NULL,
	 "messages to it dropped because it was down"},
};

/* The tables -o applies to. */
static const struct {
	const char *cmd;
	const struct col *cols;
	size_t n;
} col_tables[] = {
	{"clients", client_cols, NELEM(client_cols)},
	{"jobs", job_cols, NELEM(job_cols)},
	{"peers", peer_cols, NELEM(peer_cols)},
};

/* "RANK>" -> "RANK" */
static void col_name(const struct col *c, char *buf, size_t n)
{
	snprintf(buf, n, "%.*s", (int)strcspn(c->head, ">~"), c->head);
}

static const struct col *col_table(const char *cmd, size_t *n)
{
	for (size_t i = 0; i < NELEM(col_tables); i++)
		if (!strcmp(col_tables[i].cmd, cmd)) {
			*n = col_tables[i].n;
			return col_tables[i].cols;
		}
	return NULL;
}

bool render_has_columns(const char *cmd)
{
	size_t n;
	return col_table(cmd, &n) != NULL;
}

void render_columns_help(const char *cmd, FILE *f)
{
	size_t n;
	const struct col *cols = col_table(cmd, &n);
	if (!cols)
		return;
	fprintf(f, "Columns of '%s' (-o COL,COL,...; default: all, in this order):\n", cmd);
	for (size_t k = 0; k < n; k++) {
		char name[64];
		col_name(&cols[k], name, sizeof(name));
		fprintf(f, "  %-10s  %s\n", name, cols[k].help);
	}
}

int render_columns(const char *cmd, const char *list)
{
	size_t n;
	const struct col *cols = col_table(cmd, &n);
	if (!cols)
		return -EINVAL;
	nsel = 0;
	sel_spec = cols;
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");
		bool found = false;
		for (size_t k = 0; k < n && !found && l > 0; k++) {
			char name[64];
			col_name(&cols[k], name, sizeof(name));
			if (l == strlen(name) && !strncasecmp(p, name, l)) {
				if (nsel == NELEM(sel)) {
					errmsg("-o: at most %zu columns", NELEM(sel));
					return -EINVAL;
				}
				sel[nsel++] = k;
				found = true;
			}
		}
		if (!found) {
			char valid[512] = "";
			size_t o = 0;
			for (size_t k = 0; k < n && o < sizeof(valid); k++) {
				char name[64];
				col_name(&cols[k], name, sizeof(name));
				o += (size_t)snprintf(valid + o, sizeof(valid) - o, "%s%s", k ? "," : "",
						      name);
			}
			errmsg("-o: unknown column '%.*s' for '%s' (valid: %s)", (int)l, p, cmd,
			       valid);
			return -EINVAL;
		}
		p += l + (p[l] == ',');
	}
	if (nsel == 0) {
		errmsg("-o: no column named (see -o help)");
		return -EINVAL;
	}
	return 0;
}

void show_jobs(const json_t *a, FILE *f)
{
	if (!json_array_size(a))
		fprintf(f, "no jobs\n");
	else
		show_rows(a, job_cols, NELEM(job_cols), f);
}

void show_clients(const json_t *a, FILE *f)
{
	if (!json_array_size(a))
		fprintf(f, "no clients\n");
	else
		show_rows(a, client_cols, NELEM(client_cols), f);
}

void show_others(const json_t *doc, FILE *f)
{
	const json_t *o = jget(doc, "other_users");
	if (!o)
		return; /* root's (or the daemon's own user's) view: nothing hidden */
	const json_t *st = jget(o, "stats");
	char in[32], out[32];
	fmt_count((unsigned long long)jint(st, "msgs_in", 0), in, sizeof(in));
	fmt_count((unsigned long long)jint(st, "msgs_out", 0), out, sizeof(out));
	fprintf(f, "other users (uid %lld sees its own only): %lld job(s), %lld client(s), "
		"%s messages in, %s out\n", jint(doc, "view_uid", -1), jint(o, "jobs", 0),
		jint(o, "clients", 0), in, out);
}

void show_peers(const json_t *a, FILE *f)
{
	if (!json_array_size(a))
		fprintf(f, "no peers (this daemon is alone)\n");
	else
		show_rows(a, peer_cols, NELEM(peer_cols), f);
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

/* A job is failing: another node named another owner for it, ranks were
 * lost with their node, or messages of its ranks were dropped (each drop
 * was reported to its sender).  why: the reason, for people. */
static bool job_failing(const json_t *j, char *why, size_t n)
{
	const json_t *st = jget(j, "stats");
	long long drops = jint(st, "drops_dead", 0) + jint(st, "drops_down", 0);
	long long lost = jint(j, "lost", 0);
	if (jget(j, "conflict_node")) {
		snprintf(why, n, "owner conflict with node %lld", jint(j, "conflict_node", -1));
		return true;
	}
	if (lost > 0 || drops > 0) {
		snprintf(why, n, "%lld rank(s) lost, %lld message(s) dropped", lost, drops);
		return true;
	}
	return false;
}

/* idle (peer_idle_ms): up, heartbeats paused until it is used again */
static bool peer_ok(const json_t *p)
{
	return !strcmp(jstr(p, "state", ""), "up") || !strcmp(jstr(p, "state", ""), "idle");
}

bool health_check(const json_t *peers, const json_t *jobs, char *why, size_t n)
{
	size_t i, bad_peers = 0, bad_jobs = 0;
	json_t *v;
	char tmp[128];
	json_array_foreach(peers, i, v)
		bad_peers += !peer_ok(v);
	json_array_foreach(jobs, i, v)
		bad_jobs += job_failing(v, tmp, sizeof(tmp));
	if (!bad_peers && !bad_jobs) {
		snprintf(why, n, "ok");
		return true;
	}
	if (bad_peers && bad_jobs)
		snprintf(why, n, "degraded: %zu peer(s) not up, %zu job(s) failing", bad_peers,
			 bad_jobs);
	else if (bad_peers)
		snprintf(why, n, "degraded: %zu peer(s) not up", bad_peers);
	else
		snprintf(why, n, "degraded: %zu job(s) failing", bad_jobs);
	return false;
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
		char *txt = json_dumps(v, JSON_ENCODE_ANY);
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

/* One scope of counters: NAME, VALUE, DESCRIPTION. */
static void show_counters(const json_t *o, const struct stat_desc *d, size_t nd, FILE *f,
			  int indent)
{
	struct table t;
	table_init(&t);
	table_col(&t, "COUNTER");
	table_col(&t, "VALUE>");
	table_col(&t, "DESCRIPTION");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		char val[96];
		const struct stat_desc *sd = stat_find(d, nd, k);
		fmt_stat(k, v, val, sizeof(val));
		table_cell(&t, "%s", k);
		table_cell(&t, "%s", val);
		table_cell(&t, "%s%s", sd ? sd->help : "", sd && !sd->counter ? " [gauge]" : "");
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
	{"JOB~", "name", cell_str, NULL, "job name (the last row: the node's total)"},
	{"LOCAL>", "local", cell_int, "-", "ranks on this node"},
	{"MSGS/S>", "msgs_per_s", cell_rate, NULL, "messages taken from send rings per second"},
	{"BYTES/S>", "bytes_per_s", cell_byte_rate, NULL, "their payload bytes per second"},
	{"DELIV/S>", "msgs_out_per_s", cell_rate, NULL,
	 "messages placed in delivery rings per second"},
	{"STALLS/S>", "credit_stalls_per_s", cell_rate, NULL,
	 "times per second a sender waited for network credit"},
	{"DROPS>", "drops", cell_count, NULL, "messages dropped in the interval (rank gone, node down)"},
	{"RING%>", "ring_max_pct", cell_pct, NULL, "fill of the fullest ring (send or delivery)"},
	{"RINGS>", "ring_used", cell_iec, NULL, "bytes waiting in all rings"},
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
	{"NODE", "node", cell_str, "-", "node id (the last row: every node's total)"},
	{"NAME~", "node_name", cell_str, "-",
	 "node name, or why the node has no row: (down), (silent), ..."},
	{"JOB~", "name", cell_str, "-", "job name ((node): the node's total)"},
	{"LOCAL>", "local", cell_int, "-", "ranks on this node (node and total rows: clients)"},
	{"MSGS/S>", "msgs_per_s", cell_rate, "-", "messages taken from send rings per second"},
	{"BYTES/S>", "bytes_per_s", cell_byte_rate, "-", "their payload bytes per second"},
	{"DELIV/S>", "msgs_out_per_s", cell_rate, "-",
	 "messages placed in delivery rings per second"},
	{"STALLS/S>", "credit_stalls_per_s", cell_rate, "-",
	 "times per second a sender waited for network credit"},
	{"DROPS>", "drops", cell_count, "-", "messages dropped in the interval"},
	{"RING%>", "ring_max_pct", cell_pct, "-", "fill of the fullest ring (send or delivery)"},
	{"RINGS>", "ring_used", cell_iec, "-", "bytes waiting in all rings"},
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
	size_t n = json_object_size(nodes) + json_object_size(missing);
	long long *ids = xrealloc(NULL, sizeof(*ids) * (n ? n : 1));
	size_t k = 0;
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)nodes, key, v)
		ids[k++] = strtoll(key, NULL, 10);
	json_object_foreach((json_t *)missing, key, v)
		ids[k++] = strtoll(key, NULL, 10);
	for (size_t i = 1; i < k; i++) /* insertion sort: a row per node */
		for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			long long x = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = x;
		}
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
