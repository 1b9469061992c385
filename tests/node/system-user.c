/* SPDX-License-Identifier: MIT */
/*
 * tests/node/system-user.c - system mode is not tied to root (issue 11,
 * item 5): a daemon running as the system user (meson option system_user,
 * here $SHF_TEST_SYSTEM_USER; created with useradd --system when absent)
 * serves every local user, as a root daemon does: its runtime directory
 * is 0755, its socket 0666, a client of another uid (65534) runs a job
 * through it, root's client accepts it, and jobs stay isolated (uid 65534
 * cannot join a job root holds: -EACCES).  A daemon of any other user
 * is a user daemon: socket 0600 in a 0700 directory (a directory it finds
 * 0755 is tightened).  A clean stop removes the socket and the lock file.
 * Skipped unless root with setpriv(1).
 */
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>

#include "tests/node/rawconn.h"

#define NOBODY 65534

static struct td_env *e;

static const char *const *as_uid(const char **argv, uid_t uid, gid_t gid,
				 const char *const *cmd)
{
	static char ru[32], rg[32];
	int n = 0;
	snprintf(ru, sizeof(ru), "--reuid=%u", (unsigned)uid);
	snprintf(rg, sizeof(rg), "--regid=%u", (unsigned)gid);
	argv[n++] = TD_SETPRIV;
	argv[n++] = ru;
	argv[n++] = rg;
	argv[n++] = "--clear-groups";
	for (; *cmd && n < 31; cmd++)
		argv[n++] = *cmd;
	argv[n] = NULL;
	return argv;
}

/* Start shuffled as uid/gid in runtime directory dir; wait until its
 * socket accepts (as root).  The pid. */
static pid_t start_as(uid_t uid, gid_t gid, const char *dir, const char *log)
{
	char rt[TD_PATH_MAX + 32], lf[TD_PATH_MAX + 32], sock[TD_PATH_MAX + 20];
	td_fmt(rt, sizeof(rt), "--runtime-dir=%s", dir);
	td_fmt(lf, sizeof(lf), "--log-file=%s", log);
	td_fmt(sock, sizeof(sock), "%s/shuffled.sock", dir);
	const char *cmd[] = {td_prog("SHF_TEST_SHUFFLED"), rt, lf, "--rendezvous=none",
			     "--node-name=testnode", NULL};
	const char *env[] = {"SHF_SOCKET=", NULL};
	const char *argv[32];
	pid_t p = td_spawn(as_uid(argv, uid, gid, cmd), env, NULL, NULL);
	for (int64_t end = td_now_ms() + 10000; td_now_ms() < end; td_sleep_ms(20)) {
		CHECKF(td_poll_exit(p) == TD_RUNNING, "the daemon of uid %u exited:\n%s",
		       (unsigned)uid, td_read_file(log));
		int fd = rc_connect(sock);
		if (fd >= 0) {
			close(fd);
			return p;
		}
	}
	CHECKF(false, "the daemon of uid %u never accepted on %s:\n%s", (unsigned)uid, sock,
	       td_read_file(log));
	return -1;
}

