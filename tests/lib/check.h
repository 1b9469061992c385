/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/check.h - the tests' assertions (header only).
 *
 *   CHECK(cond)            fail unless cond
 *   CHECKF(cond, fmt, ...) the same, saying why
 *   CHECK_STR(a, b)        two strings are equal
 *   CHECK_HAS(hay, needle) a string contains another
 *   FAIL(fmt, ...)         fail unconditionally
 *   SKIP(fmt, ...)         skip the test (exit 77)
 *
 * Counting checks, for unit tests that go on after a failure and report
 * every one at the end:
 *
 *   EXPECT(cond)            count a failure unless cond, and go on
 *   EXPECTF(cond, fmt, ...) the same, saying why
 *   MISS(fmt, ...)          count a failure unconditionally
 *   check_result()          0 if nothing failed; else prints the count, 1
 *
 * A counted failure prints "PROGRAM: FILE:LINE: what: why", then the text
 * of check_detail() if the program defines one (the client library's
 * shf_error_detail(), the scenario under test).
 *
 * A failure prints "PROGRAM[PID]: FILE:LINE: CHECK(cond) failed: why" on
 * stderr, calls check_fail_hook() if the program defines one (tests/lib/
 * daemon.c does: the daemon logs' tails) and exits 1, so atexit handlers
 * (clean-up) run.  PROGRAM is program_invocation_short_name, which a test
 * may point at a better name ("tclient rank 3").
 */
#ifndef SHF_TESTS_LIB_CHECK_H
#define SHF_TESTS_LIB_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void check_fail_hook(void) __attribute__((weak));

__attribute__((format(printf, 4, 5))) static inline _Noreturn void
check_failed(const char *file, int line, const char *what, const char *fmt, ...)
{
	char why[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s[%d]: %s:%d: %s%s%s\n", program_invocation_short_name, (int)getpid(),
		file, line, what, why[0] ? ": " : "", why);
	if (check_fail_hook)
		check_fail_hook();
	exit(1);
}

__attribute__((format(printf, 1, 2))) static inline _Noreturn void check_skip(const char *fmt,
									 ...)
{
	va_list ap;
	fprintf(stderr, "%s: SKIP: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(77);
}

#define CHECKF(cond, ...)                                                                 \
	do {                                                                              \
		if (!(cond))                                                              \
			check_failed(__FILE__, __LINE__, "CHECK(" #cond ") failed",       \
				     __VA_ARGS__);                                        \
	} while (0)
#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond))                                                              \
			check_failed(__FILE__, __LINE__, "CHECK(" #cond ") failed", "%s", ""); \
	} while (0)
#define CHECK_STR(a, b) CHECKF(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))
#define CHECK_HAS(hay, needle)                                                            \
	CHECKF(strstr((hay), (needle)) != NULL, "'%s' lacks '%s'", (hay), (needle))
const char *check_detail(void) __attribute__((weak));
__attribute__((unused)) static int check_failures;

__attribute__((format(printf, 4, 5))) static inline void
check_miss(const char *file, int line, const char *what, const char *fmt, ...)
{
	char why[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	const char *d = check_detail ? check_detail() : NULL;
	if (d && !*d)
		d = NULL;
	fprintf(stderr, "%s: %s:%d: %s%s%s%s%s%s\n", program_invocation_short_name, file, line,
		what, why[0] ? ": " : "", why, d ? " (" : "", d ? d : "", d ? ")" : "");
	check_failures++;
}

static inline int check_result(void)
{
	if (!check_failures)
		return 0;
	fprintf(stderr, "%s: %d failure(s)\n", program_invocation_short_name, check_failures);
	return 1;
}

#define EXPECTF(cond, ...)                                                                \
	do {                                                                              \
		if (!(cond))                                                              \
			check_miss(__FILE__, __LINE__, "EXPECT(" #cond ") failed",        \
				   __VA_ARGS__);                                          \
	} while (0)
#define EXPECT(cond) EXPECTF(cond, "%s", "")
#define MISS(...) check_miss(__FILE__, __LINE__, "MISS", __VA_ARGS__)

#define FAIL(...) check_failed(__FILE__, __LINE__, "FAIL", __VA_ARGS__)
#define SKIP(...) check_skip(__VA_ARGS__)

#endif /* SHF_TESTS_LIB_CHECK_H */
