/* SPDX-License-Identifier: MIT */
/*
 * daemon/session.c - the control socket and the life of its sessions.
 *
 * A session is one SOCK_SEQPACKET connection.  Its state machine is in
 * daemon.h (enum shd_sess_state).  Every message is validated by
 * shf_ipc_recv()/shf_ipc_check() before a field is read; anything out of
 * place cuts that client off with a logged reason and nobody else notices.
 *
 * A session ends in one place: shd_session_reap(), the clients step of the
 * pass (pass.c), frees every session queued by shd_client_cutoff() or
 * shd_client_reap_later() (client.c) since the last pass, whatever ended
 * it: a protocol error, a corrupt ring, a world timeout, BYE, a closed
 * socket, or the end of draining.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/closer.h"
#include "daemon/admin/ctlcmd.h"
#include "daemon/epoch.h"
#include "daemon/job.h"
#include "daemon/jobtab.h"
#include "daemon/log.h"
#include "daemon/net/net.h"
#include "daemon/region.h"
#include "daemon/relay.h"
#include "daemon/sched.h"
#include "daemon/session.h"
#include "daemon/stats.h"
#include "proto/shm.h"

static struct shd_ratelimit rl_fail = SHD_RATELIMIT_INIT(1000, 10);
static struct shd_ratelimit rl_refuse = SHD_RATELIMIT_INIT(1000, 5);
static struct shd_ratelimit rl_fds = SHD_RATELIMIT_INIT(10000, 1);

/* Accepting paused for lack of fds: first pause, and the longest. */
#define ACCEPT_PAUSE_MIN_MS 100u
#define ACCEPT_PAUSE_MAX_MS 1000u

