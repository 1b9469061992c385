/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/sessions.c - the peer sessions of wire version 2 (net.c:
 * session_admit, join, become_up, on_heartbeat, shd_net_reap; net/tx.c:
 * shd_net_heartbeat, shd_net_session_reset).
 *
 *   A. stale messages: with node 1 UP, a BATCH, an ACK, a JOB_JOIN, a DROP
 *      and a HEARTBEAT whose src_session is 0, another tag of node 1's, or
 *      whose dst_session is not the daemon's tag are each dropped and
 *      counted once in wire_stale (not wire_bad), never processed: nothing
 *      placed, no credit back, no event, the peer stays UP; the same batch
 *      with the right tags is placed afterwards as seq 1;
 *   B. restart: node 1 (UP, batches 1-2 posted, batch 3 waiting for credit,
 *      a mark covering it, batch 1 received) sends a heartbeat of a new
 *      tag: PEER_FAILED, nothing reported yet; at shd_net_reap batch 3's
 *      records are reported through ev->drops (rank 1: 2, rank 0: 1, rank
 *      1: 1: 3 calls, all before peer_lost), peer_lost fires once, the mark
 *      completes as lost, and node 1 is JOINING with the new tag, a fresh
 *      daemon tag told in a heartbeat, sequence numbers at 0; batches of the
 *      old session (seq 1, seq 2) are stale and placed nowhere; after the
 *      handshake a batch seq 1 of the new session is placed and acked as 1,
 *      and the daemon's next batch carries seq 1 and the new tags;
 *   C. a peer that never answers stays UNKNOWN (never FAILED, no
 *      peer_lost) over 30 s of heartbeats (heartbeat_ms 200, peer_timeout_ms
 *      1000) and is probed (a heartbeat of the daemon's tag, dst 0) at most
 *      once a second, but regularly; with heartbeat_ms 1500, every 1.5 s;
 *      when it finally answers, the handshake brings it UP;
 * (Announcing local ranks on a new session is no longer net's: the job
 * layer sends them to each job's home, daemon/jobhome.c, tested by the
 * multi suite's job-start.)
 */
#include "tests/netunit/harness.h"

#define LEN 48u /* 64 wire bytes per record: 4 per 256-byte batch */

/* ---------------------------------------------------------------- A */

static void stale_case(uint32_t node, void *msg, size_t len, uint64_t s, uint64_t t,
		       const char *what)
{
	uint64_t stale = D->st.wire_stale, bad = D->st.wire_bad, ev = H.seq;
	uint64_t in = D->st.batches_in;
	h_step(what);
	h_stamp(msg, s, t);
	CHECK(fake_inject_raw_now(node, msg, len) == 0);
	CHECKF(D->st.wire_stale == stale + 1, "%s: wire_stale +%llu, want +1", what,
	       (unsigned long long)(D->st.wire_stale - stale));
	CHECKF(D->st.wire_bad == bad, "%s: counted as bad", what);
	CHECKF(H.seq == ev, "%s: an event was reported", what);
	CHECKF(D->st.batches_in == in, "%s: a batch was taken", what);
	CHECKF(h_peer(node)->state == PEER_UP, "%s: the peer is now %d", what,
	       (int)h_peer(node)->state);
}

static void test_stale(void)
{
	struct h_opts o = h_defaults();
	h_open(&o);
	struct shd_job *j = h_job("stalejob", 8);
	h_rank_on(j, 4, 1);
	struct h_client *c = h_client(j, 0, 16384);
	struct shd_peer *p = h_peer(1);
	struct shd_net *n = h_net();
	const uint64_t tag = h_tag(1), dtag = h_dtag(1);
	const uint64_t other = h_new_tag(1), odst = dtag ^ 0x5a5a00ull;
	CHECK(tag && dtag && p->cold->my_session == dtag && p->cold->peer_session == tag);
	static struct h_batch b;
	uint8_t buf[SHD_FABRIC_SMALL];
	long len;

	/* a batch in flight from us, for the ACK cases */
	for (uint32_t i = 0; i < 4; i++)
		CHECK(h_append(c, 1, j, 4, i, LEN) == 0);
	CHECK(p->seq_sent == 1 && n->inflight == 1);

	/* BATCH seq 1 for rank 0 */
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 4, 1, 32);
	h_batch_put(&b, 0, 4, 2, 32);
	size_t blen = h_batch_end(&b, 1);
	stale_case(1, b.buf, blen, 0, dtag, "A: batch with src_session 0");
	stale_case(1, b.buf, blen, other, dtag, "A: batch of another tag of node 1");
	stale_case(1, b.buf, blen, tag, odst, "A: batch for another session of ours");
	stale_case(1, b.buf, blen, tag, 0, "A: batch without our tag");
	stale_case(1, b.buf, blen, 0, 0, "A: batch without tags");
	CHECK(p->seq_recv == 0);
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	CHECK(h_consume(c, 16, NULL, NULL) == 0);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 0 && fake_count(1, SHF_WIRE_DROP) == 0);

	/* ACK of our batch 1 */
	struct shf_wire_ack a = {1, o.peer_credits, 0};
	len = shf_wire_enc_ack(buf, sizeof(buf), 1, 0, &a);
	CHECK(len == SHF_WIRE_ACK_BYTES);
	stale_case(1, buf, (size_t)len, other, dtag, "A: ACK of another tag of node 1");
	stale_case(1, buf, (size_t)len, tag, odst, "A: ACK for another session of ours");
	stale_case(1, buf, (size_t)len, 0, dtag, "A: ACK with src_session 0");
	CHECK(p->seq_acked == 0 && n->inflight == 1);

	/* JOB_JOIN, DROP, HEARTBEAT */
	struct shf_wire_join jn = {0};
	jn.world = 8;
	jn.uid = 1000;
	snprintf(jn.name, sizeof(jn.name), "stalejob");
	struct shf_wire_range rg = {4, 1};
	len = shf_wire_enc_join(buf, sizeof(buf), 1, 0, &jn, &rg, 1);
	CHECK(len > 0);
	stale_case(1, buf, (size_t)len, other, dtag, "A: JOB_JOIN of another tag of node 1");
	stale_case(1, buf, (size_t)len, tag, odst, "A: JOB_JOIN for another session of ours");
	struct shf_wire_drop dr = {j->hash, 1, 0, 4, 3, -ESRCH};
	len = shf_wire_enc_drop(buf, sizeof(buf), 1, 0, &dr);
	CHECK(len == SHF_WIRE_DROP_BYTES);
	stale_case(1, buf, (size_t)len, other, dtag, "A: DROP of another tag of node 1");
	stale_case(1, buf, (size_t)len, tag, odst, "A: DROP for another session of ours");
	struct shf_wire_heartbeat hb = {.time_ns = shd_now_ns(), .incarnation = 0x1c0000000001ull};
	len = shf_wire_enc_heartbeat(buf, sizeof(buf), 1, 0, &hb);
	CHECK(len == SHF_WIRE_HEARTBEAT_BYTES);
	/* a heartbeat for another session of ours is no restart either */
	stale_case(1, buf, (size_t)len, other, odst, "A: heartbeat of a new tag for another "
						     "session of ours");
	stale_case(1, buf, (size_t)len, 0, dtag, "A: heartbeat with src_session 0");
	CHECK(H.joined == 0 && H.drops_calls == 0 && H.peer_lost[1] == 0);
	CHECK(p->cold->peer_session == tag && p->cold->my_session == dtag && shd_list_empty(&n->downq));
	CHECK(D->st.wire_stale == 14);

	/* the right tags: taken */
	h_step("A: the same messages with the session's tags");
	h_stamp(b.buf, tag, dtag);
	CHECK(fake_inject_raw_now(1, b.buf, blen) == 0);
	CHECK(p->seq_recv == 1 && D->st.batches_in == 1);
	shd_deliver_publish(D);
	CHECK(h_consume(c, 16, NULL, NULL) == 2);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == 1);
	h_recv_ack(1, 1); /* stamped by the fake fabric with (tag, dtag) */
	CHECK(p->seq_acked == 1 && n->inflight == 0);
	CHECK(D->st.wire_stale == 14 && D->st.wire_bad == 0);
	fake_complete_all_now(0);
	CHECK(h_pool_check() == n->pool_max);
	h_close();
}

