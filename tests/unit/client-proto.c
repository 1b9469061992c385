/* SPDX-License-Identifier: MIT */
/*
 * client-proto: libshuffle-client against a scripted fake daemon.
 *
 * The fake is a child process that speaks the real protocol (proto/ipc.h,
 * proto/shm.h, proto/ring.h: a sealed memfd region, eventfd doorbells,
 * SCM_RIGHTS) and can misbehave on purpose, which the real shuffled never
 * does.  Each scenario checks what the client library does with it:
 *   - handshake: version mismatch, ERROR replies (-EPROTO, -EBUSY,
 *     -EACCES), a world timeout with the missing ranks as detail, a daemon
 *     that hangs up, a daemon that never answers (client-side guard);
 *   - REGISTER_OK validation: wrong fd count, region size, rank; no fd
 *     leaks on any failure; a daemon older than REGISTER's flags (it cuts
 *     the 88-byte body off): the client registers again without them;
 *   - the data path, in thread and poll mode: exact send-ring records,
 *     callbacks with the right src/dst/type/data and order, FLUSH_DONE drop
 *     reports (-ESRCH, -EHOSTDOWN, counters), the epoch sequence, origin and
 *     delivery flushes, BYE on close;
 *   - a dead or broken daemon: unsolicited ERROR (-ECANCELED: a drained
 *     job, kept as every later call's result), a reply to a mark never
 *     sent, a corrupt delivery record, corrupt runs (count 0, a rank
 *     outside the world, an item past the record, bytes left over, a
 *     packed run it never asked for: the
 *     items before the bad one are delivered, then the context is dead),
 *     death while a send is blocked.
 * Every wait is bounded; the fakes run under alarm().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/ipc.h"
#include "proto/ring.h"
#include "proto/shm.h"
#include "shuffle.h"
#include "tests/lib/check.h"

#define MAX_MSG 1024u
#define RING 8192u

static const char *scenario = "";

/* Every counted failure names the scenario and the library's last detail. */
const char *check_detail(void)
{
	static char d[640];
	snprintf(d, sizeof(d), "scenario %s; detail: %s", scenario, shf_error_detail());
	return d;
}


static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* ------------------------------------------------------------ the fake */

struct fake {
	int sock;
	void *base;
	uint64_t region_bytes;
	struct shf_shm_layout l;
	struct shf_ring send;    /* fake consumes */
	struct shf_ring deliver; /* fake produces */
	int bell_daemon, bell_deliver, bell_space;
	int32_t rank, world;
	uint32_t reg_id;
	unsigned char buf[SHF_IPC_MAX_MSG];
};

#define FAKE_FAIL(...)                                                   \
	do {                                                             \
		fprintf(stderr, "[%s] fake daemon: ", scenario);         \
		fprintf(stderr, __VA_ARGS__);                            \
		fprintf(stderr, "\n");                                   \
		_exit(1);                                                \
	} while (0)

/* Next datagram (blocking, 10 s).  Returns its type; 0 on EOF. */
static int fk_recv(struct fake *f, struct shf_ipc_hdr *h)
{
	struct pollfd p = {f->sock, POLLIN, 0};
	if (poll(&p, 1, 10000) != 1)
		FAKE_FAIL("no message from the client");
	long n = shf_ipc_recv(f->sock, f->buf, sizeof(f->buf), NULL, NULL);
	if (n == 0 || n == -ECONNRESET)
		return 0;
	if (n < 0)
		FAKE_FAIL("recv: %s", strerror((int)-n));
	memcpy(h, f->buf, sizeof(*h));
	return h->type;
}

static void fk_send(struct fake *f, uint16_t type, uint32_t id, const void *body, size_t len)
{
	int r = shf_ipc_send(f->sock, type, id, body, len, NULL, 0);
	if (r)
		FAKE_FAIL("send type %u: %s", type, strerror(-r));
}

static void fk_error(struct fake *f, uint32_t id, int err, const char *text)
{
	struct {
		struct shf_ipc_error e;
		char t[200];
	} m = {{err, 0}, {0}};
	snprintf(m.t, sizeof(m.t), "%s", text);
	fk_send(f, SHF_IPC_ERROR, id, &m, sizeof(m.e) + strlen(m.t) + 1);
}

static void fk_hello(struct fake *f)
{
	struct shf_ipc_hdr h;
	if (fk_recv(f, &h) != SHF_IPC_HELLO)
		FAKE_FAIL("expected HELLO");
	struct shf_ipc_hello_ok ok = {SHF_IPC_VERSION, MAX_MSG, RING, 0};
	fk_send(f, SHF_IPC_HELLO_OK, h.id, &ok, sizeof(ok));
}

