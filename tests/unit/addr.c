/* SPDX-License-Identifier: MIT */
/*
 * addr: the shared grammars (proto/addr.c) and their owners in rdv.c.
 *   - HOST:PORT: IPv4, host names, [IPv6] with and without port, bare IPv6
 *     (only where the port is optional), zones, bad ports, empty, overlong;
 *   - node names;
 *   - the bind address with {node} (shd_rdv_bind_split, the replacement of
 *     net.c's split_bind) and its load-time check;
 *   - the rendezvous spec: every spec shd_rdv_spec_check() accepts (what
 *     the configuration runs at load) is accepted by shd_rdv_open(), and
 *     every one it refuses is refused there too.  mpi is checked only (open
 *     would start MPI).
 * Links daemon/rdv/rdv.c directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/rdv/rdv.h"
#include "proto/addr.h"
#include "tests/lib/check.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct hp_case {
	const char *in;
	unsigned flags;
	int want;
	const char *host, *port;
};

static void test_hostport(void)
{
	static const struct hp_case cases[] = {
		/* IPv4 and host names */
		{"127.0.0.1:7000", 0, 0, "127.0.0.1", "7000"},
		{"127.0.0.1", 0, 0, "127.0.0.1", ""},
		{"10.0.0.3:1", SHF_ADDR_NEED_PORT, 0, "10.0.0.3", "1"},
		{"host-x.example:80", SHF_ADDR_NEED_PORT, 0, "host-x.example", "80"},
		{"node_01", 0, 0, "node_01", ""},
		{"h:65535", SHF_ADDR_NEED_PORT, 0, "h", "65535"},
		{"h:07000", SHF_ADDR_NEED_PORT, 0, "h", "7000"}, /* canonical port */
		{"h", SHF_ADDR_NEED_PORT, -EINVAL, NULL, NULL},
		{"h 1:80", 0, -EINVAL, NULL, NULL},
		{"h/1:80", 0, -EINVAL, NULL, NULL},
		{"{node}:80", 0, -EINVAL, NULL, NULL},
		/* bracketed IPv6 */
		{"[::1]:7002", SHF_ADDR_NEED_PORT, 0, "::1", "7002"},
		{"[::1]", 0, 0, "::1", ""},
		{"[::1]", SHF_ADDR_NEED_PORT, -EINVAL, NULL, NULL},
		{"[fe80::1%eth0]:65535", SHF_ADDR_NEED_PORT, 0, "fe80::1%eth0", "65535"},
		{"[::ffff:10.0.0.1]:9", 0, 0, "::ffff:10.0.0.1", "9"},
		{"[2001:db8::1]:443", 0, 0, "2001:db8::1", "443"},
		{"[::1:80", 0, -EINVAL, NULL, NULL},
		{"[::1]80", 0, -EINVAL, NULL, NULL},
		{"[::1]:", 0, -EINVAL, NULL, NULL},
		{"[]:80", 0, -EINVAL, NULL, NULL},
		{"[host]:80", 0, -EINVAL, NULL, NULL},
		{"[10.0.0.1]:80", 0, -EINVAL, NULL, NULL},
		{"[fe80::1%]:80", 0, -EINVAL, NULL, NULL},
		{"[fe80::1%a/b]:80", 0, -EINVAL, NULL, NULL},
		{"[:::1]:80", 0, -EINVAL, NULL, NULL},
		/* bare IPv6: only where the port is optional, and never with one */
		{"::1", 0, 0, "::1", ""},
		{"fe80::1:7000", 0, 0, "fe80::1:7000", ""},
		{"fe80::1%eth0", 0, 0, "fe80::1%eth0", ""},
		{"fe80::1:7000", SHF_ADDR_NEED_PORT, -EINVAL, NULL, NULL},
		{"::1", SHF_ADDR_NEED_PORT, -EINVAL, NULL, NULL},
		{"a:b:c", 0, -EINVAL, NULL, NULL},
		{"::1::2", 0, -EINVAL, NULL, NULL},
		/* bad ports */
		{"h:0", 0, -EINVAL, NULL, NULL},
		{"h:65536", 0, -EINVAL, NULL, NULL},
		{"h:99999", 0, -EINVAL, NULL, NULL},
		{"h:100000", 0, -EINVAL, NULL, NULL},
		{"h:-1", 0, -EINVAL, NULL, NULL},
		{"h:+1", 0, -EINVAL, NULL, NULL},
		{"h:1x", 0, -EINVAL, NULL, NULL},
		{"h: 1", 0, -EINVAL, NULL, NULL},
		{"h:", 0, -EINVAL, NULL, NULL},
		{"h:http", 0, -EINVAL, NULL, NULL},
		/* empty */
		{"", 0, -EINVAL, NULL, NULL},
		{":80", 0, -EINVAL, NULL, NULL},
		{":", 0, -EINVAL, NULL, NULL},
	};
	for (size_t i = 0; i < N(cases); i++) {
		const struct hp_case *c = &cases[i];
		char host[SHF_ADDR_HOST_MAX] = "junk", port[SHF_ADDR_PORT_MAX] = "junk";
		const char *why = NULL;
		int r = shf_addr_parse(c->in, strlen(c->in), c->flags, host, sizeof(host), port,
				       sizeof(port), &why);
		EXPECTF(r == c->want, "'%s' flags %u: %d, want %d (%s)", c->in, c->flags, r, c->want,
		      why ? why : "");
		if (r == 0 && c->want == 0)
			EXPECTF(!strcmp(host, c->host) && !strcmp(port, c->port),
			      "'%s': host '%s' port '%s'", c->in, host, port);
		if (r < 0)
			EXPECTF(why && why[0] && !host[0] && !port[0], "'%s': reason and empty outputs",
			      c->in);
		/* check-only form agrees */
		EXPECTF(shf_addr_parse(c->in, strlen(c->in), c->flags, NULL, 0, NULL, 0, NULL) == r,
		      "'%s' without outputs", c->in);
	}

	/* len bounds the input: "h:80junk" cut at 4 */
	char host[SHF_ADDR_HOST_MAX], port[SHF_ADDR_PORT_MAX];
	EXPECTF(shf_addr_parse("h:80junk", 4, SHF_ADDR_NEED_PORT, host, sizeof(host), port,
			     sizeof(port), NULL) == 0 &&
		      !strcmp(host, "h") && !strcmp(port, "80"),
	      "length-bounded");
	EXPECTF(shf_addr_parse("h\0:80", 5, 0, NULL, 0, NULL, 0, NULL) == -EINVAL, "NUL inside");

	/* overlong: 255 bytes of host fit, 256 do not; and a small buffer */
	char big[600];
	memset(big, 'a', 255);
	strcpy(big + 255, ":1");
	EXPECTF(shf_addr_parse(big, strlen(big), 0, host, sizeof(host), port, sizeof(port), NULL) ==
			  0 && strlen(host) == 255,
	      "255-byte host");
	memset(big, 'a', 256);
	strcpy(big + 256, ":1");
	EXPECTF(shf_addr_parse(big, strlen(big), 0, host, sizeof(host), port, sizeof(port), NULL) ==
		      -EINVAL,
	      "256-byte host");
	char small[4];
	EXPECTF(shf_addr_parse("abcd:1", 6, 0, small, sizeof(small), port, sizeof(port), NULL) ==
			  -EINVAL && !small[0] && !port[0],
	      "host does not fit its buffer");
	EXPECTF(shf_addr_parse("abc:1", 5, 0, small, sizeof(small), port, sizeof(port), NULL) == 0,
	      "host just fits");
	char p2[3];
	EXPECTF(shf_addr_parse("a:100", 5, 0, host, sizeof(host), p2, sizeof(p2), NULL) == -EINVAL,
	      "port does not fit its buffer");
}

