/* SPDX-License-Identifier: MIT */
/*
 * daemon/closer.c - the closer thread (closer.h).  A mutex-protected
 * queue of fds and one detached thread that closes them in order.  A close
 * that blocks holds up later closes of this queue, never the loop: the fds
 * stay open meanwhile (they count against RLIMIT_NOFILE, and the accept
 * path copes with running out, session.c).
 */
#include "daemon/closer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/log.h"

struct close_item {
	struct close_item *next;
	int fd;
};

/* The queue: head/tail under mu; the loop thread appends, the closer takes. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct close_item *head, *tail;
static unsigned long pending; /* queued or being closed; under mu */
static bool started;           /* loop thread only */

static void *closer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!head)
			pthread_cond_wait(&cond, &mu);
		struct close_item *it = head;
		head = it->next;
		if (!head)
			tail = NULL;
		pthread_mutex_unlock(&mu);
		close(it->fd); /* may block: that is what this thread is for */
		free(it);
		pthread_mutex_lock(&mu);
		pending--;
	}
	return NULL;
}

static bool start(void)
{
	if (started)
		return true;
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	if (pthread_attr_init(&a))
		return false;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	/* every signal stays with the loop thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&t, &a, closer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (r) {
		shd_err("cannot start the closer thread: %s; closing client fds inline",
			strerror(r));
		return false;
	}
	started = true;
	return true;
}

#define SCM_MAX_FDS 253 /* the kernel's SCM_MAX_FD: fds per datagram */
#define DRAIN_DEPTH 2   /* UNIX sockets inside UNIX sockets drained this deep */
#define DRAIN_MSGS 64   /* datagrams read per socket at most */

static void close_async(int fd, int depth);

/*
 * Take the fds still queued on a UNIX socket before it is closed: the
 * close would release them on this thread.  Non-blocking and bounded; a
 * queue deeper than that is left to the closer thread.
 */
static void drain(int fd, int depth)
{
	int domain = 0;
	socklen_t dl = sizeof(domain);
	if (depth >= DRAIN_DEPTH || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0 ||
	    domain != AF_UNIX)
		return;
	for (int i = 0; i < DRAIN_MSGS; i++) {
		char data[512];
		union {
			char b[CMSG_SPACE(sizeof(int) * SCM_MAX_FDS)];
			struct cmsghdr align;
		} u;
		struct iovec iov = {data, sizeof(data)};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
				   .msg_controllen = sizeof(u.b)};
		ssize_t r = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
			if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
				continue;
			size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t k = 0; k < n; k++) {
				int f;
				memcpy(&f, CMSG_DATA(h) + k * sizeof(int), sizeof(int));
				close_async(f, depth + 1);
			}
		}
	}
}

void shd_close_async(int fd)
{
	close_async(fd, 0);
}

static void close_async(int fd, int depth)
{
	if (fd < 0)
		return;
	/* a socket's close need not wait for its unsent data; ENOTSOCK for
	 * anything else, which is fine */
	struct linger lg = {0, 0};
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	drain(fd, depth);
	struct close_item *it = malloc(sizeof(*it));
	if (!it || !start()) {
		free(it);
		close(fd);
		return;
	}
	it->fd = fd;
	it->next = NULL;
	pthread_mutex_lock(&mu);
	if (tail)
		tail->next = it;
	else
		head = it;
	tail = it;
	pending++;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&mu);
}

unsigned long shd_close_pending(void)
{
	pthread_mutex_lock(&mu);
	unsigned long n = pending;
	pthread_mutex_unlock(&mu);
	return n;
}
