/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/log-format.c - daemon/log: line format, level filtering (and
 * that filtered arguments are not evaluated), journald prefixes and their
 * auto-detection, errno preservation, control characters and truncation,
 * whole lines from concurrent writers, reopen after rotation.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/log.h"
#include "tests/lib/check.h"

static char dir[] = "/tmp/shf-log-test-XXXXXX";
static char path[256];
static char buf[4 << 20];

static void cleanup(void)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/log", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/log.1", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/stderr", dir);
	unlink(p);
	rmdir(dir);
}

/* whole file at p into buf; returns its length */
static size_t slurp(const char *p)
{
	int fd = open(p, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	CHECK(n >= 0);
	buf[n] = '\0';
	close(fd);
	return (size_t)n;
}

static void reset_file(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	close(fd);
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * Check one timestamped line "YYYY-MM-DDTHH:MM:SS.mmmZ shuffled[pid] TAG: msg"
 * and return a pointer to msg (the line ends at '\n').
 */
static const char *check_stamped(const char *line, const char *tag)
{
	static const char shape[] = "####-##-##T##:##:##.###Z shuffled[";
	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == '#')
			CHECKF(isdigit((unsigned char)line[i]), "bad timestamp in %.60s", line);
		else
			CHECKF(line[i] == shape[i], "bad shape at %zu in %.60s", i, line);
	}
	const char *p = line + sizeof(shape) - 1;
	char *end;
	long pid = strtol(p, &end, 10);
	CHECK(pid > 0 && *end == ']');
	p = end + 1;
	CHECK(*p == ' ');
	p++;
	size_t tl = strlen(tag);
	CHECKF(strncmp(p, tag, tl) == 0 && p[tl] == ':' && p[tl + 1] == ' ', "tag %s in %.80s",
		  tag, line);
	return p + tl + 2;
}

static int evaluated;
static int side_effect(void)
{
	return ++evaluated;
}

static void test_levels(void)
{
	CHECK(shd_log_level_parse("err") == SHD_LOG_ERR);
	CHECK(shd_log_level_parse("ERROR") == SHD_LOG_ERR);
	CHECK(shd_log_level_parse("warn") == SHD_LOG_WARN);
	CHECK(shd_log_level_parse("Warning") == SHD_LOG_WARN);
	CHECK(shd_log_level_parse("notice") == SHD_LOG_NOTICE);
	CHECK(shd_log_level_parse("info") == SHD_LOG_INFO);
	CHECK(shd_log_level_parse("debug") == SHD_LOG_DEBUG);
	CHECK(shd_log_level_parse("3") == 3 && shd_log_level_parse("7") == 7);
	CHECK(shd_log_level_parse("2") == -EINVAL);
	CHECK(shd_log_level_parse("8") == -EINVAL);
	CHECK(shd_log_level_parse("") == -EINVAL);
	CHECK(shd_log_level_parse(NULL) == -EINVAL);
	CHECK(shd_log_level_parse("info ") == -EINVAL);
	for (int l = SHD_LOG_ERR; l <= SHD_LOG_DEBUG; l++)
		CHECK(shd_log_level_parse(shd_log_level_name(l)) == l);
	CHECK_STR(shd_log_level_name(SHD_LOG_NOTICE), "notice");
	CHECK_STR(shd_log_level_name(2), "?");
	CHECK_STR(shd_log_level_name(99), "?");
}

