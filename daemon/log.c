/* SPDX-License-Identifier: MIT */
/* daemon/log.c - see log.h for the contract. */
#include "daemon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int shd_log_max = SHD_LOG_INFO;

/* Current destination.  log_fd is STDERR_FILENO or a file we opened
 * (log_path non-empty).  Changed only by open/reopen/close. */
static int log_fd = STDERR_FILENO;
static int log_journald;
static char log_path[4096];

static const char *const level_names[SHD_LOG_MAX] = {
	[SHD_LOG_ERR] = "err",       [SHD_LOG_WARN] = "warn",
	[SHD_LOG_NOTICE] = "notice", [SHD_LOG_INFO] = "info",
	[SHD_LOG_DEBUG] = "debug",
};
static const char *const level_tags[SHD_LOG_MAX] = {
	[SHD_LOG_ERR] = "ERR",       [SHD_LOG_WARN] = "WARN",
	[SHD_LOG_NOTICE] = "NOTICE", [SHD_LOG_INFO] = "INFO",
	[SHD_LOG_DEBUG] = "DEBUG",
};

static int level_ok(int lvl)
{
	return lvl >= SHD_LOG_ERR && lvl <= SHD_LOG_DEBUG;
}

const char *shd_log_level_name(int lvl)
{
	return level_ok(lvl) ? level_names[lvl] : "?";
}

int shd_log_level_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	if (s[0] >= '0' && s[0] <= '9' && s[1] == '\0')
		return level_ok(s[0] - '0') ? s[0] - '0' : -EINVAL;
	for (int l = SHD_LOG_ERR; l <= SHD_LOG_DEBUG; l++)
		if (!strcasecmp(s, level_names[l]))
			return l;
	if (!strcasecmp(s, "error"))
		return SHD_LOG_ERR;
	if (!strcasecmp(s, "warning"))
		return SHD_LOG_WARN;
	return -EINVAL;
}

/* Is stderr the journal?  $JOURNAL_STREAM ("dev:ino") is set by systemd
 * for services whose stderr is connected to journald; comparing it with
 * stderr's identity tells a redirected stderr apart.  Without it,
 * $INVOCATION_ID still says "started by systemd", whose default is the
 * journal. */
static int detect_journald(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	if (js && *js) {
		unsigned long long dev, ino;
		struct stat st;
		if (sscanf(js, "%llu:%llu", &dev, &ino) != 2)
			return 0;
		if (fstat(STDERR_FILENO, &st) < 0)
			return 0;
		return (unsigned long long)st.st_dev == dev &&
		       (unsigned long long)st.st_ino == ino;
	}
	const char *inv = getenv("INVOCATION_ID");
	return inv && *inv;
}

static int open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
	return fd < 0 ? -errno : fd;
}

int shd_log_open(const char *path, int level, int journald)
{
	int saved = errno;
	int fd = STDERR_FILENO;
	int r = 0;

	if (!level_ok(level) || journald < -1 || journald > 1) {
		r = -EINVAL;
		goto out;
	}
	if (path && *path) {
		if (strlen(path) >= sizeof(log_path)) {
			r = -ENAMETOOLONG;
			goto out;
		}
		fd = open_file(path);
		if (fd < 0) {
			r = fd;
			goto out;
		}
	}
	if (journald < 0)
		journald = fd == STDERR_FILENO ? detect_journald() : 0;

	shd_log_close();
	log_fd = fd;
	if (fd != STDERR_FILENO)
		snprintf(log_path, sizeof(log_path), "%s", path);
	log_journald = journald;
	shd_log_max = level;
out:
	errno = saved;
	return r;
}

int shd_log_reopen(void)
{
	int saved = errno;
	int r = 0;

	if (log_fd != STDERR_FILENO) {
		int fd = open_file(log_path);
		if (fd < 0) {
			r = fd;
		} else {
			close(log_fd);
			log_fd = fd;
		}
	}
	errno = saved;
	return r;
}

void shd_log_close(void)
{
	int saved = errno;
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = STDERR_FILENO;
	log_path[0] = '\0';
	errno = saved;
}

/* Write all of buf in (normally) one write(2); a short write is finished
 * rather than leaving half a line.  Errors are dropped: there is nowhere
 * left to report them. */
static void write_line(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

__attribute__((format(printf, 3, 0)))
static void vlog_write(int lvl, int saved_errno, const char *fmt, va_list ap)
{
	char line[SHD_LOG_LINE_MAX];
	const size_t cap = sizeof(line) - 1; /* room left for the '\n' */
	size_t p;

	if (!level_ok(lvl))
		lvl = lvl < SHD_LOG_ERR ? SHD_LOG_ERR : SHD_LOG_DEBUG;
	if (log_journald) {
		p = (size_t)snprintf(line, cap, "<%d>", lvl);
	} else {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		p = (size_t)snprintf(line, cap,
				     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ shuffled[%ld] %s: ",
				     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
				     (long)getpid(), level_tags[lvl]);
	}
	if (p >= cap) /* cannot happen with these prefixes; stay safe anyway */
		p = 0;

	size_t start = p;
	errno = saved_errno; /* for %m */
	int n = vsnprintf(line + p, cap - p, fmt, ap);
	if (n < 0) {
		n = snprintf(line + p, cap - p, "(bad log format \"%s\")", fmt);
		if (n < 0)
			n = 0;
	}
	if ((size_t)n >= cap - p) {
		/* cut: vsnprintf left cap-1 bytes and a NUL; mark the cut */
		p = cap - 1;
		memcpy(line + p - 3, "...", 3);
	} else {
		p += (size_t)n;
	}
	while (p > start && line[p - 1] == '\n')
		p--;
	for (size_t i = start; i < p; i++) {
		unsigned char ch = (unsigned char)line[i];
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			line[i] = ' ';
	}
	line[p++] = '\n';
	write_line(log_fd, line, p);
}

void shd_log_write(int lvl, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	vlog_write(lvl, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int shd_ratelimit_ok(struct shd_ratelimit *rl, int lvl)
{
	uint64_t now = now_ns();

	if (rl->begin_ns == 0 || now - rl->begin_ns >= rl->interval_ns) {
		if (rl->suppressed > 0)
			shd_log_write(lvl, "%u similar messages suppressed", rl->suppressed);
		rl->begin_ns = now ? now : 1;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed < rl->burst) {
		rl->printed++;
		return 1;
	}
	if (rl->suppressed < UINT_MAX)
		rl->suppressed++;
	rl->missed++;
	return 0;
}
