/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/rx-drop.c - received records that have nowhere to go
 * (net/rx.c: place_batch's DROP reports), and DROP reports received.
 *
 * Three nodes; job of world 8: ranks 0, 1 here, 2, 3 on node 1, 4 on node
 * 2, 5-7 nowhere.  Checks:
 *   - a batch from node 1 mixing placeable records with records for a rank
 *     on another node, a rank never registered, a rank beyond the world
 *     and a doomed session: the placeable ones are placed; one DROP per
 *     run of equal (src, dst) goes to node 1 with exactly that run's count,
 *     the job, the batch's seq and -ESRCH; msgs_unroutable counts every
 *     dropped record; the ACK (after the publish) says how many were
 *     dropped; nothing goes to node 2;
 *   - a batch of a job we do not know: every record dropped, one DROP;
 *   - dropped records before a full ring: their DROP goes out when the
 *     batch parks, none after it resumes; the ACK's dropped count;
 *   - a DROP received from a peer reaches ev->drops as -ESRCH for the
 *     local source rank with its count.
 */
#include "tests/netunit/harness.h"

#define LEN 24u

struct drop {
	int32_t src, dst;
	uint32_t count;
};

/* The DROPs sent to node so far, from the k-th on, must be exactly these. */
static void check_drops(uint32_t node, size_t k, const struct drop *want, size_t n,
			uint64_t job, uint64_t seq)
{
	CHECKF(fake_count(node, SHF_WIRE_DROP) == k + n, "%zu DROPs to node %u, want %zu",
	       fake_count(node, SHF_WIRE_DROP), node, k + n);
	for (size_t i = 0; i < n; i++) {
		struct shf_wire_hdr h;
		h_decode((size_t)fake_find(node, SHF_WIRE_DROP, k + i), &h);
		CHECKF(h.u.drop.src_rank == want[i].src && h.u.drop.dst_rank == want[i].dst &&
			       h.u.drop.count == want[i].count,
		       "DROP %zu: %d -> %d x %u, want %d -> %d x %u", k + i, h.u.drop.src_rank,
		       h.u.drop.dst_rank, h.u.drop.count, want[i].src, want[i].dst, want[i].count);
		CHECK(h.u.drop.job_hash == job && h.u.drop.seq == seq);
		CHECK(h.u.drop.reason == -ESRCH);
	}
}

static uint32_t last_ack_dropped(uint32_t node, uint64_t *acked)
{
	size_t n = fake_count(node, SHF_WIRE_ACK);
	CHECK(n > 0);
	struct shf_wire_hdr h;
	h_decode((size_t)fake_find(node, SHF_WIRE_ACK, n - 1), &h);
	*acked = h.u.ack.acked_seq;
	return h.u.ack.dropped;
}

int main(void)
{
	struct h_opts o = h_defaults();
	o.n_nodes = 3;
	h_open(&o);
	struct shd_job *j = h_job("dropjob", 8);
	h_rank_on(j, 2, 1);
	h_rank_on(j, 3, 1);
	h_rank_on(j, 4, 2);
	struct h_client *c0 = h_client(j, 0, 4096), *c1 = h_client(j, 1, 4096);
	struct shd_peer *p = h_peer(1);
	static struct h_batch b;
	size_t len;
	uint64_t acked;

	/* ---- a mixed batch */
	c1->c.doomed = true; /* cut off, not reaped yet: takes nothing */
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 2, 1, LEN);
	h_batch_put(&b, 0, 2, 2, LEN);
	for (uint32_t i = 0; i < 3; i++)
		h_batch_put(&b, 4, 2, 10 + i, LEN); /* rank 4 lives on node 2 */
	h_batch_put(&b, 6, 2, 20, LEN);             /* rank 6: nowhere */
	h_batch_put(&b, 0, 3, 3, LEN);
	h_batch_put(&b, 6, 3, 21, LEN);
	h_batch_put(&b, 6, 3, 22, LEN);
	h_batch_put(&b, 4, 2, 13, LEN);             /* the same pair again, later */
	h_batch_put(&b, 12, 3, 30, LEN);            /* beyond the world */
	h_batch_put(&b, 1, 2, 40, LEN);             /* a doomed session */
	h_batch_put(&b, 1, 2, 41, LEN);
	len = h_batch_end(&b, 1);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	static const struct drop want1[] = {{2, 4, 3}, {2, 6, 1}, {3, 6, 2}, {2, 4, 1},
					    {3, 12, 1}, {2, 1, 2}};
	check_drops(1, 0, want1, 6, j->hash, 1);
	CHECK(D->st.msgs_unroutable == 10);
	CHECK(p->seq_recv == 1 && p->cold->st.msgs_in == 3);
	CHECK(fake_count(2, FAKE_NO_HEARTBEAT) == 0);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0);
	shd_deliver_publish(D);
	CHECK(h_consume(c0, 16, NULL, NULL) == 3);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	CHECK(last_ack_dropped(1, &acked) == 10 && acked == 1);
	c1->c.doomed = false;

	/* ---- a job nobody here knows */
	uint64_t other = shf_wire_job_hash("no-such-job");
	h_batch_begin(&b, 1, other);
	for (uint32_t i = 0; i < 3; i++)
		h_batch_put(&b, 0, 1, 50 + i, LEN);
	len = h_batch_end(&b, 2);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	static const struct drop want2[] = {{1, 0, 3}};
	check_drops(1, 6, want2, 1, other, 2);
	CHECK(D->st.msgs_unroutable == 13);
	shd_deliver_publish(D);
	CHECK(h_consume(c0, 16, NULL, NULL) == 0);
	shd_net_after_publish(D);
	CHECK(last_ack_dropped(1, &acked) == 3 && acked == 2);

	/* ---- drops ahead of a full ring */
	uint32_t filled = h_fill_ring(c0, 500);
	CHECK(filled >= 1);
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 5, 3, 60, LEN);
	h_batch_put(&b, 5, 3, 61, LEN);
	h_batch_put(&b, 0, 3, 62, 500); /* parks here */
	h_batch_put(&b, 0, 3, 63, LEN);
	len = h_batch_end(&b, 3);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p->rx_waiting);
	static const struct drop want3[] = {{3, 5, 2}};
	check_drops(1, 7, want3, 1, j->hash, 3);
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 2);
	CHECK(h_consume(c0, 64, NULL, NULL) == filled);
	shd_deliver_wake(&c0->c);
	CHECK(!p->rx_waiting && p->seq_recv == 3);
	CHECK(fake_count(1, SHF_WIRE_DROP) == 8); /* nothing more */
	shd_deliver_publish(D);
	int32_t s[4];
	uint32_t t[4];
	CHECK(h_consume(c0, 4, s, t) == 2 && t[0] == 62 && t[1] == 63 && s[0] == 3);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 3);
	CHECK(last_ack_dropped(1, &acked) == 2 && acked == 3);
	CHECK(D->st.msgs_unroutable == 15);

	/* ---- a DROP report from node 1 about our rank 0's records */
	uint8_t buf[SHF_WIRE_DROP_BYTES];
	struct shf_wire_drop dr = {j->hash, 7, 0, 2, 5, -ESRCH};
	long n = shf_wire_enc_drop(buf, sizeof(buf), 1, 0, &dr);
	CHECK(n == SHF_WIRE_DROP_BYTES);
	CHECK(fake_inject_now(1, buf, (size_t)n) == 0);
	CHECK(H.drops_calls == 1 && H.drops_dead[0] == 5 && H.drops_job == j->hash);
	CHECK(H.drops_down[0] == 0 && H.drops_bad == 0);
	h_close();
	return 0;
}
