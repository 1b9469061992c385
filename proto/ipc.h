/* SPDX-License-Identifier: MIT */
/*
 * proto/ipc.h - control messages between a client (or shufflectl) and its
 * node's daemon, over a SOCK_SEQPACKET UNIX socket.
 *
 * Every message is one datagram: a 16-byte header then a body.  Fields are
 * host-endian (both ends are on the same host).  The receiver validates
 * magic, total length and the exact body size of every fixed-size type
 * (shf_ipc_check) before reading a field, and bounds every string.
 *
 * Sequence (client):
 *   HELLO ->            <- HELLO_OK | ERROR(-EPROTO)
 *   REGISTER ->         <- REGISTER_OK + fds | ERROR(-EEXIST/-EACCES/...)
 *                       <- READY (world complete) | ERROR(-ETIMEDOUT, missing ranks)
 *   (data flows through the rings)
 *   MARK record in ring <- FLUSH_DONE      (SHF_FLUSH_REMOTE, and epoch phase 1)
 *   EPOCH(phase 2) ->   <- EPOCH_DONE      (epoch barrier after delivery)
 *   BYE ->              (clean close; or just close the socket)
 * shufflectl:
 *   HELLO -> HELLO_OK; CTL(cmd [+ JSON args]) -> CTL_REPLY* (chunks of JSON, last
 *   has more=0) | ERROR (unknown command, refused, bad arguments)
 */
#ifndef SHF_PROTO_IPC_H
#define SHF_PROTO_IPC_H

#include <stddef.h>
#include <stdint.h>

#define SHF_IPC_MAGIC 0x43464853u /* "SHFC" */
#define SHF_IPC_VERSION 1u
#define SHF_IPC_MAX_MSG 65536u /* largest datagram either side sends */
/* The largest max_msg a daemon takes (option max_msg) and a client accepts
 * in REGISTER_OK: the client's run sizing counts on it (client/runs.h). */
#define SHF_MAX_MSG_MAX (1u << 20)
#define SHF_JOB_MAX 64u        /* job name buffer, NUL included */
#define SHF_IPC_MAX_FDS 4u

enum shf_ipc_type {
	SHF_IPC_HELLO = 1,       /* c->d struct shf_ipc_hello */
	SHF_IPC_HELLO_OK,        /* d->c struct shf_ipc_hello_ok */
	SHF_IPC_REGISTER,        /* c->d struct shf_ipc_register */
	SHF_IPC_REGISTER_OK,     /* d->c struct shf_ipc_register_ok + SHF_IPC_REG_FDS fds */
	SHF_IPC_READY,           /* d->c struct shf_ipc_ready */
	SHF_IPC_ERROR,           /* d->c struct shf_ipc_error + NUL-terminated text */
	SHF_IPC_FLUSH_DONE,      /* d->c struct shf_ipc_flush_done */
	SHF_IPC_EPOCH,           /* c->d struct shf_ipc_epoch */
	SHF_IPC_EPOCH_DONE,      /* d->c struct shf_ipc_epoch_done */
	SHF_IPC_BYE,             /* c->d empty */
	SHF_IPC_CTL,             /* c->d struct shf_ipc_ctl */
	SHF_IPC_CTL_REPLY,       /* d->c struct shf_ipc_ctl_reply + text chunk */
	/* 13..27 are other work's; unknown types are refused (shf_ipc_check) */
	SHF_IPC_NODE_INFO = 28,  /* c->d struct shf_ipc_node_info (registered client) */
	SHF_IPC_NODE_INFO_OK,    /* d->c struct shf_ipc_node_info_ok + count x int32 */
	SHF_IPC_EPOCH_WHO,       /* c->d struct shf_ipc_epoch_who (registered client; only to
				  * a daemon whose REGISTER_OK had SHF_REG_OK_EPOCH_WHO) */
	SHF_IPC_EPOCH_WHO_OK,    /* d->c struct shf_ipc_epoch_who_ok + NUL-terminated text */
	SHF_IPC_RUNS,            /* c->d empty: "my delivery ring takes SHF_REC_RUN
				    records"; only after REGISTER_OK said
				    SHF_REG_OK_RUNS (older daemons refuse the type) */
	SHF_IPC_PACKED,          /* c->d empty: "... and packed runs"; only after
				    SHF_IPC_RUNS, to a daemon whose REGISTER_OK said
				    SHF_REG_OK_PACKED */
	SHF_IPC_TYPE_MAX
};

