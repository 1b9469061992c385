/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/log-ratelimit.c - shd_log_rl(): a flood prints exactly `burst`
 * lines per interval, the next interval starts with "N similar messages
 * suppressed", totals are counted in rl->missed, filtered levels are
 * neither printed nor counted.  Counts are asserted, never timing: a flood
 * that happens to straddle an interval boundary (a descheduled VM) is
 * retried.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"
#include "tests/lib/check.h"

enum { INTERVAL_MS = 50, BURST = 5, FLOOD = 10000 };

static char path[] = "/tmp/shf-log-rl-XXXXXX";
static char buf[1 << 20];

static void cleanup(void)
{
	unlink(path);
}

static void slurp(void)
{
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	CHECK(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void truncate_log(void)
{
	CHECK(truncate(path, 0) == 0);
}

static unsigned count(const char *needle)
{
	unsigned n = 0;
	for (const char *p = buf; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Flood with a fresh limiter; 1 if it all happened inside one interval. */
static int flood(struct shd_ratelimit *rl)
{
	struct shd_ratelimit fresh = SHD_RATELIMIT_INIT(INTERVAL_MS, BURST);
	*rl = fresh;
	truncate_log();
	uint64_t t0 = mono_ms();
	for (int i = 0; i < FLOOD; i++)
		shd_log_rl(rl, SHD_LOG_WARN, "flood %d", i);
	/* the limiter measured its interval from the first call, after t0 */
	return mono_ms() - t0 < INTERVAL_MS;
}

int main(void)
{
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	atexit(cleanup);
	CHECK(shd_log_open(path, SHD_LOG_INFO, 0) == 0);

	struct shd_ratelimit rl;
	int tries = 0;
	while (!flood(&rl)) {
		CHECKF(++tries < 10, "10000 calls never fit in %d ms", INTERVAL_MS);
		fprintf(stderr, "flood crossed an interval boundary, retrying\n");
	}
	slurp();
	CHECKF(count("flood ") == BURST, "%u printed", count("flood "));
	for (int i = 0; i < BURST; i++) {
		char want[32];
		snprintf(want, sizeof(want), "WARN: flood %d\n", i);
		CHECK_HAS(buf, want);
	}
	CHECK(count("suppressed") == 0);
	CHECK(rl.missed == FLOOD - BURST);
	CHECK(rl.printed == BURST);

	/* next interval: the drop count comes first, then the message */
	sleep_ms(INTERVAL_MS * 2);
	truncate_log();
	shd_log_rl(&rl, SHD_LOG_WARN, "after %d", 1);
	slurp();
	char want[128];
	snprintf(want, sizeof(want), "WARN: %d similar messages suppressed\n", FLOOD - BURST);
	const char *s = strstr(buf, want);
	CHECKF(s != NULL, "%s", buf);
	const char *a = strstr(buf, "WARN: after 1\n");
	CHECK(a != NULL && a > s);
	CHECK(count("\n") == 2);
	CHECK(rl.missed == FLOOD - BURST); /* a total: not reset */

	/* an interval without drops reports nothing */
	for (int i = 0; i < BURST - 1; i++)
		shd_log_rl(&rl, SHD_LOG_WARN, "quiet %d", i);
	sleep_ms(INTERVAL_MS * 2);
	truncate_log();
	shd_log_rl(&rl, SHD_LOG_WARN, "later");
	slurp();
	CHECK(count("suppressed") == 0);
	CHECK(count("later") == 1);

	/* filtered levels are neither printed nor counted */
	struct shd_ratelimit dbg = SHD_RATELIMIT_INIT(INTERVAL_MS, BURST);
	truncate_log();
	for (int i = 0; i < 100; i++)
		shd_log_rl(&dbg, SHD_LOG_DEBUG, "dbg %d", i);
	slurp();
	CHECK(buf[0] == '\0');
	CHECK(dbg.missed == 0 && dbg.printed == 0);

	/* burst 0 silences a call site but still counts */
	struct shd_ratelimit mute = SHD_RATELIMIT_INIT(60000, 0);
	for (int i = 0; i < 10; i++)
		shd_log_rl(&mute, SHD_LOG_ERR, "muted");
	slurp();
	CHECK(strstr(buf, "muted") == NULL);
	CHECK(mute.missed == 10);

	/* errno survives the limiter, printed or not */
	errno = EBUSY;
	shd_log_rl(&mute, SHD_LOG_ERR, "muted");
	CHECK(errno == EBUSY);

	shd_log_close();
	printf("log-ratelimit: ok\n");
	return 0;
}
