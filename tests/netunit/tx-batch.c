/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/tx-batch.c - the sending half's batches (net/tx.c).
 *
 * Checks, with batch_bytes 256 and 48-byte messages (64 bytes each on the
 * wire) toward node 1, peer_credits 2:
 *   - appends fill the open batch and nothing is sent until it reaches
 *     batch_bytes; the 4th record closes and posts it (40 + 256 bytes);
 *   - the batches carry sequence numbers 1, 2, 3, ... and every record
 *     intact and in append order;
 *   - credit: two batches are posted, the third waits (sendq), the next
 *     append answers -EAGAIN with the client linked as a waiter and a
 *     credit stall counted; an ACK of batch 1 posts batch 3 and wakes the
 *     client; ACKs at or below what was acked, or beyond what was sent,
 *     change nothing (the latter counts wire_bad);
 *   - a mark taken while batches 1-3 are unacknowledged needs one peer and
 *     completes (ev->mark_acked, not lost) exactly when batch 3, the one
 *     covering it, is acked; a mark with the open batch closes it (a flush)
 *     and covers it; a mark with nothing unacknowledged needs nobody;
 *   - a batch holding records younger than linger_us stays; the linger
 *     timer closes it; a change of job closes the batch;
 *   - counters (batches_out, batch_msgs_out, by_size/linger/flush) and the
 *     pool: after every completion each buffer is back exactly once;
 *   - shd_net_forget: the ACK covering a departed client's mark reports
 *     nothing to it.
 */
#include "tests/netunit/harness.h"

#define LEN 48u /* 16 + 48 = 64 wire bytes per record */

struct expect {
	int32_t src, dst;
	uint32_t next_type;
	uint32_t n;
};

static void check_rec(const struct shf_wire_rec *r, void *arg)
{
	struct expect *e = arg;
	CHECKF(r->src_rank == e->src && r->dst_rank == e->dst, "record %u: %d -> %d", e->n,
	       r->src_rank, r->dst_rank);
	CHECKF(r->type == e->next_type, "record %u: type %u, want %u (append order)", e->n,
	       r->type, e->next_type);
	CHECK(r->len == LEN);
	e->next_type++;
	e->n++;
}

/* The batch sends to node 1, in order: check seq k+1 of the k-th. */
static void check_batch(size_t k, uint64_t seq, uint32_t first_type, uint32_t count)
{
	long i = fake_find(1, SHF_WIRE_BATCH, k);
	CHECKF(i >= 0, "batch send %zu to node 1 missing", k);
	struct shf_wire_hdr h;
	h_decode((size_t)i, &h);
	CHECKF(h.u.batch.seq == seq, "batch %zu has seq %llu, want %llu", k,
	       (unsigned long long)h.u.batch.seq, (unsigned long long)seq);
	CHECK(h.u.batch.count == count);
	CHECK(h.len == SHF_WIRE_BATCH_HDR + count * (SHF_WIRE_REC_HDR + LEN));
	struct expect e = {0, 5, first_type, 0};
	CHECK(h_batch_records((size_t)i, check_rec, &e) == count);
}

