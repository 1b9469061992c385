/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/config-sources.c - shd_config_load(): defaults, precedence of
 * command line > environment > INI file > default, both option syntaxes,
 * derived values (node_name, runtime_dir, socket), --help/--version, and
 * what print and JSON report (value, source, limits).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/rdv/rdv.h"
#include "tests/daemon/config-util.h"

static char err[1024];

static void test_defaults(void)
{
	struct shd_config c;
	clear_config_env();
	CHECKF(load_args(&c, err, sizeof(err), "--node_name", "n0", NULL) == 0, "%s", err);
	CHECK(c.ring_bytes == 1u << 20);
	CHECK(c.max_msg == 60u << 10);
	CHECK(c.batch_bytes == 128u << 10);
	CHECK(c.linger_us == 100);
	CHECK(c.peer_credits == 8);
	CHECK(c.max_inflight == 256);
	CHECK(c.batch_budget == UINT64_C(64) << 20);
	CHECK(c.recv_buffers == 32);
	CHECK_STR(c.provider, "tcp");
	CHECK_STR(c.bind, "");
	CHECK_STR(c.iface, "");
	CHECK_STR(c.rendezvous, "auto");
	CHECK(c.peer_timeout_ms == 5000);
	CHECK(c.heartbeat_ms == 1000);
	CHECK(c.max_clients == 1024);
	CHECK(c.world_timeout_ms == 60000);
	/* the budgets fit a shared node: at most 1/32 and 1/8 of its memory,
	 * capped at 1G and 4G */
	{
		uint64_t total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
		CHECK(c.uid_mem_max <= (UINT64_C(1) << 30) &&
		      (c.uid_mem_max <= total / 32 || c.uid_mem_max == UINT64_C(16) << 20));
		CHECK(c.mem_max <= (UINT64_C(4) << 30) &&
		      (c.mem_max <= total / 8 || c.mem_max == UINT64_C(64) << 20));
	}
	CHECK(c.log_level == SHD_LOG_INFO);
	CHECK_STR(c.log_file, "");
	CHECK_STR(c.config, "");
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		CHECK(shd_config_opt_name(i) != NULL);
		if (i == SHD_OPT_NODE_NAME)
			CHECK(c.source[i] == SHD_CONFIG_SRC_CLI);
		else if (i == SHD_OPT_RUNTIME_DIR || i == SHD_OPT_SOCKET || i == SHD_OPT_MODE ||
			 i == SHD_OPT_CONFIG) /* mode auto resolved; no default file */
			CHECK(c.source[i] == SHD_CONFIG_SRC_COMPUTED);
		else if (i == SHD_OPT_UID_MEM_MAX || i == SHD_OPT_MEM_MAX)
			/* from the node's memory, unless it is large (the caps) */
			CHECKF(c.source[i] == SHD_CONFIG_SRC_DEFAULT ||
				       c.source[i] == SHD_CONFIG_SRC_COMPUTED, "%s",
			       shd_config_opt_name(i));
		else
			CHECKF(c.source[i] == SHD_CONFIG_SRC_DEFAULT, "%s", shd_config_opt_name(i));
	}
	CHECK(shd_config_opt_name(SHD_OPT_MAX) == NULL);
	CHECK(shd_config_opt_name(-1) == NULL);

	/* shd_config_defaults() alone leaves the derived values empty */
	shd_config_defaults(&c);
	CHECK_STR(c.node_name, "");
	CHECK_STR(c.runtime_dir, "");
	CHECK_STR(c.socket_path, "");
	CHECK(c.ring_bytes == 1u << 20);
}

