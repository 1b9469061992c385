/* SPDX-License-Identifier: MIT */
/*
 * tests/node/rawclient.c - a hostile client.  It speaks the control
 * protocol (proto/ipc.h) and the shared-memory layout (proto/shm.h)
 * directly, without the client library, so it can break the rules the
 * library keeps: it registers, proves that the data path works with one
 * message to itself, then corrupts its region in the way MODE names and
 * expects the daemon to cut it off: an ERROR(-EPROTO) and the socket
 * closed, within a few seconds.
 *
 *   rawclient MODE JOB RANK WORLD
 *
 * MODE: bad-len huge-len bad-kind short-msg bad-dst neg-dst bad-mark-len
 *       bad-mark-what run-count0 run-count2 run-overlong run-pad run-rank
 *       run-extra run-packed-count2 run-packed-len run-packed-pad
 *       run-packed-big bad-pad head-ahead head-back head-misaligned
 *       deliver-tail deliver-tail-ahead ctl-garbage epoch-bogus register-twice
 *
 * Or, without corrupting anything:
 *
 *   rawclient old-reader JOB RANK WORLD COUNT
 *
 * a client as old as the runs (it never says SHF_IPC_RUNS): it reads COUNT
 * records from rank 0 (bc-client many-to, which sends them as runs), each
 * a plain SHF_REC_MSG record, in order, record k carrying k.
 *
 * Exit 0 when the daemon reacted as required, 1 otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/ipc.h"
#include "proto/ring.h"
#include "proto/shm.h"

static const char *g_mode = "?";

#define DIE(...)                                                                      \
	do {                                                                          \
		fprintf(stderr, "rawclient %s: ", g_mode);                            \
		fprintf(stderr, __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                  \
		exit(1);                                                              \
	} while (0)

static _Alignas(8) char g_buf[SHF_IPC_MAX_MSG];

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One message within timeout_ms: its size, 0 on EOF, negative errno. */
static long recv_msg(int fd, int *fds, unsigned *nfds, int timeout_ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return shf_ipc_recv(fd, g_buf, sizeof(g_buf), fds, nfds);
}

static uint16_t msg_type(void)
{
	struct shf_ipc_hdr h;
	memcpy(&h, g_buf, sizeof(h));
	return h.type;
}

struct raw {
	int sock;
	int fds[SHF_IPC_REG_FDS];
	uint8_t *base;
	uint64_t region_bytes;
	struct shf_shm_layout l;
	struct shf_ring send, deliver;
	int rank, world;
	uint32_t max_msg;
};

static void raw_connect(struct raw *w, const char *job)
{
	const char *path = getenv("SHF_SOCKET");
	if (!path)
		DIE("SHF_SOCKET not set");
	w->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (w->sock < 0 || connect(w->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		DIE("connect %s: %s", path, strerror(errno));
	struct shf_ipc_hello hello = {SHF_IPC_VERSION, (uint32_t)getpid()};
	if (shf_ipc_send(w->sock, SHF_IPC_HELLO, 1, &hello, sizeof(hello), NULL, 0) < 0)
		DIE("send HELLO");
	long n = recv_msg(w->sock, NULL, NULL, 5000);
	if (n <= 0 || msg_type() != SHF_IPC_HELLO_OK)
		DIE("no HELLO_OK (%ld)", n);
	struct shf_ipc_register reg;
	memset(&reg, 0, sizeof(reg));
	snprintf(reg.job, sizeof(reg.job), "%s", job);
	reg.rank = w->rank;
	reg.world = w->world;
	reg.ring_bytes = 0;
	reg.timeout_ms = 30000;
	if (shf_ipc_send(w->sock, SHF_IPC_REGISTER, 2, &reg, sizeof(reg), NULL, 0) < 0)
		DIE("send REGISTER");
	unsigned nfds = SHF_IPC_REG_FDS;
	n = recv_msg(w->sock, w->fds, &nfds, 5000);
	if (n <= 0 || msg_type() != SHF_IPC_REGISTER_OK || nfds != SHF_IPC_REG_FDS)
		DIE("no REGISTER_OK with %u fds (%ld, type %u, %u fds)", SHF_IPC_REG_FDS, n,
		    n > 0 ? msg_type() : 0, nfds);
	struct shf_ipc_register_ok ok;
	memcpy(&ok, g_buf + sizeof(struct shf_ipc_hdr), sizeof(ok));
	w->region_bytes = ok.region_bytes;
	w->max_msg = ok.max_msg;
	w->base = mmap(NULL, w->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       w->fds[SHF_FD_REGION], 0);
	if (w->base == MAP_FAILED)
		DIE("mmap region: %s", strerror(errno));
	int r = shf_shm_check(w->base, w->region_bytes, &w->l);
	if (r)
		DIE("region check: %s", strerror(-r));
	if (shf_shm_ring(w->base, &w->l, SHF_SHM_SEND, &w->send, false) ||
	    shf_shm_ring(w->base, &w->l, SHF_SHM_DELIVER, &w->deliver, false))
		DIE("ring views");
	shf_ring_init_producer(&w->send);
	shf_ring_init_consumer(&w->deliver);
	n = recv_msg(w->sock, NULL, NULL, 30000);
	if (n <= 0 || msg_type() != SHF_IPC_READY)
		DIE("no READY (%ld)", n);
}

static void bell(struct raw *w)
{
	shf_bell_ring(w->fds[SHF_FD_DAEMON_BELL]);
}

/* Publish one message record to dst (no data). */
static void put_msg(struct raw *w, int32_t dst, const void *data, uint32_t len)
{
	uint8_t *p = shf_ring_reserve(&w->send, SHF_MSG_HDR_BYTES + len, SHF_REC_MSG);
	if (!p)
		DIE("send ring full or broken");
	struct shf_msg_hdr h = {dst, 42};
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), data, len);
	shf_ring_publish(&w->send);
	bell(w);
}

