/* SPDX-License-Identifier: MIT */
/*
 * daemon/store.c - the key-value store server: see store.h and
 * docs/protocol-store.md.
 *
 * One listen socket and non-blocking connections on the daemon's loop.
 * Each connection buffers its input until a whole request is in (the codec
 * refuses an oversized length field as soon as it arrives, so a buffer
 * never holds more than one legal request) and its output until the socket
 * takes it; a client that does not read its answers stops being read
 * (backpressure), and its output is retried on a timer because the loop
 * only watches readability.  Connections are freed in one place, reap(),
 * run as deferred work: a wake-up that fails to write to another
 * connection only marks it.
 */
#include "daemon/store.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/list.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "proto/store.h"
#include "proto/addr.h"

#define READ_CHUNK (64u * 1024u)
#define OUT_HIGH (1u << 20)      /* answers queued before we stop reading */
#define RETRY_MIN_US 1000u
#define RETRY_MAX_US 50000u
#define PEER_MAX 300

struct kv {
	struct kv *next;
	uint64_t hash;
	uint32_t klen, vlen;
	uint8_t *val;
	uint8_t key[]; /* klen bytes */
};

struct wkey {
	const uint8_t *p; /* into the waiter's allocation */
	uint32_t len;
	bool seen;
};

struct waiter {
	struct shd_list link;  /* in s->waiters */
	struct conn *c;
	uint32_t missing, n;
	struct wkey keys[];    /* then the key bytes */
};

struct conn {
	struct shd_list link;  /* in s->conns */
	struct shd_store *s;
	int fd;                /* -1: detached (fuzzer) */
	struct shd_ev *ev, *retry;
	uint64_t retry_us;
	bool dead, blocked;
	int dialect;           /* 0 until known */
	uint8_t *in;
	size_t in_len, in_cap;
	struct shd_sp_buf out;
	size_t out_off;
	uint32_t n_waiters;
	char peer[PEER_MAX];
	int cut_err;           /* detached: why it was cut */
};

struct shd_store {
	struct shd_loop *loop;
	struct shd_store_limits lim;
	struct shd_sp_limits plim;
	int fd, port;
	struct shd_ev *listen_ev, *reap_ev;
	struct shd_list conns, waiters;
	struct kv **tab;
	size_t tab_size; /* power of two */
	uint32_t n_keys, n_waiters, n_conns;
	struct shd_store_stats st;
	struct shd_ratelimit rl;
};

/* ---- the table ---- */

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

static struct kv **kv_slot(struct shd_store *s, const uint8_t *k, size_t n, uint64_t h)
{
	struct kv **pp = &s->tab[h & (s->tab_size - 1)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && (*pp)->klen == n && memcmp((*pp)->key, k, n) == 0)
			break;
	return pp;
}

static struct kv *kv_find(struct shd_store *s, const uint8_t *k, size_t n)
{
	return *kv_slot(s, k, n, hash_bytes(k, n));
}

static void kv_grow(struct shd_store *s)
{
	size_t nsz = s->tab_size * 2;
	struct kv **nt = calloc(nsz, sizeof(*nt));
	if (!nt)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < s->tab_size; i++) {
		struct kv *e = s->tab[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = nt[e->hash & (nsz - 1)];
			nt[e->hash & (nsz - 1)] = e;
		}
	}
	free(s->tab);
	s->tab = nt;
	s->tab_size = nsz;
}

static void waiters_seen(struct shd_store *s, const uint8_t *k, size_t n);

