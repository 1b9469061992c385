/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-hello-refused.c - shufflectl's HELLO reports the daemon's
 * refusal even when the daemon hung up before the HELLO went out (the
 * send fails with EPIPE; the daemon's ERROR is still queued for us).
 *
 * The daemon's side is the other end of a socketpair: it queues an ERROR
 * (as a daemon refusing at max_clients does) and closes before shufflectl
 * sends, so the order is certain.  shufflectl's conn.c is linked in; its
 * messages go to stderr, captured in a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/shufflectl/shufflectl.h"
#include "proto/ipc.h"
#include "tests/lib/check.h"

/* conn_hello() on a connection whose daemon queued msg (type, id, body)
 * and hung up; its return, with what it printed in err[cap]. */
static int hello_after(uint16_t type, uint32_t id, const void *body, size_t blen, char *err,
		       size_t cap)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	if (type)
		CHECK(shf_ipc_send(sv[1], type, id, body, blen, NULL, 0) == 0);
	close(sv[1]);

	char path[] = "/tmp/ctl-hello-refused.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	CHECK(saved >= 0 && dup2(fd, STDERR_FILENO) >= 0);
	struct conn c = {.fd = sv[0], .path = "/run/test.sock", .deadline = INT64_MAX,
			 .next_id = 1};
	int r = conn_hello(&c);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fd, err, cap - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	close(fd);
	close(sv[0]);
	return r;
}

int main(void)
{
	char err[1024];
	struct {
		struct shf_ipc_error e;
		char t[64];
	} m = {{-EUSERS, 0}, "too many connections (max_clients 4)"};

	/* refused (id 0: before the daemon read anything), then hung up */
	int r = hello_after(SHF_IPC_ERROR, 0, &m, sizeof(m.e) + strlen(m.t) + 1, err, sizeof(err));
	CHECKF(r == -EUSERS, "conn_hello returned %d (%s); printed: %s", r, strerror(-r), err);
	CHECK_HAS(err, "refused the connection");
	CHECK_HAS(err, "too many connections (max_clients 4)");

	/* hung up without a word: still "closed the connection" */
	r = hello_after(0, 0, NULL, 0, err, sizeof(err));
	CHECKF(r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN, "returned %d; printed: %s", r,
	       err);
	CHECK_HAS(err, "closed the connection");

	/* an answer of the wrong kind: refused as such */
	struct shf_ipc_flush_done fd0 = {0};
	r = hello_after(SHF_IPC_FLUSH_DONE, 1, &fd0, sizeof(fd0), err, sizeof(err));
	CHECKF(r == -EPROTO, "returned %d; printed: %s", r, err);
	CHECK_HAS(err, "unexpected answer");
	return 0;
}
