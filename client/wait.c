/* SPDX-License-Identifier: MIT */
/*
 * client/wait.c - the wait engine every blocking call shares: deadlines,
 * the death of the connection, the reply waiters, the leader/gen protocol
 * (shc_wait(): one sleeper poll()s for everybody) and the control-socket
 * reader (only the current leader reads the socket).
 *
 * The bottom of the client's call graph: it calls only error.c (client.h)
 * and proto/.  The poll-mode wait step that also runs callbacks
 * (shc_wait_step(), shc_waiter_wait()) sits next to delivery in deliver.c.
 *
 * Everything the daemon sends is validated before use: shf_ipc_recv()
 * checks framing and sizes, dispatch() checks types, ids and errno ranges.
 * A daemon that breaks the protocol kills the context (-ENOTCONN, with the
 * reason as detail); it never crashes or hangs the application.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/wait.h"

_Thread_local struct shf_ctx *shc_in_cb;

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

int shc_call_deadline(struct shf_ctx *c, int timeout_ms, int64_t *deadline_p)
{
	if (timeout_ms < -1)
		return shc_fail(-EINVAL, "timeout_ms %d: use > 0, 0 (default) or -1 (forever)",
				timeout_ms);
	if (shc_is_dead(c))
		return shc_dead_err(c);
	*deadline_p = shc_deadline(timeout_ms == 0 ? c->timeout_ms : timeout_ms);
	return 0;
}

int shc_poll_ms(int64_t deadline)
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

/* err: what every later call returns (-ENOTCONN, or -ECANCELED when the
 * operator drained the job: shufflectl drain) */
__attribute__((format(printf, 3, 0)))
static void mark_dead_v(struct shf_ctx *c, int err, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&c->mu);
	if (!atomic_load_explicit(&c->dead, memory_order_relaxed)) {
		vsnprintf(c->dead_detail, sizeof(c->dead_detail), fmt, ap);
		atomic_store_explicit(&c->dead, err, memory_order_release);
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
	mark_dead_v(c, -ENOTCONN, fmt, ap);
	va_end(ap);
}

/* The daemon's unsolicited ERROR: dead with its errno when it is one a
 * caller can act on (-ECANCELED: the job was drained), else -ENOTCONN. */
