/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/top.c - shufflectl top: live rates of the local
 * shuffled, per node and per job.
 *
 * Each sample is one "top" request (daemon/admin/ctlcmd.c): the node's client
 * counters, each job's (those the asker may see), the ring occupancy of
 * their live sessions and the daemon's clock (now_ns).  A rate is the
 * difference of a counter between two samples over the difference of the
 * daemon's clock, so it is exact whatever the delay of the requests.
 * Each sample is its own connection: a view left open for hours is not an
 * idle session (idle_timeout_ms), and a daemon restart shows as one
 * failed sample.
 *
 * Live (default): a table every --interval (1 s), on a terminal drawn over
 * the previous one with the ANSI "home, clear" sequence only (works over
 * ssh, no curses); on a pipe the tables follow each other.  On a terminal
 * `q` quits (as in top(1)): the keyboard is read key by key, without echo,
 * while top runs, and given back as it was on every way out (q, an error,
 * SIGINT/SIGTERM/SIGHUP: the signal is then raised again).  --once: two
 * samples --interval apart, one table (or --json: the computed document),
 * exit.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "client/shufflectl/shufflectl.h"

/* The counters top shows: the daemon's key, the output's name. */
static const struct {
	const char *key, *name;
} counters[] = {
	{"msgs_in", "msgs"},
	{"bytes_in", "bytes"},
	{"msgs_out", "msgs_out"},
	{"bytes_out", "bytes_out"},
	{"credit_stalls", "credit_stalls"},
	{"ring_full_stalls", "ring_full_stalls"},
};

static long long drops(const json_t *st)
{
	return jint(st, "drops_dead", 0) + jint(st, "drops_down", 0);
}

/* One row: deltas of b's counters since a's (and b's own: NAME_total) (a NULL: b is new, from 0; a
 * counter that went back, from 0 too: the job ended and came back), the
 * rates over dt seconds, b's gauges. */
static json_t *row(const json_t *a, const json_t *b, double dt)
{
	json_t *o = json_object();
	const json_t *sa = jget(a, "stats"), *sb = jget(b, "stats");
	for (size_t i = 0; i < NELEM(counters); i++) {
		long long vb = jint(sb, counters[i].key, 0), va = jint(sa, counters[i].key, 0);
		long long d = vb >= va ? vb - va : vb;
		char rate[64];
		snprintf(rate, sizeof(rate), "%s_per_s", counters[i].name);
		json_object_set_new(o, counters[i].name, json_integer(d));
		json_object_set_new(o, rate, json_real(dt > 0 ? (double)d / dt : 0));
		snprintf(rate, sizeof(rate), "%s_total", counters[i].name);
		json_object_set_new(o, rate, json_integer(vb));
	}
	long long db = drops(sb), da = drops(sa), d = db >= da ? db - da : db;
	json_object_set_new(o, "drops", json_integer(d));
	json_object_set_new(o, "drops_total", json_integer(db));
	json_object_set_new(o, "drops_per_s", json_real(dt > 0 ? (double)d / dt : 0));
	json_object_set_new(o, "ring_used", json_integer(jint(b, "ring_used", 0)));
	json_object_set_new(o, "ring_bytes", json_integer(jint(b, "ring_bytes", 0)));
	json_object_set_new(o, "ring_max_pct", json_real(jreal(b, "ring_max_pct", 0)));
	return o;
}

static const json_t *find_job(const json_t *doc, const json_t *job)
{
	const char *name = jstr(job, "name", "");
	long long created = jint(job, "created_ns", -1);
	size_t i;
	json_t *j;
	json_array_foreach(jget(doc, "jobs"), i, j)
		if (!strcmp(jstr(j, "name", ""), name) && jint(j, "created_ns", -2) == created)
			return j;
	return NULL;
}

