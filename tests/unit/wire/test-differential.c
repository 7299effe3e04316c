/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Differential tests against two independent implementations. Random typed values (nested
 * arrays, structs, dicts, variants) are appended both through libdbus-1 and through our
 * writer: the bodies must be byte-identical, our parser must accept libdbus's message with
 * the same header, libdbus must accept our built and our stamped messages. GDBus re-encodes
 * the same messages big-endian: we must accept them and read the same values.
 */
#include <dbus/dbus.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/stamp.h"
#include "wire/writer.h"

static const char basic_types[] = "ybnqiuxtdsog";

static void gen_type(GRand *rnd, unsigned depth, GString *sig) {
        unsigned k = g_rand_int_range(rnd, 0, depth >= 4 ? 60 : 100);

        if (k < 60) {
                g_string_append_c(sig, basic_types[g_rand_int_range(rnd, 0, sizeof(basic_types) - 1)]);
        } else if (k < 73) {
                g_string_append_c(sig, 'a');
                gen_type(rnd, depth + 1, sig);
        } else if (k < 83) {
                unsigned n = g_rand_int_range(rnd, 1, 4);

                g_string_append_c(sig, '(');
                while (n--)
                        gen_type(rnd, depth + 1, sig);
                g_string_append_c(sig, ')');
        } else if (k < 93) {
                g_string_append_c(sig, 'v');
        } else {
                g_string_append(sig, "a{");
                g_string_append_c(sig, basic_types[g_rand_int_range(rnd, 0, sizeof(basic_types) - 1)]);
                gen_type(rnd, depth + 1, sig);
                g_string_append_c(sig, '}');
        }
}

static const char *const strings[] = { "", "a", "héllo wörld", "\xf0\x9f\x98\x80 emoji", "0123456789abcdef" };
static const char *const paths[] = { "/", "/a", "/org/freedesktop/DBus", "/x/y_1/Z" };
static const char *const sigs[] = { "", "s", "a{sv}", "(ii)av" };

/* append one value of the complete type at *t to both encoders; advances *t */
static void gen_value(GRand *rnd, unsigned depth, const char **t, DBusMessageIter *it, WireWriter *w) {
        char c = *(*t)++;
        DBusMessageIter sub;

        switch (c) {
        case 'y': {
                uint8_t v = (uint8_t)g_rand_int(rnd);

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, &v);
                return;
        }
        case 'b': {
                dbus_bool_t v = g_rand_boolean(rnd);
                uint32_t v32 = v;

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, &v32);
                return;
        }
        case 'n':
        case 'q': {
                uint16_t v = (uint16_t)g_rand_int(rnd);

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, &v);
                return;
        }
        case 'i':
        case 'u': {
                uint32_t v = g_rand_int(rnd);

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, &v);
                return;
        }
        case 'x':
        case 't': {
                uint64_t v = ((uint64_t)g_rand_int(rnd) << 32) | g_rand_int(rnd);

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, &v);
                return;
        }
        case 'd': {
                double v = g_rand_double_range(rnd, -1e9, 1e9);

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, &v);
                return;
        }
        case 's':
        case 'o':
        case 'g': {
                const char *v = c == 's' ? strings[g_rand_int_range(rnd, 0, G_N_ELEMENTS(strings))] :
                                c == 'o' ? paths[g_rand_int_range(rnd, 0, G_N_ELEMENTS(paths))] :
                                sigs[g_rand_int_range(rnd, 0, G_N_ELEMENTS(sigs))];

                dbus_message_iter_append_basic(it, c, &v);
                wire_writer_append_basic(w, c, v);
                return;
        }
        case 'v': {
                GString *inner = g_string_new(NULL);
                const char *p;

                gen_type(rnd, depth + 1, inner);
                dbus_message_iter_open_container(it, DBUS_TYPE_VARIANT, inner->str, &sub);
                wire_writer_open(w, 'v', inner->str);
                p = inner->str;
                gen_value(rnd, depth + 1, &p, &sub, w);
                dbus_message_iter_close_container(it, &sub);
                wire_writer_close(w);
                g_string_free(inner, TRUE);
                return;
        }
        case 'a': {
                const char *elem = *t;
                size_t len = 0;
                unsigned n = g_rand_int_range(rnd, 0, 4);
                char *esig;

                for (unsigned open = 0;;) {
                        /* length of the element type */
                        char e = elem[len++];

                        if (e == 'a')
                                continue;
                        if (e == '(' || e == '{')
                                ++open;
                        else if (e == ')' || e == '}')
                                --open;
                        if (open == 0)
                                break;
                }
                esig = g_strndup(elem, len);
                dbus_message_iter_open_container(it, DBUS_TYPE_ARRAY, esig, &sub);
                wire_writer_open(w, 'a', esig);
                while (n--) {
                        const char *p = elem;

                        gen_value(rnd, depth + 1, &p, &sub, w);
                }
                dbus_message_iter_close_container(it, &sub);
                wire_writer_close(w);
                *t = elem + len;
                g_free(esig);
                return;
        }
        case '(':
        case '{':
                dbus_message_iter_open_container(it, c == '(' ? DBUS_TYPE_STRUCT : DBUS_TYPE_DICT_ENTRY,
                                                 NULL, &sub);
                wire_writer_open(w, c, NULL);
                while (**t != ')' && **t != '}')
                        gen_value(rnd, depth + 1, t, &sub, w);
                ++*t;
                dbus_message_iter_close_container(it, &sub);
                wire_writer_close(w);
                return;
        }
        g_assert_not_reached();
}

