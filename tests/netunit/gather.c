/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/gather.c - daemon/gather.c over the real net/tx.c: a relay
 * turn's remote messages written into the batches as runs per destination
 * rank.  Checked in the batches sent: every message exactly once, each
 * pair's in order, runs within their limits (256 items, 16 KiB), a lone
 * message or one too large for a run as a message record, run padding zero
 * whatever the ring held there, the room reserved never overrun (several
 * batches), a pair's messages of one type and length as packed runs
 * (padding zero), and a message that meets no credit comes back -EAGAIN
 * with what was noted before it written at the flush.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/gather.h"
#include "tests/netunit/harness.h"

#define MAXM (20u << 10)

/* The messages a test notes: payloads stay put until the flush, as a
 * send ring's do.  Each is 8-aligned with garbage after its length up to
 * the padded length (a ring's padding is whatever the client left). */
static uint8_t *bufs[4096];
static int32_t dsts[4096];
static uint32_t lens[4096];
static uint32_t nb;

static int note(struct h_client *c, uint32_t node, int32_t dst, uint32_t len)
{
	uint32_t k = nb;
	CHECK(k < 4096);
	if (!bufs[k]) {
		bufs[k] = aligned_alloc(8, MAXM + 8);
		CHECK(bufs[k]);
	}
	memset(bufs[k], 0xa5, MAXM + 8);
	h_fill(bufs[k], c->c.rank, dst, k, len);
	int r = shd_gather_msg(D, &c->c, node, dst, k, bufs[k], len);
	if (r == 0) {
		dsts[k] = dst;
		lens[k] = len;
		nb++;
	}
	return r;
}

/* What the batches sent to node 1 carried, from send `from` on. */
static uint32_t seen_type[8192], seen_n, runs, records, big_records;

static void on_msg(const struct shf_wire_rec *r, void *arg)
{
	(void)arg;
	CHECK(seen_n < 8192);
	CHECKF(r->type < nb && r->dst_rank == dsts[r->type] && r->len == lens[r->type],
	       "message %u: dst %d len %u", r->type, r->dst_rank, r->len);
	seen_type[seen_n++] = r->type;
}

static void walk_batches(size_t from)
{
	seen_n = runs = records = big_records = 0;
	for (size_t k = from; k < fake_count(1, SHF_WIRE_BATCH); k++) {
		long i = fake_find(1, SHF_WIRE_BATCH, k);
		CHECK(i >= 0);
		struct shf_wire_hdr h;
		h_decode((size_t)i, &h);
		const struct fake_send *s = fake_send_at((size_t)i);
		struct shf_wire_iter it;
		struct shf_wire_rec r;
		shf_wire_iter_init(&it, s->bytes, &h, MAXM);
		while (shf_wire_iter_next(&it, &r) == 1) {
			records++;
			if (r.count) {
				CHECK(r.count >= 2 && r.count <= SHF_RUN_MAX_COUNT &&
				      r.len <= SHF_RUN_MAX_BYTES);
				runs++;
			} else if (r.len > SHF_RUN_MAX_BYTES - SHF_RUN_ITEM_BYTES) {
				big_records++;
			}
		}
		CHECKF(it.err == 0, "batch %zu: a record the receiver refuses", k);
		h_batch_records((size_t)i, on_msg, NULL); /* patterns, runs expanded */
	}
}

/* Every noted message once, in order per destination. */
static void check_all(uint32_t first, uint32_t last)
{
	CHECKF(seen_n == last - first, "%u messages in the batches, %u noted", seen_n,
	       last - first);
	static char once[4096];
	memset(once, 0, sizeof(once));
	int32_t prev[64];
	for (int i = 0; i < 64; i++)
		prev[i] = -1;
	for (uint32_t i = 0; i < seen_n; i++) {
		uint32_t t = seen_type[i];
		CHECKF(t >= first && t < last && !once[t], "message %u twice or unknown", t);
		once[t] = 1;
		CHECKF((int32_t)t > prev[dsts[t] % 64], "message %u to %d after %d: out of order", t,
		       dsts[t], prev[dsts[t] % 64]);
		prev[dsts[t] % 64] = (int32_t)t;
	}
}

