/* SPDX-License-Identifier: MIT */
/* tests/lib/daemon.c - see daemon.h. */
#include "tests/lib/daemon.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "proto/ipc.h"

extern char **environ;

#define MAX_PIDS 1024
#define MAX_DAEMONS 8

static struct td_env g;
static struct td_daemon daemons[MAX_DAEMONS];
static pid_t pids[MAX_PIDS]; /* everything we started and did not reap; 0: free */
static pid_t main_pid;

static void pid_add(pid_t p)
{
	for (int i = 0; i < MAX_PIDS; i++) {
		if (!pids[i]) {
			pids[i] = p;
			return;
		}
	}
	kill(p, SIGKILL);
	FAIL("more than %d children", MAX_PIDS);
}

static void pid_del(pid_t p)
{
	for (int i = 0; i < MAX_PIDS; i++)
		if (pids[i] == p)
			pids[i] = 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* Kill every process we started, with its process group, and remove the
 * directory. */
static void cleanup(void)
{
	if (getpid() != main_pid)
		return; /* a forked child exiting must not tear down the test */
	for (int i = 0; i < MAX_PIDS; i++) {
		if (pids[i] > 0) {
			kill(-pids[i], SIGKILL);
			kill(pids[i], SIGKILL);
		}
	}
	for (int i = 0; i < MAX_PIDS; i++) {
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
		pids[i] = 0;
	}
	if (g.dir[0] && !getenv("SHF_TEST_KEEP"))
		nftw(g.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void log_tails(void)
{
	for (int i = 0; i < MAX_DAEMONS; i++) {
		if (!daemons[i].tag[0])
			continue;
		char *t = td_read_file(daemons[i].log);
		const char *p = t + strlen(t);
		for (int seen = 0; p > t && seen <= 40;)
			seen += *--p == '\n';
		if (*t)
			fprintf(stderr, "---- %s: last lines of %s ----\n%s---- end of log ----\n",
				g.name, daemons[i].log, p == t ? p : p + 1);
		free(t);
	}
}

void check_fail_hook(void)
{
	static int once;
	if (getpid() == main_pid && !once++)
		log_tails();
}

static void on_signal(int sig)
{
	static const char msg[] = "deadline exceeded or signal received: killing everything\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	check_fail_hook();
	cleanup();
	_exit(sig == SIGALRM ? 1 : 128 + sig);
}

struct td_env *td_init(const char *name, int deadline_s, unsigned flags)
{
	snprintf(g.name, sizeof(g.name), "%s", name);
	main_pid = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* the caller's SHF_* settings must not leak into daemons or clients
	 * (glibc's unsetenv() moves the later entries down) */
	for (char **p = environ; *p;) {
		size_t l = strcspn(*p, "=");
		char var[256];
		if (!strncmp(*p, "SHF_", 4) && strncmp(*p, "SHF_TEST_", 9) && l < sizeof(var)) {
			snprintf(var, sizeof(var), "%.*s", (int)l, *p);
			unsetenv(var);
		} else {
			p++;
		}
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(g.dir, sizeof(g.dir), "%s/shf-test-XXXXXX",
		 tmp && *tmp && strlen(tmp) < 60 ? tmp : "/tmp");
	if (!mkdtemp(g.dir)) {
		g.dir[0] = '\0';
		FAIL("mkdtemp: %s", strerror(errno));
	}
	atexit(cleanup);
	td_fmt(g.sync, sizeof(g.sync), "%s/sync", g.dir);
	CHECKF(mkdir(g.sync, 0777) == 0, "mkdir %s: %s", g.sync, strerror(errno));
	setenv("SHF_TEST_SYNC", g.sync, 1);
	g.d = td_daemon("d");
	if (flags & TD_SOCKET_ENV)
		setenv("SHF_SOCKET", g.d->sock, 1);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)deadline_s);
	fprintf(stderr, "%s: temporary directory %s, deadline %d s\n", name, g.dir, deadline_s);
	return &g;
}

const char *td_prog(const char *var)
{
	const char *p = getenv(var);
	if (!p || !*p)
		SKIP("%s is not set (run through meson test; is its program built?)", var);
	if (access(p, X_OK) < 0)
		SKIP("%s=%s is not executable: %s", var, p, strerror(errno));
	return p;
}

void td_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	CHECKF(r >= 0 && (size_t)r < n, "string too long for its buffer (%d >= %zu): %s", r, n,
	       fmt);
}

int64_t td_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void td_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------ files, sync points */

char *td_read_file(const char *path)
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

void td_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECKF(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	CHECK(fclose(f) == 0);
}

bool td_log_contains(const struct td_daemon *d, const char *needle)
{
	char *t = td_read_file(d->log);
	bool found = strstr(t, needle) != NULL;
	free(t);
	return found;
}

void td_sync_post(const char *dir, const char *name)
{
	char path[TD_PATH_MAX + 64], tmp[TD_PATH_MAX + 80];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d", dir, name, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd >= 0) {
		close(fd);
		if (rename(tmp, path) == 0)
			return;
	}
	fprintf(stderr, "sync post %s: %s\n", path, strerror(errno));
}

bool td_sync_exists(const char *dir, const char *name)
{
	char path[TD_PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

bool td_sync_wait(const char *dir, const char *name, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	do {
		if (td_sync_exists(dir, name))
			return true;
		td_sleep_ms(5);
	} while (td_now_ms() < end);
	return td_sync_exists(dir, name);
}

/* ------------------------------------------------------------------ processes */

pid_t td_fork(void)
{
	fflush(NULL);
	pid_t p = fork();
	CHECKF(p >= 0, "fork: %s", strerror(errno));
	if (p == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != main_pid)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		alarm(0);
		return 0;
	}
	setpgid(p, p); /* whichever of parent and child runs first */
	pid_add(p);
	return p;
}

/* Apply "NAME=value" / "NAME=" edits to the (child's) environment. */
static void apply_env(const char *const *env)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		char name[256];
		if (!eq || (size_t)(eq - *env) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *env), *env);
		if (eq[1])
			setenv(name, eq + 1, 1);
		else
			unsetenv(name);
	}
}

