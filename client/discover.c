/* SPDX-License-Identifier: MIT */
/*
 * client/discover.c - where is this node's shuffled?  The one rule, for
 * the library (shf_open) and shufflectl alike (docs/api.md, "Finding the
 * daemon"):
 *
 *   1. opts.socket_path (shufflectl: -s)        only this place
 *   2. $SHF_SOCKET                              only this place
 *   3. $SHF_RUNTIME_DIR/shuffled.sock           only this place
 *   4. the user's private daemon: $XDG_RUNTIME_DIR/shuffle/NODE/shuffled.sock
 *      (XDG_RUNTIME_DIR absolute), else /tmp/shuffle-UID/NODE/shuffled.sock
 *   5. the system daemon: SHF_SYSTEM_RUNTIME_DIR/NODE/shuffled.sock
 *      (root tries 5 before 4: a root daemon's default place is 5)
 *
 * NODE is $SHF_NODE or the host name.  Places 4 and 5 are tried in turn:
 * one with no socket file (stat: missing, not a socket, not reachable) or
 * with a stale socket (connect: ECONNREFUSED, its daemon died) is passed
 * over, and $SHF_DEBUG says so.  Any other outcome ends the search: a
 * daemon that answers, an untrusted daemon (-EPERM: someone squats the
 * place; never worked around), or a socket we may not connect to
 * (-EACCES).  When nothing is found, the error names every place tried.
 *
 * The daemon's identity (proto/cred.h) is checked here, on the connected
 * socket, so no caller can skip it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/client.h"
#include "proto/addr.h"
#include "proto/cred.h"

/* An empty variable counts as unset. */
static const char *env(const char *name)
{
	const char *v = secure_getenv(name);
	return v && *v ? v : NULL;
}

/* The list of places tried, for the error (cut, never overrun). */
struct tried {
	char text[SHC_DETAIL_MAX];
	size_t len;
};

static void tried_add(struct tried *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tried_add(struct tried *t, const char *fmt, ...)
{
	if (t->len >= sizeof(t->text) - 1)
		return;
	if (t->len) {
		int n = snprintf(t->text + t->len, sizeof(t->text) - t->len, ", ");
		t->len += (size_t)n;
		if (t->len >= sizeof(t->text) - 1) {
			t->len = sizeof(t->text) - 1;
			return;
		}
	}
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->text + t->len, sizeof(t->text) - t->len, fmt, ap);
	va_end(ap);
	t->len += n < 0 ? 0 : (size_t)n;
	if (t->len > sizeof(t->text) - 1)
		t->len = sizeof(t->text) - 1;
}

enum try_result {
	TRY_FOUND,   /* connected to a trusted daemon: f is filled */
	TRY_ABSENT,  /* no socket there, or a stale one: look further */
	TRY_FAIL,    /* a daemon is there but we cannot use it: stop */
};

/* Try one place.  *err_p gets the error for TRY_FAIL (detail set). */
static enum try_result try_place(const struct shc_discover_cfg *cfg, const char *path,
				 const char *label, struct tried *t, struct shc_found *f,
				 int *err_p)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		int e = errno;
		if (e == ENOENT || e == ENOTDIR) {
			tried_add(t, "%s%s (no such file)", label, path);
		} else {
			tried_add(t, "%s%s (%s)", label, path, strerror(e));
			if (e == EACCES) /* the search ends as "no access", not "not running" */
				*err_p = -EACCES;
		}
		return TRY_ABSENT;
	}
	if (!S_ISSOCK(st.st_mode)) {
		tried_add(t, "%s%s (not a socket)", label, path);
		return TRY_ABSENT;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, path, strlen(path) + 1); /* length checked by the caller */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err_p = shc_fail(-errno, "socket: %s", strerror(errno));
		return TRY_FAIL;
	}
	/* connect(2) on a UNIX socket waits while the listen backlog is full;
	 * SO_SNDTIMEO bounds that wait (it then fails with EAGAIN) */
	if (cfg->timeout_ms > 0) {
		struct timeval tv = {cfg->timeout_ms / 1000, (cfg->timeout_ms % 1000) * 1000};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	int e = 0;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		if (e == EINTR)
			continue;
		if (e == EISCONN)
			e = 0;
		break;
	}
	if (e == ECONNREFUSED) {
		close(fd);
		tried_add(t, "%s%s (refuses connections: a stale socket of a daemon that died?)",
			  label, path);
		shc_debug("discover: %s refuses connections (a stale socket?); looking further",
			  path);
		return TRY_ABSENT;
	}
	if (e) {
		close(fd);
		if (e == EACCES)
			*err_p = shc_fail(-EACCES, "cannot connect to %s%s: permission denied (the "
					  "socket or a directory above it does not let uid %lu "
					  "in: a daemon that serves only its own user?)",
					  label, path, cfg->uid);
		else if (e == EAGAIN)
			*err_p = shc_fail(-ETIMEDOUT, "cannot connect to %s%s: timed out (the "
					  "daemon's listen queue is full)", label, path);
		else
			*err_p = shc_fail(-e, "cannot connect to %s%s: %s", label, path,
					  strerror(e));
		return TRY_FAIL;
	}
	struct ucred cred = {0, 0, 0};
	int r = shf_cred_check_daemon(fd, cfg->system_user, &cred);
	f->cred = cred;
	if (r < 0) {
		close(fd);
		if (r == -EPERM)
			*err_p = shc_fail(-EPERM, "the daemon at %s runs as uid %u (pid %d), which is "
					  "neither root, this process's uid %u nor the system user "
					  "'%s': not trusted (another user may have taken the "
					  "runtime directory)", path, (unsigned)cred.uid,
					  (int)cred.pid, (unsigned)geteuid(), cfg->system_user);
		else
			*err_p = shc_fail(r, "SO_PEERCRED on %s: %s", path, strerror(-r));
		return TRY_FAIL;
	}
	f->fd = fd;
	snprintf(f->path, sizeof(f->path), "%s", path);
	return TRY_FOUND;
}