/* ---------------------------------------------------------------- B */

static void test_restart(void)
{
	struct h_opts o = h_defaults();
	h_open(&o);
	struct shd_job *j = h_job("restartjob", 8);
	for (int32_t r = 4; r < 8; r++)
		h_rank_on(j, r, 1);
	struct h_client *c0 = h_client(j, 0, 16384), *c1 = h_client(j, 1, 16384);
	struct shd_peer *p = h_peer(1);
	struct shd_net *n = h_net();
	const uint32_t pool_max = n->pool_max;
	const uint64_t tag1 = h_tag(1), dtag1 = h_dtag(1);
	static struct h_batch b;
	uint32_t type = 0;

	/* batch 1 from node 1, placed (its ACK waits for the network step) */
	h_step("B: session 1");
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 4, 500, 32);
	size_t len = h_batch_end(&b, 1);
	CHECK(fake_inject_now(1, b.buf, len) == 0);
	CHECK(p->seq_recv == 1);
	shd_deliver_publish(D);
	CHECK(h_consume(c0, 16, NULL, NULL) == 1);

	/* ours: batch 1 (rank 0 x4) and 2 (rank 0 x2, rank 1 x2) posted, batch
	 * 3 (rank 1 x2, rank 0, rank 1) waiting for credit */
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c0, 1, j, 4, type++, LEN) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(h_append(i < 2 ? c0 : c1, 1, j, 5, type++, LEN) == 0);
	CHECK(h_append(c1, 1, j, 6, type++, LEN) == 0);
	CHECK(h_append(c1, 1, j, 6, type++, LEN) == 0);
	CHECK(h_append(c0, 1, j, 6, type++, LEN) == 0);
	CHECK(h_append(c1, 1, j, 6, type++, LEN) == 0);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == 2);
	CHECK(p->seq_sent == 2 && p->seq_closed == 3 && !p->open && !shd_list_empty(&p->sendq));
	for (size_t k = 0; k < 2; k++) {
		const struct fake_send *s = fake_send_at((size_t)fake_find(1, SHF_WIRE_BATCH, k));
		CHECK(s->src_session == dtag1 && s->dst_session == tag1);
	}
	CHECK(shd_net_mark(D, &c1->c) == 1); /* covers batch 3 */
	c1->c.mark_need = 1;

	/* node 1 restarts */
	h_step("B: the restart heartbeat");
	h_restart(1, 0xbeef);
	const uint64_t tag2 = h_tag(1);
	CHECK(tag2 != tag1);
	CHECK(p->state == PEER_FAILED && shd_list_linked(&p->cold->down_link));
	CHECK(p->cold->next_session == tag2);
	CHECK(H.peer_lost[1] == 0 && H.drops_calls == 0 && c1->acked == 0);
	CHECK(h_append(c0, 1, j, 4, type++, LEN) == -EHOSTDOWN);
	/* nothing more to it, ACK included, before the peers step */
	const size_t acks = fake_count(1, SHF_WIRE_ACK), bats = fake_count(1, SHF_WIRE_BATCH);
	shd_deliver_publish(D);
	shd_net_after_publish(D);
	h_run();
	CHECK(fake_count(1, SHF_WIRE_ACK) == acks && fake_count(1, SHF_WIRE_BATCH) == bats);

	h_step("B: shd_net_reap");
	const size_t hbs = fake_count(1, SHF_WIRE_HEARTBEAT);
	shd_net_reap(D);
	CHECK(H.peer_lost[1] == 1);
	CHECKF(H.drops_down[0] == 1 && H.drops_down[1] == 3,
	       "queued records reported: rank 0 %llu of 1, rank 1 %llu of 3",
	       (unsigned long long)H.drops_down[0], (unsigned long long)H.drops_down[1]);
	CHECK(H.drops_calls == 3 && H.drops_bad == 0 && H.drops_job == j->hash);
	CHECK(H.drops_last_seq < H.peer_lost_seq[1]);
	CHECK(c1->acked == 1 && c1->acked_lost == 1);
	CHECK(p->state == PEER_JOINING && p->cold->peer_session == tag2 && p->cold->incarnation == 0xbeef);
	CHECK(p->cold->my_session != 0 && p->cold->my_session != dtag1);
	CHECK(p->seq_closed == 0 && p->seq_sent == 0 && p->seq_acked == 0 && p->seq_recv == 0);
	CHECK(n->inflight == 0 && !p->open && shd_list_empty(&p->sendq));
	CHECK(fake_removals(1) == 1 && !fake_node_removed(1));
	/* it is told the new tag at once */
	CHECK(fake_count(1, SHF_WIRE_HEARTBEAT) == hbs + 1);
	const struct fake_send *s = fake_send_at((size_t)h_last_send(1, SHF_WIRE_HEARTBEAT));
	CHECK(s->src_session == p->cold->my_session && s->dst_session == tag2);
	shd_net_reap(D);
	CHECK(H.peer_lost[1] == 1 && H.drops_calls == 3);

	/* batches of the old session: stale, placed nowhere */
	h_step("B: old-session batches after the reap");
	uint64_t stale = D->st.wire_stale;
	for (uint64_t seq = 1; seq <= 2; seq++) {
		h_batch_begin(&b, 1, j->hash);
		h_batch_put(&b, 0, 5, 600 + (uint32_t)seq, 32);
		len = h_batch_end(&b, seq);
		h_stamp(b.buf, tag1, dtag1);
		CHECK(fake_inject_raw_now(1, b.buf, len) == 0);
	}
	CHECK(D->st.wire_stale == stale + 2);
	CHECK(p->seq_recv == 0 && D->st.batches_in == 1 && p->state == PEER_JOINING);
	shd_deliver_publish(D);
	CHECK(h_consume(c0, 16, NULL, NULL) == 0);

	/* the handshake of the new session */
	h_step("B: the new session's handshake");
	const uint64_t dtag2 = h_up(1);
	CHECK(dtag2 != dtag1 && H.peer_up[1] == 2);
	CHECK(p->cold->incarnation == 0xbeef);

	/* its batch 1: placed */
	h_batch_begin(&b, 1, j->hash);
	h_batch_put(&b, 0, 5, 700, 32);
	h_batch_put(&b, 1, 5, 701, 32);
	len = h_batch_end(&b, 1);
	CHECK(fake_inject_now(1, b.buf, len) == 0); /* stamped (tag2, dtag2) */
	CHECK(p->seq_recv == 1 && D->st.batches_in == 2);
	shd_deliver_publish(D);
	int32_t src[4];
	uint32_t ty[4];
	CHECK(h_consume(c0, 4, src, ty) == 1 && src[0] == 5 && ty[0] == 700);
	CHECK(h_consume(c1, 4, src, ty) == 1 && src[0] == 5 && ty[0] == 701);
	shd_net_after_publish(D);
	CHECK(fake_count(1, SHF_WIRE_ACK) == acks + 1);
	struct shf_wire_hdr h;
	h_decode((size_t)h_last_send(1, SHF_WIRE_ACK), &h);
	CHECK(h.u.ack.acked_seq == 1 && h.src_session == dtag2 && h.dst_session == tag2);

	/* ours restart at 1 too */
	h_step("B: the daemon's sequence numbers in the new session");
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c0, 1, j, 4, type++, LEN) == 0);
	CHECK(fake_count(1, SHF_WIRE_BATCH) == bats + 1);
	long bi = h_last_send(1, SHF_WIRE_BATCH);
	h_decode((size_t)bi, &h);
	CHECKF(h.u.batch.seq == 1, "first batch of the new session has seq %llu",
	       (unsigned long long)h.u.batch.seq);
	CHECK(h.src_session == dtag2 && h.dst_session == tag2);
	CHECK(n->inflight == 1);
	h_recv_ack(1, 1);
	CHECK(p->seq_acked == 1 && n->inflight == 0);
	/* the old session's batches 1 and 2 complete (delivered before the
	 * restart): buffers back, nothing reported, the new session stays up */
	fake_complete_all_now(0);
	CHECK(p->state == PEER_UP && H.peer_lost[1] == 1 && H.drops_calls == 3);
	CHECK(h_pool_check() == pool_max);
	h_close();
}

