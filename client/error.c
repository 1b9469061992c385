/* SPDX-License-Identifier: MIT */
/*
 * client/error.c - error texts, the per-thread error detail, debug output.
 *
 * The library never logs on its own: it returns a negative errno, keeps a
 * sentence of detail for the calling thread (shf_error_detail()), and
 * writes debug lines to stderr only when $SHF_DEBUG asks for them.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"

static _Thread_local char tls_detail[SHC_DETAIL_MAX];

void shc_detail_vset(const char *fmt, va_list ap)
{
	vsnprintf(tls_detail, sizeof(tls_detail), fmt, ap);
}

void shc_detail_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	shc_detail_vset(fmt, ap);
	va_end(ap);
}

int shc_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	shc_detail_vset(fmt, ap);
	va_end(ap);
	shc_debug("error %d (%s): %s", err, shf_strerror(err), tls_detail);
	return err;
}

int shc_fail_str(int err, const char *text)
{
	size_t n = strnlen(text, sizeof(tls_detail) - 1);
	memcpy(tls_detail, text, n);
	tls_detail[n] = '\0';
	return err;
}

SHF_EXPORT const char *shf_error_detail(void)
{
	return tls_detail;
}

/* -1: not looked at yet; 0 off; 1 on.  Racing first calls agree anyway. */
static _Atomic int debug_state = -1;

bool shc_debug_on(void)
{
	int s = atomic_load_explicit(&debug_state, memory_order_relaxed);
	if (s < 0) {
		const char *v = secure_getenv("SHF_DEBUG");
		s = v && *v && strcmp(v, "0") != 0;
		atomic_store_explicit(&debug_state, s, memory_order_relaxed);
	}
	return s;
}

void shc_debug_log(const char *fmt, ...)
{
	int saved = errno;
	char line[SHC_DETAIL_MAX + 512];
	int n = snprintf(line, sizeof(line), "shuffle[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* one write per line: lines of several threads do not interleave */
	size_t len = strlen(line);
	if (len < sizeof(line) - 1)
		line[len++] = '\n';
	else
		line[sizeof(line) - 2] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
	errno = saved;
}

SHF_EXPORT const char *shf_strerror(int r)
{
	if (r >= 0)
		return "success";
	switch (-r) {
	case EAGAIN: return "send ring full (non-blocking send)";
	case EMSGSIZE: return "message larger than the daemon's max_msg";
	case EINVAL: return "invalid argument";
	case ETIMEDOUT: return "timed out";
	case ECONNREFUSED: return "no shuffle daemon is listening (is shuffled running?)";
	case ENOTCONN: return "connection to the shuffle daemon lost";
	case EPROTO: return "protocol error or version mismatch with the daemon";
	case EACCES: return "permission denied (a job of another user, or no access to the daemon's socket: see shf_error_detail())";
	case EPERM: return "the daemon runs as a user this process does not trust";
	case EDQUOT: return "over a per-user limit of the daemon (connections or memory)";
	case EEXIST: return "rank already registered in this job";
	case ESRCH: return "no such rank (outside the world, or it left the job)";
	case EHOSTDOWN: return "destination node is down";
	case EDEADLK: return "would deadlock (called from a delivery callback)";
	case EBUSY: return "busy (daemon full, or another call of the same kind is running)";
	case ENOMEM: return "out of memory";
	case EMFILE: return "too many open files";
	case ENFILE: return "too many open files in the system";
	case EBADMSG: return "malformed message";
	case ECANCELED: return "the job was drained by its owner or root (shufflectl drain): see shf_error_detail()";
	default: break;
	}
	const char *s = strerrordesc_np(-r);
	return s ? s : "unknown error";
}