/* a canonical text of the body, via our reader (independent of the byte order) */
static void dump(WireReader *r, GString *out) {
        char t;

        while ((t = wire_reader_peek(r))) {
                union {
                        uint8_t y;
                        uint16_t q;
                        uint32_t u;
                        uint64_t t;
                        const char *s;
                } v;

                switch (t) {
                case 'a':
                case '(':
                case '{':
                case 'v':
                        g_assert_cmpint(wire_reader_enter(r, t, NULL), ==, 0);
                        g_string_append_printf(out, "%c[", t);
                        dump(r, out);
                        g_string_append(out, "]");
                        g_assert_cmpint(wire_reader_exit(r), ==, 0);
                        break;
                default:
                        g_assert_cmpint(wire_reader_read_basic(r, t, &v), ==, 0);
                        switch (t) {
                        case 'y':
                                g_string_append_printf(out, "y%u ", v.y);
                                break;
                        case 'n':
                        case 'q':
                                g_string_append_printf(out, "%c%u ", t, v.q);
                                break;
                        case 'b':
                        case 'i':
                        case 'u':
                        case 'h':
                                g_string_append_printf(out, "%c%u ", t, v.u);
                                break;
                        case 'x':
                        case 't':
                        case 'd':
                                g_string_append_printf(out, "%c%" G_GUINT64_FORMAT " ", t, v.t);
                                break;
                        default:
                                g_string_append_printf(out, "%c'%s' ", t, v.s);
                                break;
                        }
                }
        }
}

static char *dump_message(const uint8_t *m, const WireHeader *h) {
        GString *out = g_string_new(NULL);
        WireReader r;

        wire_reader_init(&r, m, h);
        dump(&r, out);
        g_assert_cmpuint(r.pos, ==, h->body_size);
        return g_string_free(out, FALSE);
}

