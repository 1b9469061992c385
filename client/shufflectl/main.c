/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/main.c - shufflectl, the operator's view of the local
 * shuffled: the command line and the dispatch of its commands.
 *
 *   shufflectl [-s SOCKET] [--all] [--json | --prometheus [--per-rank]] [-o COLS]
 *              [--width N] [--timeout MS] COMMAND
 *   shufflectl [--all] [--once [--json]] [--interval MS] top      (top.c)
 *   shufflectl [--all] log-level LEVEL | cutoff JOB RANK | drain JOB  (control.c)
 *
 * It asks the daemon (conn.c) for one JSON document (schema "shuffle/1",
 * docs/shufflectl.md) and renders it as aligned tables (default,
 * render.c), prints it pretty (--json), or as Prometheus text exposition
 * format (stats --prometheus, prom.c).
 *
 * Exit status, as systemctl(1) does it: 0 the daemon answered; 3 it is not
 * running (no socket, or the socket refuses connections); 2 bad usage;
 * 1 anything else (timeout, protocol error, permission, write error);
 * 4 (status, as a table) it answered but is degraded: a peer is not up
 * or a job is failing (health_check()).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/client.h"
#include "client/shufflectl/shufflectl.h"

enum output { OUT_TABLE, OUT_JSON, OUT_PROMETHEUS };

static const char *const commands[] = {"status", "clients", "jobs", "peers",
				       "stats",  "config",  "dump", "ping", NULL};
/* commands with arguments (control.c) and top (top.c) */
static const char *const control_commands[] = {"log-level", "cutoff", "drain", NULL};
static const char *const top_command[] = {"top", NULL};
/* of commands[], those --all runs on every node (top and the control
 * commands go with --all too) */
static const char *const all_commands[] = {"status", "clients", "jobs", "peers",
					   "stats",  "ping",    NULL};

static bool listed(const char *const *list, const char *cmd)
{
	for (; *list; list++)
		if (!strcmp(*list, cmd))
			return true;
	return false;
}

/* The lists' names into buf, ", "-separated ("and" before the last with
 * and_last), in the order given. */
static void list_names(char *buf, size_t len, bool and_last, const char *const *const *lists,
		       size_t nlists)
{
	size_t total = 0, k = 0, o = 0;
	for (size_t l = 0; l < nlists; l++)
		for (const char *const *p = lists[l]; *p; p++)
			total++;
	buf[0] = '\0';
	for (size_t l = 0; l < nlists; l++)
		for (const char *const *p = lists[l]; *p && o < len; p++, k++) {
			const char *sep = k == 0 ? "" : and_last && k + 1 == total ? " and " : ", ";
			int w = snprintf(buf + o, len - o, "%s%s", sep, *p);
			if (w > 0)
				o += (size_t)w;
		}
}

