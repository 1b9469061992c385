/* SPDX-License-Identifier: MIT */
/*
 * tests/node/dead-blocked.c - a client killed while the relay holds its
 * records blocked on a ring nobody will ever drain (issue 15, item 8).
 *
 *   dead-blocked self|pair|both
 *
 * self: rank 0 of a world of 1 floods itself and never reads (its delivery
 *       thread sits in the first callback): its delivery ring fills, then
 *       its send ring, and the relay blocks it on its own ring.  It is
 *       killed with SIGKILL.
 * pair: ranks 0 and 1 flood each other and never read: each blocks on the
 *       other's full ring.  Rank 0 is killed; rank 1's records to it are
 *       dropped, so rank 1 goes on and its next flush reports the drops
 *       (-ESRCH).  Then rank 1 is killed too, while the dead rank 0 still
 *       waits on rank 1's full ring.
 * both: as pair, but both ranks are killed at once, each blocked on the
 *       other.
 *
 * Required, both ways: the daemon frees every session (its fd count is back
 * to the idle baseline, no session and no job is left), the drops are
 * counted (clients_total.drops_dead), and the job name can be used again
 * by a new job.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

/* Wait until (job, rank) shows "blocked" in the daemon's clients list. */
static void wait_blocked(struct td_env *e, const char *job, int rank)
{
	bool stuck = false;
	for (int64_t end = td_now_ms() + 20000; !stuck && td_now_ms() < end; td_sleep_ms(5)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		json_t *v = td_client_find(cl, job, rank);
		CHECKF(v != NULL, "rank %d of %s is gone before the kill", rank, job);
		stuck = json_is_true(json_object_get(v, "blocked"));
		if (stuck)
			fprintf(stderr, "%s: rank %d blocked: send_used %lld deliver_used %lld waiters "
				"%lld\n", e->name, rank, td_num(v, "send_used"),
				td_num(v, "deliver_used"), td_num(v, "waiters"));
		json_decref(cl);
	}
	CHECKF(stuck, "rank %d of %s never got blocked in the relay", rank, job);
}

static void kill_rank(pid_t pid, int rank)
{
	CHECKF(td_poll_exit(pid) == TD_RUNNING, "rank %d returned before the kill", rank);
	kill(pid, SIGKILL);
	CHECK(td_wait(pid, 5000) == 128 + SIGKILL);
}

/* Nothing of job is left in the daemon: sessions, job, fds. */
static void check_freed(struct td_env *e, const char *job, int world, int fd_base)
{
	int fds = td_fd_settle(e->d, fd_base, 10000);
	json_t *cl = td_query(e->d, "clients");
	CHECK(cl != NULL);
	for (int r = 0; r < world; r++) {
		json_t *v = td_client_find(cl, job, r);
		CHECKF(v == NULL, "rank %d of %s is still there (state %s) after it was killed", r,
		       job, json_string_value(json_object_get(v, "state")));
	}
	json_decref(cl);
	CHECKF(fds == fd_base, "daemon holds %d fds after the kill, %d before", fds, fd_base);
	json_t *jobs = td_query(e->d, "jobs");
	CHECK(jobs != NULL);
	json_t *a = json_object_get(jobs, "jobs");
	size_t i;
	json_t *o;
	json_array_foreach(a, i, o)
		CHECKF(strcmp(json_string_value(json_object_get(o, "name")), job) != 0,
		       "job %s is still known after all its ranks died", job);
	json_decref(jobs);
}

/* The job name is free again: a new job of that name runs to completion. */
static void check_reusable(struct td_env *e, const char *job, int world)
{
	const char *args[] = {"traffic", "n=200", NULL};
	pid_t pids[2];
	for (int r = 0; r < world; r++)
		pids[r] = td_spawn_client(job, r, world, args, NULL);
	CHECKF(td_wait_all(pids, world, 30000, "reuse rank") == 0,
	       "a new job %s could not run after the old one's ranks were killed", job);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	bool both = !strcmp(how, "both");
	bool pair = both || !strcmp(how, "pair");
	if (!pair && strcmp(how, "self")) {
		fprintf(stderr, "usage: dead-blocked self|pair|both\n");
		return 2;
	}
	char tname[32];
	snprintf(tname, sizeof(tname), "dead-blocked-%s", how);
	struct td_env *e = td_init(tname, 100, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	int fd_base = td_fd_baseline(e->d);
	const char *job = pair ? "pair" : "selfish";
	int world = pair ? 2 : 1;

	const char *self[] = {"victim", "dsts=0", "stall=never", "minlen=4096", "maxlen=4096",
			      "ring=131072", "post=open", NULL};
	const char *to1[] = {"victim", "dsts=1", "stall=never", "minlen=4096", "maxlen=4096",
			     "ring=131072", "post=open", NULL};
	const char *to0[] = {"victim", "dsts=0", "stall=never", "minlen=4096", "maxlen=4096",
			     "ring=131072", "post=open", "victim_until=killed.0",
			     "timeout=20000", NULL};
	pid_t pids[2] = {0, 0};
	if (pair) {
		pids[0] = td_spawn_client(job, 0, 2, to1, NULL);
		pids[1] = td_spawn_client(job, 1, 2, to0, NULL);
	} else {
		pids[0] = td_spawn_client(job, 0, 1, self, NULL);
	}
	char name[48];
	for (int r = 0; r < world; r++) {
		snprintf(name, sizeof(name), "open.%d", r);
		CHECKF(td_sync_wait(e->sync, name, 30000), "rank %d never opened", r);
	}
	for (int r = 0; r < world; r++)
		wait_blocked(e, job, r);

	if (both) {
		CHECK(td_poll_exit(pids[0]) == TD_RUNNING && td_poll_exit(pids[1]) == TD_RUNNING);
		kill(pids[0], SIGKILL);
		kill(pids[1], SIGKILL);
		CHECK(td_wait(pids[0], 5000) == 128 + SIGKILL);
		CHECK(td_wait(pids[1], 5000) == 128 + SIGKILL);
		fprintf(stderr, "%s: both ranks killed while blocked on each other\n", e->name);
	} else {
		kill_rank(pids[0], 0);
		fprintf(stderr, "%s: rank 0 killed while blocked\n", e->name);
	}
	if (pair && !both) {
		/* the survivor's records to the dead rank drop; its flush says so */
		td_sync_post(e->sync, "killed.0");
		CHECKF(td_sync_wait(e->sync, "victim-reported.1", 20000),
		       "rank 1 never got its flush answered after rank 0 died");
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		json_t *v = td_client_find(cl, job, 1);
		CHECKF(v != NULL, "rank 1's session is gone");
		long long dd = td_num(v, "stats.drops_dead");
		CHECKF(dd > 0, "rank 1: drops_dead %lld after its partner died", dd);
		json_decref(cl);
		kill_rank(pids[1], 1);
		fprintf(stderr, "%s: rank 1 killed too (it had %lld drops reported)\n", e->name,
			dd);
	}
	check_freed(e, job, world, fd_base);
	long long drops = td_stat(e->d, "clients_total.drops_dead");
	CHECKF(drops > 0, "clients_total.drops_dead %lld: the dead ranks' records to "
	       "themselves/each other were not counted", drops);
	fprintf(stderr, "%s: all freed, drops_dead %lld\n", e->name, drops);
	check_reusable(e, job, world);
	td_stop(e->d);
	return 0;
}
