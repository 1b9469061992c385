/* SPDX-License-Identifier: MIT */
/*
 * proto/wire.h - the daemon <-> daemon wire format (hop 2).
 *
 * Every wire message is exactly one libfabric message.  All fields are
 * fixed-size and LITTLE-ENDIAN, at fixed offsets; code reads and writes
 * them with the shf_wire_get/put helpers below, never by casting a network
 * buffer to a struct.  The shf_wire_raw_* structs only document and pin the
 * layout (their offsets are _Static_assert'ed in wire.c and used by the
 * encoder and decoder through offsetof()).
 *
 * Every message starts with the 32-byte common header:
 *
 *   off size field
 *     0    4 magic        SHF_WIRE_MAGIC ("SHFW")
 *     4    2 version      SHF_WIRE_VERSION
 *     6    2 kind         enum shf_wire_kind
 *     8    4 src_node     sender's node id      (< number of nodes)
 *    12    4 dst_node     receiver's node id    (== the receiver, != src_node)
 *    16    8 src_session  the sender's tag of its session with the receiver
 *    24    8 dst_session  the receiver's tag as the sender knows it (0: not
 *                         known yet, HEARTBEAT only)
 *
 * Sessions: each daemon picks a fresh random tag for a peer whenever it
 * (re)starts a session with it (start-up, and after declaring it down).  A
 * message belongs to the session (src_session, dst_session); the receiver
 * takes it only when both tags are the current ones, so nothing sent in an
 * earlier session (before a restart or a link flap) is ever taken in a
 * later one.  shf_wire_check() decodes the tags but does not judge them:
 * that is the peer protocol's (daemon/net/net.c, docs/protocol-wire.md).
 *
 * then a body whose size is exact for every kind, except BATCH (records
 * follow), JOB_JOIN (rank ranges follow), FAN_REQ (targets and arguments
 * follow), FAN_ANS (a fragment follows), FWD (a whole message follows) and
 * FWD_BUNDLE (whole FWDs follow), whose size is given by fields of the
 * body and must equal the message length exactly.  Reserved and
 * padding bytes must be zero.  shf_wire_check() validates all of it; see
 * docs/protocol-wire.md for the protocol (sequence numbers, credits,
 * joins, epochs).
 *
 * Byte cost of a BATCH carrying `count` records of payload lengths len_i:
 *   SHF_WIRE_BATCH_HDR + sum_i (SHF_WIRE_REC_HDR + pad8(len_i))
 *   = 56 + sum_i (16 + ((len_i + 7) & ~7))
 * i.e. per message 16 B + payload rounded up to 8 + 56 B / count amortised
 * (plus the provider's own per-message header, outside this format).
 */
#ifndef SHF_PROTO_WIRE_H
#define SHF_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/ipc.h" /* SHF_JOB_MAX, SHF_WORLD_MAX, shf_ipc_job_check() */

