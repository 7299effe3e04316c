/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* wire/writer.h: bodies, type checking, sticky errors, wire_message_build(). */
#include <dbus/dbus.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include "wire/message.h"
#include "wire/writer.h"

/* build a call around @w, parse it back, and have libdbus accept it */
static void check_build(WireWriter *w, const char *want_sig) {
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 3, .path = "/", .member = "M" };
        DBusMessage *m;
        DBusError err;
        WireHeader h;
        uint8_t *msg;
        size_t size;

        g_assert_cmpint(wire_message_build(&spec, w, &msg, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(msg, size, 0, 0, &h), ==, 0);
        g_assert_cmpstr(h.signature, ==, want_sig);
        g_assert_cmpuint(h.body_size, ==, w->size);
        dbus_error_init(&err);
        m = dbus_message_demarshal((const char *)msg, (int)size, &err);
        g_assert_false(dbus_error_is_set(&err));
        g_assert_cmpstr(dbus_message_get_signature(m), ==, want_sig);
        dbus_message_unref(m);
        free(msg);
}

static void test_basic_types(void) {
        WireWriter w;
        uint8_t y = 1;
        uint32_t b = 0, u = 2, hh = 0;
        int16_t n = -2;
        uint16_t q = 3;
        int32_t i = -4;
        int64_t x = -5;
        uint64_t t = 6;
        double d = 7.5;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'y', &y), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'b', &b), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'n', &n), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'q', &q), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'i', &i), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'x', &x), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 't', &t), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'd', &d), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "str"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'o', "/o"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'g', "a{sv}"), ==, 0);
        g_assert_cmpstr(w.signature, ==, "ybnqiuxtdsog");
        /* y@0 pad b@4 n@8 q@10 i@12 u@16 pad x@24 t@32 d@40 s@48(4+3+1) o@56(4+2+1) g@63(1+5+1) */
        g_assert_cmpuint(w.size, ==, 70);
        g_assert_cmpuint(w.data[0], ==, 1);
        g_assert_cmpuint(w.data[8], ==, 0xfe);  /* -2 little-endian */
        g_assert_cmpuint(w.data[9], ==, 0xff);
        check_build(&w, "ybnqiuxtdsog");
        wire_writer_deinit(&w);

        /* 'h' needs UNIX_FDS: checked by parse, not by the writer */
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &hh), ==, 0);
        g_assert_cmpstr(w.signature, ==, "h");
        wire_writer_deinit(&w);
}

static void test_containers(void) {
        const char *strv[] = { "a", "b", NULL };
        WireWriter w;
        uint32_t u = 1;
        uint64_t t = 9;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "a{sv}"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "{sv}"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, '{', NULL), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "k"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'v', "as"), ==, 0);
        g_assert_cmpint(wire_writer_append_strv(&w, strv), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, '{', NULL), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "k2"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'v', "(ut)"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, '(', NULL), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 't', &t), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "{sv}"), ==, 0);    /* empty */
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "t"), ==, 0);       /* empty, padded to 8 */
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, '(', NULL), ==, 0);      /* free struct */
        g_assert_cmpint(wire_writer_open(&w, '(', NULL), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "x"), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_append_strv(&w, strv), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpstr(w.signature, ==, "aa{sv}at((s)as)");
        check_build(&w, "aa{sv}at((s)as)");
        wire_writer_deinit(&w);
}

static void test_errors(void) {
        WireWriter w;
        uint32_t u = 1, two = 2;
        uint8_t *msg = NULL;
        size_t size;
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 3, .path = "/", .member = "M" };

        /* wrong type inside an array; and the error sticks */
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "s"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, WIRE_E_BAD_SIGNATURE);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "ok"), ==, WIRE_E_BAD_SIGNATURE);
        g_assert_cmpint(wire_writer_close(&w), ==, WIRE_E_BAD_SIGNATURE);
        g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, WIRE_E_BAD_SIGNATURE);
        g_assert_null(msg);
        wire_writer_deinit(&w);

