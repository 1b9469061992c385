/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/int.h - what the files of net/ share, and nobody else sees.
 * Calls among them go one way: net.c -> net/rx.c -> net/tx.c (batches) ->
 * net/fwd.c (forwarding) -> net/post.c (posting); the sending modules
 * declare their own parts (fwd.h, post.h).
 */
#ifndef SHD_NET_INT_H
#define SHD_NET_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/net/auth.h"
#include "daemon/daemon.h"
#include "daemon/net/fabric.h"
#include "daemon/log.h"
#include "daemon/net/upcalls.h"
#include "daemon/rdv/rdv.h"
#include "daemon/net/route.h"
#include "proto/wire.h"

struct shd_net_post_events; /* net/post.h */

/* What a struct net_msg is, and so who owns its buffer. */
enum net_msg_kind {
	NET_MSG_BATCH,  /* a batch in a pool buffer; counts against credit */
	NET_MSG_POOLED, /* a message of shd_net_send_msg() (the fan-out's FAN_REQ
			   and FAN_ANS) larger than SHD_FABRIC_SMALL, in a
			   pool buffer (JOB_JOIN is cut to fit the small path) */
	NET_MSG_SMALL,  /* a small control message waiting for a send slot: a
			   heap copy, freed once the fabric has copied it */
	NET_MSG_INLINE, /* the per-peer context of small sends in flight: no
			   buffer; only says which peer a completion is for */
	NET_MSG_FWD,    /* routing=2d: a whole FWD message of another pair that
			   this node forwards to peer, in a pool buffer from
			   buf - net->room; no credit */
};

/* One outgoing wire message. */
struct net_msg {
	struct shd_list link;  /* peer->sendq (closed batch) or net->retry */
	struct shd_peer *peer;
	uint64_t seq;          /* batches: sequence number */
	uint32_t len;          /* bytes to send */
	enum net_msg_kind kind;
	uint32_t gen;          /* the peer's session generation it belongs to: a
				  completion of an earlier session never
				  fails the current one */
	uint8_t *buf;          /* message bytes (NET_MSG_INLINE: none) */
};

/* A received batch that could not be placed at once (a copy). */
struct net_rx {
	struct shd_list link;  /* peer->rxq, in seq order */
	void *buf;             /* a copy of the message, right after this struct */
	struct shf_wire_hdr h;
	struct shf_wire_iter it;
	struct shf_wire_rec cur;
	bool have_cur;         /* cur waits for room */
	int32_t bcast_next;    /* cur is a broadcast: the next rank to consider */
	struct shd_run_pos run_pos; /* cur is a run: how far its placing got */
};

/* A client's mark waiting for this peer to acknowledge batch `seq`. */
struct net_mark {
	struct shd_list link;  /* peer->marks, in seq order */
	struct shd_client *c;  /* NULL once the client went away */
	uint64_t seq;
};

/* A peer's session, seen from here (docs/protocol-wire.md, "Sessions"). */
enum peer_state {
	PEER_UNKNOWN, /* never heard from since start-up: probed, not a failure */
	PEER_JOINING, /* its session tag is known; it has not shown that it knows
			 ours yet (heartbeats go both ways until it does) */
	PEER_UP,      /* both tags agreed: data, credits, joins and epochs flow */
	PEER_FAILED,  /* a send failed, it fell silent or started a new session:
			 nothing more is queued for it; carried out at the
			 pass's peers step */
	PEER_DOWN,    /* carried out: queues empty, its ranks lost; probed, and
			 re-admitted as a new session when it answers */
	PEER_STATE_MAX
};

/*
 * A peer is split by use (issue 25, item 3; docs/scale.md, "Memory per
 * peer"):
 *  - struct shd_peer, the hot part: what the data path reads and writes per
 *    message and per batch (the open batch, sequence numbers, the queues'
 *    links), at most SHD_PEER_HOT_MAX bytes, in the n->peers array;
 *  - struct shd_peer_cold (p->cold): the session and its handshake, the
 *    peer's names and address, the counters, the lists a flush or a wake
 *    uses, one per node of the rendezvous in n->colds (the names on the
 *    heap at their own length);
 *  - struct shd_peer_fwd (p->fwd): the bundle this node forwards to it,
 *    only for the peers that can be a forward's next hop (routing=2d:
 *    the row and column neighbours); NULL otherwise.
 * All are freed at the one teardown of a net (open.c, net_free).
 */