/* mkdir -p with a mode for the last component */
static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * Is the runtime directory ours alone?  Another user who could create or
 * replace it (or its socket) could serve clients a daemon of their own, or
 * take ours over.  The directory must belong to us and be writable by
 * nobody else; each directory above it must belong to root, to us or (a
 * system daemon) to the system user, trusted as root is (systemd's
 * RuntimeDirectory= gives /run/shuffle to the unit's User=), and, if
 * others may write it, carry the sticky bit (as /tmp does), so that
 * nobody else can rename what we made there.  0, or -EPERM with why.
 */
static int runtime_dir_check(const char *dir, long long sys_uid, char *why, size_t n)
{
	char path[4096];
	uid_t me = geteuid();
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return snprintf(why, n, "path too long"), -ENAMETOOLONG;
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	for (bool last = true;; last = false) {
		struct stat st;
		if (stat(path, &st) < 0) {
			int r = -errno;
			snprintf(why, n, "%s: %s", path, strerror(errno));
			return r;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(why, n, "%s is not a directory", path);
			return -ENOTDIR;
		}
		if (last && st.st_uid != me) {
			snprintf(why, n, "%s is owned by uid %u, not by this daemon's uid %u", path,
				 (unsigned)st.st_uid, (unsigned)me);
			return -EPERM;
		}
		if (last && (st.st_mode & 022)) {
			snprintf(why, n, "%s is writable by group or others (mode %04o)", path,
				 (unsigned)(st.st_mode & 07777));
			return -EPERM;
		}
		if (!last && st.st_uid != 0 && st.st_uid != me &&
		    (sys_uid < 0 || st.st_uid != (uid_t)sys_uid)) {
			snprintf(why, n, "%s (above it) is owned by uid %u, neither root nor this "
				 "daemon's uid %u%s", path, (unsigned)st.st_uid, (unsigned)me,
				 sys_uid >= 0 ? " nor the system user's" : "");
			return -EPERM;
		}
		if (!last && (st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
			snprintf(why, n, "%s (above it) is writable by group or others without the "
				 "sticky bit (mode %04o)", path, (unsigned)(st.st_mode & 07777));
			return -EPERM;
		}
		char *slash = strrchr(path, '/');
		if (!slash || slash == path) {
			if (slash && path[1]) {
				path[1] = '\0'; /* then "/" itself */
				continue;
			}
			return 0;
		}
		*slash = '\0';
	}
}

static void on_accept(int fd, void *arg);
static void on_accept_resume(int fd, void *arg);

int shd_session_listen(struct shd_daemon *d)
{
	const struct shd_config *cfg = &d->cfg;
	bool shared = shd_config_system(cfg);
	mode_t dir_mode = shared ? 0755 : 0700;
	char why[4300];
	d->spare_fd = -1;
	/* a system daemon (mode system: root or the system user) serves
	 * everyone (a 0755 directory, a 0666 socket); a user's daemon only
	 * that user (0700, 0600) */
	int r = mkdir_p(cfg->runtime_dir, dir_mode);
	if (r) {
		shd_err("cannot create runtime directory %s: %s", cfg->runtime_dir, strerror(-r));
		return r;
	}
	r = runtime_dir_check(cfg->runtime_dir, shared ? cfg->system_uid : -1, why, sizeof(why));
	if (r) {
		shd_err("refusing runtime directory %s: %s (another user could serve a daemon "
			"of their own there; use a directory only this user can write)",
			cfg->runtime_dir, why);
		return r;
	}
	/* One daemon per runtime directory.  The lock dies with the process,
	 * so a crashed daemon never blocks its successor.  A clean stop
	 * removes the file while it still holds the lock (shd_session_close), so
	 * a daemon that opened the old file and got its lock afterwards holds
	 * a lock on a file nobody else will open: it checks that the path
	 * still names the file it locked, and tries again if not. */
	char lock[4200];
	snprintf(lock, sizeof(lock), "%s/shuffled.lock", cfg->runtime_dir);
	for (int tries = 0;; tries++) {
		d->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (d->lock_fd < 0) {
			r = -errno;
			shd_err("cannot open lock file %s: %s", lock, strerror(errno));
			return r;
		}
		if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			r = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
			shd_err("another shuffled is running in %s (lock %s held)",
				cfg->runtime_dir, lock);
			close(d->lock_fd); /* not ours: never removed by us */
			d->lock_fd = -1;
			return r;
		}
		struct stat fst, pst;
		if (fstat(d->lock_fd, &fst) == 0 && stat(lock, &pst) == 0 &&
		    fst.st_dev == pst.st_dev && fst.st_ino == pst.st_ino)
			break;
		close(d->lock_fd);
		d->lock_fd = -1;
		if (tries == 100) {
			shd_err("lock file %s keeps being replaced", lock);
			return -EAGAIN;
		}
	}
	/* ours, and locked (so no running daemon is served from it): a
	 * directory found from an earlier run in the other mode gets this
	 * mode's permissions (a private daemon's must not stay open) */
	struct stat dst;
	if (stat(cfg->runtime_dir, &dst) == 0 && (dst.st_mode & 07777) != dir_mode &&
	    chmod(cfg->runtime_dir, dir_mode) < 0) {
		r = -errno;
		shd_err("chmod %04o %s: %s", (unsigned)dir_mode, cfg->runtime_dir, strerror(errno));
		return r;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(cfg->socket_path) >= sizeof(sa.sun_path)) {
		shd_err("socket path too long (max %zu bytes): %s", sizeof(sa.sun_path) - 1,
			cfg->socket_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, cfg->socket_path);
	/* we hold the lock: whatever socket is there is stale */
	if (unlink(cfg->socket_path) == 0)
		shd_notice("removed stale socket %s", cfg->socket_path);
	d->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->listen_fd < 0)
		return -errno;
	if (bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		shd_err("bind %s: %s", cfg->socket_path, strerror(errno));
		return r;
	}
	/* A system daemon serves every local user: anyone may connect, and
	 * SO_PEERCRED decides which jobs they may join.  A user's own daemon
	 * is private to that user. */
	if (chmod(cfg->socket_path, shared ? 0666 : 0600) < 0 || listen(d->listen_fd, 256) < 0) {
		r = -errno;
		shd_err("socket %s: %s", cfg->socket_path, strerror(errno));
		return r;
	}
	/* a spare fd to give up when out of fds: one connection can then be
	 * told so instead of waiting in the listen queue (on_accept) */
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	d->listen_ev = shd_loop_fd(d->loop, d->listen_fd, on_accept, d);
	d->accept_timer = shd_loop_timer(d->loop, on_accept_resume, d);
	return d->listen_ev && d->accept_timer ? 0 : -ENOMEM;
}

static void client_free(struct shd_client *c);

void shd_session_close(struct shd_daemon *d)
{
	struct shd_list *p, *t;
	shd_list_for_each_safe(p, t, &d->clients)
		client_free(shd_container_of(p, struct shd_client, all_link));
	shd_ev_free(d->listen_ev);
	d->listen_ev = NULL;
	shd_ev_free(d->accept_timer);
	d->accept_timer = NULL;
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	d->spare_fd = -1;
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->cfg.socket_path);
	}
	d->listen_fd = -1;
	/* removed while still held: see the lock's loop in shd_session_listen */
	if (d->lock_fd >= 0) {
		char lock[SHD_CONFIG_PATH_MAX + 16];
		snprintf(lock, sizeof(lock), "%s/shuffled.lock", d->cfg.runtime_dir);
		unlink(lock);
		close(d->lock_fd);
	}
	d->lock_fd = -1;
}

