/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Intrusive circular doubly-linked list. A List is both the head and the node type; an
 * unlinked node points to itself, so list_unlink() is idempotent and never allocates.
 */
#include <stdbool.h>
#include <stddef.h>
#include "util/macro.h"

typedef struct List List;
struct List {
        List *prev;
        List *next;
};

#define LIST_INIT(l) { .prev = &(l), .next = &(l) }

static inline void list_init(List *l) {
        l->prev = l;
        l->next = l;
}

static inline bool list_is_empty(const List *l) {
        return l->next == l;
}

/* A node is linked when it is part of some list (not pointing to itself). */
static inline bool list_is_linked(const List *n) {
        return n->next && n->next != n;
}

static inline void list_insert_after(List *pos, List *n) {
        n->prev = pos;
        n->next = pos->next;
        pos->next->prev = n;
        pos->next = n;
}

static inline void list_append(List *head, List *n) {
        list_insert_after(head->prev, n);
}

static inline void list_prepend(List *head, List *n) {
        list_insert_after(head, n);
}

static inline void list_unlink(List *n) {
        if (!n->next)
                return;
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = n;
        n->next = n;
}

static inline List *list_first(const List *head) {
        return list_is_empty(head) ? NULL : head->next;
}

static inline List *list_last(const List *head) {
        return list_is_empty(head) ? NULL : head->prev;
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) \
        (list_is_empty(head) ? NULL : list_entry((head)->next, type, member))

/* Safe against unlinking the current node. */
#define list_for_each_safe(pos, tmp, head) \
        for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

#define list_for_each(pos, head) \
        for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
