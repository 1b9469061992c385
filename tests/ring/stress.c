/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/stress.c - cross-process stress of the ring.
 *
 * The parent creates a client region in a memfd (shf_shm_layout/format),
 * binds the send ring as consumer and forks; the child validates the
 * region itself (shf_shm_check), binds the same ring as producer and sends
 * sequence-numbered records of random sizes; the parent verifies each one
 * (see stress.h).  Both sleep on eventfd doorbells through
 * shf_ring_prod_arm / shf_ring_cons_arm, so the wake-up path runs
 * thousands of times.
 *
 * Usage: ring-stress [records]   (or SHF_RING_STRESS_RECORDS; default 200000)
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tests/ring/stress.h"

int main(int argc, char **argv)
{
	uint64_t n = t_count_arg(argc, argv, 1, "SHF_RING_STRESS_RECORDS", 200000);
	struct t_region reg;
	t_region_open(&reg, STRESS_RING_BYTES, shf_ring_max_payload(STRESS_RING_BYTES));

	struct stress_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	atomic_store(&sh->abort, 0);
	int prod_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int cons_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(prod_bell >= 0 && cons_bell >= 0);

	struct shf_ring cons;
	CHECK(shf_shm_ring(reg.base, &reg.l, SHF_SHM_SEND, &cons, true) == 0);
	shf_ring_init_consumer(&cons);

	double t0 = t_now();
	pid_t parent = getpid();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* producer: attach like a client would, from the fd's mapping */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		struct shf_shm_layout l;
		struct shf_ring prod;
		if (shf_shm_check(reg.base, reg.l.region_bytes, &l) ||
		    shf_shm_ring(reg.base, &l, SHF_SHM_SEND, &prod, false)) {
			fprintf(stderr, "producer: cannot attach the region\n");
			_exit(1);
		}
		shf_ring_init_producer(&prod);
		struct stress_side s = {
			.name = "producer", .r = &prod, .my_bell = prod_bell,
			.peer_bell = cons_bell, .peer_gone = -1, .sh = sh,
			.records = n, .rng = 0x9e3779b97f4a7c15ull,
		};
		int rc = stress_produce(&s);
		fprintf(stderr, "producer: %" PRIu64 " records, slept %" PRIu64
			", rang %" PRIu64 "\n", n, s.sleeps, s.bells);
		if (rc == 0 && s.sleeps == 0) {
			fprintf(stderr, "producer: never slept: the doorbell path was not exercised\n");
			rc = -1;
		}
		_exit(rc ? 1 : 0);
	}

	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct stress_side s = {
		.name = "consumer", .r = &cons, .my_bell = cons_bell,
		.peer_bell = prod_bell, .peer_gone = pidfd, .sh = sh,
		.records = n, .rng = 0x2545f4914f6cdd1dull,
	};
	int rc = stress_consume(&s);
	if (rc)
		kill(pid, SIGKILL);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	double dt = t_now() - t0;
	printf("consumer: %" PRIu64 " records in %.2f s, slept %" PRIu64 ", rang %" PRIu64
	       ", unpeeked %" PRIu64 "\n",
	       atomic_load(&sh->consumed), dt, s.sleeps, s.bells, s.unpeeks);
	CHECKF(rc == 0, "consumer failed");
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "producer failed (status %#x)",
	       status);
	CHECK(atomic_load(&sh->consumed) == n && atomic_load(&sh->produced) == n);
	CHECKF(s.sleeps > 0, "consumer never slept: the doorbell path was not exercised");
	CHECK(cons.err == 0);

	if (pidfd >= 0)
		close(pidfd);
	close(prod_bell);
	close(cons_bell);
	munmap(sh, sizeof(*sh));
	t_region_close(&reg);
	return 0;
}
