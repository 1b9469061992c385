/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv.c - rendezvous (static list, shared directory, MPI).  Every
 * MPI call of the project is in this file.
 */
#include "daemon/rdv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "daemon/errbuf.h"
#include "proto/addr.h"

#define NAME_MAX_DIR SHF_NODE_NAME_MAX /* node names: < 64 chars */
#define DIR_MAGIC "shuffle-rdv"
#define DIR_VERSION 1
#define POLL_MIN_NS 1000000L   /* 1 ms */
#define POLL_MAX_NS 50000000L  /* 50 ms */

_Static_assert(SHD_RDV_HOST_MAX >= SHF_ADDR_HOST_MAX && SHD_RDV_PORT_MAX >= SHF_ADDR_PORT_MAX &&
		       SHD_RDV_HOST_MAX >= SHF_NODE_NAME_MAX,
	       "rdv buffers hold what proto/addr.h accepts");

/* One record of the MPI allgather: {host[256], addr_len u32 LE, addr[128]}. */
#define MPI_REC_BYTES (SHD_RDV_HOST_MAX + 4u + SHD_RDV_ADDR_MAX)

struct shd_rdv {
	enum shd_rdv_kind kind;
	uint32_t n_nodes;
	int my_node;           /* -1 until known */
	int timeout_ms;
	bool exchanged;        /* exchange() ran (successfully or not) */
	bool mpi_ours;         /* we called MPI_Init */
	bool mpi_broken;       /* a collective failed or timed out: do not finalize */
	char name[SHD_RDV_HOST_MAX];
	char path[PATH_MAX];   /* dir */
	struct shd_rdv_node *list; /* static: parsed entries */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep for a growing interval: the waits here are startup-only. */
static void backoff(long *ns)
{
	struct timespec ts = {0, *ns};
	nanosleep(&ts, NULL);
	*ns = *ns * 2 > POLL_MAX_NS ? POLL_MAX_NS : *ns * 2;
}

static bool expired(int64_t deadline)
{
	return deadline >= 0 && now_ms() >= deadline;
}

void shd_rdv_result_fini(struct shd_rdv_result *res)
{
	if (!res)
		return;
	free(res->nodes);
	res->nodes = NULL;
	res->n_nodes = 0;
}

/* ---- the spec ------------------------------------------------------------ */

/* "static:" list -> r->list, r->n_nodes.  Entries are numbered from 1. */
static int parse_static(struct shd_rdv *r, const char *list, char *err, size_t errlen)
{
	size_t cap = 8, n = 0;
	const char *p = list;

	r->list = malloc(cap * sizeof(*r->list));
	if (!r->list)
		return -ENOMEM;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int shown = (int)(len > 80 ? 80 : len);
		const char *why = "";
		if (n == SHD_RDV_NODES_MAX) {
			shd_errf(err, errlen, "static: more than %u nodes", SHD_RDV_NODES_MAX);
			return -EINVAL;
		}
		if (n == cap) {
			struct shd_rdv_node *t = realloc(r->list, 2 * cap * sizeof(*t));
			if (!t)
				return -ENOMEM;
			r->list = t;
			cap *= 2;
		}
		struct shd_rdv_node *e = &r->list[n];
		memset(e, 0, sizeof(*e));
		if (shf_addr_parse(p, len, SHF_ADDR_NEED_PORT, e->host, sizeof(e->host), e->port,
				   sizeof(e->port), &why) < 0) {
			shd_errf(err, errlen, "static: entry %zu \"%.*s\": %s (want HOST:PORT or "
					      "[IPV6]:PORT, port 1..65535)",
				 n + 1, shown, p, why);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(r->list[i].host, e->host) && !strcmp(r->list[i].port, e->port)) {
				shd_errf(err, errlen, "static: entry %zu \"%.*s\" repeats entry %zu",
					 n + 1, shown, p, i + 1);
				return -EINVAL;
			}
		}
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	r->n_nodes = (uint32_t)n;
	return 0;
}

