/* SPDX-License-Identifier: MIT */
/*
 * tests/store/store-server.c - a real shuffled with --store-listen on
 * 127.0.0.1, driven by daemon/rdv/store_client.c: every operation and its
 * answer, wait with timeout and wake-up, compare_set semantics, each bound
 * refused (connection cut, reason in the daemon's log, daemon still
 * serving), and 200 connections opened and closed without leaking a
 * descriptor (the ASan build also checks the daemon's heap at exit).
 */
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "daemon/rdv/store_client.h"
#include "proto/store.h"
#include "tests/lib/daemon.h"

static char err[512];

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static struct shd_sc *conn(const char *port)
{
	struct shd_sc *c = NULL;
	int r = shd_sc_connect("127.0.0.1", port, 5000, &c, err, sizeof(err));
	CHECKF(r == 0, "connect: %d %s", r, err);
	return c;
}

static void start(struct td_daemon *d, const char *port, const char *const *extra)
{
	char listen[64];
	const char *args[16] = {NULL};
	int n = 0;
	td_fmt(listen, sizeof(listen), "--store-listen=127.0.0.1:%s", port);
	args[n++] = listen;
	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	CHECK(td_start(d, args, NULL) == 0);
}

/* A raw connection to send hand-made requests on. */
static int raw_conn(const char *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void raw_wait(int fd, const char *key)
{
	struct shd_sp_buf b = {0}, l = {0};
	shd_sp_put_str(&l, key, strlen(key));
	struct shd_sp_req q = {.op = SHD_SP_WAIT, .n = 1, .list = l.p, .list_len = l.len};
	CHECK(shd_sp_encode(&b, SHD_SP_V1, &q) == 0);
	CHECK(write(fd, b.p, b.len) == (ssize_t)b.len);
	shd_sp_buf_free(&b);
	shd_sp_buf_free(&l);
}

static void wait_log(struct td_daemon *d, const char *needle)
{
	for (int i = 0; i < 100 && !td_log_contains(d, needle); i++)
		td_sleep_ms(50);
	CHECKF(td_log_contains(d, needle), "log lacks \"%s\"", needle);
}

static void ops(const char *port)
{
	struct shd_sc *c = conn(port);
	void *v = NULL;
	size_t len = 0;
	int64_t n = -1;
	static const char bin[] = {'a', 0, 'b', '\n'};

	CHECK(shd_sc_set(c, "k1", bin, sizeof(bin), err, sizeof(err)) == 0);
	CHECK(shd_sc_get(c, "k1", 1000, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == sizeof(bin) && memcmp(v, bin, len) == 0);
	free(v);
	CHECK(shd_sc_set(c, "k1", "", 0, err, sizeof(err)) == 0); /* empty value */
	CHECK(shd_sc_get(c, "k1", 1000, &v, &len, err, sizeof(err)) == 0 && len == 0);
	free(v);

	CHECK(shd_sc_add(c, "ctr", 5, &n, err, sizeof(err)) == 0 && n == 5);
	CHECK(shd_sc_add(c, "ctr", -7, &n, err, sizeof(err)) == 0 && n == -2);
	CHECK(shd_sc_get(c, "ctr", 1000, &v, &len, err, sizeof(err)) == 0);
	CHECK_STR((char *)v, "-2"); /* stored as decimal text, like torch */
	free(v);

	const char *both[] = {"k1", "ctr"}, *miss[] = {"k1", "nope"};
	CHECK(shd_sc_check(c, both, 2, err, sizeof(err)) == 1);
	CHECK(shd_sc_check(c, miss, 2, err, sizeof(err)) == 0);

	/* compare_set, torch 1.13's rules */
	CHECK(shd_sc_compare_set(c, "cs", "x", 1, "y", 1, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 1 && memcmp(v, "x", 1) == 0); /* missing, expected given: expected back */
	free(v);
	const char *cs[] = {"cs"};
	CHECK(shd_sc_check(c, cs, 1, err, sizeof(err)) == 0); /* ... and nothing set */
	CHECK(shd_sc_compare_set(c, "cs", "", 0, "y", 1, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 1 && memcmp(v, "y", 1) == 0); /* missing, expected empty: created */
	free(v);
	CHECK(shd_sc_compare_set(c, "cs", "zz", 2, "w", 1, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 1 && memcmp(v, "y", 1) == 0); /* mismatch: current value back */
	free(v);
	CHECK(shd_sc_compare_set(c, "cs", "y", 1, "w2", 2, &v, &len, err, sizeof(err)) == 0);
	CHECK(len == 2 && memcmp(v, "w2", 2) == 0); /* match: swapped */
	free(v);

	CHECK(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0 && n == 3);
	CHECK(shd_sc_delete(c, "cs", err, sizeof(err)) == 1);
	CHECK(shd_sc_delete(c, "cs", err, sizeof(err)) == 0);
	CHECK(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0 && n == 2);

	/* wait: timeout, then wake-up by another client */
	const char *late[] = {"late"};
	int64_t t0 = td_now_ms();
	int r = shd_sc_wait(c, late, 1, 300, err, sizeof(err));
	int64_t dt = td_now_ms() - t0;
	CHECKF(r == -ETIMEDOUT && dt >= 280 && dt < 2000, "r %d dt %lld", r, (long long)dt);
	CHECK_HAS(err, "timed out");
	r = shd_sc_get(c, "late", 200, &v, &len, err, sizeof(err));
	CHECK(r == -ETIMEDOUT);
	pid_t pid = td_fork();
	if (pid == 0) {
		struct shd_sc *o = conn(port);
		td_sleep_ms(400);
		_exit(shd_sc_set(o, "late", "1", 1, err, sizeof(err)) == 0 ? 0 : 1);
	}
	t0 = td_now_ms();
	r = shd_sc_wait(c, late, 1, 10000, err, sizeof(err)); /* reconnects first */
	dt = td_now_ms() - t0;
	CHECKF(r == 0 && dt >= 300, "r %d (%s) dt %lld", r, err, (long long)dt);
	CHECK(td_wait(pid, 5000) == 0);
	shd_sc_close(c);
}

static void bounds(struct td_daemon *d, const char *port)
{
	struct shd_sc *c = conn(port);
	char key[80], val[2048];
	memset(key, 'k', sizeof(key));
	key[65] = 0;
	memset(val, 'v', sizeof(val));
	int r = shd_sc_set(c, key, "v", 1, err, sizeof(err));
	CHECKF(r == -ECONNRESET, "%d %s", r, err);
	CHECK_HAS(err, "closed the connection");
	wait_log(d, "key longer than store_max_key_bytes");
	r = shd_sc_set(c, "big", val, 1025, err, sizeof(err));
	CHECKF(r == -ECONNRESET, "%d %s", r, err);
	wait_log(d, "value longer than store_max_value_bytes");
	CHECK(shd_sc_set(c, "fits", val, 1024, err, sizeof(err)) == 0);

	for (int i = 1; i < 50; i++) {
		char k[32];
		td_fmt(k, sizeof(k), "key%d", i);
		CHECKF(shd_sc_set(c, k, "x", 1, err, sizeof(err)) == 0, "%d: %s", i, err);
	}
	CHECK(shd_sc_set(c, "key1", "again", 5, err, sizeof(err)) == 0); /* replace: fine */
	r = shd_sc_set(c, "one-too-many", "x", 1, err, sizeof(err));
	CHECKF(r == -ECONNRESET, "%d %s", r, err);
	wait_log(d, "store_max_keys");
	int64_t n = 0;
	r = shd_sc_add(c, "new-counter", 1, &n, err, sizeof(err));
	CHECK(r == -ECONNRESET);

	/* waiters: 3 pending allowed, the 4th connection is cut */
	int w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = raw_conn(port);
		raw_wait(w[i], "never");
	}
	uint8_t b;
	CHECK(recv(w[3], &b, 1, 0) == 0); /* cut off */
	wait_log(d, "store_max_waiters");
	/* a cancelled waiter (connection closed) frees its slot */
	close(w[0]);
	td_sleep_ms(100);
	w[0] = raw_conn(port);
	raw_wait(w[0], "key1"); /* exists: answered at once, no slot */
	CHECK(recv(w[0], &b, 1, 0) == 1 && b == 0);
	close(w[3]);
	w[3] = raw_conn(port);
	raw_wait(w[3], "never");
	td_sleep_ms(100);
	CHECK(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0 && n == 50);

	/* connections: 20 in all; we hold c and w[0..3] */
	int extra[16], k = 0;
	for (; k < 15; k++)
		extra[k] = raw_conn(port);
	int over = raw_conn(port);
	CHECK(recv(over, &b, 1, 0) == 0);
	wait_log(d, "store_max_conns");
	close(over);
	for (int i = 0; i < k; i++)
		close(extra[i]);
	for (int i = 0; i < 4; i++)
		close(w[i]);
	td_sleep_ms(100);
	CHECK(shd_sc_num_keys(c, &n, err, sizeof(err)) == 0 && n == 50);
	shd_sc_close(c);
	/* a connection refused by the daemon shows as -ECONNREFUSED elsewhere */
}

static void churn(struct td_daemon *d, const char *port)
{
	int base = td_fd_baseline(d);
	for (int i = 0; i < 200; i++) {
		struct shd_sc *c = conn(port);
		int64_t n;
		CHECK(shd_sc_add(c, "churn", 1, &n, err, sizeof(err)) == 0 && n == i + 1);
		if (i % 3 == 0) { /* leave a waiter behind on a third of them */
			const char *k[] = {"never"};
			CHECK(shd_sc_wait(c, k, 1, 1, err, sizeof(err)) == -ETIMEDOUT);
		}
		shd_sc_close(c);
	}
	int now = td_fd_settle(d, base, 5000);
	CHECKF(now == base, "daemon fds %d, was %d", now, base);
}

int main(void)
{
	td_init("store-server", 120, 0);
	td_prog("SHF_TEST_SHUFFLED");
	char p1[16], p2[16];
	td_fmt(p1, sizeof(p1), "%d", free_port());
	td_fmt(p2, sizeof(p2), "%d", free_port());

	/* nothing listening: refused, fast */
	struct shd_sc *c = NULL;
	CHECK(shd_sc_connect("127.0.0.1", p1, 2000, &c, err, sizeof(err)) == -ECONNREFUSED);

	struct td_daemon *d = td_daemon("d");
	start(d, p1, NULL);
	ops(p1);
	churn(d, p1);

	struct td_daemon *b = td_daemon("b");
	static const char *const lim[] = {"--store-max-keys=50", "--store-max-key-bytes=64",
					  "--store-max-value-bytes=1024", "--store-max-conns=20",
					  "--store-max-waiters=3", NULL};
	start(b, p2, lim);
	bounds(b, p2);
	td_stop(b);
	td_stop(d);
	printf("store-server: ok\n");
	return 0;
}
