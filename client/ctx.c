/* SPDX-License-Identifier: MIT */
/*
 * client/ctx.c - a context's life: shf_open() (connect, HELLO, REGISTER,
 * map the region, wait for the world), the wait machinery every blocking
 * call shares, the control socket (only the current leader reads it), the
 * death of the connection, and shf_close().
 *
 * Everything the daemon sends is validated before use: shf_ipc_recv()
 * checks framing and sizes, this file checks types, ids, errno ranges, the
 * fd count and the region's size and layout.  A daemon that breaks the
 * protocol kills the context (-ENOTCONN, with the reason as detail); it
 * never crashes or hangs the application.
 */
#include <errno.h>
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
#include "proto/shm.h"

/* Request ids of the open handshake. */
#define ID_HELLO 1u
#define ID_REGISTER 2u

/* ---------------------------------------------------------------- time */

uint64_t shc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t shc_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	return (int64_t)(shc_now_ns() + (uint64_t)timeout_ms * 1000000u);
}

int shc_call_deadline(const struct shf_ctx *c, int timeout_ms, int64_t *deadline_p)
{
	if (timeout_ms < -1)
		return shc_fail(-EINVAL, "timeout_ms %d: use > 0, 0 (default) or -1 (forever)",
				timeout_ms);
	*deadline_p = shc_deadline(timeout_ms == 0 ? c->timeout_ms : timeout_ms);
	return 0;
}

/* poll() timeout for a deadline: -1 forever, else ms left, rounded up. */
static int poll_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	uint64_t now = shc_now_ns();
	if ((uint64_t)deadline <= now)
		return 0;
	uint64_t ms = ((uint64_t)deadline - now + 999999u) / 1000000u;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void deadline_ts(int64_t deadline, struct timespec *ts)
{
	ts->tv_sec = (time_t)(deadline / 1000000000);
	ts->tv_nsec = (long)(deadline % 1000000000);
}

/* ---------------------------------------------------------------- death */

__attribute__((format(printf, 2, 0)))
static void mark_dead_v(struct shf_ctx *c, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&c->mu);
	if (!atomic_load_explicit(&c->dead, memory_order_relaxed)) {
		vsnprintf(c->dead_detail, sizeof(c->dead_detail), fmt, ap);
		atomic_store_explicit(&c->dead, -ENOTCONN, memory_order_release);
		shc_debug("job %s rank %d: connection unusable: %s", c->job, c->rank,
			  c->dead_detail);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_cond_broadcast(&c->dcond);
	pthread_mutex_unlock(&c->mu);
}

void shc_mark_dead(struct shf_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mark_dead_v(c, fmt, ap);
	va_end(ap);
}

void shc_protocol_error(struct shf_ctx *c, const char *fmt, ...)
{
	char why[SHC_DETAIL_MAX - 32];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	shc_mark_dead(c, "protocol error: %s", why);
	/* Let the daemon know at once, and wake a leader asleep in poll(). */
	shutdown(c->sock, SHUT_RDWR);
}

int shc_dead_err(struct shf_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	shc_detail_set("%s", c->dead_detail);
	pthread_mutex_unlock(&c->mu);
	return -ENOTCONN;
}

/* ------------------------------------------------------------- waiters */

void shc_waiter_add(struct shf_ctx *c, struct shc_waiter *w, uint16_t type, uint64_t id)
{
	memset(w, 0, sizeof(*w));
	w->type = type;
	w->id = id;
	pthread_mutex_lock(&c->mu);
	w->next = c->waiters;
	c->waiters = w;
	w->linked = true;
	pthread_mutex_unlock(&c->mu);
}

void shc_waiter_del(struct shf_ctx *c, struct shc_waiter *w)
{
	pthread_mutex_lock(&c->mu);
	if (w->linked) {
		for (struct shc_waiter **pp = &c->waiters; *pp; pp = &(*pp)->next) {
			if (*pp == w) {
				*pp = w->next;
				break;
			}
		}
		w->linked = false;
	}
	pthread_mutex_unlock(&c->mu);
}

/* mu held.  type 0 matches any type, by the low 32 bits of the id (what an
 * ERROR reply carries); otherwise type and full id must match. */
static struct shc_waiter *waiter_find(struct shf_ctx *c, uint16_t type, uint64_t id)
{
	for (struct shc_waiter *w = c->waiters; w; w = w->next) {
		if (w->done)
			continue;
		if (type == 0 ? (uint32_t)w->id == (uint32_t)id : w->type == type && w->id == id)
			return w;
	}
	return NULL;
}

