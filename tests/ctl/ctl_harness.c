/* SPDX-License-Identifier: MIT */
/* tests/ctl/ctl_harness.c - see ctl_harness.h. */
#include "tests/ctl/ctl_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_PIDS 1024
#define MAX_DAEMONS 8

static struct ch_env env_state;
static pid_t pids[MAX_PIDS]; /* everything we started and did not reap */
static struct ch_daemon *daemons[MAX_DAEMONS];
static pid_t main_pid;

static void pid_add(pid_t p)
{
	for (int i = 0; i < MAX_PIDS; i++) {
		if (!pids[i]) {
			pids[i] = p;
			return;
		}
	}
}

static void pid_del(pid_t p)
{
	for (int i = 0; i < MAX_PIDS; i++)
		if (pids[i] == p)
			pids[i] = 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup(void)
{
	if (getpid() != main_pid)
		return; /* a forked child exiting must not tear down the test */
	for (int i = 0; i < MAX_PIDS; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
	}
	if (env_state.dir[0] && !getenv("SHF_TEST_KEEP"))
		nftw(env_state.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void on_signal(int sig)
{
	static const char msg[] = "ctl test: killed by a signal or its deadline; cleaning up\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	(void)sig;
	cleanup();
	_exit(1);
}

static void log_tail(const char *path, int lines)
{
	char *t = ch_read_file(path);
	size_t n = strlen(t);
	const char *p = t + n;
	int seen = 0;
	while (p > t && seen <= lines) {
		p--;
		if (*p == '\n')
			seen++;
	}
	if (*t)
		fprintf(stderr, "---- %s (last lines) ----\n%s\n", path, p == t ? p : p + 1);
	free(t);
}

void ch_fail(const char *file, int line, const char *cond, const char *why)
{
	fprintf(stderr, "%s: %s:%d: CHECK failed: %s%s%s\n", env_state.name, file, line, cond,
		why ? ": " : "", why ? why : "");
	for (int i = 0; i < MAX_DAEMONS; i++) {
		if (daemons[i]) {
			log_tail(daemons[i]->log, 30);
			log_tail(daemons[i]->err, 10);
		}
	}
	exit(1);
}

void ch_skip(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: SKIP: ", env_state.name[0] ? env_state.name : "ctl test");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(77);
}

struct ch_env *ch_init(const char *name, int deadline_s)
{
	struct ch_env *e = &env_state;
	snprintf(e->name, sizeof(e->name), "%s", name);
	main_pid = getpid();
	e->shuffled = getenv("SHF_TEST_SHUFFLED");
	e->shufflectl = getenv("SHF_TEST_SHUFFLECTL");
	if (!e->shuffled || !*e->shuffled)
		ch_skip("SHF_TEST_SHUFFLED is not set (run through meson test)");
	if (!e->shufflectl || !*e->shufflectl)
		ch_skip("SHF_TEST_SHUFFLECTL is not set: shufflectl is not built (client/meson.build "
			"lacks its executable())");
	if (access(e->shuffled, X_OK) < 0 || access(e->shufflectl, X_OK) < 0)
		ch_skip("%s or %s is not executable", e->shuffled, e->shufflectl);

	/* the caller's SHF_* settings must not leak into daemons or shufflectl */
	for (int again = 1; again;) {
		again = 0;
		for (char **p = environ; *p; p++) {
			if (!strncmp(*p, "SHF_", 4) && strncmp(*p, "SHF_TEST_", 9)) {
				char var[256];
				size_t l = strcspn(*p, "=");
				if (l >= sizeof(var))
					continue;
				memcpy(var, *p, l);
				var[l] = '\0';
				unsetenv(var);
				again = 1;
				break;
			}
		}
	}

	const char *tmp = getenv("TMPDIR");
	snprintf(e->dir, sizeof(e->dir), "%s/shf-ctl-XXXXXX",
		 tmp && *tmp && strlen(tmp) < 60 ? tmp : "/tmp");
	if (!mkdtemp(e->dir)) {
		e->dir[0] = '\0';
		ch_skip("mkdtemp: %s", strerror(errno));
	}
	atexit(cleanup);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)deadline_s);
	return e;
}

void ch_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	CHECKF(r >= 0 && (size_t)r < n, "string too long for its buffer (%d >= %zu): %s", r, n, fmt);
}

