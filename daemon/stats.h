/* SPDX-License-Identifier: MIT */
/*
 * daemon/stats.h - the daemon's side of proto/stats.h: summing client
 * counters and rendering every list as JSON (shufflectl's schema).
 */
#ifndef SHD_STATS_H
#define SHD_STATS_H

#include "proto/stats.h"

struct json_t;

/* Counters add up; gauges (high-water marks) take the maximum. */
void shd_stats_client_add(struct shf_client_stats *to, const struct shf_client_stats *from);

struct json_t *shd_stats_client_json(const struct shf_client_stats *s);
struct json_t *shd_stats_daemon_json(const struct shf_daemon_stats *s);
struct json_t *shd_stats_fabric_json(const struct shf_fabric_stats *s);
/* Adds the peer counters to an existing object. */
void shd_stats_peer_set(struct json_t *o, const struct shf_peer_stats *s);

#endif