struct shf_ipc_hdr {
	uint32_t magic; /* SHF_IPC_MAGIC */
	uint16_t type;  /* enum shf_ipc_type */
	uint16_t flags; /* zero */
	uint32_t len;   /* header + body bytes == datagram size */
	uint32_t id;    /* request id, echoed in replies */
};

struct shf_ipc_hello {
	uint32_t version; /* SHF_IPC_VERSION of the client */
	uint32_t pid;     /* informational */
};

struct shf_ipc_hello_ok {
	uint32_t version;    /* agreed version */
	uint32_t max_msg;    /* largest message payload the daemon accepts */
	uint32_t ring_bytes; /* daemon default ring size */
	uint32_t node;       /* this daemon's node id */
};

struct shf_ipc_register {
	char job[SHF_JOB_MAX]; /* NUL-terminated, [A-Za-z0-9._:@+-]{1,63} */
	int32_t rank;          /* 0 <= rank < world */
	int32_t world;         /* 1 <= world <= SHF_WORLD_MAX */
	uint32_t ring_bytes;   /* 0: default; else power of two within limits */
	int32_t timeout_ms;    /* wait for the world: -1 forever, else >= 0 */
	/* Since the sleeper-pays step (issue 13): a body of exactly
	 * SHF_IPC_REGISTER_V0_BYTES (the fields above) is an older client and
	 * counts as flags = 0.  Unknown flag bits or reserved != 0: -EINVAL. */
	uint32_t flags;        /* SHF_REG_* */
	uint32_t reserved;     /* zero */
};
#define SHF_WORLD_MAX (1 << 24)
#define SHF_IPC_REGISTER_V0_BYTES 80u /* a REGISTER body without flags */
/* REGISTER flags.  SHF_REG_GLOBAL_MB: sent by 1.0/1.1 clients that
 * registered MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, asking to publish
 * their send ring without the [D2] fence while the daemon paid with a
 * membarrier before sleeping ("the sleeper pays", removed in 0.3,
 * docs/ring.md "The fence per burst").  Daemons since 0.3 take the flag
 * and never answer SHF_REG_OK_SLEEPER_PAYS, so such a client keeps the
 * fence; this library sends the 80-byte body, without flags (a daemon
 * older than the flags takes only that one). */
#define SHF_REG_GLOBAL_MB 1u
#define SHF_REG_FLAGS_KNOWN SHF_REG_GLOBAL_MB

/* fds that come with REGISTER_OK, in this order */
enum shf_ipc_reg_fd {
	SHF_FD_REGION = 0,   /* memfd of the region, sealed */
	SHF_FD_DAEMON_BELL,  /* eventfd: client rings it (send data / delivery space) */
	SHF_FD_DELIVER_BELL, /* eventfd: daemon rings it (delivery ring has data) */
	SHF_FD_SPACE_BELL,   /* eventfd: daemon rings it (send ring has space) */
	SHF_IPC_REG_FDS
};

struct shf_ipc_register_ok {
	uint64_t region_bytes;
	int32_t rank;
	int32_t world;
	uint32_t max_msg;
	uint32_t flags; /* SHF_REG_OK_*; 0 from older daemons; unknown bits ignored */
};
/* REGISTER_OK flags: SHF_REG_OK_SLEEPER_PAYS was "the daemon pays for
 * this send ring"; never sent since 0.3 (see SHF_REG_GLOBAL_MB). */
#define SHF_REG_OK_SLEEPER_PAYS 1u
/* The daemon answers EPOCH_WHO (since 0.3; an older one would cut a
 * client off for it: the client asks only when this is set). */
