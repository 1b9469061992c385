/* SPDX-License-Identifier: MIT */
/*
 * daemon/admin/fanout.c - cluster-wide requests through a tree of daemons
 * (fanout.h; docs/protocol-wire.md, "FAN_REQ" and "FAN_ANS").
 *
 * A pending request, on any node, is a struct fan_req: this node's own
 * answer and the merged answers of the children so far ("nodes"), the
 * nodes known to have none ("missing"), and one struct fan_child per
 * child with the answer it is sending in fragments.  A request ends in
 * fan_step() only (the module's timer): when every child answered (or was
 * given up) it is marked ready and the timer is armed for now; otherwise
 * at its deadline, when the children still owing an answer are "silent"
 * and their subtrees "unreached".  The root then hands the document to
 * ops->done; any other node sends it to its parent as FAN_ANS fragments.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/fabric.h" /* SHD_FABRIC_SMALL */
#include "daemon/admin/fanout.h"
#include "daemon/list.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/net/net.h"
#include "daemon/net/tx.h"
#include "proto/wire.h"

#define NO_PARENT UINT32_MAX

struct fan_child {
	uint32_t node;
	uint32_t first, count; /* its subtree: req->targets[first .. first + count) */
	bool done;             /* answered, or given up (listed in missing) */
	uint8_t *buf;          /* its answer being reassembled (total bytes) */
	uint32_t got, total;
};

struct fan_req {
	struct shd_list link;         /* in fo->reqs */
	uint64_t req_id;
	uint32_t origin;              /* the root */
	uint32_t parent;              /* who gets our answer; NO_PARENT: the root is us */
	uint64_t cookie;              /* root: for ops->done */
	uint32_t tag;
	uint32_t fanout;
	uint32_t timeout_ms;          /* root: as asked */
	uint64_t start_ns, deadline_ns;
	json_t *nodes, *missing;      /* the answer so far */
	uint32_t *sub, nsub;          /* the subtree we were given (itself excluded) */
	uint32_t *targets, ntargets;  /* those of sub we see up, sorted */
	struct fan_child *kids;
	uint32_t nkids, pending;      /* children; those not done */
	bool ready;                   /* every child done: finish at the next step */
	char cmd[SHF_WIRE_FAN_CMD_MAX];
};

struct shd_fanout {
	struct shd_daemon *d;
	const struct shd_fanout_ops *ops;
	struct shd_ev *timer;         /* fan_step: the one place requests end */
	struct shd_list reqs;
	uint32_t n_reqs;
	uint64_t next_id;
};

static struct shd_ratelimit rl_fan = SHD_RATELIMIT_INIT(1000, 5);

static void key_of(uint32_t node, char *buf, size_t n)
{
	snprintf(buf, n, "%" PRIu32, node);
}

static void set_missing(struct shd_daemon *d, struct fan_req *q, uint32_t node,
			const char *state, int64_t via)
{
	char k[16];
	key_of(node, k, sizeof(k));
	json_t *o = json_pack("{s:s}", "state", state);
	if (o && via >= 0)
		json_object_set_new(o, "via", json_integer(via));
	/* a silent member keeps its name in the tables */
	const char *host = shd_net_peer_host(d, node);
	if (o && host)
		json_object_set_new(o, "host", json_string(host));
	json_object_set_new(q->missing, k, o ? o : json_null());
}

/* Child c is given up: c itself has state, its subtree "unreached". */
static void give_up(struct shd_fanout *fo, struct fan_req *q, struct fan_child *c,
		    const char *state)
{
	if (c->done)
		return;
	c->done = true;
	free(c->buf);
	c->buf = NULL;
	set_missing(fo->d, q, c->node, state, -1);
	for (uint32_t i = 0; i < c->count; i++)
		set_missing(fo->d, q, q->targets[c->first + i], "unreached", c->node);
	if (--q->pending == 0) {
		q->ready = true;
		shd_ev_arm(fo->timer, 0);
	}
}

