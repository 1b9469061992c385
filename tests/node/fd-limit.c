/* SPDX-License-Identifier: MIT */
/*
 * tests/node/fd-limit.c - a daemon out of file descriptors does not spin
 * (issue 15, item 9).
 *
 * The daemon starts with RLIMIT_NOFILE lowered to FD_LIMIT.  Connections
 * (each HELLO'd) are opened until the daemon cannot take one more: that one
 * must be refused with ERROR(-EMFILE) and closed, not left hanging.  With
 * more connections waiting in its listen queue, the daemon's CPU time over
 * 2 s (from /proc/PID/stat) must stay below 20 % of one core and its log
 * may grow by a handful of lines at most: a behaviour bound, not a speed
 * claim (the unfixed daemon spun at 100 % and wrote tens of thousands of
 * lines).  Once the clients close, a new client gets in; accept_fd_pauses
 * counted the pauses.
 */
#include <stdlib.h>
#include <sys/resource.h>

#include "tests/node/rawconn.h"

#define FD_LIMIT 64
#define MAX_CONNS 200

static long cpu_ticks(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *s = td_read_file(path);
	char *p = strrchr(s, ')');
	CHECK(p != NULL);
	unsigned long ut = 0, st = 0;
	/* after the comm: state(3) ... utime(14) stime(15) */
	CHECK(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2);
	free(s);
	return (long)(ut + st);
}

static long log_lines(const struct td_daemon *d)
{
	char *s = td_read_file(d->log);
	long n = 0;
	for (char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

int main(void)
{
	struct td_env *e = td_init("fd-limit", 60, TD_SOCKET_ENV);
	struct rlimit old, low;
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	if (old.rlim_cur < MAX_CONNS + 64)
		SKIP("RLIMIT_NOFILE %lu too small for the test itself", (unsigned long)old.rlim_cur);
	low = old;
	low.rlim_cur = FD_LIMIT;
	/* the daemon inherits the low limit; the test keeps its own */
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	int r = td_start(e->d, NULL, NULL);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	CHECK(r == 0);
	const char *sock = e->d->sock;

	int fds[MAX_CONNS + 8], n = 0, err = 0, refused = -1, ty;
	for (;;) {
		CHECKF(n < MAX_CONNS, "%d connections and the daemon (limit %d fds) takes more",
		       n, FD_LIMIT);
		int fd = rc_connect(sock);
		CHECK(fd >= 0);
		fds[n++] = fd;
		ty = rc_hello(fd, 500, &err);
		if (ty == SHF_IPC_HELLO_OK)
			continue;
		fprintf(stderr, "fd-limit: connection %d: %s\n", n,
			ty == -ETIMEDOUT ? "no answer within 500 ms" : "refused");
		refused = fd;
		break;
	}
	/* a few more wait in the listen queue */
	for (int i = 0; i < 8; i++) {
		int fd = rc_connect(sock);
		CHECK(fd >= 0);
		fds[n++] = fd;
	}
	td_sleep_ms(100);
	long l0 = log_lines(e->d), c0 = cpu_ticks(e->d->pid);
	int64_t t0 = td_now_ms();
	td_sleep_ms(2000);
	long l1 = log_lines(e->d), c1 = cpu_ticks(e->d->pid);
	double secs = (double)(td_now_ms() - t0) / 1000.0;
	double cpu = (double)(c1 - c0) / (double)sysconf(_SC_CLK_TCK) / secs;
	fprintf(stderr, "fd-limit: %d connections; over %.2f s the daemon used %.1f %% of a core "
		"and wrote %ld log lines\n", n, secs, 100.0 * cpu, l1 - l0);
	CHECKF(cpu < 0.20, "the daemon spins out of fds: %.1f %% of a core", 100.0 * cpu);
	CHECKF(l1 - l0 <= 5, "the daemon's log grew by %ld lines in %.2f s", l1 - l0, secs);
	/* the refusal was clear: ERROR(-EMFILE), then a close */
	int64_t t = rc_wait_closed(refused, 1000, &err);
	CHECKF(t >= 0 && err == -EMFILE,
	       "the connection over the fd limit: not refused with -EMFILE (err %d)", err);

	for (int i = 0; i < n; i++)
		close(fds[i]);
	int64_t end = td_now_ms() + 10000, ms = -1;
	while (ms < 0 && td_now_ms() < end)
		if ((ms = rc_ping_fresh(sock, 2000)) < 0)
			td_sleep_ms(100);
	CHECKF(ms >= 0, "no new client got in after the others closed");
	CHECK(td_stat(e->d, "daemon.accept_fd_pauses") >= 1);
	CHECK(td_log_contains(e->d, "file descriptors"));
	td_stop(e->d);
	return 0;
}
