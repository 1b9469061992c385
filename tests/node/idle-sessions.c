/* SPDX-License-Identifier: MIT */
/*
 * tests/node/idle-sessions.c - connections that say nothing, and sessions
 * that said HELLO and nothing more, do not live forever (issue 15, item 6).
 *
 * With hello_timeout_ms=300 and idle_timeout_ms=800: a silent connection
 * is closed after about 300 ms (counted in disc_hello); a HELLO-only
 * session gets ERROR(-ETIMEDOUT) and is closed after about 800 ms
 * (disc_idle); a session that keeps asking (a ping every 200 ms) stays for
 * 2 s; a registered client that then sends nothing on its socket for 2 s
 * is not touched.
 */
#include "tests/node/rawconn.h"

int main(void)
{
	struct td_env *e = td_init("idle-sessions", 50, TD_SOCKET_ENV);
	const char *args[] = {"--hello-timeout-ms=300", "--idle-timeout-ms=800", NULL};
	CHECK(td_start(e->d, args, NULL) == 0);
	const char *sock = e->d->sock;

	/* a registered client that holds its context, quiet, for 2 s */
	const char *holder[] = {"open", "post=open", "hold=release", "timeout=30000", NULL};
	pid_t cl = td_spawn_client("quiet", 0, 1, holder, NULL);
	CHECK(td_sync_wait(e->sync, "open.0", 10000));

	int silent = rc_connect(sock);
	int hello = rc_connect(sock);
	int busy = rc_connect(sock);
	CHECK(silent >= 0 && hello >= 0 && busy >= 0);
	CHECK(rc_hello(hello, 2000, NULL) == SHF_IPC_HELLO_OK);
	CHECK(rc_hello(busy, 2000, NULL) == SHF_IPC_HELLO_OK);
	int64_t t0 = td_now_ms(), t_silent = -1, t_hello = -1;
	int err_silent = 0, err_hello = 0;
	/* for 2 s: the busy session pings every 100 ms and must stay; the
	 * other two must be closed */
	for (int64_t end = t0 + 2000; td_now_ms() < end;) {
		CHECKF(rc_ping(busy, 2000, NULL) == SHF_IPC_CTL_REPLY,
		       "a session that keeps asking was cut off after %lld ms",
		       (long long)(td_now_ms() - t0));
		if (t_silent < 0 && rc_wait_closed(silent, 0, &err_silent) >= 0)
			t_silent = td_now_ms() - t0;
		if (t_hello < 0 && rc_wait_closed(hello, 0, &err_hello) >= 0)
			t_hello = td_now_ms() - t0;
		td_sleep_ms(100);
	}
	fprintf(stderr, "idle-sessions: silent connection closed after %lld ms, HELLO-only "
		"session after %lld ms (-1: not closed)\n", (long long)t_silent, (long long)t_hello);
	CHECKF(t_silent >= 0, "a connection without HELLO was not closed within 2 s");
	CHECKF(t_silent >= 200, "closed after %lld ms, before hello_timeout_ms",
	       (long long)t_silent);
	CHECKF(t_hello >= 0, "a HELLO-only session was not cut off within 2 s");
	CHECKF(err_hello == -ETIMEDOUT, "HELLO-only session: error %d, expected -ETIMEDOUT",
	       err_hello);
	CHECKF(t_hello >= 700, "cut off after %lld ms, before idle_timeout_ms",
	       (long long)t_hello);
	CHECKF(td_poll_exit(cl) == TD_RUNNING, "the registered client was disturbed");
	td_sync_post(e->sync, "release");
	CHECKF(td_wait(cl, 10000) == 0, "the registered client failed");
	close(silent);
	close(hello);
	close(busy);

	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	CHECKF(td_num(st, "daemon.disc_hello") == 1, "disc_hello %lld, expected 1",
	       td_num(st, "daemon.disc_hello"));
	CHECKF(td_num(st, "daemon.disc_idle") == 1, "disc_idle %lld, expected 1",
	       td_num(st, "daemon.disc_idle"));
	json_decref(st);
	CHECK(td_log_contains(e->d, "no HELLO"));
	CHECK(td_log_contains(e->d, "idle"));
	td_stop(e->d);
	return 0;
}
