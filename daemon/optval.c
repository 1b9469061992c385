/* SPDX-License-Identifier: MIT */
/*
 * daemon/optval.c - one option's value: parse, check, set, read back and
 * format, as the table says (optval.h).
 */
#include "daemon/optval.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include "daemon/errbuf.h"
#include "daemon/log.h"

/* ---- formatting helpers ---- */

/* "1 MiB" when v is a whole number of KiB/MiB/GiB (or 0), else "3000". */
void shd_optval_fmt_size(uint64_t v, char *buf, size_t n)
{
	if (v != 0 && v % GiB == 0)
		snprintf(buf, n, "%llu GiB", (unsigned long long)(v / GiB));
	else if (v != 0 && v % MiB == 0)
		snprintf(buf, n, "%llu MiB", (unsigned long long)(v / MiB));
	else if (v != 0 && v % KiB == 0)
		snprintf(buf, n, "%llu KiB", (unsigned long long)(v / KiB));
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

void shd_optval_fmt_num(const struct shd_opt *o, uint64_t v, char *buf, size_t n)
{
	if (o->type == SHD_OPT_T_SIZE)
		shd_optval_fmt_size(v, buf, n);
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

/* "a power of two in [4 KiB, 256 MiB]" / "an integer in [1, 1024]" */
void shd_optval_fmt_limits(const struct shd_opt *o, char *buf, size_t n)
{
	char lo[32], hi[32];
	shd_optval_fmt_num(o, o->min, lo, sizeof(lo));
	shd_optval_fmt_num(o, o->max, hi, sizeof(hi));
	const char *what = o->flags & SHD_OPT_F_POW2 ? "a power of two"
			   : o->type == SHD_OPT_T_SIZE ? "a size" : "an integer";
	snprintf(buf, n, "%s in [%s, %s]", what, lo, hi);
}

/* A value quoted back in a message: at most 64 bytes (then "..."), control
 * characters shown as '?'.  n >= 4. */
void shd_optval_fmt_quoted(const char *v, char *buf, size_t n)
{
	size_t keep = n - 4 < 64 ? n - 4 : 64;
	size_t i;
	for (i = 0; v[i] && i < keep; i++) {
		unsigned char ch = (unsigned char)v[i];
		buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	if (v[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
}

uint64_t shd_optval_get(const struct shd_config *c, const struct shd_opt *o)
{
	const char *p = (const char *)c + o->off;
	if (o->size == sizeof(uint32_t)) {
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		return v;
	}
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static void put_num(struct shd_config *c, const struct shd_opt *o, uint64_t v)
{
	char *p = (char *)c + o->off;
	if (o->size == sizeof(uint32_t)) {
		uint32_t w = (uint32_t)v;
		memcpy(p, &w, sizeof(w));
	} else {
		memcpy(p, &v, sizeof(v));
	}
}

/* ---- parsing ---- */

/*
 * Decimal number, optionally followed (after optional blanks) by a binary
 * suffix when `suffix`: k/K/KiB, m/M/MiB, g/G/GiB (case-insensitive).
 * No sign, no hex, no fraction.  0, -EINVAL (syntax) or -ERANGE (overflow).
 */
static int parse_u64(const char *s, bool suffix, uint64_t *out)
{
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	uint64_t mult = 1;
	if (suffix) {
		while (*end == ' ' || *end == '\t')
			end++;
		static const struct { const char *s; uint64_t m; } sfx[] = {
			{ "k", KiB }, { "kib", KiB }, { "m", MiB },
			{ "mib", MiB }, { "g", GiB }, { "gib", GiB },
		};
		if (*end) {
			size_t i;
			for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
				if (!strcasecmp(end, sfx[i].s))
					break;
			if (i == sizeof(sfx) / sizeof(sfx[0]))
				return -EINVAL;
			mult = sfx[i].m;
			end += strlen(end);
		}
	}
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = (uint64_t)v * mult;
	return 0;
}

/* Parse `v` for option `o` into c.  0, or -EINVAL with the reason in why
 * (without the "name=value: " prefix). */
int shd_optval_parse(struct shd_config *c, const struct shd_opt *o, const char *v, char *why,
		     size_t whylen)
{
	char lim[96];

	switch (o->type) {
	case SHD_OPT_T_UINT:
	case SHD_OPT_T_SIZE: {
		uint64_t x;
		int r = parse_u64(v, o->type == SHD_OPT_T_SIZE, &x);
		shd_optval_fmt_limits(o, lim, sizeof(lim));
		if (r == -EINVAL) {
			shd_errf(why, whylen, "not a valid %s; must be %s%s",
				o->type == SHD_OPT_T_SIZE ? "size" : "integer", lim,
				o->type == SHD_OPT_T_SIZE ? " (suffixes k/KiB, m/MiB, g/GiB)" : "");
			return -EINVAL;
		}
		if ((o->flags & SHD_OPT_F_POW2) && (r < 0 || x < o->min || x > o->max || (x & (x - 1)))) {
			shd_errf(why, whylen, "must be %s", lim);
			return -EINVAL;
		}
		if (r < 0 || x < o->min || x > o->max) {
			shd_errf(why, whylen, "out of range; must be %s", lim);
			return -EINVAL;
		}
		put_num(c, o, x);
		return 0;
	}
	case SHD_OPT_T_LEVEL: {
		int l = shd_log_level_parse(v);
		if (l < 0) {
			shd_errf(why, whylen, "must be one of err, warn, notice, info, debug (or 3..7)");
			return -EINVAL;
		}
		memcpy((char *)c + o->off, &l, sizeof(l));
		return 0;
	}
	case SHD_OPT_T_STR: {
		size_t len = strlen(v);
		if (len >= o->size) {
			shd_errf(why, whylen, "too long (%zu bytes, at most %zu)", len, o->size - 1);
			return -EINVAL;
		}
		for (size_t i = 0; i < len; i++) {
			unsigned char ch = (unsigned char)v[i];
			if (ch < 0x20 || ch == 0x7f) {
				shd_errf(why, whylen, "contains a control character");
				return -EINVAL;
			}
		}
		if (o->check && o->check(v, why, whylen) < 0)
			return -EINVAL;
		memcpy((char *)c + o->off, v, len + 1);
		return 0;
	}
	}
	return -EINVAL;
}

/* Set option i from source src; `where` names the source in messages
 * ("command line", "env SHF_X", "file F line N"). */
int shd_optval_set(struct shd_config *c, int i, const char *v, enum shd_config_src src,
		   const char *where, char *err, size_t errlen)
{
	char why[256], val[80];
	if (shd_optval_parse(c, &shd_opts[i], v, why, sizeof(why)) < 0) {
		shd_optval_fmt_quoted(v, val, sizeof(val));
		shd_errf(err, errlen, "%s=%s: %s (%s)", shd_opts[i].name, val, why, where);
		return -EINVAL;
	}
	c->source[i] = (uint8_t)src;
	return 0;
}

/* Option by name; '-' and '_' are the same.  -1 if none.  len: bytes of
 * name to compare (the name may continue with "=value"). */
int shd_optval_find(const char *name, size_t len)
{
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		const char *o = shd_opts[i].name;
		size_t k;
		if (strlen(o) != len)
			continue;
		for (k = 0; k < len; k++) {
			char a = name[k] == '-' ? '_' : name[k];
			if (a != o[k])
				break;
		}
		if (k == len)
			return i;
	}
	return -1;
}

void shd_optval_fmt_source(const struct shd_config *c, int i, char *buf, size_t n)
{
	switch (c->source[i]) {
	case SHD_CONFIG_SRC_COMPUTED:
		snprintf(buf, n, "computed");
		break;
	case SHD_CONFIG_SRC_FILE:
		snprintf(buf, n, "file %s", c->config);
		break;
	case SHD_CONFIG_SRC_ENV:
		snprintf(buf, n, "env %s", shd_opts[i].env);
		break;
	case SHD_CONFIG_SRC_CLI:
		snprintf(buf, n, "command line");
		break;
	case SHD_CONFIG_SRC_RUNTIME:
		snprintf(buf, n, "runtime (shufflectl)");
		break;
	default:
		snprintf(buf, n, "default");
		break;
	}
}