#define SHF_REG_OK_EPOCH_WHO 2u
/* SHF_REG_OK_RUNS (since 0.3): the daemon takes SHF_REC_RUN records in
 * the client's send ring (proto/shm.h, struct shf_run_hdr); a client that
 * reads them in its delivery ring says so with SHF_IPC_RUNS. */
#define SHF_REG_OK_RUNS 4u
/* SHF_REG_OK_PACKED (since 0.3, wire version 10): the daemon also takes
 * packed runs (count | SHF_RUN_PACKED, proto/shm.h) in the send ring; a
 * client that reads them in its delivery ring says so with
 * SHF_IPC_PACKED (after SHF_IPC_RUNS). */
#define SHF_REG_OK_PACKED 8u

struct shf_ipc_ready {
	int32_t world;
	uint32_t nodes; /* nodes the job spans */
};

struct shf_ipc_error {
	int32_t err; /* negative errno */
	uint32_t reserved;
	/* followed by NUL-terminated text (may be empty) */
};

/* Payload of a SHF_REC_MARK record in the send ring. */
enum shf_mark_what {
	SHF_MARK_FLUSH = 1, /* reply FLUSH_DONE once my earlier records are placed */
	SHF_MARK_EPOCH = 2, /* same, and count me as entered in epoch phase 1 */
	SHF_MARK_WHAT_MAX
};
struct shf_mark {
	uint64_t id;   /* echoed in FLUSH_DONE / EPOCH_DONE */
	uint32_t what; /* enum shf_mark_what */
	uint32_t reserved;
};

struct shf_ipc_flush_done {
	uint64_t id;           /* the mark's id */
	uint64_t dropped_dead; /* my records dropped since the last report: rank gone */
	uint64_t dropped_down; /* ... destination node down */
	int32_t status;        /* 0, or negative errno (e.g. -ESRCH when a rank died
	                          and the epoch cannot complete) */
	uint32_t flags;        /* SHF_FLUSH_DONE_*; 0 from daemons before 0.3 */
};
/* FLUSH_DONE flags: an ERROR with this mark's id and the reason comes right
 * after; the mark's wait ends with it (the drops here are counted first,
 * so the caller's stats hold them when its call returns). */
#define SHF_FLUSH_DONE_WHY 1u

struct shf_ipc_epoch {
	uint64_t id;    /* epoch number, as for the mark */
	uint32_t phase; /* 2: my delivery ring is drained */
	uint32_t reserved;
};

struct shf_ipc_epoch_done {
	uint64_t id;
	uint32_t phase;
	int32_t status; /* 0 or negative errno */
};

#define SHF_CTL_CMD_MAX 32u
#define SHF_CTL_ALL 1u /* flags: run cmd on every node up (shufflectl --all) */
#define SHF_CTL_ARGS_MAX 512u /* request arguments, NUL included */
struct shf_ipc_ctl {
	char cmd[SHF_CTL_CMD_MAX]; /* "status", "clients", ...; NUL-terminated */
	uint32_t flags;            /* 0 or SHF_CTL_ALL; other bits: -EINVAL */
	uint32_t timeout_ms;       /* SHF_CTL_ALL: the fan-out's bound (0: the daemon's
				      default); else zero */
	/* optionally followed by the request's arguments: a JSON object as
	 * text, NUL-terminated inside the datagram, at most SHF_CTL_ARGS_MAX
	 * bytes ("drain" {"job": NAME}; docs/protocol.md, "Control") */
};

struct shf_ipc_ctl_reply {
	int32_t status; /* 0 or negative errno */
	uint32_t more;  /* 1: another chunk follows */
	/* followed by text bytes (not NUL-terminated) up to the datagram end */
};

/* shf_node_info(): the job's layout as this daemon knows it (live ranks).
 * Nodes are numbered 0 .. nodes-1 in the order of their daemons' node ids;
 * a list is fetched in slices of at most SHF_IPC_NODE_INFO_MAX entries. */
