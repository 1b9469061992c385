/* SPDX-License-Identifier: MIT */
/*
 * client-env: what shf_open() takes from the environment (client/env.c):
 * strict integer parsing, rank/world from launcher variables in matching
 * pairs and in order, the job name (sources, sanitising, truncation) and
 * the control socket path (sources, runtime directory rules, limits).
 * Links the library's internals (shc_internal) directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/client.h"
#include "proto/ipc.h"

static int failures;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: check failed: %s (detail: %s)\n",     \
				__FILE__, __LINE__, #cond, shf_error_detail());       \
			failures++;                                                   \
		}                                                                     \
	} while (0)

static const char *const all_vars[] = {
	"SHF_RANK", "SHF_WORLD", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"PMIX_RANK", "PMIX_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
	"SHF_JOB", "SLURM_JOB_ID", "PMIX_NAMESPACE", "SHF_SOCKET", "SHF_RUNTIME_DIR",
	"SHF_NODE", "XDG_RUNTIME_DIR",
};

static void env_clear(void)
{
	for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
		unsetenv(all_vars[i]);
}

static void set(const char *k, const char *v)
{
	setenv(k, v, 1);
}

static void test_parse_int(void)
{
	int v = -5;
	CHECK(shc_parse_int("0", &v) == 0 && v == 0);
	CHECK(shc_parse_int("42", &v) == 0 && v == 42);
	CHECK(shc_parse_int("007", &v) == 0 && v == 7);
	CHECK(shc_parse_int("2147483647", &v) == 0 && v == 2147483647);
	static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1a", "0x10", "1.0",
					  "2147483648", "99999999999999999999", "\t3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 123;
		if (shc_parse_int(bad[i], &v) != -EINVAL || v != 123) {
			fprintf(stderr, "shc_parse_int accepted '%s'\n", bad[i]);
			failures++;
		}
	}
	CHECK(shc_parse_int(NULL, &v) == -EINVAL);
}

/* rank/world from the environment: (r, w) expected, or err */
static void expect_rw(int line, int err, int r, int w)
{
	int rank = -7, world = -7;
	int got = shc_env_rank_world(&rank, &world);
	if (got != err || (!err && (rank != r || world != w)) || (err && (rank != -7 || world != -7))) {
		fprintf(stderr, "line %d: rank/world: got %d (%d/%d), want %d (%d/%d); detail: %s\n",
			line, got, rank, world, err, r, w, shf_error_detail());
		failures++;
	}
}

static void test_rank_world(void)
{
	env_clear();
	expect_rw(__LINE__, -EINVAL, 0, 0);
	CHECK(strstr(shf_error_detail(), "SHF_RANK") != NULL); /* says how to fix it */

	set("SHF_RANK", "1");
	set("SHF_WORLD", "4");
	expect_rw(__LINE__, 0, 1, 4);

	/* SHF_* first, then the launchers in order */
	set("OMPI_COMM_WORLD_RANK", "2");
	set("OMPI_COMM_WORLD_SIZE", "8");
	set("SLURM_PROCID", "3");
	set("SLURM_NTASKS", "16");
	expect_rw(__LINE__, 0, 1, 4);
	unsetenv("SHF_RANK");
	unsetenv("SHF_WORLD");
	expect_rw(__LINE__, 0, 2, 8);
	unsetenv("OMPI_COMM_WORLD_RANK");
	expect_rw(__LINE__, 0, 3, 16); /* incomplete pair skipped, never mixed */

	/* an empty variable is unset */
	set("OMPI_COMM_WORLD_RANK", "");
	expect_rw(__LINE__, 0, 3, 16);

	env_clear();
	set("PMIX_RANK", "5");
	set("PMI_RANK", "6");
	set("PMI_SIZE", "7");
	expect_rw(__LINE__, 0, 6, 7); /* PMIX_RANK alone does not pair with PMI_SIZE */
	set("PMIX_SIZE", "9");
	expect_rw(__LINE__, 0, 5, 9);

	/* only half a pair anywhere: error naming it */
	env_clear();
	set("PMI_SIZE", "4");
	expect_rw(__LINE__, -EINVAL, 0, 0);
	CHECK(strstr(shf_error_detail(), "PMI_SIZE") != NULL);

	/* strict values; a complete but bad pair is an error, not skipped */
	env_clear();
	set("SLURM_PROCID", "0");
	set("SLURM_NTASKS", "2");
	set("SHF_RANK", "1x");
	set("SHF_WORLD", "4");
	expect_rw(__LINE__, -EINVAL, 0, 0);
	CHECK(strstr(shf_error_detail(), "SHF_RANK") != NULL);
	set("SHF_RANK", "4");
	expect_rw(__LINE__, -EINVAL, 0, 0); /* rank == world */
	set("SHF_RANK", "-1");
	expect_rw(__LINE__, -EINVAL, 0, 0);
	set("SHF_RANK", "0");
	set("SHF_WORLD", "0");
	expect_rw(__LINE__, -EINVAL, 0, 0);
	char big[32];
	snprintf(big, sizeof(big), "%d", SHF_WORLD_MAX + 1);
	set("SHF_WORLD", big);
	expect_rw(__LINE__, -EINVAL, 0, 0);
	snprintf(big, sizeof(big), "%d", SHF_WORLD_MAX);
	set("SHF_WORLD", big);
	expect_rw(__LINE__, 0, 0, SHF_WORLD_MAX);
	set("SHF_WORLD", "1");
	expect_rw(__LINE__, 0, 0, 1);
}