/* ---------------------------------------------------------------- C */

static void test_silent(uint32_t heartbeat_ms, uint64_t period_ms)
{
	struct h_opts o = h_defaults();
	o.manual_up = true;
	o.heartbeat_ms = heartbeat_ms;
	o.peer_timeout_ms = 5 * heartbeat_ms > 1000 ? 5 * heartbeat_ms : 1000;
	h_open(&o);
	h_step("C: a silent peer");
	struct shd_peer *p = h_peer(1);
	const uint64_t tag = p->cold->my_session;
	const uint64_t t0 = shd_now_ns();
	uint64_t last = t0; /* the probe of h_open */
	size_t probes = fake_count(1, SHF_WIRE_HEARTBEAT);
	CHECK(probes == 1);
	const uint64_t total_ms = 30000;
	for (uint64_t ms = 50; ms <= total_ms; ms += 50) {
		h_advance_us(50000);
		CHECKF(p->state == PEER_UNKNOWN, "after %llu ms of silence: state %d",
		       (unsigned long long)ms, (int)p->state);
		size_t now_probes = fake_count(1, SHF_WIRE_HEARTBEAT);
		CHECKF(now_probes <= probes + 1, "%zu probes at once", now_probes - probes);
		if (now_probes == probes + 1) {
			uint64_t gap = shd_now_ns() - last;
			CHECKF(gap >= period_ms * 1000000u, "probes %llu ms apart",
			       (unsigned long long)(gap / 1000000u));
			const struct fake_send *s = fake_send_at((size_t)h_last_send(1,
										 SHF_WIRE_HEARTBEAT));
			CHECK(s->src_session == tag && s->dst_session == 0);
			last = shd_now_ns();
			probes = now_probes;
		}
		CHECKF(shd_now_ns() - last < period_ms * 1000000u + 2 * heartbeat_ms * 1000000ull,
		       "no probe for %llu ms", (unsigned long long)((shd_now_ns() - last) / 1000000u));
	}
	CHECKF(probes == 1 + total_ms / period_ms, "%zu probes in %llu ms", probes,
	       (unsigned long long)total_ms);
	CHECK(H.peer_lost[1] == 0 && H.peer_up[1] == 0 && shd_list_empty(&h_net()->downq));
	CHECK(fake_count(1, FAKE_NO_HEARTBEAT) == 0 && fake_n_unreachable() == 0);
	CHECK(p->cold->my_session == tag);
	/* it answers at last */
	CHECK(h_up(1) == tag);
	h_advance_us(3 * heartbeat_ms * 1000ull);
	h_recv_heartbeat(1, 1);
	CHECK(p->state == PEER_UP);
	h_close();
}

/* ---------------------------------------------------------------- D */

int main(void)
{
	test_stale();
	test_restart();
	test_silent(200, 1000);
	test_silent(1500, 1500);
	return 0;
}
