/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-steer.c - a client the driver steers step by step, for the
 * top and control tests.
 *
 *   ctl-steer JOB RANK WORLD DIR MODE
 *
 * MODE "thread": callbacks on the library's thread; "poll": delivery only
 * inside a "recv" step (so what was delivered to it stays in its ring).
 * Connects to $SHF_SOCKET as rank RANK of WORLD in job JOB, creates
 * DIR/RANK.open (or DIR/RANK.res.0 "ERR DETAIL" when shf_open fails), then
 * runs step k = 1, 2, ... when DIR/RANK.cmd.k appears:
 *   send DST COUNT LEN   COUNT messages of LEN bytes to DST, then a
 *                        REMOTE flush (they sit in DST's ring)
 *   flush                a REMOTE flush
 *   epoch [MS]           shf_epoch() (timeout MS, default 30000)
 *   hold                 the next callback waits until DIR/RANK.release exists
 *                        (thread mode: its epoch stays in the delivery stage)
 *   recv N               until N messages were delivered to it in all
 *   close                shf_close(), then exit 0
 * and writes DIR/RANK.res.k: "R GOT DETAIL" - the step's result (0 or the
 * negative errno of the first call that failed), the messages delivered so
 * far, and shf_error_detail() after a failure.  A failed step does not end
 * the program: the driver may ask for more.  Files appear whole (renamed
 * into place).  Exit 1 when no step comes for 60 s.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"

static _Atomic long long got;
static _Atomic bool hold_next;
static const char *dir;
static int rank;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
	if (atomic_exchange(&hold_next, false)) {
		/* "hold": this callback waits for DIR/RANK.release (60 s at most) */
		char path[512];
		snprintf(path, sizeof(path), "%s/%d.release", dir, rank);
		for (int i = 0; i < 60000 / 5 && access(path, F_OK) != 0; i++)
			sleep_ms(5);
	}
	got++;
}

static void put(const char *name, const char *text)
{
	char path[512], tmp[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "ctl-steer: %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void result(int step, int r)
{
	char name[64], text[1200];
	snprintf(name, sizeof(name), "%d.res.%d", rank, step);
	snprintf(text, sizeof(text), "%d %lld %s\n", r, (long long)got,
		 r < 0 ? shf_error_detail() : "");
	put(name, text);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: ctl-steer JOB RANK WORLD DIR thread|poll\n");
		return 2;
	}
	rank = atoi(argv[2]);
	dir = argv[4];
	bool poll_mode = !strcmp(argv[5], "poll");
	struct shf_opts o;
	shf_opts_init(&o);
	o.job = argv[1];
	o.rank = rank;
	o.world = atoi(argv[3]);
	o.timeout_ms = 30000;
	o.delivery_thread = !poll_mode;
	struct shf_ctx *c = NULL;
	int r = shf_open(&o, on_msg, NULL, &c);
	if (r < 0) {
		result(0, r);
		return 1;
	}
	char name[64];
	snprintf(name, sizeof(name), "%d.open", rank);
	put(name, "");
	static char buf[1 << 16];
	for (int step = 1;; step++) {
		char path[512], line[256] = "";
		snprintf(path, sizeof(path), "%s/%d.cmd.%d", dir, rank, step);
		FILE *f = NULL;
		for (int i = 0; i < 60000 / 2 && !(f = fopen(path, "r")); i++)
			sleep_ms(2);
		if (!f) {
			fprintf(stderr, "ctl-steer %d: no step %d for 60 s\n", rank, step);
			return 1;
		}
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
		int dst, count, len;
		long long n;
		r = 0;
		if (sscanf(line, "send %d %d %d", &dst, &count, &len) == 3 && len >= 0 &&
		    len <= (int)sizeof(buf)) {
			for (int i = 0; i < count && r >= 0; i++)
				r = shf_send(c, dst, 7, buf, (uint32_t)len, 0);
			if (r >= 0)
				r = shf_flush(c, SHF_FLUSH_REMOTE, 30000);
		} else if (!strncmp(line, "flush", 5)) {
			r = shf_flush(c, SHF_FLUSH_REMOTE, 30000);
		} else if (!strncmp(line, "hold", 4)) {
			atomic_store(&hold_next, true);
		} else if (!strncmp(line, "epoch", 5)) {
			int ms = 30000;
			sscanf(line, "epoch %d", &ms);
			r = shf_epoch(c, ms);
		} else if (sscanf(line, "recv %lld", &n) == 1) {
			for (int i = 0; i < 30000 / 2 && got < n && r >= 0; i++) {
				if (poll_mode)
					r = shf_poll(c, 2);
				else
					sleep_ms(2);
			}
			if (r >= 0 && got < n)
				r = -ETIMEDOUT;
		} else if (!strncmp(line, "close", 5)) {
			r = shf_close(c);
			result(step, r);
			return r < 0;
		} else {
			fprintf(stderr, "ctl-steer %d: bad step '%s'\n", rank, line);
			return 2;
		}
		result(step, r < 0 ? r : 0);
	}
}