#define SHF_WIRE_MAGIC 0x57464853u /* "SHFW" as little-endian bytes */
#define SHF_WIRE_VERSION 10u /* 2: session tags in the common header; 3: the
                               * heartbeat carries the handshake's nonce and MAC;
                               * 4: broadcast records (SHF_WIRE_DST_BCAST);
                               * 5: epochs over a tree (EPOCH_UP/_DOWN/_ABORT);
                               * 6: joins go to the job's home node, which
                               * answers with JOB_MAP or JOB_DENY;
                               * and runs (SHF_WIRE_REC_RUN) in batches;
                               * 7: JOB_LEAVE names a lost node;
                               * 8: a JOB_MAP entry may stand for a run of
                               * equal blocks on consecutive nodes (repeat);
                               * 9: and for rounds of such runs (again): a
                               * cyclic layout in one entry; JOB_LEAVE
                               * carries ranges of ranks, a reason each
                               * (a node's leaves of a window in one),
                               * relayed by the job's home at the end of a
                               * node's part (JOB_LEAVE_ASK on a failure);
                               * 10: packed runs (a run's count |
                               * SHF_RUN_PACKED: one item header for
                               * messages of one type and length) */

#define SHF_WIRE_HDR 32u        /* common header */
#define SHF_WIRE_BATCH_HDR 56u  /* common header + batch body; records start here */
#define SHF_WIRE_REC_HDR 16u    /* per-record header in a batch */
#define SHF_WIRE_REC_ALIGN 8u   /* record payloads are padded to this */
#define SHF_WIRE_ACK_BYTES 48u
#define SHF_WIRE_HEARTBEAT_BYTES 120u
#define SHF_WIRE_NONCE_BYTES 32u /* heartbeat: the sender's nonce of its session */
#define SHF_WIRE_MAC_BYTES 32u   /* heartbeat: the handshake MAC */
#define SHF_WIRE_JOIN_FIXED 120u /* JOB_JOIN without its ranges */
#define SHF_WIRE_RANGE_BYTES 8u  /* one (first, count) rank range */
#define SHF_WIRE_LEAVE_FIXED 56u  /* JOB_LEAVE without its entries */
#define SHF_WIRE_LEAVE_ENT_BYTES 20u /* one (first, count, reason, lost_node, node) entry of a JOB_LEAVE */
#define SHF_WIRE_LEAVE_ASK_BYTES 48u
#define SHF_WIRE_MAP_FIXED 120u  /* JOB_MAP without its entries */
#define SHF_WIRE_MAP_ENT_BYTES 20u /* one (first, count, node, repeat, again) entry of a JOB_MAP */
#define SHF_WIRE_DENY_BYTES 120u
#define SHF_WIRE_EPOCH_BYTES 56u
#define SHF_WIRE_DROP_BYTES 64u
#define SHF_WIRE_WINDOW_MAX 65536u /* largest credit window an ACK may grant */
#define SHF_WIRE_FAN_REQ_FIXED 96u  /* FAN_REQ without its targets and args */
#define SHF_WIRE_FAN_ANS_HDR 64u    /* FAN_ANS without its data */
#define SHF_WIRE_FAN_CMD_MAX 32u    /* command name, NUL included */
#define SHF_WIRE_FAN_ARGS_MAX 4096u /* request arguments (JSON text) */
#define SHF_WIRE_FAN_K_MIN 2u       /* fan-out of the tree */
#define SHF_WIRE_FAN_K_MAX 64u
#define SHF_WIRE_FAN_BUDGET_MAX 600000u /* ms a receiver may take to answer */
#define SHF_WIRE_FAN_ANS_MAX (16u << 20) /* bytes of one subtree's answer */
#define SHF_WIRE_FWD_HDR 32u        /* FWD: the hop's common header before the message */
#define SHF_WIRE_FWD_LOST_BYTES 40u
#define SHF_WIRE_BUNDLE_HDR 40u     /* FWD_BUNDLE: common header + count + reserved */
#define SHF_WIRE_BUNDLE_ITEM 8u     /* FWD_BUNDLE: each item's length + reserved */

enum shf_wire_kind {
	SHF_WIRE_BATCH = 1,     /* records of one job, src node -> dst node */
	SHF_WIRE_ACK = 2,       /* cumulative: batches <= acked_seq fully placed */
	SHF_WIRE_HEARTBEAT = 3, /* liveness + incarnation */
	SHF_WIRE_JOB_JOIN = 4,  /* ranks of a job registered on src node */
	SHF_WIRE_JOB_LEAVE = 5, /* ranks of src node left (ranges, a reason each) */
	/* 6 was EPOCH, the flat epoch barrier of versions 4 and before: refused
	 * now, and never to be reused */
	SHF_WIRE_DROP = 7,      /* records of a batch were dropped at the receiver */
	SHF_WIRE_JOB_MAP = 8,   /* the job's home: where every rank of the job lives */
	SHF_WIRE_JOB_DENY = 9,  /* the job's home: the job conflicts with another node's */
	SHF_WIRE_JOB_LEAVE_ASK = 10, /* src lost the relay of a job's leaves: the
	                                receiver's leaves of it, directly */
	SHF_WIRE_KIND_MAX,
	/* the fan-out tree (daemon/admin/fanout.c; docs/protocol-wire.md, "FAN_REQ"
	 * and "FAN_ANS"), numbered apart (0x40-0x4f) */
	SHF_WIRE_FAN_REQ = 0x40, /* a request for the receiver and its subtree */
	SHF_WIRE_FAN_ANS = 0x41, /* one fragment of a subtree's combined answer */
	/* epochs over a binary tree of the job's nodes (daemon/epoch.c;
	 * docs/protocol-wire.md, "EPOCH_UP, EPOCH_DOWN, EPOCH_ABORT"), numbered
	 * apart (0x60-0x6f); one body for the three (struct shf_wire_epoch) */
	SHF_WIRE_EPOCH_UP = 0x60,    /* count: ranks of the sender's subtree in phase */
	SHF_WIRE_EPOCH_DOWN = 0x61,  /* the phase is complete (count: the world) */
	SHF_WIRE_EPOCH_ABORT = 0x62, /* the pending epoch fails (count: ESRCH or EHOSTDOWN) */
	/* 2-D routing (daemon/net/route.c; docs/protocol-wire.md, "Forwarding"),
	 * numbered apart (0x70-0x7f) */
	SHF_WIRE_FWD = 0x70,      /* one whole message of another pair, one hop on */
	SHF_WIRE_FWD_LOST = 0x71, /* the sender lost its link to a node it forwards for */
	SHF_WIRE_FWD_BUNDLE = 0x72, /* several whole FWDs for the same next node */
};

/* Heartbeat flags (docs/protocol-wire.md, "Authentication"). */
enum shf_wire_hb_flag {
	SHF_WIRE_HB_MAC = 1u,  /* the sender has a cluster key: mac is set */
	SHF_WIRE_HB_ECHO = 2u, /* the MAC covers the receiver's nonce as the sender last
				  saw it (else 32 zero bytes in its place); only with MAC */
	SHF_WIRE_HB_2D = 4u,   /* the sender routes in 2-D (routing=2d): a receiver with
				  another routing refuses it */
	SHF_WIRE_HB_IDLE = 8u, /* the sender stops heartbeating the receiver
				  (peer_idle_ms): the receiver stops timing it
				  out until its next other message */
	SHF_WIRE_HB_WAKE = 16u, /* the sender wakes the pair (peer_idle_ms) and holds
				   every other message to the receiver until it
				   hears from it: the receiver answers at once */
	SHF_WIRE_HB_CTR = 32u,  /* only with MAC: the MAC also covers `counter`, which
				   grows with each heartbeat the sender sends the
				   receiver; a receiver takes a heartbeat of a session
				   only with a counter above the last it took (replays
				   refused) */
	SHF_WIRE_HB_FLAGS = 63u /* every defined flag */
};

/* JOB_JOIN flags (docs/protocol-wire.md, "JOB_JOIN"). */
enum shf_wire_join_flag {
	SHF_WIRE_JOIN_RUNNING = 1u, /* the sender's side of the job is running (its world
				       was confirmed): a re-announcement to a home that
				       may not know the job */
	SHF_WIRE_JOIN_FLAGS = 1u
};
/* JOB_MAP flags. */
enum shf_wire_map_flag {
	SHF_WIRE_MAP_FINAL = 1u, /* the last part: the world is complete and confirmed */
	SHF_WIRE_MAP_FLAGS = 1u
};

/* Epoch phases carried by EPOCH_UP, EPOCH_DOWN and EPOCH_ABORT (see
 * docs/protocol-wire.md). */
enum shf_wire_epoch_phase {
	SHF_WIRE_EPOCH_PLACED = 1,  /* src node: all its ranks entered, their records placed */
	SHF_WIRE_EPOCH_DRAINED = 2, /* src node: all its ranks drained their delivery rings */
	SHF_WIRE_EPOCH_PHASE_MAX
};

/* ---- layout documentation (never cast a buffer to these) ---------------- */

struct shf_wire_raw_hdr {
	uint32_t magic;    /* SHF_WIRE_MAGIC */
	uint16_t version;  /* SHF_WIRE_VERSION */
	uint16_t kind;     /* enum shf_wire_kind */
	uint32_t src_node; /* sender */
	uint32_t dst_node; /* receiver */
	uint64_t src_session; /* sender's session tag toward the receiver */
	uint64_t dst_session; /* receiver's tag as the sender knows it; 0 unknown */
};

struct shf_wire_raw_batch {
	struct shf_wire_raw_hdr h;
	uint64_t seq;      /* per (src, dst) batch number: 1, 2, 3, ... */
	uint64_t job_hash; /* shf_wire_job_hash() of the job all records belong to */
	uint32_t count;    /* records that follow, >= 1 */
	uint32_t bytes;    /* bytes of all records == message length - 56 */
	/* count x { struct shf_wire_raw_rec; payload; zero padding to 8 } */
};

/* dst_rank of a broadcast record: every rank of the job on the receiving
 * node (the sender's ranks are never there).  One copy per node. */
#define SHF_WIRE_DST_BCAST (-1)

struct shf_wire_raw_rec {
	int32_t dst_rank; /* destination rank in the job, 0 <= r < SHF_WORLD_MAX,
			     or SHF_WIRE_DST_BCAST */
	int32_t src_rank; /* source rank in the job, same bounds */
	uint32_t type;    /* application-defined message type; a run: its count
			     (| SHF_RUN_PACKED: a packed run, proto/shm.h) */
	uint32_t len;     /* payload bytes (<= the receiver's max_msg); a run:
			     SHF_WIRE_REC_RUN | the bytes of its items */
};
/* len of a run record: several messages from src_rank to dst_rank (never
 * SHF_WIRE_DST_BCAST) in one record, `type` of them, as the run's items of
 * a SHF_REC_RUN ring record (proto/shm.h: struct shf_run_item + payload +
 * zero padding, little-endian, or packed: one item header, then the
 * payloads), filling the (len & ~SHF_WIRE_REC_RUN) bytes <=
 * SHF_RUN_MAX_BYTES exactly; each item's len <= max_msg. */
#define SHF_WIRE_REC_RUN 0x80000000u

struct shf_wire_raw_ack {
	struct shf_wire_raw_hdr h;
	uint64_t acked_seq; /* every batch src<-dst with seq <= acked_seq is fully placed */
	uint32_t window;    /* batches the sender may have beyond acked_seq; <= WINDOW_MAX */
	uint32_t dropped;   /* records dropped in the newly acked batches (stats only) */
};

struct shf_wire_raw_heartbeat {
	struct shf_wire_raw_hdr h;
	uint64_t time_ns;     /* sender's CLOCK_MONOTONIC (informational, RTT echo) */
	uint64_t incarnation; /* != 0, fixed per daemon start: a change = peer restarted */
	uint32_t flags;       /* enum shf_wire_hb_flag */
	uint32_t counter;     /* flags & CTR: heartbeats sent to the receiver so far
				 (from 1, MAC-covered); else zero */
	uint8_t nonce[SHF_WIRE_NONCE_BYTES]; /* the sender's random nonce, new with each of
					       its session tags (src_session) */
	uint8_t mac[SHF_WIRE_MAC_BYTES];     /* flags & MAC: the handshake MAC (daemon/net/auth.h)
					       over both nodes, both tags, both nonces; else zero */
};

struct shf_wire_raw_join {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;      /* == shf_wire_job_hash(name) */
	int32_t world;          /* 1 <= world <= SHF_WORLD_MAX */
	uint32_t nranges;       /* rank ranges that follow, >= 1 */
	uint32_t uid;           /* owner of the job on src node */
	uint32_t flags;         /* enum shf_wire_join_flag */
	char name[SHF_JOB_MAX]; /* shf_ipc_job_check(), zero-padded after the NUL */
	/* nranges x struct shf_wire_raw_range, sorted, disjoint, inside [0, world) */
};

struct shf_wire_raw_range {
	int32_t first; /* first rank, >= 0 */
	int32_t count; /* ranks first .. first+count-1, count >= 1 */
};

struct shf_wire_raw_map {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;      /* == shf_wire_job_hash(name) */
	int32_t world;          /* 1 <= world <= SHF_WORLD_MAX */
	uint32_t nents;         /* entries that follow, >= 1 */
	uint32_t uid;           /* the job's owner, confirmed by every node in the map */
	uint32_t flags;         /* enum shf_wire_map_flag */
	char name[SHF_JOB_MAX]; /* shf_ipc_job_check(), zero-padded after the NUL */
	/* nents x struct shf_wire_raw_map_ent, sorted, disjoint, inside [0, world) */
};

struct shf_wire_raw_map_ent {
	int32_t first;   /* first rank, >= 0 */
	int32_t count;   /* ranks first .. first+count-1, count >= 1 */
	uint32_t node;   /* where they live: < n_nodes */
	uint32_t repeat; /* version 8: and repeat more blocks like it, block b
			    (1 <= b <= repeat) ranks first + b*count .. + count-1
			    on node + b (< n_nodes): a block layout in one entry */
	uint32_t again;  /* version 9: and the repeat + 1 blocks dealt again
			    `again` more rounds: round t, block b holds ranks
			    first + (t*(repeat+1) + b)*count .. + count-1 on
			    node + b: a cyclic or block-cyclic layout in one
			    entry; the entry's ranks stay one contiguous run */
};

struct shf_wire_raw_deny {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;      /* == shf_wire_job_hash(name) */
	int32_t reason;         /* -EACCES (owner), -EINVAL (world) or -EEXIST (ranks) */
	uint32_t other_node;    /* the node on the other side: < n_nodes, != dst_node */
	uint32_t other_uid;     /* its owner of the job */
	int32_t other_world;    /* its world, 1 <= world <= SHF_WORLD_MAX */
	char name[SHF_JOB_MAX]; /* shf_ipc_job_check(), zero-padded after the NUL */
};

/* A node field that names no node (JOB_LEAVE's lost_node). */
#define SHF_WIRE_NODE_NONE UINT32_MAX

/* JOB_LEAVE (version 7: lost_node; version 9: ranges of ranks, a reason
 * each, so that one message carries a node's leaves of a window; relayed
 * by the job's home). */
struct shf_wire_raw_leave {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;
	int32_t world;      /* 1 <= world <= SHF_WORLD_MAX */
	uint32_t nents;     /* entries that follow, >= 1 */
	uint32_t flags;     /* enum shf_wire_leave_flag */
	uint32_t reserved;  /* zero */
	/* nents x struct shf_wire_raw_leave_ent, sorted, disjoint, inside [0, world) */
};

enum shf_wire_leave_flag {
	/* to the job's home, the sender's part of the job ended: apply, and
	 * forward to the job's other nodes (every entry's node is the sender) */
	SHF_WIRE_LEAVE_RELAY = 1u,
	/* from the job's home: the leaves it relays, of the nodes each entry
	 * names (the receiver's own among them tell it they came through) */
	SHF_WIRE_LEAVE_FORWARDED = 2u,
	/* to a home the sender announced to and no longer does (its pick
	 * moved): its ranks out of that home's record only; they did not
	 * leave the job */
	SHF_WIRE_LEAVE_WITHDRAW = 4u,
	SHF_WIRE_LEAVE_FLAGS = 7u
};

/* JOB_LEAVE_ASK: the sender's session with the home that relays a job's
 * leaves ended (or the home could not relay them): the receiver sends its
 * departed ranks of the job to the sender directly (a JOB_LEAVE), and from
 * now on its leaves of the job too. */
struct shf_wire_raw_leave_ask {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;
	int32_t world;      /* 1 <= world <= SHF_WORLD_MAX */
	uint32_t flags;     /* enum shf_wire_ask_flag */
};

enum shf_wire_ask_flag {
	/* from the home that could not relay: to every node of the job, not
	 * only to the asker, and no more through the home */
	SHF_WIRE_ASK_ALL = 1u,
	SHF_WIRE_ASK_FLAGS = 1u
};

struct shf_wire_raw_leave_ent {
	int32_t first;      /* first rank, >= 0 */
	int32_t count;      /* ranks first .. first+count-1 of src node left, >= 1 */
	int32_t reason;     /* 0: they left before any other rank had (culprits),
			       else a negative errno (-4095..-1): -ESRCH: they left
			       after another had; -EHOSTDOWN: src node's job had
			       lost lost_node when they left (the cause of their
			       failures there) */
	uint32_t lost_node; /* reason -EHOSTDOWN: that node, < n_nodes, != node;
			       else SHF_WIRE_NODE_NONE */
	uint32_t node;      /* whose ranks they are: src node, or with
			       FORWARDED any node of the job, < n_nodes (dst
			       node's own: they came through the home) */
};

struct shf_wire_raw_epoch {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;
	uint64_t epoch; /* epoch number, >= 1 */
	uint32_t phase; /* enum shf_wire_epoch_phase */
	uint32_t count; /* ranks of the job counted on src node for this phase */
};

struct shf_wire_raw_drop {
	struct shf_wire_raw_hdr h;
	uint64_t job_hash;
	uint64_t seq;     /* the batch they came in: dst_node -> src_node batch number */
	int32_t src_rank; /* sender of the dropped records */
	int32_t dst_rank; /* their destination (SHF_WIRE_DST_BCAST: a broadcast that
			     found no job here) */
	uint32_t count;   /* records dropped, >= 1 */
	int32_t reason;   /* negative errno: -ESRCH rank gone, ... */
};

struct shf_wire_raw_fan_req {
	struct shf_wire_raw_hdr h;
	uint64_t req_id;    /* != 0; with origin, names the request */
	uint32_t origin;    /* the node that started it (the root), < n_nodes */
	uint32_t uid;       /* the asker's uid as the root's daemon saw it (SO_PEERCRED) */
	uint32_t budget_ms; /* the receiver answers within this, 1..FAN_BUDGET_MAX */
	uint32_t fanout;    /* children per node, FAN_K_MIN..FAN_K_MAX */
	uint32_t ntargets;  /* nodes of the receiver's subtree (itself excluded) */
	uint32_t args_len;  /* bytes of args, <= FAN_ARGS_MAX */
	char cmd[SHF_WIRE_FAN_CMD_MAX]; /* [a-z0-9_-]{1,31}, zero-padded */
	/* ntargets x uint32_t node ids: strictly increasing, each < n_nodes and
	 * none of dst_node, src_node, origin; then args_len bytes of JSON text
	 * (no NUL) */
};

struct shf_wire_raw_fan_ans {
	struct shf_wire_raw_hdr h;
	uint64_t req_id;  /* the request's */
	uint32_t origin;  /* the request's, < n_nodes */
	uint32_t total;   /* bytes of the whole answer, 1..FAN_ANS_MAX */
	uint32_t offset;  /* where this fragment's data goes: fragments come in order */
	uint32_t len;     /* data bytes that follow, >= 1, offset + len <= total */
	uint32_t flags;   /* zero */
	uint32_t reserved;/* zero */
	/* len bytes of the answer (JSON text) */
};

/* FWD: the common header of one hop (src_node -> dst_node, that pair's
 * session tags), then one whole wire message of another pair (its own
 * header and tags), of any kind but FWD and FWD_LOST. */
struct shf_wire_raw_fwd_lost {
	struct shf_wire_raw_hdr h;
	uint32_t lost;     /* the node src_node lost its link to, < n_nodes */
	uint32_t reserved; /* zero */
};

/* FWD_BUNDLE: the common header of one hop (src_node -> dst_node, that
 * pair's tags), then count items, each a whole FWD of that same hop
 * (src_node -> dst_node, its own tags zero: the bundle's count), so that
 * one fabric send carries the forwarded traffic of many pairs. */
struct shf_wire_raw_fwd_bundle {
	struct shf_wire_raw_hdr h;
	uint32_t count;    /* items, >= 1 */
	uint32_t reserved; /* zero */
	/* count x { struct shf_wire_raw_bundle_item; a whole FWD of len bytes;
	 * zero padding to 8 }, filling the message exactly */
};

struct shf_wire_raw_bundle_item {
	uint32_t len;      /* bytes of the FWD that follows, >= FWD_HDR + HDR */
	uint32_t reserved; /* zero */
};

/* ---- decoded (host-order) views ---------------------------------------- */

struct shf_wire_fwd {
	uint32_t inner_src;  /* the message's own src_node (the origin) */
	uint32_t inner_dst;  /* its own dst_node (the destination) */
	uint16_t inner_kind; /* its kind */
	uint32_t len;        /* its length: the FWD's length - SHF_WIRE_FWD_HDR */
	const uint8_t *msg;  /* decoder: into the checked buffer */
};

struct shf_wire_fwd_bundle {
	uint32_t count;        /* items (each checked whole as a FWD) */
	const uint8_t *items;  /* decoder: the first item's header, into the
				  checked buffer; walk them with
				  shf_wire_bundle_next() */
	uint32_t bytes;        /* of the items, padding included */
};

struct shf_wire_fan_req {
	uint64_t req_id;
	uint32_t origin;
	uint32_t uid;
	uint32_t budget_ms;
	uint32_t fanout;
	uint32_t ntargets;
	uint32_t args_len;
	char cmd[SHF_WIRE_FAN_CMD_MAX]; /* NUL-terminated */
	const uint8_t *targets; /* decoder: into the checked buffer; read them with
				   shf_wire_fan_target() */
	const char *args;       /* args_len bytes (not NUL-terminated); encoder too */
};

struct shf_wire_fan_ans {
	uint64_t req_id;
	uint32_t origin;
	uint32_t total;
	uint32_t offset;
	uint32_t len;
	const uint8_t *data; /* len bytes; decoder: into the checked buffer */
};

struct shf_wire_batch {
	uint64_t seq;
	uint64_t job_hash;
	uint32_t count;
	uint32_t bytes; /* records only; message length is SHF_WIRE_BATCH_HDR + bytes */
};

struct shf_wire_ack {
	uint64_t acked_seq;
	uint32_t window;
	uint32_t dropped;
};

struct shf_wire_heartbeat {
	uint64_t time_ns;
	uint64_t incarnation;
	uint32_t flags; /* enum shf_wire_hb_flag */
	uint32_t counter; /* zero unless flags & SHF_WIRE_HB_CTR */
	uint8_t nonce[SHF_WIRE_NONCE_BYTES];
	uint8_t mac[SHF_WIRE_MAC_BYTES];  /* all zero unless flags & SHF_WIRE_HB_MAC */
};

struct shf_wire_range {
	int32_t first;
	int32_t count;
};

struct shf_wire_join {
	uint64_t job_hash; /* filled by the decoder; the encoder computes it from name */
	int32_t world;
	uint32_t uid;
	uint32_t flags;         /* enum shf_wire_join_flag */
	uint32_t nranges;       /* decoder: ranges in the message */
	char name[SHF_JOB_MAX]; /* NUL-terminated */
	const uint8_t *ranges;  /* decoder: points into the checked buffer; read
	                           them with shf_wire_join_range() */
};

struct shf_wire_map {
	uint64_t job_hash; /* filled by the decoder; the encoder computes it from name */
	int32_t world;
	uint32_t uid;
	uint32_t flags;
	uint32_t nents;         /* decoder: entries in the message */
	char name[SHF_JOB_MAX]; /* NUL-terminated */
	const uint8_t *ents;    /* decoder: points into the checked buffer; read
	                           them with shf_wire_map_entry() */
};

struct shf_wire_map_ent {
	int32_t first;
	int32_t count;
	uint32_t node;
	uint32_t repeat; /* more blocks like it on the next nodes (raw_map_ent) */
	uint32_t again;  /* more rounds of those repeat + 1 blocks (raw_map_ent) */
};

/* Ranks an entry stands for, in all its blocks and rounds: the run first ..
 * first + ranks - 1. Saturates at INT64_MAX (a corrupt entry); a count < 1
 * gives 0 or less (the caller rejects it). */
static inline int64_t shf_wire_map_ent_ranks(const struct shf_wire_map_ent *e)
{
	int64_t per = ((int64_t)e->repeat + 1) * e->count; /* < 2^63: 2^32 x 2^31 */
	if (per <= 0)
		return per;
	if ((int64_t)e->again + 1 > INT64_MAX / per)
		return INT64_MAX;
	return per * ((int64_t)e->again + 1);
}

/* Merge e[0..ne) (sorted by first, every repeat and again 0) into entries
 * with repeats where blocks of one size follow on consecutive nodes, then
 * with agains where such runs follow each other on the same nodes (ranks
 * dealt round-robin); returns the entries left at the front of e. */
uint32_t shf_wire_map_compact(struct shf_wire_map_ent *e, uint32_t ne);

struct shf_wire_deny {
	uint64_t job_hash; /* filled by the decoder; the encoder computes it from name */
	int32_t reason;
	uint32_t other_node;
	uint32_t other_uid;
	int32_t other_world;
	char name[SHF_JOB_MAX];
};

struct shf_wire_leave {
	uint64_t job_hash;
	int32_t world;
	uint32_t flags;      /* enum shf_wire_leave_flag */
	uint32_t nents;      /* decoder: entries in the message */
	const uint8_t *ents; /* decoder: points into the checked buffer; read
	                        them with shf_wire_leave_entry() */
};

struct shf_wire_leave_ent {
	int32_t first;
	int32_t count;
	int32_t reason;
	uint32_t lost_node; /* SHF_WIRE_NODE_NONE unless reason is -EHOSTDOWN */
	uint32_t node;      /* whose ranks (raw_leave_ent) */
};

struct shf_wire_leave_ask {
	uint64_t job_hash;
	int32_t world;
	uint32_t flags; /* enum shf_wire_ask_flag */
};

struct shf_wire_epoch {
	uint64_t job_hash;
	uint64_t epoch;
	uint32_t phase;
	uint32_t count;
};

struct shf_wire_drop {
	uint64_t job_hash;
	uint64_t seq;
	int32_t src_rank;
	int32_t dst_rank;
	uint32_t count;
	int32_t reason;
};

/* A checked message: the common header plus the body of its kind. */
struct shf_wire_hdr {
	uint16_t version;  /* SHF_WIRE_VERSION */
	uint16_t kind;     /* enum shf_wire_kind; selects the union member */
	uint32_t src_node; /* < n_nodes, != dst_node */
	uint32_t dst_node; /* == my_node */
	uint32_t len;      /* message length (== n given to shf_wire_check) */
	uint64_t src_session; /* as sent: not judged by shf_wire_check() */
	uint64_t dst_session;
	union {
		struct shf_wire_batch batch;
		struct shf_wire_ack ack;
		struct shf_wire_heartbeat heartbeat;
		struct shf_wire_join join;
		struct shf_wire_map map;
		struct shf_wire_deny deny;
		struct shf_wire_leave leave;
		struct shf_wire_leave_ask leave_ask;
		struct shf_wire_epoch epoch;
		struct shf_wire_drop drop;
		struct shf_wire_fan_req fan_req;
		struct shf_wire_fan_ans fan_ans;
		struct shf_wire_fwd fwd;
		uint32_t fwd_lost; /* FWD_LOST: the node lost */
		struct shf_wire_fwd_bundle bundle;
	} u;
};

/* ---- little-endian field access ---------------------------------------- */

static inline void shf_wire_put16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static inline void shf_wire_put32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void shf_wire_put64(void *p, uint64_t v)
{
	shf_wire_put32(p, (uint32_t)v);
	shf_wire_put32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t shf_wire_get16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | (uint16_t)b[1] << 8);
}

