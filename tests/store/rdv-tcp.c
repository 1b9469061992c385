/* SPDX-License-Identifier: MIT */
/*
 * tests/store/rdv-tcp.c - the tcp://HOST:PORT rendezvous (daemon/rdv/tcp.c)
 * against a real shuffled --store-listen:
 *  - with the store down, open waits (bounded) and fails -ECONNREFUSED
 *    with a reason naming the store;
 *  - names claim ids 0, 1, 2 in order; the same name gets the same id back
 *    on a second open (a restart), with a new incarnation published;
 *  - an exchange sees every node published before it (address, name,
 *    incarnation), not the ones published after;
 *  - a node published after the exchange is found with shd_rdv_lookup();
 *    an id nobody claimed is -ENOENT; -ENOTSUP for other kinds;
 *  - max_nodes is enforced (-ENOSPC), and a spec without a port is refused
 *    by the same parser at check and open.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/rdv/rdv.h"
#include "tests/lib/daemon.h"

static char err[512];

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* open + exchange as node `name` with a fake address "addr-NAME". */
static struct shd_rdv *join(const char *spec, const char *name, uint64_t inc, uint32_t max,
			    struct shd_rdv_result *res)
{
	struct shd_rdv_self self = {name, NULL, 5000, inc, max, NULL};
	struct shd_rdv *r = NULL;
	int rc = shd_rdv_open(spec, &self, &r, err, sizeof(err));
	CHECKF(rc == 0, "open %s as %s: %d %s", spec, name, rc, err);
	char addr[32];
	td_fmt(addr, sizeof(addr), "addr-%s", name);
	rc = shd_rdv_exchange(r, addr, strlen(addr), res, err, sizeof(err));
	CHECKF(rc == 0, "exchange as %s: %d %s", name, rc, err);
	return r;
}

static void has_node(const struct shd_rdv_result *res, uint32_t id, const char *name, uint64_t inc)
{
	char addr[32];
	td_fmt(addr, sizeof(addr), "addr-%s", name);
	CHECKF(id < res->n_nodes, "node %u beyond %u", id, res->n_nodes);
	const struct shd_rdv_node *n = &res->nodes[id];
	CHECKF(n->addr_len == strlen(addr) && !memcmp(n->addr, addr, n->addr_len) &&
		       !strcmp(n->host, name) && n->incarnation == inc,
	       "node %u: host '%s' addr_len %u incarnation %llx (want %s, %llx)", id, n->host,
	       n->addr_len, (unsigned long long)n->incarnation, name, (unsigned long long)inc);
}

