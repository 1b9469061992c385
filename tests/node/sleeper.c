/* SPDX-License-Identifier: MIT */
/*
 * tests/node/sleeper.c - "the sleeper pays" (issue 13, third step;
 * docs/ring.md [M1]/[M2]): a client that registered for
 * membarrier(GLOBAL_EXPEDITED) publishes its send ring without the [D2]
 * fence, and the daemon runs that membarrier and re-checks the ring
 * before it sleeps on it for good.  A lost wake-up leaves the last
 * records of a burst in the ring with nobody to take them: the consumer
 * then misses them and fails at its timeout.
 *
 *   node-sleeper [THREADS [BURSTS]]
 *
 * (a) Rank 0 (thread mode) sends BURSTS bursts of 1-8 messages of 16 B
 *     with a random gap of 0-150 us between bursts (around the daemon's
 *     sleeper_wait_us of 50 us, so the daemon arms, barriers and sleeps
 *     at every point of a burst), first from the opening thread alone,
 *     then from THREADS more threads at once (the biased lock revoked,
 *     the mutex path).  Rank 1 (seq-consumer) checks every message
 *     exactly once and in order per thread.  The daemon must report
 *     rank 0 as fence_free = 1 and sleep_barriers > 0.
 * (b) The same with SHF_SEND_FENCE=1 in rank 0 (it does not ask): still
 *     exactly once, fence_free = 0.  A raw client with an older, 80-byte
 *     REGISTER is accepted and told nothing (flags 0); a REGISTER with an
 *     unknown flag is refused with -EINVAL; a daemon with the default
 *     sleeper_pays=0 answers a registered client with flags 0.
 * The test's daemon runs with --sleeper-pays=1 (the default is 0).
 * (c) After the traffic the daemon stops barriering (sleep_barriers stays
 *     put, polled) and uses under 2 % of a core over 1 s, as node-poll.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shuffle.h"
#include "tests/lib/daemon.h"
#include "tests/node/rawconn.h"
#include "tests/node/seq-consumer.h"

#define LEN 16
#define MAXT 8

static struct td_env *e;

struct sender {
	struct shf_ctx *c;
	uint32_t id;      /* message type: the thread */
	long bursts;
	unsigned seed;
	uint64_t seq;     /* sends that returned 0 */
	int err;
};

static void gap_us(unsigned us)
{
	if (!us)
		return;
	struct timespec ts = {0, (long)us * 1000};
	nanosleep(&ts, NULL);
}

static void *send_loop(void *arg)
{
	struct sender *s = arg;
	char buf[LEN] = {0};
	for (long b = 0; b < s->bursts; b++) {
		unsigned n = 1 + (unsigned)rand_r(&s->seed) % 8;
		for (unsigned i = 0; i < n; i++) {
			memcpy(buf, &s->seq, sizeof(s->seq));
			int r = shf_send(s->c, 1, s->id, buf, LEN, 0);
			if (r) {
				s->err = r;
				return NULL;
			}
			s->seq++;
		}
		/* traffic stops for a while: the daemon's sleep threshold */
		gap_us((unsigned)rand_r(&s->seed) % 151);
	}
	return NULL;
}

static long long client_stat(const char *job, int rank, const char *name)
{
	json_t *doc = td_query(e->d, "clients");
	CHECK(doc != NULL);
	json_t *cl = td_client_find(doc, job, rank);
	CHECKF(cl != NULL, "no client rank %d of job %s", rank, job);
	json_t *v = json_object_get(json_object_get(cl, "stats"), name);
	CHECKF(json_is_integer(v), "client stats have no %s", name);
	long long n = json_integer_value(v);
	json_decref(doc);
	return n;
}

static long long daemon_stat(const char *name)
{
	json_t *st = td_query(e->d, "stats");
	CHECK(st != NULL);
	char key[96];
	snprintf(key, sizeof(key), "daemon.%s", name);
	long long n = td_num(st, key);
	json_decref(st);
	return n;
}