static inline uint32_t shf_wire_get32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t shf_wire_get64(const void *p)
{
	return (uint64_t)shf_wire_get32(p) | (uint64_t)shf_wire_get32((const uint8_t *)p + 4) << 32;
}

/* ---- sizes ------------------------------------------------------------- */

/* Bytes one record of `len` payload bytes takes in a batch. */
static inline uint64_t shf_wire_rec_bytes(uint32_t len)
{
	return SHF_WIRE_REC_HDR + (((uint64_t)len + SHF_WIRE_REC_ALIGN - 1) & ~(uint64_t)7);
}

/* Length of a JOB_JOIN carrying `nranges` ranges. */
static inline uint64_t shf_wire_join_bytes(uint32_t nranges)
{
	return SHF_WIRE_JOIN_FIXED + (uint64_t)nranges * SHF_WIRE_RANGE_BYTES;
}

/* 64-bit FNV-1a of a job name (up to its NUL); the job's id on the wire. */
uint64_t shf_wire_job_hash(const char *name);

/* Write the session tags into an encoded message (the encoders leave them
 * zero): the peer protocol stamps each message just before it is sent. */
static inline void shf_wire_stamp(void *msg, uint64_t src_session, uint64_t dst_session)
{
	shf_wire_put64((uint8_t *)msg + 16, src_session);
	shf_wire_put64((uint8_t *)msg + 24, dst_session);
}

