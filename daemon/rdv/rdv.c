/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/rdv.c - rendezvous: the public API of rdv.h.  The spec grammar
 * (shd_rdv_spec_check), dispatch by kind, results, the static kind
 * (inline list and @FILE) and the bind address.  The dir kind is in
 * rdv/dir.c, the mpi kind (every MPI call of the project) in rdv/mpi.c.
 */
#include "daemon/rdv/rdv.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/errbuf.h"
#include "daemon/rdv/int.h"
#include "proto/addr.h"

_Static_assert(SHD_RDV_HOST_MAX >= SHF_ADDR_HOST_MAX && SHD_RDV_PORT_MAX >= SHF_ADDR_PORT_MAX &&
		       SHD_RDV_HOST_MAX >= SHF_NODE_NAME_MAX,
	       "rdv buffers hold what proto/addr.h accepts");

void shd_rdv_result_fini(struct shd_rdv_result *res)
{
	if (!res)
		return;
	free(res->nodes);
	res->nodes = NULL;
	res->n_nodes = 0;
}

/* ---- the spec ------------------------------------------------------------ */

#define HOSTFILE_LINE_MAX 1024u

/* Append one static entry (len bytes of p) to r->list.  flags: as
 * shf_addr_parse (SHF_ADDR_NEED_PORT for the inline list; 0 for hostfile
 * lines, whose port may be missing).  where: "entry 3" or "@FILE line 7",
 * for the errors.  at[] (may be NULL) holds each entry's line for the
 * duplicate message.  The only parser of entries: the inline list and the
 * hostfile both come here. */
static int static_entry(struct shd_rdv *r, size_t *cap, const char *p, size_t len, unsigned flags,
			const char *where, const unsigned *at, const char *unit, char *err,
			size_t errlen)
{
	size_t n = r->n_nodes;
	int shown = (int)(len > 80 ? 80 : len);
	const char *why = "";
	if (n == SHD_RDV_NODES_MAX) {
		shd_errf(err, errlen, "static: more than %u nodes", SHD_RDV_NODES_MAX);
		return -EINVAL;
	}
	if (n == *cap) {
		size_t c = *cap ? 2 * *cap : 8;
		struct shd_rdv_node *t = realloc(r->list, c * sizeof(*t));
		if (!t)
			return -ENOMEM;
		r->list = t;
		*cap = c;
	}
	struct shd_rdv_node *e = &r->list[n];
	memset(e, 0, sizeof(*e));
	if (shf_addr_parse(p, len, flags, e->host, sizeof(e->host), e->port, sizeof(e->port),
			   &why) < 0) {
		shd_errf(err, errlen, "static: %s \"%.*s\": %s (want %s, port 1..65535)", where,
			 shown, p, why,
			 flags & SHF_ADDR_NEED_PORT ? "HOST:PORT or [IPV6]:PORT"
						    : "HOST[:PORT] or [IPV6][:PORT]");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct shd_rdv_node *o = &r->list[i];
		if (strcmp(o->host, e->host))
			continue;
		/* a portless entry takes a port only at open: it may equal any
		 * other entry of its host, so such a host appears once */
		if (!strcmp(o->port, e->port) || !o->port[0] || !e->port[0]) {
			shd_errf(err, errlen, "static: %s \"%.*s\" repeats %s %u%s", where, shown, p,
				 unit, at ? at[i] : (unsigned)i + 1,
				 !o->port[0] || !e->port[0] ? " (a host without a port is listed once)"
							    : "");
			return -EINVAL;
		}
	}
	r->n_nodes = (uint32_t)n + 1;
	return 0;
}