/* "status, clients, ..., top, log-level, cutoff, drain": every command */
static void all_names(char *buf, size_t len)
{
	const char *const *const lists[] = {commands, top_command, control_commands};
	list_names(buf, len, false, lists, 3);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: shufflectl [-s SOCKET] [--all] [--json | --prometheus [--per-rank]] [-o COLS]\n"
		"                  [--width N] [--timeout MS] COMMAND\n"
		"       shufflectl [-s SOCKET] [--all] [--once [--json]] [--interval MS] top\n"
		"       shufflectl [-s SOCKET] [--all] [--json] log-level LEVEL | cutoff JOB RANK |\n"
		"                  drain JOB\n"
		"\n"
		"Ask the node's shuffled daemon about its state.\n"
		"\n"
		"Commands:\n"
		"  status   the daemon: version, pid, node, uptime, connections, health\n"
		"  clients  registered client processes: job, rank, rings, counters\n"
		"  jobs     jobs: world, registered and missing ranks, epochs\n"
		"  peers    the daemons on other nodes: state, credit, traffic\n"
		"  stats    daemon and fabric counters, and the sum of all clients' counters\n"
		"  config   every setting, its value and where it came from\n"
		"  dump     all of the above, and the relay's queues\n"
		"  ping     check that the daemon answers\n"
		"  top      live rates per node and job: messages, bytes, stalls, drops, rings\n"
		"\n"
		"Control (root, the daemon's user, or the job's owner; others are refused):\n"
		"  log-level LEVEL  the daemon's log level from now on (err ... debug; root or\n"
		"                   the daemon's user only)\n"
		"  cutoff JOB RANK  cut off that rank's session (its calls fail: -ENOTCONN)\n"
		"  drain JOB        cut off the job's sessions and refuse its ranks here (their\n"
		"                   calls fail: -ECANCELED); other jobs go on\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH  the daemon's control socket (default: $SHF_SOCKET, else\n"
		"                     $SHF_RUNTIME_DIR/shuffled.sock, else your own daemon's\n"
		"                     $XDG_RUNTIME_DIR/shuffle/NODE/shuffled.sock (or\n"
		"                     /tmp/shuffle-UID/NODE/...) if a socket is there, else the\n"
		"                     system daemon's " SHF_SYSTEM_RUNTIME_DIR "/NODE/shuffled.sock\n"
		"                     (root: system first); NODE: $SHF_NODE or the host name)\n"
		"  -a, --all          status, peers, jobs, clients, stats, ping, top: ask every\n"
		"                     node (through the daemons), one row per node plus totals;\n"
		"                     nodes without an answer are marked (down, unknown,\n"
		"                     silent, ...); exit 4 when one is.  log-level, cutoff,\n"
		"                     drain: run on every node (needs a cluster key), each\n"
		"                     node's outcome (ok, refused, not here, ...)\n"
		"  -j, --json         print the daemon's JSON answer (schema shuffle/1)\n"
		"  -p, --prometheus   with stats: Prometheus text format (textfile collector)\n"
		"      --per-rank     with --prometheus: also the per-client {job,rank} series\n"
		"                     (off by default: ~25 series per rank, job ids as labels)\n"
		"  -o, --output COLS  clients, jobs, peers: only these columns, in this order\n"
		"                     (COL,COL,...; '-o help COMMAND' lists them)\n"
		"      --list-columns list the columns of COMMAND's table\n"
		"  -w, --width N      fit tables to N columns (default: the terminal's width;\n"
		"                     on a pipe, cells are never cut)\n"
		"  -t, --timeout MS   give up after MS milliseconds (default %d; 0: wait)\n"
		"      --once         top: two samples, one table (or --json), exit\n"
		"      --interval MS  top: time between samples (default 1000)\n"
		"  -h, --help         print this help\n"
		"  -V, --version      print the version\n"
		"\n"
		"Exit status: 0 the daemon answered, 1 error, 2 bad usage, 3 the daemon is not\n"
		"running, 4 (status, not --json) it answered but a peer is not up or a job\n"
		"is failing.\n"
		"See shufflectl(1) and docs/shufflectl.md.\n",
		DEFAULT_TIMEOUT_MS);
}

static int print_json(const json_t *doc)
{
	if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) < 0)
		return -EIO;
	fputc('\n', stdout);
	return 0;
}

/* Run one command on an open connection; returns an exit code. */
/* status: health from the peers and jobs (two more requests); the exit
 * code, EXIT_FAIL when either cannot be had */
static int status_health(struct conn *c, json_t **peers_p, json_t **jobs_p)
{
	json_t *pd = NULL, *jd = NULL;
	char why[160];
	if (conn_request(c, "peers", &pd) < 0 || conn_request(c, "jobs", &jd) < 0) {
		json_decref(pd);
		return EXIT_FAIL;
	}
	*peers_p = json_incref(jget(pd, "peers"));
	*jobs_p = json_incref(jget(jd, "jobs"));
	json_decref(pd);
	json_decref(jd);
	return health_check(*peers_p, *jobs_p, why, sizeof(why)) ? EXIT_OK : EXIT_DEGRADED;
}

/* --all CMD: the combined answer of every node (the daemon's fan-out
 * answers within 4/5 of our own timeout, so that its list of silent nodes
 * reaches us before we give up). */
static int run_all(struct conn *c, const char *cmd, enum output out, int timeout_ms)
{
	json_t *doc = NULL;
	if (conn_request_all(c, cmd, conn_fan_ms(timeout_ms), &doc) < 0)
		return EXIT_FAIL;
	int rc = EXIT_OK;
	if (out == OUT_JSON) {
		rc = print_json(doc) < 0 ? EXIT_FAIL : EXIT_OK;
	} else if (strcmp(jstr(doc, "schema", "(none)"), SCHEMA) != 0) {
		errmsg("shuffled answers in schema '%s'; this shufflectl reads '%s' (use --json)",
		       jstr(doc, "schema", "(none)"), SCHEMA);
		rc = EXIT_FAIL;
	} else if (out == OUT_PROMETHEUS) {
		show_prometheus_all(doc, stdout);
	} else if (!show_all(doc, cmd, stdout)) {
		rc = EXIT_DEGRADED; /* a node did not answer */
	}
	json_decref(doc);
	return rc;
}