static void expect_job(int line, const char *opt, const char *want)
{
	char job[SHF_JOB_MAX];
	memset(job, 'X', sizeof(job));
	shc_env_job(opt, job);
	if (strcmp(job, want) != 0 || shf_ipc_job_check(job) != 0) {
		fprintf(stderr, "line %d: job '%s', want '%s' (valid: %d)\n", line, job, want,
			shf_ipc_job_check(job));
		failures++;
	}
}

static void test_job(void)
{
	env_clear();
	expect_job(__LINE__, NULL, "default");
	expect_job(__LINE__, "", "default");
	set("PMIX_NAMESPACE", "prterun-host-1234@1");
	expect_job(__LINE__, NULL, "prterun-host-1234@1");
	set("SLURM_JOB_ID", "98765");
	expect_job(__LINE__, NULL, "98765");
	set("SHF_JOB", "mine");
	expect_job(__LINE__, NULL, "mine");
	expect_job(__LINE__, "explicit", "explicit");
	set("SHF_JOB", "");
	expect_job(__LINE__, NULL, "98765");

	/* sanitised: everything outside [A-Za-z0-9._:@+-] becomes '_' */
	expect_job(__LINE__, "a b/c\td", "a_b_c_d");
	expect_job(__LINE__, "Az09._:@+-", "Az09._:@+-");
	expect_job(__LINE__, "caf\xc3\xa9", "caf__");
	expect_job(__LINE__, "..", "..");

	/* cut to 63 characters */
	char longname[200], want[SHF_JOB_MAX];
	memset(longname, 'j', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memset(want, 'j', SHF_JOB_MAX - 1);
	want[SHF_JOB_MAX - 1] = '\0';
	expect_job(__LINE__, longname, want);
}

static void expect_path(int line, const char *opt, unsigned long uid, int err, const char *want)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int r = shc_env_socket_path(opt, uid, path, sizeof(path));
	if (r != err || (!err && strcmp(path, want) != 0)) {
		fprintf(stderr, "line %d: socket path: %d '%s', want %d '%s' (detail: %s)\n", line, r,
			r ? "" : path, err, want ? want : "", shf_error_detail());
		failures++;
	}
}

static void test_socket_path(void)
{
	env_clear();
	set("SHF_NODE", "n1");
	expect_path(__LINE__, NULL, 0, 0, "/run/shuffle/n1/shuffled.sock");
	expect_path(__LINE__, NULL, 1000, 0, "/tmp/shuffle-1000/n1/shuffled.sock");
	set("XDG_RUNTIME_DIR", "/run/user/1000");
	expect_path(__LINE__, NULL, 1000, 0, "/run/user/1000/shuffle/n1/shuffled.sock");
	expect_path(__LINE__, NULL, 0, 0, "/run/shuffle/n1/shuffled.sock"); /* root ignores XDG */
	set("XDG_RUNTIME_DIR", "relative/dir");
	expect_path(__LINE__, NULL, 1000, 0, "/tmp/shuffle-1000/n1/shuffled.sock");
	set("XDG_RUNTIME_DIR", "");
	expect_path(__LINE__, NULL, 1000, 0, "/tmp/shuffle-1000/n1/shuffled.sock");

	/* the runtime dir, then the socket, then the option win */
	set("SHF_RUNTIME_DIR", "/tmp/rt-x");
	expect_path(__LINE__, NULL, 0, 0, "/tmp/rt-x/shuffled.sock");
	set("SHF_SOCKET", "/tmp/s.sock");
	expect_path(__LINE__, NULL, 0, 0, "/tmp/s.sock");
	expect_path(__LINE__, "/tmp/opt.sock", 0, 0, "/tmp/opt.sock");
	expect_path(__LINE__, "", 0, 0, "/tmp/s.sock");

	/* node name: the host name when SHF_NODE is unset; never a path */
	env_clear();
	char host[256], want[300];
	CHECK(gethostname(host, sizeof(host)) == 0);
	host[sizeof(host) - 1] = '\0';
	snprintf(want, sizeof(want), "/run/shuffle/%s/shuffled.sock", host);
	expect_path(__LINE__, NULL, 0, 0, want);
	set("SHF_NODE", "a/b");
	expect_path(__LINE__, NULL, 0, -EINVAL, NULL);
	set("SHF_NODE", "..");
	expect_path(__LINE__, NULL, 0, -EINVAL, NULL);

	/* longest path that fits sun_path, and one byte more */
	char p[200];
	size_t cap = sizeof(((struct sockaddr_un *)0)->sun_path);
	memset(p, 'p', sizeof(p));
	p[0] = '/';
	p[cap - 1] = '\0';
	expect_path(__LINE__, p, 0, 0, p);
	p[cap - 1] = 'p';
	p[cap] = '\0';
	expect_path(__LINE__, p, 0, -EINVAL, NULL);
	set("SHF_NODE", "n");
	memset(p, 'x', sizeof(p));
	p[0] = '/';
	p[cap - 20] = '\0';
	set("XDG_RUNTIME_DIR", p);
	expect_path(__LINE__, NULL, 1000, -EINVAL, NULL);
}

int main(void)
{
	test_parse_int();
	test_rank_world();
	test_job();
	test_socket_path();
	env_clear();
	if (failures) {
		fprintf(stderr, "client-env: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