static void client_free(struct shd_client *c)
{
	struct shd_daemon *d = c->d;
	if (c->job)
		shd_job_leave(c, true, false);
	shd_relay_detach(c);
	shd_ev_free(c->world_timer);
	shd_ev_free(c->idle_timer);
	shd_region_free(c);
	shd_client_close_sock(c);
	shd_stats_client_add(&d->totals, &c->st);
	shd_list_del(&c->all_link);
	d->n_clients--;
	free(c->sent_to);
	free(c->bcast_sent);
	free(c);
}

void shd_session_reap(struct shd_daemon *d)
{
	while (!shd_list_empty(&d->doomed)) {
		struct shd_client *c = shd_container_of(d->doomed.next, struct shd_client, doom_link);
		shd_list_del(&c->doom_link);
		client_free(c);
	}
}

/* Socket closed without BYE (or BYE): keep relaying what it published. */
static void client_gone(struct shd_client *c, bool bye)
{
	struct shd_daemon *d = c->d;
	if (c->region) /* clients only: shufflectl sessions are not counted */
		(*(bye ? &d->st.disc_bye : &d->st.disc_hup))++;
	if (!c->region || c->state == SHD_SESS_DRAINING) {
		if (c->job || c->state != SHD_SESS_OPEN || !bye)
			shd_debug("session %llu closed (%s)", (unsigned long long)c->id,
				  shd_session_state_name(c->state));
		shd_client_close_sock(c);
		shd_client_reap_later(c);
		return;
	}
	shd_info("client %llu (job %s rank %d pid %d) %s; draining its send ring",
		 (unsigned long long)c->id, c->job->name, c->rank, (int)c->pid,
		 bye ? "said bye" : "disconnected");
	shd_client_close_sock(c);
	shd_ev_free(c->world_timer);
	c->world_timer = NULL;
	/* the rank is gone from now on: records to it are dropped; its own
	 * published records still go out */
	shd_job_leave(c, true, true);
	c->state = SHD_SESS_DRAINING; /* a pending mark completes unanswered */
	shd_sched_kick(c);
}

/*
 * A waiting rank's world timeout fired.  The world cannot complete without
 * it, so every rank of the job still waiting here gets the same verdict:
 * -ETIMEDOUT naming the ranks missing at this moment, and is unregistered
 * (each may try again).
 */
