/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/fake-fabric.c - daemon/net/fabric.h without libfabric (see
 * fake-fabric.h).  One endpoint per process; not thread-safe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "tests/lib/check.h"
#include "tests/netunit/fake-fabric.h"

#define FAKE_MAX_NODES 64u

struct shd_fabric {
	struct shd_fabric_opts o;
	size_t buf_bytes;
	bool inserted[FAKE_MAX_NODES];
	bool removed[FAKE_MAX_NODES];
	uint32_t removals[FAKE_MAX_NODES];
	uint32_t mr_regions;
};

enum fake_ev_kind { FEV_DONE, FEV_RECV };

struct fake_ev {
	enum fake_ev_kind kind;
	size_t idx;    /* FEV_DONE: send index */
	int status;
	uint32_t node; /* FEV_RECV */
	uint8_t *buf;
	size_t len;
};

static struct {
	struct shd_fabric *f;
	struct fake_send *sends;
	size_t n_sends, cap_sends;
	struct fake_ev *evs;
	size_t n_evs, cap_evs;
	const struct shd_fabric_cb *cb;
	void *arg;
	enum fake_which fail_which;
	uint64_t fail_nth; /* 0: no script */
	int fail_err;
	bool eagain, queued;
	uint64_t n_failed, n_eagain, n_unreachable;
	struct shf_fabric_stats st;
	uint64_t sess[FAKE_MAX_NODES][2]; /* fake_set_session() */
} F;

/* ------------------------------------------------------------- test side */

size_t fake_n_sends(void)
{
	return F.n_sends;
}

const struct fake_send *fake_send_at(size_t i)
{
	CHECKF(i < F.n_sends, "send %zu of %zu", i, F.n_sends);
	return &F.sends[i];
}

static bool send_is(const struct fake_send *s, uint32_t node, unsigned kind)
{
	if (node != FAKE_ANY_NODE && s->node != node)
		return false;
	if (kind == FAKE_NO_HEARTBEAT)
		return s->kind != SHF_WIRE_HEARTBEAT;
	return kind == FAKE_ANY_KIND || s->kind == kind;
}

size_t fake_count(uint32_t node, unsigned kind)
{
	size_t n = 0;
	for (size_t i = 0; i < F.n_sends; i++)
		if (send_is(&F.sends[i], node, kind))
			n++;
	return n;
}

long fake_find(uint32_t node, unsigned kind, size_t k)
{
	for (size_t i = 0; i < F.n_sends; i++)
		if (send_is(&F.sends[i], node, kind) && k-- == 0)
			return (long)i;
	return -1;
}

void fake_fail_nth(enum fake_which which, uint64_t nth, int err)
{
	CHECK(nth >= 1 && err < 0);
	F.fail_which = which;
	F.fail_nth = nth;
	F.fail_err = err;
}

void fake_set_eagain(bool on)
{
	F.eagain = on;
}

void fake_set_queued(bool on)
{
	F.queued = on;
}

uint64_t fake_n_failed(void)
{
	return F.n_failed;
}

uint64_t fake_n_eagain(void)
{
	return F.n_eagain;
}

uint64_t fake_n_unreachable(void)
{
	return F.n_unreachable;
}

size_t fake_n_outstanding(void)
{
	size_t n = 0;
	for (size_t i = 0; i < F.n_sends; i++)
		n += !F.sends[i].done;
	return n;
}

void fake_bind(const struct shd_fabric_cb *cb, void *arg)
{
	F.cb = cb;
	F.arg = arg;
}

static void push_ev(struct fake_ev e)
{
	if (F.n_evs == F.cap_evs) {
		F.cap_evs = F.cap_evs ? 2 * F.cap_evs : 64;
		F.evs = realloc(F.evs, F.cap_evs * sizeof(*F.evs));
		CHECK(F.evs);
	}
	F.evs[F.n_evs++] = e;
}

static void deliver_done(size_t i, int status)
{
	CHECKF(F.cb, "no callbacks bound");
	if (status == 0)
		F.st.sends_done++;
	else
		F.st.send_errors++;
	if (status < 0 && F.cb->on_error)
		F.cb->on_error(F.arg, F.sends[i].node, status, "fake completion error");
	F.cb->on_send_done(F.arg, F.sends[i].ctx, status);
}

void fake_complete_now(size_t i, int status)
{
	CHECKF(i < F.n_sends, "send %zu of %zu", i, F.n_sends);
	CHECKF(!F.sends[i].done, "send %zu completed twice", i);
	F.sends[i].done = true;
	deliver_done(i, status);
}

void fake_complete(size_t i, int status)
{
	CHECKF(i < F.n_sends, "send %zu of %zu", i, F.n_sends);
	CHECKF(!F.sends[i].done, "send %zu completed twice", i);
	F.sends[i].done = true;
	push_ev((struct fake_ev){.kind = FEV_DONE, .idx = i, .status = status});
}

void fake_complete_all_now(int status)
{
	for (size_t i = 0; i < F.n_sends; i++)
		if (!F.sends[i].done)
			fake_complete_now(i, status);
}

