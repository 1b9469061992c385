/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/dir.c - the dir rendezvous (dir:PATH:N and dir:PATH, see
 * rdv.h): the address files, the writer's incarnation and staleness, the
 * node id claims.  Called by rdv.c only.
 */
#include "daemon/rdv/int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "daemon/errbuf.h"
#include "proto/addr.h"

#define DIR_MAGIC "shuffle-rdv"
#define DIR_VERSION 2

/* Read a small file into buf[cap] (NUL-terminated): length or -errno. */
static ssize_t read_small(const char *fn, char *buf, size_t cap)
{
	int fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t got = read(fd, buf, cap - 1);
	int e = got < 0 ? errno : 0;
	close(fd);
	if (e)
		return -e;
	buf[got] = '\0';
	return got;
}

/* Start time (field 22 of /proc/PID/stat, clock ticks after boot) of pid;
 * 0, or -ENOENT when there is no such process (or only its zombie). */
static int proc_start(long pid, uint64_t *start)
{
	char fn[64], text[1024];
	snprintf(fn, sizeof(fn), "/proc/%ld/stat", pid);
	ssize_t got = read_small(fn, text, sizeof(text));
	if (got < 0)
		return got == -ENOENT || got == -ESRCH ? -ENOENT : (int)got;
	char *p = strrchr(text, ')');
	if (!p || p[1] != ' ')
		return -EBADMSG;
	p += 2; /* field 3, the state */
	if (*p == 'Z' || *p == 'X')
		return -ENOENT;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EBADMSG;
		p++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || end == p)
		return -EBADMSG;
	*start = v;
	return 0;
}

static bool boot_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= BOOT_ID_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || *s == '-'))
			return false;
	return true;
}

/* Who I am, for my file.  inc 0: draw one. */
void shd_rdv_dir_ident(struct ident *me, uint64_t inc)
{
	memset(me, 0, sizeof(*me));
	while (inc == 0) {
		if (getrandom(&inc, sizeof(inc), 0) != (ssize_t)sizeof(inc)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			inc = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
			      ((uint64_t)getpid() << 40);
		}
	}
	me->incarnation = inc;
	me->pid = (long)getpid();
	snprintf(me->boot, sizeof(me->boot), "-");
	char text[64], link[64];
	if (read_small("/proc/sys/kernel/random/boot_id", text, sizeof(text)) > 0) {
		text[strcspn(text, "\n")] = '\0';
		if (boot_id_ok(text))
			snprintf(me->boot, sizeof(me->boot), "%.39s", text);
	}
	ssize_t ll = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	if (ll > 0) {
		link[ll] = '\0';
		if (sscanf(link, "pid:[%" SCNu64 "]", &me->pidns) != 1)
			me->pidns = 0;
	}
	if (proc_start(me->pid, &me->start) < 0)
		me->start = 0;
}

/* A file whose writer I can see is dead (see rdv.h, "dir files"). */
static bool ident_stale(const struct ident *f, const struct ident *me)
{
	if (f->incarnation == me->incarnation)
		return false;
	if (!strcmp(f->boot, "-") || strcmp(f->boot, me->boot) || !f->pidns ||
	    f->pidns != me->pidns)
		return false; /* another boot, host or pid namespace: cannot tell */
	uint64_t st = 0;
	int e = proc_start(f->pid, &st);
	if (e == -ENOENT)
		return true;
	return e == 0 && f->start && st && st != f->start; /* pid reused */
}

