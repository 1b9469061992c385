/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench-harness.c - the parts of shuffle-bench every mode
 * shares: message headers and their checks, the latency histogram, the
 * stop condition, /proc probes and the daemon probes (shufflectl).
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

_Noreturn void bench_die(struct bench *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "shuffle-bench: rank %d: ", b ? b->rank : -1);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2); /* not reached */
}

/* ------------------------------------------------------------- histogram */

static unsigned hist_index(uint64_t v)
{
	if (v < BENCH_HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 5 */
	unsigned sub = (unsigned)(v >> (e - 5)) & (BENCH_HIST_SUB - 1);
	return BENCH_HIST_SUB + (e - 5) * BENCH_HIST_SUB + sub;
}

void bench_hist_add(struct bench_hist *h, uint64_t v)
{
	h->n[hist_index(v)]++;
}

uint64_t bench_hist_count(const struct bench_hist *h)
{
	uint64_t t = 0;
	for (unsigned i = 0; i < BENCH_HIST_BUCKETS; i++)
		t += h->n[i];
	return t;
}

double bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t total = bench_hist_count(h);
	if (!total)
		return 0;
	/* the smallest value with at least ceil(q * total) samples at or below */
	uint64_t want = (uint64_t)(q * (double)total);
	if ((double)want < q * (double)total)
		want++;
	if (want < 1)
		want = 1;
	uint64_t acc = 0;
	for (unsigned i = 0; i < BENCH_HIST_BUCKETS; i++) {
		acc += h->n[i];
		if (acc < want)
			continue;
		if (i < BENCH_HIST_SUB)
			return (double)i;
		unsigned e = (i - BENCH_HIST_SUB) / BENCH_HIST_SUB + 5;
		unsigned sub = (i - BENCH_HIST_SUB) % BENCH_HIST_SUB;
		double lo = (double)((uint64_t)(BENCH_HIST_SUB + sub) << (e - 5));
		double width = (double)(UINT64_C(1) << (e - 5));
		return lo + width / 2;
	}
	return 0;
}

/* --------------------------------------------------------------- messages */

void bench_prefill(void *p, size_t bytes)
{
	memset(p, BENCH_FILL, bytes);
}

/* --rate: sleep until this message is due (start + sent / rate), in steps
 * of at most 50 us with the mode's idle hook between them, if it has one. */
