/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/config-values.c - value parsing and refusal: size suffixes,
 * powers of two, ranges, integer and string syntax, log levels, unknown
 * options and keys, file errors, cross-checks.  Every refusal must name the
 * option and the value, say what is allowed and where the value came from.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/log.h"
#include "tests/daemon/config-util.h"

static char err[1024];
static struct shd_config c;

/* "--name=value" must load; returns the config */
static void ok(const char *arg)
{
	int r = load_args(&c, err, sizeof(err), "--node_name=t", arg, NULL);
	CHECKF(r == 0, "%s refused: %s", arg, err);
}

/* must be refused with -EINVAL and a message holding every needle */
static void bad(const char *arg, const char *n1, const char *n2)
{
	int r = load_args(&c, err, sizeof(err), "--node_name=t", arg, NULL);
	CHECKF(r == -EINVAL, "'%s' gave %d (%s)", arg, r, err);
	if (n1)
		CHECK_HAS(err, n1);
	if (n2)
		CHECK_HAS(err, n2);
	CHECK(strchr(err, '\n') == NULL);
}

/* "--name=value" refused; the message names name=value and the source */
static void bad_opt(const char *name, const char *value, const char *needle)
{
	char arg[512], nv[512];
	snprintf(arg, sizeof(arg), "--%s=%s", name, value);
	snprintf(nv, sizeof(nv), "%s=%s", name, value);
	bad(arg, nv, needle);
	CHECK_HAS(err, "(command line)");
}

static void test_sizes(void)
{
	static const struct {
		const char *v;
		uint32_t want;
	} good[] = {
		{ "4096", 4096 },      { "4k", 4096 },        { "4K", 4096 },
		{ "4KiB", 4096 },      { "4 KiB", 4096 },     { "4kib", 4096 },
		{ "1m", 1u << 20 },    { "1M", 1u << 20 },    { "1MiB", 1u << 20 },
		{ "256M", 256u << 20 }, { "262144k", 256u << 20 }, { "8192", 8192 },
	};
	char arg[64];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(arg, sizeof(arg), "--ring_bytes=%s", good[i].v);
		ok(arg);
		CHECKF(c.ring_bytes == good[i].want, "%s -> %u", good[i].v, c.ring_bytes);
	}
	ok("--batch_budget=1G");
	CHECK(c.batch_budget == UINT64_C(1) << 30);
	ok("--batch_budget=16GiB");
	CHECK(c.batch_budget == UINT64_C(16) << 30);
	ok("--batch_budget=1g");
	CHECK(c.batch_budget == UINT64_C(1) << 30);
	ok("--max_msg=0");
	CHECK(c.max_msg == 0);
	ok("--batch_bytes=1000K"); /* not a power of two: fine where not required */
	CHECK(c.batch_bytes == 1000u << 10);
	ok("--batch_bytes=1025");
	CHECK(c.batch_bytes == 1025);

	/* syntax */
	static const char *const junk[] = { "abc", "-1", "+4096", " 4096", "1.5M", "1MB", "1Mi",
					    "0x1000", "1e6", "4 K B", "", "k", "1M1", "1 M iB" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		bad_opt("ring_bytes", junk[i], "not a valid size");
	CHECK_HAS(err, "power of two in [4 KiB, 256 MiB]");
	CHECK_HAS(err, "suffixes");

	/* the example from the design */
	bad_opt("ring_bytes", "3000", "must be a power of two in [4 KiB, 256 MiB]");
	CHECK_HAS(err, "ring_bytes=3000: must be a power of two in [4 KiB, 256 MiB]");
	bad_opt("ring_bytes", "12k", "power of two");
	/* powers of two out of range: same message */
	bad_opt("ring_bytes", "2k", "must be a power of two in [4 KiB, 256 MiB]");
	bad_opt("ring_bytes", "512M", "must be a power of two in [4 KiB, 256 MiB]");
	bad_opt("ring_bytes", "1G", "must be a power of two");
	bad_opt("ring_bytes", "0", "must be a power of two");
	bad_opt("ring_bytes", "99999999999999999999999", "must be a power of two");
	/* overflow of the number or of number * suffix */
	bad_opt("batch_budget", "18446744073709551615k", "out of range");
	bad_opt("batch_budget", "17179869184G", "out of range");
	/* u64 cap */
	bad_opt("batch_budget", "17G", "[1 MiB, 16 GiB]");
	bad_opt("batch_budget", "1023K", "out of range");
	bad_opt("max_msg", "1025K", "[0, 1 MiB]");
	bad_opt("batch_bytes", "1023", "[1 KiB, 4 MiB]");
	bad_opt("batch_bytes", "5M", "[1 KiB, 4 MiB]");
}

