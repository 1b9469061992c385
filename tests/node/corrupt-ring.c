/* SPDX-License-Identifier: MIT */
/*
 * tests/node/corrupt-ring.c - clients that scribble on their own shared
 * memory (malformed records, impossible lengths, corrupt head and tail
 * indices, garbage control blocks) or break the session protocol after
 * registering (among them corrupt runs and packed runs) are cut off with a
 * logged reason (tests/node/rawclient.c
 * checks ERROR(-EPROTO) and the closed socket), counted in disc_ring /
 * disc_proto, and nobody else notices:
 *   - three well-behaved ranks of the same job as a hostile rank finish
 *     their traffic (exactly once, in order);
 *   - a separate job running epochs meanwhile completes them all;
 *   - afterwards the daemon holds no more fds than before and stops
 *     cleanly.
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/daemon.h"

static const char *const ring_modes[] = {
	"bad-len", "huge-len", "bad-kind", "short-msg", "bad-dst", "neg-dst", "bad-mark-len",
	"bad-mark-what", "run-count0", "run-count2", "run-overlong", "run-pad", "run-rank",
	"run-extra", "run-packed-count2", "run-packed-len", "run-packed-pad", "run-packed-big",
	"bad-pad", "head-ahead", "head-back", "head-misaligned",
	"deliver-tail", "deliver-tail-ahead", "ctl-garbage", NULL,
};
static const char *const proto_modes[] = {"epoch-bogus", "register-twice", NULL};

int main(void)
{
	struct td_env *e = td_init("corrupt-ring", 100, TD_SOCKET_ENV);
	const char *raw = td_prog("SHF_TEST_RAWCLIENT");
	CHECK(td_start(e->d, NULL, NULL) == 0);
	int fd_base = td_fd_baseline(e->d);

	pid_t pids[64];
	int n = 0;
	/* a hostile rank 3 in a job with three honest ranks that do not send
	 * to it: their traffic must complete */
	const char *honest[] = {"traffic", "srcs=0-2", "dsts=0-2", "n=3000", "rounds=2",
				"epoch=0", "wait=1", "big=30000", NULL};
	for (int r = 0; r < 3; r++)
		pids[n++] = td_spawn_client("mixed", r, 4, honest, NULL);
	const char *raw_mixed[] = {raw, "bad-len", "mixed", "3", "4", NULL};
	const char *raw_env[] = {"SHF_RAW_EXPECT=corrupt send ring", NULL};
	pids[n++] = td_spawn(raw_mixed, raw_env, NULL, NULL);

	/* a job of its own running epochs while the others misbehave */
	const char *epochs[] = {"traffic", "n=1500", "rounds=4", NULL};
	for (int r = 0; r < 3; r++)
		pids[n++] = td_spawn_client("bystanders", r, 3, epochs, NULL);

	/* every other kind of corruption, each in a job of one */
	int n_ring = 1, n_proto = 0;
	char jobs[32][48];
	int nj = 0;
	for (int pass = 0; pass < 2; pass++) {
		const char *const *modes = pass ? proto_modes : ring_modes;
		for (int i = 0; modes[i]; i++) {
			if (!pass && !strcmp(modes[i], "bad-len"))
				continue; /* done in the mixed job */
			snprintf(jobs[nj], sizeof(jobs[nj]), "raw-%s", modes[i]);
			const char *argv[] = {raw, modes[i], jobs[nj], "0", "1", NULL};
			pids[n++] = td_spawn(argv, NULL, NULL, NULL);
			nj++;
			if (pass)
				n_proto++;
			else
				n_ring++;
		}
	}
	CHECKF(td_wait_all(pids, n, 80000, "client") == 0, "a client failed (see above)");

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	long long dr = td_num(st, "daemon.disc_ring");
	long long dp = td_num(st, "daemon.disc_proto");
	CHECKF(dr == n_ring, "disc_ring %lld, expected %d", dr, n_ring);
	CHECKF(dp == n_proto, "disc_proto %lld, expected %d", dp, n_proto);
	json_decref(st);
	/* the log of cut-offs is rate-limited (10 a second) and 27 come in one
	 * burst, so only the first is sure to be there; each client checked
	 * its own reason in the ERROR it was sent */
	CHECK(td_log_contains(e->d, "cut off: "));

	int fds = td_fd_settle(e->d, fd_base, 5000);
	CHECKF(fds == fd_base, "daemon holds %d fds, %d before", fds, fd_base);
	td_stop(e->d);
	fprintf(stderr, "corrupt-ring: %d ring corruptions and %d protocol violations cut off\n",
		n_ring, n_proto);
	return 0;
}
