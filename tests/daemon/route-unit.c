/* SPDX-License-Identifier: MIT */
/*
 * tests/daemon/route-unit.c - daemon/net/route.c alone: the grid of
 * routing=2d.  For every node count 1..1100 and every pair: a pair is
 * linked directly exactly when it shares a row or a column; every other
 * pair has 1 or 2 intermediates, each a neighbour of both ends (so a
 * message takes exactly two hops), the first existing; no node has more
 * neighbours than shd_route_links_max(), which is at most 2 * ceil(sqrt(N))
 * - 2 (<= 12 at 32 nodes, <= 198 at 10,000); direct: everyone is a
 * neighbour, nothing is routed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/net/route.h"
#include "tests/lib/check.h"

static struct shd_route at(bool grid, uint32_t n, uint32_t self)
{
	struct shd_route r;
	shd_route_init(&r, grid, n, self);
	return r;
}

int main(void)
{
	for (uint32_t n = 1; n <= 1100; n += (n < 100 ? 1 : 37)) {
		uint32_t c = 1;
		while (c * c < n)
			c++;
		struct shd_route r0 = at(true, n, 0);
		EXPECTF(r0.cols == c, "n %u: %u columns, expected %u", n, r0.cols, c);
		EXPECTF(shd_route_links_max(&r0) <= (n > 1 ? 2 * c - 2 : 0), "n %u: bound %u", n,
		      shd_route_links_max(&r0));
		for (uint32_t s = 0; s < n; s++) {
			struct shd_route r = at(true, n, s), d = at(false, n, s);
			uint32_t links = 0;
			for (uint32_t t = 0; t < n; t++) {
				bool same = s / c == t / c || s % c == t % c;
				EXPECTF(shd_route_neighbor(&r, t) == (s != t && same),
				      "n %u: %u-%u neighbour", n, s, t);
				EXPECTF(shd_route_neighbor(&d, t) == (s != t), "direct n %u", n);
				uint32_t v[2] = {SHD_ROUTE_NONE, SHD_ROUTE_NONE};
				EXPECTF(shd_route_vias(&d, s, t, v) == 0, "direct routes n %u", n);
				links += shd_route_neighbor(&r, t);
				unsigned k = shd_route_vias(&r, s, t, v);
				if (s == t || same) {
					EXPECTF(k == 0, "n %u: %u-%u routed though neighbours", n, s, t);
					continue;
				}
				EXPECTF(k >= 1 && k <= 2, "n %u: %u-%u has %u intermediates", n, s, t, k);
				uint32_t pref = (s / c) * c + t % c;
				EXPECTF(pref >= n || v[0] == pref, "n %u: %u-%u prefers %u, not %u", n, s, t,
				      v[0], pref);
				for (unsigned i = 0; i < k; i++) {
					struct shd_route m = at(true, n, v[i]);
					EXPECTF(v[i] < n && shd_route_neighbor(&r, v[i]) &&
						      shd_route_neighbor(&m, t),
					      "n %u: %u-%u via %u is not two hops", n, s, t, v[i]);
					EXPECTF(shd_route_is_via(&r, s, t, v[i]), "is_via");
				}
				EXPECTF(!shd_route_is_via(&r, s, t, s) && !shd_route_is_via(&r, s, t, t),
				      "n %u: an end is its own intermediate", n);
			}
			EXPECTF(links <= shd_route_links_max(&r), "n %u: node %u has %u links > %u", n,
			      s, links, shd_route_links_max(&r));
			EXPECTF(shd_route_links_max(&d) == n - 1, "direct bound");
		}
	}
	struct shd_route r32 = at(true, 32, 0), r10k = at(true, 10000, 0);
	EXPECTF(shd_route_links_max(&r32) <= 12, "32 nodes: bound %u", shd_route_links_max(&r32));
	EXPECTF(shd_route_links_max(&r10k) <= 200, "10000 nodes: bound %u",
	      shd_route_links_max(&r10k));
	printf("route-unit: bound at 32 nodes %u, at 10000 nodes %u\n", shd_route_links_max(&r32),
	       shd_route_links_max(&r10k));
	return check_result();
}
