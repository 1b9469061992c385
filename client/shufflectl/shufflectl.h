/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/shufflectl.h - private to shufflectl, the operator's
 * view of the local shuffled (docs/shufflectl.md):
 *
 *   main.c    the command line, getopt, command dispatch, exit status
 *   conn.c    the control-socket client: connect, HELLO, CTL request,
 *             CTL_REPLY chunk reassembly, timeouts
 *   render.c  the human tables (default output) and the counter lists
 *   table.c   the table engine (libsmartcols), clients/jobs/peers and -o
 *   health.c  status's health rule (exit 4)
 *   all.c     --all: a row per node
 *   prom.c    Prometheus text exposition format (stats --prometheus)
 *   control.c runtime control: log-level, cutoff, drain
 *   top.c     top: rates from two samples of the daemon's counters
 *
 * Counter names, kinds and descriptions come from proto/stats.h, the list
 * the daemon itself renders, so the tables and the Prometheus HELP lines
 * cannot drift from what the daemon counts.  Keys the daemon sends that
 * this build does not know (a newer daemon) are still shown, without a
 * description (Prometheus type "untyped").
 */
#ifndef SHUFFLECTL_H
#define SHUFFLECTL_H

#include <jansson.h>
#include <libsmartcols.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define SCHEMA "shuffle/1"

/* Exit status, as systemctl(1) does it. */
enum exit_code {
	EXIT_OK = 0,          /* the daemon answered */
	EXIT_FAIL = 1,        /* any other error */
	EXIT_USAGE = 2,       /* bad command line */
	EXIT_NOT_RUNNING = 3, /* no socket, or nobody listening on it */
	EXIT_DEGRADED = 4,    /* status (table): the daemon answered, but a peer is
			       * not up or a job is failing (health_check()) */
};

#define DEFAULT_TIMEOUT_MS 5000
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------- main.c */

/* "shufflectl: <message>\n" on stderr. */
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* realloc, or "out of memory" and exit(EXIT_FAIL). */
void *xrealloc(void *p, size_t n);

/* ---------------------------------------------------------- conn.c */

struct conn {
	int fd;
	const char *path;
	int64_t deadline; /* monotonic ms bound on every wait; INT64_MAX: none */
	uint32_t next_id; /* request ids, echoed by the daemon */
	uint32_t node;    /* from HELLO_OK */
	struct ucred daemon_cred; /* SO_PEERCRED of the daemon, at connect */
	char path_buf[108];       /* the socket found (client/discover.c) */
};

/* Find the daemon (-s opt, else the library's rule: client/discover.c) and
 * connect within timeout_ms (0: no bound, which also bounds every later
 * answer).  0, or the negative errno of shc_discover(), not printed (its
 * text is in shf_error_detail()): -ECONNREFUSED nothing found (every
 * place tried is listed), -EPERM the daemon's uid is not trusted
 * (c->daemon_cred says who it is; c->path where), others.  The caller
 * decides between "not running" and a failure. */
int conn_connect(struct conn *c, const char *opt, int timeout_ms);
/* conn_connect() and conn_hello(), every failure printed in the words
 * shufflectl uses for it (main.c, control.c and top.c share them): 0, or
 * the exit code (EXIT_NOT_RUNNING: nothing found; EXIT_USAGE: a bad
 * socket path; EXIT_FAIL: an untrusted daemon, no HELLO_OK, others);
 * c->fd is -1 on failure. */
int conn_open(struct conn *c, const char *opt, int timeout_ms);
/* HELLO -> HELLO_OK.  0 or negative errno (printed). */
int conn_hello(struct conn *c);
/* CTL(cmd) -> the JSON document, an object whose "command" is cmd (the
 * schema is the caller's to check).  0 with *doc_p set, or negative errno
 * (printed). */
int conn_request(struct conn *c, const char *cmd, json_t **doc_p);
/* The same for every node up (SHF_CTL_ALL: the daemon's fan-out answers
 * within timeout_ms, 0 its default): the combined document
 * (docs/shufflectl.md, "--all"). */
