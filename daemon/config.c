/* SPDX-License-Identifier: MIT */
/*
 * daemon/config.c - the option table and everything it drives: command
 * line, environment, INI file (inih), help, print and JSON.  See config.h.
 */
#include "daemon/config.h"

#include <assert.h>
#include <ctype.h>
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
#include "daemon/rdv/rdv.h"
#include "proto/addr.h"
#include "proto/ring.h"
#include "proto/shm.h"

/* configure-time paths and names (daemon/meson.build) */
#ifndef SHD_CONFIG_DEFAULT
#error "SHD_CONFIG_DEFAULT (the default INI file) must be set by the build"
#endif
#ifndef SHF_SYSTEM_USER
#error "SHF_SYSTEM_USER (meson option system_user) must be set by the build"
#endif

_Static_assert(SHD_CONFIG_NAME_MAX == SHF_NODE_NAME_MAX, "node names: one rule (proto/addr.h)");

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

enum opt_type {
	T_STR,   /* char array of `size` bytes */
	T_UINT,  /* uint32_t or uint64_t (by `size`), decimal, no suffix */
	T_SIZE,  /* same storage, bytes, binary suffixes accepted */
	T_LEVEL, /* int, enum shd_log_level, by name or number */
};

#define F_POW2 0x1u    /* numbers: must be a power of two */
#define F_NO_FILE 0x2u /* not accepted in the INI file (the file's own path) */

/* The headings of --help, in their order; every option is under one. */
enum opt_group {
	G_PATHS,
	G_DATA,
	G_NETWORK,
	G_PEERS,
	G_LIMITS,
	G_SECURITY,
	G_STORE,
	G_LOGGING,
	G_EXPERIMENTAL, /* switches for measuring; docs/performance.md says what they showed */
	G_MAX
};

static const char *const group_names[G_MAX] = {
	[G_PATHS] = "Paths",
	[G_DATA] = "Data path",
	[G_NETWORK] = "Network",
	[G_PEERS] = "Peers",
	[G_LIMITS] = "Limits",
	[G_SECURITY] = "Security",
	[G_STORE] = "Store",
	[G_LOGGING] = "Logging",
	[G_EXPERIMENTAL] = "Experimental (for measuring; see docs/performance.md)",
};

/* Extra syntax check of a string value; 0 or -EINVAL with a reason in why. */
typedef int (*check_fn)(const char *v, char *why, size_t whylen);

struct opt {
	const char *name;  /* option, INI key; '-' accepted for '_' on the command line */
	const char *env;   /* environment variable */
	enum opt_type type;
	unsigned flags;    /* F_* */
	size_t off, size;  /* field in struct shd_config */
	uint64_t min, max; /* numbers: inclusive limits (hard caps) */
	const char *def;   /* default, as a user would write it (parsed by the same code) */
	const char *meta;  /* placeholder in --help */
	const char *help;
	check_fn check;    /* strings: extra validation, may be NULL */
	enum opt_group group; /* its heading in --help (and shuffled(8)) */
	/* appends to help what is known only at run time, may be NULL */
	size_t (*help_more)(char *buf, size_t len, bool help);
};

#define FIELD(f) offsetof(struct shd_config, f), sizeof(((struct shd_config *)0)->f)

static int check_mode(const char *v, char *why, size_t n);
static int check_routing(const char *v, char *why, size_t n);
static int check_node(const char *v, char *why, size_t n);
static int check_abs_path(const char *v, char *why, size_t n);
static int check_provider(const char *v, char *why, size_t n);
static int check_no_space(const char *v, char *why, size_t n);
static int check_iface(const char *v, char *why, size_t n);
static int check_bind(const char *v, char *why, size_t n);
static int check_rendezvous(const char *v, char *why, size_t n);
static int check_store_listen(const char *v, char *why, size_t n);

