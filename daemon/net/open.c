/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/open.c - opening the net (net.h: shd_net_open) and its one
 * teardown (net_free(), for a failed open and for shd_net_close): the
 * rendezvous (retried while a store is down), the fabric endpoint sized
 * from the options, the address exchange, each peer's state and address,
 * the loop events with net.c's handlers, and the start-up banner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/net/net.h"
#include "daemon/net/int.h"
#include "daemon/net/post.h"

/* tcp with a cluster key: the records we publish in the store carry a
 * MAC, and those we read must (daemon/rdv/types.h, struct shd_rdv_signer) */
static void rec_mac(const void *ctx, const char *key, const void *val, size_t len,
		    uint8_t mac[SHD_RDV_MAC_BYTES])
{
	shd_auth_mac_record(ctx, key, val, len, mac);
}
static bool rec_verify(const void *ctx, const char *key, const void *val, size_t len,
		       const uint8_t mac[SHD_RDV_MAC_BYTES])
{
	return shd_auth_verify_record(ctx, key, val, len, mac);
}
static struct shd_rdv_signer rec_signer = {NULL, rec_mac, rec_verify};

/* a store that is down is waited for in steps of this, up to a minute */
#define STORE_WAIT_MS 5000

/* Opens the rendezvous. A store (tcp) may be down for a while: wait for
 * it in steps of STORE_WAIT_MS, saying why each time, for up to a
 * minute. Logs its failure. */
static int rdv_open_retry(const struct shd_config *cfg, const char *spec,
			  struct shd_rdv_self *self, struct shd_rdv **rdv_p)
{
	char err[512] = "";
	bool tcp = !strncmp(spec, "tcp://", 6);
	if (tcp)
		self->timeout_ms = STORE_WAIT_MS;
	for (int tries = 1;; tries++) {
		int r = shd_rdv_open(spec, self, rdv_p, err, sizeof(err));
		if (r == 0)
			return 0;
		bool transient = r == -ECONNREFUSED || r == -ETIMEDOUT || r == -ECONNRESET ||
				 r == -EHOSTUNREACH;
		if (!tcp || !transient || tries * STORE_WAIT_MS >= 60000) {
			shd_err("rendezvous %s%s: %s", spec,
				strcmp(cfg->rendezvous, "auto") ? "" : " (auto, under a launcher)", err);
			return r;
		}
		shd_warn("rendezvous %s: %s; still waiting for the store (%d s)", spec, err,
			 tries * STORE_WAIT_MS / 1000);
	}
}

/* A net with its lists empty and no peers yet: net_free() can undo it
 * from here on. It owns auth. */
static struct shd_net *net_new(struct shd_daemon *d, const struct shd_net_events *ev,
			       struct shd_auth *auth, uint64_t incarnation)
{
	const struct shd_config *cfg = &d->cfg;
	struct shd_net *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->d = d;
	n->ev = ev;
	n->post_ev = &shd_net_tx_post_events;
	n->auth = auth;
	n->incarnation = incarnation;
	/* 2d: every message may carry a FWD header in front */
	n->room = strcmp(cfg->routing, "2d") ? 0 : SHF_WIRE_FWD_HDR;
	n->batch_cap = SHF_WIRE_BATCH_HDR + (uint32_t)(cfg->batch_bytes > shf_wire_rec_bytes(cfg->max_msg)
						     ? cfg->batch_bytes
						     : shf_wire_rec_bytes(cfg->max_msg));
	shd_list_init(&n->linger);
	shd_list_init(&n->retry);
	shd_list_init(&n->ackq);
	shd_list_init(&n->drainq);
	shd_list_init(&n->credit_wait);
	shd_list_init(&n->downq);
	shd_list_init(&n->pool_waiters);
	shd_list_init(&n->fwd_wait);
	shd_list_init(&n->fwd_linger);
	n->cb = shd_net_fabric_cb;
	return n;
}

/* The fabric endpoint, sized for nn nodes, bound as cfg->bind says for
 * node my (-1: not known before the exchange). Logs its failure. */