static void world_timeout(int fd, void *arg)
{
	struct shd_client *c = arg;
	struct shd_job *j = c->job;
	struct shd_daemon *d = c->d;
	char missing[400], nodes[200] = "", bad[160] = "";
	(void)fd;
	shd_jobtab_missing(j, missing, sizeof(missing));
	/* a rank that came with another world size was refused: say so here
	 * too, or these ranks only see a timeout */
	if (j->bad_worlds)
		snprintf(bad, sizeof(bad), "; rank %d came with world %d, not %d, and was refused%s",
			 j->bad_world_rank, j->bad_world, j->world,
			 j->bad_worlds > 1 ? " (and others: see the daemon's log)" : "");
	/* a missing rank's node is known only once it registers; say which
	 * nodes it may be waiting for: those not up */
	if (d->net && shd_net_not_up(d, nodes + 2, sizeof(nodes) - 2) > 0)
		memcpy(nodes, "; ", 2);
	else
		nodes[0] = '\0';
	/* a complete, confirmed world that waits for this node's sessions
	 * with the job's other nodes (job.c, shd_job_check_ready) */
	uint32_t first = 0, nup = j->confirmed && j->registered == j->world && !j->deny
					  ? shd_job_nodes_not_up(d, j, &first) : 0;
	if (nup) {
		snprintf(missing, sizeof(missing), "none, but this node has no session yet with "
			 "node %u%s of the job", first, nup > 1 ? " and others" : "");
		shd_warn("job %s: world of %d complete at rank %d's timeout, but this node has no "
			 "session with %u of the job's nodes (node %u first)%s", j->name, j->world,
			 c->rank, nup, first, nodes);
	} else {
		shd_warn("job %s: world of %d incomplete after rank %d's timeout; missing ranks "
			 "%s%s%s", j->name, j->world, c->rank, missing, bad, nodes);
	}
	int32_t registered = j->registered;
	/* each leave takes its client off j->waiting; j itself is freed no
	 * earlier than the reap step */
	while (!shd_list_empty(&j->waiting)) {
		struct shd_client *w = shd_container_of(j->waiting.next, struct shd_client, job_link);
		d->st.disc_timeout++;
		shd_client_error(w, 0, -ETIMEDOUT,
				 "job %s: %d of %d ranks registered; missing ranks %s%s%s", j->name,
				 registered, j->world, missing, bad, nodes);
		/* unregistered, so the rank can try again */
		shd_job_leave(w, false, false);
		shd_client_close_sock(w);
		shd_client_reap_later(w);
	}
}

static int ring_bytes_ok(const struct shd_daemon *d, uint32_t rb, char *why, size_t n)
{
	if (!shf_ring_size_ok(rb) || rb > (256u << 20)) {
		snprintf(why, n, "ring_bytes %u: must be a power of two in [%u, %u]", rb,
			 SHF_RING_MIN_BYTES, 256u << 20);
		return -EINVAL;
	}
	if (d->cfg.max_msg + SHF_MSG_HDR_BYTES > shf_ring_max_payload(rb)) {
		snprintf(why, n, "ring_bytes %u too small for max_msg %u (needs >= %u)", rb,
			 d->cfg.max_msg, 2 * (d->cfg.max_msg + 16));
		return -EINVAL;
	}
	return 0;
}

