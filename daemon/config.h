/* SPDX-License-Identifier: MIT */
/*
 * daemon/config.h - loading shuffled's settings.
 *
 * One option table (daemon/options.c; struct shd_config and the option
 * indices are in daemon/options.h) drives the command line, the
 * environment, the INI file, --help, shd_config_print() and
 * shd_config_json().  Precedence:
 *   command line  --name=value | --name value  ('-' and '_' both accepted)
 *   environment   SHF_<NAME> (node_name: SHF_NODE; empty = unset)
 *   INI file      --config PATH or $SHF_CONFIG, else SHD_CONFIG_DEFAULT
 *                 (SYSCONFDIR/shuffle/shuffled.conf) when it exists;
 *                 --no-config or --config= reads none; section [shuffled],
 *                 key = name
 *   default
 * The command line is parsed with getopt_long(3), the long options built
 * from the table: --name=value and --name value, each name spelled with
 * '_' and with '-'; abbreviations are refused.
 * Every value is checked where it is read (type, range, power of two,
 * length, syntax) and refused with a message naming the option, the value,
 * what is allowed and where the value came from, e.g.
 *   "ring_bytes=3000: must be a power of two in [4 KiB, 256 MiB] (command line)".
 * Sizes take binary suffixes k/K/KiB, m/M/MiB, g/G/GiB.  Every size has a
 * hard cap.
 */
#ifndef SHD_CONFIG_H
#define SHD_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/options.h"


/* Fill every option with its default, sources SHD_CONFIG_SRC_DEFAULT.
 * Derived values (node_name, runtime_dir, socket_path) stay "". */
void shd_config_defaults(struct shd_config *c);

/*
 * Reset c to defaults, then read the INI file, the environment and argv
 * (argv[0] is the program name and is skipped), fill the derived values
 * and cross-check (max_msg against ring_bytes, batch_budget against
 * batch_bytes, heartbeat_ms against peer_timeout_ms).  Returns 0 on
 * success; 1 when --help/-h or --version/-V was handled (printed to
 * stdout; the caller exits 0); a negative errno (-EINVAL, -ENOENT, ...)
 * with a one-line message in err otherwise (printable as
 * "shuffled: <err>").  Positional arguments are refused.  err may be NULL.
 */
int shd_config_load(struct shd_config *c, int argc, char **argv, char *err, size_t errlen);

/* One line per option: name, value (sizes as "1 MiB (1048576)"), source
 * ("default", "computed", "env SHF_X", "file PATH", "command line").
 * Internal: only the config tests use it (the daemon shows its config as
 * JSON, shd_config_json()). */
void shd_config_print(FILE *f, const struct shd_config *c);

/*
 * {"<name>": {"value": .., "source": "..", "default": .., "help": "..",
 *             "type": "size|integer|string|level", "env": "SHF_X",
 *             "min": .., "max": .. (numbers only), "power_of_two": true (if so)}, ...}
 * Numbers are JSON integers (bytes for sizes), log_level is its name.
 * New reference, NULL on allocation failure.
 */
json_t *shd_config_json(const struct shd_config *c);

/* The default INI file (SYSCONFDIR/shuffle/shuffled.conf). */
const char *shd_config_default_file(void);

/* Does this daemon serve every local user (mode system, after load)? */
static inline int shd_config_system(const struct shd_config *c)
{
	return c->mode[0] == 's';
}

/* Name of an option ("ring_bytes", "socket"), NULL when out of range. */
const char *shd_config_opt_name(int opt);

#endif /* SHD_CONFIG_H */