static void test_precedence(void)
{
	struct shd_config c;
	clear_config_env();
	const char *f1 = write_temp(0, "; comment\n"
				       "# another\n"
				       "[shuffled]\n"
				       "ring_bytes = 64K\n"
				       "batch_bytes = 8 KiB\n"
				       "linger_us = 5\n"
				       "provider = tcp;ofi_rxm\n"
				       "peer_credits = 3 ; inline comment\n"
				       "rendezvous = static:10.0.0.1:7000,[::1]:7001\n");
	const char *f2 = write_temp(1, "[shuffled]\nring_bytes=128k\n");

	/* file only */
	setenv("SHF_CONFIG", f1, 1);
	CHECKF(load_args(&c, err, sizeof(err), "--node-name=n1", NULL) == 0, "%s", err);
	CHECK_STR(c.config, f1);
	CHECK(c.source[SHD_OPT_CONFIG] == SHD_CONFIG_SRC_ENV);
	CHECK(c.ring_bytes == 64u << 10 && c.source[SHD_OPT_RING_BYTES] == SHD_CONFIG_SRC_FILE);
	CHECK(c.batch_bytes == 8u << 10 && c.source[SHD_OPT_BATCH_BYTES] == SHD_CONFIG_SRC_FILE);
	CHECK(c.linger_us == 5 && c.source[SHD_OPT_LINGER_US] == SHD_CONFIG_SRC_FILE);
	CHECK(c.peer_credits == 3);
	CHECK_STR(c.provider, "tcp;ofi_rxm");
	CHECK_STR(c.rendezvous, "static:10.0.0.1:7000,[::1]:7001");
	CHECK(c.max_inflight == 256 && c.source[SHD_OPT_MAX_INFLIGHT] == SHD_CONFIG_SRC_DEFAULT);

	/* environment over file, command line over both */
	setenv("SHF_BATCH_BYTES", "16k", 1);
	setenv("SHF_LINGER_US", "7", 1);
	setenv("SHF_MAX_INFLIGHT", "", 1); /* empty: as if unset */
	CHECKF(load_args(&c, err, sizeof(err), "--linger_us", "9", "--node_name=n1", NULL) == 0,
		  "%s", err);
	CHECK(c.ring_bytes == 64u << 10 && c.source[SHD_OPT_RING_BYTES] == SHD_CONFIG_SRC_FILE);
	CHECK(c.batch_bytes == 16u << 10 && c.source[SHD_OPT_BATCH_BYTES] == SHD_CONFIG_SRC_ENV);
	CHECK(c.linger_us == 9 && c.source[SHD_OPT_LINGER_US] == SHD_CONFIG_SRC_CLI);
	CHECK(c.max_inflight == 256 && c.source[SHD_OPT_MAX_INFLIGHT] == SHD_CONFIG_SRC_DEFAULT);

	/* --config on the command line wins over $SHF_CONFIG; later options win */
	CHECKF(load_args(&c, err, sizeof(err), "--config", f2, "--linger_us=1", "--linger-us=2",
			    "--node_name=n1", NULL) == 0, "%s", err);
	CHECK_STR(c.config, f2);
	CHECK(c.source[SHD_OPT_CONFIG] == SHD_CONFIG_SRC_CLI);
	CHECK(c.ring_bytes == 128u << 10 && c.source[SHD_OPT_RING_BYTES] == SHD_CONFIG_SRC_FILE);
	CHECK(c.batch_bytes == 16u << 10); /* env still applies */
	CHECK(c.peer_credits == 8);        /* f1 not read */
	CHECK(c.linger_us == 2);

	/* a fresh load starts from defaults: nothing sticks from the last one */
	clear_config_env();
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=n1", NULL) == 0, "%s", err);
	CHECK(c.ring_bytes == 1u << 20 && c.linger_us == 100 && c.config[0] == '\0');
}

static void test_env_names(void)
{
	struct shd_config c;
	clear_config_env();
	setenv("SHF_NODE", "envnode", 1);
	setenv("SHF_SOCKET", "/tmp/x.sock", 1);
	setenv("SHF_LOG_LEVEL", "debug", 1);
	setenv("SHF_BATCH_BUDGET", "16G", 1);
	CHECKF(load_args(&c, err, sizeof(err), NULL) == 0, "%s", err);
	CHECK_STR(c.node_name, "envnode");
	CHECK(c.source[SHD_OPT_NODE_NAME] == SHD_CONFIG_SRC_ENV);
	CHECK_STR(c.socket_path, "/tmp/x.sock");
	CHECK(c.source[SHD_OPT_SOCKET] == SHD_CONFIG_SRC_ENV);
	CHECK(c.log_level == SHD_LOG_DEBUG);
	CHECK(c.batch_budget == UINT64_C(16) << 30);
	clear_config_env();
}

/* runtime_dir for a non-root user, checked in this process (uid != 0) or
 * in a child that dropped to nobody (uid 0). */