/* "static:" list -> r->list, r->n_nodes.  Entries are numbered from 1. */
static int parse_static(struct shd_rdv *r, const char *list, char *err, size_t errlen)
{
	size_t cap = 0;
	const char *p = list;
	char where[32];

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		snprintf(where, sizeof(where), "entry %u", r->n_nodes + 1);
		int ret = static_entry(r, &cap, p, len, SHF_ADDR_NEED_PORT, where, NULL, "entry", err,
				       errlen);
		if (ret)
			return ret;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

/* "static:@FILE": one HOST[:PORT] per line, '#' comments, blank lines. */
static int parse_hostfile(struct shd_rdv *r, const char *file, char *err, size_t errlen)
{
	size_t cap = 0, acap = 0;
	unsigned *at = NULL; /* line of each entry */
	char *line = NULL, where[64];
	size_t lcap = 0;
	unsigned lineno = 0;
	int ret = 0;
	if (!file[0]) {
		shd_errf(err, errlen, "static:@FILE: no file name");
		return -EINVAL;
	}
	FILE *fp = fopen(file, "re");
	if (!fp) {
		shd_errf(err, errlen, "static: cannot read hostfile %.200s: %s", file,
			 strerror(errno));
		return -EINVAL;
	}
	ssize_t got;
	while ((got = getline(&line, &lcap, fp)) >= 0) {
		lineno++;
		size_t len = (size_t)got;
		if (memchr(line, '\0', len)) {
			shd_errf(err, errlen, "static: @%.200s line %u: NUL byte", file, lineno);
			ret = -EINVAL;
			goto out;
		}
		char *hash = memchr(line, '#', len);
		if (hash)
			len = (size_t)(hash - line);
		char *p = line;
		while (len && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r' ||
			       p[len - 1] == '\n'))
			len--;
		if (!len)
			continue;
		if (len > HOSTFILE_LINE_MAX || memchr(p, ' ', len) || memchr(p, '\t', len)) {
			shd_errf(err, errlen, "static: @%.200s line %u \"%.*s\": one HOST[:PORT] per "
					      "line",
				 file, lineno, (int)(len > 80 ? 80 : len), p);
			ret = -EINVAL;
			goto out;
		}
		if (r->n_nodes == acap) {
			size_t c = acap ? 2 * acap : 8;
			unsigned *t = realloc(at, c * sizeof(*t));
			if (!t) {
				ret = -ENOMEM;
				goto out;
			}
			at = t;
			acap = c;
		}
		at[r->n_nodes] = lineno;
		snprintf(where, sizeof(where), "@%.40s line %u", file, lineno);
		ret = static_entry(r, &cap, p, len, 0, where, at, "line", err, errlen);
		if (ret)
			goto out;
	}
	if (ferror(fp)) {
		shd_errf(err, errlen, "static: read hostfile %.200s: %s", file, strerror(errno));
		ret = -EINVAL;
	} else if (r->n_nodes == 0) {
		shd_errf(err, errlen, "static: hostfile %.200s lists no node", file);
		ret = -EINVAL;
	}
out:
	free(line);
	free(at);
	fclose(fp);
	return ret;
}

/* "dir:" PATH[:N] -> r->path, r->n_nodes, r->dir_n.  N is the part after
 * the last ':' when it is all digits; otherwise the whole rest is PATH. */
static int parse_dir(struct shd_rdv *r, const char *rest, char *err, size_t errlen)
{
	const char *colon = strrchr(rest, ':');
	size_t plen = strlen(rest);
	unsigned long n = 0;
	if (colon && !colon[1]) {
		shd_errf(err, errlen, "dir: nothing after the last ':' (dir:PATH or dir:PATH:N, "
				      "1 <= N <= %u)", SHD_RDV_NODES_MAX);
		return -EINVAL;
	}
	bool digits = colon != NULL;
	for (const char *q = colon ? colon + 1 : ""; *q && digits; q++)
		if (*q < '0' || *q > '9')
			digits = false;
	if (digits) {
		for (const char *q = colon + 1; *q; q++) {
			n = n * 10 + (unsigned long)(*q - '0');
			if (n > SHD_RDV_NODES_MAX)
				break;
		}
		if (n == 0 || n > SHD_RDV_NODES_MAX) {
			shd_errf(err, errlen, "dir: node count %.20s out of range (1 <= N <= %u)",
				 colon + 1, SHD_RDV_NODES_MAX);
			return -EINVAL;
		}
		plen = (size_t)(colon - rest);
		r->dir_n = true;
	}
	if (plen == 0) {
		shd_errf(err, errlen, "dir: empty PATH (dir:PATH or dir:PATH:N)");
		return -EINVAL;
	}
	if (plen >= sizeof(r->path) - NAME_MAX_DIR - 64) {
		shd_errf(err, errlen, "dir: PATH longer than %zu bytes",
			 sizeof(r->path) - NAME_MAX_DIR - 65);
		return -EINVAL;
	}
	memcpy(r->path, rest, plen);
	r->path[plen] = '\0';
	r->n_nodes = (uint32_t)n; /* 0 without N until open */
	return 0;
}

