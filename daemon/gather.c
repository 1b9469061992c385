/* SPDX-License-Identifier: MIT */
/*
 * daemon/gather.c - a client's remote messages of one relay turn, written
 * into the batches as runs per destination rank (gather.h).
 *
 * State is static: the relay runs on the daemon's one loop thread, and a
 * gather lives within one client's turn (relay.c flushes before the turn
 * ends), so one set serves every client.  Bounds: GATHER_MSGS messages
 * (a turn's budget of records), GATHER_PAIRS destination ranks and
 * GATHER_NODES nodes per flush; reaching one flushes first.
 */
#include <errno.h>
#include <string.h>

#include "daemon/gather.h"
#include "daemon/log.h"
#include "daemon/net/tx.h"
#include "proto/shm.h"
#include "proto/wire.h"

#define GATHER_MSGS 1024u
#define GATHER_PAIRS 1024u
#define GATHER_SLOTS 2048u /* power of two, twice the pairs */
#ifndef GATHER_NODES /* (tests/netunit/gather-nodes builds it with fewer) */
#define GATHER_NODES 64u
#endif
#define GATHER_NODE_SLOTS 128u
#define NONE UINT32_MAX

struct g_msg {
	const uint8_t *data;
	uint32_t len, type;
	uint32_t next; /* the pair's next message */
};

struct g_pair {
	int32_t dst;
	uint32_t nix;         /* its node's entry */
	uint32_t first, last; /* messages, NONE: none noted (since the node's last write) */
};

struct g_node {
	uint32_t node;
	uint32_t staged; /* bytes noted, each message as a record of its own */
	uint32_t room;   /* bytes reserved in its open batch */
};

struct g_slot {
	uint32_t key, gen, ix;
};

static struct {
	struct g_msg msg[GATHER_MSGS];
	struct g_pair pair[GATHER_PAIRS];
	struct g_node node[GATHER_NODES];
	struct g_slot slot[GATHER_SLOTS];          /* dst rank -> pair */
	struct g_slot node_slot[GATHER_NODE_SLOTS]; /* node -> node entry */
	uint32_t nmsg, npair, nnode, gen;
	int32_t last_dst;
	uint32_t last_pair;
	struct shd_client *src; /* whose messages are noted */
} g = {.gen = 1, .last_dst = -1};

