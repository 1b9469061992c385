/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/daemon.h - private daemons for the integration tests
 * (tests/node, tests/ctl): a fresh temporary directory, shuffled instances
 * in it, child processes with deadlines, the daemons' answers (over the
 * control socket, or through shufflectl), sync points and /proc probes.
 *
 * td_init() first.  From then on, however the test ends (return from main,
 * exit(), a failed CHECK, SIGTERM from meson, its own deadline), every
 * process it started is killed (with its process group, so mpirun's ranks
 * go too) and reaped, and the temporary directory is removed (kept when
 * SHF_TEST_KEEP is set).  A failed CHECK shows the tail of every daemon's
 * log.
 *
 * The temporary directory ($TMPDIR or /tmp, "shf-test-XXXXXX") holds:
 *   <tag>/run/   the runtime directory (socket, lock) of daemon <tag>
 *   <tag>/log    its log (--log-file)
 *   sync/        sync points (td_sync_post), $SHF_TEST_SYNC in children
 *
 * Programs come from the environment (meson sets them); td_prog() skips
 * the test when one is missing.  Every SHF_* variable other than
 * SHF_TEST_* is removed from the test's environment so the caller's
 * settings cannot leak into daemons or clients.
 */
#ifndef SHF_TESTS_LIB_DAEMON_H
#define SHF_TESTS_LIB_DAEMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/lib/check.h"

#define TD_PATH_MAX 200 /* paths under the temporary directory (sockets: < 108) */

struct td_daemon {
	char tag[32];
	char run[TD_PATH_MAX];  /* runtime directory */
	char sock[TD_PATH_MAX]; /* control socket */
	char log[TD_PATH_MAX];  /* log file */
	pid_t pid;              /* 0 when not running */
};

struct td_env {
	char name[64];          /* test name, for messages */
	char dir[TD_PATH_MAX];  /* the temporary directory */
	char sync[TD_PATH_MAX]; /* sync points */
	struct td_daemon *d;    /* td_daemon("d"), the test's (first) daemon */
};

/* td_init() flag: every process the test starts gets SHF_SOCKET=e->d->sock */
#define TD_SOCKET_ENV 1u

/* Temporary directory, clean-up handlers, and a deadline of deadline_s
 * seconds after which the test fails with everything killed. */
struct td_env *td_init(const char *name, int deadline_s, unsigned flags);

/* Path of a program from environment variable var, or skip the test. */
const char *td_prog(const char *var);

/* Daemon <tag> (at most 8), paths set, not started; the same tag gives
 * the same daemon. */
struct td_daemon *td_daemon(const char *tag);

/*
 * Start $SHF_TEST_SHUFFLED --runtime-dir, --log-file, --no-config,
 * --rendezvous=none and --node-name=testnode (these two unless args give
 * them) plus args
 * (NULL-terminated, may be NULL), with env edits ("NAME=value"; "NAME="
 * removes; may be NULL), and wait up to 10 s until its socket accepts
 * connections.  0, or -1 when it exited or never became ready (then it is
 * killed; the log tail says why).
 */
int td_start(struct td_daemon *d, const char *const *args, const char *const *env);
/* The same without waiting: the pid, to reap with td_wait(); d->pid is
 * left alone. */
pid_t td_spawn_daemon(struct td_daemon *d, const char *const *args, const char *const *env);
/* SIGTERM, wait up to 10 s, CHECK exit status 0 and the socket removed. */
void td_stop(struct td_daemon *d);
/* SIGKILL and reap (the socket file stays: a stale socket). */
void td_kill(struct td_daemon *d);

/* fork() whose child dies with the test (PR_SET_PDEATHSIG), leads its own
 * process group and is killed by the clean-up.  Children leave with _exit. */
pid_t td_fork(void);
/* fork/exec argv[0] with env edits (as for td_start); stdout and stderr to
 * the given files (NULL: inherited), stdin from /dev/null. */
pid_t td_spawn(const char *const *argv, const char *const *env, const char *out_path,
	       const char *err_path);
/* Wait up to timeout_ms: exit status (0-255), 128 + signal, or -1 (timed
 * out; then killed). */
int td_wait(pid_t pid, int timeout_ms);
/* Non-blocking: the status as for td_wait() if pid has exited, else
 * TD_RUNNING. */
#define TD_RUNNING (-2)
int td_poll_exit(pid_t pid);
/* Wait for several pids with one deadline: how many did not exit 0 (each
 * printed as `what` <index>). */
int td_wait_all(const pid_t *pids, int n, int timeout_ms, const char *what);

/* $SHF_TEST_TCLIENT (tests/node/tclient.c) as rank/world of job (SHF_JOB,
 * SHF_RANK, SHF_WORLD) with args after the program name. */
pid_t td_spawn_client(const char *job, int rank, int world, const char *const *args,
		      const char *const *env);