static void fk_register_req(struct fake *f)
{
	struct shf_ipc_hdr h;
	if (fk_recv(f, &h) != SHF_IPC_REGISTER)
		FAKE_FAIL("expected REGISTER");
	struct shf_ipc_register m;
	memcpy(&m, f->buf + sizeof(h), sizeof(m));
	if (shf_ipc_job_check(m.job) || strcmp(m.job, "proto-test") || m.world < 1 ||
	    m.rank < 0 || m.rank >= m.world)
		FAKE_FAIL("bad REGISTER: job '%.64s' rank %d world %d", m.job, m.rank, m.world);
	f->rank = m.rank;
	f->world = m.world;
	f->reg_id = h.id;
}

enum tweak { TW_NONE, TW_FDS3, TW_SIZE, TW_RANK };

static void fk_register_ok(struct fake *f, enum tweak tw)
{
	if (shf_shm_layout(RING, MAX_MSG + SHF_MSG_HDR_BYTES, &f->l))
		FAKE_FAIL("layout");
	f->region_bytes = f->l.region_bytes;
	int fd = memfd_create("fake-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)f->region_bytes) < 0)
		FAKE_FAIL("memfd: %s", strerror(errno));
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	f->base = mmap(NULL, f->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f->base == MAP_FAILED)
		FAKE_FAIL("mmap");
	shf_shm_format(f->base, &f->l, f->rank, f->world);
	if (shf_shm_ring(f->base, &f->l, SHF_SHM_SEND, &f->send, false) ||
	    shf_shm_ring(f->base, &f->l, SHF_SHM_DELIVER, &f->deliver, false))
		FAKE_FAIL("rings");
	shf_ring_init_consumer(&f->send);
	shf_ring_init_producer(&f->deliver);
	f->bell_daemon = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->bell_deliver = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->bell_space = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct shf_ipc_register_ok ok = {f->region_bytes, f->rank, f->world, MAX_MSG, 0};
	if (tw == TW_SIZE)
		ok.region_bytes += 4096;
	if (tw == TW_RANK)
		ok.rank = f->world - 1 - f->rank;
	int fds[SHF_IPC_REG_FDS] = {fd, f->bell_daemon, f->bell_deliver, f->bell_space};
	int r = shf_ipc_send(f->sock, SHF_IPC_REGISTER_OK, f->reg_id, &ok, sizeof(ok), fds,
			     tw == TW_FDS3 ? 3 : SHF_IPC_REG_FDS);
	if (r)
		FAKE_FAIL("REGISTER_OK: %s", strerror(-r));
	close(fd);
}

static void fk_ready(struct fake *f)
{
	struct shf_ipc_ready m = {f->world, 1};
	fk_send(f, SHF_IPC_READY, 0, &m, sizeof(m));
}

static void fk_open(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_NONE);
	fk_ready(f);
}

/* Next record of the send ring (5 s), copied out; released at once. */
static uint32_t fk_next(struct fake *f, void *out, uint32_t cap, uint32_t *len_p)
{
	double end = now_s() + 5;
	while (now_s() < end) {
		struct shf_ring_view v;
		int r = shf_ring_peek(&f->send, &v);
		if (r < 0)
			FAKE_FAIL("send ring corrupt: %d", r);
		if (r == 1) {
			if (v.len > cap)
				FAKE_FAIL("record of %u bytes", v.len);
			memcpy(out, v.data, v.len);
			*len_p = v.len;
			if (shf_ring_release(&f->send))
				shf_bell_ring(f->bell_space);
			return v.kind;
		}
		if (!shf_ring_cons_arm(&f->send))
			continue;
		struct pollfd p = {f->bell_daemon, POLLIN, 0};
		if (poll(&p, 1, 100) == 1) {
			uint64_t x;
			if (read(f->bell_daemon, &x, sizeof(x)) < 0)
				FAKE_FAIL("bell read");
		}
	}
	FAKE_FAIL("no record in the send ring");
}

static void fk_deliver(struct fake *f, int32_t src, uint32_t kind, uint32_t type,
		       const void *data, uint32_t len)
{
	uint8_t *p = shf_ring_reserve(&f->deliver, SHF_MSG_HDR_BYTES + len, kind);
	if (!p)
		FAKE_FAIL("delivery ring full");
	struct shf_msg_hdr h = {src, type};
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), data, len);
	if (shf_ring_publish(&f->deliver))
		shf_bell_ring(f->bell_deliver);
}

static void fk_flush_done(struct fake *f, uint64_t id, uint64_t dead, uint64_t down, int st)
{
	struct shf_ipc_flush_done m = {id, dead, down, st, 0};
	fk_send(f, SHF_IPC_FLUSH_DONE, (uint32_t)id, &m, sizeof(m));
}

