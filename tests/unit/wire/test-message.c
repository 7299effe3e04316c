/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wire_message_frame() and wire_message_parse(): one valid and at least one malformed
 * message per rule (per WIRE_E_* code), each in both byte orders, crafted with raw.h.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "header-same.h"
#include "raw.h"
#include "wire/message.h"

/* the memo parse_raw() parses with (NULL: plain wire_message_parse()) */
static WireFieldMemo *parse_memo;

/* parse the message in @r (finishing it) with @n_fds and @flags; return the code */
static int parse_raw(Raw *r, size_t n_fds, unsigned flags, WireHeader *ret) {
        WireHeader h;
        uint8_t *m;
        size_t size;
        int k;

        m = raw_finish(r, &size);
        k = parse_memo ? wire_message_parse_memo(m, size, n_fds, flags, parse_memo, ret ? ret : &h) :
                         wire_message_parse(m, size, n_fds, flags, ret ? ret : &h);
        g_free(m);
        return k;
}

/* a call with signature @sig whose body is written by @body */
typedef void (*BodyFn)(Raw *r);

static int parse_body(bool be, const char *sig, BodyFn body, size_t n_fds, uint32_t unix_fds) {
        Raw r;

        raw_call(&r, be, sig);
        if (unix_fds)
                raw_field_u(&r, 9, unix_fds);
        raw_fields_end(&r);
        body(&r);
        return parse_raw(&r, n_fds, 0, NULL);
}


static void test_frame(void) {
        for (int be = 0; be < 2; ++be) {
                Raw r;
                uint8_t *m;
                size_t size, framed = 0;

                raw_call(&r, be, "s");
                raw_fields_end(&r);
                raw_s(&r, "hello");
                m = raw_finish(&r, &size);
                g_assert_cmpint(wire_message_frame(m, 15, &framed), ==, WIRE_E_AGAIN);
                g_assert_cmpint(wire_message_frame(m, 16, &framed), ==, 0);
                g_assert_cmpuint(framed, ==, size);
                g_assert_cmpint(wire_message_frame(m, size, &framed), ==, 0);
                g_assert_cmpuint(framed, ==, size);

                m[0] = 'x';
                g_assert_cmpint(wire_message_frame(m, size, &framed), ==, WIRE_E_BAD_ENDIAN);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_BAD_ENDIAN);
                m[0] = be ? 'B' : 'l';
                m[3] = 2;
                g_assert_cmpint(wire_message_frame(m, size, &framed), ==, WIRE_E_BAD_VERSION);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_BAD_VERSION);
                m[3] = 1;
                /* field array over 64 MiB */
                r.be = be;
                r.a = NULL;
                {
                        uint32_t v = 64u * 1024 * 1024 + 1;

                        v = be ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
                        memcpy(m + 12, &v, 4);
                        g_assert_cmpint(wire_message_frame(m, 16, &framed), ==, WIRE_E_TOO_LARGE);
                        /* exactly 64 MiB of fields is allowed by framing, the total is checked */
                        v = 64u * 1024 * 1024;
                        v = be ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
                        memcpy(m + 12, &v, 4);
                        v = 64u * 1024 * 1024 - 16;
                        v = be ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
                        memcpy(m + 4, &v, 4);
                        g_assert_cmpint(wire_message_frame(m, 16, &framed), ==, 0);
                        g_assert_cmpuint(framed, ==, 128u * 1024 * 1024);
                        v = 64u * 1024 * 1024 - 15;
                        v = be ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
                        memcpy(m + 4, &v, 4);
                        g_assert_cmpint(wire_message_frame(m, 16, &framed), ==, WIRE_E_TOO_LARGE);
                        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                        WIRE_E_TOO_LARGE);
                        /* body length alone over the limit */
                        v = 0xffffffffu;
                        memcpy(m + 4, &v, 4);
                        memcpy(m + 12, &v, 4);
                        g_assert_cmpint(wire_message_frame(m, 16, &framed), ==, WIRE_E_TOO_LARGE);
                }
                g_free(m);
        }
}

static void test_valid_header(void) {
        for (int be = 0; be < 2; ++be) {
                WireHeader h;
                Raw r;

                raw_init(&r, be, 4, 3, 0x01020304);
                raw_field_s(&r, 1, "o", "/org/example/Obj");
                raw_field_s(&r, 2, "s", "org.example.Iface");
                raw_field_s(&r, 3, "s", "Member_1");
                raw_field_s(&r, 6, "s", ":1.5");
                raw_field_s(&r, 7, "s", "org.example.Sender");
                raw_field_u(&r, 9, 2);
                raw_field_s(&r, 8, "g", "hs");
                raw_fields_end(&r);
                raw_u32(&r, 1);
                raw_s(&r, "x");
                g_assert_cmpint(parse_raw(&r, 2, 0, &h), ==, 0);
                g_assert_cmpint(h.big_endian, ==, be);
                g_assert_cmpuint(h.type, ==, 4);
                g_assert_cmpuint(h.flags, ==, 3);
                g_assert_cmpuint(h.serial, ==, 0x01020304);
                g_assert_cmpuint(h.n_fds, ==, 2);
                g_assert_cmpuint(h.reply_serial, ==, 0);
                g_assert_cmpuint(h.body_size, ==, 10);
                g_assert_cmpuint(h.body_offset % 8, ==, 0);
                g_assert_cmpuint(h.total_size, ==, h.body_offset + 10);
                g_assert_cmpuint(h.body_offset, ==, 16 + ((h.fields_size + 7) & ~7u));
                g_assert_null(h.error_name);
                /* the strings point into the (now freed) buffer: only check presence here */
                g_assert_nonnull(h.path);
                g_assert_nonnull(h.sender);
                g_assert_cmpuint(h.sender_field_offset % 8, ==, 0);
                g_assert_cmpuint(h.sender_field_size, ==, 32);    /* 4 + 4 + 18 + 1, padded */
        }
}

static void test_strings_into_buffer(void) {
        WireHeader h;
        uint8_t *m;
        size_t size;
        Raw r;

        raw_init(&r, true, 3, 0, 9);
        raw_field_s(&r, 4, "s", "org.example.Error");
        raw_field_u(&r, 5, 77);
        raw_field_s(&r, 6, "s", "org.dest");
        raw_fields_end(&r);
        m = raw_finish(&r, &size);
        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
        g_assert_cmpstr(h.error_name, ==, "org.example.Error");
        g_assert_cmpstr(h.destination, ==, "org.dest");
        g_assert_cmpstr(h.signature, ==, "");
        g_assert_null(h.sender);
        g_assert_cmpuint(h.sender_field_offset, ==, 0);
        g_assert_cmpuint(h.reply_serial, ==, 77);
        g_assert_cmpuint(h.body_size, ==, 0);
        g_free(m);
}

