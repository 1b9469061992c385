/* SPDX-License-Identifier: MIT */
/*
 * tests/ring/lost-wakeup.c - no wake-up is lost when one side publishes
 * exactly while the other arms.
 *
 * Two processes, a memfd region, two eventfd doorbells.  Each iteration is
 * a rendezvous: the sleeper announces "turn i" and immediately arms
 * (shf_ring_cons_arm / shf_ring_prod_arm); the waker spins until it sees
 * turn i, waits a random tiny delay and publishes one record (releases the
 * ring), ringing the doorbell when told to, then reports "done i".  The
 * sleeper also waits a random tiny delay between announcing and arming, so
 * that the publish lands before, inside and after the arm/re-check window
 * (both outcomes, "slept" and "saw it on re-check", are counted).
 *
 *   phase 1: the consumer sleeps, the producer publishes  (cons_wait)
 *   phase 2: the producer sleeps, the consumer releases   (prod_wait)
 *
 * A lost wake-up is detected exactly, not by a timeout guess: the sleeper
 * polls its eventfd with a short timeout, and once the waker has reported
 * "done i" (it rings before reporting), an eventfd that is still silent
 * while the sleeper is armed and the ring has changed is a lost wake-up.
 * Stale rings from earlier iterations are drained before each "turn", so
 * they cannot hide one.
 *
 * Usage: ring-lost-wakeup [iterations-per-phase [seconds]]
 *        (defaults 20000 and 10: whichever limit comes first)
 *
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tests/ring/ring-test.h"

#define RING 4096u
#define LEN 100u /* phase 2 record payload: 112-byte records, 36 fill the ring */

/* Rendezvous state of one phase, in a MAP_SHARED page. */
struct lw_phase {
	_Atomic uint64_t turn; /* sleeper: "I am arming for iteration turn" */
	_Atomic uint64_t done; /* waker: "iteration done is published (and rung)" */
	_Atomic uint64_t stop; /* first iteration that will not run (0: none yet) */
};

struct lw_shared {
	struct lw_phase ph[2];
	_Atomic int abort; /* either side failed */
};

static struct lw_shared *sh;
static int cons_bell, prod_bell;

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Spin until *v >= want (yielding now and then); false on abort. */
static bool wait_for(_Atomic uint64_t *v, uint64_t want)
{
	for (unsigned spins = 0; atomic_load_explicit(v, memory_order_acquire) < want; spins++) {
		if (atomic_load_explicit(&sh->abort, memory_order_relaxed))
			return false;
		if (spins % 256 == 255)
			sched_yield();
		else
			relax();
	}
	return true;
}

/* The random delay that slides the publish across the arm window. */
static void tiny_delay(uint64_t *rng)
{
	uint64_t n = t_below(rng, 4) ? t_below(rng, 64) : t_below(rng, 2000);
	for (uint64_t i = 0; i < n; i++)
		relax();
}

static void drain_bell(int efd)
{
	uint64_t v;
	while (read(efd, &v, sizeof(v)) == sizeof(v))
		;
}

/*
 * Sleep on `efd` after a successful arm in iteration i of phase ph.
 * Returns 0 when the bell rang, -1 on a lost wake-up or abort.
 */
static int sleep_on(struct lw_phase *ph, int efd, uint64_t i, const char *who)
{
	struct pollfd pfd = {efd, POLLIN, 0};
	for (;;) {
		bool waker_done = atomic_load_explicit(&ph->done, memory_order_acquire) >= i;
		int n = poll(&pfd, 1, waker_done ? 0 : 50);
		if (n < 0 && errno == EINTR)
			continue;
		CHECKF(n >= 0, "poll: %s", strerror(errno));
		if (n > 0) {
			drain_bell(efd);
			return 0;
		}
		if (atomic_load(&sh->abort))
			return -1;
		if (waker_done) {
			/* the waker finished iteration i (it rings before saying
			 * so) and the bell is silent: the wake-up was lost */
			fprintf(stderr, "%s: LOST WAKE-UP in iteration %" PRIu64 "\n", who, i);
			return -1;
		}
	}
}

struct stats {
	uint64_t iters, slept, rechecked;
};

/* ---- phase 1: the consumer (parent) sleeps, the producer (child) wakes */

static int cons_phase1(struct shf_ring *c, uint64_t *rng, double deadline, uint64_t max,
		       struct stats *st)
{
	struct lw_phase *ph = &sh->ph[0];
	struct shf_ring_view v;
	for (uint64_t i = 1;; i++) {
		/* the producer finished i-1 (including any ring): drain stale
		 * bells, so that one cannot hide a lost wake-up */
		if (!wait_for(&ph->done, i - 1))
			return -1;
		drain_bell(cons_bell);
		if (i > max || t_now() > deadline) {
			atomic_store(&ph->stop, i); /* before turn: read after it */
			atomic_store(&ph->turn, i); /* the producer waits for it */
			return 0;
		}
		atomic_store_explicit(&ph->turn, i, memory_order_release);
		tiny_delay(rng);
		bool sleep = shf_ring_cons_arm(c);
		if (sleep) {
			st->slept++;
			if (sleep_on(ph, cons_bell, i, "consumer"))
				return -1;
		} else {
			st->rechecked++;
		}
		CHECK(c->err == 0);
		/* woken or not, record i must be visible now */
		int rc = shf_ring_peek(c, &v);
		CHECKF(rc == 1, "iteration %" PRIu64 ": woken but peek returned %d", i, rc);
		uint64_t got;
		CHECK(v.len == 8);
		memcpy(&got, v.data, 8);
		CHECKF(got == i, "iteration %" PRIu64 ": got record %" PRIu64, i, got);
		CHECK(shf_ring_peek(c, &v) == 0);
		shf_ring_release(c);
		st->iters++;
	}
}