int64_t ch_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ch_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char *ch_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	if (f) {
		FILE *m = open_memstream(&buf, &len);
		CHECK(m);
		char chunk[4096];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		fclose(m);
		fclose(f);
	}
	if (!buf)
		buf = strdup("");
	CHECK(buf);
	return buf;
}

void ch_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECKF(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	CHECK(fclose(f) == 0);
}

bool ch_wait_file(const char *path, int timeout_ms)
{
	int64_t end = ch_now_ms() + timeout_ms;
	while (access(path, F_OK) < 0) {
		if (ch_now_ms() > end)
			return false;
		ch_sleep_ms(10);
	}
	return true;
}

/* Apply "NAME=value" / "NAME=" edits to the (child's) environment. */
static void apply_env(const char *const *env)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		if (!eq)
			continue;
		char name[256];
		size_t l = (size_t)(eq - *env);
		if (l >= sizeof(name))
			continue;
		memcpy(name, *env, l);
		name[l] = '\0';
		if (eq[1])
			setenv(name, eq + 1, 1);
		else
			unsetenv(name);
	}
}

static void redirect(int fd, const char *path)
{
	int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f >= 0) {
		dup2(f, fd);
		close(f);
	}
}

pid_t ch_fork(void)
{
	fflush(stdout);
	fflush(stderr);
	pid_t p = fork();
	CHECKF(p >= 0, "fork: %s", strerror(errno));
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != main_pid)
			_exit(127);
		alarm(0);
		return 0;
	}
	pid_add(p);
	return p;
}

pid_t ch_spawn(const char *const *argv, const char *const *env, const char *out_path,
	       const char *err_path)
{
	pid_t p = ch_fork();
	if (p == 0) {
		signal(SIGPIPE, SIG_DFL);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (nul >= 0) {
			dup2(nul, 0);
			close(nul);
		}
		redirect(1, out_path);
		redirect(2, err_path);
		apply_env(env);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return p;
}

int ch_wait(pid_t pid, int timeout_ms)
{
	int64_t end = ch_now_ms() + timeout_ms;
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		CHECKF(r == 0 || errno == EINTR, "waitpid %d: %s", (int)pid, strerror(errno));
		if (ch_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid_del(pid);
			return -1;
		}
		ch_sleep_ms(5);
	}
	pid_del(pid);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

void ch_run(const char *const *argv, const char *const *env, int timeout_ms, struct ch_out *o)
{
	static unsigned seq;
	char op[CH_PATH_MAX + 32], ep[CH_PATH_MAX + 32];
	snprintf(op, sizeof(op), "%s/run-%u.out", env_state.dir, seq);
	snprintf(ep, sizeof(ep), "%s/run-%u.err", env_state.dir, seq++);
	pid_t p = ch_spawn(argv, env, op, ep);
	o->status = ch_wait(p, timeout_ms);
	o->out = ch_read_file(op);
	o->err = ch_read_file(ep);
	unlink(op);
	unlink(ep);
}

void ch_out_free(struct ch_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

void ch_ctl(struct ch_env *e, const char *sock, struct ch_out *o, ...)
{
	const char *argv[32];
	int n = 0;
	argv[n++] = e->shufflectl;
	if (sock) {
		argv[n++] = "-s";
		argv[n++] = sock;
	}
	va_list ap;
	va_start(ap, o);
	for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
		CHECK(n < 31);
		argv[n++] = a;
	}
	va_end(ap);
	argv[n] = NULL;
	ch_run(argv, NULL, 20000, o);
}

json_t *ch_ctl_json(struct ch_env *e, const char *sock, const char *cmd)
{
	struct ch_out o;
	ch_ctl(e, sock, &o, "--json", cmd, NULL);
	CHECKF(o.status == 0, "shufflectl --json %s: exit %d: %s", cmd, o.status, o.err);
	json_error_t je;
	json_t *doc = json_loads(o.out, 0, &je);
	CHECKF(doc && json_is_object(doc), "shufflectl --json %s: not a JSON object: %s\n%s", cmd,
	       je.text, o.out);
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	const char *command = json_string_value(json_object_get(doc, "command"));
	CHECKF(schema && !strcmp(schema, "shuffle/1"), "%s: schema %s", cmd, schema ? schema : "-");
	CHECKF(command && !strcmp(command, cmd), "%s: command %s", cmd, command ? command : "-");
	ch_out_free(&o);
	return doc;
}

long long ch_num(json_t *doc, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *v = doc;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
		v = json_object_get(v, k);
	CHECKF(json_is_integer(v), "%s: not an integer in the answer", path);
	return json_integer_value(v);
}

/* Can we connect to path?  1 yes, 0 no. */
static int can_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return r == 0;
}

