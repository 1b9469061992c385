/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/table.c - shufflectl's table engine: libsmartcols
 * tables (struct table), tables whose rows are the objects of a JSON array
 * (column specs {header, JSON key, formatter, help}: struct col), the
 * number formats they share with render.c, and the per-row tables of
 * clients, jobs and peers with -o (render_columns()) picking and ordering
 * their columns (private interface: table.h).
 *
 * Tables are libsmartcols tables (two spaces between columns, numbers
 * right-aligned).  On a terminal (or with --width) they fit its width the
 * way ps and lsblk do: columns that have a drop rank are left out, the
 * highest rank first, until the table fits; then free text (descriptions,
 * lists: SCOLS_FL_TRUNC) may be cut.  An identifier (a job, a host, a
 * node name) is never cut: a table that cannot fit otherwise is printed
 * whole.  On a pipe every column and every cell is whole.
 */
#include <errno.h>
#include <libsmartcols.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "client/shufflectl/shufflectl.h"
#include "client/shufflectl/table.h"
/* ------------------------------------------------------------ formatting */

/* "12,345,678" */
void fmt_count(unsigned long long v, char *buf, size_t n)
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
void fmt_iec(unsigned long long v, char *buf, size_t n)
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
void fmt_secs(double s, char *buf, size_t n)
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
void fmt_stat(const char *name, const json_t *v, char *buf, size_t n)
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

void oom(void)
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
	/* the width is table_fit()'s: never libsmartcols' own guess */
	scols_table_set_termforce(t->tb, SCOLS_TERMFORCE_NEVER);
	/* too narrow even after truncation: cut the line, never wrap it */
	scols_table_enable_nowrap(t->tb, 1);
	scols_table_set_column_separator(t->tb, "  ");
}

