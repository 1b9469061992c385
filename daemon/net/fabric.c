/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fabric.c - the libfabric endpoint (every libfabric call of the
 * project is in this file).
 *
 * Resources: receive buffers (one aligned slab cut into recv_buffers
 * pieces, each with its own context) and send slots (one per send posted
 * or queued, each with its own context and a small inline copy buffer).
 * A completion's op_context points at a struct fi_context2 that is the
 * first member of either a struct rbuf or a struct slot; which one is told
 * by the address range, not by trusting flags.
 *
 * Queued sends: fi_send() returns -FI_EAGAIN while rxm sets up the
 * connection to a peer, or when the transmit queue is full.  Such a send
 * goes to a FIFO of slots; later sends to the same node go behind it (per
 * node order), sends to other nodes do not.  progress() retries the FIFO
 * once per call; within one pass the first -FI_EAGAIN for a node skips the
 * node's later entries.  The FIFO is bounded by send_slots.
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

#define FABRIC_API FI_VERSION(1, 17)
#define MAX_REGIONS 8u
#define SMALL_BYTES (SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM) /* inline copy buffer of a slot */
#define NIL UINT32_MAX
#define CQ_CHUNK 16u

enum rbuf_state {
	RB_POSTED,  /* owned by the provider */
	RB_KEPT,    /* owned by on_recv's caller (inside the callback, or kept) */
	RB_REPOST,  /* waiting for progress() to post it (fi_recv said EAGAIN) */
};

struct rbuf {
	struct fi_context2 ctx; /* first: op_context of its completion */
	uint8_t *buf;           /* buf_bytes, inside f->rbase */
	uint32_t state;         /* enum rbuf_state */
	uint32_t next_repost;   /* RB_REPOST list link */
};

enum slot_state {
	SL_FREE,   /* on the free list */
	SL_QUEUED, /* on the FIFO, not posted yet */
	SL_POSTED, /* owned by the provider until its completion */
	SL_FAILED, /* finished with an error, to be reported by progress() */
};

struct slot {
	struct fi_context2 ctx; /* first: op_context of its completion */
	const void *buf;        /* what to send (the caller's, or small[]) */
	size_t len;
	void *desc;             /* MR descriptor of buf, or NULL */
	void *uctx;             /* the caller's ctx for on_send_done */
	uint32_t node;          /* destination */
	uint32_t state;         /* enum slot_state */
	uint32_t next;          /* free / FIFO / failed list link */
	int status;             /* SL_FAILED: negative errno */
	_Alignas(8) uint8_t small[SMALL_BYTES]; /* copy of a small message */
};

struct peer {
	fi_addr_t addr;      /* AV index */
	bool present;        /* inserted and not removed */
	uint32_t queued;     /* slots of this node on the FIFO */
	uint64_t blocked;    /* retry pass in which it last returned EAGAIN */
};

struct region {
	uint8_t *base;
	size_t len;
	struct fid_mr *mr;
	void *desc;
};

struct shd_fabric {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int wait_fd;
	size_t addrlen; /* length of my (and so every peer's) raw address */
	bool need_mr;   /* register buffers and pass descriptors */
	bool source;    /* the CQ reports sources (FI_SOURCE) */
	char prov[64];  /* resolved provider name */

	uint32_t max_nodes;
	struct peer *peers;       /* [max_nodes] */
	uint32_t *fiaddr_node;    /* AV index -> node, NIL when none */
	size_t fiaddr_cap;

	size_t buf_bytes;
	uint32_t nrbuf;
	uint8_t *rbase;           /* nrbuf * buf_bytes */
	struct rbuf *rbufs;
	struct region rreg;       /* the receive slab's registration */
	uint32_t repost_head;     /* RB_REPOST list */
	uint32_t n_repost;