static void on_register(struct shd_client *c, uint32_t id, const struct shf_ipc_register *m)
{
	struct shd_daemon *d = c->d;
	char why[300] = "";
	int r;
	uint32_t rb = m->ring_bytes ? m->ring_bytes : d->cfg.ring_bytes;
	if (c->ctl_only) {
		r = -EBUSY;
		snprintf(why, sizeof(why), "no client slot free: this connection has one of the "
			 "slots kept for shufflectl (max_clients %u, reserved_ctl %u, "
			 "reserved_root %u)", d->cfg.max_clients, d->cfg.reserved_ctl,
			 d->cfg.reserved_root);
	} else if (shf_ipc_job_check(m->job) < 0) {
		r = -EINVAL;
		snprintf(why, sizeof(why), "bad job name (1-63 chars of [A-Za-z0-9._:@+-])");
	} else if (m->world < 1 || m->world > SHF_WORLD_MAX) {
		r = -EINVAL;
		snprintf(why, sizeof(why), "world %d out of range [1, %d]", m->world, SHF_WORLD_MAX);
	} else if (m->rank < 0 || m->rank >= m->world) {
		r = -EINVAL;
		snprintf(why, sizeof(why), "rank %d out of range [0, %d)", m->rank, m->world);
	} else if (m->timeout_ms < -1) {
		r = -EINVAL;
		snprintf(why, sizeof(why), "timeout_ms %d < -1", m->timeout_ms);
	} else if ((m->flags & ~SHF_REG_FLAGS_KNOWN) || m->reserved) {
		r = -EINVAL;
		snprintf(why, sizeof(why), "unknown register flags %#x or reserved %#x",
			 m->flags & ~SHF_REG_FLAGS_KNOWN, m->reserved);
	} else {
		r = ring_bytes_ok(d, rb, why, sizeof(why));
	}
	if (!r)
		r = shd_job_register(d, c, m->job, m->rank, m->world, why, sizeof(why));
	if (r) {
		d->st.refused++;
		shd_info("session %llu (pid %d uid %d): registration refused: %s",
			 (unsigned long long)c->id, (int)c->pid, (int)c->uid, why);
		shd_client_error(c, id, r, "%s", why);
		return;
	}
	int memfd = -1;
	r = shd_region_new(c, rb, d->cfg.max_msg, &memfd, why, sizeof(why));
	if (r) {
		d->st.refused++;
		shd_info("session %llu (pid %d uid %d): registration refused: %s",
			 (unsigned long long)c->id, (int)c->pid, (int)c->uid, why);
		shd_client_error(c, id, r, "%s", why);
		shd_job_leave(c, false, false);
		return;
	}
	/* a 1.0/1.1 client's SHF_REG_GLOBAL_MB is taken, but nobody pays for
	 * its wake-ups here: it keeps the [D2] fence */
	struct shf_ipc_register_ok ok = {c->region_bytes, c->rank, c->job->world, d->cfg.max_msg,
					 SHF_REG_OK_EPOCH_WHO | SHF_REG_OK_RUNS |
					 SHF_REG_OK_PACKED};
	int fds[SHF_IPC_REG_FDS] = {memfd, c->bell_daemon, c->bell_deliver, c->bell_space};
	r = shf_ipc_send(c->sock, SHF_IPC_REGISTER_OK, id, &ok, sizeof(ok), fds, SHF_IPC_REG_FDS);
	close(memfd);
	if (r) {
		shd_client_cutoff(c, r, "cannot send registration: %s", strerror(-r));
		return;
	}
	c->bell_ev = shd_loop_fd(d->loop, c->bell_daemon, shd_relay_bell, c);
	if (!c->bell_ev) {
		shd_client_cutoff(c, -ENOMEM, "out of memory");
		return;
	}
	c->state = SHD_SESS_WAITWORLD;
	shd_ev_free(c->idle_timer); /* the world timeout takes over */
	c->idle_timer = NULL;
	d->st.clients_attached++;
	shd_info("client %llu attached: job %s rank %d/%d pid %d uid %d ring %u B",
		 (unsigned long long)c->id, c->job->name, c->rank, c->job->world, (int)c->pid,
		 (int)c->uid, rb);
	int tmo = m->timeout_ms ? m->timeout_ms : (int)d->cfg.world_timeout_ms;
	if (tmo >= 0) {
		c->world_timer = shd_loop_timer(d->loop, world_timeout, c);
		if (!c->world_timer) {
			shd_client_cutoff(c, -ENOMEM, "out of memory");
			return;
		}
		shd_ev_arm(c->world_timer, (uint64_t)tmo * 1000u);
	}
	shd_list_add_tail(&c->job->waiting, &c->job_link);
	shd_job_check_ready(c->d, c->job);
}

/* NODE_INFO from an active client: its job's layout (a slice of a list). */
static void node_info(struct shd_client *c, uint32_t id, const struct shf_ipc_node_info *m)
{
	struct {
		struct shf_ipc_node_info_ok ok;
		int32_t v[SHF_IPC_NODE_INFO_MAX];
	} *rep = malloc(sizeof(*rep));
	int r = rep ? shd_jobtab_layout(c->d, c->job, m->what, m->first, m->max, rep->v, &rep->ok)
		    : -ENOMEM;
	if (r < 0)
		shd_client_error(c, id, r, "out of memory");
	else
		shd_client_send(c, SHF_IPC_NODE_INFO_OK, id, rep,
				sizeof(rep->ok) + rep->ok.count * sizeof(int32_t));
	free(rep);
}