static int run(struct conn *c, const char *cmd, enum output out, const struct prom_opts *po)
{
	const char *ask = out == OUT_PROMETHEUS ? "dump" : cmd;
	json_t *doc = NULL;
	int rc = EXIT_FAIL;
	if (conn_request(c, ask, &doc) < 0)
		return EXIT_FAIL;
	if (out == OUT_JSON) {
		/* scripts read the document (and use `--json status` to see that
		 * the daemon answers): exit 0, degraded or not */
		rc = print_json(doc) < 0 ? EXIT_FAIL : EXIT_OK;
		goto out;
	}
	const char *schema = jstr(doc, "schema", "(none)");
	if (strcmp(schema, SCHEMA) != 0) {
		errmsg("shuffled answers in schema '%s'; this shufflectl reads '%s' (use --json)",
		       schema, SCHEMA);
		goto out;
	}
	if (out == OUT_PROMETHEUS) {
		show_prometheus(doc, po, stdout);
	} else if (!strcmp(cmd, "ping")) {
		if (!json_is_true(jget(doc, "pong"))) {
			errmsg("shuffled at %s answered ping without pong", c->path);
			goto out;
		}
		/* pid and node name come from status (ping itself is minimal) */
		json_t *st = NULL;
		if (jget(doc, "pid") && jget(doc, "node_name")) {
			st = json_incref(doc);
		} else if (conn_request(c, "status", &st) < 0) {
			goto out;
		}
		printf("pong (pid %lld, node %s)\n", jint(st, "pid", -1),
		       jstr(st, "node_name", "?"));
		json_decref(st);
	} else if (!strcmp(cmd, "status")) {
		json_t *peers = NULL, *jobs = NULL;
		int h = status_health(c, &peers, &jobs);
		if (h != EXIT_FAIL)
			show_status(doc, peers, jobs, stdout);
		json_decref(peers);
		json_decref(jobs);
		rc = h;
		goto out;
	} else if (!strcmp(cmd, "clients")) {
		show_clients(jget(doc, "clients"), stdout);
		show_others(doc, stdout);
	} else if (!strcmp(cmd, "jobs")) {
		show_jobs(jget(doc, "jobs"), stdout);
		show_others(doc, stdout);
	} else if (!strcmp(cmd, "peers")) {
		show_peers(jget(doc, "peers"), stdout);
	} else if (!strcmp(cmd, "stats")) {
		show_stats(doc, stdout);
	} else if (!strcmp(cmd, "config")) {
		show_config(jget(doc, "config"), stdout);
	} else if (!strcmp(cmd, "dump")) {
		show_dump(doc, stdout);
	}
	rc = EXIT_OK;
out:
	json_decref(doc);
	return rc;
}

/* The command line, as parsed. */
struct cli {
	const char *sock;
	bool json, prom, all, list_columns, interval_set;
	int timeout_ms;
	struct prom_opts po;
	const char *columns;
	struct ctl_opts co;
};

/* An integer option's value in lo..hi; false (and said) if it is not one.
 * what: "milliseconds", "columns". */
static bool parse_int_opt(const char *name, const char *arg, long lo, long hi, const char *what,
			  int *v_p)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		errmsg("--%s '%s': not a number of %s (%ld..%ld)", name, arg, what, lo, hi);
		return false;
	}
	*v_p = (int)v;
	return true;
}

/* The options into *a. Returns -1 to go on, else the exit code (--help,
 * --version, bad usage). */