/* The same as user uid (>= 0) through setpriv(1) (TD_SETPRIV; a root-only
 * test skips when it is missing); uid -1: as this process. */
#define TD_SETPRIV "/usr/bin/setpriv"
pid_t td_spawn_client_as(int uid, const char *job, int rank, int world, const char *const *args,
			 const char *const *env);
/*
 * The start of an mpirun command line for np processes on this node: in
 * its own PID namespace when root, shared memory only, a session directory
 * inside the test's directory, SHF_SOCKET, SHF_JOB and SHF_TEST_SYNC
 * exported.  Fills argv (at least 40 slots), returns the count.  Skips the
 * test when mpirun is missing.
 */
int td_mpirun_argv(int np, const char **argv);

/* A finished program: status as for td_wait(); stdout, stderr (heap). */
struct td_out {
	int status;
	char *out;
	char *err;
};
/* Run argv to completion (timeout_ms) and collect its output. */
void td_run(const char *const *argv, const char *const *env, int timeout_ms, struct td_out *o);
void td_out_free(struct td_out *o);
/* shufflectl [-s sock] args... (NULL-terminated), 20 s bound. */
void td_ctl(const char *sock, struct td_out *o, ...) __attribute__((sentinel));
/* shufflectl -s sock --json cmd: CHECKs exit 0, a JSON object of schema
 * "shuffle/1" and command cmd; the document (json_decref it). */
json_t *td_ctl_json(const char *sock, const char *cmd);

/* Ask the daemon cmd ("stats", "clients", ...) over its control socket
 * directly: the JSON document, or NULL (with a message). */
json_t *td_query(const struct td_daemon *d, const char *cmd);
/* Integer at a dotted path ("daemon.disc_proto"); CHECKs it is one. */
long long td_num(json_t *doc, const char *path);
/* td_num() of td_query(d, "stats"). */
long long td_stat(const struct td_daemon *d, const char *path);
/* The entry of a clients document for (job, rank), or NULL (borrowed). */
json_t *td_client_find(json_t *clients_doc, const char *job, int rank);

/* Whole file as a heap string ("" when missing). */
char *td_read_file(const char *path);
void td_write_file(const char *path, const char *text);
bool td_log_contains(const struct td_daemon *d, const char *needle);
/* snprintf that fails the test instead of truncating. */
void td_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Sync points: files in dir ($SHF_TEST_SYNC in clients, e->sync here). */
void td_sync_post(const char *dir, const char *name);
bool td_sync_wait(const char *dir, const char *name, int timeout_ms);
bool td_sync_exists(const char *dir, const char *name);

int64_t td_now_ms(void);
void td_sleep_ms(int ms);

/* Two daemons on this host, "a" (node 0) and "b" (node 1): static
 * rendezvous over 127.0.0.1 ports the kernel picked, provider tcp,
 * heartbeat 200 ms, peer timeout 1500 ms.  td_pair_start() starts a (and
 * skips the test when this host has no libfabric tcp endpoint) and, if
 * start_b, b; td_pair_start_b() starts b later. */
struct td_pair {
	struct td_daemon *a, *b;
	char rdv[128], bind_a[64], bind_b[64];
};
void td_pair_start(struct td_pair *p, bool start_b);
void td_pair_start_b(struct td_pair *p);
/* Wait until daemon d has exactly one peer, in `state` ("up", "down"). */
void td_wait_peer_state(struct td_daemon *d, const char *state, int timeout_ms);

/* VmRSS in KiB, open fds; -1 if unknown. */
long td_rss_kib(pid_t pid);
int td_fd_count(pid_t pid);
/* The idle daemon's fd count: the minimum over 200 ms, so that sessions
 * still closing (readiness probe, td_query) do not count. */
int td_fd_baseline(const struct td_daemon *d);
/* Wait up to timeout_ms for the daemon's fd count to be want; the last
 * count seen. */
int td_fd_settle(const struct td_daemon *d, int want, int timeout_ms);

/* A job of $SHF_TEST_CTL_CLIENT processes (tests/ctl/ctl-client.c). */
struct td_job {
	char name[64];
	char sync[TD_PATH_MAX]; /* DIR/sync-<name> */
	int world;
	int count; /* messages each rank sends to each rank */
	int len;   /* bytes per message */
	pid_t pid[64];
};
/* Start ranks [first, first + n) of j against sock (another daemon may run
 * the others); wait until each has done its traffic and epoch and stays
 * connected; let them go and CHECK that each exits 0. */
void td_job_start(struct td_job *j, const char *sock, int first, int n);
void td_job_wait_done(struct td_job *j, int first, int n);
void td_job_finish(struct td_job *j, int first, int n);

#endif /* SHF_TESTS_LIB_DAEMON_H */
