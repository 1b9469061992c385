/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/fwd.h - forwarding (routing=2d, net/fwd.c): the FWDs of other
 * pairs that this node passes on, gathered per next node into
 * FWD_BUNDLEs.  Used by the dispatcher (net.c) and the batches (net/tx.c:
 * the linger timer, a peer's teardown); it posts through net/post.h.
 */
#ifndef SHD_NET_FWD_H
#define SHD_NET_FWD_H

#include <stdint.h>

#include "daemon/net/int.h"

/* A message this node forwards, waiting for a pool buffer (a copy). */
struct net_fwd {
	struct shd_list link;  /* in net->fwd_wait, in arrival order */
	struct shd_peer *peer; /* the next node */
	uint32_t gen;          /* its session generation when it arrived */
	uint32_t len;
	uint8_t buf[];         /* the whole FWD */
};

/* Forward a checked FWD of len bytes (buf) one hop on, to q (up): into
 * q's bundle (sent when full, after linger_us, or at the end of the
 * progress round if it carries other than batches). */
void shd_net_forward(struct shd_net *n, struct shd_peer *q, const void *buf, uint32_t len);
/* The end of a progress round: send the bundles that carry messages other
 * than batches (credits, liveness and epochs do not linger). */
void shd_net_fwd_push(struct shd_net *n);
/* Tell peer p (up) that this node lost its link to `lost` (FWD_LOST). */
void shd_net_fwd_lost(struct shd_peer *p, uint32_t lost);
/* A pool buffer came back: the forwards waiting for one go on (in
 * arrival order, while forwarding has buffers). */
void shd_net_fwd_drain(struct shd_net *n);
/* The linger timer fired at `now` (linger lg ns): send the bundles whose
 * first FWD is that old; the next bundle's deadline (UINT64_MAX: none). */
uint64_t shd_net_fwd_linger(struct shd_net *n, uint64_t now, uint64_t lg);
/* q is carried out: drop (and count) the bundle gathered for it; its
 * origins hear FWD_LOST as it is carried out (net.c). */
void shd_net_fwd_down(struct shd_peer *q);
/* The net's teardown: free the copies waiting for a buffer. */
void shd_net_fwd_fini(struct shd_net *n);

#endif