static int fabric_open(struct shd_net *n, int my, uint32_t nn)
{
	const struct shd_config *cfg = &n->d->cfg;
	char err[512] = "";
	char host[320], port[32];
	if (shd_rdv_bind_split(cfg->bind, my, host, sizeof(host), port, sizeof(port)) < 0) {
		shd_err("bind '%s': bad address, or {node} with a rendezvous that does not "
			"know node ids before the exchange", cfg->bind);
		return -EINVAL;
	}
	struct shd_fabric_opts fo = {
		.provider = cfg->provider[0] ? cfg->provider : NULL,
		.node = host[0] ? host : NULL,
		.service = port[0] ? port : NULL,
		.iface = cfg->iface[0] ? cfg->iface : NULL,
		.max_nodes = nn,
		.recv_buffers = cfg->recv_buffers,
		.buf_bytes = n->batch_cap + n->room,
		/* a slot per batch in flight to the 64 busiest peers, plus room
		 * for control messages: beyond 64 peers max_inflight (256 by
		 * default) bounds batches in flight, not the peer count */
		.send_slots = cfg->peer_credits * (nn < 64 ? nn : 64) + 256,
		/* a peer has at most peer_credits batches in flight plus a few
		 * control messages: deeper rxm queues only cost memory */
		.conn_queue = 2 * cfg->peer_credits < 16 ? 16 : 2 * cfg->peer_credits,
		.mr_always = cfg->mr_local != 0,
		.release_conns = cfg->peer_idle_ms != 0,
	};
	int r = shd_fabric_open(&fo, &n->fab, err, sizeof(err));
	if (r < 0)
		shd_err("fabric endpoint (provider %s, bind '%s'): %s", cfg->provider, cfg->bind,
			err);
	return r;
}

/* Publishes our fabric address and learns everyone's. Keeps the
 * rendezvous in n->rdv when the set grows (nodes that publish later are
 * looked up), else closes it; *rdv_p is NULL on return either way
 * unless it failed. Logs its failure. */
static int exchange(struct shd_net *n, const char *spec, struct shd_rdv **rdv_p,
		    struct shd_rdv_result *res)
{
	char err[512] = "";
	uint8_t addr[SHD_FABRIC_ADDR_MAX];
	size_t alen = sizeof(addr);
	int r;
	if ((r = shd_fabric_addr(n->fab, addr, &alen)) < 0) {
		shd_err("cannot read my fabric address: %s", strerror(-r));
		return r;
	}
	if ((r = shd_rdv_exchange(*rdv_p, addr, alen, res, err, sizeof(err))) < 0) {
		shd_err("rendezvous %s: %s", spec, err);
		return r;
	}
	if (n->room && res->grows) {
		shd_err("routing=2d needs a rendezvous that fixes the node count (static, mpi, or "
			"dir with N): with rendezvous %s the grid would change as nodes join", spec);
		return -EINVAL;
	}
	if (res->grows)
		n->rdv = *rdv_p;
	else
		shd_rdv_close(*rdv_p);
	*rdv_p = NULL;
	return 0;
}

/* One peer's state before its first heartbeat (c: its cold part, zeroed);
 * false when out of memory for its name. */
static bool peer_init(struct shd_net *n, struct shd_peer *p, struct shd_peer_cold *c, uint32_t i,
		      const char *host, uint64_t now)
{
	p->net = n;
	p->node = i;
	p->cold = c;
	c->peer = p;
	if (!shd_net_peer_names(p, host, "", "", NULL, 0))
		return false;
	p->via_out = p->cold->via_in = SHD_ROUTE_NONE;
	shd_list_init(&c->early); /* (before the reset, which empties it) */
	shd_net_set_state(p, PEER_UNKNOWN); /* until its heartbeat and ours cross */
	p->last_heard_ns = now;
	shd_net_session_reset(p);
	shd_list_init(&p->linger_link);
	shd_list_init(&p->sendq);
	shd_list_init(&p->cold->held);
	shd_list_init(&p->cold->waiters);
	shd_list_init(&p->cold->marks);
	shd_list_init(&p->credit_link);
	shd_list_init(&p->cold->down_link);
	for (int k = 0; k < 2; k++) {
		shd_list_init(&p->cold->inline_ctx[k].link);
		p->cold->inline_ctx[k].peer = p;
		p->cold->inline_ctx[k].kind = NET_MSG_INLINE;
	}
	shd_net_rx_peer_init(p);
	return true;
}

/* routing=2d: the bundle state of every peer that can be a forward's next
 * hop (a row or column neighbour); none under direct routing. */
static int peers_fwd_new(struct shd_net *n)
{
	if (!n->room)
		return 0;
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		struct shd_peer *p = &n->peers[i];
		if (i == n->d->node_id || !shd_route_neighbor(&n->route, i))
			continue;
		if (!(p->fwd = calloc(1, sizeof(*p->fwd))))
			return -ENOMEM;
		p->fwd->peer = p;
		shd_list_init(&p->fwd->link);
	}
	return 0;
}

/* Peer i's address into the fabric's address vector, as the
 * rendezvous gave it; nn is what the endpoint was sized for. */
