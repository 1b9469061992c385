/* SPDX-License-Identifier: MIT */
/*
 * tests/node/default-config.c - the daemon reads its default INI file
 * (SYSCONFDIR/shuffle/shuffled.conf, $SHF_TEST_CONFIG_DEFAULT) when it
 * exists (issue 11, item 5).  The file is real, at its configured path,
 * but only inside a mount namespace: a tmpfs over its directory (which
 * the test creates, empty, when it is missing, and removes afterwards).
 * Expected: the daemon takes ring_bytes from it and `config` names the
 * file (source "default" for config, "file PATH" for ring_bytes);
 * --no-config reads none; SHF_CONFIG names another file instead.
 * Skipped unless root (mount namespaces).
 */
#include <libgen.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "tests/lib/daemon.h"

static const char *def;  /* the default file */
static char def_dir[TD_PATH_MAX];
static bool made_dir;    /* we created def_dir on the host */

static void remove_dir(void)
{
	if (made_dir)
		rmdir(def_dir);
}

/* Start the daemon in a new mount namespace whose def_dir holds `text` as
 * the default file; extra: one more argument or NULL; env as td_spawn. */
static void start_ns(struct td_daemon *d, const char *text, const char *extra,
		     const char *const *env)
{
	char rt[TD_PATH_MAX + 32], lf[TD_PATH_MAX + 32];
	td_fmt(rt, sizeof(rt), "--runtime-dir=%s", d->run);
	td_fmt(lf, sizeof(lf), "--log-file=%s", d->log);
	const char *argv[] = {td_prog("SHF_TEST_SHUFFLED"), rt, lf, "--rendezvous=none",
			      "--node-name=testnode", extra, NULL};
	pid_t p = td_fork();
	if (p == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", def_dir, "tmpfs", 0, "mode=0755") < 0) {
			fprintf(stderr, "mount namespace: %s\n", strerror(errno));
			_exit(77);
		}
		FILE *f = fopen(def, "w");
		if (!f || fputs(text, f) < 0 || fclose(f) != 0)
			_exit(3);
		for (; env && *env; env++)
			putenv((char *)*env);
		unsetenv("SHF_SOCKET");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (int64_t end = td_now_ms() + 10000; td_now_ms() < end; td_sleep_ms(10)) {
		int st = td_poll_exit(p);
		if (st == 77)
			SKIP("no mount namespace here");
		CHECKF(st == TD_RUNNING, "the daemon exited (status %d):\n%s", st,
		       td_read_file(d->log));
		json_t *j = td_query(d, "status");
		if (j) {
			json_decref(j);
			d->pid = p;
			return;
		}
	}
	CHECKF(false, "the daemon never answered");
}

/* value and source of option name in the daemon's config */
static void expect(struct td_daemon *d, const char *name, const char *value,
		   const char *source)
{
	json_t *doc = td_ctl_json(d->sock, "config");
	json_t *o = json_object_get(json_object_get(doc, "config"), name);
	CHECKF(o, "config has no %s", name);
	json_t *v = json_object_get(o, "value");
	char got[TD_PATH_MAX + 32];
	if (json_is_integer(v))
		snprintf(got, sizeof(got), "%lld", (long long)json_integer_value(v));
	else
		snprintf(got, sizeof(got), "%s", json_string_value(v));
	const char *src = json_string_value(json_object_get(o, "source"));
	CHECKF(!strcmp(got, value) && src && !strcmp(src, source),
	       "%s is %s (source %s), expected %s (source %s)", name, got, src ? src : "?",
	       value, source);
	json_decref(doc);
}

int main(void)
{
	struct td_env *e = td_init("default-config", 50, 0);
	if (geteuid() != 0)
		SKIP("needs root (a mount namespace over %s)", "the default config's directory");
	def = getenv("SHF_TEST_CONFIG_DEFAULT");
	CHECK(def && def[0] == '/');
	td_fmt(def_dir, sizeof(def_dir), "%s", def);
	dirname(def_dir);
	struct stat st;
	if (stat(def_dir, &st) < 0) {
		CHECKF(mkdir(def_dir, 0755) == 0, "mkdir %s: %s", def_dir, strerror(errno));
		made_dir = true;
		atexit(remove_dir);
	}
	char from_file[TD_PATH_MAX + 32];
	td_fmt(from_file, sizeof(from_file), "file %s", def);

	/* 1: the default file is read */
	start_ns(e->d, "[shuffled]\nring_bytes = 64K\n", NULL, NULL);
	expect(e->d, "ring_bytes", "65536", from_file);
	expect(e->d, "config", def, "default");
	td_stop(e->d);

	/* 2: --no-config reads none */
	start_ns(e->d, "[shuffled]\nring_bytes = 64K\n", "--no-config", NULL);
	expect(e->d, "ring_bytes", "1048576", "default");
	expect(e->d, "config", "", "command line");
	td_stop(e->d);

	/* 3: SHF_CONFIG names another file, read instead */
	char other[TD_PATH_MAX], envc[TD_PATH_MAX + 16];
	td_fmt(other, sizeof(other), "%s/other.conf", e->dir);
	td_write_file(other, "[shuffled]\nring_bytes = 128K\n");
	td_fmt(envc, sizeof(envc), "SHF_CONFIG=%s", other);
	const char *env[] = {envc, NULL};
	start_ns(e->d, "[shuffled]\nring_bytes = 64K\n", NULL, env);
	td_fmt(from_file, sizeof(from_file), "file %s", other);
	expect(e->d, "ring_bytes", "131072", from_file);
	expect(e->d, "config", other, "env SHF_CONFIG");
	td_stop(e->d);
	return 0;
}