static inline uint32_t hash32(uint32_t x, uint32_t mask)
{
	return (uint32_t)(((uint64_t)x * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & mask;
}

/* The entry of key in a generation-stamped table, or a new one (ix from
 * *n, up to max) or NONE when full. */
static uint32_t lookup(struct g_slot *t, uint32_t mask, uint32_t key, uint32_t *n, uint32_t max,
		       bool *fresh)
{
	for (uint32_t h = hash32(key, mask);; h = (h + 1) & mask) {
		struct g_slot *s = &t[h];
		if (s->gen != g.gen) {
			if (*n == max)
				return NONE;
			*s = (struct g_slot){key, g.gen, (*n)++};
			*fresh = true;
			return s->ix;
		}
		if (s->key == key)
			return s->ix; /* at most half the slots are used: this ends */
	}
}

/* len bytes at s, then zero padding to 8, at d; s may be read up to the
 * padded length (a ring record is padded to 8). */
static inline void copy_padded(uint8_t *d, const uint8_t *s, uint32_t len)
{
	uint32_t pl = (len + 7u) & ~7u;
	if (pl > 64) {
		memcpy(d, s, len);
		memset(d + len, 0, pl - len);
		return;
	}
	for (uint32_t k = 0; k + 8 < pl; k += 8) {
		uint64_t v;
		memcpy(&v, s + k, 8);
		memcpy(d + k, &v, 8);
	}
	if (pl) {
		uint64_t v;
		memcpy(&v, s + pl - 8, 8);
		if (len & 7u) /* little-endian (proto/wire.c): the low bytes are the data */
			v &= (UINT64_C(1) << (8 * (len & 7u))) - 1;
		memcpy(d + pl - 8, &v, 8);
	}
}

/* A write the reservation should have made room for failed: a bug, but
 * never a silent loss. */
static void lost(struct shd_client *s, uint32_t node, uint32_t k)
{
	shd_err("relay: no room reserved in the batch to node %u for %u message(s) of rank %d: "
		"dropped", node, k, s->rank);
	s->st.drops_down += k;
	s->report_down += k;
}

/* A packed run of the cnt messages from i on (one type and length). */
static void write_packed(struct shd_daemon *d, struct shd_client *s, const struct g_pair *p,
			 uint32_t node, uint32_t i, uint32_t cnt)
{
	const struct g_msg *f = &g.msg[i];
	uint32_t stride = (f->len + 7u) & ~7u;
	uint8_t *o = shd_net_put_run(d, node, p->dst, s->rank, cnt | SHF_RUN_PACKED,
				     shf_run_packed_bytes(cnt, f->len));
	if (!o) {
		lost(s, node, cnt);
		return;
	}
	struct shf_run_item it = {f->type, f->len};
	memcpy(o, &it, sizeof(it));
	o += SHF_RUN_ITEM_BYTES;
	for (uint32_t k = 0; k < cnt; k++, i = g.msg[i].next, o += stride)
		copy_padded(o, g.msg[i].data, f->len);
}

/* One pair's messages, in order, as runs (a lone one as a message;
 * packed where the run's messages share one type and length). */
static void write_pair(struct shd_daemon *d, struct shd_client *s, const struct g_pair *p)
{
	uint32_t node = g.node[p->nix].node;
	for (uint32_t i = p->first; i != NONE;) {
		uint32_t cnt = 0, bytes = 0, k = i;
		bool mixed = false;
		for (; k != NONE; k = g.msg[k].next) {
			uint32_t isz = shf_run_item_bytes(g.msg[k].len);
			if (cnt == SHF_RUN_MAX_COUNT || bytes + isz > SHF_RUN_MAX_BYTES)
				break;
			mixed |= g.msg[k].len != g.msg[i].len || g.msg[k].type != g.msg[i].type;
			cnt++;
			bytes += isz;
		}
		if (cnt > 1 && !mixed) {
			write_packed(d, s, p, node, i, cnt);
			i = k;
			continue;
		}
		if (cnt <= 1) { /* one message, or one too large for a run */
			const struct g_msg *m = &g.msg[i];
			uint8_t *o = shd_net_put_msg(d, node, p->dst, s->rank, m->type, m->len);
			if (o)
				memcpy(o, m->data, m->len);
			else
				lost(s, node, 1);
			i = m->next;
			continue;
		}
		uint8_t *o = shd_net_put_run(d, node, p->dst, s->rank, cnt, bytes);
		if (!o) {
			lost(s, node, cnt);
			i = k;
			continue;
		}
		for (; i != k; i = g.msg[i].next) {
			const struct g_msg *m = &g.msg[i];
			struct shf_run_item it = {m->type, m->len};
			memcpy(o, &it, sizeof(it));
			copy_padded(o + SHF_RUN_ITEM_BYTES, m->data, m->len);
			o += shf_run_item_bytes(m->len);
		}
	}
}

/* Write the pairs of node entry nix (NONE: all), then close what is full. */
static void write_node(struct shd_daemon *d, struct shd_client *s, uint32_t nix)
{
	for (uint32_t i = 0; i < g.npair; i++) {
		struct g_pair *p = &g.pair[i];
		if (p->first == NONE || (nix != NONE && p->nix != nix))
			continue;
		write_pair(d, s, p);
		p->first = p->last = NONE;
	}
	for (uint32_t n = 0; n < g.nnode; n++) {
		if ((nix != NONE && n != nix) || !g.node[n].staged)
			continue;
		g.node[n].staged = 0;
		g.node[n].room = 0; /* the batch may close now: reserve again */
		shd_net_put_done(d, g.node[n].node);
	}
}

void shd_gather_flush(struct shd_daemon *d, struct shd_client *s)
{
	if (!g.nmsg)
		return;
	write_node(d, s, NONE);
	g.nmsg = g.npair = g.nnode = 0;
	g.last_dst = -1;
	g.src = NULL;
	if (++g.gen == 0) { /* every slot is stale again */
		memset(g.slot, 0, sizeof(g.slot));
		memset(g.node_slot, 0, sizeof(g.node_slot));
		g.gen = 1;
	}
}

int shd_gather_msg(struct shd_daemon *d, struct shd_client *s, uint32_t node, int32_t dst,
		   uint32_t type, const void *data, uint32_t len)
{
	if (g.src != s || g.nmsg == GATHER_MSGS)
		shd_gather_flush(d, g.src ? g.src : s); /* another client's: cannot be, but safe */
	g.src = s;
	uint32_t pi = g.last_pair;
	if (dst != g.last_dst) {
		bool fresh = false;
		pi = lookup(g.slot, GATHER_SLOTS - 1, (uint32_t)dst, &g.npair, GATHER_PAIRS, &fresh);
		if (pi != NONE && fresh) {
			bool nfresh = false;
			uint32_t nix = lookup(g.node_slot, GATHER_NODE_SLOTS - 1, node, &g.nnode,
					      GATHER_NODES, &nfresh);
			if (nix == NONE) {
				/* the pair just taken is not one: without this
				 * the flush below would write whatever its entry
				 * held (a never-used entry is zero: message 0 to
				 * rank 0 at node entry 0, a duplicate or a
				 * misrouted record) */
				g.npair--;
				pi = NONE;
			} else {
				if (nfresh)
					g.node[nix] = (struct g_node){node, 0, 0};
				g.pair[pi] = (struct g_pair){dst, nix, NONE, NONE};
			}
		}
		if (pi == NONE) { /* a table is full: write what is noted, start over */
			shd_gather_flush(d, s);
			return shd_gather_msg(d, s, node, dst, type, data, len);
		}
		g.last_dst = dst;
		g.last_pair = pi;
	}
	struct g_pair *p = &g.pair[pi];
	struct g_node *n = &g.node[p->nix];
	uint32_t need = (uint32_t)shf_wire_rec_bytes(len);
	if (n->staged + need > n->room) {
		if (n->staged)
			write_node(d, s, p->nix); /* it fits what was reserved */
		int r = shd_net_reserve(d, s, node, s->job, need);
		if (r < 0)
			return r;
		n->room = shd_net_room(d, node, s->job);
	}
	n->staged += need;
	uint32_t mi = g.nmsg++;
	g.msg[mi] = (struct g_msg){data, len, type, NONE};
	if (p->last == NONE)
		p->first = mi;
	else
		g.msg[p->last].next = mi;
	p->last = mi;
	return 0;
}
