/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <string.h>
#include "util/hex.h"
#include "util/sha1.h"

static void test_digit(void) {
        g_assert_cmpint(hex_digit('0'), ==, 0);
        g_assert_cmpint(hex_digit('9'), ==, 9);
        g_assert_cmpint(hex_digit('a'), ==, 10);
        g_assert_cmpint(hex_digit('F'), ==, 15);
        g_assert_cmpint(hex_digit('g'), ==, -1);
        g_assert_cmpint(hex_digit(' '), ==, -1);
        g_assert_cmpint(hex_digit('\0'), ==, -1);
}

static void test_round_trip(void) {
        const uint8_t bytes[] = { 0x00, 0x7f, 0x80, 0xff, 0x30 };
        char text[2 * sizeof(bytes) + 1];
        uint8_t back[sizeof(bytes)];

        hex_encode(bytes, sizeof(bytes), text);
        g_assert_cmpstr(text, ==, "007f80ff30");
        g_assert_cmpint(hex_decode(text, strlen(text), back), ==, sizeof(bytes));
        g_assert_cmpmem(back, sizeof(back), bytes, sizeof(bytes));
        g_assert_cmpint(hex_decode("7F80", 4, back), ==, 2);       /* upper case too */
        g_assert_cmphex(back[0], ==, 0x7f);
        g_assert_cmphex(back[1], ==, 0x80);
        hex_encode(bytes, 0, text);
        g_assert_cmpstr(text, ==, "");
}

/* what libdbus does: an odd last digit is a high half; anything not a digit fails */
static void test_decode_edges(void) {
        uint8_t out[4] = { 0xaa, 0xaa, 0xaa, 0xaa };

        g_assert_cmpint(hex_decode("3", 1, out), ==, 1);
        g_assert_cmphex(out[0], ==, 0x30);
        g_assert_cmpint(hex_decode("313", 3, out), ==, 2);
        g_assert_cmphex(out[1], ==, 0x30);
        g_assert_cmpint(hex_decode("", 0, out), ==, 0);
        g_assert_cmpint(hex_decode("3x30", 4, out), ==, -1);
        g_assert_cmpint(hex_decode("30 ", 3, out), ==, -1);
        g_assert_cmpint(hex_decode("zz", 2, out), ==, -1);
}

static void sha1_hex(const void *data, size_t n, char ret[2 * SHA1_DIGEST_SIZE + 1]) {
        uint8_t d[SHA1_DIGEST_SIZE];
        Sha1 s;

        sha1_init(&s);
        sha1_update(&s, data, n);
        sha1_final(&s, d);
        hex_encode(d, sizeof(d), ret);
}

/* FIPS 180 examples and the padding boundaries (55, 56, 64 bytes) */
static void test_sha1(void) {
        char h[2 * SHA1_DIGEST_SIZE + 1];
        char *million;
        uint8_t d[SHA1_DIGEST_SIZE];
        Sha1 s;

        sha1_hex("", 0, h);
        g_assert_cmpstr(h, ==, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        sha1_hex("abc", 3, h);
        g_assert_cmpstr(h, ==, "a9993e364706816aba3e25717850c26c9cd0d89d");
        sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
        g_assert_cmpstr(h, ==, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
        million = g_malloc(1000000);
        memset(million, 'a', 1000000);
        /* in uneven pieces: the block buffer must carry over */
        sha1_init(&s);
        for (size_t off = 0; off < 1000000; off += 777)
                sha1_update(&s, million + off, MIN(777, 1000000 - off));
        sha1_final(&s, d);
        hex_encode(d, sizeof(d), h);
        g_assert_cmpstr(h, ==, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
        g_free(million);
        sha1_hex("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 64, h);
        g_assert_cmpstr(h, ==, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
        sha1_hex("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 55, h);
        g_assert_cmpstr(h, ==, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/util/hex/digit", test_digit);
        g_test_add_func("/util/hex/round-trip", test_round_trip);
        g_test_add_func("/util/hex/decode-edges", test_decode_edges);
        g_test_add_func("/util/sha1/vectors", test_sha1);
        return g_test_run();
}