int shc_waiter_wait(struct shf_ctx *c, struct shc_waiter *w, int64_t deadline)
{
	for (;;) {
		pthread_mutex_lock(&c->mu);
		bool done = w->done;
		uint64_t gen = c->gen;
		pthread_mutex_unlock(&c->mu);
		if (done)
			return 0;
		int r = shc_wait_step(c, gen, deadline);
		if (r < 0)
			return r;
	}
}

/* ------------------------------------------------------ control socket */

static bool errno_ok(int32_t e)
{
	return e < 0 && e >= -4095;
}

/* One validated datagram in c->rx (leader only). */
static void dispatch(struct shf_ctx *c, size_t n)
{
	struct shf_ipc_hdr h;
	memcpy(&h, c->rx.buf, sizeof(h));
	const unsigned char *body = c->rx.buf + sizeof(h);
	uint64_t seq = atomic_load_explicit(&c->mark_seq, memory_order_acquire);
	(void)n;

	switch (h.type) {
	case SHF_IPC_FLUSH_DONE: {
		struct shf_ipc_flush_done m;
		memcpy(&m, body, sizeof(m));
		if (m.id == 0 || m.id > seq || h.id != (uint32_t)m.id ||
		    (m.status != 0 && !errno_ok(m.status))) {
			shc_protocol_error(c, "FLUSH_DONE for mark %llu (header id %u, status %d) "
					   "that was never sent", (unsigned long long)m.id, h.id,
					   m.status);
			return;
		}
		atomic_fetch_add_explicit(&c->st.dropped_dead, m.dropped_dead, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->st.dropped_down, m.dropped_down, memory_order_relaxed);
		pthread_mutex_lock(&c->mu);
		c->unrep_dead += m.dropped_dead;
		c->unrep_down += m.dropped_down;
		struct shc_waiter *w = waiter_find(c, SHF_IPC_FLUSH_DONE, m.id);
		if (w) {
			/* drops reported to a flush that gave up are owed to this one */
			w->done = true;
			w->status = m.status;
			w->dropped_dead = c->unrep_dead;
			w->dropped_down = c->unrep_down;
			c->unrep_dead = c->unrep_down = 0;
		}
		pthread_mutex_unlock(&c->mu);
		if (!w)
			shc_debug("late FLUSH_DONE for mark %llu ignored", (unsigned long long)m.id);
		return;
	}
	case SHF_IPC_EPOCH_DONE: {
		struct shf_ipc_epoch_done m;
		memcpy(&m, body, sizeof(m));
		if (m.id == 0 || m.id > seq || h.id != (uint32_t)m.id || m.phase != 2 ||
		    (m.status != 0 && !errno_ok(m.status))) {
			shc_protocol_error(c, "EPOCH_DONE for epoch %llu phase %u (header id %u) "
					   "that was never requested", (unsigned long long)m.id,
					   m.phase, h.id);
			return;
		}
		pthread_mutex_lock(&c->mu);
		struct shc_waiter *w = waiter_find(c, SHF_IPC_EPOCH_DONE, m.id);
		if (w) {
			w->done = true;
			w->status = m.status;
		}
		pthread_mutex_unlock(&c->mu);
		return;
	}
	case SHF_IPC_ERROR: {
		struct shf_ipc_error e;
		memcpy(&e, body, sizeof(e));
		/* shf_ipc_check() made sure the text ends inside the datagram */
		const char *text = (const char *)body + sizeof(e);
		if (!errno_ok(e.err)) {
			shc_protocol_error(c, "ERROR with errno %d: %.100s", e.err, text);
			return;
		}
		if (h.id == 0) {
			/* unsolicited: the daemon is cutting us off */
			shc_mark_dead(c, "daemon: %.200s", text);
			return;
		}
		pthread_mutex_lock(&c->mu);
		struct shc_waiter *w = waiter_find(c, 0, h.id);
		if (w) {
			w->done = true;
			w->status = e.err;
			snprintf(w->text, sizeof(w->text), "%s", text);
		}
		pthread_mutex_unlock(&c->mu);
		if (!w)
			shc_debug("ERROR for request %u ignored: %s", h.id, text);
		return;
	}
	default:
		shc_protocol_error(c, "unexpected control message type %u", h.type);
		return;
	}
}