/* The document top prints (--json) from samples a and b. */
static json_t *compute(const json_t *a, const json_t *b)
{
	double dt = (double)(jint(b, "now_ns", 0) - jint(a, "now_ns", 0)) / 1e9;
	json_t *o = json_object();
	json_object_set_new(o, "schema", json_string(SCHEMA));
	json_object_set_new(o, "command", json_string("top"));
	json_object_set_new(o, "node_name", json_string(jstr(b, "node_name", "?")));
	json_object_set_new(o, "node_id", json_integer(jint(b, "node_id", -1)));
	json_object_set_new(o, "interval_s", json_real(dt));
	json_t *node = row(jget(a, "node"), jget(b, "node"), dt);
	json_object_set_new(node, "clients", json_integer(jint(jget(b, "node"), "clients", 0)));
	json_object_set_new(o, "node", node);
	json_t *jobs = json_array();
	size_t i;
	json_t *j;
	json_array_foreach(jget(b, "jobs"), i, j)
	{
		json_t *r = row(find_job(a, j), j, dt);
		json_object_set_new(r, "name", json_string(jstr(j, "name", "?")));
		json_object_set_new(r, "uid", json_integer(jint(j, "uid", -1)));
		json_object_set_new(r, "local", json_integer(jint(j, "local", 0)));
		if (jget(j, "drained_by"))
			json_object_set_new(r, "drained_by", json_integer(jint(j, "drained_by", -1)));
		json_array_append_new(jobs, r);
	}
	json_object_set_new(o, "jobs", jobs);
	if (jget(b, "other_users")) {
		json_object_set(o, "view_uid", jget(b, "view_uid"));
		json_object_set(o, "other_users", jget(b, "other_users"));
	}
	return o;
}

/* --all: every node's top from two combined answers a and b (each
 * {"nodes": {ID: top sample}, "missing": {ID: {"state"}}}): a node's row
 * as compute() makes it for one node, from its own two samples and clock;
 * a node that answered b only has no rates yet (deltas 0, interval_s 0,
 * "first_sample": true) but its NAME_total counters; the nodes without an answer in b
 * as b lists them; "totals": the node rows' numbers summed (ring_max_pct:
 * the largest). */
static json_t *compute_all(const json_t *a, const json_t *b)
{
	json_t *o = json_object(), *nodes = json_object(), *tot = json_object();
	const json_t *an = jget(a, "nodes");
	const char *k;
	json_t *v;
	double interval = 0;
	json_object_foreach(jget(b, "nodes"), k, v) {
		const json_t *prev = jget(an, k);
		json_t *r = compute(prev ? prev : v, v);
		if (!prev)
			json_object_set_new(r, "first_sample", json_true());
		json_object_del(r, "schema");
		json_object_del(r, "command");
		interval = jreal(r, "interval_s", 0) > interval ? jreal(r, "interval_s", 0) : interval;
		const char *kk;
		json_t *x;
		json_object_foreach(jget(r, "node"), kk, x) {
			json_t *t = json_object_get(tot, kk);
			if (!strcmp(kk, "ring_max_pct")) {
				if (!t || json_number_value(x) > json_number_value(t))
					json_object_set_new(tot, kk, json_real(json_number_value(x)));
			} else if (json_is_integer(x)) {
				json_object_set_new(tot, kk, json_integer(json_integer_value(x) +
									   (t ? json_integer_value(t) : 0)));
			} else if (json_is_real(x)) {
				json_object_set_new(tot, kk, json_real(json_real_value(x) +
									(t ? json_real_value(t) : 0)));
			}
		}
		json_object_set_new(nodes, k, r);
	}
	json_object_set_new(o, "schema", json_string(SCHEMA));
	json_object_set_new(o, "command", json_string("top"));
	json_object_set_new(o, "all", json_true());
	json_object_set_new(o, "interval_s", json_real(interval));
	json_object_set_new(o, "nodes", nodes);
	json_t *miss = jget(b, "missing");
	json_object_set_new(o, "missing", miss ? json_incref(miss) : json_object());
	json_object_set_new(o, "totals", tot);
	json_object_set(o, "nodes_total", jget(b, "nodes_total"));
	json_object_set(o, "root", jget(b, "root"));
	json_object_set(o, "fanout", jget(b, "fanout"));
	json_object_set(o, "timeout_ms", jget(b, "timeout_ms"));
	json_object_set(o, "elapsed_ms", jget(b, "elapsed_ms"));
	return o;
}

