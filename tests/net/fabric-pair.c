/* SPDX-License-Identifier: MIT */
/*
 * tests/net/fabric-pair.c - two processes, one endpoint each (127.0.0.2 and
 * 127.0.0.3, ephemeral ports), exchange N messages both ways.
 *
 * Checks: every message arrives intact and exactly once, and the per-source
 * send order is recovered from the sequence numbers.  Receive completions
 * are NOT in send order with tcp;ofi_rxm: a message above rxm's eager size
 * (16 KiB) completes after later small ones -- here by up to ~100
 * messages, more than the sender has outstanding, since the sender's
 * completion comes first.  The relay therefore reorders batches by wire
 * seq (bounded by its credits); the test prints the largest distance.  Sizes straddle rxm's eager / segmented protocols,
 * small copied sends (shd_fabric_send_small) are mixed in; receive buffers kept by on_recv stay intact until reposted, and
 * reposting keeps traffic going with few buffers; node ids reported with
 * receives match the sender when the provider reports sources; the
 * registered-memory path (mr_always) works on one side; counters add up;
 * binding by interface name (FI_TCP_IFACE=lo) gives a loopback address.
 */
#include "net-common.h"

#define N_MSGS 3000u
#define WINDOW 32u
#define BUF_BYTES (64u << 10)
#define MAGIC 0x50414952u /* "PAIR" */
#define KEEP_EVERY 10u
#define MAX_KEPT 4u
#define SLOTS 64u                   /* send_slots of both sides */

struct msg_hdr {
	uint32_t magic;
	uint32_t src; /* node id of the sender */
	uint64_t seq; /* 0, 1, 2, ... per direction */
	uint32_t len; /* whole message */
	uint32_t pad;
};

struct side {
	struct shd_fabric *f;
	uint32_t me, peer;
	uint8_t *pool;            /* WINDOW buffers of BUF_BYTES */
	uint32_t free_bufs[WINDOW];
	uint32_t n_free;
	uint64_t next_send;       /* seq of the next message to send */
	uint64_t sent_done;       /* completions */
	uint64_t next_recv;       /* lowest seq not received yet */
	uint64_t n_recv;          /* messages received */
	uint64_t max_ahead;       /* largest seq - next_recv seen on arrival */
	uint8_t seen[N_MSGS];     /* 1: seq received */
	uint64_t small_sent;
	bool source_seen;         /* a receive came with a known node */
	struct {
		uint8_t *buf;
		uint64_t seq;
		uint32_t len;
	} kept[MAX_KEPT];
	uint32_t n_kept;
};

static uint32_t msg_len(uint64_t seq)
{
	/* small, medium, > rxm's 16 KiB eager buffer, near the buffer size */
	static const uint32_t sizes[] = {24, 100, 1000, 4096, 16000, 17000, 40000, 65536};
	if (seq % 5 == 4)
		return 24 + (uint32_t)(seq % 100); /* a small copied send */
	return sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
}

static uint8_t pat(uint64_t seq, uint32_t src, size_t i)
{
	return (uint8_t)(seq * 131 + src * 7 + i);
}

static void fill(uint8_t *b, uint32_t src, uint64_t seq, uint32_t len)
{
	struct msg_hdr h = {MAGIC, src, seq, len, 0};
	memcpy(b, &h, sizeof(h));
	for (size_t i = sizeof(h); i < len; i++)
		b[i] = pat(seq, src, i);
}

/* Check a message; return its seq. */
static uint64_t verify(const uint8_t *b, size_t len, uint32_t src)
{
	struct msg_hdr h;
	T_ASSERT(len >= sizeof(h), "short message %zu", len);
	memcpy(&h, b, sizeof(h));
	T_ASSERT(h.magic == MAGIC && h.src == src, "bad header (magic %#x src %u)", h.magic, h.src);
	T_ASSERT(h.seq < N_MSGS, "seq %lu out of range", (unsigned long)h.seq);
	uint64_t seq = h.seq;
	T_ASSERT(h.len == len && len == msg_len(seq), "length %zu, header %u, expected %u", len,
		 h.len, msg_len(seq));
	for (size_t i = sizeof(h); i < len; i++)
		T_ASSERT(b[i] == pat(seq, src, i), "payload byte %zu of seq %lu", i,
			 (unsigned long)seq);
	return seq;
}