/* Read every datagram waiting on the socket (leader only). */
static void sock_drain(struct shf_ctx *c)
{
	bool reset = false;
	while (!shc_is_dead(c)) {
		long n = shf_ipc_recv(c->sock, c->rx.buf, sizeof(c->rx.buf), NULL, NULL);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return;
		if (n == -ECONNRESET && !reset) {
			/* reported once, ahead of what the daemon queued before it
			 * went (its ERROR says why): read on */
			reset = true;
			continue;
		}
		if (n == 0) {
			shc_mark_dead(c, "the daemon closed the connection");
			return;
		}
		if (n == -EBADMSG || n == -EPROTO || n == -EMSGSIZE) {
			shc_protocol_error(c, "malformed control message from the daemon (%s)",
					   strerror((int)-n));
			return;
		}
		if (n < 0) {
			shc_mark_dead(c, "control socket: %s", strerror((int)-n));
			return;
		}
		dispatch(c, (size_t)n);
	}
}

static bool lead_try(struct shf_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	bool got = !c->leader;
	c->leader = true;
	pthread_mutex_unlock(&c->mu);
	return got;
}

static void lead_end(struct shf_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	c->leader = false;
	c->gen++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

/* Clear a doorbell that poll() reported.  The daemon's eventfds are
 * non-blocking; only one thread at a time reads each of them anyway. */
static void bell_clear(struct shf_ctx *c, int fd, short revents)
{
	if (revents & (POLLERR | POLLNVAL)) {
		shc_protocol_error(c, "doorbell fd %d is not a usable eventfd", fd);
		return;
	}
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof(v));
	(void)n;
}

/* The socket hung up or failed.  Read what the daemon said last (its ERROR
 * explains why) unless a leader is already doing so; then it is dead. */
void shc_sock_hangup(struct shf_ctx *c)
{
	if (lead_try(c)) {
		sock_drain(c);
		if (!shc_is_dead(c))
			shc_mark_dead(c, "connection to the daemon lost");
		lead_end(c);
		return;
	}
	/* The leader polls the socket too and sees the same hang-up: wait for
	 * the end of its round instead of spinning on the socket. */
	pthread_mutex_lock(&c->mu);
	uint64_t gen = c->gen;
	while (!atomic_load_explicit(&c->dead, memory_order_relaxed) && c->gen == gen && c->leader)
		pthread_cond_wait(&c->cond, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

void shc_sock_check(struct shf_ctx *c)
{
	struct pollfd p = {c->sock, 0, 0};
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
		shc_sock_hangup(c);
}

/* ---------------------------------------------------------------- waits */

uint64_t shc_wait_gen(struct shf_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t g = c->gen;
	pthread_mutex_unlock(&c->mu);
	return g;
}

int shc_wait(struct shf_ctx *c, uint64_t gen, int64_t deadline)
{
	pthread_mutex_lock(&c->mu);
	for (;;) {
		if (atomic_load_explicit(&c->dead, memory_order_relaxed)) {
			pthread_mutex_unlock(&c->mu);
			return shc_dead_err(c);
		}
		if (c->gen != gen) {
			pthread_mutex_unlock(&c->mu);
			return 0;
		}
		if (!c->leader)
			break;
		if (deadline < 0) {
			pthread_cond_wait(&c->cond, &c->mu);
		} else {
			struct timespec ts;
			deadline_ts(deadline, &ts);
			if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) == ETIMEDOUT &&
			    c->gen == gen && !atomic_load_explicit(&c->dead, memory_order_relaxed)) {
				pthread_mutex_unlock(&c->mu);
				return -ETIMEDOUT;
			}
		}
	}
	c->leader = true;
	pthread_mutex_unlock(&c->mu);

	/* Lead: sleep for everybody on whatever they may be waiting for.  The
	 * DELIVER bell only in poll mode, and not inside a callback (that
	 * thread cannot deliver; the callback's caller will). */
	struct pollfd p[3] = {
		{c->sock, POLLIN, 0},
		{c->space_bell, POLLIN, 0},
		{c->deliver_bell, POLLIN, 0},
	};
	nfds_t np = !c->thread_mode && shc_in_cb != c ? 3 : 2;
	int ret = 0;
	int r = poll(p, np, poll_ms(deadline));
	if (r == 0) {
		ret = -ETIMEDOUT;
	} else if (r < 0) {
		if (errno != EINTR)
			ret = shc_fail(-errno, "poll: %s", strerror(errno));
	} else {
		if (p[1].revents)
			bell_clear(c, c->space_bell, p[1].revents);
		if (np > 2 && p[2].revents)
			bell_clear(c, c->deliver_bell, p[2].revents);
		if (p[0].revents)
			sock_drain(c);
	}
	lead_end(c);
	if (shc_is_dead(c))
		return shc_dead_err(c);
	return ret;
}