/* The data path works: one message to myself comes back. */
static void self_check(struct raw *w)
{
	static const char hello[] = "raw hello";
	put_msg(w, w->rank, hello, sizeof(hello));
	int64_t end = now_ms() + 5000;
	struct shf_ring_view v;
	int r;
	while ((r = shf_ring_peek(&w->deliver, &v)) == 0 && now_ms() < end)
		usleep(1000);
	if (r != 1)
		DIE("own message did not come back (%d)", r);
	struct shf_msg_hdr h;
	if (v.kind != SHF_REC_MSG || v.len != sizeof(h) + sizeof(hello))
		DIE("delivered record kind %u len %u", v.kind, v.len);
	memcpy(&h, v.data, sizeof(h));
	if (h.rank != w->rank || h.type != 42 || memcmp(v.data + sizeof(h), hello, sizeof(hello)))
		DIE("delivered record has src %d type %u", h.rank, h.type);
	shf_ring_release(&w->deliver);
	bell(w);
	/* wait until the daemon released it from the send ring too */
	end = now_ms() + 5000;
	while (atomic_load(&w->send.ctl->tail) != w->send.done && now_ms() < end)
		usleep(1000);
	if (atomic_load(&w->send.ctl->tail) != w->send.done)
		DIE("daemon did not release the send ring");
}

/* Write a raw record header at the producer position and publish it. */
static void put_raw(struct raw *w, uint32_t len, uint32_t kind, const void *payload,
		    uint32_t plen, uint64_t advance)
{
	uint64_t off = w->send.pos & w->send.mask;
	struct shf_ring_rec h = {len, kind};
	memcpy(w->send.data + off, &h, sizeof(h));
	if (plen)
		memcpy(w->send.data + off + sizeof(h), payload, plen);
	w->send.pos += advance;
	w->send.done = w->send.pos;
	atomic_store_explicit(&w->send.ctl->head, w->send.pos, memory_order_release);
	bell(w);
}

static void set_head(struct raw *w, uint64_t h)
{
	atomic_store_explicit(&w->send.ctl->head, h, memory_order_release);
	bell(w);
}