/* ---- validation -------------------------------------------------------- */

/* A fan-out command name ([a-z0-9_-]{1,31}, NUL-terminated): the rule
 * FAN_REQ checks on the wire, for the sender to apply first. */
bool shf_wire_fan_cmd_name_ok(const char *c);

/*
 * Validate a received message of n bytes (buf needs no alignment) and
 * decode its header and body into *out (written only on success).  Checks
 * magic and version (-EPROTO), then -EBADMSG for: unknown kind, a length
 * that is not exactly the kind's, src_node or dst_node >= n_nodes, dst_node != my_node,
 * src_node == dst_node, non-zero reserved/padding bytes, and every field of
 * the body (see the raw structs).  A BATCH's records are NOT walked here:
 * use shf_wire_iter_*() (or shf_wire_batch_verify()) with the same buffer.
 * For JOB_JOIN every range is checked and out->u.join.ranges points into
 * buf, so buf must outlive it (likewise JOB_MAP's and JOB_LEAVE's entries).
 */
int shf_wire_check(const void *buf, size_t n, uint32_t n_nodes, uint32_t my_node,
		   struct shf_wire_hdr *out);

/* Range i (< nranges) of a JOB_JOIN decoded by shf_wire_check(). */
struct shf_wire_range shf_wire_join_range(const struct shf_wire_join *j, uint32_t i);
/* Entry i (< nents) of a JOB_MAP decoded by shf_wire_check(). */
struct shf_wire_map_ent shf_wire_map_entry(const struct shf_wire_map *m, uint32_t i);

