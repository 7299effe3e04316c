/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * client-libdbus: a scripted libdbus client for the integration tests. It connects to the
 * address in argv[1], registers, runs the commands that follow and prints EVERY message it
 * receives, in arrival order, one line each, with no serials (replies name the call they
 * answer). The harness runs it against both buses and compares the output, so what matters
 * is that the output is a deterministic function of what the bus sent.
 *
 * Commands (consumed from argv in order):
 *   match RULE                 AddMatch (@SELF@ in RULE stands for our unique name)
 *   request NAME FLAGS         RequestName
 *   release NAME               ReleaseName
 *   call DEST PATH IFACE METHOD ARG   method call with one string argument (none if ARG is "")
 *   wait-ready                 print what came, "ready", wait for a line on stdin, then
 *                              print what came (may be given several times; EOF on stdin
 *                              ends the program at once, without reading further)
 */

#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_args(DBusMessage *m) {
        DBusMessageIter it;

        if (!dbus_message_iter_init(m, &it))
                return;
        do {
                int t = dbus_message_iter_get_arg_type(&it);

                if (t == DBUS_TYPE_STRING || t == DBUS_TYPE_OBJECT_PATH) {
                        const char *s;

                        dbus_message_iter_get_basic(&it, &s);
                        printf(" \"%s\"", s);
                } else if (t == DBUS_TYPE_UINT32) {
                        dbus_uint32_t u;

                        dbus_message_iter_get_basic(&it, &u);
                        printf(" %u", (unsigned) u);
                } else if (t == DBUS_TYPE_BOOLEAN) {
                        dbus_bool_t b;

                        dbus_message_iter_get_basic(&it, &b);
                        printf(" %s", b ? "true" : "false");
                } else if (t == DBUS_TYPE_ARRAY &&
                           dbus_message_iter_get_element_type(&it) == DBUS_TYPE_STRING) {
                        DBusMessageIter a;

                        /* ListQueuedOwners, ListNames: the strings in order */
                        dbus_message_iter_recurse(&it, &a);
                        printf(" [");
                        while (dbus_message_iter_get_arg_type(&a) == DBUS_TYPE_STRING) {
                                const char *s;

                                dbus_message_iter_get_basic(&a, &s);
                                printf(" \"%s\"", s);
                                dbus_message_iter_next(&a);
                        }
                        printf(" ]");
                } else {
                        printf(" <%c>", t);
                }
        } while (dbus_message_iter_next(&it));
}

static const char *opt(const char *s) {
        return s ? s : "-";
}

/* The member of each call we sent, by serial, so replies can name it. */
static const char *labels[256];

static void print_message(DBusMessage *m) {
        int t = dbus_message_get_type(m);
        dbus_uint32_t rs = dbus_message_get_reply_serial(m);

        printf("%s from=%s to=%s", dbus_message_type_to_string(t),
               opt(dbus_message_get_sender(m)), opt(dbus_message_get_destination(m)));
        if (t == DBUS_MESSAGE_TYPE_SIGNAL || t == DBUS_MESSAGE_TYPE_METHOD_CALL)
                printf(" %s %s.%s", opt(dbus_message_get_path(m)),
                       opt(dbus_message_get_interface(m)), opt(dbus_message_get_member(m)));
        if (t == DBUS_MESSAGE_TYPE_ERROR)
                printf(" %s", dbus_message_get_error_name(m));
        if (rs)
                printf(" reply-to=%s", rs < 256 && labels[rs] ? labels[rs] : "?");
        if (t != DBUS_MESSAGE_TYPE_ERROR)
                print_args(m);
        printf("\n");
        fflush(stdout);
}

/* Read until the reply to @serial arrived, printing everything that comes in before it. */
static void wait_reply(DBusConnection *c, dbus_uint32_t serial) {
        for (;;) {
                DBusMessage *m;

                while ((m = dbus_connection_pop_message(c))) {
                        int done = dbus_message_get_reply_serial(m) == serial;

                        print_message(m);
                        dbus_message_unref(m);
                        if (done)
                                return;
                }
                if (!dbus_connection_read_write(c, 10000)) {
                        printf("disconnected\n");
                        exit(2);
                }
        }
}