int shc_wait_step(struct shf_ctx *c, uint64_t gen, int64_t deadline)
{
	if (shc_is_dead(c))
		return shc_dead_err(c);
	if (!c->thread_mode && shc_in_cb != c) {
		int n = shc_poll_progress(c);
		if (n < 0)
			return n;
		if (n > 0) {
			/* progress: let the caller re-check, within its deadline */
			if (deadline >= 0 && shc_now_ns() >= (uint64_t)deadline)
				return -ETIMEDOUT;
			return 0;
		}
	}
	return shc_wait(c, gen, deadline);
}

/* ---------------------------------------------------------------- open */

SHF_EXPORT void shf_opts_init(struct shf_opts *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->version = SHF_API_VERSION;
	o->socket_path = NULL;
	o->job = NULL;
	o->rank = -1;
	o->world = -1;
	o->ring_bytes = 0;
	o->delivery_thread = 1;
	o->timeout_ms = 0;
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
		int r = poll(&p, 1, poll_ms(deadline));
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
	if (!errno_ok(e.err))
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

static int open_connect(struct shf_ctx *c, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path); /* length checked */
	c->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->sock < 0)
		return shc_fail(-errno, "socket: %s", strerror(errno));
	while (connect(c->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		if (e == EISCONN)
			break;
		if (e == ENOENT || e == ECONNREFUSED)
			return shc_fail(-ECONNREFUSED, "no shuffled listening at %s", path);
		return shc_fail(-e, "cannot connect to %s: %s", path, strerror(e));
	}
	return 0;
}

static int open_hello(struct shf_ctx *c, int64_t deadline)
{
	struct shf_ipc_hello m = {SHF_IPC_VERSION, (uint32_t)getpid()};
	int r = shf_ipc_send(c->sock, SHF_IPC_HELLO, ID_HELLO, &m, sizeof(m), NULL, 0);
	if (r && r != -EPIPE && r != -ECONNRESET)
		return shc_fail(r, "cannot send HELLO: %s", strerror(-r));
	/* A daemon that refuses us (max_clients) says why and hangs up, maybe
	 * before our HELLO went out: read its ERROR either way. */
	long n = open_recv(c, r ? shc_deadline(0) : deadline, NULL, NULL, "HELLO_OK");
	if (n < 0)
		return (int)n;
	struct shf_ipc_hdr h = rx_hdr(c);
	if (h.type == SHF_IPC_ERROR && (h.id == ID_HELLO || h.id == 0))
		return open_error(c, "hello");
	if (h.type != SHF_IPC_HELLO_OK || h.id != ID_HELLO)
		return shc_fail(-EPROTO, "unexpected reply (type %u id %u) to HELLO", h.type, h.id);
	struct shf_ipc_hello_ok ok;
	memcpy(&ok, c->rx.buf + sizeof(h), sizeof(ok));
	if (ok.version != SHF_IPC_VERSION)
		return shc_fail(-EPROTO, "the daemon speaks protocol %u, this library %u",
				ok.version, SHF_IPC_VERSION);
	return 0;
}

