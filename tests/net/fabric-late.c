/* SPDX-License-Identifier: MIT */
/*
 * tests/net/fabric-late.c - sends to a peer that is not listening yet.
 *
 * Node 0 (127.0.0.2) inserts node 1 by host:port before node 1 exists and
 * sends M messages at once.  Node 1 (127.0.0.3, that port) starts 1 s
 * later.  Checks: the sends are queued (the -FI_EAGAIN path:
 * shd_fabric_has_pending() is true and the queued counter moves), nothing
 * fails in the meantime, and once node 1 listens every message arrives
 * intact and exactly once, driven only by the retry timer of the loop
 * (the CQ fd does not fire for a peer that was not listening).  Then node
 * 1 answers, so the late side's sends work too.  Meanwhile node 0 also
 * queues sends to a node 2 that never comes and removes it: those sends
 * complete with -EHOSTDOWN, the others are unaffected, and the node can be
 * inserted again.
 */
#include "net-common.h"

#define M 40u
#define LEN 512u
#define MAGIC 0x4c415445u /* "LATE" */

struct side {
	struct shd_fabric *f;
	uint32_t me, peer;
	uint8_t bufs[M][LEN];
	uint32_t sent_done;
	uint32_t got;
	uint8_t seen[M];
	uint32_t hostdown;   /* sends completed with -EHOSTDOWN (node 2) */
};

#define NODE2_CTX ((uintptr_t)1000)

static void fill(uint8_t *b, uint32_t src, uint32_t i)
{
	uint32_t h[2] = {MAGIC, i};
	memcpy(b, h, sizeof(h));
	for (uint32_t k = sizeof(h); k < LEN; k++)
		b[k] = (uint8_t)(src * 13 + i * 7 + k);
}

static int on_recv(void *arg, uint32_t node, void *buf, size_t len)
{
	struct side *s = arg;
	uint32_t h[2];
	T_ASSERT(len == LEN, "length %zu", len);
	memcpy(h, buf, sizeof(h));
	T_ASSERT(h[0] == MAGIC && h[1] < M, "header %#x %u", h[0], h[1]);
	uint8_t want[LEN];
	fill(want, s->peer, h[1]);
	T_ASSERT(!memcmp(want, buf, LEN), "payload of message %u", h[1]);
	T_ASSERT(!s->seen[h[1]], "message %u twice", h[1]);
	T_ASSERT(node == SHD_FABRIC_NODE_UNKNOWN || node == s->peer, "from node %u", node);
	s->seen[h[1]] = 1;
	s->got++;
	return 0;
}

static void on_send_done(void *arg, void *ctx, int status)
{
	struct side *s = arg;
	if ((uintptr_t)ctx >= NODE2_CTX) {
		T_ASSERT(status == -EHOSTDOWN, "send to the removed node: %d", status);
		s->hostdown++;
		return;
	}
	T_ASSERT(status == 0, "send %lu failed: %d", (unsigned long)(uintptr_t)ctx, status);
	s->sent_done++;
}

static void on_error(void *arg, uint32_t node, int err, const char *msg)
{
	T_FAIL("fabric error (node %u): %d %s", node, err, msg);
}

static const struct shd_fabric_cb cbs = {on_recv, on_send_done, on_error};

static bool sends_done(void *arg)
{
	struct side *s = arg;
	return s->sent_done == M;
}

static bool recvs_done(void *arg)
{
	struct side *s = arg;
	return s->got == M;
}

static bool both_done(void *arg)
{
	return sends_done(arg) && recvs_done(arg);
}

static void send_all(struct side *s)
{
	for (uint32_t i = 0; i < M; i++) {
		fill(s->bufs[i], s->me, i);
		int r = shd_fabric_send(s->f, s->peer, s->bufs[i], LEN, (void *)(uintptr_t)i);
		T_ASSERT(r == 0 || r == 1, "send %u: %d", i, r);
	}
}

