/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/conn.c - shufflectl's control-socket client.
 *
 * shufflectl is one more client of the daemon's control socket
 * (proto/ipc.h): HELLO -> HELLO_OK, then CTL(cmd) -> CTL_REPLY chunks of
 * one JSON document, concatenated until more == 0.  Every wait (connect,
 * every answer) is bounded by one deadline set at connect time.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/shufflectl/shufflectl.h"
#include "proto/ipc.h"

#define REPLY_MAX (256u << 20) /* bound on one JSON answer */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int conn_left_ms(const struct conn *c)
{
	if (c->deadline == INT64_MAX)
		return -1;
	int64_t left = c->deadline - now_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

int conn_connect(struct conn *c, const char *opt, int timeout_ms)
{
	c->next_id = 1;
	c->deadline = timeout_ms > 0 ? now_ms() + timeout_ms : INT64_MAX;
	/* the library's rule (client/discover.c), so the two never disagree;
	 * it also checks the daemon's uid (a daemon of another user may squat
	 * the runtime directory: ask it nothing) */
	struct shc_found f;
	int r = shc_discover(opt, "-s", timeout_ms, &f);
	c->daemon_cred = f.cred;
	snprintf(c->path_buf, sizeof(c->path_buf), "%s", f.path);
	c->path = c->path_buf;
	if (r < 0)
		return r;
	c->fd = f.fd;
	return 0;
}

int conn_open(struct conn *c, const char *opt, int timeout_ms)
{
	c->fd = -1;
	int r = conn_connect(c, opt, timeout_ms);
	if (r == -ECONNREFUSED) {
		errmsg("shuffled is not running: %s", shf_error_detail());
		return EXIT_NOT_RUNNING;
	}
	if (r == -EPERM) {
		errmsg("refusing the daemon at %s: it runs as uid %u (pid %d), which is neither "
		       "root, your uid %u nor the system user '%s' (another user may have taken "
		       "the runtime directory)", c->path, (unsigned)c->daemon_cred.uid,
		       (int)c->daemon_cred.pid, (unsigned)geteuid(), SHF_SYSTEM_USER);
		return EXIT_FAIL;
	}
	if (r == -EINVAL) {
		errmsg("%s; use -s or set SHF_SOCKET", shf_error_detail());
		return EXIT_USAGE;
	}
	if (r < 0) {
		errmsg("%s", shf_error_detail());
		return EXIT_FAIL;
	}
	if (conn_hello(c) < 0) {
		conn_close(c);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

void conn_close(struct conn *c)
{
	if (c->fd >= 0) {
		/* BYE is a courtesy: the daemon treats a plain close the same */
		shf_ipc_send(c->fd, SHF_IPC_BYE, c->next_id++, NULL, 0, NULL, 0);
		close(c->fd);
	}
	c->fd = -1;
}

/* Receive one validated datagram within the deadline.  Its size, or a
 * negative errno with a message printed (-ETIMEDOUT, -ECONNRESET on EOF). */
static long conn_recv(struct conn *c, void *buf, size_t cap)
{
	for (;;) {
		struct pollfd p = {c->fd, POLLIN, 0};
		int n = poll(&p, 1, conn_left_ms(c));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			errmsg("poll: %s", strerror(errno));
			return -errno;
		}
		if (n == 0) {
			errmsg("no answer from shuffled at %s within the timeout (daemon busy or "
			       "stopped? see --timeout)", c->path);
			return -ETIMEDOUT;
		}
		long r = shf_ipc_recv(c->fd, buf, cap, NULL, NULL);
		if (r == -EAGAIN || r == -EINTR)
			continue;
		if (r == 0 || r == -ECONNRESET) {
			errmsg("shuffled at %s closed the connection", c->path);
			return -ECONNRESET;
		}
		if (r < 0) {
			errmsg("bad message from shuffled at %s: %s", c->path, strerror((int)-r));
			return r;
		}
		return r;
	}
}

/* An ERROR datagram: print its text.  Returns its (negative) errno. */
static int conn_error(const struct conn *c, const char *msg, const char *what)
{
	struct shf_ipc_error e;
	memcpy(&e, msg + sizeof(struct shf_ipc_hdr), sizeof(e));
	/* shf_ipc_check() made sure the text ends inside the datagram */
	const char *text = msg + sizeof(struct shf_ipc_hdr) + sizeof(e);
	errmsg("shuffled at %s refused %s: %s%s%s", c->path, what,
	       e.err < 0 ? strerror(-e.err) : "error", text[0] ? ": " : "", text);
	return e.err < 0 ? e.err : -EPROTO;
}

static _Alignas(8) char msgbuf[SHF_IPC_MAX_MSG];

/* HELLO (proto/ipc.c's exchange, shared with the library): a refusal is
 * the daemon's ERROR, even when it hung up before our HELLO went out. */
int conn_hello(struct conn *c)
{
	enum shf_ipc_hello_step step;
	long n = shf_ipc_hello(c->fd, c->next_id++, conn_left_ms(c), msgbuf, sizeof(msgbuf),
			       &step);
	struct shf_ipc_hdr hdr;
	memcpy(&hdr, msgbuf, sizeof(hdr));
	if (n < 0) {
		int r = (int)n;
		if (step == SHF_IPC_HELLO_ANSWER)
			errmsg("unexpected answer (type %u) from shuffled at %s", hdr.type, c->path);
		else if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN)
			errmsg("shuffled at %s closed the connection", c->path);
		else if (r == -ETIMEDOUT)
			errmsg("no answer from shuffled at %s within the timeout (daemon busy or "
			       "stopped? see --timeout)", c->path);
		else if (step == SHF_IPC_HELLO_SEND)
			errmsg("cannot talk to shuffled at %s: %s", c->path, strerror(-r));
		else
			errmsg("bad message from shuffled at %s: %s", c->path, strerror(-r));
		return r;
	}
	if (hdr.type == SHF_IPC_ERROR)
		return conn_error(c, msgbuf, "the connection");
	struct shf_ipc_hello_ok ok;
	memcpy(&ok, msgbuf + sizeof(hdr), sizeof(ok));
	if (ok.version != SHF_IPC_VERSION) {
		errmsg("shuffled at %s speaks protocol %u, shufflectl %u", c->path, ok.version,
		       SHF_IPC_VERSION);
		return -EPROTO;
	}
	c->node = ok.node;
	return 0;
}

/* Parse the reassembled text: an object that names cmd. */
static int conn_parse(const char *cmd, const char *text, size_t len, json_t **doc_p)
{
	json_error_t je;
	json_t *doc = json_loadb(text ? text : "", len, 0, &je);
	if (!doc || !json_is_object(doc)) {
		errmsg("malformed JSON in the answer to '%s': %s", cmd,
		       doc ? "not an object" : je.text);
		json_decref(doc);
		return -EBADMSG;
	}
	const char *got = json_string_value(json_object_get(doc, "command"));
	if (!got || strcmp(got, cmd) != 0) {
		errmsg("the answer to '%s' is for '%s'", cmd, got ? got : "(none)");
		json_decref(doc);
		return -EBADMSG;
	}
	*doc_p = doc;
	return 0;
}

static int request(struct conn *c, const char *cmd, uint32_t flags, uint32_t timeout_ms,
		   const json_t *args, json_t **doc_p)
{
	struct {
		struct shf_ipc_ctl m;
		char args[SHF_CTL_ARGS_MAX];
	} req;
	memset(&req, 0, sizeof(req));
	snprintf(req.m.cmd, sizeof(req.m.cmd), "%s", cmd);
	req.m.flags = flags;
	req.m.timeout_ms = timeout_ms;
	size_t blen = sizeof(req.m);
	if (args) {
		char *text = json_dumps(args, JSON_COMPACT);
		if (!text || strlen(text) >= sizeof(req.args)) {
			errmsg("arguments of '%s' longer than %u bytes", cmd, SHF_CTL_ARGS_MAX - 1);
			free(text);
			return -EMSGSIZE;
		}
		memcpy(req.args, text, strlen(text) + 1);
		blen += strlen(text) + 1;
		free(text);
	}
	uint32_t id = c->next_id++;
	int r = shf_ipc_send(c->fd, SHF_IPC_CTL, id, &req, blen, NULL, 0);
	if (r == -EPIPE || r == -ECONNRESET) {
		errmsg("shuffled at %s closed the connection", c->path);
		return r;
	}
	if (r < 0) {
		errmsg("cannot send '%s' to shuffled at %s: %s", cmd, c->path, strerror(-r));
		return r;
	}
	char *text = NULL;
	size_t len = 0;
	for (;;) {
		long n = conn_recv(c, msgbuf, sizeof(msgbuf));
		if (n < 0) {
			r = (int)n;
			goto out;
		}
		struct shf_ipc_hdr hdr;
		memcpy(&hdr, msgbuf, sizeof(hdr));
		if (hdr.type == SHF_IPC_ERROR) {
			char what[64];
			snprintf(what, sizeof(what), "'%s'", cmd);
			r = conn_error(c, msgbuf, what);
			goto out;
		}
		if (hdr.type != SHF_IPC_CTL_REPLY || hdr.id != id) {
			errmsg("unexpected answer (type %u, id %u) to '%s' from shuffled at %s",
			       hdr.type, hdr.id, cmd, c->path);
			r = -EPROTO;
			goto out;
		}
		struct shf_ipc_ctl_reply rep;
		memcpy(&rep, msgbuf + sizeof(hdr), sizeof(rep));
		if (rep.status < 0) {
			errmsg("shuffled at %s could not answer '%s': %s", c->path, cmd,
			       strerror(-rep.status));
			r = rep.status;
			goto out;
		}
		size_t chunk = (size_t)n - sizeof(hdr) - sizeof(rep);
		if (len + chunk > REPLY_MAX) {
			errmsg("answer to '%s' longer than %u bytes", cmd, REPLY_MAX);
			r = -EMSGSIZE;
			goto out;
		}
		text = xrealloc(text, len + chunk);
		memcpy(text + len, msgbuf + sizeof(hdr) + sizeof(rep), chunk);
		len += chunk;
		if (!rep.more)
			break;
	}
	r = conn_parse(cmd, text, len, doc_p);
out:
	free(text);
	return r;
}

int conn_request(struct conn *c, const char *cmd, json_t **doc_p)
{
	return request(c, cmd, 0, 0, NULL, doc_p);
}

int conn_request_all(struct conn *c, const char *cmd, int timeout_ms, json_t **doc_p)
{
	return request(c, cmd, SHF_CTL_ALL, (uint32_t)timeout_ms, NULL, doc_p);
}

int conn_request_all_args(struct conn *c, const char *cmd, const json_t *args, int timeout_ms,
			  json_t **doc_p)
{
	return request(c, cmd, SHF_CTL_ALL, (uint32_t)timeout_ms, args, doc_p);
}

int conn_fan_ms(int timeout_ms)
{
	int fan_ms = timeout_ms ? timeout_ms - timeout_ms / 5 : 0;
	return timeout_ms && fan_ms < 1 ? 1 : fan_ms;
}

int conn_request_args(struct conn *c, const char *cmd, const json_t *args, json_t **doc_p)
{
	return request(c, cmd, 0, 0, args, doc_p);
}