/* Entry i (< nents) of a JOB_LEAVE decoded by shf_wire_check(). */
struct shf_wire_leave_ent shf_wire_leave_entry(const struct shf_wire_leave *l, uint32_t i);

/* Length of a JOB_LEAVE carrying `nents` entries. */
static inline uint64_t shf_wire_leave_bytes(uint32_t nents)
{
	return SHF_WIRE_LEAVE_FIXED + (uint64_t)nents * SHF_WIRE_LEAVE_ENT_BYTES;
}

/* Length of a JOB_MAP carrying `nents` entries. */
static inline uint64_t shf_wire_map_bytes(uint32_t nents)
{
	return SHF_WIRE_MAP_FIXED + (uint64_t)nents * SHF_WIRE_MAP_ENT_BYTES;
}

/* One record of a batch, as returned by the iterator. */
struct shf_wire_rec {
	int32_t dst_rank;
	int32_t src_rank;
	uint32_t type;    /* a run: 0 */
	uint32_t len;     /* a run: the bytes of its items */
	uint32_t count;   /* 0: one message; >= 1: a run of count items at data,
			     checked (shf_run_check) */
	uint32_t payload; /* a run: its messages' payload bytes; else len */
	const void *data; /* len bytes inside the batch buffer (8-aligned relative
	                     to the message start) */
	bool packed;      /* a run: packed (SHF_RUN_PACKED; proto/shm.h) */
};

