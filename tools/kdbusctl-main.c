/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl: global options, --help, and dispatch to the commands (kdbusctl-{list,status,
 * call,monitor,endpoint}.c). Options come before the command; each command parses its own.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"

static void help(FILE *f) {
        fputs("Usage: kdbusctl [OPTIONS] COMMAND [ARGS...]\n"
              "\n"
              "Inspect and use a D-Bus bus: kdbusd, dbus-daemon or dbus-broker.\n"
              "\n"
              "Options:\n"
              "  --address=ADDRESS   connect to this bus address (e.g. unix:path=/run/x)\n"
              "  --session           the session bus: $DBUS_SESSION_BUS_ADDRESS, else\n"
              "                      unix:path=$XDG_RUNTIME_DIR/bus (the default)\n"
              "  --system            the system bus: $DBUS_SYSTEM_BUS_ADDRESS, else\n"
              "                      unix:path=/run/dbus/system_bus_socket\n"
              "  --timeout=MS        how long to wait for a reply (default 25000)\n"
              "  -q, --quiet         no column headers, no progress notes on stderr\n"
              "  -h, --help          this text\n"
              "\n"
              "Commands:\n"
              "  list                every name on the bus (well-known, unique, activatable)\n"
              "                      with its owner's unique name, pid, uid and command\n"
              "  status [NAME]       without NAME: the bus (id, features, peers, names,\n"
              "                      queues, Debug.Stats.GetStats when the bus has it);\n"
              "                      with NAME: its owner, queued owners, credentials and\n"
              "                      Debug.Stats.GetConnectionStats (queues, quota use)\n"
              "  call [--expect-reply=no] [--auto-start=no] DEST PATH IFACE.MEMBER\n"
              "       [SIGNATURE [ARGS...]]\n"
              "                      call a method and print the reply as SIGNATURE ARGS;\n"
              "                      --expect-reply=no sends it with NO_REPLY_EXPECTED and\n"
              "                      returns once the bus has it, --auto-start=no sets\n"
              "                      NO_AUTO_START\n"
              "  monitor [--pcap=FILE] [--count=N] [MATCH...]\n"
              "                      become a monitor (org.freedesktop.DBus.Monitoring\n"
              "                      .BecomeMonitor) and print every message the MATCH\n"
              "                      rules select (all if none); --pcap writes them to FILE\n"
              "                      (LINKTYPE_DBUS, readable by wireshark/tshark) instead\n"
              "  endpoint --native=PATH [--see=NAME] [--talk=NAME] [--own=NAME]\n"
              "       [--group|--world] [--stdin] NAME\n"
              "                      make the custom endpoint <uid>-NAME on the kdbusd\n"
              "                      with that native socket, print its legacy address\n"
              "                      and native socket, hold it until a signal (kdbusd\n"
              "                      only; see docs/native.md)\n"
              "  endpoint update --native=PATH [--see|--talk|--own=NAME]...\n"
              "       [--call|--broadcast=NAME=RULE]... [--user|--group=ID:LEVEL:NAME]...\n"
              "       [--xdg] [--sloppy-names] NAME\n"
              "                      replace the rules of your endpoint NAME while it runs\n"
              "  endpoint list --native=PATH\n"
              "                      your endpoints (root: all), their connections, rules\n"
              "  bus-make --native=PATH [--group|--world] [--stdin] NAME\n"
              "                      make the bus instance <uid>-NAME (any user), print\n"
              "                      its legacy address and native socket, hold it until\n"
              "                      a signal (kdbusd only; see docs/native.md)\n"
              "\n"
              "Arguments (as busctl): a basic value is one argument; an array is its length,\n"
              "then its elements; a variant is its signature, then its value; a struct or\n"
              "dict entry is its fields in order. Booleans: true/false/yes/no/on/off/1/0.\n"
              "  kdbusctl call org.freedesktop.DBus /org/freedesktop/DBus \\\n"
              "      org.freedesktop.DBus.RequestName su com.example.Foo 4\n"
              "  kdbusctl call DEST /obj com.example.I.Set a{sv} 2 Name s x Size u 3\n"
              "\n"
              "Exit status: 0 success, 1 the bus or peer answered with an error, 2 bad\n"
              "command line or arguments, 3 cannot connect to the bus.\n", f);
}

int main(int argc, char **argv) {
        enum { ARG_ADDRESS = 0x100, ARG_SESSION, ARG_SYSTEM, ARG_TIMEOUT };
        static const struct option options[] = {
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "session", no_argument, NULL, ARG_SESSION },
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                { "quiet", no_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        static const struct {
                const char *name;
                int (*fn)(const CtlOptions *o, int argc, char **argv);
        } commands[] = {
                { "list", ctl_cmd_list },
                { "status", ctl_cmd_status },
                { "call", ctl_cmd_call },
                { "monitor", ctl_cmd_monitor },
                { "endpoint", ctl_cmd_endpoint },
                { "bus-make", ctl_cmd_busmake },
        };
        CtlOptions o = { .timeout_ms = CTL_DEFAULT_TIMEOUT_MS };
        const char *address = NULL;
        char *resolved = NULL;
        bool session = false, system = false;
        int c, r;

        /* '+': stop at the command, whose own options getopt must not reorder */
        while ((c = getopt_long(argc, argv, "+qh", options, NULL)) >= 0) {
                switch (c) {
                case ARG_ADDRESS:
                        address = optarg;
                        break;
                case ARG_SESSION:
                        session = true;
                        break;
                case ARG_SYSTEM:
                        system = true;
                        break;
                case ARG_TIMEOUT: {
                        char *end;
                        long v = strtol(optarg, &end, 10);

                        if (!*optarg || *end || v <= 0 || v > 24L * 3600 * 1000) {
                                fprintf(stderr, "kdbusctl: --timeout=\"%s\": expected "
                                        "milliseconds, 1..86400000\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        o.timeout_ms = (int)v;
                        break;
                }
                case 'q':
                        o.quiet = true;
                        break;
                case 'h':
                        help(stdout);
                        return CTL_EXIT_OK;
                default:
                        fprintf(stderr, "kdbusctl: see kdbusctl --help\n");
                        return CTL_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "kdbusctl: no command given; see kdbusctl --help\n");
                return CTL_EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); ++i) {
                if (strcmp(argv[optind], commands[i].name) != 0)
                        continue;
                /* endpoint and bus-make talk to the native socket they are given, not to a
                 * bus address */
                if (commands[i].fn == ctl_cmd_endpoint || commands[i].fn == ctl_cmd_busmake)
                        return commands[i].fn(&o, argc - optind, argv + optind);
                r = ctl_address_resolve(address, session, system, &resolved);
                if (r < 0)
                        return r == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_CONNECT;
                o.address = resolved;
                r = commands[i].fn(&o, argc - optind, argv + optind);
                free(resolved);
                return r;
        }
        fprintf(stderr, "kdbusctl: unknown command \"%s\"; commands: list, status, call, "
                "monitor, endpoint, bus-make (see kdbusctl --help)\n", argv[optind]);
        return CTL_EXIT_USAGE;
}
