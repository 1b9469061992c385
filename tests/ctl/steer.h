/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/steer.h - driving ctl-steer clients (ctl-steer.c) step by step.
 */
#ifndef SHF_TESTS_CTL_STEER_H
#define SHF_TESTS_CTL_STEER_H

#include <sys/types.h>

#include "tests/lib/daemon.h"

#define STEER_MAX 12

struct steer {
	char job[64];
	char dir[TD_PATH_MAX]; /* the clients' files */
	int world;
	pid_t pid[STEER_MAX];
	int step[STEER_MAX];   /* the last step asked of each rank */
};

/* Start ranks 0..world-1 of job against sock as uid (-1: this process;
 * else through setpriv), modes[r] 't' (thread) or 'p' (poll), and wait
 * until each is open (CHECKed).  Their files go under e->dir. */
void steer_start(struct steer *s, const struct td_env *e, const char *sock, const char *job,
		 int world, int uid, const char *modes);
/* Ask rank the next step (a ctl-steer command) and wait for its result:
 * the step's status (0 or negative errno); *got the messages it received,
 * detail (n bytes) shf_error_detail() after a failure (either may be
 * NULL). */
int steer_cmd(struct steer *s, int rank, const char *cmd, long long *got, char *detail,
	      size_t n);
/* The same in two halves, for collective steps (epoch) of several ranks. */
void steer_ask(struct steer *s, int rank, const char *cmd);
int steer_result(struct steer *s, int rank, long long *got, char *detail, size_t n);
/* rank's exit status (td_wait, 30 s). */
int steer_wait(struct steer *s, int rank);

#endif
