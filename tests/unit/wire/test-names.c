/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The name, signature and UTF-8 validators of wire/names.h. */
#include <dbus/dbus.h>
#include <glib.h>
#include <string.h>
#include "wire/names.h"
#include "wire/signature.h"
#include "wire/message.h"

#define V(fn, s) fn((s), strlen(s))

static void test_bus_names(void) {
        char long_name[300];

        g_assert_true(V(wire_bus_name_is_valid, "org.freedesktop.DBus"));
        g_assert_true(V(wire_bus_name_is_valid, "a.b"));
        g_assert_true(V(wire_bus_name_is_valid, "a-b._c.d1"));
        g_assert_true(V(wire_bus_name_is_valid, ":1.0"));
        g_assert_true(V(wire_bus_name_is_valid, ":1.2.3"));
        g_assert_true(V(wire_bus_name_is_valid, ":a-b.9"));
        g_assert_false(V(wire_bus_name_is_valid, ""));
        g_assert_false(V(wire_bus_name_is_valid, "a"));
        g_assert_false(V(wire_bus_name_is_valid, ".a.b"));
        g_assert_false(V(wire_bus_name_is_valid, "a.b."));
        g_assert_false(V(wire_bus_name_is_valid, "a..b"));
        g_assert_false(V(wire_bus_name_is_valid, "a.1b"));
        g_assert_false(V(wire_bus_name_is_valid, "1a.b"));
        g_assert_false(V(wire_bus_name_is_valid, "a.b$"));
        /* unique names as libdbus (dbus-daemon 1.14.10) accepts them in DESTINATION and
         * SENDER: ":", ":1", ":.1" get ServiceUnknown there, the others a disconnect */
        g_assert_true(V(wire_bus_name_is_valid, ":"));
        g_assert_true(V(wire_bus_name_is_valid, ":1"));
        g_assert_true(V(wire_bus_name_is_valid, ":.1"));
        g_assert_true(V(wire_bus_name_is_valid, ":a.b"));
        g_assert_true(V(wire_bus_name_is_valid, ":-._"));
        g_assert_false(V(wire_bus_name_is_valid, ":1."));
        g_assert_false(V(wire_bus_name_is_valid, ":."));
        g_assert_false(V(wire_bus_name_is_valid, ":1..2"));
        g_assert_false(V(wire_bus_name_is_valid, "::1.1"));
        g_assert_false(V(wire_bus_name_is_valid, ":1.2:3"));
        g_assert_false(wire_bus_name_is_valid(":1\0", 3));
        g_assert_false(wire_bus_name_is_valid("a.b\0c", 5));
        g_assert_true(V(wire_unique_name_is_valid, ":1.5"));
        g_assert_false(V(wire_unique_name_is_valid, "a.b"));
        g_assert_true(V(wire_well_known_name_is_valid, "a.b"));
        g_assert_false(V(wire_well_known_name_is_valid, ":1.5"));

        memset(long_name, 'a', sizeof(long_name));
        long_name[1] = '.';
        g_assert_true(wire_bus_name_is_valid(long_name, 255));
        g_assert_false(wire_bus_name_is_valid(long_name, 256));
        long_name[0] = ':';
        long_name[1] = '1';
        long_name[2] = '.';
        g_assert_true(wire_bus_name_is_valid(long_name, 255));
        g_assert_false(wire_bus_name_is_valid(long_name, 256));
}

/*
 * Our bus-name validator against libdbus's (the one dbus-daemon validates DESTINATION and
 * SENDER with): random short strings over the characters that matter, and long ones around
 * the 255-byte limit.
 */
static void test_bus_names_libdbus(void) {
        static const char alphabet[] = ":.-_a1Z\xc3\xa9";
        GRand *rnd = g_rand_new_with_seed(0x6b646275);
        char buf[300];
        unsigned i, n_valid = 0;

        for (i = 0; i < 200000; ++i) {
                size_t len = g_rand_int_range(rnd, 0, 9), j;
                bool ours;

                if (i % 1000 == 0)
                        len = 250 + g_rand_int_range(rnd, 0, 10);
                for (j = 0; j < len; ++j)
                        buf[j] = alphabet[g_rand_int_range(rnd, 0, sizeof(alphabet) - 1)];
                if (i % 1000 == 0 && len > 3) {
                        buf[0] = g_rand_boolean(rnd) ? ':' : 'a';
                        for (j = 1; j < len; ++j)
                                buf[j] = (j % 7 == 3) ? '.' : 'b';
                }
                buf[len] = '\0';
                ours = wire_bus_name_is_valid(buf, len);
                if (ours != !!dbus_validate_bus_name(buf, NULL))
                        g_error("bus name \"%s\" (%zu bytes): ours %d, libdbus %d", buf, len,
                                ours, !ours);
                n_valid += ours;
        }
        g_assert_cmpuint(n_valid, >, 1000);
        g_rand_free(rnd);
}

