/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/route.h - which daemon a message for a node goes to first: every
 * routing decision among daemons, and nothing else (no state, no I/O).
 *
 * routing=direct: every node is a neighbour (a full mesh).
 * routing=2d: node i sits at row i / cols, column i % cols of a grid with
 * cols = ceil(sqrt(n_nodes)) columns (the last row may be short).  A node's
 * neighbours are the nodes of its row and of its column; a message for a
 * node in another row and column goes through one intermediate: (my row,
 * its column) when that cell exists, else (its row, my column), which then
 * always does.  A daemon therefore talks to at most
 * shd_route_links_max() = (cols - 1) + (rows - 1) peers.
 */
#ifndef SHD_ROUTE_H
#define SHD_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#define SHD_ROUTE_NONE UINT32_MAX

struct shd_route {
	bool grid;     /* routing=2d */
	uint32_t n;    /* nodes (ids 0..n-1) */
	uint32_t cols; /* grid columns (2d) */
	uint32_t self; /* this node */
};

void shd_route_init(struct shd_route *r, bool grid, uint32_t n_nodes, uint32_t self);
/* May this node exchange messages with node directly? */
bool shd_route_neighbor(const struct shd_route *r, uint32_t node);
/* The intermediates a message from src to dst may take, preferred first,
 * into via[2]: 0 (src and dst are neighbours, or src == dst), 1 or 2. */
unsigned shd_route_vias(const struct shd_route *r, uint32_t src, uint32_t dst, uint32_t via[2]);
/* Is `via` an intermediate a message from src to dst may take? */
bool shd_route_is_via(const struct shd_route *r, uint32_t src, uint32_t dst, uint32_t via);
/* The most neighbours any node has: n - 1 (direct), (cols - 1) + (rows - 1)
 * (2d). */
uint32_t shd_route_links_max(const struct shd_route *r);
const char *shd_route_name(const struct shd_route *r);

#endif
