/* SPDX-License-Identifier: MIT */
/*
 * daemon/admin/ctlcmd.c - answers to shufflectl: JSON documents (schema
 * "shuffle/1", docs/shufflectl.md), sent as CTL_REPLY chunks.  The same
 * document for "dump" goes to the log on SIGUSR1.
 *
 * What the asker sees depends on its uid (SO_PEERCRED, session.c): root
 * and the daemon's own uid see everything; any other user sees its own
 * jobs (owner uid) and its own client sessions in full, and of everybody
 * else's only totals (other_users: jobs, clients and their summed
 * counters), never a job name, pid or uid.  Daemon-wide counters, peers
 * and the configuration are shown to all: they name no user.
 */
#include <errno.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/admin/control.h"
#include "daemon/admin/ctlcmd.h"
#include "daemon/epoch.h"
#include "daemon/admin/fanout.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/net/net.h"
#include "daemon/stats.h"
#include "proto/ipc.h"

#define SCHEMA "shuffle/1"

/* Who asks: all, or only what uid owns. */
struct view {
	bool all;
	uid_t uid;
};

static bool sees_client(const struct view *v, const struct shd_client *c)
{
	return v->all || c->uid == v->uid;
}

static bool sees_job(const struct view *v, const struct shd_job *j)
{
	return v->all || j->uid == v->uid;
}

static json_t *u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *client_json(const struct shd_client *c)
{
	json_t *o = json_object();
	json_object_set_new(o, "id", u64(c->id));
	json_object_set_new(o, "pid", json_integer(c->pid));
	json_object_set_new(o, "uid", json_integer(c->uid));
	json_object_set_new(o, "state", json_string(shd_session_state_name(c->state)));
	json_object_set_new(o, "job", c->job ? json_string(c->job->name) : json_null());
	json_object_set_new(o, "rank", json_integer(c->job ? c->rank : -1));
	json_object_set_new(o, "epoch", json_string(shd_epoch_state_name(c->epoch)));
	json_object_set_new(o, "blocked", json_boolean(c->blocked));
	json_object_set_new(o, "connected_s",
			    json_real((double)(shd_now_ns() - c->since_ns) / 1e9));
	if (c->region) {
		json_object_set_new(o, "ring_bytes", u64(c->send.size));
		json_object_set_new(o, "send_used", u64(shf_ring_used(&c->send)));
		json_object_set_new(o, "deliver_used", u64(shf_ring_used(&c->deliver)));
		unsigned nw = 0;
		const struct shd_list *p;
		for (p = c->waiters.next; p != &c->waiters; p = p->next)
			nw++;
		json_object_set_new(o, "waiters", json_integer(nw));
		json_object_set_new(o, "mark_pending", json_boolean(c->mark_pending));
	}
	json_object_set_new(o, "stats", shd_stats_client_json(&c->st));
	return o;
}

static json_t *clients_json(struct shd_daemon *d, const struct view *v)
{
	json_t *a = json_array();
	const struct shd_list *p;
	for (p = d->clients.next; p != &d->clients; p = p->next) {
		const struct shd_client *c = shd_container_of(p, struct shd_client, all_link);
		if ((c->job || c->state == SHD_SESS_DRAINING) && sees_client(v, c))
			json_array_append_new(a, client_json(c));
	}
	return a;
}

/* The totals of what v may not see in full: other users' jobs, their
 * registered (or draining) clients, and those clients' summed counters. */
static json_t *others_json(struct shd_daemon *d, const struct view *v)
{
	unsigned n_jobs = 0, n_clients = 0;
	struct shf_client_stats sum;
	memset(&sum, 0, sizeof(sum));
	const struct shd_list *p;
	for (p = d->jobs.next; p != &d->jobs; p = p->next)
		n_jobs += !sees_job(v, shd_container_of(p, struct shd_job, link));
	for (p = d->clients.next; p != &d->clients; p = p->next) {
		const struct shd_client *c = shd_container_of(p, struct shd_client, all_link);
		if ((c->job || c->state == SHD_SESS_DRAINING) && !sees_client(v, c)) {
			n_clients++;
			shd_stats_client_add(&sum, &c->st);
		}
	}
	json_t *o = json_object();
	json_object_set_new(o, "jobs", json_integer(n_jobs));
	json_object_set_new(o, "clients", json_integer(n_clients));
	json_object_set_new(o, "stats", shd_stats_client_json(&sum));
	return o;
}

