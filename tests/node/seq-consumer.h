/* SPDX-License-Identifier: MIT */
/*
 * tests/node/seq-consumer.h - rank 1 of the send tests (send-timeout,
 * send-bias): it opens rank 1 of a 2-rank job in poll mode and takes
 * rank 0's messages, each `len` bytes starting with a u64 sequence number,
 * the message type naming the sending thread (0 .. types-1).  Per thread
 * the numbers must come exactly once and in order.  It consumes until
 * rank 0 has written its total (a decimal line) into rfd and that many
 * have come, or timeout_ms passed.
 *
 * seq_start() forks it and opens rank 0 in the calling process: the
 * common start of those tests.
 */
#ifndef SHF_TESTS_NODE_SEQ_CONSUMER_H
#define SHF_TESTS_NODE_SEQ_CONSUMER_H

#include <stdint.h>
#include <sys/types.h>

#include "tests/lib/daemon.h"

struct seq_consumer {
	unsigned types;        /* sending threads: message types 0 .. types-1 */
	uint32_t len;          /* every message's length */
	int timeout_ms;        /* for the whole consumption */
	unsigned max_reports;  /* sequence errors printed (0: all) */
	const char *wait_sync; /* NULL, or a sync point of env to wait for first */
	struct td_env *env;
};

/* 0 when rank 0's total came, exactly that many messages arrived and
 * none was bad; 1 otherwise (the reason on stderr). */
int seq_consume(const struct seq_consumer *sc, int rfd);

/* Rank 0's delivery callback: it is sent nothing and checks nothing. */
void seq_none(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len);

struct shf_ctx;
/* Fork rank 1 (seq_consume(sc) in the child), then open rank 0 of the
 * 2-rank job of $SHF_JOB here (callback seq_none, timeout_ms).  *wfd: the
 * pipe's end for rank 0's total; *child: rank 1's pid.  Fails the test
 * (CHECK) when anything does not work. */
struct shf_ctx *seq_start(const struct seq_consumer *sc, int timeout_ms, int *wfd,
			  pid_t *child);
/* Rank 0's end: write its total into wfd, close it, and wait (90 s) for
 * rank 1: its exit status (0: every message exactly once, in order). */
int seq_finish(int wfd, pid_t child, unsigned long long total);

#endif
