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

/* A TCP port free right now on 127.0.0.1 (the kernel's choice). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	socklen_t l = sizeof(sa);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &l) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* Wait until daemon d sees its one peer in `state`. */
static void wait_state(struct td_daemon *d, const char *state, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	for (;;) {
		json_t *doc = td_ctl_json(d->sock, "peers");
		json_t *a = json_object_get(doc, "peers");
		const char *s = json_string_value(json_object_get(json_array_get(a, 0), "state"));
		bool ok = json_array_size(a) == 1 && s && !strcmp(s, state);
		json_decref(doc);
		if (ok)
			return;
		CHECKF(td_now_ms() < end, "daemon %s never saw its peer %s", d->tag, state);
		td_sleep_ms(100);
	}
}

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
	char rdv[128], bind_a[64], bind_b[64];
	int pa = free_port(), pb = free_port();
	CHECK(pa != pb);
	snprintf(bind_a, sizeof(bind_a), "127.0.0.1:%d", pa);
	snprintf(bind_b, sizeof(bind_b), "127.0.0.1:%d", pb);
	td_fmt(rdv, sizeof(rdv), "static:%s,%s", bind_a, bind_b);
	const char *env[] = {"FI_PROVIDER=", NULL};
	struct td_daemon *a = td_daemon("a"), *b = td_daemon("b");
	/* a long peer timeout: b's absence must show as "not up" before any
	 * timeout declares it down */
	const char *args_a[] = {"--node-name", "a", "--rendezvous", rdv, "--bind", bind_a,
				"--provider", "tcp", "--peer-timeout-ms", "1500",
				"--heartbeat-ms", "200", NULL};
	const char *args_b[] = {"--node-name", "b", "--rendezvous", rdv, "--bind", bind_b,
				"--provider", "tcp", "--peer-timeout-ms", "1500",
				"--heartbeat-ms", "200", NULL};
	if (td_start(a, args_a, env) < 0) {
		char *log = td_read_file(a->log);
		if (strstr(log, "fabric endpoint"))
			SKIP("no libfabric tcp endpoint on 127.0.0.1 here: %s", log);
		CHECKF(false, "daemon a did not start: %s", log);
	}

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
	CHECK(td_start(b, args_b, env) == 0);
	wait_state(a, "up", 20000);
	wait_state(b, "up", 20000);
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
	wait_state(a, "down", 20000);
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