/* Set key to val (replacing); 0, -ENOSPC (key count), -ENOMEM. */
static int kv_set(struct shd_store *s, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn)
{
	uint64_t h = hash_bytes(k, kn);
	struct kv **pp = kv_slot(s, k, kn, h);
	uint8_t *nv = malloc(vn ? vn : 1);
	if (!nv)
		return -ENOMEM;
	if (vn)
		memcpy(nv, v, vn);
	if (*pp) {
		free((*pp)->val);
		(*pp)->val = nv;
		(*pp)->vlen = (uint32_t)vn;
	} else {
		if (s->n_keys >= s->lim.max_keys) {
			free(nv);
			return -ENOSPC;
		}
		struct kv *e = malloc(sizeof(*e) + kn);
		if (!e) {
			free(nv);
			return -ENOMEM;
		}
		e->next = NULL;
		e->hash = h;
		e->klen = (uint32_t)kn;
		e->vlen = (uint32_t)vn;
		e->val = nv;
		memcpy(e->key, k, kn);
		*pp = e;
		s->n_keys++;
		if (s->n_keys > s->tab_size)
			kv_grow(s);
	}
	waiters_seen(s, k, kn);
	return 0;
}

static bool kv_del(struct shd_store *s, const uint8_t *k, size_t kn)
{
	struct kv **pp = kv_slot(s, k, kn, hash_bytes(k, kn));
	struct kv *e = *pp;
	if (!e)
		return false;
	*pp = e->next;
	free(e->val);
	free(e);
	s->n_keys--;
	return true;
}

/* ---- connections ---- */

static void conn_flush(struct conn *c);
static void conn_process(struct conn *c);

static void schedule_reap(struct shd_store *s)
{
	if (s->reap_ev)
		shd_ev_activate(s->reap_ev);
}

/* The connection's pending WAITs, forgotten (CANCEL_WAIT, or it closes). */
static void drop_waiters(struct conn *c)
{
	struct shd_store *s = c->s;
	struct shd_list *pos, *tmp;
	shd_list_for_each_safe(pos, tmp, &s->waiters) {
		struct waiter *w = shd_container_of(pos, struct waiter, link);
		if (w->c == c) {
			shd_list_del(&w->link);
			s->n_waiters--;
			c->n_waiters--;
			free(w);
		}
	}
}

static void conn_free(struct conn *c)
{
	struct shd_store *s = c->s;
	drop_waiters(c);
	shd_list_del(&c->link);
	shd_ev_free(c->ev);
	shd_ev_free(c->retry);
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	shd_sp_buf_free(&c->out);
	s->n_conns--;
	free(c);
}

static void reap(int fd, void *arg)
{
	(void)fd;
	struct shd_store *s = arg;
	struct shd_list *pos, *tmp;
	shd_list_for_each_safe(pos, tmp, &s->conns) {
		struct conn *c = shd_container_of(pos, struct conn, link);
		if (c->dead)
			conn_free(c);
	}
}

/* Mark c for freeing; stop watching it now. */
static void conn_drop(struct conn *c, int err)
{
	if (c->dead)
		return;
	c->dead = true;
	c->cut_err = err;
	shd_ev_disarm(c->ev);
	shd_ev_disarm(c->retry);
	schedule_reap(c->s);
}

