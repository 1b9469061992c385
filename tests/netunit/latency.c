/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/latency.c - the two latency rules of the network step
 * (net.c shd_net_after_publish, net/tx.c, net/rx.c).
 *
 * linger_us 0: a batch opened by the relay leaves at the end of that
 * same pass (the network step), with no timer and no second loop
 * iteration: after shd_net_after_publish() the batch is posted, no timer
 * is armed, and later steps send nothing more.
 *
 * linger_us 100 (linger_idle 0): a batch to a node with nothing in flight
 * and no batch to it closed within linger_us leaves at the end of the
 * pass too (batches_by_idle); while it is unacknowledged the next record
 * lingers until the timer; acknowledged but closed less than linger_us
 * ago, it lingers too (a stream: at most one batch per linger_us); once
 * both hold, the next batch leaves at once again.  With linger_idle 1
 * every batch waits for the timer (as tx-batch checks in depth).
 *
 * ack_delay_us (peer_credits 4): a batch placed and published is not
 * acknowledged at the network step; the ACK timer asks for a pass, whose
 * network step (after its publish) sends one ACK covering every batch of
 * the wait.  Two unacknowledged batches (half of the credit) are
 * acknowledged at once; so is a batch whose records could not be placed
 * (a drop to report).  With ack_delay_us 0, every network step
 * acknowledges (rx-order checks that in depth).
 */
#include "tests/netunit/harness.h"

#define LEN 40u

static struct shd_job *j;

static size_t mk(struct h_batch *b, uint64_t seq, int32_t dst, uint32_t type)
{
	h_batch_begin(b, 1, j->hash);
	h_batch_put(b, dst, 2, type, LEN);
	return h_batch_end(b, seq);
}

static void check_ack(size_t k, uint64_t acked)
{
	long i = fake_find(1, SHF_WIRE_ACK, k);
	CHECKF(i >= 0, "ACK %zu to node 1 missing", k);
	struct shf_wire_hdr h;
	h_decode((size_t)i, &h);
	CHECKF(h.u.ack.acked_seq == acked, "ACK %zu: acked_seq %llu, want %llu", k,
	       (unsigned long long)h.u.ack.acked_seq, (unsigned long long)acked);
}

/* The pass, in pass.c's order, as far as net goes. */
static void pass_steps(void)
{
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
}

static void linger_zero(void)
{
	h_step("linger_us 0");
	struct h_opts o = h_defaults();
	o.linger_us = 0;
	h_open(&o);
	j = h_job("lzjob", 4);
	h_rank_on(j, 2, 1);
	struct h_client *c = h_client(j, 0, 4096);
	struct shd_net *n = h_net();
	CHECK(h_append(c, 1, j, 2, 7, LEN) == 0);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 0); /* the relay step only appends */
	shd_net_after_publish(D);
	CHECKF(fake_count(1, SHF_WIRE_BATCH) == 1,
	       "linger_us 0: %zu batches posted at the end of the pass, want 1",
	       fake_count(1, SHF_WIRE_BATCH));
	CHECK(!shd_ev_armed(n->linger_ev));
	CHECK(D->st.batches_by_linger == 1);
	h_run();
	h_advance_us(1000);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 1);
	h_close();

	h_step("linger_us 100, an idle link");
	o.linger_us = 100;
	h_open(&o);
	j = h_job("lzjob", 4);
	h_rank_on(j, 2, 1);
	c = h_client(j, 0, 4096);
	struct shd_peer *p = h_peer(1);
	CHECK(h_append(c, 1, j, 2, 7, LEN) == 0);
	shd_net_after_publish(D);
	CHECKF(fake_count(1, SHF_WIRE_BATCH) == 1,
	       "nothing in flight: %zu batches posted at the end of the pass, want 1",
	       fake_count(1, SHF_WIRE_BATCH));
	CHECK(D->st.batches_by_idle == 1 && p->seq_closed == 1 && p->seq_acked == 0);
	/* batch 1 unacknowledged: the next record lingers */
	CHECK(h_append(c, 1, j, 2, 8, LEN) == 0);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 1);
	h_advance_us(100);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 2 && D->st.batches_by_linger == 1);
	/* both acknowledged, but batch 2 closed just now: a stream still
	 * leaves at most one batch per linger_us, so this one lingers */
	h_recv_ack(1, 2);
	h_run();
	CHECK(h_append(c, 1, j, 2, 9, LEN) == 0);
	shd_net_after_publish(D);
	CHECKF(fake_count(1, SHF_WIRE_BATCH) == 2, "a batch closed 0 us after the last one");
	h_advance_us(100);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 3 && D->st.batches_by_linger == 2);
	h_recv_ack(1, 3);
	h_run();
	/* linger_us after the last close, nothing in flight: at once again */
	h_advance_us(100);
	CHECK(h_append(c, 1, j, 2, 10, LEN) == 0);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 4 && D->st.batches_by_idle == 2);
	h_close();

	h_step("linger_us 100, linger_idle 1");
	o.linger_idle = true;
	h_open(&o);
	j = h_job("lzjob", 4);
	h_rank_on(j, 2, 1);
	c = h_client(j, 0, 4096);
	CHECK(h_append(c, 1, j, 2, 7, LEN) == 0);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 0); /* it lingers */
	h_advance_us(100);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 1 && D->st.batches_by_idle == 0);
	h_close();
}

