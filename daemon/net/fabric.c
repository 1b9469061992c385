/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fabric.c - the libfabric endpoint: opening and closing it,
 * memory registration, the address vector (node id -> fabric address) and
 * posting receive buffers.  Sends, completions and reposts are in
 * fabric_io.c; these two files hold every libfabric call of the project.
 *
 * Resources: receive buffers (one aligned slab cut into recv_buffers
 * pieces, each with its own context) and send slots (one per send posted
 * or queued, each with its own context and a small inline copy buffer).
 * A completion's op_context points at a struct fi_context2 that is the
 * first member of either a struct rbuf or a struct slot; which one is told
 * by the address range, not by trusting flags.
 */
#include "daemon/net/fabric.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "daemon/net/fabric_int.h"

_Static_assert(SMALL_BYTES == SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM,
	       "a slot's inline buffer holds a small message and its hop header");

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- memory registration ------------------------------------------------ */

static int region_reg(struct shd_fabric *f, struct region *g, void *base, size_t len)
{
	g->base = base;
	g->len = len;
	g->mr = NULL;
	g->desc = NULL;
	if (!f->need_mr)
		return 0;
	/* Distinct requested keys: a provider without FI_MR_PROV_KEY uses them
	 * (tcp with mr_always), and a repeated key fails with -FI_ENOKEY. */
	uint64_t key = ++f->mr_keys;
	int r = fi_mr_reg(f->domain, base, len, FI_SEND | FI_RECV, 0, key, 0, &g->mr, NULL);
	if (r)
		return r; /* -FI_Exxx: callers map it with ferr() */
	g->desc = fi_mr_desc(g->mr);
	return 0;
}

static void region_dereg(struct region *g)
{
	if (g->mr)
		fi_close(&g->mr->fid);
	g->mr = NULL;
}

int shd_fabric_mr_reg(struct shd_fabric *f, void *buf, size_t len)
{
	if (!f->need_mr)
		return 0;
	if (f->nregions == MAX_REGIONS)
		return -ENOSPC;
	int r = region_reg(f, &f->regions[f->nregions], buf, len);
	if (r)
		return ferr(r);
	f->nregions++;
	return 0;
}

/* Descriptor for [buf, buf+len), or -EINVAL via *ok = false. */
void *shd_fabric_find_desc(struct shd_fabric *f, const void *buf, size_t len, bool *ok)
{
	*ok = true;
	if (!f->need_mr)
		return NULL;
	const uint8_t *p = buf;
	for (unsigned i = 0; i < f->nregions; i++) {
		struct region *g = &f->regions[i];
		if (p >= g->base && len <= g->len && (size_t)(p - g->base) <= g->len - len)
			return g->desc;
	}
	*ok = false;
	return NULL;
}

/* ---- open / close -------------------------------------------------------- */

static struct fi_info *make_hints(const char *provider, bool source)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | (source ? FI_SOURCE : 0);
	h->mode = 0;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->control_progress = FI_PROGRESS_AUTO;
	h->domain_attr->av_type = FI_AV_TABLE;
	/* FI_MR_LOCAL: we can register (verbs needs it); tcp clears the bit. */
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->fabric_attr->prov_name = strdup(provider);
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

int shd_fabric_post_recv(struct shd_fabric *f, struct rbuf *rb)
{
	ssize_t r = fi_recv(f->ep, rb->buf, f->buf_bytes, f->rreg.desc, FI_ADDR_UNSPEC, &rb->ctx);
	if (r == 0) {
		rb->state = RB_POSTED;
		return 0;
	}
	if (r == -FI_EAGAIN) {
		rb->state = RB_REPOST;
		rb->next_repost = f->repost_head;
		f->repost_head = (uint32_t)(rb - f->rbufs);
		f->n_repost++;
		return 0;
	}
	rb->state = RB_KEPT; /* lost to us; reported by the caller */
	return ferr(r);
}

/* An fi_* call that failed: err says which, and the libfabric code is
 * returned for shd_fabric_open to convert once. */
