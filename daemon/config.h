/* SPDX-License-Identifier: MIT */
/*
 * daemon/config.h - shuffled's settings.
 *
 * One option table (config.c) drives the command line, the environment, the
 * INI file, --help, shd_config_print() and shd_config_json().  Precedence:
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
