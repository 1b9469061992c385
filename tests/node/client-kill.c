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

#include "harness.h"

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
	struct nt_env *e = nt_init(flush ? "client-kill-flush" : "client-kill-send", 100);
	CHECK(nt_daemon_start(e, NULL) == 0);
	int fd_base = nt_fd_baseline(e);

	const char *honest0[] = {"traffic", "srcs=0-2", "dsts=0-2", "prefix=3", "n=1000",
				 "wait=1", "expect_epoch=ESRCH", "ring=131072", "slow_src=3",
				 "stall=victim-killed", "post=open", "hold=fdcheck", NULL};
	const char *honest[] = {"traffic", "srcs=0-2", "dsts=0-2", "prefix=3", "n=1000",
				"wait=1", "expect_epoch=ESRCH", "post=open", "hold=fdcheck", NULL};
	const char *victim[] = {"victim", "dsts=0", "minlen=4096", "maxlen=4096", "ring=131072",
				"post=open", flush ? "victim_flush=40" : "n=100000", NULL};
	pid_t pids[WORLD];
	for (int r = 0; r < WORLD; r++)
		pids[r] = nt_spawn_client(e, "kill", r, WORLD,
					  r == VICTIM ? victim : r ? honest : honest0, NULL);
	char name[32];
	for (int r = 0; r < WORLD; r++) {
		snprintf(name, sizeof(name), "open.%d", r);
		CHECKF(nt_sync_wait(e->sync, name, 30000), "rank %d never opened", r);
	}
	/* one client's worth of fds (sampled with no session coming or going) */
	int fd_all = nt_fd_baseline(e);
	CHECKF((fd_all - fd_base) % WORLD == 0 && fd_all > fd_base,
	       "daemon fds: %d idle, %d with %d clients", fd_base, fd_all, WORLD);
	int per_client = (fd_all - fd_base) / WORLD;

	/* wait until the victim is stuck where we want it: rank 0 sits in a
	 * callback for its first message, so its relay is blocked */
	CHECK(nt_sync_wait(e->sync, flush ? "victim-flushing" : "victim-sending", 30000));
	bool stuck = false;
	for (int64_t end = nt_now_ms() + 10000; !stuck && nt_now_ms() < end; nt_sleep_ms(5)) {
		json_t *cl = nt_ctl(e, "clients");
		CHECK(cl != NULL);
		json_t *v = nt_client_find(cl, "kill", VICTIM);
		CHECKF(v != NULL, "the victim is gone before the kill");
		stuck = json_is_true(json_object_get(v, "blocked"));
		json_decref(cl);
	}
	CHECKF(stuck, "the victim's records never got stuck");
	nt_sleep_ms(200); /* into shf_send / shf_flush, and asleep there */
	CHECKF(nt_poll_exit(pids[VICTIM]) == NT_RUNNING, "the victim returned before the kill");
	kill(pids[VICTIM], SIGKILL);
	CHECK(nt_wait(pids[VICTIM], 5000) == 128 + SIGKILL);
	nt_sync_post(e->sync, "victim-killed");
	fprintf(stderr, "%s: victim killed while %s\n", e->name,
		flush ? "in shf_flush" : "blocked in shf_send");

	/* the others finish (their epoch fails with ESRCH) and wait */
	for (int r = 0; r < VICTIM; r++) {
		snprintf(name, sizeof(name), "held.%d", r);
		while (!nt_sync_exists(e->sync, name)) {
			int st = nt_poll_exit(pids[r]);
			CHECKF(st == NT_RUNNING, "rank %d exited with %d before the fd check", r, st);
			nt_sleep_ms(5);
		}
	}
	/* the victim is drained and freed: one client's fds fewer */
	int want = fd_base + (WORLD - 1) * per_client;
	int fds = nt_fd_settle(e, want, 20000);
	CHECKF(fds == want, "daemon holds %d fds after the victim died; %d expected "
	       "(%d idle + %d per client)", fds, want, fd_base, per_client);
	json_t *cl = nt_ctl(e, "clients");
	CHECK(cl != NULL);
	CHECKF(nt_client_find(cl, "kill", VICTIM) == NULL, "the victim's session is still there");
	json_decref(cl);

	nt_sync_post(e->sync, "fdcheck");
	CHECKF(nt_wait_all(pids, VICTIM, 30000, "rank") == 0, "a surviving rank failed");
	fds = nt_fd_settle(e, fd_base, 5000);
	CHECKF(fds == fd_base, "daemon holds %d fds after everyone left, %d before", fds, fd_base);
	long long hup = nt_stat(e, "daemon.disc_hup");
	CHECKF(hup >= 1, "disc_hup %lld: the kill was not noticed", hup);
	nt_daemon_stop(e);
	return 0;
}
