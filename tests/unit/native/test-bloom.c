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

static void test_same_bits(void) {
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
                uint64_t ours[BUS_BLOOM_WORDS] = { 0 }, lib[BUS_BLOOM_WORDS] = { 0 };
                const char *prefix = i < G_N_ELEMENTS(entries) ? entries[i][0] : "arg3";
                const char *value = i < G_N_ELEMENTS(entries) ? entries[i][1] : long_value;
                unsigned bits = 0, w;

                bloom_add(ours, prefix, value);
                kdbus_bloom_add(lib, BUS_BLOOM_SIZE, BUS_BLOOM_N_HASH, prefix, value);
                g_assert_cmpmem(ours, sizeof(ours), lib, sizeof(lib));
                for (w = 0; w < BUS_BLOOM_WORDS; ++w)
                        bits += (unsigned)__builtin_popcountll(lib[w]);
                g_assert_cmpuint(bits, >=, 1);
                g_assert_cmpuint(bits, <=, BUS_BLOOM_N_HASH);
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/native/bloom/libkdbus-equals-bus", test_same_bits);
        return g_test_run();
}