/* Cut a misbehaving client off, saying why. */
static void conn_bad(struct conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void conn_bad(struct conn *c, int err, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	c->s->st.conns_bad++;
	shd_log_rl(&c->s->rl, SHD_LOG_WARN, "store: client %s cut off: %s", c->peer, why);
	conn_drop(c, err);
}

static void conn_watch(struct conn *c, bool on)
{
	if (c->fd < 0 || c->dead)
		return;
	if (!on) {
		shd_ev_free(c->ev);
		c->ev = NULL;
	}
}

static void on_conn_read(int fd, void *arg);

static void on_retry(int fd, void *arg)
{
	(void)fd;
	struct conn *c = arg;
	conn_flush(c);
	if (!c->dead && c->blocked && c->out.len == c->out_off) {
		c->blocked = false;
		c->ev = shd_loop_fd(c->s->loop, c->fd, on_conn_read, c);
		if (!c->ev) {
			shd_log_rl(&c->s->rl, SHD_LOG_ERR, "store: client %s dropped: out of memory",
				   c->peer);
			conn_drop(c, -ENOMEM);
			return;
		}
		conn_process(c); /* what was read before we stopped */
		conn_flush(c);
	}
}

static void conn_flush(struct conn *c)
{
	if (c->dead)
		return;
	if (c->out.oom) {
		shd_log_rl(&c->s->rl, SHD_LOG_ERR, "store: client %s dropped: out of memory", c->peer);
		conn_drop(c, -ENOMEM);
		return;
	}
	if (c->fd < 0) { /* detached */
		c->out.len = c->out_off = 0;
		return;
	}
	while (c->out_off < c->out.len) {
		ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			c->out_off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->retry_us = c->retry_us ? c->retry_us * 2 : RETRY_MIN_US;
			if (c->retry_us > RETRY_MAX_US)
				c->retry_us = RETRY_MAX_US;
			shd_ev_arm(c->retry, c->retry_us);
			if (c->out.len - c->out_off > OUT_HIGH && !c->blocked) {
				c->blocked = true;
				conn_watch(c, false);
			}
			return;
		}
		shd_debug("store: client %s: send: %s", c->peer, strerror(w < 0 ? errno : EPIPE));
		conn_drop(c, w < 0 ? -errno : -EPIPE);
		return;
	}
	c->out.len = c->out_off = 0;
	c->retry_us = 0;
	if (c->out.cap > OUT_HIGH) {
		shd_sp_buf_free(&c->out);
	}
}

/* ---- waiters ---- */

static void waiters_seen(struct shd_store *s, const uint8_t *k, size_t n)
{
	struct shd_list *pos, *tmp;
	shd_list_for_each_safe(pos, tmp, &s->waiters) {
		struct waiter *w = shd_container_of(pos, struct waiter, link);
		for (uint32_t i = 0; i < w->n; i++) {
			struct wkey *wk = &w->keys[i];
			if (!wk->seen && wk->len == n && memcmp(wk->p, k, n) == 0) {
				wk->seen = true;
				w->missing--;
			}
		}
		if (w->missing == 0) {
			struct conn *c = w->c;
			shd_list_del(&w->link);
			s->n_waiters--;
			c->n_waiters--;
			free(w);
			if (!c->dead) {
				shd_sp_put_u8(&c->out, SHD_SP_WAIT_STOP);
				conn_flush(c);
			}
		}
	}
}

/* 1 all keys of the list exist, else 0 */
static bool all_exist(struct shd_store *s, const struct shd_sp_req *q)
{
	size_t pos = 0;
	for (uint64_t i = 0; i < q->n; i++) {
		struct shd_sp_str k = shd_sp_list_next(q->list, &pos);
		if (!kv_find(s, k.p, (size_t)k.len))
			return false;
	}
	return true;
}

static int add_waiter(struct conn *c, const struct shd_sp_req *q)
{
	struct shd_store *s = c->s;
	if (s->n_waiters >= s->lim.max_waiters) {
		s->st.refused_waiters++;
		conn_bad(c, -EAGAIN, "WAIT refused: %u waits pending (store_max_waiters)",
			 s->n_waiters);
		return -EAGAIN;
	}
	size_t bytes = sizeof(struct waiter) + q->n * sizeof(struct wkey) + q->list_len;
	struct waiter *w = calloc(1, bytes);
	if (!w) {
		conn_bad(c, -ENOMEM, "WAIT: out of memory");
		return -ENOMEM;
	}
	uint8_t *kb = (uint8_t *)&w->keys[q->n];
	size_t pos = 0;
	w->c = c;
	w->n = (uint32_t)q->n;
	for (uint64_t i = 0; i < q->n; i++) {
		struct shd_sp_str k = shd_sp_list_next(q->list, &pos);
		memcpy(kb, k.p, (size_t)k.len);
		w->keys[i].p = kb;
		w->keys[i].len = (uint32_t)k.len;
		kb += k.len;
		if (kv_find(s, k.p, (size_t)k.len))
			w->keys[i].seen = true;
		else
			w->missing++;
	}
	shd_list_add_tail(&s->waiters, &w->link);
	s->n_waiters++;
	c->n_waiters++;
	return 0;
}

