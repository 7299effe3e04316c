/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl status [NAME]: the bus as a whole (id, features, peers, names and their owner
 * queues, Debug.Stats.GetStats), or one name (owner, queued owners, credentials,
 * Debug.Stats.GetConnectionStats with the connection's queue and quota figures).
 *
 * Debug.Stats is optional in D-Bus (dbus-daemon has it when built with stats, kdbusd and
 * dbus-broker implement it): an error reply is printed as "not available" with the bus's
 * error name, and does not fail the command. Everything else that fails does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"
#include "wire/names.h"

#define DEBUG_STATS_INTERFACE "org.freedesktop.DBus.Debug.Stats"

/* Print an a{sv} reply as "  Key: SIG VALUE" lines. */
static void print_dict(const CtlMsg *m) {
        WireReader rd;
        const char *key;

        wire_reader_init(&rd, m->data, &m->hdr);
        if (strcmp(m->hdr.signature, "a{sv}") != 0 || wire_reader_enter(&rd, 'a', "{sv}")) {
                printf("  (unexpected signature \"%s\")\n", m->hdr.signature);
                return;
        }
        while (wire_reader_peek(&rd)) {
                if (wire_reader_enter(&rd, '{', NULL) || wire_reader_read_basic(&rd, 's', &key))
                        return;
                printf("  %s: ", key);
                if (ctl_print_value(stdout, &rd) || wire_reader_exit(&rd))
                        return;
                printf("\n");
        }
}

/* Call a driver method returning a{sv}; print it, or the error. Return: 0, 1 error reply. */
static int show_dict(CtlConn *c, const char *title, const char *iface, const char *member,
                     const char *arg, bool optional) {
        CtlMsg m = CTL_MSG_NULL(m);
        int r;

        r = ctl_conn_call_driver(c, iface, member, arg, &m);
        if (r < 0)
                return r;
        if (m.hdr.type == WIRE_MSG_ERROR) {
                printf("%s: not available (%s)\n", title, ctl_msg_error_text(&m));
                if (!optional)
                        fprintf(stderr, "kdbusctl: %s: %s.%s(%s) failed: %s\n", c->address,
                                iface, member, arg ? arg : "", ctl_msg_error_text(&m));
                ctl_msg_deinit(&m);
                return optional ? 0 : 1;
        }
        printf("%s:\n", title);
        print_dict(&m);
        ctl_msg_deinit(&m);
        return 0;
}

/* The owner queue of @name as one line: primary owner first. */
static int show_queue(CtlConn *c, const char *name, const char *prefix) {
        CtlMsg m = CTL_MSG_NULL(m);
        WireReader rd;
        const char *s;
        int r;

        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, "ListQueuedOwners", name, &m);
        if (r < 0)
                return r;
        if (m.hdr.type == WIRE_MSG_ERROR) {
                printf("%s%s: (%s)\n", prefix, name, ctl_msg_error_text(&m));
                ctl_msg_deinit(&m);
                return 1;
        }
        printf("%s%s:", prefix, name);
        wire_reader_init(&rd, m.data, &m.hdr);
        if (!wire_reader_enter(&rd, 'a', "s"))
                while (wire_reader_peek(&rd) && !wire_reader_read_basic(&rd, 's', &s))
                        printf(" %s", s);
        printf("\n");
        ctl_msg_deinit(&m);
        return 0;
}

