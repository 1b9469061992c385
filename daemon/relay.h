/* SPDX-License-Identifier: MIT */
/*
 * daemon/relay.h - hop 1: draining clients' send rings, routing each
 * message to a local delivery ring (deliver.c) or another node's batch
 * (net.h), and the flush marks clients put in their rings.
 */
#ifndef SHD_RELAY_H
#define SHD_RELAY_H

#include <stdint.h>

#include "daemon/daemon.h"

/* The relay step of the pass: drain the run queue, RELAY_BUDGET records
 * per client per turn. */
void shd_relay_run(struct shd_daemon *d);
/* The marks step: answer the marks whose records are now in place. */
void shd_relay_answer_marks(struct shd_daemon *d);
/* c's bell_daemon is readable (send data, or room in its delivery ring). */
void shd_relay_bell(int fd, void *arg);
/* Unhook c from every relay list before it is freed. */
void shd_relay_detach(struct shd_client *c);
/* One peer acknowledged everything c's mark covered there (lost: the
 * peer went down first, so records may be lost: counted for c's report). */
void shd_relay_mark_acked(struct shd_client *c, bool lost);

#endif