static struct shf_mark fk_mark(struct fake *f)
{
	struct shf_mark m;
	uint32_t len;
	uint32_t kind = fk_next(f, &m, sizeof(m), &len);
	if (kind != SHF_REC_MARK || len != sizeof(m))
		FAKE_FAIL("expected a MARK record, got kind %u len %u", kind, len);
	return m;
}

/* The client hangs up (BYE first, optionally) within 5 s. */
static void fk_expect_eof(struct fake *f, bool bye)
{
	struct shf_ipc_hdr h;
	int t = fk_recv(f, &h);
	if (bye) {
		if (t != SHF_IPC_BYE)
			FAKE_FAIL("expected BYE, got %d", t);
		t = fk_recv(f, &h);
	}
	if (t != 0)
		FAKE_FAIL("expected EOF, got type %d", t);
}

/* ------------------------------------------------------------ runner */

static int lfd = -1;
static char sock_path[108];

static pid_t fake_start(void (*fn)(struct fake *))
{
	pid_t p = fork();
	if (p == 0) {
		alarm(30);
		struct fake *f = calloc(1, sizeof(*f));
		f->sock = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (f->sock < 0)
			FAKE_FAIL("accept: %s", strerror(errno));
		fn(f);
		_exit(0);
	}
	return p;
}

static void fake_end(pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		MISS("fake daemon failed (status 0x%x)", st);
	}
}

static _Atomic int got;
static int got_src[8], got_type[8];
static char got_data[8][16];
static uint32_t got_len[8];
static int got_dst = -1;

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg;
	int i = atomic_load(&got);
	if (i < 8) {
		got_src[i] = src;
		got_type[i] = (int)type;
		got_len[i] = len;
		memcpy(got_data[i], data, len < 16 ? len : 16);
	}
	got_dst = dst;
	atomic_fetch_add(&got, 1);
}

static void opts(struct shf_opts *o, int thread)
{
	shf_opts_init(o);
	o->socket_path = sock_path;
	o->job = "proto-test";
	o->rank = 0;
	o->world = 2;
	o->delivery_thread = thread;
	o->timeout_ms = 3000;
}

/* Open against fn and expect failure err; no fd may leak. */
static void open_fails(const char *name, void (*fn)(struct fake *), int err, const char *text,
		       int timeout_ms)
{
	scenario = name;
	struct shf_opts o;
	opts(&o, 1);
	o.timeout_ms = timeout_ms;
	int fds = count_fds();
	pid_t p = fake_start(fn);
	struct shf_ctx *c = NULL;
	int r = shf_open(&o, on_msg, NULL, &c);
	if (r != err || c)
		fprintf(stderr, "[%s] shf_open: %d (%s), want %d\n", name, r, shf_error_detail(),
			err);
	EXPECT(r == err && c == NULL);
	if (text)
		EXPECT(strstr(shf_error_detail(), text) != NULL);
	EXPECT(count_fds() == fds);
	fake_end(p);
}

/* ------------------------------------------------ handshake scenarios */

static void fk_bad_version(struct fake *f)
{
	struct shf_ipc_hdr h;
	if (fk_recv(f, &h) != SHF_IPC_HELLO)
		FAKE_FAIL("expected HELLO");
	struct shf_ipc_hello_ok ok = {SHF_IPC_VERSION + 1, MAX_MSG, RING, 0};
	fk_send(f, SHF_IPC_HELLO_OK, h.id, &ok, sizeof(ok));
	fk_expect_eof(f, false);
}

static void fk_hello_refused(struct fake *f)
{
	struct shf_ipc_hdr h;
	if (fk_recv(f, &h) != SHF_IPC_HELLO)
		FAKE_FAIL("expected HELLO");
	fk_error(f, h.id, -EPROTO, "protocol version 1 not supported");
	fk_expect_eof(f, false);
}

static void fk_busy(struct fake *f)
{
	fk_error(f, 0, -EBUSY, "too many clients (max_clients)");
	close(f->sock);
}

static void fk_reg_refused(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_error(f, f->reg_id, -EACCES, "job proto-test belongs to uid 4242");
	fk_expect_eof(f, false);
}

static void fk_reg_fds3(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_FDS3);
	fk_expect_eof(f, false);
}

static void fk_reg_size(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_SIZE);
	fk_expect_eof(f, false);
}

static void fk_reg_rank(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_RANK);
	fk_expect_eof(f, false);
}

/* A daemon older than REGISTER's flags: it cuts off an 88-byte REGISTER
 * as malformed; the client connects again and registers with the older
 * 80-byte body (and keeps the fence: no flags). */
/* A daemon older than REGISTER's flags takes only the 80-byte body: the
 * library's first REGISTER must be that one. */
