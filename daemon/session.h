/* SPDX-License-Identifier: MIT */
/*
 * daemon/session.h - the control socket (listen, accept) and the sessions'
 * life: HELLO, REGISTER, world timeout, BYE, draining, and their end.
 */
#ifndef SHD_SESSION_H
#define SHD_SESSION_H

#include "daemon/daemon.h"

/* Create the runtime directory, take its lock, listen on the socket. */
int shd_session_listen(struct shd_daemon *d);
/* Shut-down: free every session, close and remove the socket and lock. */
void shd_session_close(struct shd_daemon *d);
/* The clients step of the pass: free the sessions queued for it. */
void shd_session_reap(struct shd_daemon *d);

#endif
