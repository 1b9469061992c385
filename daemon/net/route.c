/* SPDX-License-Identifier: MIT */
/*
 * daemon/net/route.c - the grid of routing=2d (route.h).  Pure arithmetic on
 * node ids: the network (net/post.c, net.c) asks it where a message goes.
 */
#include "daemon/net/route.h"

void shd_route_init(struct shd_route *r, bool grid, uint32_t n_nodes, uint32_t self)
{
	uint32_t c = 1;
	while ((uint64_t)c * c < n_nodes)
		c++;
	*r = (struct shd_route){.grid = grid, .n = n_nodes, .cols = c, .self = self};
}

static bool linked(const struct shd_route *r, uint32_t a, uint32_t b)
{
	if (a >= r->n || b >= r->n || a == b)
		return false;
	return !r->grid || a / r->cols == b / r->cols || a % r->cols == b % r->cols;
}

bool shd_route_neighbor(const struct shd_route *r, uint32_t node)
{
	return linked(r, r->self, node);
}

unsigned shd_route_vias(const struct shd_route *r, uint32_t src, uint32_t dst, uint32_t via[2])
{
	if (src >= r->n || dst >= r->n || src == dst || linked(r, src, dst))
		return 0;
	unsigned k = 0;
	uint32_t a = (src / r->cols) * r->cols + dst % r->cols; /* my row, its column */
	uint32_t b = (dst / r->cols) * r->cols + src % r->cols; /* its row, my column */
	if (a < r->n)
		via[k++] = a;
	if (b < r->n)
		via[k++] = b;
	return k;
}

bool shd_route_is_via(const struct shd_route *r, uint32_t src, uint32_t dst, uint32_t via)
{
	uint32_t v[2];
	unsigned k = shd_route_vias(r, src, dst, v);
	for (unsigned i = 0; i < k; i++)
		if (v[i] == via)
			return true;
	return false;
}

uint32_t shd_route_links_max(const struct shd_route *r)
{
	if (r->n <= 1)
		return 0;
	if (!r->grid)
		return r->n - 1;
	uint32_t rows = (r->n + r->cols - 1) / r->cols;
	return (r->cols - 1) + (rows - 1);
}

const char *shd_route_name(const struct shd_route *r)
{
	return r->grid ? "2d" : "direct";
}
