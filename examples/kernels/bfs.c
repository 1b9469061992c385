/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/bfs.c - Graph500-style breadth-first search.
 *
 *   bfs --impl shuffle|shuffle-batch|mpi [--scale S] [--edgefactor E] [--roots R] [--seed N]
 *
 * Graph: 2^S vertices, E * 2^S edges from the Kronecker generator with the
 * Graph500 parameters (A, B, C = 0.57, 0.19, 0.19), vertex labels scrambled
 * by a bijection; rank r generates edges [r*M/P, (r+1)*M/P) from a
 * counter-based generator.  Vertex v lives on rank v % P (slot v / P);
 * the distributed CSR is built with MPI_Alltoallv (set-up, not timed).
 *
 * Search: level-synchronous from R random roots of non-zero degree.  Each
 * level sends one 8-byte VISIT(w << 32 | parent) per edge out of the
 * frontier to w's owner; the handler claims w if unclaimed and puts it in
 * the next frontier; then one barrier per level:
 *   shuffle: each rank broadcasts its frontier's size with the level's
 *            visits, then shf_epoch(); the sum of the broadcasts says
 *            whether the level was empty (one more, empty, level at the
 *            end).  The epoch as a phase boundary is what keeps a faster
 *            rank's next-level VISITs out of this level.
 *   mpi:     the conduit's termination protocol, then MPI_Allreduce of the
 *            next frontier's size.
 *
 * Validation (Graph500, every root): the parent array is gathered; each
 * rank derives every vertex's depth by walking parents (a cycle or a
 * parent that was never reached is an error), then checks its part: the
 * root is its own parent; every tree edge (v, parent(v)) is an input edge
 * and joins depths d and d-1; every input edge has both ends reached or
 * neither (the tree spans the root's component) and joins depths that
 * differ by at most one.  Rate: harmonic mean of TEPS over the roots
 * (edges of the component / search time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define NONE UINT32_MAX
enum { VISIT = 0, COUNT = 1 };

struct bfs {
	int S;
	uint64_t nv;
	uint32_t nlocal;
	uint64_t *off;      /* CSR [nlocal + 1] */
	uint32_t *adj;      /* global neighbour ids */
	uint32_t *parent;   /* [nlocal] */
	uint32_t *next;     /* next frontier, local slots */
	uint32_t nnext;
	uint64_t count_sum; /* shuffle: frontier sizes broadcast this level */
};

static uint64_t scramble(uint64_t x, int S, uint64_t seed)
{
	uint64_t mask = S >= 64 ? ~0ull : (1ull << S) - 1;
	uint64_t a = (k_mix(seed ^ 1) | 1) & mask, b = (k_mix(seed ^ 2) | 1) & mask;
	x = (x * a + (k_mix(seed ^ 3) & mask)) & mask;
	x ^= x >> (S / 2 ? S / 2 : 1);
	x = (x * b) & mask;
	x ^= x >> (S / 3 ? S / 3 : 1);
	return x & mask;
}

/* Edge e of the Kronecker graph (Graph500 A, B, C). */
static void kron_edge(uint64_t e, int S, uint64_t seed, uint64_t *u_p, uint64_t *v_p)
{
	uint64_t u = 0, v = 0;
	for (int l = 0; l < S; l++) {
		double r = (double)(k_mix(seed ^ (e * 64 + (uint64_t)l)) >> 11) * 0x1.0p-53;
		int ub, vb;
		if (r < 0.57)
			ub = 0, vb = 0;
		else if (r < 0.76)
			ub = 0, vb = 1;
		else if (r < 0.95)
			ub = 1, vb = 0;
		else
			ub = 1, vb = 1;
		u = u << 1 | (uint64_t)ub;
		v = v << 1 | (uint64_t)vb;
	}
	*u_p = scramble(u, S, seed);
	*v_p = scramble(v, S, seed);
}

static void on_msg(struct kern *k, int src, uint32_t type, uint64_t val)
{
	struct bfs *g = k->user;
	if (type == COUNT) {
		g->count_sum += val;
		return;
	}
	uint64_t w = val >> 32, p = val & 0xffffffffu;
	if (type != VISIT || w % (uint64_t)k->world != (uint64_t)k->rank || w >= g->nv || p >= g->nv)
		k_die(k, "bad message (type %u, %016llx) from rank %d", type,
		      (unsigned long long)val, src);
	uint32_t slot = (uint32_t)(w / (uint64_t)k->world);
	if (g->parent[slot] == NONE) {
		g->parent[slot] = (uint32_t)p;
		g->next[g->nnext++] = slot;
	}
}

int main(int argc, char **argv)
{
	long scale = 12, ef = 16, nroots = 16;
	struct kopt opts[] = {
		{"scale", &scale, "log2 of the vertex count"},
		{"edgefactor", &ef, "edges per vertex"},
		{"roots", &nroots, "searches"},
		{NULL, NULL, NULL},
	};
	struct kern k;
	k_init(&k, "bfs", &argc, &argv, opts);
	if (scale < 2 || scale > 30 || ef < 1 || nroots < 1)
		k_die(&k, "--scale in [2, 30], --edgefactor and --roots >= 1");
	struct bfs g = {.S = (int)scale, .nv = 1ull << scale};
	int P = k.world, me = k.rank;
	uint64_t seed = k_mix(k.seed * 0x1000193), ne = (uint64_t)ef * g.nv;
	g.nlocal = (uint32_t)((g.nv - (uint64_t)me + (uint64_t)P - 1) / (uint64_t)P);

	/* ---- my edges, then the CSR by MPI_Alltoallv (set-up) */
	uint64_t e0 = ne * (uint64_t)me / (uint64_t)P, e1 = ne * (uint64_t)(me + 1) / (uint64_t)P;
	uint64_t nmine = e1 - e0;
	uint32_t *eu = malloc(nmine * 4 + 4), *ev = malloc(nmine * 4 + 4);
	int *scnt = calloc((size_t)P, sizeof(int)), *rcnt = calloc((size_t)P, sizeof(int));
	int *sdis = calloc((size_t)P, sizeof(int)), *rdis = calloc((size_t)P, sizeof(int));
	if (!eu || !ev || !scnt || !rcnt || !sdis || !rdis)
		k_die(&k, "out of memory");
	for (uint64_t e = 0; e < nmine; e++) {
		uint64_t u, v;
		kron_edge(e0 + e, g.S, seed, &u, &v);
		eu[e] = (uint32_t)u, ev[e] = (uint32_t)v;
		if (u != v) {
			scnt[u % (uint64_t)P] += 2;
			scnt[v % (uint64_t)P] += 2;
		}
	}
	MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
	size_t stot = 0, rtot = 0;
	for (int r = 0; r < P; r++) {
		sdis[r] = (int)stot, rdis[r] = (int)rtot;
		stot += (size_t)scnt[r], rtot += (size_t)rcnt[r];
	}
	uint32_t *sb = malloc(stot * 4 + 4), *rb = malloc(rtot * 4 + 4);
	int *at = malloc((size_t)P * sizeof(int));
	if (!sb || !rb || !at)
		k_die(&k, "out of memory");
	memcpy(at, sdis, (size_t)P * sizeof(int));
	for (uint64_t e = 0; e < nmine; e++) {
		uint32_t u = eu[e], v = ev[e];
		if (u == v)
			continue;
		sb[at[u % (uint32_t)P]++] = u, sb[at[u % (uint32_t)P]++] = v;
		sb[at[v % (uint32_t)P]++] = v, sb[at[v % (uint32_t)P]++] = u;
	}
	MPI_Alltoallv(sb, scnt, sdis, MPI_UINT32_T, rb, rcnt, rdis, MPI_UINT32_T, MPI_COMM_WORLD);
	free(sb), free(at), free(scnt), free(rcnt), free(sdis), free(rdis);
	g.off = calloc((size_t)g.nlocal + 1, 8);
	g.adj = malloc(rtot / 2 * 4 + 4);
	g.parent = malloc((size_t)g.nlocal * 4 + 4);
	g.next = malloc((size_t)g.nlocal * 4 + 4);
	uint32_t *front = malloc((size_t)g.nlocal * 4 + 4);
	if (!g.off || !g.adj || !g.parent || !g.next || !front)
		k_die(&k, "out of memory");
	for (size_t i = 0; i < rtot; i += 2)
		g.off[rb[i] / (uint32_t)P + 1]++;
	for (uint32_t i = 0; i < g.nlocal; i++)
		g.off[i + 1] += g.off[i];
	uint64_t *fill = malloc(((size_t)g.nlocal + 1) * 8);
	if (!fill)
		k_die(&k, "out of memory");
	memcpy(fill, g.off, ((size_t)g.nlocal + 1) * 8);
	for (size_t i = 0; i < rtot; i += 2)
		g.adj[fill[rb[i] / (uint32_t)P]++] = rb[i + 1];
	free(fill), free(rb);

	k_conduit_init(&k, on_msg, &g);

	/* ---- validation's buffers: the whole parent array, depths */
	uint32_t *allpar = malloc(g.nv * 4), *blk = malloc(g.nv * 4 + 4);
	int32_t *depth = malloc(g.nv * 4);
	uint32_t *stack = malloc(g.nv * 4);
	int *gcnt = malloc((size_t)P * sizeof(int)), *gdis = malloc((size_t)P * sizeof(int));
	if (!allpar || !blk || !depth || !stack || !gcnt || !gdis)
		k_die(&k, "out of memory");
	for (int r = 0, d = 0; r < P; r++) {
		gcnt[r] = (int)((g.nv - (uint64_t)r + (uint64_t)P - 1) / (uint64_t)P);
		gdis[r] = d;
		d += gcnt[r];
	}

	double inv_teps = 0, time_total = 0;
	uint64_t errors = 0, msgs = 0, tried = 0;
	long done = 0;
	for (uint64_t attempt = 0; done < nroots && attempt < (uint64_t)nroots * 64; attempt++) {
		uint64_t root = scramble(k_mix(seed ^ 0xb0075 ^ attempt) % g.nv, g.S, seed);
		long deg = 0, gdeg = 0;
		if (root % (uint64_t)P == (uint64_t)me) {
			uint32_t s = (uint32_t)(root / (uint64_t)P);
			deg = (long)(g.off[s + 1] - g.off[s]);
		}
		MPI_Allreduce(&deg, &gdeg, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		tried++;
		if (gdeg == 0)
			continue;
		for (uint32_t i = 0; i < g.nlocal; i++)
			g.parent[i] = NONE;
		uint32_t nfront = 0;
		g.nnext = 0;
		if (root % (uint64_t)P == (uint64_t)me) {
			g.parent[root / (uint64_t)P] = (uint32_t)root;
			front[nfront++] = (uint32_t)(root / (uint64_t)P);
		}
		k_timer_start(&k);
		for (int level = 0;; level++) {
			if (k_is_shuffle(&k)) {
				/* every rank learns this level's total with its epoch */
				g.count_sum = 0;
				int r = shf_bcast(k.shf, COUNT, &(uint64_t){nfront}, 8, SHF_BCAST_SELF);
				if (r)
					k_die(&k, "shf_bcast: %s", shf_strerror(r));
			}
			for (uint32_t i = 0; i < nfront; i++) {
				uint32_t s = front[i];
				uint64_t v = (uint64_t)s * (uint64_t)P + (uint64_t)me;
				for (uint64_t a = g.off[s]; a < g.off[s + 1]; a++) {
					uint32_t w = g.adj[a];
					k_send8(&k, (int)(w % (uint32_t)P), VISIT, (uint64_t)w << 32 | v);
					msgs++;
				}
			}
			k_phase_end(&k);
			uint64_t more;
			if (k_is_shuffle(&k)) {
				more = g.count_sum; /* this level's frontier: 0 ends it */
			} else {
				uint64_t n = g.nnext;
				MPI_Allreduce(&n, &more, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
			}
			uint32_t *t = front;
			front = g.next;
			g.next = t;
			nfront = g.nnext;
			g.nnext = 0;
			if (more == 0)
				break;
		}
		double t = k_timer_stop(&k);

		/* ---- validation */
		uint64_t errs = 0;
		MPI_Allgatherv(g.parent, (int)g.nlocal, MPI_UINT32_T, blk, gcnt, gdis, MPI_UINT32_T,
			       MPI_COMM_WORLD);
		for (int r = 0; r < P; r++)
			for (int i = 0; i < gcnt[r]; i++)
				allpar[(uint64_t)i * (uint64_t)P + (uint64_t)r] = blk[gdis[r] + i];
		for (uint64_t v = 0; v < g.nv; v++)
			depth[v] = -2; /* not yet known */
		if (allpar[root] != root)
			errs++;
		depth[root] = 0;
		for (uint64_t v = 0; v < g.nv; v++) {
			if (depth[v] != -2)
				continue;
			if (allpar[v] == NONE) {
				depth[v] = -1;
				continue;
			}
			uint64_t n = 0, x = v;
			while (depth[x] == -2 && n < g.nv) {
				stack[n++] = (uint32_t)x;
				depth[x] = -3; /* on the stack: meeting it again is a cycle */
				x = allpar[x];
				if (x >= g.nv || allpar[x] == NONE) {
					x = NONE;
					break;
				}
			}
			int32_t d = x == NONE || depth[x] < 0 ? -4 : depth[x];
			while (n--)
				depth[stack[n]] = d == -4 ? -4 : ++d;
		}
		uint64_t comp_edges = 0;
		for (uint32_t s = 0; s < g.nlocal; s++) {
			uint64_t v = (uint64_t)s * (uint64_t)P + (uint64_t)me;
			if (depth[v] == -4) {
				errs++; /* a cycle, or a parent that was never reached */
				continue;
			}
			if (depth[v] <= 0)
				continue;
			uint32_t p = allpar[v];
			bool edge = false;
			for (uint64_t a = g.off[s]; a < g.off[s + 1] && !edge; a++)
				edge = g.adj[a] == p;
			if (!edge || depth[p] != depth[v] - 1)
				errs++;
		}
		for (uint64_t e = 0; e < nmine; e++) {
			uint32_t u = eu[e], v = ev[e];
			if (u == v)
				continue;
			bool ru = depth[u] >= 0, rv = depth[v] >= 0;
			if (ru != rv || (ru && abs(depth[u] - depth[v]) > 1))
				errs++;
			else if (ru)
				comp_edges++;
		}
		uint64_t gerr = 0, gedges = 0;
		MPI_Allreduce(&errs, &gerr, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(&comp_edges, &gedges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
		if (gerr && me == 0)
			fprintf(stderr, "bfs: root %llu: %llu Graph500 validation errors\n",
				(unsigned long long)root, (unsigned long long)gerr);
		errors += errs;
		inv_teps += t / (double)(gedges ? gedges : 1);
		time_total += t;
		done++;
	}
	if (done < nroots && me == 0)
		fprintf(stderr, "bfs: only %ld roots of non-zero degree in %llu tries\n", done,
			(unsigned long long)tried);
	double hmean = done && inv_teps > 0 ? (double)done / inv_teps : 0;
	char extra[192];
	snprintf(extra, sizeof(extra), "\"scale\":%ld,\"edgefactor\":%ld,\"roots\":%ld,"
		 "\"teps_hmean\":%.1f", scale, ef, done, hmean);
	int rc = k_report(&k, errors == 0 && done == nroots, errors, msgs, time_total, hmean,
			  "teps_hmean", extra);
	free(eu), free(ev), free(g.off), free(g.adj), free(g.parent), free(g.next), free(front);
	free(allpar), free(blk), free(depth), free(stack), free(gcnt), free(gdis);
	k_fini(&k);
	return rc;
}