static int prod_phase1(struct shf_ring *p, uint64_t *rng)
{
	struct lw_phase *ph = &sh->ph[0];
	for (uint64_t i = 1;; i++) {
		if (!wait_for(&ph->turn, i))
			return -1;
		if (atomic_load(&ph->stop) == i)
			return 0;
		tiny_delay(rng);
		uint8_t *d = shf_ring_reserve(p, 8, SHF_REC_MSG);
		if (!d) {
			fprintf(stderr, "producer: ring full in phase 1 (err %d)\n", p->err);
			return -1;
		}
		memcpy(d, &i, 8);
		if (shf_ring_publish(p))
			shf_bell_ring(cons_bell);
		atomic_store_explicit(&ph->done, i, memory_order_release);
	}
}

/* ---- phase 2: the producer (child) sleeps, the consumer (parent) wakes */

static int prod_phase2(struct shf_ring *p, uint64_t *rng, struct stats *st)
{
	struct lw_phase *ph = &sh->ph[1];
	uint64_t seq = 0;
	for (uint64_t i = 1;; i++) {
		/* fill the ring (the consumer is not asleep in this phase) */
		uint8_t *d;
		while ((d = shf_ring_reserve(p, LEN, SHF_REC_MSG)))
			t_pattern_fill(d, LEN, seq++);
		if (p->err)
			return -1;
		shf_ring_publish(p);
		/* the consumer finished i-1 (including any ring) */
		if (!wait_for(&ph->done, i - 1))
			return -1;
		drain_bell(prod_bell);
		if (atomic_load(&ph->stop) == i)
			return 0;
		atomic_store_explicit(&ph->turn, i, memory_order_release);
		tiny_delay(rng);
		if (shf_ring_prod_arm(p, LEN)) {
			st->slept++;
			if (sleep_on(ph, prod_bell, i, "producer"))
				return -1;
		} else {
			st->rechecked++;
		}
		if (p->err)
			return -1;
		/* woken or not, the consumer's release must be visible now */
		if (shf_ring_prod_free(p) < 2 * shf_ring_rec_bytes(LEN)) {
			fprintf(stderr, "producer: iteration %" PRIu64 ": woken without space\n", i);
			return -1;
		}
		st->iters++;
	}
}

static int cons_phase2(struct shf_ring *c, uint64_t *rng, double deadline, uint64_t max)
{
	struct lw_phase *ph = &sh->ph[1];
	struct shf_ring_view v;
	uint64_t seq = 0;
	for (uint64_t i = 1;; i++) {
		if (!wait_for(&ph->turn, i))
			return -1;
		tiny_delay(rng);
		int rc;
		uint64_t n = 0;
		while ((rc = shf_ring_peek(c, &v)) == 1) {
			CHECK(v.len == LEN && t_pattern_check(v.data, LEN, seq) < 0);
			seq++;
			n++;
		}
		CHECKF(rc == 0 && n > 0, "iteration %" PRIu64 ": peek %d after %" PRIu64, i, rc, n);
		if (shf_ring_release(c))
			shf_bell_ring(prod_bell);
		bool last = i >= max || t_now() > deadline;
		if (last) /* before done: the producer reads stop after done */
			atomic_store(&ph->stop, i + 1);
		atomic_store_explicit(&ph->done, i, memory_order_release);
		if (last)
			return 0;
	}
}

int main(int argc, char **argv)
{
	uint64_t max = t_count_arg(argc, argv, 1, "SHF_RING_LOST_WAKEUP_ITERS", 20000);
	uint64_t secs = t_count_arg(argc, argv, 2, "SHF_RING_LOST_WAKEUP_SECS", 10);

	struct t_region reg;
	t_region_open(&reg, RING, shf_ring_max_payload(RING));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	cons_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	prod_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(cons_bell >= 0 && prod_bell >= 0);

	struct shf_ring c, p;
	CHECK(shf_shm_ring(reg.base, &reg.l, SHF_SHM_SEND, &c, true) == 0);
	shf_ring_init_consumer(&c);
	CHECK(shf_shm_ring(reg.base, &reg.l, SHF_SHM_SEND, &p, false) == 0);

	pid_t parent = getpid();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		shf_ring_init_producer(&p);
		uint64_t rng = 0x1234567887654321ull;
		struct stats st = {0};
		int rc = prod_phase1(&p, &rng);
		if (rc == 0)
			rc = prod_phase2(&p, &rng, &st);
		if (rc)
			atomic_store(&sh->abort, 1);
		fprintf(stderr, "phase 2 (producer sleeps): %" PRIu64 " iterations, slept %" PRIu64
			", room seen on re-check %" PRIu64 "\n",
			st.iters, st.slept, st.rechecked);
		_exit(rc ? 1 : 0);
	}

	double half = (double)secs / 2;
	uint64_t rng = 0x0fedcba987654321ull;
	struct stats st = {0};
	int rc = cons_phase1(&c, &rng, t_now() + half, max, &st);
	fprintf(stderr, "phase 1 (consumer sleeps): %" PRIu64 " iterations, slept %" PRIu64
		", data seen on re-check %" PRIu64 "\n", st.iters, st.slept, st.rechecked);
	if (rc == 0)
		rc = cons_phase2(&c, &rng, t_now() + half, max);
	if (rc) {
		atomic_store(&sh->abort, 1);
		kill(pid, SIGKILL);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECKF(rc == 0, "consumer side failed");
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "producer side failed (%#x)", status);
	CHECK(st.iters > 0 && st.slept > 0);
	CHECK(c.err == 0);

	close(cons_bell);
	close(prod_bell);
	munmap(sh, sizeof(*sh));
	t_region_close(&reg);
	return 0;
}
