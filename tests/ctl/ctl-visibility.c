/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-visibility.c - what shufflectl shows to whom.
 *
 * A root daemon (its socket open to every local user) runs three jobs:
 * "alphajob" of uid 65534 (2 ranks), "bravojob" of uid 65533 (1 rank) and
 * "charliejob" of root (1 rank).  shufflectl clients, jobs, dump (JSON,
 * tables and the Prometheus exposition) run as each of the three uids:
 *   - uid 65534 sees its own job and clients in full and nothing of the
 *     others' (no job name, pid or uid) but their totals (other_users:
 *     2 jobs, 2 clients);
 *   - uid 65533 likewise with its own job;
 *   - root sees everything.
 * Skipped unless run as root with setpriv(1) available.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define SETPRIV "/usr/bin/setpriv"
#define UA 65534
#define UB 65533

static struct td_env *e;

struct job {
	const char *name;
	int uid, world;
	char sync[TD_PATH_MAX];
	pid_t pid[2];
};

static void job_start(struct job *j)
{
	const char *client = td_prog("SHF_TEST_CTL_CLIENT");
	td_fmt(j->sync, sizeof(j->sync), "%s/vis-%s", e->dir, j->name);
	CHECK(mkdir(j->sync, 01777) == 0 && chmod(j->sync, 01777) == 0);
	char env_sock[TD_PATH_MAX + 16];
	snprintf(env_sock, sizeof(env_sock), "SHF_SOCKET=%s", e->d->sock);
	for (int r = 0; r < j->world; r++) {
		char reuid[32], regid[32], rank[16], world[16], err[TD_PATH_MAX + 32];
		snprintf(reuid, sizeof(reuid), "--reuid=%d", j->uid);
		snprintf(regid, sizeof(regid), "--regid=%d", j->uid);
		snprintf(rank, sizeof(rank), "%d", r);
		snprintf(world, sizeof(world), "%d", j->world);
		snprintf(err, sizeof(err), "%s/client-%d.err", j->sync, r);
		const char *argv[] = {SETPRIV, reuid, regid, "--clear-groups", client, j->name,
				      rank, world, "10", "100", j->sync, NULL};
		j->pid[r] = td_spawn(argv, (const char *const[]){env_sock, NULL}, "/dev/null", err);
	}
}

static void job_wait_done(struct job *j)
{
	for (int r = 0; r < j->world; r++) {
		char done[32], err[TD_PATH_MAX + 32];
		snprintf(done, sizeof(done), "%d.done", r);
		snprintf(err, sizeof(err), "%s/client-%d.err", j->sync, r);
		CHECKF(td_sync_wait(j->sync, done, 30000), "rank %d of %s never finished: %s", r,
		       j->name, td_read_file(err));
	}
}

/* shufflectl -s SOCK ARGS... as uid (0: root itself); its stdout (heap). */
static char *ctl_as(int uid, const char *a1, const char *a2)
{
	char reuid[32], regid[32];
	snprintf(reuid, sizeof(reuid), "--reuid=%d", uid);
	snprintf(regid, sizeof(regid), "--regid=%d", uid);
	const char *ctl = td_prog("SHF_TEST_SHUFFLECTL");
	const char *as_user[] = {SETPRIV, reuid, regid, "--clear-groups", ctl, "-s", e->d->sock,
				 a1, a2, NULL};
	const char *as_root[] = {ctl, "-s", e->d->sock, a1, a2, NULL};
	struct td_out o;
	td_run(uid ? as_user : as_root, NULL, 20000, &o);
	CHECKF(o.status == 0, "shufflectl %s %s as uid %d: status %d: %s", a1, a2 ? a2 : "", uid,
	       o.status, o.err);
	char *out = o.out;
	o.out = NULL;
	td_out_free(&o);
	return out;
}

static json_t *ctl_json_as(int uid, const char *cmd)
{
	char *out = ctl_as(uid, "--json", cmd);
	json_error_t err;
	json_t *doc = json_loads(out, 0, &err);
	CHECKF(doc != NULL, "shufflectl --json %s as uid %d: not JSON (%s): %.200s", cmd, uid,
	       err.text, out);
	free(out);
	return doc;
}

/* text mentions none of the other jobs' names or pids */
static void check_hidden(int uid, const char *what, const char *text, struct job *jobs, int n)
{
	for (int i = 0; i < n; i++) {
		if (jobs[i].uid == uid || uid == 0) /* root sees all */
			continue;
		CHECKF(!strstr(text, jobs[i].name), "uid %d: %s shows %s's job %s", uid, what,
		       jobs[i].uid ? "another user" : "root", jobs[i].name);
		for (int r = 0; r < jobs[i].world; r++) {
			char pid[48];
			snprintf(pid, sizeof(pid), "\"pid\":%d", (int)jobs[i].pid[r]);
			CHECKF(!strstr(text, pid), "uid %d: %s shows pid %d of job %s", uid, what,
			       (int)jobs[i].pid[r], jobs[i].name);
			snprintf(pid, sizeof(pid), "pid=\"%d\"", (int)jobs[i].pid[r]);
			CHECKF(!strstr(text, pid), "uid %d: %s shows pid %d of job %s", uid, what,
			       (int)jobs[i].pid[r], jobs[i].name);
		}
	}
}

