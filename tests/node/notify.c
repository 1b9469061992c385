/* SPDX-License-Identifier: MIT */
/*
 * tests/node/notify.c - the daemon under a service manager (issue 11,
 * item 5): systemd's notify protocol, spoken to a real AF_UNIX datagram
 * socket this test binds as $NOTIFY_SOCKET, with $WATCHDOG_USEC and
 * $WATCHDOG_PID set as systemd sets them.  Expected, every datagram from
 * the daemon's own pid:
 *   READY=1 once it serves, with STATUS= giving nodes up, jobs, clients;
 *   STATUS= again when a client registers ("jobs 1, clients 1") and when
 *   it leaves;
 *   WATCHDOG=1 repeatedly (every half WATCHDOG_USEC);
 *   STOPPING=1 on SIGTERM, then exit 0.
 */
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "tests/lib/daemon.h"

#define WATCHDOG_USEC 300000

static int nfd = -1;
static pid_t daemon_pid;
static int ready, stopping, watchdogs;
static char status[256];
static int status_seen;

/* Read what arrives within timeout_ms (one datagram at most); true if one
 * did. */
static bool read_one(int timeout_ms)
{
	struct pollfd pfd = {.fd = nfd, .events = POLLIN};
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return false;
	char buf[4096];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = {buf, sizeof(buf) - 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			    .msg_controllen = sizeof(ctl.b)};
	ssize_t n = recvmsg(nfd, &mh, MSG_DONTWAIT);
	CHECKF(n >= 0, "recvmsg: %s", strerror(errno));
	buf[n] = '\0';
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	CHECKF(c && c->cmsg_type == SCM_CREDENTIALS, "a datagram without credentials: %s", buf);
	struct ucred uc;
	memcpy(&uc, CMSG_DATA(c), sizeof(uc));
	CHECKF(uc.pid == daemon_pid, "a datagram from pid %d, not the daemon's %d: %s",
	       (int)uc.pid, (int)daemon_pid, buf);
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(l, "READY=1"))
			ready++;
		else if (!strcmp(l, "STOPPING=1"))
			stopping++;
		else if (!strcmp(l, "WATCHDOG=1"))
			watchdogs++;
		else if (!strncmp(l, "STATUS=", 7)) {
			snprintf(status, sizeof(status), "%s", l + 7);
			status_seen++;
			fprintf(stderr, "notify: STATUS=%s\n", status);
		} else
			CHECKF(false, "unexpected notify line '%s'", l);
	}
	return true;
}

/* Read until cond holds, up to timeout_ms. */
#define READ_UNTIL(cond, timeout_ms, what)                                                 \
	do {                                                                               \
		int64_t end_ = td_now_ms() + (timeout_ms);                                 \
		while (!(cond) && td_now_ms() < end_)                                      \
			read_one((int)(end_ - td_now_ms()));                               \
		CHECKF(cond, "%s (last STATUS '%s', %d WATCHDOG=1)", what, status, watchdogs); \
	} while (0)

int main(void)
{
	struct td_env *e = td_init("notify", 50, 0);
	char path[TD_PATH_MAX + 16];
	td_fmt(path, sizeof(path), "%s/notify", e->dir);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	CHECK(strlen(path) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	CHECK((nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	CHECK(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	int one = 1;
	CHECK(setsockopt(nfd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) == 0);

	/* systemd sets WATCHDOG_PID to the main pid: the shell sets it to its
	 * own pid, which exec keeps */
	char rt[TD_PATH_MAX + 32], lf[TD_PATH_MAX + 32], ns[TD_PATH_MAX + 32], wd[64];
	td_fmt(rt, sizeof(rt), "--runtime-dir=%s", e->d->run);
	td_fmt(lf, sizeof(lf), "--log-file=%s", e->d->log);
	td_fmt(ns, sizeof(ns), "NOTIFY_SOCKET=%s", path);
	td_fmt(wd, sizeof(wd), "WATCHDOG_USEC=%d", WATCHDOG_USEC);
	const char *argv[] = {"/bin/sh", "-c", "WATCHDOG_PID=$$; export WATCHDOG_PID; exec \"$@\"",
			      "sh", td_prog("SHF_TEST_SHUFFLED"), rt, lf, "--rendezvous=none",
			      "--node-name=testnode", NULL};
	const char *env[] = {ns, wd, "SHF_SOCKET=", NULL};
	daemon_pid = td_spawn(argv, env, NULL, NULL);
	e->d->pid = daemon_pid;

	READ_UNTIL(ready, 10000, "no READY=1 within 10 s");
	CHECKF(ready == 1, "READY=1 sent %d times", ready);
	READ_UNTIL(status_seen, 5000, "no STATUS= with READY=1");
	CHECKF(strstr(status, "nodes up 1/1") && strstr(status, "jobs 0") &&
		       strstr(status, "clients 0"),
	       "the first STATUS is '%s', not nodes up 1/1, jobs 0, clients 0", status);

	/* a registered client shows in STATUS */
	char se[TD_PATH_MAX + 16];
	td_fmt(se, sizeof(se), "SHF_SOCKET=%s", e->d->sock);
	const char *cenv[] = {se, NULL};
	const char *holder[] = {"open", "post=open", "hold=release", "timeout=30000", NULL};
	pid_t c = td_spawn_client("nj", 0, 1, holder, cenv);
	READ_UNTIL(strstr(status, "jobs 1, clients 1"), 10000,
		   "STATUS never showed the client's job");
	td_sync_post(e->sync, "release");
	CHECK(td_wait(c, 15000) == 0);
	READ_UNTIL(strstr(status, "jobs 0, clients 0"), 10000,
		   "STATUS never showed the client gone");

	/* the watchdog is fed, repeatedly */
	READ_UNTIL(watchdogs >= 5, 10000, "fewer than 5 WATCHDOG=1 in 10 s");
	fprintf(stderr, "notify: %d WATCHDOG=1 so far\n", watchdogs);

	kill(daemon_pid, SIGTERM);
	READ_UNTIL(stopping, 10000, "no STOPPING=1 after SIGTERM");
	int st = td_wait(daemon_pid, 10000);
	e->d->pid = 0;
	CHECKF(st == 0, "the daemon exited with status %d", st);
	CHECKF(ready == 1 && stopping == 1, "READY=1 %d times, STOPPING=1 %d times", ready,
	       stopping);
	return 0;
}
