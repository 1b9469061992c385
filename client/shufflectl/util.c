/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/util.c - the two helpers every part of shufflectl
 * uses: an error message on stderr and an allocation that cannot fail.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/shufflectl/shufflectl.h"

static const char *prog = "shufflectl";

void errmsg(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Allocation failure in a short-lived tool: say so and stop. */
void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		errmsg("out of memory");
		exit(EXIT_FAIL);
	}
	return q;
}