static void fk_old_daemon(struct fake *f)
{
	fk_hello(f);
	struct shf_ipc_hdr h;
	struct pollfd p = {f->sock, POLLIN, 0};
	if (poll(&p, 1, 10000) != 1)
		FAKE_FAIL("no REGISTER");
	_Alignas(8) unsigned char peek[SHF_IPC_MAX_MSG];
	ssize_t n = recv(f->sock, peek, sizeof(peek), MSG_PEEK);
	if (n != (ssize_t)(sizeof(h) + SHF_IPC_REGISTER_V0_BYTES))
		FAKE_FAIL("REGISTER of %zd bytes, want the 80-byte body", n);
	fk_register_req(f);
	fk_register_ok(f, TW_NONE);
	fk_ready(f);
	fk_expect_eof(f, true);
}

static void fk_world_timeout(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_NONE);
	fk_error(f, 0, -ETIMEDOUT, "job proto-test: 1 of 2 ranks registered; missing ranks 1");
	close(f->sock);
}

static void fk_hangup(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	close(f->sock);
}

static void fk_silent(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_NONE);
	fk_expect_eof(f, false); /* no READY ever: the client gives up */
}

static void fk_wrong_reply(struct fake *f)
{
	fk_hello(f);
	fk_register_req(f);
	fk_register_ok(f, TW_NONE);
	fk_flush_done(f, 1, 0, 0, 0); /* instead of READY */
	fk_expect_eof(f, false);
}

/* ------------------------------------------------- data path scenario */

static void fk_data(struct fake *f)
{
	fk_open(f);
	/* three messages from the client, exactly as sent */
	for (int i = 0; i < 3; i++) {
		unsigned char rec[64];
		uint32_t len;
		uint32_t kind = fk_next(f, rec, sizeof(rec), &len);
		struct shf_msg_hdr h;
		memcpy(&h, rec, sizeof(h));
		char want[16];
		snprintf(want, sizeof(want), "msg%d", i);
		if (kind != SHF_REC_MSG || len != SHF_MSG_HDR_BYTES + strlen(want) ||
		    h.rank != 1 || h.type != 100u + (uint32_t)i ||
		    memcmp(rec + sizeof(h), want, strlen(want)))
			FAKE_FAIL("record %d: kind %u len %u dst %d type %u", i, kind, len, h.rank, h.type);
	}
	/* an empty message */
	unsigned char rec[64];
	uint32_t len;
	if (fk_next(f, rec, sizeof(rec), &len) != SHF_REC_MSG || len != SHF_MSG_HDR_BYTES)
		FAKE_FAIL("empty message");
	/* three deliveries, from rank 1 */
	fk_deliver(f, 1, SHF_REC_MSG, 7, "abc", 3);
	fk_deliver(f, 1, SHF_REC_MSG, 8, "", 0);
	fk_deliver(f, 0, SHF_REC_MSG, 9, "0123456789", 10);
	/* flush remote: two dead drops, then one node-down drop, then clean */
	struct shf_mark m = fk_mark(f);
	if (m.what != SHF_MARK_FLUSH)
		FAKE_FAIL("mark what %u", m.what);
	fk_flush_done(f, m.id, 2, 0, 0);
	m = fk_mark(f);
	fk_flush_done(f, m.id, 0, 1, 0);
	m = fk_mark(f);
	fk_flush_done(f, m.id, 0, 0, 0);
	/* epoch: mark, FLUSH_DONE, then phase 2 on the socket, EPOCH_DONE */
	m = fk_mark(f);
	if (m.what != SHF_MARK_EPOCH)
		FAKE_FAIL("epoch mark what %u", m.what);
	fk_flush_done(f, m.id, 0, 0, 0);
	struct shf_ipc_hdr h;
	if (fk_recv(f, &h) != SHF_IPC_EPOCH)
		FAKE_FAIL("expected EPOCH");
	struct shf_ipc_epoch e;
	memcpy(&e, f->buf + sizeof(h), sizeof(e));
	if (e.id != m.id || e.phase != 2 || h.id != (uint32_t)m.id)
		FAKE_FAIL("EPOCH id %llu phase %u hdr %u", (unsigned long long)e.id, e.phase, h.id);
	struct shf_ipc_epoch_done d = {e.id, 2, 0};
	fk_send(f, SHF_IPC_EPOCH_DONE, h.id, &d, sizeof(d));
	fk_expect_eof(f, true);
}

static void wait_got(struct shf_ctx *c, bool thread, int n)
{
	double end = now_s() + 5;
	while (atomic_load(&got) < n && now_s() < end) {
		if (thread)
			usleep(1000);
		else
			EXPECT(shf_poll(c, 100) >= 0);
	}
}

