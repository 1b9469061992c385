/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/harness.c - see harness.h.  Also the fakes of what net
 * links against but the tests do not want: the event loop (daemon/loop.h)
 * and a session's cut-off (daemon/client.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/budget.h"
#include "daemon/client.h"
#include "daemon/config.h"
#include "daemon/deliver.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/net/net.h"
#include "daemon/sched.h"
#include "proto/shm.h"
#include "tests/netunit/harness.h"

struct shd_daemon *D;
struct h_events H;
static struct h_opts O;
static struct h_client *clients[H_MAX_RANKS * 4];
static unsigned n_clients;

/* the fake peers' sessions */
static struct {
	uint64_t tag, dtag;         /* its tag; the daemon's as it knows it */
	uint64_t old_tag, old_dtag; /* before the last h_restart */
	uint64_t incarnation;
} S[H_MAX_NODES];
static uint64_t tag_gen;

/* ------------------------------------------------------------- fake loop */

enum fl_type { FL_FD, FL_TIMER, FL_DEFER, FL_SIGNAL };

struct shd_loop {
	struct shd_ev *evs; /* every event, in creation order */
};

struct shd_ev {
	struct shd_ev *next;
	struct shd_loop *loop;
	enum fl_type type;
	shd_ev_fn fn;
	void *arg;
	int fd;
	bool armed;  /* timer armed / fd watched */
	bool active; /* deferred work pending */
	uint64_t deadline_ns;
};

static struct shd_loop *the_loop;
static uint64_t fake_now = 1000000000000ull; /* 1000 s */

uint64_t shd_now_ns(void)
{
	return fake_now;
}

int shd_loop_new(struct shd_loop **loop_p)
{
	struct shd_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	the_loop = l;
	*loop_p = l;
	return 0;
}

void shd_loop_free(struct shd_loop *l)
{
	if (!l)
		return;
	CHECKF(!l->evs, "events left when the loop is freed");
	if (the_loop == l)
		the_loop = NULL;
	free(l);
}

int shd_loop_run(struct shd_loop *loop)
{
	FAIL("the tests drive the loop themselves");
}

void shd_loop_stop(struct shd_loop *loop)
{
}

static struct shd_ev *ev_new(struct shd_loop *l, enum fl_type type, int fd, shd_ev_fn fn,
			     void *arg)
{
	struct shd_ev *e = calloc(1, sizeof(*e)), **pp;
	if (!e)
		return NULL;
	e->loop = l;
	e->type = type;
	e->fd = fd;
	e->fn = fn;
	e->arg = arg;
	for (pp = &l->evs; *pp; pp = &(*pp)->next)
		;
	*pp = e;
	return e;
}

struct shd_ev *shd_loop_fd(struct shd_loop *l, int fd, shd_ev_fn fn, void *arg)
{
	struct shd_ev *e = ev_new(l, FL_FD, fd, fn, arg);
	if (e)
		e->armed = true;
	return e;
}

struct shd_ev *shd_loop_timer(struct shd_loop *l, shd_ev_fn fn, void *arg)
{
	return ev_new(l, FL_TIMER, -1, fn, arg);
}

struct shd_ev *shd_loop_defer(struct shd_loop *l, shd_ev_fn fn, void *arg)
{
	return ev_new(l, FL_DEFER, -1, fn, arg);
}

struct shd_ev *shd_loop_signal(struct shd_loop *l, int signo, shd_ev_fn fn, void *arg)
{
	struct shd_ev *e = ev_new(l, FL_SIGNAL, signo, fn, arg);
	if (e)
		e->armed = true;
	return e;
}

void shd_ev_arm(struct shd_ev *e, uint64_t usec)
{
	e->armed = true;
	e->deadline_ns = fake_now + usec * 1000u;
}

void shd_ev_disarm(struct shd_ev *e)
{
	if (e)
		e->armed = false;
}

bool shd_ev_armed(const struct shd_ev *e)
{
	return e->armed;
}

