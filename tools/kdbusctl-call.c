/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl call [--expect-reply=no] [--auto-start=no] DEST PATH IFACE.MEMBER [SIGNATURE
 * [ARGS...]]: one method call, arguments in
 * busctl's syntax (kdbusctl-args.c), the reply printed in the same syntax. Everything on the
 * command line is checked before connecting, so a typo never reaches the bus.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"
#include "wire/names.h"

static bool parse_bool_option(const char *s, uint32_t *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); ++i) {
                if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) {
                        *ret = !strcmp(s, yes[i]);
                        return true;
                }
        }
        return false;
}

/**
 * ctl_cmd_call() - the call command. Return: CTL_EXIT_*.
 */
int ctl_cmd_call(const CtlOptions *o, int argc, char **argv) {
        enum { ARG_EXPECT_REPLY = 0x100, ARG_AUTO_START };
        static const struct option options[] = {
                { "expect-reply", required_argument, NULL, ARG_EXPECT_REPLY },
                { "auto-start", required_argument, NULL, ARG_AUTO_START },
                {}
        };
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL };
        _cleanup_(ctl_conn_freep) CtlConn *c = NULL;
        CtlMsg reply = CTL_MSG_NULL(reply);
        CtlArgsError err = { .index = -1 };
        char iface[256];
        const char *dest, *path, *dot, *member, *sig = "";
        WireWriter w;
        int opt, r, ret;

        optind = 0;
        while ((opt = getopt_long(argc, argv, "+", options, NULL)) >= 0) {
                uint32_t yes;

                if (opt != ARG_EXPECT_REPLY && opt != ARG_AUTO_START)
                        return CTL_EXIT_USAGE;
                if (!parse_bool_option(optarg, &yes)) {
                        fprintf(stderr, "kdbusctl call: --%s=\"%s\": expected yes or no\n",
                                opt == ARG_EXPECT_REPLY ? "expect-reply" : "auto-start", optarg);
                        return CTL_EXIT_USAGE;
                }
                if (opt == ARG_EXPECT_REPLY && !yes)
                        spec.flags |= WIRE_FLAG_NO_REPLY_EXPECTED;
                if (opt == ARG_AUTO_START && !yes)
                        spec.flags |= WIRE_FLAG_NO_AUTO_START;
        }
        argc -= optind - 1;
        argv += optind - 1;
        if (argc < 4) {
                fprintf(stderr, "kdbusctl call: expected DEST PATH IFACE.MEMBER [SIGNATURE "
                        "[ARGS...]]\n");
                return CTL_EXIT_USAGE;
        }
        dest = argv[1];
        path = argv[2];
        dot = strrchr(argv[3], '.');
        if (!wire_bus_name_is_valid(dest, strlen(dest))) {
                fprintf(stderr, "kdbusctl call: \"%s\" is not a valid bus name\n", dest);
                return CTL_EXIT_USAGE;
        }
        if (!wire_path_is_valid(path, strlen(path))) {
                fprintf(stderr, "kdbusctl call: \"%s\" is not a valid object path\n", path);
                return CTL_EXIT_USAGE;
        }
        if (!dot || (size_t)(dot - argv[3]) >= sizeof(iface)) {
                fprintf(stderr, "kdbusctl call: \"%s\" is not INTERFACE.MEMBER\n", argv[3]);
                return CTL_EXIT_USAGE;
        }
        memcpy(iface, argv[3], (size_t)(dot - argv[3]));
        iface[dot - argv[3]] = 0;
        member = dot + 1;
        if (!wire_interface_is_valid(iface, strlen(iface)) ||
            !wire_member_is_valid(member, strlen(member))) {
                fprintf(stderr, "kdbusctl call: \"%s\" is not INTERFACE.MEMBER (interface "
                        "\"%s\", member \"%s\")\n", argv[3], iface, member);
                return CTL_EXIT_USAGE;
        }
        if (argc > 4)
                sig = argv[4];

        wire_writer_init(&w);
        r = ctl_args_append(&w, sig, argv + 5, argc > 5 ? argc - 5 : 0, &err);
        if (r) {
                wire_writer_deinit(&w);
                if (r < 0) {
                        fprintf(stderr, "kdbusctl call: out of memory\n");
                        return CTL_EXIT_FAILED;
                }
                fprintf(stderr, "kdbusctl call: %s\n", err.text);
                return CTL_EXIT_USAGE;
        }
        if (ctl_conn_open(o->address, &c) < 0) {
                wire_writer_deinit(&w);
                return CTL_EXIT_CONNECT;
        }
        spec.destination = dest;
        spec.path = path;
        spec.interface = iface;
        spec.member = member;
        r = ctl_conn_send(c, &spec, &w);
        wire_writer_deinit(&w);
        if (r < 0)
                return CTL_EXIT_FAILED;
        if (spec.flags & WIRE_FLAG_NO_REPLY_EXPECTED) {
                /* a round trip to the driver: the bus has taken the call when it answers */
                r = ctl_conn_call_driver(c, "org.freedesktop.DBus.Peer", "Ping", NULL, &reply);
                if (r < 0)
                        return CTL_EXIT_FAILED;
                ctl_msg_deinit(&reply);
                return CTL_EXIT_OK;
        }
        r = ctl_conn_wait_reply(c, &spec, o->timeout_ms, &reply);
        if (r < 0)
                return CTL_EXIT_FAILED;
        if (reply.hdr.type == WIRE_MSG_ERROR) {
                fprintf(stderr, "kdbusctl: %s: call to %s %s %s.%s failed: %s\n", c->address,
                        dest, path, iface, member, ctl_msg_error_text(&reply));
                ret = CTL_EXIT_FAILED;
        } else {
                ret = ctl_print_body(stdout, reply.data, &reply.hdr) ? CTL_EXIT_FAILED
                                                                     : CTL_EXIT_OK;
        }
        ctl_msg_deinit(&reply);
        return ret;
}
