/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-json.c - every shufflectl command against a live private
 * daemon: --json parses and carries the documented keys of schema
 * "shuffle/1" (counters checked against proto/stats.h, and every counter
 * and option named in the docs); the tables print; ping names the daemon's
 * pid and node; the socket is found through -s, $SHF_SOCKET and
 * $SHF_RUNTIME_DIR; a daemon killed with SIGKILL leaves a stale socket
 * that gives exit 3, and a new daemon in the same directory works.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/stats.h"
#include "tests/lib/daemon.h"

static struct td_env *e;

static void has_keys(json_t *o, const char *what, const char *const *keys)
{
	CHECKF(json_is_object(o), "%s is not an object", what);
	for (; *keys; keys++)
		CHECKF(json_object_get(o, *keys), "%s lacks \"%s\"", what, *keys);
}

#define NAME(name, kind, help) #name,
static const char *const daemon_counters[] = {SHF_DAEMON_STATS(NAME) NULL};
static const char *const client_counters[] = {SHF_CLIENT_STATS(NAME) NULL};
static const char *const fabric_counters[] = {SHF_FABRIC_STATS(NAME) NULL};
#undef NAME

static const char *const status_keys[] = {"version", "pid", "node_name", "node_id", "nodes",
					  "socket", "uptime_s", "sessions", "clients", "jobs",
					  NULL};
static const char *const option_keys[] = {"value", "source", "default", "type", "env", "help",
					  NULL};

/* exactly the stats.h list: a counter kept but not shown, or shown but not
 * in the list, fails */
static void exact_counters(json_t *o, const char *what, const char *const *names)
{
	has_keys(o, what, names);
	size_t n = 0;
	while (names[n])
		n++;
	CHECKF(json_object_size(o) == n, "%s has %zu keys, stats.h lists %zu", what,
	       json_object_size(o), n);
}

static void check_stats(json_t *s)
{
	exact_counters(json_object_get(s, "daemon"), "stats.daemon", daemon_counters);
	exact_counters(json_object_get(s, "clients_total"), "stats.clients_total",
		       client_counters);
	/* the fabric endpoint's counters, when the daemon reports them */
	if (json_object_get(s, "fabric"))
		exact_counters(json_object_get(s, "fabric"), "stats.fabric", fabric_counters);
}

static void check_config(json_t *cfg, const char *run)
{
	CHECK(json_object_size(cfg) >= 20);
	const char *k;
	json_t *v;
	json_object_foreach(cfg, k, v)
	{
		has_keys(v, k, option_keys);
		const char *type = json_string_value(json_object_get(v, "type"));
		CHECKF(type, "%s: type", k);
		if (!strcmp(type, "size") || !strcmp(type, "integer")) {
			CHECKF(json_is_integer(json_object_get(v, "value")), "%s: value", k);
			CHECKF(json_is_integer(json_object_get(v, "min")), "%s: min", k);
			CHECKF(json_is_integer(json_object_get(v, "max")), "%s: max", k);
		} else {
			CHECKF(json_is_string(json_object_get(v, "value")), "%s: value", k);
		}
	}
	json_t *rd = json_object_get(cfg, "runtime_dir");
	CHECK(!strcmp(json_string_value(json_object_get(rd, "value")), run));
	CHECK(!strcmp(json_string_value(json_object_get(rd, "source")), "command line"));
	json_t *rv = json_object_get(cfg, "rendezvous");
	CHECK(!strcmp(json_string_value(json_object_get(rv, "value")), "none"));
}

/* Every counter and option must be documented: names appear in the docs. */
static void check_docs(json_t *cfg)
{
	const char *src = getenv("SHF_TEST_SOURCE_DIR");
	if (!src || !*src) {
		fprintf(stderr, "ctl-json: SHF_TEST_SOURCE_DIR unset; docs not checked\n");
		return;
	}
	char path[512];
	snprintf(path, sizeof(path), "%s/docs/shufflectl.md", src);
	char *schema = td_read_file(path);
	CHECKF(schema[0], "%s is missing or empty", path);
	for (const char *const *n = daemon_counters; *n; n++)
		CHECKF(strstr(schema, *n), "docs/shufflectl.md does not document counter %s", *n);
	for (const char *const *n = client_counters; *n; n++)
		CHECKF(strstr(schema, *n), "docs/shufflectl.md does not document counter %s", *n);
	for (const char *const *n = fabric_counters; *n; n++)
		CHECKF(strstr(schema, *n), "docs/shufflectl.md does not document counter %s", *n);
	snprintf(path, sizeof(path), "%s/docs/operations.md", src);
	char *ops = td_read_file(path);
	CHECKF(ops[0], "%s is missing or empty", path);
	const char *k;
	json_t *v;
	json_object_foreach(cfg, k, v)
	{
		char tick[80];
		snprintf(tick, sizeof(tick), "`%s`", k);
		CHECKF(strstr(ops, tick), "docs/operations.md does not describe option %s", k);
	}
	free(schema);
	free(ops);
}