void shd_ev_activate(struct shd_ev *e)
{
	CHECK(e);
	e->active = true;
}

void shd_ev_free(struct shd_ev *e)
{
	if (!e)
		return;
	struct shd_ev **pp;
	for (pp = &e->loop->evs; *pp && *pp != e; pp = &(*pp)->next)
		;
	CHECK(*pp == e);
	*pp = e->next;
	free(e);
}

void h_run(void)
{
	for (unsigned rounds = 0;; rounds++) {
		CHECKF(rounds < 100000, "deferred events keep activating each other");
		struct shd_ev *e;
		for (e = the_loop->evs; e; e = e->next)
			if (e->active)
				break;
		if (!e && fake_n_queued() && D && D->net && D->net->fab_ev) {
			e = D->net->fab_ev; /* the CQ's fd is readable */
			e->fn(e->fd, e->arg);
			continue;
		}
		if (!e)
			return;
		e->active = false;
		e->fn(-1, e->arg);
	}
}

void h_advance_us(uint64_t us)
{
	fake_now += us * 1000u;
	for (;;) {
		struct shd_ev *due = NULL;
		for (struct shd_ev *e = the_loop->evs; e; e = e->next)
			if (e->type == FL_TIMER && e->armed && e->deadline_ns <= fake_now &&
			    (!due || e->deadline_ns < due->deadline_ns))
				due = e;
		if (!due)
			break;
		due->armed = false;
		due->fn(-1, due->arg);
	}
	h_run();
}

/* ------------------------------------------------------------- other fakes */

void shd_client_cutoff(struct shd_client *c, int err, const char *fmt, ...)
{
	FAIL("client rank %d cut off (%d): the tests never corrupt a ring", c->rank, err);
}

/* ------------------------------------------------------------- net's events */

static void ev_peer_up(struct shd_daemon *d, uint32_t node, const char *host)
{
	CHECK(d == D && node < H_MAX_NODES);
	H.seq++;
	H.peer_up[node]++;
}

static void ev_peer_lost(struct shd_daemon *d, uint32_t node)
{
	CHECK(d == D && node < H_MAX_NODES);
	H.seq++;
	H.peer_lost[node]++;
	H.peer_lost_seq[node] = H.seq;
}

static void ev_joined(struct shd_daemon *d, uint32_t node, const struct shf_wire_join *jn)
{
	H.seq++;
	H.joined++;
}

static void ev_mapped(struct shd_daemon *d, uint32_t node, const struct shf_wire_map *m)
{
	H.seq++;
	H.joined++;
}

static void ev_denied(struct shd_daemon *d, uint32_t node, const struct shf_wire_deny *dn)
{
	H.seq++;
	H.joined++;
}

static void ev_left(struct shd_daemon *d, uint32_t node, const struct shf_wire_leave *l)
{
	H.seq++;
	H.left++;
}

static void ev_epoch(struct shd_daemon *d, uint32_t node, unsigned kind, uint64_t job_hash,
		     uint64_t epoch, uint32_t phase, int32_t count)
{
	H.seq++;
	H.epoch++;
}

static void ev_drops(struct shd_daemon *d, uint64_t job_hash, int32_t src, uint32_t count,
		     int why)
{
	CHECK(d == D);
	H.seq++;
	H.drops_calls++;
	H.drops_last_seq = H.seq;
	H.drops_job = job_hash;
	CHECKF(count >= 1, "drops reported with count 0");
	if (src < 0 || src >= H_MAX_RANKS || (why != -EHOSTDOWN && why != -ESRCH)) {
		H.drops_bad++;
		return;
	}
	if (why == -EHOSTDOWN)
		H.drops_down[src] += count;
	else
		H.drops_dead[src] += count;
}

static void ev_mark_acked(struct shd_client *c, bool lost)
{
	struct h_client *hc = (struct h_client *)c; /* c is its first member */
	H.seq++;
	if (hc->acked < sizeof(hc->acked_seq) / sizeof(hc->acked_seq[0]))
		hc->acked_seq[hc->acked] = H.seq;
	hc->acked++;
	if (lost)
		hc->acked_lost++;
}

