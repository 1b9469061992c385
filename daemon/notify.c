/* SPDX-License-Identifier: MIT */
/*
 * daemon/notify.c - sd_notify(3) through libsystemd, the project's only
 * libsystemd user.  See notify.h.  Bottom floor: it does not log; the
 * caller (main.c) logs a failure once.
 */
#include "daemon/notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

static char last_status[256]; /* the STATUS= text last sent */

bool shd_notify_enabled(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	return s && *s;
}

/* sd_notify() keeps $NOTIFY_SOCKET (unset_environment 0): STATUS,
 * WATCHDOG and STOPPING come later.  Its result: > 0 sent, 0 no socket,
 * < 0 -errno. */
static int send_state(const char *state)
{
	int r = sd_notify(0, state);
	return r < 0 ? r : 0;
}

int shd_notify_ready(const char *status)
{
	char msg[300];
	if (!shd_notify_enabled())
		return 0;
	if (status) {
		snprintf(last_status, sizeof(last_status), "%s", status);
		snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", last_status);
	} else {
		snprintf(msg, sizeof(msg), "READY=1");
	}
	return send_state(msg);
}

int shd_notify_status(const char *status)
{
	char msg[300];
	if (!shd_notify_enabled() || !strncmp(last_status, status, sizeof(last_status) - 1))
		return 0;
	snprintf(last_status, sizeof(last_status), "%s", status);
	snprintf(msg, sizeof(msg), "STATUS=%s", last_status);
	return send_state(msg);
}

int shd_notify_stopping(void)
{
	return shd_notify_enabled() ? send_state("STOPPING=1\nSTATUS=stopping") : 0;
}

uint64_t shd_notify_watchdog_usec(void)
{
	uint64_t usec = 0;
	/* > 0: enabled for this process (WATCHDOG_PID, when set, is ours) */
	return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

int shd_notify_watchdog(void)
{
	return shd_notify_enabled() ? send_state("WATCHDOG=1") : 0;
}
