/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-health.c - `shufflectl status` reports health and says so
 * in its exit status (0 healthy, 4 degraded), with two real daemons on
 * this host (static rendezvous over 127.0.0.1, provider tcp):
 *   - node a alone, its peer b never started: status exits 4, the table
 *     names the peer that is not up and says "degraded"; --json prints
 *     the daemon's document and exits 0 (scripts use it to see that the
 *     daemon answers);
 *   - b started, both up: exit 0, "health ok";
 *   - a job with rank 0 on a and rank 1 on b (when the client library is
 *     built), then b killed: a declares b down and the job's rank lost;
 *     status exits 4 and names both the down peer and the failing job.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

/* Wait until a job of daemon d has lost ranks (the JSON's "lost"). */
static void wait_lost(struct td_daemon *d, const char *job, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	for (;;) {
		json_t *doc = td_ctl_json(d->sock, "jobs");
		size_t i;
		json_t *j;
		bool ok = false;
		json_array_foreach(json_object_get(doc, "jobs"), i, j)
			ok |= !strcmp(json_string_value(json_object_get(j, "name")), job) &&
			      td_num(j, "lost") > 0;
		json_decref(doc);
		if (ok)
			return;
		CHECKF(td_now_ms() < end, "job %s on %s never lost a rank", job, d->tag);
		td_sleep_ms(100);
	}
}

int main(void)
{
	td_init("ctl-health", 150, 0);
	/* b not started yet; the peer timeout (1500 ms) is long enough that
	 * its absence shows as "not up" before any timeout declares it down */
	struct td_pair pair;
	td_pair_start(&pair, false);
	struct td_daemon *a = pair.a, *b = pair.b;

	/* 1. the peer never came up */
	struct td_out o;
	td_ctl(a->sock, &o, "status", NULL);
	CHECKF(o.status == 4, "status with an absent peer: exit %d (want 4, degraded)\n%s%s",
	       o.status, o.out, o.err);
	CHECKF(strstr(o.out, "degraded") && strstr(o.out, "1 peer(s) not up") &&
		       strstr(o.out, "node 1 127.0.0.1"),
	       "status does not name the absent peer:\n%s", o.out);
	td_out_free(&o);
	td_ctl(a->sock, &o, "--json", "status", NULL);
	CHECKF(o.status == 0, "status --json with an absent peer: exit %d (want 0)", o.status);
	json_error_t err;
	json_t *doc = json_loads(o.out, 0, &err);
	CHECKF(doc && json_object_get(doc, "node_name"), "status --json printed no status: %s",
	       o.out);
	json_decref(doc);
	td_out_free(&o);

	/* 2. both up: healthy */
	td_pair_start_b(&pair);
	td_wait_peer_state(a, "up", 20000);
	td_wait_peer_state(b, "up", 20000);
	td_ctl(a->sock, &o, "status", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "health") && strstr(o.out, "ok") &&
		       strstr(o.out, "1 up"),
	       "status with the peer up: exit %d\n%s%s", o.status, o.out, o.err);
	td_out_free(&o);

	/* 3. a job across both, then b dies */
	bool traffic = getenv("SHF_TEST_CTL_CLIENT") && *getenv("SHF_TEST_CTL_CLIENT");
	struct td_job j = {.name = "hj", .world = 2, .count = 10, .len = 16};
	if (traffic) {
		td_job_start(&j, a->sock, 0, 1);
		td_job_start(&j, b->sock, 1, 1);
		td_job_wait_done(&j, 0, 2);
		td_ctl(a->sock, &o, "status", NULL);
		CHECKF(o.status == 0, "status with a healthy job: exit %d\n%s", o.status, o.out);
		td_out_free(&o);
	} else {
		fprintf(stderr, "ctl-health: no test client (client library not built): checking "
			"peer health only, not a failing job\n");
	}
	td_kill(b);
	td_wait_peer_state(a, "down", 20000);
	if (traffic)
		wait_lost(a, "hj", 20000);
	td_ctl(a->sock, &o, "status", NULL);
	CHECKF(o.status == 4, "status with the peer down: exit %d (want 4)\n%s%s", o.status, o.out,
	       o.err);
	CHECKF(strstr(o.out, "1 down") && strstr(o.out, "degraded"), "%s", o.out);
	if (traffic)
		CHECKF(strstr(o.out, "1 failing (hj: 1 rank(s) lost") &&
			       strstr(o.out, "1 job(s) failing"),
		       "status does not name the failing job:\n%s", o.out);
	td_out_free(&o);
	/* the other commands still exit 0: only status reports health */
	td_ctl(a->sock, &o, "peers", NULL);
	CHECKF(o.status == 0, "peers: exit %d", o.status);
	td_out_free(&o);
	td_stop(a);
	return 0;
}