int ch_daemon_start(struct ch_env *e, struct ch_daemon *d, const char *tag,
		    const char *const *args, const char *const *env)
{
	char base[CH_PATH_MAX];
	memset(d, 0, sizeof(*d));
	snprintf(d->tag, sizeof(d->tag), "%s", tag);
	ch_fmt(base, sizeof(base), "%s/%s", e->dir, tag);
	mkdir(base, 0700);
	snprintf(d->run, sizeof(d->run), "%.150s/run", base);
	snprintf(d->sock, sizeof(d->sock), "%.150s/run/shuffled.sock", base);
	snprintf(d->log, sizeof(d->log), "%.150s/log", base);
	snprintf(d->err, sizeof(d->err), "%.150s/stderr", base);
	CHECKF(strlen(d->sock) < sizeof(((struct sockaddr_un *)0)->sun_path), "socket path %s too long",
	       d->sock);

	const char *argv[64];
	int n = 0;
	bool rdv = false;
	argv[n++] = e->shuffled;
	argv[n++] = "--runtime-dir";
	argv[n++] = d->run;
	argv[n++] = "--log-file";
	argv[n++] = d->log;
	for (; args && *args; args++) {
		CHECK(n < 60);
		rdv |= !strncmp(*args, "--rendezvous", 12);
		argv[n++] = *args;
	}
	if (!rdv) {
		argv[n++] = "--rendezvous";
		argv[n++] = "none";
	}
	argv[n] = NULL;
	d->pid = ch_spawn(argv, env, NULL, d->err);
	for (int i = 0; i < MAX_DAEMONS; i++) {
		if (!daemons[i]) {
			daemons[i] = d;
			break;
		}
	}
	int64_t end = ch_now_ms() + 10000;
	while (ch_now_ms() < end) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			pid_del(d->pid);
			fprintf(stderr, "%s: daemon %s exited during start-up (status %d)\n", e->name,
				tag, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			d->pid = 0;
			return -1;
		}
		if (can_connect(d->sock))
			return 0;
		ch_sleep_ms(10);
	}
	fprintf(stderr, "%s: daemon %s never accepted connections on %s\n", e->name, tag, d->sock);
	return -1;
}

void ch_daemon_stop(struct ch_env *e, struct ch_daemon *d)
{
	(void)e;
	if (!d->pid)
		return;
	kill(d->pid, SIGTERM);
	int st = ch_wait(d->pid, 10000);
	d->pid = 0;
	CHECKF(st == 0, "daemon %s: exit status %d after SIGTERM", d->tag, st);
	CHECKF(access(d->sock, F_OK) < 0, "daemon %s left its socket %s behind", d->tag, d->sock);
	for (int i = 0; i < MAX_DAEMONS; i++)
		if (daemons[i] == d)
			daemons[i] = NULL;
}

void ch_daemon_kill(struct ch_daemon *d)
{
	if (!d->pid)
		return;
	kill(d->pid, SIGKILL);
	ch_wait(d->pid, 10000);
	d->pid = 0;
}

const char *ch_client(void)
{
	const char *c = getenv("SHF_TEST_CTL_CLIENT");
	if (!c || !*c || access(c, X_OK) < 0)
		ch_skip("SHF_TEST_CTL_CLIENT is not set: the client library (client_dep) is not "
			"built, so the test client could not be");
	return c;
}