static void arm(struct shd_fanout *fo)
{
	uint64_t now = shd_now_ns(), first = UINT64_MAX;
	const struct shd_list *p;
	for (p = fo->reqs.next; p != &fo->reqs; p = p->next) {
		const struct fan_req *q = shd_container_of(p, struct fan_req, link);
		uint64_t t = q->ready ? now : q->deadline_ns;
		if (t < first)
			first = t;
	}
	if (first == UINT64_MAX)
		shd_ev_disarm(fo->timer);
	else
		shd_ev_arm(fo->timer, first > now ? (first - now + 999) / 1000 : 0);
}

static void req_free(struct fan_req *q)
{
	if (!q)
		return;
	for (uint32_t i = 0; i < q->nkids; i++)
		free(q->kids[i].buf);
	free(q->kids);
	free(q->sub);
	free(q->targets);
	json_decref(q->nodes);
	json_decref(q->missing);
	free(q);
}

/* Send the request to child c (its subtree: targets[first, first+count)). */
static int send_req(struct shd_fanout *fo, struct fan_req *q, const struct fan_child *c,
		    const char *args, uint32_t args_len, uint32_t uid, uint32_t budget_ms)
{
	struct shd_daemon *d = fo->d;
	struct shf_wire_fan_req r = {
		.req_id = q->req_id, .origin = q->origin, .uid = uid, .budget_ms = budget_ms,
		.fanout = q->fanout, .ntargets = c->count, .args_len = args_len, .args = args,
	};
	memcpy(r.cmd, q->cmd, sizeof(r.cmd));
	uint64_t n = shf_wire_fan_req_bytes(c->count, args_len);
	if (n > shd_net_msg_max(d))
		return -EMSGSIZE;
	uint8_t *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	long len = shf_wire_enc_fan_req(buf, n, d->node_id, c->node, d->n_nodes, &r,
					q->targets + c->first);
	int rc = len < 0 ? (int)len : shd_net_send_msg(d, c->node, buf, (size_t)len);
	free(buf);
	return rc;
}

/* The common part of a request's start, here or received: our answer,
 * the subtree split among the children, the requests sent. */
static int req_begin(struct shd_fanout *fo, struct fan_req *q, const json_t *args_v,
		     const char *args, uint32_t args_len, uint32_t uid)
{
	struct shd_daemon *d = fo->d;
	char k[16];
	q->nodes = json_object();
	q->missing = json_object();
	if (!q->nodes || !q->missing)
		return -ENOMEM;
	json_t *mine = fo->ops->answer(d, q->cmd, args_v, uid);
	if (!mine) {
		if (q->parent == NO_PARENT)
			return -EINVAL;
		mine = json_pack("{s:s}", "error", "unknown command"); /* older/newer root */
	}
	/* who asked it here: the tree's shape, visible in the answer */
	if (json_is_object(mine))
		json_object_set_new(mine, "fan_parent",
				    q->parent == NO_PARENT ? json_null() : json_integer(q->parent));
	key_of(d->node_id, k, sizeof(k));
	json_object_set_new(q->nodes, k, mine);

	/* the nodes of our subtree we see up go on; the others are listed */
	q->targets = malloc(sizeof(*q->targets) * (q->nsub ? q->nsub : 1));
	if (!q->targets)
		return -ENOMEM;
	for (uint32_t i = 0; i < q->nsub; i++) {
		const char *st = shd_net_peer_state(d, q->sub[i]);
		if (st && (!strcmp(st, "up") || !strcmp(st, "idle"))) /* idle: woken by the request */
			q->targets[q->ntargets++] = q->sub[i];
		else
			set_missing(fo->d, q, q->sub[i], st ? st : "unknown", -1);
	}
	/* at most fanout children, each with a contiguous share of the rest */
	uint32_t m = q->ntargets;
	q->nkids = m < q->fanout ? m : q->fanout;
	q->kids = calloc(q->nkids ? q->nkids : 1, sizeof(*q->kids));
	if (!q->kids)
		return -ENOMEM;
	uint64_t now = shd_now_ns();
	uint64_t left_ms = q->deadline_ns > now ? (q->deadline_ns - now) / 1000000u : 0;
	uint32_t budget = (uint32_t)(left_ms * 3 / 4);
	if (budget == 0)
		budget = 1;
	uint32_t pos = 0;
	for (uint32_t i = 0; i < q->nkids; i++) {
		uint32_t size = m / q->nkids + (i < m % q->nkids);
		struct fan_child *c = &q->kids[i];
		c->node = q->targets[pos];
		c->first = pos + 1;
		c->count = size - 1;
		pos += size;
	}
	q->pending = q->nkids;
	if (!q->pending)
		q->ready = true;
	for (uint32_t i = 0; i < q->nkids; i++) {
		struct fan_child *c = &q->kids[i];
		int r = send_req(fo, q, c, args, args_len, uid, budget);
		if (r < 0) {
			shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out %s: cannot send to node %u: %s",
				   q->cmd, c->node, strerror(-r));
			give_up(fo, q, c, "unsendable");
		}
	}
	return 0;
}