__attribute__((format(printf, 3, 4)))
static void mark_dead_err(struct shf_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mark_dead_v(c, err == -ECANCELED ? err : -ENOTCONN, fmt, ap);
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
	int err = atomic_load_explicit(&c->dead, memory_order_relaxed);
	pthread_mutex_unlock(&c->mu);
	return err ? err : -ENOTCONN;
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

/* ------------------------------------------------------ control socket */

/* One validated datagram in c->rx (leader only). */
/* One handler per reply type: h its header, body what follows, blen its
 * length (shf_ipc_check() made sure of sizes and of text endings), seq
 * the last mark id handed out. */
static void on_flush_done(struct shf_ctx *c, const struct shf_ipc_hdr *h,
			  const unsigned char *body, uint64_t seq)
{
	struct shf_ipc_flush_done m;
	memcpy(&m, body, sizeof(m));
	if (m.id == 0 || m.id > seq || h->id != (uint32_t)m.id ||
	    (m.status != 0 && !shc_errno_ok(m.status))) {
		shc_protocol_error(c, "FLUSH_DONE for mark %llu (header id %u, status %d) "
				   "that was never sent", (unsigned long long)m.id, h->id, m.status);
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
		w->status = m.status;
		w->dropped_dead = c->unrep_dead;
		w->dropped_down = c->unrep_down;
		c->unrep_dead = c->unrep_down = 0;
		/* with SHF_FLUSH_DONE_WHY the ERROR that follows ends the
		 * wait, with the reason (a failure only) */
		w->done = !(m.status < 0 && (m.flags & SHF_FLUSH_DONE_WHY));
	}
	pthread_mutex_unlock(&c->mu);
	if (!w)
		shc_debug("late FLUSH_DONE for mark %llu ignored", (unsigned long long)m.id);
}

static void on_epoch_done(struct shf_ctx *c, const struct shf_ipc_hdr *h,
			  const unsigned char *body, uint64_t seq)
{
	struct shf_ipc_epoch_done m;
	memcpy(&m, body, sizeof(m));
	if (m.id == 0 || m.id > seq || h->id != (uint32_t)m.id || m.phase != 2 ||
	    (m.status != 0 && !shc_errno_ok(m.status))) {
		shc_protocol_error(c, "EPOCH_DONE for epoch %llu phase %u (header id %u) "
				   "that was never requested", (unsigned long long)m.id, m.phase,
				   h->id);
		return;
	}
	pthread_mutex_lock(&c->mu);
	struct shc_waiter *w = waiter_find(c, SHF_IPC_EPOCH_DONE, m.id);
	if (w) {
		w->done = true;
		w->status = m.status;
	}
	pthread_mutex_unlock(&c->mu);
}

static void on_node_info_ok(struct shf_ctx *c, const struct shf_ipc_hdr *h,
			    const unsigned char *body, size_t blen)
{
	pthread_mutex_lock(&c->mu);
	struct shc_waiter *w = waiter_find(c, SHF_IPC_NODE_INFO_OK, h->id);
	bool fits = !w || blen <= w->reply_cap;
	if (w && fits) {
		memcpy(w->reply, body, blen);
		w->reply_len = blen;
		w->done = true;
	}
	pthread_mutex_unlock(&c->mu);
	if (!fits)
		shc_protocol_error(c, "NODE_INFO_OK of %zu bytes for request %u: more than asked",
				   blen, h->id);
	else if (!w)
		shc_debug("late NODE_INFO_OK for request %u ignored", h->id);
}

/* A reply that carries a text and ends a waiter: EPOCH_WHO_OK (status 0)
 * or ERROR (its errno). */
static void text_reply(struct shf_ctx *c, uint16_t type, uint32_t id, int status,
		       const char *text, const char *what)
{
	pthread_mutex_lock(&c->mu);
	struct shc_waiter *w = waiter_find(c, type, id);
	if (w) {
		w->done = true;
		w->status = status;
		snprintf(w->text, sizeof(w->text), "%s", text);
	}
	pthread_mutex_unlock(&c->mu);
	if (!w)
		shc_debug("late %s for request %u ignored: %s", what, id, text);
}

static void on_error(struct shf_ctx *c, const struct shf_ipc_hdr *h, const unsigned char *body)
{
	struct shf_ipc_error e;
	memcpy(&e, body, sizeof(e));
	const char *text = (const char *)body + sizeof(e);
	if (!shc_errno_ok(e.err))
		shc_protocol_error(c, "ERROR with errno %d: %.100s", e.err, text);
	else if (h->id == 0) /* unsolicited: the daemon is cutting us off */
		mark_dead_err(c, e.err, "daemon: %.200s", text);
	else
		text_reply(c, 0, h->id, e.err, text, "ERROR");
}

static void dispatch(struct shf_ctx *c, size_t n)
{
	struct shf_ipc_hdr h;
	memcpy(&h, c->rx.buf, sizeof(h));
	const unsigned char *body = c->rx.buf + sizeof(h);
	/* relaxed: see mark_seq in client.h */
	uint64_t seq = atomic_load_explicit(&c->mark_seq, memory_order_relaxed);
	switch (h.type) {
	case SHF_IPC_FLUSH_DONE:
		on_flush_done(c, &h, body, seq);
		return;
	case SHF_IPC_EPOCH_DONE:
		on_epoch_done(c, &h, body, seq);
		return;
	case SHF_IPC_NODE_INFO_OK:
		on_node_info_ok(c, &h, body, n - sizeof(h)); /* exact: shf_ipc_check() */
		return;
	case SHF_IPC_EPOCH_WHO_OK:
		text_reply(c, SHF_IPC_EPOCH_WHO_OK, h.id, 0,
			   (const char *)body + sizeof(struct shf_ipc_epoch_who_ok), "EPOCH_WHO_OK");
		return;
	case SHF_IPC_ERROR:
		on_error(c, &h, body);
		return;
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
	int r = poll(p, np, shc_poll_ms(deadline));
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