static void pace(struct bench *b)
{
	uint64_t due = b->start_ns + (uint64_t)((double)b->sent * 1e9 / b->o.rate);
	for (;;) {
		uint64_t now = bench_now_ns();
		if (now >= due)
			return;
		uint64_t until = due;
		if (b->idle) {
			b->idle(b);
			if (until - now > 50000)
				until = now + 50000;
		}
		struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
}

void bench_fill(struct bench *b, void *p, int dst)
{
	if (b->o.rate > 0)
		pace(b);
	if (b->fault && b->sent == 100) {
		/* self-test: rank 0's 101st message skips or repeats a number */
		if (b->fault == 1)
			b->send_seq[dst]++;
		else if (b->send_seq[dst])
			b->send_seq[dst]--;
		b->fault = 0;
	}
	uint64_t w0 = ((uint64_t)b->rank << BENCH_SEQ_BITS) | b->send_seq[dst]++;
	memcpy(p, &w0, 8);
	if (b->timestamps) {
		uint64_t t = 0;
		if (b->lat_left <= 1) {
			t = bench_now_ns(); /* never 0: the clock has run since boot */
			b->lat_left = b->o.lat_every;
		} else {
			b->lat_left--;
		}
		memcpy((char *)p + 8, &t, 8);
	}
	b->sent++;
	b->sent_cross += b->node_of[dst] != b->node;
}

static void check_fail(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check_fail(struct bench *b, const char *fmt, ...)
{
	if (b->errors++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b->first_error, sizeof(b->first_error), fmt, ap);
		va_end(ap);
	}
}

void bench_check(struct bench *b, int src, const void *data, uint32_t len)
{
	b->received++;
	b->recv_bytes += len;
	if (src < 0 || src >= b->world) {
		check_fail(b, "message from rank %d outside the world", src);
		return;
	}
	if (len != b->o.size) {
		check_fail(b, "message from %d has %u bytes, %u expected", src, len, b->o.size);
		return;
	}
	uint64_t w0;
	memcpy(&w0, data, 8);
	uint64_t psrc = w0 >> BENCH_SEQ_BITS, seq = w0 & BENCH_SEQ_MASK;
	if (psrc != (uint64_t)src) {
		check_fail(b, "message delivered as from %d carries source %llu", src,
			   (unsigned long long)psrc);
		return;
	}
	uint64_t want = b->recv_seq[src];
	if (seq != want) {
		check_fail(b, "from %d: sequence %llu, expected %llu (%s)", src,
			   (unsigned long long)seq, (unsigned long long)want,
			   seq < want ? "duplicate or reordered" : "lost or reordered");
		if (seq > want)
			b->recv_seq[src] = seq + 1; /* resynchronise: one error per event */
		return;
	}
	b->recv_seq[src] = want + 1;
	if (len > 16 && ((const unsigned char *)data)[len - 1] != BENCH_FILL)
		check_fail(b, "from %d seq %llu: last payload byte corrupt", src,
			   (unsigned long long)seq);
	if (b->timestamps) {
		uint64_t t;
		memcpy(&t, (const char *)data + 8, 8);
		if (t) {
			uint64_t now = bench_now_ns();
			bench_hist_add(b->hist, now > t ? now - t : 0);
		}
	}
	if (b->o.delay_us) {
		struct timespec d = {0, (long)b->o.delay_us * 1000};
		while (nanosleep(&d, &d) && errno == EINTR)
			;
	}
}

bool bench_time_up(struct bench *b)
{
	if (b->o.count)
		return false;
	uint64_t now = bench_now_ns();
	if (b->progress && now >= b->next_progress_ns) {
		double el = (double)(now - b->start_ns) / 1e9;
		/* only the sender's own counters: the receiver side may be another thread */
		fprintf(stderr, "\rshuffle-bench: %.1f s of %.1f, rank 0 sent %llu   ", el,
			b->o.seconds, (unsigned long long)b->sent);
		b->next_progress_ns = now + 500000000u;
		b->progress_shown = true;
	}
	return (double)(now - b->start_ns) >= b->o.seconds * 1e9;
}

bool bench_send_done(struct bench *b)
{
	if (b->o.count)
		return b->sent >= b->o.count;
	if (b->sent & 63)
		return false;
	return bench_time_up(b);
}

/* ------------------------------------------------------------ /proc probes */

long bench_proc_kib(int pid, const char *field)
{
	char path[64];
	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[256];
	size_t fl = strlen(field);
	long v = -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, fl) && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* utime + stime from /proc/<pid>/stat: clock ticks (10 ms here). */
static double stat_cpu_s(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold blanks and parentheses: skip to the last ')' */
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	p++;
	/* fields after the name start at 3 (state); utime is 14, stime 15 */
	unsigned long long ut = 0, st = 0;
	int field = 2;
	char *save = NULL;
	for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		field++;
		if (field == 14)
			ut = strtoull(tok, NULL, 10);
		else if (field == 15) {
			st = strtoull(tok, NULL, 10);
			break;
		}
	}
	if (field != 15)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	return (double)(ut + st) / (double)(hz > 0 ? hz : 100);
}

/* The same time in nanoseconds: the first field of /proc/<pid>/task/<tid>/
 * schedstat (sum_exec_runtime), summed over the threads.  Threads that
 * exited meanwhile are missed (the daemon's live for the whole run). */
static double schedstat_cpu_s(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	double total = 0;
	int seen = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p2[96];
		snprintf(p2, sizeof(p2), "/proc/%d/task/%.16s/schedstat", pid, e->d_name);
		FILE *f = fopen(p2, "re");
		if (!f)
			continue;
		unsigned long long ns;
		if (fscanf(f, "%llu", &ns) == 1) {
			total += (double)ns / 1e9;
			seen++;
		}
		fclose(f);
	}
	closedir(d);
	return seen ? total : -1;
}

double bench_proc_cpu_s(int pid)
{
	double s = schedstat_cpu_s(pid);
	return s >= 0 ? s : stat_cpu_s(pid);
}

double bench_self_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---------------------------------------------------------- daemon probes */

/* shufflectl: $SHF_SHUFFLECTL, else next to the build tree's client/, else
 * beside this program (installed together), else $PATH.  NULL if none. */
static const char *find_shufflectl(char *buf, size_t cap)
{
	const char *env = getenv("SHF_SHUFFLECTL");
	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			int n1 = snprintf(buf, cap, "%s/../../client/shufflectl", self);
			if (n1 > 0 && (size_t)n1 < cap && access(buf, X_OK) == 0)
				return buf;
			int n2 = snprintf(buf, cap, "%s/shufflectl", self);
			if (n2 > 0 && (size_t)n2 < cap && access(buf, X_OK) == 0)
				return buf;
		}
	}
	const char *path = getenv("PATH");
	if (!path)
		return NULL;
	char *dup = strdup(path), *save = NULL;
	const char *found = NULL;
	for (char *dir = strtok_r(dup, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		int n3 = snprintf(buf, cap, "%s/shufflectl", dir);
		if (n3 > 0 && (size_t)n3 < cap && access(buf, X_OK) == 0)
			found = buf;
	}
	free(dup);
	return found;
}

