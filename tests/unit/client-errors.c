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

static int failures;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: check failed: %s (detail: %s)\n",     \
				__FILE__, __LINE__, #cond, shf_error_detail());       \
			failures++;                                                   \
		}                                                                     \
	} while (0)

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
	CHECK(unknown && *unknown);
	CHECK(strcmp(shf_strerror(0), "success") == 0);
	CHECK(strcmp(shf_strerror(5), "success") == 0);
	for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
		const char *s = shf_strerror(-api[i]);
		if (!s || !*s || strcmp(s, unknown) == 0) {
			fprintf(stderr, "no text for -%d\n", api[i]);
			failures++;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(s, shf_strerror(-api[j])) == 0) {
				fprintf(stderr, "-%d and -%d share a text\n", api[i], api[j]);
				failures++;
			}
	}
	/* -EACCES has two causes (another user's job; no access to the
	 * daemon's socket): the text names both and guesses neither, the
	 * detail says which (trial stumble 13) */
	CHECK(strstr(shf_strerror(-EACCES), "socket") != NULL);
	CHECK(strstr(shf_strerror(-EACCES), "another user") != NULL);
	CHECK(strchr(shf_strerror(-EACCES), '?') == NULL);
	CHECK(strstr(shf_strerror(-ECANCELED), "drained") != NULL);
	/* other errnos fall back to the C library's description */
	CHECK(strcmp(shf_strerror(-ENOENT), unknown) != 0);
}

static void *other_thread(void *arg)
{
	(void)arg;
	/* a fresh thread has no detail, whatever the main thread did */
	return (void *)(strcmp(shf_error_detail(), "") == 0 ? "ok" : NULL);
}

static void test_detail(void)
{
	CHECK(strcmp(shf_error_detail(), "") == 0);
	CHECK(shf_send(NULL, 0, 0, "x", 1, 0) == -EINVAL);
	CHECK(strlen(shf_error_detail()) > 0);
	pthread_t t;
	void *res = NULL;
	CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
	pthread_join(t, &res);
	CHECK(res != NULL);
}

static void test_null_args(void)
{
	struct shf_stats s;
	CHECK(shf_send(NULL, 0, 0, NULL, 0, 0) == -EINVAL);
	CHECK(shf_flush(NULL, SHF_FLUSH_ORIGIN, 0) == -EINVAL);
	CHECK(shf_epoch(NULL, 0) == -EINVAL);
	CHECK(shf_poll(NULL, 0) == -EINVAL);
	CHECK(shf_event_fd(NULL) == -EINVAL);
	CHECK(shf_rank(NULL) == -EINVAL);
	CHECK(shf_world(NULL) == -EINVAL);
	CHECK(shf_stats_get(NULL, &s) == -EINVAL);
	CHECK(shf_close(NULL) == 0);
	shf_opts_init(NULL); /* no crash */
}

static void test_open_args(const char *nosock)
{
	struct shf_ctx *const sentinel = (struct shf_ctx *)&failures;
	struct shf_ctx *c = sentinel;
	struct shf_opts o;

	shf_opts_init(&o);
	o.socket_path = nosock;
	o.rank = 0;
	o.world = 1;
	CHECK(shf_open(&o, on_msg, NULL, NULL) == -EINVAL);
	CHECK(shf_open(&o, NULL, NULL, &c) == -EINVAL && c == sentinel);

	o.version = SHF_API_VERSION + 1;
	CHECK(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.version = SHF_API_VERSION;

	o.timeout_ms = -2;
	CHECK(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.timeout_ms = 0;

	o.ring_bytes = 3000;
	CHECK(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.ring_bytes = 1u << 31;
	CHECK(shf_open(&o, on_msg, NULL, &c) == -EINVAL && c == sentinel);
	o.ring_bytes = 0;

	static const int bad[][2] = {{1, 1}, {-1, 4}, {0, -1}, {5, 4}, {0, 0}, {-2, -2}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.rank = bad[i][0];
		o.world = bad[i][1];
		int r = shf_open(&o, on_msg, NULL, &c);
		if (r != -EINVAL || c != sentinel) {
			fprintf(stderr, "rank %d world %d: %d\n", bad[i][0], bad[i][1], r);
			failures++;
		}
	}

	/* nothing listening: -ECONNREFUSED, with the path in the detail */
	o.rank = 0;
	o.world = 1;
	CHECK(shf_open(&o, on_msg, NULL, &c) == -ECONNREFUSED && c == sentinel);
	CHECK(strstr(shf_error_detail(), nosock) != NULL);

	/* a socket file nobody listens on: the same */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", nosock);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(shf_open(&o, on_msg, NULL, &c) == -ECONNREFUSED && c == sentinel);
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
	if (failures) {
		fprintf(stderr, "client-errors: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
