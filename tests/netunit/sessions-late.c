/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/sessions-late.c - what is left of an earlier session must
 * not touch the next one: late send completions and queued sends.
 *
 * wire.h: "nothing sent in an earlier session (before a restart or a link
 * flap) is ever taken in a later one"; the same must hold on the sending
 * side.  Two nodes.  Checks:
 *   1. node 1 restarts while our batch 1 (4 records of rank 0) is posted
 *      and not completed; it is carried out, rejoins, and the new session
 *      is UP.  Then the fabric completes the old batch with an error (as
 *      tcp;ofi_rxm does for a send over the dead connection): its 4 records
 *      are reported once (ev->drops, -EHOSTDOWN), and the NEW session stays
 *      UP (no PEER_FAILED, no second peer_lost): the error belongs to the
 *      session that is already gone;
 *   2. the same with a small send of the old session (a heartbeat, through
 *      the fabric's small-message path) completing with an error;
 *   3. a heartbeat that starts a session while every send slot is busy
 *      (the fabric answers -EAGAIN): the daemon's reply waits in the retry
 *      queue and goes out once a slot frees (net/int.h: heartbeats go to a
 *      peer in any state but FAILED; join() answers "at once").
 * Each check is reported without stopping; the exit status is 1 if any
 * failed.
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

/* Node 1 restarts; the old session is carried out and the new one is UP. */
static void restart_and_rejoin(void)
{
	struct shd_peer *p = h_peer(1);
	h_restart(1, 0xdead);
	CHECK(p->state == PEER_FAILED);
	shd_net_reap(D);
	CHECK(H.peer_lost[1] == 1 && p->state == PEER_JOINING);
	h_up(1);
	CHECK(p->state == PEER_UP && H.peer_up[1] == 2);
}

static void late_batch(void)
{
	struct h_opts o = h_defaults();
	h_open(&o);
	h_step("1: a late error completion of the old session's batch");
	struct shd_job *j = h_job("latejob", 8);
	h_rank_on(j, 4, 1);
	struct h_client *c = h_client(j, 0, 4096);
	struct shd_peer *p = h_peer(1);
	for (int i = 0; i < 4; i++)
		CHECK(h_append(c, 1, j, 4, (uint32_t)i, LEN) == 0);
	long b1 = fake_find(1, SHF_WIRE_BATCH, 0);
	CHECK(b1 >= 0 && !fake_send_at((size_t)b1)->done);
	restart_and_rejoin();
	CHECK(H.drops_calls == 0);

	fake_complete_now((size_t)b1, -ECONNRESET);
	SOFT_CHECK(H.drops_down[0] == 4 && H.drops_calls == 1,
		   "the old batch's records reported: %llu of 4 in %llu calls",
		   (unsigned long long)H.drops_down[0], (unsigned long long)H.drops_calls);
	SOFT_CHECK(p->state == PEER_UP,
		   "the new session (UP since the handshake) is now in state %d (%s): the "
		   "error completion of a batch posted in the session before the restart "
		   "failed it (net/tx.c shd_net_send_done: status < 0 && p->state == PEER_UP "
		   "-> shd_net_peer_fail, whatever the session the message belonged to)",
		   (int)p->state, p->cold->down_why);
	shd_net_reap(D);
	SOFT_CHECK(H.peer_lost[1] == 1, "peer_lost(1) %llu times: the new session was carried "
		   "out because of the old one's send", (unsigned long long)H.peer_lost[1]);
	fake_complete_all_now(0);
	CHECK(h_pool_check() == h_net()->pool_max);
	h_close();
}

static void late_small(void)
{
	struct h_opts o = h_defaults();
	h_open(&o);
	h_step("2: a late error completion of the old session's heartbeat");
	struct shd_peer *p = h_peer(1);
	/* a heartbeat of session 1, not completed yet */
	h_advance_us((uint64_t)D->cfg.heartbeat_ms * 1000u);
	long hb = h_last_send(1, SHF_WIRE_HEARTBEAT);
	CHECK(hb >= 0 && !fake_send_at((size_t)hb)->done);
	CHECK(fake_send_at((size_t)hb)->src_session == h_dtag(1));
	restart_and_rejoin();
	fake_complete_now((size_t)hb, -ECONNRESET);
	SOFT_CHECK(p->state == PEER_UP,
		   "the new session is now in state %d (%s): the error completion of a heartbeat "
		   "sent in the session before the restart failed it (net/tx.c "
		   "shd_net_send_done, NET_MSG_INLINE: the per-peer context has no session)",
		   (int)p->state, p->cold->down_why);
	fake_complete_all_now(0);
	h_close();
}

static void busy_reply(void)
{
	struct h_opts o = h_defaults();
	o.manual_up = true;
	h_open(&o);
	h_step("3: the reply to a first heartbeat while every send slot is busy");
	struct shd_peer *p = h_peer(1);
	const size_t hbs = fake_count(1, SHF_WIRE_HEARTBEAT);
	fake_set_eagain(true);
	fake_set_session(1, h_new_tag(1), 0);
	h_recv_heartbeat(1, 7);
	CHECK(p->state == PEER_JOINING);
	CHECK(!shd_list_empty(&h_net()->retry));
	fake_set_eagain(false);
	h_advance_us(1000); /* the retry timer: a slot is free again */
	h_run();
	SOFT_CHECK(fake_count(1, SHF_WIRE_HEARTBEAT) == hbs + 1,
		   "%zu heartbeats to node 1 once a slot freed, want 1: the reply that tells it "
		   "our tag was dropped from the retry queue (net/tx.c shd_net_retry_posts drops "
		   "every queued message of a peer that is not UP, JOINING included)",
		   fake_count(1, SHF_WIRE_HEARTBEAT) - hbs);
	fake_complete_all_now(0);
	h_close();
}

int main(void)
{
	late_batch();
	late_small();
	busy_reply();
	return soft_failed;
}