static void check_header(const WireHeader *h, DBusMessage *m) {
        g_assert_cmpuint(h->type, ==, dbus_message_get_type(m));
        g_assert_cmpuint(h->serial, ==, dbus_message_get_serial(m));
        g_assert_cmpuint(h->reply_serial, ==, dbus_message_get_reply_serial(m));
        g_assert_cmpstr(h->path, ==, dbus_message_get_path(m));
        g_assert_cmpstr(h->interface, ==, dbus_message_get_interface(m));
        g_assert_cmpstr(h->member, ==, dbus_message_get_member(m));
        g_assert_cmpstr(h->error_name, ==, dbus_message_get_error_name(m));
        g_assert_cmpstr(h->destination, ==, dbus_message_get_destination(m));
        g_assert_cmpstr(h->sender, ==, dbus_message_get_sender(m));
        g_assert_cmpstr(h->signature, ==, dbus_message_get_signature(m));
        g_assert_cmpint(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED, ==,
                        dbus_message_get_no_reply(m) ? WIRE_FLAG_NO_REPLY_EXPECTED : 0);
}

static DBusMessage *new_message(unsigned kind, uint32_t serial) {
        DBusMessage *m = NULL;

        switch (kind % 4) {
        case 0:
                m = dbus_message_new_method_call(kind & 4 ? "org.example.Dest" : NULL, "/org/example",
                                                 kind & 8 ? "org.example.Iface" : NULL, "Method");
                break;
        case 1:
                m = dbus_message_new(DBUS_MESSAGE_TYPE_METHOD_RETURN);
                dbus_message_set_reply_serial(m, serial + 1000);
                break;
        case 2:
                m = dbus_message_new(DBUS_MESSAGE_TYPE_ERROR);
                dbus_message_set_reply_serial(m, serial + 1000);
                dbus_message_set_error_name(m, "org.example.Error.Bad");
                break;
        default:
                m = dbus_message_new_signal("/a/b_c", "org.example.Sig", "Happened");
                break;
        }
        if (kind & 16)
                dbus_message_set_sender(m, ":1.77");
        if ((kind & 32) && kind % 4 != 0)
                dbus_message_set_destination(m, ":1.3");
        if (kind & 64)
                dbus_message_set_no_reply(m, TRUE);
        dbus_message_set_serial(m, serial);
        return m;
}