static unsigned mode_of(const char *path)
{
	struct stat st;
	CHECKF(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return (unsigned)(st.st_mode & 07777);
}

/* SIGTERM: exit 0, socket and lock file gone. */
static void stop_clean(pid_t p, const char *dir, const char *log)
{
	char sock[TD_PATH_MAX + 20], lock[TD_PATH_MAX + 20];
	td_fmt(sock, sizeof(sock), "%s/shuffled.sock", dir);
	td_fmt(lock, sizeof(lock), "%s/shuffled.lock", dir);
	kill(p, SIGTERM);
	int st = td_wait(p, 10000);
	CHECKF(st == 0, "the daemon exited with status %d:\n%s", st, td_read_file(log));
	CHECKF(access(sock, F_OK) < 0, "clean stop left the socket %s", sock);
	CHECKF(access(lock, F_OK) < 0, "clean stop left the lock file %s", lock);
}

int main(void)
{
	e = td_init("system-user", 80, 0);
	if (geteuid() != 0)
		SKIP("needs root (a daemon and clients of other uids)");
	if (access(TD_SETPRIV, X_OK) != 0)
		SKIP("%s not found", TD_SETPRIV);
	const char *sysuser = getenv("SHF_TEST_SYSTEM_USER");
	if (!sysuser || !*sysuser)
		SKIP("built with an empty system_user");
	struct passwd *pw = getpwnam(sysuser);
	if (!pw) {
		const char *add[] = {"/usr/sbin/useradd", "--system", "--no-create-home",
				     "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
				     sysuser, NULL};
		if (access(add[0], X_OK) != 0)
			SKIP("no user %s and no %s to create it", sysuser, add[0]);
		CHECKF(td_wait(td_spawn(add, NULL, NULL, NULL), 20000) == 0, "useradd %s failed",
		       sysuser);
		fprintf(stderr, "system-user: created the system user %s\n", sysuser);
		CHECK((pw = getpwnam(sysuser)) != NULL);
	}
	uid_t su = pw->pw_uid;
	gid_t sg = pw->pw_gid;
	CHECKF(su != 0 && su != NOBODY, "system user %s has uid %u", sysuser, (unsigned)su);
	CHECK(chmod(e->dir, 0755) == 0);
	CHECK(chmod(e->sync, 01777) == 0);
	/* the clients, as uid 65534, must be able to run */
	const char *usage_only[] = {NULL};
	int r = td_wait(td_spawn_client_as(NOBODY, "x", 0, 1, usage_only, NULL), 10000);
	if (r != 2)
		SKIP("the test client cannot run as uid 65534 (status %d): is the build "
		     "directory readable by everyone?", r);

	/* 1: the system user's daemon, in a parent it owns (as /run/shuffle
	 * is under systemd's RuntimeDirectory= with User=) */
	char parent[TD_PATH_MAX], dir[TD_PATH_MAX], sock[TD_PATH_MAX], log[TD_PATH_MAX];
	td_fmt(parent, sizeof(parent), "%s/sys", e->dir);
	td_fmt(dir, sizeof(dir), "%s/testnode", parent);
	td_fmt(sock, sizeof(sock), "%s/shuffled.sock", dir);
	td_fmt(log, sizeof(log), "%s/sys.log", parent);
	CHECK(mkdir(parent, 0755) == 0 && chown(parent, su, sg) == 0);
	pid_t sys = start_as(su, sg, dir, log);
	CHECKF(mode_of(dir) == 0755, "the system user's runtime directory has mode %04o, not 0755",
	       mode_of(dir));
	CHECKF(mode_of(sock) == 0666, "the system user's socket has mode %04o, not 0666",
	       mode_of(sock));
	/* it says so in its configuration: mode auto resolved to system */
	json_t *cfg = td_ctl_json(sock, "config");
	json_t *m = json_object_get(json_object_get(cfg, "config"), "mode");
	CHECKF(m && !strcmp(json_string_value(json_object_get(m, "value")), "system") &&
		       !strcmp(json_string_value(json_object_get(m, "source")), "computed"),
	       "config does not show mode system (computed)");
	json_decref(cfg);

	/* a client of another uid runs a job through it; root's does too */
	char envs[TD_PATH_MAX + 16];
	td_fmt(envs, sizeof(envs), "SHF_SOCKET=%s", sock);
	const char *cenv[] = {envs, NULL};
	const char *traffic[] = {"traffic", "n=200", NULL};
	pid_t nob = td_spawn_client_as(NOBODY, "nobodyjob", 0, 1, traffic, cenv);
	CHECKF(td_wait(nob, 20000) == 0, "uid 65534's job through the system user's daemon "
	       "failed; daemon log:\n%s", td_read_file(log));
	pid_t rootc = td_spawn_client("rootjob", 0, 1, traffic, cenv);
	CHECKF(td_wait(rootc, 20000) == 0, "root's job through the system user's daemon failed");
	/* jobs stay isolated as with a root daemon: uid 65534 cannot join a
	 * job root holds open (-EACCES) */
	const char *holder[] = {"open", "post=open", "hold=release", "timeout=30000", NULL};
	const char *denied[] = {"open", "expect=EACCES", "timeout=10000", NULL};
	pid_t hold = td_spawn_client("held", 0, 2, holder, cenv);
	bool reg = false;
	for (int64_t end = td_now_ms() + 10000; !reg && td_now_ms() < end; td_sleep_ms(10)) {
		json_t *cl = td_ctl_json(sock, "clients");
		reg = td_client_find(cl, "held", 0) != NULL;
		json_decref(cl);
	}
	CHECKF(reg, "root's rank 0 of job 'held' never registered");
	nob = td_spawn_client_as(NOBODY, "held", 1, 2, denied, cenv);
	CHECKF(td_wait(nob, 15000) == 0, "uid 65534 joining root's job: not -EACCES");
	CHECKF(td_poll_exit(hold) == TD_RUNNING, "root's rank 0 was disturbed");
	kill(hold, SIGTERM);
	td_wait(hold, 5000);
	stop_clean(sys, dir, log);
	fprintf(stderr, "system-user: the %s daemon served uid 65534 and root\n", sysuser);

	/* 2: any other user's daemon is private: 0700 directory (a 0755 one
	 * it finds is tightened), 0600 socket */
	td_fmt(parent, sizeof(parent), "%s/usr", e->dir);
	td_fmt(dir, sizeof(dir), "%s/testnode", parent);
	td_fmt(sock, sizeof(sock), "%s/shuffled.sock", dir);
	td_fmt(log, sizeof(log), "%s/usr.log", parent);
	CHECK(mkdir(parent, 0755) == 0 && chown(parent, NOBODY, NOBODY) == 0);
	CHECK(mkdir(dir, 0755) == 0 && chown(dir, NOBODY, NOBODY) == 0 && chmod(dir, 0755) == 0);
	pid_t usr = start_as(NOBODY, NOBODY, dir, log);
	CHECKF(mode_of(dir) == 0700, "a user daemon's runtime directory has mode %04o, not 0700",
	       mode_of(dir));
	CHECKF(mode_of(sock) == 0600, "a user daemon's socket has mode %04o, not 0600",
	       mode_of(sock));
	stop_clean(usr, dir, log);
	fprintf(stderr, "system-user: uid 65534's daemon is private (0700, 0600)\n");
	return 0;
}
