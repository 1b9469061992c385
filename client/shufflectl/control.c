/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/control.c - runtime control of the local shuffled:
 *
 *   shufflectl log-level LEVEL   the daemon's log level from now on
 *   shufflectl cutoff JOB RANK   cut off that rank's session
 *   shufflectl drain JOB         cut off every session of the job, refuse
 *                                its registrations: its ranks get -ECANCELED
 *
 * The daemon decides who may (daemon/admin/control.h): root or the daemon's
 * user for everything, a job's owner for cutoff and drain of that job;
 * anyone else is refused (exit 1, the daemon's words on stderr).
 *
 * --all: every node runs the command for the asker's uid (the daemons'
 * fan-out; only with a cluster key, docs/protocol.md "Control commands");
 * a row per node with its outcome, see show_control_all() for the exit.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "client/shufflectl/shufflectl.h"

static int want_args(const char *cmd, int argc, int want, const char *usage)
{
	if (argc == want)
		return 0;
	errmsg("usage: shufflectl %s %s", cmd, usage);
	return EXIT_USAGE;
}

int run_control(const char *cmd, int argc, char *const *argv, const struct ctl_opts *o)
{
	json_t *args = NULL;
	int rc;
	if (!strcmp(cmd, "log-level")) {
		if ((rc = want_args(cmd, argc, 1, "LEVEL (err, warn, notice, info, debug)")))
			return rc;
		args = json_pack("{s:s}", "level", argv[0]);
	} else if (!strcmp(cmd, "cutoff")) {
		if ((rc = want_args(cmd, argc, 2, "JOB RANK")))
			return rc;
		char *end;
		errno = 0;
		long rank = strtol(argv[1], &end, 10);
		if (errno || end == argv[1] || *end || rank < 0 || rank > INT_MAX) {
			errmsg("cutoff: rank '%s' is not a number >= 0", argv[1]);
			return EXIT_USAGE;
		}
		args = json_pack("{s:s,s:i}", "job", argv[0], "rank", (int)rank);
	} else { /* drain */
		if ((rc = want_args(cmd, argc, 1, "JOB")))
			return rc;
		args = json_pack("{s:s}", "job", argv[0]);
	}
	if (!args) {
		errmsg("out of memory");
		return EXIT_FAIL;
	}
	struct conn c;
	if ((rc = conn_open(&c, o->sock, o->timeout_ms)) != 0) {
		json_decref(args);
		return rc;
	}
	json_t *doc = NULL;
	rc = (o->all ? conn_request_all_args(&c, cmd, args, conn_fan_ms(o->timeout_ms), &doc)
		     : conn_request_args(&c, cmd, args, &doc)) < 0
		     ? EXIT_FAIL
		     : EXIT_OK;
	json_decref(args);
	conn_close(&c);
	if (rc != EXIT_OK)
		return rc;
	if (o->all) {
		/* every node's outcome; --json: the combined document */
		int all_rc = show_control_all(doc, cmd, o->json ? NULL : stdout);
		if (o->json && json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) < 0)
			all_rc = EXIT_FAIL;
		if (o->json)
			fputc('\n', stdout);
		json_decref(doc);
		return all_rc;
	}
	if (o->json) {
		if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) < 0)
			rc = EXIT_FAIL;
		fputc('\n', stdout);
	} else if (!strcmp(cmd, "log-level")) {
		printf("log level %s (was %s)\n", jstr(doc, "log_level", "?"),
		       jstr(doc, "previous", "?"));
	} else if (!strcmp(cmd, "cutoff")) {
		printf("cut off client %lld (job %s rank %lld pid %lld)\n", jint(doc, "client", -1),
		       jstr(doc, "job", "?"), jint(doc, "rank", -1), jint(doc, "pid", -1));
	} else {
		long long n = jint(doc, "clients", 0);
		printf("job %s drained: %lld session%s cut off\n", jstr(doc, "job", "?"), n,
		       n == 1 ? "" : "s");
	}
	json_decref(doc);
	return rc;
}
