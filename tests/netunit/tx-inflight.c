/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/tx-inflight.c - max_inflight, the credit all peers share
 * (net/tx.c: has_credit, try_send, the credit_wait list in shd_net_tx_ack).
 *
 * Four nodes, max_inflight 1, peer_credits 8, one 4-record batch per
 * append burst.  Checks:
 *   A. node 1 holds the one credit; the batches closed for nodes 2 and 3
 *      wait (nothing posted); the ACK from node 1 posts exactly one of them
 *      and the other keeps waiting; its ACK posts the last one;
 *   B. the same with three peers waiting (nodes 2, 3, and node 1 itself
 *      with a second batch): the ACK from node 1 returns (a watchdog turns
 *      a call that never returns into a failure), posts exactly one batch,
 *      and every ACK after that posts exactly one more until all are out.
 */
#include "tests/netunit/harness.h"

#define LEN 48u

static struct shd_job *j;
static struct h_client *c;
static uint32_t type;

static void batch_to(uint32_t node)
{
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c, node, j, (int32_t)node, type++, LEN) == 0);
	CHECK(!h_peer(node)->open);
}

/* The last batch sent: its node and seq. */
static void last_batch(uint32_t *node, uint64_t *seq)
{
	long i = fake_find(FAKE_ANY_NODE, SHF_WIRE_BATCH, fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) - 1);
	CHECK(i >= 0);
	struct shf_wire_hdr h;
	h_decode((size_t)i, &h);
	*node = h.dst_node;
	*seq = h.u.batch.seq;
}

int main(void)
{
	struct h_opts o = h_defaults();
	o.n_nodes = 4;
	o.max_inflight = 1;
	o.peer_credits = 8;
	h_open(&o);
	h_watchdog(5);
	struct shd_net *n = h_net();
	j = h_job("inflight", 8);
	for (uint32_t k = 1; k < 4; k++)
		h_rank_on(j, (int32_t)k, k);
	c = h_client(j, 0, 4096);
	uint32_t node;
	uint64_t seq;

	/* A. two peers wait for the one credit */
	h_step("A: filling");
	batch_to(1);
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 1 && n->inflight == 1);
	batch_to(2);
	batch_to(3);
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 1 && n->inflight == 1);
	CHECK(!shd_list_empty(&h_peer(2)->sendq) && !shd_list_empty(&h_peer(3)->sendq));

	h_step("A: ACK from node 1 with nodes 2 and 3 waiting for max_inflight");
	h_recv_ack(1, 1);
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 2 && n->inflight == 1);
	last_batch(&node, &seq);
	CHECK((node == 2 || node == 3) && seq == 1);
	uint32_t other = node == 2 ? 3 : 2;
	CHECK(shd_list_empty(&h_peer(node)->sendq) && !shd_list_empty(&h_peer(other)->sendq));

	h_step("A: ACK from the first waiter");
	h_recv_ack(node, 1);
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 3 && n->inflight == 1);
	last_batch(&node, &seq);
	CHECK(node == other && seq == 1);
	h_recv_ack(other, 1);
	CHECK(n->inflight == 0 && shd_list_empty(&n->credit_wait));

	/* B. three peers wait; the one that ACKs has a batch waiting itself */
	h_step("B: filling");
	batch_to(1); /* node 1 seq 2: posted */
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 4 && n->inflight == 1);
	batch_to(2); /* waits */
	batch_to(3); /* waits */
	batch_to(1); /* node 1 seq 3: waits */
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 4 && n->inflight == 1);

	h_step("B: ACK from node 1 with nodes 2, 3 and 1 waiting for max_inflight "
	       "(net/tx.c shd_net_tx_ack, the credit_wait walk)");
	h_recv_ack(1, 2);
	h_step("B: after the ACK");
	CHECKF(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == 5, "%zu batches sent",
	       fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH));
	CHECK(n->inflight == 1);

	/* every ACK of the batch in flight posts exactly one more */
	uint64_t acked[4] = {0, 2, 1, 1};
	for (size_t sent = 5; sent < 7; sent++) {
		last_batch(&node, &seq);
		CHECK(seq == acked[node] + 1);
		h_recv_ack(node, seq);
		acked[node] = seq;
		CHECKF(fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH) == sent + 1, "%zu batches sent",
		       fake_count(FAKE_ANY_NODE, SHF_WIRE_BATCH));
		CHECK(n->inflight == 1);
	}
	last_batch(&node, &seq);
	h_recv_ack(node, seq);
	CHECK(n->inflight == 0 && shd_list_empty(&n->credit_wait));
	for (uint32_t k = 1; k < 4; k++) {
		struct shd_peer *p = h_peer(k);
		CHECK(shd_list_empty(&p->sendq) && p->seq_acked == p->seq_closed);
	}
	CHECK(h_peer(1)->seq_acked == 3 && h_peer(2)->seq_acked == 2 && h_peer(3)->seq_acked == 2);
	fake_complete_all_now(0);
	CHECK(h_pool_check() == n->pool_max);
	h_close();
	return 0;
}