static void test_interface_member(void) {
        g_assert_true(V(wire_interface_is_valid, "org.freedesktop.DBus"));
        g_assert_true(V(wire_interface_is_valid, "_a._1"));
        g_assert_false(V(wire_interface_is_valid, "org"));
        g_assert_false(V(wire_interface_is_valid, "org.a-b"));
        g_assert_false(V(wire_interface_is_valid, "org.1a"));
        g_assert_false(V(wire_interface_is_valid, ":org.a"));
        g_assert_false(V(wire_interface_is_valid, "org..a"));
        g_assert_false(V(wire_interface_is_valid, ""));
        g_assert_true(V(wire_error_name_is_valid, "org.freedesktop.DBus.Error.Failed"));
        g_assert_false(V(wire_error_name_is_valid, "Failed"));
        g_assert_true(V(wire_member_is_valid, "Hello"));
        g_assert_true(V(wire_member_is_valid, "_a1"));
        g_assert_false(V(wire_member_is_valid, ""));
        g_assert_false(V(wire_member_is_valid, "1a"));
        g_assert_false(V(wire_member_is_valid, "a.b"));
        g_assert_false(V(wire_member_is_valid, "a-b"));
        g_assert_false(wire_member_is_valid("a\0", 2));
}

static void test_paths(void) {
        g_assert_true(V(wire_path_is_valid, "/"));
        g_assert_true(V(wire_path_is_valid, "/a"));
        g_assert_true(V(wire_path_is_valid, "/a_1/B/9"));
        g_assert_false(V(wire_path_is_valid, ""));
        g_assert_false(V(wire_path_is_valid, "a"));
        g_assert_false(V(wire_path_is_valid, "//"));
        g_assert_false(V(wire_path_is_valid, "/a/"));
        g_assert_false(V(wire_path_is_valid, "/a//b"));
        g_assert_false(V(wire_path_is_valid, "/a.b"));
        g_assert_false(V(wire_path_is_valid, "/a-b"));
        g_assert_false(wire_path_is_valid("/a\0", 3));
}

static void test_signatures(void) {
        char sig[300];

        g_assert_true(V(wire_signature_is_valid, ""));
        g_assert_true(V(wire_signature_is_valid, "ybnqiuxtdsogh"));
        g_assert_true(V(wire_signature_is_valid, "a{sv}a(ii)aav(s(t))"));
        g_assert_true(V(wire_signature_is_valid, "a{ya{sv}}"));
        g_assert_false(V(wire_signature_is_valid, "a"));
        g_assert_false(V(wire_signature_is_valid, "aa"));
        g_assert_false(V(wire_signature_is_valid, "("));
        g_assert_false(V(wire_signature_is_valid, ")"));
        g_assert_false(V(wire_signature_is_valid, "()"));
        g_assert_false(V(wire_signature_is_valid, "(i"));
        g_assert_false(V(wire_signature_is_valid, "{sv}"));
        g_assert_false(V(wire_signature_is_valid, "a{}"));
        g_assert_false(V(wire_signature_is_valid, "a{s}"));
        g_assert_false(V(wire_signature_is_valid, "a{svs}"));
        g_assert_false(V(wire_signature_is_valid, "a{vs}"));
        g_assert_false(V(wire_signature_is_valid, "a{(s)s}"));
        g_assert_false(V(wire_signature_is_valid, "a{sv"));
        g_assert_false(V(wire_signature_is_valid, "r"));
        g_assert_false(V(wire_signature_is_valid, "e"));
        g_assert_false(V(wire_signature_is_valid, "m"));
        g_assert_false(V(wire_signature_is_valid, "*"));
        g_assert_false(wire_signature_is_valid("s\0", 2));
        g_assert_true(V(wire_signature_is_single, "a{sv}"));
        g_assert_true(V(wire_signature_is_single, "(ss)"));
        g_assert_false(V(wire_signature_is_single, ""));
        g_assert_false(V(wire_signature_is_single, "ss"));

        g_assert_cmpint(wire_signature_check("ss", 2, true), ==, WIRE_E_BAD_VARIANT);
        g_assert_cmpint(wire_signature_check("", 0, true), ==, WIRE_E_BAD_VARIANT);
        g_assert_cmpint(wire_signature_check("s(", 2, true), ==, WIRE_E_BAD_SIGNATURE);
        g_assert_cmpint(wire_signature_check("{ss}", 4, false), ==, WIRE_E_BAD_DICT);

        memset(sig, 'y', sizeof(sig));
        g_assert_true(wire_signature_is_valid(sig, 255));
        g_assert_false(wire_signature_is_valid(sig, 256));
        memset(sig, 'a', 32);
        g_assert_true(wire_signature_is_valid(sig, 33));
        memset(sig, 'a', 33);
        g_assert_cmpint(wire_signature_check(sig, 34, false), ==, WIRE_E_TOO_DEEP);
        /* 32 dict entries inside arrays: 32 arrays + 32 structs */
        {
                GString *s = g_string_new(NULL);
                int i;

                for (i = 0; i < 32; ++i)
                        g_string_append(s, "a{s");
                g_string_append(s, "y");
                for (i = 0; i < 32; ++i)
                        g_string_append(s, "}");
                g_assert_cmpint(wire_signature_check(s->str, s->len, false), ==, 0);
                g_string_insert(s, 0, "a");
                g_assert_cmpint(wire_signature_check(s->str, s->len, false), ==, WIRE_E_TOO_DEEP);
                g_string_free(s, TRUE);
                s = g_string_new(NULL);
                for (i = 0; i < 32; ++i)
                        g_string_append(s, "(");
                g_string_append(s, "y");
                for (i = 0; i < 32; ++i)
                        g_string_append(s, ")");
                g_assert_cmpint(wire_signature_check(s->str, s->len, true), ==, 0);
                g_string_insert(s, 0, "a(");
                g_string_append(s, ")");
                g_assert_cmpint(wire_signature_check(s->str, s->len, true), ==, WIRE_E_TOO_DEEP);
                g_string_free(s, TRUE);
        }
        g_assert_cmpuint(wire_signature_type_len("a{sv}s"), ==, 5);
        g_assert_cmpuint(wire_signature_type_len("(a(i)s)y"), ==, 7);
        g_assert_cmpuint(wire_signature_type_len("aay"), ==, 3);
        g_assert_cmpuint(wire_signature_type_len("v"), ==, 1);
}