static int write_my_file(struct shd_rdv *r, const void *addr, size_t addr_len, char *err,
			 size_t errlen)
{
	char tmp[PATH_MAX], fin[PATH_MAX];
	char text[256 + NAME_MAX_DIR + 2 * SHD_RDV_ADDR_MAX];
	const struct ident *me = &r->me;
	int len = snprintf(text, sizeof(text), "%s %d %s ", DIR_MAGIC, DIR_VERSION, r->name);
	for (size_t i = 0; i < addr_len; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len, "%02x",
				((const uint8_t *)addr)[i]);
	len += snprintf(text + len, sizeof(text) - (size_t)len,
			" %016" PRIx64 " %ld %s %" PRIu64 " %" PRIu64 "\n", me->incarnation,
			me->pid, me->boot, me->pidns, me->start);

	/* parse_dir() bounded path and shd_rdv_dir_open() the name so that both fit */
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.addr.tmp.%ld.%016" PRIx64, r->path, r->name,
		     me->pid, me->incarnation) >= (int)sizeof(tmp) ||
	    snprintf(fin, sizeof(fin), "%s/%s.addr", r->path, r->name) >= (int)sizeof(fin))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		shd_errf(err, errlen, "rdv dir: create %s: %s", tmp, strerror(e));
		return -e;
	}
	ssize_t w = write(fd, text, (size_t)len);
	int e = w == len ? 0 : (w < 0 ? errno : EIO);
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && rename(tmp, fin) != 0) /* atomic: replaces a previous incarnation's */
		e = errno;
	if (e) {
		unlink(tmp);
		shd_errf(err, errlen, "rdv dir: write %s: %s", fin, strerror(e));
		return -e;
	}
	return 0;
}

/* Names (without ".addr") of the published files, sorted byte-wise. */
struct name_list {
	char (*v)[NAME_MAX_DIR];
	size_t n, cap;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int name_push(struct name_list *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		void *t = realloc(l->v, cap * sizeof(*l->v));
		if (!t)
			return -ENOMEM;
		l->v = t;
		l->cap = cap;
	}
	memcpy(l->v[l->n], s, len);
	l->v[l->n][len] = '\0';
	l->n++;
	return 0;
}