/* the fan-out is not under test here: its messages are ignored */
static void ev_fan_req(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_req *r)
{
	(void)d, (void)node, (void)r;
}

static void ev_fan_ans(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_ans *a)
{
	(void)d, (void)node, (void)a;
}

static const struct shd_net_events h_ev = {
	.peer_up = ev_peer_up,
	.peer_lost = ev_peer_lost,
	.joined = ev_joined,
	.mapped = ev_mapped,
	.denied = ev_denied,
	.left = ev_left,
	.epoch = ev_epoch,
	.drops = ev_drops,
	.mark_acked = ev_mark_acked,
	.fan_req = ev_fan_req,
	.fan_ans = ev_fan_ans,
};

/* ------------------------------------------------------------- watchdog */

static const char *volatile cur_step = "start-up";

static void on_alarm(int sig)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg),
			 "%s[%d]: FAIL: timed out (a call that never returns?) in: %s\n",
			 program_invocation_short_name, (int)getpid(), cur_step);
	if (n > 0)
		(void)!write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	_exit(1);
}

void h_watchdog(unsigned seconds)
{
	signal(SIGALRM, on_alarm);
	alarm(seconds);
}

void h_step(const char *what)
{
	cur_step = what;
}

/* ------------------------------------------------------------- set-up */

static void h_pass_fn(int fd, void *arg)
{
	H.pass_requests++; /* the tests run the pass's steps themselves */
}

struct h_opts h_defaults(void)
{
	return (struct h_opts){
		.n_nodes = 2,
		.batch_bytes = 256,
		.max_msg = 1024,
		.peer_credits = 2,
		.max_inflight = 256,
		.linger_us = 100,
	};
}

void h_open(const struct h_opts *o)
{
	CHECK(o->n_nodes >= 2 && o->n_nodes <= H_MAX_NODES);
	O = *o;
	memset(&H, 0, sizeof(H));
	shd_log_max = SHD_LOG_WARN;
	h_watchdog(20);
	D = calloc(1, sizeof(*D));
	CHECK(D);
	shd_config_defaults(&D->cfg);
	struct shd_config *cfg = &D->cfg;
	cfg->batch_bytes = o->batch_bytes;
	cfg->max_msg = o->max_msg;
	cfg->peer_credits = o->peer_credits;
	cfg->max_inflight = o->max_inflight;
	cfg->linger_us = o->linger_us;
	cfg->ack_delay_us = o->ack_delay_us;
	cfg->linger_idle = o->linger_idle;
	if (o->heartbeat_ms)
		cfg->heartbeat_ms = o->heartbeat_ms;
	if (o->peer_timeout_ms)
		cfg->peer_timeout_ms = o->peer_timeout_ms;
	CHECK(cfg->heartbeat_ms < cfg->peer_timeout_ms);
	uint32_t cap = SHF_WIRE_BATCH_HDR +
		       (uint32_t)(o->batch_bytes > shf_wire_rec_bytes(o->max_msg)
					  ? o->batch_bytes
					  : shf_wire_rec_bytes(o->max_msg));
	cfg->batch_budget = o->batch_budget ? o->batch_budget : 16ull * cap;
	snprintf(cfg->node_name, sizeof(cfg->node_name), "n0");
	if (o->cluster_key)
		snprintf(cfg->cluster_key, sizeof(cfg->cluster_key), "%s", o->cluster_key);
	snprintf(cfg->provider, sizeof(cfg->provider), "fake");
	snprintf(cfg->bind, sizeof(cfg->bind), "127.0.0.1:7000");
	size_t off = (size_t)snprintf(cfg->rendezvous, sizeof(cfg->rendezvous), "static:");
	for (uint32_t i = 0; i < o->n_nodes; i++)
		off += (size_t)snprintf(cfg->rendezvous + off, sizeof(cfg->rendezvous) - off,
					"%s127.0.0.1:%u", i ? "," : "", 7000 + i);
	shd_list_init(&D->clients);
	shd_list_init(&D->jobs);
	CHECK(shd_loop_new(&D->loop) == 0);
	CHECK(shd_sched_init(D, h_pass_fn) == 0);
	int r = shd_net_open(D, &h_ev);
	CHECKF(r == 0, "shd_net_open: %s", strerror(-r));
	CHECK(D->net && D->node_id == 0 && D->n_nodes == o->n_nodes);
	CHECK(fake_is_open());
	CHECKF(fake_mr_regions() == 1, "the batch slab is registered once");
	fake_bind(&D->net->cb, D->net);
	h_run(); /* the kick of open */
	memset(S, 0, sizeof(S));
	for (uint32_t k = 1; k < o->n_nodes; k++) {
		/* every peer was probed at once: a heartbeat of the daemon's tag,
		 * ours unknown */
		CHECKF(fake_count(k, SHF_WIRE_HEARTBEAT) == 1, "node %u: %zu probes at open", k,
		       fake_count(k, SHF_WIRE_HEARTBEAT));
		const struct fake_send *s = fake_send_at((size_t)h_last_send(k, SHF_WIRE_HEARTBEAT));
		CHECK(s->src_session != 0 && s->dst_session == 0);
		CHECK(h_peer(k)->state == PEER_UNKNOWN);
		S[k].incarnation = 0x1c0000000000ull + k;
		if (!o->manual_up)
			h_up(k);
	}
}

