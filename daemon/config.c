/* SPDX-License-Identifier: MIT */
/*
 * daemon/config.c - loading the options of the table (daemon/options.c):
 * command line, environment, INI file (inih), defaults, derived values and
 * cross-checks; and --help, print and JSON from the same table.  See
 * config.h.  One option's value (parsing, checks, formatting) is
 * daemon/optval.c's.
 */
#include "daemon/config.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/errbuf.h"
#include "daemon/log.h"
#include "daemon/optval.h"
#include "daemon/rdv/rdv.h"
#include "proto/ring.h"
#include "proto/shm.h"

/* configure-time paths and names (daemon/meson.build) */
#ifndef SHD_CONFIG_DEFAULT
#error "SHD_CONFIG_DEFAULT (the default INI file) must be set by the build"
#endif
#ifndef SHF_SYSTEM_USER
#error "SHF_SYSTEM_USER (meson option system_user) must be set by the build"
#endif

const char *shd_config_default_file(void)
{
	return SHD_CONFIG_DEFAULT;
}

const char *shd_config_opt_name(int opt)
{
	return opt >= 0 && opt < SHD_OPT_MAX ? shd_opts[opt].name : NULL;
}

/* ---- defaults ---- */

void shd_config_defaults(struct shd_config *c)
{
	char why[256];
	memset(c, 0, sizeof(*c));
	c->system_uid = -1;
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		int r = shd_optval_parse(c, &shd_opts[i], shd_opts[i].def, why, sizeof(why));
		assert(r == 0 && "option table default does not pass its own checks");
		(void)r;
		c->source[i] = SHD_CONFIG_SRC_DEFAULT;
	}
}

/* ---- command line ---- */

enum arg_kind { ARG_END, ARG_HELP, ARG_VERSION };

/* One option from the command line: SHD_OPT_*, its value (--no-config:
 * SHD_OPT_CONFIG with ""). */
struct arg {
	int opt;
	const char *val;
};

#define LONG_BASE 0x100                    /* getopt_long val of option i: LONG_BASE + i */
#define LONG_NO_CONFIG (LONG_BASE + SHD_OPT_MAX)

/*
 * Parse argv with getopt_long(3) into out[] (argc slots), *n_out items.
 * The long options come from the table, each name spelled with '_' and
 * with '-'; an abbreviation getopt_long would take is refused (a typo must
 * not set another option).  ARG_END, ARG_HELP or ARG_VERSION (at the first
 * --help/--version; what follows is not looked at), or a negative errno
 * with a message.
 */
static int parse_argv(int argc, char **argv, struct arg *out, int *n_out, char *err,
		      size_t errlen)
{
	struct option lo[2 * SHD_OPT_MAX + 4];
	char dashed[SHD_OPT_MAX][48];
	char shown[80];
	int n = 0, k = 0;

	for (int i = 0; i < SHD_OPT_MAX; i++) {
		lo[n++] = (struct option){shd_opts[i].name, required_argument, NULL, LONG_BASE + i};
		snprintf(dashed[i], sizeof(dashed[i]), "%s", shd_opts[i].name);
		for (char *p = dashed[i]; *p; p++)
			if (*p == '_')
				*p = '-';
		if (strcmp(dashed[i], shd_opts[i].name))
			lo[n++] = (struct option){dashed[i], required_argument, NULL, LONG_BASE + i};
	}
	lo[n++] = (struct option){"no-config", no_argument, NULL, LONG_NO_CONFIG};
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n++] = (struct option){"version", no_argument, NULL, 'V'};
	lo[n] = (struct option){NULL, 0, NULL, 0};

	*n_out = 0;
	optind = 0; /* glibc: start afresh (shd_config_load may run more than once) */
	opterr = 0;
	for (;;) {
		int at = optind > 0 ? optind : 1; /* the word being parsed */
		int li = -1;
		/* '+': stop at the first word that is not an option (refused below) */
		int ch = getopt_long(argc, argv, "+:hV", lo, &li);
		if (ch == -1)
			break;
		const char *text = at < argc && argv[at] ? argv[at] : "";
		size_t name_len = strcspn(text, "=");
		bool is_long = !strncmp(text, "--", 2);
		if (ch == 'h' || ch == 'V') {
			if (is_long && li >= 0 && name_len != strlen(lo[li].name) + 2)
				goto unknown; /* --he, --vers */
			return ch == 'h' ? ARG_HELP : ARG_VERSION;
		}
		if (ch == '?')
			goto unknown;
		if (ch == ':') {
			int o = is_long ? shd_optval_find(text + 2, name_len - 2) : -1;
			if (o < 0)
				goto unknown; /* an abbreviation without its value */
			shd_errf(err, errlen, "option --%s needs a value", shd_opts[o].name);
			return -EINVAL;
		}
		if (!is_long || li < 0 || name_len != strlen(lo[li].name) + 2)
			goto unknown;
		out[k].opt = ch == LONG_NO_CONFIG ? SHD_OPT_CONFIG : ch - LONG_BASE;
		out[k].val = ch == LONG_NO_CONFIG ? "" : optarg;
		k++;
		continue;
unknown:
		if (!is_long && optopt && ch == '?')
			snprintf(shown, sizeof(shown), "-%c", optopt);
		else {
			shd_optval_fmt_quoted(text, shown, sizeof(shown));
			if (name_len < strlen(shown))
				shown[name_len] = '\0';
		}
		shd_errf(err, errlen, "unknown option '%s' (see shuffled --help)", shown);
		return -EINVAL;
	}
	if (optind < argc && argv[optind]) {
		shd_optval_fmt_quoted(argv[optind], shown, sizeof(shown));
		shd_errf(err, errlen, "unexpected argument '%s': shuffled takes no positional "
			"arguments (options are --name=value)", shown);
		return -EINVAL;
	}
	*n_out = k;
	return ARG_END;
}