static void test_bad_type(void) {
        for (int be = 0; be < 2; ++be) {
                Raw r;

                raw_init(&r, be, 0, 0, 1);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_TYPE);
                /* unknown types are accepted, with no required fields */
                raw_init(&r, be, 9, 0, 1);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, 0);
        }
}

static void test_bad_serial(void) {
        for (int be = 0; be < 2; ++be) {
                Raw r;

                raw_init(&r, be, 1, 0, 0);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_SERIAL);
                raw_init(&r, be, 2, 0, 1);
                raw_field_u(&r, 5, 0);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_SERIAL);
        }
}

static void test_bad_field(void) {
        for (int be = 0; be < 2; ++be) {
                Raw r;

                /* PATH as a string */
                raw_init(&r, be, 1, 0, 1);
                raw_field_s(&r, 1, "s", "/p");
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_FIELD);
                /* REPLY_SERIAL as a string */
                raw_init(&r, be, 2, 0, 1);
                raw_field_s(&r, 5, "s", "x");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_FIELD);
                /* SIGNATURE as a string */
                raw_call(&r, be, NULL);
                raw_field_s(&r, 8, "s", "s");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_FIELD);
                /* duplicate MEMBER */
                raw_call(&r, be, NULL);
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_FIELD);
                /* field code 0 */
                raw_call(&r, be, NULL);
                raw_field_u(&r, 0, 1);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_FIELD);
                /* variant with two types */
                raw_call(&r, be, NULL);
                raw_field(&r, 9, "uu");
                raw_u32(&r, 0);
                raw_u32(&r, 0);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_FIELD);
        }
}

static void test_unknown_field(void) {
        for (int be = 0; be < 2; ++be) {
                Raw r;

                /* skipped, with any well-formed value */
                raw_call(&r, be, NULL);
                raw_field(&r, 42, "a{sv}");
                raw_u32(&r, 10);
                raw_pad(&r, 8);
                raw_s(&r, "k");                         /* 4 + 2 */
                raw_g(&r, "y");                         /* 3 */
                raw_y(&r, 7);                           /* 1 */
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, 0);

                raw_call(&r, be, NULL);
                raw_field(&r, 200, "(su)");
                raw_pad(&r, 8);
                raw_s(&r, "x");
                raw_u32(&r, 3);
                raw_field_s(&r, 6, "s", "org.dest");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, 0);

                /* but it must be well-formed */
                raw_call(&r, be, NULL);
                raw_field(&r, 200, "s");
                raw_s_len(&r, "\xc0\x80", 2);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_STRING);
                raw_call(&r, be, NULL);
                raw_field(&r, 200, "b");
                raw_u32(&r, 2);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_BOOLEAN);
                raw_call(&r, be, NULL);
                raw_field(&r, 200, "");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_BAD_VARIANT);
        }
}

static void test_missing_field(void) {
        for (int be = 0; be < 2; ++be) {
                Raw r;

                raw_init(&r, be, 1, 0, 1);
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 1, 0, 1);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 2, "s", "a.b");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 2, 0, 1);
                raw_field_s(&r, 6, "s", ":1.1");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 3, 0, 1);
                raw_field_u(&r, 5, 3);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 3, 0, 1);
                raw_field_s(&r, 4, "s", "a.b");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 4, 0, 1);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 4, 0, 1);
                raw_field_s(&r, 2, "s", "a.b");
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                raw_init(&r, be, 4, 0, 1);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 2, "s", "a.b");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, WIRE_E_MISSING_FIELD);
                /* complete ones */
                raw_init(&r, be, 4, 0, 1);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 2, "s", "a.b");
                raw_field_s(&r, 3, "s", "M");
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, 0);
                raw_init(&r, be, 3, 0, 1);
                raw_field_s(&r, 4, "s", "a.b");
                raw_field_u(&r, 5, 3);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, 0);
                raw_init(&r, be, 2, 0, 1);
                raw_field_u(&r, 5, 3);
                g_assert_cmpint(parse_raw(&r, 0, 0, NULL), ==, 0);
        }
}

/* a single string header field @code of @type with value @v, on a complete call */
static int parse_field(bool be, uint8_t code, const char *type, const char *v) {
        Raw r;

        raw_init(&r, be, 1, 0, 1);
        if (code != 1)
                raw_field_s(&r, 1, "o", "/p");
        if (code != 3)
                raw_field_s(&r, 3, "s", "M");
        raw_field_s(&r, code, type, v);
        return parse_raw(&r, 0, 0, NULL);
}