static void test_integers(void)
{
	ok("--linger_us=0");
	CHECK(c.linger_us == 0);
	ok("--linger_us=1000000");
	CHECK(c.linger_us == 1000000);
	ok("--peer_credits=1024");
	CHECK(c.peer_credits == 1024);
	ok("--world_timeout_ms=0");
	CHECK(c.world_timeout_ms == 0);
	ok("--world_timeout_ms=86400000");
	CHECK(c.world_timeout_ms == 86400000);

	bad_opt("linger_us", "1000001", "out of range; must be an integer in [0, 1000000]");
	bad_opt("linger_us", "1k", "not a valid integer"); /* no suffixes on counts */
	bad_opt("linger_us", "-5", "not a valid integer");
	bad_opt("linger_us", "5us", "not a valid integer");
	bad_opt("linger_us", "", "not a valid integer");
	bad_opt("peer_credits", "0", "[1, 1024]");
	bad_opt("peer_credits", "1025", "[1, 1024]");
	bad_opt("max_inflight", "65537", "[1, 65536]");
	bad_opt("recv_buffers", "1", "[2, 4096]");
	bad_opt("recv_buffers", "4097", "[2, 4096]");
	bad_opt("peer_timeout_ms", "99", "[100, 3600000]");
	bad_opt("heartbeat_ms", "9", "[10, 600000]");
	bad_opt("max_clients", "0", "[1, 65536]");
	bad_opt("world_timeout_ms", "86400001", "[0, 86400000]");
	bad_opt("max_clients", "4294967297", "out of range"); /* would wrap a uint32_t */
}

static void test_levels(void)
{
	static const struct {
		const char *v;
		int want;
	} good[] = { { "err", 3 },    { "error", 3 }, { "warn", 4 }, { "warning", 4 },
		     { "notice", 5 }, { "info", 6 },  { "DEBUG", 7 }, { "3", 3 },
		     { "7", 7 } };
	char arg[64];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(arg, sizeof(arg), "--log_level=%s", good[i].v);
		ok(arg);
		CHECK(c.log_level == good[i].want);
	}
	static const char *const junk[] = { "verbose", "2", "8", "0", "", "infoo", "66" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		bad_opt("log_level", junk[i], "must be one of err, warn, notice, info, debug");
}

