/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/store_client.c - blocking TCPStore client: see rdv/store_client.h.
 * Non-blocking socket + poll() against a deadline for every step.
 */
#include "daemon/rdv/store_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/errbuf.h"
#include "proto/store.h"

#define DIALECT SHD_SP_V1

struct shd_sc {
	char host[256], port[16];
	int fd;        /* -1: reconnect at the next call */
	int io_ms;
	uint64_t max_value;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t deadline_of(int ms)
{
	return ms < 0 ? -1 : now_ms() + ms;
}

/* poll fd for ev until deadline (-1 forever): 0 ready, -ETIMEDOUT, -errno */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	for (;;) {
		int ms = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			ms = left > 1000000 ? 1000000 : (int)left;
		}
		struct pollfd p = {.fd = fd, .events = ev};
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static void drop(struct shd_sc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int do_connect(struct shd_sc *c, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV}, *res = NULL;
	int64_t deadline = now_ms() + timeout_ms;
	int g = getaddrinfo(c->host, c->port, &hints, &res);
	if (g != 0) {
		shd_errf(err, errlen, "store %s:%s: cannot resolve: %s", c->host, c->port,
			 gai_strerror(g));
		return -EADDRNOTAVAIL;
	}
	int r = -ECONNREFUSED;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			if (errno != EINPROGRESS) {
				r = -errno;
				close(fd);
				continue;
			}
			r = wait_fd(fd, POLLOUT, deadline);
			int so = 0;
			socklen_t sl = sizeof(so);
			if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so)
				r = -so;
			if (r < 0) {
				close(fd);
				if (r == -ETIMEDOUT)
					break;
				continue;
			}
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		r = 0;
		break;
	}
	freeaddrinfo(res);
	if (r < 0)
		shd_errf(err, errlen, "store %s:%s: cannot connect: %s", c->host, c->port,
			 strerror(-r));
	return r;
}

