/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fabric.h - the daemon's one network endpoint.  Every libfabric
 * call of the project lives in fabric.c (open, memory registration, the
 * address vector) and fabric_io.c (sends, progress); the rest of the daemon
 * sees only this API, which depends on neither libfabric's nor libevent's
 * headers.
 *
 * One reliable-datagram (FI_EP_RDM) endpoint, one address vector indexed by
 * node id, one completion queue with a wait fd.  Data progress is manual:
 * nothing moves unless shd_fabric_progress() is called.  The owner's loop:
 *
 *   watch shd_fabric_wait_fd(f) for readability;
 *   on readiness, on its timer, and after posting sends:
 *       shd_fabric_progress(f, &cb, arg);
 *   before sleeping:
 *       if (!shd_fabric_trywait(f)) -> progress again instead of sleeping;
 *       if (shd_fabric_has_pending(f)) -> arm a short retry timer: a send
 *           queued on -FI_EAGAIN to a peer that is not listening yet never
 *           makes the fd fire again (seen with tcp;ofi_rxm).
 *
 * Not thread-safe (FI_THREAD_DOMAIN): one thread owns an shd_fabric.
 *
 * Ordering: sends to one node are posted in the order shd_fabric_send() was
 * called (a queued send holds back later sends to the same node, never to
 * other nodes), and the endpoint is opened with FI_ORDER_SAS.  Receive
 * completions may still be reported out of order with respect to that
 * (libfabric orders placement, not completion), so the wire format carries
 * a per-peer sequence number and the relay must check it.
 */
#ifndef SHD_FABRIC_H
#define SHD_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/stats.h"

struct shd_fabric;

#define SHD_FABRIC_NODE_UNKNOWN UINT32_MAX /* sender not known from the AV */
#define SHD_FABRIC_KEEP 1                  /* on_recv: I keep the buffer */
#define SHD_FABRIC_ADDR_MAX 128u           /* largest raw address we handle */
#define SHD_FABRIC_SMALL 256u              /* shd_fabric_send_small() limit: every
                                              control message, a JOB_JOIN of up
                                              to 17 rank ranges */
#define SHD_FABRIC_HOP_ROOM 32u            /* a forwarding header (routing=2d,
                                              proto/wire.h SHF_WIRE_FWD_HDR) a
                                              small message may carry in front */

#define SHD_FABRIC_RXM_BUFFER 4096u     /* FI_OFI_RXM_BUFFER_SIZE set over tcp
                                              unless the environment sets it:
                                              ofi_rxm's bounce buffers, 2 pools
                                              of 1024 (see fabric_env) */
#define SHD_FABRIC_RXM_EAGER (16u << 10)   /* FI_OFI_RXM_EAGER_LIMIT set over tcp
                                              unless the environment sets it:
                                              libfabric 1.17's default, pinned
                                              (it must be the same on every
                                              node) */

struct shd_fabric_opts {
	const char *provider; /* libfabric provider name; NULL: "tcp" (-> tcp;ofi_rxm) */
	const char *node;     /* bind address (passed with FI_SOURCE), e.g. "127.0.0.2"; NULL: any */
	const char *service;  /* bind port, e.g. "7000"; NULL with node set: "0" (ephemeral) */
	const char *iface;    /* if set, exported as FI_TCP_IFACE (process-wide, it
	                         stays set) before fi_getinfo(): tcp then binds to that
	                         interface's address; node/service still win */
	uint32_t max_nodes;   /* node ids are < max_nodes; 0: 1024; at most 1 << 20 */
	uint32_t recv_buffers;/* posted receive buffers; 0: 32 */
	uint32_t buf_bytes;   /* bytes per receive buffer = largest message sent or
	                         received; 0: 36 KiB (32 KiB batch + header room) */
	uint32_t send_slots;  /* sends posted or queued at once; 0: 256 */
	uint32_t cq_batch;    /* completions handled per progress call; 0: 64 */
	uint32_t conn_queue;  /* ofi_rxm per-connection queue depth (FI_OFI_RXM_MSG_RX_SIZE
	                         and _TX_SIZE) unless the environment sets them; 0:
	                         the provider's default (128: ~50 MiB of pools per
	                         daemon on tcp, measured) */
	bool mr_always;       /* register buffers even if the provider does not
	                         need FI_MR_LOCAL (tests that path) */
	bool release_conns;   /* shd_fabric_release() is used: removing an
	                         address closes its connection (sets
	                         FI_AV_REMOVE_CLEANUP=1 unless the environment
	                         sets it) */
};

struct shd_fabric_cb {
	/* A message of len bytes arrived in buf (one of the receive buffers,
	 * 64-byte aligned, buf_bytes long).  node is the sender as resolved
	 * through the AV when the provider reports sources (FI_SOURCE), else
	 * SHD_FABRIC_NODE_UNKNOWN: the relay takes the node from the wire
	 * header and, when node is known, checks that they agree.  Return 0 to
	 * give the buffer back (it is reposted), SHD_FABRIC_KEEP to keep it
	 * until shd_fabric_repost().  The daemon never keeps one (net/rx.c
	 * copies a batch that must wait, so receive buffers never run out);
	 * tests/net exercises KEEP. */
	int (*on_recv)(void *arg, uint32_t node, void *buf, size_t len);
	/* A send finished: status 0, or a negative errno (after on_error()
	 * reported the provider's reason).  The buffer is the caller's again. */
	void (*on_send_done)(void *arg, void *ctx, int status);
	/* An error completion: err is a negative errno, msg the provider's
	 * text.  node is the peer when known (sends), else UNKNOWN. */
	void (*on_error)(void *arg, uint32_t node, int err, const char *msg);
};

