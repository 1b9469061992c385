/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl.c - the operator's view of the local shuffled.
 *
 *   shufflectl [-s SOCKET] [--json] [--prometheus] [--timeout MS] COMMAND
 *
 * shufflectl is one more client of the daemon's control socket
 * (proto/ipc.h): HELLO -> HELLO_OK, then CTL(cmd) -> CTL_REPLY chunks of
 * one JSON document (schema "shuffle/1", docs/shufflectl.md).  It renders
 * that document as aligned tables (default), prints it pretty (--json), or
 * as Prometheus text exposition format (stats --prometheus).
 *
 * Exit status, as systemctl(1) does it: 0 the daemon answered; 3 it is not
 * running (no socket, or the socket refuses connections); 2 bad usage;
 * 1 anything else (timeout, protocol error, permission, write error).
 *
 * Counter names, kinds and descriptions come from proto/stats.h, the list
 * the daemon itself renders, so the tables and the Prometheus HELP lines
 * cannot drift from what the daemon counts.  Keys the daemon sends that
 * this build does not know (a newer daemon) are still shown, without a
 * description (Prometheus type "untyped").
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/stats.h"
#include "client/client.h"
#include "proto/ipc.h"

#define SCHEMA "shuffle/1"

enum exit_code {
	EXIT_OK = 0,          /* the daemon answered */
	EXIT_FAIL = 1,        /* any other error */
	EXIT_USAGE = 2,       /* bad command line */
	EXIT_NOT_RUNNING = 3, /* no socket, or nobody listening on it */
};

#define DEFAULT_TIMEOUT_MS 5000
#define REPLY_MAX (256u << 20) /* bound on one JSON answer */

/* ------------------------------------------------------------------ utils */

static const char *prog = "shufflectl";

static void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errmsg(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Allocation failure in a short-lived tool: say so and stop. */
static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		errmsg("out of memory");
		exit(EXIT_FAIL);
	}
	return q;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------- the socket path */


/*
 * The control socket, found as the client library (client/env.c) and the
 * daemon (daemon/config.c) place it: opt, else $SHF_SOCKET, else
 * $SHF_RUNTIME_DIR/shuffled.sock, else <base>/<node>/shuffled.sock with
 * <base> /run/shuffle for uid 0, $XDG_RUNTIME_DIR/shuffle (if absolute) or
 * /tmp/shuffle-<uid>, and <node> $SHF_NODE or the host name.
 * 0, or -EINVAL with a message printed.
 */
