/* SPDX-License-Identifier: MIT */
/*
 * tests/node/discover.c - a user's program and shufflectl find the node's
 * daemon with no environment at all (client/discover.c, docs/api.md
 * "Finding the daemon"):
 *
 *   (c) nothing running: the client's error and shufflectl's (exit 3)
 *       name every place tried;
 *   (b) a system daemon (root) serving in SHF_SYSTEM_RUNTIME_DIR/NODE: two
 *       clients of uid 65534 with no SHF_* variable find it and exchange
 *       messages; shufflectl as uid 65534 finds it;
 *   (d) a private daemon of uid 65534 (its default place, /tmp/shuffle-UID/
 *       NODE) wins over the system daemon, for clients and shufflectl;
 *   then the private daemon is killed (a stale socket): clients pass over
 *   it to the system daemon.
 *
 * The machine's real SHF_SYSTEM_RUNTIME_DIR and /tmp are never touched:
 * the test re-executes itself in private mount and UTS namespaces
 * (unshare --mount --uts --propagation private) with a tmpfs on each and
 * its own host name.  Needs root (namespaces, setpriv); skips otherwise.
 * Clients run through `env -i` (PATH and the sanitizers' options only)
 * and take rank and world from Slurm's variables, which every version of
 * the library reads, so only discovery is under test.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define NODE "shfdisc"
#define NOBODY 65534

static struct td_env *e;
static char sys_sock[PATH_MAX], priv_sock[PATH_MAX];

/* Outside the namespaces: re-run this program inside fresh ones. */
static void enter_namespaces(char **argv)
{
	if (getenv("SHF_TEST_DISCOVER_NS"))
		return;
	if (geteuid() != 0) {
		printf("SKIP: needs root (mount namespace, tmpfs, setpriv)\n");
		exit(77);
	}
	if (access("/usr/bin/unshare", X_OK) != 0 || access(TD_SETPRIV, X_OK) != 0) {
		printf("SKIP: unshare or setpriv missing\n");
		exit(77);
	}
	if (system("/usr/bin/unshare --mount --uts --propagation private true") != 0) {
		printf("SKIP: unshare --mount --uts is not permitted here\n");
		exit(77);
	}
	/* /tmp gets a tmpfs inside: programs under /tmp would vanish */
	for (const char *const *v = (const char *const[]){"SHF_TEST_SHUFFLED", "SHF_TEST_TCLIENT",
							   "SHF_TEST_SHUFFLECTL", NULL};
	     *v; v++) {
		char real[PATH_MAX];
		const char *p = getenv(*v);
		if (p && realpath(p, real) && strncmp(real, "/tmp/", 5) == 0) {
			printf("SKIP: %s is under /tmp, which this test covers with a tmpfs\n", *v);
			exit(77);
		}
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("readlink /proc/self/exe");
		exit(1);
	}
	self[n] = '\0';
	setenv("SHF_TEST_DISCOVER_NS", "1", 1);
	execv("/usr/bin/unshare", (char *[]){"unshare", "--mount", "--uts", "--propagation",
					      "private", self, argv[1], NULL});
	perror("execv unshare");
	exit(1);
}

/* Inside: our own host name, and tmpfs on the system runtime directory and
 * on /tmp (so the private place of uid 65534 is ours too). */
static void private_mounts(void)
{
	if (sethostname(NODE, strlen(NODE)) < 0) {
		perror("sethostname");
		exit(1);
	}
	const char *sys = SHF_SYSTEM_RUNTIME_DIR;
	struct stat st;
	if (stat(sys, &st) == 0) {
		if (mount("tmpfs", sys, "tmpfs", 0, "mode=0755") < 0) {
			perror("mount tmpfs on the system runtime directory");
			exit(1);
		}
	} else {
		/* not there: cover its parent, then create it inside */
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", sys);
		char *slash = strrchr(parent, '/');
		if (!slash || slash == parent)
			snprintf(parent, sizeof(parent), "/");
		else
			*slash = '\0';
		if (mount("tmpfs", parent, "tmpfs", 0, "mode=0755") < 0 || mkdir(sys, 0755) < 0) {
			perror("tmpfs for the system runtime directory");
			exit(1);
		}
	}
	if (mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") < 0) {
		perror("mount tmpfs on /tmp");
		exit(1);
	}
}

