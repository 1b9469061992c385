/* SPDX-License-Identifier: MIT */
/*
 * daemon/options.h - shuffled's options: their indices, where their values
 * are kept (struct shd_config), and the table that describes each one
 * (name, environment variable, type, limits, default, help, --help
 * heading, syntax check).  The table is data; config.c reads it to load
 * the options from the command line, the environment and the INI file,
 * and to print --help, the values and their JSON.  Everyone else includes
 * daemon/config.h, which includes this.
 */
#ifndef SHD_OPTIONS_H
#define SHD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Option indices: the order of the table, of --help and of print/json. */
enum shd_config_opt {
	SHD_OPT_MODE,
	SHD_OPT_RUNTIME_DIR,
	SHD_OPT_NODE_NAME,
	SHD_OPT_SOCKET,
	SHD_OPT_RING_BYTES,
	SHD_OPT_MAX_MSG,
	SHD_OPT_BATCH_BYTES,
	SHD_OPT_LINGER_US,
	SHD_OPT_LINGER_IDLE,
	SHD_OPT_PEER_CREDITS,
	SHD_OPT_ACK_DELAY_US,
	SHD_OPT_MAX_INFLIGHT,
	SHD_OPT_FANOUT,
	SHD_OPT_ROUTING,
	SHD_OPT_BATCH_BUDGET,
	SHD_OPT_RECV_BUFFERS,
	SHD_OPT_PROVIDER,
	SHD_OPT_BIND,
	SHD_OPT_IFACE,
	SHD_OPT_MR_LOCAL,
	SHD_OPT_RENDEZVOUS,
	SHD_OPT_MAX_NODES,
	SHD_OPT_PEER_TIMEOUT_MS,
	SHD_OPT_HEARTBEAT_MS,
	SHD_OPT_PEER_IDLE_MS,
	SHD_OPT_MAX_CLIENTS,
	SHD_OPT_MAX_CLIENTS_PER_USER,
	SHD_OPT_RESERVED_ROOT,
	SHD_OPT_RESERVED_CTL,
	SHD_OPT_HELLO_TIMEOUT_MS,
	SHD_OPT_IDLE_TIMEOUT_MS,
	SHD_OPT_UID_MEM_MAX,
	SHD_OPT_MEM_MAX,
	SHD_OPT_WORLD_TIMEOUT_MS,
	SHD_OPT_CLUSTER_KEY,
	SHD_OPT_STORE_LISTEN,
	SHD_OPT_STORE_MAX_KEYS,
	SHD_OPT_STORE_MAX_KEY_BYTES,
	SHD_OPT_STORE_MAX_VALUE_BYTES,
	SHD_OPT_STORE_MAX_CONNS,
	SHD_OPT_STORE_MAX_WAITERS,
	SHD_OPT_LOG_LEVEL,
	SHD_OPT_LOG_FILE,
	SHD_OPT_CONFIG,
	SHD_OPT_MAX
};

/* Where an option's current value came from. */
enum shd_config_src {
	SHD_CONFIG_SRC_DEFAULT,  /* the table's default */
	SHD_CONFIG_SRC_COMPUTED, /* derived at load (mode auto resolved, node_name,
				  * runtime_dir, socket, max_msg shrunk to fit
				  * ring_bytes, config "" when the default file
				  * does not exist) */
	SHD_CONFIG_SRC_FILE,     /* the INI file named by `config` */
	SHD_CONFIG_SRC_ENV,      /* SHF_<NAME> */
	SHD_CONFIG_SRC_CLI,      /* the command line */
	SHD_CONFIG_SRC_RUNTIME,  /* changed while running (shufflectl log-level) */
	SHD_CONFIG_SRC_MAX
};