/* ---- requests ---- */

static int set_or_cut(struct conn *c, const char *what, const uint8_t *k, size_t kn,
		      const uint8_t *v, size_t vn)
{
	int r = kv_set(c->s, k, kn, v, vn);
	if (r == -ENOSPC) {
		c->s->st.refused_keys++;
		conn_bad(c, r, "%s refused: the store holds %u keys (store_max_keys)", what,
			 c->s->n_keys);
	} else if (r < 0) {
		conn_bad(c, r, "%s: out of memory", what);
	}
	return r;
}

/* ADD: the key's decimal value plus q->num (a missing key counts as 0). */
static void op_add(struct conn *c, const struct shd_sp_req *q)
{
	struct shd_store *s = c->s;
	int64_t v = 0;
	struct kv *e = kv_find(s, q->key.p, q->key.len);
	if (e && shd_sp_parse_i64(e->val, e->vlen, &v) < 0) {
		conn_bad(c, -EINVAL, "ADD to a value that is not a decimal integer");
		return;
	}
	v = (int64_t)((uint64_t)v + (uint64_t)q->num); /* wraps, like torch */
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRId64, v);
	if ((uint64_t)n > s->lim.max_value_bytes) {
		s->st.refused_value_bytes++;
		conn_bad(c, -EMSGSIZE, "ADD: value longer than store_max_value_bytes");
		return;
	}
	if (set_or_cut(c, "ADD", q->key.p, q->key.len, (const uint8_t *)num, (size_t)n) == 0)
		shd_sp_put_u64(&c->out, (uint64_t)v);
}

/* APPEND: q->v1 after the key's value (a missing key is set to it). */
static void op_append(struct conn *c, const struct shd_sp_req *q)
{
	struct shd_store *s = c->s;
	struct kv *e = kv_find(s, q->key.p, q->key.len);
	if (!e) {
		set_or_cut(c, "APPEND", q->key.p, q->key.len, q->v1.p, q->v1.len);
		return;
	}
	if ((uint64_t)e->vlen + q->v1.len > s->lim.max_value_bytes) {
		s->st.refused_value_bytes++;
		conn_bad(c, -EMSGSIZE, "APPEND: value longer than store_max_value_bytes");
		return;
	}
	uint8_t *nv = realloc(e->val, e->vlen + q->v1.len + 1);
	if (!nv) {
		conn_bad(c, -ENOMEM, "APPEND: out of memory");
		return;
	}
	memcpy(nv + e->vlen, q->v1.p, q->v1.len);
	e->val = nv;
	e->vlen += (uint32_t)q->v1.len;
}

