/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/tcp.c - the tcp://HOST:PORT rendezvous: daemons meet through a
 * key-value store that speaks PyTorch's TCPStore protocol (ours,
 * `shuffled --store-listen`, or one a PyTorch program serves), through the
 * blocking client of rdv/store_client.c.
 *
 * Keys (all under "/shuffle/": PyTorch's Python client puts "/" before
 * every key, so store.get("shuffle/next") there reads ours):
 *   /shuffle/next       ADD counter: the next node id to hand out
 *   /shuffle/id/NAME    NAME's node id, decimal: claimed once with
 *                       COMPARE_SET("", id), so the same name gets the same
 *                       id across restarts (ids are never reused)
 *   /shuffle/node/ID    "v1 INCARNATION ADDRHEX NAME": the node's current
 *                       fabric address; a restart overwrites it
 * With a cluster key both values end in " m=HEX", the MAC of key and value
 * (sign(), unsign()): records without a valid one are ignored.
 *
 * The store is untrusted input (docs/design.md, "Threat model").  A store
 * that restarts empty would hand out ids again: every daemon compares its
 * own keys once a second (shd_rdv_refresh) and publishes them again when
 * they are gone or wrong, raising next past every id it knows, and a
 * daemon that finds the store empty, or had to wait for it, gives the
 * running set two such periods to do so before it claims an id; a claim
 * never takes an id whose node record names another name.
 *
 * The set's capacity (max_nodes) is fixed at open: node ids are below it.
 * exchange() publishes this node and reads every node published so far;
 * nodes that publish later are found with shd_rdv_lookup() when they first
 * contact this one.  A store that cannot be reached is retried until the
 * rendezvous timeout; after the exchange the store is needed only to learn
 * new nodes: running daemons do not depend on it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/errbuf.h"
#include "daemon/rdv/int.h"
#include "daemon/rdv/store_client.h"

#define TCP_DEFAULT_NODES 1024u
#define IO_MS 2000 /* bound on one store round trip during the rendezvous */

int shd_rdv_tcp_parse(struct shd_rdv *r, const char *rest, char *err, size_t errlen)
{
	const char *why = NULL;
	if (shf_addr_parse(rest, strlen(rest), SHF_ADDR_NEED_PORT, r->store_host,
			   sizeof(r->store_host), r->store_port, sizeof(r->store_port), &why) < 0) {
		shd_errf(err, errlen, "tcp://%.80s: %s (want tcp://HOST:PORT or "
				      "tcp://[IPV6]:PORT, port 1..65535)", rest, why);
		return -EINVAL;
	}
	return 0;
}

/* Connect (again) to the store, retrying until the deadline (-1: never). */
static int store_connect(struct shd_rdv *r, int64_t deadline, char *err, size_t errlen)
{
	long ns = POLL_MIN_NS;
	char last[256] = "";
	for (;;) {
		if (r->sc)
			return 0;
		int ret = shd_sc_connect(r->store_host, r->store_port, IO_MS, &r->sc, last,
					 sizeof(last));
		if (ret == 0)
			return 0;
		if (deadline >= 0 && expired(deadline)) {
			shd_errf(err, errlen, "store tcp://%s:%s not reachable: %s", r->store_host,
				 r->store_port, last);
			return ret;
		}
		backoff(&ns);
	}
}

/* A store call failed: drop the connection so that the next one reconnects. */
static int store_failed(struct shd_rdv *r, int ret)
{
	shd_sc_close(r->sc);
	r->sc = NULL;
	return ret;
}

/* With a cluster key: "VALUE m=HEX" where HEX is the MAC of key and VALUE
 * (types.h, struct shd_rdv_signer); without: VALUE. */
static void sign(const struct shd_rdv *r, const char *key, const char *val, char *out,
		 size_t cap)
{
	if (!r->signer) {
		snprintf(out, cap, "%s", val);
		return;
	}
	uint8_t mac[SHD_RDV_MAC_BYTES];
	char h[2 * SHD_RDV_MAC_BYTES + 1];
	r->signer->mac(r->signer->ctx, key, val, strlen(val), mac);
	for (size_t i = 0; i < sizeof(mac); i++)
		snprintf(h + 2 * i, 3, "%02x", mac[i]);
	snprintf(out, cap, "%s m=%s", val, h);
}