int main(void)
{
	struct h_opts o = h_defaults();
	h_open(&o);
	struct shd_job *j = h_job("txjob", 8);
	struct shd_job *j2 = h_job("txjob2", 8);
	h_rank_on(j, 5, 1);
	h_rank_on(j2, 5, 1);
	struct h_client *c = h_client(j, 0, 4096);
	struct shd_peer *p = h_peer(1);
	struct shd_net *n = h_net();
	const uint32_t pool_max = n->pool_max;
	CHECK(h_pool_check() == pool_max);
	uint32_t type = 0;

	/* 1. three records: an open batch, nothing sent */
	for (int i = 0; i < 3; i++)
		CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 0);
	CHECK(p->open && p->enc.count == 3 && p->seq_closed == 0);
	CHECK(h_pool_check() == pool_max - 1);

	/* the fourth reaches batch_bytes: closed, seq 1, posted */
	CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	CHECK(!p->open);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 1);
	check_batch(0, 1, 0, 4);
	CHECK(p->seq_closed == 1 && p->seq_sent == 1 && p->seq_acked == 0 && n->inflight == 1);

	/* 2. batch 2: posted (second credit) */
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 2);
	check_batch(1, 2, 4, 4);
	CHECK(p->seq_sent == 2 && n->inflight == 2);

	/* 3. batch 3: closed, but no credit: it waits */
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 2);
	CHECK(p->seq_closed == 3 && p->seq_sent == 2 && !shd_list_empty(&p->sendq));
	CHECK(n->inflight == 2);

	/* the next record has nowhere to go: head-of-line wait */
	uint64_t stalls = D->st.credit_stalls;
	CHECK(h_append(c, 1, j, 5, type, LEN) == -EAGAIN);
	CHECK(c->c.blocked && shd_list_linked(&c->c.wait.link));
	CHECK(D->st.credit_stalls == stalls + 1 && p->cold->st.credit_stalls == 1);
	CHECK(!p->open);

	/* 4. a mark now covers batches up to 3 */
	CHECK(shd_net_mark(D, &c->c) == 1);
	c->c.mark_need = 1;
	CHECK(c->acked == 0);

	/* ACK 1: credit back, batch 3 posted, the client woken */
	h_recv_ack(1, 1);
	CHECK(H.peer_up[1] == 1);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 3);
	check_batch(2, 3, 8, 4);
	CHECK(p->seq_acked == 1 && p->seq_sent == 3 && n->inflight == 2);
	CHECK(shd_list_empty(&p->sendq));
	CHECK(!c->c.blocked && !shd_list_linked(&c->c.wait.link));
	CHECK(c->acked == 0);

	/* the woken client retries: a new open batch */
	CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	CHECK(p->open && p->enc.count == 1);

	/* ACK 2: the mark still waits for batch 3 */
	h_recv_ack(1, 2);
	CHECK(c->acked == 0);
	CHECK(p->seq_acked == 2 && n->inflight == 1);
	/* stale and duplicate ACKs change nothing */
	uint64_t bad = D->st.wire_bad;
	h_recv_ack(1, 1);
	h_recv_ack(1, 2);
	CHECK(p->seq_acked == 2 && n->inflight == 1 && D->st.wire_bad == bad);
	/* an ACK beyond what was sent is refused */
	h_recv_ack(1, 9);
	CHECK(p->seq_acked == 2 && n->inflight == 1 && D->st.wire_bad == bad + 1);
	CHECK(c->acked == 0);

	/* ACK 3: the batch that covers the mark: done, not lost */
	h_recv_ack(1, 3);
	CHECK(c->acked == 1 && c->acked_lost == 0);
	CHECK(p->seq_acked == 3 && n->inflight == 0);
	c->c.mark_need = 0;

	/* 5. a mark with the open batch (1 record) flushes it: seq 4 */
	uint64_t by_flush = D->st.batches_by_flush;
	CHECK(shd_net_mark(D, &c->c) == 1);
	c->c.mark_need = 1;
	CHECK(!p->open && D->st.batches_by_flush == by_flush + 1);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 4);
	check_batch(3, 4, 12, 1);
	CHECK(c->acked == 1);
	h_recv_ack(1, 4);
	CHECK(c->acked == 2 && c->acked_lost == 0);
	c->c.mark_need = 0;

	/* a mark when everything sent is acked needs nobody */
	CHECK(shd_net_mark(D, &c->c) == 0);

	/* 6. linger: a young batch stays, an old one is closed by the timer */
	type = 13;
	CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	uint64_t by_linger = D->st.batches_by_linger;
	h_advance_us(o.linger_us / 2);
	CHECK(p->open && fake_count(1, SHF_WIRE_BATCH) == 4);
	h_advance_us(o.linger_us);
	CHECK(!p->open);
	CHECK(D->st.batches_by_linger == by_linger + 1);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 5);
	check_batch(4, 5, 13, 2);

	/* 7. another job closes the batch (a batch is one job's) */
	CHECK(h_append(c, 1, j, 5, type++, LEN) == 0);
	uint64_t by_size = D->st.batches_by_size;
	CHECK(h_append(c, 1, j2, 5, 100, LEN) == 0);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 6);
	check_batch(5, 6, 15, 1);
	CHECK(D->st.batches_by_size == by_size + 1);
	CHECK(p->open && p->enc.job_hash == j2->hash && p->enc.count == 1);
	CHECK(n->inflight == 2); /* batches 5 and 6: credit for batch 7 needs an ACK */
	h_recv_ack(1, 5);
	h_advance_us(2 * o.linger_us);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 7);
	long last = fake_find(1, SHF_WIRE_BATCH, 6);
	struct shf_wire_hdr h;
	h_decode((size_t)last, &h);
	CHECK(h.u.batch.seq == 7 && h.u.batch.job_hash == j2->hash && h.u.batch.count == 1);

	/* sequence numbers strictly increase by one */
	for (size_t k = 0; k < 7; k++) {
		h_decode((size_t)fake_find(1, SHF_WIRE_BATCH, k), &h);
		CHECK(h.u.batch.seq == k + 1);
	}

	/* counters: 7 batches, 4+4+4+1+2+1+1 records */
	CHECK(D->st.batches_out == 7 && p->cold->st.batches_out == 7);
	CHECK(D->st.batch_msgs_out == 17 && p->cold->st.msgs_out == 17);

	/* 8. every completion gives its buffer back, once */
	CHECK(h_pool_check() == pool_max - 7);
	fake_complete_all_now(0);
	CHECK(h_pool_check() == pool_max);
	CHECK(p->state == PEER_UP && H.drops_calls == 0 && H.peer_lost[1] == 0);
	h_recv_ack(1, 7);
	CHECK(n->inflight == 0);

	/* 9. a client that goes away is forgotten by its pending mark */
	CHECK(h_append(c, 1, j, 5, 200, LEN) == 0);
	CHECK(shd_net_mark(D, &c->c) == 1); /* flushes batch 8 */
	c->c.mark_need = 1;
	shd_net_forget(D, &c->c);
	uint64_t acked = c->acked;
	h_recv_ack(1, 8);
	CHECK(c->acked == acked && p->seq_acked == 8 && shd_list_empty(&p->cold->marks));
	fake_complete_all_now(0);
	CHECK(h_pool_check() == pool_max);
	h_close();
	return 0;
}