static int on_recv(void *arg, uint32_t node, void *buf, size_t len)
{
	struct side *s = arg;
	if (node != SHD_FABRIC_NODE_UNKNOWN) {
		T_ASSERT(node == s->peer, "receive reported from node %u, sender is %u", node,
			 s->peer);
		s->source_seen = true;
	}
	uint64_t seq = verify(buf, len, s->peer);
	T_ASSERT(!s->seen[seq], "seq %lu received twice", (unsigned long)seq);
	if (seq - s->next_recv > s->max_ahead)
		s->max_ahead = seq - s->next_recv;
	s->seen[seq] = 1;
	s->n_recv++;
	while (s->next_recv < N_MSGS && s->seen[s->next_recv])
		s->next_recv++;
	if (seq % KEEP_EVERY == 3 && s->n_kept < MAX_KEPT) {
		s->kept[s->n_kept].buf = buf;
		s->kept[s->n_kept].seq = seq;
		s->kept[s->n_kept].len = (uint32_t)len;
		s->n_kept++;
		return SHD_FABRIC_KEEP;
	}
	return 0;
}

static void on_send_done(void *arg, void *ctx, int status)
{
	struct side *s = arg;
	T_ASSERT(status == 0, "send failed: %d", status);
	uintptr_t idx = (uintptr_t)ctx;
	if (idx != UINTPTR_MAX) {
		T_ASSERT(idx < WINDOW, "bad ctx");
		s->free_bufs[s->n_free++] = (uint32_t)idx;
	}
	s->sent_done++;
}

static void on_error(void *arg, uint32_t node, int err, const char *msg)
{
	T_FAIL("fabric error (node %u): %d %s", node, err, msg);
}

static const struct shd_fabric_cb cbs = {on_recv, on_send_done, on_error};

/* Post as many sends as the window allows. */
static void pump(struct side *s)
{
	while (s->next_send < N_MSGS) {
		uint64_t seq = s->next_send;
		uint32_t len = msg_len(seq);
		int r;
		if (seq % 5 == 4) {
			uint8_t tmp[SHD_FABRIC_SMALL];
			fill(tmp, s->me, seq, len);
			r = shd_fabric_send_small(s->f, s->peer, tmp, len, (void *)UINTPTR_MAX);
			if (r >= 0)
				s->small_sent++;
		} else {
			if (!s->n_free)
				return;
			uint32_t idx = s->free_bufs[s->n_free - 1];
			uint8_t *b = s->pool + (size_t)idx * BUF_BYTES;
			fill(b, s->me, seq, len);
			r = shd_fabric_send(s->f, s->peer, b, len, (void *)(uintptr_t)idx);
			if (r >= 0)
				s->n_free--;
		}
		if (r == -EAGAIN)
			return; /* all slots busy */
		T_ASSERT(r == 0 || r == 1, "send seq %lu: %d", (unsigned long)seq, r);
		s->next_send++;
	}
}

static void release_kept(struct side *s)
{
	for (uint32_t i = 0; i < s->n_kept; i++) {
		T_ASSERT(verify(s->kept[i].buf, s->kept[i].len, s->peer) == s->kept[i].seq,
			 "kept buffer changed");
		T_ASSERT(shd_fabric_repost(s->f, s->kept[i].buf) == 0, "repost");
		T_ASSERT(shd_fabric_repost(s->f, s->kept[i].buf) == -EINVAL, "double repost");
	}
	s->n_kept = 0;
}