static const struct opt opts[SHD_OPT_MAX] = {
	[SHD_OPT_MODE] = {
		"mode", "SHF_MODE", T_STR, 0, FIELD(mode), 0, 0, "auto", "auto|user|system",
		"system: serve every local user (runtime directory 0755, socket 0666; each job "
		"belongs to the uid of its first process). user: serve only this uid (0700, "
		"0600). auto: system when running as root or as the system user "
		"'" SHF_SYSTEM_USER "', else user.",
		check_mode,
		.group = G_SECURITY },
	[SHD_OPT_RUNTIME_DIR] = {
		"runtime_dir", "SHF_RUNTIME_DIR", T_STR, 0, FIELD(runtime_dir), 0, 0, "", "PATH",
		"Directory for the control socket and per-node state; it must belong to this "
		"uid and be writable by nobody else. Empty: " SHF_SYSTEM_RUNTIME_DIR "/NODE in "
		"mode system, else $XDG_RUNTIME_DIR/shuffle/NODE or /tmp/shuffle-UID/NODE.",
		check_abs_path,
		.group = G_PATHS },
	[SHD_OPT_NODE_NAME] = {
		"node_name", "SHF_NODE", T_STR, 0, FIELD(node_name), 0, 0, "", "NAME",
		"This node's name (letters, digits, '.', '_', '-'); it is part of the runtime "
		"directory so that several daemons can share a host. Empty: the host name.",
		check_node,
		.group = G_PATHS },
	[SHD_OPT_SOCKET] = {
		"socket", "SHF_SOCKET", T_STR, 0, FIELD(socket_path), 0, 0, "", "PATH",
		"Control socket clients connect to (absolute, at most 107 bytes). "
		"Empty: RUNTIME_DIR/shuffled.sock.",
		check_abs_path,
		.group = G_PATHS },
	[SHD_OPT_RING_BYTES] = {
		"ring_bytes", "SHF_RING_BYTES", T_SIZE, F_POW2, FIELD(ring_bytes),
		4 * KiB, 256 * MiB, "1M", "SIZE",
		"Default size of each client ring (send and delivery), per direction.", NULL,
		.group = G_DATA },
	[SHD_OPT_MAX_MSG] = {
		"max_msg", "SHF_MAX_MSG", T_SIZE, 0, FIELD(max_msg), 0, 1 * MiB, "60K", "SIZE",
		"Largest message payload accepted; at most ring_bytes/2 - 16.", NULL,
		.group = G_DATA },
	[SHD_OPT_BATCH_BYTES] = {
		"batch_bytes", "SHF_BATCH_BYTES", T_SIZE, 0, FIELD(batch_bytes),
		1 * KiB, 4 * MiB, "128K", "SIZE",
		"A batch to a peer is sent when it holds this many bytes.", NULL,
		.group = G_DATA },
	[SHD_OPT_LINGER_US] = {
		"linger_us", "SHF_LINGER_US", T_UINT, 0, FIELD(linger_us), 0, 1000000, "100", "USEC",
		"... or when its oldest record has waited this long (microseconds).", NULL,
		.group = G_DATA },
	[SHD_OPT_LINGER_IDLE] = {
		"linger_idle", "SHF_LINGER_IDLE", T_UINT, 0, FIELD(linger_idle), 0, 1, "0", "0|1",
		"0: a batch to a node with no unacknowledged batch, and none closed within "
		"linger_us, leaves at the end of the pass; 1: every batch lingers.", NULL,
		.group = G_EXPERIMENTAL },
	[SHD_OPT_PEER_CREDITS] = {
		"peer_credits", "SHF_PEER_CREDITS", T_UINT, 0, FIELD(peer_credits), 1, 1024, "8", "N",
		"Batches in flight to one peer before waiting for credit.", NULL,
		.group = G_DATA },
	[SHD_OPT_ACK_DELAY_US] = {
		"ack_delay_us", "SHF_ACK_DELAY_US", T_UINT, 0, FIELD(ack_delay_us), 0, 100000, "0", "USEC",
		"Hold the ACK of received batches up to this long (microseconds) unless half of "
		"the sender's credit is unacknowledged; 0: acknowledge at once.", NULL,
		.group = G_DATA },
	[SHD_OPT_MAX_INFLIGHT] = {
		"max_inflight", "SHF_MAX_INFLIGHT", T_UINT, 0, FIELD(max_inflight), 1, 65536, "256", "N",
		"Batches in flight to all peers together.", NULL,
		.group = G_DATA },
	[SHD_OPT_FANOUT] = {
		"fanout", "SHF_FANOUT", T_UINT, 0, FIELD(fanout), 2, 64, "8", "K",
		"Children per node of the tree that carries cluster-wide requests "
		"(shufflectl --all).", NULL,
		.group = G_PEERS },
	[SHD_OPT_ROUTING] = {
		"routing", "SHF_ROUTING", T_STR, 0, FIELD(routing), 0, 0, "direct", "direct|2d",
		"How daemons reach each other. direct: every daemon talks to every other (a "
		"full mesh). 2d: nodes sit on a grid of about sqrt(N) x sqrt(N) by node id; a "
		"daemon talks only to its row and column, and a message for a node in another "
		"row and column is forwarded by one daemon in between (at most about 2*sqrt(N) "
		"connections per daemon). Must be the same on every daemon: a peer with "
		"another routing is refused at join.",
		check_routing,
		.group = G_NETWORK },
	[SHD_OPT_BATCH_BUDGET] = {
		"batch_budget", "SHF_BATCH_BUDGET", T_SIZE, 0, FIELD(batch_budget),
		1 * MiB, 16 * GiB, "64M", "SIZE",
		"Memory for outgoing and parked batches; at least batch_bytes.", NULL,
		.group = G_DATA },
	[SHD_OPT_RECV_BUFFERS] = {
		"recv_buffers", "SHF_RECV_BUFFERS", T_UINT, 0, FIELD(recv_buffers), 2, 4096, "32", "N",
		"Receive buffers kept posted on the fabric endpoint.", NULL,
		.group = G_DATA },
	[SHD_OPT_PROVIDER] = {
		"provider", "SHF_PROVIDER", T_STR, 0, FIELD(provider), 0, 0, "tcp", "NAME",
		"libfabric provider (tcp, verbs, cxi, efa, ...).", check_provider,
		.group = G_NETWORK },
	[SHD_OPT_BIND] = {
		"bind", "SHF_BIND", T_STR, 0, FIELD(bind), 0, 0, "", "HOST[:PORT]",
		"Address (and port) of the fabric endpoint: HOST[:PORT], [IPV6][:PORT] or a "
		"bare IPV6; {node} becomes the node id + 1. Empty: the provider's choice "
		"(for tcp the first NIC, not loopback).", check_bind,
		.group = G_NETWORK },
	[SHD_OPT_IFACE] = {
		"iface", "SHF_IFACE", T_STR, 0, FIELD(iface), 0, 0, "", "IFNAME",
		"Network interface for the fabric endpoint (sets FI_TCP_IFACE).", check_iface,
		.group = G_NETWORK },
	[SHD_OPT_MR_LOCAL] = {
		"mr_local", "SHF_MR_LOCAL", T_UINT, 0, FIELD(mr_local), 0, 1, "0", "0|1",
		"1: register batch buffers and control-message slots with the fabric even when "
		"the provider does not ask for FI_MR_LOCAL (tcp does not; verbs, efa and cxi "
		"may). For testing that path.", NULL,
		.group = G_EXPERIMENTAL },
	[SHD_OPT_RENDEZVOUS] = {
		"rendezvous", "SHF_RENDEZVOUS", T_STR, 0, FIELD(rendezvous), 0, 0, "auto", "HOW",
		"How daemons find each other:", check_rendezvous,
		.group = G_NETWORK, .help_more = shd_rdv_kinds },
	[SHD_OPT_MAX_NODES] = {
		"max_nodes", "SHF_MAX_NODES", T_UINT, 0, FIELD(max_nodes), 2, 1048576, "1024", "N",
		"tcp and dir without N: the most nodes the set can hold (node ids below N); costs "
		"about 1.3 KiB per node in every daemon. The other kinds size the set "
		"themselves.", NULL,
		.group = G_NETWORK },
	[SHD_OPT_PEER_TIMEOUT_MS] = {
		"peer_timeout_ms", "SHF_PEER_TIMEOUT_MS", T_UINT, 0, FIELD(peer_timeout_ms),
		100, 3600000, "5000", "MSEC",
		"A peer silent this long is declared down.", NULL,
		.group = G_PEERS },
	[SHD_OPT_HEARTBEAT_MS] = {
		"heartbeat_ms", "SHF_HEARTBEAT_MS", T_UINT, 0, FIELD(heartbeat_ms),
		10, 600000, "1000", "MSEC",
		"Keepalive period toward idle peers; less than peer_timeout_ms.", NULL,
		.group = G_PEERS },
	[SHD_OPT_PEER_IDLE_MS] = {
		"peer_idle_ms", "SHF_PEER_IDLE_MS", T_UINT, 0, FIELD(peer_idle_ms),
		0, 86400000, "0", "MSEC",
		"A peer up but unused this long (no job in common, no traffic, nothing in "
		"flight, not a 2-D route neighbour) goes idle: no heartbeats either way and its "
		"connection is released until it is used again. 0: never idle.", NULL,
		.group = G_PEERS },
	[SHD_OPT_MAX_CLIENTS] = {
		"max_clients", "SHF_MAX_CLIENTS", T_UINT, 0, FIELD(max_clients), 1, 65536, "1024", "N",
		"Concurrent connections (clients and shufflectl), reserves included.", NULL,
		.group = G_LIMITS },
	[SHD_OPT_MAX_CLIENTS_PER_USER] = {
		"max_clients_per_user", "SHF_MAX_CLIENTS_PER_USER", T_UINT, 0,
		FIELD(max_clients_per_user), 1, 65536, "512", "N",
		"Concurrent connections of one user (root is exempt); more are refused with "
		"EDQUOT.", NULL,
		.group = G_LIMITS },
	[SHD_OPT_RESERVED_ROOT] = {
		"reserved_root", "SHF_RESERVED_ROOT", T_UINT, 0, FIELD(reserved_root), 0, 65535,
		"8", "N",
		"The last N slots of max_clients are for root only.", NULL,
		.group = G_LIMITS },
	[SHD_OPT_RESERVED_CTL] = {
		"reserved_ctl", "SHF_RESERVED_CTL", T_UINT, 0, FIELD(reserved_ctl), 0, 65535, "8",
		"N",
		"The N slots before those are for shufflectl: a user's connection that gets one "
		"may send control requests but not register (EBUSY).", NULL,
		.group = G_LIMITS },
	[SHD_OPT_HELLO_TIMEOUT_MS] = {
		"hello_timeout_ms", "SHF_HELLO_TIMEOUT_MS", T_UINT, 0, FIELD(hello_timeout_ms),
		10, 3600000, "10000", "MSEC",
		"A connection that has not said HELLO after this long is closed.", NULL,
		.group = G_LIMITS },
	[SHD_OPT_IDLE_TIMEOUT_MS] = {
		"idle_timeout_ms", "SHF_IDLE_TIMEOUT_MS", T_UINT, 0, FIELD(idle_timeout_ms),
		10, 86400000, "60000", "MSEC",
		"A session that said HELLO but has neither registered nor sent a request for "
		"this long is cut off (ETIMEDOUT).", NULL,
		.group = G_LIMITS },
	[SHD_OPT_UID_MEM_MAX] = {
		"uid_mem_max", "SHF_UID_MEM_MAX", T_SIZE, 0, FIELD(uid_mem_max),
		1 * MiB, UINT64_C(1) << 50, "1G", "SIZE",
		"Memory one user's clients may make the daemon hold: their ring regions and "
		"rank directories. A registration over it fails with EDQUOT. root and the "
		"daemon's own user are exempt. Default: 1/32 of the node's memory, at most 1G.",
		NULL, .group = G_LIMITS },
	[SHD_OPT_MEM_MAX] = {
		"mem_max", "SHF_MEM_MAX", T_SIZE, 0, FIELD(mem_max),
		1 * MiB, UINT64_C(1) << 50, "4G", "SIZE",
		"The same for all users together (root and the daemon's own user exempt); "
		"a registration over it fails with ENOMEM. Default: 1/8 of the node's memory, "
		"at most 4G.", NULL, .group = G_LIMITS },
	[SHD_OPT_WORLD_TIMEOUT_MS] = {
		"world_timeout_ms", "SHF_WORLD_TIMEOUT_MS", T_UINT, 0, FIELD(world_timeout_ms),
		0, 86400000, "60000", "MSEC",
		"How long shf_open() waits for the whole job when the client passes 0.", NULL,
		.group = G_LIMITS },
	[SHD_OPT_CLUSTER_KEY] = {
		"cluster_key", "SHF_CLUSTER_KEY", T_STR, 0, FIELD(cluster_key), 0, 0, "", "PATH",
		"File of the cluster key (32 random bytes, shuffle-keygen), the same on every "
		"node, readable only by the daemon's user: peers prove they hold it once per "
		"session. Empty: peers are not authenticated (a warning at start).",
		check_abs_path,
		.group = G_SECURITY },
	[SHD_OPT_STORE_LISTEN] = {
		"store_listen", "SHF_STORE_LISTEN", T_STR, 0, FIELD(store_listen), 0, 0, "",
		"HOST:PORT",
		"Serve the key-value store (PyTorch TCPStore protocol) on HOST:PORT "
		"([IPV6]:PORT). Empty: no store.", check_store_listen,
		.group = G_STORE },
	[SHD_OPT_STORE_MAX_KEYS] = {
		"store_max_keys", "SHF_STORE_MAX_KEYS", T_UINT, 0, FIELD(store_max_keys),
		1, 16777216, "16384", "N",
		"Keys the store holds; a request that would add one more is refused.", NULL,
		.group = G_STORE },
	[SHD_OPT_STORE_MAX_KEY_BYTES] = {
		"store_max_key_bytes", "SHF_STORE_MAX_KEY_BYTES", T_SIZE, 0,
		FIELD(store_max_key_bytes), 16, 64 * KiB, "1K", "SIZE",
		"Longest key the store accepts.", NULL,
		.group = G_STORE },
	[SHD_OPT_STORE_MAX_VALUE_BYTES] = {
		"store_max_value_bytes", "SHF_STORE_MAX_VALUE_BYTES", T_SIZE, 0,
		FIELD(store_max_value_bytes), 64, 64 * MiB, "64K", "SIZE",
		"Longest value the store accepts.", NULL,
		.group = G_STORE },
	[SHD_OPT_STORE_MAX_CONNS] = {
		"store_max_conns", "SHF_STORE_MAX_CONNS", T_UINT, 0, FIELD(store_max_conns),
		1, 65536, "1024", "N",
		"Connections the store serves at once; more are closed at accept "
		"(a PyTorch client opens two).", NULL,
		.group = G_STORE },
	[SHD_OPT_STORE_MAX_WAITERS] = {
		"store_max_waiters", "SHF_STORE_MAX_WAITERS", T_UINT, 0, FIELD(store_max_waiters),
		1, 1048576, "4096", "N",
		"WAIT requests pending in the store, all connections together.", NULL,
		.group = G_STORE },
	[SHD_OPT_LOG_LEVEL] = {
		"log_level", "SHF_LOG_LEVEL", T_LEVEL, 0, FIELD(log_level), 0, 0, "info", "LEVEL",
		"err, warn, notice, info or debug (or 3..7).", NULL,
		.group = G_LOGGING },
	[SHD_OPT_LOG_FILE] = {
		"log_file", "SHF_LOG_FILE", T_STR, 0, FIELD(log_file), 0, 0, "", "PATH",
		"Append the log to this file. Empty: stderr (the journal under systemd).", NULL,
		.group = G_LOGGING },
	[SHD_OPT_CONFIG] = {
		"config", "SHF_CONFIG", T_STR, F_NO_FILE, FIELD(config), 0, 0, SHD_CONFIG_DEFAULT,
		"PATH",
		"INI file to read, section [shuffled], keys named as these options "
		"(command line or environment only). The default file is read when it "
		"exists; --no-config or --config= (empty) reads none.", check_abs_path,
		.group = G_PATHS },
};

