/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/rx-order.c - placing received batches (net/rx.c) and when
 * they are acknowledged.
 *
 * Three nodes; local ranks 0 and 1 (rings with room to spare).  Checks:
 *   - a batch in order is placed at once into the destination rings, in
 *     record order, intact; the consumers see it only after the publish
 *     step; no ACK goes out when it is placed, nor at the publish, only at
 *     shd_net_after_publish(): exactly one, acked_seq 1, window
 *     peer_credits, dropped 0; a second network step sends nothing;
 *   - out of order: batch 3 before 2 is kept (nothing placed, no ACK, the
 *     progress step does not place it across the gap); batch 2 (through
 *     the fabric's progress) closes the gap and both are placed in sequence
 *     order; one ACK for 3;
 *   - three batches arriving 6, 5, 4 are placed 4, 5, 6;
 *   - a duplicate batch is refused (wire_bad) and places nothing;
 *   - ACKs are per peer: node 2's batch is acked to node 2 only;
 *   - counters: batches_in, batch_msgs_in, per-peer msgs_in.
 */
#include "tests/netunit/harness.h"

#define LEN 40u

static struct shd_job *j;

/* A batch from node: n records for dst, src, types first.. */
static size_t mk(struct h_batch *b, uint32_t node, uint64_t seq, int32_t dst, int32_t src,
		 uint32_t first, uint32_t count)
{
	h_batch_begin(b, node, j->hash);
	for (uint32_t i = 0; i < count; i++)
		h_batch_put(b, dst, src, first + i, LEN + i);
	return h_batch_end(b, seq);
}

static void check_ack(uint32_t node, size_t k, uint64_t acked, uint32_t dropped)
{
	long i = fake_find(node, SHF_WIRE_ACK, k);
	CHECKF(i >= 0, "ACK %zu to node %u missing", k, node);
	struct shf_wire_hdr h;
	h_decode((size_t)i, &h);
	CHECKF(h.u.ack.acked_seq == acked, "ACK %zu to node %u: acked_seq %llu, want %llu", k,
	       node, (unsigned long long)h.u.ack.acked_seq, (unsigned long long)acked);
	CHECK(h.u.ack.window == D->cfg.peer_credits);
	CHECK(h.u.ack.dropped == dropped);
}

static void expect_types(struct h_client *c, int32_t src, const uint32_t *types, uint32_t n)
{
	int32_t s[64];
	uint32_t t[64];
	uint32_t got = h_consume(c, 64, s, t);
	CHECKF(got == n, "rank %d: %u messages, want %u", c->c.rank, got, n);
	for (uint32_t i = 0; i < n; i++)
		CHECKF(s[i] == src && t[i] == types[i], "rank %d message %u: src %d type %u, want "
		       "src %d type %u", c->c.rank, i, s[i], t[i], src, types[i]);
}

int main(void)
{
	struct h_opts o = h_defaults();
	o.n_nodes = 3;
	h_open(&o);
	j = h_job("rxjob", 8);
	for (int32_t r = 2; r < 5; r++)
		h_rank_on(j, r, 1);
	for (int32_t r = 5; r < 8; r++)
		h_rank_on(j, r, 2);
	struct h_client *c0 = h_client(j, 0, 16384), *c1 = h_client(j, 1, 16384);
	struct shd_peer *p1 = h_peer(1), *p2 = h_peer(2);
	static struct h_batch b;
	size_t len;

	/* ---- in order */
	h_batch_begin(&b, 1, j->hash);
	for (uint32_t i = 1; i <= 3; i++)
		h_batch_put(&b, 0, 2, i, LEN + i);
	h_batch_put(&b, 1, 3, 4, 0); /* an empty payload */
	h_batch_put(&b, 1, 3, 5, 200);
	len = h_batch_end(&b, 1);
	uint64_t passes = H.pass_requests;
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p1->seq_recv == 1 && shd_list_empty(&p1->rxq));
	CHECK(H.peer_up[1] == 1);
	CHECK(h_consume(c0, 64, NULL, NULL) == 0); /* not published yet */
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);
	h_run();
	CHECK(H.pass_requests > passes); /* a pass was asked for */
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);
	shd_deliver_publish(D);
	expect_types(c0, 2, (const uint32_t[]){1, 2, 3}, 3);
	expect_types(c1, 3, (const uint32_t[]){4, 5}, 2);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0); /* the publish alone does not ACK */
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	check_ack(1, 0, 1, 0);
	CHECK(p1->ack_sent == 1);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	CHECK(D->st.batches_in == 1 && D->st.batch_msgs_in == 5 && p1->cold->st.msgs_in == 5);
	CHECK(p1->cold->st.batches_in == 1 && p1->cold->st.bytes_in == len);

	/* ---- 3 before 2 */
	len = mk(&b, 1, 3, 0, 2, 20, 2);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p1->seq_recv == 1 && !shd_list_empty(&p1->rxq));
	h_run(); /* progress: the gap stays */
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(h_consume(c0, 64, NULL, NULL) == 0);
	CHECK(p1->seq_recv == 1 && fake_count(1, SHF_WIRE_ACK) == 1);

	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 2, 10, LEN);
	h_batch_put(&b, 0, 2, 11, LEN);
	h_batch_put(&b, 1, 4, 12, LEN);
	len = h_batch_end(&b, 2);
	fake_inject(1, b.buf, len); /* arrives through progress */
	h_run();
	CHECK(fake_n_queued() == 0);
	CHECK(p1->seq_recv == 3 && shd_list_empty(&p1->rxq));
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	shd_deliver_publish(D);
	expect_types(c0, 2, (const uint32_t[]){10, 11, 20, 21}, 4);
	expect_types(c1, 4, (const uint32_t[]){12}, 1);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 2);
	check_ack(1, 1, 3, 0);

	/* ---- 6, 5, 4 */
	len = mk(&b, 1, 6, 0, 3, 60, 2);
	fake_inject(1, b.buf, len);
	len = mk(&b, 1, 5, 0, 3, 50, 3);
	fake_inject(1, b.buf, len);
	h_run();
	CHECK(p1->seq_recv == 3);
	len = mk(&b, 1, 4, 0, 3, 40, 1);
	fake_inject(1, b.buf, len);
	h_run();
	CHECK(p1->seq_recv == 6 && shd_list_empty(&p1->rxq));
	shd_deliver_publish(D);
	expect_types(c0, 3, (const uint32_t[]){40, 50, 51, 52, 60, 61}, 6);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 3);
	check_ack(1, 2, 6, 0);

	/* ---- a duplicate */
	uint64_t bad = D->st.wire_bad, in = D->st.batches_in;
	len = mk(&b, 1, 5, 0, 3, 99, 1);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	h_run();
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	CHECK(D->st.wire_bad == bad + 1 && D->st.batches_in == in);
	CHECK(h_consume(c0, 64, NULL, NULL) == 0);
	CHECK(p1->seq_recv == 6 && fake_count(1, SHF_WIRE_ACK) == 3);

	/* ---- per peer */
	len = mk(&b, 2, 1, 1, 6, 70, 2);
	CHECK(fake_inject_now(2, b.buf, len) == 0);
	CHECK(p2->seq_recv == 1 && fake_count(2, SHF_WIRE_ACK) == 0);
	shd_deliver_publish(D);
	expect_types(c1, 6, (const uint32_t[]){70, 71}, 2);
	shd_net_after_publish(D);
	CHECK(fake_count(2, SHF_WIRE_ACK) == 1 && fake_count(1, SHF_WIRE_ACK) == 3);
	check_ack(2, 0, 1, 0);

	CHECK(D->st.batches_in == 7);
	CHECK(D->st.batch_msgs_in == 5 + 2 + 3 + 6 + 2);
	CHECK(p1->cold->st.msgs_in == 16 && p2->cold->st.msgs_in == 2);
	CHECK(D->st.msgs_unroutable == 0 && D->st.batches_parked == 0);
	CHECK(fake_count(FAKE_ANY_NODE, SHF_WIRE_DROP) == 0);
	CHECK(H.drops_calls == 0 && H.peer_lost[1] == 0 && H.peer_lost[2] == 0);
	h_close();
	return 0;
}