/* Run `shufflectl [-s $SHF_SOCKET] --json CMD`; its JSON, or NULL. */
static json_t *ctl_query(const char *ctl, const char *cmd, char *note, size_t notecap)
{
	const char *sock = getenv("SHF_SOCKET");
	if (strchr(ctl, '\'') || (sock && strchr(sock, '\''))) {
		snprintf(note, notecap, "quote in the shufflectl or socket path");
		return NULL;
	}
	char line[PATH_MAX * 2 + 64];
	if (sock && *sock)
		snprintf(line, sizeof(line), "'%s' -s '%s' --json %s 2>/dev/null", ctl, sock, cmd);
	else
		snprintf(line, sizeof(line), "'%s' --json %s 2>/dev/null", ctl, cmd);
	FILE *f = popen(line, "r");
	if (!f) {
		snprintf(note, notecap, "popen(shufflectl): %s", strerror(errno));
		return NULL;
	}
	json_error_t err;
	json_t *o = json_loadf(f, JSON_DISABLE_EOF_CHECK, &err);
	int st = pclose(f);
	if (!o || st != 0) {
		snprintf(note, notecap, "shufflectl %s --json failed (status %d)", cmd, st);
		json_decref(o);
		return NULL;
	}
	return o;
}

/* stats JSON: {"daemon": {...}} (or nested under "stats"). */
static int64_t stat_field(json_t *o, const char *name)
{
	json_t *d = json_object_get(o, "daemon");
	if (!d && json_object_get(o, "stats"))
		d = json_object_get(json_object_get(o, "stats"), "daemon");
	json_t *v = d ? json_object_get(d, name) : NULL;
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

void bench_daemons_pre(struct bench_daemons *d)
{
	memset(d, 0, sizeof(*d));
	d->batch_bytes_out = d->batch_msgs_out = d->batch_bytes_out0 = d->batch_msgs_out0 = -1;
	char buf[PATH_MAX];
	const char *ctl = find_shufflectl(buf, sizeof(buf));
	if (ctl) {
		json_t *st = ctl_query(ctl, "status", d->ctl_note, sizeof(d->ctl_note));
		json_t *pid = st ? json_object_get(st, "pid") : NULL;
		if (json_is_integer(pid)) {
			d->pid[d->n++] = (int)json_integer_value(pid);
			d->have_ctl = true;
		}
		json_decref(st);
		if (d->have_ctl) {
			json_t *s = ctl_query(ctl, "stats", d->ctl_note, sizeof(d->ctl_note));
			if (s) {
				d->batch_bytes_out0 = stat_field(s, "batch_bytes_out");
				d->batch_msgs_out0 = stat_field(s, "batch_msgs_out");
				json_decref(s);
			}
		}
	} else {
		snprintf(d->ctl_note, sizeof(d->ctl_note), "no shufflectl found");
	}
	if (d->n == 0) {
		const char *env = getenv("SHF_BENCH_DAEMON_PIDS");
		if (env && *env) {
			char *dup = strdup(env), *save = NULL;
			for (char *t = strtok_r(dup, ",", &save); t && d->n < BENCH_MAX_DAEMON_PIDS;
			     t = strtok_r(NULL, ",", &save)) {
				int pid = atoi(t);
				if (pid > 0)
					d->pid[d->n++] = pid;
			}
			free(dup);
		}
	}
}

void bench_daemons_cpu_start(struct bench_daemons *d)
{
	for (int i = 0; i < d->n; i++)
		d->cpu0[i] = bench_proc_cpu_s(d->pid[i]);
}

void bench_daemons_cpu_end(struct bench_daemons *d)
{
	for (int i = 0; i < d->n; i++) {
		double c = bench_proc_cpu_s(d->pid[i]);
		d->cpu[i] = c >= 0 && d->cpu0[i] >= 0 ? c - d->cpu0[i] : -1;
	}
}

void bench_daemons_post(struct bench_daemons *d)
{
	for (int i = 0; i < d->n; i++)
		d->hwm_kib[i] = bench_proc_kib(d->pid[i], "VmHWM");
	if (!d->have_ctl || d->batch_bytes_out0 < 0)
		return;
	char buf[PATH_MAX];
	const char *ctl = find_shufflectl(buf, sizeof(buf));
	json_t *s = ctl ? ctl_query(ctl, "stats", d->ctl_note, sizeof(d->ctl_note)) : NULL;
	if (!s)
		return;
	int64_t v = stat_field(s, "batch_bytes_out"), m = stat_field(s, "batch_msgs_out");
	json_decref(s);
	if (v >= 0)
		d->batch_bytes_out = v - d->batch_bytes_out0;
	if (m >= 0 && d->batch_msgs_out0 >= 0)
		d->batch_msgs_out = m - d->batch_msgs_out0;
}
