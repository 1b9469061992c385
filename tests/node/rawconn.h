/* SPDX-License-Identifier: MIT */
/*
 * tests/node/rawconn.h - control-socket connections spoken by hand, for
 * the tests of the daemon's connection handling (passed-socket, fd-limit,
 * conn-limits, idle-sessions, squat): connect (optionally as another uid,
 * the socket handed back over SCM_RIGHTS so that SO_PEERCRED names that
 * uid), HELLO, a timed "ping", and the next message or close within a
 * bound.  Header-only; each test includes it once.
 */
#ifndef SHF_TESTS_NODE_RAWCONN_H
#define SHF_TESTS_NODE_RAWCONN_H

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/ipc.h"
#include "tests/lib/daemon.h"

static _Alignas(8) char rc_buf[SHF_IPC_MAX_MSG];

/* Connect to path: the fd, or -errno. */
static inline int rc_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* Connect to path as uid (a forked child with setresuid connects and
 * hands the socket back): the fd, or -errno. */
static inline int rc_connect_as(const char *path, uid_t uid)
{
	int sp[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		close(sp[0]);
		int32_t err = 0;
		int fd = -1;
		if (setresgid(uid, uid, uid) < 0 || setgroups(0, NULL) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			err = -errno;
		else if ((fd = rc_connect(path)) < 0)
			err = fd;
		if (shf_ipc_send(sp[1], SHF_IPC_ERROR, 0, &err, sizeof(err), fd >= 0 ? &fd : NULL,
				 fd >= 0 ? 1 : 0) < 0)
			_exit(1);
		_exit(0);
	}
	close(sp[1]);
	int fd = -1;
	_Alignas(8) char m[64];
	struct pollfd pf = {sp[0], POLLIN, 0};
	CHECKF(poll(&pf, 1, 5000) == 1, "connect as uid %u: no answer", (unsigned)uid);
	/* a datagram: header, int32 err, maybe one fd */
	struct iovec iov = {m, sizeof(m)};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			    .msg_controllen = sizeof(u.b)};
	ssize_t n = recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC);
	CHECK(n >= (ssize_t)(sizeof(struct shf_ipc_hdr) + sizeof(int32_t)));
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	int32_t err;
	memcpy(&err, m + sizeof(struct shf_ipc_hdr), sizeof(err));
	close(sp[0]);
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	return err ? err : fd;
}

/* The next message within timeout_ms: its type; 0 on EOF (or reset);
 * -ETIMEDOUT.  An ERROR's code goes to *err_p and its text to stderr. */
static inline int rc_next(int fd, int timeout_ms, int *err_p)
{
	struct pollfd p = {fd, POLLIN, 0};
	int r = poll(&p, 1, timeout_ms);
	CHECK(r >= 0);
	if (r == 0)
		return -ETIMEDOUT;
	long n = shf_ipc_recv(fd, rc_buf, sizeof(rc_buf), NULL, NULL);
	if (n == 0 || n == -ECONNRESET)
		return 0;
	CHECKF(n > 0, "recv: %s", strerror((int)-n));
	struct shf_ipc_hdr h;
	memcpy(&h, rc_buf, sizeof(h));
	if (h.type == SHF_IPC_ERROR) {
		struct shf_ipc_error er;
		memcpy(&er, rc_buf + sizeof(h), sizeof(er));
		if (err_p)
			*err_p = er.err;
		fprintf(stderr, "  daemon: ERROR %d: %s\n", er.err,
			rc_buf + sizeof(h) + sizeof(er));
	}
	return h.type;
}

static inline int rc_hello(int fd, int timeout_ms, int *err_p)
{
	struct shf_ipc_hello h = {SHF_IPC_VERSION, (uint32_t)getpid()};
	int r = shf_ipc_send(fd, SHF_IPC_HELLO, 1, &h, sizeof(h), NULL, 0);
	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		return r;
	return rc_next(fd, timeout_ms, err_p);
}

/* CTL "ping" on a HELLO'd session: the reply's type (as rc_next). */
static inline int rc_ping(int fd, int timeout_ms, int *err_p)
{
	struct shf_ipc_ctl m;
	memset(&m, 0, sizeof(m));
	snprintf(m.cmd, sizeof(m.cmd), "ping");
	int r = shf_ipc_send(fd, SHF_IPC_CTL, 6, &m, sizeof(m), NULL, 0);
	if (r < 0)
		return r;
	return rc_next(fd, timeout_ms, err_p);
}

/* A fresh connection's HELLO and ping, answered within bound_ms each: the
 * milliseconds it took, or -1 (with the reason on stderr). */
static inline int64_t rc_ping_fresh(const char *path, int bound_ms)
{
	int64_t t0 = td_now_ms();
	int fd = rc_connect(path);
	if (fd < 0) {
		fprintf(stderr, "  connect: %s\n", strerror(-fd));
		return -1;
	}
	int t = rc_hello(fd, bound_ms, NULL);
	if (t == SHF_IPC_HELLO_OK)
		t = rc_ping(fd, bound_ms, NULL);
	close(fd);
	if (t != SHF_IPC_CTL_REPLY) {
		fprintf(stderr, "  ping: %s after %lld ms\n",
			t == -ETIMEDOUT ? "no answer" : "unexpected reply",
			(long long)(td_now_ms() - t0));
		return -1;
	}
	return td_now_ms() - t0;
}

/* The daemon must close fd within timeout_ms (ERRORs may come first; the
 * last one's code goes to *err_p).  The milliseconds it took, or -1. */
static inline int64_t rc_wait_closed(int fd, int timeout_ms, int *err_p)
{
	int64_t t0 = td_now_ms(), end = t0 + timeout_ms;
	for (;;) {
		int left = (int)(end - td_now_ms());
		int t = rc_next(fd, left > 0 ? left : 0, err_p);
		if (t == 0)
			return td_now_ms() - t0;
		if (t == -ETIMEDOUT)
			return -1;
	}
}

#endif