	uint32_t nslots;
	struct slot *slots;
	struct region sreg;       /* the slots' (small buffers') registration */
	uint32_t free_head;
	uint32_t q_head, q_tail;  /* FIFO of SL_QUEUED */
	uint32_t n_queued;
	uint32_t fail_head, fail_tail; /* SL_FAILED, in failure order */
	uint32_t outstanding;     /* QUEUED + POSTED + FAILED not yet reported */
	uint64_t pass;            /* retry pass counter */

	struct region regions[MAX_REGIONS];
	unsigned nregions;
	uint64_t mr_keys;         /* last requested MR key */
	uint32_t cq_batch;
	struct shf_fabric_stats st;
};

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

/* libfabric returns -FI_Exxx; those below FI_ERRNO_OFFSET are errno values. */
static int ferr(long r)
{
	if (r >= 0)
		return 0;
	if (-r >= FI_ERRNO_OFFSET)
		return -r == FI_ETRUNC ? -EMSGSIZE : -EIO;
	return (int)r;
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
static void *find_desc(struct shd_fabric *f, const void *buf, size_t len, bool *ok)
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

static int post_recv(struct shd_fabric *f, struct rbuf *rb)
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
	f->free_head = NIL;
	for (uint32_t i = d->send_slots; i-- > 0;) {
		f->slots[i].state = SL_FREE;
		f->slots[i].next = f->free_head;
		f->free_head = i;
	}
	f->q_head = f->q_tail = NIL;
	f->fail_head = f->fail_tail = NIL;
	f->repost_head = NIL;
	for (uint32_t i = 0; i < d->recv_buffers; i++) {
		f->rbufs[i].buf = f->rbase + i * stride;
		if ((r = post_recv(f, &f->rbufs[i]))) {
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

/* ---- send slots ---------------------------------------------------------- */

/* Slot i at the tail of the list *head_p .. *tail_p (NIL: empty). */
static inline void slot_append(struct shd_fabric *f, uint32_t *head_p, uint32_t *tail_p,
			       uint32_t i)
{
	f->slots[i].next = NIL;
	if (*tail_p == NIL)
		*head_p = i;
	else
		f->slots[*tail_p].next = i;
	*tail_p = i;
}

/* Queued slot i, after prev (NIL: i is the head), out of the send queue. */
static inline void queue_unlink(struct shd_fabric *f, uint32_t prev, uint32_t i)
{
	uint32_t next = f->slots[i].next;
	if (prev == NIL)
		f->q_head = next;
	else
		f->slots[prev].next = next;
	if (f->q_tail == i)
		f->q_tail = prev;
	f->n_queued--;
}

static void fail_push(struct shd_fabric *f, uint32_t i, int status)
{
	struct slot *s = &f->slots[i];
	s->state = SL_FAILED;
	s->status = status;
	slot_append(f, &f->fail_head, &f->fail_tail, i);
}

static void slot_free(struct shd_fabric *f, uint32_t i)
{
	struct slot *s = &f->slots[i];
	s->state = SL_FREE;
	s->next = f->free_head;
	f->free_head = i;
	f->outstanding--;
}

static void queue_push(struct shd_fabric *f, uint32_t i)
{
	struct slot *s = &f->slots[i];
	s->state = SL_QUEUED;
	slot_append(f, &f->q_head, &f->q_tail, i);
	f->n_queued++;
	f->peers[s->node].queued++;
}

int shd_fabric_remove(struct shd_fabric *f, uint32_t node)
{
	if (node >= f->max_nodes || !f->peers[node].present)
		return -EINVAL;
	uint32_t prev = NIL, i = f->q_head;
	while (i != NIL) {
		uint32_t next = f->slots[i].next;
		if (f->slots[i].node == node) {
			queue_unlink(f, prev, i);
			fail_push(f, i, -EHOSTDOWN);
		} else {
			prev = i;
		}
		i = next;
	}
	fi_addr_t a = f->peers[node].addr;
	if (a < f->fiaddr_cap)
		f->fiaddr_node[a] = NIL;
	f->peers[node].present = false;
	f->peers[node].queued = 0;
	int r = fi_av_remove(f->av, &a, 1, 0);
	return ferr(r);
}

int shd_fabric_release(struct shd_fabric *f, uint32_t node)
{
	if (node >= f->max_nodes || !f->peers[node].present)
		return -EINVAL;
	if (f->peers[node].queued)
		return -EBUSY;
	for (uint32_t i = 0; i < f->nslots; i++)
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

#ifdef SHD_FAULT_INJECTION
/* Test builds only (tests/multi's shuffled-fault, never the installed
 * shuffled): tests/multi/fault-inject.c reads SHD_FAULT_SEND and returns a
 * negative errno for the sends it must fail synchronously, as a hard
 * fi_send() error would, or 0.  The node stays in the AV: net.c takes the
 * peer down and removes it, as after a real error. */
int shd_fault_send(uint32_t node, const void *buf, size_t len);
#endif

static int send_common(struct shd_fabric *f, uint32_t node, const void *buf, size_t len,
		       void *ctx, bool copy)
{
	if (node >= f->max_nodes || !f->peers[node].present)
		return -EHOSTUNREACH;
#ifdef SHD_FAULT_INJECTION
	int fault = shd_fault_send(node, buf, len);
	if (fault)
		return fault;
#endif
	if (len > f->buf_bytes || (copy && len > SMALL_BYTES))
		return -EMSGSIZE;
	bool ok;
	void *desc = copy ? f->sreg.desc : find_desc(f, buf, len, &ok);
	if (!copy && !ok)
		return -EINVAL;
	if (f->free_head == NIL)
		return -EAGAIN;
	uint32_t i = f->free_head;
	struct slot *s = &f->slots[i];
	f->free_head = s->next;
	f->outstanding++;
	if (copy) {
		memcpy(s->small, buf, len);
		buf = s->small;
	}
	s->buf = buf;
	s->len = len;
	s->desc = desc;
	s->uctx = ctx;
	s->node = node;
	f->st.sends++;
	if (f->peers[node].queued) {
		queue_push(f, i);
		f->st.sends_queued++;
		return 1;
	}
	ssize_t r = fi_send(f->ep, s->buf, len, desc, f->peers[node].addr, &s->ctx);
	if (r == 0) {
		s->state = SL_POSTED;
		return 0;
	}
	if (r == -FI_EAGAIN) {
		queue_push(f, i);
		f->st.sends_queued++;
		return 1;
	}
	f->st.sends--;
	slot_free(f, i);
	return ferr(r);
}

int shd_fabric_send(struct shd_fabric *f, uint32_t node, const void *buf, size_t len, void *ctx)
{
	return send_common(f, node, buf, len, ctx, false);
}

int shd_fabric_send_small(struct shd_fabric *f, uint32_t node, const void *buf, size_t len,
			  void *ctx)
{
	return send_common(f, node, buf, len, ctx, true);
}

/* One pass over the FIFO.  Hard errors move slots to the failed list. */
static void retry_queued(struct shd_fabric *f)
{
	if (f->q_head == NIL)
		return;
	uint64_t pass = ++f->pass;
	uint32_t prev = NIL, i = f->q_head;
	while (i != NIL) {
		struct slot *s = &f->slots[i];
		uint32_t next = s->next;
		struct peer *p = &f->peers[s->node];
		if (p->blocked == pass) {
			prev = i;
			i = next;
			continue;
		}
		ssize_t r = fi_send(f->ep, s->buf, s->len, s->desc, p->addr, &s->ctx);
		if (r == -FI_EAGAIN) {
			p->blocked = pass;
			f->st.send_retries++;
			prev = i;
			i = next;
			continue;
		}
		/* posted or failed: unlink */
		queue_unlink(f, prev, i);
		p->queued--;
		if (r == 0)
			s->state = SL_POSTED;
		else
			fail_push(f, i, ferr(r));
		i = next;
	}
}

static void retry_reposts(struct shd_fabric *f)
{
	uint32_t i = f->repost_head;
	f->repost_head = NIL;
	f->n_repost = 0;
	while (i != NIL) {
		struct rbuf *rb = &f->rbufs[i];
		i = rb->next_repost;
		post_recv(f, rb); /* re-queues itself on EAGAIN */
	}
}

static void report_failed(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	while (f->fail_head != NIL) {
		uint32_t i = f->fail_head;
		struct slot *s = &f->slots[i];
		f->fail_head = s->next;
		if (f->fail_head == NIL)
			f->fail_tail = NIL;
		int status = s->status;
		void *uctx = s->uctx;
		f->st.send_errors++;
		slot_free(f, i);
		if (cb->on_send_done)
			cb->on_send_done(arg, uctx, status);
	}
}

/* ---- progress ------------------------------------------------------------ */

static struct rbuf *as_rbuf(struct shd_fabric *f, void *ctx)
{
	uint8_t *p = ctx, *lo = (uint8_t *)f->rbufs, *hi = (uint8_t *)(f->rbufs + f->nrbuf);
	if (p < lo || p >= hi || (size_t)(p - lo) % sizeof(struct rbuf))
		return NULL;
	return (struct rbuf *)(void *)p;
}

static struct slot *as_slot(struct shd_fabric *f, void *ctx)
{
	uint8_t *p = ctx, *lo = (uint8_t *)f->slots, *hi = (uint8_t *)(f->slots + f->nslots);
	if (p < lo || p >= hi || (size_t)(p - lo) % sizeof(struct slot))
		return NULL;
	return (struct slot *)(void *)p;
}

static uint32_t node_of(struct shd_fabric *f, fi_addr_t a)
{
	if (!f->source || a == FI_ADDR_NOTAVAIL || a >= f->fiaddr_cap)
		return SHD_FABRIC_NODE_UNKNOWN;
	return f->fiaddr_node[a] == NIL ? SHD_FABRIC_NODE_UNKNOWN : f->fiaddr_node[a];
}

static void repost_after(struct shd_fabric *f, struct rbuf *rb, const struct shd_fabric_cb *cb,
			 void *arg)
{
	int r = post_recv(f, rb);
	if (r && cb->on_error)
		cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, r, "fi_recv failed: receive buffer lost");
}

static void on_recv_done(struct shd_fabric *f, struct rbuf *rb, size_t len, fi_addr_t src,
			 const struct shd_fabric_cb *cb, void *arg)
{
	rb->state = RB_KEPT;
	f->st.recvs++;
	f->st.recv_bytes += len;
	int keep = cb->on_recv ? cb->on_recv(arg, node_of(f, src), rb->buf, len) : 0;
	if (keep == SHD_FABRIC_KEEP) {
		f->st.recvs_kept++;
		return;
	}
	if (rb->state == RB_KEPT) /* not already reposted from the callback */
		repost_after(f, rb, cb, arg);
}

static void on_send_complete(struct shd_fabric *f, struct slot *s, const struct shd_fabric_cb *cb,
			     void *arg)
{
	void *uctx = s->uctx;
	f->st.sends_done++;
	slot_free(f, (uint32_t)(s - f->slots));
	if (cb->on_send_done)
		cb->on_send_done(arg, uctx, 0);
}

static int handle_error(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	struct fi_cq_err_entry e;
	memset(&e, 0, sizeof(e));
	ssize_t r = fi_cq_readerr(f->cq, &e, 0);
	if (r == -FI_EAGAIN)
		return 0;
	if (r < 0)
		return ferr(r);
	char text[256];
	const char *msg = fi_cq_strerror(f->cq, e.prov_errno, e.err_data, text, sizeof(text));
	int err = e.err ? -e.err : -EIO;
	if (err <= -FI_ERRNO_OFFSET)
		err = e.err == FI_ETRUNC ? -EMSGSIZE : -EIO;
	struct rbuf *rb = as_rbuf(f, e.op_context);
	struct slot *s = rb ? NULL : as_slot(f, e.op_context);
	if (rb) {
		rb->state = RB_KEPT;
		if (e.err == FI_ECANCELED)
			return 1; /* only while closing */
		f->st.recv_errors++;
		if (cb->on_error)
			cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, err, msg ? msg : fi_strerror(e.err));
		repost_after(f, rb, cb, arg);
	} else if (s) {
		uint32_t node = s->node;
		void *uctx = s->uctx;
		f->st.send_errors++;
		slot_free(f, (uint32_t)(s - f->slots));
		if (cb->on_error)
			cb->on_error(arg, node, err, msg ? msg : fi_strerror(e.err));
		if (cb->on_send_done)
			cb->on_send_done(arg, uctx, err);
	} else if (cb->on_error) {
		cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, err, "error completion with unknown context");
	}
	return 1;
}

int shd_fabric_progress(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg)
{
	struct fi_cq_msg_entry ents[CQ_CHUNK];
	fi_addr_t srcs[CQ_CHUNK];
	int done = 0;

	report_failed(f, cb, arg);
	while ((uint32_t)done < f->cq_batch) {
		size_t want = f->cq_batch - (uint32_t)done;
		if (want > CQ_CHUNK)
			want = CQ_CHUNK;
		ssize_t n = f->source ? fi_cq_readfrom(f->cq, ents, want, srcs)
				      : fi_cq_read(f->cq, ents, want);
		if (n == -FI_EAGAIN)
			break;
		if (n == -FI_EAVAIL) {
			int r = handle_error(f, cb, arg);
			if (r < 0)
				return r;
			done += r;
			if (r == 0)
				break;
			continue;
		}
		if (n < 0)
			return ferr(n);
		for (ssize_t k = 0; k < n; k++) {
			struct rbuf *rb = as_rbuf(f, ents[k].op_context);
			struct slot *s = rb ? NULL : as_slot(f, ents[k].op_context);
			if (rb)
				on_recv_done(f, rb, ents[k].len, f->source ? srcs[k] : FI_ADDR_NOTAVAIL,
					     cb, arg);
			else if (s)
				on_send_complete(f, s, cb, arg);
			else if (cb->on_error)
				cb->on_error(arg, SHD_FABRIC_NODE_UNKNOWN, -EIO,
					     "completion with unknown context");
		}
		done += (int)n;
		if ((size_t)n < want)
			break;
	}
	retry_queued(f);
	retry_reposts(f);
	report_failed(f, cb, arg);
	return done;
}

int shd_fabric_repost(struct shd_fabric *f, void *buf)
{
	uint8_t *p = buf;
	size_t stride = (f->buf_bytes + 63u) & ~(size_t)63u;
	if (p < f->rbase || (size_t)(p - f->rbase) % stride ||
	    (size_t)(p - f->rbase) / stride >= f->nrbuf)
		return -EINVAL;
	struct rbuf *rb = &f->rbufs[(size_t)(p - f->rbase) / stride];
	if (rb->state != RB_KEPT)
		return -EINVAL;
	return post_recv(f, rb);
}

int shd_fabric_wait_fd(const struct shd_fabric *f)
{
	return f->wait_fd;
}

bool shd_fabric_trywait(struct shd_fabric *f)
{
	struct fid *fids[1] = {&f->cq->fid};
	return fi_trywait(f->fabric, fids, 1) == FI_SUCCESS;
}

bool shd_fabric_has_pending(const struct shd_fabric *f)
{
	return f->n_queued || f->n_repost || f->fail_head != NIL;
}

uint32_t shd_fabric_sends_outstanding(const struct shd_fabric *f)
{
	return f->outstanding;
}

void shd_fabric_stats_get(const struct shd_fabric *f, struct shf_fabric_stats *s)
{
	*s = f->st;
}