struct shd_peer_cold {
	struct shd_peer *peer;      /* the hot part it belongs to */
	/* names: heap strings at their length, never NULL ("" unknown; set
	 * with shd_net_peer_names) */
	const char *host;           /* its host or node name */
	const char *addr;           /* its address, printable (logs, shufflectl) */
	const char *port;           /* static: its port (how to re-insert it) */
	/* how to put it back into the address vector after a down */
	const uint8_t *raw_addr;    /* raw_len bytes on the heap, or NULL */
	uint32_t raw_len;           /* 0: by host and port (static) */
	uint32_t via_in;            /* routing=2d: the intermediate its last message
				       came through */
	uint64_t incarnation;       /* its daemon's start (from heartbeats); 0 unknown */
	uint64_t my_session;        /* my tag toward it: new at start and after down */
	uint64_t peer_session;      /* its tag (JOINING, UP); 0 unknown */
	uint64_t next_session;      /* FAILED: the new tag it already sent; 0 none */
	uint64_t next_incarnation;
	/* the handshake's authentication (daemon/net/auth.h) */
	uint8_t my_nonce[SHD_AUTH_NONCE_BYTES];   /* new with each my_session */
	uint8_t peer_nonce[SHD_AUTH_NONCE_BYTES]; /* its nonce, from its last heartbeat
						     (have_peer_nonce, hot) */
	uint64_t state_since_ns;    /* when it entered its state */
	uint64_t last_probe_ns;     /* UNKNOWN, DOWN: last heartbeat sent */
	uint32_t hb_ctr_out;        /* with a key: heartbeats sent to it (HB_CTR counter) */
	uint32_t hb_ctr_in;         /* with a key: the highest counter taken from it in
				       its current session (0: none yet) */
	uint64_t last_lookup_ns;    /* tcp: last store lookup of its address */
	/* lazy peers (peer_idle_ms; docs/protocol-wire.md, "Idle peers") */
	uint64_t last_used_ns;      /* last message other than a heartbeat, to or
				       from it (and the session's start), to
				       the heartbeat tick that saw `used` */
	char down_why[96];          /* PEER_FAILED: why */
	struct shd_list down_link;  /* in net->downq while PEER_FAILED */
	struct net_msg *hb_wait;    /* its heartbeat waiting in net->retry for a
				       send slot (a SMALL copy); NULL: none.
				       A newer heartbeat takes its place
				       (net/post.c, small_send) */
	struct shd_list held;       /* struct net_msg (SMALL, POOLED) held while
				       waking, in order; seq: seq_closed then
				       (their count: n_held, hot) */
	struct net_msg inline_ctx[2]; /* fabric context of its small sends, one
				       * per generation parity: a completion
				       * tells its generation (two resets with
				       * a send still in flight would alias) */
	struct shd_list waiters;    /* shd_waiters: clients waiting for this peer */
	struct shd_list marks;      /* struct net_mark */
	/* JOINING, with a key: messages of the coming session that came
	 * before its handshake's end (net/session.c, "early") */
	struct shd_list early;      /* struct net_early, in arrival order */
	uint32_t n_early;
	uint32_t early_bytes;
	bool early_lost;            /* one did not fit: the session restarts once up */
	struct shd_waiter rx_wait;  /* parked on a full delivery ring (rx_waiting, hot) */
	struct shf_peer_stats st;
};

/* The FWD_BUNDLE this node gathers for a next hop (routing=2d, net/fwd.c):
 * the FWDs of other pairs it passes on to that peer. */
