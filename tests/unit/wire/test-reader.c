/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* wire/reader.h on parsed messages of both byte orders. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include "raw.h"
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/writer.h"

/* a body "ynqiuxtdbsoga(yu)a{sv}" written by raw.h in either order */
static uint8_t *make(bool be, size_t *size, WireHeader *h) {
        uint8_t *m;
        size_t len_at, start;
        Raw r;

        raw_call(&r, be, "ynqixtdbsoga(yu)a{sv}vh");
        raw_field_u(&r, 9, 1);
        raw_fields_end(&r);
        raw_y(&r, 0xab);
        raw_u16(&r, (uint16_t)-7);
        raw_u16(&r, 0xbeef);
        raw_u32(&r, (uint32_t)-100000);
        raw_u64(&r, (uint64_t)-5000000000ll);
        raw_u64(&r, 0x0102030405060708ull);
        {
                double d = -1.25;
                uint64_t v;

                memcpy(&v, &d, 8);
                raw_u64(&r, v);
        }
        raw_u32(&r, 1);
        raw_s(&r, "str");
        raw_s(&r, "/obj");
        raw_g(&r, "a{sv}");
        raw_u32(&r, 0);
        len_at = r.a->len - 4;
        raw_pad(&r, 8);
        start = r.a->len;
        raw_y(&r, 1);
        raw_u32(&r, 11);
        raw_pad(&r, 8);
        raw_y(&r, 2);
        raw_u32(&r, 22);
        raw_set_u32(&r, len_at, (uint32_t)(r.a->len - start));
        raw_u32(&r, 0);
        len_at = r.a->len - 4;
        raw_pad(&r, 8);
        start = r.a->len;
        raw_s(&r, "key");
        raw_g(&r, "u");
        raw_u32(&r, 33);
        raw_set_u32(&r, len_at, (uint32_t)(r.a->len - start));
        raw_g(&r, "s");
        raw_s(&r, "in variant");
        raw_u32(&r, 0);
        m = raw_finish(&r, size);
        g_assert_cmpint(wire_message_parse(m, *size, 1, 0, h), ==, 0);
        return m;
}

