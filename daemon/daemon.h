/* SPDX-License-Identifier: MIT */
/*
 * daemon/daemon.h - the three structs the daemon's modules share: a
 * control session (struct shd_client), a job (struct shd_job) and the
 * daemon itself (struct shd_daemon).  Functions live in each module's own
 * header; docs/design.md has the module map and the loop's order.
 *
 * One thread runs everything (no locks).  Each field names the module that
 * writes it; others only read it.
 */
#ifndef SHD_DAEMON_H
#define SHD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/config.h"
#include "daemon/list.h"
#include "daemon/loop.h"
#include "proto/ipc.h"
#include "proto/ring.h"
#include "proto/stats.h"

struct shd_daemon;
struct shd_job;
struct shd_net;
struct shd_fanout;

/* Session states of a control connection.  One line each. */
enum shd_sess_state {
	SHD_SESS_HELLO,     /* connected, nothing said yet; expects HELLO */
	SHD_SESS_OPEN,      /* version agreed; expects REGISTER, CTL or BYE */
	SHD_SESS_WAITWORLD, /* registered, region handed over; waiting for the job's world */
	SHD_SESS_ACTIVE,    /* world complete, READY sent; data flows */
	SHD_SESS_DRAINING,  /* socket gone: relaying what it had published, then freed */
	SHD_SESS_MAX
};

/* Where a client is in the epoch protocol (see epoch.c). */
enum shd_epoch_state {
	SHD_EPOCH_NONE,    /* not in an epoch */
	SHD_EPOCH_P1,      /* its EPOCH mark was relayed; waiting for every rank */
	SHD_EPOCH_DELIVER, /* phase 1 done; client drains its delivery ring */
	SHD_EPOCH_P2,      /* client said phase 2; waiting for every rank */
	SHD_EPOCH_MAX
};

/* Something waiting for room in a client's delivery ring, a peer's credit
 * or a batch buffer: a client whose next record waits (sched.c), or a
 * received batch parked on a full ring (net/rx.c). */
struct shd_waiter {
	struct shd_list link; /* in the owner's waiter list */
	void (*wake)(struct shd_waiter *w);
};

/* Where the placing of a run stands (deliver.c): items placed, and the
 * offset of the next one among the run's item bytes. */
struct shd_run_pos {
	uint32_t done;
	uint32_t off;
};

/* One control connection: an application process once registered (a
 * "client"), or shufflectl. */
struct shd_client {
	struct shd_daemon *d;
	uint64_t id;                /* session number, for logs and shufflectl */
	enum shd_sess_state state;
	int sock;                   /* SOCK_SEQPACKET, non-blocking; -1 once closed */
	struct shd_ev *sock_ev;
	pid_t pid;                  /* SO_PEERCRED */
	uid_t uid;
	gid_t gid;
	uint64_t since_ns;          /* connect time */
	/* session.c: hello_timeout_ms while HELLO, idle_timeout_ms while OPEN;
	 * freed once registered */
	struct shd_ev *idle_timer;
	bool ctl_only;              /* took a reserved_ctl slot: no REGISTER */
	bool runs;                  /* it said SHF_IPC_RUNS: its delivery ring gets runs */
	bool packed;                /* it said SHF_IPC_PACKED too: packed runs as well */

	/* registration (session.c, job.c) */
	struct shd_job *job;        /* NULL until REGISTER succeeded */
	int32_t rank;
	struct shd_ev *world_timer; /* fires if the world does not complete */
	struct shd_list job_link;   /* in job->waiting while WAITWORLD */
	bool drain_ref;             /* holds job->drainers while draining */

	/* the shared region and its doorbells (region.c) */
	void *region;
	uint64_t region_bytes;
	int bell_daemon;            /* client rings: send data / delivery space */
	int bell_deliver;           /* we ring: delivery data */
	int bell_space;             /* we ring: send space */
	struct shd_ev *bell_ev;
	struct shf_ring send;       /* we consume */
	struct shf_ring deliver;    /* we produce */