/* One job: rank 1 a forked seq-consumer, rank 0 here with nt helper
 * threads after the owner's own bursts.  Returns rank 0's fence_free. */
static long long run_job(const char *job, int nt, long bursts, unsigned seed)
{
	setenv("SHF_JOB", job, 1);
	int wfd;
	pid_t child;
	struct shf_ctx *c = seq_start(&(struct seq_consumer){.types = MAXT + 1, .len = LEN,
					     .timeout_ms = 60000, .max_reports = 10,
					     .wait_sync = NULL, .env = e},
				      60000, &wfd, &child);
	long long ff = client_stat(job, 0, "fence_free");

	struct sender s[MAXT + 1];
	for (int i = 0; i <= nt; i++)
		s[i] = (struct sender){c, (uint32_t)i, bursts, seed + (unsigned)i * 7919u, 0, 0};
	send_loop(&s[0]); /* the owner alone: the biased lock's fast path */
	pthread_t t[MAXT + 1];
	for (int i = 1; i <= nt; i++)
		CHECK(pthread_create(&t[i], NULL, send_loop, &s[i]) == 0);
	s[0].bursts = bursts;
	send_loop(&s[0]); /* and with the helpers: the mutex */
	for (int i = 1; i <= nt; i++)
		pthread_join(t[i], NULL);
	uint64_t total = 0;
	for (int i = 0; i <= nt; i++) {
		CHECKF(s[i].err == 0, "%s: thread %d: %s (%s)", job, i, shf_strerror(s[i].err),
		       shf_error_detail());
		total += s[i].seq;
	}
	/* no flush: the last burst must reach the consumer on its own (a
	 * lost wake-up would leave it in the ring until the timeout) */
	int status = seq_finish(wfd, child, (unsigned long long)total);
	CHECKF(status == 0, "%s: the consumer saw a missing, duplicated, reordered or extra "
	       "message (status %d)", job, status);
	CHECK(shf_close(c) == 0);
	fprintf(stderr, "sleeper: %s: %d threads, %llu messages in bursts, exactly once and in "
		"order; fence_free %lld\n", job, nt + 1, (unsigned long long)total, ff);
	return ff;
}

/* A raw REGISTER of blen bytes with flags: the reply's type; the
 * REGISTER_OK's flags to *flags_p, an ERROR's code to *err_p. */
static int raw_register(const struct td_daemon *d, const char *job, size_t blen, uint32_t flags,
			uint32_t *flags_p, int *err_p)
{
	int fd = rc_connect(d->sock);
	CHECKF(fd >= 0, "connect: %s", strerror(-fd));
	CHECK(rc_hello(fd, 5000, NULL) == SHF_IPC_HELLO_OK);
	struct shf_ipc_register m;
	memset(&m, 0, sizeof(m));
	snprintf(m.job, sizeof(m.job), "%s", job);
	m.rank = 0;
	m.world = 1;
	m.flags = flags;
	CHECK(shf_ipc_send(fd, SHF_IPC_REGISTER, 2, &m, blen, NULL, 0) == 0);
	int t = rc_next(fd, 5000, err_p);
	if (t == SHF_IPC_REGISTER_OK) {
		struct shf_ipc_register_ok ok;
		memcpy(&ok, rc_buf + sizeof(struct shf_ipc_hdr), sizeof(ok));
		*flags_p = ok.flags;
	}
	close(fd);
	return t;
}