static uint8_t *recv_buf(const void *buf, size_t len)
{
	size_t cap = F.f && F.f->buf_bytes > len ? F.f->buf_bytes : len;
	cap = (cap + 63) & ~(size_t)63;
	uint8_t *b = aligned_alloc(64, cap);
	CHECK(b);
	memcpy(b, buf, len);
	return b;
}

static int deliver_recv(uint32_t node, uint8_t *b, size_t len)
{
	CHECKF(F.cb, "no callbacks bound");
	F.st.recvs++;
	F.st.recv_bytes += len;
	int r = F.cb->on_recv(F.arg, node, b, len);
	CHECKF(r == 0 || r == SHD_FABRIC_KEEP, "on_recv returned %d", r);
	if (r == SHD_FABRIC_KEEP) {
		/* the daemon no longer keeps receive buffers; a test that
		 * wants it would track b for shd_fabric_repost() */
		FAIL("on_recv kept a receive buffer");
	}
	/* the buffer is reposted: whatever the receiver kept pointing into it
	 * now reads garbage (and ASan sees a use after free) */
	memset(b, 0xA5, len);
	free(b);
	return r;
}

void fake_set_session(uint32_t node, uint64_t src_session, uint64_t dst_session)
{
	CHECK(node < FAKE_MAX_NODES);
	F.sess[node][0] = src_session;
	F.sess[node][1] = dst_session;
}

/* The receive buffer of a message from node, stamped with node's session
 * when it carries none (a message shorter than a header stays as it is:
 * the receiver must reject it). */
static uint8_t *stamped(uint32_t node, const void *buf, size_t len)
{
	uint8_t *b = recv_buf(buf, len);
	if (node < FAKE_MAX_NODES && len >= SHF_WIRE_HDR && shf_wire_get64(b + 16) == 0 &&
	    shf_wire_get64(b + 24) == 0 && (F.sess[node][0] || F.sess[node][1]))
		shf_wire_stamp(b, F.sess[node][0], F.sess[node][1]);
	return b;
}

int fake_inject_now(uint32_t node, const void *buf, size_t len)
{
	return deliver_recv(node, stamped(node, buf, len), len);
}

void fake_inject(uint32_t node, const void *buf, size_t len)
{
	push_ev((struct fake_ev){.kind = FEV_RECV, .node = node, .buf = stamped(node, buf, len),
				 .len = len});
}

int fake_inject_raw_now(uint32_t node, const void *buf, size_t len)
{
	return deliver_recv(node, recv_buf(buf, len), len);
}

void fake_inject_raw(uint32_t node, const void *buf, size_t len)
{
	push_ev((struct fake_ev){.kind = FEV_RECV, .node = node, .buf = recv_buf(buf, len),
				 .len = len});
}

size_t fake_n_queued(void)
{
	return F.n_evs;
}

bool fake_node_removed(uint32_t node)
{
	return F.f && node < FAKE_MAX_NODES && F.f->removed[node];
}

uint32_t fake_removals(uint32_t node)
{
	return F.f && node < FAKE_MAX_NODES ? F.f->removals[node] : 0;
}

uint32_t fake_mr_regions(void)
{
	return F.f ? F.f->mr_regions : 0;
}

bool fake_is_open(void)
{
	return F.f != NULL;
}

/* ------------------------------------------------------------- fabric.h */

int shd_fabric_open(const struct shd_fabric_opts *o, struct shd_fabric **f_p, char *err,
		    size_t errlen)
{
	CHECKF(!F.f, "one fake endpoint at a time");
	struct shd_fabric *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->o = *o;
	f->buf_bytes = o->buf_bytes ? o->buf_bytes : 36u << 10;
	F.f = f;
	*f_p = f;
	return 0;
}

void shd_fabric_close(struct shd_fabric *f)
{
	if (!f)
		return;
	CHECK(f == F.f);
	for (size_t i = 0; i < F.n_sends; i++)
		free(F.sends[i].bytes);
	free(F.sends);
	for (size_t i = 0; i < F.n_evs; i++)
		if (F.evs[i].kind == FEV_RECV)
			free(F.evs[i].buf);
	free(F.evs);
	free(f);
	memset(&F, 0, sizeof(F));
}

const char *shd_fabric_provider(const struct shd_fabric *f)
{
	return "fake";
}

int shd_fabric_addr(struct shd_fabric *f, void *buf, size_t *len)
{
	static const char a[16] = "fake-address-16";
	if (*len < sizeof(a)) {
		*len = sizeof(a);
		return -ENOBUFS;
	}
	memcpy(buf, a, sizeof(a));
	*len = sizeof(a);
	return 0;
}

int shd_fabric_addr_str(struct shd_fabric *f, const void *addr, size_t addr_len, char *buf,
			size_t buflen)
{
	snprintf(buf, buflen, "fake://%zu", addr_len);
	return 0;
}

