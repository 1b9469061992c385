/* SPDX-License-Identifier: MIT */
/*
 * daemon/client.c - session I/O (one datagram at a time) and the deferred
 * cut-off: a session that must go is marked, told, and queued, never freed
 * in the middle of someone else's update (client.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/closer.h"
#include "daemon/log.h"
#include "daemon/sched.h"

static struct shd_ratelimit rl_fail = SHD_RATELIMIT_INIT(1000, 10);

static const char *const state_names[SHD_SESS_MAX] = {
	[SHD_SESS_HELLO] = "hello",   [SHD_SESS_OPEN] = "open",
	[SHD_SESS_WAITWORLD] = "waitworld", [SHD_SESS_ACTIVE] = "active",
	[SHD_SESS_DRAINING] = "draining",
};

const char *shd_session_state_name(enum shd_sess_state s)
{
	return (unsigned)s < SHD_SESS_MAX ? state_names[s] : "?";
}

int shd_client_send(struct shd_client *c, uint16_t type, uint32_t id, const void *body, size_t len)
{
	if (c->sock < 0)
		return -ENOTCONN;
	return shf_ipc_send(c->sock, type, id, body, len, NULL, 0);
}

static void send_error(struct shd_client *c, uint32_t id, int err, const char *text)
{
	struct {
		struct shf_ipc_error e;
		char text[512];
	} m = {{err, 0}, {0}};
	snprintf(m.text, sizeof(m.text), "%s", text);
	shd_client_send(c, SHF_IPC_ERROR, id, &m, sizeof(m.e) + strlen(m.text) + 1);
}

void shd_client_error(struct shd_client *c, uint32_t id, int err, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_error(c, id, err, text);
}

/*
 * The most fds one datagram can carry (the kernel's SCM_MAX_FD).  The
 * control buffer takes all of them: fds that do not fit would be released
 * by the kernel inside recvmsg(), on this thread, where a lingering socket
 * among them would block the loop.
 */
#define SCM_MAX_FDS 253

long shd_client_recv(struct shd_client *c, void *buf, size_t cap)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * SCM_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, cap};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			   .msg_controllen = sizeof(u.b)};
	ssize_t r;
	do
		r = recvmsg(c->sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	/* the protocol has no message that carries fds towards the daemon */
	unsigned nfds = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int f;
			memcpy(&f, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			shd_close_async(f);
			nfds++;
		}
	}
	if (nfds) {
		c->d->st.stray_fds += nfds;
		c->d->st.disc_proto++;
		shd_client_cutoff(c, -EPROTO, "sent %u file descriptor%s (the daemon takes none)",
				  nfds, nfds == 1 ? "" : "s");
		return -EBADF;
	}
	if (r == 0)
		return 0;
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	int e = shf_ipc_check(buf, (size_t)r);
	return e ? e : r;
}

void shd_client_close_sock(struct shd_client *c)
{
	shd_ev_free(c->sock_ev);
	c->sock_ev = NULL;
	if (c->sock >= 0) {
		/* the peer sees the end now; the close itself may wait (fds
		 * queued behind the last message read) and goes to the closer */
		shutdown(c->sock, SHUT_RDWR);
		shd_close_async(c->sock);
	}
	c->sock = -1;
}

void shd_client_reap_later(struct shd_client *c)
{
	if (c->doomed)
		return;
	c->doomed = true;
	shd_ev_disarm(c->world_timer);
	shd_ev_disarm(c->idle_timer);
	shd_list_add_tail(&c->d->doomed, &c->doom_link);
	shd_sched_pass(c->d);
}

void shd_client_cutoff(struct shd_client *c, int err, const char *fmt, ...)
{
	if (c->doomed)
		return;
	char why[400], text[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	shd_log_rl(&rl_fail, SHD_LOG_WARN, "client %llu (job %s rank %d pid %d uid %d) cut off: %s",
		   (unsigned long long)c->id, c->job ? c->job->name : "-", c->job ? c->rank : -1,
		   (int)c->pid, (int)c->uid, why);
	if (c->sock >= 0) {
		snprintf(text, sizeof(text), "disconnected by shuffled: %s", why);
		send_error(c, 0, err, text);
	}
	shd_client_close_sock(c);
	shd_client_reap_later(c);
}
