/* SPDX-License-Identifier: MIT */
/*
 * daemon/daemon.h - shuffled's internal state shared by its modules.
 *
 * One thread runs everything: the loop (loop.c) calls into the control
 * sessions (session.c), the relay (relay.c), the jobs (job.c) and the
 * network (net.c).  No locks.
 */
#ifndef SHD_DAEMON_H
#define SHD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/config.h"
#include "daemon/list.h"
#include "daemon/loop.h"
#include "proto/stats.h"
#include "proto/ipc.h"
#include "proto/ring.h"

struct shd_daemon;
struct shd_job;
struct shd_peer;

/* Session states of a control connection.  One line each. */
enum shd_sess_state {
	SHD_SESS_HELLO,     /* connected, nothing said yet; expects HELLO */
	SHD_SESS_OPEN,      /* version agreed; expects REGISTER, CTL or BYE */
	SHD_SESS_WAITWORLD, /* registered, region handed over; waiting for the job's world */
	SHD_SESS_ACTIVE,    /* world complete, READY sent; data flows */
	SHD_SESS_DRAINING,  /* socket gone: relaying what it had published, then freed */
	SHD_SESS_MAX
};

/* Where a client is in the epoch protocol (see job.c). */
enum shd_epoch_state {
	SHD_EPOCH_NONE,    /* not in an epoch */
	SHD_EPOCH_P1,      /* its EPOCH mark was relayed; waiting for every rank */
	SHD_EPOCH_DELIVER, /* phase 1 done; client drains its delivery ring */
	SHD_EPOCH_P2,      /* client said phase 2; waiting for every rank */
	SHD_EPOCH_MAX
};

/* Something waiting for room in a client's delivery ring: a client whose
 * next record goes there, or a received batch parked on it (net.c). */
struct shd_waiter {
	struct shd_list link; /* in the ring owner's waiters */
	void (*wake)(struct shd_waiter *w);
};

struct shd_client {
	struct shd_daemon *d;
	uint64_t id;                /* session number, for logs and shufflectl */
	enum shd_sess_state state;
	int sock;                   /* SOCK_SEQPACKET, non-blocking */
	struct shd_ev *sock_ev;
	pid_t pid;                  /* SO_PEERCRED */
	uid_t uid;
	gid_t gid;
	uint64_t since_ns;          /* connect time */

	/* registration */
	struct shd_job *job;        /* NULL until REGISTER succeeded */
	int32_t rank;
	struct shd_ev *world_timer; /* fires if the world does not complete */
	struct shd_list job_link;   /* in job->waiting while WAITWORLD */
	bool drain_ref;             /* holds job->drainers while draining */

	/* the shared region and its doorbells */
	void *region;
	uint64_t region_bytes;
	int bell_daemon;            /* client rings: send data / delivery space */
	int bell_deliver;           /* we ring: delivery data */
	int bell_space;             /* we ring: send space */
	struct shd_ev *bell_ev;
	struct shf_ring send;       /* we consume */
	struct shf_ring deliver;    /* we produce */

	/* relay scheduling */
	struct shd_list run_link;   /* in d->runq while it has records to relay */
	struct shd_list dirty_link; /* in d->dirty while deliver has unpublished records */
	struct shd_waiter wait;     /* linked while its next record waits for room */
	bool blocked;               /* head-of-line: waiting for a delivery ring or credit */
	bool doomed;                /* cut off at the end of the relay pass (doom_why) */
	char doom_why[96];
	struct shd_list waiters;    /* shd_waiters for room in my delivery ring */

	/* flushes and epochs */
	bool mark_pending;          /* a MARK was taken; reply still owed */
	struct shd_list mark_link;  /* in d->marks once the mark can be answered */
	uint64_t mark_id;
	uint32_t mark_what;
	uint64_t mark_need;         /* remote: acks still owed for this mark (net.c) */
	uint64_t *sent_to;          /* net.c: bitmap of nodes sent to since the last mark */
	enum shd_epoch_state epoch;
	uint32_t epoch_ipc_id;      /* hdr.id of the phase 2 request */
	uint64_t epoch_id;          /* the client's id, echoed */
	uint64_t report_dead;       /* drops since the last FLUSH_DONE */
	uint64_t report_down;

	struct shd_list all_link;   /* in d->clients */
	struct shf_client_stats st;
};

/* A rank's home, in job->rank_node. */
#define SHD_NODE_NONE UINT32_MAX        /* not registered (yet) */
#define SHD_NODE_GONE (UINT32_MAX - 1u) /* was registered, has left */
#define SHD_NODE_LOST (UINT32_MAX - 2u) /* its node went down: -EHOSTDOWN */

struct shd_job {
	struct shd_list link;           /* in d->jobs */
	char name[SHF_JOB_MAX];
	uint64_t hash;                  /* FNV-1a of name: the job's id on the wire */
	uid_t uid;                      /* owner: uid of its first client */
	int32_t world;
	int32_t registered;             /* ranks registered anywhere (node known) */
	int32_t local;                  /* ranks registered on this node */
	int32_t gone;                   /* ranks that left */
	int32_t drainers;               /* departed clients still relaying their records */
	int32_t lost;                   /* ranks lost with their node (subset of gone) */
	bool ready;                     /* world complete; READY sent */
	uint32_t *rank_node;            /* [world]: node id or SHD_NODE_* */
	struct shd_client **clients;    /* [world]: local sessions, NULL elsewhere */
	struct shd_list waiting;        /* local clients in WAITWORLD */
	uint64_t created_ns;