static void test_node_names(void)
{
	static const char *const good[] = {"n1", "node-01.x_y", "A", "a.", "a..b", "0",
					   "localhost.localdomain"};
	static const char *const bad[] = {"", ".", "..", ".hidden", "a/b", "../x", "a b",
					  "a:b", "a\tb", "é", "a\nb", "{node}"};
	const char *why;
	for (size_t i = 0; i < N(good); i++)
		EXPECTF(shf_node_name_check(good[i], &why) == 0, "good name '%s'", good[i]);
	for (size_t i = 0; i < N(bad); i++) {
		why = NULL;
		EXPECTF(shf_node_name_check(bad[i], &why) == -EINVAL && why, "bad name '%s'", bad[i]);
	}
	EXPECTF(shf_node_name_check(NULL, NULL) == -EINVAL, "NULL");
	char n[80];
	memset(n, 'n', 63);
	n[63] = '\0';
	EXPECTF(shf_node_name_check(n, NULL) == 0, "63 bytes");
	n[63] = 'n';
	n[64] = '\0';
	EXPECTF(shf_node_name_check(n, &why) == -EINVAL && strstr(why, "63"), "64 bytes");
}

static void test_bind(void)
{
	static const struct {
		const char *bind;
		int node, want;
		const char *host, *port;
	} cases[] = {
		{"", 0, 0, "", ""},
		{"", -1, 0, "", ""},
		{"10.0.0.1", -1, 0, "10.0.0.1", ""},
		{"10.0.0.1:7000", -1, 0, "10.0.0.1", "7000"},
		{"127.0.0.{node}", 0, 0, "127.0.0.1", ""},
		{"127.0.0.{node}:7000", 4, 0, "127.0.0.5", "7000"},
		{"127.1.{node}.{node}:9", 1, 0, "127.1.2.2", "9"},
		{"127.0.0.{node}", -1, -EINVAL, "", ""}, /* node id not known yet */
		{"[::1]:7000", -1, 0, "::1", "7000"},
		{"[::1]", -1, 0, "::1", ""},
		{"::1", -1, 0, "::1", ""},
		{"fe80::1:7000", -1, 0, "fe80::1:7000", ""},
		{"h:", 0, -EINVAL, "", ""},
		{":7000", 0, -EINVAL, "", ""},
		{"h:0", 0, -EINVAL, "", ""},
		{"[::1", 0, -EINVAL, "", ""},
		{"h 1", 0, -EINVAL, "", ""},
		{"{nod}", 0, -EINVAL, "", ""},
	};
	for (size_t i = 0; i < N(cases); i++) {
		char host[320] = "junk", port[32] = "junk";
		int r = shd_rdv_bind_split(cases[i].bind, cases[i].node, host, sizeof(host), port,
					   sizeof(port));
		EXPECTF(r == cases[i].want && !strcmp(host, cases[i].host) &&
			      !strcmp(port, cases[i].port),
		      "bind '%s' node %d: %d '%s' '%s'", cases[i].bind, cases[i].node, r, host,
		      port);
		/* the load-time check: the grammar, {node} taken as known */
		if (cases[i].node >= 0)
			EXPECTF((shd_rdv_bind_check(cases[i].bind, NULL, NULL, 0) == 0) == (r == 0),
			      "bind check '%s'", cases[i].bind);
	}
	char host[16], port[8];
	EXPECTF(shd_rdv_bind_split(NULL, 0, host, sizeof(host), port, sizeof(port)) == -EINVAL,
	      "NULL bind");
	EXPECTF(shd_rdv_bind_split("a-long-host-name", 0, host, sizeof(host), port, sizeof(port)) ==
		      -EINVAL,
	      "host does not fit");
	char big[400];
	memset(big, 'h', 300);
	big[300] = '\0';
	EXPECTF(shd_rdv_bind_split(big, 0, host, sizeof(host), port, sizeof(port)) == -EINVAL,
	      "overlong bind");

	char err[256];
#ifdef SHD_HAVE_RDV_MPI
	EXPECTF(shd_rdv_bind_check("127.0.0.{node}:7000", "mpi", err, sizeof(err)) == 0, "mpi");
#endif
	EXPECTF(shd_rdv_bind_check("127.0.0.{node}:7000", "auto", err, sizeof(err)) == 0, "auto");
	EXPECTF(shd_rdv_bind_check("127.0.0.{node}", "dir:/x:2", err, sizeof(err)) == -EINVAL &&
		      strstr(err, "{node}"),
	      "dir: %s", err);
	EXPECTF(shd_rdv_bind_check("h{node}:1", "static:h1:1", err, sizeof(err)) == -EINVAL,
	      "static");
	EXPECTF(shd_rdv_bind_check("h1:1", "static:h1:1", err, sizeof(err)) == 0, "static plain");
	EXPECTF(shd_rdv_bind_check("h 1", NULL, err, sizeof(err)) == -EINVAL && err[0], "reason");
}

