/* SPDX-License-Identifier: MIT */
/* daemon/list.h - intrusive circular doubly-linked list. */
#ifndef SHD_LIST_H
#define SHD_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct shd_list {
	struct shd_list *prev, *next;
};

#define shd_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void shd_list_init(struct shd_list *l)
{
	l->prev = l->next = l;
}

static inline bool shd_list_empty(const struct shd_list *l)
{
	return l->next == l;
}

/* linked into some list? (nodes are kept initialised when unlinked) */
static inline bool shd_list_linked(const struct shd_list *n)
{
	return n->next != n;
}

static inline void shd_list_add_tail(struct shd_list *head, struct shd_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void shd_list_del(struct shd_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	shd_list_init(n);
}

/* Move every node of `from` to the tail of `to`. */
static inline void shd_list_splice_tail(struct shd_list *to, struct shd_list *from)
{
	if (shd_list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	shd_list_init(from);
}

#define shd_list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); pos = tmp, tmp = pos->next)

#endif