/* The value of a record read at key, its MAC checked and cut off (in place:
 * v is NUL-terminated).  Without a key: v as it is.  -EBADMSG (counted,
 * the key kept for the log) when it has no MAC that verifies. */
static int unsign(struct shd_rdv *r, const char *key, char *v)
{
	if (!r->signer)
		return 0;
	char *m = strstr(v, " m=");
	uint8_t mac[SHD_RDV_MAC_BYTES];
	bool ok = m && strlen(m + 3) == 2 * SHD_RDV_MAC_BYTES;
	for (size_t i = 0; ok && i < SHD_RDV_MAC_BYTES; i++) {
		unsigned x;
		ok = sscanf(m + 3 + 2 * i, "%2x", &x) == 1;
		mac[i] = (uint8_t)x;
	}
	if (ok) {
		*m = '\0';
		ok = r->signer->verify(r->signer->ctx, key, v, strlen(v), mac);
		if (!ok)
			*m = ' ';
	}
	if (!ok) {
		r->bad_records++;
		snprintf(r->bad_key, sizeof(r->bad_key), "%s", key);
		return -EBADMSG;
	}
	return 0;
}

static int parse_record(const char *v, size_t len, struct shd_rdv_node *node);
static int read_node(struct shd_rdv *r, uint32_t node, struct shd_rdv_node *out, char *err,
		     size_t errlen);

/* Who holds id `id` by its node record: 0 nobody else (none, or ours), 1
 * another name (*other gets it), or a store error.  A record that is not
 * one (garbage) counts as another's: the id may belong to a live node
 * whose record was damaged, and ids are plentiful. */
static int id_held(struct shd_rdv *r, uint32_t id, char *other, size_t olen, char *err,
		   size_t errlen)
{
	struct shd_rdv_node rn;
	int ret = read_node(r, id, &rn, err, errlen);
	if (ret == -ENOENT)
		return 0;
	if (ret == -EBADMSG) {
		snprintf(other, olen, "(an unreadable record)");
		return 1;
	}
	if (ret < 0)
		return ret;
	if (!strcmp(rn.host, r->name))
		return 0;
	snprintf(other, olen, "%s", rn.host);
	return 1;
}

/* The id NAME holds in the store, or a new one: never an id whose node
 * record names another name (docs/design.md, "Threat model": a store may
 * say anything).  An id claim naming another node's id is replaced by a
 * fresh id (compare-and-set from what it said), and fresh ids whose record
 * names another name are skipped. */