int main(void)
{
	struct h_opts o = h_defaults();
	o.batch_bytes = 64u << 10;
	o.max_msg = MAXM;
	o.peer_credits = 64;
	h_open(&o);
	struct shd_job *j = h_job("gjob", 16);
	for (int32_t r = 4; r < 16; r++)
		h_rank_on(j, r, 1);
	struct h_client *c = h_client(j, 0, 4096);

	h_step("runs per destination, a lone message as a record");
	/* 4, 5, 4, 6, 4, 5, 4, 7: rank 4 four, 5 two, 6 and 7 one each */
	static const int32_t seq[] = {4, 5, 4, 6, 4, 5, 4, 7};
	for (unsigned i = 0; i < 8; i++)
		CHECK(note(c, 1, seq[i], 3 + i) == 0);
	shd_gather_flush(D, &c->c);
	CHECK(shd_net_mark(D, &c->c) == 1); /* closes the open batch: sent */
	walk_batches(0);
	check_all(0, 8);
	CHECKF(records == 4 && runs == 2, "%u records, %u runs: want a run for 4, one for 5, "
	       "a record each for 6 and 7", records, runs);
	/* the counters count messages, a run its items (they equal the
	 * receivers' batch_msgs_in and the senders' msgs_remote) */
	CHECKF(D->st.batch_msgs_out == 8 && h_peer(1)->cold->st.msgs_out == 8,
	       "batch_msgs_out %llu, peer msgs_out %llu: want 8",
	       (unsigned long long)D->st.batch_msgs_out,
	       (unsigned long long)h_peer(1)->cold->st.msgs_out);
	h_recv_ack(1, 1);

	h_step("run limits; a message too large for a run stays a record");
	size_t from = fake_count(1, SHF_WIRE_BATCH);
	uint32_t first = nb;
	for (unsigned i = 0; i < 300; i++) /* 300 x 8 B to rank 8: 256 + 44 */
		CHECK(note(c, 1, 8, 8) == 0);
	CHECK(note(c, 1, 9, 100) == 0);
	CHECK(note(c, 1, 9, 17000) == 0);  /* > 16 KiB: a record, between 9's runs */
	CHECK(note(c, 1, 9, 100) == 0);
	CHECK(note(c, 1, 9, 100) == 0);
	for (unsigned i = 0; i < 40; i++) /* 40 x 1000 B to rank 10: 16 KiB limits them */
		CHECK(note(c, 1, 10, 1000) == 0);
	shd_gather_flush(D, &c->c);
	CHECK(shd_net_mark(D, &c->c) >= 1);
	walk_batches(from);
	check_all(first, nb);
	CHECKF(big_records == 1, "%u records over a run's size", big_records);
	/* rank 8: 2 runs; rank 9: a lone message, the record, a run of 2;
	 * rank 10: 1008 B an item, 16 of them in 16 KiB: 3 runs */
	CHECKF(runs == 6 && records == 8, "%u runs, %u records", runs, records);

	h_step("one type and length: packed runs");
	{
		/* 300 x 13 B to rank 11 and 50 x 13 B to rank 12, interleaved, of
		 * one type: packed runs of 256 + 44 and 50, each payload its
		 * index (4 bytes) then garbage the padding must not carry */
		from = fake_count(1, SHF_WIRE_BATCH);
		static uint8_t pb[350][16];
		uint32_t sent11 = 0, sent12 = 0;
		for (uint32_t i = 0; i < 350; i++) {
			int32_t dst = i % 7 == 3 ? 12 : 11;
			uint32_t idx = dst == 11 ? sent11++ : sent12++;
			memset(pb[i], 0xa5, sizeof(pb[i]));
			memcpy(pb[i], &idx, 4);
			CHECK(shd_gather_msg(D, &c->c, 1, dst, 777, pb[i], 13) == 0);
		}
		CHECK(sent11 == 300 && sent12 == 50);
		shd_gather_flush(D, &c->c);
		CHECK(shd_net_mark(D, &c->c) >= 1);
		uint32_t next[2] = {0, 0}, packed = 0;
		for (size_t k = from; k < fake_count(1, SHF_WIRE_BATCH); k++) {
			long i = fake_find(1, SHF_WIRE_BATCH, k);
			struct shf_wire_hdr h;
			h_decode((size_t)i, &h);
			struct shf_wire_iter it;
			struct shf_wire_rec r;
			shf_wire_iter_init(&it, fake_send_at((size_t)i)->bytes, &h, MAXM);
			while (shf_wire_iter_next(&it, &r) == 1) {
				CHECKF(r.count >= 2 && r.packed && r.payload == 13 * r.count &&
					       (r.dst_rank == 11 || r.dst_rank == 12),
				       "a record of %u messages to %d, packed %d", r.count, r.dst_rank,
				       r.packed);
				packed++;
				struct shf_run_item ri;
				memcpy(&ri, r.data, sizeof(ri));
				CHECK(ri.type == 777 && ri.len == 13);
				const uint8_t *q = (const uint8_t *)r.data + SHF_RUN_ITEM_BYTES;
				for (uint32_t m = 0; m < r.count; m++, q += 16) {
					uint32_t idx;
					memcpy(&idx, q, 4);
					CHECKF(idx == next[r.dst_rank - 11]++, "rank %d: message %u, want %u",
					       r.dst_rank, idx, next[r.dst_rank - 11] - 1);
					CHECK(q[12] == 0xa5 && q[13] == 0 && q[14] == 0 && q[15] == 0);
				}
			}
			CHECKF(it.err == 0, "batch %zu: a record the receiver refuses", k);
		}
		CHECKF(packed == 3 && next[0] == 300 && next[1] == 50,
		       "%u packed runs, %u and %u messages", packed, next[0], next[1]);
		h_recv_ack(1, h_peer(1)->seq_sent);
	}

	h_step("room: more than a batch holds, in several batches");
	from = fake_count(1, SHF_WIRE_BATCH);
	first = nb;
	for (unsigned i = 0; i < 600; i++) /* 600 x 500 B: about 5 batches of 64 KiB */
		CHECK(note(c, 1, 4 + (int32_t)(i % 7), 500) == 0);
	shd_gather_flush(D, &c->c);
	CHECK(shd_net_mark(D, &c->c) >= 1);
	CHECKF(fake_count(1, SHF_WIRE_BATCH) - from >= 4, "%zu batches",
	       fake_count(1, SHF_WIRE_BATCH) - from);
	walk_batches(from);
	check_all(first, nb);
	h_recv_ack(1, h_peer(1)->seq_sent);

	h_step("no credit: -EAGAIN, what was noted before goes at the flush");
	h_close();
	o = h_defaults();
	o.batch_bytes = 1024;
	o.max_msg = 1024;
	o.peer_credits = 1;
	h_open(&o);
	j = h_job("gjob2", 16);
	for (int32_t r = 4; r < 16; r++)
		h_rank_on(j, r, 1);
	c = h_client(j, 0, 4096);
	nb = 0;
	int r = 0;
	uint32_t k = 0;
	for (; k < 200 && (r = note(c, 1, 4 + (int32_t)(k % 3), 40)) == 0; k++)
		;
	CHECKF(r == -EAGAIN && c->c.blocked, "message %u: %d, want -EAGAIN", k, r);
	shd_gather_flush(D, &c->c);
	h_run();
	h_recv_ack(1, h_peer(1)->seq_sent); /* credit back: the waiting batch goes */
	CHECK(shd_net_mark(D, &c->c) >= 1);  /* closes the one the flush wrote into */
	h_recv_ack(1, h_peer(1)->seq_sent);  /* and it goes */
	walk_batches(0);
	check_all(0, nb);
	CHECKF(nb == k && nb > 20, "%u noted before the credit ran out", nb);

	h_close();
	for (unsigned i = 0; i < 4096; i++)
		free(bufs[i]);
	return check_result() ? 1 : 0;
}
