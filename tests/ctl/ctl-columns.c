/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-columns.c - shufflectl's tables take column lists and fit
 * a terminal, against a daemon with a job of ctl_client ranks:
 *   - `-o help clients` and `--list-columns jobs` list the columns (no
 *     daemon needed); `-o help status` is a usage error (exit 2);
 *   - `-o rank,job,msgs_out clients` prints exactly those columns in that
 *     order (names case-insensitive), one row per rank, values as in JSON;
 *   - an unknown column exits 2 and names the valid ones; -o with a
 *     command without a table, or with --json, exits 2;
 *   - `--width 60 clients` (as on a 60-column terminal): no line is wider
 *     than 60 characters, and the job's name is whole (columns are dropped,
 *     never an identifier cut); on a pipe without --width the full table
 *     is wider (cells are never cut there).
 */
#include <string.h>

#include "tests/lib/daemon.h"

#define WORLD 3
#define COUNT 20
#define LEN 8

/* The longest line of s, in bytes (the tables here are ASCII). */
static size_t widest(const char *s)
{
	size_t w = 0;
	while (*s) {
		size_t l = strcspn(s, "\n");
		if (l > w)
			w = l;
		s += l + (s[l] == '\n');
	}
	return w;
}

static size_t lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

int main(void)
{
	struct td_env *e = td_init("ctl-columns", 120, 0);
	struct td_daemon *d = e->d;
	struct td_out o;

	/* column lists need no daemon */
	td_ctl("/nonexistent/shuffled.sock", &o, "-o", "help", "clients", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "MSGS_OUT") && strstr(o.out, "RANK") &&
		       !strstr(o.out, "HEARD"),
	       "-o help clients: exit %d\n%s%s", o.status, o.out, o.err);
	td_out_free(&o);
	td_ctl("/nonexistent/shuffled.sock", &o, "--list-columns", "jobs", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "MISSING") && strstr(o.out, "WORLD"),
	       "--list-columns jobs: exit %d\n%s%s", o.status, o.out, o.err);
	td_out_free(&o);
	td_ctl("/nonexistent/shuffled.sock", &o, "-o", "help", "status", NULL);
	CHECKF(o.status == 2, "-o help status: exit %d", o.status);
	td_out_free(&o);

	if (!getenv("SHF_TEST_CTL_CLIENT") || !*getenv("SHF_TEST_CTL_CLIENT"))
		SKIP("no test client (client library not built): no rows to show");
	CHECK(td_start(d, NULL, NULL) == 0);
	struct td_job j = {.name = "a-rather-long-job-name-for-the-width-test",
			   .world = WORLD, .count = COUNT, .len = LEN};
	td_job_start(&j, d->sock, 0, WORLD);
	td_job_wait_done(&j, 0, WORLD);

	/* chosen columns, in the order given */
	td_ctl(d->sock, &o, "-o", "rank,JOB,Msgs_Out", "clients", NULL);
	CHECKF(o.status == 0, "-o rank,JOB,Msgs_Out: exit %d: %s", o.status, o.err);
	const char *hdr = o.out;
	size_t hl = strcspn(hdr, "\n");
	char head[256];
	snprintf(head, sizeof(head), "%.*s", (int)hl, hdr);
	const char *r = strstr(head, "RANK"), *jb = strstr(head, "JOB"),
		   *m = strstr(head, "MSGS_OUT");
	CHECKF(r && jb && m && r < jb && jb < m, "header '%s'", head);
	CHECKF(!strstr(head, "PID") && !strstr(head, "STATE") && !strstr(head, "AGE"),
	       "columns not asked for in '%s'", head);
	CHECKF(lines(o.out) == 1 + WORLD, "%zu lines:\n%s", lines(o.out), o.out);
	char want[64];
	snprintf(want, sizeof(want), "%d", WORLD * COUNT); /* each rank got COUNT from each */
	CHECKF(strstr(o.out + hl, want), "msgs_out %s not in\n%s", want, o.out);
	td_out_free(&o);

	/* unknown column: usage error naming the valid ones */
	td_ctl(d->sock, &o, "-o", "rank,bogus", "clients", NULL);
	CHECKF(o.status == 2 && strstr(o.err, "unknown column 'bogus'") &&
		       strstr(o.err, "MSGS_OUT"),
	       "-o rank,bogus: exit %d: %s", o.status, o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "-o", "rank", "status", NULL);
	CHECKF(o.status == 2, "-o with status: exit %d", o.status);
	td_out_free(&o);
	td_ctl(d->sock, &o, "-o", "rank", "--json", "clients", NULL);
	CHECKF(o.status == 2, "-o with --json: exit %d", o.status);
	td_out_free(&o);

	/* the terminal's width */
	td_ctl(d->sock, &o, "clients", NULL);
	CHECKF(o.status == 0, "clients: exit %d", o.status);
	size_t full = widest(o.out);
	CHECKF(full > 60, "the full clients table is only %zu wide:\n%s", full, o.out);
	CHECK(strstr(o.out, j.name)); /* on a pipe every cell is whole */
	td_out_free(&o);
	static const char *const cmds[] = {"clients", "jobs", NULL};
	for (const char *const *c = cmds; *c; c++) {
		td_ctl(d->sock, &o, "--width", "60", *c, NULL);
		CHECKF(o.status == 0, "--width 60 %s: exit %d: %s", *c, o.status, o.err);
		CHECKF(widest(o.out) <= 60, "--width 60 %s: a line of %zu:\n%s", *c,
		       widest(o.out), o.out);
		CHECKF(lines(o.out) == 1 + (!strcmp(*c, "clients") ? WORLD : 1),
		       "--width 60 %s: rows wrapped or lost:\n%s", *c, o.out);
		CHECKF(strstr(o.out, j.name), "--width 60 %s: the job name is cut, not a column "
		       "dropped:\n%s", *c, o.out);
		td_out_free(&o);
	}
	td_ctl(d->sock, &o, "--width", "0", "clients", NULL);
	CHECKF(o.status == 2, "--width 0: exit %d", o.status);
	td_out_free(&o);

	td_job_finish(&j, 0, WORLD);
	td_stop(d);
	return 0;
}
