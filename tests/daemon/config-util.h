/* SPDX-License-Identifier: MIT */
/* tests/daemon/config-util.h - helpers for the config unit tests. */
#ifndef SHF_TESTS_DAEMON_CONFIG_UTIL_H
#define SHF_TESTS_DAEMON_CONFIG_UTIL_H

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/config.h"
#include "tests/lib/check.h"

/* Unset every variable the option table reads, so the caller's environment
 * cannot leak into a test. */
static inline void clear_config_env(void)
{
	struct shd_config c;
	shd_config_defaults(&c);
	json_t *j = shd_config_json(&c);
	CHECK(j);
	const char *name;
	json_t *e;
	json_object_foreach(j, name, e)
	{
		const char *env = json_string_value(json_object_get(e, "env"));
		CHECK(env && strncmp(env, "SHF_", 4) == 0);
		unsetenv(env);
	}
	json_decref(j);
}

/* shd_config_load() with argv = {"shuffled", args..., NULL}; NULL-terminated. */
static inline int load_args(struct shd_config *c, char *err, size_t errlen, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;
	argv[argc++] = (char *)"shuffled";
	va_start(ap, errlen);
	for (char *a; (a = va_arg(ap, char *)) != NULL;) {
		CHECK(argc < 63);
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;
	err[0] = '\0';
	return shd_config_load(c, argc, argv, err, errlen);
}

static char temp_paths[4][64];

static inline void remove_temps(void)
{
	for (int i = 0; i < 4; i++)
		if (temp_paths[i][0])
			unlink(temp_paths[i]);
}

/* Write text to a new temporary file, removed at exit; returns its path
 * (one per slot 0..3; a slot's previous file is removed). */
static inline const char *write_temp(int slot, const char *text)
{
	static int registered;
	char (*paths)[64] = temp_paths;
	CHECK(slot >= 0 && slot < 4);
	if (!registered++)
		atexit(remove_temps);
	if (paths[slot][0])
		unlink(paths[slot]);
	snprintf(paths[slot], sizeof(paths[slot]), "/tmp/shf-config-test-XXXXXX");
	int fd = mkstemp(paths[slot]);
	CHECK(fd >= 0);
	size_t len = strlen(text);
	CHECK(write(fd, text, len) == (ssize_t)len);
	close(fd);
	return paths[slot];
}

#endif