static void data_path(int thread)
{
	scenario = thread ? "data-thread" : "data-poll";
	atomic_store(&got, 0);
	struct shf_opts o;
	opts(&o, thread);
	pid_t p = fake_start(fk_data);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (!c) {
		fake_end(p);
		return;
	}
	EXPECT(shf_rank(c) == 0 && shf_world(c) == 2);
	EXPECT(thread ? shf_event_fd(c) == -EINVAL : shf_event_fd(c) >= 0);
	EXPECT(thread ? shf_poll(c, 0) == -EINVAL : shf_poll(c, 0) == 0);
	/* argument checks against the live context */
	char big[MAX_MSG + 1];
	memset(big, 0, sizeof(big));
	EXPECT(shf_send(c, 2, 0, "x", 1, 0) == -ESRCH);
	EXPECT(shf_send(c, -1, 0, "x", 1, 0) == -ESRCH);
	EXPECT(shf_send(c, 1, 0, big, MAX_MSG + 1, 0) == -EMSGSIZE);
	EXPECT(shf_send(c, 1, 0, NULL, 1, 0) == -EINVAL);
	EXPECT(shf_send(c, 1, 0, "x", 1, 0x100) == -EINVAL);
	EXPECT(shf_flush(c, 99, 0) == -EINVAL);
	EXPECT(shf_flush(c, SHF_FLUSH_ORIGIN, -2) == -EINVAL);
	for (int i = 0; i < 3; i++) {
		char m[16];
		snprintf(m, sizeof(m), "msg%d", i);
		EXPECT(shf_send(c, 1, 100u + (uint32_t)i, m, (uint32_t)strlen(m),
			       i == 1 ? SHF_NONBLOCK : 0) == 0);
	}
	EXPECT(shf_send(c, 1, 5, NULL, 0, 0) == 0);
	if (!thread) {
		/* armed by the shf_poll() above: the event fd wakes us for the
		 * fake's deliveries, and is quiet again once shf_poll() says 0 */
		struct pollfd ev = {shf_event_fd(c), POLLIN, 0};
		EXPECT(poll(&ev, 1, 5000) == 1);
		wait_got(c, thread, 3);
		EXPECT(shf_poll(c, 0) == 0);
		ev.revents = 0;
		EXPECT(poll(&ev, 1, 0) == 0);
	}
	wait_got(c, thread, 3);
	EXPECT(atomic_load(&got) == 3);
	EXPECT(got_src[0] == 1 && got_type[0] == 7 && got_len[0] == 3 && !memcmp(got_data[0], "abc", 3));
	EXPECT(got_src[1] == 1 && got_type[1] == 8 && got_len[1] == 0);
	EXPECT(got_src[2] == 0 && got_type[2] == 9 && got_len[2] == 10 &&
	      !memcmp(got_data[2], "0123456789", 10));
	EXPECT(got_dst == 0);

	EXPECT(shf_flush(c, SHF_FLUSH_REMOTE, 0) == -ESRCH);
	EXPECT(strstr(shf_error_detail(), "2 message") != NULL);
	EXPECT(shf_flush(c, SHF_FLUSH_REMOTE, 0) == -EHOSTDOWN);
	EXPECT(shf_flush(c, SHF_FLUSH_REMOTE, 0) == 0);
	EXPECT(shf_epoch(c, 0) == 0);
	EXPECT(shf_flush(c, SHF_FLUSH_ORIGIN, 0) == 0);
	EXPECT(shf_flush(c, SHF_FLUSH_DELIVERY, 0) == 0);
	struct shf_stats s;
	EXPECT(shf_stats_get(c, &s) == 0);
	EXPECT(s.sent_msgs == 4 && s.sent_bytes == 12 && s.delivered_msgs == 3 &&
	      s.delivered_bytes == 13 && s.dropped_dead == 2 && s.dropped_down == 1 &&
	      s.flushes == 5 && s.epochs == 1 && s.send_eagain == 0);
	EXPECT(shf_close(c) == 0);
	fake_end(p);
}

/* ----------------------------------------------- broken daemon scenarios */

static void fk_unsolicited_error(struct fake *f)
{
	fk_open(f);
	fk_error(f, 0, -EPROTO, "disconnected by shuffled: corrupt send ring (bad record header)");
	fk_mark(f); /* the client's flush; never answered */
	close(f->sock);
}

static void unsolicited_error(void)
{
	scenario = "unsolicited-error";
	struct shf_opts o;
	opts(&o, 1);
	pid_t p = fake_start(fk_unsolicited_error);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (c) {
		EXPECT(shf_flush(c, SHF_FLUSH_REMOTE, 5000) == -ENOTCONN);
		EXPECT(strstr(shf_error_detail(), "corrupt send ring") != NULL);
		EXPECT(shf_send(c, 1, 0, "x", 1, 0) == -ENOTCONN);
		EXPECT(shf_epoch(c, 0) == -ENOTCONN);
		EXPECT(shf_close(c) == -ENOTCONN);
	}
	fake_end(p);
}