struct shd_net *h_net(void)
{
	return D->net;
}

struct shd_peer *h_peer(uint32_t node)
{
	CHECK(node < D->net->n_nodes);
	return &D->net->peers[node];
}

void h_close(void)
{
	shd_net_close(D);
	memset(S, 0, sizeof(S));
	CHECK(!fake_is_open());
	for (unsigned i = 0; i < n_clients; i++) {
		struct h_client *c = clients[i];
		CHECKF(!shd_list_linked(&c->c.waiters), "client rank %d still has waiters",
		       c->c.rank);
		free(c->c.sent_to);
		free(c->ctl_mem);
		free(c->data_mem);
		free(c);
	}
	n_clients = 0;
	shd_jobtab_free_all(D);
	shd_budget_fini(D);
	shd_sched_fini(D);
	shd_loop_free(D->loop);
	free(D);
	D = NULL;
}

struct shd_job *h_job(const char *name, int32_t world)
{
	CHECK(world <= H_MAX_RANKS);
	int err;
	struct shd_job *j = shd_jobtab_new(D, name, world, 1000, true, &err, NULL, 0);
	CHECK(j);
	return j;
}

void h_rank_on(struct shd_job *j, int32_t rank, uint32_t node)
{
	CHECK(rank >= 0 && rank < j->world);
	CHECK(shd_jobtab_set(D, j, rank, node, NULL, true, NULL, 0) == 0);
	j->registered++;
}

struct h_client *h_client(struct shd_job *j, int32_t rank, uint32_t ring_bytes)
{
	CHECK(n_clients < sizeof(clients) / sizeof(clients[0]));
	struct h_client *hc = calloc(1, sizeof(*hc));
	CHECK(hc);
	struct shd_client *c = &hc->c;
	c->d = D;
	c->id = ++D->next_client_id;
	c->state = SHD_SESS_ACTIVE;
	c->sock = -1;
	c->bell_daemon = c->bell_deliver = c->bell_space = -1;
	c->job = j;
	c->rank = rank;
	shd_sched_client_init(c);
	shd_list_init(&c->job_link);
	hc->ctl_mem = aligned_alloc(SHF_RING_CACHELINE, sizeof(struct shf_ring_ctl));
	hc->data_mem = aligned_alloc(SHF_RING_CACHELINE, ring_bytes);
	CHECK(hc->ctl_mem && hc->data_mem);
	memset(hc->ctl_mem, 0, sizeof(struct shf_ring_ctl));
	uint32_t max_rec = shf_ring_max_payload(ring_bytes);
	CHECK(shf_ring_init(&c->deliver, hc->ctl_mem, hc->data_mem, ring_bytes, max_rec, true) == 0);
	shf_ring_init_producer(&c->deliver);
	CHECK(shf_ring_init(&hc->cons, hc->ctl_mem, hc->data_mem, ring_bytes, max_rec, false) == 0);
	shf_ring_init_consumer(&hc->cons);
	shd_list_add_tail(&D->clients, &c->all_link);
	D->n_clients++;
	h_rank_on(j, rank, D->node_id);
	j->local++;
	CHECK(shd_jobtab_set(D, j, rank, D->node_id, c, true, NULL, 0) == 0);
	clients[n_clients++] = hc;
	return hc;
}