static double idle_cpu_pct(void)
{
	char path[64], *s;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)e->d->pid);
	s = td_read_file(path);
	CHECK(s != NULL);
	long long c0 = atoll(s), t0 = td_now_ms();
	free(s);
	td_sleep_ms(1000);
	s = td_read_file(path);
	CHECK(s != NULL);
	long long c1 = atoll(s), t1 = td_now_ms();
	free(s);
	return 100.0 * (double)(c1 - c0) / (1e6 * (double)(t1 - t0));
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 3;
	long bursts = argc > 2 ? atol(argv[2]) : 2000;
	unsigned seed = (unsigned)time(NULL);
	e = td_init("sleeper", 170, TD_SOCKET_ENV);
	CHECK(nt >= 1 && nt <= MAXT && bursts > 0);
	fprintf(stderr, "sleeper: seed %u\n", seed);
	const char *pays[] = {"--sleeper-pays=1", NULL};
	CHECK(td_start(e->d, pays, NULL) == 0);
	setenv("SHF_SOCKET", e->d->sock, 1);

	/* (a) fence-free */
	long long b0 = daemon_stat("sleep_barriers");
	long long ff = run_job("sleeper-a", nt, bursts, seed);
	CHECKF(ff == 1, "rank 0 did not run fence-free (fence_free %lld)", ff);
	long long b1 = daemon_stat("sleep_barriers");
	fprintf(stderr, "sleeper: sleep_barriers %lld, sleep_barrier_wakes %lld\n", b1 - b0,
		daemon_stat("sleep_barrier_wakes"));
	CHECKF(b1 > b0, "the daemon never ran its membarrier (sleep_barriers %lld)", b1);

	/* (b) a client that keeps the fence, an old REGISTER, a bad flag */
	setenv("SHF_SEND_FENCE", "1", 1);
	ff = run_job("sleeper-b", nt, bursts / 4, seed + 1);
	unsetenv("SHF_SEND_FENCE");
	CHECKF(ff == 0, "SHF_SEND_FENCE=1 and still fence_free %lld", ff);
	uint32_t fl = 99;
	int err = 0;
	int t = raw_register(e->d, "sleeper-old", SHF_IPC_REGISTER_V0_BYTES, 0, &fl, &err);
	CHECKF(t == SHF_IPC_REGISTER_OK, "an 80-byte REGISTER got type %d (err %d)", t, err);
	CHECKF(fl == 0, "an old client was offered flags %#x", fl);
	t = raw_register(e->d, "sleeper-new", sizeof(struct shf_ipc_register), SHF_REG_GLOBAL_MB, &fl,
			 &err);
	CHECKF(t == SHF_IPC_REGISTER_OK && fl == SHF_REG_OK_SLEEPER_PAYS,
	       "a registered client got type %d flags %#x", t, fl);
	err = 0;
	t = raw_register(e->d, "sleeper-bad", sizeof(struct shf_ipc_register), 0x80, &fl, &err);
	CHECKF(t == SHF_IPC_ERROR && err == -EINVAL, "an unknown flag got type %d err %d", t, err);
	/* a daemon with the default sleeper_pays=0 pays for nobody */
	struct td_daemon *off = td_daemon("off");
	CHECK(td_start(off, NULL, NULL) == 0);
	fl = 99;
	t = raw_register(off, "sleeper-off", sizeof(struct shf_ipc_register), SHF_REG_GLOBAL_MB,
			 &fl, &err);
	CHECKF(t == SHF_IPC_REGISTER_OK && fl == 0,
	       "sleeper_pays=0 and a registered client got type %d flags %#x", t, fl);
	td_stop(off);

	/* (c) idle: the barriers stop (polled), then about 0 CPU */
	long long p0 = daemon_stat("sleep_barriers"), p1 = -1;
	for (int64_t end = td_now_ms() + 10000; td_now_ms() < end; p0 = p1) {
		td_sleep_ms(300);
		p1 = daemon_stat("sleep_barriers");
		if (p1 == p0)
			break;
	}
	CHECKF(p1 == p0, "no traffic for 10 s and the daemon still barriers (%lld -> %lld)", p0,
	       p1);
	double pct = idle_cpu_pct();
	fprintf(stderr, "sleeper: idle daemon after traffic: %.3f%% of a core over 1 s\n", pct);
	CHECKF(pct < 2.0, "an idle daemon used %.3f%% of a core (bound 2%%)", pct);
	td_stop(e->d);
	return check_result();
}
