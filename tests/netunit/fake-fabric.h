/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/fake-fabric.h - a scriptable stand-in for daemon/net/fabric.c.
 *
 * fake-fabric.c implements every shd_fabric_* function of daemon/net/fabric.h
 * without libfabric.  It records every send the daemon makes (node, bytes,
 * copy of the message), and lets a test:
 *   - refuse the Nth send synchronously with an error, or answer -EAGAIN
 *     (all send slots busy) while a switch is on;
 *   - complete sends (cb->on_send_done) with success or an error, at once
 *     or at the next shd_fabric_progress();
 *   - inject received messages (cb->on_recv), at once or at the next
 *     progress, in a fresh 64-byte-aligned "receive buffer" that is
 *     scribbled over and freed once on_recv gives it back (so a receiver
 *     that keeps pointers into it is caught).
 * Sends to a node removed with shd_fabric_remove() fail with -EHOSTUNREACH
 * (counted, not recorded), as the real endpoint does.
 *
 * Sessions (wire version 2): every message injected from a node whose two
 * session tags are zero (as the encoders leave them) is stamped with the
 * tags set for that node by fake_set_session(), as the peer's daemon would
 * stamp it; the *_raw injections deliver a message exactly as given (a
 * test's own tags: stale or forged ones).
 */
#ifndef SHF_TESTS_NETUNIT_FAKE_FABRIC_H
#define SHF_TESTS_NETUNIT_FAKE_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/net/fabric.h"

#define FAKE_ANY_NODE UINT32_MAX
#define FAKE_ANY_KIND 0
/* a pseudo-kind for fake_count/fake_find: any kind but HEARTBEAT (the
 * handshake and the liveness traffic, which come and go with the clock) */
#define FAKE_NO_HEARTBEAT 0x10000u

/* Which calls a scripted failure counts. */
enum fake_which {
	FAKE_BATCH = 1, /* shd_fabric_send() */
	FAKE_SMALL = 2, /* shd_fabric_send_small() */
};

/* One accepted send. */
struct fake_send {
	uint32_t node;
	uint32_t len;
	uint16_t kind;  /* wire kind from the message header */
	bool small;     /* through shd_fabric_send_small() */
	bool done;      /* its completion was delivered or queued */
	uint64_t src_session, dst_session; /* its session tags, as sent */
	void *ctx;
	uint8_t *bytes; /* a copy of the message */
};

/* Accepted sends so far, in call order. */
size_t fake_n_sends(void);
const struct fake_send *fake_send_at(size_t i);
/* Accepted sends to node (FAKE_ANY_NODE: any) of wire kind (FAKE_ANY_KIND:
 * any; FAKE_NO_HEARTBEAT: any but HEARTBEAT). */
size_t fake_count(uint32_t node, unsigned kind);
/* Index of the k-th (0-based) such send, or -1. */
long fake_find(uint32_t node, unsigned kind, size_t k);

/* The nth (1-based, counted from now) call of `which` fails with err
 * (negative errno) before anything is recorded.  One script at a time. */
void fake_fail_nth(enum fake_which which, uint64_t nth, int err);
/* While on, every send returns -EAGAIN (nothing recorded). */
void fake_set_eagain(bool on);
/* While on, shd_fabric_send() returns 1 (queued inside the fabric). */
void fake_set_queued(bool on);
/* Sends refused by a script, refused with -EAGAIN, refused as unreachable. */
uint64_t fake_n_failed(void);
uint64_t fake_n_eagain(void);
uint64_t fake_n_unreachable(void);
/* Sends accepted and not completed. */
size_t fake_n_outstanding(void);

/* The callbacks to use for the *_now helpers (shd_fabric_progress() also
 * records the ones it is given). */
void fake_bind(const struct shd_fabric_cb *cb, void *arg);
/* Complete send i with status, now or at the next progress. */
void fake_complete_now(size_t i, int status);
void fake_complete(size_t i, int status);
/* Complete every outstanding send now. */
void fake_complete_all_now(int status);
/* A message from node arrives, now (returns on_recv's answer) or at the
 * next progress. */
int fake_inject_now(uint32_t node, const void *buf, size_t len);
void fake_inject(uint32_t node, const void *buf, size_t len);
/* The same, never stamped (see above). */
int fake_inject_raw_now(uint32_t node, const void *buf, size_t len);
void fake_inject_raw(uint32_t node, const void *buf, size_t len);
/* Tags stamped into node's zero-tagged injected messages; (0, 0): none. */
void fake_set_session(uint32_t node, uint64_t src_session, uint64_t dst_session);
/* Events queued for the next progress. */
size_t fake_n_queued(void);

/* node is out of the address vector now (removed, not put back) */
bool fake_node_removed(uint32_t node);
/* shd_fabric_remove() calls for node so far (a peer carried out is
 * removed, then put back so that it can rejoin) */
uint32_t fake_removals(uint32_t node);
uint32_t fake_mr_regions(void);
bool fake_is_open(void);

#endif