/* ---- INI file ---- */

struct file_ctx {
	struct shd_config *c;
	FILE *f;
	const char *path;
	unsigned lineno;           /* line last handed to inih */
	unsigned line_of[SHD_OPT_MAX]; /* where each key was set; 0: not yet */
	int r;                     /* first error */
	char *err;
	size_t errlen;
};

/* fgets-style reader for inih that counts lines and refuses lines that do
 * not fit inih's buffer instead of letting it split them silently. */
static char *file_reader(char *str, int num, void *stream)
{
	struct file_ctx *fc = stream;
	char *s = fgets(str, num, fc->f);
	if (!s)
		return NULL;
	fc->lineno++;
	size_t len = strlen(s);
	if (len > 0 && s[len - 1] != '\n' && !feof(fc->f)) {
		int ch;
		while ((ch = fgetc(fc->f)) != EOF && ch != '\n')
			;
		if (fc->r == 0) {
			shd_errf(fc->err, fc->errlen, "config file %s line %u: line longer than %d "
				"characters", fc->path, fc->lineno, num - 3);
			fc->r = -EINVAL;
		}
	}
	return s;
}

static int file_handler(void *user, const char *section, const char *name, const char *value)
{
	struct file_ctx *fc = user;
	char where[SHD_CONFIG_PATH_MAX + 64];

	if (fc->r < 0)
		return 0;
	if (strcmp(section, "shuffled") != 0) {
		if (section[0])
			shd_errf(fc->err, fc->errlen, "config file %s line %u: unknown section [%s]; "
				"settings go in [shuffled]", fc->path, fc->lineno, section);
		else
			shd_errf(fc->err, fc->errlen, "config file %s line %u: '%s' is outside a "
				"section; settings go in [shuffled]", fc->path, fc->lineno, name);
		fc->r = -EINVAL;
		return 0;
	}
	/* removed in 0.3 (they showed no measured gain, docs/performance.md):
	 * a file written for an older daemon still starts this one */
	static const char *const retired[] = {"poll_us", "sleeper_pays", "sleeper_wait_us"};
	for (size_t i = 0; i < sizeof(retired) / sizeof(retired[0]); i++)
		if (!strcmp(name, retired[i]))
			return 1;
	int o = shd_optval_find(name, strlen(name));
	if (o < 0) {
		shd_errf(fc->err, fc->errlen, "config file %s line %u: unknown key '%s' in "
			"[shuffled] (see shuffled --help)", fc->path, fc->lineno, name);
		fc->r = -EINVAL;
		return 0;
	}
	if (shd_opts[o].flags & SHD_OPT_F_NO_FILE) {
		shd_errf(fc->err, fc->errlen, "config file %s line %u: '%s' can be set only on the "
			"command line or in the environment", fc->path, fc->lineno, shd_opts[o].name);
		fc->r = -EINVAL;
		return 0;
	}
	if (fc->line_of[o]) {
		shd_errf(fc->err, fc->errlen, "config file %s line %u: '%s' set again (first on "
			"line %u)", fc->path, fc->lineno, shd_opts[o].name, fc->line_of[o]);
		fc->r = -EINVAL;
		return 0;
	}
	fc->line_of[o] = fc->lineno;
	snprintf(where, sizeof(where), "config file %s line %u", fc->path, fc->lineno);
	if (shd_optval_set(fc->c, o, value, SHD_CONFIG_SRC_FILE, where, fc->err, fc->errlen) < 0) {
		fc->r = -EINVAL;
		return 0;
	}
	return 1;
}