/* "static:" spec: open with each entry as the bind address; my node = index. */
static void open_each_static(const char *spec)
{
	const char *p = spec + 7;
	for (int i = 0;; i++) {
		const char *e = strchr(p, ',');
		char bind[300];
		snprintf(bind, sizeof(bind), "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
		struct shd_rdv_self self = {.name = "t", .bind = bind};
		struct shd_rdv *r = NULL;
		char err[256] = "";
		int rc = shd_rdv_open(spec, &self, &r, err, sizeof(err));
		EXPECTF(rc == 0 && shd_rdv_my_node(r) == i, "open '%s' as '%s': %d %s", spec, bind, rc,
		      err);
		shd_rdv_close(r);
		if (!e)
			break;
		p = e + 1;
	}
}

static void test_spec(void)
{
	static const char *const good[] = {
		"auto", "none",
#ifdef SHD_HAVE_RDV_MPI
		"mpi",
#endif
		"dir:/shared/rdv:4", "dir:/a:b/c:1", "dir:rel:1048576",
		"static:h1:7000", "static:h1:7000,h2:7001,10.0.0.3:1",
		"static:[fe80::1%eth0]:65535", "static:10.0.0.1:7000,[::1]:7001",
		"static:127.0.0.2:7000,127.0.0.3:7001,[::1]:7002,host-x.example:80",
		"static:h:7000,h:7001", "static:[::1]:1,[::2]:1",
	};
	static const char *const bad[] = {
		"", "pmix", "MPI", "mpi:", "static", "dir", "dir:", "dir:/x:",
#ifndef SHD_HAVE_RDV_MPI
		"mpi", /* -Drdv_mpi=disabled */
#endif
		"dir:/x:0", "dir:/x:1048577", "dir::3",
		"static:", "static:h1", "static:h1:", "static::1", "static:h1:0",
		"static:h1:65536", "static:h1:7000,", "static:h1:7000,h2:x", "static:,h1:1",
		"static:h1:1,,h2:2", "static:h1:1,h1:1", "static:h1:1,h1:01",
		"static:[::1]:1,[::1]:1", "static:fe80::1:7000", "static:::1:80",
		"static:[::1:80", "static:[::1]80", "static:[]:80", "static:h 1:7000",
		"static:[::1]",
	};
	/* N is optional, and only an all-digit last part is N: these are
	 * directories without N (checked, not opened: an open claims an id
	 * in that directory) */
	static const char *const good_no_n[] = {
		"dir:/x", "dir:/x:3x", "dir:/x:+3", "dir:/x: 3",
	};
	char err[256];
	for (size_t i = 0; i < N(good_no_n); i++) {
		err[0] = '\0';
		int rc = shd_rdv_spec_check(good_no_n[i], err, sizeof(err));
		EXPECTF(rc == 0, "spec '%s': %d %s", good_no_n[i], rc, err);
	}
	for (size_t i = 0; i < N(good); i++) {
		err[0] = '\0';
		int rc = shd_rdv_spec_check(good[i], err, sizeof(err));
		EXPECTF(rc == 0, "spec '%s': %d %s", good[i], rc, err);
		if (!strncmp(good[i], "static:", 7)) {
			open_each_static(good[i]);
		} else if (!strncmp(good[i], "dir:", 4)) {
			struct shd_rdv_self self = {.name = "n1"};
			struct shd_rdv *r = NULL;
			rc = shd_rdv_open(good[i], &self, &r, err, sizeof(err));
			EXPECTF(rc == 0 && shd_rdv_my_node(r) == -1, "open '%s': %d %s", good[i], rc,
			      err);
			shd_rdv_close(r);
		}
	}
	for (size_t i = 0; i < N(bad); i++) {
		err[0] = '\0';
		int rc = shd_rdv_spec_check(bad[i], err, sizeof(err));
		EXPECTF(rc == -EINVAL && err[0], "spec '%s' accepted", bad[i]);
		struct shd_rdv_self self = {.name = "n1", .bind = "h1:7000"};
		struct shd_rdv *r = NULL;
		rc = shd_rdv_open(bad[i], &self, &r, err, sizeof(err));
		EXPECTF(rc == -EINVAL && r == NULL, "open '%s': %d", bad[i], rc);
	}
	EXPECTF(shd_rdv_spec_check(NULL, err, sizeof(err)) == -EINVAL, "NULL spec");
	/* messages the configuration shows */
	shd_rdv_spec_check("static:h1:7000,h2:x", err, sizeof(err));
	EXPECTF(strstr(err, "entry 2") && strstr(err, "h2:x"), "%s", err);
	shd_rdv_spec_check("static:fe80::1:7000", err, sizeof(err));
	EXPECTF(strstr(err, "brackets"), "%s", err);
	shd_rdv_spec_check("static:h:1,h:1", err, sizeof(err));
	EXPECTF(strstr(err, "repeats entry 1"), "%s", err);

	/* none and auto are the caller's to resolve: valid, but not opened */
	struct shd_rdv *r = NULL;
	EXPECTF(shd_rdv_open("none", NULL, &r, err, sizeof(err)) == -EINVAL && !r, "open none");
	/* an accepted spec can still fail on this node's own values */
	struct shd_rdv_self self = {.name = "n1", .bind = "h3:7000"};
	EXPECTF(shd_rdv_open("static:h1:7000,h2:7000", &self, &r, err, sizeof(err)) == -ENOENT,
	      "bind not listed");
	self.name = "../x";
	EXPECTF(shd_rdv_open("dir:/tmp:2", &self, &r, err, sizeof(err)) == -EINVAL, "bad dir name");
}

int main(void)
{
	test_hostport();
	test_node_names();
	test_bind();
	test_spec();
	if (check_result())
		return 1;
	fprintf(stderr, "addr: PASS\n");
	return 0;
}