static struct fan_req *req_new(const char *cmd)
{
	struct fan_req *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	shd_list_init(&q->link);
	snprintf(q->cmd, sizeof(q->cmd), "%s", cmd);
	q->start_ns = shd_now_ns();
	return q;
}

int shd_fanout_start(struct shd_daemon *d, const char *cmd, const json_t *args, uint32_t uid,
		     uint32_t timeout_ms, uint64_t cookie, uint32_t tag)
{
	struct shd_fanout *fo = d->fanout;
	if (!fo || !shf_wire_fan_cmd_name_ok(cmd))
		return -EINVAL;
	if (fo->n_reqs >= SHD_FANOUT_PENDING_MAX)
		return -EBUSY;
	if (timeout_ms == 0)
		timeout_ms = SHD_FANOUT_TIMEOUT_MS;
	if (timeout_ms > SHF_WIRE_FAN_BUDGET_MAX)
		timeout_ms = SHF_WIRE_FAN_BUDGET_MAX;
	char *text = args ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	size_t args_len = text ? strlen(text) : 0;
	if (args_len > SHF_WIRE_FAN_ARGS_MAX) {
		free(text);
		return -EINVAL;
	}
	struct fan_req *q = req_new(cmd);
	int r = -ENOMEM;
	if (!q)
		goto fail;
	q->req_id = ++fo->next_id;
	q->origin = d->node_id;
	q->parent = NO_PARENT;
	q->cookie = cookie;
	q->tag = tag;
	q->fanout = d->cfg.fanout;
	q->timeout_ms = timeout_ms;
	q->deadline_ns = q->start_ns + (uint64_t)timeout_ms * 1000000u;
	/* every other member (a growing set's unclaimed slots are not
	 * nodes): those not up are listed by req_begin() */
	q->sub = malloc(sizeof(*q->sub) * (d->n_nodes > 1 ? d->n_nodes - 1 : 1));
	if (!q->sub)
		goto fail;
	q->nsub = 0;
	for (uint32_t i = 0; i < d->n_nodes; i++)
		if (i != d->node_id && shd_net_is_member(d, i))
			q->sub[q->nsub++] = i;
	if ((r = req_begin(fo, q, args, text, (uint32_t)args_len, uid)) < 0)
		goto fail;
	free(text);
	shd_list_add_tail(&fo->reqs, &q->link);
	fo->n_reqs++;
	arm(fo);
	return 0;
fail:
	free(text);
	req_free(q);
	return r;
}

static struct fan_req *req_find(struct shd_fanout *fo, uint32_t origin, uint64_t id)
{
	struct shd_list *p;
	for (p = fo->reqs.next; p != &fo->reqs; p = p->next) {
		struct fan_req *q = shd_container_of(p, struct fan_req, link);
		if (q->origin == origin && q->req_id == id)
			return q;
	}
	return NULL;
}