/* One sample on its own connection: the document, or NULL and *rc_p. */
static json_t *sample(const struct ctl_opts *o, int *rc_p)
{
	struct conn c;
	json_t *doc = NULL;
	int rc = conn_open(&c, o->sock, o->timeout_ms);
	if (rc == 0) {
		if ((o->all ? conn_request_all(&c, "top", conn_fan_ms(o->timeout_ms), &doc)
			    : conn_request(&c, "top", &doc)) < 0)
			rc = EXIT_FAIL;
		conn_close(&c);
	}
	if (rc == 0 && strcmp(jstr(doc, "schema", ""), SCHEMA) != 0) {
		errmsg("shuffled answers in schema '%s'; this shufflectl reads '%s'",
		       jstr(doc, "schema", "(none)"), SCHEMA);
		rc = EXIT_FAIL;
	}
	if (rc) {
		json_decref(doc);
		*rc_p = rc;
		return NULL;
	}
	return doc;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------ the keyboard */

static struct termios kb_saved;
static bool kb_raw;
static volatile sig_atomic_t kb_signal;

static void kb_on_signal(int sig)
{
	kb_signal = sig;
}

/* Keys one by one without echo, when stdin is a terminal. */
static void kb_open(void)
{
	struct termios t;
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &kb_saved) < 0)
		return;
	t = kb_saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	struct sigaction sa = {.sa_handler = kb_on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	kb_raw = tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0;
}

static void kb_close(void)
{
	if (kb_raw)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &kb_saved);
	kb_raw = false;
	if (kb_signal) { /* die of it, as without the handler */
		signal(kb_signal, SIG_DFL);
		raise(kb_signal);
	}
}

/* Wait ms, or less when q is pressed or a signal came: true to go on. */
static bool kb_wait(int ms)
{
	if (!kb_raw) {
		sleep_ms(ms);
		return true;
	}
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long left = (long long)(end.tv_sec - now.tv_sec) * 1000 +
				 (end.tv_nsec - now.tv_nsec) / 1000000L;
		if (kb_signal)
			return false;
		if (left <= 0)
			return true;
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return true;
		if (n > 0) {
			char c;
			ssize_t r = read(STDIN_FILENO, &c, 1);
			if (r == 0 || (r == 1 && (c == 'q' || c == 'Q')))
				return false; /* q, or the terminal is gone */
		}
	}
}

int run_top(const struct ctl_opts *o)
{
	int rc = EXIT_OK;
	json_t *a = sample(o, &rc);
	if (!a)
		return rc;
	bool tty = !o->once && isatty(STDOUT_FILENO);
	if (tty)
		kb_open();
	for (bool first = true;; first = false) {
		if (!kb_wait(o->interval_ms))
			break; /* q */
		json_t *b = sample(o, &rc);
		if (!b)
			break;
		json_t *top = o->all ? compute_all(a, b) : compute(a, b);
		bool missing = o->all && json_object_size(jget(top, "missing")) > 0;
		json_decref(a);
		a = b;
		if (o->json) {
			if (json_dumpf(top, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) < 0)
				rc = EXIT_FAIL;
			fputc('\n', stdout);
		} else {
			if (tty)
				fputs("\033[H\033[2J", stdout); /* home, clear: all a terminal needs */
			else if (!first)
				fputc('\n', stdout);
			if (o->all)
				show_top_all(top, stdout);
			else
				show_top(top, stdout);
			/* --once, a table: a node without an answer is exit 4 */
			if (o->once && missing)
				rc = EXIT_DEGRADED;
		}
		json_decref(top);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			errmsg("write error on standard output: %s", strerror(errno));
			rc = EXIT_FAIL;
			break;
		}
		if (o->once || (rc && rc != EXIT_DEGRADED))
			break;
	}
	json_decref(a);
	kb_close();
	return rc;
}