static int read_file(struct shd_config *c, char *err, size_t errlen)
{
	struct file_ctx fc = { .c = c, .path = c->config, .err = err, .errlen = errlen };
	struct stat st;
	int r;

	fc.f = fopen(c->config, "re");
	if (!fc.f) {
		r = -errno;
		shd_errf(err, errlen, "config file %s: %s", c->config, strerror(-r));
		return r;
	}
	if (fstat(fileno(fc.f), &st) == 0 && S_ISDIR(st.st_mode)) {
		shd_errf(err, errlen, "config file %s: %s", c->config, strerror(EISDIR));
		r = -EISDIR;
		goto out;
	}
	r = ini_parse_stream(file_reader, &fc, file_handler, &fc);
	if (fc.r < 0) {
		r = fc.r;
	} else if (ferror(fc.f)) {
		shd_errf(err, errlen, "config file %s: read error", c->config);
		r = -EIO;
	} else if (r > 0) {
		shd_errf(err, errlen, "config file %s line %d: syntax error (expected "
			"[section] or key = value)", c->config, r);
		r = -EINVAL;
	} else if (r < 0) {
		shd_errf(err, errlen, "config file %s: out of memory", c->config);
		r = -ENOMEM;
	}
out:
	fclose(fc.f);
	return r;
}

/* ---- derived values and cross-checks ---- */

static int derive(struct shd_config *c, char *err, size_t errlen)
{
	char why[256];

	if (!c->node_name[0]) {
		char host[256];
		if (gethostname(host, sizeof(host)) < 0) {
			int r = -errno;
			shd_errf(err, errlen, "node_name: gethostname: %s; set --node_name or SHF_NODE",
				strerror(-r));
			return r;
		}
		host[sizeof(host) - 1] = '\0';
		if (strlen(host) >= sizeof(c->node_name) || !host[0] ||
		    shd_opts[SHD_OPT_NODE_NAME].check(host, why, sizeof(why)) < 0) {
			char shown[80];
			shd_optval_fmt_quoted(host, shown, sizeof(shown));
			shd_errf(err, errlen, "node_name: the host name '%s' is not usable as a node "
				"name; set --node_name or SHF_NODE", shown);
			return -EINVAL;
		}
		strcpy(c->node_name, host);
		c->source[SHD_OPT_NODE_NAME] = SHD_CONFIG_SRC_COMPUTED;
	}

	/* the system user (looked up now: it may be created after the build),
	 * and mode auto resolved with it */
	c->system_uid = -1;
	if (SHF_SYSTEM_USER[0]) {
		struct passwd pw, *res = NULL;
		char buf[4096];
		if (getpwnam_r(SHF_SYSTEM_USER, &pw, buf, sizeof(buf), &res) == 0 && res)
			c->system_uid = res->pw_uid;
	}
	if (!strcmp(c->mode, "auto")) {
		uid_t me = geteuid();
		bool sys = me == 0 || (c->system_uid >= 0 && me == (uid_t)c->system_uid);
		strcpy(c->mode, sys ? "system" : "user");
		c->source[SHD_OPT_MODE] = SHD_CONFIG_SRC_COMPUTED;
	}

	if (!c->runtime_dir[0]) {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		int n;
		if (shd_config_system(c))
			n = snprintf(c->runtime_dir, sizeof(c->runtime_dir), SHF_SYSTEM_RUNTIME_DIR "/%s",
				     c->node_name);
		else if (xdg && xdg[0] == '/')
			n = snprintf(c->runtime_dir, sizeof(c->runtime_dir), "%s/shuffle/%s", xdg,
				     c->node_name);
		else
			n = snprintf(c->runtime_dir, sizeof(c->runtime_dir), "/tmp/shuffle-%u/%s",
				     (unsigned)geteuid(), c->node_name);
		if (n < 0 || (size_t)n >= sizeof(c->runtime_dir)) {
			c->runtime_dir[0] = '\0';
			shd_errf(err, errlen, "runtime_dir: the computed path is too long (from "
				"$XDG_RUNTIME_DIR); set --runtime_dir");
			return -ENAMETOOLONG;
		}
		c->source[SHD_OPT_RUNTIME_DIR] = SHD_CONFIG_SRC_COMPUTED;
	}

	if (!c->socket_path[0]) {
		static const char name[] = "/shuffled.sock";
		size_t len = strlen(c->runtime_dir) + sizeof(name) - 1;
		if (len >= sizeof(c->socket_path)) {
			char shown[80];
			shd_optval_fmt_quoted(c->runtime_dir, shown, sizeof(shown));
			shd_errf(err, errlen, "socket: %s%s would be %zu bytes, more than the %zu a "
				"UNIX socket path allows; set a shorter runtime_dir or socket",
				shown, name, len, sizeof(c->socket_path) - 1);
			return -ENAMETOOLONG;
		}
		size_t dl = strlen(c->runtime_dir);
		memcpy(c->socket_path, c->runtime_dir, dl);
		memcpy(c->socket_path + dl, name, sizeof(name)); /* with its NUL */
		c->source[SHD_OPT_SOCKET] = SHD_CONFIG_SRC_COMPUTED;
	}
	return 0;
}


