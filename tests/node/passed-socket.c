/* SPDX-License-Identifier: MIT */
/*
 * tests/node/passed-socket.c - nothing a client sends may make the daemon
 * block (issue 15, item 5).
 *
 * A hostile client attaches a TCP socket to its HELLO and closes its own
 * copy, so that the daemon holds the last reference.  That socket has
 * unsent data (its peer, a listener here, never accepts nor reads) and
 * SO_LINGER {1, 30}: closing it the ordinary way blocks for 30 s.  Meanwhile
 * other connections must be answered: each ping within 1 s, for 3 s.  The
 * hostile client is cut off (the protocol takes no fds from clients) and
 * counted in disc_proto and stray_fds; a second one sends its socket after
 * a malformed message, so that it is still queued when the daemon closes
 * the connection.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include "tests/node/rawconn.h"

#define LINGER_S 30
#define BOUND_MS 1000

/* A connected TCP socket with unsent data and SO_LINGER {1, LINGER_S};
 * *lst_p gets the listener that never accepts (kept open by the caller). */
static int lingering_socket(int *lst_p)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	int small = 4096;
	CHECK(setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(l, 4) == 0);
	CHECK(getsockname(l, (struct sockaddr *)&sa, &sl) == 0);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	/* far more queued than the receiver (rcvbuf locked small) can ever
	 * take, so the FIN never goes out */
	int big = 256 * 1024;
	CHECK(setsockopt(s, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) == 0);
	CHECK(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(fcntl(s, F_SETFL, O_NONBLOCK) == 0);
	static char junk[65536];
	long sent = 0;
	for (int64_t end = td_now_ms() + 5000;; ) {
		ssize_t n = send(s, junk, sizeof(junk), MSG_NOSIGNAL);
		if (n > 0) {
			sent += n;
			continue;
		}
		CHECKF(n < 0 && errno == EAGAIN, "send: %s", strerror(errno));
		/* the window may open a little more once; be sure it is shut */
		struct pollfd p = {s, POLLOUT, 0};
		if (poll(&p, 1, 500) == 0)
			break;
		CHECK(td_now_ms() < end);
	}
	int unsent = 0;
	CHECK(ioctl(s, SIOCOUTQ, &unsent) == 0);
	CHECKF(unsent > 64 * 1024, "only %d bytes unsent (sent %ld)", unsent, sent);
	struct linger lg = {1, LINGER_S};
	CHECK(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	fprintf(stderr, "passed-socket: TCP socket with %d unsent bytes, SO_LINGER {1, %d}\n",
		unsent, LINGER_S);
	*lst_p = l;
	return s;
}

/* Pings on fresh connections for ms milliseconds: each within BOUND_MS. */
static void pings_for(const char *sock, int ms, const char *when)
{
	int64_t worst = 0, n = 0;
	for (int64_t end = td_now_ms() + ms; td_now_ms() < end; n++) {
		int64_t t = rc_ping_fresh(sock, BOUND_MS);
		CHECKF(t >= 0, "%s: another client's ping was not answered within %d ms", when,
		       BOUND_MS);
		if (t > worst)
			worst = t;
		td_sleep_ms(20);
	}
	fprintf(stderr, "passed-socket: %s: %lld pings, slowest %lld ms\n", when, (long long)n,
		(long long)worst);
}

int main(void)
{
	struct td_env *e = td_init("passed-socket", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	const char *sock = e->d->sock;
	int fd_base = td_fd_baseline(e->d);

	/* 1: the socket rides on a HELLO */
	int lst, s = lingering_socket(&lst);
	int fd = rc_connect(sock);
	CHECK(fd >= 0);
	struct shf_ipc_hello hh = {SHF_IPC_VERSION, (uint32_t)getpid()};
	CHECK(shf_ipc_send(fd, SHF_IPC_HELLO, 1, &hh, sizeof(hh), &s, 1) == 0);
	close(s); /* the daemon holds the last reference now */
	pings_for(sock, 3000, "socket passed with HELLO");
	int err = 0;
	int64_t t = rc_wait_closed(fd, 5000, &err);
	CHECKF(t >= 0 && err == -EPROTO,
	       "the client that passed a socket was not cut off with -EPROTO (err %d)", err);
	close(fd);

	/* 2: queued behind a malformed message, still unread when the daemon
	 * closes the connection */
	int lst2, s2 = lingering_socket(&lst2);
	fd = rc_connect(sock);
	CHECK(fd >= 0);
	static const char junk[40] = "not a control message at all............";
	CHECK(send(fd, junk, sizeof(junk), MSG_NOSIGNAL) == (ssize_t)sizeof(junk));
	CHECK(shf_ipc_send(fd, SHF_IPC_HELLO, 1, &hh, sizeof(hh), &s2, 1) == 0);
	close(s2);
	pings_for(sock, 3000, "socket queued behind a bad message");
	t = rc_wait_closed(fd, 5000, NULL);
	CHECKF(t >= 0, "the client that sent garbage was not cut off");
	close(fd);

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	CHECKF(td_num(st, "daemon.disc_proto") == 2, "disc_proto %lld, expected 2",
	       td_num(st, "daemon.disc_proto"));
	CHECKF(td_num(st, "daemon.stray_fds") >= 1, "stray_fds %lld, expected >= 1",
	       td_num(st, "daemon.stray_fds"));
	json_decref(st);
	CHECK(td_log_contains(e->d, "file descriptor"));
	/* both sockets are eventually closed: no fd stays in the daemon */
	int fds = td_fd_settle(e->d, fd_base, 5000);
	CHECKF(fds == fd_base, "daemon holds %d fds, %d before", fds, fd_base);
	td_stop(e->d);
	close(lst);
	close(lst2);
	return 0;
}