/* REGISTER, then map the region and bind both rings. */
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
	int r = shf_ipc_send(c->sock, SHF_IPC_REGISTER, ID_REGISTER, &m, sizeof(m), NULL, 0);
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
		if (h.type == SHF_IPC_ERROR && (h.id == ID_REGISTER || h.id == 0))
			return open_error(c, "register");
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
	r = -EPROTO;
	if (ok.rank != c->rank || ok.world != c->world) {
		shc_fail(r, "REGISTER_OK for rank %d of %d, asked for %d of %d", ok.rank, ok.world,
			 c->rank, c->world);
		goto out;
	}
	/* two rings of at most SHF_RING_MAX_BYTES plus headers */
	if (ok.region_bytes < sizeof(struct shf_shm_hdr) ||
	    ok.region_bytes > 2 * (uint64_t)SHF_RING_MAX_BYTES + (1u << 20) ||
	    ok.region_bytes > SIZE_MAX) {
		shc_fail(r, "REGISTER_OK: region of %llu bytes", (unsigned long long)ok.region_bytes);
		goto out;
	}
	struct stat st;
	if (fstat(region_fd, &st) < 0) {
		r = shc_fail(-errno, "fstat of the region fd: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != ok.region_bytes) {
		shc_fail(r, "the region fd holds %lld bytes, REGISTER_OK said %llu",
			 (long long)st.st_size, (unsigned long long)ok.region_bytes);
		goto out;
	}
	void *base = mmap(NULL, (size_t)ok.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			  region_fd, 0);
	if (base == MAP_FAILED) {
		r = shc_fail(-errno, "cannot map the region (%llu bytes): %s",
			     (unsigned long long)ok.region_bytes, strerror(errno));
		goto out;
	}
	c->base = base;
	c->region_bytes = (size_t)ok.region_bytes;

	struct shf_shm_layout l;
	int e = shf_shm_check(base, ok.region_bytes, &l);
	if (e) {
		shc_fail(r, "the region is not valid (%s)", strerror(-e));
		goto out;
	}
	struct shf_shm_hdr sh;
	memcpy(&sh, base, sizeof(sh)); /* after shf_shm_check()'s acquire of ready */
	if (sh.rank != c->rank || sh.world != c->world) {
		shc_fail(r, "the region is for rank %d of %d", sh.rank, sh.world);
		goto out;
	}
	for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
		if ((uint64_t)ok.max_msg + SHF_MSG_HDR_BYTES > l.ring[i].max_rec) {
			shc_fail(r, "max_msg %u does not fit ring %d (max record %u)", ok.max_msg, i,
				 l.ring[i].max_rec);
			goto out;
		}
	}
	c->max_msg = ok.max_msg;
	if ((e = shf_shm_ring(base, &l, SHF_SHM_SEND, &c->send, false)) ||
	    (shf_ring_init_producer(&c->send), c->send.err) ||
	    (e = shf_shm_ring(base, &l, SHF_SHM_DELIVER, &c->deliver, false)) ||
	    (shf_ring_init_consumer(&c->deliver), c->deliver.err)) {
		shc_fail(r, "cannot bind the rings (%s)",
			 strerror(-(e ? e : c->send.err ? c->send.err : c->deliver.err)));
		goto out;
	}
	c->released = c->deliver.done;
	r = 0;
out:
	close(region_fd);
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
	struct shf_opts defaults;
	if (!o) {
		shf_opts_init(&defaults);
		o = &defaults;
	}
	if (!ctx_p)
		return shc_fail(-EINVAL, "ctx_p is NULL");
	if (o->version != SHF_API_VERSION)
		return shc_fail(-EINVAL, "opts.version is %u, this library speaks %u (use "
				"shf_opts_init())", o->version, SHF_API_VERSION);
	if (!fn)
		return shc_fail(-EINVAL, "no delivery callback");
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
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if ((r = shc_env_socket_path(o->socket_path, (unsigned long)geteuid(), path,
				     sizeof(path))))
		return r;

	struct shf_ctx *c = ctx_new();
	if (!c)
		return shc_fail(-ENOMEM, "out of memory");
	c->rank = rank;
	c->world = world;
	c->fn = fn;
	c->arg = arg;
	c->thread_mode = o->delivery_thread != 0;
	c->timeout_ms = o->timeout_ms == 0 ? SHC_DEFAULT_TIMEOUT_MS : o->timeout_ms;
	shc_env_job(o->job, c->job);
	/* The daemon enforces the world timeout and tells us; we only guard
	 * against a daemon that never answers.  With timeout 0 the daemon's
	 * configured world_timeout_ms applies, which we do not know: READY is
	 * then awaited without a guard of our own (a daemon that dies still
	 * ends the wait). */
	int64_t deadline = c->timeout_ms < 0 ? -1 :
		shc_deadline(c->timeout_ms > INT_MAX - SHC_OPEN_GRACE_MS ? INT_MAX :
			     c->timeout_ms + SHC_OPEN_GRACE_MS);
	int64_t ready_deadline = o->timeout_ms == 0 ? -1 : deadline;
	shc_debug("open: job %s rank %d/%d socket %s ring %u %s mode", c->job, rank, world, path,
		  o->ring_bytes, c->thread_mode ? "thread" : "poll");

	if ((r = open_connect(c, path)) || (r = open_hello(c, deadline)) ||
	    (r = open_register(c, o->ring_bytes, o->timeout_ms, deadline)) ||
	    (r = open_ready(c, ready_deadline)))
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
		ret = shc_dead_err(c);
	} else {
		ret = shc_flush_origin(c, shc_deadline(c->timeout_ms > 0 &&
						       c->timeout_ms < SHC_CLOSE_FLUSH_MS ?
						       c->timeout_ms : SHC_CLOSE_FLUSH_MS));
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
		shf_ring_ring_bell(c->stop_fd);
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