static void handle(struct conn *c, const struct shd_sp_req *q)
{
	struct shd_store *s = c->s;
	struct shd_sp_buf *o = &c->out;
	struct kv *e;
	s->st.requests++;
	switch (q->op) {
	case SHD_SP_SET:
		set_or_cut(c, "SET", q->key.p, q->key.len, q->v1.p, q->v1.len);
		break;
	case SHD_SP_COMPARE_SET:
		e = kv_find(s, q->key.p, q->key.len);
		if (!e) {
			if (q->v1.len != 0) { /* torch 1.13: answers `expected`, sets nothing */
				shd_sp_put_str(o, q->v1.p, q->v1.len);
				break;
			}
		} else if (e->vlen != q->v1.len || memcmp(e->val, q->v1.p, q->v1.len) != 0) {
			shd_sp_put_str(o, e->val, e->vlen);
			break;
		}
		if (set_or_cut(c, "COMPARE_SET", q->key.p, q->key.len, q->v2.p, q->v2.len) == 0)
			shd_sp_put_str(o, q->v2.p, q->v2.len);
		break;
	case SHD_SP_GET:
		e = kv_find(s, q->key.p, q->key.len);
		if (!e) {
			conn_bad(c, -ENOENT, "GET of a missing key (clients WAIT first)");
			break;
		}
		shd_sp_put_str(o, e->val, e->vlen);
		break;
	case SHD_SP_ADD:
		op_add(c, q);
		break;
	case SHD_SP_CHECK:
		shd_sp_put_u8(o, all_exist(s, q) ? SHD_SP_CHECK_READY : SHD_SP_CHECK_NOT_READY);
		break;
	case SHD_SP_WAIT:
		if (all_exist(s, q))
			shd_sp_put_u8(o, SHD_SP_WAIT_STOP);
		else
			add_waiter(c, q);
		break;
	case SHD_SP_NUM_KEYS:
		shd_sp_put_u64(o, s->n_keys);
		break;
	case SHD_SP_DELETE_KEY:
		shd_sp_put_u64(o, kv_del(s, q->key.p, q->key.len) ? 1 : 0);
		break;
	case SHD_SP_VALIDATE:
		if ((uint32_t)q->num != SHD_SP_MAGIC)
			conn_bad(c, -EPROTO, "VALIDATE with a wrong magic number");
		break;
	case SHD_SP_APPEND:
		op_append(c, q);
		break;
	case SHD_SP_MULTI_GET: {
		size_t pos = 0;
		if (!all_exist(s, q)) {
			conn_bad(c, -ENOENT, "MULTI_GET of a missing key (clients WAIT first)");
			break;
		}
		for (uint64_t i = 0; i < q->n; i++) {
			struct shd_sp_str k = shd_sp_list_next(q->list, &pos);
			e = kv_find(s, k.p, k.len);
			shd_sp_put_str(o, e->val, e->vlen);
		}
		break;
	}
	case SHD_SP_MULTI_SET: {
		size_t pos = 0;
		for (uint64_t i = 0; i < q->n && !c->dead; i++) {
			struct shd_sp_str k = shd_sp_list_next(q->list, &pos);
			struct shd_sp_str v = shd_sp_list_next(q->list, &pos);
			set_or_cut(c, "MULTI_SET", k.p, k.len, v.p, v.len);
		}
		break;
	}
	case SHD_SP_CANCEL_WAIT:
		drop_waiters(c);
		shd_sp_put_u8(o, SHD_SP_WAIT_CANCELED);
		break;
	case SHD_SP_PING:
		shd_sp_put_u32(o, (uint32_t)q->num);
		break;
	case SHD_SP_WATCH_KEY:
	case SHD_SP_OP_MAX:
		conn_bad(c, -EOPNOTSUPP, "%s is not served by this store", shd_sp_op_name(q->op));
		break;
	}
}

