/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-config.c - configuration precedence as an operator sees it
 * through `shufflectl config`: one option each from the INI file, the
 * environment and the command line, one set in all three (the command line
 * wins), one in file and environment (the environment wins), the rest at
 * their defaults - value and source for each, in --json and in the table.
 * Then bad values at daemon start: exit status 2, a message naming the
 * option and where the value came from, and no socket left behind.
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

static struct td_env *e;

static void expect_opt(json_t *cfg, const char *name, long long value, const char *source)
{
	json_t *o = json_object_get(cfg, name);
	CHECKF(o, "config lacks %s", name);
	json_t *v = json_object_get(o, "value");
	const char *s = json_string_value(json_object_get(o, "source"));
	CHECKF(json_is_integer(v) && json_integer_value(v) == value, "%s = %lld, expected %lld",
	       name, json_is_integer(v) ? (long long)json_integer_value(v) : -1, value);
	CHECKF(s && !strcmp(s, source), "%s: source '%s', expected '%s'", name, s ? s : "-", source);
}

/* the table line of an option: "name  value  source" */
static void expect_line(const char *table, const char *name, const char *value,
			const char *source)
{
	const char *p = table;
	size_t nl = strlen(name);
	while ((p = strstr(p, name)) != NULL) {
		if ((p == table || p[-1] == '\n') && p[nl] == ' ')
			break;
		p += nl;
	}
	CHECKF(p, "no line for %s in:\n%s", name, table);
	const char *end = strchr(p, '\n');
	char line[512];
	snprintf(line, sizeof(line), "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
	CHECKF(strstr(line, value) && strstr(line, source), "line '%s' lacks '%s' or '%s'", line,
	       value, source);
}

static void precedence(void)
{
	char ini[TD_PATH_MAX + 16], src_file[TD_PATH_MAX + 32];
	snprintf(ini, sizeof(ini), "%s/shuffled.ini", e->dir);
	snprintf(src_file, sizeof(src_file), "file %s", ini);
	td_write_file(ini, "# test configuration\n"
			   "[shuffled]\n"
			   "linger_us = 250\n"
			   "batch_bytes = 64K\n"
			   "peer_credits = 4\n"
			   "max_clients = 100\n");
	const char *env[] = {"SHF_BATCH_BYTES=16K", "SHF_PEER_CREDITS=2", "SHF_HEARTBEAT_MS=700",
			     NULL};
	const char *args[] = {"--config", ini, "--peer-credits", "3", "--world_timeout_ms=1234",
			      NULL};
	struct td_daemon *d = td_daemon("prec");
	CHECK(td_start(d, args, env) == 0);

	json_t *doc = td_ctl_json(d->sock, "config");
	json_t *cfg = json_object_get(doc, "config");
	expect_opt(cfg, "linger_us", 250, src_file);                  /* file only */
	expect_opt(cfg, "max_clients", 100, src_file);                /* file only */
	expect_opt(cfg, "batch_bytes", 16384, "env SHF_BATCH_BYTES"); /* env over file */
	expect_opt(cfg, "heartbeat_ms", 700, "env SHF_HEARTBEAT_MS"); /* env only */
	expect_opt(cfg, "peer_credits", 3, "command line");           /* cli over env, file */
	expect_opt(cfg, "world_timeout_ms", 1234, "command line");    /* cli only */
	expect_opt(cfg, "ring_bytes", 1 << 20, "default");
	expect_opt(cfg, "max_inflight", 256, "default");
	json_t *c = json_object_get(cfg, "config");
	CHECK(!strcmp(json_string_value(json_object_get(c, "value")), ini));
	CHECK(!strcmp(json_string_value(json_object_get(c, "source")), "command line"));
	/* defaults are reported as defaults, whatever the value */
	json_t *bb = json_object_get(cfg, "batch_bytes");
	CHECK(json_integer_value(json_object_get(bb, "default")) == 131072);
	json_decref(doc);

	/* the daemon behaves by what it reports: max_clients went to 100 */
	struct td_out o;
	td_ctl(d->sock, &o, "config", NULL);
	CHECKF(o.status == 0, "config: %s", o.err);
	expect_line(o.out, "linger_us", "250", src_file);
	expect_line(o.out, "batch_bytes", "16 KiB", "env SHF_BATCH_BYTES");
	expect_line(o.out, "peer_credits", "3", "command line");
	expect_line(o.out, "ring_bytes", "1 MiB", "default");
	td_out_free(&o);
	td_stop(d);
}

/* shuffled with args/env must refuse to start: exit 2, stderr names
 * every needle, and it created no socket. */
static void refused(const char *what, const char *const *args, const char *const *env,
		    const char *const *needles)
{
	char run[TD_PATH_MAX + 16], sock[TD_PATH_MAX + 32];
	snprintf(run, sizeof(run), "%s/bad", e->dir);
	snprintf(sock, sizeof(sock), "%s/shuffled.sock", run);
	const char *argv[32];
	int n = 0;
	argv[n++] = td_prog("SHF_TEST_SHUFFLED");
	argv[n++] = "--runtime-dir";
	argv[n++] = run;
	argv[n++] = "--rendezvous";
	argv[n++] = "none";
	for (; args && *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	struct td_out o;
	td_run(argv, env, 20000, &o);
	CHECKF(o.status == 2, "%s: exit %d, expected 2; stderr: %s", what, o.status, o.err);
	for (; *needles; needles++)
		CHECKF(strstr(o.err, *needles), "%s: message lacks '%s': %s", what, *needles, o.err);
	CHECKF(!strncmp(o.err, "shuffled: ", 10) && strchr(o.err, '\n') == o.err + strlen(o.err) - 1,
	       "%s: not one 'shuffled: ' line: %s", what, o.err);
	CHECKF(access(sock, F_OK) < 0, "%s: a socket was created", what);
	td_out_free(&o);
}

static void bad_values(void)
{
	char ini[TD_PATH_MAX + 16];
	refused("ring_bytes not a power of two", (const char *const[]){"--ring-bytes", "3000", NULL},
		NULL, (const char *const[]){"ring_bytes", "3000", "power of two", "command line", NULL});
	refused("linger_us not a number", NULL, (const char *const[]){"SHF_LINGER_US=soon", NULL},
		(const char *const[]){"linger_us", "soon", "SHF_LINGER_US", NULL});
	refused("peer_credits above its cap", (const char *const[]){"--peer_credits=5000", NULL},
		NULL, (const char *const[]){"peer_credits", "5000", "1024", NULL});
	snprintf(ini, sizeof(ini), "%s/bad.ini", e->dir);
	td_write_file(ini, "[shuffled]\nlinger_us = 10\npeer_credits = 0\n");
	refused("peer_credits 0 in the file", (const char *const[]){"--config", ini, NULL}, NULL,
		(const char *const[]){"peer_credits", ini, "line 3", NULL});
	td_write_file(ini, "[shuffled]\nring_bytez = 1M\n");
	refused("unknown key in the file", (const char *const[]){"--config", ini, NULL}, NULL,
		(const char *const[]){"ring_bytez", "line 2", NULL});
	refused("unknown option", (const char *const[]){"--ring-byte", "1M", NULL}, NULL,
		(const char *const[]){"--ring-byte", "unknown option", NULL});
	refused("heartbeat not below peer timeout",
		(const char *const[]){"--heartbeat-ms", "6000", NULL}, NULL,
		(const char *const[]){"heartbeat_ms", "peer_timeout_ms", NULL});
	/* the command line refuses even when the environment is fine */
	refused("bad command line over good env", (const char *const[]){"--max-clients", "0", NULL},
		(const char *const[]){"SHF_MAX_CLIENTS=10", NULL},
		(const char *const[]){"max_clients", "command line", NULL});
}

int main(void)
{
	e = td_init("ctl-config", 120, 0);
	precedence();
	bad_values();
	return 0;
}