/* shufflectl drain: the daemon cuts the rank off with -ECANCELED, which
 * every later call returns (not -ENOTCONN) with the daemon's words */
static void fk_drained(struct fake *f)
{
	fk_open(f);
	fk_error(f, 0, -ECANCELED, "disconnected by shuffled: job j drained by uid 0 (shufflectl "
		 "drain)");
	fk_mark(f); /* the client's flush; never answered */
	close(f->sock);
}

static void drained(void)
{
	scenario = "drained";
	struct shf_opts o;
	opts(&o, 1);
	pid_t p = fake_start(fk_drained);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (c) {
		EXPECT(shf_flush(c, SHF_FLUSH_REMOTE, 5000) == -ECANCELED);
		EXPECT(strstr(shf_error_detail(), "drained by uid 0") != NULL);
		EXPECT(shf_send(c, 1, 0, "x", 1, 0) == -ECANCELED);
		EXPECT(shf_epoch(c, 0) == -ECANCELED);
		EXPECT(shf_close(c) == -ECANCELED);
	}
	fake_end(p);
}

static void fk_bogus_reply(struct fake *f)
{
	fk_open(f);
	fk_flush_done(f, 99, 0, 0, 0); /* for a mark never sent */
	fk_expect_eof(f, false);        /* the client hangs up on us */
}

static void bogus_reply(void)
{
	scenario = "bogus-reply";
	struct shf_opts o;
	opts(&o, 0);
	pid_t p = fake_start(fk_bogus_reply);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (c) {
		int r = 0;
		double end = now_s() + 5;
		while (r == 0 && now_s() < end)
			r = shf_poll(c, 100);
		EXPECT(r == -ENOTCONN);
		EXPECT(strstr(shf_error_detail(), "protocol error") != NULL);
		EXPECT(shf_close(c) == -ENOTCONN);
	}
	fake_end(p);
}

/* NODE_INFO: a good answer, then the lies a client must refuse.  The
 * client is rank 0 of world 2 (opts()). */
static int node_info_lie; /* which lie fk_node_info tells (0: none) */

static void fk_node_info(struct fake *f)
{
	fk_open(f);
	struct shf_ipc_hdr h;
	for (;;) {
		int t = fk_recv(f, &h);
		if (t == 0 || t == SHF_IPC_BYE)
			return;
		if (t != SHF_IPC_NODE_INFO)
			FAKE_FAIL("expected NODE_INFO, got type %d", t);
		struct shf_ipc_node_info m;
		memcpy(&m, f->buf + sizeof(h), sizeof(m));
		struct {
			struct shf_ipc_node_info_ok ok;
			int32_t v[4];
		} rep = {{0, 2, 1, m.what, m.first, 0}, {0, 0, 0, 0}};
		if (m.what == SHF_NODE_INFO_LOCAL && m.max >= 1)
			rep.v[rep.ok.count++] = 0;
		if (m.what == SHF_NODE_INFO_COUNTS)
			for (uint32_t i = m.first; i < 2 && rep.ok.count < m.max; i++)
				rep.v[rep.ok.count++] = 1;
		switch (node_info_lie) {
		case 1: rep.ok.node = 2; break;                  /* node >= nodes */
		case 2: if (rep.ok.count) rep.v[0] = 5; break;   /* a rank outside world 2 */
		case 3: rep.ok.count = m.max + 1; rep.v[rep.ok.count - 1] = 0; break; /* more than asked */
		case 4: rep.ok.local = 3; break;                 /* more local ranks than the world */
		default: break;
		}
		fk_send(f, SHF_IPC_NODE_INFO_OK, h.id, &rep,
			sizeof(rep.ok) + rep.ok.count * sizeof(int32_t));
		if (node_info_lie) {
			fk_expect_eof(f, false); /* the client hangs up on us */
			return;
		}
	}
}

static void node_info(int lie)
{
	char name[64];
	snprintf(name, sizeof(name), "node-info-lie-%d", lie);
	scenario = lie ? name : "node-info";
	node_info_lie = lie;
	struct shf_opts o;
	opts(&o, 1);
	pid_t p = fake_start(fk_node_info);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (c) {
		int local[2] = {-1, -1}, counts[2] = {-1, -1};
		struct shf_node_info ni = {-1, -1, -1, local, 2, counts, 2};
		int r = shf_node_info(c, &ni);
		if (!lie) {
			EXPECT(r == 0 && ni.node == 0 && ni.nodes == 2 && ni.local_count == 1 &&
			      local[0] == 0 && local[1] == -1 && counts[0] == 1 && counts[1] == 1);
			EXPECT(shf_close(c) == 0);
		} else {
			if (r != -ENOTCONN)
				fprintf(stderr, "[%s] shf_node_info: %d (%s)\n", scenario, r,
					shf_error_detail());
			EXPECT(r == -ENOTCONN);
			EXPECT(strstr(shf_error_detail(), "NODE_INFO_OK") != NULL);
			EXPECT(shf_close(c) == -ENOTCONN);
		}
	}
	fake_end(p);
}

