/* SPDX-License-Identifier: MIT */
/*
 * client/env.c - what shf_open() takes from the environment: rank and world
 * (from whatever launcher started us), the job name and the socket path.
 * Pure functions of the environment, unit-tested in tests/unit/client-env.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "proto/addr.h"

/* An empty variable counts as unset. */
static const char *env(const char *name)
{
	const char *v = secure_getenv(name);
	return v && *v ? v : NULL;
}

int shc_parse_int(const char *s, int *out)
{
	if (!s || !*s)
		return -EINVAL;
	long long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static const char *const rank_pairs[][2] = {
	{"SHF_RANK", "SHF_WORLD"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMIX_RANK", "PMIX_SIZE"},
	{"PMI_RANK", "PMI_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS"},
};

int shc_env_rank_world(int *rank_p, int *world_p)
{
	const char *half = NULL; /* first variable seen without its partner */
	for (size_t i = 0; i < sizeof(rank_pairs) / sizeof(rank_pairs[0]); i++) {
		const char *rn = rank_pairs[i][0], *wn = rank_pairs[i][1];
		const char *rv = env(rn), *wv = env(wn);
		if (!rv || !wv) {
			if ((rv || wv) && !half)
				half = rv ? rn : wn;
			continue;
		}
		int rank, world;
		if (shc_parse_int(rv, &rank))
			return shc_fail(-EINVAL, "%s='%.64s' is not a non-negative integer", rn, rv);
		if (shc_parse_int(wv, &world))
			return shc_fail(-EINVAL, "%s='%.64s' is not a non-negative integer", wn, wv);
		if (world < 1 || world > SHF_WORLD_MAX)
			return shc_fail(-EINVAL, "%s=%d is outside [1, %d]", wn, world, SHF_WORLD_MAX);
		if (rank >= world)
			return shc_fail(-EINVAL, "%s=%d is not below %s=%d", rn, rank, wn, world);
		*rank_p = rank;
		*world_p = world;
		return 0;
	}
	if (half)
		return shc_fail(-EINVAL, "rank and world not set: %s is set without its partner "
			       "(set opts.rank/world, or SHF_RANK and SHF_WORLD)", half);
	return shc_fail(-EINVAL, "rank and world not set: no launcher variables found (set "
		       "opts.rank/world, or SHF_RANK and SHF_WORLD)");
}

static bool job_char_ok(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("._:@+-", ch));
}

void shc_env_job(const char *opt, char job[SHF_JOB_MAX])
{
	const char *src = opt && *opt ? opt : NULL;
	if (!src)
		src = env("SHF_JOB");
	if (!src)
		src = env("SLURM_JOB_ID");
	if (!src)
		src = env("PMIX_NAMESPACE");
	if (!src)
		src = "default";
	size_t i;
	for (i = 0; i < SHF_JOB_MAX - 1 && src[i]; i++)
		job[i] = job_char_ok(src[i]) ? src[i] : '_';
	job[i] = '\0';
}

int shc_env_socket_path(const char *opt, unsigned long uid, char *out, size_t cap)
{
	const char *p = opt && *opt ? opt : env("SHF_SOCKET");
	const char *rd = env("SHF_RUNTIME_DIR");
	int n;
	if (p) {
		n = snprintf(out, cap, "%s", p);
	} else if (rd) {
		n = snprintf(out, cap, "%s/shuffled.sock", rd);
	} else {
		char host[256];
		const char *node = env("SHF_NODE");
		if (!node) {
			if (gethostname(host, sizeof(host)) < 0)
				return shc_fail(-EINVAL, "cannot get the host name: %s",
						strerror(errno));
			host[sizeof(host) - 1] = '\0';
			node = host;
		}
		const char *why;
		if (shf_node_name_check(node, &why) < 0)
			return shc_fail(-EINVAL, "node name '%.64s' (SHF_NODE or the host name): %s",
					node, why);
		const char *xdg = env("XDG_RUNTIME_DIR");
		if (uid == 0)
			n = snprintf(out, cap, SHF_SYSTEM_RUNTIME_DIR "/%s/shuffled.sock", node);
		else if (xdg && xdg[0] == '/')
			n = snprintf(out, cap, "%s/shuffle/%s/shuffled.sock", xdg, node);
		else
			n = snprintf(out, cap, "/tmp/shuffle-%lu/%s/shuffled.sock", uid, node);
	}
	if (n < 0 || (size_t)n >= cap)
		return shc_fail(-EINVAL, "socket path too long (max %zu bytes): %.128s...",
				cap - 1, out);
	return 0;
}