static int socket_path(const char *opt, char *out, size_t cap)
{
	/* the library's own rule, so the two can never disagree */
	if (shc_env_socket_path(opt, (unsigned long)geteuid(), out, cap) < 0) {
		errmsg("%s; use -s or set SHF_SOCKET", shf_error_detail());
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------- the socket */

struct conn {
	int fd;
	const char *path;
	int64_t deadline; /* now_ms() bound on every wait; INT64_MAX: none */
	uint32_t next_id; /* request ids, echoed by the daemon */
	uint32_t node;    /* from HELLO_OK */
};

static int conn_left_ms(const struct conn *c)
{
	if (c->deadline == INT64_MAX)
		return -1;
	int64_t left = c->deadline - now_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Connect.  0, or the connect(2) errno (negative), not printed: the caller
 * decides between "not running" and a failure. */
static int conn_connect(struct conn *c, const char *path, int timeout_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	c->path = path;
	c->next_id = 1;
	c->deadline = timeout_ms > 0 ? now_ms() + timeout_ms : INT64_MAX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	/* connect(2) on a UNIX socket waits while the listen backlog is full;
	 * SO_SNDTIMEO bounds that wait (it then fails with EAGAIN). */
	if (timeout_ms > 0) {
		struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(c->fd);
		c->fd = -1;
		return r;
	}
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0) {
		/* BYE is a courtesy: the daemon treats a plain close the same */
		shf_ipc_send(c->fd, SHF_IPC_BYE, c->next_id++, NULL, 0, NULL, 0);
		close(c->fd);
	}
	c->fd = -1;
}

/* Receive one validated datagram within the deadline.  Its size, or a
 * negative errno with a message printed (-ETIMEDOUT, -ECONNRESET on EOF). */
static long conn_recv(struct conn *c, void *buf, size_t cap)
{
	for (;;) {
		struct pollfd p = {c->fd, POLLIN, 0};
		int n = poll(&p, 1, conn_left_ms(c));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			errmsg("poll: %s", strerror(errno));
			return -errno;
		}
		if (n == 0) {
			errmsg("no answer from shuffled at %s within the timeout (daemon busy or "
			       "stopped? see --timeout)", c->path);
			return -ETIMEDOUT;
		}
		long r = shf_ipc_recv(c->fd, buf, cap, NULL, NULL);
		if (r == -EAGAIN || r == -EINTR)
			continue;
		if (r == 0 || r == -ECONNRESET) {
			errmsg("shuffled at %s closed the connection", c->path);
			return -ECONNRESET;
		}
		if (r < 0) {
			errmsg("bad message from shuffled at %s: %s", c->path, strerror((int)-r));
			return r;
		}
		return r;
	}
}

/* An ERROR datagram: print its text.  Returns its (negative) errno. */
static int conn_error(const struct conn *c, const char *msg, size_t n, const char *what)
{
	struct shf_ipc_error e;
	memcpy(&e, msg + sizeof(struct shf_ipc_hdr), sizeof(e));
	const char *text = msg + sizeof(struct shf_ipc_hdr) + sizeof(e);
	(void)n; /* shf_ipc_check() made sure text ends inside the datagram */
	errmsg("shuffled at %s refused %s: %s%s%s", c->path, what,
	       e.err < 0 ? strerror(-e.err) : "error", text[0] ? ": " : "", text);
	return e.err < 0 ? e.err : -EPROTO;
}

static _Alignas(8) char msgbuf[SHF_IPC_MAX_MSG];

/* HELLO -> HELLO_OK.  0 or negative errno (printed). */
static int conn_hello(struct conn *c)
{
	struct shf_ipc_hello h = {SHF_IPC_VERSION, (uint32_t)getpid()};
	uint32_t id = c->next_id++;
	int r = shf_ipc_send(c->fd, SHF_IPC_HELLO, id, &h, sizeof(h), NULL, 0);
	if (r == -EPIPE || r == -ECONNRESET) {
		errmsg("shuffled at %s closed the connection", c->path);
		return r;
	}
	if (r < 0) {
		errmsg("cannot talk to shuffled at %s: %s", c->path, strerror(-r));
		return r;
	}
	long n = conn_recv(c, msgbuf, sizeof(msgbuf));
	if (n < 0)
		return (int)n;
	struct shf_ipc_hdr hdr;
	memcpy(&hdr, msgbuf, sizeof(hdr));
	if (hdr.type == SHF_IPC_ERROR)
		return conn_error(c, msgbuf, (size_t)n, "the connection");
	if (hdr.type != SHF_IPC_HELLO_OK || hdr.id != id) {
		errmsg("unexpected answer (type %u) from shuffled at %s", hdr.type, c->path);
		return -EPROTO;
	}
	struct shf_ipc_hello_ok ok;
	memcpy(&ok, msgbuf + sizeof(hdr), sizeof(ok));
	if (ok.version != SHF_IPC_VERSION) {
		errmsg("shuffled at %s speaks protocol %u, shufflectl %u", c->path, ok.version,
		       SHF_IPC_VERSION);
		return -EPROTO;
	}
	c->node = ok.node;
	return 0;
}

/*
 * CTL(cmd) -> the JSON document.  Checks that it is an object that names
 * the command; the schema is checked by the caller (--json prints any).
 * 0 with *doc_p set, or negative errno (printed).
 */
static int conn_request(struct conn *c, const char *cmd, json_t **doc_p)
{
	struct shf_ipc_ctl m = {0};
	snprintf(m.cmd, sizeof(m.cmd), "%s", cmd);
	uint32_t id = c->next_id++;
	int r = shf_ipc_send(c->fd, SHF_IPC_CTL, id, &m, sizeof(m), NULL, 0);
	if (r == -EPIPE || r == -ECONNRESET) {
		errmsg("shuffled at %s closed the connection", c->path);
		return r;
	}
	if (r < 0) {
		errmsg("cannot send '%s' to shuffled at %s: %s", cmd, c->path, strerror(-r));
		return r;
	}
	char *text = NULL;
	size_t len = 0;
	for (;;) {
		long n = conn_recv(c, msgbuf, sizeof(msgbuf));
		if (n < 0) {
			r = (int)n;
			goto fail;
		}
		struct shf_ipc_hdr hdr;
		memcpy(&hdr, msgbuf, sizeof(hdr));
		if (hdr.type == SHF_IPC_ERROR) {
			char what[64];
			snprintf(what, sizeof(what), "'%s'", cmd);
			r = conn_error(c, msgbuf, (size_t)n, what);
			goto fail;
		}
		if (hdr.type != SHF_IPC_CTL_REPLY || hdr.id != id) {
			errmsg("unexpected answer (type %u, id %u) to '%s' from shuffled at %s",
			       hdr.type, hdr.id, cmd, c->path);
			r = -EPROTO;
			goto fail;
		}
		struct shf_ipc_ctl_reply rep;
		memcpy(&rep, msgbuf + sizeof(hdr), sizeof(rep));
		if (rep.status < 0) {
			errmsg("shuffled at %s could not answer '%s': %s", c->path, cmd,
			       strerror(-rep.status));
			r = rep.status;
			goto fail;
		}
		size_t chunk = (size_t)n - sizeof(hdr) - sizeof(rep);
		if (len + chunk > REPLY_MAX) {
			errmsg("answer to '%s' longer than %u bytes", cmd, REPLY_MAX);
			r = -EMSGSIZE;
			goto fail;
		}
		text = xrealloc(text, len + chunk);
		memcpy(text + len, msgbuf + sizeof(hdr) + sizeof(rep), chunk);
		len += chunk;
		if (!rep.more)
			break;
	}
	json_error_t je;
	json_t *doc = json_loadb(text ? text : "", len, 0, &je);
	if (!doc || !json_is_object(doc)) {
		errmsg("malformed JSON in the answer to '%s': %s", cmd,
		       doc ? "not an object" : je.text);
		json_decref(doc);
		r = -EBADMSG;
		goto fail;
	}
	const char *got = json_string_value(json_object_get(doc, "command"));
	if (!got || strcmp(got, cmd) != 0) {
		errmsg("the answer to '%s' is for '%s'", cmd, got ? got : "(none)");
		json_decref(doc);
		r = -EBADMSG;
		goto fail;
	}
	free(text);
	*doc_p = doc;
	return 0;
fail:
	free(text);
	return r;
}

/* ---------------------------------------------------------- JSON helpers */

static json_t *jget(const json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

/* Integer member, or `def` when absent or not a number. */
static long long jint(const json_t *o, const char *k, long long def)
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

static double jreal(const json_t *o, const char *k, double def)
{
	json_t *v = jget(o, k);
	return json_is_number(v) ? json_number_value(v) : def;
}

static const char *jstr(const json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(jget(o, k));
	return s ? s : def;
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
	while (x >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
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

#define TABLE_COLS_MAX 24

/* An aligned text table: a header row, then cells appended row by row. */
struct table {
	unsigned ncols;
	const char *head[TABLE_COLS_MAX];
	bool right[TABLE_COLS_MAX]; /* right-aligned (numbers) */
	char **cells;               /* row-major, heap strings */
	size_t ncells, cap;
};

/* cols: "NAME<" or "COUNT>" - a trailing '>' right-aligns the column. */
static void table_init(struct table *t, const char *const *cols)
{
	memset(t, 0, sizeof(*t));
	for (; *cols && t->ncols < TABLE_COLS_MAX; cols++, t->ncols++) {
		size_t l = strlen(*cols);
		t->right[t->ncols] = l > 0 && (*cols)[l - 1] == '>';
		t->head[t->ncols] = *cols;
	}
}

static void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void table_cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		errmsg("out of memory");
		exit(EXIT_FAIL);
	}
	if (t->ncells == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->cells = xrealloc(t->cells, t->cap * sizeof(*t->cells));
	}
	/* one cell is one line: a newline from a peer-supplied name would
	 * break the alignment */
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	t->cells[t->ncells++] = s;
}

static size_t head_len(const char *h)
{
	size_t l = strlen(h);
	return l > 0 && h[l - 1] == '>' ? l - 1 : l;
}

static void table_print(struct table *t, FILE *f, int indent)
{
	size_t w[TABLE_COLS_MAX];
	unsigned nc = t->ncols;
	for (unsigned i = 0; i < nc; i++)
		w[i] = head_len(t->head[i]);
	for (size_t i = 0; i < t->ncells; i++) {
		size_t l = strlen(t->cells[i]);
		if (l > w[i % nc])
			w[i % nc] = l;
	}
	size_t rows = t->ncells / nc;
	for (size_t r = 0; r <= rows; r++) {
		fprintf(f, "%*s", indent, "");
		for (unsigned i = 0; i < nc; i++) {
			const char *s = r == 0 ? t->head[i] : t->cells[(r - 1) * nc + i];
			int len = r == 0 ? (int)head_len(s) : (int)strlen(s);
			bool last = i + 1 == nc;
			if (t->right[i])
				fprintf(f, "%*s%.*s", (int)w[i] - len, "", len, s);
			else if (last)
				fprintf(f, "%.*s", len, s);
			else
				fprintf(f, "%.*s%*s", len, s, (int)w[i] - len, "");
			if (!last)
				fputs("  ", f);
		}
		fputc('\n', f);
	}
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------ counter descriptions */

struct stat_desc {
	const char *name;
	bool counter; /* monotonic; else a gauge */
	const char *help;
};

#define KIND_COUNTER true
#define KIND_GAUGE false
#define STAT_DESC(name, kind, help) {#name, KIND_##kind, help},
static const struct stat_desc daemon_stats[] = {SHF_DAEMON_STATS(STAT_DESC)};
static const struct stat_desc client_stats[] = {SHF_CLIENT_STATS(STAT_DESC)};
#undef STAT_DESC

/* Per-peer numbers of shd_net_json() (daemon/net.c): not in stats.h
 * because they are fields of the peer, not counters of a scope. */
static const struct stat_desc peer_stats[] = {
	{"batches_out", true, "batches sent to this peer"},
	{"bytes_out", true, "bytes of batches sent to this peer"},
	{"msgs_out", true, "messages sent to this peer"},
	{"batches_in", true, "batches received from this peer"},
	{"bytes_in", true, "bytes of batches received from this peer"},
	{"msgs_in", true, "messages received from this peer"},
	{"credit_stalls", true, "times a full batch to this peer waited for credit"},
	{"drops_down", true, "messages to this peer dropped because it was down"},
	{"inflight", false, "batches sent to this peer and not yet acknowledged"},
	{"queued", false, "closed batches to this peer waiting for credit"},
	{"open_bytes", false, "bytes in the batch being filled for this peer"},
	{"waiters", false, "clients waiting for room toward this peer"},
	{"parked", false, "1 while batches from this peer are parked on a full delivery ring"},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct stat_desc *stat_find(const struct stat_desc *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

/* ------------------------------------------------------- human renderers */

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
	if (n < 0) {
		errmsg("out of memory");
		exit(EXIT_FAIL);
	}
	l->k[l->n] = strdup(k);
	l->v[l->n++] = s;
}

static void kv_print(struct kv *l, FILE *f)
{
	int w = 0;
	for (unsigned i = 0; i < l->n; i++)
		if ((int)strlen(l->k[i]) > w)
			w = (int)strlen(l->k[i]);
	for (unsigned i = 0; i < l->n; i++) {
		fprintf(f, "%-*s  %s\n", w, l->k[i] ? l->k[i] : "?", l->v[i]);
		free(l->k[i]);
		free(l->v[i]);
	}
	l->n = 0;
}

static void show_status(const json_t *s, FILE *f)
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
	kv_add(&l, "jobs", "%lld", jint(s, "jobs", 0));
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
	kv_print(&l, f);
}

/* One scope of counters: NAME, VALUE, DESCRIPTION. */
static void show_counters(const json_t *o, const struct stat_desc *d, size_t nd, FILE *f,
			  int indent)
{
	static const char *const cols[] = {"COUNTER", "VALUE>", "DESCRIPTION", NULL};
	struct table t;
	table_init(&t, cols);
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

static void show_stats(const json_t *s, FILE *f)
{
	fprintf(f, "Daemon:\n");
	show_counters(jget(s, "daemon"), daemon_stats, NELEM(daemon_stats), f, 2);
	fprintf(f, "\nAll clients (connected and departed):\n");
	show_counters(jget(s, "clients_total"), client_stats, NELEM(client_stats), f, 2);
}

static void show_jobs(const json_t *a, FILE *f)
{
	if (!json_array_size(a)) {
		fprintf(f, "no jobs\n");
		return;
	}
	static const char *const cols[] = {"JOB", "UID>", "WORLD>", "REGISTERED>", "LOCAL>",
					   "GONE>", "READY", "EPOCHS>", "PHASE1>", "PHASE2>",
					   "MISSING", NULL};
	struct table t;
	table_init(&t, cols);
	size_t i;
	json_t *j;
	json_array_foreach(a, i, j)
	{
		char ep[40];
		fmt_count((unsigned long long)jint(j, "epochs", 0), ep, sizeof(ep));
		table_cell(&t, "%s", jstr(j, "name", "?"));
		table_cell(&t, "%lld", jint(j, "uid", -1));
		table_cell(&t, "%lld", jint(j, "world", 0));
		table_cell(&t, "%lld", jint(j, "registered", 0));
		table_cell(&t, "%lld", jint(j, "local", 0));
		table_cell(&t, "%lld", jint(j, "gone", 0));
		table_cell(&t, "%s", jint(j, "ready", 0) ? "yes" : "no");
		table_cell(&t, "%s", ep);
		table_cell(&t, "%lld", jint(j, "epoch_phase1", 0));
		table_cell(&t, "%lld", jint(j, "epoch_phase2", 0));
		const char *m = jstr(j, "missing", "");
		table_cell(&t, "%s", m[0] ? m : "-");
	}
	table_print(&t, f, 0);
}

/* "37%" of a ring in use, "-" without a ring */
static void fmt_fill(const json_t *c, const char *key, char *buf, size_t n)
{
	long long ring = jint(c, "ring_bytes", 0), used = jint(c, key, -1);
	if (ring <= 0 || used < 0)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%lld%%", used * 100 / ring);
}

static void show_clients(const json_t *a, FILE *f)
{
	if (!json_array_size(a)) {
		fprintf(f, "no clients\n");
		return;
	}
	static const char *const cols[] = {"ID>", "PID>", "UID>", "JOB", "RANK>", "STATE",
					   "EPOCH", "BLOCKED", "RING>", "SEND>", "DELIV>",
					   "MSGS_IN>", "MSGS_OUT>", "BYTES_IN>", "BYTES_OUT>",
					   "DROPS>", "AGE>", NULL};
	struct table t;
	table_init(&t, cols);
	size_t i;
	json_t *c;
	json_array_foreach(a, i, c)
	{
		const json_t *st = jget(c, "stats");
		char ring[32] = "-", sf[32], df[32], mi[40], mo[40], bi[40], bo[40], dr[40], age[40];
		if (jint(c, "ring_bytes", 0) > 0)
			fmt_iec((unsigned long long)jint(c, "ring_bytes", 0), ring, sizeof(ring));
		fmt_fill(c, "send_used", sf, sizeof(sf));
		fmt_fill(c, "deliver_used", df, sizeof(df));
		fmt_count((unsigned long long)jint(st, "msgs_in", 0), mi, sizeof(mi));
		fmt_count((unsigned long long)jint(st, "msgs_out", 0), mo, sizeof(mo));
		fmt_iec((unsigned long long)jint(st, "bytes_in", 0), bi, sizeof(bi));
		fmt_iec((unsigned long long)jint(st, "bytes_out", 0), bo, sizeof(bo));
		fmt_count((unsigned long long)(jint(st, "drops_dead", 0) + jint(st, "drops_down", 0)),
			  dr, sizeof(dr));
		fmt_secs(jreal(c, "connected_s", 0), age, sizeof(age));
		table_cell(&t, "%lld", jint(c, "id", -1));
		table_cell(&t, "%lld", jint(c, "pid", -1));
		table_cell(&t, "%lld", jint(c, "uid", -1));
		table_cell(&t, "%s", jstr(c, "job", "-"));
		table_cell(&t, "%lld", jint(c, "rank", -1));
		table_cell(&t, "%s", jstr(c, "state", "?"));
		table_cell(&t, "%s", jstr(c, "epoch", "?"));
		table_cell(&t, "%s", jint(c, "blocked", 0) ? "yes" : "no");
		table_cell(&t, "%s", ring);
		table_cell(&t, "%s", sf);
		table_cell(&t, "%s", df);
		table_cell(&t, "%s", mi);
		table_cell(&t, "%s", mo);
		table_cell(&t, "%s", bi);
		table_cell(&t, "%s", bo);
		table_cell(&t, "%s", dr);
		table_cell(&t, "%s", age);
	}
	table_print(&t, f, 0);
}

static void show_peers(const json_t *a, FILE *f)
{
	if (!json_array_size(a)) {
		fprintf(f, "no peers (this daemon is alone)\n");
		return;
	}
	static const char *const cols[] = {"NODE>", "HOST", "ADDR", "STATE", "HEARD>",
					   "INFLIGHT>", "QUEUED>", "OPEN>", "PARKED", "MSGS_OUT>",
					   "MSGS_IN>", "BYTES_OUT>", "BYTES_IN>", "STALLS>",
					   "DROPS>", NULL};
	struct table t;
	table_init(&t, cols);
	size_t i;
	json_t *p;
	json_array_foreach(a, i, p)
	{
		char heard[40], mo[40], mi[40], bo[40], bi[40], st[40], dr[40], ob[40];
		fmt_secs(jreal(p, "last_heard_ms", 0) / 1e3, heard, sizeof(heard));
		fmt_count((unsigned long long)jint(p, "msgs_out", 0), mo, sizeof(mo));
		fmt_count((unsigned long long)jint(p, "msgs_in", 0), mi, sizeof(mi));
		fmt_iec((unsigned long long)jint(p, "bytes_out", 0), bo, sizeof(bo));
		fmt_iec((unsigned long long)jint(p, "bytes_in", 0), bi, sizeof(bi));
		fmt_count((unsigned long long)jint(p, "credit_stalls", 0), st, sizeof(st));
		fmt_count((unsigned long long)jint(p, "drops_down", 0), dr, sizeof(dr));
		fmt_iec((unsigned long long)jint(p, "open_bytes", 0), ob, sizeof(ob));
		table_cell(&t, "%lld", jint(p, "node", -1));
		table_cell(&t, "%s", jstr(p, "host", "?"));
		table_cell(&t, "%s", jstr(p, "addr", "?"));
		table_cell(&t, "%s", jstr(p, "state", "?"));
		table_cell(&t, "%s ago", heard);
		table_cell(&t, "%lld", jint(p, "inflight", 0));
		table_cell(&t, "%lld", jint(p, "queued", 0));
		table_cell(&t, "%s", ob);
		table_cell(&t, "%s", jint(p, "parked", 0) ? "yes" : "no");
		table_cell(&t, "%s", mo);
		table_cell(&t, "%s", mi);
		table_cell(&t, "%s", bo);
		table_cell(&t, "%s", bi);
		table_cell(&t, "%s", st);
		table_cell(&t, "%s", dr);
	}
	table_print(&t, f, 0);
}

static void show_config(const json_t *cfg, FILE *f)
{
	static const char *const cols[] = {"OPTION", "VALUE", "SOURCE", NULL};
	struct table t;
	table_init(&t, cols);
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

static void show_dump(const json_t *d, FILE *f)
{
	fprintf(f, "== status ==\n");
	show_status(jget(d, "status"), f);
	fprintf(f, "\n== stats ==\n");
	show_stats(jget(d, "stats"), f);
	fprintf(f, "\n== jobs ==\n");
	show_jobs(jget(d, "jobs"), f);
	fprintf(f, "\n== clients ==\n");
	show_clients(jget(d, "clients"), f);
	fprintf(f, "\n== peers ==\n");
	show_peers(jget(d, "peers"), f);
	fprintf(f, "\n== relay (client ids) ==\n");
	const json_t *r = jget(d, "relay");
	show_ids("runq", jget(r, "runq"), f);
	show_ids("dirty", jget(r, "dirty"), f);
	show_ids("marks", jget(r, "marks"), f);
}

/* ------------------------------------------------------------ Prometheus */

/*
 * Text exposition format 0.0.4: per family "# HELP", "# TYPE", then its
 * samples, every family once.  Names: shuffle_<name>_total for counters,
 * shuffle_<name> for gauges; daemon scope unprefixed, the all-clients sum
 * shuffle_clients_*, per client shuffle_client_*{job,rank}, per job
 * shuffle_job_*{job}, per peer shuffle_peer_*{node}.
 */

/* Metric name characters: [a-zA-Z0-9_]; anything else becomes '_'. */
static void prom_name(char *buf, size_t n, const char *scope, const char *key, bool counter,
		      bool known)
{
	int len = snprintf(buf, n, "shuffle_%s%s%s", scope, key,
			   counter && known ? "_total" : "");
	for (int i = 0; i < len && (size_t)i < n; i++) {
		char c = buf[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			buf[i] = '_';
	}
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

/* Sample value: integers exactly, reals in full precision, booleans 0/1. */
static void prom_value(FILE *f, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(f, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		fprintf(f, "%d", json_is_true(v) ? 1 : 0);
	else
		fprintf(f, "NaN");
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
		char name[160], help[400];
		prom_name(name, sizeof(name), scope, k, sd && sd->counter, sd != NULL);
		snprintf(help, sizeof(help), "%s%s", what, sd ? sd->help : k);
		prom_family(f, name, sd ? (sd->counter ? "counter" : "gauge") : "untyped", help);
		fprintf(f, "%s ", name);
		prom_value(f, v);
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
				const struct stat_desc *sd = stat_find(client_stats,
									 NELEM(client_stats), key);
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
		for (size_t i = 0; i < NELEM(client_stats); i++)
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
			const struct stat_desc *sd = stat_find(client_stats, NELEM(client_stats), key);
			char name[160], help[400];
			bool any = false;
			for (size_t c = 0; c < n && !any; c++)
				any = prom_sampleable(json_object_get(pc[c].stats, key));
			if (!any)
				continue;
			prom_name(name, sizeof(name), "client_", key, sd && sd->counter, sd != NULL);
			snprintf(help, sizeof(help), "Per client (job, rank): %s", sd ? sd->help : key);
			prom_family(f, name, sd ? (sd->counter ? "counter" : "gauge") : "untyped", help);
			for (size_t c = 0; c < n; c++) {
				json_t *v = json_object_get(pc[c].stats, key);
				if (!prom_sampleable(v))
					continue;
				fputs(name, f);
				prom_client_labels(f, &pc[c]);
				fputc(' ', f);
				prom_value(f, v);
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
			!strcmp(jstr(p, "state", ""), "up"));
	prom_family(f, "shuffle_peer_last_heard_seconds", "gauge",
		    "Per peer: seconds since anything was heard from the peer");
	json_array_foreach(peers, i, p)
		fprintf(f, "shuffle_peer_last_heard_seconds{node=\"%lld\"} %.9g\n",
			jint(p, "node", -1), jreal(p, "last_heard_ms", 0) / 1e3);
	for (size_t k = 0; k < NELEM(peer_stats); k++) {
		const struct stat_desc *sd = &peer_stats[k];
		char name[160], help[300];
		prom_name(name, sizeof(name), "peer_", sd->name, sd->counter, true);
		snprintf(help, sizeof(help), "Per peer: %s", sd->help);
		prom_family(f, name, sd->counter ? "counter" : "gauge", help);
		json_array_foreach(peers, i, p)
		{
			json_t *v = jget(p, sd->name);
			if (!prom_sampleable(v))
				continue;
			fprintf(f, "%s{node=\"%lld\"} ", name, jint(p, "node", -1));
			prom_value(f, v);
			fputc('\n', f);
		}
	}
}

/* The whole exposition from one "dump" (one consistent snapshot). */
static void show_prometheus(const json_t *d, FILE *f)
{
	const json_t *st = jget(d, "status");
	prom_family(f, "shuffle_up", "gauge", "1 when shufflectl could read the daemon's state");
	fprintf(f, "shuffle_up 1\n");
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
	prom_scope(f, jget(stats, "daemon"), "", "", daemon_stats, NELEM(daemon_stats));
	prom_scope(f, jget(stats, "clients_total"), "clients_",
		   "Sum over all clients, connected and departed: ", client_stats,
		   NELEM(client_stats));
	prom_clients(f, jget(d, "clients"));
	prom_jobs(f, jget(d, "jobs"));
	prom_peers(f, jget(d, "peers"));
}

/* -------------------------------------------------------------- commands */

enum output { OUT_TABLE, OUT_JSON, OUT_PROMETHEUS };

static const char *const commands[] = {"status", "clients", "jobs", "peers",
				       "stats",  "config",  "dump", "ping", NULL};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: shufflectl [-s SOCKET] [--json | --prometheus] [--timeout MS] COMMAND\n"
		"\n"
		"Ask the node's shuffled daemon about its state.\n"
		"\n"
		"Commands:\n"
		"  status   the daemon: version, pid, node, uptime, connections\n"
		"  clients  registered client processes: job, rank, rings, counters\n"
		"  jobs     jobs: world, registered and missing ranks, epochs\n"
		"  peers    the daemons on other nodes: state, credit, traffic\n"
		"  stats    daemon counters and the sum of all clients' counters\n"
		"  config   every setting, its value and where it came from\n"
		"  dump     all of the above, and the relay's queues\n"
		"  ping     check that the daemon answers\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH  the daemon's control socket (default: $SHF_SOCKET, else\n"
		"                     $SHF_RUNTIME_DIR/shuffled.sock, else /run/shuffle/NODE/...\n"
		"                     for root, $XDG_RUNTIME_DIR/shuffle/NODE/... or\n"
		"                     /tmp/shuffle-UID/NODE/shuffled.sock; NODE: $SHF_NODE or\n"
		"                     the host name)\n"
		"  -j, --json         print the daemon's JSON answer (schema shuffle/1)\n"
		"  -p, --prometheus   with stats: Prometheus text format (textfile collector)\n"
		"  -t, --timeout MS   give up after MS milliseconds (default %d; 0: wait)\n"
		"  -h, --help         print this help\n"
		"  -V, --version      print the version\n"
		"\n"
		"Exit status: 0 the daemon answered, 1 error, 2 bad usage, 3 the daemon is not\n"
		"running.  See shufflectl(1) and docs/shufflectl.md.\n",
		DEFAULT_TIMEOUT_MS);
}

static int print_json(const json_t *doc)
{
	if (json_dumpf(doc, stdout, JSON_INDENT(2)) < 0)
		return -EIO;
	fputc('\n', stdout);
	return 0;
}

/* Run one command on an open connection; returns an exit code. */
static int run(struct conn *c, const char *cmd, enum output out)
{
	const char *ask = out == OUT_PROMETHEUS ? "dump" : cmd;
	json_t *doc = NULL;
	int rc = EXIT_FAIL;
	if (conn_request(c, ask, &doc) < 0)
		return EXIT_FAIL;
	if (out == OUT_JSON) {
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
		show_prometheus(doc, stdout);
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
		show_status(doc, stdout);
	} else if (!strcmp(cmd, "clients")) {
		show_clients(jget(doc, "clients"), stdout);
	} else if (!strcmp(cmd, "jobs")) {
		show_jobs(jget(doc, "jobs"), stdout);
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

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"prometheus", no_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *sock_opt = NULL;
	enum output out = OUT_TABLE;
	bool json = false, prom = false;
	int timeout_ms = DEFAULT_TIMEOUT_MS;
	int o;

	opterr = 0; /* our own messages */
	while ((o = getopt_long(argc, argv, ":s:jpt:hV", lopts, NULL)) != -1) {
		switch (o) {
		case 's':
			sock_opt = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'p':
			prom = true;
			break;
		case 't': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > INT_MAX) {
				errmsg("--timeout '%s': not a number of milliseconds (0..%d)", optarg,
				       INT_MAX);
				return EXIT_USAGE;
			}
			timeout_ms = (int)v;
			break;
		}
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
	if (optind >= argc) {
		errmsg("no command given (status, clients, jobs, peers, stats, config, dump, "
		       "ping; see --help)");
		return EXIT_USAGE;
	}
	if (optind + 1 < argc) {
		errmsg("one command at a time: unexpected '%s'", argv[optind + 1]);
		return EXIT_USAGE;
	}
	const char *cmd = argv[optind];
	bool known = false;
	for (const char *const *p = commands; *p; p++)
		known |= !strcmp(*p, cmd);
	if (!known) {
		errmsg("unknown command '%s' (status, clients, jobs, peers, stats, config, dump, "
		       "ping)", cmd);
		return EXIT_USAGE;
	}
	if (json && prom) {
		errmsg("--json and --prometheus exclude each other");
		return EXIT_USAGE;
	}
	if (prom && strcmp(cmd, "stats") != 0) {
		errmsg("--prometheus goes with 'stats' only");
		return EXIT_USAGE;
	}
	out = json ? OUT_JSON : prom ? OUT_PROMETHEUS : OUT_TABLE;

	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (socket_path(sock_opt, path, sizeof(path)) < 0)
		return EXIT_USAGE;

	struct conn c = {.fd = -1};
	int r = conn_connect(&c, path, timeout_ms);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		errmsg("shuffled is not running: %s %s", path,
		       r == -ENOENT ? "does not exist"
				    : "refuses connections (a stale socket of a daemon that died?)");
		if (out == OUT_PROMETHEUS) {
			/* so a textfile collector records the daemon as down */
			prom_family(stdout, "shuffle_up", "gauge",
				    "1 when shufflectl could read the daemon's state");
			printf("shuffle_up 0\n");
			fflush(stdout);
		}
		return EXIT_NOT_RUNNING;
	}
	if (r < 0) {
		if (r == -EAGAIN)
			errmsg("cannot connect to %s: timed out (the daemon's listen queue is full)",
			       path);
		else
			errmsg("cannot connect to %s: %s", path, strerror(-r));
		return EXIT_FAIL;
	}
	int rc = conn_hello(&c) < 0 ? EXIT_FAIL : run(&c, cmd, out);
	conn_close(&c);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		errmsg("write error on standard output: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return rc;
}