	/* relay scheduling (sched.c, deliver.c) */
	struct shd_list run_link;   /* in d->runq while it has records to relay */
	struct shd_list dirty_link; /* in d->dirty while deliver has unpublished records */
	struct shd_waiter wait;     /* linked while its next record waits for room */
	bool blocked;               /* head-of-line: waiting for a delivery ring or credit */
	struct shd_list waiters;    /* shd_waiters for room in my delivery ring */
	/* deliver.c: the run reserved last in deliver (runs only), open for
	 * more items of the same source until the publish step; rec (its
	 * payload: the run header) NULL when none.  Its length and count are
	 * kept here and written into the ring when it closes; `end` is where
	 * the next item goes, `room` how many bytes may go there. */
	struct {
		uint8_t *rec;
		uint8_t *end;
		uint32_t len;
		uint32_t count;
		uint32_t room;
		int32_t src;
	} orun;

	/* teardown (client.c queues, session.c frees at the pass's reap step) */
	bool doomed;                /* freed at the next reap; relays nothing more */
	struct shd_list doom_link;  /* in d->doomed */

	/* flushes and epochs (relay.c, epoch.c) */
	bool mark_pending;          /* a MARK was taken; reply still owed */
	struct shd_list mark_link;  /* in d->marks once the mark can be answered */
	uint64_t mark_id;
	uint32_t mark_what;
	uint64_t mark_need;         /* remote: acks still owed for this mark */
	uint64_t *sent_to;          /* net/tx.c: bitmap of nodes sent to since the last mark */
	/* the broadcast at the head of the send ring, part-done (relay.c):
	 * its next rank to consider and the nodes that got their copy, so a
	 * broadcast resumed after a full ring or missing credit reaches no
	 * rank twice */
	bool bcast_busy;
	int32_t bcast_next;
	/* the run at the head of the send ring, part-placed one item at a
	 * time into the ring of a client without runs (deliver.c) */
	struct shd_run_pos run_pos;
	uint64_t *bcast_sent;       /* [(n_nodes + 63) / 64] bits, allocated at the first */
	enum shd_epoch_state epoch;
	bool epoch_failed;          /* its epoch failed while it drained (DELIVER): its
				     * phase 2 gets the job's fail_why (epoch.c) */
	uint32_t epoch_ipc_id;      /* hdr.id of the phase 2 request */
	uint64_t epoch_id;          /* the client's id, echoed */
	uint64_t report_dead;       /* drops since the last FLUSH_DONE */
	uint64_t report_down;

	struct shd_list all_link;   /* in d->clients */
	struct shf_client_stats st;
};

/* A rank's home, in job->rank_node: a node id, or one of these.  Every
 * value >= SHD_NODE_LOST is "not on any node"; shd_node_is_real() says so. */
#define SHD_NODE_NONE UINT32_MAX        /* not registered (yet) */
#define SHD_NODE_GONE (UINT32_MAX - 1u) /* was registered, has left */
#define SHD_NODE_LOST (UINT32_MAX - 2u) /* its node went down: -EHOSTDOWN */

static inline bool shd_node_is_real(uint32_t node)
{
	return node < SHD_NODE_LOST;
}

/* One chunk of a job's rank directory: ranks [k * SHD_DIR_CHUNK, ...). */
#define SHD_DIR_SHIFT 10
#define SHD_DIR_CHUNK (1u << SHD_DIR_SHIFT)
struct shd_dir_chunk {
	uint32_t node[SHD_DIR_CHUNK];              /* node id or SHD_NODE_* */
	struct shd_client *client[SHD_DIR_CHUNK];  /* local sessions, NULL elsewhere */
};

/* Memory charged to one uid (budget.c). */
struct shd_budget_use {
	uid_t uid;
	uint64_t bytes;
};

