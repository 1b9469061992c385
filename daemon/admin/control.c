/* SPDX-License-Identifier: MIT */
/*
 * daemon/admin/control.c - runtime control: the log level, cutting off a
 * client, draining a job; the authorization rule (control.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/config.h"
#include "daemon/admin/control.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/net/net.h"
#include "proto/ipc.h"

static struct shd_ratelimit rl_refused = SHD_RATELIMIT_INIT(1000, 5);

__attribute__((format(printf, 2, 3)))
static json_t *fail(int err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:i,s:s}", "error", err, "message", msg);
}

/* root and the daemon's own user: everything (ctlcmd.c's full view too) */
static bool privileged(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* Count, log (rate-limited) and answer a refusal.  what: the command and
 * its target, for the log only. */
static json_t *refuse(struct shd_daemon *d, uid_t uid, const char *what, const char *answer)
{
	d->st.ctl_refused++;
	shd_log_rl(&rl_refused, SHD_LOG_WARN, "control: %s refused to uid %d: %s", what, (int)uid,
		   answer);
	return fail(-EPERM, "%s", answer);
}

/* The "job" argument, checked ([A-Za-z0-9._:@+-]{1,63}) into name. */
static json_t *job_arg(const json_t *req, char name[SHF_JOB_MAX])
{
	const char *s = json_string_value(json_object_get(req, "job"));
	if (!s)
		return fail(-EINVAL, "missing argument: job (a job name)");
	memset(name, 0, SHF_JOB_MAX);
	size_t n = strlen(s);
	if (n < SHF_JOB_MAX)
		memcpy(name, s, n);
	if (n >= SHF_JOB_MAX || shf_ipc_job_check(name) < 0)
		return fail(-EINVAL, "bad job name (1-63 chars of [A-Za-z0-9._:@+-])");
	return NULL;
}

/* The job name may act on for uid, or NULL with *err_p the refusal (an
 * unprivileged uid hears the same whether the job exists or not). */
static struct shd_job *job_for(struct shd_daemon *d, const char *cmd, const char *name, uid_t uid,
			       json_t **err_p)
{
	struct shd_job *j = shd_jobtab_find(d, name);
	char what[128];
	snprintf(what, sizeof(what), "%s %s", cmd, name);
	if (privileged(uid)) {
		if (!j)
			*err_p = fail(-ENOENT, "no job %s on this node", name);
		return j;
	}
	if (!j || j->uid != uid) {
		char answer[200];
		snprintf(answer, sizeof(answer), "%s: only root or the owner of job %s may (you are "
			 "uid %d; no job of yours has that name on this node)", cmd, name, (int)uid);
		*err_p = refuse(d, uid, what, answer);
		return NULL;
	}
	return j;
}

json_t *shd_control_log_level(struct shd_daemon *d, const json_t *req, uid_t uid)
{
	if (!privileged(uid)) {
		char answer[160];
		snprintf(answer, sizeof(answer), "log-level: only root or the daemon's user (uid "
			 "%d) may (you are uid %d)", (int)geteuid(), (int)uid);
		return refuse(d, uid, "log-level", answer);
	}
	const char *s = json_string_value(json_object_get(req, "level"));
	int lvl = s ? shd_log_level_parse(s) : -EINVAL;
	if (lvl < 0)
		return fail(-EINVAL, "bad level '%s' (err, warn, notice, info, debug or 3..7)",
			    s ? s : "(none)");
	int old = d->cfg.log_level;
	d->cfg.log_level = lvl;
	d->cfg.source[SHD_OPT_LOG_LEVEL] = SHD_CONFIG_SRC_RUNTIME;
	shd_log_max = lvl;
	/* always written, whatever the new level lets through */
	shd_log_write(SHD_LOG_NOTICE, "log level %s (was %s), set by uid %d (shufflectl)",
		      shd_log_level_name(lvl), shd_log_level_name(old), (int)uid);
	return json_pack("{s:s,s:s}", "log_level", shd_log_level_name(lvl), "previous",
			 shd_log_level_name(old));
}

json_t *shd_control_cutoff(struct shd_daemon *d, const json_t *req, uid_t uid)
{
	char name[SHF_JOB_MAX];
	json_t *err = job_arg(req, name);
	if (err)
		return err;
	json_t *jr = json_object_get(req, "rank");
	if (!json_is_integer(jr) || json_integer_value(jr) < 0 ||
	    json_integer_value(jr) >= SHF_WORLD_MAX)
		return fail(-EINVAL, "missing or bad argument: rank (0 <= rank < %d)", SHF_WORLD_MAX);
	int32_t rank = (int32_t)json_integer_value(jr);
	struct shd_job *j = job_for(d, "cutoff", name, uid, &err);
	if (!j)
		return err;
	struct shd_client *c = rank < j->world ? shd_jobtab_client(j, rank) : NULL;
	if (!c || c->doomed)
		return fail(-ENOENT, "rank %d of job %s has no session on this node", (int)rank,
			    name);
	json_t *o = json_pack("{s:s,s:i,s:I,s:i}", "job", name, "rank", (int)rank, "client",
			      (json_int_t)c->id, "pid", (int)c->pid);
	d->st.ctl_cutoffs++;
	shd_notice("control: uid %d cuts off client %llu (job %s rank %d pid %d)", (int)uid,
		   (unsigned long long)c->id, name, (int)rank, (int)c->pid);
	shd_client_cutoff(c, -ENOTCONN, "cut off by uid %d (shufflectl cutoff)", (int)uid);
	return o;
}

json_t *shd_control_drain(struct shd_daemon *d, const json_t *req, uid_t uid)
{
	char name[SHF_JOB_MAX];
	json_t *err = job_arg(req, name);
	if (err)
		return err;
	struct shd_job *j = job_for(d, "drain", name, uid, &err);
	if (!j)
		return err;
	if (!j->drained) {
		j->drained = true;
		j->drained_by = uid;
	}
	/* cut-offs only mark and queue (client.h): walking the directory
	 * while doing them is safe */
	int n = 0;
	for (int32_t r = shd_jobtab_next(j, 0); r < j->world; r = shd_jobtab_next(j, r + 1)) {
		struct shd_client *c = shd_jobtab_client(j, r);
		if (!c || c->doomed)
			continue;
		shd_client_cutoff(c, -ECANCELED, "job %s drained by uid %d (shufflectl drain)", name,
				  (int)j->drained_by);
		n++;
	}
	d->st.ctl_drained += (uint64_t)n;
	shd_notice("control: uid %d drains job %s: %d session%s cut off", (int)uid, name, n,
		   n == 1 ? "" : "s");
	return json_pack("{s:s,s:i,s:i}", "job", name, "clients", n, "drained_by",
			 (int)j->drained_by);
}

json_t *shd_control_relay_check(struct shd_daemon *d, const char *cmd, uid_t uid)
{
	/* "key": members proved the cluster key; "alone": nothing is relayed */
	if (strcmp(shd_net_auth_mode(d), "none") != 0)
		return NULL;
	char what[64];
	snprintf(what, sizeof(what), "%s --all", cmd);
	return refuse(d, uid, what, "control --all needs authenticated peers (cluster_key): "
		      "without a key a uid relayed by another node cannot be trusted; configure "
		      "cluster_key, or run the command on each node without --all");
}
