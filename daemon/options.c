/* SPDX-License-Identifier: MIT */
/*
 * daemon/options.c - the option table (see options.h) and the syntax
 * checks of its string options.  config.c does the loading.
 */
#include "daemon/options.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "daemon/errbuf.h"
#include "daemon/rdv/rdv.h"
#include "proto/addr.h"
#include "proto/ipc.h"

/* configure-time paths and names (daemon/meson.build) */
#if !defined(SHD_CONFIG_DEFAULT) || !defined(SHF_SYSTEM_USER)
#error "SHD_CONFIG_DEFAULT and SHF_SYSTEM_USER must be set by the build (daemon/meson.build)"
#endif

_Static_assert(SHD_CONFIG_NAME_MAX == SHF_NODE_NAME_MAX, "node names: one rule (proto/addr.h)");

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

const char *const shd_opt_group_names[SHD_OPT_G_MAX] = {
	[SHD_OPT_G_PATHS] = "Paths",
	[SHD_OPT_G_DATA] = "Data path",
	[SHD_OPT_G_NETWORK] = "Network",
	[SHD_OPT_G_PEERS] = "Peers",
	[SHD_OPT_G_LIMITS] = "Limits",
	[SHD_OPT_G_SECURITY] = "Security",
	[SHD_OPT_G_STORE] = "Store",
	[SHD_OPT_G_LOGGING] = "Logging",
	[SHD_OPT_G_EXPERIMENTAL] = "Experimental (for measuring; see docs/performance.md)",
};

/* ---- string checks: the extra grammar of some string options ---- */

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

/* Empty: the host name, checked by this same function in config.c (derive). */
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

#define FIELD(f) offsetof(struct shd_config, f), sizeof(((struct shd_config *)0)->f)