#define SHD_CONFIG_PATH_MAX 4096 /* paths, NUL included */
#define SHD_CONFIG_SOCKET_MAX 108 /* sizeof(sockaddr_un.sun_path), NUL included */
#define SHD_CONFIG_NAME_MAX 64   /* node name, NUL included: [A-Za-z0-9._-] */
#define SHD_CONFIG_STORE_LISTEN_MAX 272 /* "[host]:port", NUL included */

struct shd_config {
	/* "system": serve every local user (runtime directory 0755, socket
	 * 0666; jobs belong to their first client's uid); "user": only this
	 * uid (0700, 0600).  "auto" is resolved at load (source computed):
	 * system when the euid is 0 or the system user's (SHF_SYSTEM_USER,
	 * looked up then), else user.  shd_config_system() reads it. */
	char mode[8];
	/* the system user's uid (SHF_SYSTEM_USER), -1 when it has none; set
	 * at load.  Not an option. */
	long long system_uid;
	/* directory for the control socket and per-node state; "" at load:
	 * mode system "SHF_SYSTEM_RUNTIME_DIR/<node_name>" (/run/shuffle/...),
	 * else "$XDG_RUNTIME_DIR/shuffle/<node_name>" or
	 * "/tmp/shuffle-<uid>/<node_name>"; absolute */
	char runtime_dir[SHD_CONFIG_PATH_MAX];
	/* this node's name (path component, per-node names on one host);
	 * "" at load: gethostname() */
	char node_name[SHD_CONFIG_NAME_MAX];
	/* control socket (option "socket"); "" at load: <runtime_dir>/shuffled.sock;
	 * absolute, at most 107 bytes */
	char socket_path[SHD_CONFIG_SOCKET_MAX];
	uint32_t ring_bytes;   /* per client ring, each direction; power of two */
	uint32_t max_msg;      /* largest message payload; <= ring_bytes/2 - 16
			        * (a default max_msg shrinks to fit, source computed) */
	uint32_t batch_bytes;  /* a batch is sent when it reaches this size */
	uint32_t linger_us;    /* ... or when its oldest record is this old */
	uint32_t linger_idle;  /* 1: linger even when nothing is in flight to the node */
	uint32_t peer_credits; /* batches in flight to one peer */
	uint32_t ack_delay_us; /* hold an ACK this long while credit is not short */
	uint32_t max_inflight; /* batches in flight to all peers */
	uint32_t fanout;       /* children per node of the fan-out tree (fanout.c) */
	char routing[8];       /* "direct" (full mesh) or "2d" (grid: daemon/net/route.c) */
	uint64_t batch_budget; /* memory for outgoing + parked batches */
	uint32_t recv_buffers; /* pre-posted fabric receives */
	char provider[64];     /* libfabric provider name, e.g. "tcp" */
	char bind[256];        /* fabric endpoint address[:port]; "" provider's choice */
	char iface[16];        /* network interface (FI_TCP_IFACE); "" none */
	uint32_t mr_local;     /* 1: register buffers even if the provider does not
	                        * ask for FI_MR_LOCAL (tests the verbs/efa/cxi path) */
	/* "auto" (mpi under mpirun/srun, else none), "none", "mpi",
	 * "static:HOST:PORT,HOST:PORT,...", "dir:PATH:N"; syntax checked at
	 * load by shd_rdv_spec_check(), the parse the rendezvous itself runs */
	char rendezvous[SHD_CONFIG_PATH_MAX];
	uint32_t max_nodes;        /* tcp rendezvous: node ids < max_nodes */
	uint32_t peer_timeout_ms;  /* silent peer declared down after this */
	uint32_t heartbeat_ms;     /* keepalive period toward peers */
	uint32_t peer_idle_ms;     /* unused this long: no heartbeats, connection released (0: never) */
	uint32_t max_clients;      /* concurrent client sessions */
	uint32_t max_clients_per_user; /* sessions of one uid (root exempt) */
	uint32_t reserved_root;    /* the last slots of max_clients: root only */
	uint32_t reserved_ctl;     /* the slots before those: shufflectl-only sessions */
	uint32_t hello_timeout_ms; /* a connection without HELLO is closed after this */
	uint32_t idle_timeout_ms;  /* a HELLO'd session without REGISTER or request: cut */
	uint64_t uid_mem_max;      /* regions + rank directories per uid (root exempt) */
	uint64_t mem_max;          /* ... of all uids together (root exempt) */
	uint32_t world_timeout_ms; /* shf_open() world wait when the client passes 0 */
	char cluster_key[SHD_CONFIG_PATH_MAX]; /* key file (daemon/net/auth.h); "" none:
	                                        * peers are members but not authenticated */
	/* key-value store (daemon/store.c): "HOST:PORT" to serve it on
	 * (proto/addr.h, port required), "" off; and its bounds */
	char store_listen[SHD_CONFIG_STORE_LISTEN_MAX];
	uint32_t store_max_keys;
	uint32_t store_max_key_bytes;
	uint32_t store_max_value_bytes;
	uint32_t store_max_conns;
	uint32_t store_max_waiters;
	int log_level;             /* enum shd_log_level */
	char log_file[SHD_CONFIG_PATH_MAX]; /* "" stderr (or the journal) */
	char config[SHD_CONFIG_PATH_MAX];   /* the INI file read; "" none (source
					     * computed: the default file does not exist) */
	uint8_t source[SHD_OPT_MAX];        /* enum shd_config_src per option */
};