#define EXPECT_FIRST(call, code)                                                  \
        do {                                                                    \
                wire_writer_init(&w);                                           \
                call;                                                           \
                g_assert_cmpint(w.error, ==, code);                             \
                wire_writer_deinit(&w);                                         \
        } while (0)

        EXPECT_FIRST(wire_writer_append_basic(&w, 'b', &two), WIRE_E_BAD_BOOLEAN);
        EXPECT_FIRST(wire_writer_append_basic(&w, 's', "\xc0\x80"), WIRE_E_BAD_STRING);
        EXPECT_FIRST(wire_writer_append_basic(&w, 'o', "x"), WIRE_E_BAD_PATH);
        EXPECT_FIRST(wire_writer_append_basic(&w, 'g', "a"), WIRE_E_BAD_SIGNATURE);
        EXPECT_FIRST(wire_writer_append_basic(&w, 'v', "x"), WIRE_E_BAD_SIGNATURE);
        EXPECT_FIRST(wire_writer_append_basic(&w, 'z', "x"), WIRE_E_BAD_SIGNATURE);
        EXPECT_FIRST(wire_writer_open(&w, 'a', "ss"), WIRE_E_BAD_SIGNATURE);
        EXPECT_FIRST(wire_writer_open(&w, 'a', NULL), WIRE_E_BAD_SIGNATURE);
        EXPECT_FIRST(wire_writer_open(&w, 'v', "ss"), WIRE_E_BAD_VARIANT);
        EXPECT_FIRST(wire_writer_open(&w, 'v', ""), WIRE_E_BAD_VARIANT);
        EXPECT_FIRST(wire_writer_open(&w, 'x', NULL), WIRE_E_BAD_SIGNATURE);
        EXPECT_FIRST(wire_writer_open(&w, '{', NULL), WIRE_E_BAD_DICT);
        EXPECT_FIRST(wire_writer_close(&w), WIRE_E_BAD_SIGNATURE);
        /* empty struct */
        EXPECT_FIRST((wire_writer_open(&w, '(', NULL), wire_writer_close(&w)), WIRE_E_BAD_SIGNATURE);
        /* dict entry with one member */
        EXPECT_FIRST((wire_writer_open(&w, 'a', "{sv}"), wire_writer_open(&w, '{', NULL),
                      wire_writer_append_basic(&w, 's', "k"), wire_writer_close(&w)),
                     WIRE_E_BAD_DICT);
        /* dict entry in an array of structs */
        EXPECT_FIRST((wire_writer_open(&w, 'a', "(sv)"), wire_writer_open(&w, '{', NULL)),
                     WIRE_E_BAD_DICT);
        /* variant closed before its value */
        EXPECT_FIRST((wire_writer_open(&w, 'v', "s"), wire_writer_close(&w)), WIRE_E_BAD_SIGNATURE);
        /* variant with two values */
        EXPECT_FIRST((wire_writer_open(&w, 'v', "u"), wire_writer_append_basic(&w, 'u', &u),
                      wire_writer_append_basic(&w, 'u', &u)), WIRE_E_BAD_SIGNATURE);
        /* array element left incomplete */
        EXPECT_FIRST((wire_writer_open(&w, 'a', "(uu)"), wire_writer_open(&w, '(', NULL),
                      wire_writer_append_basic(&w, 'u', &u), wire_writer_close(&w)),
                     WIRE_E_BAD_SIGNATURE);

        /* a container left open at build time */
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "u"), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, WIRE_E_BAD_SIGNATURE);
        wire_writer_deinit(&w);

        /* too deep */
        wire_writer_init(&w);
        for (int i = 0; i < 33; ++i)
                (void) wire_writer_open(&w, '(', NULL);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
        for (int i = 0; i < 33; ++i)
                (void) wire_writer_close(&w);
        g_assert_cmpint(w.error, ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, WIRE_E_TOO_DEEP);
        wire_writer_deinit(&w);
        wire_writer_init(&w);
        for (int i = 0; i < 65; ++i)
                (void) wire_writer_open(&w, 'v', "v");
        g_assert_cmpint(w.error, ==, WIRE_E_TOO_DEEP);
        wire_writer_deinit(&w);
}

