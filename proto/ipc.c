/* SPDX-License-Identifier: MIT */
/* proto/ipc.c - control message framing and validation. */
#include "proto/ipc.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct shf_ipc_hdr) == 16, "ipc header is 16 bytes");
_Static_assert(sizeof(struct shf_ipc_register) == 88, "register body");
_Static_assert(offsetof(struct shf_ipc_register, flags) == SHF_IPC_REGISTER_V0_BYTES,
	       "an older client's register body is the prefix before flags");
_Static_assert(sizeof(struct shf_ipc_flush_done) == 32, "flush_done body");
_Static_assert(sizeof(struct shf_mark) == 16, "mark record");
_Static_assert(sizeof(struct shf_ipc_node_info) == 16, "node_info body");
_Static_assert(sizeof(struct shf_ipc_node_info_ok) == 24, "node_info_ok body");
_Static_assert(sizeof(struct shf_ipc_hdr) + sizeof(struct shf_ipc_node_info_ok) +
		       SHF_IPC_NODE_INFO_MAX * 4 <= SHF_IPC_MAX_MSG, "node_info_ok fits");

/* Body size a type must have: exact for fixed types, minimum for types
 * with a trailing variable part.  -1 for unknown types. */
static long body_min(uint16_t type)
{
	switch (type) {
	case SHF_IPC_HELLO: return sizeof(struct shf_ipc_hello);
	case SHF_IPC_HELLO_OK: return sizeof(struct shf_ipc_hello_ok);
	case SHF_IPC_REGISTER: return SHF_IPC_REGISTER_V0_BYTES; /* or exactly the struct */
	case SHF_IPC_REGISTER_OK: return sizeof(struct shf_ipc_register_ok);
	case SHF_IPC_READY: return sizeof(struct shf_ipc_ready);
	case SHF_IPC_ERROR: return sizeof(struct shf_ipc_error) + 1;
	case SHF_IPC_FLUSH_DONE: return sizeof(struct shf_ipc_flush_done);
	case SHF_IPC_EPOCH: return sizeof(struct shf_ipc_epoch);
	case SHF_IPC_EPOCH_DONE: return sizeof(struct shf_ipc_epoch_done);
	case SHF_IPC_BYE: return 0;
	case SHF_IPC_RUNS: return 0;
	case SHF_IPC_PACKED: return 0;
	case SHF_IPC_CTL: return sizeof(struct shf_ipc_ctl);
	case SHF_IPC_CTL_REPLY: return sizeof(struct shf_ipc_ctl_reply);
	case SHF_IPC_NODE_INFO: return sizeof(struct shf_ipc_node_info);
	case SHF_IPC_NODE_INFO_OK: return sizeof(struct shf_ipc_node_info_ok);
	case SHF_IPC_EPOCH_WHO: return sizeof(struct shf_ipc_epoch_who);
	case SHF_IPC_EPOCH_WHO_OK: return sizeof(struct shf_ipc_epoch_who_ok) + 1;
	default: return -1;
	}
}

static int body_is_fixed(uint16_t type)
{
	return type != SHF_IPC_ERROR && type != SHF_IPC_CTL_REPLY && type != SHF_IPC_CTL &&
	       type != SHF_IPC_NODE_INFO_OK && type != SHF_IPC_REGISTER &&
	       type != SHF_IPC_EPOCH_WHO_OK;
}

int shf_ipc_check(const void *msg, size_t n)
{
	struct shf_ipc_hdr h;
	if (n < sizeof(h) || n > SHF_IPC_MAX_MSG)
		return -EBADMSG;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != SHF_IPC_MAGIC)
		return -EPROTO;
	if (h.len != n || h.flags != 0)
		return -EBADMSG;
	long min = body_min(h.type);
	if (min < 0)
		return -EBADMSG;
	size_t body = n - sizeof(h);
	if (body < (size_t)min || (body_is_fixed(h.type) && body != (size_t)min))
		return -EBADMSG;
	if (h.type == SHF_IPC_REGISTER && body != SHF_IPC_REGISTER_V0_BYTES &&
	    body != sizeof(struct shf_ipc_register))
		return -EBADMSG; /* an older client's body, or the whole struct */
	if ((h.type == SHF_IPC_ERROR || h.type == SHF_IPC_EPOCH_WHO_OK) &&
	    ((const char *)msg)[n - 1] != '\0')
		return -EBADMSG; /* text must be terminated inside the datagram */
	if (h.type == SHF_IPC_CTL && body > (size_t)min &&
	    (body - (size_t)min > SHF_CTL_ARGS_MAX || ((const char *)msg)[n - 1] != '\0'))
		return -EBADMSG; /* arguments: bounded, terminated inside the datagram */
	if (h.type == SHF_IPC_NODE_INFO_OK) {
		struct shf_ipc_node_info_ok ok;
		memcpy(&ok, (const char *)msg + sizeof(h), sizeof(ok));
		if (ok.count > SHF_IPC_NODE_INFO_MAX ||
		    body != sizeof(ok) + (size_t)ok.count * sizeof(int32_t))
			return -EBADMSG;
	}
	return 0;
}