/* Open the endpoint.  Sets *f_p only on success.  -ENODATA when no
 * provider matches, else the negative errno of the failing call; err (if
 * not NULL) receives a one-line reason either way. */
int shd_fabric_open(const struct shd_fabric_opts *o, struct shd_fabric **f_p, char *err,
		    size_t errlen);
/* Close everything.  Queued sends are dropped without callbacks.  NULL ok. */
void shd_fabric_close(struct shd_fabric *f);

/* Resolved provider name (e.g. "tcp;ofi_rxm"). */
const char *shd_fabric_provider(const struct shd_fabric *f);

/* My raw endpoint address for the rendezvous.  *len: in buffer size, out
 * address size.  -ENOBUFS (with *len set) when too small. */
int shd_fabric_addr(struct shd_fabric *f, void *buf, size_t *len);
/* Printable form of a raw address ("fi_sockaddr_in://127.0.0.2:7000").
 * addr NULL: mine.  0 or negative errno; truncates to fit. */
int shd_fabric_addr_str(struct shd_fabric *f, const void *addr, size_t addr_len, char *buf,
			size_t buflen);

/* Make node reachable.  addr must be a raw address as shd_fabric_addr()
 * gives (same length as mine).  -EINVAL node >= max_nodes or bad length,
 * -EEXIST already present (remove it first), or the provider's error. */
int shd_fabric_insert(struct shd_fabric *f, const void *addr, size_t len, uint32_t node);
int shd_fabric_insert_svc(struct shd_fabric *f, const char *host, const char *port,
			  uint32_t node);
/* Forget node: its queued (not yet posted) sends complete with -EHOSTDOWN
 * at the next progress call; posted sends complete as the provider decides. */
int shd_fabric_remove(struct shd_fabric *f, uint32_t node);
/* Release node's connection but keep its address (opened with
 * release_conns): the address vector entry is removed (ofi_rxm closes
 * its connection to the node, and the node's end sees it close) and
 * inserted again at once, so that the next
 * send in either direction connects anew and receives still name it.
 * -EBUSY (nothing done) while a send to node is queued or posted. */
int shd_fabric_release(struct shd_fabric *f, uint32_t node);
/* true when receives name their sender (FI_SOURCE): on_recv's node is then
 * SHD_FABRIC_NODE_UNKNOWN exactly for senders not in the address vector. */
bool shd_fabric_reports_source(const struct shd_fabric *f);
/* Internal: tests only. */
bool shd_fabric_has_node(const struct shd_fabric *f, uint32_t node);

/* Send len bytes of buf to node.  buf must stay untouched until
 * on_send_done(ctx).  Returns 0 (posted), 1 (queued: the provider said
 * -FI_EAGAIN, or earlier sends to node are queued; retried by progress),
 * -EAGAIN (all send_slots busy: try again after a completion), -EMSGSIZE
 * (len > buf_bytes), -EHOSTUNREACH (node not inserted), -EINVAL (FI_MR_LOCAL
 * provider and buf not inside a region from shd_fabric_mr_reg()), or the
 * provider's error. */
int shd_fabric_send(struct shd_fabric *f, uint32_t node, const void *buf, size_t len, void *ctx);

/* Like shd_fabric_send() for len <= SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM (every control
 * message of net/post.c: acks, heartbeats, joins, leaves, epochs, drops;
 * the slots' copy buffers are one registered region): the bytes are copied into the send slot, so buf is free again
 * when the call returns.  -EMSGSIZE above SHD_FABRIC_SMALL + SHD_FABRIC_HOP_ROOM. */
int shd_fabric_send_small(struct shd_fabric *f, uint32_t node, const void *buf, size_t len,
			  void *ctx);

/* Register [buf, buf+len) for sends (a batch pool) when the provider needs
 * FI_MR_LOCAL (or mr_always); a no-op otherwise.  At most 8 regions. */
int shd_fabric_mr_reg(struct shd_fabric *f, void *buf, size_t len);

/* Drain up to cq_batch completions, calling cb (which may send or repost
 * from inside), then retry queued sends and reposts.  Returns the number
 * of completions handled, or a negative errno if the CQ itself failed. */
int shd_fabric_progress(struct shd_fabric *f, const struct shd_fabric_cb *cb, void *arg);

/* Give back a buffer kept by on_recv.  0, or -EINVAL if buf is not a kept
 * receive buffer.  A repost the provider refuses (-FI_EAGAIN) is retried by
 * progress.  Internal: only tests keep buffers. */
int shd_fabric_repost(struct shd_fabric *f, void *buf);

/* fd that becomes readable when the CQ may have completions. */
int shd_fabric_wait_fd(const struct shd_fabric *f);
/* true: safe to sleep on the wait fd now; false: progress first. */
bool shd_fabric_trywait(struct shd_fabric *f);
/* Queued sends or reposts wait for a retry: keep a timer armed. */
bool shd_fabric_has_pending(const struct shd_fabric *f);
/* Sends posted or queued and not completed yet.  Internal: tests only. */
uint32_t shd_fabric_sends_outstanding(const struct shd_fabric *f);

void shd_fabric_stats_get(const struct shd_fabric *f, struct shf_fabric_stats *s);

#endif /* SHD_FABRIC_H */
