/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/auth-unit.c - daemon/net/auth.c: the key file is refused unless
 * it is a regular 32-byte file owned by the effective uid with no
 * permission for group or others (each refusal names the file and the
 * fix); a MAC verifies under the same key and inputs and fails under
 * another key, another node order (reflection), another tag or nonce, a
 * missing echo, or one flipped MAC bit.
 *
 * With "bench" as argument it also times the per-session work (one MAC
 * made and one verified on each side: 2 + 2 per session) and prints it;
 * nothing is asserted about time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/net/auth.h"
#include "tests/lib/check.h"

static char dir[] = "/tmp/shf-auth-XXXXXX";

static void write_key(const char *path, size_t n, mode_t mode, uint8_t fill)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	uint8_t b[64];
	memset(b, fill, sizeof(b));
	CHECK(write(fd, b, n) == (ssize_t)n);
	CHECK(fchmod(fd, mode) == 0);
	close(fd);
}

static struct shd_auth *load_ok(const char *path)
{
	struct shd_auth *a = NULL;
	char err[512] = "";
	int r = shd_auth_load(path, &a, err, sizeof(err));
	CHECKF(r == 0 && a, "load %s: %d %s", path, r, err);
	return a;
}

static void load_refused(const char *path, int want, const char *needle)
{
	struct shd_auth *a = (struct shd_auth *)&a; /* must stay untouched */
	char err[512] = "";
	int r = shd_auth_load(path, &a, err, sizeof(err));
	CHECKF(r == want, "load %s: %d, want %d (%s)", path, r, want, err);
	CHECK(a == (struct shd_auth *)&a);
	CHECK_HAS(err, path);
	CHECK_HAS(err, needle);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	CHECK(shd_auth_init() == 0);
	CHECK(mkdtemp(dir));
	char k1[256], k2[256], bad[256];
	snprintf(k1, sizeof(k1), "%s/k1", dir);
	snprintf(k2, sizeof(k2), "%s/k2", dir);
	snprintf(bad, sizeof(bad), "%s/bad", dir);

	/* refusals, each naming the file and the fix */
	load_refused(bad, -ENOENT, "shuffle-keygen");
	write_key(bad, 32, 0640, 1);
	load_refused(bad, -EPERM, "chmod 600");
	write_key(bad, 32, 0604, 1);
	load_refused(bad, -EPERM, "chmod 600");
	write_key(bad, 32, 0620, 1);
	load_refused(bad, -EPERM, "chmod 600");
	write_key(bad, 31, 0600, 1);
	load_refused(bad, -EINVAL, "expected 32");
	write_key(bad, 33, 0600, 1);
	load_refused(bad, -EINVAL, "expected 32");
	load_refused(dir, -EPERM, "not a regular file");
	if (geteuid() == 0) { /* a file of another owner: only root can make one */
		write_key(bad, 32, 0600, 1);
		CHECK(chown(bad, 12345, 12345) == 0);
		load_refused(bad, -EPERM, "chown");
	}
	char link[300];
	snprintf(link, sizeof(link), "%s/link", dir);
	write_key(k1, 32, 0600, 0x11);
	CHECK(symlink(k1, link) == 0);
	{
		struct shd_auth *a = NULL;
		char err[512];
		CHECK(shd_auth_load(link, &a, err, sizeof(err)) == -ELOOP && !a);
	}

	write_key(k2, 32, 0600, 0x22);
	struct shd_auth *a1 = load_ok(k1), *a2 = load_ok(k2);
	uint8_t na[SHD_AUTH_NONCE_BYTES], nb[SHD_AUTH_NONCE_BYTES], mac[SHD_AUTH_MAC_BYTES];
	shd_auth_nonce(na);
	shd_auth_nonce(nb);
	CHECK(memcmp(na, nb, sizeof(na)) != 0);
	struct shd_auth_hb m = {1, 2, 0x1111, 0x2222, na, nb, false, 0};
	shd_auth_mac(a1, &m, mac);
	CHECK(shd_auth_verify(a1, &m, mac));
	struct shd_auth *a1b = load_ok(k1); /* the same key, loaded again */
	CHECK(shd_auth_verify(a1b, &m, mac));
	CHECK(!shd_auth_verify(a2, &m, mac));
	struct shd_auth_hb x = m;
	x.src_node = 2, x.dst_node = 1;
	CHECK(!shd_auth_verify(a1, &x, mac)); /* reflected */
	x = m, x.src_session ^= 1;
	CHECK(!shd_auth_verify(a1, &x, mac));
	x = m, x.dst_session ^= 1 << 20;
	CHECK(!shd_auth_verify(a1, &x, mac));
	x = m, x.echo = NULL;
	CHECK(!shd_auth_verify(a1, &x, mac)); /* another echo: another session */
	x = m, x.src_nonce = nb;
	CHECK(!shd_auth_verify(a1, &x, mac));
	for (unsigned bit = 0; bit < 8 * SHD_AUTH_MAC_BYTES; bit += 37) {
		mac[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK(!shd_auth_verify(a1, &m, mac));
		mac[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	CHECK(shd_auth_verify(a1, &m, mac));

	if (argc > 1 && !strcmp(argv[1], "bench")) {
		/* per session: each side makes one MAC (its heartbeat) and
		 * verifies the other's: 2 MACs + 2 verifications */
		enum { SESSIONS = 200000 };
		double best = 1e9;
		for (int rep = 0; rep < 5; rep++) {
			double t0 = now_s();
			unsigned ok = 0;
			for (int i = 0; i < SESSIONS; i++) {
				m.src_session = (uint64_t)i;
				shd_auth_mac(a1, &m, mac);
				ok += shd_auth_verify(a1, &m, mac);
				shd_auth_mac(a1, &m, mac);
				ok += shd_auth_verify(a1, &m, mac);
			}
			double t = now_s() - t0;
			CHECK(ok == 2u * SESSIONS);
			double per = t / SESSIONS * 1e6;
			printf("auth-bench: run %d: %.3f us CPU per session (2 MAC + 2 verify)\n", rep,
			       per);
			if (per < best)
				best = per;
		}
		printf("auth-bench: best %.3f us CPU per session\n", best);
	}
	shd_auth_free(a1);
	shd_auth_free(a1b);
	shd_auth_free(a2);
	shd_auth_free(NULL);
	unlink(k1), unlink(k2), unlink(bad), unlink(link);
	rmdir(dir);
	printf("auth-unit: ok\n");
	return 0;
}