static int claim_id(struct shd_rdv *r, char *err, size_t errlen)
{
	char key[SHD_RDV_HOST_MAX + 32], num[24], want[24 + 4 + 2 * SHD_RDV_MAC_BYTES];
	char other[SHD_RDV_HOST_MAX];
	snprintf(key, sizeof(key), "/shuffle/id/%s", r->name);
	const char *const keys[] = {key};
	for (int tries = 0; tries < 64; tries++) {
		void *cur = NULL;
		size_t cur_len = 0;
		int64_t next = 0;
		int ret = shd_sc_check(r->sc, keys, 1, err, errlen);
		if (ret < 0)
			return store_failed(r, ret);
		if (ret == 0) { /* not claimed yet: take the next id, unless someone races us */
			ret = shd_sc_add(r->sc, "/shuffle/next", 1, &next, err, errlen);
			if (ret < 0)
				return store_failed(r, ret);
			if (next - 1 >= 0 && next - 1 < (int64_t)r->n_nodes) {
				ret = id_held(r, (uint32_t)(next - 1), other, sizeof(other), err, errlen);
				if (ret < 0)
					return ret;
				if (ret == 1) {
					snprintf(r->warning, sizeof(r->warning), "store: fresh node "
						 "id %" PRId64 " is held by %.100s (its node record): "
						 "skipped", next - 1, other);
					continue;
				}
			}
			snprintf(num, sizeof(num), "%" PRId64, next - 1);
			sign(r, key, num, want, sizeof(want));
			ret = shd_sc_compare_set(r->sc, key, "", 0, want, strlen(want), &cur,
						 &cur_len, err, errlen);
		} else {
			ret = shd_sc_get(r->sc, key, IO_MS, &cur, &cur_len, err, errlen);
		}
		if (ret < 0)
			return store_failed(r, ret);
		/* (cur: NUL-terminated past cur_len; what the store holds is
		 * kept as it is for the compare-and-set below) */
		char *plain = cur ? strdup(cur) : NULL;
		if (cur && !plain) {
			free(cur);
			return -ENOMEM;
		}
		bool signed_ok = plain && unsign(r, key, plain) == 0;
		char *end = NULL;
		long id = strtol(plain ? plain : "", &end, 10);
		bool ok = cur && cur_len > 0 && end && *end == '\0' && id >= 0;
		free(plain);
		if (plain && !signed_ok) {
			/* not ours (no MAC under the cluster key): as if it named
			 * another node's id */
			id = -1;
			snprintf(other, sizeof(other), "(a claim without a valid MAC)");
		} else if (!ok) {
			free(cur);
			shd_errf(err, errlen, "store: %s holds no node id", key);
			return -EBADMSG;
		}
		if (id >= 0 && (uint32_t)id >= r->n_nodes) {
			free(cur);
			shd_errf(err, errlen, "store: node id %ld for %s, but this set holds %u "
					      "nodes (max_nodes)", id, r->name, r->n_nodes);
			return -ENOSPC;
		}
		ret = id < 0 ? 1 : id_held(r, (uint32_t)id, other, sizeof(other), err, errlen);
		if (ret < 0) {
			free(cur);
			return ret;
		}
		if (ret == 1) {
			/* the store names another node's id for us: a fresh one,
			 * in place of exactly what it said */
			snprintf(r->warning, sizeof(r->warning), "store: %.140s named node id %ld, "
				 "but its node record names %.100s: took another id", key, id, other);
			ret = shd_sc_add(r->sc, "/shuffle/next", 1, &next, err, errlen);
			if (ret == 0) {
				void *now = NULL;
				size_t now_len = 0;
				snprintf(num, sizeof(num), "%" PRId64, next - 1);
				sign(r, key, num, want, sizeof(want));
				ret = shd_sc_compare_set(r->sc, key, cur, cur_len, want, strlen(want),
							 &now, &now_len, err, errlen);
				free(now);
			}
			free(cur);
			if (ret < 0)
				return store_failed(r, ret);
			continue; /* read back and checked like any claim */
		}
		free(cur);
		r->my_node = (int)id;
		return 0;
	}
	shd_errf(err, errlen, "store: no free node id after 64 tries (every one named another "
			      "node)");
	return -ENOSPC;
}