static void test_format_and_filter(void)
{
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_INFO, 0) == 0);
	CHECK(shd_log_max == SHD_LOG_INFO);
	shd_err("e %d", 1);
	shd_warn("w %s", "two");
	shd_notice("n");
	shd_info("i %u", 4u);
	evaluated = 0;
	shd_debug("d %d", side_effect()); /* filtered: argument not evaluated */
	CHECK(evaluated == 0);
	shd_log(SHD_LOG_DEBUG, "also filtered %d", side_effect());
	CHECK(evaluated == 0);
	shd_log_write(SHD_LOG_DEBUG, "forced"); /* shd_log_write ignores the level */

	slurp(path);
	CHECKF(count_lines(buf) == 5, "%s", buf);
	const char *l = buf;
	const char *tags[] = { "ERR", "WARN", "NOTICE", "INFO", "DEBUG" };
	const char *msgs[] = { "e 1\n", "w two\n", "n\n", "i 4\n", "forced\n" };
	char want_pid[32];
	snprintf(want_pid, sizeof(want_pid), "shuffled[%ld]", (long)getpid());
	for (int i = 0; i < 5; i++) {
		const char *m = check_stamped(l, tags[i]);
		CHECK(strstr(l, want_pid) == l + 25);
		CHECKF(strncmp(m, msgs[i], strlen(msgs[i])) == 0, "%.40s", m);
		l = strchr(l, '\n') + 1;
	}

	/* level change: debug now shows, argument evaluated once */
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_DEBUG, 0) == 0);
	shd_debug("d %d", side_effect());
	CHECK(evaluated == 1);
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_ERR, 0) == 0);
	shd_warn("no");
	shd_err("yes");
	slurp(path);
	CHECK(count_lines(buf) == 1);
	CHECK_HAS(buf, "ERR: yes\n");

	/* bad arguments leave the setup alone */
	CHECK(shd_log_open(path, 8, 0) == -EINVAL);
	CHECK(shd_log_open(path, 2, 0) == -EINVAL);
	CHECK(shd_log_open(path, SHD_LOG_INFO, 2) == -EINVAL);
	CHECK(shd_log_open("/nonexistent/dir/log", SHD_LOG_INFO, 0) == -ENOENT);
	CHECK(shd_log_max == SHD_LOG_ERR);
	shd_err("still here");
	slurp(path);
	CHECK_HAS(buf, "ERR: still here\n");
}

static void test_content(void)
{
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_INFO, 0) == 0);

	/* errno survives logging, printed or filtered */
	errno = EAGAIN;
	shd_info("m=%s", strerror(errno));
	CHECK(errno == EAGAIN);
	errno = ENOSPC;
	shd_debug("filtered");
	CHECK(errno == ENOSPC);
	errno = EPIPE;
	CHECK(shd_log_open(path, SHD_LOG_INFO, 0) == 0);
	CHECK(errno == EPIPE);

	/* one call, one line: newlines and control chars become spaces,
	 * trailing newlines go */
	shd_info("a\nb\rc\x01" "d\te\n\n");
	/* cut, not overflowed */
	static char big[3 * SHD_LOG_LINE_MAX];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	shd_warn("%s", big);
	shd_info("after");

	slurp(path);
	CHECKF(count_lines(buf) == 4, "%u lines", count_lines(buf));
	const char *l = buf;
	const char *m = check_stamped(l, "INFO");
	char want[128];
	snprintf(want, sizeof(want), "m=%s\n", strerror(EAGAIN));
	CHECK(strncmp(m, want, strlen(want)) == 0);
	l = strchr(l, '\n') + 1;
	m = check_stamped(l, "INFO");
	CHECK(strncmp(m, "a b c d\te\n", 10) == 0);
	l = strchr(l, '\n') + 1;
	m = check_stamped(l, "WARN");
	const char *nl = strchr(l, '\n');
	CHECK((size_t)(nl - l + 1) == SHD_LOG_LINE_MAX - 1);
	CHECK(strncmp(nl - 3, "...", 3) == 0);
	CHECK(m[0] == 'x' && nl[-4] == 'x');
	l = nl + 1;
	m = check_stamped(l, "INFO");
	CHECK(strcmp(m, "after\n") == 0);
}