void shd_fanout_on_req(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_req *r)
{
	struct shd_fanout *fo = d->fanout;
	if (!fo)
		return;
	if (req_find(fo, r->origin, r->req_id)) {
		shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out: node %u repeated request %" PRIu64
			   " of node %u: ignored", node, r->req_id, r->origin);
		return;
	}
	if (fo->n_reqs >= SHD_FANOUT_PENDING_MAX) {
		shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out: %u requests pending, one from node %u "
			   "ignored (it will count this node silent)", fo->n_reqs, node);
		return;
	}
	json_t *args = NULL;
	if (r->args_len) {
		args = json_loadb(r->args, r->args_len, JSON_DECODE_ANY, NULL);
		if (!args) {
			shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out: request from node %u with "
				   "arguments that are not JSON: ignored", node);
			return;
		}
	}
	struct fan_req *q = req_new(r->cmd);
	if (!q)
		goto fail;
	q->req_id = r->req_id;
	q->origin = r->origin;
	q->parent = node;
	q->fanout = r->fanout;
	q->deadline_ns = q->start_ns + (uint64_t)r->budget_ms * 1000000u;
	q->nsub = r->ntargets;
	q->sub = malloc(sizeof(*q->sub) * (q->nsub ? q->nsub : 1));
	if (!q->sub)
		goto fail;
	for (uint32_t i = 0; i < q->nsub; i++)
		q->sub[i] = shf_wire_fan_target(r, i);
	if (req_begin(fo, q, args, r->args, r->args_len, r->uid) < 0)
		goto fail;
	json_decref(args);
	shd_list_add_tail(&fo->reqs, &q->link);
	fo->n_reqs++;
	arm(fo);
	return;
fail:
	shd_err("fan-out: out of memory for a request from node %u", node);
	json_decref(args);
	req_free(q);
}

/* Is node c itself or in c's subtree? (targets are sorted) */
static bool in_subtree(const struct fan_req *q, const struct fan_child *c, uint32_t node)
{
	if (node == c->node)
		return true;
	uint32_t lo = c->first, hi = c->first + c->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (q->targets[mid] == node)
			return true;
		if (q->targets[mid] < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A node id as an answer names it: decimal, no sign, no leading zero. */
static bool parse_key(const char *k, uint32_t *node)
{
	char *end;
	if (k[0] < '0' || k[0] > '9' || (k[0] == '0' && k[1]))
		return false;
	unsigned long v = strtoul(k, &end, 10);
	if (*end || v >= UINT32_MAX)
		return false;
	*node = (uint32_t)v;
	return true;
}

/* Check that every key of o names a node of c's subtree (and, for
 * missing, that every value is an object with a state string). */
static bool keys_ok(const struct fan_req *q, const struct fan_child *c, const json_t *o,
		    bool missing)
{
	const char *k;
	json_t *v;
	if (!o)
		return true;
	if (!json_is_object(o))
		return false;
	json_object_foreach((json_t *)o, k, v) {
		uint32_t node;
		if (!parse_key(k, &node) || !in_subtree(q, c, node))
			return false;
		if (missing && !json_is_string(json_object_get(v, "state")))
			return false;
	}
	return true;
}

/* c's whole answer is in: check it, merge it, mark c done. */
static void child_answered(struct shd_fanout *fo, struct fan_req *q, struct fan_child *c)
{
	json_error_t e;
	json_t *doc = json_loadb((const char *)c->buf, c->total, 0, &e);
	json_t *nodes = json_object_get(doc, "nodes"), *missing = json_object_get(doc, "missing");
	if (!json_is_object(doc) || !json_is_object(nodes) || !keys_ok(q, c, nodes, false) ||
	    !keys_ok(q, c, missing, true)) {
		shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out %s: node %u's answer is not a valid "
			   "subtree answer: dropped", q->cmd, c->node);
		json_decref(doc);
		give_up(fo, q, c, "bad_answer");
		return;
	}
	json_object_update(q->nodes, nodes);
	if (missing)
		json_object_update(q->missing, missing);
	/* anything of the subtree it did not mention */
	for (uint32_t i = 0; i <= c->count; i++) {
		uint32_t node = i ? q->targets[c->first + i - 1] : c->node;
		char k[16];
		key_of(node, k, sizeof(k));
		if (!json_object_get(nodes, k) && !(missing && json_object_get(missing, k)))
			set_missing(fo->d, q, node, "unreached", c->node);
	}
	json_decref(doc);
	free(c->buf);
	c->buf = NULL;
	c->done = true;
	if (--q->pending == 0) {
		q->ready = true;
		shd_ev_arm(fo->timer, 0);
	}
}

void shd_fanout_on_ans(struct shd_daemon *d, uint32_t node, const struct shf_wire_fan_ans *a)
{
	struct shd_fanout *fo = d->fanout;
	struct fan_req *q = fo ? req_find(fo, a->origin, a->req_id) : NULL;
	struct fan_child *c = NULL;
	for (uint32_t i = 0; q && i < q->nkids; i++)
		if (q->kids[i].node == node)
			c = &q->kids[i];
	if (!c || c->done) {
		/* late (after the deadline), or not asked of it */
		shd_debug("fan-out: an answer fragment from node %u for request %" PRIu64
			  " of node %u that nothing waits for: dropped", node, a->req_id, a->origin);
		return;
	}
	if (a->offset != c->got || (c->got && a->total != c->total)) {
		shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out %s: node %u's answer fragments are "
			   "out of order: dropped", q->cmd, node);
		give_up(fo, q, c, "bad_answer");
		return;
	}
	if (!c->buf) {
		c->buf = malloc(a->total);
		if (!c->buf) {
			shd_err("fan-out: out of memory for node %u's answer (%u bytes)", node,
				a->total);
			give_up(fo, q, c, "too_large");
			return;
		}
		c->total = a->total;
	}
	memcpy(c->buf + c->got, a->data, a->len);
	c->got += a->len;
	if (c->got == c->total)
		child_answered(fo, q, c);
}