static int peer_insert(struct shd_net *n, struct shd_peer *p, const struct shd_rdv_result *res,
		       uint32_t nn)
{
	uint32_t i = p->node;
	int r;
	if (res->kind == SHD_RDV_STATIC) {
		r = shd_fabric_insert_svc(n->fab, res->nodes[i].host, res->nodes[i].port, i);
		char as[SHD_NET_ADDR_STR_MAX];
		snprintf(as, sizeof(as), "%s:%s", res->nodes[i].host, res->nodes[i].port);
		if (r >= 0 && !shd_net_peer_names(p, NULL, as, res->nodes[i].port, NULL, 0))
			r = -ENOMEM;
	} else if (res->nodes[i].addr_len == 0 || i >= nn) {
		/* dir without N: a node that claimed an id but has no live
		 * address file, or beyond what the endpoint was sized for
		 * (ids claimed after we looked): unknown, not probed */
		if (p->cold->host[0]) /* (tcp: most ids are simply not claimed yet) */
			shd_info("node %u (%s): no address known; it stays unknown", i, p->cold->host);
		return 0;
	} else {
		char as[SHD_NET_ADDR_STR_MAX];
		r = shd_fabric_insert(n->fab, res->nodes[i].addr, res->nodes[i].addr_len, i);
		shd_fabric_addr_str(n->fab, res->nodes[i].addr, res->nodes[i].addr_len, as, sizeof(as));
		if (r >= 0 && !shd_net_peer_names(p, NULL, as, NULL, res->nodes[i].addr,
						  (uint32_t)res->nodes[i].addr_len))
			r = -ENOMEM;
	}
	if (r < 0)
		shd_err("cannot add node %u (%s) to the address vector: %s", i, p->cold->host,
			strerror(-r));
	return r;
}

/* The peers the exchange found, the batch buffers and the address
 * vector. Logs its failure. */
static int peers_open(struct shd_net *n, const struct shd_rdv_result *res, uint32_t nn)
{
	struct shd_daemon *d = n->d;
	struct shd_peer *peers = calloc(res->n_nodes, sizeof(*peers));
	struct shd_peer_cold *colds = calloc(res->n_nodes, sizeof(*colds));
	if (!peers || !colds) {
		free(peers);
		free(colds);
		return -ENOMEM;
	}
	uint64_t now = shd_now_ns();
	uint32_t i;
	for (i = 0; i < res->n_nodes; i++)
		if (!peer_init(n, &peers[i], &colds[i], i, res->nodes[i].host, now))
			break;
	n->peers = peers; /* net_free() may walk them from here on */
	n->colds = colds;
	n->n_nodes = i;   /* (the peers set up) */
	if (i < res->n_nodes)
		return -ENOMEM;
	int r = peers_fwd_new(n);
	if (r < 0)
		return r;
	r = shd_net_pool_init(n);
	if (r < 0) {
		shd_err("cannot set up %llu bytes of batch buffers (batch_budget): %s",
			(unsigned long long)d->cfg.batch_budget, strerror(-r));
		return r;
	}
	for (i = 0; i < n->n_nodes; i++)
		if (i != d->node_id && (r = peer_insert(n, &n->peers[i], res, nn)) < 0)
			return r;
	return 0;
}

static int events_new(struct shd_net *n)
{
	struct shd_loop *loop = n->d->loop;
	n->fab_ev = shd_loop_fd(loop, shd_fabric_wait_fd(n->fab), shd_net_on_fabric, n);
	n->progress_ev = shd_loop_defer(loop, shd_net_on_fabric, n);
	n->retry_ev = shd_loop_timer(loop, shd_net_on_fabric, n);
	n->linger_ev = shd_loop_timer(loop, shd_net_on_linger, n);
	n->ack_ev = shd_loop_timer(loop, shd_net_on_ack_timer, n);
	n->hb_ev = shd_loop_timer(loop, shd_net_on_heartbeat, n);
	if (!n->fab_ev || !n->progress_ev || !n->retry_ev || !n->linger_ev || !n->ack_ev || !n->hb_ev)
		return -ENOMEM;
	return 0;
}

/* The start-up banner: where we are, who the peers are, and what is
 * not protected. */
static void banner(struct shd_net *n, const char *spec, const struct shd_rdv_result *res)
{
	struct shd_daemon *d = n->d;
	char me[96] = "";
	shd_fabric_addr_str(n->fab, NULL, 0, me, sizeof(me));
	shd_notice("rendezvous %s done: node %u of %u (%s), provider %s, address %s", spec,
		   d->node_id, d->n_nodes, res->nodes[d->node_id].host, shd_fabric_provider(n->fab),
		   me);
	for (uint32_t i = 0; i < n->n_nodes; i++)
		if (i != d->node_id && shd_net_has_address(&n->peers[i]))
			shd_info("peer node %u: %s %s", i, n->peers[i].cold->host, n->peers[i].cold->addr);
	if (!n->auth)
		shd_warn("peers are not authenticated (no cluster_key): any process that can "
			 "reach a member's address can join as that member; see shuffled(8)");
	else
		shd_notice("peers authenticated with the cluster key %s", d->cfg.cluster_key);
	if (!n->by_address)
		shd_warn("provider %s does not report senders: membership is checked by the "
			 "header's claim only", shd_fabric_provider(n->fab));
}