/* argv for `env -i [vars] setpriv --reuid=65534 ... prog args`. */
static int nobody_argv(const char **argv, const char *const *vars, const char *prog,
		       const char *const *args)
{
	static char san[3][1024];
	static const char *const keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
	int n = 0;
	argv[n++] = "/usr/bin/env";
	argv[n++] = "-i";
	argv[n++] = "PATH=/usr/bin:/bin";
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(keep[i]);
		if (v) {
			td_fmt(san[i], sizeof(san[i]), "%s=%s", keep[i], v);
			argv[n++] = san[i];
		}
	}
	for (; vars && *vars; vars++)
		argv[n++] = *vars;
	argv[n++] = TD_SETPRIV;
	argv[n++] = "--reuid=65534";
	argv[n++] = "--regid=65534";
	argv[n++] = "--clear-groups";
	argv[n++] = prog;
	for (; args && *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return n;
}

/* shufflectl as uid 65534 with no environment. */
static void ctl_nobody(struct td_out *o, const char *const *args)
{
	const char *argv[40];
	nobody_argv(argv, NULL, td_prog("SHF_TEST_SHUFFLECTL"), args);
	td_run(argv, NULL, 20000, o);
}

/* Two ranks of Slurm job `job`, uid 65534, no SHF_* variable: traffic
 * mode (self-checking, exactly once).  How many failed. */
static int pair_nobody(const char *job)
{
	const char *argv[2][40];
	char jv[64], pv[2][32];
	td_fmt(jv, sizeof(jv), "SLURM_JOB_ID=%s", job);
	pid_t pid[2];
	for (int r = 0; r < 2; r++) {
		td_fmt(pv[r], sizeof(pv[r]), "SLURM_PROCID=%d", r);
		nobody_argv(argv[r], (const char *const[]){jv, pv[r], "SLURM_NTASKS=2", NULL},
			    td_prog("SHF_TEST_TCLIENT"),
			    (const char *const[]){"traffic", "n=200", NULL});
		pid[r] = td_spawn(argv[r], NULL, NULL, NULL);
	}
	return td_wait_all(pid, 2, 30000, "client");
}

/* clients_attached of the daemon shufflectl-as-65534 finds. */
static long long attached_seen_by_nobody(void)
{
	struct td_out o;
	ctl_nobody(&o, (const char *const[]){"--json", "stats", NULL});
	CHECKF(o.status == 0, "shufflectl --json stats as uid 65534: exit %d: %s", o.status, o.err);
	json_error_t je;
	json_t *doc = json_loads(o.out, 0, &je);
	CHECKF(doc, "not JSON: %s", o.out);
	long long n = td_num(doc, "daemon.clients_attached");
	json_decref(doc);
	td_out_free(&o);
	return n;
}

static void nothing_running(void)
{
	struct td_out o;
	const char *argv[40];
	nobody_argv(argv, (const char *const[]){"SLURM_PROCID=0", "SLURM_NTASKS=1",
						"SLURM_JOB_ID=none", NULL},
		    td_prog("SHF_TEST_TCLIENT"),
		    (const char *const[]){"open", "expect=ECONNREFUSED", "timeout=5000", NULL});
	td_run(argv, NULL, 20000, &o);
	CHECKF(o.status == 0, "client with nothing running: status %d: %s", o.status, o.err);
	CHECKF(strstr(o.err, "SHF_RUNTIME_DIR (unset)"), "the error does not say SHF_RUNTIME_DIR "
	       "was unset: %s", o.err);
	char want[PATH_MAX + 32];
	td_fmt(want, sizeof(want), "%s (no such file)", priv_sock);
	CHECKF(strstr(o.err, want), "the client's error lacks '%s': %s", want, o.err);
	td_fmt(want, sizeof(want), "%s (no such file)", sys_sock);
	CHECKF(strstr(o.err, want), "the client's error lacks '%s': %s", want, o.err);
	td_out_free(&o);

	ctl_nobody(&o, (const char *const[]){"status", NULL});
	CHECKF(o.status == 3, "shufflectl with nothing running: exit %d (3 expected): %s",
	       o.status, o.err);
	td_fmt(want, sizeof(want), "%s (no such file)", priv_sock);
	CHECKF(strstr(o.err, want), "shufflectl's error lacks '%s': %s", want, o.err);
	td_fmt(want, sizeof(want), "%s (no such file)", sys_sock);
	CHECKF(strstr(o.err, want), "shufflectl's error lacks '%s': %s", want, o.err);
	td_out_free(&o);
}