void shd_fanout_peer_lost(struct shd_daemon *d, uint32_t node)
{
	struct shd_fanout *fo = d->fanout;
	if (!fo)
		return;
	struct shd_list *p;
	for (p = fo->reqs.next; p != &fo->reqs; p = p->next) {
		struct fan_req *q = shd_container_of(p, struct fan_req, link);
		for (uint32_t i = 0; i < q->nkids; i++)
			if (q->kids[i].node == node && !q->kids[i].done)
				give_up(fo, q, &q->kids[i], "down");
	}
}

/* Our subtree's answer to the parent, in fragments that come in order
 * (FI_ORDER_SAS, and one queue per peer). */
static void send_answer(struct shd_fanout *fo, struct fan_req *q, json_t *doc)
{
	struct shd_daemon *d = fo->d;
	char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(9));
	size_t len = text ? strlen(text) : 0;
	if (!text || len > SHF_WIRE_FAN_ANS_MAX) {
		/* above the bound: the parent learns who, not what */
		shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out %s: the answer of this subtree is %zu "
			   "bytes, above %u: sent as too_large", q->cmd, len, SHF_WIRE_FAN_ANS_MAX);
		free(text);
		json_t *o = json_object(), *m = json_object();
		char k[16];
		key_of(d->node_id, k, sizeof(k));
		json_object_set_new(m, k, json_pack("{s:s}", "state", "too_large"));
		for (uint32_t i = 0; i < q->nsub; i++) {
			key_of(q->sub[i], k, sizeof(k));
			json_object_set_new(m, k, json_pack("{s:s}", "state", "too_large"));
		}
		json_object_set_new(o, "nodes", json_object());
		json_object_set_new(o, "missing", m);
		text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
		json_decref(o);
		if (!text)
			return;
		len = strlen(text);
	}
	uint32_t piece = shd_net_msg_max(d) - SHF_WIRE_FAN_ANS_HDR;
	const uint32_t small = SHD_FABRIC_SMALL - SHF_WIRE_FAN_ANS_HDR;
	uint8_t *buf = malloc((size_t)piece + SHF_WIRE_FAN_ANS_HDR);
	size_t off = 0;
	while (buf && off < len) {
		uint32_t n = len - off < piece ? (uint32_t)(len - off) : piece;
		struct shf_wire_fan_ans a = {q->req_id, q->origin, (uint32_t)len, (uint32_t)off, n,
					     (const uint8_t *)text + off};
		long l = shf_wire_enc_fan_ans(buf, (size_t)piece + SHF_WIRE_FAN_ANS_HDR, d->node_id,
					      q->parent, d->n_nodes, &a);
		int r = l < 0 ? (int)l : shd_net_send_msg(d, q->parent, buf, (size_t)l);
		if (r == -ENOBUFS && piece > small) {
			piece = small; /* no pool buffer: the rest in small pieces */
			continue;
		}
		if (r < 0) {
			shd_log_rl(&rl_fan, SHD_LOG_WARN, "fan-out %s: cannot answer node %u: %s",
				   q->cmd, q->parent, strerror(-r));
			break;
		}
		off += n;
	}
	free(buf);
	free(text);
}

