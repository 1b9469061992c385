/* SPDX-License-Identifier: MIT */
/*
 * client/env.c - what shf_open() takes from the launcher's environment:
 * rank, world and the job key, all from the same launcher (client.h, enum
 * shc_launcher).  Pure functions of the environment, unit-tested in
 * tests/unit/client-env.c.  Where the daemon is: discover.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"

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

/*
 * The launchers (client.h, enum shc_launcher), in the order tried.  A
 * launcher is found when its rank and world variables and (where it has
 * one) its key are all set; values are checked only for the launcher used.
 */
struct launcher {
	const char *name;
	const char *rank, *world; /* variables; NULL rank: always 0 */
	const char *need;         /* another variable that must be set, or NULL */
	const char *need_value;   /* ... to this value, or NULL: any */
};

static const struct launcher launchers[SHC_LAUNCHER_MAX] = {
	[SHC_LAUNCHER_PYTORCH] = {"pytorch", "RANK", "WORLD_SIZE", NULL, NULL},
	[SHC_LAUNCHER_OPENMPI] = {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
				  NULL, NULL},
	[SHC_LAUNCHER_SINGLETON] = {"singleton", NULL, NULL, "OMPI_MCA_ess", "singleton"},
	[SHC_LAUNCHER_PMIX] = {"pmix", "PMIX_RANK", "PMIX_SIZE", NULL, NULL},
	[SHC_LAUNCHER_PMI] = {"pmi", "PMI_RANK", "PMI_SIZE", NULL, NULL},
	[SHC_LAUNCHER_SLURM] = {"slurm", "SLURM_PROCID", "SLURM_NTASKS", NULL, NULL},
};

const char *shc_launcher_name(enum shc_launcher l)
{
	return l < SHC_LAUNCHER_MAX ? launchers[l].name : "none";
}

/* PyTorch's job key: TORCHELASTIC_RUN_ID, unless torchrun's default
 * "none" (every static torchrun has it), else MASTER_ADDR:MASTER_PORT.
 * NULL when neither; buf holds the joined form. */
static const char *torch_key(char *buf, size_t cap)
{
	const char *id = env("TORCHELASTIC_RUN_ID");
	if (id && strcmp(id, "none") != 0)
		return id;
	const char *a = env("MASTER_ADDR"), *p = env("MASTER_PORT");
	if (!a || !p)
		return NULL;
	snprintf(buf, cap, "%s:%s", a, p);
	return buf;
}

enum shc_launcher shc_env_launcher(void)
{
	char buf[SHF_JOB_MAX];
	for (int i = 0; i < SHC_LAUNCHER_MAX; i++) {
		const struct launcher *l = &launchers[i];
		if (l->rank && (!env(l->rank) || !env(l->world)))
			continue;
		if (l->need) {
			const char *v = env(l->need);
			if (!v || (l->need_value && strcmp(v, l->need_value) != 0))
				continue;
		}
		/* RANK and WORLD_SIZE are common names: only env:// (a key) counts */
		if (i == SHC_LAUNCHER_PYTORCH && !torch_key(buf, sizeof(buf)))
			continue;
		return (enum shc_launcher)i;
	}
	return SHC_LAUNCHER_MAX;
}

