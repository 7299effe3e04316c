/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Intrusive chained hash table. The caller embeds a HashNode in its object, computes the
 * hash (util/siphash24.h) and compares keys itself while walking a chain, so the table
 * never knows key types. Only growth allocates; removal never fails.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct HashNode HashNode;
struct HashNode {
        HashNode *next;
        uint64_t hash;
};

typedef struct HashTable {
        HashNode **buckets;
        size_t n_buckets;       /* 0 or a power of two */
        size_t n_entries;
} HashTable;

#define HASH_TABLE_NULL(t) { .buckets = NULL, .n_buckets = 0, .n_entries = 0 }

int hash_table_insert(HashTable *t, HashNode *node, uint64_t hash);
void hash_table_remove(HashTable *t, HashNode *node);
void hash_table_deinit(HashTable *t);

/* First node of the chain that may hold @hash; continue with hash_node_next_match(). */
static inline HashNode *hash_table_lookup(const HashTable *t, uint64_t hash) {
        HashNode *n;

        if (!t->n_buckets)
                return NULL;
        for (n = t->buckets[hash & (t->n_buckets - 1)]; n; n = n->next)
                if (n->hash == hash)
                        return n;
        return NULL;
}

static inline HashNode *hash_node_next_match(const HashNode *n) {
        uint64_t hash = n->hash;

        for (n = n->next; n; n = n->next)
                if (n->hash == hash)
                        return (HashNode *)n;
        return NULL;
}

/* Iterates every node; the body must not insert, but may remove the current node. */
#define hash_table_for_each(node, tmp, t, i)                                            \
        for ((i) = 0; (i) < (t)->n_buckets; ++(i))                                      \
                for ((node) = (t)->buckets[i], (tmp) = (node) ? (node)->next : NULL;    \
                     (node);                                                            \
                     (node) = (tmp), (tmp) = (node) ? (node)->next : NULL)
