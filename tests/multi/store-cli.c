/* SPDX-License-Identifier: MIT */
/*
 * tests/multi/store-cli.c - anyone who can reach the store (the tcp://
 * rendezvous): read and write its keys, as a forger would.
 *
 *   store-cli HOST:PORT get KEY          the value on stdout; exit 2 if absent
 *   store-cli HOST:PORT set KEY VALUE
 *   store-cli HOST:PORT del KEY
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "daemon/rdv/store_client.h"

int main(int argc, char **argv)
{
	char err[256] = "", host[256];
	if (argc < 4) {
		fprintf(stderr, "usage: store-cli HOST:PORT get|set|del KEY [VALUE]\n");
		return 1;
	}
	const char *colon = strrchr(argv[1], ':');
	if (!colon || (size_t)(colon - argv[1]) >= sizeof(host)) {
		fprintf(stderr, "store-cli: %s: want HOST:PORT\n", argv[1]);
		return 1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - argv[1]), argv[1]);
	struct shd_sc *c = NULL;
	int r = shd_sc_connect(host, colon + 1, 3000, &c, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "store-cli: connect %s: %s\n", argv[1], err);
		return 1;
	}
	const char *key = argv[3];
	if (!strcmp(argv[2], "get")) {
		const char *const keys[] = {key};
		r = shd_sc_check(c, keys, 1, err, sizeof(err));
		if (r == 0) {
			shd_sc_close(c);
			return 2;
		}
		void *v = NULL;
		size_t len = 0;
		if (r > 0)
			r = shd_sc_get(c, key, 3000, &v, &len, err, sizeof(err));
		if (r >= 0) {
			fwrite(v, 1, len, stdout);
			putchar('\n');
		}
		free(v);
	} else if (!strcmp(argv[2], "set") && argc == 5) {
		r = shd_sc_set(c, key, argv[4], strlen(argv[4]), err, sizeof(err));
	} else if (!strcmp(argv[2], "del")) {
		r = shd_sc_delete(c, key, err, sizeof(err));
	} else {
		fprintf(stderr, "store-cli: unknown command %s\n", argv[2]);
		r = -EINVAL;
	}
	shd_sc_close(c);
	if (r < 0) {
		fprintf(stderr, "store-cli: %s %s: %s\n", argv[2], key, err[0] ? err : strerror(-r));
		return 1;
	}
	return 0;
}
