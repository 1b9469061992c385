/* SPDX-License-Identifier: MIT */
/*
 * daemon/notify.h - telling the service manager how the daemon is: the
 * sd_notify(3) protocol through libsystemd (notify.c is its only user).
 * Every call is a no-op returning 0 when the daemon was not started with
 * $NOTIFY_SOCKET (not under systemd, or Type= is not notify).
 *
 *   READY=1     once the rendezvous is done and the control socket listens
 *   STATUS=...  nodes up, jobs, clients (sent when the text changes)
 *   WATCHDOG=1  every half of WatchdogSec= (WATCHDOG_USEC, WATCHDOG_PID)
 *   STOPPING=1  when a clean stop begins
 */
#ifndef SHD_NOTIFY_H
#define SHD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Is a service manager listening ($NOTIFY_SOCKET set)? */
bool shd_notify_enabled(void);
/* READY=1 with the first STATUS= line (may be NULL).  0 or negative errno. */
int shd_notify_ready(const char *status);
/* STATUS=status, only when it differs from the last one sent.  0 (sent or
 * unchanged) or negative errno. */
int shd_notify_status(const char *status);
/* STOPPING=1.  0 or negative errno. */
int shd_notify_stopping(void);
/* The watchdog period systemd asked for, in microseconds (sd_watchdog_enabled:
 * WATCHDOG_USEC, for this pid if WATCHDOG_PID is set); 0 when none. */
uint64_t shd_notify_watchdog_usec(void);
/* WATCHDOG=1.  0 or negative errno. */
int shd_notify_watchdog(void);

#endif /* SHD_NOTIFY_H */
