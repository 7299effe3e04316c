/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include "util/siphash24.h"

/* Reference vectors of the SipHash paper: key 00..0f, message 00..(n-1). */
static void test_vectors(void) {
        uint8_t key[16], msg[64];
        unsigned i;

        for (i = 0; i < 16; ++i)
                key[i] = i;
        for (i = 0; i < 64; ++i)
                msg[i] = i;
        g_assert_cmphex(siphash24(msg, 0, key), ==, 0x726fdb47dd0e0e31ULL);
        g_assert_cmphex(siphash24(msg, 15, key), ==, 0xa129ca6149be45e5ULL);
        g_assert_cmphex(siphash24(msg, 8, key), ==, 0x93f5f5799a932462ULL);
}

static void test_string(void) {
        g_assert_cmphex(hash_string("org.example.Name"), ==, hash_string("org.example.Name"));
        g_assert_cmphex(hash_string("a"), !=, hash_string("b"));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/util/siphash24/vectors", test_vectors);
        g_test_add_func("/util/siphash24/string", test_string);
        return g_test_run();
}