void ch_job_start(struct ch_env *e, struct ch_job *j, const char *sock, int first, int n)
{
	const char *client = ch_client();
	char env_sock[CH_PATH_MAX + 16];
	CHECK(j->world > 0 && j->world <= 64 && first >= 0 && first + n <= j->world);
	ch_fmt(j->sync, sizeof(j->sync), "%s/sync-%.40s", e->dir, j->name);
	mkdir(j->sync, 0700);
	snprintf(env_sock, sizeof(env_sock), "SHF_SOCKET=%s", sock);
	for (int r = first; r < first + n; r++) {
		char rank[16], world[16], count[16], len[16], err[CH_PATH_MAX + 32];
		snprintf(rank, sizeof(rank), "%d", r);
		snprintf(world, sizeof(world), "%d", j->world);
		snprintf(count, sizeof(count), "%d", j->count);
		snprintf(len, sizeof(len), "%d", j->len);
		snprintf(err, sizeof(err), "%s/client-%d.err", j->sync, r);
		const char *argv[] = {client, j->name, rank, world, count, len, j->sync, NULL};
		j->pid[r] = ch_spawn(argv, (const char *const[]){env_sock, NULL}, NULL, err);
	}
}

void ch_job_wait_done(struct ch_job *j, int first, int n)
{
	for (int r = first; r < first + n; r++) {
		char done[CH_PATH_MAX + 32];
		snprintf(done, sizeof(done), "%s/%d.done", j->sync, r);
		if (!ch_wait_file(done, 60000)) {
			char errp[CH_PATH_MAX + 32];
			snprintf(errp, sizeof(errp), "%s/client-%d.err", j->sync, r);
			char *t = ch_read_file(errp);
			CHECKF(false, "rank %d of job %s did not finish its traffic: %s", r, j->name, t);
		}
	}
}

void ch_job_finish(struct ch_job *j, int first, int n)
{
	char rel[CH_PATH_MAX + 16];
	snprintf(rel, sizeof(rel), "%s/release", j->sync);
	ch_write_file(rel, "");
	for (int r = first; r < first + n; r++) {
		int st = ch_wait(j->pid[r], 30000);
		if (st != 0) {
			char errp[CH_PATH_MAX + 32];
			snprintf(errp, sizeof(errp), "%s/client-%d.err", j->sync, r);
			char *t = ch_read_file(errp);
			CHECKF(false, "rank %d of job %s: exit status %d: %s", r, j->name, st, t);
		}
	}
}

/* ------------------------------------------------------------ Prometheus */

#define PROM_NAME "[a-zA-Z_:][a-zA-Z0-9_:]*"
#define PROM_LABEL "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
#define PROM_VALUE "(-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?|NaN|\\+Inf|-Inf)"
static const char prom_sample_re[] = "^(" PROM_NAME ")(\\{" PROM_LABEL "(," PROM_LABEL
				     ")*\\})? " PROM_VALUE "( -?[0-9]+)?$";
static const char prom_help_re[] = "^# HELP (" PROM_NAME ") .*$";
static const char prom_type_re[] = "^# TYPE (" PROM_NAME ") (counter|gauge|untyped)$";

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