static void check_user_runtime_dir(void)
{
	struct shd_config c;
	char want[256];
	unsigned uid = (unsigned)geteuid();

	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=a.b-c_d", NULL) == 0, "%s", err);
	CHECK_STR(c.runtime_dir, "/run/user/4242/shuffle/a.b-c_d");
	CHECK_STR(c.socket_path, "/run/user/4242/shuffle/a.b-c_d/shuffled.sock");

	unsetenv("XDG_RUNTIME_DIR");
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=n2", NULL) == 0, "%s", err);
	snprintf(want, sizeof(want), "/tmp/shuffle-%u/n2", uid);
	CHECK_STR(c.runtime_dir, want);
	CHECK(c.source[SHD_OPT_RUNTIME_DIR] == SHD_CONFIG_SRC_COMPUTED);
}

static void test_derived(void)
{
	struct shd_config c;
	char host[256];
	clear_config_env();

	/* node_name defaults to the host name */
	CHECK(gethostname(host, sizeof(host)) == 0);
	int r = load_args(&c, err, sizeof(err), NULL);
	if (r == 0) {
		CHECK_STR(c.node_name, host);
		CHECK(c.source[SHD_OPT_NODE_NAME] == SHD_CONFIG_SRC_COMPUTED);
	} else {
		/* only acceptable when the host name is not a valid node name */
		CHECK_HAS(err, "node_name");
	}

	/* explicit runtime_dir: socket follows it */
	CHECKF(load_args(&c, err, sizeof(err), "--runtime_dir=/tmp/rd", "--node_name=x", NULL) == 0,
		  "%s", err);
	CHECK_STR(c.runtime_dir, "/tmp/rd");
	CHECK(c.source[SHD_OPT_RUNTIME_DIR] == SHD_CONFIG_SRC_CLI);
	CHECK_STR(c.socket_path, "/tmp/rd/shuffled.sock");
	CHECK(c.source[SHD_OPT_SOCKET] == SHD_CONFIG_SRC_COMPUTED);

	/* explicit socket is kept */
	CHECKF(load_args(&c, err, sizeof(err), "--socket=/tmp/s.sock", "--node_name=x", NULL) == 0,
		  "%s", err);
	CHECK_STR(c.socket_path, "/tmp/s.sock");

	if (geteuid() == 0) {
		setenv("XDG_RUNTIME_DIR", "/run/user/0", 1); /* ignored for root */
		CHECKF(load_args(&c, err, sizeof(err), "--node_name=n1", NULL) == 0, "%s", err);
		CHECK_STR(c.runtime_dir, "/run/shuffle/n1");
		CHECK_STR(c.socket_path, "/run/shuffle/n1/shuffled.sock");

		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (setgid(65534) < 0 || setuid(65534) < 0) {
				fprintf(stderr, "cannot drop to uid 65534: %s\n", strerror(errno));
				_exit(2);
			}
			check_user_runtime_dir();
			_exit(0);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "non-root check in child failed");
	} else {
		fprintf(stderr, "note: not root, the /run/shuffle branch is not checked\n");
		check_user_runtime_dir();
	}
	unsetenv("XDG_RUNTIME_DIR");

	/* a derived socket path that cannot fit sun_path is refused clearly */
	char longdir[200];
	memset(longdir, 'd', sizeof(longdir));
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	char arg[256];
	snprintf(arg, sizeof(arg), "--runtime_dir=%s", longdir);
	CHECK(load_args(&c, err, sizeof(err), arg, "--node_name=x", NULL) == -ENAMETOOLONG);
	CHECK_HAS(err, "socket");
	CHECK_HAS(err, "runtime_dir");
	CHECK_HAS(err, "107");
}

/* Run load with stdout redirected to a file; returns r, output in out. */
static int load_capture(char *out, size_t outlen, const char *arg)
{
	struct shd_config c;
	char path[] = "/tmp/shf-config-out-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	CHECK(saved >= 0 && dup2(fd, STDOUT_FILENO) == STDOUT_FILENO);
	int r = load_args(&c, err, sizeof(err), arg, "--bogus-after-help", NULL);
	fflush(stdout);
	CHECK(dup2(saved, STDOUT_FILENO) == STDOUT_FILENO);
	close(saved);
	ssize_t n = pread(fd, out, outlen - 1, 0);
	CHECK(n >= 0);
	out[n] = '\0';
	close(fd);
	unlink(path);
	return r;
}