static int fi_fail(int r, char *err, size_t errlen, const char *what)
{
	seterr(err, errlen, "fabric: %s: %s", what, fi_strerror(-r));
	return r;
}

/* Sets name=value unless the environment already has name (an admin's
 * value wins). Returns 0 or a negative errno with err set. */
static int env_default(const char *name, unsigned long long value, char *err, size_t errlen)
{
	char v[24];
	snprintf(v, sizeof(v), "%llu", value);
	if (setenv(name, v, 0) != 0) {
		int r = -errno;
		seterr(err, errlen, "fabric: setenv %s: %s", name, strerror(-r));
		return r;
	}
	return 0;
}

/* The options with their defaults filled in and checked, and the
 * environment libfabric reads at its first call set from them. */
static int fabric_env(struct shd_fabric_opts *d, char *err, size_t errlen)
{
	int r;
	if (!d->provider)
		d->provider = "tcp";
	if (!d->max_nodes)
		d->max_nodes = 1024;
	if (!d->recv_buffers)
		d->recv_buffers = 32;
	if (!d->buf_bytes)
		d->buf_bytes = 36u << 10;
	if (!d->send_slots)
		d->send_slots = 256;
	if (!d->cq_batch)
		d->cq_batch = 64;
	if (d->max_nodes > (1u << 20) || d->recv_buffers > 65536 || d->send_slots > 65536 ||
	    d->buf_bytes > (1u << 30) || d->buf_bytes < 64) {
		seterr(err, errlen, "fabric: option out of range");
		return -EINVAL;
	}
	if (d->node && !d->service)
		d->service = "0";
	if (d->iface && setenv("FI_TCP_IFACE", d->iface, 1) != 0) {
		r = -errno;
		seterr(err, errlen, "fabric: setenv FI_TCP_IFACE: %s", strerror(-r));
		return r;
	}
	/* the user's environment wins (overwrite = 0) */
	if (d->conn_queue && ((r = env_default("FI_OFI_RXM_MSG_RX_SIZE", d->conn_queue, err, errlen)) ||
			      (r = env_default("FI_OFI_RXM_MSG_TX_SIZE", d->conn_queue, err, errlen))))
		return r;
	/* ofi_rxm's two bounce-buffer pools (receive and transmit) start
	 * with 1024 buffers of FI_OFI_RXM_BUFFER_SIZE each: at its default
	 * of 16 KiB they were 32 of a 2-node daemon's 43 MiB idle RSS.
	 * Over tcp a message up to FI_OFI_RXM_EAGER_LIMIT goes eager from
	 * our buffer (direct send) into a posted one (tcp's dynamic receive
	 * buffers), so the pools can shrink without changing the protocol,
	 * as long as the eager limit stays where it was: it is pinned to
	 * libfabric 1.17's default (16 KiB), which is also what a daemon
	 * from before this setting uses.  Every node must have the same
	 * eager limit: a receiver whose limit is below its sender's stalls
	 * (measured: a daemon with libfabric's sizes next to one with
	 * 4 KiB buffers and a 132 KiB eager limit delivered nothing).
	 * A 132 KiB limit (a whole default batch eager) was faster, see
	 * docs/operations.md "libfabric's memory", but would stall next to
	 * older daemons.  Other providers (verbs needs the eager limit
	 * equal to the buffer size) keep libfabric's defaults. */
	if (!strcmp(d->provider, "tcp") || !strcmp(d->provider, "tcp;ofi_rxm")) {
		if ((r = env_default("FI_OFI_RXM_BUFFER_SIZE", SHD_FABRIC_RXM_BUFFER, err, errlen)) ||
		    (r = env_default("FI_OFI_RXM_EAGER_LIMIT", SHD_FABRIC_RXM_EAGER, err, errlen)))
			return r;
	}
	/* shd_fabric_release() needs an address's removal to close its
	 * connection: ofi_rxm does so only with FI_AV_REMOVE_CLEANUP (read
	 * once, at libfabric's first call; the user's environment wins) */
	if (d->release_conns && setenv("FI_AV_REMOVE_CLEANUP", "1", 0)) {
		r = -errno;
		seterr(err, errlen, "fabric: setenv FI_AV_REMOVE_CLEANUP: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* Hints and getinfo: f->info, preferring an endpoint that reports
 * sources and falling back without. Returns an errno. */
static int fabric_hints(struct shd_fabric *f, const struct shd_fabric_opts *d, char *err,
			size_t errlen)
{
	struct fi_info *info = NULL;
	int r = 0;
	for (int src = 1; src >= 0; src--) {
		struct fi_info *hints = make_hints(d->provider, src);
		if (!hints)
			return -ENOMEM;
		r = fi_getinfo(FABRIC_API, d->node, d->service,
			       d->node || d->service ? FI_SOURCE : 0, hints, &info);
		fi_freeinfo(hints);
		if (r == 0) {
			f->source = src;
			break;
		}
		if (r != -FI_ENODATA)
			break;
	}
	if (r) {
		seterr(err, errlen, "fabric: fi_getinfo(provider %s, %s:%s): %s", d->provider,
		       d->node ? d->node : "*", d->service ? d->service : "*", fi_strerror(-r));
		return r == -FI_ENODATA ? -ENODATA : ferr(r);
	}
	f->info = info;
	snprintf(f->prov, sizeof(f->prov), "%s", info->fabric_attr->prov_name);
	f->need_mr = d->mr_always || (info->domain_attr->mr_mode & FI_MR_LOCAL);
	return 0;
}

/* Resources: fabric, domain, address vector, CQ and its wait fd, and an
 * enabled endpoint with its name. Returns a libfabric code. */
static int fabric_resources(struct shd_fabric *f, const struct shd_fabric_opts *d, char *err,
			    size_t errlen)
{
	struct fi_info *info = f->info;
	int r;
	if ((r = fi_fabric(info->fabric_attr, &f->fabric, NULL)))
		return fi_fail(r, err, errlen, "fi_fabric");
	if ((r = fi_domain(f->fabric, info, &f->domain, NULL)))
		return fi_fail(r, err, errlen, "fi_domain");
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = d->max_nodes};
	if ((r = fi_av_open(f->domain, &av_attr, &f->av, NULL)))
		return fi_fail(r, err, errlen, "fi_av_open");
	struct fi_cq_attr cq_attr = {
		.size = (size_t)d->recv_buffers + d->send_slots + 16,
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
		.wait_cond = FI_CQ_COND_NONE,
	};
	if ((r = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)))
		return fi_fail(r, err, errlen, "fi_cq_open (wait fd)");
	if ((r = fi_control(&f->cq->fid, FI_GETWAIT, &f->wait_fd)))
		return fi_fail(r, err, errlen, "CQ wait fd");
	if ((r = fi_endpoint(f->domain, info, &f->ep, NULL)))
		return fi_fail(r, err, errlen, "fi_endpoint");
	r = fi_ep_bind(f->ep, &f->av->fid, 0);
	if (!r)
		r = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!r)
		r = fi_enable(f->ep);
	if (r)
		return fi_fail(r, err, errlen, "endpoint setup");
	uint8_t me[SHD_FABRIC_ADDR_MAX];
	f->addrlen = sizeof(me);
	if ((r = fi_getname(&f->ep->fid, me, &f->addrlen)))
		return fi_fail(r, err, errlen, "fi_getname");
	return 0;
}

