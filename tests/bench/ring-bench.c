/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/ring-bench.c - throughput of the shared-memory ring between
 * two processes, against single-thread memcpy.  A benchmark, not a test:
 * it measures and reports, it asserts nothing.
 *
 * For each payload size a fresh client region (memfd, shf_shm_layout /
 * format) is made and the process forks.  The parent produces: it copies
 * the payload into reserved records and publishes every --batch records
 * (or when the ring is full).  The child consumes: it copies each payload
 * out into a private buffer and releases every --batch records (or when
 * the ring runs dry).  A side that cannot proceed spins for --spin-us,
 * then arms its flag, re-checks and sleeps on its eventfd doorbell, as
 * the daemon and client do.  Each size runs for --seconds; a MARK record
 * ends the run and the consumer stamps the end time.
 *
 * memcpy: one thread copies the same payload size from a source buffer to
 * a destination buffer, both as large as the ring, walking through them
 * as the producer walks through the ring.  The ring moves each byte twice
 * (producer in, consumer out), on two cores.
 *
 * idle: the consumer waits 0.5 s on an empty ring, then the producer
 * waits 0.5 s on a full one; their CPU time over those waits shows whether
 * the idle side sleeps.
 *
 * Usage: ring-bench [--json] [--no-pin] [--seconds S] [--ring BYTES] [--batch N]
 *                   [--spin-us US] [--sizes a,b,c]
 *
 * The producer runs on CPU 0 and the consumer on CPU 1 unless --no-pin.
 * Unpinned, the scheduler's wake-affine placement tends to pull the woken
 * side onto the waker's CPU; the two then take turns on one core and each
 * sleeps while the other runs (seen as ~50% CPU per side and thousands of
 * sleeps per second), which measures the scheduler, not the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/ring.h"
#include "proto/shm.h"

#define MAX_SIZES 16

struct opts {
	bool json;
	double seconds;      /* per payload size */
	uint64_t ring_bytes; /* data array of the ring */
	unsigned batch;      /* records per publish / per release... */
	uint64_t batch_bytes; /* ...or payload bytes, whichever comes first */
	double spin_us;      /* spin this long before sleeping */
	bool pin;            /* producer on CPU 0, consumer on CPU 1 (default) */
	unsigned nsizes;
	uint32_t sizes[MAX_SIZES];
};

/* What both processes write during a run (a MAP_SHARED page). */
struct shared {
	double t_start;      /* producer: before the first record */
	double t_end;        /* consumer: after the end marker */
	uint64_t consumed;   /* consumer: records received */
	uint64_t bytes;      /* consumer: payload bytes received */
	uint64_t cons_sleeps; /* consumer: sleeps on its doorbell */
	double cons_cpu;     /* consumer: CPU seconds */
	int cons_err;        /* consumer: ring error, 0 if none */
	double idle_cpu;     /* idle run: consumer CPU while waiting for data */
	double idle_wall;    /* idle run: how long it waited */
	uint64_t idle_sleeps; /* idle run: its sleeps meanwhile */
};

struct result {
	uint32_t size;
	uint64_t records;
	double secs, rec_per_s, gbps;
	double memcpy_gbps, memcpy_per_s;
	uint64_t prod_sleeps, cons_sleeps, bells;
	double prod_cpu, cons_cpu;
};