static json_t *jobs_json(struct shd_daemon *d, const struct view *v)
{
	json_t *a = json_array();
	const struct shd_list *p;
	for (p = d->jobs.next; p != &d->jobs; p = p->next) {
		const struct shd_job *j = shd_container_of(p, struct shd_job, link);
		if (!sees_job(v, j))
			continue;
		json_t *o = json_object();
		char missing[256];
		json_object_set_new(o, "name", json_string(j->name));
		json_object_set_new(o, "uid", json_integer(j->uid));
		json_object_set_new(o, "world", json_integer(j->world));
		json_object_set_new(o, "registered", json_integer(j->registered));
		json_object_set_new(o, "local", json_integer(j->local));
		json_object_set_new(o, "gone", json_integer(j->gone));
		/* of gone: ranks lost with their node (shufflectl status: failing) */
		json_object_set_new(o, "lost", json_integer(j->lost));
		json_object_set_new(o, "ready", json_boolean(j->ready));
		json_object_set_new(o, "epochs", u64(j->epoch_seq));
		json_object_set_new(o, "epoch_phase1", json_integer(shd_epoch_subtree_count(j, 1)));
		json_object_set_new(o, "epoch_phase2", json_integer(shd_epoch_subtree_count(j, 2)));
		shd_jobtab_missing(j, missing, sizeof(missing));
		json_object_set_new(o, "missing", json_string(missing));
		if (j->drained) /* shufflectl drain (control.c) */
			json_object_set_new(o, "drained_by", json_integer(j->drained_by));
		if (j->deny) {
			/* failed: another node announced it for another owner (events.c) */
			json_object_set_new(o, "conflict_node", json_integer(j->deny_node));
			json_object_set_new(o, "conflict_uid", json_integer(j->deny_uid));
		}
		/* live local clients plus those that left: this node's share */
		struct shf_client_stats sum = j->st;
		for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1))
			if (shd_jobtab_client(j, r))
				shd_stats_client_add(&sum, &shd_jobtab_client(j, r)->st);
		json_object_set_new(o, "stats", shd_stats_client_json(&sum));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *stats_json(struct shd_daemon *d)
{
	json_t *o = json_object();
	struct shf_client_stats sum = d->totals;
	const struct shd_list *p;
	for (p = d->clients.next; p != &d->clients; p = p->next)
		shd_stats_client_add(&sum, &shd_container_of(p, struct shd_client, all_link)->st);
	json_object_set_new(o, "daemon", shd_stats_daemon_json(&d->st));
	json_object_set_new(o, "clients_total", shd_stats_client_json(&sum));
	if (d->net) {
		struct shf_fabric_stats fs;
		shd_net_fabric_stats(d, &fs);
		json_object_set_new(o, "fabric", shd_stats_fabric_json(&fs));
	}
	return o;
}

static json_t *status_json(struct shd_daemon *d)
{
	json_t *o = json_object();
	unsigned n_reg = 0;
	const struct shd_list *p;
	for (p = d->clients.next; p != &d->clients; p = p->next)
		n_reg += shd_container_of(p, struct shd_client, all_link)->job != NULL;
	unsigned n_jobs = 0;
	for (p = d->jobs.next; p != &d->jobs; p = p->next)
		n_jobs++;
	json_object_set_new(o, "version", json_string(SHF_VERSION));
	json_object_set_new(o, "pid", json_integer(getpid()));
	json_object_set_new(o, "node_name", json_string(d->cfg.node_name));
	json_object_set_new(o, "node_id", json_integer(d->node_id));
	/* members, not a growing set's max_nodes slots (node_slots) */
	json_object_set_new(o, "nodes", json_integer(shd_net_members(d)));
	json_object_set_new(o, "node_slots", json_integer(d->n_nodes));
	json_object_set_new(o, "peer_auth", json_string(shd_net_auth_mode(d)));
	json_object_set_new(o, "socket", json_string(d->cfg.socket_path));
	json_object_set_new(o, "uptime_s", json_real((double)(shd_now_ns() - d->start_ns) / 1e9));
	json_object_set_new(o, "sessions", json_integer(d->n_clients));
	json_object_set_new(o, "clients", json_integer(n_reg));
	json_object_set_new(o, "jobs", json_integer(n_jobs));
	return o;
}

