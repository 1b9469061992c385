/* SPDX-License-Identifier: MIT */
/*
 * client/open.c - a context's life: shf_open() (connect, HELLO, REGISTER,
 * map the region, wait for the world, start delivery), shf_close(), and
 * the small getters.
 *
 * The top of the client's call graph: it calls the wait engine (wait.c)
 * and the data path (data.c: the delivery thread, the closing flush), and
 * nothing calls back into it.
 *
 * Every handshake reply is validated before use: shf_ipc_recv() checks
 * framing and sizes, this file checks types, ids, errno ranges, the fd
 * count and the region's size and layout.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/data.h"
#include "client/deliver.h"
#include "client/wait.h"
#include "proto/shm.h"

/* Request ids of the open handshake. */
#define ID_HELLO 1u
#define ID_REGISTER 2u

/* ---------------------------------------------------------------- open */

/* The version-1 layout: struct shf_opts up to deliver_many. */
#define OPTS_V1_BYTES offsetof(struct shf_opts, deliver_many)

static void opts_init(struct shf_opts *o, size_t bytes, unsigned version)
{
	memset(o, 0, bytes);
	o->version = version;
	o->socket_path = NULL;
	o->job = NULL;
	o->rank = -1;
	o->world = -1;
	o->ring_bytes = 0;
	o->delivery_thread = 1;
	o->timeout_ms = 0;
}

/* shf_opts_init() exists twice: programs built against SHUFFLE_1 pass the
 * smaller version-1 struct, which the 1.2 default must not overrun. */
SHF_EXPORT void shc_opts_init_v1(struct shf_opts *o);
SHF_EXPORT void shc_opts_init_v2(struct shf_opts *o);
__asm__(".symver shc_opts_init_v1, shf_opts_init@SHUFFLE_1");
__asm__(".symver shc_opts_init_v2, shf_opts_init@@SHUFFLE_1.2");

SHF_EXPORT void shc_opts_init_v1(struct shf_opts *o)
{
	if (o)
		opts_init(o, OPTS_V1_BYTES, 1);
}

