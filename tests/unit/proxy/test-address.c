/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * D-Bus address parsing: entries, pairs, %-escapes, every error code, and the escaping
 * used when printing addresses (round trip).
 */
#include <string.h>
#include "proxy/address.h"
#include <glib.h>

static AddressList *parse_ok(const char *s) {
        AddressList *l = NULL;

        g_assert_cmpint(address_list_parse(s, &l), ==, 0);
        g_assert_nonnull(l);
        return l;
}

static void test_single(void) {
        AddressList *l = parse_ok("unix:path=/tmp/x");

        g_assert_cmpuint(l->n_entries, ==, 1);
        g_assert_cmpstr(l->entries[0].transport, ==, "unix");
        g_assert_cmpuint(l->entries[0].n_pairs, ==, 1);
        g_assert_cmpstr(address_entry_get(&l->entries[0], "path"), ==, "/tmp/x");
        g_assert_null(address_entry_get(&l->entries[0], "abstract"));
        address_list_free(l);
}

static void test_multiple(void) {
        AddressList *l = parse_ok("unix:path=/a,guid=0123;unix:abstract=foo;systemd:;");

        g_assert_cmpuint(l->n_entries, ==, 3);
        g_assert_cmpstr(address_entry_get(&l->entries[0], "guid"), ==, "0123");
        g_assert_cmpstr(address_entry_get(&l->entries[1], "abstract"), ==, "foo");
        g_assert_cmpstr(l->entries[2].transport, ==, "systemd");
        g_assert_cmpuint(l->entries[2].n_pairs, ==, 0);
        address_list_free(l);
}

static void test_escapes(void) {
        AddressList *l = parse_ok("unix:path=/tmp/a%20b%2cc%3bd%3De%25,abstract=%41%7a-_/.\\*");

        g_assert_cmpstr(address_entry_get(&l->entries[0], "path"), ==, "/tmp/a b,c;d=e%");
        g_assert_cmpstr(address_entry_get(&l->entries[0], "abstract"), ==, "Az-_/.\\*");
        address_list_free(l);
        l = parse_ok("unix:path=%c3%a4");
        g_assert_cmpstr(address_entry_get(&l->entries[0], "path"), ==, "\xc3\xa4");
        address_list_free(l);
        l = parse_ok("unix:path=");                     /* empty value parses */
        g_assert_cmpstr(address_entry_get(&l->entries[0], "path"), ==, "");
        address_list_free(l);
}

static void test_errors(void) {
        static const struct {
                const char *s;
                int r;
        } cases[] = {
                { "", ADDRESS_E_EMPTY },
                { ";", ADDRESS_E_EMPTY },
                { "unix:path=/a;;unix:path=/b", ADDRESS_E_EMPTY },
                { "unix:path=/a;;", ADDRESS_E_EMPTY },
                { "path=/a", ADDRESS_E_NO_TRANSPORT },
                { ":path=/a", ADDRESS_E_NO_TRANSPORT },
                { "unix:path", ADDRESS_E_BAD_PAIR },
                { "unix:=x", ADDRESS_E_BAD_PAIR },
                { "unix:path=/a,", ADDRESS_E_BAD_PAIR },
                { "unix:,path=/a", ADDRESS_E_BAD_PAIR },
                { "unix:path=/a%", ADDRESS_E_BAD_ESCAPE },
                { "unix:path=/a%2", ADDRESS_E_BAD_ESCAPE },
                { "unix:path=/a%zz", ADDRESS_E_BAD_ESCAPE },
                { "unix:path=/a%00", ADDRESS_E_BAD_ESCAPE },
                { "unix:path=/a b", ADDRESS_E_UNESCAPED },
                { "unix:path=/a=b", ADDRESS_E_UNESCAPED },
                { "unix:path=/a:b", ADDRESS_E_UNESCAPED },
                { "unix:path=\xc3\xa4", ADDRESS_E_UNESCAPED },
                { "unix:path=/a,path=/b", ADDRESS_E_DUPLICATE_KEY },
        };
        unsigned i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                AddressList *l = NULL;

                g_test_message("%s", cases[i].s);
                g_assert_cmpint(address_list_parse(cases[i].s, &l), ==, cases[i].r);
                g_assert_null(l);
        }
        for (i = 0; i < _ADDRESS_E_N; ++i)
                g_assert_nonnull(address_strerror((int)i));
        g_assert_cmpstr(address_strerror(99), ==, "unknown address error");
}

static void test_escape_round_trip(void) {
        static const char *const values[] = {
                "/tmp/plain", "a b,c;d=e%f", "\xc3\xa4\x01\x7f", "-_/.\\*AZaz09", "",
        };
        unsigned i;

        for (i = 0; i < G_N_ELEMENTS(values); ++i) {
                char buf[256] = "unix:path=";
                AddressList *l;

                g_assert_cmpint(address_escape_append(buf, sizeof(buf), values[i]), ==, 0);
                l = parse_ok(buf);
                g_assert_cmpstr(address_entry_get(&l->entries[0], "path"), ==, values[i]);
                address_list_free(l);
        }
}

static void test_escape_too_long(void) {
        char buf[8] = "ab";

        g_assert_cmpint(address_escape_append(buf, sizeof(buf), "cdefg"), ==, 0);
        g_assert_cmpstr(buf, ==, "abcdefg");
        strcpy(buf, "ab");
        g_assert_cmpint(address_escape_append(buf, sizeof(buf), "cdefgh"), ==, -ENAMETOOLONG);
        g_assert_cmpstr(buf, ==, "ab");
        g_assert_cmpint(address_escape_append(buf, sizeof(buf), "c d e"), ==, -ENAMETOOLONG);
        g_assert_cmpstr(buf, ==, "ab");
        g_assert_cmpint(address_escape_append(buf, sizeof(buf), " "), ==, 0);
        g_assert_cmpstr(buf, ==, "ab%20");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/proxy/address/single", test_single);
        g_test_add_func("/proxy/address/multiple", test_multiple);
        g_test_add_func("/proxy/address/escapes", test_escapes);
        g_test_add_func("/proxy/address/errors", test_errors);
        g_test_add_func("/proxy/address/escape-round-trip", test_escape_round_trip);
        g_test_add_func("/proxy/address/escape-too-long", test_escape_too_long);
        return g_test_run();
}
