/* SPDX-License-Identifier: MIT */
/*
 * client-discover: the one rule for finding the daemon (client/discover.c),
 * with a fake environment and temporary directories: sockets bound (and
 * listening, or not: stale) by this process stand in for daemons, and the
 * "system runtime directory" is a temporary one.  Checks the order
 * (explicit places only themselves; the user's private daemon before the
 * system daemon; root the other way round), what counts as "there" (a
 * socket that accepts; a missing file, a non-socket and a stale socket are
 * passed over), that every place tried is named when nothing is found,
 * and, as root, that an untrusted daemon stops the search (-EPERM) and an
 * unreachable directory reads -EACCES.
 * Links the library's internals (shc_internal) directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.h"
#include "tests/lib/check.h"

const char *check_detail(void)
{
	return shf_error_detail(); /* every counted failure says the library's last detail */
}

static char tmp[100];


static void mkdirs(const char *path, mode_t mode)
{
	char p[256];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	mkdir(p, mode);
}

/* A stand-in daemon: a SOCK_SEQPACKET socket bound at dir/shuffled.sock,
 * listening or (stale) not.  Returns the fd. */
static int fake(const char *dir, bool listening)
{
	mkdirs(dir, 0755);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/shuffled.sock", dir);
	unlink(sa.sun_path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (listening && listen(fd, 16) < 0)) {
		perror("fake daemon");
		exit(1);
	}
	return fd;
}

static void unfake(const char *dir, int fd)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/shuffled.sock", dir);
	unlink(p);
	close(fd);
}

static struct shc_discover_cfg cfg(unsigned long uid)
{
	static char sys[160];
	snprintf(sys, sizeof(sys), "%s/sys", tmp);
	return (struct shc_discover_cfg){.opt = NULL, .opt_name = NULL, .uid = uid,
					 .system_dir = sys, .system_user = "shuffle",
					 .timeout_ms = 1000};
}

/* Run discovery; expect err, and on success the path and source. */
static void expect(int line, const struct shc_discover_cfg *c, int err, const char *path,
		   const char *source)
{
	struct shc_found f;
	int r = shc_discover_in(c, &f);
	if (r != err || (!err && (strcmp(f.path, path) != 0 || strcmp(f.source, source) != 0 ||
				  f.fd < 0 || f.cred.pid != getpid())) ||
	    (err && f.fd != -1)) {
		MISS("line %d: discover: %d '%s' (%s), want %d '%s' (%s)", line, r,
		     r ? "" : f.path, r ? "" : f.source, err, path ? path : "", source ? source : "");
	}
	if (!r)
		close(f.fd);
}

