/* SPDX-License-Identifier: MIT */
/* tests/node/harness.c - see harness.h. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/ipc.h"

extern char **environ;

#define NT_MAX_CHILDREN 512

static struct nt_env g_env;
static bool g_inited;
static pid_t g_children[NT_MAX_CHILDREN]; /* 0: free slot */
static volatile sig_atomic_t g_cleaning;

int64_t nt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void nt_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void child_forget(pid_t pid)
{
	for (int i = 0; i < NT_MAX_CHILDREN; i++)
		if (g_children[i] == pid)
			g_children[i] = 0;
}

static void child_remember(pid_t pid)
{
	for (int i = 0; i < NT_MAX_CHILDREN; i++)
		if (g_children[i] == 0) {
			g_children[i] = pid;
			return;
		}
	fprintf(stderr, "harness: too many children\n");
	kill(pid, SIGKILL);
	_exit(1);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Kill every process we started (each leads its own process group, so
 * grandchildren such as mpirun's ranks go too) and remove the directory. */
static void cleanup(void)
{
	if (g_cleaning)
		return;
	g_cleaning = 1;
	for (int i = 0; i < NT_MAX_CHILDREN; i++) {
		if (g_children[i] > 0) {
			kill(-g_children[i], SIGKILL);
			kill(g_children[i], SIGKILL);
		}
	}
	for (int i = 0; i < NT_MAX_CHILDREN; i++) {
		if (g_children[i] > 0)
			waitpid(g_children[i], NULL, 0);
		g_children[i] = 0;
	}
	g_env.daemon = 0;
	if (g_inited && g_env.dir[0] && !getenv("NT_KEEP"))
		nftw(g_env.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void on_signal(int sig)
{
	static const char msg[] = "harness: deadline exceeded or signal received: "
				  "killing everything\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	if (g_inited)
		nt_log_tail(&g_env, 40);
	cleanup();
	_exit(sig == SIGALRM ? 1 : 128 + sig);
}

void nt_log_tail(struct nt_env *e, int lines)
{
	FILE *f = fopen(e->log, "r");
	if (!f)
		return;
	/* keep the last `lines` lines in a ring of line buffers */
	enum { W = 400 };
	char (*ring)[W] = calloc((size_t)lines, W);
	if (!ring) {
		fclose(f);
		return;
	}
	int n = 0;
	while (fgets(ring[n % lines], W, f))
		n++;
	fclose(f);
	fprintf(stderr, "---- %s: last lines of %s ----\n", e->name, e->log);
	for (int i = n > lines ? n - lines : 0; i < n; i++)
		fputs(ring[i % lines], stderr);
	fprintf(stderr, "---- end of log ----\n");
	free(ring);
}

void nt_fail(const char *file, int line, const char *cond, const char *why)
{
	fprintf(stderr, "%s:%d: CHECK(%s) failed%s%s\n", file, line, cond, why ? ": " : "",
		why ? why : "");
	if (g_inited)
		nt_log_tail(&g_env, 40);
	cleanup();
	exit(1);
}

void nt_skip(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "SKIP: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup();
	exit(77);
}

struct nt_env *nt_init(const char *name, int deadline_s)
{
	struct nt_env *e = &g_env;
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(e->name, sizeof(e->name), "%s", name);
	const char *base = getenv("NT_TMPDIR");
	/* the socket path must fit sun_path (108 bytes) */
	if (snprintf(e->dir, 64, "%s/shf-node-XXXXXX", base && *base ? base : "/tmp") >= 64) {
		fprintf(stderr, "%s: NT_TMPDIR too long (at most 46 bytes)\n", name);
		exit(1);
	}
	if (!mkdtemp(e->dir)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", name, e->dir, strerror(errno));
		exit(1);
	}
	if (snprintf(e->run, sizeof(e->run), "%s/run", e->dir) >= (int)sizeof(e->run) ||
	    snprintf(e->sock, sizeof(e->sock), "%s/shuffled.sock", e->run) >= (int)sizeof(e->sock) ||
	    snprintf(e->sync, sizeof(e->sync), "%s/sync", e->dir) >= (int)sizeof(e->sync) ||
	    snprintf(e->log, sizeof(e->log), "%s/shuffled.log", e->dir) >= (int)sizeof(e->log))
		exit(1); /* cannot happen: dir is short */
	if (mkdir(e->sync, 0777) < 0) {
		fprintf(stderr, "%s: mkdir %s: %s\n", name, e->sync, strerror(errno));
		exit(1);
	}
	g_inited = true;
	atexit(cleanup);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)deadline_s);
	fprintf(stderr, "%s: temporary directory %s, deadline %d s\n", name, e->dir, deadline_s);
	return e;
}

const char *nt_prog(const char *var)
{
	const char *p = getenv(var);
	if (!p || !*p)
		nt_skip("%s is not set (run through meson test)", var);
	if (access(p, X_OK) < 0)
		nt_skip("%s=%s is not executable: %s", var, p, strerror(errno));
	return p;
}

/* ------------------------------------------------------------------ processes */

static char **make_env(struct nt_env *e, const char *const *extra)
{
	size_t n = 0, k = 0;
	while (environ[n])
		n++;
	while (extra && extra[k])
		k++;
	char **env = calloc(n + k + 3, sizeof(*env));
	if (!env)
		return NULL;
	size_t o = 0;
	static char sock[NT_PATH_MAX + 16], sync[NT_PATH_MAX + 16];
	snprintf(sock, sizeof(sock), "SHF_SOCKET=%s", e->sock);
	snprintf(sync, sizeof(sync), "SHF_TEST_SYNC=%s", e->sync);
	const char *over[] = {sock, sync};
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool replaced = false;
		for (size_t j = 0; j < 2 && !replaced; j++)
			replaced = !strncmp(over[j], environ[i], nl) && over[j][nl] == '=';
		for (size_t j = 0; j < k && !replaced; j++)
			replaced = !strncmp(extra[j], environ[i], nl) && extra[j][nl] == '=';
		if (!replaced)
			env[o++] = environ[i];
	}
	env[o++] = sock;
	env[o++] = sync;
	for (size_t j = 0; j < k; j++) {
		const char *eq = strchr(extra[j], '=');
		if (eq && eq[1] == '\0')
			continue; /* "NAME=": removed */
		env[o++] = (char *)extra[j];
	}
	env[o] = NULL;
	return env;
}

pid_t nt_spawn(struct nt_env *e, const char *const *argv, const char *const *env)
{
	char **envp = make_env(e, env);
	CHECK(envp != NULL);
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	CHECKF(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		alarm(0);
		execve(argv[0], (char *const *)argv, envp);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* whichever of parent and child runs first */
	free(envp);
	child_remember(pid);
	return pid;
}

static int decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

int nt_wait(pid_t pid, int timeout_ms)
{
	int64_t end = nt_now_ms() + timeout_ms;
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			child_forget(pid);
			return decode_status(st);
		}
		if (r < 0 && errno != EINTR) {
			child_forget(pid);
			return 255;
		}
		if (nt_now_ms() >= end)
			break;
		nt_sleep_ms(5);
	}
	fprintf(stderr, "%s: pid %d did not exit within %d ms: killing it\n", g_env.name,
		(int)pid, timeout_ms);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	child_forget(pid);
	return -1;
}