static void test_build(void) {
        struct {
                WireMsgSpec spec;
                int want;
        } cases[] = {
                { { .type = 0, .serial = 1 }, WIRE_E_BAD_TYPE },
                { { .type = 1, .serial = 0, .path = "/", .member = "M" }, WIRE_E_BAD_SERIAL },
                { { .type = 1, .serial = 1, .member = "M" }, WIRE_E_MISSING_FIELD },
                { { .type = 1, .serial = 1, .path = "/" }, WIRE_E_MISSING_FIELD },
                { { .type = 2, .serial = 1 }, WIRE_E_MISSING_FIELD },
                { { .type = 3, .serial = 1, .reply_serial = 1 }, WIRE_E_MISSING_FIELD },
                { { .type = 3, .serial = 1, .error_name = "a.b" }, WIRE_E_MISSING_FIELD },
                { { .type = 4, .serial = 1, .path = "/", .member = "M" }, WIRE_E_MISSING_FIELD },
                { { .type = 1, .serial = 1, .path = "x", .member = "M" }, WIRE_E_BAD_PATH },
                { { .type = 1, .serial = 1, .path = "/org/freedesktop/DBus/Local", .member = "M" },
                  WIRE_E_LOCAL_PATH },
                { { .type = 1, .serial = 1, .path = "/", .member = "M",
                    .interface = "org.freedesktop.DBus.Local" }, WIRE_E_LOCAL_PATH },
                { { .type = 1, .serial = 1, .path = "/", .member = "M", .interface = "x" },
                  WIRE_E_BAD_INTERFACE },
                { { .type = 1, .serial = 1, .path = "/", .member = "M.x" }, WIRE_E_BAD_MEMBER },
                { { .type = 3, .serial = 1, .reply_serial = 1, .error_name = "E" },
                  WIRE_E_BAD_ERROR_NAME },
                { { .type = 1, .serial = 1, .path = "/", .member = "M", .destination = "d" },
                  WIRE_E_BAD_BUS_NAME },
                { { .type = 1, .serial = 1, .path = "/", .member = "M", .sender = ":1." },
                  WIRE_E_BAD_BUS_NAME },
                { { .type = 2, .serial = 1, .reply_serial = 5, .destination = ":1.1",
                    .sender = "org.freedesktop.DBus", .n_fds = 0 }, 0 },
                { { .type = 3, .serial = 2, .reply_serial = 5, .destination = ":1.1",
                    .error_name = "org.freedesktop.DBus.Error.Failed" }, 0 },
                { { .type = 4, .serial = 3, .path = "/org/freedesktop/DBus",
                    .interface = "org.freedesktop.DBus", .member = "NameOwnerChanged",
                    .flags = WIRE_FLAG_NO_REPLY_EXPECTED }, 0 },
                { { .type = 7, .serial = 4 }, 0 },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); ++i) {
                uint8_t *msg = NULL;
                size_t size;
                WireHeader h;

                g_assert_cmpint(wire_message_build(&cases[i].spec, NULL, &msg, &size), ==,
                                cases[i].want);
                if (cases[i].want) {
                        g_assert_null(msg);
                        continue;
                }
                g_assert_cmpint(wire_message_parse(msg, size, 0, 0, &h), ==, 0);
                g_assert_cmpuint(h.type, ==, cases[i].spec.type);
                g_assert_cmpuint(h.flags, ==, cases[i].spec.flags);
                g_assert_cmpuint(h.serial, ==, cases[i].spec.serial);
                g_assert_cmpuint(h.reply_serial, ==, cases[i].spec.reply_serial);
                g_assert_cmpstr(h.path, ==, cases[i].spec.path);
                g_assert_cmpstr(h.interface, ==, cases[i].spec.interface);
                g_assert_cmpstr(h.member, ==, cases[i].spec.member);
                g_assert_cmpstr(h.error_name, ==, cases[i].spec.error_name);
                g_assert_cmpstr(h.destination, ==, cases[i].spec.destination);
                g_assert_cmpstr(h.sender, ==, cases[i].spec.sender);
                g_assert_false(h.big_endian);
                if (cases[i].spec.type <= 4) {
                        DBusError err;
                        DBusMessage *m;

                        dbus_error_init(&err);
                        m = dbus_message_demarshal((const char *)msg, (int)size, &err);
                        g_assert_nonnull(m);
                        g_assert_cmpuint(dbus_message_get_serial(m), ==, cases[i].spec.serial);
                        dbus_message_unref(m);
                }
                free(msg);
        }
}

