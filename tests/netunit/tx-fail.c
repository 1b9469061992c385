/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/tx-fail.c - sends that fail, and the peers step after them
 * (net/tx.c: post, shd_net_send_done, charge_batch, shd_net_tx_down;
 * net.c: shd_net_reap).
 *
 * Four nodes, batch_bytes 1024 (16 records of 48 bytes), peer_credits 2;
 * local ranks 0, 1, 2 send.  Checks:
 *   1. node 1: an open batch of 10 records (rank 0: 4, rank 1: 2, rank 2:
 *      4, interleaved); the fabric refuses the next send synchronously; an
 *      append of another job closes the batch, whose send fails: the append
 *      answers -EHOSTDOWN (its record was not taken: the caller counts it),
 *      the peer is PEER_FAILED (queued for the peers step, not carried out:
 *      no peer_lost yet), ev->drops reports exactly 4/2/4 records per
 *      source rank with -EHOSTDOWN and the batch's job, its buffer is back
 *      in the pool once; later appends answer -EHOSTDOWN without reports;
 *   2. node 2: the send of a batch closed by size (the 16th record) fails:
 *      that append answers 0, because its record is in the batch and is
 *      reported through ev->drops (answering -EHOSTDOWN too would make the
 *      relay count it twice): exactly 8/1/7 records;
 *   3. node 3: batches 1 and 2 in flight, batch 3 waiting for credit, a
 *      client waiting, a mark covering batch 3; batch 1 completes with an
 *      error: its 16 records are reported, the peer fails; nothing else
 *      happens before the peers step;
 *   4. shd_net_reap(): ev->peer_lost once per failed node (1, 2, 3), and
 *      for node 3 the waiting batch 3 is reported (rank 0: 5, rank 1: 11)
 *      before its peer_lost; the mark completes as lost; the waiting client
 *      is woken; credit is returned (inflight 0); the nodes leave the
 *      fabric once (and are put back, to be probed: DOWN, not rejoined,
 *      since none of them started a new session); a second reap reports
 *      nothing;
 *   5. batch 2's late error completion reports its 16 records once; every
 *      pool buffer is back exactly once; control messages are not sent to
 *      the down nodes; appends to them answer -EHOSTDOWN.
 * Under ASan (the sanitizer build) nothing is freed twice.
 */
#include "tests/netunit/harness.h"

#define LEN 48u

static struct shd_job *ja, *jb;
static struct h_client *c[3];

static uint64_t down_total(void)
{
	return H.drops_down[0] + H.drops_down[1] + H.drops_down[2];
}

static void check_drops(uint64_t r0, uint64_t r1, uint64_t r2, const char *when)
{
	CHECKF(H.drops_down[0] == r0 && H.drops_down[1] == r1 && H.drops_down[2] == r2,
	       "%s: drops per rank %llu/%llu/%llu, want %llu/%llu/%llu", when,
	       (unsigned long long)H.drops_down[0], (unsigned long long)H.drops_down[1],
	       (unsigned long long)H.drops_down[2], (unsigned long long)r0,
	       (unsigned long long)r1, (unsigned long long)r2);
	for (int r = 0; r < H_MAX_RANKS; r++)
		CHECKF(H.drops_dead[r] == 0, "%s: -ESRCH drops reported for rank %d", when, r);
	CHECK(H.drops_bad == 0);
}