static int path_fmt(char *out, size_t cap, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int path_fmt(char *out, size_t cap, const char *what, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return shc_fail(-EINVAL, "%s: socket path too long (max %zu bytes): %.128s...",
				what, cap - 1, out);
	return 0;
}

int shc_discover_in(const struct shc_discover_cfg *cfg, struct shc_found *f)
{
	char path[2][sizeof(f->path)];
	const char *label[2], *source[2];
	int n = 0, r;
	struct tried t = {.len = 0};
	const char *hint;

	f->fd = -1;
	f->path[0] = '\0';
	f->source = NULL;
	memset(&f->cred, 0, sizeof(f->cred));

	const char *p = cfg->opt && *cfg->opt ? cfg->opt : NULL, *rd = env("SHF_RUNTIME_DIR");
	const char *sock = env("SHF_SOCKET");
	if (p || sock) {
		const char *name = p ? (cfg->opt_name ? cfg->opt_name : "opts.socket_path") :
				       "SHF_SOCKET";
		if ((r = path_fmt(path[0], sizeof(path[0]), name, "%s", p ? p : sock)))
			return r;
		label[0] = source[0] = name;
		n = 1;
		hint = p ? "check the path" : "check SHF_SOCKET";
	} else if (rd) {
		if ((r = path_fmt(path[0], sizeof(path[0]), "SHF_RUNTIME_DIR", "%s/shuffled.sock",
				  rd)))
			return r;
		label[0] = source[0] = "SHF_RUNTIME_DIR";
		n = 1;
		hint = "start one there (shuffled --runtime-dir) or fix SHF_RUNTIME_DIR";
	} else {
		char host[256];
		const char *node = env("SHF_NODE");
		if (!node) {
			if (gethostname(host, sizeof(host)) < 0)
				return shc_fail(-EINVAL, "cannot get the host name: %s",
						strerror(errno));
			host[sizeof(host) - 1] = '\0';
			node = host;
		}
		const char *why;
		if (shf_node_name_check(node, &why) < 0)
			return shc_fail(-EINVAL, "node name '%.64s' (SHF_NODE or the host name): %s",
					node, why);
		const char *xdg = env("XDG_RUNTIME_DIR");
		int priv = cfg->uid == 0 ? 1 : 0, sys = 1 - priv;
		if (xdg && xdg[0] == '/')
			r = path_fmt(path[priv], sizeof(path[0]), "XDG_RUNTIME_DIR",
				     "%s/shuffle/%s/shuffled.sock", xdg, node);
		else
			r = path_fmt(path[priv], sizeof(path[0]), "the private runtime directory",
				     "/tmp/shuffle-%lu/%s/shuffled.sock", cfg->uid, node);
		if (r)
			return r;
		if ((r = path_fmt(path[sys], sizeof(path[0]), "the system runtime directory",
				  "%s/%s/shuffled.sock", cfg->system_dir, node)))
			return r;
		label[priv] = label[sys] = "";
		source[priv] = "private daemon";
		source[sys] = "system daemon";
		n = strcmp(path[0], path[1]) == 0 ? 1 : 2;
		tried_add(&t, "SHF_SOCKET and SHF_RUNTIME_DIR (unset)");
		hint = "start one (shuffled) or set SHF_RUNTIME_DIR";
	}

	char lab[2][40];
	int worst = -ECONNREFUSED; /* -EACCES once a place was out of reach */
	for (int i = 0; i < n; i++) {
		/* explicit places are named with their source: "SHF_SOCKET /x.sock" */
		snprintf(lab[i], sizeof(lab[i]), "%s%s", label[i], label[i][0] ? " " : "");
		int err = 0;
		switch (try_place(cfg, path[i], lab[i], &t, f, &err)) {
		case TRY_FOUND:
			f->source = source[i];
			shc_debug("discover: %s at %s (daemon uid %u pid %d)", source[i], path[i],
				  (unsigned)f->cred.uid, (int)f->cred.pid);
			return 0;
		case TRY_FAIL:
			return err;
		case TRY_ABSENT:
			if (err == -EACCES)
				worst = -EACCES;
			break;
		}
	}
	return shc_fail(worst, "no shuffled found: tried %s; %s", t.text, hint);
}

#ifndef SHF_SYSTEM_USER
#define SHF_SYSTEM_USER "shuffle"
#endif

int shc_discover(const char *opt, const char *opt_name, int timeout_ms, struct shc_found *f)
{
	struct shc_discover_cfg cfg = {
		.opt = opt,
		.opt_name = opt_name,
		.uid = (unsigned long)geteuid(),
		.system_dir = SHF_SYSTEM_RUNTIME_DIR,
		.system_user = SHF_SYSTEM_USER,
		.timeout_ms = timeout_ms,
	};
	return shc_discover_in(&cfg, f);
}
