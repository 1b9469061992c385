/* SPDX-License-Identifier: MIT */
/*
 * client-errors: the library's error surface without a daemon.
 * - shf_strerror() has a specific text for every errno the API returns;
 * - shf_error_detail() is per thread, "" until a call of that thread fails;
 * - every entry point rejects NULL and bad arguments with -EINVAL (or the
 *   documented errno) and never writes *ctx_p on failure;
 * - shf_open() with nothing listening gives -ECONNREFUSED naming the path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <shuffle.h>
#include "tests/lib/check.h"

const char *check_detail(void)
{
	return shf_error_detail(); /* every counted failure says the library's last detail */
}



static void on_msg(void *arg, int src, int dst, uint32_t type, const void *data, uint32_t len)
{
	(void)arg, (void)src, (void)dst, (void)type, (void)data, (void)len;
}

static void test_strerror(void)
{
	static const int api[] = {EAGAIN, EMSGSIZE, EINVAL, ETIMEDOUT, ECONNREFUSED, ENOTCONN,
				  EPROTO, EACCES, EEXIST, ESRCH, EHOSTDOWN, EDEADLK, EBUSY,
				  EPERM, EDQUOT, EMFILE, ENOMEM, ECANCELED};
	const char *unknown = shf_strerror(-123456);
	EXPECT(unknown && *unknown);
	EXPECT(strcmp(shf_strerror(0), "success") == 0);
	EXPECT(strcmp(shf_strerror(5), "success") == 0);
	for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
		const char *s = shf_strerror(-api[i]);
		if (!s || !*s || strcmp(s, unknown) == 0) {
			MISS("no text for -%d", api[i]);
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(s, shf_strerror(-api[j])) == 0) {
				MISS("-%d and -%d share a text", api[i], api[j]);
			}
	}
	/* -EACCES has two causes (another user's job; no access to the
	 * daemon's socket): the text names both and guesses neither, the
	 * detail says which (trial stumble 13) */
	EXPECT(strstr(shf_strerror(-EACCES), "socket") != NULL);
	EXPECT(strstr(shf_strerror(-EACCES), "another user") != NULL);
	EXPECT(strchr(shf_strerror(-EACCES), '?') == NULL);
	EXPECT(strstr(shf_strerror(-ECANCELED), "drained") != NULL);
	/* other errnos fall back to the C library's description */
	EXPECT(strcmp(shf_strerror(-ENOENT), unknown) != 0);
}

static void *other_thread(void *arg)
{
	(void)arg;
	/* a fresh thread has no detail, whatever the main thread did */
	return (void *)(strcmp(shf_error_detail(), "") == 0 ? "ok" : NULL);
}

static void test_detail(void)
{
	EXPECT(strcmp(shf_error_detail(), "") == 0);
	EXPECT(shf_send(NULL, 0, 0, "x", 1, 0) == -EINVAL);
	EXPECT(strlen(shf_error_detail()) > 0);
	pthread_t t;
	void *res = NULL;
	EXPECT(pthread_create(&t, NULL, other_thread, NULL) == 0);
	pthread_join(t, &res);
	EXPECT(res != NULL);
}

static void test_null_args(void)
{
	struct shf_stats s;
	EXPECT(shf_send(NULL, 0, 0, NULL, 0, 0) == -EINVAL);
	EXPECT(shf_flush(NULL, SHF_FLUSH_ORIGIN, 0) == -EINVAL);
	EXPECT(shf_epoch(NULL, 0) == -EINVAL);
	EXPECT(shf_poll(NULL, 0) == -EINVAL);
	EXPECT(shf_event_fd(NULL) == -EINVAL);
	EXPECT(shf_rank(NULL) == -EINVAL);
	EXPECT(shf_world(NULL) == -EINVAL);
	EXPECT(shf_stats_get(NULL, &s) == -EINVAL);
	EXPECT(shf_close(NULL) == 0);
	shf_opts_init(NULL); /* no crash */
}

static void test_open_args(const char *nosock)
{
	struct shf_ctx *const sentinel = (struct shf_ctx *)&check_failures;
	struct shf_ctx *c = sentinel;
	struct shf_opts o;

	shf_opts_init(&o);
	o.socket_path = nosock;
	o.rank = 0;
	o.world = 1;
	EXPECT(shf_open(&o, on_msg, NULL, NULL) == -EINVAL);
	EXPECT(shf_open(&o, NULL, NULL, &c) == -EINVAL && c == sentinel);

	o.version = SHF_API_VERSION + 1;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.version = SHF_API_VERSION;

	o.timeout_ms = -2;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.timeout_ms = 0;

	o.ring_bytes = 3000;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.ring_bytes = 1u << 31;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.ring_bytes = 0;

	static const int bad[][2] = {{1, 1}, {-1, 4}, {0, -1}, {5, 4}, {0, 0}, {-2, -2}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.rank = bad[i][0];
		o.world = bad[i][1];
		int r = shf_open(&o, on_msg, NULL, &c);
		if (r != -EINVAL || c != sentinel) {
			MISS("rank %d world %d: %d", bad[i][0], bad[i][1], r);
		}
	}

	/* nothing listening: -ECONNREFUSED, with the path in the detail */
	o.rank = 0;
	o.world = 1;
	EXPECT(shf_open(&o, on_msg, NULL, &c) == -ECONNREFUSED && c == sentinel);
	EXPECT(strstr(shf_error_detail(), nosock) != NULL);

	/* a socket file nobody listens on: the same */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", nosock);
	EXPECT(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	EXPECT(shf_open(&o, on_msg, NULL, &c) == -ECONNREFUSED && c == sentinel);
	close(fd);
	unlink(nosock);
}

int main(void)
{
	char nosock[64];
	snprintf(nosock, sizeof(nosock), "/tmp/shf-client-errors-%d.sock", (int)getpid());
	unlink(nosock);
	unsetenv("SHF_DEBUG");
	test_strerror();
	test_detail();
	test_null_args();
	test_open_args(nosock);
	return check_result();
}