enum shf_node_info_what {
	SHF_NODE_INFO_NONE = 0,   /* only the fixed fields */
	SHF_NODE_INFO_LOCAL = 1,  /* this node's ranks, ascending */
	SHF_NODE_INFO_COUNTS = 2, /* ranks per node, node 0 first */
	SHF_NODE_INFO_WHAT_MAX
};
#define SHF_IPC_NODE_INFO_MAX 8192u /* entries per reply: 32 KiB */
struct shf_ipc_node_info {
	uint32_t what;  /* enum shf_node_info_what */
	uint32_t first; /* index of the first entry wanted */
	uint32_t max;   /* entries wanted, <= SHF_IPC_NODE_INFO_MAX */
	uint32_t reserved; /* zero */
};
struct shf_ipc_node_info_ok {
	uint32_t node;  /* this node's index in the job, < nodes */
	uint32_t nodes; /* nodes with live ranks of the job, >= 1 */
	uint32_t local; /* live ranks of the job on this node, >= 1 */
	uint32_t what;  /* as asked */
	uint32_t first; /* as asked */
	uint32_t count; /* entries that follow, <= max asked; the body is exactly
	                   sizeof(this) + 4 * count bytes */
	/* followed by count x int32_t */
};

/* EPOCH_WHO: who holds up the epoch this client waits in (after its wait
 * timed out, for the message).  The answer describes the daemon's state
 * now: the local ranks that have not reached the asker's phase (exact),
 * the tree's subtrees that have not reported, or that the asker's phase
 * has completed meanwhile. */
struct shf_ipc_epoch_who {
	uint32_t flags;    /* zero */
	uint32_t reserved; /* zero */
};
struct shf_ipc_epoch_who_ok {
	int32_t local_late; /* ranks of this node named as late */
	uint32_t reserved;  /* zero */
	/* followed by NUL-terminated text, for people */
};

/* Validate a received datagram of n bytes.  0, or -EBADMSG / -EPROTO. */
int shf_ipc_check(const void *msg, size_t n);

/* Check a job name: 1..63 chars of [A-Za-z0-9._:@+-], NUL-terminated in
 * its buffer.  0 or -EINVAL. */
int shf_ipc_job_check(const char job[SHF_JOB_MAX]);

/* Send one message with optional fds.  0 or negative errno. */
int shf_ipc_send(int fd, uint16_t type, uint32_t id, const void *body, size_t blen,
		 const int *fds, unsigned nfds);

/* Receive one message into buf (cap bytes).  Received fds go to fds[]
 * (*nfds in: capacity, out: count); any extra fds are closed.  Returns the
 * datagram size (validated with shf_ipc_check), 0 on orderly EOF, or a
 * negative errno (-EAGAIN if non-blocking and nothing waits). */
long shf_ipc_recv(int fd, void *buf, size_t cap, int *fds, unsigned *nfds);

/* Where shf_ipc_hello() failed. */
enum shf_ipc_hello_step {
	SHF_IPC_HELLO_SEND = 1, /* our HELLO did not go out, and no ERROR came */
	SHF_IPC_HELLO_WAIT,     /* no answer: -ETIMEDOUT, -ENOTCONN (the daemon hung
				   up), or shf_ipc_recv()'s or poll()'s errno */
	SHF_IPC_HELLO_ANSWER,   /* -EPROTO: the answer is neither HELLO_OK of id nor
				   an ERROR; buf holds it */
};

/* The HELLO exchange on a fresh connection: the one copy the library
 * (client/open.c) and shufflectl (client/shufflectl/conn.c) share.  Sends
 * HELLO (id, our pid), then waits up to timeout_ms (-1: no bound) for the
 * answer, into buf (cap bytes, at least SHF_IPC_MAX_MSG).  A daemon that
 * refuses us (max_clients, a uid it does not serve) says why in an ERROR
 * and hangs up, maybe before our HELLO went out: its ERROR is read even
 * when the send failed with EPIPE or ECONNRESET (then without waiting).
 * Returns the answer's size, buf holding HELLO_OK of id or an ERROR (of id
 * or 0; the header says which; the HELLO_OK's version is the caller's to
 * judge), or a negative errno with *step_p saying where it failed. */
long shf_ipc_hello(int fd, uint32_t id, int timeout_ms, void *buf, size_t cap,
		   enum shf_ipc_hello_step *step_p);

#endif /* SHF_PROTO_IPC_H */