static void redirect(int fd, const char *path, int flags)
{
	int f = open(path, flags | O_CLOEXEC, 0644);
	if (f >= 0) {
		dup2(f, fd);
		close(f);
	}
}

pid_t td_spawn(const char *const *argv, const char *const *env, const char *out_path,
	       const char *err_path)
{
	pid_t p = td_fork();
	if (p == 0) {
		redirect(0, "/dev/null", O_RDONLY);
		if (out_path)
			redirect(1, out_path, O_WRONLY | O_CREAT | O_TRUNC);
		if (err_path)
			redirect(2, err_path, O_WRONLY | O_CREAT | O_TRUNC);
		apply_env(env);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return p;
}

static int decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

int td_poll_exit(pid_t pid)
{
	int st;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == 0)
		return TD_RUNNING;
	if (r < 0 && errno == EINTR)
		return TD_RUNNING;
	pid_del(pid);
	return r == pid ? decode_status(st) : 255;
}

int td_wait(pid_t pid, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	do {
		int st = td_poll_exit(pid);
		if (st != TD_RUNNING)
			return st;
		td_sleep_ms(5);
	} while (td_now_ms() < end);
	fprintf(stderr, "%s: pid %d did not exit within %d ms: killing it\n", g.name, (int)pid,
		timeout_ms);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pid_del(pid);
	return -1;
}

int td_wait_all(const pid_t *p, int n, int timeout_ms, const char *what)
{
	int64_t end = td_now_ms() + timeout_ms;
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int64_t left = end - td_now_ms();
		int r = td_wait(p[i], left > 0 ? (int)left : 1);
		if (r != 0) {
			fprintf(stderr, "%s: %s %d (pid %d): %s %d\n", g.name, what, i, (int)p[i],
				r < 0 ? "timed out" : "exit status", r);
			bad++;
		}
	}
	return bad;
}

