/* SPDX-License-Identifier: MIT */
/*
 * tests/net/net-common.h - helpers shared by the tests in tests/net (header
 * only; every function is static).
 */
#ifndef SHF_TESTS_NET_COMMON_H
#define SHF_TESTS_NET_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/net/fabric.h"
#include "daemon/rdv/rdv.h"
#include "proto/wire.h"
#include "tests/lib/check.h"

static const char *t_name = "test";

/* T_ASSERT(cond, fmt, ...), T_FAIL(fmt, ...), T_SKIP(fmt, ...): tests/lib/check.h */
#define T_ASSERT CHECKF
#define T_FAIL FAIL
#define T_SKIP SKIP

static inline int64_t t_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void t_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Hard bound on the whole process: SIGALRM kills it (default action). */
static inline void t_timeout(unsigned sec)
{
	signal(SIGALRM, SIG_DFL);
	alarm(sec);
}

/* Write all / read all on a pipe or socket; the tests' side channel. */
static inline void t_write(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		T_ASSERT(w > 0, "write: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

static inline void t_read(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		T_ASSERT(r > 0, "read: %s", r == 0 ? "EOF" : strerror(errno));
		p += r;
		n -= (size_t)r;
	}
}

/* A free TCP port on addr right now (bind to 0, read it, close).  The tests
 * that need a port decided before anyone listens use it; a collision with
 * another process in between is possible but unlikely. */
static inline unsigned t_free_port(const char *addr)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	T_ASSERT(s >= 0, "socket");
	struct sockaddr_in sin = {.sin_family = AF_INET};
	T_ASSERT(inet_pton(AF_INET, addr, &sin.sin_addr) == 1, "inet_pton %s", addr);
	T_ASSERT(bind(s, (struct sockaddr *)&sin, sizeof(sin)) == 0, "bind: %s", strerror(errno));
	socklen_t sl = sizeof(sin);
	T_ASSERT(getsockname(s, (struct sockaddr *)&sin, &sl) == 0, "getsockname");
	close(s);
	return ntohs(sin.sin_port);
}

/* Open an endpoint bound to addr:port ("0": ephemeral); skip the test when
 * no provider fits (a machine without tcp). */
static inline struct shd_fabric *t_fabric_open(const char *addr, const char *port,
					       struct shd_fabric_opts *o)
{
	struct shd_fabric_opts d = {0};
	char err[256];
	struct shd_fabric *f = NULL;
	if (!o)
		o = &d;
	o->node = addr;
	o->service = port;
	int r = shd_fabric_open(o, &f, err, sizeof(err));
	if (r == -ENODATA)
		T_SKIP("no libfabric provider: %s", err);
	T_ASSERT(r == 0, "shd_fabric_open(%s:%s): %d %s", addr, port, r, err);
	return f;
}

/* Progress and sleep until done(arg) or the deadline: the shape of the
 * daemon's loop (trywait before sleeping on the fd, a short timer while
 * sends are queued). */
static inline bool t_progress_until(struct shd_fabric *f, const struct shd_fabric_cb *cb,
				    void *arg, bool (*done)(void *), int timeout_ms)
{
	int64_t deadline = t_now_ms() + timeout_ms;
	for (;;) {
		int n = shd_fabric_progress(f, cb, arg);
		T_ASSERT(n >= 0, "shd_fabric_progress: %d", n);
		if (done(arg))
			return true;
		if (t_now_ms() >= deadline)
			return false;
		if (n > 0)
			continue;
		int wait = shd_fabric_has_pending(f) ? 5 : 1000;
		if (!shd_fabric_trywait(f))
			continue;
		struct pollfd pfd = {.fd = shd_fabric_wait_fd(f), .events = POLLIN};
		poll(&pfd, 1, wait);
	}
}

/* Out-of-band barrier through a directory: create dir/done.<me>, wait for
 * all n.  Closing an endpoint while peers still need its data can reset
 * their connections, so every multi-process test ends with one. */
static inline void t_dir_barrier(const char *dir, const char *tag, int me, int n, int timeout_ms)
{
	char fn[4096];
	snprintf(fn, sizeof(fn), "%s/%s.%d", dir, tag, me);
	FILE *fp = fopen(fn, "w");
	T_ASSERT(fp, "create %s: %s", fn, strerror(errno));
	fclose(fp);
	int64_t deadline = t_now_ms() + timeout_ms;
	for (int i = 0; i < n; i++) {
		snprintf(fn, sizeof(fn), "%s/%s.%d", dir, tag, i);
		struct stat st;
		while (stat(fn, &st) != 0) {
			T_ASSERT(t_now_ms() < deadline, "barrier %s: %s missing", tag, fn);
			t_sleep_ms(5);
		}
	}
}

/* Wait for a child; its exit status 0 or fail. */
static inline void t_wait_child(pid_t pid, const char *what)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		T_ASSERT(errno == EINTR, "waitpid: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		T_SKIP("%s skipped", what);
	T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x", what, st);
}