static void test_random(void) {
        unsigned n_be = 0;

        for (unsigned i = 0; i < 400; ++i) {
                GRand *rnd = g_rand_new_with_seed(i);
                GString *sig = g_string_new(NULL);
                DBusMessage *m = new_message(g_rand_int(rnd), i + 1), *dm;
                DBusMessageIter it;
                DBusError err;
                WireWriter w;
                WireHeader h, h2, hb;
                unsigned n_args = g_rand_int_range(rnd, 0, 5);
                char *blob, *text, *text_be;
                const char *p;
                uint8_t *ours, *st;
                size_t ours_size, st_size;
                int blob_len;

                for (unsigned a = 0; a < n_args; ++a)
                        gen_type(rnd, 0, sig);
                dbus_message_iter_init_append(m, &it);
                wire_writer_init(&w);
                for (p = sig->str; *p;)
                        gen_value(rnd, 0, &p, &it, &w);
                g_assert_cmpint(w.error, ==, 0);
                g_assert_cmpstr(w.signature, ==, sig->str);
                g_assert_true(dbus_message_marshal(m, &blob, &blob_len));

                /* libdbus -> ours */
                g_assert_cmpint(wire_message_parse(blob, (size_t)blob_len, 0, 0, &h), ==, 0);
                check_header(&h, m);
                g_assert_cmpmem(blob + h.body_offset, h.body_size, w.data, w.size);
                text = dump_message((const uint8_t *)blob, &h);

                /* ours (stamped) -> libdbus */
                st = g_malloc(wire_stamp_size_bound(&h, 8));
                g_assert_cmpint(wire_message_stamp(blob, &h, ":1.1234", st, &st_size), ==, 0);
                g_assert_cmpint(wire_message_parse(st, st_size, 0, 0, &h2), ==, 0);
                dbus_error_init(&err);
                dm = dbus_message_demarshal((const char *)st, (int)st_size, &err);
                if (!dm)
                        g_error("libdbus rejects our stamped message: %s", err.message);
                g_assert_cmpstr(dbus_message_get_sender(dm), ==, ":1.1234");
                dbus_message_set_sender(m, ":1.1234");
                check_header(&h2, dm);
                dbus_message_unref(dm);
                g_free(st);

                /* ours (built) -> libdbus */
                {
                        WireMsgSpec spec = {
                                .type = h.type, .flags = h.flags, .serial = h.serial,
                                .reply_serial = h.reply_serial, .path = h.path,
                                .interface = h.interface, .member = h.member,
                                .error_name = h.error_name, .destination = h.destination,
                                .sender = h.sender,
                        };

                        g_assert_cmpint(wire_message_build(&spec, &w, &ours, &ours_size), ==, 0);
                        dm = dbus_message_demarshal((const char *)ours, (int)ours_size, &err);
                        if (!dm)
                                g_error("libdbus rejects our built message: %s", err.message);
                        g_assert_cmpint(wire_message_parse(ours, ours_size, 0, 0, &h2), ==, 0);
                        check_header(&h2, dm);
                        dbus_message_unref(dm);
                        free(ours);
                }

                /* GDBus, big-endian -> ours */
                {
                        GDBusMessage *gm;
                        GError *gerr = NULL;
                        guchar *be;
                        gsize be_size;

                        gm = g_dbus_message_new_from_blob((guchar *)blob, (gsize)blob_len, 0, &gerr);
                        g_assert_no_error(gerr);
                        g_dbus_message_set_byte_order(gm, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN);
                        be = g_dbus_message_to_blob(gm, &be_size, 0, &gerr);
                        g_assert_no_error(gerr);
                        g_assert_cmpint(be[0], ==, 'B');
                        g_assert_cmpint(wire_message_parse(be, be_size, 0, 0, &hb), ==, 0);
                        g_assert_true(hb.big_endian);
                        g_assert_cmpstr(hb.path, ==, g_dbus_message_get_path(gm));
                        g_assert_cmpstr(hb.interface, ==, g_dbus_message_get_interface(gm));
                        g_assert_cmpstr(hb.member, ==, g_dbus_message_get_member(gm));
                        g_assert_cmpstr(hb.error_name, ==, g_dbus_message_get_error_name(gm));
                        g_assert_cmpstr(hb.destination, ==, g_dbus_message_get_destination(gm));
                        g_assert_cmpstr(hb.sender, ==, g_dbus_message_get_sender(gm));
                        g_assert_cmpuint(hb.serial, ==, g_dbus_message_get_serial(gm));
                        g_assert_cmpuint(hb.reply_serial, ==, g_dbus_message_get_reply_serial(gm));
                        g_assert_cmpstr(hb.signature, ==, sig->str);
                        text_be = dump_message(be, &hb);
                        g_assert_cmpstr(text_be, ==, text);
                        /* stamp big-endian: still big-endian, and libdbus agrees */
                        st = g_malloc(wire_stamp_size_bound(&hb, 5));
                        g_assert_cmpint(wire_message_stamp(be, &hb, ":1.99", st, &st_size), ==, 0);
                        g_assert_cmpint(st[0], ==, 'B');
                        g_assert_cmpint(wire_message_parse(st, st_size, 0, 0, &h2), ==, 0);
                        g_assert_cmpstr(h2.sender, ==, ":1.99");
                        dm = dbus_message_demarshal((const char *)st, (int)st_size, &err);
                        if (!dm)
                                g_error("libdbus rejects our big-endian stamped message: %s", err.message);
                        g_assert_cmpstr(dbus_message_get_sender(dm), ==, ":1.99");
                        dbus_message_unref(dm);
                        g_free(st);
                        g_free(text_be);
                        g_free(be);
                        g_object_unref(gm);
                        ++n_be;
                }

                g_free(text);
                dbus_free(blob);
                wire_writer_deinit(&w);
                dbus_message_unref(m);
                g_string_free(sig, TRUE);
                g_rand_free(rnd);
        }
        g_assert_cmpuint(n_be, ==, 400);
}