static int parse_options(int argc, char **argv, struct cli *a)
{
	static const struct option lopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},
		{"prometheus", no_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, 't'},
		{"per-rank", no_argument, NULL, 'R'},
		{"output", required_argument, NULL, 'o'},
		{"list-columns", no_argument, NULL, 'L'},
		{"width", required_argument, NULL, 'w'},
		{"once", no_argument, NULL, '1'},
		{"interval", required_argument, NULL, 'I'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int o, width;
	opterr = 0; /* our own messages */
	while ((o = getopt_long(argc, argv, ":s:ajpt:o:w:hV", lopts, NULL)) != -1) {
		switch (o) {
		case 's':
			a->sock = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'a':
			a->all = true;
			break;
		case 'p':
			a->prom = true;
			break;
		case 't':
			if (!parse_int_opt("timeout", optarg, 0, INT_MAX, "milliseconds",
					   &a->timeout_ms))
				return EXIT_USAGE;
			break;
		case 'R':
			a->po.per_rank = true;
			break;
		case 'o':
			if (!strcasecmp(optarg, "help"))
				a->list_columns = true;
			else
				a->columns = optarg;
			break;
		case 'L':
			a->list_columns = true;
			break;
		case 'w':
			if (!parse_int_opt("width", optarg, 1, 100000, "columns", &width))
				return EXIT_USAGE;
			render_width(width);
			break;
		case '1':
			a->co.once = true;
			break;
		case 'I':
			if (!parse_int_opt("interval", optarg, 1, 3600000, "milliseconds",
					   &a->co.interval_ms))
				return EXIT_USAGE;
			a->interval_set = true;
			break;
		case 'h':
			usage(stdout);
			return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
		case 'V':
			printf("shufflectl %s\n", SHF_VERSION);
			return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
		case ':':
			errmsg("option %s needs a value (see --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if (optopt)
				errmsg("unknown option '-%c' (see --help)", optopt);
			else
				errmsg("unknown option '%s' (see --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* -o help [COMMAND]: the tables' columns; no daemon needed */
static int list_columns(const char *only)
{
	bool any = false;
	for (const char *const *p = commands; *p; p++) {
		if (!render_has_columns(*p) || (only && strcmp(only, *p)))
			continue;
		if (any)
			fputc('\n', stdout);
		render_columns_help(*p, stdout);
		any = true;
	}
	if (!any) {
		errmsg("'%s' has no table columns (clients, jobs, peers have)", only);
		return EXIT_USAGE;
	}
	return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
}

/* Whether cmd (one of commands[]) goes with the options given; says why
 * not. */
static bool usage_ok(const char *cmd, const struct cli *a)
{
	if (a->json && a->prom) {
		errmsg("--json and --prometheus exclude each other");
		return false;
	}
	if (a->prom && strcmp(cmd, "stats") != 0) {
		errmsg("--prometheus goes with 'stats' only");
		return false;
	}
	if (a->all && !listed(all_commands, cmd)) {
		const char *const *const lists[] = {all_commands, top_command, control_commands};
		char names[256];
		list_names(names, sizeof(names), true, lists, 3);
		errmsg("--all goes with %s only", names);
		return false;
	}
	if (a->all && (a->columns || a->po.per_rank)) {
		errmsg("--all has its own table: -o and --per-rank do not apply");
		return false;
	}
	if (a->po.per_rank && !a->prom) {
		errmsg("--per-rank goes with 'stats --prometheus' only");
		return false;
	}
	if (a->columns) {
		if (!render_has_columns(cmd) || a->json) {
			errmsg("-o goes with the tables of clients, jobs and peers only");
			return false;
		}
		if (render_columns(cmd, a->columns) < 0)
			return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct cli a = {.timeout_ms = DEFAULT_TIMEOUT_MS, .co = {.interval_ms = 1000}};
	struct ctl_opts *co = &a.co;

	/* the tables measure and show cells in the user's character set */
	setlocale(LC_CTYPE, "");
	int rc = parse_options(argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (a.list_columns)
		return list_columns(optind < argc ? argv[optind] : NULL);
	char names[256];
	all_names(names, sizeof(names));
	if (optind >= argc) {
		errmsg("no command given (%s; see --help)", names);
		return EXIT_USAGE;
	}
	co->sock = a.sock;
	co->timeout_ms = a.timeout_ms;
	co->json = a.json;
	co->all = a.all;
	if ((co->once || a.interval_set) && strcmp(argv[optind], "top") != 0) {
		errmsg("--once and --interval go with 'top' only");
		return EXIT_USAGE;
	}
	for (const char *const *p = control_commands; *p; p++) {
		if (strcmp(argv[optind], *p) != 0)
			continue;
		if (a.prom || a.columns) {
			errmsg("%s takes neither --prometheus nor -o", *p);
			return EXIT_USAGE;
		}
		return run_control(*p, argc - optind - 1, argv + optind + 1, co);
	}
	if (!strcmp(argv[optind], "top")) {
		if (optind + 1 < argc) {
			errmsg("top takes no arguments: unexpected '%s'", argv[optind + 1]);
			return EXIT_USAGE;
		}
		if (a.prom || a.columns || (a.json && !co->once)) {
			errmsg("top takes neither --prometheus nor -o, and --json only with --once");
			return EXIT_USAGE;
		}
		return run_top(co);
	}
	if (optind + 1 < argc) {
		errmsg("one command at a time: unexpected '%s'", argv[optind + 1]);
		return EXIT_USAGE;
	}
	const char *cmd = argv[optind];
	if (!listed(commands, cmd)) {
		errmsg("unknown command '%s' (%s)", cmd, names);
		return EXIT_USAGE;
	}
	if (!usage_ok(cmd, &a))
		return EXIT_USAGE;
	enum output out = a.json ? OUT_JSON : a.prom ? OUT_PROMETHEUS : OUT_TABLE;

	/* where: the library's rule (client/discover.c), and its words */
	struct conn c;
	rc = conn_open(&c, a.sock, a.timeout_ms);
	if (rc == EXIT_NOT_RUNNING && out == OUT_PROMETHEUS) {
		/* so a textfile collector records the daemon as down */
		show_prometheus_down(stdout);
		fflush(stdout);
	}
	if (rc != EXIT_OK)
		return rc;
	rc = a.all ? run_all(&c, cmd, out, a.timeout_ms) : run(&c, cmd, out, &a.po);
	conn_close(&c);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		errmsg("write error on standard output: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return rc;
}