/* ------------------------------------------------------------- messages */

uint8_t h_pat(int32_t src, int32_t dst, uint32_t type, uint32_t i)
{
	return (uint8_t)((uint32_t)src * 31u + (uint32_t)dst * 7u + type * 13u + i);
}

void h_fill(void *buf, int32_t src, int32_t dst, uint32_t type, uint32_t len)
{
	uint8_t *b = buf;
	for (uint32_t i = 0; i < len; i++)
		b[i] = h_pat(src, dst, type, i);
}

int h_append(struct h_client *c, uint32_t node, const struct shd_job *j, int32_t dst,
	     uint32_t type, uint32_t len)
{
	static uint8_t buf[1 << 20];
	CHECK(len <= sizeof(buf));
	h_fill(buf, c->c.rank, dst, type, len);
	return shd_net_append(D, &c->c, node, j, dst, type, buf, len);
}

void h_batch_begin(struct h_batch *b, uint32_t node, uint64_t job_hash)
{
	b->node = node;
	CHECK(shf_wire_batch_begin(&b->enc, b->buf, sizeof(b->buf), node, D->node_id, job_hash) ==
	      0);
}

void h_batch_put(struct h_batch *b, int32_t dst, int32_t src, uint32_t type, uint32_t len)
{
	void *to = shf_wire_batch_add(&b->enc, dst, src, type, len);
	CHECK(to);
	h_fill(to, src, dst, type, len);
}

size_t h_batch_end(struct h_batch *b, uint64_t seq)
{
	size_t n = shf_wire_batch_end(&b->enc, seq);
	CHECK(n > 0);
	return n;
}

void h_recv_ack(uint32_t node, uint64_t acked_seq)
{
	uint8_t buf[SHF_WIRE_ACK_BYTES];
	struct shf_wire_ack a = {acked_seq, O.peer_credits, 0};
	long n = shf_wire_enc_ack(buf, sizeof(buf), node, D->node_id, &a);
	CHECK(n == SHF_WIRE_ACK_BYTES);
	CHECK(fake_inject_now(node, buf, (size_t)n) == 0);
}

void h_recv_heartbeat(uint32_t node, uint64_t incarnation)
{
	uint8_t buf[SHF_WIRE_HEARTBEAT_BYTES];
	struct shf_wire_heartbeat hb = {.time_ns = shd_now_ns(), .incarnation = incarnation};
	long n = shf_wire_enc_heartbeat(buf, sizeof(buf), node, D->node_id, &hb);
	CHECK(n == SHF_WIRE_HEARTBEAT_BYTES);
	CHECK(fake_inject_now(node, buf, (size_t)n) == 0);
}

/* ------------------------------------------------------------- sessions */

uint64_t h_new_tag(uint32_t node)
{
	return 0x7a60000000000000ull | (uint64_t)node << 32 | ++tag_gen;
}

uint64_t h_tag(uint32_t node)
{
	CHECK(node < H_MAX_NODES);
	return S[node].tag;
}

uint64_t h_dtag(uint32_t node)
{
	CHECK(node < H_MAX_NODES);
	return S[node].dtag;
}

uint64_t h_old_tag(uint32_t node)
{
	CHECK(node < H_MAX_NODES);
	return S[node].old_tag;
}