/*
 * Mesh check after a rendezvous: insert every other node from the result
 * (raw address, or host:port for static), send each one a wire BATCH with
 * one record "mesh S->D", receive one from each, and validate them with
 * shf_wire_check (which enforces dst == me) and the record iterator.  If
 * the nodes' tables disagree, a message lands at the wrong node and fails.
 */
struct t_mesh {
	struct shd_fabric *f;
	uint32_t me, n;
	uint32_t got, sent_done;
	uint8_t seen[64];
	uint8_t bufs[64][128];
};

static inline int t_mesh_recv(void *arg, uint32_t node, void *buf, size_t len)
{
	struct t_mesh *m = arg;
	struct shf_wire_hdr h;
	int r = shf_wire_check(buf, len, m->n, m->me, &h);
	T_ASSERT(r == 0, "node %u: wire check of a %zu-byte message: %d", m->me, len, r);
	T_ASSERT(h.kind == SHF_WIRE_BATCH && h.u.batch.count == 1, "kind %u", h.kind);
	T_ASSERT(node == SHD_FABRIC_NODE_UNKNOWN || node == h.src_node,
		 "fabric says node %u, wire says %u", node, h.src_node);
	struct shf_wire_iter it;
	struct shf_wire_rec rec;
	shf_wire_iter_init(&it, buf, &h, 1024);
	T_ASSERT(shf_wire_iter_next(&it, &rec) == 1, "record");
	char want[64];
	int wl = snprintf(want, sizeof(want), "mesh %u->%u", h.src_node, m->me);
	T_ASSERT(rec.len == (uint32_t)wl && !memcmp(rec.data, want, (size_t)wl) &&
			 rec.src_rank == (int32_t)h.src_node && rec.dst_rank == (int32_t)m->me,
		 "record content");
	T_ASSERT(shf_wire_iter_next(&it, &rec) == 0, "one record only");
	T_ASSERT(!m->seen[h.src_node], "two messages from node %u", h.src_node);
	m->seen[h.src_node] = 1;
	m->got++;
	return 0;
}

static inline void t_mesh_send_done(void *arg, void *ctx, int status)
{
	struct t_mesh *m = arg;
	T_ASSERT(status == 0, "mesh send to %lu: %d", (unsigned long)(uintptr_t)ctx, status);
	m->sent_done++;
}

static inline void t_mesh_error(void *arg, uint32_t node, int err, const char *msg)
{
	T_FAIL("fabric error (node %u): %d %s", node, err, msg);
}

static inline bool t_mesh_done(void *arg)
{
	struct t_mesh *m = arg;
	return m->got == m->n - 1 && m->sent_done == m->n - 1;
}

static inline void t_mesh_run(struct shd_fabric *f, const struct shd_rdv_result *res,
			      const char *barrier_dir)
{
	static struct t_mesh m;
	static const struct shd_fabric_cb cb = {t_mesh_recv, t_mesh_send_done, t_mesh_error};
	memset(&m, 0, sizeof(m));
	m.f = f;
	m.me = res->my_node;
	m.n = res->n_nodes;
	T_ASSERT(m.n <= 64 && m.me < m.n, "mesh of %u nodes", m.n);
	for (uint32_t i = 0; i < m.n; i++) {
		if (i == m.me)
			continue;
		const struct shd_rdv_node *nd = &res->nodes[i];
		int r = res->kind == SHD_RDV_STATIC
				? shd_fabric_insert_svc(f, nd->host, nd->port, i)
				: shd_fabric_insert(f, nd->addr, nd->addr_len, i);
		T_ASSERT(r == 0, "insert node %u: %d", i, r);
	}
	for (uint32_t i = 0; i < m.n; i++) {
		if (i == m.me)
			continue;
		struct shf_wire_batch_enc e;
		char text[64];
		int tl = snprintf(text, sizeof(text), "mesh %u->%u", m.me, i);
		T_ASSERT(shf_wire_batch_begin(&e, m.bufs[i], sizeof(m.bufs[i]), m.me, i,
					      shf_wire_job_hash("mesh")) == 0, "begin");
		T_ASSERT(shf_wire_batch_put(&e, (int32_t)i, (int32_t)m.me, 1, text, (uint32_t)tl) == 0,
			 "put");
		size_t len = shf_wire_batch_end(&e, 1);
		int r = shd_fabric_send(f, i, m.bufs[i], len, (void *)(uintptr_t)i);
		T_ASSERT(r == 0 || r == 1, "send to %u: %d", i, r);
	}
	T_ASSERT(t_progress_until(f, &cb, &m, t_mesh_done, 20000),
		 "node %u: mesh got %u of %u, sends done %u", m.me, m.got, m.n - 1, m.sent_done);
	t_dir_barrier(barrier_dir, "mesh", (int)m.me, (int)m.n, 20000);
}

#endif
