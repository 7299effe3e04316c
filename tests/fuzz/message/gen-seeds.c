/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writes the seed corpus of fuzz-message: messages of each type with nested bodies, in
 * both byte orders, produced by GDBusMessage (an independent encoder). Not part of the
 * build; run by hand when the corpus should change:
 *   cc gen-seeds.c $(pkg-config --cflags --libs gio-unix-2.0) -o /tmp/gen && /tmp/gen corpus
 */
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <stdio.h>
#include <unistd.h>

static const struct {
        GDBusMessageType type;
        const char *body;
} seeds[] = {
        { G_DBUS_MESSAGE_TYPE_METHOD_CALL, NULL },
        { G_DBUS_MESSAGE_TYPE_METHOD_CALL, "('org.example.Name', uint32 4)" },
        { G_DBUS_MESSAGE_TYPE_METHOD_CALL, "(@a{sv} {'a': <int16 -3>, 'b': <[byte 1, 2]>}, true)" },
        { G_DBUS_MESSAGE_TYPE_METHOD_RETURN, "([(int64 1, 2.5, objectpath '/x')], @ag ['s', 'a{sv}'])" },
        { G_DBUS_MESSAGE_TYPE_ERROR, "('something failed',)" },
        { G_DBUS_MESSAGE_TYPE_SIGNAL, "(<<<(uint16 7, [false, true])>>>, @aay [[byte 1], []])" },
        { G_DBUS_MESSAGE_TYPE_SIGNAL, "(@a{oa{sa{sv}}} {'/a': {'org.x.Y': {'p': <'v'>}}},)" },
        { G_DBUS_MESSAGE_TYPE_METHOD_CALL, "(@at [1, 2, 3], @ad [], @a(ii) [(1, 2)], uint64 9)" },
};

static void put(const char *dir, const char *name, GDBusMessage *m, GDBusMessageByteOrder bo) {
        char path[4096];
        guchar *blob;
        gsize size;
        FILE *f;

        g_dbus_message_set_byte_order(m, bo);
        blob = g_dbus_message_to_blob(m, &size, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING, NULL);
        g_assert(blob);
        snprintf(path, sizeof(path), "%s/%s-%s", dir, name,
                 bo == G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN ? "be" : "le");
        f = fopen(path, "wb");
        g_assert(f);
        fwrite(blob, 1, size, f);
        fclose(f);
        g_free(blob);
}

int main(int argc, char **argv) {
        const char *dir = argc > 1 ? argv[1] : "corpus";
        GDBusMessage *m;
        GUnixFDList *fds;
        char name[64];
        gsize i;

        for (i = 0; i < G_N_ELEMENTS(seeds); ++i) {
                switch (seeds[i].type) {
                case G_DBUS_MESSAGE_TYPE_METHOD_CALL:
                        m = g_dbus_message_new_method_call("org.example.Dest", "/org/example",
                                                           "org.example.Iface", "Call");
                        break;
                case G_DBUS_MESSAGE_TYPE_SIGNAL:
                        m = g_dbus_message_new_signal("/org/example", "org.example.Iface", "Sig");
                        break;
                default:
                        m = g_dbus_message_new();
                        g_dbus_message_set_message_type(m, seeds[i].type);
                        g_dbus_message_set_reply_serial(m, 41);
                        g_dbus_message_set_destination(m, ":1.7");
                        if (seeds[i].type == G_DBUS_MESSAGE_TYPE_ERROR)
                                g_dbus_message_set_error_name(m, "org.example.Error.Failed");
                        break;
                }
                g_dbus_message_set_serial(m, 1000 + (guint32)i);
                g_dbus_message_set_sender(m, ":1.42");
                if (seeds[i].body)
                        g_dbus_message_set_body(m, g_variant_new_parsed(seeds[i].body));
                snprintf(name, sizeof(name), "gdbus-%02zu", i);
                put(dir, name, m, G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN);
                put(dir, name, m, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN);
                g_object_unref(m);
        }

        /* a message carrying fds: UNIX_FDS and 'h' */
        m = g_dbus_message_new_method_call("org.example.Dest", "/", "org.example.Iface", "Fd");
        fds = g_unix_fd_list_new();
        g_unix_fd_list_append(fds, STDIN_FILENO, NULL);
        g_unix_fd_list_append(fds, STDERR_FILENO, NULL);
        g_dbus_message_set_unix_fd_list(m, fds);
        g_dbus_message_set_serial(m, 5);
        g_dbus_message_set_body(m, g_variant_new("(hh)", 1, 0));
        put(dir, "gdbus-fds", m, G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN);
        put(dir, "gdbus-fds", m, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN);
        g_object_unref(fds);
        g_object_unref(m);
        return 0;
}
