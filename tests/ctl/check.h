/* SPDX-License-Identifier: MIT */
/* tests/ctl/check.h - assertions for the config/log unit tests: print
 * where and why, exit 1.  Not for production code. */
#ifndef SHF_TESTS_CTL_CHECK_H
#define SHF_TESTS_CTL_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_MSG(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, \
				__LINE__, #cond);                              \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	CHECK_MSG(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))

/* haystack contains needle */
#define CHECK_HAS(hay, needle)                                                 \
	CHECK_MSG(strstr((hay), (needle)) != NULL, "'%s' lacks '%s'", (hay),   \
		  (needle))

#endif