/*
 * Iterator over the records of a checked BATCH.  It is a plain value: the
 * relay may keep it with a parked receive buffer and resume where it
 * stopped.  Each record is checked before it is returned: header inside the
 * batch, dst/src rank in [0, SHF_WORLD_MAX), len <= max_msg, payload and
 * padding inside the batch, padding zero; after `count` records the batch
 * must end exactly (so `bytes` and `count` agree with the contents).
 */
struct shf_wire_iter {
	const uint8_t *buf; /* message start */
	uint32_t off;       /* next record's offset */
	uint32_t end;       /* message length */
	uint32_t left;      /* records not yet returned */
	uint32_t max_msg;   /* largest payload accepted */
	int err;            /* sticky: 0 or -EBADMSG */
};

void shf_wire_iter_init(struct shf_wire_iter *it, const void *buf, const struct shf_wire_hdr *h,
			uint32_t max_msg);
/* 1: *rec filled; 0: end of a consistent batch; -EBADMSG: the first bad
 * record (and every later call). */
int shf_wire_iter_next(struct shf_wire_iter *it, struct shf_wire_rec *rec);

/* Walk every record without using them: 0 or -EBADMSG.  Lets the relay
 * reject a corrupt batch before placing any of its records. */
int shf_wire_batch_verify(const void *buf, const struct shf_wire_hdr *h, uint32_t max_msg);

