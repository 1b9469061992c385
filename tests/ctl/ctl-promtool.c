/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-promtool.c - Prometheus' own linter accepts the
 * exposition: `promtool check metrics` (Debian package prometheus, which
 * scripts/install-deps installs) exits 0 and prints nothing for
 * `shufflectl stats --prometheus`, with and without --per-rank, from a
 * daemon that has had traffic (a job of ctl_client ranks, so every family
 * has samples) and from a daemon that is down (shuffle_up 0).  Skips
 * (exit 77) only when promtool is not installed.
 */
#include <string.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define PROMTOOL "/usr/bin/promtool"

/* promtool check metrics < text: CHECKs it accepts it without a word. */
static void lint(struct td_env *e, const char *what, const char *text)
{
	char in[TD_PATH_MAX], cmd[3 * TD_PATH_MAX];
	td_fmt(in, sizeof(in), "%s/metrics.prom", e->dir);
	td_write_file(in, text);
	/* promtool reads the exposition on stdin only */
	td_fmt(cmd, sizeof(cmd), "exec %s check metrics < '%s' 2>&1", PROMTOOL, in);
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct td_out o;
	td_run(argv, NULL, 30000, &o);
	CHECKF(o.status == 0 && !o.out[0], "promtool check metrics (%s): exit %d\n%s", what,
	       o.status, o.out);
	td_out_free(&o);
}

int main(void)
{
	struct td_env *e = td_init("ctl-promtool", 120, 0);
	if (access(PROMTOOL, X_OK) != 0)
		SKIP("%s not installed (Debian package prometheus; scripts/install-deps installs it)",
		     PROMTOOL);
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);
	bool traffic = getenv("SHF_TEST_CTL_CLIENT") && *getenv("SHF_TEST_CTL_CLIENT");
	struct td_job j = {.name = "lint-job", .world = 2, .count = 10, .len = 16};
	if (traffic) {
		td_job_start(&j, d->sock, 0, 2);
		td_job_wait_done(&j, 0, 2);
	} else {
		fprintf(stderr, "ctl-promtool: no test client (client library not built): "
			"linting the daemon's series only\n");
	}
	struct td_out o;
	td_ctl(d->sock, &o, "stats", "--prometheus", NULL);
	CHECKF(o.status == 0, "exit %d: %s", o.status, o.err);
	lint(e, "default", o.out);
	CHECK(strstr(o.out, "shuffle_epoch_seconds_total"));
	td_out_free(&o);
	td_ctl(d->sock, &o, "stats", "--prometheus", "--per-rank", NULL);
	CHECKF(o.status == 0, "exit %d: %s", o.status, o.err);
	if (traffic)
		CHECK(strstr(o.out, "shuffle_client_msgs_out_total{job=\"lint-job\",rank=\"1\"}"));
	lint(e, "--per-rank", o.out);
	td_out_free(&o);
	if (traffic)
		td_job_finish(&j, 0, 2);
	td_stop(d);
	td_ctl(d->sock, &o, "stats", "--prometheus", NULL);
	CHECKF(o.status == 3 && strstr(o.out, "shuffle_up 0"), "down: exit %d\n%s", o.status,
	       o.out);
	lint(e, "daemon down", o.out);
	td_out_free(&o);
	return 0;
}
