/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl's pure parts: busctl-syntax arguments -> message body -> printed text (the
 * round trip must give back the tokens), every kind of malformed argument list with the
 * exact code and the token blamed, D-Bus address entries, and the pcap byte layout.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"

/* Build a call with @sig/@args, validate it with wire/, print the body. */
static char *roundtrip(const char *sig, const char *args, int *ret_code, int *ret_index) {
        g_auto(GStrv) tokens = args[0] ? g_strsplit(args, " ", -1) : g_new0(char *, 1);
        CtlArgsError err = { .index = -42 };
        WireMsgSpec spec = {
                .type = WIRE_MSG_METHOD_CALL, .serial = 1, .path = "/", .member = "M",
        };
        WireHeader hdr;
        WireWriter w;
        uint8_t *data = NULL;
        size_t size;
        char *out = NULL;
        size_t out_size;
        FILE *f;
        int r;

        wire_writer_init(&w);
        r = ctl_args_append(&w, sig, tokens, (int)g_strv_length(tokens), &err);
        *ret_code = r;
        *ret_index = err.index;
        if (r) {
                g_assert_cmpstr(err.text, !=, "");
                /* the offending token is shown escaped, so the text is always printable */
                g_assert_true(g_utf8_validate(err.text, -1, NULL));
                g_test_message("%s: %s", sig, err.text);
                wire_writer_deinit(&w);
                return NULL;
        }
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hdr), ==, 0);
        f = open_memstream(&out, &out_size);
        g_assert_nonnull(f);
        g_assert_cmpint(ctl_print_body(f, data, &hdr), ==, 0);
        fclose(f);
        free(data);
        return out;
}

static void test_args_roundtrip(void) {
        static const struct {
                const char *sig, *args, *printed;
        } cases[] = {
                { "", "", "" },
                { "s", "hello", "s \"hello\"\n" },
                { "s", "", NULL },      /* one empty token is an empty string: see below */
                { "ybnqiuxtd", "255 true -32768 65535 -2147483648 4294967295 "
                  "-9223372036854775808 18446744073709551615 1.5",
                  "ybnqiuxtd 255 true -32768 65535 -2147483648 4294967295 "
                  "-9223372036854775808 18446744073709551615 1.5\n" },
                { "bbbb", "yes off 1 false", "bbbb true false true false\n" },
                { "og", "/org/x a{sv}", "og \"/org/x\" \"a{sv}\"\n" },
                { "as", "0", "as 0\n" },
                { "as", "3 a b c", "as 3 \"a\" \"b\" \"c\"\n" },
                { "a{sv}", "2 Name s x Size u 3", "a{sv} 2 \"Name\" s \"x\" \"Size\" u 3\n" },
                { "v", "as 2 x y", "v as 2 \"x\" \"y\"\n" },
                { "vv", "v v i 7 s z", "vv v v i 7 s \"z\"\n" },
                { "(is)a(ii)", "1 one 2 3 4 5 6", "(is)a(ii) 1 \"one\" 2 3 4 5 6\n" },
                { "aas", "2 1 a 0", "aas 2 1 \"a\" 0\n" },
                { "a{s(uv)}", "1 k 7 b true", "a{s(uv)} 1 \"k\" 7 b true\n" },
                { "s", "quote\"back\\slash", "s \"quote\\\"back\\\\slash\"\n" },
                { "s", "gr\xc3\xbc\xc3\x9f", "s \"gr\xc3\xbc\xc3\x9f\"\n" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); ++i) {
                int code, index;
                g_autofree char *out = NULL;

                if (!cases[i].printed)
                        continue;
                out = roundtrip(cases[i].sig, cases[i].args, &code, &index);
                g_assert_cmpint(code, ==, 0);
                g_assert_cmpstr(out ? out : "", ==, cases[i].printed);
        }
}

/* The empty string as a value: a token of its own, not an absent token. */
static void test_args_empty_string(void) {
        char *tokens[] = { (char *)"", NULL };
        CtlArgsError err;
        WireWriter w;

        wire_writer_init(&w);
        g_assert_cmpint(ctl_args_append(&w, "s", tokens, 1, &err), ==, 0);
        wire_writer_deinit(&w);
        wire_writer_init(&w);
        g_assert_cmpint(ctl_args_append(&w, "s", tokens, 0, &err), ==, CTL_ARGS_E_MISSING);
        g_assert_cmpint(err.index, ==, 0);
        wire_writer_deinit(&w);
}

