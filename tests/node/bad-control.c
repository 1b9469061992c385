/* SPDX-License-Identifier: MIT */
/*
 * tests/node/bad-control.c - malformed control messages.
 *
 * Each case opens its own connection to the daemon's control socket and
 * sends something wrong: garbage, short or empty datagrams, a bad magic,
 * inconsistent lengths, wrong body sizes, flags, unknown types, messages
 * out of order, oversized datagrams, stray file descriptors, a HELLO of
 * another protocol version.  Required: the daemon closes that connection
 * (after ERROR(-EPROTO) for the version), counts protocol violations in
 * disc_proto, refuses bad REGISTER arguments with -EINVAL while keeping
 * the session usable, leaks no fd, and keeps serving a job that runs
 * traffic at the same time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/lib/daemon.h"
#include "proto/ipc.h"

static struct td_env *e;
static _Alignas(8) char buf[SHF_IPC_MAX_MSG];

static int conn(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	CHECK(snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->d->sock) <
	      (int)sizeof(sa.sun_path));
	CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s",
	       strerror(errno));
	return fd;
}

static void send_raw(int fd, const void *p, size_t n)
{
	ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
	CHECKF(r == (ssize_t)n, "send %zu bytes: %s", n, r < 0 ? strerror(errno) : "short");
}

/* A header with explicit fields, then `body` bytes of zeros. */
static void send_hdr(int fd, uint32_t magic, uint16_t type, uint16_t flags, uint32_t len_field,
		     size_t body)
{
	static _Alignas(8) char m[8192];
	struct shf_ipc_hdr h = {magic, type, flags, len_field, 1};
	CHECK(sizeof(h) + body <= sizeof(m));
	memset(m, 0, sizeof(h) + body);
	memcpy(m, &h, sizeof(h));
	send_raw(fd, m, sizeof(h) + body);
}

static void hello(int fd, uint32_t version)
{
	struct shf_ipc_hello h = {version, (uint32_t)getpid()};
	CHECK(shf_ipc_send(fd, SHF_IPC_HELLO, 1, &h, sizeof(h), NULL, 0) == 0);
}

/* Next message within 5 s: type, 0 on EOF; err_p gets an ERROR's code. */
static int next(int fd, int *err_p)
{
	struct pollfd p = {fd, POLLIN, 0};
	int r = poll(&p, 1, 5000);
	CHECKF(r == 1, "no answer and no close within 5 s");
	long n = shf_ipc_recv(fd, buf, sizeof(buf), NULL, NULL);
	if (n == 0 || n == -ECONNRESET)
		return 0;
	CHECKF(n > 0, "recv: %s", strerror((int)-n));
	struct shf_ipc_hdr h;
	memcpy(&h, buf, sizeof(h));
	if (h.type == SHF_IPC_ERROR && err_p) {
		struct shf_ipc_error er;
		memcpy(&er, buf + sizeof(h), sizeof(er));
		*err_p = er.err;
		fprintf(stderr, "bad-control:   ERROR %d: %s\n", er.err,
			buf + sizeof(h) + sizeof(er));
	}
	return h.type;
}

/* The daemon must close fd (an ERROR may come first). */
static void expect_closed(int fd, const char *what, int want_err)
{
	int err = 0, t;
	while ((t = next(fd, &err)) != 0)
		CHECKF(t == SHF_IPC_ERROR, "%s: unexpected message type %d", what, t);
	if (want_err)
		CHECKF(err == want_err, "%s: error %d, expected %d", what, err, want_err);
	close(fd);
	fprintf(stderr, "bad-control: %s: closed by the daemon\n", what);
}

static void expect_hello_ok(int fd)
{
	hello(fd, SHF_IPC_VERSION);
	CHECK(next(fd, NULL) == SHF_IPC_HELLO_OK);
}

/* A REGISTER that must be refused with -EINVAL, session kept. */
static void bad_register(int fd, const char *job, int32_t rank, int32_t world, uint32_t ring,
			 int32_t tmo, const char *what)
{
	struct shf_ipc_register m;
	memset(&m, 0, sizeof(m));
	memcpy(m.job, job, strnlen(job, sizeof(m.job)));
	m.rank = rank;
	m.world = world;
	m.ring_bytes = ring;
	m.timeout_ms = tmo;
	CHECK(shf_ipc_send(fd, SHF_IPC_REGISTER, 5, &m, sizeof(m), NULL, 0) == 0);
	int err = 0;
	int t = next(fd, &err);
	CHECKF(t == SHF_IPC_ERROR && err == -EINVAL, "%s: type %d err %d, expected -EINVAL", what,
	       t, err);
	fprintf(stderr, "bad-control: %s: refused with -EINVAL\n", what);
}

static void ping(int fd)
{
	struct shf_ipc_ctl m;
	memset(&m, 0, sizeof(m));
	snprintf(m.cmd, sizeof(m.cmd), "ping");
	CHECK(shf_ipc_send(fd, SHF_IPC_CTL, 6, &m, sizeof(m), NULL, 0) == 0);
	CHECK(next(fd, NULL) == SHF_IPC_CTL_REPLY);
}

