/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/health.c - the rule behind status's exit code 4: a
 * peer not up or a job failing (main.c's status_health() asks for the
 * peers and jobs; render.c's show_status() names the culprits).
 */
#include <stdio.h>
#include <string.h>

#include "client/shufflectl/shufflectl.h"

/* A job is failing: another node named another owner for it, ranks were
 * lost with their node, or messages of its ranks were dropped (each drop
 * was reported to its sender).  why: the reason, for people. */
bool job_failing(const json_t *j, char *why, size_t n)
{
	const json_t *st = jget(j, "stats");
	long long drops = jint(st, "drops_dead", 0) + jint(st, "drops_down", 0);
	long long lost = jint(j, "lost", 0);
	if (jget(j, "conflict_node")) {
		snprintf(why, n, "owner conflict with node %lld", jint(j, "conflict_node", -1));
		return true;
	}
	if (lost > 0 || drops > 0) {
		snprintf(why, n, "%lld rank(s) lost, %lld message(s) dropped", lost, drops);
		return true;
	}
	return false;
}

/* idle (peer_idle_ms): up, heartbeats paused until it is used again */
bool peer_ok(const json_t *p)
{
	return !strcmp(jstr(p, "state", ""), "up") || !strcmp(jstr(p, "state", ""), "idle");
}

bool health_check(const json_t *peers, const json_t *jobs, char *why, size_t n)
{
	size_t i, bad_peers = 0, bad_jobs = 0;
	json_t *v;
	char tmp[128];
	json_array_foreach(peers, i, v)
		bad_peers += !peer_ok(v);
	json_array_foreach(jobs, i, v)
		bad_jobs += job_failing(v, tmp, sizeof(tmp));
	if (!bad_peers && !bad_jobs) {
		snprintf(why, n, "ok");
		return true;
	}
	if (bad_peers && bad_jobs)
		snprintf(why, n, "degraded: %zu peer(s) not up, %zu job(s) failing", bad_peers,
			 bad_jobs);
	else if (bad_peers)
		snprintf(why, n, "degraded: %zu peer(s) not up", bad_peers);
	else
		snprintf(why, n, "degraded: %zu job(s) failing", bad_jobs);
	return false;
}
