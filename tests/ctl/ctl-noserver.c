/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-noserver.c - shufflectl without a working daemon: exit 3
 * when nothing listens (no socket, a stale socket file, a socket bound but
 * not listening), however the path was found (-s, $SHF_SOCKET,
 * $SHF_RUNTIME_DIR, the default); exit 1 for a listener that never answers
 * (--timeout) or hangs up; exit 2 for bad usage; --help and --version.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

static struct td_env *e;

static void ctl_env(struct td_out *o, const char *const *env, const char *a1, const char *a2)
{
	const char *argv[] = {td_prog("SHF_TEST_SHUFFLECTL"), a1, a2, NULL};
	td_run(argv, env, 20000, o);
}

/* A SOCK_SEQPACKET socket bound at path; listening if asked.  The fd. */
static int bound(const char *path, bool listening)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECKF(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", path,
	       strerror(errno));
	if (listening)
		CHECK(listen(fd, 8) == 0);
	return fd;
}

static void expect(struct td_out *o, int status, const char *in_err, const char *what)
{
	CHECKF(o->status == status, "%s: exit %d, expected %d; stderr: %s", what, o->status, status,
	       o->err);
	if (in_err)
		CHECKF(strstr(o->err, in_err), "%s: stderr lacks '%s': %s", what, in_err, o->err);
	td_out_free(o);
}

static void not_running(void)
{
	struct td_out o;
	char path[TD_PATH_MAX + 32], rd[TD_PATH_MAX + 32], envs[2][TD_PATH_MAX + 64];

	/* -s to a socket that does not exist (nor does its directory) */
	snprintf(path, sizeof(path), "%s/nodir/shuffled.sock", e->dir);
	td_ctl(path, &o, "ping", NULL);
	expect(&o, 3, path, "-s missing");
	for (const char *const *c = (const char *const[]){"status", "clients", "jobs", "peers",
							   "stats", "config", "dump", NULL};
	     *c; c++) {
		td_ctl(path, &o, *c, NULL);
		expect(&o, 3, "not running", *c);
		td_ctl(path, &o, "--json", *c, NULL);
		CHECKF(o.out[0] == '\0', "--json %s printed something without a daemon", *c);
		expect(&o, 3, NULL, *c);
	}

	/* $SHF_SOCKET */
	snprintf(envs[0], sizeof(envs[0]), "SHF_SOCKET=%s", path);
	ctl_env(&o, (const char *const[]){envs[0], NULL}, "status", NULL);
	expect(&o, 3, path, "SHF_SOCKET");

	/* $SHF_RUNTIME_DIR */
	snprintf(rd, sizeof(rd), "%s/rd", e->dir);
	snprintf(envs[0], sizeof(envs[0]), "SHF_RUNTIME_DIR=%s", rd);
	td_fmt(path, sizeof(path), "%s/shuffled.sock", rd);
	ctl_env(&o, (const char *const[]){envs[0], NULL}, "status", NULL);
	expect(&o, 3, path, "SHF_RUNTIME_DIR");

	/* the default path: per node name, per user */
	char node[64];
	snprintf(node, sizeof(node), "ctl-test-%d", (int)getpid());
	snprintf(envs[0], sizeof(envs[0]), "SHF_NODE=%s", node);
	snprintf(envs[1], sizeof(envs[1]), "XDG_RUNTIME_DIR=%s", e->dir);
	if (geteuid() == 0)
		snprintf(path, sizeof(path), "/run/shuffle/%s/shuffled.sock", node);
	else
		td_fmt(path, sizeof(path), "%s/shuffle/%s/shuffled.sock", e->dir, node);
	ctl_env(&o, (const char *const[]){envs[0], envs[1], NULL}, "ping", NULL);
	expect(&o, 3, path, "default path");
	/* -s wins over the environment */
	snprintf(envs[0], sizeof(envs[0]), "SHF_SOCKET=%s/other.sock", e->dir);
	snprintf(path, sizeof(path), "%s/wanted.sock", e->dir);
	ctl_env(&o, (const char *const[]){envs[0], NULL}, "-s", path);
	/* no command given: usage, before any connection */
	expect(&o, 2, "no command", "-s without command");
	{
		const char *argv[] = {td_prog("SHF_TEST_SHUFFLECTL"), "-s", path, "ping", NULL};
		td_run(argv, (const char *const[]){envs[0], NULL}, 20000, &o);
		expect(&o, 3, "wanted.sock", "-s over SHF_SOCKET");
	}

	/* a stale socket file: bound once, its owner gone */
	snprintf(path, sizeof(path), "%s/stale.sock", e->dir);
	close(bound(path, false));
	CHECK(access(path, F_OK) == 0);
	td_ctl(path, &o, "ping", NULL);
	expect(&o, 3, "refuses connections", "stale socket");
	/* --prometheus says so to a textfile collector */
	td_ctl(path, &o, "stats", "--prometheus", NULL);
	CHECKF(strstr(o.out, "\nshuffle_up 0\n"), "no shuffle_up 0: %s", o.out);
	expect(&o, 3, NULL, "stale socket, --prometheus");

	/* bound but not listening (a daemon between bind and listen, or hung) */
	snprintf(path, sizeof(path), "%s/bound.sock", e->dir);
	int fd = bound(path, false);
	td_ctl(path, &o, "status", NULL);
	expect(&o, 3, NULL, "bound, not listening");
	close(fd);
}