int shf_ipc_job_check(const char job[SHF_JOB_MAX])
{
	size_t n = strnlen(job, SHF_JOB_MAX);
	if (n == 0 || n == SHF_JOB_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = job[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._:@+-", c)))
			return -EINVAL;
	}
	return 0;
}

int shf_ipc_send(int fd, uint16_t type, uint32_t id, const void *body, size_t blen,
		 const int *fds, unsigned nfds)
{
	struct shf_ipc_hdr h = {SHF_IPC_MAGIC, type, 0, (uint32_t)(sizeof(h) + blen), id};
	if (sizeof(h) + blen > SHF_IPC_MAX_MSG || nfds > SHF_IPC_MAX_FDS)
		return -EMSGSIZE;
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)body, blen}};
	union {
		char buf[CMSG_SPACE(sizeof(int) * SHF_IPC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = blen ? 2 : 1};
	if (nfds) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	for (;;) {
		ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (r >= 0)
			return r == (ssize_t)h.len ? 0 : -EMSGSIZE;
		if (errno != EINTR)
			return -errno;
	}
}

long shf_ipc_recv(int fd, void *buf, size_t cap, int *fds, unsigned *nfds)
{
	unsigned want = nfds ? *nfds : 0;
	union {
		char buf[CMSG_SPACE(sizeof(int) * (SHF_IPC_MAX_FDS + 4))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, cap};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	ssize_t r;
	do
		r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (nfds)
		*nfds = 0;
	if (r < 0)
		return -errno;
	/* collect fds first so none leaks whatever the verdict */
	unsigned got = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < want)
				fds[got++] = f;
			else
				close(f);
		}
	}
	if (r == 0)
		goto fail_eof;
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		r = -EMSGSIZE;
		goto fail;
	}
	int e = shf_ipc_check(buf, (size_t)r);
	if (e) {
		r = e;
		goto fail;
	}
	if (nfds)
		*nfds = got;
	return r;
fail_eof:
fail:
	for (unsigned i = 0; i < got; i++)
		close(fds[i]);
	return r;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One datagram into buf within deadline (monotonic ms; -1: none).  Its
 * size, or -ENOTCONN (EOF), -ETIMEDOUT, or the receive's errno.  A
 * connection reset is read past once: the peer's last words may follow
 * (a daemon that hangs up on us with our HELLO unread). */
static long recv_until(int fd, void *buf, size_t cap, int64_t deadline)
{
	bool reset = false;
	for (;;) {
		long n = shf_ipc_recv(fd, buf, cap, NULL, NULL);
		if (n > 0)
			return n;
		if (n == 0)
			return -ENOTCONN;
		if (n == -ECONNRESET && !reset) {
			reset = true;
			continue;
		}
		if (n == -ECONNRESET)
			return -ENOTCONN;
		if (n != -EAGAIN && n != -EINTR)
			return n;
		int64_t left = deadline < 0 ? -1 : deadline - mono_ms();
		if (deadline >= 0 && left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {fd, POLLIN, 0};
		int r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

long shf_ipc_hello(int fd, uint32_t id, int timeout_ms, void *buf, size_t cap,
		   enum shf_ipc_hello_step *step_p)
{
	struct shf_ipc_hello m = {SHF_IPC_VERSION, (uint32_t)getpid()};
	int r = shf_ipc_send(fd, SHF_IPC_HELLO, id, &m, sizeof(m), NULL, 0);
	if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
		*step_p = SHF_IPC_HELLO_SEND;
		return r;
	}
	/* a failed send: only what the daemon said before it hung up */
	int64_t deadline = r < 0 ? mono_ms() : timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	long n = recv_until(fd, buf, cap, deadline);
	if (n < 0) {
		*step_p = r < 0 ? SHF_IPC_HELLO_SEND : SHF_IPC_HELLO_WAIT;
		return r < 0 ? r : n;
	}
	struct shf_ipc_hdr h;
	memcpy(&h, buf, sizeof(h));
	if (h.type == SHF_IPC_ERROR && (h.id == id || h.id == 0))
		return n;
	if (h.type != SHF_IPC_HELLO_OK || h.id != id) {
		*step_p = SHF_IPC_HELLO_ANSWER;
		return -EPROTO;
	}
	return n;
}