static int scan_dir(const char *path, struct name_list *l)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	l->n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 || strcmp(de->d_name + len - 5, ".addr"))
			continue;
		if (len - 5 >= NAME_MAX_DIR)
			continue; /* not one of ours: our names are shorter */
		if (name_push(l, de->d_name, len - 5) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	qsort(l->v, l->n, sizeof(*l->v), name_cmp);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Read PATH/<name>.addr into n and its writer into who.  0 or -EBADMSG /
 * -errno. */
static int read_file(const char *path, const char *name, struct shd_rdv_node *n,
		     struct ident *who)
{
	char fn[PATH_MAX], text[512 + NAME_MAX_DIR + 2 * SHD_RDV_ADDR_MAX];
	if (snprintf(fn, sizeof(fn), "%s/%s.addr", path, name) >= (int)sizeof(fn))
		return -ENAMETOOLONG;
	ssize_t got = read_small(fn, text, sizeof(text));
	if (got < 0)
		return (int)got;

	char magic[16], fname[NAME_MAX_DIR + 1], hex[2 * SHD_RDV_ADDR_MAX + 2], inc[18];
	char boot[BOOT_ID_MAX + 1];
	int ver, used = 0;
	long pid;
	uint64_t pidns, start;
	memset(who, 0, sizeof(*who));
	if (sscanf(text, "%15s %d %64s %257s %17s %ld %40s %" SCNu64 " %" SCNu64 "%n", magic,
		   &ver, fname, hex, inc, &pid, boot, &pidns, &start, &used) != 9)
		return -EBADMSG;
	if (strcmp(magic, DIR_MAGIC) || ver != DIR_VERSION || strcmp(fname, name) ||
	    strcmp(text + used, "\n") || strlen(inc) != 16 || pid <= 0 ||
	    (strcmp(boot, "-") && !boot_id_ok(boot)))
		return -EBADMSG;
	for (const char *q = inc; *q; q++)
		if (hexval(*q) < 0)
			return -EBADMSG;
	who->incarnation = strtoull(inc, NULL, 16);
	who->pid = pid;
	snprintf(who->boot, sizeof(who->boot), "%.39s", boot);
	who->pidns = pidns;
	who->start = start;
	size_t hl = strlen(hex);
	if (hl == 0 || hl % 2 || hl / 2 > SHD_RDV_ADDR_MAX)
		return -EBADMSG;
	memset(n, 0, sizeof(*n));
	for (size_t i = 0; i < hl / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EBADMSG;
		n->addr[i] = (uint8_t)(hi << 4 | lo);
	}
	n->addr_len = (uint32_t)(hl / 2);
	n->incarnation = who->incarnation;
	snprintf(n->host, sizeof(n->host), "%s", name);
	return 0;
}

/* Append ", name" to list[cap] (the stale names of an error message). */
static void note_name(char *list, size_t cap, const char *name)
{
	size_t o = strlen(list);
	if (o + 8 >= cap)
		return;
	if (o + strlen(name) + 6 >= cap) {
		snprintf(list + o, cap - o, ", ...");
		return;
	}
	snprintf(list + o, cap - o, "%s%s", o ? ", " : "", name);
}

/* dir:PATH:N - wait for N live files; ids = positions of the sorted names. */
static int exchange_dir_n(struct shd_rdv *r, struct shd_rdv_result *out, char *err,
			  size_t errlen)
{
	struct name_list l = {0};
	struct shd_rdv_node *all = NULL, *nodes = NULL;
	size_t all_cap = 0, live = 0;
	bool read_once = false;
	char stale[160] = "";
	int64_t deadline = r->timeout_ms < 0 ? -1 : now_ms() + r->timeout_ms;
	long ns = POLL_MIN_NS;
	int ret;
	for (;;) {
		ret = scan_dir(r->path, &l);
		if (ret) {
			shd_errf(err, errlen, "rdv dir: scan %s: %s", r->path, strerror(-ret));
			goto out;
		}
		if (l.n >= r->n_nodes) {
			/* enough files: which of them are live? */
			if (l.n > all_cap) {
				free(all);
				all_cap = l.n;
				all = calloc(all_cap, sizeof(*all));
				if (!all) {
					ret = -ENOMEM;
					goto out;
				}
			}
			live = 0;
			stale[0] = '\0';
			read_once = true;
			for (size_t i = 0; i < l.n; i++) {
				struct ident who;
				ret = read_file(r->path, l.v[i], &all[live], &who);
				if (ret == -ENOENT)
					continue; /* renamed away since the scan */
				if (ret) {
					shd_errf(err, errlen, "rdv dir: %s/%s.addr: %s", r->path,
						 l.v[i],
						 ret == -EBADMSG ? "malformed" : strerror(-ret));
					goto out;
				}
				if (ident_stale(&who, &r->me))
					note_name(stale, sizeof(stale), l.v[i]);
				else
					live++;
			}
			if (live > r->n_nodes) {
				shd_errf(err, errlen, "rdv dir: %zu live nodes published in %s, "
						      "expected %u (files of another run?)",
					 live, r->path, r->n_nodes);
				ret = -EEXIST;
				goto out;
			}
			if (live == r->n_nodes)
				break;
		}
		if (expired(deadline)) {
			shd_errf(err, errlen, "rdv dir: timed out with %zu of %u nodes in %s%s%s%s",
				 read_once ? live : l.n, r->n_nodes, r->path,
				 stale[0] ? " (ignored stale files of dead nodes: " : "", stale,
				 stale[0] ? ")" : "");
			ret = -ETIMEDOUT;
			goto out;
		}
		backoff(&ns);
	}
	/* all[0..live) are the live nodes, in name order */
	nodes = calloc(r->n_nodes, sizeof(*nodes));
	if (!nodes) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(nodes, all, r->n_nodes * sizeof(*nodes));
	int mine = -1;
	for (uint32_t i = 0; i < r->n_nodes; i++)
		if (!strcmp(nodes[i].host, r->name))
			mine = (int)i;
	if (mine < 0 || nodes[mine].incarnation != r->me.incarnation) {
		shd_errf(err, errlen, "rdv dir: node name %s taken by another node", r->name);
		ret = -EEXIST;
		goto out;
	}
	r->my_node = mine;
	rdv_result_take(out, SHD_RDV_DIR, false, r->n_nodes, mine, &nodes);
	ret = 0;
out:
	free(all);
	free(nodes);
	free(l.v);
	return ret;
}

/* ---- dir without N: id claims ---- */

#define CLAIM_PREFIX "id."

/* PATH/id.K holds "NAME\n": the name into name[NAME_MAX_DIR].  0, -errno,
 * -EBADMSG. */
static int read_claim(const char *path, uint32_t k, char *name)
{
	char fn[PATH_MAX], text[NAME_MAX_DIR + 8];
	snprintf(fn, sizeof(fn), "%s/" CLAIM_PREFIX "%u", path, k);
	ssize_t got = read_small(fn, text, sizeof(text));
	if (got < 0)
		return (int)got;
	if (got < 2 || text[got - 1] != '\n')
		return -EBADMSG;
	text[got - 1] = '\0';
	if (shf_node_name_check(text, NULL) < 0)
		return -EBADMSG;
	snprintf(name, NAME_MAX_DIR, "%.63s", text);
	return 0;
}

/* Write text to PATH/<fname> atomically (temp file + rename or link).  With
 * excl, link() instead: -EEXIST when the file exists. */
static int put_file(struct shd_rdv *r, const char *fname, const char *text, bool excl)
{
	char tmp[PATH_MAX], fin[PATH_MAX];
	/* parse_dir() bounded path, shd_rdv_dir_open() the name and callers fname */
	if (snprintf(tmp, sizeof(tmp), "%s/.%.63s.tmp.%ld.%016" PRIx64, r->path, r->name,
		     r->me.pid, r->me.incarnation) >= (int)sizeof(tmp) ||
	    snprintf(fin, sizeof(fin), "%s/%.80s", r->path, fname) >= (int)sizeof(fin))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int e = w == (ssize_t)len ? 0 : (w < 0 ? errno : EIO);
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && (excl ? link(tmp, fin) : rename(tmp, fin)) != 0)
		e = errno;
	if (e || excl)
		unlink(tmp);
	return -e;
}