static void test_unix_fds(void) {
        DBusMessage *m = dbus_message_new_method_call(NULL, "/", NULL, "Fds");
        int fd0 = STDIN_FILENO, fd1 = STDERR_FILENO;
        DBusMessageIter it;
        WireHeader h;
        WireReader r;
        uint32_t idx;
        char *blob;
        int len;

        dbus_message_set_serial(m, 1);
        dbus_message_iter_init_append(m, &it);
        g_assert_true(dbus_message_iter_append_basic(&it, DBUS_TYPE_UNIX_FD, &fd0));
        g_assert_true(dbus_message_iter_append_basic(&it, DBUS_TYPE_UNIX_FD, &fd1));
        g_assert_true(dbus_message_iter_append_basic(&it, DBUS_TYPE_UNIX_FD, &fd0));
        g_assert_true(dbus_message_marshal(m, &blob, &len));
        /* libdbus keeps one duplicate per appended fd: three */
        g_assert_cmpint(wire_message_parse(blob, (size_t)len, 3, 0, &h), ==, 0);
        g_assert_cmpuint(h.n_fds, ==, 3);
        g_assert_cmpstr(h.signature, ==, "hhh");
        wire_reader_init(&r, blob, &h);
        g_assert_cmpint(wire_reader_read_basic(&r, 'h', &idx), ==, 0);
        g_assert_cmpuint(idx, ==, 0);
        g_assert_cmpint(wire_reader_read_basic(&r, 'h', &idx), ==, 0);
        g_assert_cmpuint(idx, ==, 1);
        g_assert_cmpint(wire_reader_read_basic(&r, 'h', &idx), ==, 0);
        g_assert_cmpuint(idx, ==, 2);
        g_assert_cmpint(wire_message_parse(blob, (size_t)len, 2, 0, &h), ==, WIRE_E_BAD_FD_INDEX);
        g_assert_cmpint(wire_message_parse(blob, (size_t)len, 4, 0, &h), ==, 0);
        dbus_free(blob);
        dbus_message_unref(m);
}

/* GDBus messages of every type with every header field, in both byte orders */
/*
 * 'h' values past UNIX_FDS: libdbus's validation (what dbus-daemon 1.14.10 applies to
 * everything it receives) accepts them, and dbus-daemon delivers such messages; so do we.
 * Checked without fds (libdbus's demarshaller cannot be handed any).
 */
static void test_fd_index_unchecked(void) {
        static const uint32_t indexes[] = { 0, 1, 5, UINT32_MAX };
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(indexes); ++i) {
                WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 3, .path = "/o",
                                     .member = "M", .destination = ":1.7" };
                DBusMessage *m;
                DBusError err;
                WireHeader h;
                WireWriter w;
                uint8_t *msg;
                size_t size;
                char *blob;
                int len;

                wire_writer_init(&w);
                g_assert_cmpint(wire_writer_append_basic(&w, 'h', &indexes[i]), ==, 0);
                g_assert_cmpint(wire_writer_append_basic(&w, 'h', &indexes[i]), ==, 0);
                g_assert_cmpint(wire_message_build(&spec, &w, &msg, &size), ==, 0);
                wire_writer_deinit(&w);
                len = (int)size;
                dbus_error_init(&err);
                m = dbus_message_demarshal((const char *)msg, len, &err);
                if (!m)
                        g_error("libdbus refused 'h' = %u: %s", indexes[i], err.message);
                g_assert_cmpint(wire_message_parse(msg, (size_t)len, 0, 0, &h), ==, 0);
                g_assert_cmpuint(h.n_fds, ==, 0);
                /* and as libdbus marshals it again */
                dbus_message_set_serial(m, 4);
                dbus_message_lock(m);
                g_assert_true(dbus_message_marshal(m, &blob, &len));
                g_assert_cmpint(wire_message_parse(blob, (size_t)len, 0, 0, &h), ==, 0);
                dbus_free(blob);
                dbus_message_unref(m);
                free(msg);
        }
}