static void test_read_all(void) {
        for (int be = 0; be < 2; ++be) {
                WireHeader h;
                WireReader r;
                uint8_t *m, y;
                size_t size;
                int16_t n;
                uint16_t q;
                int32_t i;
                uint32_t u, b;
                int64_t x;
                uint64_t t;
                double d;
                const char *s;

                m = make(be, &size, &h);
                wire_reader_init(&r, m, &h);
                g_assert_cmpint(wire_reader_peek(&r), ==, 'y');
                g_assert_cmpint(wire_reader_read_basic(&r, 'n', &n), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(wire_reader_enter(&r, 'a', NULL), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(wire_reader_read_basic(&r, 'y', &y), ==, 0);
                g_assert_cmpuint(y, ==, 0xab);
                g_assert_cmpint(wire_reader_read_basic(&r, 'n', &n), ==, 0);
                g_assert_cmpint(n, ==, -7);
                g_assert_cmpint(wire_reader_read_basic(&r, 'q', &q), ==, 0);
                g_assert_cmpuint(q, ==, 0xbeef);
                g_assert_cmpint(wire_reader_read_basic(&r, 'i', &i), ==, 0);
                g_assert_cmpint(i, ==, -100000);
                g_assert_cmpint(wire_reader_read_basic(&r, 'x', &x), ==, 0);
                g_assert_cmpint(x, ==, -5000000000ll);
                g_assert_cmpint(wire_reader_read_basic(&r, 't', &t), ==, 0);
                g_assert_cmpuint(t, ==, 0x0102030405060708ull);
                g_assert_cmpint(wire_reader_read_basic(&r, 'd', &d), ==, 0);
                g_assert_cmpfloat(d, ==, -1.25);
                g_assert_cmpint(wire_reader_read_basic(&r, 'b', &b), ==, 0);
                g_assert_cmpuint(b, ==, 1);
                g_assert_cmpint(wire_reader_read_basic(&r, 's', &s), ==, 0);
                g_assert_cmpstr(s, ==, "str");
                g_assert_cmpint(wire_reader_read_basic(&r, 'o', &s), ==, 0);
                g_assert_cmpstr(s, ==, "/obj");
                g_assert_cmpint(wire_reader_read_basic(&r, 'g', &s), ==, 0);
                g_assert_cmpstr(s, ==, "a{sv}");
                g_assert_cmpint(wire_reader_enter(&r, 'a', "(yi)"), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(wire_reader_enter(&r, 'a', "(yu)"), ==, 0);
                g_assert_cmpint(wire_reader_enter(&r, '(', "yu"), ==, 0);
                g_assert_cmpint(wire_reader_read_basic(&r, 'y', &y), ==, 0);
                g_assert_cmpuint(y, ==, 1);
                g_assert_cmpint(wire_reader_read_basic(&r, 'u', &u), ==, 0);
                g_assert_cmpuint(u, ==, 11);
                g_assert_cmpint(wire_reader_peek(&r), ==, 0);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_assert_cmpint(wire_reader_peek(&r), ==, '(');
                g_assert_cmpint(wire_reader_enter(&r, '(', NULL), ==, 0);
                g_assert_cmpint(wire_reader_read_basic(&r, 'y', &y), ==, 0);
                g_assert_cmpuint(y, ==, 2);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);     /* skips the u */
                g_assert_cmpint(wire_reader_peek(&r), ==, 0);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_assert_cmpint(wire_reader_enter(&r, 'a', "{sv}"), ==, 0);
                g_assert_cmpint(wire_reader_enter(&r, '{', "sv"), ==, 0);
                g_assert_cmpint(wire_reader_read_basic(&r, 's', &s), ==, 0);
                g_assert_cmpstr(s, ==, "key");
                g_assert_cmpint(wire_reader_enter(&r, 'v', "s"), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(wire_reader_enter(&r, 'v', "u"), ==, 0);
                g_assert_cmpint(wire_reader_read_basic(&r, 'u', &u), ==, 0);
                g_assert_cmpuint(u, ==, 33);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_assert_cmpint(wire_reader_skip(&r), ==, 0);     /* the variant */
                g_assert_cmpint(wire_reader_read_basic(&r, 'h', &u), ==, 0);
                g_assert_cmpuint(u, ==, 0);
                g_assert_cmpint(wire_reader_peek(&r), ==, 0);
                g_assert_cmpuint(r.pos, ==, h.body_size);
                g_assert_cmpint(wire_reader_skip(&r), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(wire_reader_exit(&r), ==, WIRE_E_BAD_SIGNATURE);
                g_free(m);
        }
}

static void test_skip_all(void) {
        for (int be = 0; be < 2; ++be) {
                WireHeader h;
                WireReader r;
                uint8_t *m;
                size_t size;
                unsigned n = 0;

                m = make(be, &size, &h);
                wire_reader_init(&r, m, &h);
                while (wire_reader_peek(&r)) {
                        g_assert_cmpint(wire_reader_skip(&r), ==, 0);
                        ++n;
                }
                g_assert_cmpuint(n, ==, 15);
                g_assert_cmpuint(r.pos, ==, h.body_size);
                g_free(m);
        }
}

static void test_empty_and_nested(void) {
        WireWriter w;
        WireMsgSpec spec = { .type = 1, .serial = 1, .path = "/", .member = "M" };
        WireHeader h;
        WireReader r;
        uint8_t *m;
        size_t size;
        uint32_t u;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "at"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "t"), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "t"), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        u = 5;
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &m, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
        wire_reader_init(&r, m, &h);
        g_assert_cmpint(wire_reader_enter(&r, 'a', "at"), ==, 0);
        g_assert_cmpint(wire_reader_enter(&r, 'a', "t"), ==, 0);
        g_assert_cmpint(wire_reader_peek(&r), ==, 0);
        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
        g_assert_cmpint(wire_reader_peek(&r), ==, 'a');
        g_assert_cmpint(wire_reader_skip(&r), ==, 0);
        g_assert_cmpint(wire_reader_peek(&r), ==, 0);
        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
        g_assert_cmpint(wire_reader_read_basic(&r, 'u', &u), ==, 0);
        g_assert_cmpuint(u, ==, 5);
        free(m);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/reader/read-all", test_read_all);
        g_test_add_func("/wire/reader/skip-all", test_skip_all);
        g_test_add_func("/wire/reader/empty-and-nested", test_empty_and_nested);
        return g_test_run();
}