int shd_rdv_tcp_open(struct shd_rdv *r, uint32_t max_nodes, char *err, size_t errlen)
{
	const char *why = NULL;
	if (shf_node_name_check(r->name, &why) < 0) {
		shd_errf(err, errlen, "tcp: node name \"%.64s\": %s", r->name, why);
		return -EINVAL;
	}
	r->n_nodes = max_nodes ? max_nodes : TCP_DEFAULT_NODES;
	if (r->n_nodes > SHD_RDV_NODES_MAX) {
		shd_errf(err, errlen, "tcp: max_nodes %u above %u", r->n_nodes, SHD_RDV_NODES_MAX);
		return -EINVAL;
	}
	int64_t deadline = r->timeout_ms < 0 ? -1 : now_ms() + r->timeout_ms;
	bool waited = shd_sc_connect(r->store_host, r->store_port, IO_MS, &r->sc, err, errlen) < 0;
	bool checked = waited;
	for (;;) {
		int ret = store_connect(r, deadline, err, errlen);
		if (ret < 0)
			return ret;
		if (!checked) {
			/* an empty store (no next): the set's first node, or a
			 * store that restarted empty under a running set */
			const char *const nk[] = {"/shuffle/next"};
			ret = shd_sc_check(r->sc, nk, 1, err, errlen);
			if (ret < 0) {
				store_failed(r, ret);
				continue;
			}
			waited = ret == 0;
			checked = true;
		}
		if (waited) {
			/* the store was down, or is empty: it may have come back
			 * empty; let the running daemons publish their ids, records
			 * and next again first (they check once a second, and each
			 * raises next past every id it knows) so that ours is not
			 * one of theirs */
			struct timespec ts = {2, 100000000};
			nanosleep(&ts, NULL);
			waited = false;
		}
		ret = claim_id(r, err, errlen);
		if (ret == 0 || ret == -EBADMSG || ret == -ENOSPC || (deadline >= 0 && expired(deadline)))
			return ret;
		/* the store went away in the middle: connect again */
	}
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* "v1 INCARNATION ADDRHEX NAME" into node; 0 or -EBADMSG. */
static int parse_record(const char *v, size_t len, struct shd_rdv_node *node)
{
	char inc[32], addr[2 * SHD_RDV_ADDR_MAX + 2], name[SHD_RDV_HOST_MAX];
	if (len > sizeof(inc) + sizeof(addr) + sizeof(name) + 8 ||
	    sscanf(v, "v1 %31s %257s %255s", inc, addr, name) != 3)
		return -EBADMSG;
	size_t al = strlen(addr);
	if (al == 0 || al % 2 || al / 2 > SHD_RDV_ADDR_MAX)
		return -EBADMSG;
	memset(node, 0, sizeof(*node));
	for (size_t i = 0; i < al / 2; i++) {
		unsigned x;
		if (sscanf(addr + 2 * i, "%2x", &x) != 1)
			return -EBADMSG;
		node->addr[i] = (uint8_t)x;
	}
	node->addr_len = (uint32_t)(al / 2);
	node->incarnation = strtoull(inc, NULL, 16);
	snprintf(node->host, sizeof(node->host), "%s", name);
	return 0;
}

/* Read node's record if the store has one: 0, -ENOENT, or an error. */
static int read_node(struct shd_rdv *r, uint32_t node, struct shd_rdv_node *out, char *err,
		     size_t errlen)
{
	char key[48];
	snprintf(key, sizeof(key), "/shuffle/node/%u", node);
	const char *const keys[] = {key};
	int ret = shd_sc_check(r->sc, keys, 1, err, errlen);
	if (ret < 0)
		return store_failed(r, ret);
	if (ret == 0)
		return -ENOENT;
	void *v = NULL;
	size_t len = 0;
	ret = shd_sc_get(r->sc, key, IO_MS, &v, &len, err, errlen);
	if (ret < 0)
		return store_failed(r, ret);
	ret = unsign(r, key, v);
	if (ret == 0)
		ret = parse_record(v, strlen(v), out);
	free(v);
	if (ret < 0)
		shd_errf(err, errlen, "store: %s is not a node record", key);
	return ret;
}

int shd_rdv_tcp_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
			 struct shd_rdv_result *out, char *err, size_t errlen)
{
	char *rec = r->record, hexaddr[2 * SHD_RDV_ADDR_MAX + 1];
	char key[48];
	int64_t deadline = r->timeout_ms < 0 ? -1 : now_ms() + r->timeout_ms;
	hex(hexaddr, addr, addr_len);
	char plain[sizeof(r->record)];
	snprintf(key, sizeof(key), "/shuffle/node/%d", r->my_node);
	snprintf(plain, sizeof(plain), "v1 %016" PRIx64 " %s %s", r->me.incarnation, hexaddr,
		 r->name);
	sign(r, key, plain, rec, sizeof(r->record));
	struct shd_rdv_node *nodes = calloc(r->n_nodes, sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	int ret;
	int64_t count = 0;
	for (;;) {
		ret = store_connect(r, deadline, err, errlen);
		if (ret < 0)
			goto fail;
		ret = shd_sc_set(r->sc, key, rec, strlen(rec), err, errlen);
		if (ret == 0)
			ret = shd_sc_add(r->sc, "/shuffle/next", 0, &count, err, errlen);
		if (ret == 0)
			break;
		store_failed(r, ret);
		if (deadline >= 0 && expired(deadline))
			goto fail;
	}
	if (count > (int64_t)r->n_nodes)
		count = r->n_nodes;
	if (count > (int64_t)r->next_floor)
		r->next_floor = (uint32_t)count;
	for (uint32_t i = 0; i < (uint32_t)count; i++) {
		if ((int)i == r->my_node)
			continue;
		ret = read_node(r, i, &nodes[i], err, errlen);
		if (ret == -ENOENT || ret == -EBADMSG)
			continue; /* claimed, never published (or garbage): unknown */
		if (ret < 0)
			goto fail; /* the store went away: the caller may retry the start */
	}
	struct shd_rdv_node *me = &nodes[r->my_node];
	snprintf(me->host, sizeof(me->host), "%s", r->name);
	memcpy(me->addr, addr, addr_len);
	me->addr_len = (uint32_t)addr_len;
	me->incarnation = r->me.incarnation;
	rdv_result_take(out, SHD_RDV_TCP, true, r->n_nodes, r->my_node, &nodes);
	/* later lookups connect afresh, with their own short timeout */
	store_failed(r, 0);
	return 0;
fail:
	free(nodes);
	return ret;
}

/* A connection to the store, made now (within timeout_ms) if there is none:
 * lookups and refreshes after the exchange connect afresh. */
static int sc_ensure(struct shd_rdv *r, int timeout_ms, char *err, size_t errlen)
{
	if (r->sc)
		return 0;
	int ret = shd_sc_connect(r->store_host, r->store_port, timeout_ms, &r->sc, err, errlen);
	if (ret < 0)
		r->sc = NULL;
	return ret;
}

int shd_rdv_tcp_lookup(struct shd_rdv *r, uint32_t node, int timeout_ms,
		       struct shd_rdv_node *out, char *err, size_t errlen)
{
	if (node >= r->n_nodes)
		return -ENOENT;
	int ret = sc_ensure(r, timeout_ms, err, errlen);
	if (ret < 0)
		return ret;
	ret = read_node(r, node, out, err, errlen);
	if (ret == 0 && node + 1 > r->next_floor)
		r->next_floor = node + 1;
	return ret;
}

void shd_rdv_tcp_close(struct shd_rdv *r)
{
	shd_sc_close(r->sc);
	r->sc = NULL;
}

/* Get key's value as a string: 1 (*v, NUL-terminated, to free), 0 absent,
 * or a store error. */
static int get_opt(struct shd_rdv *r, const char *key, char **v, char *err, size_t errlen)
{
	const char *const keys[] = {key};
	int ret = shd_sc_check(r->sc, keys, 1, err, errlen);
	if (ret <= 0)
		return ret;
	void *val = NULL;
	size_t len = 0;
	ret = shd_sc_get(r->sc, key, IO_MS, &val, &len, err, errlen);
	if (ret < 0)
		return ret;
	char *s = malloc(len + 1);
	if (!s) {
		free(val);
		return -ENOMEM;
	}
	memcpy(s, val, len);
	s[len] = '\0';
	free(val);
	*v = s;
	return 1;
}

/*
 * Once a second: the store must say what this daemon is.  Its id claim
 * and node record are compared with what it published, and written again
 * when they are missing (a store that restarted empty) or say something
 * else (damaged, or overwritten by another daemon or by anyone who reaches
 * the store); /shuffle/next is raised past every id this daemon knows of,
 * so that a store that restarted empty never hands out a running node's
 * id.  0: all as published; 1: published again (gone); 2: repaired a
 * conflict (err says what was there); <0: a store error.
 */
int shd_rdv_tcp_refresh(struct shd_rdv *r, int timeout_ms, char *err, size_t errlen)
{
	char idkey[SHD_RDV_HOST_MAX + 32], nodekey[48], num[24];
	char id[24 + 4 + 2 * SHD_RDV_MAC_BYTES];
	if (r->my_node < 0 || !r->record[0])
		return 0;
	int ret = sc_ensure(r, timeout_ms, err, errlen);
	if (ret < 0)
		return ret;
	snprintf(idkey, sizeof(idkey), "/shuffle/id/%s", r->name);
	snprintf(nodekey, sizeof(nodekey), "/shuffle/node/%d", r->my_node);
	snprintf(num, sizeof(num), "%d", r->my_node);
	sign(r, idkey, num, id, sizeof(id));
	char *cur_id = NULL, *cur_rec = NULL;
	int res = 0;
	ret = get_opt(r, idkey, &cur_id, err, errlen);
	if (ret >= 0 && !(ret == 1 && !strcmp(cur_id, id))) {
		/* gone, or names another id: ours again (compare-and-set from
		 * exactly what was there) */
		void *now = NULL;
		size_t now_len = 0;
		const char *exp = ret == 1 ? cur_id : "";
		int r2 = shd_sc_compare_set(r->sc, idkey, exp, strlen(exp), id, strlen(id), &now,
					    &now_len, err, errlen);
		bool mine = r2 == 0 && now && now_len == strlen(id) && !memcmp(now, id, now_len);
		free(now);
		if (r2 < 0) {
			ret = r2;
		} else if (!mine) {
			free(cur_id);
			shd_errf(err, errlen, "store: %s changed under us: not repaired this time",
				 idkey);
			return -EEXIST;
		} else if (ret == 1) {
			shd_errf(err, errlen, "store: %s said \"%.40s\", this daemon is node %d: "
					      "conflict, repaired", idkey, cur_id, r->my_node);
			res = 2;
		} else {
			res = 1;
		}
	}
	free(cur_id);
	if (ret >= 0)
		ret = get_opt(r, nodekey, &cur_rec, err, errlen);
	if (ret >= 0 && !(ret == 1 && !strcmp(cur_rec, r->record))) {
		if (ret == 1) {
			struct shd_rdv_node rn;
			bool other = parse_record(cur_rec, strlen(cur_rec), &rn) == 0 &&
				     strcmp(rn.host, r->name);
			shd_errf(err, errlen, "store: %s %s%s%s: conflict, repaired", nodekey,
				 other ? "named another node, " : "was not this daemon's record",
				 other ? rn.host : "", other ? " (two daemons claim one id?)" : "");
			res = 2;
		} else if (!res) {
			res = 1;
		}
		ret = shd_sc_set(r->sc, nodekey, r->record, strlen(r->record), err, errlen);
	}
	free(cur_rec);
	int64_t next = 0;
	uint32_t floor = r->next_floor > (uint32_t)r->my_node + 1 ? r->next_floor
								   : (uint32_t)r->my_node + 1;
	if (ret >= 0)
		ret = shd_sc_add(r->sc, "/shuffle/next", 0, &next, err, errlen);
	if (ret >= 0 && next < (int64_t)floor) {
		ret = shd_sc_add(r->sc, "/shuffle/next", (int64_t)floor - next, &next, err, errlen);
		if (!res)
			res = 1;
	}
	if (ret < 0)
		return store_failed(r, ret);
	return res;
}

/* A store that lost our keys (restarted empty) lost the others' too: put
 * back the claim of a node this daemon knows (its id and name, from the
 * store before), unless the store has one for that name again, so that a
 * node restarting meanwhile gets its own id again.  Node records are each
 * node's own to publish. */
int shd_rdv_tcp_restore_claim(struct shd_rdv *r, uint32_t node, const char *name, char *err,
			      size_t errlen)
{
	char key[SHD_RDV_HOST_MAX + 32], id[24 + 4 + 2 * SHD_RDV_MAC_BYTES];
	const char *why = NULL;
	if (!r->sc || shf_node_name_check(name, &why) < 0)
		return 0;
	snprintf(key, sizeof(key), "/shuffle/id/%s", name);
	char num[24];
	snprintf(num, sizeof(num), "%u", node);
	sign(r, key, num, id, sizeof(id));
	void *cur = NULL;
	size_t cur_len = 0;
	int ret = shd_sc_compare_set(r->sc, key, "", 0, id, strlen(id), &cur, &cur_len, err, errlen);
	free(cur);
	if (ret < 0)
		return store_failed(r, ret);
	return 0;
}
