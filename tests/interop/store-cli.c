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

#define CHECK(c)                                                                  \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "store-cli: %s:%d: CHECK(%s) failed: %s\n",  \
				__FILE__, __LINE__, #c, err);                     \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

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
	CHECK(shd_sc_connect(argv[1], argv[2], 10000, &c, err, sizeof(err)) == 0);
	CHECK(shd_sc_set(c, "/c/k", "hello", 5, err, sizeof(err)) == 0);
	CHECK(shd_sc_get(c, "/c/k", 5000, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 5 && memcmp(v, "hello", 5) == 0);
	free(v);
	CHECK(shd_sc_add(c, "/c/ctr", 3, &n, err, sizeof(err)) == 0 && n == 3);
	CHECK(shd_sc_add(c, "/c/ctr", 4, &n, err, sizeof(err)) == 0 && n == 7);
	CHECK(shd_sc_compare_set(c, "/c/k", "nope", 4, "x", 1, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 5 && memcmp(v, "hello", 5) == 0);
	free(v);
	CHECK(shd_sc_compare_set(c, "/c/k", "hello", 5, "world", 5, &v, &len, err,
				 sizeof(err)) == 0);
	CHECK(len == 5 && memcmp(v, "world", 5) == 0);
	free(v);
	const char *keys[] = {"/c/k", "/c/ctr"}, *missing[] = {"/c/k", "/c/none"};
	CHECK(shd_sc_check(c, keys, 2, err, sizeof(err)) == 1);
	CHECK(shd_sc_check(c, missing, 2, err, sizeof(err)) == 0);
	CHECK(shd_sc_set(c, "/c/del", "x", 1, err, sizeof(err)) == 0);
	CHECK(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0 && n >= 3);
	CHECK(shd_sc_delete(c, "/c/del", err, sizeof(err)) == 1);
	CHECK(shd_sc_delete(c, "/c/del", err, sizeof(err)) == 0);

	/* wake-up: Python sets /py/late once it sees /c/ready */
	CHECK(shd_sc_set(c, "/c/ready", "1", 1, err, sizeof(err)) == 0);
	long t0 = ms_now();
	CHECK(shd_sc_get(c, "/py/late", 20000, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 2 && memcmp(v, "42", 2) == 0 && ms_now() - t0 >= 200);
	free(v);
	/* timeout */
	const char *never[] = {"/never"};
	t0 = ms_now();
	CHECK(shd_sc_wait(c, never, 1, 300, err, sizeof(err)) == -ETIMEDOUT);
	CHECK(ms_now() - t0 >= 280);
	/* the connection was dropped; the next call reconnects */
	CHECK(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0);
	shd_sc_close(c);
	printf("store-cli: ok\n");
	return 0;
}