static int parse_pair(const char *rn, const char *rv, const char *wn, const char *wv,
		      int *rank_p, int *world_p)
{
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

/* Variables whose presence without their partner explains a failure. */
static const char *const halves[][2] = {
	{"SHF_RANK", "SHF_WORLD"},
	{"RANK", "WORLD_SIZE"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMIX_RANK", "PMIX_SIZE"},
	{"PMI_RANK", "PMI_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS"},
};

int shc_env_rank_world(int *rank_p, int *world_p)
{
	const char *sr = env("SHF_RANK"), *sw = env("SHF_WORLD");
	if (sr && sw)
		return parse_pair("SHF_RANK", sr, "SHF_WORLD", sw, rank_p, world_p);
	if (sr || sw)
		return shc_fail(-EINVAL, "%s is set without %s (set both, or neither)",
				sr ? "SHF_RANK" : "SHF_WORLD", sr ? "SHF_WORLD" : "SHF_RANK");
	enum shc_launcher l = shc_env_launcher();
	if (l == SHC_LAUNCHER_SINGLETON) {
		/* Open MPI's singleton: one process, PMIX_RANK 0 and no size */
		const char *pr = env("PMIX_RANK");
		int rank = 0;
		if (pr && (shc_parse_int(pr, &rank) || rank != 0))
			return shc_fail(-EINVAL, "OMPI_MCA_ess=singleton but PMIX_RANK='%.64s', "
					"not 0", pr);
		*rank_p = 0;
		*world_p = 1;
		return 0;
	}
	if (l < SHC_LAUNCHER_MAX) {
		const struct launcher *x = &launchers[l];
		return parse_pair(x->rank, env(x->rank), x->world, env(x->world), rank_p, world_p);
	}
	for (size_t i = 0; i < sizeof(halves) / sizeof(halves[0]); i++) {
		const char *rv = env(halves[i][0]), *wv = env(halves[i][1]);
		if (i == 1 && rv && wv) /* RANK and WORLD_SIZE, but no env:// key */
			return shc_fail(-EINVAL, "rank and world not set: RANK and WORLD_SIZE are set "
					"but neither TORCHELASTIC_RUN_ID nor MASTER_ADDR and "
					"MASTER_PORT (PyTorch env://), which give the job its key "
					"(set them, or SHF_RANK, SHF_WORLD and SHF_JOB)");
		if (rv || wv)
			return shc_fail(-EINVAL, "rank and world not set: %s is set without %s "
					"(set opts.rank/world, or SHF_RANK and SHF_WORLD)",
					rv ? halves[i][0] : halves[i][1],
					rv ? halves[i][1] : halves[i][0]);
	}
	return shc_fail(-EINVAL, "rank and world not set: no launcher variables found (set "
		       "opts.rank/world, or SHF_RANK and SHF_WORLD)");
}

static bool job_char_ok(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("._:@+-", ch));
}

/*
 * Open MPI's job id (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid) is made from
 * the host name and mpirun's pid, so two mpiruns that are each pid N of
 * their own pid namespace (containers; unshare --pid) get the same one.
 * Open MPI 4.1's mpirun also exports OMPI_MCA_orte_precondition_transports
 * ("HEX16-HEX16", 128 random bits drawn per launch, the same in every rank
 * of that launch on every node; a singleton's after MPI_Init too): the key
 * is ID.HEX16, the id and the launch's first 64 random bits.  NULL when
 * that variable is missing or malformed.
 */
static const char *ompi_key(const char *id, char *buf, size_t cap)
{
	const char *t = env("OMPI_MCA_orte_precondition_transports");
	if (!t || strlen(t) < 16)
		return NULL;
	for (int i = 0; i < 16; i++)
		if (!strchr("0123456789abcdefABCDEF", t[i]))
			return NULL;
	snprintf(buf, cap, "%s.%.16s", id, t);
	return buf;
}

/* The pid namespace's inode ("pid:[4026531836]"), 0 when unknown. */
static unsigned long long pidns_inode(void)
{
	char l[64];
	ssize_t n = readlink("/proc/self/ns/pid", l, sizeof(l) - 1);
	if (n <= 0)
		return 0;
	l[n] = '\0';
	const char *b = strchr(l, '[');
	return b ? strtoull(b + 1, NULL, 10) : 0;
}

/* The launcher's job key into buf, or NULL when it has none.  *not_unique
 * (may be NULL) is set to the launcher's id when it has one that does not
 * tell launches apart (Open MPI without its per-launch key). */
static const char *launcher_key(enum shc_launcher l, char *buf, size_t cap,
				const char **not_unique)
{
	const char *k = NULL;
	switch (l) {
	case SHC_LAUNCHER_PYTORCH:
		return torch_key(buf, cap);
	case SHC_LAUNCHER_OPENMPI:
		if (!(k = env("PMIX_NAMESPACE")) && !(k = env("OMPI_MCA_ess_base_jobid")))
			k = env("OMPI_MCA_orte_ess_jobid");
		if (!k)
			return NULL;
		{
			const char *u = ompi_key(k, buf, cap);
			if (!u && not_unique)
				*not_unique = k;
			return u;
		}
	case SHC_LAUNCHER_SINGLETON:
		if ((k = env("PMIX_NAMESPACE")) && ompi_key(k, buf, cap))
			return buf;
		{
			/* one process: unique on this node and in its pid
			 * namespace is unique enough */
			char host[64];
			if (gethostname(host, sizeof(host)) < 0)
				snprintf(host, sizeof(host), "localhost");
			host[sizeof(host) - 1] = '\0';
			snprintf(buf, cap, "singleton.%d.%llu.%s", (int)getpid(), pidns_inode(),
				 host);
		}
		return buf;
	case SHC_LAUNCHER_PMIX:
		/* Open MPI's mpirun under your own rank/world: its launch key */
		if ((k = env("PMIX_NAMESPACE")) && ompi_key(k, buf, cap))
			return buf;
		return k;
	case SHC_LAUNCHER_PMI:
		return env("PMI_JOBID");
	case SHC_LAUNCHER_SLURM: {
		const char *job = env("SLURM_JOB_ID"), *step = env("SLURM_STEP_ID");
		if (!job)
			job = env("SLURM_JOBID");
		if (!step)
			step = env("SLURM_STEPID");
		if (!job)
			return NULL;
		if (!step)
			return job;
		snprintf(buf, cap, "%s.%s", job, step);
		return buf;
	}
	case SHC_LAUNCHER_MAX:
		break;
	}
	return NULL;
}

int shc_env_job(const char *opt, char job[SHF_JOB_MAX])
{
	char buf[2 * SHF_JOB_MAX + 80];
	const char *src = opt && *opt ? opt : NULL, *not_unique = NULL;
	job[0] = '\0';
	if (!src)
		src = env("SHF_JOB");
	enum shc_launcher l = shc_env_launcher();
	if (!src)
		src = launcher_key(l, buf, sizeof(buf), &not_unique);
	if (!src && not_unique)
		return shc_fail(-EINVAL, "no job key unique to this launch: Open MPI's job id %.40s "
				"(from the host name and mpirun's pid) repeats across pid "
				"namespaces, and OMPI_MCA_orte_precondition_transports, which "
				"tells launches apart, is not set; set SHF_JOB to a name unique "
				"to this run (mpirun -x SHF_JOB=...)", not_unique);
	/* no launcher (rank and world from opts or SHF_*): the per-run
	 * namespace of PMIx, else the Slurm job step, else "default" */
	if (!src && l == SHC_LAUNCHER_MAX)
		src = launcher_key(SHC_LAUNCHER_PMIX, buf, sizeof(buf), NULL);
	if (!src && l == SHC_LAUNCHER_MAX)
		src = launcher_key(SHC_LAUNCHER_SLURM, buf, sizeof(buf), NULL);
	if (!src)
		src = "default";
	size_t i;
	for (i = 0; i < SHF_JOB_MAX - 1 && src[i]; i++)
		job[i] = job_char_ok(src[i]) ? src[i] : '_';
	job[i] = '\0';
	return 0;
}