pid_t td_spawn_client_as(int uid, const char *job, int rank, int world, const char *const *args,
			 const char *const *env)
{
	const char *argv[64], *envp[40];
	char ej[128], er[32], ew[32], ru[32], rg[32];
	int n = 0, k = 0;
	if (uid >= 0) {
		/* util-linux setpriv: that uid and gid, no supplementary groups */
		snprintf(ru, sizeof(ru), "--reuid=%d", uid);
		snprintf(rg, sizeof(rg), "--regid=%d", uid);
		argv[n++] = TD_SETPRIV;
		argv[n++] = ru;
		argv[n++] = rg;
		argv[n++] = "--clear-groups";
	}
	argv[n++] = td_prog("SHF_TEST_TCLIENT");
	for (int i = 0; args && args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	snprintf(ej, sizeof(ej), "SHF_JOB=%s", job);
	snprintf(er, sizeof(er), "SHF_RANK=%d", rank);
	snprintf(ew, sizeof(ew), "SHF_WORLD=%d", world);
	envp[k++] = ej;
	envp[k++] = er;
	envp[k++] = ew;
	for (int i = 0; env && env[i] && k < 39; i++)
		envp[k++] = env[i];
	envp[k] = NULL;
	return td_spawn(argv, envp, NULL, NULL);
}

pid_t td_spawn_client(const char *job, int rank, int world, const char *const *args,
		      const char *const *env)
{
	return td_spawn_client_as(-1, job, rank, world, args, env);
}

int td_mpirun_argv(int np, const char **argv)
{
	static char npbuf[16], tmpbase[TD_PATH_MAX + 8];
	if (system("command -v mpirun >/dev/null 2>&1") != 0)
		SKIP("mpirun not found");
	snprintf(npbuf, sizeof(npbuf), "%d", np);
	snprintf(tmpbase, sizeof(tmpbase), "%s/ompi", g.dir);
	int k = 0;
	if (geteuid() == 0 && access("/usr/bin/unshare", X_OK) == 0) {
		static const char *const ns[] = {"/usr/bin/unshare", "--pid", "--fork",
						 "--kill-child",
						 "--mount-proc", /* LeakSanitizer reads /proc/PID */
						 "mpirun", NULL};
		for (; ns[k]; k++)
			argv[k] = ns[k];
	} else {
		argv[k++] = "/usr/bin/mpirun";
	}
	static const char *const fixed[] = {
		"--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1", "--mca", "btl",
		"self,vader", "--mca", "orte_tmpdir_base", NULL, "-x", "SHF_SOCKET", "-x",
		"SHF_JOB", "-x", "SHF_TEST_SYNC", "-np", NULL, NULL};
	for (int i = 0; i < (int)(sizeof(fixed) / sizeof(fixed[0])) - 2; i++)
		argv[k++] = fixed[i] ? fixed[i] : tmpbase;
	argv[k++] = npbuf;
	argv[k] = NULL;
	return k;
}

/* ------------------------------------------------------------------ daemons */

struct td_daemon *td_daemon(const char *tag)
{
	struct td_daemon *d = NULL;
	for (int i = 0; i < MAX_DAEMONS && !d; i++)
		if (!strcmp(daemons[i].tag, tag) || !daemons[i].tag[0])
			d = &daemons[i];
	CHECKF(d, "more than %d daemons", MAX_DAEMONS);
	if (d->tag[0])
		return d;
	char base[TD_PATH_MAX];
	snprintf(d->tag, sizeof(d->tag), "%s", tag);
	td_fmt(base, sizeof(base), "%s/%s", g.dir, tag);
	CHECKF(mkdir(base, 0755) == 0, "mkdir %s: %s", base, strerror(errno));
	snprintf(d->run, sizeof(d->run), "%.150s/run", base);
	snprintf(d->sock, sizeof(d->sock), "%.150s/run/shuffled.sock", base);
	snprintf(d->log, sizeof(d->log), "%.150s/log", base);
	CHECKF(strlen(d->sock) < sizeof(((struct sockaddr_un *)0)->sun_path),
	       "socket path %s too long", d->sock);
	return d;
}

static bool has_arg(const char *const *args, const char *name)
{
	for (; args && *args; args++)
		if (!strncmp(*args, name, strlen(name)))
			return true;
	return false;
}

pid_t td_spawn_daemon(struct td_daemon *d, const char *const *args, const char *const *env)
{
	const char *argv[64], *envp[32] = {"SHF_SOCKET="}; /* ours is for the clients */
	char rt[TD_PATH_MAX + 32], lf[TD_PATH_MAX + 32];
	int n = 0, k = 1;
	snprintf(rt, sizeof(rt), "--runtime-dir=%s", d->run);
	snprintf(lf, sizeof(lf), "--log-file=%s", d->log);
	argv[n++] = td_prog("SHF_TEST_SHUFFLED");
	argv[n++] = rt;
	argv[n++] = lf;
	argv[n++] = "--no-config"; /* not the machine's file; a --config in args wins */
	if (!has_arg(args, "--rendezvous"))
		argv[n++] = "--rendezvous=none";
	if (!has_arg(args, "--node-name") && !has_arg(args, "--node_name"))
		argv[n++] = "--node-name=testnode";
	for (; args && *args; args++) {
		CHECK(n < 63);
		argv[n++] = *args;
	}
	argv[n] = NULL;
	for (; env && *env; env++) {
		CHECK(k < 31);
		envp[k++] = *env;
	}
	envp[k] = NULL;
	return td_spawn(argv, envp, NULL, NULL);
}

static int try_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int td_start(struct td_daemon *d, const char *const *args, const char *const *env)
{
	pid_t pid = td_spawn_daemon(d, args, env);
	for (int64_t end = td_now_ms() + 10000; td_now_ms() < end; td_sleep_ms(10)) {
		int st = td_poll_exit(pid), fd;
		if (st != TD_RUNNING) {
			fprintf(stderr, "%s: daemon %s exited during start-up (status %d)\n",
				g.name, d->tag, st);
			return -1;
		}
		if ((fd = try_connect(d->sock)) >= 0) {
			close(fd);
			d->pid = pid;
			return 0;
		}
	}
	fprintf(stderr, "%s: daemon %s never accepted connections on %s\n", g.name, d->tag,
		d->sock);
	kill(pid, SIGKILL);
	td_wait(pid, 5000);
	return -1;
}

void td_stop(struct td_daemon *d)
{
	CHECKF(d->pid > 0, "daemon %s is not running", d->tag);
	kill(d->pid, SIGTERM);
	int st = td_wait(d->pid, 10000);
	d->pid = 0;
	CHECKF(st == 0, "daemon %s: exit status %d after SIGTERM (0 expected)", d->tag, st);
	CHECKF(access(d->sock, F_OK) < 0, "daemon %s left its socket %s behind", d->tag, d->sock);
}

void td_kill(struct td_daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	td_wait(d->pid, 10000);
	d->pid = 0;
}

/* ------------------------------------------------------------------ shufflectl */

void td_run(const char *const *argv, const char *const *env, int timeout_ms, struct td_out *o)
{
	static unsigned seq;
	char op[TD_PATH_MAX + 32], ep[TD_PATH_MAX + 32];
	snprintf(op, sizeof(op), "%s/run-%u.out", g.dir, seq);
	snprintf(ep, sizeof(ep), "%s/run-%u.err", g.dir, seq++);
	pid_t p = td_spawn(argv, env, op, ep);
	o->status = td_wait(p, timeout_ms);
	o->out = td_read_file(op);
	o->err = td_read_file(ep);
	unlink(op);
	unlink(ep);
}

void td_out_free(struct td_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

void td_ctl(const char *sock, struct td_out *o, ...)
{
	const char *argv[32];
	int n = 0;
	argv[n++] = td_prog("SHF_TEST_SHUFFLECTL");
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
	td_run(argv, NULL, 20000, o);
}

json_t *td_ctl_json(const char *sock, const char *cmd)
{
	struct td_out o;
	td_ctl(sock, &o, "--json", cmd, NULL);
	CHECKF(o.status == 0, "shufflectl --json %s: exit %d: %s", cmd, o.status, o.err);
	json_error_t je;
	json_t *doc = json_loads(o.out, 0, &je);
	CHECKF(doc && json_is_object(doc), "shufflectl --json %s: not a JSON object: %s\n%s", cmd,
	       je.text, o.out);
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	const char *command = json_string_value(json_object_get(doc, "command"));
	CHECKF(schema && !strcmp(schema, "shuffle/1"), "%s: schema %s", cmd, schema ? schema : "-");
	CHECKF(command && !strcmp(command, cmd), "%s: command %s", cmd, command ? command : "-");
	td_out_free(&o);
	return doc;
}

/* ------------------------------------------------------------------ control socket */

/* Receive one message, waiting up to timeout_ms. */
static long recv_msg(int fd, void *buf, size_t cap, int timeout_ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return shf_ipc_recv(fd, buf, cap, NULL, NULL);
}

json_t *td_query(const struct td_daemon *d, const char *cmd)
{
	int fd = try_connect(d->sock);
	if (fd < 0) {
		fprintf(stderr, "%s: ctl connect %s: %s\n", g.name, d->sock, strerror(-fd));
		return NULL;
	}
	static _Alignas(8) char buf[SHF_IPC_MAX_MSG];
	char *text = NULL;
	size_t tlen = 0;
	json_t *doc = NULL;
	struct shf_ipc_hello hello = {SHF_IPC_VERSION, (uint32_t)getpid()};
	struct shf_ipc_hdr h;
	long n;
	int r = shf_ipc_send(fd, SHF_IPC_HELLO, 1, &hello, sizeof(hello), NULL, 0);
	if (r < 0 || (n = recv_msg(fd, buf, sizeof(buf), 5000)) <= 0) {
		fprintf(stderr, "%s: ctl hello failed\n", g.name);
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.type != SHF_IPC_HELLO_OK) {
		fprintf(stderr, "%s: ctl hello answered with type %u\n", g.name, h.type);
		goto out;
	}
	struct shf_ipc_ctl m;
	memset(&m, 0, sizeof(m));
	snprintf(m.cmd, sizeof(m.cmd), "%s", cmd);
	if (shf_ipc_send(fd, SHF_IPC_CTL, 2, &m, sizeof(m), NULL, 0) < 0)
		goto out;
	for (;;) {
		n = recv_msg(fd, buf, sizeof(buf), 5000);
		if (n <= 0) {
			fprintf(stderr, "%s: ctl %s: no answer (%ld)\n", g.name, cmd, n);
			goto out;
		}
		memcpy(&h, buf, sizeof(h));
		if (h.type != SHF_IPC_CTL_REPLY) {
			fprintf(stderr, "%s: ctl %s answered with type %u\n", g.name, cmd, h.type);
			goto out;
		}
		struct shf_ipc_ctl_reply rep;
		memcpy(&rep, buf + sizeof(h), sizeof(rep));
		size_t chunk = (size_t)n - sizeof(h) - sizeof(rep);
		char *t = realloc(text, tlen + chunk + 1);
		if (!t)
			goto out;
		text = t;
		memcpy(text + tlen, buf + sizeof(h) + sizeof(rep), chunk);
		tlen += chunk;
		text[tlen] = '\0';
		if (!rep.more)
			break;
	}
	json_error_t err;
	doc = json_loads(text, 0, &err);
	if (!doc)
		fprintf(stderr, "%s: ctl %s: bad JSON: %s\n", g.name, cmd, err.text);
out:
	free(text);
	close(fd);
	return doc;
}

long long td_num(json_t *doc, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *v = doc;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
		v = json_object_get(v, k);
	CHECKF(json_is_integer(v), "%s: not an integer in the answer", path);
	return json_integer_value(v);
}

long long td_stat(const struct td_daemon *d, const char *path)
{
	json_t *doc = td_query(d, "stats");
	CHECKF(doc, "no stats from daemon %s", d->tag);
	long long v = td_num(doc, path);
	json_decref(doc);
	return v;
}

json_t *td_client_find(json_t *doc, const char *job, int rank)
{
	json_t *a = json_object_get(doc, "clients"), *c;
	size_t i;
	json_array_foreach(a, i, c) {
		const char *j = json_string_value(json_object_get(c, "job"));
		if (j && !strcmp(j, job) && json_integer_value(json_object_get(c, "rank")) == rank)
			return c;
	}
	return NULL;
}

/* ------------------------------------------------------------------ /proc */

long td_rss_kib(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

int td_fd_count(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(dir));)
		n += de->d_name[0] != '.';
	closedir(dir);
	return n;
}

int td_fd_baseline(const struct td_daemon *d)
{
	int best = -1;
	for (int i = 0; i < 40; i++) {
		int n = td_fd_count(d->pid);
		if (n >= 0 && (best < 0 || n < best))
			best = n;
		td_sleep_ms(5);
	}
	CHECKF(best > 0, "cannot count the fds of daemon %s", d->tag);
	return best;
}

/* What each of the daemon's fds is (readlink of /proc/PID/fd/N), on stderr:
 * the evidence when a count does not settle. */
static void fd_dump(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return;
	for (struct dirent *de; (de = readdir(dir));) {
		if (de->d_name[0] == '.')
			continue;
		char p[320], target[256];
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		ssize_t k = readlink(p, target, sizeof(target) - 1);
		target[k > 0 ? k : 0] = '\0';
		fprintf(stderr, "%s:   fd %s -> %s\n", g.name, de->d_name, target);
	}
	closedir(dir);
}

int td_fd_settle(const struct td_daemon *d, int want, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	int n;
	while ((n = td_fd_count(d->pid)) != want && td_now_ms() < end)
		td_sleep_ms(10);
	if (n != want) {
		fprintf(stderr, "%s: daemon %s holds %d fds, want %d:\n", g.name, d->tag, n, want);
		fd_dump(d->pid);
	}
	return n;
}

/* ------------------------------------------------------------------ two daemons */

/* A TCP port free right now on 127.0.0.1 (the kernel's choice). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	socklen_t l = sizeof(sa);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &l) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static const char *const pair_env[] = {"FI_PROVIDER=", NULL};

static void pair_args(const struct td_pair *p, const char *name, const char *bind,
		      const char *args[13])
{
	const char *a[] = {"--node-name", name, "--rendezvous", p->rdv, "--bind", bind,
			   "--provider", "tcp", "--peer-timeout-ms", "1500",
			   "--heartbeat-ms", "200", NULL};
	memcpy(args, a, sizeof(a));
}

void td_pair_start(struct td_pair *p, bool start_b)
{
	int pa = free_port(), pb = free_port();
	CHECK(pa != pb);
	snprintf(p->bind_a, sizeof(p->bind_a), "127.0.0.1:%d", pa);
	snprintf(p->bind_b, sizeof(p->bind_b), "127.0.0.1:%d", pb);
	td_fmt(p->rdv, sizeof(p->rdv), "static:%s,%s", p->bind_a, p->bind_b);
	p->a = td_daemon("a");
	p->b = td_daemon("b");
	const char *args[13];
	pair_args(p, "a", p->bind_a, args);
	if (td_start(p->a, args, pair_env) < 0) {
		char *log = td_read_file(p->a->log);
		if (strstr(log, "fabric endpoint"))
			SKIP("no libfabric tcp endpoint on 127.0.0.1 here: %s", log);
		CHECKF(false, "daemon a did not start: %s", log);
	}
	if (start_b)
		td_pair_start_b(p);
}

void td_pair_start_b(struct td_pair *p)
{
	const char *args[13];
	pair_args(p, "b", p->bind_b, args);
	CHECK(td_start(p->b, args, pair_env) == 0);
}

void td_wait_peer_state(struct td_daemon *d, const char *state, int timeout_ms)
{
	int64_t end = td_now_ms() + timeout_ms;
	for (;;) {
		json_t *doc = td_ctl_json(d->sock, "peers");
		json_t *a = json_object_get(doc, "peers");
		const char *s = json_string_value(json_object_get(json_array_get(a, 0), "state"));
		bool ok = json_array_size(a) == 1 && s && !strcmp(s, state);
		json_decref(doc);
		if (ok)
			return;
		CHECKF(td_now_ms() < end, "daemon %s never saw its one peer %s", d->tag, state);
		td_sleep_ms(100);
	}
}

/* ------------------------------------------------------------------ ctl-client jobs */

void td_job_start(struct td_job *j, const char *sock, int first, int n)
{
	const char *client = td_prog("SHF_TEST_CTL_CLIENT");
	char env_sock[TD_PATH_MAX + 16];
	CHECK(j->world > 0 && j->world <= 64 && first >= 0 && first + n <= j->world);
	td_fmt(j->sync, sizeof(j->sync), "%s/sync-%.40s", g.dir, j->name);
	mkdir(j->sync, 0700);
	snprintf(env_sock, sizeof(env_sock), "SHF_SOCKET=%s", sock);
	for (int r = first; r < first + n; r++) {
		char rank[16], world[16], count[16], len[16], err[TD_PATH_MAX + 32];
		snprintf(rank, sizeof(rank), "%d", r);
		snprintf(world, sizeof(world), "%d", j->world);
		snprintf(count, sizeof(count), "%d", j->count);
		snprintf(len, sizeof(len), "%d", j->len);
		snprintf(err, sizeof(err), "%s/client-%d.err", j->sync, r);
		const char *argv[] = {client, j->name, rank, world, count, len, j->sync, NULL};
		j->pid[r] = td_spawn(argv, (const char *const[]){env_sock, NULL}, "/dev/null", err);
	}
}

static char *client_err(struct td_job *j, int r)
{
	char path[TD_PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/client-%d.err", j->sync, r);
	return td_read_file(path);
}

void td_job_wait_done(struct td_job *j, int first, int n)
{
	for (int r = first; r < first + n; r++) {
		char done[32];
		snprintf(done, sizeof(done), "%d.done", r);
		CHECKF(td_sync_wait(j->sync, done, 60000), "rank %d of job %s did not finish its "
		       "traffic: %s", r, j->name, client_err(j, r));
	}
}

void td_job_finish(struct td_job *j, int first, int n)
{
	td_sync_post(j->sync, "release");
	for (int r = first; r < first + n; r++) {
		int st = td_wait(j->pid[r], 30000);
		CHECKF(st == 0, "rank %d of job %s: exit status %d: %s", r, j->name, st,
		       client_err(j, r));
	}
}
