/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Smoke test of wire/ as a whole: build a message with the writer, parse it, read it back,
 * stamp it, and have libdbus-1 accept what we produce and us accept what it produces.
 */
#include <dbus/dbus.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/stamp.h"
#include "wire/writer.h"

static void test_roundtrip(void) {
        WireWriter w;
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL, .serial = 7, .path = "/a/b",
                .interface = "org.example.Iface", .member = "Changed", .sender = ":1.9",
        };
        const char *strv[] = { "x", "yy", NULL };
        WireHeader h, h2;
        WireReader r;
        uint8_t *msg, *st, y = 0;
        size_t size, st_size;
        uint32_t u = 42, b = 1;
        uint64_t t = 0x1122334455667788u;
        double d = 2.5;
        const char *s;
        DBusMessage *m;
        DBusError err;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'y', &(uint8_t){ 5 }), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "héllo"), ==, 0);
        g_assert_cmpint(wire_writer_append_strv(&w, strv), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "{sv}"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, '{', NULL), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', "k"), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'v', "t"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 't', &t), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, '(', NULL), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'b', &b), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'd', &d), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpstr(w.signature, ==, "ysasa{sv}(ubd)");
        g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, 0);
        wire_writer_deinit(&w);

        g_assert_cmpint(wire_message_parse(msg, size, 0, 0, &h), ==, 0);
        g_assert_cmpstr(h.path, ==, "/a/b");
        g_assert_cmpstr(h.interface, ==, "org.example.Iface");
        g_assert_cmpstr(h.member, ==, "Changed");
        g_assert_cmpstr(h.sender, ==, ":1.9");
        g_assert_cmpstr(h.signature, ==, "ysasa{sv}(ubd)");
        g_assert_cmpuint(h.serial, ==, 7);

        wire_reader_init(&r, msg, &h);
        g_assert_cmpint(wire_reader_read_basic(&r, 'y', &y), ==, 0);
        g_assert_cmpuint(y, ==, 5);
        g_assert_cmpint(wire_reader_read_basic(&r, 's', &s), ==, 0);
        g_assert_cmpstr(s, ==, "héllo");
        g_assert_cmpint(wire_reader_skip(&r), ==, 0);
        g_assert_cmpint(wire_reader_enter(&r, 'a', "{sv}"), ==, 0);
        g_assert_cmpint(wire_reader_enter(&r, '{', "sv"), ==, 0);
        g_assert_cmpint(wire_reader_read_basic(&r, 's', &s), ==, 0);
        g_assert_cmpstr(s, ==, "k");
        g_assert_cmpint(wire_reader_enter(&r, 'v', "t"), ==, 0);
        t = 0;
        g_assert_cmpint(wire_reader_read_basic(&r, 't', &t), ==, 0);
        g_assert_cmpuint(t, ==, 0x1122334455667788u);
        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
        g_assert_cmpint(wire_reader_peek(&r), ==, 0);
        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
        g_assert_cmpint(wire_reader_enter(&r, '(', "ubd"), ==, 0);
        g_assert_cmpint(wire_reader_read_basic(&r, 'u', &u), ==, 0);
        g_assert_cmpuint(u, ==, 42);
        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
        g_assert_cmpint(wire_reader_peek(&r), ==, 0);

        st = g_malloc(wire_stamp_size_bound(&h, strlen(":1.1234")));
        g_assert_cmpint(wire_message_stamp(msg, &h, ":1.1234", st, &st_size), ==, 0);
        g_assert_cmpint(wire_message_parse(st, st_size, 0, 0, &h2), ==, 0);
        g_assert_cmpstr(h2.sender, ==, ":1.1234");
        g_assert_cmpstr(h2.member, ==, "Changed");
        g_assert_cmpuint(h2.body_size, ==, h.body_size);

        dbus_error_init(&err);
        m = dbus_message_demarshal((const char *)st, (int)st_size, &err);
        g_assert_false(dbus_error_is_set(&err));
        g_assert_nonnull(m);
        g_assert_cmpstr(dbus_message_get_sender(m), ==, ":1.1234");
        g_assert_cmpstr(dbus_message_get_signature(m), ==, "ysasa{sv}(ubd)");
        dbus_message_unref(m);
        g_free(st);
        free(msg);
}

static void test_from_libdbus(void) {
        DBusMessage *m;
        DBusMessageIter it, sub;
        const char *str = "v", *path = "/x";
        dbus_uint32_t u = 3;
        char *blob;
        int len;
        WireHeader h;
        WireArgs a;

        m = dbus_message_new_method_call("org.dest", "/obj/path", "org.ifc", "Meth");
        g_assert_nonnull(m);
        dbus_message_set_serial(m, 99);
        dbus_message_iter_init_append(m, &it);
        dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &str);
        dbus_message_iter_append_basic(&it, DBUS_TYPE_OBJECT_PATH, &path);
        dbus_message_iter_open_container(&it, DBUS_TYPE_VARIANT, "u", &sub);
        dbus_message_iter_append_basic(&sub, DBUS_TYPE_UINT32, &u);
        dbus_message_iter_close_container(&it, &sub);
        g_assert_true(dbus_message_marshal(m, &blob, &len));
        g_assert_cmpint(wire_message_parse(blob, (size_t)len, 0, 0, &h), ==, 0);
        g_assert_cmpstr(h.destination, ==, "org.dest");
        g_assert_cmpstr(h.path, ==, "/obj/path");
        g_assert_cmpstr(h.interface, ==, "org.ifc");
        g_assert_cmpstr(h.member, ==, "Meth");
        g_assert_cmpstr(h.signature, ==, "sov");
        g_assert_cmpuint(h.serial, ==, 99);
        g_assert_cmpint(wire_message_get_args(blob, &h, &a), ==, 0);
        g_assert_cmpuint(a.n_args, ==, 3);
        g_assert_cmpstr(a.str[0], ==, "v");
        g_assert_cmpstr(a.str[1], ==, "/x");
        g_assert_null(a.str[2]);
        g_assert_cmpint(a.type[2], ==, 'v');
        dbus_free(blob);
        dbus_message_unref(m);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/basic/roundtrip", test_roundtrip);
        g_test_add_func("/wire/basic/from-libdbus", test_from_libdbus);
        return g_test_run();
}