/* One validated message.  Returns false when c was freed. */
static bool dispatch(struct shd_client *c, const void *buf, size_t n)
{
	struct shf_ipc_hdr h;
	memcpy(&h, buf, sizeof(h));
	const void *body = (const char *)buf + sizeof(h);
	switch (c->state) {
	case SHD_SESS_HELLO:
		if (h.type != SHF_IPC_HELLO)
			break;
		struct shf_ipc_hello hello;
		memcpy(&hello, body, sizeof(hello));
		if (hello.version != SHF_IPC_VERSION) {
			shd_info("session %llu (pid %d): protocol version %u refused",
				 (unsigned long long)c->id, (int)c->pid, hello.version);
			shd_client_error(c, h.id, -EPROTO,
					 "protocol version %u not supported; shuffled speaks %u",
					 hello.version, SHF_IPC_VERSION);
			shd_client_close_sock(c);
			shd_client_reap_later(c);
			return false;
		}
		struct shf_ipc_hello_ok ok = {SHF_IPC_VERSION, c->d->cfg.max_msg, c->d->cfg.ring_bytes,
					      c->d->node_id};
		if (shd_client_send(c, SHF_IPC_HELLO_OK, h.id, &ok, sizeof(ok)) == 0) {
			c->state = SHD_SESS_OPEN;
			shd_ev_arm(c->idle_timer, (uint64_t)c->d->cfg.idle_timeout_ms * 1000u);
		}
		return true;
	case SHD_SESS_OPEN:
		/* a request: the session is not idle */
		shd_ev_arm(c->idle_timer, (uint64_t)c->d->cfg.idle_timeout_ms * 1000u);
		if (h.type == SHF_IPC_REGISTER) {
			/* an older client's body stops before flags: they
			 * stay 0 (shf_ipc_check allowed only the two sizes) */
			struct shf_ipc_register m;
			memset(&m, 0, sizeof(m));
			memcpy(&m, body, n - sizeof(h));
			on_register(c, h.id, &m);
			return true; /* a failed registration keeps the session open */
		}
		if (h.type == SHF_IPC_CTL) {
			struct shf_ipc_ctl m;
			memcpy(&m, body, sizeof(m));
			m.cmd[sizeof(m.cmd) - 1] = '\0';
			/* arguments, if any: NUL-terminated text (shf_ipc_check) */
			const char *args = n > sizeof(h) + sizeof(m) ? (const char *)body + sizeof(m)
								     : NULL;
			c->d->st.ctl_requests++;
			int cr = 0;
			if (m.flags & ~SHF_CTL_ALL)
				shd_client_error(c, h.id, -EINVAL, "unknown ctl flags %#x", m.flags);
			else if (m.flags & SHF_CTL_ALL)
				cr = shd_ctlcmd_all(c->d, c, h.id, m.cmd, args, m.timeout_ms);
			else
				cr = shd_ctlcmd(c->d, c, h.id, m.cmd, args);
			if (cr < 0) {
				shd_client_close_sock(c);
				shd_client_reap_later(c);
				return false;
			}
			return true;
		}
		if (h.type == SHF_IPC_BYE) {
			client_gone(c, true);
			return false;
		}
		break;
	case SHD_SESS_WAITWORLD:
	case SHD_SESS_ACTIVE:
		if (h.type == SHF_IPC_BYE) {
			client_gone(c, true);
			return false;
		}
		if (h.type == SHF_IPC_RUNS) {
			c->runs = true; /* its delivery ring gets runs from now on */
			return true;
		}
		if (h.type == SHF_IPC_PACKED && c->runs) {
			c->packed = true; /* ... packed ones too */
			return true;
		}
		if (h.type == SHF_IPC_NODE_INFO && c->state == SHD_SESS_ACTIVE) {
			struct shf_ipc_node_info m;
			memcpy(&m, body, sizeof(m));
			if (m.what >= SHF_NODE_INFO_WHAT_MAX || m.max > SHF_IPC_NODE_INFO_MAX ||
			    m.reserved != 0)
				break;
			node_info(c, h.id, &m);
			return true;
		}
		if (h.type == SHF_IPC_EPOCH_WHO && c->state == SHD_SESS_ACTIVE) {
			struct shf_ipc_epoch_who m;
			memcpy(&m, body, sizeof(m));
			if (m.flags || m.reserved)
				break;
			struct {
				struct shf_ipc_epoch_who_ok ok;
				char text[1024];
			} rep = {{0, 0}, ""};
			rep.ok.local_late = shd_epoch_who(c, rep.text, sizeof(rep.text));
			shd_client_send(c, SHF_IPC_EPOCH_WHO_OK, h.id, &rep,
					sizeof(rep.ok) + strlen(rep.text) + 1);
			return true;
		}
		if (h.type == SHF_IPC_EPOCH && c->state == SHD_SESS_ACTIVE) {
			struct shf_ipc_epoch m;
			memcpy(&m, body, sizeof(m));
			if (m.phase != 2 || c->epoch != SHD_EPOCH_DELIVER)
				break;
			shd_epoch_phase2(c, h.id, m.id);
			return true;
		}
		break;
	default:
		break;
	}
	c->d->st.disc_proto++;
	shd_client_cutoff(c, -EPROTO, "unexpected control message (type %u) in state %s",
			  h.type, shd_session_state_name(c->state));
	return false;
}