const char *shd_config_default_file(void)
{
	return SHD_CONFIG_DEFAULT;
}

const char *shd_config_opt_name(int opt)
{
	return opt >= 0 && opt < SHD_OPT_MAX ? opts[opt].name : NULL;
}

/* ---- formatting helpers ---- */

/* "1 MiB" when v is a whole number of KiB/MiB/GiB (or 0), else "3000". */
static void fmt_size(uint64_t v, char *buf, size_t n)
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

static void fmt_num(const struct opt *o, uint64_t v, char *buf, size_t n)
{
	if (o->type == T_SIZE)
		fmt_size(v, buf, n);
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

/* "a power of two in [4 KiB, 256 MiB]" / "an integer in [1, 1024]" */
static void fmt_limits(const struct opt *o, char *buf, size_t n)
{
	char lo[32], hi[32];
	fmt_num(o, o->min, lo, sizeof(lo));
	fmt_num(o, o->max, hi, sizeof(hi));
	snprintf(buf, n, "%s in [%s, %s]",
		 o->flags & F_POW2 ? "a power of two" : o->type == T_SIZE ? "a size" : "an integer",
		 lo, hi);
}

/* A value quoted back in a message: at most 64 bytes (then "..."), control
 * characters shown as '?'.  n >= 4. */
static void fmt_value(const char *v, char *buf, size_t n)
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

static uint64_t get_num(const struct shd_config *c, const struct opt *o)
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

static void put_num(struct shd_config *c, const struct opt *o, uint64_t v)
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
static int parse_value(struct shd_config *c, const struct opt *o, const char *v, char *why,
		       size_t whylen)
{
	char lim[96];

	switch (o->type) {
	case T_UINT:
	case T_SIZE: {
		uint64_t x;
		int r = parse_u64(v, o->type == T_SIZE, &x);
		fmt_limits(o, lim, sizeof(lim));
		if (r == -EINVAL) {
			shd_errf(why, whylen, "not a valid %s; must be %s%s",
				o->type == T_SIZE ? "size" : "integer", lim,
				o->type == T_SIZE ? " (suffixes k/KiB, m/MiB, g/GiB)" : "");
			return -EINVAL;
		}
		if ((o->flags & F_POW2) && (r < 0 || x < o->min || x > o->max || (x & (x - 1)))) {
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
	case T_LEVEL: {
		int l = shd_log_level_parse(v);
		if (l < 0) {
			shd_errf(why, whylen, "must be one of err, warn, notice, info, debug (or 3..7)");
			return -EINVAL;
		}
		memcpy((char *)c + o->off, &l, sizeof(l));
		return 0;
	}
	case T_STR: {
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
static int set_opt(struct shd_config *c, int i, const char *v, enum shd_config_src src,
		   const char *where, char *err, size_t errlen)
{
	char why[256], val[80];
	if (parse_value(c, &opts[i], v, why, sizeof(why)) < 0) {
		fmt_value(v, val, sizeof(val));
		shd_errf(err, errlen, "%s=%s: %s (%s)", opts[i].name, val, why, where);
		return -EINVAL;
	}
	c->source[i] = (uint8_t)src;
	return 0;
}

/* Option by name; '-' and '_' are the same.  -1 if none.  len: bytes of
 * name to compare (the name may continue with "=value"). */
static int find_opt(const char *name, size_t len)
{
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		const char *o = opts[i].name;
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

/* ---- string checks ---- */

static int check_mode(const char *v, char *why, size_t n)
{
	if (strcmp(v, "auto") && strcmp(v, "user") && strcmp(v, "system")) {
		shd_errf(why, n, "must be auto, user or system");
		return -EINVAL;
	}
	return 0;
}

static int check_routing(const char *v, char *why, size_t n)
{
	if (strcmp(v, "direct") && strcmp(v, "2d")) {
		shd_errf(why, n, "must be direct or 2d");
		return -EINVAL;
	}
	return 0;
}

/* Empty: the host name, checked the same way in derive(). */
static int check_node(const char *v, char *why, size_t n)
{
	const char *reason;
	if (v[0] && shf_node_name_check(v, &reason) < 0) {
		shd_errf(why, n, "%s", reason);
		return -EINVAL;
	}
	return 0;
}

static int check_abs_path(const char *v, char *why, size_t n)
{
	if (v[0] && v[0] != '/') {
		shd_errf(why, n, "must be an absolute path (or empty for the default)");
		return -EINVAL;
	}
	return 0;
}

static int check_provider(const char *v, char *why, size_t n)
{
	if (!v[0]) {
		shd_errf(why, n, "must not be empty");
		return -EINVAL;
	}
	for (const char *p = v; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != ';') {
			shd_errf(why, n, "not a provider name (letters, digits, '_', '-', ';')");
			return -EINVAL;
		}
	}
	return 0;
}

static int check_no_space(const char *v, char *why, size_t n)
{
	if (strpbrk(v, " \t")) {
		shd_errf(why, n, "must not contain blanks");
		return -EINVAL;
	}
	return 0;
}

static int check_iface(const char *v, char *why, size_t n)
{
	if (strpbrk(v, " \t/:")) {
		shd_errf(why, n, "not an interface name");
		return -EINVAL;
	}
	return 0;
}

/* The grammars of these two are rdv.c's (the code that uses them). */
static int check_bind(const char *v, char *why, size_t n)
{
	if (check_no_space(v, why, n) < 0)
		return -EINVAL;
	return shd_rdv_bind_check(v, NULL, why, n) < 0 ? -EINVAL : 0;
}

static int check_rendezvous(const char *v, char *why, size_t n)
{
	return shd_rdv_spec_check(v, why, n) < 0 ? -EINVAL : 0;
}

static int check_store_listen(const char *v, char *why, size_t n)
{
	const char *r = NULL;
	if (!*v)
		return 0;
	if (shf_addr_parse(v, strlen(v), SHF_ADDR_NEED_PORT, NULL, 0, NULL, 0, &r) < 0) {
		shd_errf(why, n, "%s", r ? r : "not HOST:PORT");
		return -EINVAL;
	}
	return 0;
}

/* ---- defaults ---- */

void shd_config_defaults(struct shd_config *c)
{
	char why[256];
	memset(c, 0, sizeof(*c));
	c->system_uid = -1;
	for (int i = 0; i < SHD_OPT_MAX; i++) {
		int r = parse_value(c, &opts[i], opts[i].def, why, sizeof(why));
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
		lo[n++] = (struct option){opts[i].name, required_argument, NULL, LONG_BASE + i};
		snprintf(dashed[i], sizeof(dashed[i]), "%s", opts[i].name);
		for (char *p = dashed[i]; *p; p++)
			if (*p == '_')
				*p = '-';
		if (strcmp(dashed[i], opts[i].name))
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
			int o = is_long ? find_opt(text + 2, name_len - 2) : -1;
			if (o < 0)
				goto unknown; /* an abbreviation without its value */
			shd_errf(err, errlen, "option --%s needs a value", opts[o].name);
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
			fmt_value(text, shown, sizeof(shown));
			if (name_len < strlen(shown))
				shown[name_len] = '\0';
		}
		shd_errf(err, errlen, "unknown option '%s' (see shuffled --help)", shown);
		return -EINVAL;
	}
	if (optind < argc && argv[optind]) {
		fmt_value(argv[optind], shown, sizeof(shown));
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
	int o = find_opt(name, strlen(name));
	if (o < 0) {
		shd_errf(fc->err, fc->errlen, "config file %s line %u: unknown key '%s' in "
			"[shuffled] (see shuffled --help)", fc->path, fc->lineno, name);
		fc->r = -EINVAL;
		return 0;
	}
	if (opts[o].flags & F_NO_FILE) {
		shd_errf(fc->err, fc->errlen, "config file %s line %u: '%s' can be set only on the "
			"command line or in the environment", fc->path, fc->lineno, opts[o].name);
		fc->r = -EINVAL;
		return 0;
	}
	if (fc->line_of[o]) {
		shd_errf(fc->err, fc->errlen, "config file %s line %u: '%s' set again (first on "
			"line %u)", fc->path, fc->lineno, opts[o].name, fc->line_of[o]);
		fc->r = -EINVAL;
		return 0;
	}
	fc->line_of[o] = fc->lineno;
	snprintf(where, sizeof(where), "config file %s line %u", fc->path, fc->lineno);
	if (set_opt(fc->c, o, value, SHD_CONFIG_SRC_FILE, where, fc->err, fc->errlen) < 0) {
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
		    check_node(host, why, sizeof(why)) < 0) {
			char shown[80];
			fmt_value(host, shown, sizeof(shown));
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
			fmt_value(c->runtime_dir, shown, sizeof(shown));
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

static void fmt_source(const struct shd_config *c, int i, char *buf, size_t n)
{
	switch (c->source[i]) {
	case SHD_CONFIG_SRC_COMPUTED:
		snprintf(buf, n, "computed");
		break;
	case SHD_CONFIG_SRC_FILE:
		snprintf(buf, n, "file %s", c->config);
		break;
	case SHD_CONFIG_SRC_ENV:
		snprintf(buf, n, "env %s", opts[i].env);
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
		fmt_size(c->max_msg, a, sizeof(a));
		fmt_size(c->ring_bytes, b, sizeof(b));
		fmt_source(c, SHD_OPT_MAX_MSG, sa, sizeof(sa));
		fmt_source(c, SHD_OPT_RING_BYTES, sb, sizeof(sb));
		shd_errf(err, errlen, "max_msg=%u (%s) does not fit ring_bytes=%u (%s): max_msg must "
			"be at most ring_bytes/2 - 16 = %llu (max_msg from %s, ring_bytes from %s)",
			c->max_msg, a, c->ring_bytes, b, (unsigned long long)fit, sa, sb);
		return -EINVAL;
	}
	if (c->batch_budget < c->batch_bytes) {
		fmt_size(c->batch_budget, a, sizeof(a));
		fmt_size(c->batch_bytes, b, sizeof(b));
		fmt_source(c, SHD_OPT_BATCH_BUDGET, sa, sizeof(sa));
		fmt_source(c, SHD_OPT_BATCH_BYTES, sb, sizeof(sb));
		shd_errf(err, errlen, "batch_budget=%llu (%s) is smaller than batch_bytes=%u (%s): "
			"the budget must hold at least one batch (batch_budget from %s, "
			"batch_bytes from %s)", (unsigned long long)c->batch_budget, a,
			c->batch_bytes, b, sa, sb);
		return -EINVAL;
	}
	if (c->heartbeat_ms >= c->peer_timeout_ms) {
		fmt_source(c, SHD_OPT_HEARTBEAT_MS, sa, sizeof(sa));
		fmt_source(c, SHD_OPT_PEER_TIMEOUT_MS, sb, sizeof(sb));
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
		fmt_value(c->bind, vb, sizeof(vb));
		fmt_source(c, SHD_OPT_BIND, sa, sizeof(sa));
		fmt_source(c, SHD_OPT_RENDEZVOUS, sb, sizeof(sb));
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
	const char *env_cfg = getenv(opts[SHD_OPT_CONFIG].env);
	if (cfg_val)
		r = set_opt(c, SHD_OPT_CONFIG, cfg_val, SHD_CONFIG_SRC_CLI, "command line", err,
			    errlen);
	else if (env_cfg && *env_cfg)
		r = set_opt(c, SHD_OPT_CONFIG, env_cfg, SHD_CONFIG_SRC_ENV,
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
		v = getenv(opts[o].env);
		if (!v || !*v)
			continue;
		snprintf(where, sizeof(where), "env %s", opts[o].env);
		r = set_opt(c, o, v, SHD_CONFIG_SRC_ENV, where, err, errlen);
	}
	for (i = 0; r == 0 && i < n_args; i++)
		if (args[i].opt != SHD_OPT_CONFIG)
			r = set_opt(c, args[i].opt, args[i].val, SHD_CONFIG_SRC_CLI, "command line",
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

static void fmt_default(const struct opt *o, char *buf, size_t n)
{
	struct shd_config d;
	char why[256];
	if (o->type == T_STR || o->type == T_LEVEL) {
		snprintf(buf, n, "%s", o->def[0] ? o->def : "empty");
		return;
	}
	memset(&d, 0, sizeof(d));
	if (parse_value(&d, o, o->def, why, sizeof(why)) < 0)
		snprintf(buf, n, "%s", o->def);
	else
		fmt_num(o, get_num(&d, o), buf, n);
}

static void opt_help(FILE *f, const struct opt *o)
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
	if (o->type == T_UINT || o->type == T_SIZE) {
		fmt_limits(o, lim, sizeof(lim));
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
	for (int g = 0; g < G_MAX; g++) {
		fprintf(f, "\n%s:\n", group_names[g]);
		for (int i = 0; i < SHD_OPT_MAX; i++)
			if (opts[i].group == (enum opt_group)g)
				opt_help(f, &opts[i]);
	}
	fprintf(f, "\nCommand line only:\n"
		   "  --no-config    read no INI file (not even the default one)\n"
		   "  -h, --help     print this help and exit\n"
		   "  -V, --version  print the version and exit\n");
}

static void fmt_current(const struct shd_config *c, int i, char *buf, size_t n)
{
	const struct opt *o = &opts[i];
	const char *p = (const char *)c + o->off;
	switch (o->type) {
	case T_STR:
		snprintf(buf, n, "%s", p[0] ? p : "\"\"");
		break;
	case T_LEVEL: {
		int l;
		memcpy(&l, p, sizeof(l));
		snprintf(buf, n, "%s", shd_log_level_name(l));
		break;
	}
	case T_UINT:
		snprintf(buf, n, "%llu", (unsigned long long)get_num(c, o));
		break;
	case T_SIZE: {
		char pretty[32];
		uint64_t v = get_num(c, o);
		fmt_size(v, pretty, sizeof(pretty));
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
		fmt_source(c, i, src, sizeof(src));
		fprintf(f, "%-17s %-24s %s\n", opts[i].name, val, src);
	}
}

static const char *type_name(enum opt_type t)
{
	switch (t) {
	case T_SIZE:
		return "size";
	case T_UINT:
		return "integer";
	case T_LEVEL:
		return "level";
	default:
		return "string";
	}
}

/* the value of option o in c as JSON */
static json_t *json_value(const struct shd_config *c, const struct opt *o)
{
	const char *p = (const char *)c + o->off;
	switch (o->type) {
	case T_STR:
		return json_string(p);
	case T_LEVEL: {
		int l;
		memcpy(&l, p, sizeof(l));
		return json_string(shd_log_level_name(l));
	}
	default:
		return json_integer((json_int_t)get_num(c, o));
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
		const struct opt *o = &opts[i];
		fmt_source(c, i, src, sizeof(src));
		json_t *e = json_object();
		if (!e || json_object_set_new(root, o->name, e) < 0)
			goto fail;
		int r = json_object_set_new(e, "value", json_value(c, o));
		r |= json_object_set_new(e, "source", json_string(src));
		r |= json_object_set_new(e, "default", json_value(&d, o));
		r |= json_object_set_new(e, "type", json_string(type_name(o->type)));
		r |= json_object_set_new(e, "env", json_string(o->env));
		r |= json_object_set_new(e, "help", json_string(o->help));
		if (o->type == T_UINT || o->type == T_SIZE) {
			r |= json_object_set_new(e, "min", json_integer((json_int_t)o->min));
			r |= json_object_set_new(e, "max", json_integer((json_int_t)o->max));
		}
		if (o->flags & F_POW2)
			r |= json_object_set_new(e, "power_of_two", json_true());
		if (r)
			goto fail;
	}
	return root;
fail:
	json_decref(root);
	return NULL;
}
