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
                raw_field(&r, 99, "as");                /* unknown: dropped (HeaderFiltering) */
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

/* Header fields in a field array, in an order that depends on @seed; @mask picks them. */
enum {
        F_PATH, F_INTERFACE, F_MEMBER, F_ERROR, F_REPLY, F_DEST, F_SIG, F_FDS, F_UNKNOWN,
        F_SENDER, _F_N,
};

static void add_field(Raw *r, unsigned f) {
        switch (f) {
        case F_PATH: raw_field_s(r, 1, "o", "/org/example/a_long_path/x"); break;
        case F_INTERFACE: raw_field_s(r, 2, "s", "org.example.I"); break;
        case F_MEMBER: raw_field_s(r, 3, "s", "M"); break;
        case F_ERROR: raw_field_s(r, 4, "s", "org.example.Error.Odd1"); break;
        case F_REPLY: raw_field_u(r, 5, 1234); break;
        case F_DEST: raw_field_s(r, 6, "s", ":1.77"); break;
        case F_SIG: raw_field_s(r, 8, "g", "sy"); break;
        case F_FDS: raw_field_u(r, 9, 0); break;
        case F_UNKNOWN: raw_field(r, 99, "as"); raw_u32(r, 6); raw_s(r, "z"); break;
        case F_SENDER: raw_field_s(r, 7, "s", ":1.set_by_client"); break;
        }
}

/* Pointers compared as offsets into their message (or equal, when not into it). */
static void assert_same_ptr(const char *a, const uint8_t *ma, size_t na,
                            const char *b, const uint8_t *mb, size_t nb) {
        bool in_a = a && (const uint8_t *)a >= ma && (const uint8_t *)a < ma + na;
        bool in_b = b && (const uint8_t *)b >= mb && (const uint8_t *)b < mb + nb;

        g_assert_cmpint(in_a, ==, in_b);
        if (in_a)
                g_assert_cmpuint((const uint8_t *)a - ma, ==, (const uint8_t *)b - mb);
        else
                g_assert_true(a == b || (a && b && strcmp(a, b) == 0));
}

static void assert_same_header(const WireHeader *a, const uint8_t *ma,
                               const WireHeader *b, const uint8_t *mb, size_t size) {
        g_assert_cmpint(a->big_endian, ==, b->big_endian);
        g_assert_cmpuint(a->type, ==, b->type);
        g_assert_cmpuint(a->flags, ==, b->flags);
        g_assert_cmpuint(a->body_size, ==, b->body_size);
        g_assert_cmpuint(a->serial, ==, b->serial);
        g_assert_cmpuint(a->reply_serial, ==, b->reply_serial);
        g_assert_cmpuint(a->n_fds, ==, b->n_fds);
        g_assert_cmpuint(a->fields_size, ==, b->fields_size);
        g_assert_cmpuint(a->body_offset, ==, b->body_offset);
        g_assert_cmpuint(a->total_size, ==, b->total_size);
        g_assert_cmpuint(a->sender_field_offset, ==, b->sender_field_offset);
        g_assert_cmpuint(a->sender_field_size, ==, b->sender_field_size);
        assert_same_ptr(a->path, ma, size, b->path, mb, size);
        assert_same_ptr(a->interface, ma, size, b->interface, mb, size);
        assert_same_ptr(a->member, ma, size, b->member, mb, size);
        assert_same_ptr(a->error_name, ma, size, b->error_name, mb, size);
        assert_same_ptr(a->destination, ma, size, b->destination, mb, size);
        assert_same_ptr(a->sender, ma, size, b->sender, mb, size);
        assert_same_ptr(a->signature, ma, size, b->signature, mb, size);
}

static void check_derive(const uint8_t *m, size_t size, const char *sender) {
        WireHeader h, derived, parsed;
        uint8_t *st;
        size_t st_size;

        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
        st = g_malloc(sender ? wire_stamp_size_bound(&h, strlen(sender)) : size);
        if (sender)
                g_assert_cmpint(wire_message_stamp(m, &h, sender, st, &st_size), ==, 0);
        else {
                memcpy(st, m, size);
                st_size = size;
        }
        g_assert_cmpint(wire_stamp_derive_header(m, &h, sender, st, st_size, &derived), ==, 0);
        g_assert_cmpint(wire_message_parse(st, st_size, 0, WIRE_PARSE_SKIP_BODY, &parsed), ==, 0);
        assert_same_header(&derived, st, &parsed, st, st_size);
        if (sender) {
                /* the bus's one-pass stamp and derive: the same bytes, the same header */
                uint8_t *st2 = g_malloc(wire_stamp_size_bound(&h, strlen(sender)));
                WireHeader both;

                g_assert_cmpint(wire_message_stamp_derive(m, &h, sender, strlen(sender), st2,
                                                          &both), ==, 0);
                g_assert_cmpuint(both.total_size, ==, st_size);
                g_assert_cmpmem(st2, st_size, st, st_size);
                assert_same_header(&both, st2, &parsed, st, st_size);
                g_free(st2);
        }
        g_free(st);
}

