/* SPDX-License-Identifier: MIT */
/*
 * proto/cred.h - is the daemon at the other end of a control socket one a
 * client may trust?  One rule for the library (client/open.c) and
 * shufflectl (client/shufflectl/conn.c).
 */
#ifndef SHF_PROTO_CRED_H
#define SHF_PROTO_CRED_H

#include <sys/socket.h>

/*
 * Trusted daemons run as root, as this process's real or effective uid, or
 * as system_user (looked up now; NULL, "" or an unknown user match
 * nobody).  Anyone else may have pre-created the runtime directory and
 * serve a daemon of their own there.
 *
 * Returns 0 when trusted, -EPERM when not, or -errno when SO_PEERCRED
 * fails.  *cred_p (may be NULL) gets the daemon's credentials whenever
 * SO_PEERCRED worked.
 */
int shf_cred_check_daemon(int fd, const char *system_user, struct ucred *cred_p);

#endif