static int insert(struct shd_fabric *f, uint32_t node)
{
	if (node >= FAKE_MAX_NODES)
		return -EINVAL;
	if (f->inserted[node])
		return -EEXIST;
	f->inserted[node] = true;
	f->removed[node] = false;
	return 0;
}

int shd_fabric_insert(struct shd_fabric *f, const void *addr, size_t len, uint32_t node)
{
	return insert(f, node);
}

int shd_fabric_insert_svc(struct shd_fabric *f, const char *host, const char *port,
			  uint32_t node)
{
	return insert(f, node);
}

int shd_fabric_remove(struct shd_fabric *f, uint32_t node)
{
	if (node >= FAKE_MAX_NODES || !f->inserted[node])
		return -EINVAL;
	f->inserted[node] = false;
	f->removed[node] = true;
	f->removals[node]++;
	return 0;
}

int shd_fabric_release(struct shd_fabric *f, uint32_t node)
{
	/* the connection goes, the address stays */
	if (node >= FAKE_MAX_NODES || !f->inserted[node])
		return -EINVAL;
	return 0;
}

bool shd_fabric_reports_source(const struct shd_fabric *f)
{
	return true; /* tests pass the sender's node with every injected message */
}

bool shd_fabric_has_node(const struct shd_fabric *f, uint32_t node)
{
	return node < FAKE_MAX_NODES && f->inserted[node];
}

static int do_send(struct shd_fabric *f, enum fake_which which, uint32_t node, const void *buf,
		   size_t len, void *ctx)
{
	CHECK(f == F.f);
	if (F.fail_nth && (F.fail_which & which) && --F.fail_nth == 0) {
		F.n_failed++;
		return F.fail_err;
	}
	if (F.eagain) {
		F.n_eagain++;
		return -EAGAIN;
	}
	if (node >= FAKE_MAX_NODES || !f->inserted[node]) {
		F.n_unreachable++;
		return -EHOSTUNREACH;
	}
	if (len > f->buf_bytes || (which == FAKE_SMALL && len > SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM))
		return -EMSGSIZE;
	CHECKF(len >= SHF_WIRE_HDR, "a %zu-byte wire message", len);
	if (F.n_sends == F.cap_sends) {
		F.cap_sends = F.cap_sends ? 2 * F.cap_sends : 64;
		F.sends = realloc(F.sends, F.cap_sends * sizeof(*F.sends));
		CHECK(F.sends);
	}
	struct fake_send *s = &F.sends[F.n_sends++];
	memset(s, 0, sizeof(*s));
	s->node = node;
	s->len = (uint32_t)len;
	s->small = which == FAKE_SMALL;
	s->ctx = ctx;
	s->bytes = malloc(len);
	CHECK(s->bytes);
	memcpy(s->bytes, buf, len);
	s->kind = shf_wire_get16(s->bytes + 6);
	s->src_session = shf_wire_get64(s->bytes + 16);
	s->dst_session = shf_wire_get64(s->bytes + 24);
	F.st.sends++;
	return which == FAKE_BATCH && F.queued ? 1 : 0;
}

int shd_fabric_send(struct shd_fabric *f, uint32_t node, const void *buf, size_t len, void *ctx)
{
	return do_send(f, FAKE_BATCH, node, buf, len, ctx);
}

int shd_fabric_send_small(struct shd_fabric *f, uint32_t node, const void *buf, size_t len,
			  void *ctx)
{
	return do_send(f, FAKE_SMALL, node, buf, len, ctx);
}

int shd_fabric_mr_reg(struct shd_fabric *f, void *buf, size_t len)
{
	CHECK(buf && len);
	f->mr_regions++;
	return f->mr_regions <= 8 ? 0 : -ENOSPC;
}

int shd_fabric_progress(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	CHECK(f == F.f);
	F.cb = cb;
	F.arg = arg;
	uint32_t max = f->o.cq_batch ? f->o.cq_batch : 64;
	int n = 0;
	while (F.n_evs && (uint32_t)n < max) {
		struct fake_ev e = F.evs[0];
		memmove(F.evs, F.evs + 1, (F.n_evs - 1) * sizeof(*F.evs));
		F.n_evs--;
		if (e.kind == FEV_DONE)
			deliver_done(e.idx, e.status);
		else
			deliver_recv(e.node, e.buf, e.len);
		n++;
	}
	return n;
}

int shd_fabric_repost(struct shd_fabric *f, void *buf)
{
	return -EINVAL; /* nothing is ever kept (deliver_recv fails the test) */
}

int shd_fabric_wait_fd(const struct shd_fabric *f)
{
	return -1;
}

bool shd_fabric_trywait(struct shd_fabric *f)
{
	return F.n_evs == 0;
}

bool shd_fabric_has_pending(const struct shd_fabric *f)
{
	return false;
}

uint32_t shd_fabric_sends_outstanding(const struct shd_fabric *f)
{
	return (uint32_t)fake_n_outstanding();
}

void shd_fabric_stats_get(const struct shd_fabric *f, struct shf_fabric_stats *s)
{
	*s = F.st;
}