struct shd_peer_fwd {
	struct shd_peer *peer;      /* the next hop */
	struct net_msg *open;       /* bundle being filled (a pool buffer, from
				       buf - net->room); NULL: none */
	uint32_t off;               /* its length so far */
	uint32_t count;             /* FWDs in it */
	bool urgent;                /* one of them carries no batch (an ACK, a
				       heartbeat, an epoch step...): it goes at
				       the end of this progress round */
	uint64_t since_ns;          /* when its first FWD went in */
	struct shd_list link;       /* in net->fwd_linger while open */
};

struct shd_peer {
	struct shd_net *net;
	struct shd_peer_cold *cold; /* never NULL */
	struct shd_peer_fwd *fwd;   /* routing=2d neighbours only; else NULL */
	uint32_t node;
	enum peer_state state;
	uint32_t gen;               /* session generation: + 1 at each session reset */
	/* routing=2d (daemon/net/route.h): a peer that is not a neighbour is
	 * reached through an intermediate (FWD) */
	uint32_t via_out;           /* the intermediate our last message took
				       (SHD_ROUTE_NONE: sent directly) */
	bool have_peer_nonce;       /* cold->peer_nonce is its nonce */
	bool linked;                /* a message went directly to or from it:
				       the fabric holds a connection to it */
	/* lazy peers (peer_idle_ms; docs/protocol-wire.md, "Idle peers") */
	bool used;                  /* a message other than a heartbeat since the
				       last tick (shd_net_use: no clock read per
				       message) */
	bool idle;                  /* UP, unused: we stopped heartbeating it
				       (told it with HB_IDLE) */
	bool quiet;                 /* UP: it told us it stopped heartbeating us
				       (HB_IDLE); not timed out while quiet */
	bool released;              /* both idle: its connection was released */
	bool waking;                /* we woke it (shd_net_use) and have not heard
				       from it since: every message but a
				       heartbeat is held (cold->held, sendq),
				       the heartbeats carry HB_WAKE */
	bool rx_waiting;            /* parked on a full delivery ring (cold->rx_wait) */
	uint64_t last_heard_ns;     /* last message of the current session */
	/* sending (net/tx.c) */
	struct net_msg *open;       /* batch being filled */
	struct shf_wire_batch_enc enc;
	uint64_t open_since_ns;
	uint64_t closed_ns;         /* when the last batch to it was closed */
	struct shd_list linger_link;/* in net->linger while open has records */
	struct shd_list sendq;      /* closed batches waiting for credit */
	uint64_t seq_closed;        /* last sequence number given to a batch */
	uint64_t seq_sent;          /* last one posted */
	uint64_t seq_acked;         /* last one acknowledged */
	struct shd_list credit_link;/* in net->credit_wait: sendq blocked by max_inflight */
	uint32_t n_held;            /* messages in cold->held: at most SHD_NET_HELD_MAX */
	/* receiving (net/rx.c) */
	uint32_t ack_dropped;       /* records dropped since the last ACK */
	uint64_t seq_recv;          /* last batch fully placed */
	uint64_t ack_sent;          /* last seq acknowledged to it */
	struct shd_list rxq;        /* parked batches */
	struct shd_list ack_link;   /* in net->ackq */
	struct shd_list drain_link; /* in net->drainq: rxq may be placeable */
};

/* The hot part's bound: four cache lines (docs/scale.md). */
#define SHD_PEER_HOT_MAX 256u
_Static_assert(sizeof(struct shd_peer) <= SHD_PEER_HOT_MAX,
	       "struct shd_peer (the data path's part) grew past 256 bytes: "
	       "move what is not used per message to struct shd_peer_cold");