uint64_t h_old_dtag(uint32_t node)
{
	CHECK(node < H_MAX_NODES);
	return S[node].old_dtag;
}

void h_stamp(void *msg, uint64_t src_session, uint64_t dst_session)
{
	shf_wire_stamp(msg, src_session, dst_session);
}

long h_last_send(uint32_t node, unsigned kind)
{
	size_t n = fake_count(node, kind);
	return n ? fake_find(node, kind, n - 1) : -1;
}

static void set_session(uint32_t node, uint64_t tag, uint64_t dtag)
{
	S[node].tag = tag;
	S[node].dtag = dtag;
	fake_set_session(node, tag, dtag);
}

uint64_t h_up(uint32_t node)
{
	CHECK(node >= 1 && node < D->net->n_nodes);
	struct shd_peer *p = h_peer(node);
	CHECKF(p->state == PEER_UNKNOWN || p->state == PEER_DOWN || p->state == PEER_JOINING,
	       "h_up(%u): state %d", node, (int)p->state);
	if (!S[node].tag)
		set_session(node, h_new_tag(node), 0);
	if (!S[node].incarnation)
		S[node].incarnation = 0x1c0000000000ull + node;
	uint64_t ups = H.peer_up[node];
	/* 1. its heartbeat: its tag, ours unknown */
	set_session(node, S[node].tag, 0);
	size_t hbs = fake_count(node, SHF_WIRE_HEARTBEAT);
	h_recv_heartbeat(node, S[node].incarnation);
	CHECKF(p->state == PEER_JOINING, "node %u: state %d after its first heartbeat", node,
	       (int)p->state);
	CHECK(p->cold->peer_session == S[node].tag);
	/* 2. the daemon answers at once with its tag */
	CHECKF(fake_count(node, SHF_WIRE_HEARTBEAT) == hbs + 1,
	       "node %u: %zu heartbeats in reply to its first one", node,
	       fake_count(node, SHF_WIRE_HEARTBEAT) - hbs);
	struct shf_wire_hdr h;
	h_decode((size_t)h_last_send(node, SHF_WIRE_HEARTBEAT), &h);
	CHECKF(h.dst_session == S[node].tag, "node %u: the reply is for tag %llx, not %llx", node,
	       (unsigned long long)h.dst_session, (unsigned long long)S[node].tag);
	CHECK(h.src_session != 0 && h.src_session == p->cold->my_session);
	CHECK(H.peer_up[node] == ups);
	/* 3. a message with both tags: UP */
	set_session(node, S[node].tag, h.src_session);
	h_recv_heartbeat(node, S[node].incarnation);
	CHECKF(p->state == PEER_UP, "node %u: state %d after the handshake", node, (int)p->state);
	CHECK(H.peer_up[node] == ups + 1);
	CHECK(p->cold->peer_session == S[node].tag && p->cold->my_session == S[node].dtag);
	return S[node].dtag;
}

void h_restart(uint32_t node, uint64_t incarnation)
{
	CHECK(node >= 1 && node < H_MAX_NODES);
	S[node].old_tag = S[node].tag;
	S[node].old_dtag = S[node].dtag;
	S[node].incarnation = incarnation;
	set_session(node, h_new_tag(node), 0);
	h_recv_heartbeat(node, incarnation);
}

/* ------------------------------------------------------------- decoding */

void h_decode(size_t i, struct shf_wire_hdr *h)
{
	const struct fake_send *s = fake_send_at(i);
	int r = shf_wire_check(s->bytes, s->len, D->n_nodes, s->node, h);
	CHECKF(r == 0, "send %zu (%u bytes to node %u) does not check: %d", i, s->len, s->node, r);
	CHECK(h->src_node == D->node_id && h->dst_node == s->node);
}