/* "dir:" PATH:N -> r->path, r->n_nodes. */
static int parse_dir(struct shd_rdv *r, const char *rest, char *err, size_t errlen)
{
	const char *colon = strrchr(rest, ':');
	unsigned long n = 0;
	bool digits = colon && colon[1];
	for (const char *q = colon ? colon + 1 : ""; *q && digits; q++) {
		if (*q < '0' || *q > '9' || n > SHD_RDV_NODES_MAX)
			digits = false;
		else
			n = n * 10 + (unsigned long)(*q - '0');
	}
	if (!colon || colon == rest || !digits || n == 0 || n > SHD_RDV_NODES_MAX) {
		shd_errf(err, errlen, "must be dir:PATH:N, a directory and the node count "
				      "(1 <= N <= %u)", SHD_RDV_NODES_MAX);
		return -EINVAL;
	}
	size_t plen = (size_t)(colon - rest);
	if (plen >= sizeof(r->path) - NAME_MAX_DIR - 32) {
		shd_errf(err, errlen, "dir: PATH longer than %zu bytes",
			 sizeof(r->path) - NAME_MAX_DIR - 33);
		return -EINVAL;
	}
	memcpy(r->path, rest, plen);
	r->path[plen] = '\0';
	r->n_nodes = (uint32_t)n;
	return 0;
}

/*
 * The spec grammar, the only parser of it: shd_rdv_spec_check() and
 * shd_rdv_open() both run this.  Sets r->kind (0 for none and auto, which
 * the caller resolves), and r->list or r->path with r->n_nodes.
 */
static int parse_spec(struct shd_rdv *r, const char *spec, char *err, size_t errlen)
{
	if (!spec) {
		shd_errf(err, errlen, "no rendezvous given");
		return -EINVAL;
	}
	if (!strcmp(spec, "none") || !strcmp(spec, "auto"))
		return 0;
	if (!strcmp(spec, "mpi")) {
		r->kind = SHD_RDV_MPI;
		return 0;
	}
	if (!strncmp(spec, "static:", 7)) {
		r->kind = SHD_RDV_STATIC;
		return parse_static(r, spec + 7, err, errlen);
	}
	if (!strncmp(spec, "dir:", 4)) {
		r->kind = SHD_RDV_DIR;
		return parse_dir(r, spec + 4, err, errlen);
	}
	shd_errf(err, errlen, "unknown kind \"%.40s\"; must be auto, none, mpi, "
			      "static:HOST:PORT,... or dir:PATH:N", spec);
	return -EINVAL;
}

int shd_rdv_spec_check(const char *spec, char *err, size_t errlen)
{
	struct shd_rdv *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	int ret = parse_spec(r, spec, err, errlen);
	shd_rdv_close(r);
	return ret;
}

/* ---- the bind address ----------------------------------------------------- */