/* Highest claimed id + 1 in PATH (0 if none); -errno. */
static long count_claims(const char *path, char (**names)[NAME_MAX_DIR])
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	unsigned long top = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		if (strncmp(s, CLAIM_PREFIX, 3) || !s[3] || strlen(s) > 10)
			continue;
		unsigned long k = 0;
		bool ok = true;
		for (const char *q = s + 3; *q && ok; q++)
			if (*q < '0' || *q > '9' || (q == s + 3 && *q == '0' && q[1]))
				ok = false;
			else
				k = k * 10 + (unsigned long)(*q - '0');
		if (ok && k < SHD_RDV_NODES_MAX && k + 1 > top)
			top = k + 1;
	}
	closedir(d);
	if (names) {
		*names = calloc(top ? top : 1, sizeof(**names));
		if (!*names)
			return -ENOMEM;
	}
	return (long)top;
}

/* Claim my id (see rdv.h, "dir:PATH"). */
static int claim_id(struct shd_rdv *r, char *err, size_t errlen)
{
	char fn[PATH_MAX], text[NAME_MAX_DIR + 8], who[NAME_MAX_DIR];
	long mine = -1;
	int ret;

	/* the index first: PATH/<name>.id, checked against its claim */
	if (snprintf(fn, sizeof(fn), "%s/%.63s.id", r->path, r->name) >= (int)sizeof(fn))
		return -ENAMETOOLONG; /* not reached: parse_dir() bounded PATH */
	if (read_small(fn, text, sizeof(text)) > 0) {
		char *end;
		unsigned long k = strtoul(text, &end, 10);
		if (end != text && !strcmp(end, "\n") && k < SHD_RDV_NODES_MAX &&
		    read_claim(r->path, (uint32_t)k, who) == 0 && !strcmp(who, r->name))
			mine = (long)k;
	}
	/* else the smallest free id, or the claim a crash left without index */
	snprintf(text, sizeof(text), "%.63s\n", r->name);
	for (uint32_t k = 0; mine < 0 && k < SHD_RDV_NODES_MAX; k++) {
		char cn[32];
		snprintf(cn, sizeof(cn), CLAIM_PREFIX "%u", k);
		ret = put_file(r, cn, text, true);
		if (ret == 0 || (ret == -EEXIST && read_claim(r->path, k, who) == 0 &&
				 !strcmp(who, r->name))) {
			mine = k;
			break;
		}
		if (ret != -EEXIST) {
			shd_errf(err, errlen, "rdv dir: claim %s/%s: %s", r->path, cn,
				 strerror(-ret));
			return ret;
		}
	}
	if (mine < 0) {
		shd_errf(err, errlen, "rdv dir: all %u node ids of %s are taken", SHD_RDV_NODES_MAX,
			 r->path);
		return -ENOSPC;
	}
	snprintf(text, sizeof(text), "%ld\n", mine);
	snprintf(fn, sizeof(fn), "%.63s.id", r->name);
	if ((ret = put_file(r, fn, text, false)) < 0) {
		shd_errf(err, errlen, "rdv dir: write %s/%s: %s", r->path, fn, strerror(-ret));
		return ret;
	}
	long top = count_claims(r->path, NULL);
	if (top < 0) {
		shd_errf(err, errlen, "rdv dir: scan %s: %s", r->path, strerror((int)-top));
		return (int)top;
	}
	r->my_node = (int)mine;
	r->n_nodes = (uint32_t)(top > mine ? top : mine + 1);
	if (r->n_nodes > r->cap) {
		shd_errf(err, errlen, "rdv dir: %u ids claimed in %s, but the set holds %u "
				      "(max_nodes)", r->n_nodes, r->path, r->cap);
		return -ENOSPC;
	}
	r->n_nodes = r->cap; /* the set's capacity: nodes may come later */
	return 0;
}