SHF_EXPORT void shc_opts_init_v2(struct shf_opts *o)
{
	if (o)
		opts_init(o, sizeof(*o), SHF_API_VERSION);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Free everything; the delivery thread is not running. */
static void ctx_free(struct shf_ctx *c)
{
	close_fd(&c->event_fd);
	close_fd(&c->stop_fd);
	close_fd(&c->sock);
	close_fd(&c->daemon_bell);
	close_fd(&c->deliver_bell);
	close_fd(&c->space_bell);
	if (c->base)
		munmap(c->base, c->region_bytes);
	free(atomic_load_explicit(&c->hold, memory_order_relaxed));
	pthread_cond_destroy(&c->dcond);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->deliver_lock);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

static struct shf_ctx *ctx_new(void)
{
	/* aligned: the counters sit on cache lines of their own */
	struct shf_ctx *c = aligned_alloc(_Alignof(struct shf_ctx), sizeof(*c));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->sock = c->daemon_bell = c->deliver_bell = c->space_bell = -1;
	c->stop_fd = c->event_fd = -1;
	pthread_mutex_init(&c->send_lock, NULL);
	shc_send_lock_init(c);
	pthread_mutex_init(&c->deliver_lock, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_cond_init(&c->dcond, &ca);
	pthread_condattr_destroy(&ca);
	return c;
}

/* Wait for the next datagram of the handshake into c->rx.  fds/nfds as for
 * shf_ipc_recv().  Size, or negative errno with the detail set. */
static long open_recv(struct shf_ctx *c, int64_t deadline, int *fds, unsigned *nfds,
		      const char *what)
{
	bool reset = false;
	for (;;) {
		unsigned cap = nfds ? *nfds : 0;
		long n = shf_ipc_recv(c->sock, c->rx.buf, sizeof(c->rx.buf), fds, nfds ? &cap : NULL);
		if (n > 0) {
			if (nfds)
				*nfds = cap;
			return n;
		}
		if (n == -ECONNRESET && !reset) {
			reset = true; /* see sock_drain(): the daemon's last words follow */
			continue;
		}
		if (n == 0)
			return shc_fail(-ENOTCONN, "the daemon closed the connection while we waited "
					"for %s", what);
		if (n == -EBADMSG || n == -EPROTO || n == -EMSGSIZE)
			return shc_fail(-EPROTO, "malformed reply from the daemon while waiting for "
					"%s (%s)", what, strerror((int)-n));
		if (n != -EAGAIN)
			return shc_fail(n == -ECONNRESET ? -ENOTCONN : (int)n,
					"control socket, waiting for %s: %s", what, strerror((int)-n));
		struct pollfd p = {c->sock, POLLIN, 0};
		int r = poll(&p, 1, shc_poll_ms(deadline));
		if (r == 0)
			return shc_fail(-ETIMEDOUT, "no %s from the daemon within the timeout", what);
		if (r < 0 && errno != EINTR)
			return shc_fail(-errno, "poll: %s", strerror(errno));
	}
}

/* c->rx holds an ERROR (n bytes): its errno, with its text as detail. */
static int open_error(struct shf_ctx *c, const char *stage)
{
	struct shf_ipc_error e;
	memcpy(&e, c->rx.buf + sizeof(struct shf_ipc_hdr), sizeof(e));
	const char *text = (const char *)c->rx.buf + sizeof(struct shf_ipc_hdr) + sizeof(e);
	if (!shc_errno_ok(e.err))
		return shc_fail(-EPROTO, "%s: the daemon answered with errno %d: %.180s", stage,
				e.err, text);
	return shc_fail(e.err, "%s: daemon: %.200s", stage, text);
}

static struct shf_ipc_hdr rx_hdr(const struct shf_ctx *c)
{
	struct shf_ipc_hdr h;
	memcpy(&h, c->rx.buf, sizeof(h));
	return h;
}

/* Find the daemon and connect (discover.c: the one rule, shared with
 * shufflectl; it also checks the daemon's uid before a byte is sent). */
static int open_connect(struct shf_ctx *c, const char *opt, char *path, size_t cap)
{
	struct shc_found f;
	int r = shc_discover(opt, "opts.socket_path", 0, &f);
	if (r)
		return r;
	c->sock = f.fd;
	snprintf(path, cap, "%s", f.path);
	return 0;
}

/* HELLO (proto/ipc.c's exchange, shared with shufflectl): a refusal is
 * the daemon's ERROR, even when it hung up before our HELLO went out. */
static int open_hello(struct shf_ctx *c, int64_t deadline)
{
	enum shf_ipc_hello_step step;
	long n = shf_ipc_hello(c->sock, ID_HELLO, shc_poll_ms(deadline), c->rx.buf,
			       sizeof(c->rx.buf), &step);
	struct shf_ipc_hdr h = rx_hdr(c);
	if (n < 0) {
		int r = (int)n;
		if (step == SHF_IPC_HELLO_SEND)
			return shc_fail(r, "cannot send HELLO: %s", strerror(-r));
		if (step == SHF_IPC_HELLO_ANSWER)
			return shc_fail(-EPROTO, "unexpected reply (type %u id %u) to HELLO", h.type,
					h.id);
		if (r == -ENOTCONN)
			return shc_fail(r, "the daemon closed the connection while we waited for "
					"HELLO_OK");
		if (r == -ETIMEDOUT)
			return shc_fail(r, "no HELLO_OK from the daemon within the timeout");
		if (r == -EBADMSG || r == -EPROTO || r == -EMSGSIZE)
			return shc_fail(-EPROTO, "malformed reply from the daemon while waiting for "
					"HELLO_OK (%s)", strerror(-r));
		return shc_fail(r, "control socket, waiting for HELLO_OK: %s", strerror(-r));
	}
	if (h.type == SHF_IPC_ERROR)
		return open_error(c, "hello");
	struct shf_ipc_hello_ok ok;
	memcpy(&ok, c->rx.buf + sizeof(h), sizeof(ok));
	if (ok.version != SHF_IPC_VERSION)
		return shc_fail(-EPROTO, "the daemon speaks protocol %u, this library %u",
				ok.version, SHF_IPC_VERSION);
	return 0;
}

/* REGISTER_OK's region: checked against what the daemon said and mapped
 * into c, with c's rings bound to it.  0, or the error (said). */
static int open_map(struct shf_ctx *c, int region_fd, const struct shf_ipc_register_ok *okp)
{
	const struct shf_ipc_register_ok ok = *okp;
	int r = -EPROTO;
	if (ok.rank != c->rank || ok.world != c->world) {
		return shc_fail(r, "REGISTER_OK for rank %d of %d, asked for %d of %d", ok.rank, ok.world,
			 c->rank, c->world);
	}
	/* two rings of at most SHF_RING_MAX_BYTES plus headers */
	if (ok.region_bytes < sizeof(struct shf_shm_hdr) ||
	    ok.region_bytes > 2 * (uint64_t)SHF_RING_MAX_BYTES + (1u << 20) ||
	    ok.region_bytes > SIZE_MAX) {
		return shc_fail(r, "REGISTER_OK: region of %llu bytes", (unsigned long long)ok.region_bytes);
	}
	struct stat st;
	if (fstat(region_fd, &st) < 0) {
		return shc_fail(-errno, "fstat of the region fd: %s", strerror(errno));
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != ok.region_bytes) {
		return shc_fail(r, "the region fd holds %lld bytes, REGISTER_OK said %llu",
			 (long long)st.st_size, (unsigned long long)ok.region_bytes);
	}
	void *base = mmap(NULL, (size_t)ok.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			  region_fd, 0);
	if (base == MAP_FAILED) {
		return shc_fail(-errno, "cannot map the region (%llu bytes): %s",
			     (unsigned long long)ok.region_bytes, strerror(errno));
	}
	c->base = base;
	c->region_bytes = (size_t)ok.region_bytes;

	struct shf_shm_layout l;
	int e = shf_shm_check(base, ok.region_bytes, &l);
	if (e) {
		return shc_fail(r, "the region is not valid (%s)", strerror(-e));
	}
	struct shf_shm_hdr sh;
	memcpy(&sh, base, sizeof(sh)); /* after shf_shm_check()'s acquire of ready */
	if (sh.rank != c->rank || sh.world != c->world) {
		return shc_fail(r, "the region is for rank %d of %d", sh.rank, sh.world);
	}
	if (ok.max_msg > SHF_MAX_MSG_MAX)
		return shc_fail(r, "the daemon's max_msg %u is above %u", ok.max_msg, SHF_MAX_MSG_MAX);
	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		if ((uint64_t)ok.max_msg + SHF_MSG_HDR_BYTES > l.ring[i].max_rec) {
			return shc_fail(r, "max_msg %u does not fit ring %d (max record %u)", ok.max_msg, i,
				 l.ring[i].max_rec);
		}
	}
	c->max_msg = ok.max_msg;
	c->reg_flags = ok.flags;
	if ((e = shf_shm_ring(base, &l, SHF_SHM_SEND, &c->send, false)) ||
	    (shf_ring_init_producer(&c->send), c->send.err) ||
	    (e = shf_shm_ring(base, &l, SHF_SHM_DELIVER, &c->deliver, false)) ||
	    (shf_ring_init_consumer(&c->deliver), c->deliver.err)) {
		return shc_fail(r, "cannot bind the rings (%s)",
			 strerror(-(e ? e : c->send.err ? c->send.err : c->deliver.err)));
	}
	c->released = c->deliver.done;
	return 0;
}

/* REGISTER, then map the region and bind both rings.  The body is the
 * 80-byte one without flags (SHF_IPC_REGISTER_V0_BYTES): the only flag,
 * SHF_REG_GLOBAL_MB of the retired fence-free send path, is never asked
 * for, and daemons before and after the flags take this body alike.  A
 * daemon that takes runs (SHF_REG_OK_RUNS) hears that this library reads
 * them too (SHF_IPC_RUNS). */
static int open_register(struct shf_ctx *c, uint32_t ring_bytes, int world_timeout_ms,
			 int64_t deadline)
{
	struct shf_ipc_register m;
	memset(&m, 0, sizeof(m));
	memcpy(m.job, c->job, sizeof(m.job));
	m.rank = c->rank;
	m.world = c->world;
	m.ring_bytes = ring_bytes;
	/* 0 lets the daemon apply its own world_timeout_ms */
	m.timeout_ms = world_timeout_ms;
	int r = shf_ipc_send(c->sock, SHF_IPC_REGISTER, ID_REGISTER, &m,
			     SHF_IPC_REGISTER_V0_BYTES, NULL, 0);
	if (r)
		return shc_fail(r == -EPIPE || r == -ECONNRESET ? -ENOTCONN : r,
				"cannot send REGISTER: %s", strerror(-r));
	int fds[SHF_IPC_REG_FDS];
	unsigned nfds = SHF_IPC_REG_FDS;
	long n = open_recv(c, deadline, fds, &nfds, "REGISTER_OK");
	if (n < 0)
		return (int)n;
	struct shf_ipc_hdr h = rx_hdr(c);
	if (h.type != SHF_IPC_REGISTER_OK || h.id != ID_REGISTER || nfds != SHF_IPC_REG_FDS) {
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		if (h.type == SHF_IPC_ERROR && (h.id == ID_REGISTER || h.id == 0)) {
			return open_error(c, "register");
		}
		if (h.type == SHF_IPC_REGISTER_OK && h.id == ID_REGISTER)
			return shc_fail(-EPROTO, "REGISTER_OK carried %u fds, expected %u", nfds,
					SHF_IPC_REG_FDS);
		return shc_fail(-EPROTO, "unexpected reply (type %u id %u) to REGISTER", h.type,
				h.id);
	}
	int region_fd = fds[SHF_FD_REGION];
	c->daemon_bell = fds[SHF_FD_DAEMON_BELL];
	c->deliver_bell = fds[SHF_FD_DELIVER_BELL];
	c->space_bell = fds[SHF_FD_SPACE_BELL];

	struct shf_ipc_register_ok ok;
	memcpy(&ok, c->rx.buf + sizeof(h), sizeof(ok));
	r = open_map(c, region_fd, &ok);
	close(region_fd);
	if (!r && (ok.flags & SHF_REG_OK_RUNS)) {
		r = shf_ipc_send(c->sock, SHF_IPC_RUNS, 0, NULL, 0, NULL, 0);
		if (r)
			return shc_fail(r == -EPIPE || r == -ECONNRESET ? -ENOTCONN : r,
					"cannot send RUNS: %s", strerror(-r));
		c->runs = true;
	}
	if (!r && c->runs && (ok.flags & SHF_REG_OK_PACKED)) {
		r = shf_ipc_send(c->sock, SHF_IPC_PACKED, 0, NULL, 0, NULL, 0);
		if (r)
			return shc_fail(r == -EPIPE || r == -ECONNRESET ? -ENOTCONN : r,
					"cannot send PACKED: %s", strerror(-r));
		c->packed = true;
	}
	return r;
}

static int open_ready(struct shf_ctx *c, int64_t deadline)
{
	long n = open_recv(c, deadline, NULL, NULL, "READY (the rest of the world)");
	if (n < 0)
		return (int)n;
	struct shf_ipc_hdr h = rx_hdr(c);
	if (h.type == SHF_IPC_ERROR && (h.id == ID_REGISTER || h.id == 0))
		return open_error(c, "waiting for the world");
	if (h.type != SHF_IPC_READY || (h.id != 0 && h.id != ID_REGISTER))
		return shc_fail(-EPROTO, "unexpected message (type %u id %u) instead of READY",
				h.type, h.id);
	struct shf_ipc_ready m;
	memcpy(&m, c->rx.buf + sizeof(h), sizeof(m));
	if (m.world != c->world || m.nodes == 0)
		return shc_fail(-EPROTO, "READY for a world of %d on %u nodes, expected %d",
				m.world, m.nodes, c->world);
	shc_debug("job %s rank %d/%d: world complete on %u node(s)", c->job, c->rank, c->world,
		  m.nodes);
	return 0;
}

static int start_thread(struct shf_ctx *c)
{
	c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->stop_fd < 0)
		return shc_fail(-errno, "eventfd: %s", strerror(errno));
	/* The thread takes no signals: the application's handlers run on its
	 * own threads, as it expects. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&c->thread, NULL, shc_delivery_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return shc_fail(-e, "cannot start the delivery thread: %s", strerror(e));
	c->thread_started = true;
	return 0;
}

static int make_event_fd(struct shf_ctx *c)
{
	c->event_fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->event_fd < 0)
		return shc_fail(-errno, "epoll_create1: %s", strerror(errno));
	struct epoll_event ev = {.events = EPOLLIN};
	ev.data.fd = c->deliver_bell;
	if (epoll_ctl(c->event_fd, EPOLL_CTL_ADD, c->deliver_bell, &ev) < 0)
		return shc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	ev.data.fd = c->sock;
	if (epoll_ctl(c->event_fd, EPOLL_CTL_ADD, c->sock, &ev) < 0)
		return shc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	return 0;
}

SHF_EXPORT int shf_open(const struct shf_opts *o, shf_deliver_fn fn, void *arg,
			struct shf_ctx **ctx_p)
{
	struct shf_opts oo;
	if (!ctx_p)
		return shc_fail(-EINVAL, "ctx_p is NULL");
	if (!o) {
		shc_opts_init_v2(&oo);
	} else if (o->version == 1) { /* built against 1.0/1.1: the shorter struct */
		shc_opts_init_v2(&oo);
		memcpy(&oo, o, OPTS_V1_BYTES);
		oo.version = SHF_API_VERSION;
	} else if (o->version == SHF_API_VERSION) {
		oo = *o;
	} else {
		return shc_fail(-EINVAL, "opts.version is %u, this library speaks 1 and %u (use "
				"shf_opts_init())", o->version, SHF_API_VERSION);
	}
	o = &oo;
	if (!fn && !o->deliver_many)
		return shc_fail(-EINVAL, "no delivery callback (fn or opts.deliver_many)");
	if (o->timeout_ms < -1)
		return shc_fail(-EINVAL, "opts.timeout_ms %d: use > 0, 0 (default) or -1 (forever)",
				o->timeout_ms);
	if (o->ring_bytes && !shf_ring_size_ok(o->ring_bytes))
		return shc_fail(-EINVAL, "opts.ring_bytes %u: use 0 or a power of two in [%u, %u]",
				o->ring_bytes, SHF_RING_MIN_BYTES, SHF_RING_MAX_BYTES);
	int rank, world, r;
	if (o->rank < 0 && o->world < 0) {
		if ((r = shc_env_rank_world(&rank, &world)))
			return r;
	} else {
		rank = o->rank;
		world = o->world;
		if (rank < 0 || world < 1 || world > SHF_WORLD_MAX || rank >= world)
			return shc_fail(-EINVAL, "opts.rank %d, opts.world %d: need 0 <= rank < "
					"world <= %d (or both -1)", rank, world, SHF_WORLD_MAX);
	}
	char job[SHF_JOB_MAX];
	if ((r = shc_env_job(o->job, job)) < 0)
		return r;
	struct shf_ctx *c = ctx_new();
	if (!c)
		return shc_fail(-ENOMEM, "out of memory");
	c->rank = rank;
	c->world = world;
	c->fn = fn;
	c->fn_many = o->deliver_many;
	c->arg = arg;
	c->thread_mode = o->delivery_thread != 0;
	c->timeout_ms = o->timeout_ms == 0 ? SHC_DEFAULT_TIMEOUT_MS : o->timeout_ms;
	memcpy(c->job, job, sizeof(c->job));
	/* The daemon enforces the world timeout and tells us; we only guard
	 * against a daemon that never answers.  With timeout 0 the daemon's
	 * configured world_timeout_ms applies, which we do not know: READY is
	 * then awaited without a guard of our own (a daemon that dies still
	 * ends the wait). */
	int64_t deadline = c->timeout_ms < 0 ? -1 :
		shc_deadline(c->timeout_ms > INT_MAX - SHC_OPEN_GRACE_MS ? INT_MAX :
			     c->timeout_ms + SHC_OPEN_GRACE_MS);
	int64_t ready_deadline = o->timeout_ms == 0 ? -1 : deadline;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if ((r = open_connect(c, o->socket_path, path, sizeof(path))))
		goto fail;
	shc_debug("open: job %s rank %d/%d (launcher %s) socket %s ring %u %s mode", c->job,
		  rank, world, shc_launcher_name(shc_env_launcher()), path, o->ring_bytes,
		  c->thread_mode ? "thread" : "poll");

	r = open_hello(c, deadline);
	if (!r)
		r = open_register(c, o->ring_bytes, o->timeout_ms, deadline);
	if (r || (r = open_ready(c, ready_deadline)))
		goto fail;
	if (c->thread_mode)
		r = start_thread(c);
	else
		r = make_event_fd(c);
	if (r)
		goto fail;
	if (!c->thread_mode)
		shc_poll_restore(c); /* records may be waiting already: make the fd say so */
	/* *ctx_p is written before the first callback can run (the thread
	 * waits for `go`), so a callback may use the application's copy. */
	*ctx_p = c;
	pthread_mutex_lock(&c->mu);
	c->go = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	return 0;