int main(void)
{
	e = td_init("bad-control", 50, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	int fd_base = td_fd_baseline(e->d);

	/* honest traffic all along */
	const char *args[] = {"traffic", "n=3000", "rounds=3", NULL};
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		pids[r] = td_spawn_client("honest", r, 2, args, NULL);

	int n_proto = 0, fd;
	uint8_t junk[600];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);

	fd = conn();
	send_raw(fd, junk, 100);
	expect_closed(fd, "100 bytes of garbage", 0);
	n_proto++;

	fd = conn();
	send_raw(fd, junk, 5);
	expect_closed(fd, "5-byte datagram", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, 0xdeadbeef, SHF_IPC_HELLO, 0, 24, 8);
	expect_closed(fd, "bad magic", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_HELLO, 0, 100, 8);
	expect_closed(fd, "length field disagrees with the datagram", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_HELLO, 0, 28, 12);
	expect_closed(fd, "HELLO body of 12 bytes", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_HELLO, 0, 20, 4);
	expect_closed(fd, "HELLO body of 4 bytes", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_HELLO, 1, 24, 8);
	expect_closed(fd, "flags set", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, 77, 0, 16, 0);
	expect_closed(fd, "unknown type 77", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_REGISTER, 0, 16 + 80, 80);
	expect_closed(fd, "REGISTER before HELLO", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_HELLO_OK, 0, 16 + 16, 16);
	expect_closed(fd, "a daemon-to-client message (HELLO_OK) from a client", 0);
	n_proto++;

	fd = conn();
	send_hdr(fd, SHF_IPC_MAGIC, SHF_IPC_CTL, 0, 16 + 4000, 4000);
	expect_closed(fd, "4016-byte datagram", 0);
	n_proto++;

	fd = conn();
	expect_hello_ok(fd);
	hello(fd, SHF_IPC_VERSION);
	expect_closed(fd, "second HELLO", 0);
	n_proto++;

	fd = conn();
	expect_hello_ok(fd);
	send_raw(fd, junk, 64);
	expect_closed(fd, "garbage after HELLO", 0);
	n_proto++;

	/* a version we do not speak: refused with -EPROTO, not a violation */
	fd = conn();
	hello(fd, SHF_IPC_VERSION + 41);
	expect_closed(fd, "HELLO of version 42", -EPROTO);

	/* an empty datagram reads as end of file: the session just ends */
	fd = conn();
	send_raw(fd, junk, 0);
	expect_closed(fd, "empty datagram", 0);

	/* stray fds attached to a HELLO: the protocol takes none from clients;
	 * cut off, and none stays open in the daemon */
	fd = conn();
	int devnull[3];
	for (int i = 0; i < 3; i++)
		CHECK((devnull[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
	struct shf_ipc_hello hh = {SHF_IPC_VERSION, 1};
	CHECK(shf_ipc_send(fd, SHF_IPC_HELLO, 1, &hh, sizeof(hh), devnull, 3) == 0);
	for (int i = 0; i < 3; i++)
		close(devnull[i]);
	expect_closed(fd, "HELLO with 3 fds attached", -EPROTO);
	n_proto++;

	/* bad REGISTER arguments: -EINVAL, the session stays usable */
	fd = conn();
	expect_hello_ok(fd);
	bad_register(fd, "bad name!", 0, 2, 0, 1000, "job name with a blank");
	bad_register(fd, "", 0, 2, 0, 1000, "empty job name");
	bad_register(fd, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 0, 2, 0,
		     1000, "job name without NUL");
	bad_register(fd, "ok", 0, 0, 0, 1000, "world 0");
	bad_register(fd, "ok", 2, 2, 0, 1000, "rank 2 of world 2");
	bad_register(fd, "ok", -1, 2, 0, 1000, "rank -1");
	bad_register(fd, "ok", 0, (1 << 24) + 1, 0, 1000, "world above the maximum");
	bad_register(fd, "ok", 0, 2, 3000, 1000, "ring_bytes 3000");
	bad_register(fd, "ok", 0, 2, 1u << 31, 1000, "ring_bytes 2 GiB");
	bad_register(fd, "ok", 0, 2, 0, -5, "timeout -5");
	/* an unknown command and a command without its NUL */
	struct shf_ipc_ctl m;
	memset(&m, 'A', sizeof(m.cmd));
	m.flags = m.timeout_ms = 0;
	CHECK(shf_ipc_send(fd, SHF_IPC_CTL, 7, &m, sizeof(m), NULL, 0) == 0);
	int err = 0;
	CHECK(next(fd, &err) == SHF_IPC_ERROR && err == -EINVAL);
	ping(fd);
	/* an unknown flag, and --all (SHF_CTL_ALL) of a command that is not for it */
	memset(&m, 0, sizeof(m));
	snprintf(m.cmd, sizeof(m.cmd), "status");
	m.flags = 2;
	CHECK(shf_ipc_send(fd, SHF_IPC_CTL, 8, &m, sizeof(m), NULL, 0) == 0);
	CHECK(next(fd, &err) == SHF_IPC_ERROR && err == -EINVAL);
	snprintf(m.cmd, sizeof(m.cmd), "config");
	m.flags = SHF_CTL_ALL;
	CHECK(shf_ipc_send(fd, SHF_IPC_CTL, 9, &m, sizeof(m), NULL, 0) == 0);
	CHECK(next(fd, &err) == SHF_IPC_ERROR && err == -EINVAL);
	ping(fd);
	close(fd);

	/* connections that say nothing and vanish */
	for (int i = 0; i < 100; i++)
		close(conn());

	CHECKF(td_wait_all(pids, 2, 40000, "rank") == 0, "the honest job failed");

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	long long dp = td_num(st, "daemon.disc_proto");
	CHECKF(dp == n_proto, "disc_proto %lld, expected %d", dp, n_proto);
	CHECKF(td_num(st, "daemon.refused") == 10, "refused %lld, expected 10",
	       td_num(st, "daemon.refused"));
	CHECK(td_num(st, "clients_total.msgs_out") == 2 * 3000 * 3);
	json_decref(st);

	int fds = td_fd_settle(e->d, fd_base, 5000);
	CHECKF(fds == fd_base, "daemon holds %d fds, %d before", fds, fd_base);
	td_stop(e->d);
	return 0;
}
