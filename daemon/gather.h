/* SPDX-License-Identifier: MIT */
/*
 * daemon/gather.h - the remote messages of one client's turn of the relay,
 * grouped by destination rank and written into the batches as runs
 * (docs/protocol-wire.md, "Runs from plain sends").
 *
 * A client's plain shf_send()s reach the relay as one record each, and
 * their destinations interleave.  Within the client's turn (relay.c) the
 * relay hands each message for another node to shd_gather_msg() instead of
 * appending it to the node's batch: it is only noted (a pointer into the
 * send ring, which stays put until the turn ends).  shd_gather_flush()
 * then writes each destination rank's messages in order as runs (8 bytes
 * of header a message instead of 16), before the send ring is released.
 *
 * Room: the first message for a node reserves room in that node's open
 * batch (net/tx.h, shd_net_reserve) and every later one is counted against
 * it at its size as a record of its own, which a run never exceeds; when
 * the room runs out, that node's messages so far are written first.  So a
 * flush never meets a full batch, never waits for credit and never fails:
 * the relay counts each message when it is noted.  Only -EAGAIN (no
 * credit for a new batch) and -EHOSTDOWN come back, for the message being
 * noted, as from shd_net_append.
 *
 * Order: per (source, destination) pair the messages keep their order; a
 * flush is due before anything else of the client reaches the batches (a
 * run record, a broadcast, a MARK), and at the end of its turn.
 */
#ifndef SHD_GATHER_H
#define SHD_GATHER_H

#include <stdint.h>

#include "daemon/daemon.h"

/* Note one message of s (its job's rank dst on node, another node) of len
 * bytes at data, which stays valid until the flush.  0, -EAGAIN (s->wait
 * linked: put the record back and stop), -EHOSTDOWN (drop it). */
int shd_gather_msg(struct shd_daemon *d, struct shd_client *s, uint32_t node, int32_t dst,
		   uint32_t type, const void *data, uint32_t len);
/* Write every noted message into the batches; nothing noted: nothing. */
void shd_gather_flush(struct shd_daemon *d, struct shd_client *s);

#endif
