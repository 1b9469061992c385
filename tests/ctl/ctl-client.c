/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-client.c - a client with known traffic, for the shufflectl
 * tests.
 *
 *   ctl-client JOB RANK WORLD COUNT LEN SYNC_DIR
 *
 * Connects to $SHF_SOCKET as rank RANK of WORLD in job JOB, sends COUNT
 * messages of LEN bytes to every rank (itself included), completes an
 * epoch (so everything everyone sent has been delivered), checks it
 * received COUNT * WORLD messages of LEN bytes, then creates
 * SYNC_DIR/<RANK>.done and stays connected until SYNC_DIR/release exists,
 * so the driver can look at it with shufflectl.  Exit 0 on success.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"

static _Atomic unsigned long long got_msgs, got_bytes, bad;
static unsigned expect_len;

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg;
	(void)dst;
	const unsigned char *p = data;
	if (len != expect_len || type != 7 || (len > 0 && p[0] != (unsigned char)src))
		bad++;
	got_msgs++;
	got_bytes += len;
}

static int die(const char *what, int r)
{
	fprintf(stderr, "ctl-client: %s: %s (%s)\n", what, shf_strerror(r), shf_error_detail());
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: ctl-client JOB RANK WORLD COUNT LEN SYNC_DIR\n");
		return 2;
	}
	const char *job = argv[1], *sync = argv[6];
	int rank = atoi(argv[2]), world = atoi(argv[3]), count = atoi(argv[4]);
	expect_len = (unsigned)atoi(argv[5]);

	struct shf_opts o;
	shf_opts_init(&o);
	o.job = job;
	o.rank = rank;
	o.world = world;
	o.timeout_ms = 30000;
	struct shf_ctx *c = NULL;
	int r = shf_open(&o, on_msg, NULL, &c);
	if (r < 0)
		return die("shf_open", r);

	unsigned char *buf = calloc(1, expect_len ? expect_len : 1);
	if (!buf)
		return 1;
	buf[0] = (unsigned char)rank; /* the receiver checks the source */
	for (int i = 0; i < count; i++) {
		for (int dst = 0; dst < world; dst++) {
			r = shf_send(c, dst, 7, buf, expect_len, 0);
			if (r < 0)
				return die("shf_send", r);
		}
	}
	if ((r = shf_flush(c, SHF_FLUSH_REMOTE, 30000)) < 0)
		return die("shf_flush", r);
	if ((r = shf_epoch(c, 30000)) < 0)
		return die("shf_epoch", r);
	unsigned long long want = (unsigned long long)count * (unsigned long long)world;
	if (got_msgs != want || got_bytes != want * expect_len || bad) {
		fprintf(stderr, "ctl-client %d: received %llu messages (%llu bytes, %llu bad), "
			"expected %llu\n", rank, (unsigned long long)got_msgs,
			(unsigned long long)got_bytes, (unsigned long long)bad, want);
		return 1;
	}

	char path[512];
	snprintf(path, sizeof(path), "%s/%d.done", sync, rank);
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fclose(f);
	snprintf(path, sizeof(path), "%s/release", sync);
	for (int i = 0; i < 60000 / 10 && access(path, F_OK) < 0; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	free(buf);
	r = shf_close(c);
	if (r < 0)
		return die("shf_close", r);
	return 0;
}