int main(void)
{
	char port[16];
	int sv[2];
	t_name = "fabric-late";
	t_timeout(60);
	snprintf(port, sizeof(port), "%u", t_free_port("127.0.0.3"));
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	fflush(NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		t_timeout(60);
		close(sv[0]);
		char c;
		t_read(sv[1], &c, 1); /* node 0 has queued its sends */
		t_sleep_ms(1000);
		static struct side s = {.me = 1, .peer = 0};
		s.f = t_fabric_open("127.0.0.3", port, NULL);
		char p0[16];
		t_read(sv[1], p0, sizeof(p0));
		T_ASSERT(shd_fabric_insert_svc(s.f, "127.0.0.2", p0, 0) == 0, "insert_svc");
		T_ASSERT(t_progress_until(s.f, &cbs, &s, recvs_done, 20000),
			 "node 1 got %u of %u", s.got, M);
		send_all(&s);
		T_ASSERT(t_progress_until(s.f, &cbs, &s, sends_done, 20000),
			 "node 1 sends done %u of %u", s.sent_done, M);
		t_write(sv[1], &c, 1);
		t_read(sv[1], &c, 1);
		shd_fabric_close(s.f);
		_exit(0);
	}
	close(sv[1]);
	static struct side s = {.me = 0, .peer = 1};
	s.f = t_fabric_open("127.0.0.2", "0", NULL);
	T_ASSERT(shd_fabric_insert_svc(s.f, "127.0.0.3", port, 1) == 0, "insert_svc %s", port);
	send_all(&s);
	/* Drive progress for a while: the peer is not there yet. */
	for (int i = 0; i < 20; i++) {
		T_ASSERT(shd_fabric_progress(s.f, &cbs, &s) >= 0, "progress");
		t_sleep_ms(5);
	}
	struct shf_fabric_stats st;
	shd_fabric_stats_get(s.f, &st);
	T_ASSERT(st.sends == M, "sends %lu", (unsigned long)st.sends);
	T_ASSERT(st.sends_queued > 0 && shd_fabric_has_pending(s.f),
		 "expected queued sends while the peer is down (queued %lu)",
		 (unsigned long)st.sends_queued);
	T_ASSERT(s.sent_done < M && s.got == 0, "nothing can be delivered yet");
	T_ASSERT(st.send_errors == 0, "no error while the peer is down");
	uint32_t early_done = s.sent_done;

	/* node 2: nobody listens there, ever; queue 3 sends, then remove it */
	char port2[16];
	snprintf(port2, sizeof(port2), "%u", t_free_port("127.0.0.4"));
	T_ASSERT(shd_fabric_insert_svc(s.f, "127.0.0.4", port2, 2) == 0, "insert node 2");
	uint8_t junk[3][64] = {{0}};
	for (uintptr_t i = 0; i < 3; i++)
		T_ASSERT(shd_fabric_send(s.f, 2, junk[i], sizeof(junk[i]), (void *)(NODE2_CTX + i)) == 1,
			 "send to an absent node is queued");
	T_ASSERT(shd_fabric_progress(s.f, &cbs, &s) >= 0 && s.hostdown == 0, "still queued");
	/* then fill every send slot with small sends to node 2: -EAGAIN comes
	 * only when all 256 (the default) are in use, the never-used ones
	 * included (they are handed out lazily, daemon/net/fabric_io.c) */
	uint32_t extra = 0;
	for (;;) {
		uint8_t small[8] = {0};
		int r = shd_fabric_send_small(s.f, 2, small, sizeof(small),
					      (void *)(NODE2_CTX + 3 + extra));
		if (r == -EAGAIN)
			break;
		T_ASSERT(r == 1, "small send to an absent node: %d", r);
		T_ASSERT(++extra <= 256, "more sends than slots");
	}
	T_ASSERT(shd_fabric_sends_outstanding(s.f) == 256,
		 "-EAGAIN with %u of 256 slots in use", shd_fabric_sends_outstanding(s.f));
	T_ASSERT(shd_fabric_remove(s.f, 2) == 0 && !shd_fabric_has_node(s.f, 2), "remove");
	T_ASSERT(shd_fabric_remove(s.f, 2) == -EINVAL, "remove twice");
	T_ASSERT(shd_fabric_send(s.f, 2, junk[0], 8, NULL) == -EHOSTUNREACH, "removed node");
	T_ASSERT(shd_fabric_progress(s.f, &cbs, &s) >= 0 && s.hostdown == 3 + extra,
		 "queued sends of a removed node fail: %u", s.hostdown);
	T_ASSERT(shd_fabric_insert_svc(s.f, "127.0.0.4", port2, 2) == 0, "insert again");
	T_ASSERT(shd_fabric_remove(s.f, 2) == 0, "and remove");
	fprintf(stderr, "%s: peer down: %lu of %u sends queued, %u completed early, %lu retries\n",
		t_name, (unsigned long)st.sends_queued, M, early_done,
		(unsigned long)st.send_retries);

	char c = 'x';
	t_write(sv[0], &c, 1);
	uint8_t me[SHD_FABRIC_ADDR_MAX];
	size_t mlen = sizeof(me);
	T_ASSERT(shd_fabric_addr(s.f, me, &mlen) == 0, "addr");
	struct sockaddr_in sin;
	memcpy(&sin, me, sizeof(sin));
	char p0[16] = {0};
	snprintf(p0, sizeof(p0), "%u", ntohs(sin.sin_port));
	t_write(sv[0], p0, sizeof(p0));

	T_ASSERT(t_progress_until(s.f, &cbs, &s, both_done, 20000),
		 "node 0: sends done %u of %u, received %u of %u", s.sent_done, M, s.got, M);
	T_ASSERT(!shd_fabric_has_pending(s.f) && shd_fabric_sends_outstanding(s.f) == 0,
		 "nothing pending at the end");
	T_ASSERT(s.hostdown == 3 + extra, "no other send reported -EHOSTDOWN");
	shd_fabric_stats_get(s.f, &st);
	fprintf(stderr, "%s: delivered after the peer came up (%lu retries in all)\n", t_name,
		(unsigned long)st.send_retries);
	t_read(sv[0], &c, 1);
	t_write(sv[0], &c, 1);
	shd_fabric_close(s.f);
	t_wait_child(pid, "node 1");
	fprintf(stderr, "%s: PASS\n", t_name);
	return 0;
}
