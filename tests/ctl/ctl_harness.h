/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/ctl_harness.h - what the shufflectl integration tests share:
 * private daemons in a fresh temporary directory, shufflectl runs with
 * their exit status and output, child processes with deadlines.
 *
 * ch_init() first.  From then on, however the test ends (return from main,
 * exit(), a failed CHECK, SIGTERM from meson, its own deadline), every
 * process it started is killed and reaped and the temporary directory is
 * removed: nothing is left behind.
 *
 * Programs come from the environment (tests/ctl/meson.build sets them):
 *   SHF_TEST_SHUFFLED    the daemon           (missing: the test skips)
 *   SHF_TEST_SHUFFLECTL  shufflectl           (missing: the test skips)
 *   SHF_TEST_CTL_CLIENT  tests/ctl/ctl_client (missing: ch_client() skips)
 * Every SHF_* variable other than SHF_TEST_* is removed from the test's
 * environment so the caller's settings cannot leak in.
 */
#ifndef SHF_TESTS_CTL_HARNESS_H
#define SHF_TESTS_CTL_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CHECK(cond)                                                               \
	do {                                                                      \
		if (!(cond))                                                      \
			ch_fail(__FILE__, __LINE__, #cond, NULL);                 \
	} while (0)

#define CHECKF(cond, ...)                                                         \
	do {                                                                      \
		if (!(cond)) {                                                    \
			char ch_why_[1024];                                       \
			snprintf(ch_why_, sizeof(ch_why_), __VA_ARGS__);          \
			ch_fail(__FILE__, __LINE__, #cond, ch_why_);              \
		}                                                                 \
	} while (0)

#define CH_PATH_MAX 200 /* paths under the temporary directory (sockets: < 108) */

struct ch_env {
	char name[64];          /* test name, for messages */
	char dir[CH_PATH_MAX];  /* the temporary directory */
	const char *shuffled;   /* $SHF_TEST_SHUFFLED */
	const char *shufflectl; /* $SHF_TEST_SHUFFLECTL */
};

/* One private daemon: DIR/<tag>/run (runtime dir), DIR/<tag>/log. */
struct ch_daemon {
	char tag[32];
	char run[CH_PATH_MAX];
	char sock[CH_PATH_MAX];
	char log[CH_PATH_MAX];
	char err[CH_PATH_MAX];  /* its stderr */
	pid_t pid;              /* 0 when not running */
};

/* A finished program: exit status (0-255), 128 + signal, or -1 (timed out,
 * killed); its stdout and stderr (NUL-terminated, heap). */
struct ch_out {
	int status;
	char *out;
	char *err;
};

_Noreturn void ch_fail(const char *file, int line, const char *cond, const char *why);
_Noreturn void ch_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Temporary directory, clean-up handlers, and a deadline of deadline_s
 * seconds after which the test fails with everything killed. */
struct ch_env *ch_init(const char *name, int deadline_s);

/*
 * Start shuffled --runtime-dir DIR/<tag>/run --log-file DIR/<tag>/log
 * --rendezvous none (unless args give --rendezvous) plus args
 * (NULL-terminated, may be NULL), with env ("NAME=value"; "NAME=" removes;
 * may be NULL), and wait up to 10 s until its socket accepts connections.
 * 0, or -1 when it exited or never became ready (CHECK on it).
 */
int ch_daemon_start(struct ch_env *e, struct ch_daemon *d, const char *tag,
		    const char *const *args, const char *const *env);
/* SIGTERM, wait up to 10 s, CHECK exit status 0 and socket removed. */
void ch_daemon_stop(struct ch_env *e, struct ch_daemon *d);
/* SIGKILL and reap (the socket file stays: a stale socket). */
void ch_daemon_kill(struct ch_daemon *d);

/* fork/exec argv with env additions (as above).  stdout/stderr go to the
 * given files (NULL: /dev/null).  The child dies with the test. */
pid_t ch_spawn(const char *const *argv, const char *const *env, const char *out_path,
	       const char *err_path);
/* fork() whose child dies with the test (PR_SET_PDEATHSIG) and is killed
 * by the clean-up; reap it with ch_wait().  Children must leave with _exit. */
pid_t ch_fork(void);
/* Wait up to timeout_ms: exit status, 128 + signal, or -1 (then killed). */
int ch_wait(pid_t pid, int timeout_ms);

/* Run argv to completion (timeout_ms) and collect its output. */
void ch_run(const char *const *argv, const char *const *env, int timeout_ms, struct ch_out *o);
void ch_out_free(struct ch_out *o);

/* shufflectl -s sock args... (NULL-terminated), 20 s bound. */
void ch_ctl(struct ch_env *e, const char *sock, struct ch_out *o, ...)
	__attribute__((sentinel));
/* shufflectl -s sock --json cmd: CHECKs exit 0, valid JSON, schema
 * "shuffle/1" and command; returns the document (json_decref it). */
json_t *ch_ctl_json(struct ch_env *e, const char *sock, const char *cmd);

/* Whole file as a heap string ("" when missing). */
char *ch_read_file(const char *path);
void ch_write_file(const char *path, const char *text);
bool ch_wait_file(const char *path, int timeout_ms);

/* snprintf that fails the test instead of truncating. */
void ch_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int64_t ch_now_ms(void);
void ch_sleep_ms(int ms);

/* Integer at a dotted path ("daemon.disc_proto"); CHECKs it exists. */
long long ch_num(json_t *doc, const char *path);

/* $SHF_TEST_CTL_CLIENT, or skip the test. */
const char *ch_client(void);

/* A job of ctl_client processes (one per rank) on daemon socket `sock`. */
struct ch_job {
	char name[64];
	char sync[CH_PATH_MAX];  /* DIR/sync-<name> */
	int world;
	int count;               /* messages each rank sends to each rank */
	int len;                 /* bytes per message */
	pid_t pid[64];           /* [rank] */
};

/*
 * Start ranks [first, first + n) of job j against sock (another daemon may
 * run the others), then, when wait_done, wait until each of them has
 * finished its traffic and epoch (SYNC/<rank>.done) and stays connected.
 */
void ch_job_start(struct ch_env *e, struct ch_job *j, const char *sock, int first, int n);
void ch_job_wait_done(struct ch_job *j, int first, int n);
/* Let every client of j go, and CHECK that each exits 0. */
void ch_job_finish(struct ch_job *j, int first, int n);

/*
 * Prometheus text exposition, parsed and validated: every line is a HELP,
 * a TYPE (counter|gauge|untyped) or a sample matching the format's
 * grammar; each family has one HELP and one TYPE before its samples, its
 * samples are contiguous, counters end in _total and gauges do not, and no
 * series (name + labels) appears twice.  Any violation fails the test.
 */
struct ch_prom_sample {
	char series[512]; /* name{labels} exactly as printed */
	char family[160];
	double value;
};
struct ch_prom {
	struct ch_prom_sample *s;
	size_t n;
	char (*types)[200]; /* "name type" per family */
	size_t ntypes;
};
void ch_prom_parse(const char *text, struct ch_prom *p);
/* Value of a series; CHECKs it exists. */
double ch_prom_get(const struct ch_prom *p, const char *series);
/* Does the series exist? */
bool ch_prom_has(const struct ch_prom *p, const char *series);
/* "counter", "gauge", "untyped" or NULL */
const char *ch_prom_type(const struct ch_prom *p, const char *family, char *buf, size_t n);
void ch_prom_free(struct ch_prom *p);

#endif /* SHF_TESTS_CTL_HARNESS_H */
