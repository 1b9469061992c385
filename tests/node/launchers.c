/* SPDX-License-Identifier: MIT */
/*
 * tests/node/launchers.c - real launchers, no rank, world or job given
 * (tests/node/mpi-app.c uses shf_opts_init() defaults; only SHF_SOCKET
 * says where the test's daemon is):
 *
 *   singleton   the MPI program run without mpirun: rank 0 of 1
 *   mpirun      mpirun -np 2
 *   allocation  two mpiruns at once with SLURM_JOB_ID=4243 in their
 *               environment (two job steps of one Slurm allocation): both
 *               open while the other is registered, as two jobs, and both
 *               deliver everything
 *
 *   pidns       two mpiruns at once, each pid 1 of its own pid namespace
 *               (unshare --pid, as containers run them): Open MPI derives
 *               its job id (PMIX_NAMESPACE) from the host name and
 *               mpirun's pid, so both have the same one; the job key
 *               must still tell them apart (root: exit 77 otherwise)
 *
 *   launchers singleton|mpirun|allocation|pidns
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

static struct td_env *e;
static bool in_pidns; /* launch mpirun as pid 1 of a new pid namespace */

/* mpirun -np 2 mpi-app SYNC tag 100 (or the program alone: np 0). */
static pid_t launch(int np, const char *tag, const char *const *env)
{
	const char *argv[48];
	static char npbuf[4][8], tmpbase[4][TD_PATH_MAX + 16];
	static int slot;
	int k = 0, s = slot++ % 4;
	if (np > 0) {
		snprintf(npbuf[s], sizeof(npbuf[s]), "%d", np);
		td_fmt(tmpbase[s], sizeof(tmpbase[s]), "%s/ompi-%s", e->dir, tag);
		static const char *const fixed[] = {"--oversubscribe", "--bind-to", "none",
						    "--mca", "pml", "ob1", "--mca", "btl",
						    "self,vader", "-x", "SHF_SOCKET", NULL};
		if (in_pidns) {
			static const char *const un[] = {"/usr/bin/unshare", "--pid", "--fork",
							 "--kill-child", "--mount-proc", NULL};
			for (int i = 0; un[i]; i++)
				argv[k++] = un[i];
		}
		argv[k++] = "/usr/bin/mpirun";
		for (int i = 0; fixed[i]; i++)
			argv[k++] = fixed[i];
		argv[k++] = "--mca";
		argv[k++] = "orte_tmpdir_base";
		argv[k++] = tmpbase[s];
		/* vader's segments are named by host and job id, and two
		 * mpiruns that are each pid 1 of a pid namespace get the same
		 * job id: in one /dev/shm they unlink each other's segment and
		 * mpirun crashes at the end ("unlink(2)
		 * /dev/shm/vader_segment.vm.0.6cff0001.1", then SIGSEGV) */
		CHECKF(mkdir(tmpbase[s], 0700) == 0 || errno == EEXIST, "mkdir %s: %s", tmpbase[s],
		       strerror(errno));
		argv[k++] = "--mca";
		argv[k++] = "btl_vader_backing_directory";
		argv[k++] = tmpbase[s];
		argv[k++] = "-np";
		argv[k++] = npbuf[s];
	}
	argv[k++] = td_prog("SHF_TEST_MPI_APP");
	argv[k++] = e->sync;
	argv[k++] = tag;
	argv[k++] = "100";
	argv[k] = NULL;
	/* Open MPI leaks in MPI_Init (~120 KB, its own): LeakSanitizer would
	 * fail every sanitizer run of an MPI program (as tests/net/rdv-mpi.c) */
	const char *envp[8] = {"ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"};
	for (int i = 0; env && env[i] && i < 6; i++)
		envp[i + 1] = env[i];
	return td_spawn(argv, envp, NULL, NULL);
}

static bool opened(const char *tag, int np, pid_t a, pid_t b)
{
	char name[64];
	for (int64_t end = td_now_ms() + 60000; td_now_ms() < end; td_sleep_ms(20)) {
		int n = 0;
		for (int r = 0; r < np; r++) {
			snprintf(name, sizeof(name), "%s.open.%d", tag, r);
			n += td_sync_exists(e->sync, name);
		}
		if (n == np)
			return true;
		if (td_poll_exit(a) != TD_RUNNING || (b > 0 && td_poll_exit(b) != TD_RUNNING))
			return false;
	}
	return false;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	e = td_init("launchers", 170, TD_SOCKET_ENV);
	if (system("command -v mpirun >/dev/null 2>&1") != 0)
		SKIP("mpirun not found");
	CHECK(td_start(e->d, NULL, NULL) == 0);

	if (!strcmp(what, "singleton")) {
		/* an Open MPI singleton: no launcher at all before MPI_Init */
		td_sync_post(e->sync, "single.go");
		pid_t p = launch(0, "single", NULL);
		CHECKF(td_wait(p, 60000) == 0, "the MPI singleton failed");
		td_stop(e->d);
		return 0;
	}
	if (!strcmp(what, "mpirun")) {
		td_sync_post(e->sync, "one.go");
		pid_t p = launch(2, "one", NULL);
		CHECKF(td_wait(p, 60000) == 0, "mpirun -np 2 failed");
		td_stop(e->d);
		return 0;
	}
	if (!strcmp(what, "pidns")) {
		if (geteuid() != 0 ||
		    system("unshare --pid --fork --kill-child --mount-proc true 2>/dev/null") != 0) {
			td_stop(e->d);
			SKIP("needs root and unshare --pid --mount-proc (pid namespaces)");
		}
		in_pidns = true;
	} else {
		CHECKF(!strcmp(what, "allocation"),
		       "usage: launchers singleton|mpirun|allocation|pidns");
	}

	/* two mpiruns at once (one Slurm allocation, or two pid namespaces),
	 * both registered at once */
	const char *const slurm[] = {"SLURM_JOB_ID=4243", NULL}; /* as the trial */
	pid_t a = launch(2, "a", slurm);
	CHECKF(opened("a", 2, a, -1), "the first mpirun's ranks did not open");
	pid_t b = launch(2, "b", slurm);
	CHECKF(opened("b", 2, a, b), "the second mpirun did not open "
	       "while the first was registered (same job key?)");
	json_t *jobs = td_query(e->d, "jobs");
	CHECK(jobs != NULL);
	json_t *list = json_object_get(jobs, "jobs");
	CHECKF(json_array_size(list) == 2, "%zu jobs registered, 2 expected",
	       json_array_size(list));
	json_decref(jobs);
	td_sync_post(e->sync, "a.go");
	td_sync_post(e->sync, "b.go");
	pid_t both[] = {a, b};
	CHECKF(td_wait_all(both, 2, 60000, "mpirun") == 0, "an mpirun failed");
	td_stop(e->d);
	return 0;
}