static bool detail_has(const char *s)
{
	if (strstr(shf_error_detail(), s))
		return true;
	fprintf(stderr, "detail lacks '%s': %s\n", s, shf_error_detail());
	return false;
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/shf-disc-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(tmp, 0755);
	for (const char *const *v = (const char *const[]){"SHF_SOCKET", "SHF_RUNTIME_DIR",
							   "SHF_NODE", "XDG_RUNTIME_DIR", NULL};
	     *v; v++)
		unsetenv(*v);
	setenv("SHF_NODE", "n1", 1);
	char xdg[160], priv_dir[300], priv[400], sys_dir[300], sys[400], want[1400];
	snprintf(xdg, sizeof(xdg), "%s/xdg", tmp);
	snprintf(priv_dir, sizeof(priv_dir), "%s/shuffle/n1", xdg);
	snprintf(priv, sizeof(priv), "%s/shuffled.sock", priv_dir);
	snprintf(sys_dir, sizeof(sys_dir), "%s/sys/n1", tmp);
	snprintf(sys, sizeof(sys), "%s/shuffled.sock", sys_dir);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	struct shc_discover_cfg user = cfg(1000), root = cfg(0);

	/* (c) nothing anywhere: every place tried is named, in order */
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "no shuffled found: tried SHF_SOCKET and SHF_RUNTIME_DIR "
		 "(unset), %s (no such file), %s (no such file); start one (shuffled) or set "
		 "SHF_RUNTIME_DIR", priv, sys);
	EXPECT(strcmp(shf_error_detail(), want) == 0);
	/* root: the system place first */
	expect(__LINE__, &root, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "(unset), %s (no such file), %s (no such file);", sys, priv);
	EXPECT(detail_has(want));
	/* without XDG_RUNTIME_DIR (or a relative one): /tmp/shuffle-UID */
	unsetenv("XDG_RUNTIME_DIR");
	expect(__LINE__, &(struct shc_discover_cfg){.uid = 4123456789ul,
						     .system_dir = user.system_dir,
						     .system_user = "shuffle"},
	       -ECONNREFUSED, NULL, NULL);
	EXPECT(detail_has("/tmp/shuffle-4123456789/n1/shuffled.sock (no such file)"));
	setenv("XDG_RUNTIME_DIR", "relative", 1);
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	EXPECT(detail_has("/tmp/shuffle-1000/n1/shuffled.sock (no such file)"));
	setenv("XDG_RUNTIME_DIR", xdg, 1);

	/* the system daemon alone: found */
	int sfd = fake(sys_dir, true);
	expect(__LINE__, &user, 0, sys, "system daemon");
	expect(__LINE__, &root, 0, sys, "system daemon");

	/* (d) the user's private daemon wins over the system daemon; root's
	 * order is the other way round */
	int pfd = fake(priv_dir, true);
	expect(__LINE__, &user, 0, priv, "private daemon");
	expect(__LINE__, &root, 0, sys, "system daemon");

	/* a stale private socket (its daemon died): passed over */
	unfake(priv_dir, pfd);
	pfd = fake(priv_dir, false);
	expect(__LINE__, &user, 0, sys, "system daemon");
	/* ... and named when the system daemon is not there either */
	unfake(sys_dir, sfd);
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "%s (refuses connections: a stale socket", priv);
	EXPECT(detail_has(want));
	unfake(priv_dir, pfd);
	/* not a socket: passed over, and said so */
	int ffd = open(priv, O_CREAT | O_WRONLY, 0600);
	EXPECT(ffd >= 0);
	close(ffd);
	sfd = fake(sys_dir, true);
	expect(__LINE__, &user, 0, sys, "system daemon");
	unfake(sys_dir, sfd);
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "%s (not a socket)", priv);
	EXPECT(detail_has(want));
	unlink(priv);

	/* explicit places: only themselves, even with a system daemon up */
	sfd = fake(sys_dir, true);
	char rd[200], rdsock[256], other[200], othersock[256];
	snprintf(rd, sizeof(rd), "%s/rd", tmp);
	snprintf(rdsock, sizeof(rdsock), "%s/shuffled.sock", rd);
	setenv("SHF_RUNTIME_DIR", rd, 1);
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "no shuffled found: tried SHF_RUNTIME_DIR %s (no such "
		 "file); start one there", rdsock);
	EXPECT(detail_has(want));
	EXPECT(!strstr(shf_error_detail(), sys));
	int rfd = fake(rd, true);
	expect(__LINE__, &user, 0, rdsock, "SHF_RUNTIME_DIR");
	/* SHF_SOCKET over SHF_RUNTIME_DIR; opt over both; "" is unset */
	snprintf(other, sizeof(other), "%s/other", tmp);
	snprintf(othersock, sizeof(othersock), "%s/shuffled.sock", other);
	setenv("SHF_SOCKET", othersock, 1);
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	EXPECT(detail_has("tried SHF_SOCKET "));
	EXPECT(detail_has("check SHF_SOCKET"));
	int ofd = fake(other, true);
	expect(__LINE__, &user, 0, othersock, "SHF_SOCKET");
	struct shc_discover_cfg opt = user;
	opt.opt = rdsock;
	expect(__LINE__, &opt, 0, rdsock, "opts.socket_path");
	opt.opt = tmp; /* a directory: not a socket (shufflectl -s /tmp) */
	opt.opt_name = "-s";
	expect(__LINE__, &opt, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "tried -s %s (not a socket)", tmp);
	EXPECT(detail_has(want));
	opt.opt = "";
	expect(__LINE__, &opt, 0, othersock, "SHF_SOCKET");
	setenv("SHF_SOCKET", "", 1);
	expect(__LINE__, &user, 0, rdsock, "SHF_RUNTIME_DIR");
	unsetenv("SHF_SOCKET");
	unsetenv("SHF_RUNTIME_DIR");
	unfake(rd, rfd);
	unfake(other, ofd);

	/* node names are never paths; paths must fit sun_path */
	setenv("SHF_NODE", "a/b", 1);
	expect(__LINE__, &user, -EINVAL, NULL, NULL);
	setenv("SHF_NODE", "..", 1);
	expect(__LINE__, &user, -EINVAL, NULL, NULL);
	setenv("SHF_NODE", "n1", 1);
	char longp[200];
	memset(longp, 'x', sizeof(longp));
	longp[0] = '/';
	longp[120] = '\0';
	setenv("SHF_SOCKET", longp, 1);
	expect(__LINE__, &user, -EINVAL, NULL, NULL);
	unsetenv("SHF_SOCKET");
	/* the host name when SHF_NODE is unset */
	unsetenv("SHF_NODE");
	char host[256];
	EXPECT(gethostname(host, sizeof(host)) == 0);
	host[sizeof(host) - 1] = '\0';
	expect(__LINE__, &user, -ECONNREFUSED, NULL, NULL);
	snprintf(want, sizeof(want), "%s/sys/%s/shuffled.sock (no such file)", tmp, host);
	EXPECT(detail_has(want));
	setenv("SHF_NODE", "n1", 1);

	if (geteuid() == 0) {
		/* an untrusted daemon (uid 65534) at the private place: the search
		 * stops there with -EPERM, it does not go on to the system daemon */
		int pipefd[2];
		EXPECT(pipe(pipefd) == 0);
		mkdirs(priv_dir, 0755);
		chown(priv_dir, 65534, 65534);
		pid_t squat = fork();
		if (squat == 0) {
			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(1);
			int fd = fake(priv_dir, true);
			(void)fd;
			if (write(pipefd[1], "x", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		char b;
		EXPECT(read(pipefd[0], &b, 1) == 1);
		struct shc_found f;
		EXPECT(shc_discover_in(&user, &f) == -EPERM);
		EXPECT(f.fd == -1 && f.cred.uid == 65534 && f.cred.pid == squat);
		EXPECT(detail_has("runs as uid 65534"));
		kill(squat, SIGKILL);
		waitpid(squat, NULL, 0);
		unlink(priv);

		/* a place this uid cannot reach: -EACCES, and the text says so */
		char closed[200];
		snprintf(closed, sizeof(closed), "%s/closed", tmp);
		mkdirs(closed, 0700);
		int cfd = fake(closed, true);
		pid_t child = fork();
		if (child == 0) {
			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(10);
			setenv("SHF_RUNTIME_DIR", closed, 1);
			struct shc_found g;
			int r = shc_discover_in(&user, &g);
			if (r != -EACCES || !strstr(shf_error_detail(), "Permission denied")) {
				fprintf(stderr, "as 65534: %d %s\n", r, shf_error_detail());
				_exit(11);
			}
			_exit(0);
		}
		int st = -1;
		waitpid(child, &st, 0);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		unfake(closed, cfd);
	} else {
		fprintf(stderr, "not root: the -EPERM and -EACCES cases are not run\n");
	}
	unfake(sys_dir, sfd);

	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_result();
}