/* ---- the table ---- */

enum shd_opt_type {
	SHD_OPT_T_STR,   /* char array of `size` bytes */
	SHD_OPT_T_UINT,  /* uint32_t or uint64_t (by `size`), decimal, no suffix */
	SHD_OPT_T_SIZE,  /* same storage, bytes, binary suffixes accepted */
	SHD_OPT_T_LEVEL, /* int, enum shd_log_level, by name or number */
};

#define SHD_OPT_F_POW2 0x1u    /* numbers: must be a power of two */
#define SHD_OPT_F_NO_FILE 0x2u /* not accepted in the INI file (the file's own path) */

/* The headings of --help, in their order; every option is under one. */
enum shd_opt_group {
	SHD_OPT_G_PATHS,
	SHD_OPT_G_DATA,
	SHD_OPT_G_NETWORK,
	SHD_OPT_G_PEERS,
	SHD_OPT_G_LIMITS,
	SHD_OPT_G_SECURITY,
	SHD_OPT_G_STORE,
	SHD_OPT_G_LOGGING,
	SHD_OPT_G_EXPERIMENTAL, /* switches for measuring; docs/performance.md says what they showed */
	SHD_OPT_G_MAX
};

extern const char *const shd_opt_group_names[SHD_OPT_G_MAX]; /* the headings */

/* Extra syntax check of a string value; 0 or -EINVAL with a reason in why. */
typedef int (*shd_opt_check_fn)(const char *v, char *why, size_t whylen);

struct shd_opt {
	const char *name;  /* option, INI key; '-' accepted for '_' on the command line */
	const char *env;   /* environment variable */
	enum shd_opt_type type;
	unsigned flags;    /* SHD_OPT_F_* */
	size_t off, size;  /* field in struct shd_config */
	uint64_t min, max; /* numbers: inclusive limits (hard caps) */
	const char *def;   /* default, as a user would write it (parsed by the same code) */
	const char *meta;  /* placeholder in --help */
	const char *help;
	shd_opt_check_fn check; /* strings: extra validation, may be NULL */
	enum shd_opt_group group; /* its heading in --help (and shuffled(8)) */
	/* appends to help what is known only at run time, may be NULL */
	size_t (*help_more)(char *buf, size_t len, bool help);
};

/* The table, indexed by enum shd_config_opt (options.c). */
extern const struct shd_opt shd_opts[SHD_OPT_MAX];

#endif /* SHD_OPTIONS_H */
