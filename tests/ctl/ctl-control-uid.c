/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-control-uid.c - control from another uid is refused.
 *
 * A root daemon (socket open to every local user) runs "ownjob" of uid
 * 65534 (one rank).  As uid 65533: log-level, cutoff ownjob 0, drain
 * ownjob and drain of a job that does not exist are each refused (exit 1,
 * the same words whether the job exists or not), counted (ctl_refused)
 * and logged (WARN naming the uid); nothing changed: the level is still
 * info and ownjob's rank still flushes.  As uid 65534, the owner:
 * log-level is refused (root or the daemon's user only), drain ownjob
 * works and its rank gets -ECANCELED.  Skipped unless run as root with
 * setpriv(1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/ctl/steer.h"

#define OWNER 65534
#define OTHER 65533

static struct td_env *e;

/* shufflectl -s SOCK a1 a2 a3 as uid */
static void ctl_as(int uid, struct td_out *o, const char *a1, const char *a2, const char *a3)
{
	char reuid[32], regid[32];
	snprintf(reuid, sizeof(reuid), "--reuid=%d", uid);
	snprintf(regid, sizeof(regid), "--regid=%d", uid);
	const char *argv[] = {TD_SETPRIV, reuid, regid, "--clear-groups",
			      td_prog("SHF_TEST_SHUFFLECTL"), "-s", e->d->sock, a1, a2, a3, NULL};
	td_run(argv, NULL, 20000, o);
}

static void refused(int uid, const char *a1, const char *a2, const char *a3, const char *words)
{
	struct td_out o;
	ctl_as(uid, &o, a1, a2, a3);
	CHECKF(o.status == 1 && strstr(o.err, "Operation not permitted") && strstr(o.err, words),
	       "uid %d: %s %s %s: exit %d, not refused with '%s': %s%s", uid, a1, a2 ? a2 : "",
	       a3 ? a3 : "", o.status, words, o.out, o.err);
	td_out_free(&o);
}

int main(void)
{
	e = td_init("ctl-control-uid", 90, 0);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon, and setpriv to two other uids)");
	if (access(TD_SETPRIV, X_OK) != 0)
		SKIP("%s not found", TD_SETPRIV);
	td_prog("SHF_TEST_CTL_STEER");
	CHECK(chmod(e->dir, 0755) == 0);
	struct td_daemon *d = e->d;
	CHECK(td_start(d, NULL, NULL) == 0);

	struct steer own;
	steer_start(&own, e, d->sock, "ownjob", 1, OWNER, "t");
	CHECK(steer_cmd(&own, 0, "send 0 10 32", NULL, NULL, 0) == 0);

	refused(OTHER, "log-level", "debug", NULL, "only root or the daemon's user");
	refused(OTHER, "cutoff", "ownjob", "0", "only root or the owner of job ownjob");
	refused(OTHER, "drain", "ownjob", NULL, "only root or the owner of job ownjob");
	refused(OTHER, "drain", "nosuchjob", NULL, "only root or the owner of job nosuchjob");
	CHECK(td_stat(d, "daemon.ctl_refused") == 4);
	CHECK(td_stat(d, "daemon.ctl_drained") == 0 && td_stat(d, "daemon.ctl_cutoffs") == 0);
	CHECK(td_log_contains(d, "WARN: control: drain ownjob refused to uid 65533"));
	CHECK(td_log_contains(d, "WARN: control: log-level refused to uid 65533"));
	CHECK(td_log_contains(d, "WARN: control: cutoff ownjob refused to uid 65533"));
	json_t *cfg = td_ctl_json(d->sock, "config");
	json_t *ll = json_object_get(json_object_get(cfg, "config"), "log_level");
	CHECK(!strcmp(json_string_value(json_object_get(ll, "value")), "info"));
	json_decref(cfg);
	char detail[600];
	int r = steer_cmd(&own, 0, "send 0 10 32", NULL, detail, sizeof(detail));
	CHECKF(r == 0, "ownjob after the refusals: %d (%s)", r, detail);

	/* the owner: not the log level, but its own job */
	refused(OWNER, "log-level", "debug", NULL, "only root or the daemon's user");
	CHECK(td_stat(d, "daemon.ctl_refused") == 5);
	struct td_out o;
	ctl_as(OWNER, &o, "drain", "ownjob", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "job ownjob drained: 1 session cut off"),
	       "the owner's drain: %d: %s%s", o.status, o.out, o.err);
	td_out_free(&o);
	r = steer_cmd(&own, 0, "flush", NULL, detail, sizeof(detail));
	CHECKF(r == -ECANCELED && strstr(detail, "drained by uid 65534"), "drained rank: %d (%s)",
	       r, detail);
	CHECK(td_stat(d, "daemon.ctl_drained") == 1);
	r = steer_cmd(&own, 0, "close", NULL, NULL, 0);
	CHECK(steer_wait(&own, 0) == (r < 0));
	td_stop(d);
	return 0;
}
