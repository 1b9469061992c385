/* SPDX-License-Identifier: MIT */
/*
 * tests/node/client-kill.c - a client killed with SIGKILL in the middle of
 * a send (blocked on a full ring) or of a REMOTE flush.
 *
 *   client-kill send|flush
 *
 * Ranks 0-2 exchange traffic; rank 3 (the victim) floods rank 0, whose
 * callback sits on the victim's first message until the victim has been
 * killed, so the victim is blocked in shf_send() or shf_flush() (and the
 * daemon shows its relay blocked) when it dies.  Required:
 *   - the others' traffic completes exactly once and in order, and what
 *     they got from the victim is an in-order prefix of what it sent;
 *   - their epoch fails with -ESRCH (a rank is gone) instead of hanging;
 *   - the daemon drains and frees the victim: its fd count drops by one
 *     client's worth, and returns to the baseline when all have left.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

#define WORLD 4
#define VICTIM 3

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	bool flush = !strcmp(how, "flush");
	if (!flush && strcmp(how, "send")) {
		fprintf(stderr, "usage: client-kill send|flush\n");
		return 2;
	}
	struct td_env *e = td_init(flush ? "client-kill-flush" : "client-kill-send",
				   100, TD_SOCKET_ENV);
	CHECK(td_start(e->d, NULL, NULL) == 0);
	int fd_base = td_fd_baseline(e->d);

	const char *honest0[] = {"traffic", "srcs=0-2", "dsts=0-2", "prefix=3", "n=1000",
				 "wait=1", "expect_epoch=ESRCH", "ring=131072", "slow_src=3",
				 "stall=victim-killed", "post=open", "hold=fdcheck", NULL};
	const char *honest[] = {"traffic", "srcs=0-2", "dsts=0-2", "prefix=3", "n=1000",
				"wait=1", "expect_epoch=ESRCH", "post=open", "hold=fdcheck", NULL};
	/* flush: the victim's 40 x 4 KiB must all fit in its own send ring
	 * (256 KiB), or it blocks in shf_send and never reaches the flush
	 * when honest traffic fills rank 0's 128 KiB ring first; they never
	 * all fit in rank 0's ring, so the flush is always stuck */
	const char *victim[] = {"victim", "dsts=0", "minlen=4096", "maxlen=4096",
				flush ? "ring=262144" : "ring=131072", "post=open",
				flush ? "victim_flush=40" : "n=100000", NULL};
	pid_t pids[WORLD];
	for (int r = 0; r < WORLD; r++)
		pids[r] = td_spawn_client("kill", r, WORLD,
					  r == VICTIM ? victim : r ? honest : honest0, NULL);
	char name[32];
	for (int r = 0; r < WORLD; r++) {
		snprintf(name, sizeof(name), "open.%d", r);
		CHECKF(td_sync_wait(e->sync, name, 30000), "rank %d never opened", r);
	}
	/* one client's worth of fds (sampled with no session coming or going) */
	int fd_all = td_fd_baseline(e->d);
	CHECKF((fd_all - fd_base) % WORLD == 0 && fd_all > fd_base,
	       "daemon fds: %d idle, %d with %d clients", fd_base, fd_all, WORLD);
	int per_client = (fd_all - fd_base) / WORLD;

	/* wait until the victim is stuck where we want it: rank 0 sits in a
	 * callback for its first message, so its relay is blocked */
	CHECK(td_sync_wait(e->sync, flush ? "victim-flushing" : "victim-sending", 30000));
	bool stuck = false;
	for (int64_t end = td_now_ms() + 10000; !stuck && td_now_ms() < end; td_sleep_ms(5)) {
		json_t *cl = td_query(e->d, "clients");
		CHECK(cl != NULL);
		json_t *v = td_client_find(cl, "kill", VICTIM);
		CHECKF(v != NULL, "the victim is gone before the kill");
		stuck = json_is_true(json_object_get(v, "blocked"));
		json_decref(cl);
	}
	CHECKF(stuck, "the victim's records never got stuck");
	td_sleep_ms(200); /* into shf_send / shf_flush, and asleep there */
	CHECKF(td_poll_exit(pids[VICTIM]) == TD_RUNNING, "the victim returned before the kill");
	kill(pids[VICTIM], SIGKILL);
	CHECK(td_wait(pids[VICTIM], 5000) == 128 + SIGKILL);
	td_sync_post(e->sync, "victim-killed");
	fprintf(stderr, "%s: victim killed while %s\n", e->name,
		flush ? "in shf_flush" : "blocked in shf_send");

	/* the others finish (their epoch fails with ESRCH) and wait */
	for (int r = 0; r < VICTIM; r++) {
		snprintf(name, sizeof(name), "held.%d", r);
		while (!td_sync_exists(e->sync, name)) {
			int st = td_poll_exit(pids[r]);
			CHECKF(st == TD_RUNNING, "rank %d exited with %d before the fd check", r, st);
			td_sleep_ms(5);
		}
	}
	/* the victim is drained and freed: one client's fds fewer */
	int want = fd_base + (WORLD - 1) * per_client;
	int fds = td_fd_settle(e->d, want, 20000);
	CHECKF(fds == want, "daemon holds %d fds after the victim died; %d expected "
	       "(%d idle + %d per client)", fds, want, fd_base, per_client);
	json_t *cl = td_query(e->d, "clients");
	CHECK(cl != NULL);
	CHECKF(td_client_find(cl, "kill", VICTIM) == NULL, "the victim's session is still there");
	json_decref(cl);

	td_sync_post(e->sync, "fdcheck");
	CHECKF(td_wait_all(pids, VICTIM, 30000, "rank") == 0, "a surviving rank failed");
	fds = td_fd_settle(e->d, fd_base, 5000);
	CHECKF(fds == fd_base, "daemon holds %d fds after everyone left, %d before", fds, fd_base);
	long long hup = td_stat(e->d, "daemon.disc_hup");
	CHECKF(hup >= 1, "disc_hup %lld: the kill was not noticed", hup);
	td_stop(e->d);
	return 0;
}
