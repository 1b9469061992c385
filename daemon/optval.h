/* SPDX-License-Identifier: MIT */
/*
 * daemon/optval.h - one option's value, as the table (daemon/options.h)
 * describes it: parsed and checked from text (numbers with their size
 * suffixes, ranges, powers of two, string lengths and syntax), set with
 * its source, read back, and formatted for messages, --help and JSON.
 * Used by daemon/config.c only (loading, printing).
 */
#ifndef SHD_OPTVAL_H
#define SHD_OPTVAL_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/options.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* "1 MiB" when v is a whole number of KiB/MiB/GiB (or 0), else "3000". */
void shd_optval_fmt_size(uint64_t v, char *buf, size_t n);
/* v as option o shows it: a size (shd_optval_fmt_size) or a plain number. */
void shd_optval_fmt_num(const struct shd_opt *o, uint64_t v, char *buf, size_t n);
/* "a power of two in [4 KiB, 256 MiB]" / "an integer in [1, 1024]" */
void shd_optval_fmt_limits(const struct shd_opt *o, char *buf, size_t n);
/* A value quoted back in a message: at most 64 bytes (then "..."), control
 * characters shown as '?'.  n >= 4. */
void shd_optval_fmt_quoted(const char *v, char *buf, size_t n);
/* Where option i's value in c came from: "default", "computed",
 * "file PATH", "env SHF_X", "command line", "runtime (shufflectl)". */
void shd_optval_fmt_source(const struct shd_config *c, int i, char *buf, size_t n);
/* The value of numeric option o (UINT, SIZE) in c. */
uint64_t shd_optval_get(const struct shd_config *c, const struct shd_opt *o);
/* Parse `v` for option `o` into c.  0, or -EINVAL with the reason in why
 * (without the "name=value: " prefix). */
int shd_optval_parse(struct shd_config *c, const struct shd_opt *o, const char *v, char *why,
		     size_t whylen);
/* Set option i from source src; `where` names the source in messages
 * ("command line", "env SHF_X", "file F line N").  0, or -EINVAL with
 * "name=value: why (where)" in err. */
int shd_optval_set(struct shd_config *c, int i, const char *v, enum shd_config_src src,
		   const char *where, char *err, size_t errlen);
/* Option by name; '-' and '_' are the same.  -1 if none.  len: bytes of
 * name to compare (the name may continue with "=value"). */
int shd_optval_find(const char *name, size_t len);

#endif