static void on_sock(int fd, void *arg)
{
	struct shd_client *c = arg;
	_Alignas(8) char buf[1024];
	/* a few messages per wake-up: a chatty client cannot starve the loop */
	for (int i = 0; i < 16; i++) {
		long n = shd_client_recv(c, buf, sizeof(buf));
		(void)fd;
		if (n == -EAGAIN || n == -EBADF) /* -EBADF: it sent fds and was cut off */
			return;
		if (n == 0 || n == -ECONNRESET || n == -EPIPE) {
			client_gone(c, false);
			return;
		}
		if (n < 0) {
			c->d->st.disc_proto++;
			shd_client_cutoff(c, -EPROTO, "malformed control message: %s", strerror((int)-n));
			return;
		}
		if (!dispatch(c, buf, (size_t)n))
			return;
	}
}

/* No HELLO within hello_timeout_ms, or idle_timeout_ms in OPEN. */
static void idle_timeout(int fd, void *arg)
{
	struct shd_client *c = arg;
	struct shd_daemon *d = c->d;
	(void)fd;
	if (c->state == SHD_SESS_HELLO) {
		d->st.disc_hello++;
		shd_client_cutoff(c, -ETIMEDOUT, "no HELLO within %u ms (hello_timeout_ms)",
				  d->cfg.hello_timeout_ms);
	} else if (c->state == SHD_SESS_OPEN) {
		d->st.disc_idle++;
		shd_client_cutoff(c, -ETIMEDOUT, "idle for %u ms without registering or a request "
				  "(idle_timeout_ms)", d->cfg.idle_timeout_ms);
	}
}

/* Tell an accepted connection why it is refused, and close it. */
static void refuse(int fd, int err, const char *text)
{
	struct {
		struct shf_ipc_error e;
		char t[200];
	} m = {{err, 0}, {0}};
	snprintf(m.t, sizeof(m.t), "%s", text);
	shf_ipc_send(fd, SHF_IPC_ERROR, 0, &m, sizeof(m.e) + strlen(m.t) + 1, NULL, 0);
	shutdown(fd, SHUT_RDWR);
	shd_close_async(fd); /* its queue may hold fds whose close blocks */
}

static unsigned uid_sessions(const struct shd_daemon *d, uid_t uid)
{
	unsigned n = 0;
	const struct shd_list *p;
	for (p = d->clients.next; p != &d->clients; p = p->next)
		n += shd_container_of(p, struct shd_client, all_link)->uid == uid;
	return n;
}

/*
 * Which slot may a connection of uid take?  0 and *ctl_only set, or the
 * refusal's -errno with its text.  Root may use every slot and has no
 * per-user limit; a user gets the first max_clients - reserved_root -
 * reserved_ctl slots, then one of the reserved_ctl slots for shufflectl
 * only; the last reserved_root slots are root's.
 */
static int admit(struct shd_daemon *d, uid_t uid, bool *ctl_only, char *why, size_t n)
{
	const struct shd_config *cfg = &d->cfg;
	unsigned users = cfg->max_clients - cfg->reserved_root - cfg->reserved_ctl;
	unsigned ctl = cfg->max_clients - cfg->reserved_root;
	*ctl_only = false;
	if (uid != 0 && uid_sessions(d, uid) >= cfg->max_clients_per_user) {
		d->st.conn_refused_user++;
		snprintf(why, n, "too many connections of uid %u (max_clients_per_user %u)",
			 (unsigned)uid, cfg->max_clients_per_user);
		return -EDQUOT;
	}
	if (d->n_clients >= cfg->max_clients || (uid != 0 && d->n_clients >= ctl)) {
		d->st.conn_refused_full++;
		snprintf(why, n, "too many clients (max_clients %u, the last %u for root)",
			 cfg->max_clients, cfg->reserved_root);
		return -EBUSY;
	}
	*ctl_only = uid != 0 && d->n_clients >= users;
	return 0;
}