struct shd_net {
	struct shd_daemon *d;
	const struct shd_net_events *ev;
	const struct shd_net_post_events *post_ev; /* posting's news: net/tx.c's table */
	struct shd_fabric *fab;
	struct shd_rdv *rdv;        /* tcp: kept open for lookups; else NULL */
	struct shd_auth *auth;      /* the cluster key; NULL: peers not authenticated */
	bool by_address;            /* the fabric names senders: membership is checked
				       by address (else by the header's claim only) */
	uint64_t last_refresh_ns;   /* tcp: last check of our records in the store */
	uint64_t lookup_window_ns;  /* start of this second of address lookups */
	uint64_t lookup_spent_ns;   /* loop time they took in it (at most LOOKUP_MS) */
	bool store_lost;            /* tcp: the last check could not reach the store */
	uint64_t store_bad_seen;    /* tcp: shd_rdv_bad_records() already counted */
	struct shd_fabric_cb cb;
	struct shd_peer *peers;     /* [n_nodes]; peers[my node] unused */
	struct shd_peer_cold *colds;/* [n_nodes]: peers[i].cold == &colds[i] */
	struct shd_route route;     /* routing=direct or 2d: who is a neighbour */
	uint32_t room;              /* 2d: bytes before each pool buffer's message
				       for a FWD header (0: direct) */
	uint64_t early_bytes;       /* kept early messages of all peers (cold->early) */
	struct shd_list fwd_wait;   /* struct net_fwd: forwards waiting for a pool buffer */
	struct shd_list fwd_linger; /* peers with an open bundle, oldest first */
	uint32_t fwd_held;          /* pool buffers forwarding holds (bundles open
				       or posted) */
	uint32_t fwd_max;           /* ... at most: half the pool, so that
				       forwarded traffic never starves this
				       node's own batches */
	bool fwd_draining;          /* fwd_drain() runs (a send that fails at
				       once gives a buffer back inside it) */
	uint32_t n_nodes;
	uint64_t incarnation;
	struct shd_ev *fab_ev;      /* CQ wait fd */
	struct shd_ev *progress_ev; /* deferred progress */
	struct shd_ev *retry_ev;    /* queued sends need a retry */
	struct shd_ev *linger_ev;
	struct shd_ev *ack_ev;      /* ack_delay_us: the held ACKs are due */
	bool acks_due;              /* ... so the next pass sends them all */
	struct shd_ev *hb_ev;
	uint32_t batch_cap;         /* bytes of a batch buffer */
	uint32_t inflight;          /* batches posted, not acknowledged */
	struct shd_list linger;     /* peers with open batches, oldest first */
	struct shd_list retry;      /* messages the fabric had no slot for */
	struct shd_list ackq;       /* peers owed an ACK */
	struct shd_list drainq;     /* peers whose parked batches may go on */
	struct shd_list credit_wait;/* peers whose sendq waits for max_inflight */
	struct shd_list downq;      /* PEER_FAILED peers, for the peers step */
	struct shd_list pool_waiters; /* clients waiting for a batch buffer */
	/* the buffer pool: one slab of pool_max buffers of batch_cap bytes,
	 * registered with the fabric once; pages are touched on first use */
	uint8_t *slab;
	size_t slab_bytes;
	struct net_msg *msgs;       /* [pool_max]: the header of each buffer */
	struct net_msg **pool;      /* free buffers (a stack) */
	uint32_t pool_free, pool_used_max, pool_max;
};

/* net/session.c: the session rules, a peer's address */
/* Wire warnings of every part of net/: a line now and then. */
extern struct shd_ratelimit shd_net_rl_wire;
/* A store lookup (learning an address, the tcp refresh) blocks the loop
 * for at most LOOKUP_MS; all lookups of one second together too. */
#define LOOKUP_MS 300
void shd_net_set_state(struct shd_peer *p, enum peer_state st);
/* p (UNKNOWN, DOWN or JOINING) sent a heartbeat of session tag s. */
void shd_net_join(struct shd_peer *p, uint64_t s, uint64_t incarnation);
/* The longest printable address (shd_fabric_addr_str, host:port). */
#define SHD_NET_ADDR_STR_MAX (SHD_RDV_HOST_MAX + SHD_RDV_PORT_MAX + 8)
/* Set p's names (cold->host, addr, port: NULL keeps one) and, with raw,
 * its raw address of raw_len bytes, each copied at its length; false
 * when out of memory (nothing changed). */
bool shd_net_peer_names(struct shd_peer *p, const char *host, const char *addr, const char *port,
			const void *raw, uint32_t raw_len);
