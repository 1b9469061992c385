/* SPDX-License-Identifier: MIT */
/*
 * client-env: what shf_open() takes from the environment (client/env.c):
 * strict integer parsing, rank/world from launcher variables in matching
 * pairs and in order, the job name (sources, sanitising, truncation), and
 * each launcher's real variable set: rank, world and job key from the same
 * launcher.  (Where the socket is: client-discover.c.)
 * Links the library's internals (shc_internal) directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "proto/ipc.h"
#include "tests/lib/check.h"

const char *check_detail(void)
{
	return shf_error_detail(); /* every counted failure says the library's last detail */
}



static const char *const all_vars[] = {
	"SHF_RANK", "SHF_WORLD", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"PMIX_RANK", "PMIX_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
	"SHF_JOB", "SLURM_JOB_ID", "PMIX_NAMESPACE", "SHF_SOCKET", "SHF_RUNTIME_DIR",
	"SHF_NODE", "XDG_RUNTIME_DIR", "OMPI_MCA_orte_precondition_transports",
	/* the launchers' sets (test_launchers) */
	"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK",
	"OMPI_UNIVERSE_SIZE", "OMPI_APP_CTX_NUM_PROCS", "OMPI_MCA_ess", "OMPI_MCA_ess_base_jobid",
	"OMPI_MCA_ess_base_vpid", "OMPI_MCA_orte_ess_num_procs", "OMPI_MCA_orte_ess_jobid",
	"OMPI_MCA_orte_ess_vpid", "PMIX_ID", "PMIX_VERSION", "PMIX_SERVER_URI41", "SLURM_JOBID",
	"SLURM_STEP_ID", "SLURM_STEPID", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NODEID",
	"SLURM_STEP_NUM_TASKS", "PMI_FD", "PMI_JOBID", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
	"MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
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
	EXPECT(shc_parse_int("0", &v) == 0 && v == 0);
	EXPECT(shc_parse_int("42", &v) == 0 && v == 42);
	EXPECT(shc_parse_int("007", &v) == 0 && v == 7);
	EXPECT(shc_parse_int("2147483647", &v) == 0 && v == 2147483647);
	static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1a", "0x10", "1.0",
					  "2147483648", "99999999999999999999", "\t3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 123;
		if (shc_parse_int(bad[i], &v) != -EINVAL || v != 123) {
			MISS("shc_parse_int accepted '%s'", bad[i]);
		}
	}
	EXPECT(shc_parse_int(NULL, &v) == -EINVAL);
}

/* rank/world from the environment: (r, w) expected, or err */
static void expect_rw(int line, int err, int r, int w)
{
	int rank = -7, world = -7;
	int got = shc_env_rank_world(&rank, &world);
	if (got != err || (!err && (rank != r || world != w)) || (err && (rank != -7 || world != -7))) {
		MISS("line %d: rank/world: got %d (%d/%d), want %d (%d/%d)", line, got, rank, world,
		     err, r, w);
	}
}

static void test_rank_world(void)
{
	env_clear();
	expect_rw(__LINE__, -EINVAL, 0, 0);
	EXPECT(strstr(shf_error_detail(), "SHF_RANK") != NULL); /* says how to fix it */

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
	EXPECT(strstr(shf_error_detail(), "PMI_SIZE") != NULL);

	/* strict values; a complete but bad pair is an error, not skipped */
	env_clear();
	set("SLURM_PROCID", "0");
	set("SLURM_NTASKS", "2");
	set("SHF_RANK", "1x");
	set("SHF_WORLD", "4");
	expect_rw(__LINE__, -EINVAL, 0, 0);
	EXPECT(strstr(shf_error_detail(), "SHF_RANK") != NULL);
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
	int r = shc_env_job(opt, job);
	if (r != 0 || strcmp(job, want) != 0 || shf_ipc_job_check(job) != 0) {
		MISS("line %d: job '%s' (%d), want '%s' (valid: %d)", line, r ? "" : job, r, want,
			r ? -1 : shf_ipc_job_check(job));
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
	/* no launcher found: PMIx's per-run namespace before the allocation */
	expect_job(__LINE__, NULL, "prterun-host-1234@1");
	unsetenv("PMIX_NAMESPACE");
	expect_job(__LINE__, NULL, "98765");
	set("SLURM_STEP_ID", "3");
	expect_job(__LINE__, NULL, "98765.3");
	set("SHF_JOB", "mine");
	expect_job(__LINE__, NULL, "mine");
	expect_job(__LINE__, "explicit", "explicit");
	set("SHF_JOB", "");
	expect_job(__LINE__, NULL, "98765.3");

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

/* Apply a launcher's variable set ("NAME=value", NULL-terminated) to a
 * clean environment. */
static void env_apply(const char *const *vars)
{
	env_clear();
	for (; *vars; vars++) {
		const char *eq = strchr(*vars, '=');
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *vars), *vars);
		set(name, eq + 1);
	}
}