/* dir:PATH - no waiting: every claimed id, with the live files present. */
static int exchange_dir_free(struct shd_rdv *r, struct shd_rdv_result *out, char *err,
			     size_t errlen)
{
	struct name_list l = {0};
	char(*claims)[NAME_MAX_DIR] = NULL;
	struct shd_rdv_node *nodes = NULL;
	int ret;
	/* the address files first: each one's claim was made before it was
	 * written, so the claims listed next include all of theirs */
	if ((ret = scan_dir(r->path, &l)) < 0) {
		shd_errf(err, errlen, "rdv dir: scan %s: %s", r->path, strerror(-ret));
		free(l.v);
		return ret;
	}
	long top = count_claims(r->path, &claims);
	if (top < 0) {
		shd_errf(err, errlen, "rdv dir: scan %s: %s", r->path, strerror((int)-top));
		free(l.v);
		return (int)top;
	}
	uint32_t nn = (uint32_t)top > (uint32_t)r->my_node ? (uint32_t)top : (uint32_t)r->my_node + 1;
	if (nn > r->cap)
		nn = r->cap; /* claimed beyond the capacity: never reachable here */
	nodes = calloc(r->cap, sizeof(*nodes));
	struct name_list sorted = {0};
	if (!nodes) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < nn; k++) {
		struct ident who;
		if ((uint32_t)k < (uint32_t)top && read_claim(r->path, k, claims[k]) < 0)
			claims[k][0] = '\0'; /* a hole: nobody has this id */
		if (k == (uint32_t)r->my_node)
			snprintf(claims[k], NAME_MAX_DIR, "%.63s", r->name);
		if (!claims[k][0])
			continue;
		if ((ret = name_push(&sorted, claims[k], strlen(claims[k]))) < 0)
			goto out;
		ret = read_file(r->path, claims[k], &nodes[k], &who);
		if (ret == -EBADMSG) {
			shd_errf(err, errlen, "rdv dir: %s/%s.addr: malformed", r->path, claims[k]);
			goto out;
		}
		if (ret == 0 && ident_stale(&who, &r->me)) {
			memset(&nodes[k], 0, sizeof(nodes[k]));
			ret = 0;
		}
		if (ret && ret != -ENOENT) {
			shd_errf(err, errlen, "rdv dir: %s/%s.addr: %s", r->path, claims[k],
				 strerror(-ret));
			goto out;
		}
		snprintf(nodes[k].host, sizeof(nodes[k].host), "%s", claims[k]);
	}
	if (nodes[r->my_node].incarnation != r->me.incarnation) {
		shd_errf(err, errlen, "rdv dir: node name %s taken by another node", r->name);
		ret = -EEXIST;
		goto out;
	}
	/* every address file must belong to a claim */
	qsort(sorted.v, sorted.n, sizeof(*sorted.v), name_cmp);
	for (size_t i = 0; i < l.n; i++) {
		if (!bsearch(l.v[i], sorted.v, sorted.n, sizeof(*sorted.v), name_cmp)) {
			shd_errf(err, errlen, "rdv dir: %s/%s.addr has no id claim (was %s used "
					      "with dir:PATH:N?)",
				 r->path, l.v[i], r->path);
			ret = -EEXIST;
			goto out;
		}
	}
	rdv_result_take(out, SHD_RDV_DIR, true, r->cap, r->my_node, &nodes);
	ret = 0;
