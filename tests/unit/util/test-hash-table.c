/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include "util/hash-table.h"
#include "util/siphash24.h"

typedef struct Entry {
        HashNode node;
        uint64_t key;
} Entry;

static Entry *lookup(HashTable *t, uint64_t key) {
        HashNode *n;

        for (n = hash_table_lookup(t, hash_u64(key)); n; n = hash_node_next_match(n)) {
                Entry *e = (Entry *)n;

                if (e->key == key)
                        return e;
        }
        return NULL;
}

static void test_insert_remove(void) {
        HashTable t = HASH_TABLE_NULL(t);
        Entry *e = g_new0(Entry, 1000);
        HashNode *n, *tmp;
        size_t i, count = 0;

        for (i = 0; i < 1000; ++i) {
                e[i].key = i * 7919;
                g_assert_cmpint(hash_table_insert(&t, &e[i].node, hash_u64(e[i].key)), ==, 0);
        }
        g_assert_cmpuint(t.n_entries, ==, 1000);
        for (i = 0; i < 1000; ++i)
                g_assert_true(lookup(&t, i * 7919) == &e[i]);
        g_assert_null(lookup(&t, 3));

        for (i = 0; i < 1000; i += 2)
                hash_table_remove(&t, &e[i].node);
        for (i = 0; i < 1000; ++i)
                g_assert_true(lookup(&t, i * 7919) == (i % 2 ? &e[i] : NULL));

        hash_table_for_each(n, tmp, &t, i)
                ++count;
        g_assert_cmpuint(count, ==, 500);

        hash_table_deinit(&t);
        g_free(e);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/util/hash-table/insert-remove", test_insert_remove);
        return g_test_run();
}
