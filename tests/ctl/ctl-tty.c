/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl-tty.c - shufflectl on a real terminal (a pseudo-terminal
 * of 80 x 24, its size set with TIOCSWINSZ, COLUMNS unset), against a
 * daemon with a job whose name is a long launcher id:
 *   - `clients`, `jobs`, `top`: no line wider than 80, and the job's name
 *     whole in every one (columns are dropped, identifiers never cut);
 *   - `stats`: no line wider than 80, and a long description's words all
 *     whole (wrapped between words, not cut);
 *   - `top` (live): `q` quits it at once, exit 0, and the terminal gets
 *     its echo and line mode back;
 *   - `--all status` and `--all jobs` (on a pipe): numbers grouped as in
 *     the one-node tables (1,200) and the uptime as a duration;
 *   - `status`: string values without JSON quotes;
 *   - `--json status`: uptime_s with at most 9 significant digits.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#define WORLD 2
#define COUNT 600 /* each rank to each: 1,200 messages out per rank */
#define JOB "1828651009.0123456789abcdef"

struct pty_run {
	int master;
	pid_t pid;
	char out[65536];
	size_t len;
};

/* argv on a new 80 x 24 pseudo-terminal as its controlling terminal. */
static void pty_start(struct pty_run *p, const char *const *argv)
{
	memset(p, 0, sizeof(*p));
	p->master = posix_openpt(O_RDWR | O_NOCTTY);
	CHECKF(p->master >= 0 && grantpt(p->master) == 0 && unlockpt(p->master) == 0,
	       "posix_openpt: %s", strerror(errno));
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	CHECK(ioctl(p->master, TIOCSWINSZ, &ws) == 0);
	const char *slave = ptsname(p->master);
	CHECK(slave);
	p->pid = td_fork();
	if (p->pid == 0) {
		setsid();
		int fd = open(slave, O_RDWR);
		if (fd < 0)
			_exit(126);
		ioctl(fd, TIOCSCTTY, 0);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
		close(p->master);
		unsetenv("COLUMNS");
		setenv("TERM", "xterm", 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
}

/* Read what the terminal shows until needle appears after `from` (NULL:
 * until the program ends) or timeout_ms pass: true when it appeared. */
static bool pty_read(struct pty_run *p, size_t from, const char *needle, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	for (;;) {
		p->out[p->len] = '\0';
		if (needle && strstr(p->out + from, needle))
			return true;
		int64_t left = end - td_now_ms();
		if (left <= 0)
			return false;
		struct pollfd pf = {.fd = p->master, .events = POLLIN};
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(p->master, p->out + p->len, sizeof(p->out) - 1 - p->len);
		if (n <= 0)
			return false; /* EIO: the program ended and closed the terminal */
		p->len += (size_t)n;
	}
}

/* The widest line of s: columns, without \r and the ANSI "home, clear". */
static size_t widest(const char *s)
{
	size_t w = 0, l = 0;
	for (; *s; s++) {
		if (*s == '\033') {
			while (*s && !isalpha((unsigned char)*s))
				s++;
			if (!*s)
				break;
			continue;
		}
		if (*s == '\n') {
			l = 0;
		} else if (*s != '\r') {
			l++;
			w = l > w ? l : w;
		}
	}
	return w;
}

/* One command on the terminal to its end: its output. */
static void pty_command(struct pty_run *p, const char *sock, const char *cmd)
{
	const char *argv[] = {td_prog("SHF_TEST_SHUFFLECTL"), "-s", sock, cmd, NULL};
	pty_start(p, argv);
	pty_read(p, 0, NULL, 10000);
	int st = td_wait(p->pid, 5000);
	CHECKF(st == 0, "%s on a terminal: exit %d\n%s", cmd, st, p->out);
	close(p->master);
}

int main(void)
{
	struct td_env *e = td_init("ctl-tty", 90, 0);
	struct td_daemon *d = e->d;
	struct pty_run p;
	int fd = posix_openpt(O_RDWR | O_NOCTTY);
	if (fd < 0)
		SKIP("no pseudo-terminals here (posix_openpt: %s)", strerror(errno));
	close(fd);
	if (!getenv("SHF_TEST_CTL_CLIENT") || !*getenv("SHF_TEST_CTL_CLIENT"))
		SKIP("no test client (client library not built): no rows to show");
	CHECK(td_start(d, NULL, NULL) == 0);
	struct td_job j = {.name = JOB, .world = WORLD, .count = COUNT, .len = 8};
	td_job_start(&j, d->sock, 0, WORLD);
	td_job_wait_done(&j, 0, WORLD);

	/* the per-row tables fit 80 columns and keep the job's name whole */
	static const char *const cmds[] = {"clients", "jobs", NULL};
	for (const char *const *c = cmds; *c; c++) {
		pty_command(&p, d->sock, *c);
		CHECKF(widest(p.out) <= 80, "%s on 80 columns: a line of %zu:\n%s", *c,
		       widest(p.out), p.out);
		CHECKF(strstr(p.out, JOB), "%s on 80 columns: the job name %s is cut:\n%s", *c, JOB,
		       p.out);
	}

	/* stats: descriptions wrapped between words */
	pty_command(&p, d->sock, "stats");
	CHECKF(widest(p.out) <= 80, "stats on 80 columns: a line of %zu", widest(p.out));
	static const char *const words[] = {"clients", "cut", "off", "because", "their", "job's",
					    "world", "did", "not", "complete", NULL};
	const char *at = strstr(p.out, "disc_timeout");
	CHECKF(at, "no disc_timeout in stats:\n%s", p.out);
	for (const char *const *w = words; *w; w++) {
		char word[40];
		td_fmt(word, sizeof(word), " %s", *w);
		const char *x = strstr(at, word);
		size_t l = strlen(word);
		CHECKF(x && (x[l] == ' ' || x[l] == '\r' || x[l] == '\n'),
		       "stats on 80 columns: the word '%s' of disc_timeout's description is cut:\n%s",
		       *w, at);
		at = x + l;
	}

	/* top, live: the job's name whole, and q quits */
	const char *top[] = {td_prog("SHF_TEST_SHUFFLECTL"), "-s", d->sock, "top", "--interval",
			     "200", NULL};
	pty_start(&p, top);
	CHECKF(pty_read(&p, 0, "(node)", 10000), "top: no table within 10 s:\n%s", p.out);
	CHECKF(strstr(p.out, JOB) && widest(p.out) <= 80,
	       "top on 80 columns: the job name cut or a line of %zu:\n%s", widest(p.out), p.out);
	CHECK(write(p.master, "q", 1) == 1);
	int st = td_wait(p.pid, 3000);
	if (st == TD_RUNNING) {
		kill(p.pid, SIGKILL);
		td_wait(p.pid, 3000);
	}
	CHECKF(st == 0, "top did not quit on q within 3 s (%d)", st);
	struct termios tm;
	CHECK(tcgetattr(p.master, &tm) == 0);
	CHECKF((tm.c_lflag & (ICANON | ECHO)) == (ICANON | ECHO),
	       "top left the terminal without echo or line mode (lflag %#x)", (unsigned)tm.c_lflag);
	close(p.master);

	/* --all: the one-node tables' number formats */
	struct td_out o;
	td_ctl(d->sock, &o, "--all", "jobs", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "2,400"),
	       "--all jobs: exit %d, no grouped MSGS_OUT 2,400:\n%s%s", o.status, o.out, o.err);
	td_out_free(&o);
	td_ctl(d->sock, &o, "--all", "status", NULL);
	CHECKF(o.status == 0 && strstr(o.out, "UPTIME ") && !strstr(o.out, "UPTIME_S") &&
		       (strstr(o.out, " ms ") || strstr(o.out, " s ")),
	       "--all status: exit %d, no UPTIME as a duration:\n%s%s", o.status, o.out, o.err);
	td_out_free(&o);

	/* status: a string is shown as itself (peer_auth  none, not "none") */
	td_ctl(d->sock, &o, "status", NULL);
	CHECKF(o.status == 0 && !strchr(o.out, '"'), "status: exit %d, a quoted value:\n%s", o.status,
	       o.out);
	td_out_free(&o);

	/* floats: %.9g */
	td_ctl(d->sock, &o, "--json", "status", NULL);
	const char *u = strstr(o.out, "\"uptime_s\":");
	CHECKF(u, "no uptime_s in\n%s", o.out);
	u += strlen("\"uptime_s\":");
	int digits = 0;
	bool lead = true;
	for (; *u && *u != ',' && *u != '\n' && *u != '}'; u++)
		if (isdigit((unsigned char)*u) && !(lead && *u == '0'))
			digits++, lead = false;
	CHECKF(digits <= 9, "uptime_s has %d significant digits (not %%.9g):\n%s", digits, o.out);
	td_out_free(&o);

	td_job_finish(&j, 0, WORLD);
	td_stop(d);
	return 0;
}
