/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl call DEST PATH IFACE.MEMBER [SIGNATURE [ARGS...]]: one method call, arguments in
 * busctl's syntax (kdbusctl-args.c), the reply printed in the same syntax. Everything on the
 * command line is checked before connecting, so a typo never reaches the bus.
 */
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"
#include "wire/names.h"

int ctl_cmd_call(const CtlOptions *o, int argc, char **argv) {
        _cleanup_(ctl_conn_freep) CtlConn *c = NULL;
        CtlMsg reply = CTL_MSG_NULL(reply);
        CtlArgsError err = { .index = -1 };
        char iface[256];
        const char *dest, *path, *dot, *member, *sig = "";
        WireWriter w;
        int r, ret;

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
        r = ctl_conn_call(c, dest, path, iface, member, &w, o->timeout_ms, &reply);
        wire_writer_deinit(&w);
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