void ch_prom_parse(const char *text, struct ch_prom *p)
{
	regex_t rs, rh, rt;
	CHECK(regcomp(&rs, prom_sample_re, REG_EXTENDED) == 0);
	CHECK(regcomp(&rh, prom_help_re, REG_EXTENDED) == 0);
	CHECK(regcomp(&rt, prom_type_re, REG_EXTENDED) == 0);
	memset(p, 0, sizeof(*p));
	size_t cap = 0, tcap = 0;
	char cur[160] = "";     /* family whose samples are being read */
	char helped[160] = "";  /* last HELP name */
	char (*done)[160] = NULL; /* families already finished */
	size_t ndone = 0, dcap = 0;
	char *copy = strdup(text);
	CHECK(copy);
	CHECKF(text[0] && text[strlen(text) - 1] == '\n', "exposition does not end in a newline");
	unsigned lineno = 0;
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		regmatch_t m[4];
		lineno++;
		if (!regexec(&rh, line, 2, m, 0)) {
			char name[160];
			snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
				 line + m[1].rm_so);
			for (size_t i = 0; i < ndone; i++)
				CHECKF(strcmp(done[i], name), "line %u: family %s appears twice", lineno,
				       name);
			CHECKF(strcmp(cur, name), "line %u: second HELP for %s", lineno, name);
			if (cur[0]) {
				if (ndone == dcap) {
					dcap = dcap ? 2 * dcap : 64;
					done = realloc(done, dcap * sizeof(*done));
					CHECK(done);
				}
				snprintf(done[ndone++], sizeof(done[0]), "%s", cur);
			}
			snprintf(helped, sizeof(helped), "%s", name);
			cur[0] = '\0';
			continue;
		}
		if (!regexec(&rt, line, 3, m, 0)) {
			char name[160], type[16];
			snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
				 line + m[1].rm_so);
			snprintf(type, sizeof(type), "%.*s", (int)(m[2].rm_eo - m[2].rm_so),
				 line + m[2].rm_so);
			CHECKF(!strcmp(name, helped), "line %u: TYPE %s not right after its HELP", lineno,
			       name);
			CHECKF(!strcmp(type, "counter") == has_suffix(name, "_total"),
			       "line %u: %s is a %s: counters and only counters end in _total",
			       lineno, name, type);
			if (p->ntypes == tcap) {
				tcap = tcap ? 2 * tcap : 64;
				p->types = realloc(p->types, tcap * sizeof(*p->types));
				CHECK(p->types);
			}
			snprintf(p->types[p->ntypes++], sizeof(p->types[0]), "%s %s", name, type);
			snprintf(cur, sizeof(cur), "%s", name);
			helped[0] = '\0';
			continue;
		}
		CHECKF(line[0] != '#', "line %u: a comment that is neither HELP nor TYPE: %s", lineno,
		       line);
		CHECKF(!regexec(&rs, line, 2, m, 0), "line %u does not match the exposition format: "
		       "'%s'", lineno, line);
		char name[160];
		snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
		CHECKF(cur[0] && !strcmp(name, cur), "line %u: sample of %s outside its family (%s)",
		       lineno, name, cur[0] ? cur : "none");
		const char *sp = strrchr(line, ' ');
		CHECK(sp);
		if (p->n == cap) {
			cap = cap ? 2 * cap : 256;
			p->s = realloc(p->s, cap * sizeof(*p->s));
			CHECK(p->s);
		}
		struct ch_prom_sample *s = &p->s[p->n];
		CHECKF((size_t)(sp - line) < sizeof(s->series), "line %u too long", lineno);
		snprintf(s->series, sizeof(s->series), "%.*s", (int)(sp - line), line);
		snprintf(s->family, sizeof(s->family), "%s", name);
		s->value = strtod(sp + 1, NULL);
		for (size_t i = 0; i < p->n; i++)
			CHECKF(strcmp(p->s[i].series, s->series), "line %u: series %s twice", lineno,
			       s->series);
		if (has_suffix(name, "_total"))
			CHECKF(s->value >= 0 && s->value == (double)(long long)s->value,
			       "line %u: counter %s = %s", lineno, s->series, sp + 1);
		p->n++;
	}
	free(done);
	free(copy);
	regfree(&rs);
	regfree(&rh);
	regfree(&rt);
}

bool ch_prom_has(const struct ch_prom *p, const char *series)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->s[i].series, series))
			return true;
	return false;
}

double ch_prom_get(const struct ch_prom *p, const char *series)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->s[i].series, series))
			return p->s[i].value;
	CHECKF(false, "no series %s in the exposition", series);
	return 0;
}

const char *ch_prom_type(const struct ch_prom *p, const char *family, char *buf, size_t n)
{
	size_t l = strlen(family);
	for (size_t i = 0; i < p->ntypes; i++) {
		if (!strncmp(p->types[i], family, l) && p->types[i][l] == ' ') {
			snprintf(buf, n, "%s", p->types[i] + l + 1);
			return buf;
		}
	}
	return NULL;
}

void ch_prom_free(struct ch_prom *p)
{
	free(p->s);
	free(p->types);
	memset(p, 0, sizeof(*p));
}