const struct shd_opt shd_opts[SHD_OPT_MAX] = {
	[SHD_OPT_MODE] = {
		"mode", "SHF_MODE", SHD_OPT_T_STR, 0, FIELD(mode), 0, 0, "auto", "auto|user|system",
		"system: serve every local user (runtime directory 0755, socket 0666; each job "
		"belongs to the uid of its first process). user: serve only this uid (0700, "
		"0600). auto: system when running as root or as the system user "
		"'" SHF_SYSTEM_USER "', else user.",
		check_mode,
		.group = SHD_OPT_G_SECURITY },
	[SHD_OPT_RUNTIME_DIR] = {
		"runtime_dir", "SHF_RUNTIME_DIR", SHD_OPT_T_STR, 0, FIELD(runtime_dir), 0, 0, "", "PATH",
		"Directory for the control socket and per-node state; it must belong to this "
		"uid and be writable by nobody else. Empty: " SHF_SYSTEM_RUNTIME_DIR "/NODE in "
		"mode system, else $XDG_RUNTIME_DIR/shuffle/NODE or /tmp/shuffle-UID/NODE.",
		check_abs_path,
		.group = SHD_OPT_G_PATHS },
	[SHD_OPT_NODE_NAME] = {
		"node_name", "SHF_NODE", SHD_OPT_T_STR, 0, FIELD(node_name), 0, 0, "", "NAME",
		"This node's name (letters, digits, '.', '_', '-'); it is part of the runtime "
		"directory so that several daemons can share a host. Empty: the host name.",
		check_node,
		.group = SHD_OPT_G_PATHS },
	[SHD_OPT_SOCKET] = {
		"socket", "SHF_SOCKET", SHD_OPT_T_STR, 0, FIELD(socket_path), 0, 0, "", "PATH",
		"Control socket clients connect to (absolute, at most 107 bytes). "
		"Empty: RUNTIME_DIR/shuffled.sock.",
		check_abs_path,
		.group = SHD_OPT_G_PATHS },
	[SHD_OPT_RING_BYTES] = {
		"ring_bytes", "SHF_RING_BYTES", SHD_OPT_T_SIZE, SHD_OPT_F_POW2, FIELD(ring_bytes),
		4 * KiB, 256 * MiB, "1M", "SIZE",
		"Default size of each client ring (send and delivery), per direction.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_MAX_MSG] = {
		"max_msg", "SHF_MAX_MSG", SHD_OPT_T_SIZE, 0, FIELD(max_msg), 0, SHF_MAX_MSG_MAX, "60K", "SIZE",
		"Largest message payload accepted; at most ring_bytes/2 - 16.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_BATCH_BYTES] = {
		"batch_bytes", "SHF_BATCH_BYTES", SHD_OPT_T_SIZE, 0, FIELD(batch_bytes),
		1 * KiB, 4 * MiB, "128K", "SIZE",
		"A batch to a peer is sent when it holds this many bytes.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_LINGER_US] = {
		"linger_us", "SHF_LINGER_US", SHD_OPT_T_UINT, 0, FIELD(linger_us), 0, 1000000, "100", "USEC",
		"... or when its oldest record has waited this long (microseconds).", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_LINGER_IDLE] = {
		"linger_idle", "SHF_LINGER_IDLE", SHD_OPT_T_UINT, 0, FIELD(linger_idle), 0, 1, "0", "0|1",
		"0: a batch to a node with no unacknowledged batch, and none closed within "
		"linger_us, leaves at the end of the pass; 1: every batch lingers.", NULL,
		.group = SHD_OPT_G_EXPERIMENTAL },
	[SHD_OPT_PEER_CREDITS] = {
		"peer_credits", "SHF_PEER_CREDITS", SHD_OPT_T_UINT, 0, FIELD(peer_credits), 1, 1024, "8", "N",
		"Batches in flight to one peer before waiting for credit.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_ACK_DELAY_US] = {
		"ack_delay_us", "SHF_ACK_DELAY_US", SHD_OPT_T_UINT, 0, FIELD(ack_delay_us),
		0, 100000, "0", "USEC",
		"Hold the ACK of received batches up to this long (microseconds) unless half of "
		"the sender's credit is unacknowledged; 0: acknowledge at once.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_MAX_INFLIGHT] = {
		"max_inflight", "SHF_MAX_INFLIGHT", SHD_OPT_T_UINT, 0, FIELD(max_inflight), 1, 65536, "256", "N",
		"Batches in flight to all peers together.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_FANOUT] = {
		"fanout", "SHF_FANOUT", SHD_OPT_T_UINT, 0, FIELD(fanout), 2, 64, "8", "K",
		"Children per node of the tree that carries cluster-wide requests "
		"(shufflectl --all).", NULL,
		.group = SHD_OPT_G_PEERS },
	[SHD_OPT_ROUTING] = {
		"routing", "SHF_ROUTING", SHD_OPT_T_STR, 0, FIELD(routing), 0, 0, "direct", "direct|2d",
		"How daemons reach each other. direct: every daemon talks to every other (a "
		"full mesh). 2d: nodes sit on a grid of about sqrt(N) x sqrt(N) by node id; a "
		"daemon talks only to its row and column, and a message for a node in another "
		"row and column is forwarded by one daemon in between (at most about 2*sqrt(N) "
		"connections per daemon). Must be the same on every daemon: a peer with "
		"another routing is refused at join.",
		check_routing,
		.group = SHD_OPT_G_NETWORK },
	[SHD_OPT_BATCH_BUDGET] = {
		"batch_budget", "SHF_BATCH_BUDGET", SHD_OPT_T_SIZE, 0, FIELD(batch_budget),
		1 * MiB, 16 * GiB, "64M", "SIZE",
		"Memory for outgoing and parked batches; at least batch_bytes.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_RECV_BUFFERS] = {
		"recv_buffers", "SHF_RECV_BUFFERS", SHD_OPT_T_UINT, 0, FIELD(recv_buffers), 2, 4096, "32", "N",
		"Receive buffers kept posted on the fabric endpoint.", NULL,
		.group = SHD_OPT_G_DATA },
	[SHD_OPT_PROVIDER] = {
		"provider", "SHF_PROVIDER", SHD_OPT_T_STR, 0, FIELD(provider), 0, 0, "tcp", "NAME",
		"libfabric provider (tcp, verbs, cxi, efa, ...).", check_provider,
		.group = SHD_OPT_G_NETWORK },
	[SHD_OPT_BIND] = {
		"bind", "SHF_BIND", SHD_OPT_T_STR, 0, FIELD(bind), 0, 0, "", "HOST[:PORT]",
		"Address (and port) of the fabric endpoint: HOST[:PORT], [IPV6][:PORT] or a "
		"bare IPV6; {node} becomes the node id + 1. Empty: the provider's choice "
		"(for tcp the first NIC, not loopback).", check_bind,
		.group = SHD_OPT_G_NETWORK },
	[SHD_OPT_IFACE] = {
		"iface", "SHF_IFACE", SHD_OPT_T_STR, 0, FIELD(iface), 0, 0, "", "IFNAME",
		"Network interface for the fabric endpoint (sets FI_TCP_IFACE).", check_iface,
		.group = SHD_OPT_G_NETWORK },
	[SHD_OPT_MR_LOCAL] = {
		"mr_local", "SHF_MR_LOCAL", SHD_OPT_T_UINT, 0, FIELD(mr_local), 0, 1, "0", "0|1",
		"1: register batch buffers and control-message slots with the fabric even when "
		"the provider does not ask for FI_MR_LOCAL (tcp does not; verbs, efa and cxi "
		"may). For testing that path.", NULL,
		.group = SHD_OPT_G_EXPERIMENTAL },
	[SHD_OPT_RENDEZVOUS] = {
		"rendezvous", "SHF_RENDEZVOUS", SHD_OPT_T_STR, 0, FIELD(rendezvous), 0, 0, "auto", "HOW",
		"How daemons find each other:", check_rendezvous,
		.group = SHD_OPT_G_NETWORK, .help_more = shd_rdv_kinds },
	[SHD_OPT_MAX_NODES] = {
		"max_nodes", "SHF_MAX_NODES", SHD_OPT_T_UINT, 0, FIELD(max_nodes), 2, 1048576, "1024", "N",
		"tcp and dir without N: the most nodes the set can hold (node ids below N); costs "
		"about 0.8 KiB per node in every daemon. The other kinds size the set "
		"themselves.", NULL,
		.group = SHD_OPT_G_NETWORK },
	[SHD_OPT_PEER_TIMEOUT_MS] = {
		"peer_timeout_ms", "SHF_PEER_TIMEOUT_MS", SHD_OPT_T_UINT, 0, FIELD(peer_timeout_ms),
		100, 3600000, "5000", "MSEC",
		"A peer silent this long is declared down.", NULL,
		.group = SHD_OPT_G_PEERS },
	[SHD_OPT_HEARTBEAT_MS] = {
		"heartbeat_ms", "SHF_HEARTBEAT_MS", SHD_OPT_T_UINT, 0, FIELD(heartbeat_ms),
		10, 600000, "1000", "MSEC",
		"Keepalive period toward idle peers; less than peer_timeout_ms.", NULL,
		.group = SHD_OPT_G_PEERS },
	[SHD_OPT_PEER_IDLE_MS] = {
		"peer_idle_ms", "SHF_PEER_IDLE_MS", SHD_OPT_T_UINT, 0, FIELD(peer_idle_ms),
		0, 86400000, "0", "MSEC",
		"A peer up but unused this long (no job in common, no traffic, nothing in "
		"flight, not a 2-D route neighbour) goes idle: no heartbeats either way and its "
		"connection is released until it is used again. 0: never idle.", NULL,
		.group = SHD_OPT_G_PEERS },
	[SHD_OPT_MAX_CLIENTS] = {
		"max_clients", "SHF_MAX_CLIENTS", SHD_OPT_T_UINT, 0, FIELD(max_clients), 1, 65536, "1024", "N",
		"Concurrent connections (clients and shufflectl), reserves included.", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_MAX_CLIENTS_PER_USER] = {
		"max_clients_per_user", "SHF_MAX_CLIENTS_PER_USER", SHD_OPT_T_UINT, 0,
		FIELD(max_clients_per_user), 1, 65536, "512", "N",
		"Concurrent connections of one user (root is exempt); more are refused with "
		"EDQUOT.", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_RESERVED_ROOT] = {
		"reserved_root", "SHF_RESERVED_ROOT", SHD_OPT_T_UINT, 0, FIELD(reserved_root), 0, 65535,
		"8", "N",
		"The last N slots of max_clients are for root only.", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_RESERVED_CTL] = {
		"reserved_ctl", "SHF_RESERVED_CTL", SHD_OPT_T_UINT, 0, FIELD(reserved_ctl), 0, 65535, "8",
		"N",
		"The N slots before those are for shufflectl: a user's connection that gets one "
		"may send control requests but not register (EBUSY).", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_HELLO_TIMEOUT_MS] = {
		"hello_timeout_ms", "SHF_HELLO_TIMEOUT_MS", SHD_OPT_T_UINT, 0, FIELD(hello_timeout_ms),
		10, 3600000, "10000", "MSEC",
		"A connection that has not said HELLO after this long is closed.", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_IDLE_TIMEOUT_MS] = {
		"idle_timeout_ms", "SHF_IDLE_TIMEOUT_MS", SHD_OPT_T_UINT, 0, FIELD(idle_timeout_ms),
		10, 86400000, "60000", "MSEC",
		"A session that said HELLO but has neither registered nor sent a request for "
		"this long is cut off (ETIMEDOUT).", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_UID_MEM_MAX] = {
		"uid_mem_max", "SHF_UID_MEM_MAX", SHD_OPT_T_SIZE, 0, FIELD(uid_mem_max),
		1 * MiB, UINT64_C(1) << 50, "1G", "SIZE",
		"Memory one user's clients may make the daemon hold: their ring regions and "
		"rank directories. A registration over it fails with EDQUOT. root and the "
		"daemon's own user are exempt. Default: 1/32 of the node's memory, at most 1G.",
		NULL, .group = SHD_OPT_G_LIMITS },
	[SHD_OPT_MEM_MAX] = {
		"mem_max", "SHF_MEM_MAX", SHD_OPT_T_SIZE, 0, FIELD(mem_max),
		1 * MiB, UINT64_C(1) << 50, "4G", "SIZE",
		"The same for all users together (root and the daemon's own user exempt); "
		"a registration over it fails with ENOMEM. Default: 1/8 of the node's memory, "
		"at most 4G.", NULL, .group = SHD_OPT_G_LIMITS },
	[SHD_OPT_WORLD_TIMEOUT_MS] = {
		"world_timeout_ms", "SHF_WORLD_TIMEOUT_MS", SHD_OPT_T_UINT, 0, FIELD(world_timeout_ms),
		0, 86400000, "60000", "MSEC",
		"How long shf_open() waits for the whole job when the client passes 0.", NULL,
		.group = SHD_OPT_G_LIMITS },
	[SHD_OPT_CLUSTER_KEY] = {
		"cluster_key", "SHF_CLUSTER_KEY", SHD_OPT_T_STR, 0, FIELD(cluster_key), 0, 0, "", "PATH",
		"File of the cluster key (32 random bytes, shuffle-keygen), the same on every "
		"node, readable only by the daemon's user: peers prove they hold it once per "
		"session. Empty: peers are not authenticated (a warning at start).",
		check_abs_path,
		.group = SHD_OPT_G_SECURITY },
	[SHD_OPT_STORE_LISTEN] = {
		"store_listen", "SHF_STORE_LISTEN", SHD_OPT_T_STR, 0, FIELD(store_listen), 0, 0, "",
		"HOST:PORT",
		"Serve the key-value store (PyTorch TCPStore protocol) on HOST:PORT "
		"([IPV6]:PORT). Empty: no store.", check_store_listen,
		.group = SHD_OPT_G_STORE },
	[SHD_OPT_STORE_MAX_KEYS] = {
		"store_max_keys", "SHF_STORE_MAX_KEYS", SHD_OPT_T_UINT, 0, FIELD(store_max_keys),
		1, 16777216, "16384", "N",
		"Keys the store holds; a request that would add one more is refused.", NULL,
		.group = SHD_OPT_G_STORE },
	[SHD_OPT_STORE_MAX_KEY_BYTES] = {
		"store_max_key_bytes", "SHF_STORE_MAX_KEY_BYTES", SHD_OPT_T_SIZE, 0,
		FIELD(store_max_key_bytes), 16, 64 * KiB, "1K", "SIZE",
		"Longest key the store accepts.", NULL,
		.group = SHD_OPT_G_STORE },
	[SHD_OPT_STORE_MAX_VALUE_BYTES] = {
		"store_max_value_bytes", "SHF_STORE_MAX_VALUE_BYTES", SHD_OPT_T_SIZE, 0,
		FIELD(store_max_value_bytes), 64, 64 * MiB, "64K", "SIZE",
		"Longest value the store accepts.", NULL,
		.group = SHD_OPT_G_STORE },
	[SHD_OPT_STORE_MAX_CONNS] = {
		"store_max_conns", "SHF_STORE_MAX_CONNS", SHD_OPT_T_UINT, 0, FIELD(store_max_conns),
		1, 65536, "1024", "N",
		"Connections the store serves at once; more are closed at accept "
		"(a PyTorch client opens two).", NULL,
		.group = SHD_OPT_G_STORE },
	[SHD_OPT_STORE_MAX_WAITERS] = {
		"store_max_waiters", "SHF_STORE_MAX_WAITERS", SHD_OPT_T_UINT, 0, FIELD(store_max_waiters),
		1, 1048576, "4096", "N",
		"WAIT requests pending in the store, all connections together.", NULL,
		.group = SHD_OPT_G_STORE },
	[SHD_OPT_LOG_LEVEL] = {
		"log_level", "SHF_LOG_LEVEL", SHD_OPT_T_LEVEL, 0, FIELD(log_level), 0, 0, "info", "LEVEL",
		"err, warn, notice, info or debug (or 3..7).", NULL,
		.group = SHD_OPT_G_LOGGING },
	[SHD_OPT_LOG_FILE] = {
		"log_file", "SHF_LOG_FILE", SHD_OPT_T_STR, 0, FIELD(log_file), 0, 0, "", "PATH",
		"Append the log to this file. Empty: stderr (the journal under systemd).", NULL,
		.group = SHD_OPT_G_LOGGING },
	[SHD_OPT_CONFIG] = {
		"config", "SHF_CONFIG", SHD_OPT_T_STR, SHD_OPT_F_NO_FILE, FIELD(config), 0, 0, SHD_CONFIG_DEFAULT,
		"PATH",
		"INI file to read, section [shuffled], keys named as these options "
		"(command line or environment only). The default file is read when it "
		"exists; --no-config or --config= (empty) reads none.", check_abs_path,
		.group = SHD_OPT_G_PATHS },
};
