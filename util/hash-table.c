/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Chains are singly linked; buckets double when the load factor passes 1, so lookups stay
 * O(1) on average. The table shrinks only on deinit: peers cannot make it oscillate.
 */
#include <errno.h>
#include <stdlib.h>
#include "util/error.h"
#include "util/hash-table.h"

static int hash_table_grow(HashTable *t) {
        size_t n = t->n_buckets ? t->n_buckets * 2 : 16, i;
        HashNode **b;

        b = calloc(n, sizeof(*b));
        if (!b)
                return error_origin(-ENOMEM);

        for (i = 0; i < t->n_buckets; ++i) {
                HashNode *node = t->buckets[i], *next;

                for (; node; node = next) {
                        next = node->next;
                        node->next = b[node->hash & (n - 1)];
                        b[node->hash & (n - 1)] = node;
                }
        }

        free(t->buckets);
        t->buckets = b;
        t->n_buckets = n;
        return 0;
}

/**
 * hash_table_insert() - link @node under @hash
 * @t:          the table
 * @node:       a node not linked in any table
 * @hash:       its hash
 *
 * Duplicates are allowed; the caller decides whether a key may appear twice.
 *
 * Return: 0, or -ENOMEM when the table had to grow and could not.
 */
int hash_table_insert(HashTable *t, HashNode *node, uint64_t hash) {
        size_t idx;
        int r;

        if (t->n_entries >= t->n_buckets) {
                r = hash_table_grow(t);
                if (r < 0 && !t->n_buckets)
                        return error_trace(r);
                /* growth failure with buckets present only costs speed */
        }

        idx = hash & (t->n_buckets - 1);
        node->hash = hash;
        node->next = t->buckets[idx];
        t->buckets[idx] = node;
        ++t->n_entries;
        return 0;
}

/**
 * hash_table_remove() - unlink @node
 * @t:          the table @node is linked in
 * @node:       the node
 */
void hash_table_remove(HashTable *t, HashNode *node) {
        HashNode **p;

        if (!t->n_buckets)
                return;
        for (p = &t->buckets[node->hash & (t->n_buckets - 1)]; *p; p = &(*p)->next) {
                if (*p == node) {
                        *p = node->next;
                        node->next = NULL;
                        --t->n_entries;
                        return;
                }
        }
}

/**
 * hash_table_deinit() - free the bucket array; the nodes belong to their owners
 * @t:          the table
 */
void hash_table_deinit(HashTable *t) {
        free(t->buckets);
        t->buckets = NULL;
        t->n_buckets = 0;
        t->n_entries = 0;
}