int conn_request_all(struct conn *c, const char *cmd, int timeout_ms, json_t **doc_p);
/* The same with arguments (a JSON object or NULL): control --all. */
int conn_request_all_args(struct conn *c, const char *cmd, const json_t *args, int timeout_ms,
			  json_t **doc_p);
/* The fan-out's bound for a --all request within the asker's timeout_ms:
 * 4/5 of it, so that the list of silent nodes comes back before the asker
 * gives up (0: the daemon's default). */
int conn_fan_ms(int timeout_ms);
/* The same with arguments (a JSON object, sent as text after the command:
 * docs/protocol.md, "Control"); NULL: none. */
int conn_request_args(struct conn *c, const char *cmd, const json_t *args, json_t **doc_p);
/* BYE (a courtesy) and close. */
void conn_close(struct conn *c);

/* ------------------------------------------------------ JSON helpers */

static inline json_t *jget(const json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

/* Integer member (reals truncated, booleans 0/1), or def when absent or
 * not a number. */
static inline long long jint(const json_t *o, const char *k, long long def)
{
	json_t *v = jget(o, k);
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (long long)json_real_value(v);
	if (json_is_boolean(v))
		return json_is_true(v);
	return def;
}

static inline double jreal(const json_t *o, const char *k, double def)
{
	json_t *v = jget(o, k);
	return json_is_number(v) ? json_number_value(v) : def;
}

static inline const char *jstr(const json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(jget(o, k));
	return s ? s : def;
}

/* ------------------------------------------- counter lists (render.c) */

struct stat_desc {
	const char *name;
	bool counter; /* monotonic; else a gauge */
	const char *help;
};

/* proto/stats.h, one array per scope */
extern const struct stat_desc daemon_stats[], client_stats[], peer_stats[], fabric_stats[];
extern const size_t n_daemon_stats, n_client_stats, n_peer_stats, n_fabric_stats;
/* Peer gauges: state of the link to a peer (credit, queues), not counters
 * of the peer scope, so not in proto/stats.h; peers[] carries them. */
extern const struct stat_desc peer_gauges[];
extern const size_t n_peer_gauges;

const struct stat_desc *stat_find(const struct stat_desc *t, size_t n, const char *name);

/* -------------------------------- table.c, health.c, render.c (tables) */

/* An aligned text table (libsmartcols): columns, then cells, either in
 * order (table_cell: row after row) or by column (table_row, then
 * table_set in any order; a cell never set shows "-").  table_print
 * prints and frees it, table_discard only frees it. */
struct table {
	struct libscols_table *tb;
	struct libscols_line *line; /* the row being filled */
	unsigned ncols, col;        /* columns; next cell's column (table_cell) */
	char head[32][64];          /* the headers, for a table without rows */
	unsigned drop[32];          /* 0: always shown; else dropped, highest first,
				     * when the table is wider than the terminal */
	bool trunc[32];             /* free text: may be cut to fit (never an identifier) */
	size_t width[32];           /* widest cell or header of each column */
};
void table_init(struct table *t);
/* head: "NAME" or "COUNT>" - a trailing '>' right-aligns the column; a
 * trailing '~' marks free text (a description, a list) that may be cut to
 * fit the terminal.  Other cells are never cut: on a terminal too narrow
 * for the table, columns with a drop rank (table_col_drop) are left out,
 * the highest rank first (as ps and lsblk choose their columns); if it
 * still does not fit, the lines are printed whole. */
void table_col(struct table *t, const char *head);
void table_col_drop(struct table *t, const char *head, unsigned drop);
/* The width tables fit: --width, else the terminal's on a tty ($COLUMNS,
 * else the tty's size); 0 on a pipe (no limit). */
int table_term_width(void);
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_row(struct table *t);
void table_set(struct table *t, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void table_print(struct table *t, FILE *f, int indent);
void table_discard(struct table *t);

/* The daemon's health from its "peers" and "jobs" arrays: false when a
 * peer is not up (unknown, joining, failing, down) or a job is failing (an
 * owner conflict, ranks lost with their node, or messages dropped); why
 * gets one line saying so (or "ok"). */
bool health_check(const json_t *peers, const json_t *jobs, char *why, size_t n);
/* One job of "jobs" is failing (why: the reason, for people); one peer of
 * "peers" is up (or idle: up, heartbeats paused). */
bool job_failing(const json_t *j, char *why, size_t n);
bool peer_ok(const json_t *p);
/* status, with the health lines when peers/jobs are given (non-NULL) */
void show_status(const json_t *status, const json_t *peers, const json_t *jobs, FILE *f);
void show_stats(const json_t *stats, FILE *f);
void show_jobs(const json_t *jobs, FILE *f);
void show_clients(const json_t *clients, FILE *f);
void show_peers(const json_t *peers, FILE *f);
/* The other users' totals of a document seen by an unprivileged uid
 * ("other_users"); nothing for root's view. */
void show_others(const json_t *doc, FILE *f);
void show_config(const json_t *config, FILE *f);
void show_dump(const json_t *dump, FILE *f);
/* --width N: tables fit N columns (0: the terminal's, none on a pipe). */
void render_width(int cols);
/* -o: does cmd print a table with selectable columns? */
bool render_has_columns(const char *cmd);
/* -o help: the columns of cmd's table, with a line each. */
void render_columns_help(const char *cmd, FILE *f);
/* -o COL,COL: show only these columns of cmd's table, in this order (names
 * case-insensitive).  0, or -EINVAL with the valid names printed. */
int render_columns(const char *cmd, const char *list);

/* top (top.c): one table of rates per node and job */
void show_top(const json_t *top, FILE *f);
/* top --all: a row per job per node and one per node (nodes without an
 * answer marked with why), and every node's total */
void show_top_all(const json_t *doc, FILE *f);

/* ------------------------------- control.c (log-level, cutoff, drain), top.c */

struct ctl_opts {
	const char *sock; /* -s, or NULL */
	int timeout_ms;   /* --timeout, per request */
	bool json;        /* --json */
	bool once;        /* top --once */
	int interval_ms;  /* top --interval */
	bool all;         /* --all: every node, through the daemons' fan-out */
};
/* log-level LEVEL | cutoff JOB RANK | drain JOB: args are the words after
 * the command.  The exit code. */
int run_control(const char *cmd, int argc, char *const *argv, const struct ctl_opts *o);
/* top [--once] [--interval MS] [--json]: the exit code. */
int run_top(const struct ctl_opts *o);

/* ---------------------------------------------- prom.c (Prometheus) */

struct prom_opts {
	bool per_rank; /* --per-rank: also the per-client {job,rank} series */
};
/* The whole exposition from one "dump" document. */
void show_prometheus(const json_t *dump, const struct prom_opts *o, FILE *f);
/* Only "shuffle_up 0": the daemon is not running. */
void show_prometheus_down(FILE *f);
/* --all stats: every node's counters with a node label, shuffle_up per node. */
void show_prometheus_all(const json_t *doc, FILE *f);

/* ---------------------------------------------------------- all.c */

/* --all CMD: a row per node (those without an answer marked) and totals;
 * false when a node did not answer. */
bool show_all(const json_t *doc, const char *cmd, FILE *f);
/* The node ids of an --all answer, answered ("nodes") and not ("missing"),
 * ascending; *n of them, in an array to free(). */
long long *all_node_ids(const json_t *doc, size_t *n);
/* --all log-level|cutoff|drain: a row per node with its outcome (ok,
 * refused, not here, failed, or why it has no answer); the exit code:
 * 0 when at least one node acted and every other answered "not here",
 * 4 when besides that a node did not answer, 1 otherwise. */
int show_control_all(const json_t *doc, const char *cmd, FILE *f);

#endif