uint32_t h_batch_records(size_t i, void (*fn)(const struct shf_wire_rec *r, void *arg), void *arg)
{
	struct shf_wire_hdr h;
	h_decode(i, &h);
	CHECK(h.kind == SHF_WIRE_BATCH);
	const struct fake_send *s = fake_send_at(i);
	struct shf_wire_iter it;
	struct shf_wire_rec rec;
	uint32_t n = 0;
	int r;
	shf_wire_iter_init(&it, s->bytes, &h, UINT32_MAX);
	uint32_t recs = 0;
	while ((r = shf_wire_iter_next(&it, &rec)) > 0) {
		/* a run (the batch was packed): each of its messages in turn */
		const uint8_t *d = rec.data;
		for (uint32_t m = 0; m < (rec.count ? rec.count : 1); m++) {
			struct shf_wire_rec one = rec;
			if (rec.count) {
				struct shf_run_item ri;
				memcpy(&ri, rec.packed ? rec.data : d, sizeof(ri));
				const uint8_t *pl = rec.packed
					? (const uint8_t *)rec.data + SHF_RUN_ITEM_BYTES +
						  m * ((ri.len + 7u) & ~7u)
					: d + SHF_RUN_ITEM_BYTES;
				one = (struct shf_wire_rec){rec.dst_rank, rec.src_rank, ri.type, ri.len,
							    0, ri.len, pl, false};
				d += shf_run_item_bytes(ri.len);
			}
			const uint8_t *p = one.data;
			for (uint32_t k = 0; k < one.len; k++)
				CHECKF(p[k] == h_pat(one.src_rank, one.dst_rank, one.type, k),
				       "batch send %zu message %u byte %u", i, n, k);
			if (fn)
				fn(&one, arg);
			n++;
		}
		recs++;
	}
	CHECK(r == 0);
	CHECK(recs == h.u.batch.count);
	return n;
}

uint32_t h_consume(struct h_client *c, uint32_t max, int32_t *src, uint32_t *type)
{
	uint32_t n = 0;
	struct shf_ring_view v;
	while (n < max) {
		int r = shf_ring_peek(&c->cons, &v);
		CHECKF(r >= 0, "delivery ring of rank %d: %d", c->c.rank, r);
		if (r == 0)
			break;
		CHECK(v.kind == SHF_REC_MSG && v.len >= SHF_MSG_HDR_BYTES);
		struct shf_msg_hdr mh;
		memcpy(&mh, v.data, sizeof(mh));
		uint32_t len = v.len - SHF_MSG_HDR_BYTES;
		for (uint32_t k = 0; k < len; k++)
			CHECKF(v.data[SHF_MSG_HDR_BYTES + k] == h_pat(mh.rank, c->c.rank, mh.type, k),
			       "rank %d: message %u (src %d type %u) byte %u", c->c.rank, n, mh.rank,
			       mh.type, k);
		if (src)
			src[n] = mh.rank;
		if (type)
			type[n] = mh.type;
		n++;
	}
	shf_ring_release(&c->cons);
	return n;
}

uint32_t h_fill_ring(struct h_client *c, uint32_t len)
{
	static uint8_t buf[1 << 16];
	CHECK(len <= sizeof(buf));
	uint32_t n = 0;
	for (;;) {
		h_fill(buf, c->c.rank, c->c.rank, 9000 + n, len);
		int r = shd_deliver_place(D, &c->c, c->c.rank, 9000 + n, buf, len);
		if (r == -EAGAIN)
			break;
		CHECK(r == 0);
		n++;
	}
	shd_deliver_publish(D);
	return n;
}

uint32_t h_pool_check(void)
{
	struct shd_net *n = D->net;
	CHECK(n->pool_free <= n->pool_max);
	uint8_t *seen = calloc(n->pool_max, 1);
	CHECK(seen);
	for (uint32_t i = 0; i < n->pool_free; i++) {
		struct net_msg *m = n->pool[i];
		CHECKF(m >= n->msgs && m < n->msgs + n->pool_max, "pool entry %u is not a buffer", i);
		size_t k = (size_t)(m - n->msgs);
		CHECKF(!seen[k], "buffer %zu is in the free pool twice", k);
		seen[k] = 1;
	}
	free(seen);
	return n->pool_free;
}