/* Ring occupancy of the live clients summed into o: bytes used in both
 * rings, their capacity, and the fullest ring's fill in percent. */
struct ring_fill {
	uint64_t used, size;
	double max_pct;
};

static void ring_fill_add(struct ring_fill *f, const struct shd_client *c)
{
	if (!c->region || c->doomed)
		return;
	uint64_t s = shf_ring_used(&c->send), r = shf_ring_used(&c->deliver);
	f->used += s + r;
	f->size += (uint64_t)c->send.size + c->deliver.size;
	double ps = c->send.size ? 100.0 * (double)s / c->send.size : 0;
	double pr = c->deliver.size ? 100.0 * (double)r / c->deliver.size : 0;
	if (ps > f->max_pct)
		f->max_pct = ps;
	if (pr > f->max_pct)
		f->max_pct = pr;
}

static void ring_fill_set(json_t *o, const struct ring_fill *f)
{
	json_object_set_new(o, "ring_used", u64(f->used));
	json_object_set_new(o, "ring_bytes", u64(f->size));
	json_object_set_new(o, "ring_max_pct", json_real(f->max_pct));
}

/*
 * "top": one sample of the counters shufflectl top turns into rates (two
 * samples, the difference over the difference of "now_ns"), taken in one
 * go: the node's client totals and each job this asker sees, with the ring
 * occupancy of their live sessions.  Counters are the clients' own
 * (proto/stats.h: msgs_in, bytes_in, credit_stalls, drops_*, ...) so a
 * job's rows add up to the node's.
 */
static json_t *top_json(struct shd_daemon *d, const struct view *v)
{
	json_t *o = json_object();
	struct shf_client_stats sum = d->totals;
	struct ring_fill nf = {0, 0, 0};
	unsigned n_clients = 0;
	const struct shd_list *p;
	for (p = d->clients.next; p != &d->clients; p = p->next) {
		const struct shd_client *c = shd_container_of(p, struct shd_client, all_link);
		shd_stats_client_add(&sum, &c->st);
		ring_fill_add(&nf, c);
		n_clients += c->job != NULL;
	}
	json_object_set_new(o, "node_name", json_string(d->cfg.node_name));
	json_object_set_new(o, "node_id", json_integer(d->node_id));
	json_object_set_new(o, "now_ns", u64(shd_now_ns()));
	json_t *node = json_object();
	json_object_set_new(node, "clients", json_integer(n_clients));
	json_object_set_new(node, "stats", shd_stats_client_json(&sum));
	ring_fill_set(node, &nf);
	json_object_set_new(o, "node", node);
	json_t *a = json_array();
	for (p = d->jobs.next; p != &d->jobs; p = p->next) {
		const struct shd_job *j = shd_container_of(p, struct shd_job, link);
		if (!sees_job(v, j))
			continue;
		struct shf_client_stats js = j->st;
		struct ring_fill jf = {0, 0, 0};
		for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
			const struct shd_client *c = shd_jobtab_client(j, r);
			if (!c)
				continue;
			shd_stats_client_add(&js, &c->st);
			ring_fill_add(&jf, c);
		}
		json_t *jo = json_object();
		json_object_set_new(jo, "name", json_string(j->name));
		json_object_set_new(jo, "uid", json_integer(j->uid));
		json_object_set_new(jo, "local", json_integer(j->local));
		json_object_set_new(jo, "created_ns", u64(j->created_ns));
		if (j->drained)
			json_object_set_new(jo, "drained_by", json_integer(j->drained_by));
		json_object_set_new(jo, "stats", shd_stats_client_json(&js));
		ring_fill_set(jo, &jf);
		json_array_append_new(a, jo);
	}
	json_object_set_new(o, "jobs", a);
	return o;
}

static void add_id(json_t *a, const struct view *v, const struct shd_client *c)
{
	if (sees_client(v, c))
		json_array_append_new(a, u64(c->id));
}

