/* SPDX-License-Identifier: MIT */
/*
 * daemon/log.h - the daemon's logging.
 *
 * Cheap when off: shd_log() compares the level with shd_log_max before any
 * argument is evaluated or formatted.  Every line leaves in one write(2),
 * so lines from several writers (threads, or processes sharing an O_APPEND
 * file) never interleave.  errno is preserved across every call, so the
 * caller can log first and still return -errno afterwards.
 *
 * Line format:
 *   journald (stderr is the journal): "<N>message\n" where N is the level
 *            (the journal adds its own timestamp, pid and identifier);
 *   otherwise: "2026-11-22T04:51:07.123Z shuffled[pid] LEVEL: message\n"
 *            (UTC, milliseconds).
 * Control characters inside a message (a stray '\n' from a peer-supplied
 * string, say) become spaces so that one call is always one line; lines
 * longer than SHD_LOG_LINE_MAX are cut and end in "...".
 *
 * Not thread-safe against shd_log_open()/shd_log_close(); shd_log_write()
 * itself may be called from any thread (rate limiters may not be shared
 * between threads).  Avoid "%m": -Wpedantic (warning_level=3) rejects it;
 * pass strerror(-r) instead.
 */
#ifndef SHD_LOG_H
#define SHD_LOG_H

#include <stdint.h>

/* syslog(3) priorities, so journald prefixes are the level itself. */
enum shd_log_level {
	SHD_LOG_ERR = 3,    /* the daemon or a client/peer lost something */
	SHD_LOG_WARN = 4,   /* unexpected, handled; someone should look */
	SHD_LOG_NOTICE = 5, /* normal but significant: start, stop, peer up/down */
	SHD_LOG_INFO = 6,   /* per-client / per-job events */
	SHD_LOG_DEBUG = 7,  /* anything else; may be verbose */
	SHD_LOG_MAX         /* sentinel: one past the last level */
};

/* Longest line written, newline included; longer ones are cut. */
#define SHD_LOG_LINE_MAX 2048

/* Current level: messages with a level above it are not formatted. */
extern int shd_log_max;

#define shd_log(lvl, ...)                                      \
	do {                                                   \
		if ((lvl) <= shd_log_max)                      \
			shd_log_write((lvl), __VA_ARGS__);     \
	} while (0)
#define shd_err(...) shd_log(SHD_LOG_ERR, __VA_ARGS__)
#define shd_warn(...) shd_log(SHD_LOG_WARN, __VA_ARGS__)
#define shd_notice(...) shd_log(SHD_LOG_NOTICE, __VA_ARGS__)
#define shd_info(...) shd_log(SHD_LOG_INFO, __VA_ARGS__)
#define shd_debug(...) shd_log(SHD_LOG_DEBUG, __VA_ARGS__)

/* Format and write one line whatever shd_log_max says.  Keeps errno. */
void shd_log_write(int lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Direct the log to `path` (appended to, created 0640; NULL or "" means
 * stderr) at `level` (SHD_LOG_ERR..SHD_LOG_DEBUG).  `journald`: 1 use "<N>"
 * prefixes, 0 use timestamped lines, -1 decide: when logging to stderr and
 * $JOURNAL_STREAM names stderr (or, lacking $JOURNAL_STREAM, $INVOCATION_ID
 * is set: started by systemd), else timestamped lines.  Returns 0, or
 * -EINVAL / the open(2) error, leaving the previous setup in place.
 * Before the first call the log goes to stderr at SHD_LOG_INFO, timestamped.
 */
int shd_log_open(const char *path, int level, int journald);
/* Reopen the same file (after logrotate moved it).  0 or negative errno,
 * the old fd is kept on failure.  A no-op when logging to stderr. */
int shd_log_reopen(void);
/* Back to stderr (the level is kept); closes the file if one was open. */
void shd_log_close(void);

/* "err", "warn", "notice", "info", "debug" (any case; "error", "warning"
 * too) or "3".."7" -> the level; -EINVAL otherwise. */
int shd_log_level_parse(const char *s);
/* Lower-case name of a level ("info"), "?" when out of range. */
const char *shd_log_level_name(int lvl);

/*
 * Rate limiting for messages on the data path: at most `burst` messages per
 * `interval`.  The first message of a new interval is preceded by
 * "N similar messages suppressed" when the previous interval dropped some.
 * One limiter per call site (a static), used by one thread.
 */
struct shd_ratelimit {
	uint64_t interval_ns; /* length of an interval */
	unsigned burst;       /* messages printed per interval */
	uint64_t begin_ns;    /* CLOCK_MONOTONIC start of this interval; 0: none yet */
	unsigned printed;     /* printed in this interval */
	unsigned suppressed;  /* dropped in this interval, reported when the next begins */
	uint64_t missed;      /* dropped since creation (total, for counters) */
};
#define SHD_RATELIMIT_INIT(interval_ms, burst_)                           \
	{                                                                 \
		.interval_ns = (uint64_t)(interval_ms) * 1000000u,        \
		.burst = (burst_), .begin_ns = 0, .printed = 0,           \
		.suppressed = 0, .missed = 0                              \
	}

/* 1: print this message (after reporting the previous interval's drops at
 * `lvl`), 0: drop and count it.  Used by shd_log_rl(). */
int shd_ratelimit_ok(struct shd_ratelimit *rl, int lvl);

#define shd_log_rl(rl, lvl, ...)                                          \
	do {                                                              \
		if ((lvl) <= shd_log_max && shd_ratelimit_ok((rl), (lvl))) \
			shd_log_write((lvl), __VA_ARGS__);                \
	} while (0)

#endif /* SHD_LOG_H */