/* The idle run: each side waiting with nothing to do. */
struct idle {
	double cons_wall, cons_cpu; /* consumer on an empty ring */
	uint64_t cons_sleeps;
	double prod_wall, prod_cpu; /* producer on a full ring */
	uint64_t prod_sleeps;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void die(const char *what)
{
	fprintf(stderr, "ring-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Pin the calling process to one CPU (best effort: --pin only). */
static void pin_to(const struct opts *o, int cpu)
{
	if (!o->pin)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "ring-bench: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

/* A formatted region in a memfd, mapped MAP_SHARED (inherited by fork). */
struct region {
	int fd;
	void *base;
	struct shf_shm_layout l;
};

static void region_open(struct region *g, uint64_t ring_bytes)
{
	if (shf_shm_layout(ring_bytes, shf_ring_max_payload(ring_bytes), &g->l)) {
		fprintf(stderr, "ring-bench: bad ring size %" PRIu64 "\n", ring_bytes);
		exit(1);
	}
	g->fd = memfd_create("ring-bench", MFD_CLOEXEC);
	if (g->fd < 0)
		die("memfd_create");
	int rc = posix_fallocate(g->fd, 0, (off_t)g->l.region_bytes);
	if (rc) {
		errno = rc;
		die("posix_fallocate");
	}
	g->base = mmap(NULL, g->l.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
	if (g->base == MAP_FAILED)
		die("mmap");
	shf_shm_format(g->base, &g->l, 0, 1);
}

static void region_close(struct region *g)
{
	munmap(g->base, g->l.region_bytes);
	close(g->fd);
}

/* Sleep on a doorbell until it rings (the caller armed and re-checked). */
static void bell_wait(int efd)
{
	struct pollfd pfd = {efd, POLLIN, 0};
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			die("poll");
	uint64_t v;
	if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		die("read eventfd");
}

/* Spin up to spin_us for `ready` to hold; ok_ is set to whether it did. */
#define SPIN_UNTIL(ok_, ready, spin_us)                                            \
	do {                                                                       \
		double end_ = now() + (spin_us) * 1e-6;                            \
		(ok_) = false;                                                     \
		for (unsigned k_ = 1;; k_++) {                                     \
			if (ready) {                                               \
				(ok_) = true;                                      \
				break;                                             \
			}                                                          \
			if (k_ % 64 == 0 && now() > end_)                          \
				break;                                             \
			relax();                                                   \
		}                                                                  \
	} while (0)

/* ------------------------------------------------------------ consumer */

/*
 * Consume until the MARK record.  In the idle run the consumer first
 * measures its own CPU time while it waits for the first record, then
 * stops reading for half a second (the producer blocks on the full ring
 * meanwhile) before it drains the rest.
 */
static void consume(const struct opts *o, struct region *g, struct shared *sh, int my_bell,
		    int peer_bell, uint32_t size, bool idle)
{
	struct shf_shm_layout l;
	struct shf_ring r;
	if (shf_shm_check(g->base, g->l.region_bytes, &l) ||
	    shf_shm_ring(g->base, &l, SHF_SHM_SEND, &r, false)) {
		sh->cons_err = -EPROTO;
		return;
	}
	shf_ring_init_consumer(&r);
	uint8_t *dst = malloc(size ? size : 1);
	if (!dst)
		die("malloc");
	uint64_t n = 0, bytes = 0, sleeps = 0, since_bytes = 0;
	unsigned since = 0;
	double cpu0 = cpu_self(), t0 = now();
	for (;;) {
		struct shf_ring_view v;
		int rc = shf_ring_peek(&r, &v);
		if (rc == 1) {
			if (v.kind == SHF_REC_MARK)
				break;
			if (idle && n == 0) {
				sh->idle_cpu = cpu_self() - cpu0;
				sh->idle_wall = now() - t0;
				sh->idle_sleeps = sleeps;
				usleep(500000);
			}
			memcpy(dst, v.data, v.len);
			n++;
			bytes += v.len;
			since_bytes += v.len;
			if (++since >= o->batch || since_bytes >= o->batch_bytes) {
				since = 0;
				since_bytes = 0;
				if (shf_ring_release(&r))
					shf_bell_ring(peer_bell);
			}
			continue;
		}
		if (rc < 0) {
			sh->cons_err = rc;
			break;
		}
		/* empty: give back what was read, spin a little, then sleep */
		since = 0;
		since_bytes = 0;
		if (shf_ring_release(&r))
			shf_bell_ring(peer_bell);
		bool ready;
		SPIN_UNTIL(ready, shf_ring_cons_avail(&r) || r.err, o->spin_us);
		if (ready)
			continue;
		if (shf_ring_cons_arm(&r)) {
			sleeps++;
			bell_wait(my_bell);
		}
	}
	sh->t_end = now();
	if (shf_ring_release(&r))
		shf_bell_ring(peer_bell);
	sh->consumed = n;
	sh->bytes = bytes;
	sh->cons_sleeps = sleeps;
	sh->cons_cpu = cpu_self() - cpu0;
	free(dst);
}

/* ------------------------------------------------------------ producer */

struct prod_stats {
	uint64_t records, sleeps, bells;
	double cpu;
};

/* Wait for room for a `len` record: spin, then arm / re-check / sleep. */
static void wait_room(const struct opts *o, struct shf_ring *r, uint32_t len, int my_bell,
		      struct prod_stats *ps)
{
	uint64_t need = 2 * shf_ring_rec_bytes(len);
	if (need > r->size)
		need = r->size;
	bool ready;
	SPIN_UNTIL(ready, shf_ring_prod_free(r) >= need || r->err, o->spin_us);
	if (ready)
		return;
	if (shf_ring_prod_arm(r, len)) {
		ps->sleeps++;
		bell_wait(my_bell);
	}
}

static void publish(struct shf_ring *r, int peer_bell, struct prod_stats *ps)
{
	if (shf_ring_publish(r)) {
		shf_bell_ring(peer_bell);
		ps->bells++;
	}
}

/* Put one record of `len` bytes (waiting for room as needed). */
static void put(const struct opts *o, struct shf_ring *r, uint32_t len, uint32_t kind,
		int my_bell, int peer_bell, struct prod_stats *ps)
{
	uint8_t *d;
	while (!(d = shf_ring_reserve(r, len, kind)) && !r->err) {
		publish(r, peer_bell, ps);
		wait_room(o, r, len, my_bell, ps);
	}
	if (d)
		memset(d, 0x5a, len);
	publish(r, peer_bell, ps);
}

static void produce(const struct opts *o, struct shf_ring *r, struct shared *sh, int my_bell,
		    int peer_bell, uint32_t size, struct prod_stats *ps)
{
	uint8_t *src = malloc(size ? size : 1);
	if (!src)
		die("malloc");
	memset(src, 0x5a, size);
	/* look at the clock about every 64 KiB of payload */
	uint64_t mask = 1;
	while (mask * (size + 8) < (64u << 10) && mask < 4096)
		mask <<= 1;
	mask -= 1;
	unsigned since = 0;
	uint64_t since_bytes = 0;
	double cpu0 = cpu_self();
	double deadline = now() + o->seconds;
	sh->t_start = now();
	for (uint64_t n = 0;;) {
		if ((n & mask) == 0 && now() > deadline)
			break;
		uint8_t *d = shf_ring_reserve(r, size, SHF_REC_MSG);
		if (!d) {
			if (r->err)
				break;
			since = 0;
			since_bytes = 0;
			publish(r, peer_bell, ps);
			wait_room(o, r, size, my_bell, ps);
			continue;
		}
		memcpy(d, src, size);
		n++;
		since_bytes += size;
		if (++since >= o->batch || since_bytes >= o->batch_bytes) {
			since = 0;
			since_bytes = 0;
			publish(r, peer_bell, ps);
		}
	}
	put(o, r, 0, SHF_REC_MARK, my_bell, peer_bell, ps);
	ps->cpu = cpu_self() - cpu0;
	free(src);
}

/* ---------------------------------------------------------------- runs */

struct run {
	struct region g;
	struct shared *sh;
	int cons_bell, prod_bell;
	struct shf_ring r; /* the parent's producer view */
	pid_t pid;
};

static void run_start(const struct opts *o, struct run *x, uint32_t size, bool idle)
{
	region_open(&x->g, o->ring_bytes);
	x->sh = mmap(NULL, sizeof(*x->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (x->sh == MAP_FAILED)
		die("mmap");
	memset(x->sh, 0, sizeof(*x->sh));
	x->cons_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	x->prod_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (x->cons_bell < 0 || x->prod_bell < 0)
		die("eventfd");
	if (shf_shm_ring(x->g.base, &x->g.l, SHF_SHM_SEND, &x->r, true)) {
		fprintf(stderr, "ring-bench: cannot bind the ring\n");
		exit(1);
	}
	shf_ring_init_producer(&x->r);
	pid_t parent = getpid();
	x->pid = fork();
	if (x->pid < 0)
		die("fork");
	if (x->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		pin_to(o, 1);
		consume(o, &x->g, x->sh, x->cons_bell, x->prod_bell, size, idle);
		_exit(x->sh->cons_err ? 1 : 0);
	}
}

static int run_finish(struct run *x)
{
	int status;
	if (waitpid(x->pid, &status, 0) != x->pid)
		die("waitpid");
	close(x->cons_bell);
	close(x->prod_bell);
	region_close(&x->g);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "ring-bench: consumer failed (status %#x, ring error %d)\n",
			status, x->sh->cons_err);
		return -1;
	}
	return 0;
}

static int run_size(const struct opts *o, uint32_t size, struct result *res)
{
	struct run x;
	struct prod_stats ps = {0};
	run_start(o, &x, size, false);
	produce(o, &x.r, x.sh, x.prod_bell, x.cons_bell, size, &ps);
	int rc = run_finish(&x);
	if (rc == 0) {
		struct shared *sh = x.sh;
		res->size = size;
		res->records = sh->consumed;
		res->secs = sh->t_end - sh->t_start;
		res->rec_per_s = (double)sh->consumed / res->secs;
		res->gbps = (double)sh->bytes / res->secs / 1e9;
		res->prod_sleeps = ps.sleeps;
		res->cons_sleeps = sh->cons_sleeps;
		res->bells = ps.bells;
		res->prod_cpu = ps.cpu;
		res->cons_cpu = sh->cons_cpu;
	}
	munmap(x.sh, sizeof(*x.sh));
	return rc;
}

/* The consumer waits 0.5 s on an empty ring; then, while it stops reading
 * for 0.5 s, the producer waits on a full ring. */
static int run_idle(const struct opts *o, struct idle *id)
{
	struct run x;
	struct prod_stats ps = {0};
	run_start(o, &x, 1000, true);
	usleep(500000);
	/* fill the ring; the consumer sees the first record and then pauses */
	while (shf_ring_reserve(&x.r, 1000, SHF_REC_MSG))
		;
	publish(&x.r, x.cons_bell, &ps);
	double c0 = cpu_self(), t0 = now();
	wait_room(o, &x.r, 1000, x.prod_bell, &ps);
	/* keep waiting until the consumer really made room */
	while (shf_ring_prod_free(&x.r) < 2 * shf_ring_rec_bytes(1000) && !x.r.err)
		wait_room(o, &x.r, 1000, x.prod_bell, &ps);
	id->prod_wall = now() - t0;
	id->prod_cpu = cpu_self() - c0;
	id->prod_sleeps = ps.sleeps;
	put(o, &x.r, 0, SHF_REC_MARK, x.prod_bell, x.cons_bell, &ps);
	int rc = run_finish(&x);
	id->cons_wall = x.sh->idle_wall;
	id->cons_cpu = x.sh->idle_cpu;
	id->cons_sleeps = x.sh->idle_sleeps;
	munmap(x.sh, sizeof(*x.sh));
	return rc;
}

/* Single-thread memcpy of `size`-byte pieces through ring-sized buffers. */
static void run_memcpy(const struct opts *o, uint32_t size, struct result *res)
{
	uint64_t span = o->ring_bytes;
	uint8_t *src = malloc(span), *dst = malloc(span);
	if (!src || !dst)
		die("malloc");
	memset(src, 0x5a, span);
	memset(dst, 0, span);
	uint64_t step = (size + 15) & ~(uint64_t)7; /* like a record */
	if (step > span)
		step = span;
	double secs = o->seconds / 4, t0 = now(), t;
	uint64_t n = 0, off = 0;
	do {
		for (int k = 0; k < 256; k++) {
			if (off + size > span)
				off = 0;
			memcpy(dst + off, src + off, size);
			__asm__ volatile("" : : "r"(dst) : "memory"); /* keep the copy */
			off += step;
			n++;
		}
		t = now();
	} while (t - t0 < secs);
	res->memcpy_per_s = (double)n / (t - t0);
	res->memcpy_gbps = (double)n * size / (t - t0) / 1e9;
	free(src);
	free(dst);
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr, "usage: ring-bench [--json] [--no-pin] [--seconds S] [--ring BYTES]\n"
			"                  [--batch N] [--spin-us US] [--sizes a,b,c]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	o->json = false;
	o->pin = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	o->seconds = 1.0;
	o->ring_bytes = 1u << 20;
	o->batch = 64;
	o->spin_us = 20;
	static const uint32_t def[] = {8, 64, 512, 4096, 65536};
	o->nsizes = 5;
	memcpy(o->sizes, def, sizeof(def));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!strcmp(a, "--no-pin")) {
			o->pin = false;
			continue;
		}
		if (!v)
			usage();
		i++;
		char *end = (char *)"";
		if (!strcmp(a, "--seconds"))
			o->seconds = strtod(v, &end);
		else if (!strcmp(a, "--ring"))
			o->ring_bytes = strtoull(v, &end, 0);
		else if (!strcmp(a, "--batch"))
			o->batch = (unsigned)strtoul(v, &end, 0);
		else if (!strcmp(a, "--spin-us"))
			o->spin_us = strtod(v, &end);
		else if (!strcmp(a, "--sizes")) {
			o->nsizes = 0;
			for (const char *p = v; *p && o->nsizes < MAX_SIZES; p = *end ? end + 1 : end)
				o->sizes[o->nsizes++] = (uint32_t)strtoul(p, &end, 0);
		} else
			usage();
		if (*end)
			usage();
	}
	if (o->seconds <= 0 || o->batch == 0 || o->spin_us < 0 || !shf_ring_size_ok(o->ring_bytes))
		usage();
	/* a batch is at most 1/16 of the ring, so that a side never holds
	 * back most of the ring from the other */
	o->batch_bytes = o->ring_bytes / 16;
	for (unsigned k = 0; k < o->nsizes; k++) {
		if (o->sizes[k] > shf_ring_max_payload(o->ring_bytes)) {
			fprintf(stderr, "ring-bench: payload %u exceeds max_rec %u of the ring\n",
				o->sizes[k], shf_ring_max_payload(o->ring_bytes));
			exit(2);
		}
	}
}

static void print_table(const struct opts *o, const struct result *res, const struct idle *id)
{
	printf("ring-bench: 2 processes%s, ring %" PRIu64 " KiB, publish/release every %u records"
	       " or %" PRIu64 " KiB (or when full/empty), spin %.0f us before sleeping,"
	       " %.1f s per size\n",
	       o->pin ? " (pinned to CPUs 0 and 1)" : "", o->ring_bytes >> 10, o->batch,
	       o->batch_bytes >> 10, o->spin_us, o->seconds);
	printf("%8s %12s %9s %12s %8s %11s %11s %9s %9s\n", "payload", "records/s", "GB/s",
	       "memcpy GB/s", "ring/mc", "cons sleeps", "prod sleeps", "cons cpu", "prod cpu");
	for (unsigned k = 0; k < o->nsizes; k++) {
		const struct result *r = &res[k];
		printf("%8u %10.2f M %9.2f %12.2f %7.0f%% %11" PRIu64 " %11" PRIu64
		       " %8.0f%% %8.0f%%\n",
		       r->size, r->rec_per_s / 1e6, r->gbps, r->memcpy_gbps,
		       100 * r->gbps / r->memcpy_gbps, r->cons_sleeps, r->prod_sleeps,
		       100 * r->cons_cpu / r->secs, 100 * r->prod_cpu / r->secs);
	}
	printf("idle: consumer on an empty ring %.0f ms: cpu %.2f ms, %" PRIu64 " sleep(s); "
	       "producer on a full ring %.0f ms: cpu %.2f ms, %" PRIu64 " sleep(s)\n",
	       id->cons_wall * 1e3, id->cons_cpu * 1e3, id->cons_sleeps, id->prod_wall * 1e3,
	       id->prod_cpu * 1e3, id->prod_sleeps);
	printf("(GB = 1e9 payload bytes; the ring copies each byte twice, in and out, on two"
	       " cores; memcpy copies once on one core)\n");
}

static void print_json(const struct opts *o, const struct result *res, const struct idle *id)
{
	json_t *root = json_object(), *arr = json_array();
	json_object_set_new(root, "ring_bytes", json_integer((json_int_t)o->ring_bytes));
	json_object_set_new(root, "batch", json_integer(o->batch));
	json_object_set_new(root, "batch_bytes", json_integer((json_int_t)o->batch_bytes));
	json_object_set_new(root, "spin_us", json_real(o->spin_us));
	json_object_set_new(root, "pinned", json_boolean(o->pin));
	json_object_set_new(root, "seconds", json_real(o->seconds));
	for (unsigned k = 0; k < o->nsizes; k++) {
		const struct result *r = &res[k];
		json_t *e = json_object();
		json_object_set_new(e, "payload", json_integer(r->size));
		json_object_set_new(e, "records", json_integer((json_int_t)r->records));
		json_object_set_new(e, "seconds", json_real(r->secs));
		json_object_set_new(e, "records_per_s", json_real(r->rec_per_s));
		json_object_set_new(e, "gb_per_s", json_real(r->gbps));
		json_object_set_new(e, "memcpy_gb_per_s", json_real(r->memcpy_gbps));
		json_object_set_new(e, "memcpy_per_s", json_real(r->memcpy_per_s));
		json_object_set_new(e, "consumer_sleeps", json_integer((json_int_t)r->cons_sleeps));
		json_object_set_new(e, "producer_sleeps", json_integer((json_int_t)r->prod_sleeps));
		json_object_set_new(e, "producer_bells", json_integer((json_int_t)r->bells));
		json_object_set_new(e, "consumer_cpu_s", json_real(r->cons_cpu));
		json_object_set_new(e, "producer_cpu_s", json_real(r->prod_cpu));
		json_array_append_new(arr, e);
	}
	json_object_set_new(root, "results", arr);
	json_t *idle = json_object();
	json_object_set_new(idle, "consumer_wait_s", json_real(id->cons_wall));
	json_object_set_new(idle, "consumer_cpu_s", json_real(id->cons_cpu));
	json_object_set_new(idle, "consumer_sleeps", json_integer((json_int_t)id->cons_sleeps));
	json_object_set_new(idle, "producer_wait_s", json_real(id->prod_wall));
	json_object_set_new(idle, "producer_cpu_s", json_real(id->prod_cpu));
	json_object_set_new(idle, "producer_sleeps", json_integer((json_int_t)id->prod_sleeps));
	json_object_set_new(root, "idle", idle);
	char *s = json_dumps(root, JSON_INDENT(2));
	if (s)
		puts(s);
	free(s);
	json_decref(root);
}

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	pin_to(&o, 0);
	struct result res[MAX_SIZES];
	memset(res, 0, sizeof(res));
	for (unsigned k = 0; k < o.nsizes; k++) {
		if (run_size(&o, o.sizes[k], &res[k]))
			return 1;
		run_memcpy(&o, o.sizes[k], &res[k]);
	}
	struct idle id = {0};
	if (run_idle(&o, &id))
		return 1;
	if (o.json)
		print_json(&o, res, &id);
	else
		print_table(&o, res, &id);
	return 0;
}
