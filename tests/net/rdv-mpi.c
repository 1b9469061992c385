/* SPDX-License-Identifier: MIT */
/*
 * tests/net/rdv-mpi.c - "mpi" rendezvous under mpirun -np 3.
 *
 * Run by meson without arguments, it starts itself under
 *   unshare --pid --fork --kill-child (as root, so every rank is reaped)
 *   mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
 *          --mca orte_tmpdir_base <private dir>
 *          --mca btl_vader_backing_directory <private dir in /dev/shm>
 *          -np 3 <itself> --rank
 * with a deadline, and skips (77) when mpirun is missing.  Each rank learns
 * its node id from shd_rdv_open() (== its MPI rank) BEFORE opening its
 * endpoint, binds 127.0.0.(rank+2), exchanges addresses (MPI_Iallgather),
 * leaves MPI (MPI_Finalize in shd_rdv_close), and then every rank sends
 * one wire message to every other over the fabric (t_mesh_run).
 *
 * The private directories matter: inside a pid namespace mpirun is always
 * pid 1, so every run gets the same Open MPI job id, and vader's default
 * segment files in /dev/shm (named after the job id) collided with another
 * run's ("shared memory initialization ... open(2) ... No such file").
 */
#include "net-common.h"

#include <dirent.h>
#include <limits.h>

#define NP 3

static int rank_main(void)
{
	char err[256], ip[32];
	const char *dir = getenv("SHF_RDV_TEST_DIR");
	const char *env_rank = getenv("OMPI_COMM_WORLD_RANK");
	t_name = "rdv-mpi rank";
	t_timeout(60);
	T_ASSERT(dir && env_rank, "run me through the launcher");

	struct shd_rdv_self self = {.timeout_ms = 30000};
	struct shd_rdv *r;
	int rc = shd_rdv_open("mpi", &self, &r, err, sizeof(err));
	T_ASSERT(rc == 0, "open: %d %s", rc, err);
	int me = shd_rdv_my_node(r);
	T_ASSERT(me == atoi(env_rank) && shd_rdv_nodes(r) == NP && shd_rdv_kind(r) == SHD_RDV_MPI,
		 "node %d of %u", me, shd_rdv_nodes(r));

	snprintf(ip, sizeof(ip), "127.0.0.%d", me + 2);
	struct shd_fabric *f = t_fabric_open(ip, "0", NULL);
	uint8_t addr[SHD_FABRIC_ADDR_MAX];
	size_t alen = sizeof(addr);
	T_ASSERT(shd_fabric_addr(f, addr, &alen) == 0, "addr");
	struct shd_rdv_result res;
	rc = shd_rdv_exchange(r, addr, alen, &res, err, sizeof(err));
	T_ASSERT(rc == 0, "exchange: %d %s", rc, err);
	shd_rdv_close(r); /* MPI_Finalize: MPI is done from here on */

	T_ASSERT(res.kind == SHD_RDV_MPI && res.n_nodes == NP && (int)res.my_node == me, "result");
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	for (uint32_t i = 0; i < NP; i++)
		T_ASSERT(!strcmp(res.nodes[i].host, host) && res.nodes[i].addr_len == alen,
			 "node %u: host \"%s\", %u address bytes", i, res.nodes[i].host,
			 res.nodes[i].addr_len);
	T_ASSERT(!memcmp(res.nodes[me].addr, addr, alen), "my address round trip");
	t_mesh_run(f, &res, dir);
	shd_rdv_result_fini(&res);
	shd_fabric_close(f);
	fprintf(stderr, "rdv-mpi: rank %d ok\n", me);
	return 0;
}

static void rm_tree(const char *path)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "rdv-mpi: could not remove %s\n", path);
}

static bool in_path(const char *prog, char *out, size_t outlen)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		snprintf(out, outlen, "%.*s/%s", (int)len, path, prog);
		if (access(out, X_OK) == 0)
			return true;
		if (!end)
			break;
		path = end + 1;
	}
	return false;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--rank"))
		return rank_main();

	char mpirun[PATH_MAX], unshare[PATH_MAX], self_exe[PATH_MAX];
	char dir[] = "/tmp/shf-rdv-mpi-XXXXXX";
	char tmpbase[PATH_MAX];
	char shmdir[PATH_MAX] = "/dev/shm/shf-rdv-mpi-XXXXXX";
	t_name = "rdv-mpi";
	t_timeout(120);
	if (!in_path("mpirun", mpirun, sizeof(mpirun)))
		T_SKIP("mpirun not found in PATH");
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	T_ASSERT(n > 0, "readlink");
	self_exe[n] = '\0';
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	snprintf(tmpbase, sizeof(tmpbase), "%s/orte", dir);
	T_ASSERT(mkdir(tmpbase, 0700) == 0, "mkdir");
	if (!mkdtemp(shmdir)) /* no /dev/shm: the private tmp dir will do */
		T_ASSERT(snprintf(shmdir, sizeof(shmdir), "%s", tmpbase) < (int)sizeof(shmdir), "path");

	setenv("SHF_RDV_TEST_DIR", dir, 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	/* Open MPI leaks ~120 KB by design: keep LeakSanitizer off in ranks. */
	setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);

	const char *args[40];
	int k = 0;
	bool use_unshare = geteuid() == 0 && in_path("unshare", unshare, sizeof(unshare)) &&
			   system("unshare --pid --fork --kill-child true >/dev/null 2>&1") == 0;
	if (use_unshare) {
		args[k++] = unshare;
		args[k++] = "--pid";
		args[k++] = "--fork";
		args[k++] = "--kill-child";
	}
	args[k++] = mpirun;
	args[k++] = "--oversubscribe";
	args[k++] = "--bind-to";
	args[k++] = "none";
	args[k++] = "--mca";
	args[k++] = "pml";
	args[k++] = "ob1";
	args[k++] = "--mca";
	args[k++] = "btl";
	args[k++] = "self,vader";
	args[k++] = "--mca";
	args[k++] = "orte_tmpdir_base";
	args[k++] = tmpbase;
	args[k++] = "--mca";
	args[k++] = "btl_vader_backing_directory";
	args[k++] = shmdir;
	args[k++] = "-x";
	args[k++] = "SHF_RDV_TEST_DIR";
	args[k++] = "-x";
	args[k++] = "ASAN_OPTIONS";
	args[k++] = "-np";
	args[k++] = "3";
	args[k++] = self_exe;
	args[k++] = "--rank";
	args[k] = NULL;

	fflush(NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		setpgid(0, 0);
		execv(args[0], (char *const *)args);
		fprintf(stderr, "rdv-mpi: exec %s: %s\n", args[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	int st = 0;
	int64_t deadline = t_now_ms() + 90000;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		T_ASSERT(w == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
		if (t_now_ms() > deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			rm_tree(dir);
			rm_tree(shmdir);
			T_FAIL("mpirun did not finish in 90 s");
		}
		t_sleep_ms(20);
	}
	rm_tree(dir);
	rm_tree(shmdir);
	T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mpirun status %#x", st);
	fprintf(stderr, "%s: PASS (%s)\n", t_name, use_unshare ? "in a pid namespace" : "plain");
	return 0;
}