static void fk_corrupt_record(struct fake *f)
{
	fk_open(f);
	fk_deliver(f, 1, SHF_REC_MSG, 1, "ok", 2);
	fk_deliver(f, 1, 7, 1, "bad", 3); /* unknown record kind */
	fk_expect_eof(f, false);
}

/* Open against fake fk and use the context until it dies (sends in thread
 * mode, shf_poll in poll mode): it must die of a protocol error after
 * exactly `want` deliveries; then check() (if any) looks at them. */
static void until_dead(const char *sc, void (*fk)(struct fake *), int thread, int want,
		       void (*check)(void))
{
	scenario = sc;
	atomic_store(&got, 0);
	struct shf_opts o;
	opts(&o, thread);
	pid_t p = fake_start(fk);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (c) {
		int r = 0;
		double end = now_s() + 5;
		while ((r >= 0 || r == -EAGAIN) && now_s() < end) {
			if (thread) {
				usleep(1000);
				r = shf_send(c, 1, 0, "x", 1, SHF_NONBLOCK);
			} else {
				r = shf_poll(c, 100);
			}
		}
		EXPECT(r == -ENOTCONN);
		EXPECT(strstr(shf_error_detail(), "protocol error") != NULL);
		EXPECT(atomic_load(&got) == want); /* the good records before the bad one */
		if (check)
			check();
		EXPECT(shf_close(c) == -ENOTCONN);
	}
	fake_end(p);
}

static void corrupt_record(int thread)
{
	until_dead(thread ? "corrupt-record-thread" : "corrupt-record-poll", fk_corrupt_record,
		   thread, 1, NULL);
}

/* A run record from rank 1: `count` in its header, items {type 5 + i,
 * "r<i>"} of 2 bytes each, `n` of them written; `cut` bytes taken off the
 * record's end, `len_of` (>= 0) the length item `len_of` claims. */
static void fk_deliver_run(struct fake *f, int32_t src, uint32_t count, uint32_t n, uint32_t cut,
			   int len_of)
{
	uint32_t bytes = SHF_RUN_HDR_BYTES + n * shf_run_item_bytes(2) - cut;
	uint8_t *p = shf_ring_reserve(&f->deliver, bytes, SHF_REC_RUN);
	if (!p)
		FAKE_FAIL("delivery ring full");
	memset(p, 0, bytes);
	struct shf_run_hdr h = {src, count};
	memcpy(p, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t at = SHF_RUN_HDR_BYTES + i * shf_run_item_bytes(2);
		struct shf_run_item it = {5 + i, (int)i == len_of ? 100u : 2u};
		if (at + 10 > bytes)
			break;
		memcpy(p + at, &it, sizeof(it));
		p[at + 8] = 'r';
		p[at + 9] = (uint8_t)('0' + i);
	}
	if (shf_ring_publish(&f->deliver))
		shf_bell_ring(f->bell_deliver);
}

/* A good run of 2, then a bad one (which_bad): 0 count 0, 1 rank outside
 * the world, 2 its second item's length past the record, 3 bytes left
 * over after its count, 4 a packed run to a client that never said it
 * reads them (this fake grants no SHF_REG_OK_PACKED).  The items before
 * the bad one are delivered. */
static int which_bad;

static void fk_corrupt_run(struct fake *f)
{
	fk_open(f);
	fk_deliver_run(f, 1, 2, 2, 0, -1);
	switch (which_bad) {
	case 0: fk_deliver_run(f, 1, 0, 1, 0, -1); break;
	case 1: fk_deliver_run(f, 9, 1, 1, 0, -1); break;
	case 2: fk_deliver_run(f, 1, 2, 2, 0, 1); break;
	case 3: fk_deliver_run(f, 1, 1, 2, 0, -1); break;
	default: fk_deliver_run(f, 1, 2 | SHF_RUN_PACKED, 2, 0, -1); break;
	}
	fk_expect_eof(f, false);
}

/* The good run's two items came as sent. */
static void run_items_ok(void)
{
	EXPECT(got_type[0] == 5 && got_type[1] == 6 && !memcmp(got_data[1], "r1", 2) &&
	       got_len[1] == 2 && got_src[0] == 1);
}