struct shd_job {
	struct shd_list link;           /* in d->jobs */
	char name[SHF_JOB_MAX];
	uint64_t hash;                  /* FNV-1a of name: the job's id on the wire */
	uid_t uid;                      /* owner: uid of its first client */
	/* events.c: another node announced this job with another owner.  The
	 * job is failed here for good (until it ends): -EACCES to waiting
	 * ranks, epochs, flushes and registrations; received records dropped */
	int deny;                       /* 0, or -EACCES (owner), -EINVAL (world), -EEXIST */
	uint32_t deny_node;             /* the node on the other side (jobhome.c) */
	uid_t deny_uid;                 /* its owner of the job */
	int32_t deny_world;             /* its world */
	/* jobhome.c: the job's home node collects the joins of the job's nodes
	 * and confirms the world to them (docs/protocol-wire.md, "Job start") */
	uint32_t home;                  /* where the local ranks were last announced
					   (SHD_NODE_NONE: nowhere yet) */
	uint32_t homes[4];              /* every home announced to: leaves go there */
	uint8_t n_homes;
	bool join_dirty;                /* local ranks to announce at the network step */
	uint64_t join_due_ns;           /* ... not before this (registrations coalesce) */
	bool confirmed;                 /* the home confirmed the world (JOB_MAP, FINAL) */
	uint32_t *jnodes;               /* the job's other nodes once confirmed: leaves */
	uint32_t n_jnodes;
	/* jobhome.c: local ranks that left, each with its reason as computed
	 * when it left, held until leave_due_ns (a window of 10 ms from the
	 * first), then one JOB_LEAVE to each node that is to hear them; sent
	 * earlier before any epoch message of the job, a join, or its end */
	struct shf_wire_leave_ent *lv;  /* [n_lv], count 1 each, in leave order */
	uint32_t n_lv, cap_lv;
	uint64_t leave_due_ns;
	/* the window that ends this node's part goes to the home whose FINAL
	 * map came (map_home) only, which forwards it to the job's nodes
	 * (docs/protocol-wire.md, "Leaves through the home") */
	uint32_t map_home;              /* that home (SHD_NODE_NONE: no map yet) */
	uint32_t relay_home;            /* map_home while its session lasts and
					   nobody asked for leaves directly */
	bool left_direct;               /* a window went directly since the map:
					   the last goes directly too (order) */
	struct shf_wire_leave_ent *hist; /* every local rank that left once the
					   world was complete, with its reason
					   (answers JOB_LEAVE_ASK) */
	uint32_t n_hist;
	/* control.c: drained on this node by uid drained_by (shufflectl
	 * drain): its sessions were cut off with -ECANCELED, registrations
	 * here are refused with -ECANCELED until the job ends */
	bool drained;
	uid_t drained_by;
	int32_t world;
	int32_t registered;             /* ranks registered anywhere (node known) */
	int32_t local;                  /* ranks registered on this node */
	int32_t gone;                   /* ranks that left */
	int32_t drainers;               /* departed clients still relaying their records */
	int32_t lost;                   /* ranks lost with their node (subset of gone) */
	uint32_t lost_node;             /* the first node lost with ranks of it
					   (for the epoch's error text) */
	/* the culprits of its -ESRCH failures: ranks that left before any
	 * other had (each rank's own node decides it; job.c), ascending; the
	 * ranks that left after (their epochs failed, they exited) are not */
	int32_t culprit[8];
	int32_t n_culprits;             /* all of them; the first 8 are listed */
	/* a registration refused for another world size (job.c), told to the
	 * ranks that wait for the world (session.c): 0 ranks when none */
	int32_t bad_world, bad_world_rank;
	uint32_t bad_worlds;            /* such refusals */
	bool ready;                     /* world complete; READY sent */
	/* the rank directory (jobtab.c): chunks of SHD_DIR_CHUNK ranks, each
	 * allocated when one of its ranks is first known, so that memory
	 * follows the ranks that arrived, not the world a client claimed.
	 * Read through shd_jobtab_node() / shd_jobtab_client(). */
	struct shd_dir_chunk **dir;     /* [dir_chunks]: &shd_dir_empty: no rank known there */
	uint32_t dir_chunks;
	uint64_t dir_bytes;             /* charged to uid (budget.c) */
	struct shd_list waiting;        /* local clients in WAITWORLD */
	struct shd_list end_link;       /* in d->ended: may be freed at the next reap */
	uint64_t created_ns;

