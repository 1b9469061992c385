/* SPDX-License-Identifier: MIT */
/*
 * daemon/closer.h - closing file descriptors a client controls without
 * ever blocking the loop.
 *
 * The last close of a file can block: a TCP socket with unsent data and
 * SO_LINGER {1, N} waits up to N seconds in close(), a UNIX socket whose
 * queue holds such a socket does the same when its queue is purged, a
 * FUSE file waits for its server.  A client can hand the daemon any of
 * these (SCM_RIGHTS on its control socket, or queued behind its last
 * message), so every fd whose last reference a client may decide is
 * closed here: on a helper thread, which is the only thread that ever
 * waits for such a close.  Nothing else of the daemon runs on it.
 */
#ifndef SHD_CLOSER_H
#define SHD_CLOSER_H

/* Close fd on the closer thread (started on first use).  Sockets get
 * SO_LINGER {0, 0} first, and the fds still queued on a UNIX socket are
 * taken out (non-blocking, two levels deep) and treated the same way, so
 * that the usual cases do not even block the closer.  If the thread
 * cannot be had, fd is closed here (logged).  Loop thread only. */
void shd_close_async(int fd);

/* fds handed over and not closed yet (for the stats and tests). */
unsigned long shd_close_pending(void);

#endif