static int status_name(CtlConn *c, const char *name) {
        CtlPeerInfo info;
        int r;

        r = ctl_peer_info(c, name, &info);
        if (r < 0)
                return CTL_EXIT_FAILED;
        if (r > 0) {
                fprintf(stderr, "kdbusctl: %s: name \"%s\" has no owner on this bus\n",
                        c->address, name);
                return CTL_EXIT_FAILED;
        }
        printf("Name: %s\nOwner: %s\n", name, info.owner);
        printf("PID: %" PRId64 "\nUID: %" PRId64 "\nProcess: %s\n", info.pid, info.uid,
               info.comm);
        if (name[0] != ':') {
                r = show_queue(c, name, "Queue ");
                if (r < 0)
                        return CTL_EXIT_FAILED;
        }
        r = show_dict(c, "Credentials", WIRE_DRIVER_INTERFACE, "GetConnectionCredentials", name,
                      false);
        if (r)
                return CTL_EXIT_FAILED;
        r = show_dict(c, "Stats", DEBUG_STATS_INTERFACE, "GetConnectionStats", name, true);
        return r ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

static int status_bus(CtlConn *c) {
        CtlMsg m = CTL_MSG_NULL(m);
        WireReader rd;
        WireWriter w;
        const char *s;
        unsigned n_unique = 0, n_known = 0;
        int r;

        printf("Address: %s\n", c->address);
        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, "GetId", NULL, &m);
        if (r < 0)
                return CTL_EXIT_FAILED;
        wire_reader_init(&rd, m.data, &m.hdr);
        if (m.hdr.type != WIRE_MSG_METHOD_RETURN || wire_reader_read_basic(&rd, 's', &s)) {
                fprintf(stderr, "kdbusctl: %s: GetId failed: %s\n", c->address,
                        ctl_msg_error_text(&m));
                ctl_msg_deinit(&m);
                return CTL_EXIT_FAILED;
        }
        printf("Id: %s\n", s);
        ctl_msg_deinit(&m);

        /* Features is a property of the driver (D-Bus spec 1.12+); older buses lack it */
        wire_writer_init(&w);
        (void) wire_writer_append_basic(&w, 's', WIRE_DRIVER_INTERFACE);
        (void) wire_writer_append_basic(&w, 's', "Features");
        r = ctl_conn_call(c, WIRE_DRIVER_NAME, WIRE_DRIVER_PATH,
                          "org.freedesktop.DBus.Properties", "Get", &w, CTL_DEFAULT_TIMEOUT_MS,
                          &m);
        wire_writer_deinit(&w);
        if (r < 0)
                return CTL_EXIT_FAILED;
        printf("Features: ");
        if (m.hdr.type == WIRE_MSG_METHOD_RETURN) {
                wire_reader_init(&rd, m.data, &m.hdr);
                if (!wire_reader_enter(&rd, 'v', "as") && !wire_reader_enter(&rd, 'a', "s"))
                        while (wire_reader_peek(&rd) && !wire_reader_read_basic(&rd, 's', &s))
                                printf("%s ", s);
                printf("\n");
        } else {
                printf("(%s)\n", ctl_msg_error_text(&m));
        }
        ctl_msg_deinit(&m);

        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, "ListNames", NULL, &m);
        if (r < 0)
                return CTL_EXIT_FAILED;
        if (m.hdr.type != WIRE_MSG_METHOD_RETURN || strcmp(m.hdr.signature, "as")) {
                fprintf(stderr, "kdbusctl: %s: ListNames failed: %s\n", c->address,
                        ctl_msg_error_text(&m));
                ctl_msg_deinit(&m);
                return CTL_EXIT_FAILED;
        }
        wire_reader_init(&rd, m.data, &m.hdr);
        (void) wire_reader_enter(&rd, 'a', "s");
        while (wire_reader_peek(&rd) && !wire_reader_read_basic(&rd, 's', &s)) {
                if (s[0] == ':')
                        ++n_unique;
                else
                        ++n_known;
        }
        printf("Peers: %u\nWell-known names: %u\n", n_unique, n_known);
        printf("Owner queues (primary owner first):\n");
        wire_reader_init(&rd, m.data, &m.hdr);
        (void) wire_reader_enter(&rd, 'a', "s");
        while (wire_reader_peek(&rd) && !wire_reader_read_basic(&rd, 's', &s)) {
                if (s[0] == ':' || !strcmp(s, WIRE_DRIVER_NAME))
                        continue;
                r = show_queue(c, s, "  ");
                if (r < 0) {
                        ctl_msg_deinit(&m);
                        return CTL_EXIT_FAILED;
                }
        }
        ctl_msg_deinit(&m);
        r = show_dict(c, "Stats", DEBUG_STATS_INTERFACE, "GetStats", NULL, true);
        return r ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

/**
 * ctl_cmd_status() - the status command. Return: CTL_EXIT_*.
 */
int ctl_cmd_status(const CtlOptions *o, int argc, char **argv) {
        _cleanup_(ctl_conn_freep) CtlConn *c = NULL;

        if (argc > 2) {
                fprintf(stderr, "kdbusctl status: takes at most one NAME, got \"%s\" too\n",
                        argv[2]);
                return CTL_EXIT_USAGE;
        }
        if (argc == 2 && !wire_bus_name_is_valid(argv[1], strlen(argv[1]))) {
                fprintf(stderr, "kdbusctl status: \"%s\" is not a valid bus name\n", argv[1]);
                return CTL_EXIT_USAGE;
        }
        if (ctl_conn_open(o->address, &c) < 0)
                return CTL_EXIT_CONNECT;
        return argc == 2 ? status_name(c, argv[1]) : status_bus(c);
}