static void test_args_malformed(void) {
        static const struct {
                const char *sig, *args;
                int code, index;
        } cases[] = {
                /* bad signatures */
                { "a", "0", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "(", "", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "()", "", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "{ss}", "a b", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "a{vs}", "0", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "z", "1", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "(ss", "a b", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaas", "0", CTL_ARGS_E_BAD_SIGNATURE, -1 },
                /* too few tokens */
                { "s", "", CTL_ARGS_E_MISSING, 0 },
                { "ss", "a", CTL_ARGS_E_MISSING, 1 },
                { "as", "3 a b", CTL_ARGS_E_MISSING, 0 },
                { "as", "4294967295", CTL_ARGS_E_MISSING, 0 },
                { "v", "", CTL_ARGS_E_MISSING, 0 },
                { "v", "s", CTL_ARGS_E_MISSING, 1 },
                { "(ii)", "1", CTL_ARGS_E_MISSING, 1 },
                /* too many */
                { "s", "a b", CTL_ARGS_E_TRAILING, 1 },
                { "", "x", CTL_ARGS_E_TRAILING, 0 },
                { "as", "1 a b", CTL_ARGS_E_TRAILING, 2 },
                /* values out of range or of the wrong form */
                { "y", "256", CTL_ARGS_E_BAD_VALUE, 0 },
                { "y", "-1", CTL_ARGS_E_BAD_VALUE, 0 },
                { "n", "32768", CTL_ARGS_E_BAD_VALUE, 0 },
                { "q", "-0", CTL_ARGS_E_BAD_VALUE, 0 },
                { "i", "2147483648", CTL_ARGS_E_BAD_VALUE, 0 },
                { "u", "4294967296", CTL_ARGS_E_BAD_VALUE, 0 },
                { "u", "12abc", CTL_ARGS_E_BAD_VALUE, 0 },
                { "x", "9223372036854775808", CTL_ARGS_E_BAD_VALUE, 0 },
                { "t", "18446744073709551616", CTL_ARGS_E_BAD_VALUE, 0 },
                { "t", "+5", CTL_ARGS_E_BAD_VALUE, 0 },
                { "d", "1.5x", CTL_ARGS_E_BAD_VALUE, 0 },
                { "d", "nan", CTL_ARGS_E_BAD_VALUE, 0 },
                { "b", "maybe", CTL_ARGS_E_BAD_VALUE, 0 },
                { "b", "TRUE", CTL_ARGS_E_BAD_VALUE, 0 },
                { "o", "not/a/path", CTL_ARGS_E_BAD_VALUE, 0 },
                { "o", "/trailing/", CTL_ARGS_E_BAD_VALUE, 0 },
                { "g", "a{", CTL_ARGS_E_BAD_VALUE, 0 },
                { "s", "\xff\xfe", CTL_ARGS_E_BAD_VALUE, 0 },
                { "as", "two a b", CTL_ARGS_E_BAD_VALUE, 0 },
                { "as", "-1", CTL_ARGS_E_BAD_VALUE, 0 },
                { "si", "a 1 ", CTL_ARGS_E_TRAILING, 2 },
                { "a{si}", "1 k x", CTL_ARGS_E_BAD_VALUE, 2 },
                /* variants: the signature token must be one complete type */
                { "v", "ss a b", CTL_ARGS_E_BAD_SIGNATURE, 0 },
                { "v", "a{ s", CTL_ARGS_E_BAD_SIGNATURE, 0 },
                { "v", "_ 1", CTL_ARGS_E_BAD_SIGNATURE, 0 },
                { "sv", "k i x", CTL_ARGS_E_BAD_VALUE, 2 },
                /* fds are not passed */
                { "h", "0", CTL_ARGS_E_UNSUPPORTED, 0 },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); ++i) {
                int code = -1, index = -2;
                g_autofree char *out = NULL;

                out = roundtrip(cases[i].sig, cases[i].args, &code, &index);
                if (code != cases[i].code || index != cases[i].index)
                        g_error("case %zu \"%s\" [%s]: code %d index %d, expected %d %d", i,
                                cases[i].sig, cases[i].args, code, index, cases[i].code,
                                cases[i].index);
                g_assert_null(out);
        }
}