static void test_build_fds(void) {
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 3, .path = "/", .member = "M",
                             .n_fds = 2 };
        WireWriter w;
        WireHeader h;
        uint32_t idx = 1;
        uint8_t *msg;
        size_t size;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &idx), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(msg, size, 2, 0, &h), ==, 0);
        g_assert_cmpuint(h.n_fds, ==, 2);
        g_assert_cmpint(wire_message_parse(msg, size, 1, 0, &h), ==, WIRE_E_BAD_FD_INDEX);
        free(msg);
        spec.n_fds = 1;
        g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, 0);
        /* index 1 with one fd: libdbus does not check 'h' values, nor do we */
        g_assert_cmpint(wire_message_parse(msg, size, 1, 0, &h), ==, 0);
        free(msg);
        wire_writer_deinit(&w);
}

/* WIRE_PARSE_BUILT (the bus's own messages) reads the same header as a full check does. */
static void test_parse_built(void) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL, .flags = WIRE_FLAG_NO_REPLY_EXPECTED, .serial = 7,
                .path = "/org/freedesktop/DBus", .interface = "org.freedesktop.DBus",
                .member = "NameOwnerChanged", .destination = ":1.5",
                .sender = "org.freedesktop.DBus", .n_fds = 1,
        };
        WireHeader full, built;
        WireWriter w;
        uint8_t *m;
        size_t size;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', ":1.5"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', ""), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', ":1.5"), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &m, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(m, size, 1, WIRE_PARSE_SKIP_BODY, &full), ==, 0);
        g_assert_cmpint(wire_message_parse(m, size, 1, WIRE_PARSE_SKIP_BODY | WIRE_PARSE_BUILT,
                                           &built), ==, 0);
        g_assert_cmpuint(built.type, ==, full.type);
        g_assert_cmpuint(built.flags, ==, full.flags);
        g_assert_cmpuint(built.serial, ==, full.serial);
        g_assert_cmpuint(built.body_offset, ==, full.body_offset);
        g_assert_cmpuint(built.total_size, ==, full.total_size);
        g_assert_cmpuint(built.sender_field_offset, ==, full.sender_field_offset);
        g_assert_cmpuint(built.sender_field_size, ==, full.sender_field_size);
        g_assert_true(built.path == full.path && built.interface == full.interface &&
                      built.member == full.member && built.destination == full.destination &&
                      built.sender == full.sender && built.signature == full.signature);
        g_assert_cmpstr(built.member, ==, "NameOwnerChanged");
        g_assert_cmpstr(built.signature, ==, "sss");
        g_assert_cmpuint(built.n_fds, ==, 1);
        /* framing is still checked: a cut message does not parse */
        g_assert_cmpint(wire_message_parse(m, size - 1, 1, WIRE_PARSE_SKIP_BODY | WIRE_PARSE_BUILT,
                                           &built), !=, 0);
        free(m);
        wire_writer_deinit(&w);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/writer/basic-types", test_basic_types);
        g_test_add_func("/wire/writer/containers", test_containers);
        g_test_add_func("/wire/writer/errors", test_errors);
        g_test_add_func("/wire/writer/build", test_build);
        g_test_add_func("/wire/writer/build-fds", test_build_fds);
        g_test_add_func("/wire/writer/parse-built", test_parse_built);
        return g_test_run();
}
