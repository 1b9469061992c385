/* SPDX-License-Identifier: MIT */
/*
 * tests/node/squat.c - squatting on a runtime directory (issue 15, item 4;
 * issue 11, item 5): another user pre-creates the directory and serves a
 * daemon there.
 *
 * Daemon side: a root daemon told to use a directory that uid 65534
 * created, or one that others may write, refuses to start (exit status 1,
 * a log line naming the reason) and leaves the directory alone.
 * Client side: uid 65534 runs a real shuffled in a directory of its own,
 * socket open to all; a root client pointed at that socket refuses the
 * daemon (-EPERM, the detail naming uid 65534) before it says anything,
 * while uid 65534's own client uses it.  Skipped unless root with setpriv.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "tests/node/rawconn.h"

#define SETPRIV "/usr/bin/setpriv"
#define SQUATTER 65534

static struct td_env *e;

static const char *const *as_squatter(const char **argv, const char *const *cmd)
{
	int n = 0;
	argv[n++] = SETPRIV;
	argv[n++] = "--reuid=65534";
	argv[n++] = "--regid=65534";
	argv[n++] = "--clear-groups";
	for (; *cmd && n < 31; cmd++)
		argv[n++] = *cmd;
	argv[n] = NULL;
	return argv;
}

/* A root daemon with --runtime-dir=dir must refuse to start, saying why. */
static void root_refuses(const char *dir, const char *why, const char *what)
{
	char rt[TD_PATH_MAX + 32], lf[TD_PATH_MAX + 32], log[TD_PATH_MAX];
	static int seq;
	td_fmt(log, sizeof(log), "%s/root-%d.log", e->dir, seq++);
	td_fmt(rt, sizeof(rt), "--runtime-dir=%s", dir);
	td_fmt(lf, sizeof(lf), "--log-file=%s", log);
	const char *argv[] = {td_prog("SHF_TEST_SHUFFLED"), rt, lf, "--rendezvous=none",
			      "--node-name=testnode", NULL};
	const char *env[] = {"SHF_SOCKET=", NULL};
	pid_t p = td_spawn(argv, env, NULL, NULL);
	int st = td_wait(p, 10000);
	char *text = td_read_file(log);
	CHECKF(st != TD_RUNNING && st > 0 && st < 128,
	       "%s: a root daemon started in it (status %d); log:\n%s", what, st, text);
	CHECKF(strstr(text, why) != NULL, "%s: the log does not say \"%s\":\n%s", what, why, text);
	free(text);
	char sock[TD_PATH_MAX + 20];
	td_fmt(sock, sizeof(sock), "%s/shuffled.sock", dir);
	CHECKF(access(sock, F_OK) < 0, "%s: the daemon left a socket in it", what);
	fprintf(stderr, "squat: %s: refused\n", what);
}

int main(void)
{
	e = td_init("squat", 50, 0);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon, a squatter of another uid)");
	if (access(SETPRIV, X_OK) != 0)
		SKIP("%s not found", SETPRIV);
	CHECK(chmod(e->dir, 0755) == 0);
	CHECK(chmod(e->sync, 01777) == 0);

	/* a shared /tmp-like directory: anyone may create entries */
	char tmp[TD_PATH_MAX], dir[TD_PATH_MAX], sockp[TD_PATH_MAX], log[TD_PATH_MAX];
	td_fmt(tmp, sizeof(tmp), "%s/tmp", e->dir);
	CHECK(mkdir(tmp, 0755) == 0 && chmod(tmp, 01777) == 0);

	/* 1: the squatter pre-creates the directory, nothing in it */
	td_fmt(dir, sizeof(dir), "%s/shuffle-0", tmp);
	const char *mk[] = {"/bin/mkdir", "-m", "0755", dir, NULL};
	const char *argv[32];
	CHECK(td_wait(td_spawn(as_squatter(argv, mk), NULL, NULL, NULL), 5000) == 0);
	struct stat st;
	CHECK(stat(dir, &st) == 0 && st.st_uid == SQUATTER);
	root_refuses(dir, "owned by uid 65534", "a directory uid 65534 created");

	/* 2: root's own directory, but others may write it */
	td_fmt(dir, sizeof(dir), "%s/open", e->dir);
	CHECK(mkdir(dir, 0755) == 0 && chmod(dir, 0777) == 0);
	root_refuses(dir, "writable by group or others", "a directory others may write");

	/* 3: the squatter serves a real daemon, socket open to all */
	td_fmt(dir, sizeof(dir), "%s/shuffle-1/testnode", tmp);
	td_fmt(sockp, sizeof(sockp), "%s/shuffled.sock", dir);
	td_fmt(log, sizeof(log), "%s/squatter.log", tmp);
	char rt[TD_PATH_MAX + 32], lf[TD_PATH_MAX + 32];
	td_fmt(rt, sizeof(rt), "--runtime-dir=%s", dir);
	td_fmt(lf, sizeof(lf), "--log-file=%s", log);
	const char *sq[] = {td_prog("SHF_TEST_SHUFFLED"), rt, lf, "--rendezvous=none",
			    "--node-name=testnode", NULL};
	const char *noenv[] = {"SHF_SOCKET=", NULL};
	pid_t squatter = td_spawn(as_squatter(argv, sq), noenv, NULL, NULL);
	bool up = false;
	for (int64_t end = td_now_ms() + 10000; !up && td_now_ms() < end; td_sleep_ms(20)) {
		CHECKF(td_poll_exit(squatter) == TD_RUNNING, "the squatter's daemon exited: %s",
		       td_read_file(log));
		int fd = rc_connect(sockp);
		if (fd >= 0)
			close(fd), up = true;
	}
	CHECK(up);
	const char *chm[] = {"/bin/chmod", "0777", dir, sockp, NULL};
	CHECK(td_wait(td_spawn(as_squatter(argv, chm), NULL, NULL, NULL), 5000) == 0);

	/* root's client refuses that daemon */
	char envs[TD_PATH_MAX + 16];
	td_fmt(envs, sizeof(envs), "SHF_SOCKET=%s", sockp);
	const char *cenv[] = {envs, NULL};
	const char *refuse[] = {"open", "expect=EPERM", "detail=uid 65534", "timeout=5000", NULL};
	pid_t p = td_spawn_client("squatted", 0, 1, refuse, cenv);
	CHECKF(td_wait(p, 15000) == 0, "a root client used a daemon of uid 65534");
	/* and so does root's shufflectl (the same rule, proto/cred.h) */
	struct td_out o;
	td_ctl(sockp, &o, "status", NULL);
	CHECKF(o.status == 1 && strstr(o.err, "uid 65534") && strstr(o.err, "refusing"),
	       "root's shufflectl asked a daemon of uid 65534: exit %d, stderr: %s", o.status,
	       o.err);
	td_out_free(&o);
	/* the squatter's own client may use it */
	const char *tcl[] = {td_prog("SHF_TEST_TCLIENT"), "open", NULL};
	const char *oenv[] = {envs, "SHF_JOB=own", "SHF_RANK=0", "SHF_WORLD=1", NULL};
	p = td_spawn(as_squatter(argv, tcl), oenv, NULL, NULL);
	int r = td_wait(p, 15000);
	if (r == 2)
		SKIP("the test client cannot run as uid 65534 (is the build directory readable?)");
	CHECKF(r == 0, "uid 65534's client could not use its own daemon (status %d)", r);
	kill(squatter, SIGTERM);
	CHECK(td_wait(squatter, 10000) == 0);
	return 0;
}