out:
	free(nodes);
	free(claims);
	free(sorted.v);
	free(l.v);
	return ret;
}

int shd_rdv_dir_lookup(struct shd_rdv *r, uint32_t node, struct shd_rdv_node *out, char *err,
		       size_t errlen)
{
	char name[NAME_MAX_DIR];
	struct ident who;
	int ret = read_claim(r->path, node, name);
	if (ret == -ENOENT || ret == -EBADMSG)
		return -ENOENT;
	if (ret < 0) {
		shd_errf(err, errlen, "rdv dir: %s/" CLAIM_PREFIX "%u: %s", r->path, node,
			 strerror(-ret));
		return ret;
	}
	memset(out, 0, sizeof(*out));
	ret = read_file(r->path, name, out, &who);
	if (ret == -ENOENT || ret == -EBADMSG || (ret == 0 && ident_stale(&who, &r->me)))
		return -ENOENT;
	if (ret < 0) {
		shd_errf(err, errlen, "rdv dir: %s/%s.addr: %s", r->path, name, strerror(-ret));
		return ret;
	}
	snprintf(out->host, sizeof(out->host), "%s", name);
	return 0;
}

int shd_rdv_dir_open(struct shd_rdv *r, uint32_t max_nodes, char *err, size_t errlen)
{
	r->cap = max_nodes ? max_nodes : 1024u;
	const char *why = "";
	if (shf_node_name_check(r->name, &why) < 0) {
		shd_errf(err, errlen, "rdv dir: node name \"%.64s\": %s", r->name, why);
		return -EINVAL;
	}
	shd_rdv_dir_ident(&r->me, r->me.incarnation);
	if (!r->dir_n)
		return claim_id(r, err, errlen);
	return 0;
}

int shd_rdv_dir_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
			 struct shd_rdv_result *out, char *err, size_t errlen)
{
	int ret = write_my_file(r, addr, addr_len, err, errlen);
	if (ret)
		return ret;
	return r->dir_n ? exchange_dir_n(r, out, err, errlen)
			: exchange_dir_free(r, out, err, errlen);
}