static void test_journald(void)
{
	char sp[300];
	struct stat st;

	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_DEBUG, 1) == 0);
	shd_err("e");
	shd_warn("w");
	shd_notice("n");
	shd_info("i");
	shd_debug("d\nd");
	slurp(path);
	CHECK_STR(buf, "<3>e\n<4>w\n<5>n\n<6>i\n<7>d d\n");

	/* auto-detection looks at stderr: point it at a file we can read */
	snprintf(sp, sizeof(sp), "%s/stderr", dir);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	CHECK(saved >= 0);
	int fd = open(sp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	close(fd);
	CHECK(fstat(STDERR_FILENO, &st) == 0);
	char js[64];
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);

	unsetenv("INVOCATION_ID");
	setenv("JOURNAL_STREAM", js, 1);
	CHECK(shd_log_open(NULL, SHD_LOG_INFO, -1) == 0);
	shd_info("journal");
	setenv("JOURNAL_STREAM", "1:1", 1); /* stderr is not the journal */
	CHECK(shd_log_open("", SHD_LOG_INFO, -1) == 0);
	shd_info("redirected");
	unsetenv("JOURNAL_STREAM");
	CHECK(shd_log_open(NULL, SHD_LOG_INFO, -1) == 0);
	shd_info("plain");
	setenv("INVOCATION_ID", "0123456789abcdef", 1);
	CHECK(shd_log_open(NULL, SHD_LOG_INFO, -1) == 0);
	shd_notice("systemd");
	CHECK(shd_log_open(NULL, SHD_LOG_INFO, 0) == 0); /* explicit 0 wins */
	shd_info("forced plain");
	/* a log file is never in journald format unless asked */
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_INFO, -1) == 0);
	shd_info("to file");
	unsetenv("INVOCATION_ID");
	shd_log_close();
	shd_info("back on stderr");

	fflush(stderr);
	CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
	close(saved);

	slurp(path);
	check_stamped(buf, "INFO");
	CHECK_HAS(buf, "INFO: to file\n");
	CHECK(count_lines(buf) == 1);

	slurp(sp);
	CHECKF(count_lines(buf) == 6, "%s", buf);
	const char *l = buf;
	CHECK(strncmp(l, "<6>journal\n", 11) == 0);
	l += 11;
	CHECK_HAS(check_stamped(l, "INFO"), "redirected");
	l = strchr(l, '\n') + 1;
	CHECK_HAS(check_stamped(l, "INFO"), "plain");
	l = strchr(l, '\n') + 1;
	CHECK(strncmp(l, "<5>systemd\n", 11) == 0);
	l += 11;
	CHECK_HAS(check_stamped(l, "INFO"), "forced plain");
	l = strchr(l, '\n') + 1;
	CHECK_HAS(check_stamped(l, "INFO"), "back on stderr");
}

/* Several processes append to one file: every line arrives whole. */
static void test_concurrent_writers(void)
{
	enum { WRITERS = 4, LINES = 1000 };
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_INFO, 0) == 0);
	char pad[600];
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	fflush(NULL);
	pid_t pids[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		CHECK(pids[w] >= 0);
		if (pids[w] == 0) {
			for (int i = 0; i < LINES; i++)
				shd_info("writer %d line %d %s end", w, i, pad);
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int st;
		CHECK(waitpid(pids[w], &st, 0) == pids[w]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	size_t n = slurp(path);
	CHECK(n < sizeof(buf) - 1);
	CHECK(count_lines(buf) == WRITERS * LINES);
	int next[WRITERS] = { 0 };
	for (char *l = buf; *l;) {
		char *nl = strchr(l, '\n');
		*nl = '\0';
		const char *m = check_stamped(l, "INFO");
		int w, i, used = 0;
		CHECKF(sscanf(m, "writer %d line %d %n", &w, &i, &used) == 2, "%.80s", m);
		CHECK(w >= 0 && w < WRITERS);
		CHECKF(i == next[w], "writer %d: line %d after %d", w, i, next[w] - 1);
		next[w]++;
		CHECK(strncmp(m + used, pad, strlen(pad)) == 0);
		CHECK(strcmp(m + used + strlen(pad), " end") == 0);
		l = nl + 1;
	}
	for (int w = 0; w < WRITERS; w++)
		CHECK(next[w] == LINES);
}

static void test_reopen(void)
{
	char rotated[300];
	snprintf(rotated, sizeof(rotated), "%s/log.1", dir);
	reset_file(path);
	CHECK(shd_log_open(path, SHD_LOG_INFO, 0) == 0);
	shd_info("before");
	CHECK(rename(path, rotated) == 0);
	shd_info("still old");
	CHECK(shd_log_reopen() == 0);
	shd_info("new");
	slurp(rotated);
	CHECK(count_lines(buf) == 2);
	CHECK_HAS(buf, "before");
	CHECK_HAS(buf, "still old");
	slurp(path);
	CHECK(count_lines(buf) == 1);
	CHECK_HAS(buf, "INFO: new\n");
	shd_log_close();
	CHECK(shd_log_reopen() == 0); /* stderr: nothing to do */
}

int main(void)
{
	CHECK(mkdtemp(dir) != NULL);
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/log", dir);
	CHECK(shd_log_max == SHD_LOG_INFO); /* the documented initial level */
	test_levels();
	test_format_and_filter();
	test_content();
	test_journald();
	test_concurrent_writers();
	test_reopen();
	printf("log-format: ok\n");
	return 0;
}