/* bind with every "{node}" replaced by node + 1, into out[cap]. */
static int bind_subst(const char *bind, int node, char *out, size_t cap, const char **why)
{
	size_t o = 0;
	for (const char *p = bind; *p;) {
		if (!strncmp(p, "{node}", 6)) {
			if (node < 0) {
				*why = "{node} needs a rendezvous that knows the node id before the "
				       "exchange (mpi, or auto under a launcher)";
				return -EINVAL;
			}
			int k = snprintf(out + o, cap - o, "%ld", (long)node + 1);
			if (k < 0 || (size_t)k >= cap - o)
				goto too_long;
			o += (size_t)k;
			p += 6;
		} else {
			if (o + 1 >= cap)
				goto too_long;
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	return 0;
too_long:
	*why = "too long";
	return -EINVAL;
}

static int bind_parse(const char *bind, int node, char *host, size_t hl, char *port, size_t pl,
		      const char **why)
{
	char tmp[2 * SHF_ADDR_HOST_MAX];
	int r;
	if (host && hl)
		host[0] = '\0';
	if (port && pl)
		port[0] = '\0';
	if (!bind) {
		*why = "no bind address";
		return -EINVAL;
	}
	if ((r = bind_subst(bind, node, tmp, sizeof(tmp), why)) < 0)
		return r;
	if (!tmp[0])
		return 0; /* the provider's choice */
	return shf_addr_parse(tmp, strlen(tmp), 0, host, hl, port, pl, why);
}

int shd_rdv_bind_split(const char *bind, int node, char *host, size_t hl, char *port, size_t pl)
{
	const char *why;
	return bind_parse(bind, node, host, hl, port, pl, &why);
}

int shd_rdv_bind_check(const char *bind, const char *spec, char *err, size_t errlen)
{
	const char *why = "";
	int ret = bind_parse(bind, 0, NULL, 0, NULL, 0, &why);
	if (ret < 0) {
		shd_errf(err, errlen, "%s", why);
		return ret;
	}
	if (!spec || !strstr(bind, "{node}"))
		return 0;
	struct shd_rdv *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (parse_spec(r, spec, NULL, 0) == 0 &&
	    (r->kind == SHD_RDV_STATIC || r->kind == SHD_RDV_DIR)) {
		shd_errf(err, errlen, "{node} needs a rendezvous that knows the node id before the "
				      "exchange (mpi, or auto under a launcher), not %s",
			 r->kind == SHD_RDV_STATIC ? "static (bind must be this node's entry)"
						   : "dir");
		ret = -EINVAL;
	}
	shd_rdv_close(r);
	return ret;
}

/* ---- static -------------------------------------------------------------- */

/* My node: the list entry equal to self->bind. */
static int open_static(struct shd_rdv *r, const struct shd_rdv_self *self, char *err,
		       size_t errlen)
{
	char host[SHD_RDV_HOST_MAX], port[SHD_RDV_PORT_MAX];
	const char *why = "not set";
	if (!self->bind || shf_addr_parse(self->bind, strlen(self->bind), SHF_ADDR_NEED_PORT, host,
					  sizeof(host), port, sizeof(port), &why) < 0) {
		shd_errf(err, errlen, "static: my bind address \"%.80s\": %s (want HOST:PORT or "
				      "[IPV6]:PORT, as in the list)",
			 self->bind ? self->bind : "", why);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < r->n_nodes; i++)
		if (!strcmp(r->list[i].host, host) && !strcmp(r->list[i].port, port))
			r->my_node = (int)i;
	if (r->my_node < 0) {
		shd_errf(err, errlen, "static: my bind address %.80s is not in the list", self->bind);
		return -ENOENT;
	}
	return 0;
}

static int exchange_static(struct shd_rdv *r, struct shd_rdv_result *out)
{
	out->kind = SHD_RDV_STATIC;
	out->n_nodes = r->n_nodes;
	out->my_node = (uint32_t)r->my_node;
	out->nodes = r->list;
	r->list = NULL;
	return 0;
}

/* ---- dir ----------------------------------------------------------------- */

static int open_dir(struct shd_rdv *r, char *err, size_t errlen)
{
	const char *why = "";
	if (shf_node_name_check(r->name, &why) < 0) {
		shd_errf(err, errlen, "rdv dir: node name \"%.64s\": %s", r->name, why);
		return -EINVAL;
	}
	return 0;
}

static int write_my_file(struct shd_rdv *r, const void *addr, size_t addr_len, char *err,
			 size_t errlen)
{
	char tmp[PATH_MAX], fin[PATH_MAX];
	char text[64 + NAME_MAX_DIR + 2 * SHD_RDV_ADDR_MAX];
	int len = snprintf(text, sizeof(text), "%s %d %s ", DIR_MAGIC, DIR_VERSION, r->name);
	for (size_t i = 0; i < addr_len; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len, "%02x",
				((const uint8_t *)addr)[i]);
	len += snprintf(text + len, sizeof(text) - (size_t)len, "\n");

	/* open_dir() bounded path and name so that both fit */
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.addr.tmp.%ld", r->path, r->name, (long)getpid()) >=
		    (int)sizeof(tmp) ||
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
	if (!e && rename(tmp, fin) != 0)
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
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 16;
			void *t = realloc(l->v, cap * sizeof(*l->v));
			if (!t) {
				closedir(d);
				return -ENOMEM;
			}
			l->v = t;
			l->cap = cap;
		}
		memcpy(l->v[l->n], de->d_name, len - 5);
		l->v[l->n][len - 5] = '\0';
		l->n++;
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

/* Read PATH/<name>.addr into n.  0 or -EBADMSG / -errno. */
static int read_file(const char *path, const char *name, struct shd_rdv_node *n)
{
	char fn[PATH_MAX], text[128 + NAME_MAX_DIR + 2 * SHD_RDV_ADDR_MAX];
	if (snprintf(fn, sizeof(fn), "%s/%s.addr", path, name) >= (int)sizeof(fn))
		return -ENAMETOOLONG;
	int fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t got = read(fd, text, sizeof(text) - 1);
	int e = got < 0 ? -errno : 0;
	close(fd);
	if (e)
		return e;
	text[got] = '\0';

	char magic[16], fname[NAME_MAX_DIR + 1], hex[2 * SHD_RDV_ADDR_MAX + 2];
	int ver, used = 0;
	if (sscanf(text, "%15s %d %64s %257s%n", magic, &ver, fname, hex, &used) != 4)
		return -EBADMSG;
	if (strcmp(magic, DIR_MAGIC) || ver != DIR_VERSION || strcmp(fname, name) ||
	    strcmp(text + used, "\n"))
		return -EBADMSG;
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
	snprintf(n->host, sizeof(n->host), "%s", name);
	return 0;
}

static int exchange_dir(struct shd_rdv *r, const void *addr, size_t addr_len,
			struct shd_rdv_result *out, char *err, size_t errlen)
{
	struct name_list l = {0};
	struct shd_rdv_node *nodes = NULL;
	int64_t deadline = r->timeout_ms < 0 ? -1 : now_ms() + r->timeout_ms;
	long ns = POLL_MIN_NS;
	int ret = write_my_file(r, addr, addr_len, err, errlen);
	if (ret)
		return ret;
	for (;;) {
		ret = scan_dir(r->path, &l);
		if (ret) {
			shd_errf(err, errlen, "rdv dir: scan %s: %s", r->path, strerror(-ret));
			goto out;
		}
		if (l.n > r->n_nodes) {
			shd_errf(err, errlen, "rdv dir: %zu nodes published in %s, expected %u "
					    "(stale files from another run?)",
			       l.n, r->path, r->n_nodes);
			ret = -EEXIST;
			goto out;
		}
		if (l.n == r->n_nodes)
			break;
		if (expired(deadline)) {
			shd_errf(err, errlen, "rdv dir: timed out with %zu of %u nodes in %s", l.n,
			       r->n_nodes, r->path);
			ret = -ETIMEDOUT;
			goto out;
		}
		backoff(&ns);
	}
	nodes = calloc(r->n_nodes, sizeof(*nodes));
	if (!nodes) {
		ret = -ENOMEM;
		goto out;
	}
	int mine = -1;
	for (uint32_t i = 0; i < r->n_nodes; i++) {
		ret = read_file(r->path, l.v[i], &nodes[i]);
		if (ret) {
			shd_errf(err, errlen, "rdv dir: %s/%s.addr: %s", r->path, l.v[i],
			       ret == -EBADMSG ? "malformed" : strerror(-ret));
			goto out;
		}
		if (!strcmp(l.v[i], r->name))
			mine = (int)i;
	}
	if (mine < 0 || nodes[mine].addr_len != addr_len ||
	    memcmp(nodes[mine].addr, addr, addr_len)) {
		shd_errf(err, errlen, "rdv dir: node name %s taken by another node", r->name);
		ret = -EEXIST;
		goto out;
	}
	r->my_node = mine;
	out->kind = SHD_RDV_DIR;
	out->n_nodes = r->n_nodes;
	out->my_node = (uint32_t)mine;
	out->nodes = nodes;
	nodes = NULL;
	ret = 0;
out:
	free(nodes);
	free(l.v);
	return ret;
}

/* ---- mpi ----------------------------------------------------------------- */

static int mpi_err(int rc, const char *what, char *err, size_t errlen)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "error %d", rc);
	shd_errf(err, errlen, "rdv mpi: %s: %s", what, text);
	return -EIO;
}