static json_t *relay_json(struct shd_daemon *d, const struct view *v)
{
	json_t *o = json_object();
	json_t *runq = json_array(), *dirty = json_array(), *marks = json_array();
	const struct shd_list *p;
	for (p = d->runq.next; p != &d->runq; p = p->next)
		add_id(runq, v, shd_container_of(p, struct shd_client, run_link));
	for (p = d->dirty.next; p != &d->dirty; p = p->next)
		add_id(dirty, v, shd_container_of(p, struct shd_client, dirty_link));
	for (p = d->marks.next; p != &d->marks; p = p->next)
		add_id(marks, v, shd_container_of(p, struct shd_client, mark_link));
	json_object_set_new(o, "runq", runq);
	json_object_set_new(o, "dirty", dirty);
	json_object_set_new(o, "marks", marks);
	return o;
}

static const char *const read_cmds[] = {"ping", "status", "clients", "jobs", "peers",
				       "stats", "config", "top", "dump", NULL};

static bool build_known(const char *cmd)
{
	for (const char *const *p = read_cmds; *p; p++)
		if (!strcmp(*p, cmd))
			return true;
	return false;
}

static json_t *build(struct shd_daemon *d, const char *cmd, const struct view *v)
{
	json_t *o = NULL;
	if (!strcmp(cmd, "ping")) {
		o = json_pack("{s:b,s:i,s:s,s:i}", "pong", 1, "pid", (int)getpid(), "node_name",
			      d->cfg.node_name, "node_id", (int)d->node_id);
	} else if (!strcmp(cmd, "status")) {
		o = status_json(d);
	} else if (!strcmp(cmd, "clients")) {
		o = json_object();
		json_object_set_new(o, "clients", clients_json(d, v));
	} else if (!strcmp(cmd, "jobs")) {
		o = json_object();
		json_object_set_new(o, "jobs", jobs_json(d, v));
	} else if (!strcmp(cmd, "peers")) {
		o = json_object();
		json_object_set_new(o, "peers", shd_net_json(d));
	} else if (!strcmp(cmd, "stats")) {
		o = stats_json(d);
	} else if (!strcmp(cmd, "config")) {
		o = json_object();
		json_object_set_new(o, "config", shd_config_json(&d->cfg));
	} else if (!strcmp(cmd, "top")) {
		o = top_json(d, v);
	} else if (!strcmp(cmd, "dump")) {
		o = json_object();
		json_object_set_new(o, "status", status_json(d));
		json_object_set_new(o, "stats", stats_json(d));
		json_object_set_new(o, "jobs", jobs_json(d, v));
		json_object_set_new(o, "clients", clients_json(d, v));
		json_object_set_new(o, "peers", shd_net_json(d));
		json_object_set_new(o, "relay", relay_json(d, v));
	} else {
		return NULL;
	}
	if (!v->all && (!strcmp(cmd, "clients") || !strcmp(cmd, "jobs") || !strcmp(cmd, "dump") ||
			!strcmp(cmd, "top"))) {
		/* the asker's view: its own in full, the others' totals */
		json_object_set_new(o, "view_uid", json_integer(v->uid));
		json_object_set_new(o, "other_users", others_json(d, v));
	}
	json_object_set_new(o, "schema", json_string(SCHEMA));
	json_object_set_new(o, "command", json_string(cmd));
	return o;
}

/* The asker's view: root and the daemon's own uid see everything. */
static struct view view_of(uid_t uid)
{
	struct view v = {uid == 0 || uid == geteuid(), uid};
	return v;
}

/* The control commands (control.h): one function each, request and
 * asker's uid in, answer out. */
static const struct shd_ctl_cmd control_cmds[] = {
	{"log-level", shd_control_log_level},
	{"cutoff", shd_control_cutoff},
	{"drain", shd_control_drain},
};

const struct shd_ctl_cmd *shd_ctlcmd_find(const char *cmd)
{
	for (size_t i = 0; i < sizeof(control_cmds) / sizeof(control_cmds[0]); i++)
		if (!strcmp(control_cmds[i].name, cmd))
			return &control_cmds[i];
	return NULL;
}