static void ack_delay(void)
{
	h_step("ack_delay_us 500");
	struct h_opts o = h_defaults();
	o.peer_credits = 4;
	o.ack_delay_us = 500;
	h_open(&o);
	j = h_job("adjob", 4);
	h_rank_on(j, 2, 1);
	h_rank_on(j, 3, 1);
	struct h_client *c = h_client(j, 0, 16384);
	struct shd_peer *p = h_peer(1);
	struct shd_net *n = h_net();
	static struct h_batch b;

	/* one batch: placed, published, not acknowledged yet */
	CHECK(fake_inject_now(1, b.buf, mk(&b, 1, 0, 1)) == 0);
	h_run();
	pass_steps();
	CHECK(h_consume(c, 8, NULL, NULL) == 1); /* delivered at once */
	CHECKF(fake_count(1, SHF_WIRE_ACK) == 0, "ACK sent at once despite ack_delay_us");
	CHECK(shd_ev_armed(n->ack_ev));
	pass_steps(); /* another pass before the timer: still held */
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);

	/* the timer asks for a pass; its network step sends the ACK */
	uint64_t passes = H.pass_requests;
	h_advance_us(499);
	CHECK(H.pass_requests == passes && fake_count(1, SHF_WIRE_ACK) == 0);
	h_advance_us(1);
	h_run();
	CHECK(H.pass_requests > passes);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0); /* only the pass acknowledges */
	pass_steps();
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	check_ack(0, 1);
	CHECK(p->ack_sent == 1 && !shd_ev_armed(n->ack_ev));

	/* two batches (half of peer_credits 4) unacknowledged: at once */
	CHECK(fake_inject_now(1, b.buf, mk(&b, 2, 0, 2)) == 0);
	h_run();
	pass_steps();
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	CHECK(fake_inject_now(1, b.buf, mk(&b, 3, 0, 3)) == 0);
	h_run();
	pass_steps();
	CHECKF(fake_count(1, SHF_WIRE_ACK) == 2, "half the credit unacknowledged: %zu ACKs, want 2",
	       fake_count(1, SHF_WIRE_ACK));
	check_ack(1, 3);
	CHECK(h_consume(c, 8, NULL, NULL) == 2);

	/* a drop to report (rank 3 lives on node 1, not here): at once */
	CHECK(fake_inject_now(1, b.buf, mk(&b, 4, 3, 4)) == 0);
	h_run();
	pass_steps();
	CHECKF(fake_count(1, SHF_WIRE_ACK) == 3, "a batch with a drop: %zu ACKs, want 3",
	       fake_count(1, SHF_WIRE_ACK));
	check_ack(2, 4);

	/* the timer armed for batch 2 fires with nothing owed: no ACK */
	h_advance_us(1000);
	h_run();
	pass_steps();
	CHECK(fake_count(1, SHF_WIRE_ACK) == 3);
	h_close();
}

int main(void)
{
	linger_zero();
	ack_delay();
	return 0;
}