static void test_derive(void) {
        static const char *const senders[] = { ":1.1", ":1.23456", ":1.4294967295", ":1.0000000",
                                               NULL };
        unsigned n = 0;

        for (int be = 0; be < 2; ++be)
                for (unsigned mask = 0; mask < (1u << _F_N); ++mask)
                        for (unsigned rot = 0; rot < _F_N; rot += 3) {
                                uint8_t *m;
                                size_t size;
                                Raw r;

                                /* type 9: unknown, so any subset of fields is a valid message */
                                raw_init(&r, be, 9, 0, 1 + mask);
                                for (unsigned i = 0; i < _F_N; ++i) {
                                        unsigned f = (i + rot) % _F_N;

                                        if (mask & (1u << f))
                                                add_field(&r, f);
                                }
                                raw_fields_end(&r);
                                if (mask & (1u << F_SIG)) {
                                        raw_s(&r, "body");
                                        raw_y(&r, (uint8_t)mask);
                                }
                                m = raw_finish(&r, &size);
                                for (size_t si = 0; si < G_N_ELEMENTS(senders); ++si) {
                                        check_derive(m, size, senders[si]);
                                        ++n;
                                }
                                g_free(m);
                        }
        /* and the real message types, with the SENDER at every position */
        for (int be = 0; be < 2; ++be)
                for (int where = SENDER_NONE; where <= SENDER_ONLY; ++where)
                        for (size_t si = 0; si < G_N_ELEMENTS(senders); ++si) {
                                size_t size;
                                uint8_t *m = make(be, where, &size);

                                check_derive(m, size, senders[si]);
                                g_free(m);
                                ++n;
                        }
        g_test_message("%u stamped headers derived and compared with a parse", n);
}

/* HeaderFiltering: fields of unknown codes do not survive stamping, every known one does. */
static void test_filter_unknown(void) {
        for (int be = 0; be < 2; ++be)
                for (unsigned rot = 0; rot < _F_N; ++rot) {
                        WireHeader h, h2;
                        uint8_t *m, *st;
                        size_t size, st_size;
                        Raw r;

                        raw_init(&r, be, 3 /* error */, 0, 5);
                        for (unsigned i = 0; i < _F_N; ++i)
                                add_field(&r, (i + rot) % _F_N);
                        raw_field(&r, 200, "(yv)");     /* a second unknown one, nested */
                        raw_pad(&r, 8);
                        raw_y(&r, 1);
                        raw_g(&r, "s");
                        raw_s(&r, "forged");
                        raw_fields_end(&r);
                        raw_s(&r, "body");
                        raw_y(&r, 7);
                        m = raw_finish(&r, &size);
                        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
                        g_assert_true(h.has_unknown_fields);
                        st = g_malloc(wire_stamp_size_bound(&h, 4));
                        g_assert_cmpint(wire_message_stamp(m, &h, ":1.9", st, &st_size), ==, 0);
                        g_assert_cmpuint(st_size, <=, wire_stamp_size_bound(&h, 4));
                        g_assert_cmpint(wire_message_parse(st, st_size, 0, 0, &h2), ==, 0);
                        g_assert_false(h2.has_unknown_fields);
                        g_assert_cmpstr(h2.sender, ==, ":1.9");
                        g_assert_cmpstr(h2.path, ==, h.path);
                        g_assert_cmpstr(h2.interface, ==, h.interface);
                        g_assert_cmpstr(h2.member, ==, h.member);
                        g_assert_cmpstr(h2.error_name, ==, h.error_name);
                        g_assert_cmpstr(h2.destination, ==, h.destination);
                        g_assert_cmpstr(h2.signature, ==, h.signature);
                        g_assert_cmpuint(h2.reply_serial, ==, h.reply_serial);
                        g_assert_cmpuint(h2.n_fds, ==, h.n_fds);
                        g_assert_cmpmem(st + h2.body_offset, h2.body_size,
                                        m + h.body_offset, h.body_size);
                        g_free(st);
                        g_free(m);
                }
}

static void test_derive_too_large(void) {
        WireHeader h, d;
        size_t size;
        uint8_t *m = make(false, SENDER_NONE, &size);

        g_assert_cmpint(wire_message_parse(m, size, 0, 0, &h), ==, 0);
        g_assert_cmpint(wire_stamp_derive_header(m, &h, ":1.1", m, WIRE_MAX_MESSAGE_SIZE + 1,
                                                 &d), ==, WIRE_E_TOO_LARGE);
        g_free(m);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/stamp/positions", test_stamp);
        g_test_add_func("/wire/stamp/derive-header", test_derive);
        g_test_add_func("/wire/stamp/derive-too-large", test_derive_too_large);
        g_test_add_func("/wire/stamp/filter-unknown-fields", test_filter_unknown);
        return g_test_run();
}