int main(void)
{
	struct h_opts o = h_defaults();
	o.n_nodes = 4;
	o.batch_bytes = 1024;
	o.peer_credits = 2;
	h_open(&o);
	struct shd_net *n = h_net();
	const uint32_t pool_max = n->pool_max;
	ja = h_job("failjob", 16);
	jb = h_job("failjob2", 16);
	for (int32_t r = 4; r < 16; r++) {
		h_rank_on(ja, r, 1 + (uint32_t)(r - 4) / 4);
		h_rank_on(jb, r, 1 + (uint32_t)(r - 4) / 4);
	}
	for (int i = 0; i < 3; i++)
		c[i] = h_client(ja, i, 4096);
	uint32_t type = 0;
	struct shd_peer *p1 = h_peer(1), *p2 = h_peer(2), *p3 = h_peer(3);

	/* ---- 1. node 1: the close of a batch for another job fails */
	h_step("1");
	static const int who1[] = {0, 0, 0, 1, 1, 0, 2, 2, 2, 2};
	for (size_t i = 0; i < sizeof(who1) / sizeof(who1[0]); i++)
		CHECK(h_append(c[who1[i]], 1, ja, 4 + (int32_t)(i % 4), type++, LEN) == 0);
	CHECK(p1->open && p1->enc.count == 10);
	CHECK(h_pool_check() == pool_max - 1);
	fake_fail_nth(FAKE_BATCH, 1, -EIO);
	int r = h_append(c[1], 1, jb, 5, type++, LEN);
	CHECKF(r == -EHOSTDOWN, "append whose batch close failed: %d", r);
	CHECK(fake_n_failed() == 1 && fake_count(1, SHF_WIRE_BATCH) == 0);
	CHECK(p1->state == PEER_FAILED && shd_list_linked(&p1->cold->down_link));
	CHECK(!p1->open);
	check_drops(4, 2, 4, "node 1 failed");
	CHECK(H.drops_job == ja->hash);
	CHECK(p1->cold->st.drops_down == 10);
	CHECK(H.peer_lost[1] == 0);
	CHECK(h_pool_check() == pool_max);
	uint64_t calls = H.drops_calls;
	CHECK(h_append(c[0], 1, ja, 4, type++, LEN) == -EHOSTDOWN);
	CHECK(h_append(c[2], 1, jb, 4, type++, LEN) == -EHOSTDOWN);
	CHECK(H.drops_calls == calls && down_total() == 10);
	CHECK(h_pool_check() == pool_max);

	/* ---- 2. node 2: the send of a batch closed by size fails */
	h_step("2");
	for (int i = 0; i < 15; i++)
		CHECK(h_append(c[i % 2 ? 2 : 0], 2, ja, 8, type++, LEN) == 0); /* 8 x r0, 7 x r2 */
	CHECK(p2->open && p2->enc.count == 15);
	fake_fail_nth(FAKE_BATCH, 1, -ECONNRESET);
	r = h_append(c[1], 2, ja, 9, type++, LEN);
	CHECKF(r == 0, "append whose record went into the failed batch: %d (it is reported "
		       "through ev->drops; -EHOSTDOWN would count it twice)", r);
	CHECK(p2->state == PEER_FAILED && !p2->open);
	check_drops(4 + 8, 2 + 1, 4 + 7, "node 2 failed");
	CHECK(p2->cold->st.drops_down == 16);
	CHECK(h_pool_check() == pool_max);
	CHECK(h_append(c[1], 2, ja, 9, type++, LEN) == -EHOSTDOWN);
	CHECK(H.peer_lost[1] == 0 && H.peer_lost[2] == 0);

	/* ---- 3. node 3: two batches in flight, one waiting, a mark */
	h_step("3");
	for (int i = 0; i < 16; i++)
		CHECK(h_append(c[0], 3, ja, 12, type++, LEN) == 0);
	for (int i = 0; i < 16; i++)
		CHECK(h_append(c[i < 10 ? 1 : 2], 3, ja, 13, type++, LEN) == 0);
	for (int i = 0; i < 16; i++)
		CHECK(h_append(c[i < 5 ? 0 : 1], 3, ja, 14, type++, LEN) == 0);
	CHECK(fake_count(3, SHF_WIRE_BATCH) == 2);
	CHECK(p3->seq_closed == 3 && p3->seq_sent == 2 && !shd_list_empty(&p3->sendq));
	CHECK(h_append(c[2], 3, ja, 15, type++, LEN) == -EAGAIN);
	CHECK(c[2]->c.blocked);
	CHECK(shd_net_mark(D, &c[0]->c) == 1); /* node 3 only: 1 and 2 are failing */
	c[0]->c.mark_need = 1;
	/* node 3's two, and one each for the failed sends to 1 and 2 (returned
	 * when those peers are carried out) */
	CHECK(n->inflight == 4);
	CHECK(h_pool_check() == pool_max - 3);
	long b1 = fake_find(3, SHF_WIRE_BATCH, 0), b2 = fake_find(3, SHF_WIRE_BATCH, 1);
	fake_complete_now((size_t)b1, -EIO);
	CHECK(p3->state == PEER_FAILED);
	check_drops(4 + 8 + 16, 2 + 1, 4 + 7, "node 3 batch 1 failed");
	CHECK(c[0]->acked == 0 && c[2]->c.blocked);
	CHECK(h_pool_check() == pool_max - 2);
	CHECK(H.peer_lost[3] == 0);

	/* ---- 4. the peers step */
	h_step("4: shd_net_reap");
	uint64_t seq_before = H.seq;
	shd_net_reap(D);
	for (uint32_t k = 1; k < 4; k++) {
		CHECKF(H.peer_lost[k] == 1, "node %u: peer_lost %llu times", k,
		       (unsigned long long)H.peer_lost[k]);
		CHECK(h_peer(k)->state == PEER_DOWN && fake_removals(k) == 1);
		CHECK(!fake_node_removed(k)); /* back in the address vector */
	}
	CHECK(H.peer_lost_seq[1] < H.peer_lost_seq[2] && H.peer_lost_seq[2] < H.peer_lost_seq[3]);
	check_drops(4 + 8 + 16 + 5, 2 + 1 + 11, 4 + 7, "after the reap");
	CHECK(H.drops_last_seq > seq_before && H.drops_last_seq < H.peer_lost_seq[3]);
	CHECK(p3->cold->st.drops_down == 32);
	CHECK(c[0]->acked == 1 && c[0]->acked_lost == 1);
	CHECK(!c[2]->c.blocked && !shd_list_linked(&c[2]->c.wait.link));
	CHECK(n->inflight == 0 && shd_list_empty(&p3->sendq) && !p3->open);
	CHECK(shd_list_empty(&n->downq));
	CHECK(h_pool_check() == pool_max - 1); /* batch 2 is still the fabric's */
	uint64_t seq_after = H.seq;
	shd_net_reap(D);
	CHECK(H.seq == seq_after);

	/* ---- 5. late completions, and nothing more to the down nodes */
	h_step("5");
	fake_complete_now((size_t)b2, -EHOSTDOWN);
	check_drops(4 + 8 + 16 + 5, 2 + 1 + 11 + 10, 4 + 7 + 6, "batch 2 completed in error");
	CHECK(h_pool_check() == pool_max);
	CHECK(H.peer_lost[3] == 1 && p3->state == PEER_DOWN);
	size_t sends = fake_n_sends();
	for (uint32_t k = 1; k < 4; k++) {
		uint8_t lb[SHF_WIRE_LEAVE_FIXED + SHF_WIRE_LEAVE_ENT_BYTES];
		struct shf_wire_leave l = {.job_hash = ja->hash, .world = ja->world};
		struct shf_wire_leave_ent le = {0, 1, 0, SHF_WIRE_NODE_NONE, D->node_id};
		long ll = shf_wire_enc_leave(lb, sizeof(lb), D->node_id, k, &l, &le, 1);
		CHECK(ll > 0 && shd_net_send_msg(D, k, lb, (size_t)ll) == -EHOSTDOWN);
	}
	for (uint32_t k = 1; k < 4; k++)
		shd_net_epoch(D, k, SHF_WIRE_EPOCH_UP, ja, 1, SHF_WIRE_EPOCH_PLACED, 3);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_n_sends() == sends && fake_n_unreachable() == 0);
	for (uint32_t k = 1; k < 4; k++)
		CHECK(h_append(c[0], k, ja, 4 * (int32_t)k, type++, LEN) == -EHOSTDOWN);
	CHECK(H.peer_lost[1] == 1 && H.peer_lost[2] == 1 && H.peer_lost[3] == 1);
	fake_complete_all_now(0);
	CHECK(h_pool_check() == pool_max);
	h_close();
	return 0;
}