/*
 * Relations between options.  max_msg must fit a ring record: a message is
 * an 8-byte header (struct shf_msg_hdr) + payload in one record of at most
 * ring_bytes/2 - 8.  A max_msg left at its default shrinks to fit a small
 * ring (source "computed"), so `--ring_bytes=16k` alone works; one the user
 * set is refused instead.  A bind with {node} needs a rendezvous that knows
 * the node id before the fabric opens (rdv.c decides).
 */
static int cross_check(struct shd_config *c, char *err, size_t errlen)
{
	char a[32], b[32], sa[SHD_CONFIG_PATH_MAX + 16], sb[SHD_CONFIG_PATH_MAX + 16];

	/* budgets left at their defaults fit a shared node: uid_mem_max at
	 * most 1/32 of its memory, mem_max 1/8 (the defaults are the caps,
	 * 1G and 4G; docs/operations.md, "Memory") */
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	if (pages > 0 && psz > 0) {
		uint64_t total = (uint64_t)pages * (uint64_t)psz;
		if (c->source[SHD_OPT_UID_MEM_MAX] == SHD_CONFIG_SRC_DEFAULT &&
		    total / 32 < c->uid_mem_max) {
			c->uid_mem_max = total / 32 > 16 * MiB ? total / 32 : 16 * MiB;
			c->source[SHD_OPT_UID_MEM_MAX] = SHD_CONFIG_SRC_COMPUTED;
		}
		if (c->source[SHD_OPT_MEM_MAX] == SHD_CONFIG_SRC_DEFAULT && total / 8 < c->mem_max) {
			c->mem_max = total / 8 > 64 * MiB ? total / 8 : 64 * MiB;
			c->source[SHD_OPT_MEM_MAX] = SHD_CONFIG_SRC_COMPUTED;
		}
	}

	uint64_t fit = shf_ring_max_payload(c->ring_bytes) - SHF_MSG_HDR_BYTES;
	if (c->max_msg > fit && c->source[SHD_OPT_MAX_MSG] == SHD_CONFIG_SRC_DEFAULT) {
		c->max_msg = (uint32_t)fit;
		c->source[SHD_OPT_MAX_MSG] = SHD_CONFIG_SRC_COMPUTED;
	}
	if (c->max_msg > fit) {
		shd_optval_fmt_size(c->max_msg, a, sizeof(a));
		shd_optval_fmt_size(c->ring_bytes, b, sizeof(b));
		shd_optval_fmt_source(c, SHD_OPT_MAX_MSG, sa, sizeof(sa));
		shd_optval_fmt_source(c, SHD_OPT_RING_BYTES, sb, sizeof(sb));
		shd_errf(err, errlen, "max_msg=%u (%s) does not fit ring_bytes=%u (%s): max_msg must "
			"be at most ring_bytes/2 - 16 = %llu (max_msg from %s, ring_bytes from %s)",
			c->max_msg, a, c->ring_bytes, b, (unsigned long long)fit, sa, sb);
		return -EINVAL;
	}
	if (c->batch_budget < c->batch_bytes) {
		shd_optval_fmt_size(c->batch_budget, a, sizeof(a));
		shd_optval_fmt_size(c->batch_bytes, b, sizeof(b));
		shd_optval_fmt_source(c, SHD_OPT_BATCH_BUDGET, sa, sizeof(sa));
		shd_optval_fmt_source(c, SHD_OPT_BATCH_BYTES, sb, sizeof(sb));
		shd_errf(err, errlen, "batch_budget=%llu (%s) is smaller than batch_bytes=%u (%s): "
			"the budget must hold at least one batch (batch_budget from %s, "
			"batch_bytes from %s)", (unsigned long long)c->batch_budget, a,
			c->batch_bytes, b, sa, sb);
		return -EINVAL;
	}
	if (c->heartbeat_ms >= c->peer_timeout_ms) {
		shd_optval_fmt_source(c, SHD_OPT_HEARTBEAT_MS, sa, sizeof(sa));
		shd_optval_fmt_source(c, SHD_OPT_PEER_TIMEOUT_MS, sb, sizeof(sb));
		shd_errf(err, errlen, "heartbeat_ms=%u must be less than peer_timeout_ms=%u, or "
			"idle peers would be declared down between heartbeats (heartbeat_ms from "
			"%s, peer_timeout_ms from %s)", c->heartbeat_ms, c->peer_timeout_ms, sa, sb);
		return -EINVAL;
	}
	if ((uint64_t)c->reserved_root + c->reserved_ctl >= c->max_clients) {
		shd_errf(err, errlen, "reserved_root=%u plus reserved_ctl=%u must be less than "
			"max_clients=%u, or no slot is left for ordinary clients",
			c->reserved_root, c->reserved_ctl, c->max_clients);
		return -EINVAL;
	}
	char why[256], vb[80];
	if (shd_rdv_bind_check(c->bind, c->rendezvous, why, sizeof(why)) < 0) {
		shd_optval_fmt_quoted(c->bind, vb, sizeof(vb));
		shd_optval_fmt_source(c, SHD_OPT_BIND, sa, sizeof(sa));
		shd_optval_fmt_source(c, SHD_OPT_RENDEZVOUS, sb, sizeof(sb));
		shd_errf(err, errlen, "bind=%s: %s (bind from %s, rendezvous from %s)", vb, why, sa,
			 sb);
		return -EINVAL;
	}
	return 0;
}