/* ---- encoding ---------------------------------------------------------- */

/*
 * Batch builder.  begin() reserves the header; put()/add() append records;
 * end() writes seq/count/bytes and returns the message length.  Nothing is
 * sent from here: the buffer belongs to the caller.
 */
struct shf_wire_batch_enc {
	uint8_t *buf;      /* message start */
	uint32_t cap;      /* buffer bytes */
	uint32_t off;      /* bytes used (header included) */
	uint32_t count;    /* records added */
	uint32_t msgs;     /* messages added (a run: its items) */
	uint64_t job_hash; /* as given to begin() */
};

/* 0, or -ENOBUFS when cap cannot hold the header and one empty record
 * (caps above UINT32_MAX are clamped). */
int shf_wire_batch_begin(struct shf_wire_batch_enc *e, void *buf, size_t cap,
			 uint32_t src_node, uint32_t dst_node, uint64_t job_hash);
/* Does a record of len bytes still fit? */
bool shf_wire_batch_fits(const struct shf_wire_batch_enc *e, uint32_t len);
/* Append a record header and return where its len payload bytes go (the
 * padding is already zeroed), or NULL when it does not fit or a rank is
 * outside [0, SHF_WORLD_MAX).  Lets the relay copy straight from a ring. */
void *shf_wire_batch_add(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
			 uint32_t type, uint32_t len);
/* A run of count (1..SHF_RUN_MAX_COUNT, | SHF_RUN_PACKED for a packed
 * one) messages from src_rank to dst_rank (>= 0) whose items take bytes
 * (<= SHF_RUN_MAX_BYTES): returns
 * where the caller copies the items, or NULL (does not fit, bad ranks or
 * sizes).  The caller checks the items (shf_run_check) before it sends. */
