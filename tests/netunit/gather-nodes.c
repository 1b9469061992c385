/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/gather-nodes.c - daemon/gather.c when a relay turn's
 * messages go to more nodes than its node table holds (GATHER_NODES, 64
 * in the daemon; this test builds gather.c with 2, so that 8 nodes reach
 * it).  The message that finds the table full flushes what was noted and
 * starts over.  Checked in the batches each node got: every message
 * exactly once, at the node of its rank, in order, and nothing else.
 *
 * The daemon got this wrong at 128 nodes (scripts/scale, docs/scale.md
 * "128 nodes direct"): the pair entry taken for the message that found the
 * node table full stayed counted, and the flush wrote whatever that entry
 * held.  A never-used entry is zero: message 0 of the turn, again, to rank
 * 0 at the first node's batch (a duplicate where rank 0 lived there, a
 * "destination rank gone" drop elsewhere).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/gather.h"
#include "tests/netunit/harness.h"

#define NN 8u
#define LEN 24u
#define NMSG 40u

static uint8_t bufs[NMSG][LEN + 8];
static int32_t dsts[NMSG];

/* per node: the message numbers (types) its batches carried, in order */
static uint32_t got[NN][NMSG * 2], ngot[NN];
static uint32_t cur_node;

static void on_msg(const struct shf_wire_rec *r, void *arg)
{
	(void)arg;
	CHECKF(r->type < NMSG, "node %u: a record of type %u, not a noted message", cur_node,
	       r->type);
	CHECKF(r->dst_rank == dsts[r->type] && r->len == LEN,
	       "node %u: message %u to rank %d (%u B): noted to rank %d", cur_node, r->type,
	       r->dst_rank, r->len, dsts[r->type]);
	CHECK(ngot[cur_node] < NMSG * 2);
	got[cur_node][ngot[cur_node]++] = r->type;
}

int main(void)
{
	h_watchdog(20);
	struct h_opts o = h_defaults();
	o.n_nodes = NN;
	o.batch_bytes = 16u << 10;
	o.peer_credits = 8;
	h_open(&o);
	struct shd_job *j = h_job("gnodes", (int32_t)NN);
	for (uint32_t r = 1; r < NN; r++)
		h_rank_on(j, (int32_t)r, r); /* rank r on node r; rank 0 is local */
	struct h_client *c = h_client(j, 0, 4096);

	h_step("a turn to 7 nodes through a node table of 2");
	/* rank 1, 2, 3, ..., 7, 1, 2, ...: every third message finds the
	 * table full */
	for (uint32_t k = 0; k < NMSG; k++) {
		dsts[k] = (int32_t)(1 + k % (NN - 1));
		h_fill(bufs[k], 0, dsts[k], k, LEN);
		CHECK(shd_gather_msg(D, &c->c, (uint32_t)dsts[k], dsts[k], k, bufs[k], LEN) == 0);
	}
	shd_gather_flush(D, &c->c);
	CHECK(shd_net_mark(D, &c->c) >= 1); /* closes the open batches: sent */
	h_run();

	for (uint32_t node = 1; node < NN; node++) {
		cur_node = node;
		for (size_t k = 0; k < fake_count(node, SHF_WIRE_BATCH); k++) {
			long i = fake_find(node, SHF_WIRE_BATCH, k);
			CHECK(i >= 0);
			h_batch_records((size_t)i, on_msg, NULL);
		}
		/* exactly its messages, each once, in order */
		uint32_t want = 0;
		for (uint32_t k = 0; k < NMSG; k++)
			want += dsts[k] == (int32_t)node;
		CHECKF(ngot[node] == want, "node %u got %u messages, %u were noted for it", node,
		       ngot[node], want);
		for (uint32_t i = 1; i < ngot[node]; i++)
			CHECKF(got[node][i] > got[node][i - 1], "node %u: message %u after %u", node,
			       got[node][i], got[node][i - 1]);
	}
	CHECKF(D->st.batch_msgs_out == NMSG, "batch_msgs_out %llu, %u noted",
	       (unsigned long long)D->st.batch_msgs_out, NMSG);

	h_close();
	printf("gather-nodes: ok\n");
	return 0;
}