static int open_mpi(struct shd_rdv *r, char *err, size_t errlen)
{
	int inited = 0, rank = 0, size = 0, rc;
	MPI_Initialized(&inited);
	if (!inited) {
		rc = MPI_Init(NULL, NULL);
		if (rc != MPI_SUCCESS)
			return mpi_err(rc, "MPI_Init", err, errlen);
		r->mpi_ours = true;
	}
	/* Errors are returned to us (and reported), not fatal. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Comm_rank/size", err, errlen);
	if (size < 1 || (uint32_t)size > SHD_RDV_NODES_MAX) {
		shd_errf(err, errlen, "rdv mpi: %d processes", size);
		return -EINVAL;
	}
	r->my_node = rank;
	r->n_nodes = (uint32_t)size;
	return 0;
}

static int exchange_mpi(struct shd_rdv *r, const void *addr, size_t addr_len,
			struct shd_rdv_result *out, char *err, size_t errlen)
{
	uint8_t mine[MPI_REC_BYTES];
	uint8_t *all = NULL;
	struct shd_rdv_node *nodes = NULL;
	MPI_Request req;
	int ret, rc, flag = 0;

	memset(mine, 0, sizeof(mine));
	memcpy(mine, r->name, strlen(r->name)); /* < SHD_RDV_HOST_MAX: NUL stays */
	mine[SHD_RDV_HOST_MAX + 0] = (uint8_t)addr_len;
	mine[SHD_RDV_HOST_MAX + 1] = (uint8_t)(addr_len >> 8);
	memcpy(mine + SHD_RDV_HOST_MAX + 4, addr, addr_len);

	all = malloc((size_t)r->n_nodes * MPI_REC_BYTES);
	nodes = calloc(r->n_nodes, sizeof(*nodes));
	if (!all || !nodes) {
		ret = -ENOMEM;
		goto out;
	}
	/* Non-blocking + polling with sleeps: a blocking collective busy-waits
	 * and steals the cores of the processes sharing the node. */
	rc = MPI_Iallgather(mine, MPI_REC_BYTES, MPI_BYTE, all, MPI_REC_BYTES, MPI_BYTE,
			    MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS) {
		r->mpi_broken = true;
		ret = mpi_err(rc, "MPI_Iallgather", err, errlen);
		goto out;
	}
	int64_t deadline = r->timeout_ms < 0 ? -1 : now_ms() + r->timeout_ms;
	long ns = POLL_MIN_NS;
	for (;;) {
		rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			r->mpi_broken = true;
			ret = mpi_err(rc, "MPI_Test", err, errlen);
			goto out;
		}
		if (flag)
			break;
		if (expired(deadline)) {
			r->mpi_broken = true;
			shd_errf(err, errlen, "rdv mpi: allgather of %u nodes timed out after %d ms",
			       r->n_nodes, r->timeout_ms);
			ret = -ETIMEDOUT;
			goto out;
		}
		backoff(&ns);
	}
	for (uint32_t i = 0; i < r->n_nodes; i++) {
		const uint8_t *rec = all + (size_t)i * MPI_REC_BYTES;
		uint32_t len = (uint32_t)rec[SHD_RDV_HOST_MAX] |
			       (uint32_t)rec[SHD_RDV_HOST_MAX + 1] << 8 |
			       (uint32_t)rec[SHD_RDV_HOST_MAX + 2] << 16 |
			       (uint32_t)rec[SHD_RDV_HOST_MAX + 3] << 24;
		if (!memchr(rec, '\0', SHD_RDV_HOST_MAX) || len == 0 || len > SHD_RDV_ADDR_MAX) {
			shd_errf(err, errlen, "rdv mpi: malformed record from rank %u", i);
			ret = -EBADMSG;
			goto out;
		}
		memcpy(nodes[i].host, rec, SHD_RDV_HOST_MAX);
		nodes[i].addr_len = len;
		memcpy(nodes[i].addr, rec + SHD_RDV_HOST_MAX + 4, len);
	}
	out->kind = SHD_RDV_MPI;
	out->n_nodes = r->n_nodes;
	out->my_node = (uint32_t)r->my_node;
	out->nodes = nodes;
	nodes = NULL;
	ret = 0;
