/* SPDX-License-Identifier: MIT */
/*
 * daemon/errbuf.h - the daemon's "char *err, size_t errlen" convention: a
 * function that fails writes one English sentence into the caller's
 * buffer.  A NULL or empty buffer is allowed and ignored.
 */
#ifndef SHD_ERRBUF_H
#define SHD_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void shd_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void shd_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif /* SHD_ERRBUF_H */