void *shf_wire_batch_add_run(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
			     uint32_t count, uint32_t bytes);
/* add() + memcpy.  0, -ENOSPC (does not fit) or -EINVAL (bad rank).
 * Internal: tests, the fuzzer and wire-inject use it; the daemon copies
 * straight from the ring with add(). */
int shf_wire_batch_put(struct shf_wire_batch_enc *e, int32_t dst_rank, int32_t src_rank,
		       uint32_t type, const void *data, uint32_t len);
/* Finish with batch number seq (>= 1).  Returns the message length, or
 * 0 when the batch is empty or seq is 0 (nothing valid to send). */
size_t shf_wire_batch_end(struct shf_wire_batch_enc *e, uint64_t seq);

/*
 * Encoders of the other kinds: write one message into buf (cap bytes) and
 * return its length, -ENOBUFS when cap is too small, or -EINVAL when the
 * result would not pass shf_wire_check() at dst_node (each encoder runs the
 * same validation on what it wrote).
 */
long shf_wire_enc_ack(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		      const struct shf_wire_ack *a);
long shf_wire_enc_heartbeat(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			    const struct shf_wire_heartbeat *hb);
/* j->name, world, uid and flags are used; job_hash is computed from name. */
long shf_wire_enc_join(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		       const struct shf_wire_join *j, const struct shf_wire_range *ranges,
		       uint32_t nranges);
/* m->name, world, uid and flags are used; job_hash is computed from name. */
long shf_wire_enc_map(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		      const struct shf_wire_map *m, const struct shf_wire_map_ent *ents,
		      uint32_t nents);
/* dn->name is used for job_hash. */
long shf_wire_enc_deny(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		       const struct shf_wire_deny *dn);
/* l->job_hash, world and flags are used, with the entries e[0..ne). */
long shf_wire_enc_leave(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			const struct shf_wire_leave *l, const struct shf_wire_leave_ent *e,
			uint32_t ne);
long shf_wire_enc_leave_ask(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			    const struct shf_wire_leave_ask *a);
/* An epoch step as one of the tree's kinds (SHF_WIRE_EPOCH_UP/_DOWN/_ABORT). */
long shf_wire_enc_epoch_kind(void *buf, size_t cap, unsigned kind, uint32_t src_node,
			     uint32_t dst_node, const struct shf_wire_epoch *ep);
long shf_wire_enc_drop(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
		       const struct shf_wire_drop *d);

/* Length of a FAN_REQ with ntargets targets and args_len bytes of args. */
static inline uint64_t shf_wire_fan_req_bytes(uint32_t ntargets, uint32_t args_len)
{
	return SHF_WIRE_FAN_REQ_FIXED + (uint64_t)ntargets * 4u + args_len;
}
/* Target i (< ntargets) of a FAN_REQ decoded by shf_wire_check(). */
uint32_t shf_wire_fan_target(const struct shf_wire_fan_req *r, uint32_t i);
/* r->cmd, args (r->args, r->args_len) and the rest of r, with targets[]
 * (r->ntargets); n_nodes: the cluster's size (targets are checked
 * against it).  Length, -ENOBUFS or -EINVAL. */
long shf_wire_enc_fan_req(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			  uint32_t n_nodes, const struct shf_wire_fan_req *r,
			  const uint32_t *targets);
/* One fragment: a->data holds a->len bytes. */
long shf_wire_enc_fan_ans(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			  uint32_t n_nodes, const struct shf_wire_fan_ans *a);

/* The FWD header of one hop (32 bytes at buf); the carried message follows
 * it (the caller puts it there).  The tags are stamped like any message's.
 * Returns SHF_WIRE_FWD_HDR, -ENOBUFS, -EINVAL (src == dst). */
long shf_wire_enc_fwd_hdr(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node);
/* FWD_LOST: src_node lost its link to `lost` (not src, not dst). */
long shf_wire_enc_fwd_lost(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node,
			   uint32_t lost);

/* Bytes an item of a len-byte FWD takes in a FWD_BUNDLE. */
static inline uint64_t shf_wire_bundle_item_bytes(uint32_t len)
{
	return SHF_WIRE_BUNDLE_ITEM + (((uint64_t)len + 7u) & ~(uint64_t)7u);
}
/* Start a FWD_BUNDLE of the hop src_node -> dst_node at buf (cap bytes):
 * SHF_WIRE_BUNDLE_HDR (the offset of the first item), -ENOBUFS, -EINVAL. */
long shf_wire_enc_bundle_begin(void *buf, size_t cap, uint32_t src_node, uint32_t dst_node);
/* Append the whole FWD fwd (len bytes; its hop header is rewritten to the
 * bundle's, tags zero) at offset off of the bundle at buf: the new end,
 * or -ENOBUFS (does not fit cap: nothing written). */
long shf_wire_enc_bundle_add(void *buf, size_t cap, size_t off, const void *fwd, uint32_t len);
/* Item *off (start: 0) of a bundle decoded by shf_wire_check(): its FWD
 * into *msg, *len; 1, or 0 after the last. */
int shf_wire_bundle_next(const struct shf_wire_fwd_bundle *b, uint32_t *off, const uint8_t **msg,
			 uint32_t *len);

/* Name of a kind for logs ("batch", ...; "?" when unknown).  Internal:
 * tests and the fuzzer. */
const char *shf_wire_kind_name(unsigned kind);

#endif /* SHF_PROTO_WIRE_H */