static void corrupt(struct raw *w)
{
	const char *m = g_mode;
	uint32_t max_rec = w->l.ring[SHF_SHM_SEND].max_rec;
	uint64_t size = w->send.size;
	if (!strcmp(m, "bad-len")) {
		put_raw(w, max_rec + 8, SHF_REC_MSG, NULL, 0, 64);
	} else if (!strcmp(m, "huge-len")) {
		put_raw(w, 0xfffffff0u, SHF_REC_MSG, NULL, 0, 64);
	} else if (!strcmp(m, "bad-kind")) {
		put_raw(w, 8, 9, "\0\0\0\0\0\0\0\0", 8, 16);
	} else if (!strcmp(m, "short-msg")) {
		put_raw(w, 4, SHF_REC_MSG, "\1\0\0\0", 4, 16);
	} else if (!strcmp(m, "bad-dst") || !strcmp(m, "neg-dst")) {
		struct shf_msg_hdr h = {!strcmp(m, "bad-dst") ? w->world + 5 : -7, 1};
		put_raw(w, sizeof(h), SHF_REC_MSG, &h, sizeof(h), 16);
	} else if (!strcmp(m, "bad-mark-len")) {
		put_raw(w, 8, SHF_REC_MARK, "\1\0\0\0\0\0\0\0", 8, 16);
	} else if (!strcmp(m, "bad-mark-what")) {
		struct shf_mark k = {1, 99, 0};
		put_raw(w, sizeof(k), SHF_REC_MARK, &k, sizeof(k), 8 + sizeof(k));
	} else if (!strncmp(m, "run-", 4)) {
		/* a run record to myself: {rank, count}, then items */
		struct {
			struct shf_run_hdr h;
			struct shf_run_item it;
			uint8_t data[8];
		} run = {{w->rank, 1}, {7, 3}, {'a', 'b', 'c', 0, 0, 0, 0, 0}};
		uint32_t len = sizeof(run);
		if (!strcmp(m, "run-count0"))
			run.h.count = 0;
		else if (!strcmp(m, "run-count2"))
			run.h.count = 2; /* one item only */
		else if (!strcmp(m, "run-overlong"))
			run.it.len = 100; /* past the record */
		else if (!strcmp(m, "run-pad"))
			run.data[6] = 1; /* padding not zero */
		else if (!strcmp(m, "run-rank"))
			run.h.rank = w->world + 5;
		else if (!strcmp(m, "run-extra"))
			len = sizeof(run) - 4; /* the item's padding cut: bytes left over */
		/* packed runs (the daemon granted SHF_REG_OK_PACKED): one item
		 * header for all, then the payloads */
		else if (!strcmp(m, "run-packed-count2"))
			run.h.count = 2 | SHF_RUN_PACKED; /* one payload only */
		else if (!strcmp(m, "run-packed-len"))
			run.h.count = 1 | SHF_RUN_PACKED, run.it.len = 9; /* stride 16: past the record */
		else if (!strcmp(m, "run-packed-pad"))
			run.h.count = 1 | SHF_RUN_PACKED, run.data[6] = 1; /* padding not zero */
		else if (!strcmp(m, "run-packed-big"))
			run.h.count = 257 | SHF_RUN_PACKED; /* over SHF_RUN_MAX_COUNT */
		else
			DIE("unknown mode");
		put_raw(w, len, SHF_REC_RUN, &run, sizeof(run), shf_ring_rec_bytes(len));
	} else if (!strcmp(m, "bad-pad")) {
		put_raw(w, 8, SHF_REC_PAD, "\0\0\0\0\0\0\0\0", 8, 16);
	} else if (!strcmp(m, "head-ahead")) {
		set_head(w, w->send.done + size + 64);
	} else if (!strcmp(m, "head-back")) {
		set_head(w, w->send.done - 64);
	} else if (!strcmp(m, "head-misaligned")) {
		set_head(w, w->send.done + 4);
	} else if (!strcmp(m, "ctl-garbage")) {
		for (int i = 0; i < SHF_SHM_RING_MAX; i++) {
			uint8_t *ctl = w->base + w->l.ring[i].ctl_off;
			for (size_t k = 0; k < sizeof(struct shf_ring_ctl); k++)
				ctl[k] = (uint8_t)(k * 37 + 11);
		}
		bell(w);
	} else if (!strcmp(m, "deliver-tail") || !strcmp(m, "deliver-tail-ahead")) {
		/* Fill my delivery ring with messages to myself, never consumed,
		 * until the daemon is blocked on it (it stops taking records from
		 * my send ring); then corrupt my tail index (misaligned, or ahead
		 * of what the daemon published) and ring the bell that says
		 * "delivery room".  The daemon finds the corruption when it looks
		 * for room, in a relay pass that places nothing. */
		static uint8_t kib[1024];
		uint64_t seen = UINT64_MAX;
		int still = 0;
		while (still < 5) {
			uint8_t *p = shf_ring_reserve(&w->send, SHF_MSG_HDR_BYTES + sizeof(kib),
						      SHF_REC_MSG);
			if (p) {
				struct shf_msg_hdr h = {w->rank, 1};
				memcpy(p, &h, sizeof(h));
				memcpy(p + sizeof(h), kib, sizeof(kib));
				shf_ring_publish(&w->send);
				bell(w);
				continue;
			}
			usleep(50000);
			uint64_t t = atomic_load(&w->send.ctl->tail);
			still = t == seen ? still + 1 : 0;
			seen = t;
		}
		uint64_t head = atomic_load(&w->deliver.ctl->head);
		if (head - w->deliver.done < size / 2)
			DIE("the daemon stopped before filling my delivery ring (%llu bytes)",
			    (unsigned long long)(head - w->deliver.done));
		if (!strcmp(m, "deliver-tail"))
			atomic_store(&w->deliver.ctl->tail, w->deliver.done + 4);
		else
			atomic_store(&w->deliver.ctl->tail, head + 64);
		bell(w);
	} else if (!strcmp(m, "epoch-bogus")) {
		struct shf_ipc_epoch ep = {1, 2, 0};
		shf_ipc_send(w->sock, SHF_IPC_EPOCH, 9, &ep, sizeof(ep), NULL, 0);
	} else if (!strcmp(m, "register-twice")) {
		struct shf_ipc_register reg;
		memset(&reg, 0, sizeof(reg));
		snprintf(reg.job, sizeof(reg.job), "again");
		reg.world = 1;
		shf_ipc_send(w->sock, SHF_IPC_REGISTER, 9, &reg, sizeof(reg), NULL, 0);
	} else {
		DIE("unknown mode");
	}
}