static void broken_daemons(void)
{
	struct td_out o;
	char path[TD_PATH_MAX + 32];

	/* listens but never accepts or answers: the timeout applies, exit 1 */
	snprintf(path, sizeof(path), "%s/mute.sock", e->dir);
	int fd = bound(path, true);
	int64_t t0 = td_now_ms();
	td_ctl(path, &o, "--timeout", "300", "status", NULL);
	expect(&o, 1, "no answer", "mute listener");
	CHECKF(td_now_ms() - t0 < 15000, "--timeout 300 was not honoured");
	close(fd);

	/* accepts and hangs up at once: exit 1 */
	snprintf(path, sizeof(path), "%s/hangup.sock", e->dir);
	fd = bound(path, true);
	pid_t srv = td_fork();
	CHECK(srv >= 0);
	if (srv == 0) {
		for (;;) {
			int c = accept(fd, NULL, NULL);
			if (c < 0)
				_exit(0);
			close(c);
		}
	}
	close(fd);
	td_ctl(path, &o, "ping", NULL);
	expect(&o, 1, "closed the connection", "hang-up listener");

	/* answers garbage: exit 1, never a crash */
	kill(srv, SIGKILL);
	td_wait(srv, 5000);
	unlink(path);
	fd = bound(path, true);
	srv = td_fork();
	CHECK(srv >= 0);
	if (srv == 0) {
		for (;;) {
			int c = accept(fd, NULL, NULL);
			if (c < 0)
				_exit(0);
			char buf[256];
			if (recv(c, buf, sizeof(buf), 0) > 0) {
				static const char junk[] = "this is not a shuffle daemon";
				send(c, junk, sizeof(junk), MSG_NOSIGNAL);
			}
			td_sleep_ms(200);
			close(c);
		}
	}
	close(fd);
	td_ctl(path, &o, "stats", NULL);
	expect(&o, 1, "bad message", "garbage answer");
	kill(srv, SIGKILL);
	td_wait(srv, 5000);
}

static void usage_errors(void)
{
	struct td_out o;
	const char *sock = "/nonexistent/shuffled.sock";
	td_ctl(sock, &o, NULL);
	expect(&o, 2, "no command", "no command");
	td_ctl(sock, &o, "frobnicate", NULL);
	expect(&o, 2, "unknown command", "unknown command");
	td_ctl(sock, &o, "status", "jobs", NULL);
	expect(&o, 2, "one command", "two commands");
	td_ctl(sock, &o, "--timeout", "soon", "status", NULL);
	expect(&o, 2, "--timeout", "bad timeout");
	td_ctl(sock, &o, "--timeout", "-5", "status", NULL);
	expect(&o, 2, "--timeout", "negative timeout");
	td_ctl(sock, &o, "--json", "--prometheus", "stats", NULL);
	expect(&o, 2, "exclude", "json and prometheus");
	td_ctl(sock, &o, "--prometheus", "clients", NULL);
	expect(&o, 2, "--prometheus", "prometheus without stats");
	td_ctl(sock, &o, "--bogus", "status", NULL);
	expect(&o, 2, "--bogus", "unknown option");
	td_ctl(NULL, &o, "status", "-s", NULL);
	expect(&o, 2, "needs a value", "-s without value");
	char longp[300];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	td_ctl(longp, &o, "ping", NULL);
	expect(&o, 2, "too long", "socket path too long");

	td_ctl(NULL, &o, "--help", NULL);
	CHECKF(strstr(o.out, "Usage: shufflectl") && strstr(o.out, "prometheus"), "%s", o.out);
	expect(&o, 0, NULL, "--help");
	td_ctl(NULL, &o, "--version", NULL);
	CHECKF(!strncmp(o.out, "shufflectl ", 11), "%s", o.out);
	expect(&o, 0, NULL, "--version");
}

int main(void)
{
	e = td_init("ctl-noserver", 120, 0);
	usage_errors();
	not_running();
	broken_daemons();
	return 0;
}