fail:
	ctx_free(c);
	return r;
}

/* ---------------------------------------------------------------- close */

SHF_EXPORT int shf_close(struct shf_ctx *c)
{
	if (!c)
		return 0;
	if (shc_in_cb == c)
		return shc_fail(-EDEADLK, "shf_close() from a delivery callback of the same "
				"context");
	int ret;
	if (shc_is_dead(c)) {
		/* held records that can no longer go are counted in the detail */
		ret = shc_hold_close(c, 0);
		if (!ret)
			ret = shc_dead_err(c);
	} else {
		int64_t deadline = shc_deadline(c->timeout_ms > 0 &&
						c->timeout_ms < SHC_CLOSE_FLUSH_MS ?
						c->timeout_ms : SHC_CLOSE_FLUSH_MS);
		ret = shc_hold_close(c, deadline);
		int r = shc_flush_origin(c, deadline);
		if (!ret)
			ret = r;
		if (!shc_is_dead(c))
			shf_ipc_send(c->sock, SHF_IPC_BYE, 0, NULL, 0, NULL, 0);
	}
	/* From here every call on c (a callback blocked in shf_send(), say)
	 * fails at once, and the delivery thread stops. */
	shc_mark_dead(c, "the context is being closed");
	shutdown(c->sock, SHUT_RDWR);
	if (c->thread_started) {
		pthread_mutex_lock(&c->mu);
		c->go = true; /* (only unset if shf_open() failed after the start) */
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->mu);
		shf_bell_ring(c->stop_fd);
		pthread_join(c->thread, NULL);
	}
	shc_debug("closed job %s rank %d", c->job, c->rank);
	ctx_free(c);
	return ret;
}

/* ---------------------------------------------------------------- small */

SHF_EXPORT int shf_event_fd(const struct shf_ctx *c)
{
	if (!c)
		return shc_fail(-EINVAL, "no context");
	if (c->thread_mode)
		return shc_fail(-EINVAL, "no event fd: callbacks run on the delivery thread");
	return c->event_fd;
}

SHF_EXPORT int shf_rank(const struct shf_ctx *c)
{
	return c ? c->rank : shc_fail(-EINVAL, "no context");
}

SHF_EXPORT int shf_world(const struct shf_ctx *c)
{
	return c ? c->world : shc_fail(-EINVAL, "no context");
}

SHF_EXPORT int shf_stats_get(struct shf_ctx *c, struct shf_stats *s)
{
	if (!c || !s)
		return shc_fail(-EINVAL, "no context or no stats buffer");
#define GET(f) s->f = atomic_load_explicit(&c->st.f, memory_order_relaxed)
	GET(sent_msgs);
	GET(sent_bytes);
	GET(delivered_msgs);
	GET(delivered_bytes);
	GET(send_blocked_ns);
	GET(send_eagain);
	GET(dropped_dead);
	GET(dropped_down);
	GET(flushes);
	GET(epochs);
#undef GET
	return 0;
}