/* Free p's names (the net's teardown). */
void shd_net_peer_names_free(struct shd_peer *p);
/* Its address is known (published, or learned from the store). */
bool shd_net_has_address(const struct shd_peer *p);
/* A sender not in the address vector claims to be p: look p up in the
 * store or the directory (rate-limited); true when an address was
 * learned. */
bool shd_net_learn_address(struct shd_peer *p);
/* tcp with a key: count and log the store records read without a valid
 * MAC since the last call (session.c; net.c calls it at each refresh) */
void shd_net_store_bad_records(struct shd_net *n);
/* The session rules: what to do with h (from p). */
enum shd_admit {
	SHD_ADMIT_DROP,  /* another session's, or refused: dropped (counted) */
	SHD_ADMIT_TAKE,  /* process it now */
	SHD_ADMIT_EARLY, /* of the session whose handshake is ending: keep it with
			    shd_net_early_hold() until the session is up */
};
enum shd_admit shd_net_session_admit(struct shd_peer *p, const struct shf_wire_hdr *h);
/* A message that came before its session's handshake ended (JOINING, with
 * a key; docs/protocol-wire.md, "Sessions"): buf (h->len bytes) is copied
 * and kept, within bounds (SHD_NET_EARLY_*); what does not fit is dropped,
 * counted (early_dropped), and restarts the session once it is up, so
 * that its sender reports the loss. */
void shd_net_early_hold(struct shd_peer *p, const void *buf, const struct shf_wire_hdr *h);
/* The session is up: the next kept message (len bytes at buf), in arrival
 * order, or NULL; the caller takes it as if it had just come, then frees
 * it (free()). */
struct net_early {
	struct shd_list link;
	uint32_t len;
	uint8_t buf[];
};
struct net_early *shd_net_early_next(struct shd_peer *p);
/* Drop what p kept (its session tag changed, or it went down). */
void shd_net_early_discard(struct shd_peer *p);
/* One routing per set: true when h (from p) may be taken. */
bool shd_net_routing_ok(struct shd_net *n, struct shd_peer *p, const struct shf_wire_hdr *h);
/* Put p back into the address vector so that it can be probed and rejoin. */
void shd_net_reinsert(struct shd_peer *p);

/* net/tx.c (the batches; posting is net/post.h, forwarding net/fwd.h) */
/* What posting tells the batches and forwarding (net/post.h); shd_net_open
 * sets n->post_ev to it. */
extern const struct shd_net_post_events shd_net_tx_post_events;
void shd_net_tx_ack(struct shd_peer *p, const struct shf_wire_ack *a);
void shd_net_on_linger(int fd, void *arg);
/* End of the pass's network step: close the open batches that go now (all
 * of them with linger_us 0; with linger_idle 0, those to a node with
 * nothing in flight and no batch closed within linger_us). */
void shd_net_tx_pass_end(struct shd_net *n);
/* The peer is carried out: drop, count and report what was queued for
 * it, fail its marks, return its credit. */
void shd_net_tx_down(struct shd_peer *p);
void shd_net_tx_close(struct shd_net *n);

/* net/net.c: the handlers net/open.c registers (the fabric's callbacks,
 * the CQ fd and progress events, the heartbeat timer) */
extern const struct shd_fabric_cb shd_net_fabric_cb;
void shd_net_on_fabric(int fd, void *arg);
void shd_net_on_heartbeat(int fd, void *arg);

/* net/rx.c */
int shd_net_rx_batch(struct shd_peer *p, void *buf, const struct shf_wire_hdr *h);
void shd_net_rx_drain(struct shd_peer *p);
/* The pass's network step: send the ACKs owed (all of them, or with
 * ack_delay_us only those that are due; the rest at the ACK timer). */
void shd_net_rx_acks(struct shd_net *n);
void shd_net_on_ack_timer(int fd, void *arg);
/* Drop (and count) the batches parked from p. */
void shd_net_rx_down(struct shd_peer *p);
void shd_net_rx_peer_init(struct shd_peer *p);

#endif