json_t *shd_ctlcmd_run(struct shd_daemon *d, const char *cmd, const json_t *req, uid_t uid)
{
	const struct shd_ctl_cmd *cc = shd_ctlcmd_find(cmd);
	if (!cc) {
		struct view v = view_of(uid);
		return build(d, cmd, &v);
	}
	json_t *empty = req ? NULL : json_object();
	json_t *o = cc->run(d, req ? req : empty, uid);
	json_decref(empty);
	if (o) {
		json_object_set_new(o, "schema", json_string(SCHEMA));
		json_object_set_new(o, "command", json_string(cmd));
	}
	return o;
}

/* o (taken) to c as CTL_REPLY chunks. */
static int reply(struct shd_client *c, uint32_t id, json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(o);
	if (!text) {
		shd_client_error(c, id, -ENOMEM, "out of memory");
		return 0;
	}
	/* chunks that fit a datagram; the last one says more = 0 */
	size_t len = strlen(text), off = 0;
	const size_t chunk = SHF_IPC_MAX_MSG - 64;
	static char buf[SHF_IPC_MAX_MSG];
	int r = 0;
	do {
		size_t n = len - off < chunk ? len - off : chunk;
		struct shf_ipc_ctl_reply h = {0, off + n < len};
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), text + off, n);
		r = shd_client_send(c, SHF_IPC_CTL_REPLY, id, buf, sizeof(h) + n);
		off += n;
	} while (!r && off < len);
	free(text);
	if (r)
		shd_debug("ctl reply to session %llu failed: %s", (unsigned long long)c->id,
			  strerror(-r));
	return r;
}

/* A CTL's arguments, when it has any: a JSON object (*req, NULL without
 * arguments), else the asker gets ERROR(-EINVAL) and false. */
static bool parse_args(struct shd_client *c, uint32_t id, const char *cmd, const char *args,
		       json_t **req)
{
	*req = NULL;
	if (!args)
		return true;
	json_error_t je;
	*req = json_loads(args, 0, &je);
	if (json_is_object(*req))
		return true;
	json_decref(*req);
	*req = NULL;
	shd_client_error(c, id, -EINVAL, "'%s': arguments are not a JSON object", cmd);
	return false;
}

int shd_ctlcmd(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd,
	       const char *args)
{
	json_t *req = NULL;
	if (!parse_args(c, id, cmd, args, &req))
		return 0;
	if (!shd_ctlcmd_find(cmd) && !build_known(cmd)) {
		json_decref(req);
		shd_client_error(c, id, -EINVAL, "unknown command '%s'", cmd);
		return 0;
	}
	json_t *o = shd_ctlcmd_run(d, cmd, req, c->uid);
	json_decref(req);
	if (!o) {
		shd_client_error(c, id, -ENOMEM, "out of memory");
		return 0;
	}
	json_t *err = json_object_get(o, "error");
	if (json_is_integer(err)) {
		/* refused or failed: an ERROR with the answer's message */
		int e = (int)json_integer_value(err);
		const char *msg = json_string_value(json_object_get(o, "message"));
		shd_client_error(c, id, e < 0 && e >= -4095 ? e : -EIO, "%s", msg ? msg : "failed");
		json_decref(o);
		return 0;
	}
	return reply(c, id, o);
}

/* ---- --all: the fan-out's handler and its answer (daemon/admin/fanout.h) ---- */

/* The commands --all runs on every node: these that only read, and the
 * control commands (control_cmds: each node runs control.c's function for
 * the asker's uid, if its peers are authenticated:
 * shd_control_relay_check()).  The refusal of any other names them all. */
static const char *const fan_reads[] = {"status", "peers", "jobs", "clients",
					"stats",  "ping",  "top"};
#define N_FAN_READS (sizeof(fan_reads) / sizeof(fan_reads[0]))
#define N_CONTROL_CMDS (sizeof(control_cmds) / sizeof(control_cmds[0]))

static bool fan_cmd(const char *cmd)
{
	for (size_t i = 0; i < N_FAN_READS; i++)
		if (!strcmp(fan_reads[i], cmd))
			return true;
	return shd_ctlcmd_find(cmd) != NULL;
}

