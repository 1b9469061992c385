/* SPDX-License-Identifier: MIT */
/*
 * daemon/events.h - what the daemon does with the network's events: the
 * table main.c gives to shd_net_open().  This is the only place where the
 * network's news reaches the jobs, the epochs and the relay.
 */
#ifndef SHD_EVENTS_H
#define SHD_EVENTS_H

#include "daemon/net/upcalls.h"

extern const struct shd_net_events shd_events;
/* job.c's up-calls, to jobhome.c (set as d->job_ev at start-up) */
extern const struct shd_job_events shd_job_events;

#endif
