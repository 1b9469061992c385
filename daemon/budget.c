/* SPDX-License-Identifier: MIT */
/*
 * daemon/budget.c - memory budgets per uid (budget.h).
 *
 * A small array of {uid, bytes} for the uids that hold memory now (a node
 * has few users at a time; this is looked at on registration and when a
 * directory chunk is added, never per record).  An entry goes when its
 * uid's charges are all given back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/budget.h"

#define MiB (1024.0 * 1024.0)

/* "12.0 KiB", "128.0 MiB": sizes in the refusals users read */
static const char *human(uint64_t v, char *buf, size_t n)
{
	if (v < (1u << 20))
		snprintf(buf, n, "%.1f KiB", (double)v / 1024.0);
	else if (v < (UINT64_C(1) << 30))
		snprintf(buf, n, "%.1f MiB", (double)v / MiB);
	else
		snprintf(buf, n, "%.1f GiB", (double)v / (MiB * 1024.0));
	return buf;
}

bool shd_budget_exempt(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

static struct shd_budget_use *find(const struct shd_daemon *d, uid_t uid)
{
	for (uint32_t i = 0; i < d->n_budget; i++)
		if (d->budget[i].uid == uid)
			return &d->budget[i];
	return NULL;
}

static struct shd_budget_use *get(struct shd_daemon *d, uid_t uid)
{
	struct shd_budget_use *u = find(d, uid);
	if (u)
		return u;
	if (d->n_budget == d->cap_budget) {
		uint32_t cap = d->cap_budget ? 2 * d->cap_budget : 8;
		struct shd_budget_use *n = realloc(d->budget, sizeof(*n) * cap);
		if (!n)
			return NULL;
		d->budget = n;
		d->cap_budget = cap;
	}
	u = &d->budget[d->n_budget++];
	*u = (struct shd_budget_use){uid, 0};
	return u;
}

static void add(struct shd_daemon *d, struct shd_budget_use *u, uint64_t bytes)
{
	u->bytes += bytes;
	d->st.mem_bytes += bytes;
	if (!shd_budget_exempt(u->uid))
		d->budget_total += bytes;
}

int shd_budget_charge(struct shd_daemon *d, uid_t uid, uint64_t bytes, const char *what,
		      char *why, size_t whylen)
{
	struct shd_budget_use *u = get(d, uid);
	if (!u) {
		snprintf(why, whylen, "out of memory for the budget of uid %d", (int)uid);
		return -ENOMEM;
	}
	char a[32], b[32], c[32];
	if (!shd_budget_exempt(uid)) {
		if (u->bytes + bytes > d->cfg.uid_mem_max) {
			snprintf(why, whylen,
				 "%s of %s refused: uid %d would hold %s, over its budget uid_mem_max=%s",
				 what, human(bytes, a, sizeof(a)), (int)uid,
				 human(u->bytes + bytes, b, sizeof(b)),
				 human(d->cfg.uid_mem_max, c, sizeof(c)));
			d->st.mem_refused++;
			shd_budget_release(d, uid, 0); /* drop an empty entry */
			return -EDQUOT;
		}
		if (d->budget_total + bytes > d->cfg.mem_max) {
			snprintf(why, whylen,
				 "%s of %s refused: the daemon's users would hold %s, over mem_max=%s",
				 what, human(bytes, a, sizeof(a)), human(d->budget_total + bytes, b, sizeof(b)),
				 human(d->cfg.mem_max, c, sizeof(c)));
			d->st.mem_refused++;
			shd_budget_release(d, uid, 0);
			return -ENOMEM;
		}
	}
	add(d, u, bytes);
	return 0;
}

void shd_budget_force(struct shd_daemon *d, uid_t uid, uint64_t bytes)
{
	struct shd_budget_use *u = get(d, uid);
	if (u) {
		add(d, u, bytes);
		return;
	}
	/* no entry to hold it (out of memory): counted in the totals only */
	d->st.mem_bytes += bytes;
	if (!shd_budget_exempt(uid))
		d->budget_total += bytes;
}

void shd_budget_release(struct shd_daemon *d, uid_t uid, uint64_t bytes)
{
	struct shd_budget_use *u = find(d, uid);
	d->st.mem_bytes -= bytes;
	if (!shd_budget_exempt(uid))
		d->budget_total -= bytes;
	if (!u)
		return;
	u->bytes -= bytes < u->bytes ? bytes : u->bytes;
	if (u->bytes == 0)
		*u = d->budget[--d->n_budget];
}

uint64_t shd_budget_used(const struct shd_daemon *d, uid_t uid)
{
	const struct shd_budget_use *u = find(d, uid);
	return u ? u->bytes : 0;
}

void shd_budget_fini(struct shd_daemon *d)
{
	free(d->budget);
	d->budget = NULL;
	d->n_budget = d->cap_budget = 0;
}