static void test_gdbus_headers(void) {
        for (int be = 0; be < 2; ++be)
                for (int type = 1; type <= 4; ++type) {
                        GDBusMessage *gm = g_dbus_message_new();
                        GUnixFDList *fds = g_unix_fd_list_new();
                        GError *gerr = NULL;
                        WireHeader h;
                        WireArgs a;
                        guchar *blob;
                        gsize size;

                        g_dbus_message_set_message_type(gm, type);
                        g_dbus_message_set_serial(gm, 4242);
                        g_dbus_message_set_path(gm, "/org/gtk/Test");
                        g_dbus_message_set_interface(gm, "org.gtk.Test");
                        g_dbus_message_set_member(gm, "Frob");
                        if (type >= 2)
                                g_dbus_message_set_reply_serial(gm, 17);
                        if (type == 3)
                                g_dbus_message_set_error_name(gm, "org.gtk.Error");
                        g_dbus_message_set_destination(gm, "org.gtk.Dest");
                        g_dbus_message_set_sender(gm, ":1.5");
                        g_dbus_message_set_flags(gm, G_DBUS_MESSAGE_FLAGS_NO_AUTO_START);
                        g_unix_fd_list_append(fds, STDIN_FILENO, &gerr);
                        g_assert_no_error(gerr);
                        g_dbus_message_set_unix_fd_list(gm, fds);
                        g_dbus_message_set_body(gm, g_variant_new_parsed(
                                "('first', objectpath '/second', handle 0, {'k': <1>})"));
                        g_dbus_message_set_byte_order(gm, be ? G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN :
                                                               G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN);
                        blob = g_dbus_message_to_blob(gm, &size, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING,
                                                      &gerr);
                        g_assert_no_error(gerr);
                        g_assert_cmpint(wire_message_parse(blob, size, 1, 0, &h), ==, 0);
                        g_assert_cmpint(h.big_endian, ==, be);
                        g_assert_cmpuint(h.type, ==, type);
                        g_assert_cmpuint(h.serial, ==, 4242);
                        g_assert_cmpuint(h.reply_serial, ==, type >= 2 ? 17 : 0);
                        g_assert_cmpuint(h.n_fds, ==, 1);
                        g_assert_cmpuint(h.flags, ==, WIRE_FLAG_NO_AUTO_START);
                        g_assert_cmpstr(h.path, ==, "/org/gtk/Test");
                        g_assert_cmpstr(h.interface, ==, "org.gtk.Test");
                        g_assert_cmpstr(h.member, ==, "Frob");
                        g_assert_cmpstr(h.error_name, ==, type == 3 ? "org.gtk.Error" : NULL);
                        g_assert_cmpstr(h.destination, ==, "org.gtk.Dest");
                        g_assert_cmpstr(h.sender, ==, ":1.5");
                        g_assert_cmpstr(h.signature, ==, "soha{sv}");
                        g_assert_cmpint(wire_message_parse(blob, size, 0, 0, &h), ==, WIRE_E_BAD_FD_INDEX);
                        g_assert_cmpint(wire_message_parse(blob, size, 1, 0, &h), ==, 0);
                        g_assert_cmpint(wire_message_get_args(blob, &h, &a), ==, 0);
                        g_assert_cmpuint(a.n_args, ==, 4);
                        g_assert_cmpstr(a.str[0], ==, "first");
                        g_assert_cmpstr(a.str[1], ==, "/second");
                        g_assert_cmpint(a.type[1], ==, 'o');
                        g_assert_null(a.str[2]);
                        g_assert_cmpint(a.type[2], ==, 'h');
                        g_free(blob);
                        g_object_unref(fds);
                        g_object_unref(gm);
                }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/differential/random-bodies", test_random);
        g_test_add_func("/wire/differential/unix-fds", test_unix_fds);
        g_test_add_func("/wire/differential/fd-index-unchecked", test_fd_index_unchecked);
        g_test_add_func("/wire/differential/gdbus-headers", test_gdbus_headers);
        return g_test_run();
}