int nt_poll_exit(pid_t pid)
{
	int st;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == 0)
		return NT_RUNNING;
	child_forget(pid);
	return r == pid ? decode_status(st) : 255;
}

int nt_wait_all(const pid_t *pids, int n, int timeout_ms, const char *what)
{
	int64_t end = nt_now_ms() + timeout_ms;
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int64_t left = end - nt_now_ms();
		int r = nt_wait(pids[i], left > 0 ? (int)left : 1);
		if (r != 0) {
			fprintf(stderr, "%s: %s %d (pid %d): %s %d\n", g_env.name, what, i,
				(int)pids[i], r < 0 ? "timed out" : "exit status", r);
			bad++;
		}
	}
	return bad;
}

/* ------------------------------------------------------------------ daemon */

pid_t nt_daemon_spawn(struct nt_env *e, const char *const *args)
{
	const char *shuffled = nt_prog("SHF_TEST_SHUFFLED");
	const char *argv[64];
	int n = 0;
	static char rt[NT_PATH_MAX + 32], lf[NT_PATH_MAX + 32];
	snprintf(rt, sizeof(rt), "--runtime-dir=%s", e->run);
	snprintf(lf, sizeof(lf), "--log-file=%s", e->log);
	argv[n++] = shuffled;
	argv[n++] = rt;
	argv[n++] = lf;
	argv[n++] = "--log-level=info";
	argv[n++] = "--rendezvous=none";
	argv[n++] = "--node-name=testnode";
	for (int i = 0; args && args[i] && n < 62; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	/* the driver's own SHF_* settings must not leak into the daemon */
	static const char *const env[] = {"SHF_SOCKET=", "SHF_RUNTIME_DIR=", "SHF_CONFIG=",
					  "SHF_NODE=", NULL};
	return nt_spawn(e, argv, env);
}

static int try_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int nt_daemon_wait_ready(struct nt_env *e, pid_t pid, int timeout_ms)
{
	int64_t end = nt_now_ms() + timeout_ms;
	while (nt_now_ms() < end) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			child_forget(pid);
			fprintf(stderr, "%s: shuffled exited during start-up (status %d)\n", e->name,
				decode_status(st));
			return -1;
		}
		int fd = try_connect(e->sock);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		nt_sleep_ms(10);
	}
	fprintf(stderr, "%s: shuffled not ready after %d ms\n", e->name, timeout_ms);
	return -1;
}

