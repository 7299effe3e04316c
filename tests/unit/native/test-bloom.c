/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libkdbus builds bloom masks the way the bus builds the filters of broadcasts: the same
 * entries give the same bits (compared with bridge/bloom.c, including long entries that
 * are hashed truncated).
 */
#include <string.h>
#include "bridge/bloom.h"
#include "libkdbus/libkdbus.h"
#include <glib.h>

static void test_same_bits(gconstpointer ctx) {
        const BloomParams *bp = ctx;
        static const char *const entries[][2] = {
                { "member", "Changed" },
                { "interface", "org.freedesktop.DBus" },
                { "path", "/" },
                { "sender", ":1.42" },
                { "arg0", "" },
                { "message-type", "signal" },
        };
        char long_value[3000];
        size_t i;

        memset(long_value, 'v', sizeof(long_value) - 1);
        long_value[sizeof(long_value) - 1] = '\0';
        for (i = 0; i <= G_N_ELEMENTS(entries); ++i) {
                static uint64_t ours[BLOOM_MAX_WORDS], lib[BLOOM_MAX_WORDS];
                const char *prefix = i < G_N_ELEMENTS(entries) ? entries[i][0] : "arg3";
                const char *value = i < G_N_ELEMENTS(entries) ? entries[i][1] : long_value;
                unsigned bits = 0, w;

                memset(ours, 0, sizeof(ours));
                memset(lib, 0, sizeof(lib));
                bloom_add(ours, bp, prefix, value);
                kdbus_bloom_add(lib, bp->size, bp->n_hash, prefix, value);
                g_assert_cmpmem(ours, sizeof(ours), lib, sizeof(lib));
                for (w = 0; w < bloom_words(bp); ++w)
                        bits += (unsigned)__builtin_popcountll(lib[w]);
                g_assert_cmpuint(bits, >=, 1);
                g_assert_cmpuint(bits, <=, bp->n_hash);
        }
}

int main(int argc, char **argv) {
        /* the default, and geometries BUS_MAKE / --native-bloom= may give a bus */
        static const BloomParams geo[] = { { BUS_BLOOM_SIZE, BUS_BLOOM_N_HASH }, { 8, 1 },
                                           { 24, 2 }, { 512, 3 }, { 4096, 64 },
                                           { 64, UINT64_MAX } };
        unsigned i;

        g_test_init(&argc, &argv, NULL);
        g_test_add_data_func("/native/bloom/libkdbus-equals-bus", &geo[0], test_same_bits);
        for (i = 1; i < G_N_ELEMENTS(geo); ++i) {
                char *name = g_strdup_printf("/native/bloom/libkdbus-equals-bus/%llu-%llu",
                                             (unsigned long long)geo[i].size,
                                             (unsigned long long)geo[i].n_hash);

                g_test_add_data_func(name, &geo[i], test_same_bits);
                g_free(name);
        }
        return g_test_run();
}