/* Run every whole request in c's input. */
static void conn_process(struct conn *c)
{
	struct shd_store *s = c->s;
	size_t off = 0;
	while (!c->dead && !c->blocked && off < c->in_len) {
		const uint8_t *b = c->in + off;
		size_t n = c->in_len - off;
		if (!c->dialect) {
			c->dialect = shd_sp_dialect(b, n);
			if (!c->dialect)
				break;
		}
		struct shd_sp_req q;
		const char *why = "?";
		long r = shd_sp_parse(b, n, c->dialect, &s->plim, &q, &why);
		if (r == 0)
			break;
		if (r < 0) {
			if (r == -EMSGSIZE && strstr(why, "key"))
				s->st.refused_key_bytes++;
			else if (r == -EMSGSIZE)
				s->st.refused_value_bytes++;
			conn_bad(c, (int)r, "%s (query byte %u)", why, b[0]);
			break;
		}
		handle(c, &q);
		off += (size_t)r;
		if (c->out.len - c->out_off > OUT_HIGH)
			conn_flush(c);
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

static void on_conn_read(int fd, void *arg)
{
	struct conn *c = arg;
	if (c->dead || c->blocked)
		return;
	if (c->in_cap - c->in_len < READ_CHUNK) {
		size_t cap = c->in_len + READ_CHUNK;
		uint8_t *p = realloc(c->in, cap);
		if (!p) {
			shd_log_rl(&c->s->rl, SHD_LOG_ERR, "store: client %s dropped: out of memory",
				   c->peer);
			conn_drop(c, -ENOMEM);
			return;
		}
		c->in = p;
		c->in_cap = cap;
	}
	ssize_t n = recv(fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		shd_debug("store: client %s closed%s%s", c->peer, n < 0 ? ": " : "",
			  n < 0 ? strerror(errno) : "");
		conn_drop(c, 0);
		return;
	}
	c->in_len += (size_t)n;
	conn_process(c);
	conn_flush(c);
	/* keep the buffer near the size of what it holds */
	if (c->in_len == 0 && c->in_cap > 4 * READ_CHUNK) {
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
}

static struct conn *conn_new(struct shd_store *s, int fd, const char *peer)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->s = s;
	c->fd = fd;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	shd_list_add_tail(&s->conns, &c->link);
	s->n_conns++;
	s->st.conns++;
	return c;
}

static void peer_name(const struct sockaddr_storage *sa, socklen_t len, char *buf, size_t n)
{
	char host[256], port[16];
	if (getnameinfo((const struct sockaddr *)sa, len, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(buf, n, "?");
	else if (sa->ss_family == AF_INET6)
		snprintf(buf, n, "[%s]:%s", host, port);
	else
		snprintf(buf, n, "%s:%s", host, port);
}

static void on_accept(int lfd, void *arg)
{
	struct shd_store *s = arg;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				shd_log_rl(&s->rl, SHD_LOG_WARN, "store: accept: %s", strerror(errno));
			return;
		}
		char peer[PEER_MAX];
		peer_name(&sa, len, peer, sizeof(peer));
		if (s->n_conns >= s->lim.max_conns) {
			s->st.conns_refused++;
			shd_log_rl(&s->rl, SHD_LOG_WARN,
				   "store: connection from %s refused: %u open (store_max_conns)",
				   peer, s->n_conns);
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = conn_new(s, fd, peer);
		if (c) {
			c->ev = shd_loop_fd(s->loop, fd, on_conn_read, c);
			c->retry = shd_loop_timer(s->loop, on_retry, c);
		}
		if (!c || !c->ev || !c->retry) {
			shd_log_rl(&s->rl, SHD_LOG_ERR, "store: connection from %s: out of memory",
				   peer);
			if (c)
				conn_free(c);
			else
				close(fd);
			continue;
		}
		shd_debug("store: client %s connected", peer);
	}
}

/* ---- life cycle ---- */

static int store_alloc(const struct shd_store_limits *lim, struct shd_store **out)
{
	struct shd_store *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lim = *lim;
	s->plim.max_key_bytes = lim->max_key_bytes;
	s->plim.max_value_bytes = lim->max_value_bytes;
	s->plim.max_req_keys = lim->max_keys < SHD_SP_REQ_KEYS_MAX ? lim->max_keys
								   : SHD_SP_REQ_KEYS_MAX;
	s->fd = -1;
	s->tab_size = 64;
	s->tab = calloc(s->tab_size, sizeof(*s->tab));
	struct shd_ratelimit rl = SHD_RATELIMIT_INIT(5000, 10);
	s->rl = rl;
	shd_list_init(&s->conns);
	shd_list_init(&s->waiters);
	if (!s->tab) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

int shd_store_open(struct shd_loop *loop, const char *host, const char *port,
		   const struct shd_store_limits *lim, struct shd_store **out)
{
	struct shd_store *s;
	int r = store_alloc(lim, &s);
	if (r < 0) {
		shd_err("store: out of memory");
		return r;
	}
	s->loop = loop;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res = NULL;
	int g = getaddrinfo(host && *host ? host : NULL, port, &hints, &res);
	if (g != 0) {
		shd_err("store: cannot resolve %s:%s: %s", host, port, gai_strerror(g));
		shd_store_close(s);
		return -EADDRNOTAVAIL;
	}
	r = -EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			r = -errno;
			close(fd);
			continue;
		}
		s->fd = fd;
		r = 0;
		break;
	}
	freeaddrinfo(res);
	if (r < 0) {
		shd_err("store: cannot listen on %s:%s: %s", host, port, strerror(-r));
		shd_store_close(s);
		return r;
	}
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char name[PEER_MAX] = "?";
	if (getsockname(s->fd, (struct sockaddr *)&sa, &len) == 0) {
		peer_name(&sa, len, name, sizeof(name));
		s->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
							 : ((struct sockaddr_in *)&sa)->sin_port);
	}
	s->listen_ev = shd_loop_fd(loop, s->fd, on_accept, s);
	s->reap_ev = shd_loop_defer(loop, reap, s);
	if (!s->listen_ev || !s->reap_ev) {
		shd_err("store: out of memory");
		shd_store_close(s);
		return -ENOMEM;
	}
	shd_notice("store: listening on %s (max %u keys of %u + %u bytes, %u connections, "
		   "%u waits)", name, lim->max_keys, lim->max_key_bytes, lim->max_value_bytes,
		   lim->max_conns, lim->max_waiters);
	*out = s;
	return 0;
}

int shd_store_open_cfg(struct shd_loop *loop, const struct shd_config *cfg,
		       struct shd_store **out)
{
	char host[SHF_ADDR_HOST_MAX], port[SHF_ADDR_PORT_MAX];
	const char *why = "?";
	struct shd_store_limits lim = {cfg->store_max_keys, cfg->store_max_key_bytes,
				       cfg->store_max_value_bytes, cfg->store_max_conns,
				       cfg->store_max_waiters};
	if (shf_addr_parse(cfg->store_listen, strlen(cfg->store_listen), SHF_ADDR_NEED_PORT, host,
			   sizeof(host), port, sizeof(port), &why) < 0) {
		shd_err("store_listen=%s: %s", cfg->store_listen, why);
		return -EINVAL;
	}
	return shd_store_open(loop, host, port, &lim, out);
}

void shd_store_close(struct shd_store *s)
{
	if (!s)
		return;
	struct shd_list *pos, *tmp;
	shd_list_for_each_safe(pos, tmp, &s->conns)
		conn_free(shd_container_of(pos, struct conn, link));
	for (size_t i = 0; i < s->tab_size; i++) {
		struct kv *e = s->tab[i], *next;
		for (; e; e = next) {
			next = e->next;
			free(e->val);
			free(e);
		}
	}
	free(s->tab);
	shd_ev_free(s->listen_ev);
	shd_ev_free(s->reap_ev);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

int shd_store_port(const struct shd_store *s)
{
	return s->port;
}

void shd_store_get_stats(const struct shd_store *s, struct shd_store_stats *st)
{
	*st = s->st;
	st->conns_open = s->n_conns;
	st->keys = s->n_keys;
	st->waiters = s->n_waiters;
}

int shd_store_new_detached(const struct shd_store_limits *lim, struct shd_store **out)
{
	return store_alloc(lim, out);
}

int shd_store_feed(struct shd_store *s, const void *data, size_t len)
{
	struct conn *c = NULL;
	if (!shd_list_empty(&s->conns))
		c = shd_container_of(s->conns.next, struct conn, link);
	if (!c && !(c = conn_new(s, -1, "fuzz")))
		return -ENOMEM;
	if (len > SIZE_MAX - c->in_len)
		return -ENOMEM;
	if (c->in_cap - c->in_len < len) {
		uint8_t *p = realloc(c->in, c->in_len + len);
		if (!p)
			return -ENOMEM;
		c->in = p;
		c->in_cap = c->in_len + len;
	}
	if (len)
		memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	conn_process(c);
	conn_flush(c);
	int err = c->dead ? (c->cut_err ? c->cut_err : -EPIPE) : 0;
	if (c->dead)
		conn_free(c);
	return err;
}