static void test_help_version(void)
{
	static char out[65536];
	clear_config_env();

	CHECK(load_capture(out, sizeof(out), "--help") == 1);
	CHECKF(strncmp(out, "Usage: shuffled", 15) == 0, "%.40s", out);
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		char want[64];
		snprintf(want, sizeof(want), "--%s=", shd_config_opt_name(i));
		CHECK_HAS(out, want);
	}
	CHECK_HAS(out, "SHF_RING_BYTES");
	CHECK_HAS(out, "SHF_NODE)");
	CHECK_HAS(out, "Default 1 MiB; a power of two in [4 KiB, 256 MiB].");
	CHECK_HAS(out, "Default 100; an integer in [0, 1000000].");
	/* grouped under headings, experiments last */
	CHECK_HAS(out, "\nPaths:\n  --runtime_dir=");
	CHECK_HAS(out, "\nData path:\n  --ring_bytes=");
	CHECK_HAS(out, "\nSecurity:\n  --mode=");
	CHECK_HAS(out, "\nExperimental (for measuring; see docs/performance.md):\n");
	/* --rendezvous names every kind its parser knows (rdv.c's table) */
	char help[8192];
	shd_rdv_kinds(help, sizeof(help), false);
	for (char *k = strtok(help, ", "); k; k = strtok(NULL, ", "))
		if (strcmp(k, "or") != 0)
			CHECK_HAS(out, k);
	CHECK_HAS(out, "tcp://HOST:PORT");
	CHECK_HAS(out, "static:@FILE");
	CHECK_HAS(out, "dir:PATH (");
	CHECK(load_capture(out, sizeof(out), "-h") == 1);
	CHECKF(strncmp(out, "Usage: shuffled", 15) == 0, "%.40s", out);

	CHECK(load_capture(out, sizeof(out), "--version") == 1);
	CHECK_STR(out, "shuffled " SHF_VERSION "\n");
	CHECK(load_capture(out, sizeof(out), "-V") == 1);
	CHECK_STR(out, "shuffled " SHF_VERSION "\n");
}

static void test_print_json(void)
{
	struct shd_config c;
	static char out[65536];
	clear_config_env();
	const char *f = write_temp(2, "[shuffled]\nmax_clients = 77\n");
	setenv("SHF_BATCH_BYTES", "16k", 1);
	CHECKF(load_args(&c, err, sizeof(err), "--config", f, "--ring_bytes=2M",
			    "--node_name=pj", "--max_msg=1000", NULL) == 0, "%s", err);
	unsetenv("SHF_BATCH_BYTES");

	FILE *tf = tmpfile();
	CHECK(tf);
	shd_config_print(tf, &c);
	rewind(tf);
	size_t n = fread(out, 1, sizeof(out) - 1, tf);
	out[n] = '\0';
	fclose(tf);
	CHECK_HAS(out, "ring_bytes");
	CHECK_HAS(out, "2 MiB (2097152)");
	CHECK_HAS(out, "command line");
	CHECK_HAS(out, "16 KiB (16384)");
	CHECK_HAS(out, "env SHF_BATCH_BYTES");
	char want[128];
	snprintf(want, sizeof(want), "file %s", f);
	CHECK_HAS(out, want);
	CHECK_HAS(out, "computed");
	CHECK_HAS(out, "log_level");
	CHECK_HAS(out, "info");
	/* one line per option */
	int lines = 0;
	for (char *p = out; *p; p++)
		lines += *p == '\n';
	CHECK(lines == SHD_OPT_MAX);

	json_t *j = shd_config_json(&c);
	CHECK(j);
	CHECK(json_object_size(j) == SHD_OPT_MAX);
	json_t *rb = json_object_get(j, "ring_bytes");
	CHECK(rb);
	CHECK(json_integer_value(json_object_get(rb, "value")) == 2 << 20);
	CHECK(json_integer_value(json_object_get(rb, "default")) == 1 << 20);
	CHECK(json_integer_value(json_object_get(rb, "min")) == 4096);
	CHECK(json_integer_value(json_object_get(rb, "max")) == 256 << 20);
	CHECK(json_is_true(json_object_get(rb, "power_of_two")));
	CHECK_STR(json_string_value(json_object_get(rb, "source")), "command line");
	CHECK_STR(json_string_value(json_object_get(rb, "type")), "size");
	CHECK(json_string_value(json_object_get(rb, "help")) != NULL);
	json_t *mc = json_object_get(j, "max_clients");
	CHECK(json_integer_value(json_object_get(mc, "value")) == 77);
	CHECK_STR(json_string_value(json_object_get(mc, "source")), want);
	json_t *bb = json_object_get(j, "batch_budget");
	CHECK(json_integer_value(json_object_get(bb, "max")) == (json_int_t)16 << 30);
	json_t *ll = json_object_get(j, "log_level");
	CHECK_STR(json_string_value(json_object_get(ll, "value")), "info");
	CHECK(json_object_get(ll, "min") == NULL);
	json_t *sk = json_object_get(j, "socket");
	CHECK_STR(json_string_value(json_object_get(sk, "value")), c.socket_path);
	CHECK_STR(json_string_value(json_object_get(sk, "source")), "computed");
	CHECK_STR(json_string_value(json_object_get(sk, "env")), "SHF_SOCKET");
	CHECK_STR(json_string_value(json_object_get(json_object_get(j, "node_name"), "env")),
		  "SHF_NODE");
	json_decref(j);
}