static bool all_done(void *arg)
{
	struct side *s = arg;
	release_kept(s);
	pump(s);
	return s->n_recv == N_MSGS && s->next_recv == N_MSGS && s->sent_done == N_MSGS &&
	       shd_fabric_sends_outstanding(s->f) == 0;
}

int main(void)
{
	int sv[2];
	t_name = "fabric-pair";
	t_timeout(60);
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	fflush(NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		/* node 1: registers everything, knows node 0 by host:port */
		t_timeout(60);
		close(sv[0]);
		struct shd_fabric_opts o = {.recv_buffers = 8, .buf_bytes = BUF_BYTES,
					    .send_slots = SLOTS, .mr_always = true};
		struct side s = {.me = 1, .peer = 0};
		s.f = t_fabric_open("127.0.0.3", NULL, &o);
		uint8_t addr[SHD_FABRIC_ADDR_MAX];
		size_t alen = sizeof(addr);
		T_ASSERT(shd_fabric_addr(s.f, addr, &alen) == 0, "addr");
		uint32_t l32 = (uint32_t)alen;
		t_write(sv[1], &l32, 4);
		t_write(sv[1], addr, alen);
		char port[16];
		t_read(sv[1], port, sizeof(port));
		T_ASSERT(shd_fabric_insert_svc(s.f, "127.0.0.2", port, 0) == 0, "insert_svc");
		T_ASSERT(shd_fabric_insert_svc(s.f, "127.0.0.2", port, 0) == -EEXIST, "dup insert");
		/* an unregistered buffer is refused on this side */
		uint8_t junk[64] = {0};
		T_ASSERT(shd_fabric_send(s.f, 0, junk, sizeof(junk), NULL) == -EINVAL,
			 "unregistered send with mr_always");
		T_ASSERT(posix_memalign((void **)&s.pool, 4096, (size_t)WINDOW * BUF_BYTES) == 0,
			 "pool");
		T_ASSERT(shd_fabric_mr_reg(s.f, s.pool, (size_t)WINDOW * BUF_BYTES) == 0, "mr_reg");
		for (uint32_t i = 0; i < WINDOW; i++)
			s.free_bufs[s.n_free++] = i;
		pump(&s);
		T_ASSERT(t_progress_until(s.f, &cbs, &s, all_done, 25000),
			 "timed out: sent %lu done %lu received %lu", (unsigned long)s.next_send,
			 (unsigned long)s.sent_done, (unsigned long)s.next_recv);
		struct shf_fabric_stats st;
		shd_fabric_stats_get(s.f, &st);
		T_ASSERT(st.recvs == N_MSGS && st.sends == N_MSGS && st.sends_done == N_MSGS,
			 "counters: recvs %lu sends %lu done %lu", (unsigned long)st.recvs,
			 (unsigned long)st.sends, (unsigned long)st.sends_done);
		T_ASSERT(st.send_errors == 0 && st.recv_errors == 0 && st.recvs_kept > 0,
			 "error/keep counters");
		fprintf(stderr, "%s: node 1 done (%lu queued sends, sources %s, reordered up to %lu)\n",
			t_name, (unsigned long)st.sends_queued,
			s.source_seen ? "reported" : "not reported", (unsigned long)s.max_ahead);
		char c = 'x';
		t_write(sv[1], &c, 1);
		t_read(sv[1], &c, 1);
		shd_fabric_close(s.f);
		free(s.pool);
		_exit(0);
	}
	close(sv[1]);
	/* binding by interface (FI_TCP_IFACE): lo gives 127.0.0.1 */
	{
		struct shd_fabric_opts io = {.iface = "lo"};
		struct shd_fabric *fi;
		char e[256], str[128];
		T_ASSERT(shd_fabric_open(&io, &fi, e, sizeof(e)) == 0, "open on lo: %s", e);
		T_ASSERT(shd_fabric_addr_str(fi, NULL, 0, str, sizeof(str)) == 0 &&
				 strstr(str, "://127.0.0.1:"),
			 "bound by iface: %s", str);
		shd_fabric_close(fi);
		unsetenv("FI_TCP_IFACE");
	}
	/* node 0: defaults (no registration needed on tcp), knows node 1 by address */
	struct side s = {.me = 0, .peer = 1};
	struct shd_fabric_opts o = {.buf_bytes = BUF_BYTES, .send_slots = SLOTS};
	s.f = t_fabric_open("127.0.0.2", "0", &o);
	uint8_t addr[SHD_FABRIC_ADDR_MAX];
	uint32_t l32;
	t_read(sv[0], &l32, 4);
	T_ASSERT(l32 <= sizeof(addr), "address length");
	t_read(sv[0], addr, l32);
	T_ASSERT(shd_fabric_insert(s.f, addr, l32, 1) == 0, "insert");
	T_ASSERT(shd_fabric_insert(s.f, addr, l32 + 1, 2) == -EINVAL, "bad length refused");
	T_ASSERT(shd_fabric_send(s.f, 5, addr, 8, NULL) == -EHOSTUNREACH, "unknown node");
	T_ASSERT(shd_fabric_send(s.f, 1, addr, BUF_BYTES + 1, NULL) == -EMSGSIZE, "too large");
	T_ASSERT(shd_fabric_send_small(s.f, 1, addr, SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM + 1, NULL) == -EMSGSIZE,
		 "too large for small");
	/* tell node 1 my port */
	uint8_t me[SHD_FABRIC_ADDR_MAX];
	size_t mlen = sizeof(me);
	T_ASSERT(shd_fabric_addr(s.f, me, &mlen) == 0 && mlen >= sizeof(struct sockaddr_in),
		 "my addr");
	struct sockaddr_in sin;
	memcpy(&sin, me, sizeof(sin));
	T_ASSERT(sin.sin_family == AF_INET, "expected an IPv4 address");
	char port[16] = {0};
	snprintf(port, sizeof(port), "%u", ntohs(sin.sin_port));
	t_write(sv[0], port, sizeof(port));
	char str[128];
	T_ASSERT(shd_fabric_addr_str(s.f, NULL, 0, str, sizeof(str)) == 0 && strstr(str, "127.0.0.2"),
		 "addr_str: %s", str);

	for (uint32_t i = 0; i < WINDOW; i++)
		s.free_bufs[s.n_free++] = i;
	T_ASSERT(posix_memalign((void **)&s.pool, 4096, (size_t)WINDOW * BUF_BYTES) == 0, "pool");
	T_ASSERT(shd_fabric_mr_reg(s.f, s.pool, (size_t)WINDOW * BUF_BYTES) == 0, "mr_reg no-op");
	pump(&s);
	T_ASSERT(t_progress_until(s.f, &cbs, &s, all_done, 25000),
		 "timed out: sent %lu done %lu received %lu", (unsigned long)s.next_send,
		 (unsigned long)s.sent_done, (unsigned long)s.next_recv);
	struct shf_fabric_stats st;
	shd_fabric_stats_get(s.f, &st);
	T_ASSERT(st.recvs == N_MSGS && st.sends == N_MSGS && st.sends_done == N_MSGS,
		 "counters: recvs %lu sends %lu done %lu", (unsigned long)st.recvs,
		 (unsigned long)st.sends, (unsigned long)st.sends_done);
	T_ASSERT(st.send_errors == 0 && st.recv_errors == 0 && st.recvs_kept > 0,
		 "error/keep counters");
	fprintf(stderr, "%s: node 0 done (%s, %lu queued sends, sources %s, reordered up to %lu)\n",
		t_name, shd_fabric_provider(s.f), (unsigned long)st.sends_queued,
		s.source_seen ? "reported" : "not reported", (unsigned long)s.max_ahead);
	char c = 'x';
	t_write(sv[0], &c, 1);
	t_read(sv[0], &c, 1);
	shd_fabric_close(s.f);
	free(s.pool);
	t_wait_child(pid, "node 1");
	fprintf(stderr, "%s: PASS\n", t_name);
	return 0;
}