/* Undoes net_new() and whatever of shd_net_open followed it: the one
 * teardown of a net, for a failed open and for shd_net_close. */
static void net_free(struct shd_net *n)
{
	if (!n)
		return;
	shd_ev_free(n->fab_ev);
	shd_ev_free(n->progress_ev);
	shd_ev_free(n->retry_ev);
	shd_ev_free(n->linger_ev);
	shd_ev_free(n->ack_ev);
	shd_ev_free(n->hb_ev);
	for (uint32_t i = 0; i < n->n_nodes; i++)
		shd_net_rx_down(&n->peers[i]);
	shd_net_tx_close(n);
	/* the fabric drops what it still holds without callbacks; the pool's
	 * buffers (posted or not) go with the slab after it */
	shd_fabric_close(n->fab);
	shd_net_pool_fini(n);
	shd_rdv_close(n->rdv);
	shd_auth_free(n->auth);
	for (uint32_t i = 0; i < n->n_nodes; i++) {
		shd_net_early_discard(&n->peers[i]);
		shd_net_peer_names_free(&n->peers[i]);
		free(n->peers[i].fwd);
	}
	free(n->peers);
	free(n->colds);
	free(n);
}

int shd_net_open(struct shd_daemon *d, const struct shd_net_events *ev)
{
	const struct shd_config *cfg = &d->cfg;
	char err[512] = "";
	int r;
	d->node_id = 0;
	d->n_nodes = 1;
	d->net = NULL;
	if (shd_auth_init() < 0) {
		shd_err("libsodium failed to initialise");
		return -EIO;
	}
	/* the key is checked even by a daemon alone: a bad file is reported
	 * where it is configured, not when the first peer arrives */
	struct shd_auth *auth = NULL;
	if (cfg->cluster_key[0]) {
		if ((r = shd_auth_load(cfg->cluster_key, &auth, err, sizeof(err))) < 0) {
			shd_err("%s", err);
			return r;
		}
	}
	if (shd_rdv_alone(cfg->rendezvous)) {
		shd_auth_free(auth);
		return 0;
	}
	const char *spec = strcmp(cfg->rendezvous, "auto") ? cfg->rendezvous : "mpi";
	/* this start's incarnation: in every heartbeat, and in a dir file */
	uint64_t incarnation = 0;
	if (getrandom(&incarnation, sizeof(incarnation), 0) != sizeof(incarnation))
		incarnation = shd_now_ns() ^ ((uint64_t)getpid() << 32);
	incarnation |= 1u; /* never 0: 0 means "not known" */
	struct shd_rdv_self self = {cfg->node_name, cfg->bind, 0, incarnation, cfg->max_nodes,
				    auth ? &rec_signer : NULL};
	rec_signer.ctx = auth;
	struct shd_rdv *rdv = NULL;
	if ((r = rdv_open_retry(cfg, spec, &self, &rdv)) < 0) {
		shd_auth_free(auth);
		return r;
	}
	if (shd_rdv_warning(rdv))
		shd_warn("%s", shd_rdv_warning(rdv));
	int my = shd_rdv_my_node(rdv);
	uint32_t nn = shd_rdv_nodes(rdv);
	struct shd_rdv_result res = {0};
	struct shd_net *n = net_new(d, ev, auth, incarnation);
	if (!n) {
		shd_auth_free(auth);
		r = -ENOMEM;
		goto fail;
	}
	if ((r = fabric_open(n, my, nn)) < 0 || (r = exchange(n, spec, &rdv, &res)) < 0)
		goto fail;
	shd_route_init(&n->route, n->room != 0, res.n_nodes, res.my_node);
	d->node_id = res.my_node;
	d->n_nodes = res.n_nodes;
	n->by_address = shd_fabric_reports_source(n->fab);
	if ((r = peers_open(n, &res, nn)) < 0 || (r = events_new(n)) < 0)
		goto fail;
	banner(n, spec, &res);
	shd_rdv_result_fini(&res);
	d->net = n;
	shd_net_on_heartbeat(-1, n); /* the first probes now: peers meet at once */
	shd_net_kick(n);
	return 0;

fail:
	net_free(n);
	shd_rdv_result_fini(&res);
	shd_rdv_close(rdv);
	d->node_id = 0;
	d->n_nodes = 1;
	return r;
}

void shd_net_close(struct shd_daemon *d)
{
	net_free(d->net);
	d->net = NULL;
}