/* ---- load ---- */

/* Usage line then, per option: name, env variable, help, default, limits. */
static void config_help(FILE *f);

int shd_config_load(struct shd_config *c, int argc, char **argv, char *err, size_t errlen)
{
	char local[512];
	char where[64];
	int i, o, r;
	const char *v;

	if (!err || errlen == 0) {
		err = local;
		errlen = sizeof(local);
	}
	err[0] = '\0';
	shd_config_defaults(c);
	if (!argv)
		argc = 0;

	/* the whole command line first: syntax, --help/--version, --config */
	struct arg *args = NULL;
	int n_args = 0;
	if (argc > 1 && !(args = calloc((size_t)argc, sizeof(*args)))) {
		shd_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = argc > 1 ? parse_argv(argc, argv, args, &n_args, err, errlen) : ARG_END;
	if (r != ARG_END) {
		free(args);
		if (r == ARG_HELP) {
			config_help(stdout);
			return 1;
		}
		if (r == ARG_VERSION) {
			printf("shuffled %s\n", SHF_VERSION);
			return 1;
		}
		return r;
	}
	const char *cfg_val = NULL; /* the last --config / --no-config */
	for (i = 0; i < n_args; i++)
		if (args[i].opt == SHD_OPT_CONFIG)
			cfg_val = args[i].val;

	/* the file: command line, else environment, else the default file
	 * when it exists */
	const char *env_cfg = getenv(shd_opts[SHD_OPT_CONFIG].env);
	if (cfg_val)
		r = shd_optval_set(c, SHD_OPT_CONFIG, cfg_val, SHD_CONFIG_SRC_CLI, "command line", err,
			    errlen);
	else if (env_cfg && *env_cfg)
		r = shd_optval_set(c, SHD_OPT_CONFIG, env_cfg, SHD_CONFIG_SRC_ENV,
			    "env SHF_CONFIG", err, errlen);
	else if (c->config[0] && access(c->config, F_OK) < 0 && errno == ENOENT) {
		c->config[0] = '\0';
		c->source[SHD_OPT_CONFIG] = SHD_CONFIG_SRC_COMPUTED;
		r = 0;
	} else
		r = 0;

	/* lowest precedence first, each source overriding the previous */
	if (r == 0 && c->config[0])
		r = read_file(c, err, errlen);
	for (o = 0; r == 0 && o < SHD_OPT_MAX; o++) {
		if (o == SHD_OPT_CONFIG)
			continue;
		v = getenv(shd_opts[o].env);
		if (!v || !*v)
			continue;
		snprintf(where, sizeof(where), "env %s", shd_opts[o].env);
		r = shd_optval_set(c, o, v, SHD_CONFIG_SRC_ENV, where, err, errlen);
	}
	for (i = 0; r == 0 && i < n_args; i++)
		if (args[i].opt != SHD_OPT_CONFIG)
			r = shd_optval_set(c, args[i].opt, args[i].val, SHD_CONFIG_SRC_CLI, "command line",
				    err, errlen);
	free(args);
	if (r < 0)
		return r;

	r = derive(c, err, errlen);
	if (r < 0)
		return r;
	return cross_check(c, err, errlen);
}

/* ---- help, print, json ---- */

/* Print text wrapped at ~76 columns, each line indented by `indent`. */
static void print_wrapped(FILE *f, const char *text, int indent)
{
	const int width = 78;
	const char *p = text;
	while (*p) {
		int room = width - indent;
		const char *end = p + strlen(p);
		const char *cut = end;
		if (end - p > room) {
			cut = p + room;
			while (cut > p && *cut != ' ')
				cut--;
			if (cut == p)
				cut = p + room;
		}
		fprintf(f, "%*s%.*s\n", indent, "", (int)(cut - p), p);
		p = cut;
		while (*p == ' ')
			p++;
	}
}

static void fmt_default(const struct shd_opt *o, char *buf, size_t n)
{
	struct shd_config d;
	char why[256];
	if (o->type == SHD_OPT_T_STR || o->type == SHD_OPT_T_LEVEL) {
		snprintf(buf, n, "%s", o->def[0] ? o->def : "empty");
		return;
	}
	memset(&d, 0, sizeof(d));
	if (shd_optval_parse(&d, o, o->def, why, sizeof(why)) < 0)
		snprintf(buf, n, "%s", o->def);
	else
		shd_optval_fmt_num(o, shd_optval_get(&d, o), buf, n);
}

static void opt_help(FILE *f, const struct shd_opt *o)
{
	char def[128], lim[96], line[256], help[1024];
	fmt_default(o, def, sizeof(def));
	fprintf(f, "  --%s=%s  (%s)\n", o->name, o->meta, o->env);
	size_t n = (size_t)snprintf(help, sizeof(help), "%s", o->help);
	if (o->help_more && n + 1 < sizeof(help)) {
		help[n++] = ' ';
		n += o->help_more(help + n, sizeof(help) - n, true);
		if (n + 1 < sizeof(help))
			snprintf(help + n, sizeof(help) - n, ".");
	}
	print_wrapped(f, help, 8);
	if (o->type == SHD_OPT_T_UINT || o->type == SHD_OPT_T_SIZE) {
		shd_optval_fmt_limits(o, lim, sizeof(lim));
		snprintf(line, sizeof(line), "Default %s; %s.", def, lim);
	} else {
		snprintf(line, sizeof(line), "Default %s.", def);
	}
	print_wrapped(f, line, 8);
}

static void config_help(FILE *f)
{
	fprintf(f, "Usage: shuffled [--config PATH | --no-config] [--NAME=VALUE | --NAME VALUE]...\n"
		   "       shuffled --help | --version\n"
		   "\n"
		   "shuffled is the per-node relay daemon of shuffle. Each option below can be\n"
		   "given on the command line ('-' or '_' in names), in the environment\n"
		   "(SHF_NAME, shown) or in the INI file's [shuffled] section (key = value);\n"
		   "the command line wins over the environment, which wins over the file.\n"
		   "The file is --config, else $SHF_CONFIG, else " SHD_CONFIG_DEFAULT "\n"
		   "when it exists; --no-config (or --config=) reads none.\n"
		   "Sizes take binary suffixes: k/KiB, m/MiB, g/GiB.\n");
	for (int g = 0; g < SHD_OPT_G_MAX; g++) {
		fprintf(f, "\n%s:\n", shd_opt_group_names[g]);
		for (int i = 0; i < SHD_OPT_MAX; i++)
			if (shd_opts[i].group == (enum shd_opt_group)g)
				opt_help(f, &shd_opts[i]);
	}
	fprintf(f, "\nCommand line only:\n"
		   "  --no-config    read no INI file (not even the default one)\n"
		   "  -h, --help     print this help and exit\n"
		   "  -V, --version  print the version and exit\n");
}

static void fmt_current(const struct shd_config *c, int i, char *buf, size_t n)
{
	const struct shd_opt *o = &shd_opts[i];
	const char *p = (const char *)c + o->off;
	switch (o->type) {
	case SHD_OPT_T_STR:
		snprintf(buf, n, "%s", p[0] ? p : "\"\"");
		break;
	case SHD_OPT_T_LEVEL: {
		int l;
		memcpy(&l, p, sizeof(l));
		snprintf(buf, n, "%s", shd_log_level_name(l));
		break;
	}
	case SHD_OPT_T_UINT:
		snprintf(buf, n, "%llu", (unsigned long long)shd_optval_get(c, o));
		break;
	case SHD_OPT_T_SIZE: {
		char pretty[32];
		uint64_t v = shd_optval_get(c, o);
		shd_optval_fmt_size(v, pretty, sizeof(pretty));
		if (v != 0 && v % KiB == 0)
			snprintf(buf, n, "%s (%llu)", pretty, (unsigned long long)v);
		else
			snprintf(buf, n, "%s", pretty);
		break;
	}
	}
}

void shd_config_print(FILE *f, const struct shd_config *c)
{
	char val[SHD_CONFIG_PATH_MAX + 8], src[SHD_CONFIG_PATH_MAX + 16];
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		fmt_current(c, i, val, sizeof(val));
		shd_optval_fmt_source(c, i, src, sizeof(src));
		fprintf(f, "%-17s %-24s %s\n", shd_opts[i].name, val, src);
	}
}