static void corrupt_run(int thread, int bad, int want)
{
	static const char *const names[] = {"count0", "rank", "overlong", "leftover", "packed"};
	static char sc[64];
	snprintf(sc, sizeof(sc), "corrupt-run-%s-%s", names[bad], thread ? "thread" : "poll");
	which_bad = bad;
	until_dead(sc, fk_corrupt_run, thread, want, run_items_ok);
}

static void fk_die_later(struct fake *f)
{
	fk_open(f);
	usleep(300000); /* the client fills its send ring meanwhile */
	_exit(0);
}

static void death_blocked_send(int thread)
{
	scenario = thread ? "death-blocked-send-thread" : "death-blocked-send-poll";
	struct shf_opts o;
	opts(&o, thread);
	pid_t p = fake_start(fk_die_later);
	struct shf_ctx *c = NULL;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == 0);
	if (c) {
		int r = 0, n = 0;
		double t0 = now_s();
		while ((r = shf_send(c, 1, 0, "0123456789abcdef", 16, 0)) == 0)
			n++;
		EXPECT(r == -ENOTCONN);
		EXPECT(n > 0 && n < (int)(RING / 24) + 1); /* the ring filled, then death */
		EXPECT(now_s() - t0 < 5);
		struct shf_stats s;
		EXPECT(shf_stats_get(c, &s) == 0 && s.send_blocked_ns > 0);
		EXPECT(shf_flush(c, SHF_FLUSH_ORIGIN, -1) == -ENOTCONN);
		EXPECT(shf_flush(c, SHF_FLUSH_REMOTE, -1) == -ENOTCONN);
		EXPECT(shf_flush(c, SHF_FLUSH_DELIVERY, -1) == -ENOTCONN);
		EXPECT(shf_epoch(c, -1) == -ENOTCONN);
		EXPECT(shf_close(c) == -ENOTCONN);
	}
	fake_end(p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	unsetenv("SHF_DEBUG");
	snprintf(sock_path, sizeof(sock_path), "/tmp/shf-client-proto-%d.sock", (int)getpid());
	unlink(sock_path);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0) {
		fprintf(stderr, "client-proto: cannot listen on %s: %s\n", sock_path,
			strerror(errno));
		return 1;
	}

	/* a daemon older than REGISTER's flags: it refuses an 88-byte body;
	 * the library sends the 80-byte one, which every daemon takes */
	{
		scenario = "old-daemon";
		struct shf_opts o;
		opts(&o, 1);
		int fds = count_fds();
		pid_t p = fake_start(fk_old_daemon);
		struct shf_ctx *c = NULL;
		int r = shf_open(&o, on_msg, NULL, &c);
		EXPECT(r == 0 && c != NULL);
		if (c)
			EXPECT(shf_close(c) == 0);
		EXPECT(count_fds() == fds);
		fake_end(p);
	}
	open_fails("bad-version", fk_bad_version, -EPROTO, "protocol", 3000);
	open_fails("hello-refused", fk_hello_refused, -EPROTO, "version 1 not supported", 3000);
	open_fails("busy", fk_busy, -EBUSY, "max_clients", 3000);
	open_fails("register-refused", fk_reg_refused, -EACCES, "uid 4242", 3000);
	open_fails("register-3-fds", fk_reg_fds3, -EPROTO, "fds", 3000);
	open_fails("register-size", fk_reg_size, -EPROTO, "bytes", 3000);
	open_fails("register-rank", fk_reg_rank, -EPROTO, "rank", 3000);
	open_fails("world-timeout", fk_world_timeout, -ETIMEDOUT, "missing ranks 1", 3000);
	open_fails("hangup", fk_hangup, -ENOTCONN, "closed", 3000);
	open_fails("wrong-reply", fk_wrong_reply, -EPROTO, "READY", 3000);
	double t0 = now_s();
	open_fails("silent", fk_silent, -ETIMEDOUT, "READY", 200); /* 200 ms + 5 s grace */
	EXPECT(now_s() - t0 > 5.0 && now_s() - t0 < 8.0);

	data_path(1);
	data_path(0);
	unsolicited_error();
	drained();
	bogus_reply();
	for (int lie = 0; lie <= 4; lie++)
		node_info(lie);
	corrupt_record(1);
	corrupt_record(0);
	for (int thread = 0; thread <= 1; thread++) {
		corrupt_run(thread, 0, 2);
		corrupt_run(thread, 1, 2);
		corrupt_run(thread, 2, 3);
		corrupt_run(thread, 3, 3);
		corrupt_run(thread, 4, 2);
	}
	death_blocked_send(1);
	death_blocked_send(0);

	close(lfd);
	unlink(sock_path);
	return check_result();
}