	/* epochs (epoch.c): a binary tree over the job's nodes (ascending
	 * node ids, the lowest the root), worked out when first needed */
	uint64_t epoch_seq;             /* epochs completed */
	int32_t p1_local, p2_local;     /* local ranks that entered */
	bool p1_sent, p2_sent;          /* our subtree's count went up (root: down) */
	bool p2_open;                   /* phase 1 complete here, phase 2 pending */
	int epoch_abort;                /* 0, or the error an abort brought: sticky */
	int fail_err;                   /* ... and its error */
	char fail_why[200];             /* why the last failed epoch failed, as its
					   first ranks were told: for the ranks that
					   were draining then (epoch_failed) */
	uint64_t abort_epoch;           /* ... for epochs from this number on */
	bool tree_known;
	uint8_t tree_nchild;
	uint32_t tree_parent;           /* SHD_NODE_NONE at the root */
	uint32_t tree_child[2];
	/* [phase-1]: the subtree counts that came up (children, at most 2;
	 * checked against the tree when it is known) */
	struct { uint32_t node; int32_t count; } up[2][2];
	uint8_t n_up[2];
	uint64_t epoch_start_ns;
	struct shf_client_stats st;     /* sum of departed clients' counters */
};

struct shd_job_events;

struct shd_daemon {
	struct shd_config cfg;
	struct shd_loop *loop;
	const struct shd_job_events *job_ev; /* job.c's up-calls (events.c), or NULL */
	uint64_t start_ns;
	bool stopping;

	int lock_fd;                    /* flock on <runtime_dir>/shuffled.lock */
	int listen_fd;
	struct shd_ev *listen_ev;
	/* out of fds (session.c): accepting pauses, this timer resumes it */
	struct shd_ev *accept_timer;
	uint32_t accept_backoff_ms;     /* the next pause; 0: not paused */
	int spare_fd;                   /* /dev/null, given up to refuse one connection */
	struct shd_ev *sig_ev[4];

	/* the pass (pass.c runs it, sched.c schedules it) */
	struct shd_ev *pass_ev;         /* deferred: one pass per loop iteration */
	struct shd_list runq;           /* clients with records to relay */
	struct shd_list dirty;          /* clients whose delivery ring needs a publish */
	struct shd_list marks;          /* clients whose MARK reply waits for the publish */
	struct shd_list doomed;         /* clients to free at the reap step */
	struct shd_list ended;          /* jobs that may be freed at the reap step */

	struct shd_list clients;        /* every session */
	unsigned n_clients;
	uint64_t next_client_id;
	struct shd_list jobs;
	struct shd_list homes;          /* jobs this node is the home of (jobhome.c) */
	uint32_t joins_dirty;           /* jobs with join_dirty set */
	uint32_t leaves_dirty;          /* jobs with leaves held (n_lv > 0) */
	uint32_t forwards_dirty;        /* home records with leaves to forward */
	struct shd_relay_pend *relays;  /* leaves sent through a home, until its
					   forward names them (jobhome.c) */
	uint32_t n_relays;
	struct shd_ev *join_timer;      /* the next join_due_ns or leave_due_ns (jobhome.c) */

	/* nodes */
	uint32_t node_id;               /* my node id (rendezvous rank) */
	uint32_t n_nodes;               /* 1 when alone */
	struct shd_net *net;            /* NULL when alone */
	struct shd_fanout *fanout;      /* cluster-wide requests (fanout.c) */

	/* memory budgets (budget.c): uids holding regions or directories */
	struct shd_budget_use *budget;
	uint32_t n_budget, cap_budget;
	uint64_t budget_total;          /* charged to uids that are not exempt */

	struct shf_daemon_stats st;
	struct shf_client_stats totals; /* departed clients' counters */
};

#endif