/* what uid sees: its own jobs and clients in full, the others counted */
static void check_view(int uid, struct job *jobs, int n)
{
	int own_jobs = 0, own_clients = 0, all_jobs = 0, all_clients = 0;
	for (int i = 0; i < n; i++) {
		all_jobs++;
		all_clients += jobs[i].world;
		if (jobs[i].uid == uid || uid == 0) {
			own_jobs++;
			own_clients += jobs[i].world;
		}
	}
	json_t *cl = ctl_json_as(uid, "clients");
	json_t *a = json_object_get(cl, "clients");
	CHECKF(json_array_size(a) == (size_t)own_clients, "uid %d sees %zu clients, expected %d",
	       uid, json_array_size(a), own_clients);
	size_t i;
	json_t *c;
	json_array_foreach(a, i, c) {
		if (uid)
			CHECKF(td_num(c, "uid") == uid, "uid %d sees a client of uid %lld", uid,
			       td_num(c, "uid"));
		CHECKF(td_num(c, "pid") > 0, "uid %d does not see its own client's pid", uid);
	}
	char *text = json_dumps(cl, JSON_COMPACT);
	check_hidden(uid, "clients", text, jobs, n);
	free(text);
	if (uid) {
		CHECKF(td_num(cl, "other_users.clients") == all_clients - own_clients,
		       "uid %d: other_users.clients %lld, expected %d", uid,
		       td_num(cl, "other_users.clients"), all_clients - own_clients);
		CHECKF(td_num(cl, "other_users.jobs") == all_jobs - own_jobs,
		       "uid %d: other_users.jobs %lld, expected %d", uid,
		       td_num(cl, "other_users.jobs"), all_jobs - own_jobs);
		/* every client sent 10 messages to each rank of its job */
		long long msgs = 0;
		for (int k = 0; k < n; k++)
			if (jobs[k].uid != uid)
				msgs += 10LL * jobs[k].world * jobs[k].world;
		CHECKF(td_num(cl, "other_users.stats.msgs_in") == msgs,
		       "uid %d: other_users.stats.msgs_in %lld, expected %lld", uid,
		       td_num(cl, "other_users.stats.msgs_in"), msgs);
	} else {
		CHECKF(json_object_get(cl, "other_users") == NULL, "root is shown an aggregate");
	}
	json_decref(cl);

	json_t *jb = ctl_json_as(uid, "jobs");
	a = json_object_get(jb, "jobs");
	CHECKF(json_array_size(a) == (size_t)own_jobs, "uid %d sees %zu jobs, expected %d", uid,
	       json_array_size(a), own_jobs);
	text = json_dumps(jb, JSON_COMPACT);
	check_hidden(uid, "jobs", text, jobs, n);
	free(text);
	json_decref(jb);

	json_t *dump = ctl_json_as(uid, "dump");
	text = json_dumps(dump, JSON_COMPACT);
	check_hidden(uid, "dump", text, jobs, n);
	free(text);
	json_decref(dump);

	/* the renderings built from the same documents */
	const char *tables[] = {"clients", "jobs", "dump"};
	for (int k = 0; k < 3; k++) {
		char *out = ctl_as(uid, tables[k], NULL);
		check_hidden(uid, tables[k], out, jobs, n);
		if (uid && k < 2)
			CHECKF(strstr(out, "other users") != NULL,
			       "uid %d: shufflectl %s does not mention the other users' totals: %s",
			       uid, tables[k], out);
		free(out);
	}
	char *prom = ctl_as(uid, "--prometheus", "stats");
	check_hidden(uid, "prometheus", prom, jobs, n);
	for (int j = 0; j < n; j++)
		if (jobs[j].uid == uid || uid == 0)
			CHECKF(strstr(prom, jobs[j].name) != NULL, "uid %d: prometheus lacks its "
			       "own job %s", uid, jobs[j].name);
	free(prom);
	fprintf(stderr, "ctl-visibility: uid %d sees %d job(s) and %d client(s) in full\n", uid,
		own_jobs, own_clients);
}

int main(void)
{
	e = td_init("ctl-visibility", 90, 0);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon and setpriv to two other uids)");
	if (access(SETPRIV, X_OK) != 0)
		SKIP("%s not found", SETPRIV);
	td_prog("SHF_TEST_CTL_CLIENT");
	CHECK(chmod(e->dir, 0755) == 0);
	CHECK(td_start(e->d, NULL, NULL) == 0);

	struct job jobs[] = {
		{"alphajob", UA, 2, "", {0}},
		{"bravojob", UB, 1, "", {0}},
		{"charliejob", 0, 1, "", {0}},
	};
	int n = 3;
	for (int i = 0; i < n; i++)
		job_start(&jobs[i]);
	for (int i = 0; i < n; i++)
		job_wait_done(&jobs[i]);

	check_view(UA, jobs, n);
	check_view(UB, jobs, n);
	check_view(0, jobs, n);

	for (int i = 0; i < n; i++) {
		td_sync_post(jobs[i].sync, "release");
		for (int r = 0; r < jobs[i].world; r++)
			CHECKF(td_wait(jobs[i].pid[r], 20000) == 0, "rank %d of %s failed", r,
			       jobs[i].name);
	}
	td_stop(e->d);
	return 0;
}