/* mode: auto resolves by euid (root and the system user: system), an
 * explicit mode is kept, and it picks the default runtime directory. */
static void test_mode(void)
{
	struct shd_config c;
	clear_config_env();
	unsetenv("XDG_RUNTIME_DIR");
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=m1", NULL) == 0, "%s", err);
	CHECK(c.source[SHD_OPT_MODE] == SHD_CONFIG_SRC_COMPUTED);
	long long su = c.system_uid; /* the system user's uid, -1 when it has none */
	bool sys = geteuid() == 0 || (su >= 0 && geteuid() == (uid_t)su);
	CHECK_STR(c.mode, sys ? "system" : "user");
	CHECK(shd_config_system(&c) == sys);
	if (sys)
		CHECK_STR(c.runtime_dir, SHF_SYSTEM_RUNTIME_DIR "/m1");

	CHECKF(load_args(&c, err, sizeof(err), "--node_name=m1", "--mode", "user", NULL) == 0,
	       "%s", err);
	CHECK_STR(c.mode, "user");
	CHECK(c.source[SHD_OPT_MODE] == SHD_CONFIG_SRC_CLI);
	char want[128];
	snprintf(want, sizeof(want), "/tmp/shuffle-%u/m1", (unsigned)geteuid());
	CHECK_STR(c.runtime_dir, want);

	setenv("SHF_MODE", "system", 1);
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=m1", NULL) == 0, "%s", err);
	CHECK_STR(c.mode, "system");
	CHECK(c.source[SHD_OPT_MODE] == SHD_CONFIG_SRC_ENV);
	CHECK_STR(c.runtime_dir, SHF_SYSTEM_RUNTIME_DIR "/m1");
	unsetenv("SHF_MODE");

	CHECK(load_args(&c, err, sizeof(err), "--node_name=m1", "--mode=shared", NULL) == -EINVAL);
	CHECK_HAS(err, "mode=shared: must be auto, user or system (command line)");

	/* the system user's own daemon is a system daemon */
	if (geteuid() == 0 && su > 0) {
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (setuid((uid_t)su) < 0)
				_exit(2);
			struct shd_config s;
			CHECKF(load_args(&s, err, sizeof(err), "--node_name=m2", NULL) == 0, "%s", err);
			CHECK_STR(s.mode, "system");
			CHECK_STR(s.runtime_dir, SHF_SYSTEM_RUNTIME_DIR "/m2");
			_exit(0);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "system user's check failed");
	} else {
		fprintf(stderr, "note: no system user or not root: its mode is not checked\n");
	}
}

/* The default INI file (this test's own SHD_CONFIG_DEFAULT, tests/daemon/
 * meson.build) is read when it exists; --config, SHF_CONFIG, --no-config
 * and --config= choose otherwise. */