static void call(DBusConnection *c, const char *dest, const char *path, const char *iface,
                 const char *method, const char *sig, const void *a1, const void *a2) {
        DBusMessage *m = dbus_message_new_method_call(dest, path, iface, method);
        dbus_uint32_t serial;

        if (!m)
                abort();
        if (sig[0] == 's' && sig[1] == 'u')
                dbus_message_append_args(m, DBUS_TYPE_STRING, a1, DBUS_TYPE_UINT32, a2,
                                         DBUS_TYPE_INVALID);
        else if (sig[0] == 's')
                dbus_message_append_args(m, DBUS_TYPE_STRING, a1, DBUS_TYPE_INVALID);
        if (!dbus_connection_send(c, m, &serial))
                abort();
        if (serial < 256)
                labels[serial] = method;
        dbus_message_unref(m);
        wait_reply(c, serial);
}

static void drain(DBusConnection *c) {
        DBusMessage *m;

        /* a driver round trip: everything queued for us before it is then read */
        call(c, DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS, "GetId", "", NULL,
             NULL);
        while ((m = dbus_connection_pop_message(c))) {
                print_message(m);
                dbus_message_unref(m);
        }
}

int main(int argc, char **argv) {
        DBusError err = DBUS_ERROR_INIT;
        DBusConnection *c;
        int i;

        if (argc < 2) {
                fprintf(stderr, "usage: %s ADDRESS COMMAND...\n", argv[0]);
                return 1;
        }
        c = dbus_connection_open_private(argv[1], &err);
        if (!c || !dbus_bus_register(c, &err)) {
                printf("connect failed: %s\n", err.name);
                return 1;
        }
        printf("registered as %s\n", dbus_bus_get_unique_name(c));
        for (i = 2; i < argc; i++) {
                const char *cmd = argv[i];

                printf("> %s\n", cmd);
                if (!strcmp(cmd, "match") && i + 1 < argc) {
                        char rule[1024];
                        const char *tmpl = argv[++i], *self = strstr(tmpl, "@SELF@");

                        if (self)
                                snprintf(rule, sizeof(rule), "%.*s%s%s", (int)(self - tmpl),
                                         tmpl, dbus_bus_get_unique_name(c), self + 6);
                        else
                                snprintf(rule, sizeof(rule), "%s", tmpl);
                        call(c, DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS,
                             "AddMatch", "s", &(const char *){ rule }, NULL);
                } else if (!strcmp(cmd, "request") && i + 2 < argc) {
                        const char *name = argv[++i];
                        dbus_uint32_t flags = strtoul(argv[++i], NULL, 0);

                        call(c, DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS,
                             "RequestName", "su", &name, &flags);
                } else if (!strcmp(cmd, "release") && i + 1 < argc) {
                        const char *name = argv[++i];

                        call(c, DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS,
                             "ReleaseName", "s", &name, NULL);
                } else if (!strcmp(cmd, "call") && i + 5 < argc) {
                        const char *dest = argv[i + 1], *path = argv[i + 2];
                        const char *iface = argv[i + 3], *method = argv[i + 4];
                        const char *arg = argv[i + 5];

                        i += 5;
                        call(c, dest, path, iface, method, arg[0] ? "s" : "", &arg, NULL);
                } else if (!strcmp(cmd, "wait-ready")) {
                        char line[64];

                        drain(c);
                        printf("ready\n");
                        fflush(stdout);
                        if (!fgets(line, sizeof(line), stdin))
                                return 1;
                        drain(c);
                } else {
                        fprintf(stderr, "bad command %s\n", cmd);
                        return 1;
                }
        }
        drain(c);
        dbus_connection_close(c);
        dbus_connection_unref(c);
        return 0;
}