out:
	free(all);
	free(nodes);
	return ret;
}

/* ---- common -------------------------------------------------------------- */

int shd_rdv_open(const char *spec, const struct shd_rdv_self *self, struct shd_rdv **rdv_p,
		 char *err, size_t errlen)
{
	static const struct shd_rdv_self none = {0};
	struct shd_rdv *r;
	int ret;

	if (!self)
		self = &none;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->my_node = -1;
	r->timeout_ms = self->timeout_ms == 0 ? 60000 : self->timeout_ms;
	if (self->name) {
		if (strlen(self->name) >= sizeof(r->name)) {
			shd_errf(err, errlen, "rdv: node name too long");
			ret = -EINVAL;
			goto fail;
		}
		snprintf(r->name, sizeof(r->name), "%s", self->name);
	} else if (gethostname(r->name, sizeof(r->name) - 1) != 0) {
		ret = -errno;
		shd_errf(err, errlen, "rdv: gethostname: %s", strerror(-ret));
		goto fail;
	}

	ret = parse_spec(r, spec, err, errlen);
	if (ret)
		goto fail;
	switch (r->kind) {
	case SHD_RDV_MPI: ret = open_mpi(r, err, errlen); break;
	case SHD_RDV_STATIC: ret = open_static(r, self, err, errlen); break;
	case SHD_RDV_DIR: ret = open_dir(r, err, errlen); break;
	default:
		shd_errf(err, errlen, "\"%.40s\" is not a rendezvous to run: the caller resolves "
				      "none and auto", spec);
		ret = -EINVAL;
		break;
	}
	if (ret)
		goto fail;
	*rdv_p = r;
	return 0;
fail:
	shd_rdv_close(r);
	return ret;
}

