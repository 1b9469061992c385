/* SPDX-License-Identifier: MIT */
/*
 * tests/node/harness.h - what the single-node integration tests share: a
 * private shuffled in a fresh temporary directory, child processes with a
 * deadline, the daemon's control socket (JSON answers), file-based sync
 * points between the driver and its clients, and /proc probes.
 *
 * Every test driver calls nt_init() first.  From then on, whatever way the
 * driver ends (return from main, exit(), CHECK failure, SIGTERM from meson,
 * its own deadline), every process it started is killed and the temporary
 * directory is removed: nothing is left behind.
 *
 * Layout of the temporary directory (NT_TMPDIR or /tmp, "shf-node-XXXXXX"):
 *   run/            the daemon's runtime directory (socket, lock)
 *   sync/           sync points: empty files created by nt_sync_post()
 *   shuffled.log    the daemon's log (--log-file), shown on failure
 *
 * Clients get SHF_SOCKET and SHF_TEST_SYNC in their environment.
 */
#ifndef SHF_TESTS_NODE_HARNESS_H
#define SHF_TESTS_NODE_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Fail the test with the location and the failed condition. */
#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond))                                                          \
			nt_fail(__FILE__, __LINE__, #cond, NULL);                     \
	} while (0)

/* Same, with a formatted explanation. */
#define CHECKF(cond, ...)                                                             \
	do {                                                                          \
		if (!(cond)) {                                                        \
			char nt_why_[512];                                            \
			snprintf(nt_why_, sizeof(nt_why_), __VA_ARGS__);              \
			nt_fail(__FILE__, __LINE__, #cond, nt_why_);                  \
		}                                                                     \
	} while (0)

#define NT_PATH_MAX 256

struct nt_env {
	char name[64];          /* test name, for messages */
	char dir[NT_PATH_MAX];  /* the temporary directory */
	char run[NT_PATH_MAX];  /* the daemon's runtime directory */
	char sock[NT_PATH_MAX]; /* its control socket */
	char sync[NT_PATH_MAX]; /* sync points */
	char log[NT_PATH_MAX];  /* the daemon's log file */
	pid_t daemon;           /* running daemon, or 0 */
};

/* Print where and why, dump the daemon log's tail, clean up, exit(1). */
_Noreturn void nt_fail(const char *file, int line, const char *cond, const char *why);

/* Skip the test (exit 77) with a reason on stderr. */
_Noreturn void nt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Make the temporary directory, install the clean-up (atexit, SIGTERM,
 * SIGINT, SIGHUP) and arm a deadline of `deadline_s` seconds after which
 * the test fails with everything killed.  Returns the environment (static).
 */
struct nt_env *nt_init(const char *name, int deadline_s);

/* Path of a helper program from the environment variable `var` (set by
 * tests/node/meson.build); skips the test when it is unset. */
const char *nt_prog(const char *var);

/*
 * Start shuffled (from $SHF_TEST_SHUFFLED) with --runtime-dir, --log-file
 * and --log-level=info plus `args` (NULL-terminated, may be NULL), and wait
 * up to 5 s until its socket accepts connections.  0, or -1 when the daemon
 * exited or never became ready (the log says why).
 */
int nt_daemon_start(struct nt_env *e, const char *const *args);

/* Like nt_daemon_start() but return the pid without waiting; the daemon
 * must then be reaped with nt_wait(). */
pid_t nt_daemon_spawn(struct nt_env *e, const char *const *args);

/* Wait until the socket accepts a connection (up to timeout_ms), watching
 * `pid`: 0 ready, -1 pid exited or timeout. */
int nt_daemon_wait_ready(struct nt_env *e, pid_t pid, int timeout_ms);

/*
 * SIGTERM the daemon and wait up to 10 s.  Checks that it exits with
 * status 0 and that its socket is gone.  Returns 0 or fails the test.
 */
int nt_daemon_stop(struct nt_env *e);

/* SIGKILL the daemon and reap it. */
void nt_daemon_kill(struct nt_env *e);

/*
 * fork/exec argv (argv[0] is a path) with the environment of the driver
 * plus SHF_SOCKET, SHF_TEST_SYNC and `env` ("NAME=value", NULL-terminated,
 * may be NULL; "NAME=" with nothing after removes NAME).  The child dies
 * with the driver (PR_SET_PDEATHSIG).  The pid is remembered for clean-up.
 */
pid_t nt_spawn(struct nt_env *e, const char *const *argv, const char *const *env);

/*
 * Wait for pid up to timeout_ms.  Returns its exit status (0-255),
 * 128 + signal when killed, or -1 on timeout (the process is then killed
 * with SIGKILL and reaped).
 */
int nt_wait(pid_t pid, int timeout_ms);

/*
 * Spawn the test client ($SHF_TEST_TCLIENT) as rank/world of job with
 * SHF_JOB, SHF_RANK and SHF_WORLD set; args follow the program name
 * (NULL-terminated); `env` as for nt_spawn().
 */
pid_t nt_spawn_client(struct nt_env *e, const char *job, int rank, int world,
		      const char *const *args, const char *const *env);

/* Non-blocking: the exit status as for nt_wait() if pid has exited (it is
 * then reaped), NT_RUNNING if it still runs. */
#define NT_RUNNING (-2)
int nt_poll_exit(pid_t pid);

/*
 * The start of an mpirun command line for np processes on this node:
 * in its own PID namespace when root (no rank outlives mpirun), Open MPI
 * as root allowed by the environment, shared memory only, a session
 * directory inside the test's directory, SHF_SOCKET, SHF_JOB and
 * SHF_TEST_SYNC exported.  Fills argv (at least 40 slots), returns the
 * count; the program and its arguments follow.  Skips the test when
 * mpirun is missing.
 */
int nt_mpirun_argv(struct nt_env *e, int np, const char **argv);

/* Wait for several pids with one common deadline; returns how many did not
 * exit with status 0 (each failure is printed with `what`). */
int nt_wait_all(const pid_t *pids, int n, int timeout_ms, const char *what);

/* Time since an arbitrary start, monotonic, in milliseconds. */
int64_t nt_now_ms(void);
void nt_sleep_ms(int ms);

/*
 * Ask the daemon `cmd` ("stats", "clients", "jobs", "status", ...) over its
 * control socket.  Returns the parsed JSON document (caller json_decref())
 * or NULL (with a message on stderr).
 */
json_t *nt_ctl(struct nt_env *e, const char *cmd);

/* Number at a dotted path ("daemon.disc_ring", "clients_total.msgs_in"),
 * or -1 when absent. */
long long nt_json_num(json_t *doc, const char *path);

/* Shortcut: nt_ctl(e, "stats") then nt_json_num(path). -1 on failure. */
long long nt_stat(struct nt_env *e, const char *path);

/* The daemon's client entry for (job, rank), or NULL.  Borrowed from doc. */
json_t *nt_client_find(json_t *clients_doc, const char *job, int rank);

/* VmRSS of pid in KiB, -1 if unknown. */
long nt_rss_kib(pid_t pid);

/* Open fds of pid, -1 if unknown. */
int nt_fd_count(pid_t pid);

/* The idle daemon's fd count: the minimum over 200 ms of samples, so that
 * sessions still closing (the readiness probe, nt_ctl()) do not count. */
int nt_fd_baseline(struct nt_env *e);

/* Wait up to timeout_ms for the daemon's fd count to be `want`; returns
 * the last count seen. */
int nt_fd_settle(struct nt_env *e, int want, int timeout_ms);

/* Sync points: `dir` is $SHF_TEST_SYNC in clients, e->sync in drivers. */
void nt_sync_post(const char *dir, const char *name);
bool nt_sync_wait(const char *dir, const char *name, int timeout_ms);
bool nt_sync_exists(const char *dir, const char *name);

/* Does the daemon log contain `needle`? */
bool nt_log_contains(struct nt_env *e, const char *needle);

/* Print the last `lines` lines of the daemon log to stderr. */
void nt_log_tail(struct nt_env *e, int lines);

#endif /* SHF_TESTS_NODE_HARNESS_H */