int shd_sc_connect(const char *host, const char *port, int timeout_ms, struct shd_sc **out,
		   char *err, size_t errlen)
{
	if (!host || !port || strlen(host) >= 256 || strlen(port) >= 16) {
		shd_errf(err, errlen, "store address too long or missing");
		return -EINVAL;
	}
	struct shd_sc *c = calloc(1, sizeof(*c));
	if (!c) {
		shd_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	strcpy(c->host, host);
	strcpy(c->port, port);
	c->fd = -1;
	c->io_ms = timeout_ms > 0 ? timeout_ms : 30000;
	c->max_value = UINT64_C(64) << 20;
	int r = do_connect(c, c->io_ms, err, errlen);
	if (r < 0) {
		free(c);
		return r;
	}
	*out = c;
	return 0;
}

void shd_sc_close(struct shd_sc *c)
{
	if (!c)
		return;
	drop(c);
	free(c);
}

void shd_sc_set_max_value(struct shd_sc *c, uint64_t bytes)
{
	c->max_value = bytes;
}

static int ensure(struct shd_sc *c, char *err, size_t errlen)
{
	return c->fd >= 0 ? 0 : do_connect(c, c->io_ms, err, errlen);
}

static int fail(struct shd_sc *c, int r, const char *what, char *err, size_t errlen)
{
	drop(c);
	if (r == -ECONNRESET || r == -EPIPE) {
		shd_errf(err, errlen,
			 "store %s:%s closed the connection during %s (a request over one of its "
			 "bounds or malformed: its log says which; or it stopped)",
			 c->host, c->port, what);
		return -ECONNRESET;
	}
	shd_errf(err, errlen, "store %s:%s: %s: %s", c->host, c->port, what, strerror(-r));
	return r;
}

static int send_all(struct shd_sc *c, const uint8_t *p, size_t n, int64_t deadline)
{
	while (n) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE ? -ECONNRESET : -errno;
		int r = wait_fd(c->fd, POLLOUT, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

static int recv_all(struct shd_sc *c, void *buf, size_t n, int64_t deadline)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t got = recv(c->fd, p, n, MSG_DONTWAIT);
		if (got > 0) {
			p += got;
			n -= (size_t)got;
			continue;
		}
		if (got == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		int r = wait_fd(c->fd, POLLIN, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

static int send_req(struct shd_sc *c, const struct shd_sp_req *q, const char *what, char *err,
		    size_t errlen)
{
	int r = ensure(c, err, errlen);
	if (r < 0)
		return r;
	struct shd_sp_buf b = {0};
	r = shd_sp_encode(&b, DIALECT, q);
	if (r == 0)
		r = send_all(c, b.p, b.len, deadline_of(c->io_ms));
	shd_sp_buf_free(&b);
	return r < 0 ? fail(c, r, what, err, errlen) : 0;
}

static int recv_u64(struct shd_sc *c, uint64_t *v, const char *what, char *err, size_t errlen)
{
	uint8_t b[8];
	int r = recv_all(c, b, 8, deadline_of(c->io_ms));
	if (r < 0)
		return fail(c, r, what, err, errlen);
	*v = shd_sp_get_u64(b);
	return 0;
}

static int recv_u8(struct shd_sc *c, uint8_t *v, int64_t deadline, const char *what, char *err,
		   size_t errlen)
{
	int r = recv_all(c, v, 1, deadline);
	return r < 0 ? fail(c, r, what, err, errlen) : 0;
}

static int recv_bytes(struct shd_sc *c, void **val, size_t *len, const char *what, char *err,
		      size_t errlen)
{
	uint64_t n;
	int r = recv_u64(c, &n, what, err, errlen);
	if (r < 0)
		return r;
	if (n > c->max_value) {
		drop(c);
		shd_errf(err, errlen, "store %s:%s: %s: answer of %llu bytes is over the limit",
			 c->host, c->port, what, (unsigned long long)n);
		return -EMSGSIZE;
	}
	uint8_t *p = malloc((size_t)n + 1);
	if (!p) {
		drop(c);
		shd_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = recv_all(c, p, (size_t)n, deadline_of(c->io_ms));
	if (r < 0) {
		free(p);
		return fail(c, r, what, err, errlen);
	}
	p[n] = 0;
	if (val)
		*val = p;
	else
		free(p);
	if (len)
		*len = (size_t)n;
	return 0;
}

static struct shd_sp_str str_of(const char *s)
{
	struct shd_sp_str x = {(const uint8_t *)s, strlen(s)};
	return x;
}

int shd_sc_num_keys(struct shd_sc *c, int64_t *n, char *err, size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_NUM_KEYS};
	uint64_t v;
	int r = send_req(c, &q, "GETNUMKEYS", err, errlen);
	if (r == 0 && (r = recv_u64(c, &v, "GETNUMKEYS", err, errlen)) == 0 && n)
		*n = (int64_t)v;
	return r;
}

int shd_sc_set(struct shd_sc *c, const char *key, const void *val, size_t len, char *err,
	       size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_SET, .key = str_of(key)};
	q.v1.p = val;
	q.v1.len = len;
	int r = send_req(c, &q, "SET", err, errlen);
	return r < 0 ? r : shd_sc_num_keys(c, NULL, err, errlen);
}

int shd_sc_add(struct shd_sc *c, const char *key, int64_t delta, int64_t *result, char *err,
	       size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_ADD, .key = str_of(key), .num = delta};
	uint64_t v;
	int r = send_req(c, &q, "ADD", err, errlen);
	if (r == 0 && (r = recv_u64(c, &v, "ADD", err, errlen)) == 0 && result)
		*result = (int64_t)v;
	return r;
}

int shd_sc_delete(struct shd_sc *c, const char *key, char *err, size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_DELETE_KEY, .key = str_of(key)};
	uint64_t v;
	int r = send_req(c, &q, "DELETE_KEY", err, errlen);
	if (r == 0 && (r = recv_u64(c, &v, "DELETE_KEY", err, errlen)) == 0)
		r = v == 1;
	return r;
}

int shd_sc_compare_set(struct shd_sc *c, const char *key, const void *expected, size_t elen,
		       const void *desired, size_t dlen, void **cur, size_t *cur_len, char *err,
		       size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_COMPARE_SET, .key = str_of(key)};
	q.v1.p = expected;
	q.v1.len = elen;
	q.v2.p = desired;
	q.v2.len = dlen;
	int r = send_req(c, &q, "COMPARE_SET", err, errlen);
	return r < 0 ? r : recv_bytes(c, cur, cur_len, "COMPARE_SET", err, errlen);
}

/* A CHECK or WAIT request's key list. */
static int key_list(struct shd_sp_req *q, struct shd_sp_buf *b, const char *const *keys,
		    size_t n, char *err, size_t errlen)
{
	if (n == 0 || n > SHD_SP_REQ_KEYS_MAX) {
		shd_errf(err, errlen, "%zu keys: must be 1..%u", n, SHD_SP_REQ_KEYS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		shd_sp_put_str(b, keys[i], strlen(keys[i]));
	if (b->oom) {
		shd_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	q->n = n;
	q->list = b->p;
	q->list_len = b->len;
	return 0;
}

int shd_sc_check(struct shd_sc *c, const char *const *keys, size_t n, char *err, size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_CHECK};
	struct shd_sp_buf b = {0};
	uint8_t v = 0;
	int r = key_list(&q, &b, keys, n, err, errlen);
	if (r == 0)
		r = send_req(c, &q, "CHECK", err, errlen);
	shd_sp_buf_free(&b);
	if (r == 0 && (r = recv_u8(c, &v, deadline_of(c->io_ms), "CHECK", err, errlen)) == 0) {
		if (v > 1) {
			drop(c);
			shd_errf(err, errlen, "store %s:%s: CHECK: bad answer %u", c->host, c->port,
				 v);
			return -EPROTO;
		}
		r = v == SHD_SP_CHECK_READY;
	}
	return r;
}

int shd_sc_wait(struct shd_sc *c, const char *const *keys, size_t n, int timeout_ms, char *err,
		size_t errlen)
{
	struct shd_sp_req q = {.op = SHD_SP_WAIT};
	struct shd_sp_buf b = {0};
	uint8_t v = 0;
	int64_t deadline = deadline_of(timeout_ms);
	int r = key_list(&q, &b, keys, n, err, errlen);
	if (r == 0)
		r = send_req(c, &q, "WAIT", err, errlen);
	shd_sp_buf_free(&b);
	if (r < 0)
		return r;
	r = recv_all(c, &v, 1, deadline);
	if (r == -ETIMEDOUT) {
		/* torch 1.13 cannot cancel a wait: its late answer would
		 * desynchronise the stream, so this connection is done */
		drop(c);
		shd_errf(err, errlen, "store %s:%s: WAIT for %s%s: timed out after %d ms", c->host,
			 c->port, keys[0], n > 1 ? " and others" : "", timeout_ms);
		return r;
	}
	if (r < 0)
		return fail(c, r, "WAIT", err, errlen);
	if (v != SHD_SP_WAIT_STOP) {
		drop(c);
		shd_errf(err, errlen, "store %s:%s: WAIT: bad answer %u", c->host, c->port, v);
		return -EPROTO;
	}
	return 0;
}

int shd_sc_get(struct shd_sc *c, const char *key, int timeout_ms, void **val, size_t *len,
	       char *err, size_t errlen)
{
	int r = shd_sc_wait(c, &key, 1, timeout_ms, err, errlen);
	if (r < 0)
		return r;
	struct shd_sp_req q = {.op = SHD_SP_GET, .key = str_of(key)};
	r = send_req(c, &q, "GET", err, errlen);
	return r < 0 ? r : recv_bytes(c, val, len, "GET", err, errlen);
}