int nt_daemon_start(struct nt_env *e, const char *const *args)
{
	pid_t pid = nt_daemon_spawn(e, args);
	if (nt_daemon_wait_ready(e, pid, 5000) < 0) {
		nt_log_tail(e, 20);
		kill(pid, SIGKILL);
		nt_wait(pid, 5000);
		return -1;
	}
	e->daemon = pid;
	return 0;
}

int nt_daemon_stop(struct nt_env *e)
{
	CHECK(e->daemon > 0);
	kill(e->daemon, SIGTERM);
	int r = nt_wait(e->daemon, 10000);
	e->daemon = 0;
	CHECKF(r == 0, "shuffled exited with status %d after SIGTERM (0 expected)", r);
	CHECKF(access(e->sock, F_OK) < 0, "socket %s still exists after a clean stop", e->sock);
	return 0;
}

void nt_daemon_kill(struct nt_env *e)
{
	if (e->daemon <= 0)
		return;
	kill(e->daemon, SIGKILL);
	nt_wait(e->daemon, 10000);
	e->daemon = 0;
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

json_t *nt_ctl(struct nt_env *e, const char *cmd)
{
	int fd = try_connect(e->sock);
	if (fd < 0) {
		fprintf(stderr, "%s: ctl connect %s: %s\n", e->name, e->sock, strerror(-fd));
		return NULL;
	}
	static _Alignas(8) char buf[SHF_IPC_MAX_MSG];
	char *text = NULL;
	size_t tlen = 0;
	json_t *doc = NULL;
	struct shf_ipc_hello hello = {SHF_IPC_VERSION, (uint32_t)getpid()};
	long n;
	int r = shf_ipc_send(fd, SHF_IPC_HELLO, 1, &hello, sizeof(hello), NULL, 0);
	if (r < 0 || (n = recv_msg(fd, buf, sizeof(buf), 5000)) <= 0) {
		fprintf(stderr, "%s: ctl hello failed\n", e->name);
		goto out;
	}
	struct shf_ipc_hdr h;
	memcpy(&h, buf, sizeof(h));
	if (h.type != SHF_IPC_HELLO_OK) {
		fprintf(stderr, "%s: ctl hello answered with type %u\n", e->name, h.type);
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
			fprintf(stderr, "%s: ctl %s: no answer (%ld)\n", e->name, cmd, n);
			goto out;
		}
		memcpy(&h, buf, sizeof(h));
		if (h.type != SHF_IPC_CTL_REPLY) {
			fprintf(stderr, "%s: ctl %s answered with type %u\n", e->name, cmd, h.type);
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
		fprintf(stderr, "%s: ctl %s: bad JSON: %s\n", e->name, cmd, err.text);
out:
	free(text);
	close(fd);
	return doc;
}

long long nt_json_num(json_t *doc, const char *path)
{
	char key[128];
	const char *p = path;
	json_t *o = doc;
	while (o && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(key))
			return -1;
		memcpy(key, p, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		p = dot ? dot + 1 : p + n;
	}
	if (!o)
		return -1;
	if (json_is_integer(o))
		return (long long)json_integer_value(o);
	if (json_is_boolean(o))
		return json_is_true(o);
	return -1;
}

long long nt_stat(struct nt_env *e, const char *path)
{
	json_t *doc = nt_ctl(e, "stats");
	if (!doc)
		return -1;
	long long v = nt_json_num(doc, path);
	json_decref(doc);
	return v;
}

json_t *nt_client_find(json_t *doc, const char *job, int rank)
{
	json_t *a = json_object_get(doc, "clients");
	size_t i;
	json_t *c;
	json_array_foreach(a, i, c) {
		const char *j = json_string_value(json_object_get(c, "job"));
		if (j && !strcmp(j, job) && json_integer_value(json_object_get(c, "rank")) == rank)
			return c;
	}
	return NULL;
}

/* ------------------------------------------------------------------ /proc */

long nt_rss_kib(pid_t pid)
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

int nt_fd_count(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int nt_fd_baseline(struct nt_env *e)
{
	int best = -1;
	for (int i = 0; i < 40; i++) {
		int n = nt_fd_count(e->daemon);
		if (n >= 0 && (best < 0 || n < best))
			best = n;
		nt_sleep_ms(5);
	}
	CHECKF(best > 0, "cannot count the daemon's fds");
	return best;
}

int nt_fd_settle(struct nt_env *e, int want, int timeout_ms)
{
	int64_t end = nt_now_ms() + timeout_ms;
	int n;
	while ((n = nt_fd_count(e->daemon)) != want && nt_now_ms() < end)
		nt_sleep_ms(10);
	return n;
}

/* ------------------------------------------------------------------ sync points */

void nt_sync_post(const char *dir, const char *name)
{
	char path[NT_PATH_MAX + 64], tmp[NT_PATH_MAX + 80];
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

bool nt_sync_exists(const char *dir, const char *name)
{
	char path[NT_PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

bool nt_sync_wait(const char *dir, const char *name, int timeout_ms)
{
	int64_t end = nt_now_ms() + timeout_ms;
	do {
		if (nt_sync_exists(dir, name))
			return true;
		nt_sleep_ms(5);
	} while (nt_now_ms() < end);
	return nt_sync_exists(dir, name);
}

bool nt_log_contains(struct nt_env *e, const char *needle)
{
	FILE *f = fopen(e->log, "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

pid_t nt_spawn_client(struct nt_env *e, const char *job, int rank, int world,
		      const char *const *args, const char *const *env)
{
	const char *argv[64];
	const char *envp[40];
	char ej[128], er[32], ew[32];
	int n = 0, k = 0;
	argv[n++] = nt_prog("SHF_TEST_TCLIENT");
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
	return nt_spawn(e, argv, envp);
}

int nt_mpirun_argv(struct nt_env *e, int np, const char **argv)
{
	static char npbuf[16], tmpbase[NT_PATH_MAX + 8];
	if (system("command -v mpirun >/dev/null 2>&1") != 0)
		nt_skip("mpirun not found");
	snprintf(npbuf, sizeof(npbuf), "%d", np);
	snprintf(tmpbase, sizeof(tmpbase), "%s/ompi", e->dir);
	int k = 0;
	if (geteuid() == 0 && access("/usr/bin/unshare", X_OK) == 0) {
		argv[k++] = "/usr/bin/unshare";
		argv[k++] = "--pid";
		argv[k++] = "--fork";
		argv[k++] = "--kill-child";
		argv[k++] = "--mount-proc"; /* LeakSanitizer reads /proc/PID */
		argv[k++] = "mpirun";
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
