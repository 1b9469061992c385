/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/args.h - the test clients' command line (tests/node/tclient,
 * tests/multi/mn-client), header only:
 *
 *   CLIENT MODE [key=value ...]
 *
 * parsed by one function from a table of keys, each with where its value
 * goes.  A missing mode, an argument without '=' or an unknown key calls
 * the client's usage() (which exits).
 */
#ifndef SHF_TESTS_LIB_ARGS_H
#define SHF_TESTS_LIB_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum targ_type {
	TARG_INT,      /* int, decimal */
	TARG_LONG,     /* long, decimal */
	TARG_UNSIGNED, /* unsigned, decimal */
	TARG_U32,      /* uint32_t, decimal or 0x hex */
	TARG_U64,      /* uint64_t, decimal or 0x hex */
	TARG_STR,      /* const char *, the argument itself */
	TARG_FN,       /* fn(value) */
};

struct targ {
	const char *key;
	enum targ_type type;
	void *p;                  /* where the value goes (not TARG_FN) */
	void (*fn)(const char *v); /* TARG_FN */
};

/* argv[1] is the mode (returned); argv[2..] are key=value pairs of the n
 * keys in t.  The argument strings are cut at '=' in place. */
static inline const char *targs_parse(int argc, char **argv, const struct targ *t, size_t n,
				      void (*usage)(const char *why))
{
	if (argc < 2)
		usage("no mode");
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq)
			usage(argv[i]);
		*eq = '\0';
		const char *k = argv[i], *v = eq + 1;
		size_t j = 0;
		while (j < n && strcmp(t[j].key, k) != 0)
			j++;
		if (j == n)
			usage(k);
		switch (t[j].type) {
		case TARG_INT: *(int *)t[j].p = atoi(v); break;
		case TARG_LONG: *(long *)t[j].p = atol(v); break;
		case TARG_UNSIGNED: *(unsigned *)t[j].p = (unsigned)atoi(v); break;
		case TARG_U32: *(uint32_t *)t[j].p = (uint32_t)strtoul(v, NULL, 0); break;
		case TARG_U64: *(uint64_t *)t[j].p = strtoull(v, NULL, 0); break;
		case TARG_STR: *(const char **)t[j].p = v; break;
		case TARG_FN: t[j].fn(v); break;
		}
	}
	return argv[1];
}

#define TARGS_N(t) (sizeof(t) / sizeof((t)[0]))

#endif /* SHF_TESTS_LIB_ARGS_H */