static void bad_names(void) {
        for (int be = 0; be < 2; ++be) {
                g_assert_cmpint(parse_field(be, 1, "o", "/a//b"), ==, WIRE_E_BAD_PATH);
                g_assert_cmpint(parse_field(be, 1, "o", "/a/"), ==, WIRE_E_BAD_PATH);
                g_assert_cmpint(parse_field(be, 1, "o", "a"), ==, WIRE_E_BAD_PATH);
                g_assert_cmpint(parse_field(be, 1, "o", "/a-b"), ==, WIRE_E_BAD_PATH);
                g_assert_cmpint(parse_field(be, 1, "o", "/"), ==, 0);
                g_assert_cmpint(parse_field(be, 2, "s", "org"), ==, WIRE_E_BAD_INTERFACE);
                g_assert_cmpint(parse_field(be, 2, "s", "org.1x"), ==, WIRE_E_BAD_INTERFACE);
                g_assert_cmpint(parse_field(be, 2, "s", "org.a-b"), ==, WIRE_E_BAD_INTERFACE);
                g_assert_cmpint(parse_field(be, 2, "s", "org._1"), ==, 0);
                g_assert_cmpint(parse_field(be, 3, "s", "1abc"), ==, WIRE_E_BAD_MEMBER);
                g_assert_cmpint(parse_field(be, 3, "s", "a.b"), ==, WIRE_E_BAD_MEMBER);
                g_assert_cmpint(parse_field(be, 3, "s", ""), ==, WIRE_E_BAD_MEMBER);
                g_assert_cmpint(parse_field(be, 4, "s", "Err"), ==, WIRE_E_BAD_ERROR_NAME);
                g_assert_cmpint(parse_field(be, 6, "s", "org"), ==, WIRE_E_BAD_BUS_NAME);
                /* libdbus/dbus-daemon accept ":" and ":.1" (ServiceUnknown), not ":1." */
                g_assert_cmpint(parse_field(be, 6, "s", ":"), ==, 0);
                g_assert_cmpint(parse_field(be, 6, "s", ":.1"), ==, 0);
                g_assert_cmpint(parse_field(be, 6, "s", ":1."), ==, WIRE_E_BAD_BUS_NAME);
                g_assert_cmpint(parse_field(be, 7, "s", ":"), ==, 0);
                g_assert_cmpint(parse_field(be, 7, "s", "::"), ==, WIRE_E_BAD_BUS_NAME);
                g_assert_cmpint(parse_field(be, 6, "s", "1.a"), ==, WIRE_E_BAD_BUS_NAME);
                g_assert_cmpint(parse_field(be, 6, "s", "a-b.c"), ==, 0);
                g_assert_cmpint(parse_field(be, 6, "s", ":1.2"), ==, 0);
                g_assert_cmpint(parse_field(be, 7, "s", "a..b"), ==, WIRE_E_BAD_BUS_NAME);
                g_assert_cmpint(parse_field(be, 8, "g", "("), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(parse_field(be, 8, "g", "z"), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(parse_field(be, 8, "g", "a"), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(parse_field(be, 8, "g", "()"), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(parse_field(be, 8, "g", "{sv}"), ==, WIRE_E_BAD_DICT);
                g_assert_cmpint(parse_field(be, 8, "g", "a{vs}"), ==, WIRE_E_BAD_DICT);
                g_assert_cmpint(parse_field(be, 8, "g", "a{sss}"), ==, WIRE_E_BAD_DICT);
                g_assert_cmpint(parse_field(be, 8, "g", "a{s}"), ==, WIRE_E_BAD_DICT);
                g_assert_cmpint(parse_field(be, 1, "o", "/org/freedesktop/DBus/Local"), ==,
                                WIRE_E_LOCAL_PATH);
                g_assert_cmpint(parse_field(be, 2, "s", "org.freedesktop.DBus.Local"), ==,
                                WIRE_E_LOCAL_PATH);
                g_assert_cmpint(parse_field(be, 1, "o", "/org/freedesktop/DBus/Local2"), ==, 0);
        }
}

static void test_bad_names(void) {
        bad_names();
}

/* a call with PATH "/p", MEMBER "M", then field @c1 = @v1 and field @c2 = @v2 */
static int parse_two(uint8_t c1, const char *v1, uint8_t c2, const char *v2) {
        Raw r;

        raw_init(&r, false, 1, 0, 1);
        raw_field_s(&r, 1, "o", "/p");
        raw_field_s(&r, 3, "s", "M");
        raw_field_s(&r, c1, "s", v1);
        raw_field_s(&r, c2, "s", v2);
        return parse_raw(&r, 0, 0, NULL);
}

/* A peer's memo of its last valid names (wire_message_parse_memo()) changes no verdict:
 * the same bytes in another field, other bytes of the same length, an empty memo slot. */
static void test_field_memo(void) {
        WireFieldMemo memo = {};
        char a[60], b[60];

        parse_memo = &memo;
        g_assert_cmpint(parse_field(false, 2, "s", ""), ==, WIRE_E_BAD_INTERFACE);
        g_assert_cmpint(parse_field(false, 6, "s", ""), ==, WIRE_E_BAD_BUS_NAME);
        bad_names();
        bad_names();
        g_assert_cmpint(parse_two(6, "a-b.c", 2, "a-b.c"), ==, WIRE_E_BAD_INTERFACE);
        g_assert_cmpint(parse_two(6, "a-b.c", 2, "a.c"), ==, 0);
        g_assert_cmpint(parse_two(2, "a.c", 6, "a.c"), ==, 0);
        g_assert_cmpint(parse_field(false, 2, "s", "org.a"), ==, 0);
        g_assert_cmpint(parse_field(false, 2, "s", "org.1"), ==, WIRE_E_BAD_INTERFACE);
        g_assert_cmpint(parse_field(false, 2, "s", "org.a"), ==, 0);
        g_assert_cmpint(parse_field(false, 1, "o", "/a/b"), ==, 0);
        g_assert_cmpint(parse_field(false, 1, "o", "/a//"), ==, WIRE_E_BAD_PATH);
        g_assert_cmpint(parse_field(false, 1, "o", "/org/freedesktop/DBus/Locak"), ==, 0);
        g_assert_cmpint(parse_field(false, 1, "o", "/org/freedesktop/DBus/Local"), ==,
                        WIRE_E_LOCAL_PATH);
        /* longer than a slot: checked every time */
        memset(a, 'a', sizeof(a));
        a[20] = '.';
        a[sizeof(a) - 1] = 0;
        memcpy(b, a, sizeof(b));
        b[30] = '-';
        g_assert_cmpint(parse_field(false, 2, "s", a), ==, 0);
        g_assert_cmpint(parse_field(false, 2, "s", b), ==, WIRE_E_BAD_INTERFACE);
        g_assert_cmpint(parse_field(false, 2, "s", a), ==, 0);
        parse_memo = NULL;
}

/* @m parsed with @memo gives what a plain parse gives: the code, and on success the header */
static int parse_both(const uint8_t *m, size_t size, size_t n_fds, unsigned flags,
                      WireFieldMemo *memo, WireHeader *ret) {
        WireHeader a = { 0 }, b = { 0 };
        int ka, kb;

        ka = wire_message_parse(m, size, n_fds, flags, &a);
        kb = wire_message_parse_memo(m, size, n_fds, flags, memo, &b);
        g_assert_cmpint(kb, ==, ka);
        if (ka == 0) {
                g_assert_true(wire_header_same(&a, &b));
                g_assert_true(a.signature[0] == 0 || a.signature == b.signature);
                if (ret)
                        *ret = b;
        }
        return ka;
}

/* a reply to :1.7 of @serial, with a SENDER of its own when @sender, a body when @body */
static uint8_t *make_reply(bool be, uint32_t reply_serial, bool sender, bool body,
                           size_t *size) {
        Raw r;

        raw_init(&r, be, 2, 0, 9);
        raw_field_u(&r, 5, reply_serial);
        if (sender)
                raw_field_s(&r, 7, "s", ":1.3");
        raw_field_s(&r, 6, "s", ":1.7");
        if (body)
                raw_field_s(&r, 8, "g", "s");
        raw_fields_end(&r);
        if (body)
                raw_s(&r, "ok");
        return raw_finish(&r, size);
}

/*
 * The whole field array remembered (WireFieldMemo.fields): a hit gives the header a walk
 * gives, only the REPLY_SERIAL value is read anew (and 0 still refused), and everything
 * after the array is checked as without the memo: the message type's required fields, the
 * passed fds, the padding before the body, the body. The same bytes in the other byte
 * order are another array.
 */
static void test_fields_memo(void) {
        for (int be = 0; be < 2; ++be) {
                WireFieldMemo memo = { 0 };
                WireHeader h;
                uint8_t *m, *m2;
                size_t size;
                Raw r;

                /* replies: recorded, then hits with any serial but 0 */
                for (int sender = 0; sender < 2; ++sender) {
                        m = make_reply(be, 1, sender, true, &size);
                        g_assert_cmpint(parse_both(m, size, 0, 0, &memo, &h), ==, 0);
                        g_assert_cmpuint(memo.fields.len, ==, h.fields_size);
                        g_assert_cmpuint(memo.fields.reply_serial_at, !=, 0);
                        g_free(m);
                        m = make_reply(be, 0xfedcba98, sender, true, &size);
                        g_assert_cmpint(parse_both(m, size, 0, 0, &memo, &h), ==, 0);
                        g_assert_cmpuint(h.reply_serial, ==, 0xfedcba98);
                        g_assert_cmpint(!!h.sender, ==, sender);
                        /* non-zero padding between the array and the body */
                        g_assert_cmpuint(h.body_offset - 16 - h.fields_size, >, 0);
                        m[h.body_offset - 1] = 1;
                        g_assert_cmpint(parse_both(m, size, 0, 0, &memo, NULL), ==,
                                        WIRE_E_BAD_PADDING);
                        g_free(m);
                        m = make_reply(be, 0, sender, true, &size);
                        g_assert_cmpint(parse_both(m, size, 0, 0, &memo, NULL), ==,
                                        WIRE_E_BAD_SERIAL);
                        g_free(m);
                        m = make_reply(be, 0x01000001, sender, false, &size);
                        g_assert_cmpint(parse_both(m, size, 0, 0, &memo, NULL), ==, 0);
                        /* the same array in the other byte order: lengths read differently
                         * (the body is empty, so only the walk can tell) */
                        m[0] = be ? 'l' : 'B';
                        for (unsigned off = 4; off < 16; off += 4) {
                                uint32_t v;

                                memcpy(&v, m + off, 4);
                                v = GUINT32_SWAP_LE_BE(v);
                                memcpy(m + off, &v, 4);
                        }
                        g_assert_cmpint(parse_both(m, size, 0, 0, &memo, NULL), !=, 0);
                        g_free(m);
                }

                /* a call recorded; then one byte of a name changed: the walk's verdict */
                raw_init(&r, be, 1, 0, 5);
                raw_field_s(&r, 1, "o", "/org/a");
                raw_field_s(&r, 2, "s", "org.a");
                raw_field_s(&r, 3, "s", "Ping");
                raw_field_s(&r, 6, "s", "org.b");
                raw_field_s(&r, 8, "g", "ay");
                raw_field_u(&r, 9, 1);
                raw_fields_end(&r);
                raw_u32(&r, 2);
                raw_y(&r, 1);
                raw_y(&r, 2);
                m = raw_finish(&r, &size);
                g_assert_cmpint(parse_both(m, size, 1, 0, &memo, &h), ==, 0);
                g_assert_cmpuint(memo.fields.len, ==, h.fields_size);
                g_assert_cmpint(parse_both(m, size, 1, 0, &memo, &h), ==, 0);
                g_assert_cmpstr(h.member, ==, "Ping");
                g_assert_cmpuint(h.n_fds, ==, 1);
                /* fewer fds passed than UNIX_FDS says */
                g_assert_cmpint(parse_both(m, size, 0, 0, &memo, NULL), ==, WIRE_E_BAD_FD_INDEX);
                /* the required fields are the type's: as a signal, INTERFACE is there... */
                m[1] = 4;
                g_assert_cmpint(parse_both(m, size, 1, 0, &memo, NULL), ==, 0);
                /* ... as an error, ERROR_NAME and REPLY_SERIAL are not */
                m[1] = 3;
                g_assert_cmpint(parse_both(m, size, 1, 0, &memo, NULL), ==,
                                WIRE_E_MISSING_FIELD);
                m[1] = 1;
                /* the body after a hit: too short for its signature, a bad array length */
                g_assert_cmpint(parse_both(m, size - 1, 1, 0, &memo, NULL), ==, WIRE_E_TRUNCATED);
                m2 = g_memdup2(m, size);
                m2[h.body_offset] = 3;
                g_assert_cmpint(parse_both(m2, size, 1, 0, &memo, NULL), !=, 0);
                g_free(m2);
                /* the header only, the body skipped */
                g_assert_cmpint(parse_both(m, h.body_offset, 1, WIRE_PARSE_HEADER_ONLY, &memo,
                                           NULL), ==, 0);
                g_assert_cmpint(parse_both(m, size, 1, WIRE_PARSE_SKIP_BODY, &memo, NULL), ==, 0);
                /* each byte of the array changed in turn, the memo primed before each */
                for (size_t i = 16; i < 16 + h.fields_size; ++i) {
                        m2 = g_memdup2(m, size);
                        m2[i] ^= 0x41;
                        g_assert_cmpint(parse_both(m, size, 1, 0, &memo, NULL), ==, 0);
                        (void) parse_both(m2, size, 1, 0, &memo, NULL);
                        g_free(m2);
                }
                g_free(m);

                /* an array longer than the memo holds: walked every time */
                memo = (WireFieldMemo){ 0 };
                raw_call(&r, be, NULL);
                for (int i = 0; i < 20; ++i)
                        raw_field_s(&r, 100 + i, "s", "unknown");
                m = raw_finish(&r, &size);
                g_assert_cmpint(parse_both(m, size, 0, 0, &memo, &h), ==, 0);
                g_assert_cmpuint(h.fields_size, >, WIRE_FIELDS_MEMO_LEN);
                g_assert_cmpuint(memo.fields.len, ==, 0);
                g_assert_true(h.has_unknown_fields);
                g_free(m);
        }
}

/* a call of signature @sig whose body is @n bytes: @len (in the message's order), then @fill */
static int parse_array_body(bool be, const char *sig, uint32_t len, size_t n, uint8_t fill) {
        Raw r;

        raw_call(&r, be, sig);
        raw_fields_end(&r);
        if (n >= 4) {
                raw_u32(&r, len);
                n -= 4;
        } else
                fill = 0x7f;
        for (size_t i = 0; i < n; ++i)
                raw_y(&r, fill);
        return parse_raw(&r, 0, 0, NULL);
}

/*
 * A body of one array of fixed-size values ("ay") is checked without the signature walk
 * (body_check()); a struct around it ("(ay)") starts at the same 8-aligned offset, so the
 * same bytes take the walk: both must say the same of every body, valid or not.
 */
static void test_fixed_array_body(void) {
        static const uint32_t lens[] = { 0, 1, 2, 3, 4, 5, 8, 12, 16, 64 * 1024 * 1024,
                                         64 * 1024 * 1024 + 1, UINT32_MAX };
        static const uint8_t fills[] = { 0, 1, 2 };
        const char *types = "ybnqiuxtdh";
        unsigned n_ok = 0, n_bad = 0;

        for (int be = 0; be < 2; ++be)
                for (const char *t = types; *t; ++t) {
                        char fast[3] = { 'a', *t, 0 }, slow[5] = { '(', 'a', *t, ')', 0 };

                        for (size_t li = 0; li < G_N_ELEMENTS(lens); ++li)
                                for (size_t n = 0; n <= 28; ++n)
                                        for (size_t fi = 0; fi < G_N_ELEMENTS(fills); ++fi) {
                                                int a = parse_array_body(be, fast, lens[li], n,
                                                                         fills[fi]);
                                                int b = parse_array_body(be, slow, lens[li], n,
                                                                         fills[fi]);

                                                g_assert_cmpint(a, ==, b);
                                                if (a)
                                                        ++n_bad;
                                                else
                                                        ++n_ok;
                                        }
                }
        g_assert_cmpuint(n_ok, >, 0);
        g_assert_cmpuint(n_bad, >, 0);
        g_test_message("%u valid and %u invalid array bodies", n_ok, n_bad);
}

static void test_name_length(void) {
        char name[300];

        memset(name, 'a', sizeof(name));
        name[1] = '.';
        name[255] = 0;
        g_assert_cmpint(parse_field(false, 2, "s", name), ==, 0);
        g_assert_cmpint(parse_field(true, 6, "s", name), ==, 0);
        name[255] = 'a';
        name[256] = 0;
        g_assert_cmpint(parse_field(false, 2, "s", name), ==, WIRE_E_BAD_INTERFACE);
        g_assert_cmpint(parse_field(true, 6, "s", name), ==, WIRE_E_BAD_BUS_NAME);
        g_assert_cmpint(parse_field(true, 4, "s", name), ==, WIRE_E_BAD_ERROR_NAME);
        name[1] = 'a';
        g_assert_cmpint(parse_field(true, 3, "s", name), ==, WIRE_E_BAD_MEMBER);
        name[255] = 0;
        g_assert_cmpint(parse_field(true, 3, "s", name), ==, 0);
}

static void body_utf8_overlong(Raw *r) { raw_s_len(r, "\xc0\x80", 2); }
static void body_utf8_overlong3(Raw *r) { raw_s_len(r, "\xe0\x80\xaf", 3); }
static void body_utf8_surrogate(Raw *r) { raw_s_len(r, "\xed\xa0\x80", 3); }
static void body_utf8_too_big(Raw *r) { raw_s_len(r, "\xf4\x90\x80\x80", 4); }
static void body_utf8_cut(Raw *r) { raw_s_len(r, "ab\xe2\x82", 4); }
static void body_utf8_nul(Raw *r) { raw_s_len(r, "a\0b", 3); }
static void body_utf8_ok(Raw *r) { raw_s_len(r, "\xf4\x8f\xbf\xbf \xe2\x82\xac \xc3\xa9 ok", 13); }
static void body_no_nul(Raw *r) {
        raw_u32(r, 2);
        raw_bytes(r, "abc", 3);
}
static void body_bool2(Raw *r) { raw_u32(r, 2); }
static void body_bool1(Raw *r) { raw_u32(r, 1); }
static void body_abool2(Raw *r) {
        raw_u32(r, 8);
        raw_u32(r, 1);
        raw_u32(r, 2);
}
static void body_bad_path(Raw *r) { raw_s(r, "//"); }
static void body_bad_sig(Raw *r) { raw_g(r, "a"); }
static void body_ok_sig(Raw *r) { raw_g(r, "a{sv}(i)"); }
static void body_pad_nonzero(Raw *r) {
        raw_y(r, 1);
        raw_bytes(r, "\0\1\0", 3);
        raw_u32(r, 5);
}
static void body_pad_ok(Raw *r) {
        raw_y(r, 1);
        raw_u32(r, 5);
}
static void body_empty_array_pad(Raw *r) {
        raw_u32(r, 0);
        raw_bytes(r, "\0\0\0\1", 4);    /* padding to 8 before the (absent) first element */
}
static void body_empty_array_ok(Raw *r) {
        raw_u32(r, 0);
        raw_pad(r, 8);
}
static void body_empty_array_nopad(Raw *r) {
        raw_u32(r, 0);                  /* padding to 8 missing: data ends */
}
static void body_short(Raw *r) { raw_u16(r, 1); }
static void body_long_string(Raw *r) {
        raw_u32(r, 100);
        raw_bytes(r, "abc", 4);
}
static void body_trailing(Raw *r) {
        raw_u32(r, 1);
        raw_y(r, 0);
}
static void body_overrun(Raw *r) {
        raw_u32(r, 3);                  /* array of strings, element crosses its end */
        raw_s(r, "abc");
}
static void body_overrun_struct(Raw *r) {
        raw_u32(r, 4);                  /* array of (y), element crosses its end */
        raw_pad(r, 8);
        raw_y(r, 1);
        raw_pad(r, 8);
        raw_y(r, 2);
}
static void body_fixed_partial(Raw *r) {
        raw_u32(r, 6);
        raw_u32(r, 1);
        raw_u16(r, 0);
}
static void body_big_array(Raw *r) {
        raw_u32(r, 64u * 1024 * 1024 + 1);
        raw_y(r, 0);
}
static void body_h0(Raw *r) { raw_u32(r, 0); }
static void body_h1(Raw *r) { raw_u32(r, 1); }
static void body_ah1(Raw *r) {
        raw_u32(r, 8);
        raw_u32(r, 0);
        raw_u32(r, 1);
}
static void body_variant_two(Raw *r) {
        raw_g(r, "ii");
        raw_u32(r, 1);
        raw_u32(r, 1);
}
static void body_variant_empty(Raw *r) { raw_g(r, ""); }
static void body_variant_ok(Raw *r) {
        raw_g(r, "(yt)");
        raw_pad(r, 8);
        raw_y(r, 1);
        raw_u64(r, 2);
}
static void body_variant_dict(Raw *r) {
        raw_g(r, "{sv}");
        raw_pad(r, 8);
}
static void body_variant_deep(Raw *r) {
        int i;

        for (i = 0; i < 65; ++i)
                raw_g(r, "v");
        raw_g(r, "y");
        raw_y(r, 1);
}
static void body_variant_deep_ok(Raw *r) {
        int i;

        for (i = 0; i < 63; ++i)
                raw_g(r, "v");
        raw_g(r, "y");
        raw_y(r, 1);
}
static void body_string_array(Raw *r) {
        size_t len_at;

        raw_u32(r, 0);
        len_at = r->a->len - 4;
        raw_s(r, "a");
        raw_s(r, "\xc3\xa9");
        raw_s(r, "");
        raw_set_u32(r, len_at, (uint32_t)(r->a->len - len_at - 4));
}
static void body_string_array_bad(Raw *r) {
        size_t len_at;

        raw_u32(r, 0);
        len_at = r->a->len - 4;
        raw_s(r, "a");
        raw_s_len(r, "\xff", 1);
        raw_set_u32(r, len_at, (uint32_t)(r->a->len - len_at - 4));
}
static void body_dict(Raw *r) {
        size_t len_at;

        raw_u32(r, 0);
        len_at = r->a->len - 4;
        raw_pad(r, 8);
        raw_s(r, "key");
        raw_g(r, "as");
        raw_u32(r, 0);
        raw_pad(r, 8);
        raw_s(r, "k2");
        raw_g(r, "b");
        raw_u32(r, 1);
        raw_set_u32(r, len_at, (uint32_t)(r->a->len - ((len_at + 4 + 7) & ~(size_t)7)));
}

static void test_body(void) {
        for (int be = 0; be < 2; ++be) {
                g_assert_cmpint(parse_body(be, "s", body_utf8_overlong, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "s", body_utf8_overlong3, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "s", body_utf8_surrogate, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "s", body_utf8_too_big, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "s", body_utf8_cut, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "s", body_utf8_nul, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "s", body_utf8_ok, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "s", body_no_nul, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "b", body_bool2, 0, 0), ==, WIRE_E_BAD_BOOLEAN);
                g_assert_cmpint(parse_body(be, "b", body_bool1, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "ab", body_abool2, 0, 0), ==, WIRE_E_BAD_BOOLEAN);
                g_assert_cmpint(parse_body(be, "o", body_bad_path, 0, 0), ==, WIRE_E_BAD_PATH);
                g_assert_cmpint(parse_body(be, "g", body_bad_sig, 0, 0), ==, WIRE_E_BAD_SIGNATURE);
                g_assert_cmpint(parse_body(be, "g", body_ok_sig, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "yu", body_pad_nonzero, 0, 0), ==, WIRE_E_BAD_PADDING);
                g_assert_cmpint(parse_body(be, "yu", body_pad_ok, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "at", body_empty_array_pad, 0, 0), ==, WIRE_E_BAD_PADDING);
                g_assert_cmpint(parse_body(be, "at", body_empty_array_ok, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "a(y)", body_empty_array_ok, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "at", body_empty_array_nopad, 0, 0), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(parse_body(be, "u", body_short, 0, 0), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(parse_body(be, "s", body_long_string, 0, 0), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(parse_body(be, "u", body_trailing, 0, 0), ==, WIRE_E_TRAILING);
                g_assert_cmpint(parse_body(be, "", body_trailing, 0, 0), ==, WIRE_E_TRAILING);
                g_assert_cmpint(parse_body(be, "as", body_overrun, 0, 0), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(parse_body(be, "a(y)", body_overrun_struct, 0, 0), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(parse_body(be, "au", body_fixed_partial, 0, 0), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(parse_body(be, "ay", body_big_array, 0, 0), ==, WIRE_E_TOO_LARGE);
                g_assert_cmpint(parse_body(be, "h", body_h0, 1, 1), ==, 0);
                /* 'h' past UNIX_FDS: accepted, as dbus-daemon 1.14.10 delivers it */
                g_assert_cmpint(parse_body(be, "h", body_h1, 1, 1), ==, 0);
                g_assert_cmpint(parse_body(be, "h", body_h0, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "ah", body_ah1, 2, 2), ==, 0);
                g_assert_cmpint(parse_body(be, "ah", body_ah1, 2, 1), ==, 0);
                /* UNIX_FDS claims more fds than arrived */
                g_assert_cmpint(parse_body(be, "h", body_h0, 1, 2), ==, WIRE_E_BAD_FD_INDEX);
                g_assert_cmpint(parse_body(be, "v", body_variant_two, 0, 0), ==, WIRE_E_BAD_VARIANT);
                g_assert_cmpint(parse_body(be, "v", body_variant_empty, 0, 0), ==, WIRE_E_BAD_VARIANT);
                g_assert_cmpint(parse_body(be, "v", body_variant_dict, 0, 0), ==, WIRE_E_BAD_DICT);
                g_assert_cmpint(parse_body(be, "v", body_variant_ok, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "v", body_variant_deep, 0, 0), ==, WIRE_E_TOO_DEEP);
                g_assert_cmpint(parse_body(be, "v", body_variant_deep_ok, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "as", body_string_array, 0, 0), ==, 0);
                g_assert_cmpint(parse_body(be, "as", body_string_array_bad, 0, 0), ==, WIRE_E_BAD_STRING);
                g_assert_cmpint(parse_body(be, "a{sv}", body_dict, 0, 0), ==, 0);
        }
}

static void body_nested_arrays(Raw *r) {
        int i;

        for (i = 0; i < 31; ++i)
                raw_u32(r, (uint32_t)(4 * (31 - i) + 1));
        raw_u32(r, 1);
        raw_y(r, 9);
}

static void test_too_deep(void) {
        char sig[80];

        /* 32 arrays is the limit; 33 is too deep */
        memset(sig, 'a', 32);
        sig[32] = 'y';
        sig[33] = 0;
        g_assert_cmpint(parse_body(false, sig, body_h0, 0, 0), ==, 0);   /* empty outer array */
        g_assert_cmpint(parse_body(true, sig, body_h0, 0, 0), ==, 0);
        g_assert_cmpint(parse_body(false, sig, body_nested_arrays, 0, 0), ==, 0);
        g_assert_cmpint(parse_body(true, sig, body_nested_arrays, 0, 0), ==, 0);
        memset(sig, 'a', 33);
        sig[33] = 'y';
        sig[34] = 0;
        g_assert_cmpint(parse_field(true, 8, "g", sig), ==, WIRE_E_TOO_DEEP);
        memset(sig, '(', 33);
        sig[33] = 'y';
        memset(sig + 34, ')', 33);
        sig[67] = 0;
        g_assert_cmpint(parse_field(false, 8, "g", sig), ==, WIRE_E_TOO_DEEP);
        sig[32] = 'y';
        sig[33] = 0;
        memset(sig + 33, ')', 32);
        sig[65] = 0;
        /* 32 structs are fine: the signature passes, then the (missing) body is checked */
        g_assert_cmpint(parse_field(false, 8, "g", sig), ==, WIRE_E_TRUNCATED);
}

static void test_header_padding(void) {
        for (int be = 0; be < 2; ++be) {
                uint8_t *m;
                size_t size;
                Raw r;

                /* non-zero padding between two fields */
                raw_init(&r, be, 1, 0, 1);
                raw_field_s(&r, 1, "o", "/p");     /* 4 + 4 + 3 = 11 bytes: 5 of padding */
                raw_field_s(&r, 3, "s", "M");
                m = raw_finish(&r, &size);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==, 0);
                m[16 + 12] = 1;
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_BAD_PADDING);
                m[16 + 12] = 0;
                /* non-zero padding between the fields and the body */
                g_assert_cmpuint(size % 8, ==, 0);
                m[size - 1] = 1;
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_BAD_PADDING);
                m[size - 1] = 0;
                /* size and total disagree */
                g_assert_cmpint(wire_message_parse(m, size - 1, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_TRUNCATED);
                g_assert_cmpint(wire_message_parse(m, 10, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_TRUNCATED);
                m = g_realloc(m, size + 8);
                memset(m + size, 0, 8);
                g_assert_cmpint(wire_message_parse(m, size + 8, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_TRAILING);
                g_free(m);

                /* field array length covering the padding after the last field */
                raw_init(&r, be, 1, 0, 1);
                raw_field_s(&r, 1, "o", "/p");
                raw_field_s(&r, 3, "s", "M");      /* ends at 32 + 10 */
                raw_pad(&r, 8);
                raw_fields_end(&r);
                m = raw_finish(&r, &size);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_TRUNCATED);
                g_free(m);

                raw_init(&r, be, 1, 0, 1);
                raw_field_s(&r, 3, "s", "M");       /* ends at 16 + 10 */
                raw_field_s(&r, 1, "o", "/p");      /* ends at 32 + 11 */
                raw_y(&r, 0);                       /* extra byte inside the array */
                m = raw_finish(&r, &size);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &(WireHeader){0}), ==,
                                WIRE_E_TRUNCATED);
                g_free(m);
        }
}

static void test_skip_body(void) {
        for (int be = 0; be < 2; ++be) {
                WireHeader h;
                Raw r;

                /* the body is broken, but only the header is looked at */
                raw_call(&r, be, "b");
                raw_fields_end(&r);
                raw_u32(&r, 7);
                g_assert_cmpint(parse_raw(&r, 0, WIRE_PARSE_SKIP_BODY, &h), ==, 0);
                g_assert_cmpuint(h.body_size, ==, 4);
                raw_call(&r, be, "b");
                raw_fields_end(&r);
                raw_u32(&r, 7);
                g_assert_cmpint(parse_raw(&r, 0, 0, &h), ==, WIRE_E_BAD_BOOLEAN);
                /* a header error is still found */
                raw_call(&r, be, "b");
                raw_field_s(&r, 3, "s", "M");
                raw_fields_end(&r);
                raw_u32(&r, 1);
                g_assert_cmpint(parse_raw(&r, 0, WIRE_PARSE_SKIP_BODY, &h), ==, WIRE_E_BAD_FIELD);
                /* a body without a signature */
                raw_call(&r, be, NULL);
                raw_fields_end(&r);
                raw_u32(&r, 1);
                g_assert_cmpint(parse_raw(&r, 0, WIRE_PARSE_SKIP_BODY, &h), ==, WIRE_E_TRAILING);
        }
}

/* WIRE_PARSE_HEADER_ONLY: the head of a message whose body lies elsewhere (memfd parts) */
static void test_header_only(void) {
        for (int be = 0; be < 2; ++be) {
                WireHeader h;
                uint8_t *m;
                size_t size;
                Raw r;

                raw_call(&r, be, "ay");
                raw_fields_end(&r);
                raw_u32(&r, 8);
                raw_u32(&r, 0);
                raw_u32(&r, 0);
                m = raw_finish(&r, &size);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
                /* the header alone, and the header with part of the body: the declared size */
                for (size_t k = h.body_offset; k <= size; k += 4) {
                        WireHeader hh;

                        g_assert_cmpint(wire_message_parse(m, k, 0, WIRE_PARSE_HEADER_ONLY, &hh),
                                        ==, 0);
                        g_assert_cmpuint(hh.total_size, ==, size);
                        g_assert_cmpuint(hh.body_size, ==, 12);
                        g_assert_cmpstr(hh.signature, ==, "ay");
                }
                /* less than the header: truncated; more than the message: trailing */
                g_assert_cmpint(wire_message_parse(m, h.body_offset - 1, 0,
                                                   WIRE_PARSE_HEADER_ONLY, &h), ==, WIRE_E_TRUNCATED);
                g_assert_cmpint(wire_message_parse(m, 16, 0, WIRE_PARSE_HEADER_ONLY, &h), ==,
                                WIRE_E_TRUNCATED);
                g_assert_cmpint(wire_message_parse(m, size - 1, 0, 0, &h), ==, WIRE_E_TRUNCATED);
                g_free(m);
        }
}

/*
 * A byte-array body's verdict from its length word alone is the full parse's for the
 * same message, whatever the length says, in both byte orders; bodies shorter than the
 * length word too.
 */
static void test_byte_array_body(void) {
        static const uint32_t lens[] = { 0, 1, 99, 100, 101, 4096, WIRE_MAX_ARRAY_SIZE,
                                         WIRE_MAX_ARRAY_SIZE + 1, UINT32_MAX };
        static const size_t bodies[] = { 1, 3, 4, 5, 104, 105 };
        static const char *const other_sigs[] = { "", "a", "ayy", "y", "ai", "aay", "(ay)" };

        for (int be = 0; be < 2; ++be)
                for (size_t b = 0; b < G_N_ELEMENTS(bodies); ++b)
                        for (size_t l = 0; l < G_N_ELEMENTS(lens); ++l) {
                                WireHeader h, hh;
                                uint8_t *m;
                                size_t size, k;
                                int full;
                                Raw r;

                                raw_call(&r, be, "ay");
                                raw_fields_end(&r);
                                if (bodies[b] >= 4) {
                                        raw_u32(&r, lens[l]);
                                        for (k = 4; k < bodies[b]; ++k)
                                                raw_y(&r, (uint8_t)(k * 7));
                                } else {
                                        for (k = 0; k < bodies[b]; ++k)
                                                raw_y(&r, 0);
                                }
                                m = raw_finish(&r, &size);
                                full = wire_message_parse(m, size, 0, 0, &h);
                                g_assert_cmpint(wire_message_parse(m, size - bodies[b] +
                                                                   MIN(bodies[b], (size_t)4),
                                                                   0, WIRE_PARSE_HEADER_ONLY,
                                                                   &hh), ==, 0);
                                g_assert_true(wire_body_is_byte_array(&hh));
                                g_assert_cmpint(wire_byte_array_body_check(&hh, m + hh.body_offset),
                                                ==, full);
                                if (bodies[b] == 104 && lens[l] == 100)
                                        g_assert_cmpint(full, ==, 0);
                                g_free(m);
                        }
        for (size_t i = 0; i < G_N_ELEMENTS(other_sigs); ++i) {
                WireHeader h = { .signature = other_sigs[i] };

                g_assert_false(wire_body_is_byte_array(&h));
        }
}

static void test_get_args(void) {
        for (int be = 0; be < 2; ++be) {
                WireHeader h;
                WireArgs a;
                uint8_t *m;
                size_t size;
                Raw r;

                raw_call(&r, be, "sa{sv}uo(s)s");
                raw_fields_end(&r);
                raw_s(&r, "zero");
                body_dict(&r);
                raw_u32(&r, 5);
                raw_s(&r, "/three");
                raw_pad(&r, 8);
                raw_s(&r, "in struct");
                raw_s(&r, "five");
                m = raw_finish(&r, &size);
                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
                g_assert_cmpint(wire_message_get_args(m, &h, &a), ==, 0);
                g_assert_cmpuint(a.n_args, ==, 6);
                g_assert_cmpstr(a.str[0], ==, "zero");
                g_assert_cmpint(a.type[0], ==, 's');
                g_assert_null(a.str[1]);
                g_assert_cmpint(a.type[1], ==, 'a');
                g_assert_null(a.str[2]);
                g_assert_cmpint(a.type[2], ==, 'u');
                g_assert_cmpstr(a.str[3], ==, "/three");
                g_assert_cmpint(a.type[3], ==, 'o');
                g_assert_null(a.str[4]);
                g_assert_cmpint(a.type[4], ==, '(');
                g_assert_cmpstr(a.str[5], ==, "five");
                g_free(m);
        }
}

static void test_get_args_max(void) {
        char sig[100];
        WireHeader h;
        WireArgs a;
        uint8_t *m;
        size_t size;
        Raw r;
        int i;

        memset(sig, 's', 70);
        sig[70] = 0;
        raw_call(&r, false, sig);
        raw_fields_end(&r);
        for (i = 0; i < 70; ++i) {
                char v[8];

                snprintf(v, sizeof(v), "%d", i);
                raw_s(&r, v);
        }
        m = raw_finish(&r, &size);
        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
        g_assert_cmpint(wire_message_get_args(m, &h, &a), ==, 0);
        g_assert_cmpuint(a.n_args, ==, 64);
        g_assert_cmpstr(a.str[63], ==, "63");
        g_free(m);
}

static void test_strerror(void) {
        int i;

        for (i = 0; i < _WIRE_E_N; ++i) {
                g_assert_nonnull(wire_strerror(i));
                g_assert_cmpstr(wire_strerror(i), !=, "unknown error");
        }
        g_assert_cmpstr(wire_strerror(_WIRE_E_N), ==, "unknown error");
        g_assert_cmpstr(wire_strerror(-1), ==, "unknown error");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/message/frame", test_frame);
        g_test_add_func("/wire/message/valid-header", test_valid_header);
        g_test_add_func("/wire/message/strings-into-buffer", test_strings_into_buffer);
        g_test_add_func("/wire/message/bad-type", test_bad_type);
        g_test_add_func("/wire/message/bad-serial", test_bad_serial);
        g_test_add_func("/wire/message/bad-field", test_bad_field);
        g_test_add_func("/wire/message/unknown-field", test_unknown_field);
        g_test_add_func("/wire/message/missing-field", test_missing_field);
        g_test_add_func("/wire/message/bad-names", test_bad_names);
        g_test_add_func("/wire/message/field-memo", test_field_memo);
        g_test_add_func("/wire/message/fields-memo", test_fields_memo);
        g_test_add_func("/wire/message/fixed-array-body", test_fixed_array_body);
        g_test_add_func("/wire/message/name-length", test_name_length);
        g_test_add_func("/wire/message/body", test_body);
        g_test_add_func("/wire/message/too-deep", test_too_deep);
        g_test_add_func("/wire/message/header-padding", test_header_padding);
        g_test_add_func("/wire/message/skip-body", test_skip_body);
        g_test_add_func("/wire/message/header-only", test_header_only);
        g_test_add_func("/wire/message/byte-array-body", test_byte_array_body);
        g_test_add_func("/wire/message/get-args", test_get_args);
        g_test_add_func("/wire/message/get-args-max", test_get_args_max);
        g_test_add_func("/wire/message/strerror", test_strerror);
        return g_test_run();
}
