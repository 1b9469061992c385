/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/steer.c - see steer.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/ctl/steer.h"

void steer_start(struct steer *s, const struct td_env *e, const char *sock, const char *job,
		 int world, int uid, const char *modes)
{
	static unsigned seq;
	const char *prog = td_prog("SHF_TEST_CTL_STEER");
	CHECK(world <= STEER_MAX);
	memset(s, 0, sizeof(*s));
	snprintf(s->job, sizeof(s->job), "%s", job);
	s->world = world;
	td_fmt(s->dir, sizeof(s->dir), "%s/steer-%s-%u", e->dir, job, seq++);
	CHECK(mkdir(s->dir, 01777) == 0 && chmod(s->dir, 01777) == 0);
	char env_sock[TD_PATH_MAX + 16];
	td_fmt(env_sock, sizeof(env_sock), "SHF_SOCKET=%s", sock);
	for (int r = 0; r < world; r++) {
		char rank[16], wstr[16], reuid[32], regid[32], err[TD_PATH_MAX + 32];
		snprintf(rank, sizeof(rank), "%d", r);
		snprintf(wstr, sizeof(wstr), "%d", world);
		snprintf(reuid, sizeof(reuid), "--reuid=%d", uid);
		snprintf(regid, sizeof(regid), "--regid=%d", uid);
		td_fmt(err, sizeof(err), "%s/%d.err", s->dir, r);
		const char *mode = modes[r] == 'p' ? "poll" : "thread";
		const char *as_user[] = {TD_SETPRIV, reuid, regid, "--clear-groups", prog, job, rank,
					 wstr, s->dir, mode, NULL};
		const char *as_me[] = {prog, job, rank, wstr, s->dir, mode, NULL};
		s->pid[r] = td_spawn(uid >= 0 ? as_user : as_me,
				     (const char *const[]){env_sock, NULL}, NULL, err);
	}
	for (int r = 0; r < world; r++) {
		char name[32], err[TD_PATH_MAX + 32];
		snprintf(name, sizeof(name), "%d.open", r);
		td_fmt(err, sizeof(err), "%s/%d.err", s->dir, r);
		CHECKF(td_sync_wait(s->dir, name, 30000), "rank %d of %s never opened: %s", r, job,
		       td_read_file(err));
	}
}

void steer_ask(struct steer *s, int rank, const char *cmd)
{
	int step = ++s->step[rank];
	char path[TD_PATH_MAX + 64], tmp[TD_PATH_MAX + 80];
	td_fmt(tmp, sizeof(tmp), "%s/.%d.cmd.%d", s->dir, rank, step);
	td_fmt(path, sizeof(path), "%s/%d.cmd.%d", s->dir, rank, step);
	td_write_file(tmp, cmd);
	CHECK(rename(tmp, path) == 0);
}

int steer_result(struct steer *s, int rank, long long *got, char *detail, size_t n)
{
	char name[64], path[TD_PATH_MAX + 64], err[TD_PATH_MAX + 32];
	snprintf(name, sizeof(name), "%d.res.%d", rank, s->step[rank]);
	td_fmt(err, sizeof(err), "%s/%d.err", s->dir, rank);
	CHECKF(td_sync_wait(s->dir, name, 40000), "rank %d of %s: no result for step %d: %s", rank,
	       s->job, s->step[rank], td_read_file(err));
	td_fmt(path, sizeof(path), "%s/%s", s->dir, name);
	char *text = td_read_file(path);
	int r = 0;
	long long g = -1;
	int off = 0;
	CHECKF(sscanf(text, "%d %lld %n", &r, &g, &off) == 2, "rank %d: result '%s'", rank, text);
	if (got)
		*got = g;
	if (detail && n) {
		snprintf(detail, n, "%s", text + off);
		detail[strcspn(detail, "\n")] = '\0';
	}
	free(text);
	return r;
}

int steer_cmd(struct steer *s, int rank, const char *cmd, long long *got, char *detail, size_t n)
{
	steer_ask(s, rank, cmd);
	return steer_result(s, rank, got, detail, n);
}

int steer_wait(struct steer *s, int rank)
{
	return td_wait(s->pid[rank], 30000);
}
