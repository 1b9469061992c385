/* SPDX-License-Identifier: MIT */
/*
 * daemon/stats.c - sums and JSON for the counter lists of proto/stats.h.
 * Each renderer is the list itself, so a counter cannot be kept but not
 * shown.
 */
#include <jansson.h>

#include "daemon/stats.h"

void shd_stats_client_add(struct shf_client_stats *to, const struct shf_client_stats *from)
{
#define SUM_COUNTER(a, b) ((a) + (b))
#define SUM_GAUGE(a, b) ((a) > (b) ? (a) : (b))
#define X(name, kind, help) to->name = SUM_##kind(to->name, from->name);
	SHF_CLIENT_STATS(X)
#undef X
#undef SUM_COUNTER
#undef SUM_GAUGE
}

#define SET(name, kind, help) json_object_set_new(o, #name, json_integer((json_int_t)s->name));

json_t *shd_stats_client_json(const struct shf_client_stats *s)
{
	json_t *o = json_object();
	SHF_CLIENT_STATS(SET)
	return o;
}

json_t *shd_stats_daemon_json(const struct shf_daemon_stats *s)
{
	json_t *o = json_object();
	SHF_DAEMON_STATS(SET)
	return o;
}

json_t *shd_stats_fabric_json(const struct shf_fabric_stats *s)
{
	json_t *o = json_object();
	SHF_FABRIC_STATS(SET)
	return o;
}

void shd_stats_peer_set(json_t *o, const struct shf_peer_stats *s)
{
	SHF_PEER_STATS(SET)
}
