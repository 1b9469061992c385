/* SPDX-License-Identifier: MIT */
/*
 * tests/interop/store-cli.c - daemon/rdv/store_client.c against a TCPStore
 * served by PyTorch (tests/interop/torch-server.py runs it with HOST PORT).
 * Keys carry torch's "/" prefix so the Python side sees them unprefixed.
 * Exit 0 when every answer is what torch 1.13's server gives.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/rdv/store_client.h"
#include "tests/lib/check.h"

static char err[512];

static long ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

int main(int argc, char **argv)
{
	struct shd_sc *c;
	void *v;
	size_t len;
	int64_t n;
	if (argc != 3) {
		fprintf(stderr, "usage: store-cli HOST PORT\n");
		return 2;
	}
	CHECKF(shd_sc_connect(argv[1], argv[2], 10000, &c, err, sizeof(err)) == 0, "%s", err);
	CHECKF(shd_sc_set(c, "/c/k", "hello", 5, err, sizeof(err)) == 0, "%s", err);
	CHECKF(shd_sc_get(c, "/c/k", 5000, &v, &len, err, sizeof(err)) == 0, "%s", err);
	CHECKF(len == 5 && memcmp(v, "hello", 5) == 0, "%s", err);
	free(v);
	CHECKF(shd_sc_add(c, "/c/ctr", 3, &n, err, sizeof(err)) == 0 && n == 3, "%s", err);
	CHECKF(shd_sc_add(c, "/c/ctr", 4, &n, err, sizeof(err)) == 0 && n == 7, "%s", err);
	CHECKF(shd_sc_compare_set(c, "/c/k", "nope", 4, "x", 1, &v, &len, err, sizeof(err)) == 0, "%s", err);
	CHECKF(len == 5 && memcmp(v, "hello", 5) == 0, "%s", err);
	free(v);
	CHECKF(shd_sc_compare_set(c, "/c/k", "hello", 5, "world", 5, &v, &len, err,
				 sizeof(err)) == 0, "%s", err);
	CHECKF(len == 5 && memcmp(v, "world", 5) == 0, "%s", err);
	free(v);
	const char *keys[] = {"/c/k", "/c/ctr"}, *missing[] = {"/c/k", "/c/none"};
	CHECKF(shd_sc_check(c, keys, 2, err, sizeof(err)) == 1, "%s", err);
	CHECKF(shd_sc_check(c, missing, 2, err, sizeof(err)) == 0, "%s", err);
	CHECKF(shd_sc_set(c, "/c/del", "x", 1, err, sizeof(err)) == 0, "%s", err);
	CHECKF(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0 && n >= 3, "%s", err);
	CHECKF(shd_sc_delete(c, "/c/del", err, sizeof(err)) == 1, "%s", err);
	CHECKF(shd_sc_delete(c, "/c/del", err, sizeof(err)) == 0, "%s", err);

	/* wake-up: Python sets /py/late once it sees /c/ready */
	CHECKF(shd_sc_set(c, "/c/ready", "1", 1, err, sizeof(err)) == 0, "%s", err);
	long t0 = ms_now();
	CHECKF(shd_sc_get(c, "/py/late", 20000, &v, &len, err, sizeof(err)) == 0, "%s", err);
	CHECKF(len == 2 && memcmp(v, "42", 2) == 0 && ms_now() - t0 >= 200, "%s", err);
	free(v);
	/* timeout */
	const char *never[] = {"/never"};
	t0 = ms_now();
	CHECKF(shd_sc_wait(c, never, 1, 300, err, sizeof(err)) == -ETIMEDOUT, "%s", err);
	CHECKF(ms_now() - t0 >= 280, "%s", err);
	/* the connection was dropped; the next call reconnects */
	CHECKF(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0, "%s", err);
	shd_sc_close(c);
	printf("store-cli: ok\n");
	return 0;
}
