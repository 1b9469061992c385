/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/rx-down.c - the sender of parked batches fails (net/rx.c:
 * shd_net_rx_down, with net.c's shd_net_reap and on_recv).
 *
 * Three nodes; local ranks 0 and 1 with 4096-byte rings.  Checks:
 *   A. node 2 (restarts: a heartbeat of a new session tag) with batch 1
 *      placed and not yet acknowledged, batch 2 parked on rank 0's full
 *      ring with 3 records left (after one unroutable record, whose DROP
 *      went out at park time), and batch 4 kept behind a gap (2 records):
 *      - once it fails, no ACK (the network step) and no DROP go to it,
 *        room in rank 0's ring places nothing more of its batches, and a
 *        batch of the old session that arrives now is ignored (wire_stale);
 *      - shd_net_reap(): peer_lost(2) once, rx_drops_down counts exactly
 *        the 5 records never placed, nothing of node 2 is left queued;
 *        afterwards (node 2 JOINING its new session) an old-session batch
 *        is still ignored, and nothing but heartbeats goes to node 2;
 *   B. node 1 with a batch parked on rank 1's full ring (2 records left)
 *      fails when the ACK of its earlier batch cannot be sent; after the
 *      reap rank 1's ring has no waiter left (room then places nothing),
 *      rx_drops_down grows by exactly 2, peer_lost(1) once, nothing more
 *      is sent to node 1 (heartbeats aside: it is probed).
 */
#include "tests/netunit/harness.h"

#define BIG 500u /* 516 ring bytes: 7 fit in 4096 */

int main(void)
{
	struct h_opts o = h_defaults();
	o.n_nodes = 3;
	h_open(&o);
	struct shd_job *j = h_job("downjob", 8);
	for (int32_t r = 2; r < 5; r++)
		h_rank_on(j, r, 1);
	for (int32_t r = 5; r < 8; r++)
		h_rank_on(j, r, 2);
	struct h_client *c0 = h_client(j, 0, 4096), *c1 = h_client(j, 1, 4096);
	struct shd_peer *p1 = h_peer(1), *p2 = h_peer(2);
	static struct h_batch b;
	size_t len;

	/* ---- A. node 2 */
	h_recv_heartbeat(2, 77);
	h_batch_begin(&b, 2, j->hash);
	h_batch_put(&b, 1, 5, 1, 16);
	len = h_batch_end(&b, 1);
	CHECK(fake_inject_now(2, b.buf, len) == 0);
	CHECK(p2->seq_recv == 1); /* its ACK waits for the network step */

	uint32_t filled = h_fill_ring(c0, BIG);
	CHECK(filled == 7);
	h_batch_begin(&b, 2, j->hash);
	h_batch_put(&b, 6, 5, 2, 16); /* rank 6 is not here: a DROP */
	for (uint32_t t = 3; t < 6; t++)
		h_batch_put(&b, 0, 5, t, BIG);
	len = h_batch_end(&b, 2);
	CHECK(fake_inject_now(2, b.buf, len) == 0);
	CHECK(p2->rx_waiting && D->st.batches_parked == 1);
	CHECK(fake_count(2, SHF_WIRE_DROP) == 1);
	h_batch_begin(&b, 2, j->hash);
	h_batch_put(&b, 1, 6, 10, 16);
	h_batch_put(&b, 1, 6, 11, 16);
	len = h_batch_end(&b, 4);
	CHECK(fake_inject_now(2, b.buf, len) == 0);
	CHECK(p2->seq_recv == 1);

	h_restart(2, 78); /* a new session */
	CHECK(p2->state == PEER_FAILED);
	const size_t to2 = fake_count(2, FAKE_NO_HEARTBEAT);
	CHECK(fake_count(2, SHF_WIRE_ACK) == 0 && to2 == 1);

	/* before the peers step */
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_count(2, FAKE_NO_HEARTBEAT) == to2);
	CHECK(h_consume(c0, 64, NULL, NULL) == filled);
	CHECK(h_consume(c1, 64, NULL, NULL) == 1);
	shd_deliver_wake(&c0->c); /* room: nothing of node 2 may be placed now */
	h_run();
	uint64_t in = D->st.batches_in, stale = D->st.wire_stale;
	h_batch_begin(&b, 2, j->hash);
	h_batch_put(&b, 0, 5, 20, 16);
	len = h_batch_end(&b, 3);
	h_stamp(b.buf, h_old_tag(2), h_old_dtag(2)); /* sent before the restart */
	CHECK(fake_inject_raw_now(2, b.buf, len) == 0); /* a ghost: ignored */
	CHECK(D->st.batches_in == in && D->st.wire_stale == stale + 1);
	shd_deliver_publish(D);
	CHECK(h_consume(c0, 64, NULL, NULL) == 0);
	CHECK(h_consume(c1, 64, NULL, NULL) == 0);
	CHECK(p2->seq_recv == 1);
	CHECK(fake_count(2, FAKE_NO_HEARTBEAT) == to2);
	CHECK(D->st.rx_drops_down == 0 && H.peer_lost[2] == 0);

	/* the peers step */
	shd_net_reap(D);
	CHECK(H.peer_lost[2] == 1 && p2->state == PEER_JOINING && p2->cold->peer_session == h_tag(2));
	CHECKF(D->st.rx_drops_down == 3 + 2, "rx_drops_down %llu, want 5",
	       (unsigned long long)D->st.rx_drops_down);
	CHECK(shd_list_empty(&p2->rxq) && !p2->rx_waiting);
	CHECK(!shd_list_linked(&p2->ack_link) && !shd_list_linked(&p2->drain_link));
	shd_net_reap(D);
	CHECK(H.peer_lost[2] == 1);

	/* afterwards: the old session's batch is still a ghost; the new
	 * session's heartbeat only continues its handshake */
	len = h_batch_end(&b, 3);
	h_stamp(b.buf, h_old_tag(2), h_old_dtag(2));
	CHECK(fake_inject_raw_now(2, b.buf, len) == 0);
	CHECK(D->st.batches_in == in && D->st.wire_stale == stale + 2);
	h_recv_heartbeat(2, 78);
	CHECK(p2->state == PEER_JOINING);
	shd_deliver_wake(&c0->c);
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(h_consume(c0, 64, NULL, NULL) == 0);
	CHECKF(fake_count(2, FAKE_NO_HEARTBEAT) == to2, "%zu messages to node 2 after it failed",
	       fake_count(2, FAKE_NO_HEARTBEAT) - to2);
	CHECK(fake_n_unreachable() == 0);
	CHECK(D->st.rx_drops_down == 5 && H.peer_lost[2] == 1);

	/* ---- B. node 1: its ACK fails while its next batch is parked */
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 2, 30, 16);
	len = h_batch_end(&b, 1);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p1->seq_recv == 1);
	CHECK(h_fill_ring(c1, BIG) == 7);
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 1, 3, 31, BIG);
	h_batch_put(&b, 1, 3, 32, BIG);
	len = h_batch_end(&b, 2);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p1->rx_waiting && shd_list_linked(&c1->c.waiters));
	fake_fail_nth(FAKE_SMALL, 1, -EIO);
	shd_deliver_publish(D);
	shd_net_after_publish(D); /* the ACK of batch 1 cannot be sent */
	CHECK(fake_n_failed() == 1);
	CHECK(p1->state == PEER_FAILED);
	const size_t to1 = fake_count(1, FAKE_NO_HEARTBEAT);
	CHECK(to1 == 0);
	shd_net_reap(D);
	CHECK(H.peer_lost[1] == 1 && p1->state == PEER_DOWN);
	CHECK(!shd_list_linked(&c1->c.waiters));
	CHECKF(D->st.rx_drops_down == 5 + 2, "rx_drops_down %llu, want 7",
	       (unsigned long long)D->st.rx_drops_down);
	CHECK(h_consume(c1, 64, NULL, NULL) == 7);
	shd_deliver_wake(&c1->c);
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(h_consume(c1, 64, NULL, NULL) == 0);
	CHECK(h_consume(c0, 64, NULL, NULL) == 1); /* batch 1 of node 1 */
	CHECK(fake_count(1, FAKE_NO_HEARTBEAT) == to1);
	CHECK(H.peer_lost[1] == 1 && H.peer_lost[2] == 1);
	CHECK(H.drops_calls == 0);
	h_close();
	return 0;
}