static int parse_mpi(struct shd_rdv *r, const char *rest, char *err, size_t errlen)
{
	(void)r;
	(void)rest;
#ifdef SHD_HAVE_RDV_MPI
	(void)err;
	(void)errlen;
	return 0;
#else
	shd_errf(err, errlen, "mpi: this shuffled was built without the mpi rendezvous "
			      "(meson option rdv_mpi); use static:, dir:, tcp:// or none");
	return -EINVAL;
#endif
}

/* The kinds of spec, in the order they are tried: the parser below, the
 * error for an unknown kind and shuffled --help (shd_rdv_kinds()) all
 * read this table, so none of them can miss a kind. */
static const struct spec_kind {
	const char *name;   /* the whole spec when exact, else its prefix */
	bool exact;
	enum shd_rdv_kind kind; /* 0: none and auto, which the caller resolves */
	int (*parse)(struct shd_rdv *r, const char *rest, char *err, size_t errlen);
	const char *syntax; /* as the user writes it */
	const char *help;   /* one phrase for --help */
} spec_kinds[] = {
	{"auto", true, 0, NULL, "auto",
#ifdef SHD_HAVE_RDV_MPI
	 "mpi when started by mpirun or srun, else none"},
#else
	 "none; refused under mpirun or srun: this build has no mpi rendezvous"},
#endif
	{"none", true, 0, NULL, "none", "this node alone"},
	{"mpi", true, SHD_RDV_MPI, parse_mpi, "mpi",
#ifdef SHD_HAVE_RDV_MPI
	 "an allgather over MPI, node id = MPI rank"},
#else
	 "not in this build"},
#endif
	{"static:@", false, SHD_RDV_STATIC, parse_hostfile, "static:@FILE",
	 "a static list from a hostfile, one HOST[:PORT] per line"},
	{"static:", false, SHD_RDV_STATIC, parse_static, "static:HOST:PORT,HOST:PORT,...",
	 "a fixed list, node id = position; IPv6 as [ADDR]:PORT"},
	{"dir:", false, SHD_RDV_DIR, parse_dir, "dir:PATH:N",
	 "N nodes write their addresses into the shared directory PATH"},
	{"dir:", false, SHD_RDV_DIR, parse_dir, "dir:PATH", /* (parsed by the entry above) */
	 "the same without N: each name claims a node id once, nodes join as they come"},
	{"tcp://", false, SHD_RDV_TCP, shd_rdv_tcp_parse, "tcp://HOST:PORT",
	 "through a TCPStore: shuffled --store-listen, or PyTorch's; nodes join as they "
	 "come"},
};
#define N_SPEC_KINDS (sizeof(spec_kinds) / sizeof(spec_kinds[0]))

size_t shd_rdv_kinds(char *buf, size_t len, bool help)
{
	size_t o = 0;
	for (size_t i = 0; i < N_SPEC_KINDS; i++) {
		const struct spec_kind *k = &spec_kinds[i];
		const char *sep = i == 0 ? "" : i + 1 < N_SPEC_KINDS || help ? ", " : " or ";
		int w = help ? snprintf(buf + o, o < len ? len - o : 0, "%s%s (%s)", sep, k->syntax,
					k->help)
			     : snprintf(buf + o, o < len ? len - o : 0, "%s%s", sep, k->syntax);
		if (w > 0)
			o += (size_t)w;
	}
	return o;
}

