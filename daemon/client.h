/* SPDX-License-Identifier: MIT */
/*
 * daemon/client.h - talking to one control session, and cutting it off.
 *
 * A session is never freed where something goes wrong: shd_client_cutoff()
 * tells the peer why, closes its socket and queues it; session.c frees it
 * at the reap step of the pass (pass.c), when nothing below is half-way
 * through an update that still points at it.
 */
#ifndef SHD_CLIENT_H
#define SHD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* One datagram to the session.  0, -ENOTCONN once its socket is closed, or
 * the send's negative errno. */
int shd_client_send(struct shd_client *c, uint16_t type, uint32_t id, const void *body,
		    size_t len);
/* An ERROR reply (err, text) to request id (0: unsolicited). */
void shd_client_error(struct shd_client *c, uint32_t id, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Cut c off: log why (rate limited), send ERROR(err) if the socket is
 * open, close the socket, stop relaying for it, queue it for the reap.
 * Safe from anywhere, any number of times. */
void shd_client_cutoff(struct shd_client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queue c for the reap without a message (it drained, or said BYE). */
void shd_client_reap_later(struct shd_client *c);
/* Receive one datagram from c's socket into buf: its size (validated
 * with shf_ipc_check()), 0 on end of file, or a negative errno (-EAGAIN:
 * nothing waits).  A datagram that carries fds cuts c off (the fds are
 * closed off the loop, closer.h) and returns -EBADF: c is doomed. */
long shd_client_recv(struct shd_client *c, void *buf, size_t cap);
/* Close c's socket (its ring may still drain): shut down at once, closed
 * by the closer thread (closer.h). */
void shd_client_close_sock(struct shd_client *c);

const char *shd_session_state_name(enum shd_sess_state s);

#endif