static const char *type_name(enum shd_opt_type t)
{
	switch (t) {
	case SHD_OPT_T_SIZE:
		return "size";
	case SHD_OPT_T_UINT:
		return "integer";
	case SHD_OPT_T_LEVEL:
		return "level";
	default:
		return "string";
	}
}

/* the value of option o in c as JSON */
static json_t *json_value(const struct shd_config *c, const struct shd_opt *o)
{
	const char *p = (const char *)c + o->off;
	switch (o->type) {
	case SHD_OPT_T_STR:
		return json_string(p);
	case SHD_OPT_T_LEVEL: {
		int l;
		memcpy(&l, p, sizeof(l));
		return json_string(shd_log_level_name(l));
	}
	default:
		return json_integer((json_int_t)shd_optval_get(c, o));
	}
}

json_t *shd_config_json(const struct shd_config *c)
{
	char src[SHD_CONFIG_PATH_MAX + 16];
	struct shd_config d;
	json_t *root = json_object();
	if (!root)
		return NULL;
	shd_config_defaults(&d);
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		const struct shd_opt *o = &shd_opts[i];
		shd_optval_fmt_source(c, i, src, sizeof(src));
		json_t *e = json_object();
		if (!e || json_object_set_new(root, o->name, e) < 0)
			goto fail;
		int r = json_object_set_new(e, "value", json_value(c, o));
		r |= json_object_set_new(e, "source", json_string(src));
		r |= json_object_set_new(e, "default", json_value(&d, o));
		r |= json_object_set_new(e, "type", json_string(type_name(o->type)));
		r |= json_object_set_new(e, "env", json_string(o->env));
		r |= json_object_set_new(e, "help", json_string(o->help));
		if (o->type == SHD_OPT_T_UINT || o->type == SHD_OPT_T_SIZE) {
			r |= json_object_set_new(e, "min", json_integer((json_int_t)o->min));
			r |= json_object_set_new(e, "max", json_integer((json_int_t)o->max));
		}
		if (o->flags & SHD_OPT_F_POW2)
			r |= json_object_set_new(e, "power_of_two", json_true());
		if (r)
			goto fail;
	}
	return root;
fail:
	json_decref(root);
	return NULL;
}
