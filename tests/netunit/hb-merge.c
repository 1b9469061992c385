/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/hb-merge.c - heartbeats that wait for a send slot are
 * bounded: at most one per peer (net/post.c, small_send; docs/protocol-wire.md,
 * "HEARTBEAT").
 *
 * Sixteen nodes, all up.  Every send slot stays busy (the fake fabric
 * answers -EAGAIN) for six heartbeat periods.  Checks:
 *   - the retry queue holds one heartbeat per peer, not one per peer and
 *     round (15, not 90), and hb_merged counts the 75 that took an older
 *     one's place;
 *   - the one waiting is the newest: its time is the last round's;
 *   - once slots free up, each peer gets exactly that one heartbeat,
 *     nothing else is lost or added, and no peer failed;
 *   - a peer that restarts while its heartbeat waits: the old session's
 *     copy is dropped and the new session's handshake heartbeat waits on
 *     its own (never written into the old one), and goes out.
 */
#include "tests/netunit/harness.h"

#define N 16u
#define ROUNDS 6u

static size_t retry_len(struct shd_net *n, uint32_t *per_node)
{
	size_t k = 0;
	for (struct shd_list *q = n->retry.next; q != &n->retry; q = q->next) {
		struct net_msg *m = shd_container_of(q, struct net_msg, link);
		CHECK(m->kind == NET_MSG_SMALL);
		per_node[m->peer->node]++;
		k++;
	}
	return k;
}

static uint64_t waiting_time(const struct shd_peer *p)
{
	const struct net_msg *m = p->cold->hb_wait;
	CHECK(m);
	struct shf_wire_hdr h;
	CHECK(shf_wire_check(m->buf, m->len, N, p->node, &h) == 0);
	CHECK(h.kind == SHF_WIRE_HEARTBEAT);
	return h.u.heartbeat.time_ns;
}

int main(void)
{
	h_watchdog(20);
	struct h_opts o = h_defaults();
	o.n_nodes = N;
	o.peer_timeout_ms = 60000; /* the fake peers stay silent: nobody times out here */
	h_open(&o);
	struct shd_net *n = h_net();
	for (uint32_t i = 1; i < N; i++)
		CHECK(h_peer(i)->state == PEER_UP);

	size_t before[N];
	for (uint32_t i = 1; i < N; i++)
		before[i] = fake_count(i, SHF_WIRE_HEARTBEAT);
	const size_t other = fake_count(FAKE_ANY_NODE, FAKE_NO_HEARTBEAT);

	h_step("every slot busy for six rounds");
	fake_set_eagain(true);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		h_advance_us((uint64_t)1000 * 1000);
		h_run();
	}
	uint32_t per_node[N] = {0};
	size_t k = retry_len(n, per_node);
	CHECKF(k == N - 1, "%zu heartbeats wait for a slot, not one per peer (%u)", k, N - 1);
	for (uint32_t i = 1; i < N; i++)
		CHECKF(per_node[i] == 1, "node %u: %u heartbeats wait", i, per_node[i]);
	CHECKF(D->st.hb_merged == (N - 1) * (ROUNDS - 1), "hb_merged %llu",
	       (unsigned long long)D->st.hb_merged);
	const uint64_t last = shd_now_ns();
	for (uint32_t i = 1; i < N; i++)
		CHECKF(waiting_time(h_peer(i)) + 1000u * 1000u * 1000u > last,
		       "node %u: the waiting heartbeat is not the last round's", i);

	h_step("slots free");
	fake_set_eagain(false);
	h_advance_us(2000); /* the retry timer, not the next round */
	h_run();
	CHECK(shd_list_empty(&n->retry));
	for (uint32_t i = 1; i < N; i++) {
		size_t got = fake_count(i, SHF_WIRE_HEARTBEAT) - before[i];
		CHECKF(got == 1, "node %u got %zu heartbeats", i, got);
		CHECK(h_peer(i)->cold->hb_wait == NULL);
		CHECK(h_peer(i)->state == PEER_UP && H.peer_lost[i] == 0);
	}
	CHECK(fake_count(FAKE_ANY_NODE, FAKE_NO_HEARTBEAT) == other);

	h_step("a restart while a heartbeat waits");
	fake_set_eagain(true);
	h_advance_us((uint64_t)1000 * 1000);
	h_run();
	struct shd_peer *p3 = h_peer(3);
	struct net_msg *old = p3->cold->hb_wait;
	CHECK(old && old->gen == p3->gen);
	h_restart(3, 333);
	CHECK(p3->state == PEER_FAILED);
	shd_net_reap(D); /* drops its queued copy (of the ended session) */
	CHECK(H.peer_lost[3] == 1);
	CHECK(p3->cold->hb_wait == NULL || p3->cold->hb_wait->gen == p3->gen);
	h_advance_us((uint64_t)1000 * 1000); /* a round: the handshake's heartbeat to it */
	h_run();
	CHECK(p3->cold->hb_wait && p3->cold->hb_wait->gen == p3->gen);
	memset(per_node, 0, sizeof(per_node));
	CHECK(retry_len(n, per_node) == N - 1 && per_node[3] == 1);
	size_t b3 = fake_count(3, SHF_WIRE_HEARTBEAT);
	fake_set_eagain(false);
	h_advance_us(2000);
	h_run();
	CHECK(shd_list_empty(&n->retry) && p3->cold->hb_wait == NULL);
	CHECK(fake_count(3, SHF_WIRE_HEARTBEAT) - b3 >= 1);
	const struct fake_send *s = fake_send_at((size_t)h_last_send(3, SHF_WIRE_HEARTBEAT));
	CHECK(s->src_session == p3->cold->my_session); /* of the new session */

	h_close();
	printf("hb-merge: ok\n");
	return 0;
}