int main(void)
{
	td_init("rdv-tcp", 90, 0);
	td_prog("SHF_TEST_SHUFFLED");
	char port[16], spec[64], listen[64];
	td_fmt(port, sizeof(port), "%d", free_port());
	td_fmt(spec, sizeof(spec), "tcp://127.0.0.1:%s", port);

	CHECK(shd_rdv_spec_check(spec, err, sizeof(err)) == 0);
	CHECK(shd_rdv_spec_check("tcp://127.0.0.1", err, sizeof(err)) == -EINVAL);
	CHECK(shd_rdv_spec_check("tcp://", err, sizeof(err)) == -EINVAL);

	/* the store is down: bounded wait, then a reason */
	struct shd_rdv_self quick = {"n0", NULL, 300, 1, 8, NULL};
	struct shd_rdv *r = NULL;
	int64_t t0 = td_now_ms();
	int rc = shd_rdv_open(spec, &quick, &r, err, sizeof(err));
	CHECKF(rc == -ECONNREFUSED && r == NULL && strstr(err, port), "store down: %d %s", rc, err);
	CHECKF(td_now_ms() - t0 >= 250, "gave up after %lld ms, before its 300 ms",
	       (long long)(td_now_ms() - t0));

	struct td_daemon *d = td_daemon("store");
	td_fmt(listen, sizeof(listen), "--store-listen=127.0.0.1:%s", port);
	const char *args[] = {listen, NULL};
	CHECK(td_start(d, args, NULL) == 0);

	struct shd_rdv_result ra = {0}, rb = {0}, rc2 = {0}, ra2 = {0};
	struct shd_rdv *a = join(spec, "alpha", 0xa1, 8, &ra);
	CHECK(ra.my_node == 0 && ra.n_nodes == 8 && ra.kind == SHD_RDV_TCP);
	struct shd_rdv *b = join(spec, "beta", 0xb1, 8, &rb);
	CHECK(rb.my_node == 1);
	has_node(&rb, 0, "alpha", 0xa1);             /* published before */
	CHECK(ra.nodes[1].addr_len == 0);             /* beta came after alpha's exchange */

	/* alpha looks beta up later; an id nobody claimed is unknown */
	struct shd_rdv_node n;
	rc = shd_rdv_lookup(a, 1, 1000, &n, err, sizeof(err));
	CHECKF(rc == 0 && !strcmp(n.host, "beta") && n.incarnation == 0xb1, "lookup beta: %d %s",
	       rc, err);
	CHECK(shd_rdv_lookup(a, 5, 1000, &n, err, sizeof(err)) == -ENOENT);
	CHECK(shd_rdv_lookup(a, 8, 1000, &n, err, sizeof(err)) == -ENOENT);

	/* a third node; then alpha restarts: same id, its new record is seen */
	struct shd_rdv *c = join(spec, "gamma", 0xc1, 8, &rc2);
	CHECK(rc2.my_node == 2);
	has_node(&rc2, 0, "alpha", 0xa1);
	has_node(&rc2, 1, "beta", 0xb1);
	shd_rdv_close(a);
	shd_rdv_result_fini(&ra);
	a = join(spec, "alpha", 0xa2, 8, &ra2);
	CHECKF(ra2.my_node == 0, "alpha restarted as node %u", ra2.my_node);
	has_node(&ra2, 1, "beta", 0xb1);
	has_node(&ra2, 2, "gamma", 0xc1);
	rc = shd_rdv_lookup(b, 0, 1000, &n, err, sizeof(err));
	CHECKF(rc == 0 && n.incarnation == 0xa2, "beta sees alpha's new incarnation: %d %llx", rc,
	       (unsigned long long)n.incarnation);

	/* the set is full at max_nodes 3: a fourth name is refused */
	struct shd_rdv_self full = {"delta", NULL, 2000, 0xd1, 3, NULL};
	r = NULL;
	rc = shd_rdv_open(spec, &full, &r, err, sizeof(err));
	CHECKF(rc == -ENOSPC && r == NULL, "fourth node in a set of 3: %d %s", rc, err);

	/* the store goes away: lookups fail cleanly, nothing hangs */
	td_stop(d);
	t0 = td_now_ms();
	rc = shd_rdv_lookup(b, 2, 300, &n, err, sizeof(err));
	CHECKF(rc < 0 && rc != -ENOENT, "lookup with the store down: %d", rc);
	CHECKF(td_now_ms() - t0 < 2000, "lookup with the store down took %lld ms",
	       (long long)(td_now_ms() - t0));
	/* other kinds do not look up */
	struct shd_rdv *s = NULL;
	struct shd_rdv_self st = {"h1", "h1:7000", 0, 1, 0, NULL};
	CHECK(shd_rdv_open("static:h1:7000,h2:7000", &st, &s, err, sizeof(err)) == 0);
	CHECK(shd_rdv_lookup(s, 1, 100, &n, err, sizeof(err)) == -ENOTSUP);
	shd_rdv_close(s);

	shd_rdv_close(a);
	shd_rdv_close(b);
	shd_rdv_close(c);
	shd_rdv_result_fini(&rb);
	shd_rdv_result_fini(&rc2);
	shd_rdv_result_fini(&ra2);
	return 0;
}
