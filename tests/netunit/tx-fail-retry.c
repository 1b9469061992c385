/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/tx-fail-retry.c - batches that wait for a fabric send slot
 * (net->retry, after -EAGAIN) when their peer goes down.
 *
 * net/upcalls.h promises for ev->peer_lost: "node is down; what was queued
 * for it is already dropped and reported".  Three nodes; every send slot
 * is busy (the fake fabric answers -EAGAIN), so node 1's batches 1 (rank 0:
 * 4 records) and 2 (rank 1: 2 records, closed by rank 0's mark) and node
 * 2's batch 1 wait in the retry queue.  Node 1 restarts (a heartbeat of a
 * new session tag and incarnation): PEER_FAILED.  Checks:
 *   - shd_net_reap(): peer_lost(1) once, the node leaves the fabric once
 *     and, having opened its next session already, is JOINING with the
 *     new tag; rank 0's mark completes as lost,
 *     credit is back, and node 1's 6 waiting records are reported through
 *     ev->drops (4 for rank 0, 2 for rank 1) before peer_lost;
 *   - once slots free up, node 2's batch goes out, nothing but heartbeats
 *     (the new handshake) reaches node 1 (nothing of the old session),
 *     node 1's records have been reported exactly once in all (4 and 2),
 *     and every pool buffer is back exactly once.
 * The first group is checked without stopping, so that a failure there
 * still lets the second group run; the exit status is 1 if any failed.
 */
#include "tests/netunit/harness.h"

#define LEN 48u

static int soft_failed;

#define SOFT_CHECK(cond, ...)                                                           \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s: %s:%d: CHECK(%s) failed: ",                \
				program_invocation_short_name, __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			soft_failed = 1;                                                \
		}                                                                       \
	} while (0)

int main(void)
{
	struct h_opts o = h_defaults();
	o.n_nodes = 3;
	h_open(&o);
	struct shd_net *n = h_net();
	const uint32_t pool_max = n->pool_max;
	struct shd_job *j = h_job("retryjob", 8);
	h_rank_on(j, 4, 1);
	h_rank_on(j, 5, 2);
	struct h_client *c0 = h_client(j, 0, 4096), *c1 = h_client(j, 1, 4096);
	struct shd_peer *p1 = h_peer(1);
	uint32_t type = 0;

	h_recv_heartbeat(1, 111);
	CHECK(H.peer_up[1] == 1 && p1->cold->incarnation == 111);

	/* every slot busy: the batches wait in net->retry */
	const size_t sends = fake_n_sends(); /* the handshakes' heartbeats */
	fake_set_eagain(true);
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c0, 2, j, 5, type++, LEN) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c0, 1, j, 4, type++, LEN) == 0);
	CHECK(h_append(c1, 1, j, 4, type++, LEN) == 0);
	CHECK(h_append(c1, 1, j, 4, type++, LEN) == 0);
	CHECK(shd_net_mark(D, &c0->c) == 2); /* closes node 1's batch 2 */
	c0->c.mark_need = 2;
	h_run();
	CHECK(fake_n_sends() == sends && fake_n_eagain() >= 1);
	CHECK(p1->seq_sent == 2 && n->inflight == 3 && !shd_list_empty(&n->retry));
	CHECK(h_pool_check() == pool_max - 3);

	/* node 1 restarted */
	h_restart(1, 222);
	CHECK(p1->state == PEER_FAILED);
	CHECK(H.drops_calls == 0 && H.peer_lost[1] == 0);

	shd_net_reap(D);
	CHECK(H.peer_lost[1] == 1 && fake_removals(1) == 1 && !fake_node_removed(1));
	CHECK(p1->state == PEER_JOINING && p1->cold->peer_session == h_tag(1));
	CHECK(p1->cold->my_session != h_old_dtag(1) && p1->seq_closed == 0);
	CHECK(c0->acked == 1 && c0->acked_lost == 1);
	CHECK(n->inflight == 1); /* node 2's batch */
	SOFT_CHECK(H.drops_down[0] == 4 && H.drops_down[1] == 2,
		   "at ev->peer_lost(1), node 1's 6 queued records (its batches waiting in "
		   "net->retry) are reported: rank 0 %llu of 4, rank 1 %llu of 2",
		   (unsigned long long)H.drops_down[0], (unsigned long long)H.drops_down[1]);
	SOFT_CHECK(H.drops_calls == 0 || H.drops_last_seq < H.peer_lost_seq[1],
		   "drops reported after peer_lost");

	/* slots free again */
	fake_set_eagain(false);
	h_advance_us(1000); /* the retry timer */
	h_run();
	CHECK(fake_count(2, SHF_WIRE_BATCH) == 1);
	CHECKF(fake_count(1, FAKE_NO_HEARTBEAT) == 0, "%zu messages reached node 1 after it "
	       "was carried out", fake_count(1, FAKE_NO_HEARTBEAT));
	CHECKF(H.drops_down[0] == 4 && H.drops_down[1] == 2,
	       "node 1's records reported in all: rank 0 %llu of 4, rank 1 %llu of 2",
	       (unsigned long long)H.drops_down[0], (unsigned long long)H.drops_down[1]);
	CHECK(H.drops_bad == 0 && H.peer_lost[1] == 1);
	CHECK(shd_list_empty(&n->retry));
	fake_complete_all_now(0);
	h_recv_ack(2, 1);
	CHECK(c0->acked == 2 && c0->acked_lost == 1);
	CHECK(n->inflight == 0);
	CHECK(h_pool_check() == pool_max);
	h_close();
	return soft_failed;
}
