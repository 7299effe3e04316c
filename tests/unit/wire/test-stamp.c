/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wire_message_stamp(): the client's SENDER (absent, first, in the middle, last, alone) is
 * replaced by ours, in the message's byte order; the result re-parses, keeps every other
 * field and the body bytes, and libdbus-1 accepts it.
 */
#include <dbus/dbus.h>
#include <glib.h>
#include <string.h>
#include "raw.h"
#include "wire/message.h"
#include "wire/stamp.h"

enum { SENDER_NONE, SENDER_FIRST, SENDER_MIDDLE, SENDER_LAST, SENDER_ONLY };

static uint8_t *make(bool be, int where, size_t *size) {
        Raw r;

        raw_init(&r, be, where == SENDER_ONLY ? 9 : 4, 0, 77);
        if (where == SENDER_FIRST || where == SENDER_ONLY)
                raw_field_s(&r, 7, "s", ":1.client_set_this_long_one");
        if (where != SENDER_ONLY) {
                raw_field_s(&r, 1, "o", "/a/b");
                raw_field_s(&r, 2, "s", "org.example.I");
                if (where == SENDER_MIDDLE)
                        raw_field_s(&r, 7, "s", "x.y");
                raw_field_s(&r, 3, "s", "Sig");
                raw_field(&r, 99, "as");                /* unknown field, kept */
                raw_u32(&r, 6);
                raw_s(&r, "z");
                raw_field_s(&r, 8, "g", "sy");
                if (where == SENDER_LAST)
                        raw_field_s(&r, 7, "s", ":9.9");
        }
        raw_fields_end(&r);
        if (where != SENDER_ONLY) {
                raw_s(&r, "body");
                raw_y(&r, 42);
        }
        return raw_finish(&r, size);
}

static void test_stamp(void) {
        static const char *const senders[] = { ":1.1", ":1.23456", ":1.4294967295", ":1.0000000" };

        for (int be = 0; be < 2; ++be)
                for (int where = SENDER_NONE; where <= SENDER_ONLY; ++where)
                        for (size_t si = 0; si < G_N_ELEMENTS(senders); ++si) {
                                const char *sender = senders[si];
                                WireHeader h, h2;
                                uint8_t *m, *st;
                                size_t size, st_size, bound;
                                DBusMessage *dm;
                                DBusError err;

                                m = make(be, where, &size);
                                g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
                                if (where == SENDER_NONE)
                                        g_assert_cmpuint(h.sender_field_offset, ==, 0);
                                else
                                        g_assert_cmpuint(h.sender_field_offset, >=, 16);
                                bound = wire_stamp_size_bound(&h, strlen(sender));
                                st = g_malloc(bound);
                                g_assert_cmpint(wire_message_stamp(m, &h, sender, st, &st_size), ==, 0);
                                g_assert_cmpuint(st_size, <=, bound);
                                g_assert_cmpint(wire_message_parse(st, st_size, 0, 0, &h2), ==, 0);
                                g_assert_cmpstr(h2.sender, ==, sender);
                                g_assert_cmpint(h2.big_endian, ==, be);
                                g_assert_cmpuint(h2.serial, ==, 77);
                                g_assert_cmpuint(h2.type, ==, h.type);
                                g_assert_cmpstr(h2.path, ==, h.path);
                                g_assert_cmpstr(h2.interface, ==, h.interface);
                                g_assert_cmpstr(h2.member, ==, h.member);
                                g_assert_cmpstr(h2.signature, ==, h.signature);
                                g_assert_cmpuint(h2.body_size, ==, h.body_size);
                                g_assert_cmpmem(st + h2.body_offset, h2.body_size,
                                                m + h.body_offset, h.body_size);
                                /* stamping twice gives the same bytes */
                                {
                                        uint8_t *st2 = g_malloc(wire_stamp_size_bound(&h2, strlen(sender)));
                                        size_t st2_size;

                                        g_assert_cmpint(wire_message_stamp(st, &h2, sender, st2,
                                                                           &st2_size), ==, 0);
                                        g_assert_cmpmem(st2, st2_size, st, st_size);
                                        g_free(st2);
                                }
                                if (h.type <= 4) {
                                        dbus_error_init(&err);
                                        dm = dbus_message_demarshal((const char *)st, (int)st_size, &err);
                                        if (!dm)
                                                g_error("libdbus rejects: %s", err.message);
                                        g_assert_cmpstr(dbus_message_get_sender(dm), ==, sender);
                                        g_assert_cmpstr(dbus_message_get_member(dm), ==, "Sig");
                                        dbus_message_unref(dm);
                                }
                                g_free(st);
                                g_free(m);
                        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/stamp/positions", test_stamp);
        return g_test_run();
}