/* "status, peers, ..., cutoff, drain": every command of --all. */
static void fan_cmd_list(char *buf, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < N_FAN_READS + N_CONTROL_CMDS && o < len; i++) {
		const char *name = i < N_FAN_READS ? fan_reads[i] : control_cmds[i - N_FAN_READS].name;
		int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", name);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

/* This node's answer for a request of uid (the same rule as a local
 * asker's: the uid as the root's daemon saw it, SO_PEERCRED, relayed by
 * members only: with a cluster key, authenticated ones). */
static json_t *fan_answer(struct shd_daemon *d, const char *cmd, const json_t *args, uint32_t uid)
{
	if (!fan_cmd(cmd))
		return NULL;
	json_t *o = NULL;
	if (shd_ctlcmd_find(cmd)) {
		o = shd_control_relay_check(d, cmd, (uid_t)uid);
		if (o) {
			json_object_set_new(o, "schema", json_string(SCHEMA));
			json_object_set_new(o, "command", json_string(cmd));
		} else {
			o = shd_ctlcmd_run(d, cmd, json_is_object(args) ? args : NULL, (uid_t)uid);
		}
	} else {
		struct view v = view_of((uid_t)uid);
		o = build(d, cmd, &v);
	}
	/* every node's answer says whose it is (status has it already) */
	if (o && !json_object_get(o, "node_name")) {
		json_object_set_new(o, "node_name", json_string(d->cfg.node_name));
		json_object_set_new(o, "node_id", json_integer(d->node_id));
	}
	return o;
}

/* The combined answer of a request started by session cookie's request tag. */
static void fan_done(struct shd_daemon *d, uint64_t cookie, uint32_t tag, json_t *doc)
{
	const char *cmd = NULL;
	const struct shd_list *p;
	struct shd_client *c = NULL;
	for (p = d->clients.next; p != &d->clients; p = p->next) {
		struct shd_client *x = shd_container_of(p, struct shd_client, all_link);
		if (x->id == cookie && x->sock >= 0 && x->state == SHD_SESS_OPEN)
			c = x;
	}
	if (!c) {
		/* the asker went away meanwhile */
		json_decref(doc);
		return;
	}
	/* the command from any node's answer ("command" is in each) */
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(doc, "nodes"), k, v) {
		cmd = json_string_value(json_object_get(v, "command"));
		if (cmd)
			break;
	}
	json_object_set_new(doc, "schema", json_string(SCHEMA));
	json_object_set_new(doc, "command", json_string(cmd ? cmd : "?"));
	json_object_set_new(doc, "all", json_true());
	json_object_set_new(doc, "nodes_total", json_integer(shd_net_members(d)));
	if (reply(c, tag, doc) < 0) {
		shd_client_close_sock(c);
		shd_client_reap_later(c);
	}
}

const struct shd_fanout_ops shd_ctlcmd_fanout = {
	.answer = fan_answer,
	.done = fan_done,
};

int shd_ctlcmd_all(struct shd_daemon *d, struct shd_client *c, uint32_t id, const char *cmd,
		   const char *args, uint32_t timeout_ms)
{
	if (!fan_cmd(cmd)) {
		char list[160];
		fan_cmd_list(list, sizeof(list));
		shd_client_error(c, id, -EINVAL, "'%s' is not a command for --all (%s)", cmd, list);
		return 0;
	}
	json_t *req = NULL;
	if (!parse_args(c, id, cmd, args, &req))
		return 0;
	if (shd_ctlcmd_find(cmd)) {
		/* refused here, before any node acts (counted and logged here) */
		json_t *no = shd_control_relay_check(d, cmd, c->uid);
		if (no) {
			const char *msg = json_string_value(json_object_get(no, "message"));
			shd_client_error(c, id, -EPERM, "%s", msg ? msg : "refused");
			json_decref(no);
			json_decref(req);
			return 0;
		}
	}
	int r = shd_fanout_start(d, cmd, req, (uint32_t)c->uid, timeout_ms, c->id, id);
	json_decref(req);
	if (r < 0)
		shd_client_error(c, id, r, "cannot start '%s' on every node: %s", cmd,
				 strerror(-r));
	return 0;
}

void shd_ctlcmd_dump_log(struct shd_daemon *d)
{
	const struct view all = {true, 0}; /* the log is the operator's */
	json_t *o = build(d, "dump", &all);
	char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(9)) : NULL;
	json_decref(o);
	if (!text)
		return;
	shd_notice("state dump (SIGUSR1):");
	/* one log line per line of JSON keeps journald happy */
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		shd_notice("  %s", line);
	free(text);
}