/* rank, world and job key of a launcher's set (err: rank/world fail) */
static void expect_launch(int line, const char *what, const char *const *vars, int err, int r,
			  int w, const char *job)
{
	env_apply(vars);
	fprintf(stderr, "-- %s\n", what);
	expect_rw(line, err, r, w);
	if (job)
		expect_job(line, NULL, job);
}

/*
 * The variables each launcher really exports (the relevant part).  Open MPI
 * 4.1.4 and the singleton were dumped on this machine (environ after
 * MPI_Init, Debian 12's openmpi-bin); Slurm's and PyTorch's are from their
 * documentation (srun(1) OUTPUT ENVIRONMENT VARIABLES; torchrun).
 */
static void test_launchers(void)
{
	/* mpirun -np 2, rank 1 (Open MPI 4.1.4) */
	static const char *const ompi[] = {
		"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
		"OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_NODE_RANK=1",
		"OMPI_UNIVERSE_SIZE=2", "OMPI_APP_CTX_NUM_PROCS=2", "OMPI_MCA_ess=pmi",
		"OMPI_MCA_ess_base_jobid=1831993345", "OMPI_MCA_ess_base_vpid=1",
		"OMPI_MCA_orte_ess_num_procs=2", "PMIX_NAMESPACE=1831993345", "PMIX_RANK=1",
		"PMIX_ID=1831993345.1", "PMIX_VERSION=4.2.2rc2",
		"OMPI_MCA_orte_precondition_transports=6f1da177db155a97-ab6a50b6fa2ca2d6", NULL};
	expect_launch(__LINE__, "mpirun", ompi, 0, 1, 2, "1831993345.6f1da177db155a97");

	/* the same mpirun inside a Slurm allocation (sbatch -n 4, job 4243):
	 * the batch step's variables leak into every rank; the mpirun's
	 * namespace must win, or two mpiruns of one allocation collide */
	static const char *const ompi_slurm[] = {
		"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_MCA_ess=pmi",
		"OMPI_MCA_ess_base_jobid=1831993345", "PMIX_NAMESPACE=1831993345", "PMIX_RANK=1",
		"SLURM_JOB_ID=4243", "SLURM_JOBID=4243", "SLURM_PROCID=0", "SLURM_NTASKS=4",
		"SLURM_NPROCS=4", "SLURM_NODEID=0", "SLURM_LOCALID=0", "OMPI_MCA_orte_precondition_transports=6f1da177db155a97-ab6a50b6fa2ca2d6", NULL};
	expect_launch(__LINE__, "mpirun in Slurm", ompi_slurm, 0, 1, 2,
		      "1831993345.6f1da177db155a97");
	static const char *const ompi_slurm2[] = {
		"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_MCA_ess=pmi",
		"OMPI_MCA_ess_base_jobid=1829371905", "PMIX_NAMESPACE=1829371905", "PMIX_RANK=0",
		"SLURM_JOB_ID=4243", "SLURM_PROCID=0", "SLURM_NTASKS=4",
		"OMPI_MCA_orte_precondition_transports=2a5add1307a76e34-f273a7ae29f2663c", NULL};
	expect_launch(__LINE__, "second mpirun in Slurm", ompi_slurm2, 0, 0, 2,
		      "1829371905.2a5add1307a76e34");

	/* older Open MPI (ORTE, no PMIx namespace) */
	static const char *const ompi_old[] = {
		"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=3", "OMPI_MCA_orte_ess_jobid=2910912513",
		"OMPI_MCA_orte_ess_vpid=0", "OMPI_MCA_orte_ess_num_procs=3", "OMPI_MCA_orte_precondition_transports=6f1da177db155a97-ab6a50b6fa2ca2d6", NULL};
	expect_launch(__LINE__, "old mpirun", ompi_old, 0, 0, 3, "2910912513.6f1da177db155a97");

	/* two mpiruns, each pid 1 of its own pid namespace, have the same id
	 * (host name and pid); only the per-launch key tells them apart: without
	 * it, a refusal that names SHF_JOB, never a shared key */
	static const char *const ompi_nokey[] = {
		"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=1828651009",
		"PMIX_RANK=0", NULL};
	env_apply(ompi_nokey);
	{
		char job[SHF_JOB_MAX];
		EXPECT(shc_env_job(NULL, job) == -EINVAL);
		EXPECT(strstr(shf_error_detail(), "SHF_JOB") != NULL);
		EXPECT(strstr(shf_error_detail(), "1828651009") != NULL);
		set("OMPI_MCA_orte_precondition_transports", "not-hex-at-all-xx");
		EXPECT(shc_env_job(NULL, job) == -EINVAL);
	}
	set("SHF_JOB", "mine");
	expect_job(__LINE__, NULL, "mine");

	/* Open MPI singleton: ./app without mpirun, environ after MPI_Init */
	static const char *const single[] = {
		"OMPI_MCA_ess=singleton", "OMPI_MCA_orte_ess_num_procs=1", "OMPI_APP_CTX_NUM_PROCS=1",
		"OMPI_MCA_orte_launch=1", "PMIX_NAMESPACE=335216641", "PMIX_RANK=0",
		"PMIX_SERVER_URI41=335216640.0;tcp4://127.0.0.1:44545", "PMIX_VERSION=4.2.2rc2",
		"OMPI_MCA_orte_precondition_transports=5d2ee87e454334a9-537237a75a55cc58", NULL};
	expect_launch(__LINE__, "singleton", single, 0, 0, 1, "335216641.5d2ee87e454334a9");
	/* ... inside a Slurm batch script: still one process */
	static const char *const single_slurm[] = {
		"OMPI_MCA_ess=singleton", "PMIX_NAMESPACE=335216641", "PMIX_RANK=0",
		"SLURM_JOB_ID=4243", "SLURM_PROCID=0", "SLURM_NTASKS=4",
		"OMPI_MCA_orte_precondition_transports=5d2ee87e454334a9-537237a75a55cc58", NULL};
	expect_launch(__LINE__, "singleton in Slurm", single_slurm, 0, 0, 1,
		      "335216641.5d2ee87e454334a9");
	/* a singleton without the launch key: pid, pid namespace and host */
	static const char *const single_nokey[] = {"OMPI_MCA_ess=singleton",
						   "PMIX_NAMESPACE=335216641", NULL};
	env_apply(single_nokey);
	{
		char job[SHF_JOB_MAX], want[32];
		snprintf(want, sizeof(want), "singleton.%d.", (int)getpid());
		EXPECT(shc_env_job(NULL, job) == 0);
		EXPECTF(!strncmp(job, want, strlen(want)), "singleton key '%s'", job);
	}

	/* srun -n 8 (job 4243, step 2), task 3; and a second step */
	static const char *const srun[] = {
		"SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_NPROCS=8", "SLURM_JOB_ID=4243",
		"SLURM_JOBID=4243", "SLURM_STEP_ID=2", "SLURM_STEPID=2", "SLURM_LOCALID=1",
		"SLURM_NODEID=1", "SLURM_STEP_NUM_TASKS=8", NULL};
	expect_launch(__LINE__, "srun", srun, 0, 3, 8, "4243.2");
	static const char *const srun2[] = {
		"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_ID=4243", "SLURM_STEP_ID=3", NULL};
	expect_launch(__LINE__, "srun, next step", srun2, 0, 0, 2, "4243.3");
	/* srun --mpi=pmix: PMIx rank and namespace, no size: Slurm's pair */
	static const char *const srun_pmix[] = {
		"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=4243", "SLURM_STEP_ID=0",
		"PMIX_RANK=1", "PMIX_NAMESPACE=slurm.pmix.4243.0", NULL};
	expect_launch(__LINE__, "srun --mpi=pmix", srun_pmix, 0, 1, 2, "4243.0");
	/* srun --mpi=pmi2: PMI pair and PMI_JOBID */
	static const char *const srun_pmi2[] = {
		"PMI_RANK=1", "PMI_SIZE=2", "PMI_FD=5", "PMI_JOBID=4243.1", "SLURM_PROCID=1",
		"SLURM_NTASKS=2", "SLURM_JOB_ID=4243", "SLURM_STEP_ID=1", NULL};
	expect_launch(__LINE__, "srun --mpi=pmi2", srun_pmi2, 0, 1, 2, "4243.1");

	/* a PMIx launcher that gives no size anywhere: a clear error */
	static const char *const pmix_only[] = {"PMIX_RANK=2", "PMIX_NAMESPACE=prterun-h-77@1",
						NULL};
	expect_launch(__LINE__, "PMIx without size", pmix_only, -EINVAL, 0, 0,
		      "prterun-h-77@1");
	EXPECT(strstr(shf_error_detail(), "PMIX_RANK") != NULL);

	/* torchrun (c10d rendezvous, --rdzv-id job42), 2 nodes x 2 */
	static const char *const torchrun[] = {
		"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1",
		"MASTER_ADDR=node1", "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=job42",
		"TORCHELASTIC_RESTART_COUNT=0", NULL};
	expect_launch(__LINE__, "torchrun", torchrun, 0, 3, 4, "job42");
	/* static torchrun: run id "none" is everyone's; the master is not */
	static const char *const torch_static[] = {
		"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=10.0.0.1",
		"MASTER_PORT=29501", "TORCHELASTIC_RUN_ID=none", NULL};
	expect_launch(__LINE__, "torchrun, static", torch_static, 0, 1, 2, "10.0.0.1:29501");
	/* plain env:// (init_process_group("gloo", init_method="env://")) */
	static const char *const torch_env[] = {"RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1",
						"MASTER_PORT=29500", NULL};
	expect_launch(__LINE__, "env://", torch_env, 0, 0, 1, "127.0.0.1:29500");
	/* torchrun started by srun (one agent per node): the worker's RANK */
	static const char *const torch_srun[] = {
		"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=node1", "MASTER_PORT=29500",
		"TORCHELASTIC_RUN_ID=4243", "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=4243",
		"SLURM_STEP_ID=0", NULL};
	expect_launch(__LINE__, "torchrun under srun", torch_srun, 0, 3, 4, "4243");
	/* RANK and WORLD_SIZE without env:// are not PyTorch's */
	static const char *const generic[] = {"RANK=1", "WORLD_SIZE=2", NULL};
	expect_launch(__LINE__, "bare RANK", generic, -EINVAL, 0, 0, "default");
	EXPECT(strstr(shf_error_detail(), "MASTER_ADDR") != NULL);

	/* SHF_* first, over every launcher; SHF_JOB over every key */
	static const char *const shf[] = {
		"SHF_RANK=0", "SHF_WORLD=3", "SHF_JOB=mine", "OMPI_COMM_WORLD_RANK=1",
		"OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=1831993345", "RANK=1", "WORLD_SIZE=2",
		"MASTER_ADDR=a", "MASTER_PORT=1", "SLURM_PROCID=0", "SLURM_NTASKS=4",
		"SLURM_JOB_ID=4243", NULL};
	expect_launch(__LINE__, "SHF_*", shf, 0, 0, 3, "mine");
	/* SHF_RANK/WORLD without SHF_JOB: the launcher's key */
	static const char *const shf_nojob[] = {"SHF_RANK=0", "SHF_WORLD=3", "SLURM_PROCID=0",
						"SLURM_NTASKS=4", "SLURM_JOB_ID=4243",
						"SLURM_STEP_ID=5", NULL};
	expect_launch(__LINE__, "SHF_* without SHF_JOB", shf_nojob, 0, 0, 3, "4243.5");
	/* half an SHF pair is a mistake, not a reason to guess */
	static const char *const shf_half[] = {"SHF_RANK=0", "SLURM_PROCID=0", "SLURM_NTASKS=4",
					       NULL};
	expect_launch(__LINE__, "SHF_RANK alone", shf_half, -EINVAL, 0, 0, NULL);
	EXPECT(strstr(shf_error_detail(), "SHF_WORLD") != NULL);
}

int main(void)
{
	test_parse_int();
	test_rank_world();
	test_job();
	test_launchers();
	env_clear();
	return check_result();
}