static void json_commands(struct td_daemon *d)
{
	json_t *doc;

	doc = td_ctl_json(d->sock, "ping");
	CHECK(json_is_true(json_object_get(doc, "pong")));
	json_decref(doc);

	doc = td_ctl_json(d->sock, "status");
	has_keys(doc, "status", status_keys);
	CHECK(td_num(doc, "pid") == d->pid);
	CHECK(td_num(doc, "node_id") == 0 && td_num(doc, "nodes") == 1);
	CHECK(!strcmp(json_string_value(json_object_get(doc, "socket")), d->sock));
	json_decref(doc);

	doc = td_ctl_json(d->sock, "stats");
	check_stats(doc);
	long long req = td_num(doc, "daemon.ctl_requests");
	json_decref(doc);
	/* one request per shufflectl run (not ping: it also asks status) */
	struct td_out o;
	td_ctl(d->sock, &o, "jobs", NULL);
	CHECK(o.status == 0);
	td_out_free(&o);
	doc = td_ctl_json(d->sock, "stats");
	CHECKF(td_num(doc, "daemon.ctl_requests") == req + 2, "ctl_requests %lld, expected %lld",
	       td_num(doc, "daemon.ctl_requests"), req + 2);
	json_decref(doc);

	doc = td_ctl_json(d->sock, "config");
	check_config(json_object_get(doc, "config"), d->run);
	check_docs(json_object_get(doc, "config"));
	json_decref(doc);

	const char *arrays[] = {"clients", "jobs", "peers", NULL};
	for (const char *const *a = arrays; *a; a++) {
		doc = td_ctl_json(d->sock, *a);
		json_t *v = json_object_get(doc, *a);
		CHECKF(json_is_array(v) && json_array_size(v) == 0, "%s: not an empty array", *a);
		json_decref(doc);
	}

	doc = td_ctl_json(d->sock, "dump");
	has_keys(doc, "dump", (const char *const[]){"status", "stats", "jobs", "clients", "peers",
						    "relay", NULL});
	has_keys(json_object_get(doc, "status"), "dump.status", status_keys);
	check_stats(json_object_get(doc, "stats"));
	has_keys(json_object_get(doc, "relay"), "dump.relay",
		 (const char *const[]){"runq", "dirty", "marks", NULL});
	json_decref(doc);
}

static void tables(struct td_daemon *d)
{
	static const struct {
		const char *cmd, *needle;
	} t[] = {
		{"status", "uptime"},        {"clients", "no clients"},
		{"jobs", "no jobs"},         {"peers", "no peers"},
		{"stats", "ctl_requests"},   {"stats", "msgs_in"},
		{"config", "command line"},  {"config", "ring_bytes"},
		{"dump", "== peers =="},     {"dump", "disc_proto"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct td_out o;
		td_ctl(d->sock, &o, t[i].cmd, NULL);
		CHECKF(o.status == 0, "%s: exit %d: %s", t[i].cmd, o.status, o.err);
		CHECKF(strstr(o.out, t[i].needle), "%s: no '%s' in:\n%s", t[i].cmd, t[i].needle,
		       o.out);
		CHECKF(o.err[0] == '\0', "%s wrote to stderr: %s", t[i].cmd, o.err);
		td_out_free(&o);
	}

	/* ping names the daemon */
	json_t *st = td_ctl_json(d->sock, "status");
	char want[256];
	snprintf(want, sizeof(want), "pong (pid %d, node %s)\n", (int)d->pid,
		 json_string_value(json_object_get(st, "node_name")));
	json_decref(st);
	struct td_out o;
	td_ctl(d->sock, &o, "ping", NULL);
	CHECKF(o.status == 0 && !strcmp(o.out, want), "ping: exit %d, '%s', want '%s'", o.status,
	       o.out, want);
	td_out_free(&o);
}

static void socket_from_env(struct td_daemon *d)
{
	const char *ctl = td_prog("SHF_TEST_SHUFFLECTL");
	char v1[TD_PATH_MAX + 32], v2[TD_PATH_MAX + 32];
	struct td_out o;
	snprintf(v1, sizeof(v1), "SHF_SOCKET=%s", d->sock);
	td_run((const char *const[]){ctl, "ping", NULL}, (const char *const[]){v1, NULL}, 20000, &o);
	CHECKF(o.status == 0, "SHF_SOCKET: exit %d: %s", o.status, o.err);
	td_out_free(&o);
	snprintf(v2, sizeof(v2), "SHF_RUNTIME_DIR=%s", d->run);
	td_run((const char *const[]){ctl, "--json", "status", NULL},
	       (const char *const[]){v2, NULL}, 20000, &o);
	CHECKF(o.status == 0, "SHF_RUNTIME_DIR: exit %d: %s", o.status, o.err);
	td_out_free(&o);
}

int main(void)
{
	e = td_init("ctl-json", 120, 0);
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);
	json_commands(d);
	tables(d);
	socket_from_env(d);

	/* killed: the socket stays, nobody listens - "not running" */
	td_kill(d);
	CHECK(access(d->sock, F_OK) == 0);
	struct td_out o;
	td_ctl(d->sock, &o, "ping", NULL);
	CHECKF(o.status == 3, "stale socket: exit %d: %s", o.status, o.err);
	td_out_free(&o);
	/* a new daemon in the same runtime directory is not blocked by it */
	CHECK(td_start(d, NULL, NULL) == 0);
	td_ctl(d->sock, &o, "ping", NULL);
	CHECKF(o.status == 0, "after restart: exit %d: %s", o.status, o.err);
	td_out_free(&o);
	td_stop(d);
	td_ctl(d->sock, &o, "ping", NULL);
	CHECKF(o.status == 3, "after stop: exit %d: %s", o.status, o.err);
	td_out_free(&o);
	return 0;
}
