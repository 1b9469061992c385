/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/rx-park.c - a received batch that meets a full delivery
 * ring (net/rx.c: parking, rx_wake, shd_net_rx_drain).
 *
 * Rank 0's ring holds 4 messages of 1000 bytes.  Checks:
 *   - batch 1 (6 records for rank 0, then 1 for rank 1): 4 are placed, the
 *     batch parks (batches_parked 1, a copy: the fake fabric scribbles over
 *     its receive buffer once on_recv returns, and every byte placed later
 *     is checked), rank 1's record waits behind it; no ACK while parked,
 *     even after a publish and a network step;
 *   - the consumer frees the ring and rings the space bell
 *     (shd_deliver_wake): the rest is placed in order (5, 6, then rank 1's
 *     7); one ACK for 1 after the network step;
 *   - batch 2 parks; batch 3, in order but behind it, waits (no record of
 *     it placed, even for rank 1 whose ring has room, no ACK); room for
 *     rank 0 resumes 2 and then 3; one ACK for 3;
 *   - a batch still parked when net closes is freed (leak check in the
 *     sanitizer build).
 */
#include "tests/netunit/harness.h"

#define BIG 1000u /* 8 + 8 + 1000 = 1016 ring bytes: 4 fit in 4096 */

static void expect(struct h_client *c, int32_t src, const uint32_t *types, uint32_t n)
{
	int32_t s[16];
	uint32_t t[16];
	uint32_t got = h_consume(c, 16, s, t);
	CHECKF(got == n, "rank %d: %u messages, want %u", c->c.rank, got, n);
	for (uint32_t i = 0; i < n; i++)
		CHECKF(s[i] == src && t[i] == types[i], "rank %d message %u: %d/%u, want %d/%u",
		       c->c.rank, i, s[i], t[i], src, types[i]);
}

int main(void)
{
	struct h_opts o = h_defaults();
	h_open(&o);
	struct shd_job *j = h_job("parkjob", 4);
	h_rank_on(j, 2, 1);
	h_rank_on(j, 3, 1);
	struct h_client *c0 = h_client(j, 0, 4096), *c1 = h_client(j, 1, 16384);
	struct shd_peer *p = h_peer(1);
	static struct h_batch b;
	size_t len;

	/* ---- batch 1 parks after 4 records */
	h_batch_begin(&b, 1, j->hash);
	for (uint32_t t = 1; t <= 6; t++)
		h_batch_put(&b, 0, 2, t, BIG);
	h_batch_put(&b, 1, 3, 7, 100);
	len = h_batch_end(&b, 1);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p->rx_waiting && !shd_list_empty(&p->rxq));
	CHECK(D->st.batches_parked == 1);
	CHECK(p->seq_recv == 0 && p->cold->st.msgs_in == 4);
	CHECK(shd_list_linked(&c0->c.waiters));
	h_run();
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);
	CHECK(h_consume(c1, 16, NULL, NULL) == 0); /* behind the parked record */
	expect(c0, 2, (const uint32_t[]){1, 2, 3, 4}, 4);
	CHECK(p->rx_waiting && fake_count(1, SHF_WIRE_ACK) == 0);

	/* room: the space bell */
	shd_deliver_wake(&c0->c);
	CHECK(!p->rx_waiting && shd_list_empty(&p->rxq));
	CHECK(p->seq_recv == 1 && p->cold->st.msgs_in == 7);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);
	shd_deliver_publish(D);
	expect(c0, 2, (const uint32_t[]){5, 6}, 2);
	expect(c1, 3, (const uint32_t[]){7}, 1);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	struct shf_wire_hdr h;
	h_decode((size_t)fake_find(1, SHF_WIRE_ACK, 0), &h);
	CHECK(h.u.ack.acked_seq == 1 && h.u.ack.dropped == 0);

	/* ---- batch 2 parks, batch 3 waits behind it */
	h_batch_begin(&b, 1, j->hash);
	for (uint32_t t = 10; t < 15; t++)
		h_batch_put(&b, 0, 3, t, BIG);
	len = h_batch_end(&b, 2);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p->rx_waiting && D->st.batches_parked == 2);
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 1, 2, 20, 8);
	len = h_batch_end(&b, 3);
	fake_inject(1, b.buf, len);
	h_run();
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(p->seq_recv == 1);
	CHECK(h_consume(c1, 16, NULL, NULL) == 0);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	expect(c0, 3, (const uint32_t[]){10, 11, 12, 13}, 4);
	shd_deliver_wake(&c0->c);
	h_run();
	CHECK(p->seq_recv == 3 && shd_list_empty(&p->rxq) && !p->rx_waiting);
	shd_deliver_publish(D);
	expect(c0, 3, (const uint32_t[]){14}, 1);
	expect(c1, 2, (const uint32_t[]){20}, 1);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 2);
	h_decode((size_t)fake_find(1, SHF_WIRE_ACK, 1), &h);
	CHECK(h.u.ack.acked_seq == 3);
	CHECK(D->st.batches_parked == 2 && D->st.batches_in == 3);
	CHECK(D->st.msgs_unroutable == 0 && fake_count(1, SHF_WIRE_DROP) == 0);

	/* ---- one left parked at close */
	h_fill_ring(c0, BIG);
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 2, 30, BIG);
	h_batch_put(&b, 0, 2, 31, BIG);
	len = h_batch_end(&b, 4);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p->rx_waiting && D->st.batches_parked == 3);
	h_close();
	return 0;
}