int shd_rdv_my_node(const struct shd_rdv *r)
{
	return r->my_node;
}

uint32_t shd_rdv_nodes(const struct shd_rdv *r)
{
	return r->n_nodes;
}

enum shd_rdv_kind shd_rdv_kind(const struct shd_rdv *r)
{
	return r->kind;
}

int shd_rdv_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
		     struct shd_rdv_result *out, char *err, size_t errlen)
{
	if (r->exchanged) {
		shd_errf(err, errlen, "rdv: exchange already done");
		return -EALREADY;
	}
	if (r->kind != SHD_RDV_STATIC && (!addr || addr_len == 0 || addr_len > SHD_RDV_ADDR_MAX)) {
		shd_errf(err, errlen, "rdv: address of %zu bytes (1..%u)", addr_len, SHD_RDV_ADDR_MAX);
		return -EINVAL;
	}
	r->exchanged = true;
	switch (r->kind) {
	case SHD_RDV_MPI: return exchange_mpi(r, addr, addr_len, out, err, errlen);
	case SHD_RDV_STATIC: return exchange_static(r, out);
	case SHD_RDV_DIR: return exchange_dir(r, addr, addr_len, out, err, errlen);
	default: return -EINVAL;
	}
}

void shd_rdv_close(struct shd_rdv *r)
{
	if (!r)
		return;
	if (r->kind == SHD_RDV_MPI && r->mpi_ours && !r->mpi_broken) {
		int fin = 0;
		MPI_Finalized(&fin);
		if (!fin)
			MPI_Finalize();
	}
	free(r->list);
	free(r);
}

int shd_rdv_run(const char *spec, const void *addr, size_t addr_len,
		const struct shd_rdv_self *self, struct shd_rdv_result *out, char *err,
		size_t errlen)
{
	struct shd_rdv *r;
	int ret = shd_rdv_open(spec, self, &r, err, errlen);
	if (ret)
		return ret;
	ret = shd_rdv_exchange(r, addr, addr_len, out, err, errlen);
	shd_rdv_close(r);
	return ret;
}