static void test_utf8(void) {
        g_assert_true(V(wire_utf8_is_valid, ""));
        g_assert_true(V(wire_utf8_is_valid, "plain ascii, longer than eight bytes"));
        g_assert_true(V(wire_utf8_is_valid, "\xc2\x80"));
        g_assert_true(V(wire_utf8_is_valid, "\xdf\xbf"));
        g_assert_true(V(wire_utf8_is_valid, "\xe0\xa0\x80"));
        g_assert_true(V(wire_utf8_is_valid, "\xed\x9f\xbf"));           /* U+D7FF */
        g_assert_true(V(wire_utf8_is_valid, "\xee\x80\x80"));           /* U+E000 */
        g_assert_true(V(wire_utf8_is_valid, "\xef\xbf\xbf"));           /* U+FFFF */
        g_assert_true(V(wire_utf8_is_valid, "\xf0\x90\x80\x80"));
        g_assert_true(V(wire_utf8_is_valid, "\xf4\x8f\xbf\xbf"));       /* U+10FFFF */
        g_assert_true(V(wire_utf8_is_valid, "abcdefgh\xc3\xa9ijklmnop"));
        g_assert_false(wire_utf8_is_valid("a\0b", 3));
        g_assert_false(wire_utf8_is_valid("abcdefg\0hijklmn", 15));     /* NUL in a fast word */
        g_assert_false(V(wire_utf8_is_valid, "\x80"));
        g_assert_false(V(wire_utf8_is_valid, "\xbf"));
        g_assert_false(V(wire_utf8_is_valid, "\xc0\x80"));              /* overlong NUL */
        g_assert_false(V(wire_utf8_is_valid, "\xc1\xbf"));
        g_assert_false(V(wire_utf8_is_valid, "\xe0\x9f\xbf"));          /* overlong */
        g_assert_false(V(wire_utf8_is_valid, "\xed\xa0\x80"));          /* U+D800 */
        g_assert_false(V(wire_utf8_is_valid, "\xed\xbf\xbf"));          /* U+DFFF */
        g_assert_false(V(wire_utf8_is_valid, "\xf0\x8f\xbf\xbf"));      /* overlong */
        g_assert_false(V(wire_utf8_is_valid, "\xf4\x90\x80\x80"));      /* U+110000 */
        g_assert_false(V(wire_utf8_is_valid, "\xf5\x80\x80\x80"));
        g_assert_false(V(wire_utf8_is_valid, "\xff"));
        g_assert_false(V(wire_utf8_is_valid, "\xe2\x82"));              /* cut */
        g_assert_false(V(wire_utf8_is_valid, "\xe2\x28\xa1"));
        g_assert_false(V(wire_utf8_is_valid, "\xf0\x90\x80"));
        g_assert_false(V(wire_utf8_is_valid, "\xf0\x90\x80\x20"));
        g_assert_false(wire_utf8_is_valid("\xc3\xa9", 1));             /* length cuts it */
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/names/bus-names", test_bus_names);
        g_test_add_func("/wire/names/bus-names-libdbus", test_bus_names_libdbus);
        g_test_add_func("/wire/names/interface-member", test_interface_member);
        g_test_add_func("/wire/names/paths", test_paths);
        g_test_add_func("/wire/names/signatures", test_signatures);
        g_test_add_func("/wire/names/utf8", test_utf8);
        return g_test_run();
}
