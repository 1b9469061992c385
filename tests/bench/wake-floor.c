/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/wake-floor.c - what this machine charges for the parts of a
 * lone message's path, without shuffle: a system call, waking a process
 * that sleeps in poll() on an eventfd (as the daemon and the delivery
 * thread sleep on their bells), and waking one that sleeps on a TCP
 * loopback socket (as the remote daemon sleeps on the fabric).  One-way,
 * with a gap between wake-ups so that the sleeper really sleeps (the CPUs
 * go idle), like the lone messages of scripts/bench.
 *
 * A lone message crosses three sleeping hops (client -> daemon bell,
 * daemon -> daemon over the fabric, daemon -> delivery-thread bell): the
 * sum of two eventfd wake-ups and one TCP wake-up is its floor here,
 * before any of shuffle's own work.
 *
 *   build/tests/bench/wake-floor [COUNT [GAP_US]] [--json]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

struct stats {
	double p10, p50, p90, p99;
};

static struct stats summarize(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return (struct stats){v[n / 10] / 1e3, v[n / 2] / 1e3, v[n * 9 / 10] / 1e3,
			      v[n * 99 / 100] / 1e3};
}

/* One-way wake-up over an eventfd (tcp 0) or a TCP loopback connection
 * (tcp 1): the parent stamps and signals every gap_us; the child sleeps
 * in poll(), then reads and records now - stamp. */
static struct stats wake(int n, int gap_us, int tcp)
{
	uint64_t *lat = mmap(NULL, (size_t)n * 8, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (lat == MAP_FAILED)
		die("mmap");
	int tx, rx, ls = -1;
	if (!tcp) {
		if ((tx = rx = eventfd(0, 0)) < 0)
			die("eventfd");
	} else {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
		socklen_t al = sizeof(a);
		int one = 1;
		if ((ls = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(ls, (void *)&a, al) < 0 ||
		    listen(ls, 1) < 0 || getsockname(ls, (void *)&a, &al) < 0)
			die("listen");
		if ((tx = socket(AF_INET, SOCK_STREAM, 0)) < 0 || connect(tx, (void *)&a, al) < 0)
			die("connect");
		if ((rx = accept(ls, NULL, NULL)) < 0)
			die("accept");
		setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		for (int i = 0; i < n; i++) {
			struct pollfd p = {rx, POLLIN, 0};
			uint64_t v;
			if (poll(&p, 1, 10000) != 1 || read(rx, &v, sizeof(v)) != (ssize_t)sizeof(v))
				_exit(1);
			uint64_t now = now_ns();
			if (tcp) {
				lat[i] = now - v;
				continue;
			}
			/* an eventfd adds up writes that came before this read
			 * (a loaded machine can keep the sleeper off its CPU for
			 * more than the gap): each of them is woken now */
			if (v == 0 || v > (uint64_t)(n - i))
				_exit(1);
			for (uint64_t k = 0; k < v; k++)
				lat[i + (int)k] = now - atomic_load((_Atomic uint64_t *)&lat[i + (int)k]);
			i += (int)v - 1;
		}
		_exit(0);
	}
	for (int i = 0; i < n; i++) {
		usleep((useconds_t)gap_us);
		uint64_t t = now_ns(), one = 1;
		if (!tcp)
			atomic_store((_Atomic uint64_t *)&lat[i], t);
		if (write(tx, tcp ? &t : &one, sizeof(t)) != (ssize_t)sizeof(t))
			die("write");
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "wake-floor: the sleeper failed\n");
		exit(1);
	}
	struct stats s = summarize(lat, n);
	close(tx);
	if (tcp) {
		close(rx);
		close(ls);
	}
	munmap(lat, (size_t)n * 8);
	return s;
}

int main(int argc, char **argv)
{
	int n = 300, gap = 5000, json = 0, pos = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (pos++ == 0)
			n = atoi(argv[i]);
		else
			gap = atoi(argv[i]);
	}
	if (n < 10 || gap < 0) {
		fprintf(stderr, "usage: wake-floor [COUNT>=10 [GAP_US]] [--json]\n");
		return 2;
	}
	const int calls = 200000;
	uint64_t t0 = now_ns();
	for (int i = 0; i < calls; i++)
		syscall(SYS_getppid);
	double sys_ns = (double)(now_ns() - t0) / calls;
	struct stats ev = wake(n, gap, 0), tc = wake(n, gap, 1);
	double floor50 = 2 * ev.p50 + tc.p50;
	if (json) {
		printf("{\"syscall_ns\":%.0f,\"eventfd_wake_us\":{\"p10\":%.1f,\"p50\":%.1f,\"p90\":%.1f,"
		       "\"p99\":%.1f},\"tcp_wake_us\":{\"p10\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f},"
		       "\"lone_floor_p50_us\":%.1f}\n",
		       sys_ns, ev.p10, ev.p50, ev.p90, ev.p99, tc.p10, tc.p50, tc.p90, tc.p99, floor50);
	} else {
		printf("system call (getppid): %.0f ns\n", sys_ns);
		printf("eventfd wake-up, one way: p10 %.1f  p50 %.1f  p90 %.1f  p99 %.1f us\n", ev.p10,
		       ev.p50, ev.p90, ev.p99);
		printf("TCP loopback wake-up, one way: p10 %.1f  p50 %.1f  p90 %.1f  p99 %.1f us\n",
		       tc.p10, tc.p50, tc.p90, tc.p99);
		printf("a lone message's three sleeping hops (2 eventfd + 1 TCP), p50: %.1f us\n",
		       floor50);
	}
	return 0;
}