int table_term_width(void)
{
	if (table_width > 0)
		return table_width;
	if (!isatty(STDOUT_FILENO))
		return 0;
	const char *e = getenv("COLUMNS");
	char *end;
	long v = e ? strtol(e, &end, 10) : 0;
	if (e && *e && !*end && v > 0 && v < 100000)
		return (int)v;
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* Columns on screen, a UTF-8 string (a code point is a column here). */
static size_t text_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

void table_col(struct table *t, const char *head)
{
	table_col_drop(t, head, 0);
}

void table_col_drop(struct table *t, const char *head, unsigned drop)
{
	size_t l = strlen(head);
	bool trunc = l > 0 && head[l - 1] == '~';
	l -= trunc;
	bool right = l > 0 && head[l - 1] == '>';
	if (t->ncols == NELEM(t->head))
		abort(); /* a programming error: the tables here are narrower */
	t->drop[t->ncols] = drop;
	t->trunc[t->ncols] = trunc;
	char *name = t->head[t->ncols++];
	snprintf(name, sizeof(t->head[0]), "%.*s", (int)(right ? l - 1 : l), head);
	t->width[t->ncols - 1] = text_width(name);
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
	size_t w = text_width(s);
	if (w > t->width[col])
		t->width[col] = w;
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

/*
 * Fit the terminal (table_term_width(), less the indent): leave out the
 * columns with the highest drop rank (the rightmost of equal ranks) until
 * the table fits; then let libsmartcols cut free text if that is enough,
 * else print the lines whole.
 */
static void table_fit(struct table *t, int indent)
{
	int term = table_term_width();
	if (term <= 0 || t->ncols == 0)
		return;
	size_t avail = term > indent ? (size_t)(term - indent) : 1, total = 0;
	bool shown[NELEM(t->drop)];
	for (unsigned c = 0; c < t->ncols; c++) {
		shown[c] = true;
		total += t->width[c] + (c ? 2 : 0);
	}
	while (total > avail) {
		unsigned pick = t->ncols;
		for (unsigned c = 0; c < t->ncols; c++)
			if (shown[c] && t->drop[c] && (pick == t->ncols || t->drop[c] >= t->drop[pick]))
				pick = c;
		if (pick == t->ncols)
			break;
		struct libscols_column *cl = scols_table_get_column(t->tb, pick);
		if (!cl || scols_column_set_flags(cl, scols_column_get_flags(cl) | SCOLS_FL_HIDDEN) < 0)
			break;
		shown[pick] = false;
		total -= t->width[pick] + 2;
	}
	/* free text cut down to its header's width, at most */
	size_t least = total;
	for (unsigned c = 0; c < t->ncols; c++)
		if (shown[c] && t->trunc[c] && t->width[c] > text_width(t->head[c]))
			least -= t->width[c] - text_width(t->head[c]);
	if (least > avail) {
		/* an identifier would be cut: whole lines, wider than the terminal */
		scols_table_set_termforce(t->tb, SCOLS_TERMFORCE_NEVER);
		return;
	}
	scols_table_set_termforce(t->tb, SCOLS_TERMFORCE_ALWAYS);
	scols_table_set_termwidth(t->tb, avail);
}

void table_print(struct table *t, FILE *f, int indent)
{
	table_fit(t, indent);
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

long long col_int(const json_t *row, const struct col *c)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	return jint(o, k, 0);
}

double col_real(const json_t *row, const struct col *c)
{
	const char *k;
	const json_t *o = col_obj(row, c, &k);
	return jreal(o, k, 0);
}

/* 42 */
const char *cell_int(const json_t *row, const struct col *c, char *buf, size_t n)
{
	if (c->def && !col_present(row, c))
		return c->def;
	snprintf(buf, n, "%lld", col_int(row, c));
	return buf;
}

/* 12,345 */
const char *cell_count(const json_t *row, const struct col *c, char *buf, size_t n)
{
	fmt_count((unsigned long long)col_int(row, c), buf, n);
	return buf;
}

/* 1.5 KiB */
const char *cell_iec(const json_t *row, const struct col *c, char *buf, size_t n)
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
const char *cell_str(const json_t *row, const struct col *c, char *buf, size_t n)
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

void show_rows(const json_t *rows, const struct col *cols, size_t ncols, FILE *f)
{
	struct table t;
	size_t idx[32], n = 0;
	bool chosen = sel_spec == cols && nsel > 0;
	if (chosen) {
		memcpy(idx, sel, nsel * sizeof(sel[0]));
		n = nsel;
	} else {
		for (size_t k = 0; k < ncols && k < NELEM(idx); k++)
			idx[n++] = k;
	}
	table_init(&t);
	for (size_t k = 0; k < n; k++)
		table_col_drop(&t, cols[idx[k]].head, chosen ? 0 : cols[idx[k]].drop);
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
	{"JOB", "name", cell_str, NULL,
	 "the job's name (launcher job id, SHF_JOB, ...)", 0},
	{"UID>", "uid", cell_int, "-1",
	 "the job's owner", 5},
	{"WORLD>", "world", cell_int, NULL,
	 "ranks in the job", 0},
	{"REGISTERED>", "registered", cell_int, NULL,
	 "ranks registered on any node", 4},
	{"LOCAL>", "local", cell_int, NULL,
	 "ranks registered on this node", 7},
	{"GONE>", "gone", cell_int, NULL,
	 "ranks that have left or were lost", 1},
	{"READY", "ready", cell_yesno, NULL,
	 "yes once every rank has registered", 3},
	{"EPOCHS>", "epochs", cell_count, NULL,
	 "epochs completed", 2},
	{"PHASE1>", "epoch_phase1", cell_int, NULL,
	 "ranks in phase 1 of the current epoch", 6},
	{"PHASE2>", "epoch_phase2", cell_int, NULL,
	 "ranks in phase 2 of the current epoch", 6},
	{"MISSING~", "missing", cell_nonempty, "-",
	 "ranks not registered yet", 0},
};

static const struct col client_cols[] = {
	{"ID>", "id", cell_int, "-1",
	 "the daemon's session id", 0},
	{"PID>", "pid", cell_int, "-1",
	 "the client's process id", 10},
	{"UID>", "uid", cell_int, "-1",
	 "the client's user id", 3},
	{"JOB", "job", cell_str, "-",
	 "its job", 0},
	{"RANK>", "rank", cell_int, "-1",
	 "its rank in the job", 0},
	{"STATE", "state", cell_str, NULL,
	 "session state", 10},
	{"EPOCH", "epoch", cell_str, NULL,
	 "its epoch state", 6},
	{"BLOCKED", "blocked", cell_yesno, NULL,
	 "yes while its next record waits", 5},
	{"RING>", "ring_bytes", cell_size, "-",
	 "size of each of its rings", 9},
	{"SEND>", "send_used", cell_fill, "-",
	 "send ring fill", 4},
	{"DELIV>", "deliver_used", cell_fill, "-",
	 "delivery ring fill", 4},
	{"MSGS_IN>", "stats.msgs_in", cell_count, NULL,
	 "messages taken from its send ring", 2},
	{"MSGS_OUT>", "stats.msgs_out", cell_count, NULL,
	 "messages placed in its delivery ring", 2},
	{"BYTES_IN>", "stats.bytes_in", cell_iec, NULL,
	 "payload bytes sent", 7},
	{"BYTES_OUT>", "stats.bytes_out", cell_iec, NULL,
	 "payload bytes delivered", 7},
	{"DROPS>", "stats", cell_drops, NULL,
	 "its messages dropped (destination gone or down)", 1},
	{"AGE>", "connected_s", cell_secs, NULL,
	 "time since it connected", 8},
};

static const struct col peer_cols[] = {
	{"NODE>", "node", cell_int, "-1",
	 "the peer's node id", 0},
	{"HOST", "host", cell_str, NULL,
	 "its host name", 0},
	{"ADDR", "addr", cell_str, NULL,
	 "its fabric address", 4},
	{"STATE", "state", cell_str, NULL,
	 "up, joining, unknown, failing or down", 0},
	{"HEARD>", "last_heard_ms", cell_ago_ms, NULL,
	 "time since anything was heard from it", 1},
	{"INFLIGHT>", "inflight", cell_int, NULL,
	 "batches sent, not yet acknowledged", 6},
	{"QUEUED>", "queued", cell_int, NULL,
	 "batches waiting for credit", 6},
	{"OPEN>", "open_bytes", cell_iec, NULL,
	 "bytes in the batch being filled", 7},
	{"PARKED", "parked", cell_yesno, NULL,
	 "yes while its batches wait for a full delivery ring", 5},
	{"MSGS_OUT>", "msgs_out", cell_count, NULL,
	 "messages sent to it", 2},
	{"MSGS_IN>", "msgs_in", cell_count, NULL,
	 "messages received from it", 2},
	{"BYTES_OUT>", "bytes_out", cell_iec, NULL,
	 "batch bytes sent to it", 8},
	{"BYTES_IN>", "bytes_in", cell_iec, NULL,
	 "batch bytes received from it", 8},
	{"STALLS>", "credit_stalls", cell_count, NULL,
	 "times a batch to it waited for credit", 3},
	{"DROPS>", "drops_down", cell_count, NULL,
	 "messages to it dropped because it was down", 1},
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