/* Buffers: the peer and address tables, the receive buffers and send
 * slots with their registrations, and every receive posted. Returns a
 * libfabric code or an errno, as post_recv does. */
static int fabric_buffers(struct shd_fabric *f, const struct shd_fabric_opts *d, char *err,
			  size_t errlen)
{
	int r;
	f->max_nodes = d->max_nodes;
	f->cq_batch = d->cq_batch;
	f->buf_bytes = d->buf_bytes;
	f->nrbuf = d->recv_buffers;
	f->nslots = d->send_slots;
	size_t stride = (d->buf_bytes + 63u) & ~(size_t)63u;
	f->peers = calloc(d->max_nodes, sizeof(*f->peers));
	f->rbufs = calloc(d->recv_buffers, sizeof(*f->rbufs));
	f->slots = calloc(d->send_slots, sizeof(*f->slots));
	f->fiaddr_cap = d->max_nodes;
	f->fiaddr_node = malloc(f->fiaddr_cap * sizeof(*f->fiaddr_node));
	if (posix_memalign((void **)&f->rbase, 4096, stride * d->recv_buffers) != 0)
		f->rbase = NULL;
	if (!f->peers || !f->rbufs || !f->slots || !f->fiaddr_node || !f->rbase) {
		seterr(err, errlen, "fabric: out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->fiaddr_cap; i++)
		f->fiaddr_node[i] = NIL;
	r = region_reg(f, &f->rreg, f->rbase, stride * d->recv_buffers);
	if (!r)
		r = region_reg(f, &f->sreg, f->slots, sizeof(*f->slots) * d->send_slots);
	if (r)
		return fi_fail(r, err, errlen, "fi_mr_reg");
	/* calloc'd slots are SL_FREE (0); they are handed out in index order
	 * (slot_fresh) before the free list is used, so an idle daemon does
	 * not touch the pages of the slots it never needs (3.2 KiB per peer
	 * up to 64 peers at the default peer_credits, docs/scale.md) */
	f->free_head = NIL;
	f->slot_fresh = 0;
	f->q_head = f->q_tail = NIL;
	f->fail_head = f->fail_tail = NIL;
	f->repost_head = NIL;
	for (uint32_t i = 0; i < d->recv_buffers; i++) {
		f->rbufs[i].buf = f->rbase + i * stride;
		if ((r = shd_fabric_post_recv(f, &f->rbufs[i]))) {
			seterr(err, errlen, "fabric: fi_recv: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

int shd_fabric_open(const struct shd_fabric_opts *o, struct shd_fabric **f_p, char *err,
		    size_t errlen)
{
	struct shd_fabric_opts d = *o;
	int r = fabric_env(&d, err, errlen);
	if (r < 0)
		return r;
	struct shd_fabric *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->wait_fd = -1;
	if ((r = fabric_hints(f, &d, err, errlen)) < 0) {
		free(f);
		return r;
	}
	if ((r = fabric_resources(f, &d, err, errlen)) || (r = fabric_buffers(f, &d, err, errlen))) {
		r = r < 0 ? ferr(r) : -EIO;
		shd_fabric_close(f);
		return r;
	}
	*f_p = f;
	return 0;
}

void shd_fabric_close(struct shd_fabric *f)
{
	if (!f)
		return;
	if (f->ep)
		fi_close(&f->ep->fid);
	for (unsigned i = 0; i < f->nregions; i++)
		region_dereg(&f->regions[i]);
	region_dereg(&f->rreg);
	region_dereg(&f->sreg);
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->av)
		fi_close(&f->av->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		fi_freeinfo(f->info);
	free(f->peers);
	free(f->fiaddr_node);
	free(f->rbufs);
	free(f->slots);
	free(f->rbase);
	free(f);
}

const char *shd_fabric_provider(const struct shd_fabric *f)
{
	return f->prov;
}

/* ---- addresses ----------------------------------------------------------- */

int shd_fabric_addr(struct shd_fabric *f, void *buf, size_t *len)
{
	size_t n = *len;
	int r = fi_getname(&f->ep->fid, buf, &n);
	if (r == -FI_ETOOSMALL) {
		*len = n;
		return -ENOBUFS;
	}
	if (r)
		return ferr(r);
	*len = n;
	return 0;
}

int shd_fabric_addr_str(struct shd_fabric *f, const void *addr, size_t addr_len, char *buf,
			size_t buflen)
{
	uint8_t mine[SHD_FABRIC_ADDR_MAX];
	if (!buflen)
		return -EINVAL;
	if (!addr) {
		addr_len = sizeof(mine);
		int r = shd_fabric_addr(f, mine, &addr_len);
		if (r)
			return r;
		addr = mine;
	}
	(void)addr_len; /* the provider knows its address format's length */
	size_t n = buflen;
	fi_av_straddr(f->av, addr, buf, &n);
	buf[buflen - 1] = '\0';
	return 0;
}

static int map_fiaddr(struct shd_fabric *f, fi_addr_t a, uint32_t node)
{
	if (a >= f->fiaddr_cap) {
		if (a >= (fi_addr_t)f->max_nodes * 64)
			return -ENOSPC; /* an AV that never reuses indexes */
		size_t cap = f->fiaddr_cap;
		while (cap <= a)
			cap *= 2;
		uint32_t *m = realloc(f->fiaddr_node, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		for (size_t i = f->fiaddr_cap; i < cap; i++)
			m[i] = NIL;
		f->fiaddr_node = m;
		f->fiaddr_cap = cap;
	}
	f->fiaddr_node[a] = node;
	return 0;
}

static int insert_done(struct shd_fabric *f, int n, fi_addr_t a, uint32_t node)
{
	if (n != 1)
		return n < 0 ? ferr(n) : -EADDRNOTAVAIL;
	int r = map_fiaddr(f, a, node);
	if (r) {
		fi_av_remove(f->av, &a, 1, 0);
		return r;
	}
	f->peers[node].addr = a;
	f->peers[node].present = true;
	f->peers[node].queued = 0;
	f->peers[node].blocked = 0;
	return 0;
}

int shd_fabric_insert(struct shd_fabric *f, const void *addr, size_t len, uint32_t node)
{
	if (node >= f->max_nodes || !addr || !len || len > SHD_FABRIC_ADDR_MAX)
		return -EINVAL;
	if (f->peers[node].present)
		return -EEXIST;
	if (len != f->addrlen)
		return -EINVAL;
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(f->av, addr, 1, &a, 0, NULL);
	return insert_done(f, n, a, node);
}

int shd_fabric_insert_svc(struct shd_fabric *f, const char *host, const char *port,
			  uint32_t node)
{
	if (node >= f->max_nodes || !host || !port)
		return -EINVAL;
	if (f->peers[node].present)
		return -EEXIST;
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insertsvc(f->av, host, port, &a, 0, NULL);
	return insert_done(f, n, a, node);
}

bool shd_fabric_reports_source(const struct shd_fabric *f)
{
	return f->source;
}

bool shd_fabric_has_node(const struct shd_fabric *f, uint32_t node)
{
	return node < f->max_nodes && f->peers[node].present;
}

int shd_fabric_release(struct shd_fabric *f, uint32_t node)
{
	if (node >= f->max_nodes || !f->peers[node].present)
		return -EINVAL;
	if (f->peers[node].queued)
		return -EBUSY;
	for (uint32_t i = 0; i < f->slot_fresh; i++)
		if (f->slots[i].node == node && f->slots[i].state == SL_POSTED)
			return -EBUSY;
#ifdef SHD_FAULT_INJECTION
	int shd_fault_release(uint32_t node); /* tests/multi/fault-inject.c */
	int fault = shd_fault_release(node); /* may hold the release: the wake race */
	if (fault)
		return fault;
#endif
	fi_addr_t a = f->peers[node].addr;
	uint8_t addr[SHD_FABRIC_ADDR_MAX];
	size_t len = sizeof(addr);
	int r = fi_av_lookup(f->av, a, addr, &len);
	if (r)
		return ferr(r);
	if (len > sizeof(addr))
		return -EOVERFLOW;
	if (a < f->fiaddr_cap)
		f->fiaddr_node[a] = NIL;
	f->peers[node].present = false;
	if ((r = fi_av_remove(f->av, &a, 1, 0)))
		return ferr(r);
	fi_addr_t b = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(f->av, addr, 1, &b, 0, NULL);
	return insert_done(f, n, b, node);
}