bool shd_rdv_alone(const char *spec)
{
	if (!strcmp(spec, "none"))
		return true;
	if (!strcmp(spec, "auto")) /* under a launcher: mpi */
		return !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") &&
		       !getenv("PMI_RANK") && !getenv("SLURM_STEP_ID");
	return false;
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
	for (size_t i = 0; i < N_SPEC_KINDS; i++) {
		const struct spec_kind *k = &spec_kinds[i];
		size_t nl = strlen(k->name);
		if (k->exact ? strcmp(spec, k->name) != 0 : strncmp(spec, k->name, nl) != 0)
			continue;
		if (!k->parse) /* none, auto */
			return 0;
		r->kind = k->kind;
		return k->parse(r, spec + nl, err, errlen);
	}
	char kinds[320];
	shd_rdv_kinds(kinds, sizeof(kinds), false);
	shd_errf(err, errlen, "unknown kind \"%.40s\"; must be %s", spec, kinds);
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
	(void)parse_spec(r, spec, NULL, 0); /* the kind is set even if the rest fails */
	if (r->kind == SHD_RDV_STATIC || r->kind == SHD_RDV_DIR) {
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
	/* hostfile lines without a port take mine */
	for (uint32_t i = 0; i < r->n_nodes; i++)
		if (!r->list[i].port[0])
			snprintf(r->list[i].port, sizeof(r->list[i].port), "%s", port);
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
	rdv_result_take(out, SHD_RDV_STATIC, false, r->n_nodes, r->my_node, &r->list);
	return 0;
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
	r->me.incarnation = self->incarnation;
	r->signer = self->signer;
	if (r->kind != SHD_RDV_DIR) /* dir: shd_rdv_dir_open() fills in all of r->me */
		shd_rdv_dir_ident(&r->me, self->incarnation);
	switch (r->kind) {
#ifdef SHD_HAVE_RDV_MPI
	case SHD_RDV_MPI: ret = shd_rdv_mpi_open(r, err, errlen); break;
#endif
	case SHD_RDV_STATIC: ret = open_static(r, self, err, errlen); break;
	case SHD_RDV_DIR: ret = shd_rdv_dir_open(r, self->max_nodes, err, errlen); break;
	case SHD_RDV_TCP: ret = shd_rdv_tcp_open(r, self->max_nodes, err, errlen); break;
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

uint64_t shd_rdv_incarnation(const struct shd_rdv *r)
{
	return r->me.incarnation;
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
#ifdef SHD_HAVE_RDV_MPI
	case SHD_RDV_MPI: return shd_rdv_mpi_exchange(r, addr, addr_len, out, err, errlen);
#endif
	case SHD_RDV_STATIC: return exchange_static(r, out);
	case SHD_RDV_DIR: return shd_rdv_dir_exchange(r, addr, addr_len, out, err, errlen);
	case SHD_RDV_TCP: return shd_rdv_tcp_exchange(r, addr, addr_len, out, err, errlen);
	default: return -EINVAL;
	}
}

int shd_rdv_refresh(struct shd_rdv *r, int timeout_ms, char *err, size_t errlen)
{
	if (r->kind != SHD_RDV_TCP)
		return -ENOTSUP;
	return shd_rdv_tcp_refresh(r, timeout_ms, err, errlen);
}

int shd_rdv_restore_claim(struct shd_rdv *r, uint32_t node, const char *name, char *err,
			  size_t errlen)
{
	if (r->kind != SHD_RDV_TCP)
		return -ENOTSUP;
	return shd_rdv_tcp_restore_claim(r, node, name, err, errlen);
}

uint64_t shd_rdv_bad_records(const struct shd_rdv *r, const char **key)
{
	if (key)
		*key = r->bad_key;
	return r->bad_records;
}

const char *shd_rdv_warning(const struct shd_rdv *r)
{
	return r->warning[0] ? r->warning : NULL;
}

int shd_rdv_lookup(struct shd_rdv *r, uint32_t node, int timeout_ms, struct shd_rdv_node *out,
		   char *err, size_t errlen)
{
	if (r->kind == SHD_RDV_TCP)
		return shd_rdv_tcp_lookup(r, node, timeout_ms, out, err, errlen);
	if (r->kind == SHD_RDV_DIR && !r->dir_n)
		return shd_rdv_dir_lookup(r, node, out, err, errlen);
	return -ENOTSUP;
}

void shd_rdv_close(struct shd_rdv *r)
{
	if (!r)
		return;
#ifdef SHD_HAVE_RDV_MPI
	if (r->kind == SHD_RDV_MPI)
		shd_rdv_mpi_close(r);
#endif
	if (r->kind == SHD_RDV_TCP)
		shd_rdv_tcp_close(r);
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