static void test_strings(void)
{
	char big[5000];

	ok("--node_name=node-01.x_y");
	CHECK_STR(c.node_name, "node-01.x_y");
	bad("--node_name=a/b", "node_name=a/b", "letters, digits");
	bad("--node_name=..", "node_name=..", "'.'");
	bad("--node_name=a b", "node_name=a b", NULL);
	memset(big, 'n', 64);
	big[64] = '\0';
	char arg[5100];
	snprintf(arg, sizeof(arg), "--node_name=%s", big);
	bad(arg, "node_name=nnnn", "too long (64 bytes, at most 63)");

	bad_opt("runtime_dir", "relative/dir", "absolute");
	bad_opt("socket", "x.sock", "absolute");
	memset(big, 's', 108);
	big[0] = '/';
	big[108] = '\0';
	snprintf(arg, sizeof(arg), "--socket=%s", big);
	bad(arg, "socket=/sss", "at most 107");
	CHECK_HAS(err, "..."); /* long values are shortened in the message */
	big[107] = '\0';
	snprintf(arg, sizeof(arg), "--socket=%s", big);
	ok(arg);
	CHECK(strlen(c.socket_path) == 107);

	memset(big, 'p', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	snprintf(arg, sizeof(arg), "--log_file=%s", big);
	bad(arg, "log_file=/ppp", "at most 4095");
	bad("--log_file=/tmp/a\tb", "log_file", "control character");
	ok("--log_file=relative.log");

	bad_opt("provider", "", "must not be empty");
	bad_opt("provider", "tcp provider", "not a provider name");
	ok("--provider=verbs;ofi_rxm");
	bad_opt("bind", "10.0.0.1 :7000", "blanks");
	ok("--bind=127.0.0.3:7000");
	CHECK_STR(c.bind, "127.0.0.3:7000");
	bad_opt("bind", "10.0.0.1:", "no port");
	bad_opt("bind", "[::1:7000", "']'");
	ok("--bind=[::1]:7000");
	ok("--bind=fe80::1"); /* bare IPv6: never a port */
	ok("--bind=127.0.0.{node}:7000");
	bad_opt("iface", "eth0/1", "not an interface name");
	bad_opt("iface", "averyveryverylongname", "at most 15");
	ok("--iface=lo");

	static const char *const rv_good[] = { "auto", "none",
#ifdef SHD_HAVE_RDV_MPI
					       "mpi",
#endif
					       "dir:/shared/rdv:4",
					       "dir:/shared/rdv", /* N optional */
					       "static:h1:7000", "static:h1:7000,h2:7001,10.0.0.3:1",
					       "static:[fe80::1%eth0]:65535" };
	for (size_t i = 0; i < sizeof(rv_good) / sizeof(rv_good[0]); i++) {
		snprintf(arg, sizeof(arg), "--rendezvous=%s", rv_good[i]);
		ok(arg);
		CHECK_STR(c.rendezvous, rv_good[i]);
	}
#ifndef SHD_HAVE_RDV_MPI
	/* built with -Drdv_mpi=disabled: refused, saying why */
	bad_opt("rendezvous", "mpi", "built without the mpi rendezvous");
#endif
	bad_opt("rendezvous", "pmix", "must be auto, none, mpi");
	bad_opt("rendezvous", "MPI", "must be auto, none, mpi");
	/* the list in the error is the parser's own (rdv.c's table) */
	bad_opt("rendezvous", "pmix", "static:@FILE, static:HOST:PORT,HOST:PORT,..., "
				     "dir:PATH:N, dir:PATH or tcp://HOST:PORT");
	bad_opt("rendezvous", "dir:", "empty PATH");
	bad_opt("rendezvous", "dir:/shared/rdv:0", "node count 0 out of range");
	bad_opt("rendezvous", "static:", "entry 1");
	bad_opt("rendezvous", "static:h1", "entry 1");
	bad_opt("rendezvous", "static:h1:0", "port 1..65535");
	bad_opt("rendezvous", "static:h1:65536", "entry 1");
	bad_opt("rendezvous", "static:h1:7000,", "entry 2");
	bad_opt("rendezvous", "static:h1:7000,h2:x", "entry 2");
	bad_opt("rendezvous", "static::7000", "entry 1");
	bad_opt("rendezvous", "static:h 1:7000", "entry 1");
	bad_opt("rendezvous", "static:fe80::1:7000", "brackets"); /* as rdv refuses it */
	/* {node} in bind with a rendezvous that learns node ids too late */
	CHECK(load_args(&c, err, sizeof(err), "--node_name=t", "--bind=127.0.0.{node}",
			"--rendezvous=dir:/x:2", NULL) == -EINVAL);
	CHECK_HAS(err, "{node}");
}

static void test_command_line(void)
{
	int r;
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--ring_size=1M", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "unknown option '--ring_size'");
	CHECK(strstr(err, "1M") == NULL);
	r = load_args(&c, err, sizeof(err), "-x", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "unknown option '-x'");
	r = load_args(&c, err, sizeof(err), "--", NULL);
	CHECK_HAS(err, "");
	CHECK(r == 0 || strstr(err, "node_name")); /* "--" alone is fine */
	r = load_args(&c, err, sizeof(err), "--node_name=t", "extra", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "unexpected argument 'extra'");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--", "extra", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "unexpected argument 'extra'");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "-", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "unexpected argument '-'");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--ring_bytes", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "option --ring_bytes needs a value");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--=1", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "unknown option");
	/* a bad value anywhere is refused even when a later source overrides it */
	setenv("SHF_RING_BYTES", "3000", 1);
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--ring_bytes=8k", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "ring_bytes=3000: must be a power of two");
	CHECK_HAS(err, "(env SHF_RING_BYTES)");
	unsetenv("SHF_RING_BYTES");
	/* argc 0 and NULL argv: defaults */
	setenv("SHF_NODE", "t", 1);
	CHECKF(shd_config_load(&c, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(c.ring_bytes == 1u << 20);
	/* NULL err buffer is allowed */
	CHECK(shd_config_load(&c, 0, NULL, NULL, 0) == 0);
	unsetenv("SHF_NODE");
}

/* load with SHF_CONFIG=<file holding text>; expect r and needles */
static void file_case(const char *text, int want, const char *n1, const char *n2)
{
	const char *p = write_temp(0, text);
	setenv("SHF_CONFIG", p, 1);
	int r = load_args(&c, err, sizeof(err), "--node_name=t", NULL);
	unsetenv("SHF_CONFIG");
	CHECKF(r == want, "file '%s': got %d (%s)", text, r, err);
	if (want == 0)
		return;
	CHECK_HAS(err, p);
	if (n1)
		CHECK_HAS(err, n1);
	if (n2)
		CHECK_HAS(err, n2);
}

static void test_file(void)
{
	file_case("[shuffled]\nring_bytes = 8k\n", 0, NULL, NULL);
	CHECK(c.ring_bytes == 8192);
	file_case("", 0, NULL, NULL);
	file_case("[shuffled]\n\n; nothing\n", 0, NULL, NULL);
	file_case("[shuffled]\nbind =\n", 0, NULL, NULL); /* empty string value */
	CHECK_STR(c.bind, "");
	file_case("[shuffled]\nring-bytes = 8k\n", 0, NULL, NULL);
	/* removed in 0.3: an old file still starts the daemon, the keys ignored */
	file_case("[shuffled]\npoll_us = 50\nsleeper_pays = 1\nsleeper_wait_us = 9\nring_bytes = 16k\n",
		  0, NULL, NULL);
	CHECK(c.ring_bytes == 16384);

	file_case("[shuffled]\nring_bytes = 3000\n", -EINVAL, "ring_bytes=3000: must be a power of two",
		  "line 2");
	file_case("[shuffled]\nx = 1\nring_size = 4k\n", -EINVAL, "line 2: unknown key 'x'", NULL);
	file_case("ring_bytes = 8k\n", -EINVAL, "line 1", "outside a section");
	file_case("[shufled]\nring_bytes = 8k\n", -EINVAL, "unknown section [shufled]", "line 2");
	file_case("[shuffled]\nlinger_us = 1\nlinger_us = 2\n", -EINVAL, "line 3: 'linger_us' set again",
		  "first on line 2");
	file_case("[shuffled]\nconfig = /etc/x.ini\n", -EINVAL, "'config' can be set only", NULL);
	file_case("[shuffled]\nthis is not ini\n", -EINVAL, "line 2", "syntax error");
	file_case("[shuffled\n", -EINVAL, "line 1", "syntax error");
	file_case("[shuffled]\nlinger_us = 5 us\n", -EINVAL, "linger_us=5 us", "line 2");
	file_case("[shuffled]\nlog_level = loud\n", -EINVAL, "log_level=loud", "line 2");

	/* a line longer than inih's buffer is refused, not split */
	char text[2048];
	int n = snprintf(text, sizeof(text), "[shuffled]\nrendezvous = static:");
	for (int i = 0; i < 60; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "host%02d:7000,", i);
	snprintf(text + n, sizeof(text) - (size_t)n, "last:1\nlinger_us = 3\n");
	const char *p = write_temp(0, text);
	setenv("SHF_CONFIG", p, 1);
	int r = load_args(&c, err, sizeof(err), "--node_name=t", NULL);
	unsetenv("SHF_CONFIG");
	if (r == 0) {
		/* inih built with a big enough line buffer: the value is whole */
		CHECK(strlen(c.rendezvous) == strlen(text) - strlen("[shuffled]\nrendezvous = ") -
						      strlen("\nlinger_us = 3\n"));
		CHECK(c.linger_us == 3);
	} else {
		CHECK(r == -EINVAL);
		CHECK_HAS(err, "line 2: line longer than");
	}

	/* missing, unreadable or directory */
	setenv("SHF_CONFIG", "/nonexistent/shuffled.ini", 1);
	r = load_args(&c, err, sizeof(err), "--node_name=t", NULL);
	CHECK(r == -ENOENT);
	CHECK_HAS(err, "/nonexistent/shuffled.ini");
	unsetenv("SHF_CONFIG");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--config=/tmp", NULL);
	CHECK(r == -EISDIR);
	CHECK_HAS(err, "config file /tmp");
}

static void test_cross_checks(void)
{
	int r;
	/* max_msg <= ring_bytes/2 - 16; a default max_msg shrinks to fit */
	ok("--ring_bytes=4k");
	CHECK(c.max_msg == 2032);
	CHECK(c.source[SHD_OPT_MAX_MSG] == SHD_CONFIG_SRC_COMPUTED);
	ok("--ring_bytes=128k");
	CHECK(c.max_msg == 60u << 10);
	CHECK(c.source[SHD_OPT_MAX_MSG] == SHD_CONFIG_SRC_DEFAULT);
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--ring_bytes=4k", "--max_msg=2032",
		      NULL);
	CHECKF(r == 0, "%s", err);
	CHECK(c.max_msg == 2032 && c.source[SHD_OPT_MAX_MSG] == SHD_CONFIG_SRC_CLI);
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--ring_bytes=4k", "--max_msg=2033",
		      NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "max_msg=2033");
	CHECK_HAS(err, "ring_bytes=4096 (4 KiB)");
	CHECK_HAS(err, "ring_bytes/2 - 16 = 2032");
	CHECK_HAS(err, "max_msg from command line, ring_bytes from command line");
	setenv("SHF_RING_BYTES", "64k", 1);
	const char *p = write_temp(1, "[shuffled]\nmax_msg = 60k\n");
	setenv("SHF_CONFIG", p, 1);
	r = load_args(&c, err, sizeof(err), "--node_name=t", NULL);
	unsetenv("SHF_CONFIG");
	unsetenv("SHF_RING_BYTES");
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "max_msg=61440 (60 KiB)");
	CHECK_HAS(err, "32752");
	CHECK_HAS(err, "max_msg from file ");
	CHECK_HAS(err, "ring_bytes from env SHF_RING_BYTES");
	bad("--max_msg=1M", "max_msg=1048576 (1 MiB)", "ring_bytes from default");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--ring_bytes=4M", "--max_msg=1M",
		      NULL);
	CHECKF(r == 0 && c.max_msg == 1u << 20, "%s", err);

	/* the batch budget holds at least one batch */
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--batch_bytes=2M",
		      "--batch_budget=1M", NULL);
	CHECK(r == -EINVAL);
	CHECK_HAS(err, "batch_budget=1048576 (1 MiB) is smaller than batch_bytes=2097152 (2 MiB)");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--batch_bytes=2M",
		      "--batch_budget=2M", NULL);
	CHECKF(r == 0, "%s", err);

	/* heartbeats come more often than the peer timeout */
	bad("--heartbeat_ms=5000", "heartbeat_ms=5000 must be less than peer_timeout_ms=5000",
	    "heartbeat_ms from command line, peer_timeout_ms from default");
	ok("--heartbeat_ms=4999");
	r = load_args(&c, err, sizeof(err), "--node_name=t", "--heartbeat_ms=100",
		      "--peer_timeout_ms=100", NULL);
	CHECK(r == -EINVAL);
}

int main(void)
{
	clear_config_env();
	test_sizes();
	test_integers();
	test_levels();
	test_strings();
	test_command_line();
	test_file();
	test_cross_checks();
	printf("config-values: ok\n");
	return 0;
}