/* A variant inside a variant inside ...: the parser stops at its depth limit, no crash. */
static void test_args_deep_variants(void) {
        enum { N = 200 };
        char *tokens[N + 2];
        CtlArgsError err;
        WireWriter w;
        int r;

        for (int i = 0; i < N; ++i)
                tokens[i] = (char *)"v";
        tokens[N] = (char *)"s";
        tokens[N + 1] = (char *)"x";
        wire_writer_init(&w);
        r = ctl_args_append(&w, "v", tokens, N + 2, &err);
        wire_writer_deinit(&w);
        g_assert_cmpint(r, ==, CTL_ARGS_E_BAD_VALUE);
        g_test_message("%s", err.text);
}

static void test_address(void) {
        char path[108];
        bool abstract = true;

        g_assert_cmpint(ctl_address_parse_entry("unix:path=/run/x,guid=00ff", path,
                                                sizeof(path), &abstract), ==, 0);
        g_assert_cmpstr(path, ==, "/run/x");
        g_assert_false(abstract);
        g_assert_cmpint(ctl_address_parse_entry("unix:guid=1,abstract=/tmp/dbus-a%2cb;x", path,
                                                sizeof(path), &abstract), ==, 0);
        g_assert_cmpstr(path, ==, "/tmp/dbus-a,b");
        g_assert_true(abstract);
        g_assert_cmpint(ctl_address_parse_entry("tcp:host=x,port=1", path, sizeof(path),
                                                &abstract), ==, CTL_ADDR_E_TRANSPORT);
        g_assert_cmpint(ctl_address_parse_entry("unix:path", path, sizeof(path), &abstract),
                        ==, CTL_ADDR_E_SYNTAX);
        g_assert_cmpint(ctl_address_parse_entry("unix:path=", path, sizeof(path), &abstract),
                        ==, CTL_ADDR_E_SYNTAX);
        g_assert_cmpint(ctl_address_parse_entry("unix:path=/a%4", path, sizeof(path),
                                                &abstract), ==, CTL_ADDR_E_SYNTAX);
        g_assert_cmpint(ctl_address_parse_entry("unix:path=/a%zz", path, sizeof(path),
                                                &abstract), ==, CTL_ADDR_E_SYNTAX);
        g_assert_cmpint(ctl_address_parse_entry("unix:path=/a,path=/b", path, sizeof(path),
                                                &abstract), ==, CTL_ADDR_E_SYNTAX);
        g_assert_cmpint(ctl_address_parse_entry("unix:tmpdir=/tmp", path, sizeof(path),
                                                &abstract), ==, CTL_ADDR_E_NO_PATH);
        g_assert_cmpint(ctl_address_parse_entry("unix:path=/0123456789", path, 8, &abstract),
                        ==, CTL_ADDR_E_TOO_LONG);
}

static void test_pcap(void) {
        static const uint8_t msg[] = { 'l', 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 };
        char *out = NULL;
        size_t size;
        uint32_t w[10];
        FILE *f;

        f = open_memstream(&out, &size);
        g_assert_cmpint(ctl_pcap_write_header(f), ==, 0);
        g_assert_cmpint(ctl_pcap_write_record(f, msg, sizeof(msg), 1234567890123456ull), ==, 0);
        fclose(f);
        g_assert_cmpuint(size, ==, 24 + 16 + sizeof(msg));
        memcpy(w, out, sizeof(w));
        g_assert_cmpuint(w[0], ==, 0xa1b2c3d4u);                 /* host order magic */
        g_assert_cmpuint(w[1], ==, 2u | (4u << 16));            /* version 2.4 (LE host) */
        g_assert_cmpuint(w[5], ==, 231u);                       /* LINKTYPE_DBUS */
        g_assert_cmpuint(w[6], ==, 1234567890u);                /* ts_sec */
        g_assert_cmpuint(w[7], ==, 123456u);                    /* ts_usec */
        g_assert_cmpuint(w[8], ==, sizeof(msg));
        g_assert_cmpuint(w[9], ==, sizeof(msg));
        g_assert_cmpmem(out + 40, sizeof(msg), msg, sizeof(msg));
        free(out);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/tools/kdbusctl/args-roundtrip", test_args_roundtrip);
        g_test_add_func("/tools/kdbusctl/args-empty-string", test_args_empty_string);
        g_test_add_func("/tools/kdbusctl/args-malformed", test_args_malformed);
        g_test_add_func("/tools/kdbusctl/args-deep-variants", test_args_deep_variants);
        g_test_add_func("/tools/kdbusctl/address", test_address);
        g_test_add_func("/tools/kdbusctl/pcap", test_pcap);
        return g_test_run();
}
