/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl bus-make: make a bus instance on a kdbusd (docs/native.md, "Bus instances"),
 * print its addresses and hold it until told to stop: the bus lives as long as the handle
 * that made it, i.e. this process. Any user may:
 *
 *   kdbusctl bus-make --native=/run/kdbus/bus mybus &
 *   DBUS_SESSION_BUS_ADDRESS=$(first line of its output) some-program
 *
 * Output, one line each, then nothing until it ends: the legacy address
 * (unix:path=DIR/<uid>-NAME/bus.dbus1), the native socket path (DIR/<uid>-NAME/bus). It
 * ends (and the bus with every connection on it) on SIGINT, SIGTERM, SIGHUP, when stdin
 * reaches EOF (with --stdin), or when kdbusd goes away.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "libkdbus/libkdbus.h"
#include "tools/kdbusctl.h"

static void busmake_help(void) {
        fputs("Usage: kdbusctl bus-make --native=PATH [--group|--world] [--stdin] NAME\n"
              "Make the bus instance <uid>-NAME through the kdbusd whose native socket is\n"
              "PATH, print its legacy address and native socket, and hold it until SIGINT/\n"
              "SIGTERM/SIGHUP (or EOF on stdin with --stdin); then it ends with every\n"
              "connection on it. --group / --world make it usable by your group / everybody\n"
              "(default: only you).\n", stdout);
}

/**
 * ctl_cmd_busmake() - kdbusctl bus-make
 * @o:          global options (only --quiet: the bus is made on the native socket)
 * @argc:       arguments after the command name's position (argv[0] is the command)
 * @argv:       them
 *
 * Return: CTL_EXIT_OK, CTL_EXIT_USAGE, CTL_EXIT_CONNECT, CTL_EXIT_FAILED (the bus refused).
 */
int ctl_cmd_busmake(const CtlOptions *o, int argc, char **argv) {
        enum { ARG_NATIVE = 0x100, ARG_GROUP, ARG_WORLD, ARG_STDIN };
        static const struct option options[] = {
                { "native", required_argument, NULL, ARG_NATIVE },
                { "group", no_argument, NULL, ARG_GROUP },
                { "world", no_argument, NULL, ARG_WORLD },
                { "stdin", no_argument, NULL, ARG_STDIN },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *native = NULL, *slash;
        char name[128], path[4096];
        bool use_stdin = false;
        KdbusConn *c = NULL;
        uint64_t flags = 0;
        int opt, r, sfd;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (opt) {
                case ARG_NATIVE:
                        native = optarg;
                        break;
                case ARG_GROUP:
                        flags |= KDBUS_MAKE_ACCESS_GROUP;
                        break;
                case ARG_WORLD:
                        flags |= KDBUS_MAKE_ACCESS_WORLD;
                        break;
                case ARG_STDIN:
                        use_stdin = true;
                        break;
                case 'h':
                        busmake_help();
                        return CTL_EXIT_OK;
                default:
                        return CTL_EXIT_USAGE;
                }
        }
        if (!native || optind != argc - 1) {
                fprintf(stderr, "kdbusctl bus-make: needs --native=PATH and one NAME; see "
                        "kdbusctl bus-make --help\n");
                return CTL_EXIT_USAGE;
        }
        (void) snprintf(name, sizeof(name), "%u-%s", (unsigned)geteuid(), argv[optind]);

        /* the signals that end us, taken before the bus exists */
        sfd = ctl_hold_signals("bus-make");
        if (sfd < 0)
                return CTL_EXIT_FAILED;
        r = kdbus_conn_open(native, &c);
        if (r < 0) {
                fprintf(stderr, "kdbusctl bus-make: cannot connect to %s: %s\n", native,
                        strerror(-r));
                (void) close(sfd);
                return CTL_EXIT_CONNECT;
        }
        r = kdbus_bus_make(c, name, flags);
        if (r < 0) {
                fprintf(stderr, "kdbusctl bus-make: BUS_MAKE \"%s\" on %s: %s%s\n", name, native,
                        strerror(-r),
                        r == -EEXIST ? " (a bus or a file of that name exists)" :
                        r == -EINVAL ? " (names: letters, digits, '-', '_', '.')" :
                        r == -EACCES ? " (kdbusd cannot create the directory next to PATH)" : "");
                goto out;
        }
        slash = strrchr(native, '/');
        (void) snprintf(path, sizeof(path), "%.*s%s", slash ? (int)(slash - native + 1) : 0,
                        native, name);
        printf("unix:path=%s/bus.dbus1\n%s/bus\n", path, path);
        fflush(stdout);
        if (!o->quiet)
                fprintf(stderr, "kdbusctl bus-make: \"%s\" is up; it goes when this process "
                        "ends\n", name);

        ctl_hold_until_done(sfd, c->fd, use_stdin);
        r = 0;
out:
        kdbus_conn_close(c);
        (void) close(sfd);
        return r < 0 ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}