	/* epochs: counts of ranks in each phase, summed over nodes */
	uint64_t epoch_seq;             /* epochs completed */
	int32_t p1_local, p2_local;     /* local ranks that entered */
	int32_t p1_total, p2_total;     /* all nodes (local + what peers reported) */
	bool p1_sent, p2_sent;          /* our count for the phase went to the peers */
	uint64_t *reported[2];          /* [phase-1]: bitmap of nodes whose count came */
	size_t reported_words;          /* words in each bitmap */
	uint64_t epoch_start_ns;
	struct shf_client_stats st;     /* sum of departed clients' counters */
};

struct shd_daemon {
	struct shd_config cfg;
	struct shd_loop *loop;
	uint64_t start_ns;
	bool stopping;

	int lock_fd;                    /* flock on <runtime_dir>/shuffled.lock */
	int listen_fd;
	struct shd_ev *listen_ev;
	struct shd_ev *sig_ev[4];

	/* relay */
	struct shd_ev *work_ev;         /* deferred relay pass */
	struct shd_list runq;           /* clients with records to relay */
	struct shd_list dirty;          /* clients whose delivery ring needs a publish */
	struct shd_list marks;          /* clients whose MARK reply waits for the publish */
	bool doomed;                    /* some client is to be cut off after the pass */

	struct shd_list clients;        /* every session */
	unsigned n_clients;
	uint64_t next_client_id;
	struct shd_list jobs;

	/* nodes */
	uint32_t node_id;               /* my node id (rendezvous rank) */
	uint32_t n_nodes;               /* 1 when alone */
	struct shd_net *net;            /* NULL when alone */

	struct shf_daemon_stats st;
	struct shf_client_stats totals; /* departed clients' counters */
};

/* session.c */
int shd_ctl_listen(struct shd_daemon *d);
void shd_ctl_close(struct shd_daemon *d);
void shd_client_fail(struct shd_client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int shd_client_send(struct shd_client *c, uint16_t type, uint32_t id, const void *body,
		    size_t len);
void shd_client_drained(struct shd_client *c);
void shd_client_error(struct shd_client *c, uint32_t id, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *shd_sess_state_name(enum shd_sess_state s);

/* job.c */
struct shd_job *shd_job_find(struct shd_daemon *d, const char *name);
struct shd_job *shd_job_find_hash(struct shd_daemon *d, uint64_t hash);
int shd_job_register(struct shd_daemon *d, struct shd_client *c, const char *name,
		     int32_t rank, int32_t world, char *why, size_t whylen);
/* Take c's rank out of the job (gone: it had been part of a complete
 * world).  keep_route: c keeps its job pointer to relay what it published. */
void shd_job_leave(struct shd_client *c, bool gone, bool keep_route);
void shd_job_check_ready(struct shd_job *j);
/* Find or create a job announced by another node (NULL: world conflict). */
struct shd_job *shd_job_remote(struct shd_daemon *d, const char *name, int32_t world, uint32_t uid);
/* A rank joined or left on another node; err is the epoch error if it left. */
void shd_job_remote_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, uint32_t node,
			 bool joined, int err);
void shd_job_epoch_mark(struct shd_client *c);
void shd_job_epoch_phase2(struct shd_client *c, uint32_t ipc_id, uint64_t id);
void shd_job_epoch_remote(struct shd_daemon *d, struct shd_job *j, uint32_t node, uint32_t phase,
			  int32_t count);
int shd_job_missing(const struct shd_job *j, char *buf, size_t len);
uint64_t shd_job_hash(const char *name);
void shd_job_free_all(struct shd_daemon *d);
const char *shd_epoch_state_name(enum shd_epoch_state s);

/* relay.c */
int shd_relay_init(struct shd_daemon *d);
void shd_relay_client_init(struct shd_client *c); /* lists + waiter of a new session */
void shd_relay_fini(struct shd_daemon *d);
void shd_relay_kick(struct shd_client *c);   /* c has records to relay */
void shd_relay_detach(struct shd_client *c); /* unhook c from every relay list */
void shd_relay_bell(int fd, void *arg);      /* c's bell_daemon is readable */
/* Copy one message into dst's delivery ring (published after the pass).
 * 0, -EAGAIN when the ring is full, -ESRCH when dst cannot take it. */
int shd_relay_place(struct shd_daemon *d, struct shd_client *dst, int32_t src, uint32_t type,
		    const void *data, uint32_t len);
/* Wait for room for a `len`-byte message in dst's ring.  Returns false when
 * room appeared meanwhile (retry now, w not linked). */
bool shd_relay_wait_room(struct shd_client *dst, struct shd_waiter *w, uint32_t len);
void shd_relay_mark_done(struct shd_client *c); /* remote acks for c's mark arrived */
void shd_relay_schedule(struct shd_daemon *d);  /* run a pass soon */

/* region.c */
int shd_region_new(struct shd_client *c, uint32_t ring_bytes, uint32_t max_msg, int *memfd_p);
void shd_region_free(struct shd_client *c);

/* ctlcmd.c: JSON answers for shufflectl */
void shd_client_stats_add(struct shf_client_stats *to, const struct shf_client_stats *from);
int shd_ctlcmd(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd);
void shd_dump_log(struct shd_daemon *d);

#endif