/* ERROR(-EPROTO) then EOF within 5 s.  The ERROR's text must name a
 * reason, and contain $SHF_RAW_EXPECT when that is set: the daemon's log of
 * cut-offs is rate-limited, the ERROR is not. */
static void expect_cut_off(struct raw *w)
{
	const char *want = getenv("SHF_RAW_EXPECT");
	int64_t end = now_ms() + 5000;
	bool got_error = false;
	for (;;) {
		int left = (int)(end - now_ms());
		if (left <= 0)
			DIE("still connected 5 s after the corruption (error seen: %d)", got_error);
		long n = recv_msg(w->sock, NULL, NULL, left);
		if (n == 0 || n == -ECONNRESET)
			break;
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			DIE("recv: %s", strerror((int)-n));
		if (msg_type() == SHF_IPC_ERROR) {
			struct shf_ipc_error er;
			memcpy(&er, g_buf + sizeof(struct shf_ipc_hdr), sizeof(er));
			const char *text = g_buf + sizeof(struct shf_ipc_hdr) + sizeof(er);
			fprintf(stderr, "rawclient %s: daemon says %d: %s\n", g_mode, er.err, text);
			if (er.err != -EPROTO)
				DIE("error %d, expected -EPROTO", er.err);
			if (!*text)
				DIE("ERROR without a reason");
			if (want && !strstr(text, want))
				DIE("reason '%s' does not name '%s'", text, want);
			got_error = true;
		}
		/* anything else (e.g. FLUSH_DONE) may come before the verdict */
	}
	if (!got_error)
		DIE("disconnected without an ERROR message");
}

/* old-reader: COUNT plain records from rank 0, in order (struct bmsg of
 * bc-client: magic, src, k). */
static void old_reader(struct raw *w, long count)
{
	int64_t end = now_ms() + 60000;
	for (long k = 0; k < count;) {
		struct shf_ring_view v;
		int r = shf_ring_peek(&w->deliver, &v);
		if (r < 0)
			DIE("delivery ring corrupt (%d)", r);
		if (r == 0) {
			if (shf_ring_release(&w->deliver))
				bell(w);
			if (now_ms() > end)
				DIE("only %ld of %ld records came", k, count);
			usleep(1000);
			continue;
		}
		struct shf_msg_hdr h;
		struct {
			uint32_t magic;
			int32_t src;
			int64_t k;
		} m;
		if (v.kind != SHF_REC_MSG || v.len != sizeof(h) + sizeof(m))
			DIE("record %ld: kind %u, %u bytes: not a plain message", k, v.kind, v.len);
		memcpy(&h, v.data, sizeof(h));
		memcpy(&m, v.data + sizeof(h), sizeof(m));
		if (h.rank != 0 || m.src != 0 || m.k != k)
			DIE("record %ld: from rank %d, carries %lld", k, h.rank, (long long)m.k);
		k++;
	}
	if (shf_ring_release(&w->deliver))
		bell(w);
	fprintf(stderr, "rawclient old-reader: %ld plain records in order\n", count);
}

int main(int argc, char **argv)
{
	bool reader = argc == 6 && !strcmp(argv[1], "old-reader");
	if (argc != 5 && !reader) {
		fprintf(stderr, "usage: rawclient MODE JOB RANK WORLD\n");
		return 2;
	}
	g_mode = argv[1];
	struct raw w;
	memset(&w, 0, sizeof(w));
	w.rank = atoi(argv[3]);
	w.world = atoi(argv[4]);
	raw_connect(&w, argv[2]);
	if (reader) {
		old_reader(&w, atol(argv[5]));
		return 0;
	}
	self_check(&w);
	corrupt(&w);
	expect_cut_off(&w);
	fprintf(stderr, "rawclient %s: cut off as required\n", g_mode);
	return 0;
}