static void finish(struct shd_fanout *fo, struct fan_req *q, uint64_t now)
{
	for (uint32_t i = 0; i < q->nkids; i++)
		if (!q->kids[i].done)
			give_up(fo, q, &q->kids[i], "silent");
	json_t *doc = json_object();
	json_object_set(doc, "nodes", q->nodes);
	json_object_set(doc, "missing", q->missing);
	if (q->parent == NO_PARENT) {
		json_object_set_new(doc, "root", json_integer(fo->d->node_id));
		json_object_set_new(doc, "fanout", json_integer(q->fanout));
		json_object_set_new(doc, "timeout_ms", json_integer(q->timeout_ms));
		json_object_set_new(doc, "elapsed_ms", json_real((double)(now - q->start_ns) / 1e6));
		fo->ops->done(fo->d, q->cookie, q->tag, doc);
	} else {
		send_answer(fo, q, doc);
		json_decref(doc);
	}
}

/* The one place requests end: the ready ones and those past their deadline. */
static void fan_step(int fd, void *arg)
{
	(void)fd;
	struct shd_fanout *fo = arg;
	uint64_t now = shd_now_ns();
	struct shd_list *p = fo->reqs.next;
	while (p != &fo->reqs) {
		struct fan_req *q = shd_container_of(p, struct fan_req, link);
		p = p->next;
		if (!q->ready && now < q->deadline_ns)
			continue;
		shd_list_del(&q->link);
		fo->n_reqs--;
		finish(fo, q, now);
		req_free(q);
	}
	arm(fo);
}

int shd_fanout_open(struct shd_daemon *d, const struct shd_fanout_ops *ops)
{
	struct shd_fanout *fo = calloc(1, sizeof(*fo));
	if (!fo)
		return -ENOMEM;
	fo->d = d;
	fo->ops = ops;
	shd_list_init(&fo->reqs);
	/* ids unique per start of this daemon (and a restart gets new
	 * sessions, so nothing of an earlier start is taken anyway) */
	fo->next_id = shd_now_ns();
	fo->timer = shd_loop_timer(d->loop, fan_step, fo);
	if (!fo->timer) {
		free(fo);
		return -ENOMEM;
	}
	d->fanout = fo;
	return 0;
}

void shd_fanout_close(struct shd_daemon *d)
{
	struct shd_fanout *fo = d->fanout;
	if (!fo)
		return;
	while (!shd_list_empty(&fo->reqs)) {
		struct fan_req *q = shd_container_of(fo->reqs.next, struct fan_req, link);
		shd_list_del(&q->link);
		req_free(q);
	}
	shd_ev_free(fo->timer);
	free(fo);
	d->fanout = NULL;
}
