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
#define FAIL(...) check_failed(__FILE__, __LINE__, "FAIL", __VA_ARGS__)
#define SKIP(...) check_skip(__VA_ARGS__)

#endif /* SHF_TESTS_LIB_CHECK_H */