static void test_default_file(void)
{
	struct shd_config c;
	const char *def = SHD_CONFIG_DEFAULT;
	clear_config_env();
	CHECK_STR(shd_config_default_file(), def);
	unlink(def);
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=d", NULL) == 0, "%s", err);
	CHECK_STR(c.config, "");
	CHECK(c.source[SHD_OPT_CONFIG] == SHD_CONFIG_SRC_COMPUTED);
	CHECK(c.ring_bytes == 1u << 20);

	FILE *f = fopen(def, "w");
	CHECK(f);
	fputs("[shuffled]\nring_bytes = 64K\n", f);
	CHECK(fclose(f) == 0);
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=d", NULL) == 0, "%s", err);
	CHECK_STR(c.config, def);
	CHECK(c.source[SHD_OPT_CONFIG] == SHD_CONFIG_SRC_DEFAULT);
	CHECK(c.ring_bytes == 64u << 10);
	CHECK(c.source[SHD_OPT_RING_BYTES] == SHD_CONFIG_SRC_FILE);

	/* skipped */
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=d", "--no-config", NULL) == 0, "%s",
	       err);
	CHECK_STR(c.config, "");
	CHECK(c.source[SHD_OPT_CONFIG] == SHD_CONFIG_SRC_CLI);
	CHECK(c.ring_bytes == 1u << 20);
	CHECKF(load_args(&c, err, sizeof(err), "--config=", "--node_name=d", NULL) == 0, "%s", err);
	CHECK_STR(c.config, "");
	CHECK(c.ring_bytes == 1u << 20);
	/* the last of --config / --no-config wins */
	const char *other = write_temp(2, "[shuffled]\nring_bytes = 128K\n");
	char arg[128];
	snprintf(arg, sizeof(arg), "--config=%s", other);
	CHECKF(load_args(&c, err, sizeof(err), "--no-config", arg, "--node_name=d", NULL) == 0,
	       "%s", err);
	CHECK(c.ring_bytes == 128u << 10);
	/* SHF_CONFIG replaces the default file */
	setenv("SHF_CONFIG", other, 1);
	CHECKF(load_args(&c, err, sizeof(err), "--node_name=d", NULL) == 0, "%s", err);
	CHECK_STR(c.config, other);
	CHECK(c.source[SHD_OPT_CONFIG] == SHD_CONFIG_SRC_ENV);
	CHECK(c.ring_bytes == 128u << 10);
	unsetenv("SHF_CONFIG");
	/* a default file that cannot be read is an error, not ignored */
	if (geteuid() != 0) {
		CHECK(chmod(def, 0) == 0);
		CHECK(load_args(&c, err, sizeof(err), "--node_name=d", NULL) == -EACCES);
		CHECK_HAS(err, def);
	}
	unlink(def);
}

/* getopt_long: both spellings, both value forms, no abbreviations. */
static void test_getopt(void)
{
	struct shd_config c;
	clear_config_env();
	CHECKF(load_args(&c, err, sizeof(err), "--node-name", "g", "--peer-timeout-ms", "7000",
			 "--peer_timeout_ms=8000", "--ring-bytes=64K", "--linger_us", "7",
			 NULL) == 0, "%s", err);
	CHECK(c.peer_timeout_ms == 8000);
	CHECK(c.ring_bytes == 64u << 10);
	CHECK(c.linger_us == 7);
	CHECK_STR(c.node_name, "g");
	/* abbreviations getopt_long would take are refused */
	CHECK(load_args(&c, err, sizeof(err), "--node-name=g", "--ring-byte=1M", NULL) == -EINVAL);
	CHECK_HAS(err, "unknown option '--ring-byte' (see shuffled --help)");
	CHECK(load_args(&c, err, sizeof(err), "--node-name=g", "--linger", "5", NULL) == -EINVAL);
	CHECK_HAS(err, "unknown option '--linger'");
	CHECK(load_args(&c, err, sizeof(err), "--node-name=g", "--no-conf", NULL) == -EINVAL);
	CHECK_HAS(err, "unknown option '--no-conf'");
	CHECK(load_args(&c, err, sizeof(err), "--node-name=g", "--ring-byte", NULL) == -EINVAL);
	CHECK_HAS(err, "unknown option '--ring-byte'");
	CHECK(load_args(&c, err, sizeof(err), "--node-name=g", "--mode", NULL) == -EINVAL);
	CHECK_HAS(err, "option --mode needs a value");
	CHECK(load_args(&c, err, sizeof(err), "--node-name=g", "--no-config=x", NULL) == -EINVAL);
	CHECK_HAS(err, "unknown option '--no-config'");
	/* twice in a row (getopt's state is reset) */
	CHECKF(load_args(&c, err, sizeof(err), "--node-name=g", NULL) == 0, "%s", err);
}

int main(void)
{
	test_mode();
	test_default_file();
	test_getopt();
	test_defaults();
	test_precedence();
	test_env_names();
	test_derived();
	test_help_version();
	test_print_json();
	printf("config-sources: ok\n");
	return 0;
}