int main(int argc, char **argv)
{
	(void)argc;
	enter_namespaces(argv);
	private_mounts();
	e = td_init("discover", 110, 0);
	td_fmt(sys_sock, sizeof(sys_sock), "%s/%s/shuffled.sock", SHF_SYSTEM_RUNTIME_DIR, NODE);
	td_fmt(priv_sock, sizeof(priv_sock), "/tmp/shuffle-%d/%s/shuffled.sock", NOBODY, NODE);
	/* uid 65534 must reach the programs and write the private daemon's log */
	CHECK(chmod(e->dir, 0755) == 0);
	{
		struct td_out o;
		const char *a[40];
		nobody_argv(a, NULL, td_prog("SHF_TEST_TCLIENT"), NULL);
		td_run(a, NULL, 10000, &o);
		int st = o.status;
		td_out_free(&o);
		if (st != 2)
			SKIP("the test client cannot run as uid 65534 (status %d): is the build "
			     "directory readable by everyone?", st);
	}

	/* (c) */
	nothing_running();

	/* (b) the system daemon, root's, in its default place */
	struct td_daemon *sysd = e->d;
	td_fmt(sysd->run, sizeof(sysd->run), "%s/%s", SHF_SYSTEM_RUNTIME_DIR, NODE);
	td_fmt(sysd->sock, sizeof(sysd->sock), "%s", sys_sock);
	CHECK(td_start(sysd, (const char *const[]){"--node-name=" NODE, NULL}, NULL) == 0);
	CHECKF(pair_nobody("sys1") == 0, "uid 65534 with no environment: the system daemon's "
	       "clients failed");
	CHECKF(td_stat(sysd, "daemon.clients_attached") == 2, "system daemon: %lld clients",
	       td_stat(sysd, "daemon.clients_attached"));
	CHECKF(attached_seen_by_nobody() == 2, "shufflectl as uid 65534 did not find the "
	       "system daemon");

	/* (d) a private daemon of uid 65534, started as a user would */
	char logdir[TD_PATH_MAX], logarg[TD_PATH_MAX + 16];
	td_fmt(logdir, sizeof(logdir), "%s/privlog", e->dir);
	CHECK(mkdir(logdir, 01777) == 0 && chmod(logdir, 01777) == 0);
	td_fmt(logarg, sizeof(logarg), "--log-file=%s/log", logdir);
	const char *dargv[40];
	nobody_argv(dargv, NULL, td_prog("SHF_TEST_SHUFFLED"),
		    (const char *const[]){"--rendezvous=none", logarg, NULL});
	pid_t priv = td_spawn(dargv, NULL, NULL, NULL);
	struct stat st;
	bool up = false;
	for (int64_t end = td_now_ms() + 10000; !up && td_now_ms() < end; td_sleep_ms(10)) {
		up = stat(priv_sock, &st) == 0 && S_ISSOCK(st.st_mode);
		CHECKF(td_poll_exit(priv) == TD_RUNNING, "the private daemon exited: %s",
		       td_read_file(logarg + strlen("--log-file=")));
	}
	CHECKF(up, "the private daemon never made %s", priv_sock);
	CHECKF(pair_nobody("priv1") == 0, "uid 65534's clients with its own daemon up failed");
	CHECKF(td_stat(sysd, "daemon.clients_attached") == 2, "the system daemon got %lld "
	       "clients, but uid 65534's own daemon should have won",
	       td_stat(sysd, "daemon.clients_attached"));
	CHECKF(attached_seen_by_nobody() == 2, "shufflectl as uid 65534 did not find its own "
	       "daemon (or it did not serve the clients)");

	/* the private daemon dies: a stale socket, passed over */
	kill(priv, SIGKILL);
	CHECK(td_wait(priv, 10000) == 128 + SIGKILL);
	CHECK(stat(priv_sock, &st) == 0 && S_ISSOCK(st.st_mode));
	CHECKF(pair_nobody("sys2") == 0, "with a stale private socket, uid 65534's clients "
	       "failed");
	CHECKF(td_stat(sysd, "daemon.clients_attached") == 4, "system daemon: %lld clients "
	       "after the private daemon died (4 expected)",
	       td_stat(sysd, "daemon.clients_attached"));
	CHECKF(attached_seen_by_nobody() == 4, "shufflectl as uid 65534 did not pass over the "
	       "stale socket");

	td_stop(sysd);
	return 0;
}