/*
 * accept() ran out of fds.  Retrying at once would spin (the listen queue
 * stays readable), so accepting pauses: the listen socket is not watched
 * until a timer, ACCEPT_PAUSE_MIN_MS doubling to ACCEPT_PAUSE_MAX_MS while
 * it lasts.  The spare fd is given up to take one waiting connection and
 * tell it why (ERROR -EMFILE) rather than leave it waiting.  One log line
 * per 10 s.
 */
static void accept_pause(struct shd_daemon *d, int err)
{
	struct rlimit rl = {0, 0};
	getrlimit(RLIMIT_NOFILE, &rl);
	d->st.accept_fd_pauses++;
	if (d->spare_fd >= 0) {
		close(d->spare_fd);
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			d->st.conn_refused_fds++;
			refuse(fd, -EMFILE, "shuffled is out of file descriptors; try again later");
		}
		d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* may fail; retried */
	}
	d->accept_backoff_ms = d->accept_backoff_ms ? d->accept_backoff_ms * 2 : ACCEPT_PAUSE_MIN_MS;
	if (d->accept_backoff_ms > ACCEPT_PAUSE_MAX_MS)
		d->accept_backoff_ms = ACCEPT_PAUSE_MAX_MS;
	shd_log_rl(&rl_fds, SHD_LOG_WARN, "accept: %s (RLIMIT_NOFILE %llu, %u sessions): "
		   "out of file descriptors; refusing new connections, accepting again in "
		   "%u ms", strerror(err), (unsigned long long)rl.rlim_cur, d->n_clients,
		   d->accept_backoff_ms);
	shd_ev_disarm(d->listen_ev);
	shd_ev_arm(d->accept_timer, (uint64_t)d->accept_backoff_ms * 1000u);
}

static void on_accept_resume(int fd, void *arg)
{
	struct shd_daemon *d = arg;
	(void)fd;
	if (d->spare_fd < 0)
		d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	shd_ev_watch(d->listen_ev);
}

static void on_accept(int lfd, void *arg)
{
	struct shd_daemon *d = arg;
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
				accept_pause(d, e);
			else if (e != EAGAIN && e != EINTR && e != ECONNABORTED)
				shd_log_rl(&rl_fail, SHD_LOG_WARN, "accept: %s", strerror(e));
			return;
		}
		d->accept_backoff_ms = 0; /* fds again: the next pause starts short */
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
			shd_log_rl(&rl_fail, SHD_LOG_WARN, "SO_PEERCRED: %s", strerror(errno));
			refuse(fd, -EPROTO, "no peer credentials");
			continue;
		}
		char why[200];
		bool ctl_only;
		int r = admit(d, cred.uid, &ctl_only, why, sizeof(why));
		if (r) {
			shd_log_rl(&rl_refuse, SHD_LOG_WARN, "refused pid %d uid %u: %s",
				   (int)cred.pid, (unsigned)cred.uid, why);
			refuse(fd, r, why);
			continue;
		}
		struct shd_client *c = calloc(1, sizeof(*c));
		if (!c) {
			refuse(fd, -ENOMEM, "out of memory");
			return;
		}
		c->d = d;
		c->id = ++d->next_client_id;
		c->state = SHD_SESS_HELLO;
		c->ctl_only = ctl_only;
		c->sock = fd;
		c->pid = cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->rank = -1;
		c->since_ns = shd_now_ns();
		c->bell_daemon = c->bell_deliver = c->bell_space = -1;
		shd_list_init(&c->job_link);
		shd_sched_client_init(c);
		c->sock_ev = shd_loop_fd(d->loop, fd, on_sock, c);
		c->idle_timer = shd_loop_timer(d->loop, idle_timeout, c);
		if (!c->sock_ev || !c->idle_timer) {
			shd_ev_free(c->sock_ev);
			shd_ev_free(c->idle_timer);
			refuse(fd, -ENOMEM, "out of memory");
			free(c);
			return;
		}
		shd_ev_arm(c->idle_timer, (uint64_t)d->cfg.hello_timeout_ms * 1000u);
		shd_list_add_tail(&d->clients, &c->all_link);
		d->n_clients++;
	}
}
