/* SPDX-License-Identifier: MIT */
/*
 * tests/node/conn-limits.c - connection slots: a per-user limit, and the
 * last slots kept for shufflectl and for root (issue 15, item 6).
 *
 * A root daemon with max_clients=10, max_clients_per_user=4,
 * reserved_root=2, reserved_ctl=2: users get 6 ordinary slots, 2 more only
 * for control requests, and root the last 2.  Connections are made as
 * other uids (a forked child connects after setresuid and hands the socket
 * back, so SO_PEERCRED names that uid):
 *   - uid A opens 4 sessions; its 5th is refused with -EDQUOT;
 *   - uid B opens 2 (6 in all); its 3rd and 4th get shufflectl-only slots:
 *     a ping is answered, a REGISTER is refused with -EBUSY, the session
 *     stays;
 *   - uid C is refused with -EBUSY (no slot left for users);
 *   - root's control requests and a root job still get in; root's 3rd
 *     extra connection is refused (max_clients);
 *   - once uid A closes its sessions, uid C gets in.
 * Each refusal is counted (conn_refused_user, conn_refused_full) and logged.
 * Skipped unless root.
 */
#include "tests/node/rawconn.h"

#define UID_A 65534
#define UID_B 65533
#define UID_C 65532

static const char *sock;
static struct td_env *e;
static int queries_refused; /* wait_sessions()'s queries that found no slot */

/* Wait until the daemon holds n sessions besides the asking one (fds are
 * no measure: closes are done off the loop, a little later). */
static void wait_sessions(long long n, const char *what)
{
	long long got = -1;
	for (int64_t end = td_now_ms() + 10000; td_now_ms() < end; td_sleep_ms(20)) {
		json_t *st = td_query(e->d, "status");
		if (!st) { /* refused while every slot is still taken */
			queries_refused++;
			continue;
		}
		got = td_num(st, "sessions") - 1;
		json_decref(st);
		if (got == n)
			return;
	}
	FAIL("%s: the daemon holds %lld sessions, expected %lld", what, got, n);
}

static int open_ok(uid_t uid, const char *what)
{
	int fd = uid ? rc_connect_as(sock, uid) : rc_connect(sock);
	CHECKF(fd >= 0, "%s: connect: %s", what, strerror(-fd));
	int t = rc_hello(fd, 3000, NULL);
	CHECKF(t == SHF_IPC_HELLO_OK, "%s: no HELLO_OK (%d)", what, t);
	return fd;
}

static void open_refused(uid_t uid, int want, const char *what)
{
	int fd = uid ? rc_connect_as(sock, uid) : rc_connect(sock);
	CHECKF(fd >= 0, "%s: connect: %s", what, strerror(-fd));
	int err = 0;
	int t = rc_hello(fd, 3000, &err);
	CHECKF(t == SHF_IPC_ERROR && err == want, "%s: type %d err %d, expected ERROR %d", what, t,
	       err, want);
	CHECKF(rc_wait_closed(fd, 3000, NULL) >= 0, "%s: not closed after the refusal", what);
	close(fd);
	fprintf(stderr, "conn-limits: %s: refused (%d)\n", what, want);
}

int main(void)
{
	e = td_init("conn-limits", 50, TD_SOCKET_ENV);
	if (geteuid() != 0)
		SKIP("needs root (a root daemon, connections as other uids)");
	CHECK(chmod(e->dir, 0755) == 0);
	const char *args[] = {"--max-clients=10", "--max-clients-per-user=4", "--reserved-root=2",
			      "--reserved-ctl=2", NULL};
	CHECK(td_start(e->d, args, NULL) == 0);
	sock = e->d->sock;
	wait_sessions(0, "start"); /* the start-up probe's session is gone */

	int a[4], b[4];
	for (int i = 0; i < 4; i++)
		a[i] = open_ok(UID_A, "uid A, sessions 1-4");
	open_refused(UID_A, -EDQUOT, "uid A, session 5 (max_clients_per_user)");
	for (int i = 0; i < 4; i++)
		b[i] = open_ok(UID_B, "uid B, sessions 1-4 (3 and 4 in shufflectl slots)");
	int err = 0;
	CHECK(rc_ping(b[3], 3000, NULL) == SHF_IPC_CTL_REPLY);
	struct shf_ipc_register reg;
	memset(&reg, 0, sizeof(reg));
	snprintf(reg.job, sizeof(reg.job), "bjob");
	reg.world = 1;
	CHECK(shf_ipc_send(b[3], SHF_IPC_REGISTER, 2, &reg, sizeof(reg), NULL, 0) == 0);
	int t = rc_next(b[3], 3000, &err);
	CHECKF(t == SHF_IPC_ERROR && err == -EBUSY,
	       "REGISTER in a shufflectl slot: type %d err %d, expected -EBUSY", t, err);
	CHECK(rc_ping(b[3], 3000, NULL) == SHF_IPC_CTL_REPLY);
	open_refused(UID_C, -EBUSY, "uid C (only reserved slots left)");

	/* root: control requests and a job */
	json_t *st = td_query(e->d, "status");
	CHECKF(st != NULL, "root's control request did not get in");
	json_decref(st);
	const char *traffic[] = {"traffic", "n=50", NULL};
	pid_t p = td_spawn_client("rootjob", 0, 1, traffic, NULL);
	CHECKF(td_wait(p, 20000) == 0, "root's job failed");
	wait_sessions(8, "root's job ended"); /* uid A's 4, uid B's 4 */
	int r1 = open_ok(0, "root, slot 9");
	int r2 = open_ok(0, "root, slot 10");
	open_refused(0, -EBUSY, "root, slot 11 (max_clients)");
	close(r1);
	close(r2);

	for (int i = 0; i < 4; i++)
		close(a[i]);
	wait_sessions(4, "uid A left");
	int c = open_ok(UID_C, "uid C once uid A left");
	CHECK(rc_ping(c, 3000, NULL) == SHF_IPC_CTL_REPLY);

	st = td_query(e->d, "stats");
	CHECK(st != NULL);
	CHECKF(td_num(st, "daemon.conn_refused_user") == 1, "conn_refused_user %lld, expected 1",
	       td_num(st, "daemon.conn_refused_user"));
	CHECKF(td_num(st, "daemon.conn_refused_full") == 2 + queries_refused,
	       "conn_refused_full %lld, expected %d", td_num(st, "daemon.conn_refused_full"),
	       2 + queries_refused);
	json_decref(st);
	CHECK(td_log_contains(e->d, "max_clients_per_user"));
	close(c);
	for (int i = 0; i < 4; i++)
		close(b[i]);
	td_stop(e->d);
	return 0;
}
