/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl list: every name the bus reports (ListNames plus ListActivatableNames), sorted,
 * with the owner's unique name, pid, uid and command. Only standard org.freedesktop.DBus
 * calls are used, so the output means the same on every bus; the command (comm) is read from
 * /proc, as busctl does. A name that vanishes between ListNames and the per-name calls is
 * left out rather than reported as an error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"

static int read_strv(const CtlMsg *m, char ***ret, size_t *ret_n) {
        WireReader rd;
        char **v = NULL;
        size_t n = 0;
        const char *s;

        wire_reader_init(&rd, m->data, &m->hdr);
        if (wire_reader_enter(&rd, 'a', "s"))
                return -EPROTO;
        while (wire_reader_peek(&rd)) {
                char **nv;

                if (wire_reader_read_basic(&rd, 's', &s))
                        break;
                nv = realloc(v, (n + 2) * sizeof(*v));
                if (!nv)
                        break;
                v = nv;
                v[n++] = (char *)s;     /* points into m->data */
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int driver_u32(CtlConn *c, const char *member, const char *name, int64_t *ret) {
        CtlMsg m = CTL_MSG_NULL(m);
        WireReader rd;
        uint32_t v;
        int r;

        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, member, name, &m);
        if (r < 0)
                return r;
        wire_reader_init(&rd, m.data, &m.hdr);
        r = m.hdr.type == WIRE_MSG_METHOD_RETURN && !wire_reader_read_basic(&rd, 'u', &v) ? 0 : 1;
        if (!r)
                *ret = v;
        ctl_msg_deinit(&m);
        return r;
}

/**
 * ctl_peer_info() - owner, pid, uid and comm of @name
 * Return: 0; 1 if the name has no owner (any longer); negative errno.
 */
int ctl_peer_info(CtlConn *c, const char *name, CtlPeerInfo *ret) {
        CtlPeerInfo info = { .pid = -1, .uid = -1, .comm = "-" };
        CtlMsg m = CTL_MSG_NULL(m);
        WireReader rd;
        const char *s;
        char path[64];
        FILE *f;
        int r;

        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, "GetNameOwner", name, &m);
        if (r < 0)
                return r;
        wire_reader_init(&rd, m.data, &m.hdr);
        if (m.hdr.type != WIRE_MSG_METHOD_RETURN || wire_reader_read_basic(&rd, 's', &s)) {
                ctl_msg_deinit(&m);
                return 1;
        }
        snprintf(info.owner, sizeof(info.owner), "%s", s);
        ctl_msg_deinit(&m);
        r = driver_u32(c, "GetConnectionUnixProcessID", name, &info.pid);
        if (r < 0)
                return r;
        r = driver_u32(c, "GetConnectionUnixUser", name, &info.uid);
        if (r < 0)
                return r;
        if (info.pid > 0) {
                snprintf(path, sizeof(path), "/proc/%" PRId64 "/comm", info.pid);
                f = fopen(path, "re");
                if (f) {
                        if (fgets(info.comm, sizeof(info.comm), f))
                                info.comm[strcspn(info.comm, "\n")] = 0;
                        else
                                snprintf(info.comm, sizeof(info.comm), "-");
                        fclose(f);
                }
        }
        *ret = info;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_num(int64_t v, int width) {
        if (v < 0)
                printf("%*s", width, "-");
        else
                printf("%*" PRId64, width, v);
}

/**
 * ctl_cmd_list() - the list command. Return: CTL_EXIT_*.
 */
int ctl_cmd_list(const CtlOptions *o, int argc, char **argv) {
        _cleanup_(ctl_conn_freep) CtlConn *c = NULL;
        CtlMsg names = CTL_MSG_NULL(names), act = CTL_MSG_NULL(act);
        char **v = NULL, **va = NULL, **all = NULL;
        size_t n = 0, na = 0, n_all = 0;
        int width = 4, owidth = 10, ret = CTL_EXIT_FAILED, r;

        if (argc > 1) {
                fprintf(stderr, "kdbusctl list: unexpected argument \"%s\"\n", argv[1]);
                return CTL_EXIT_USAGE;
        }
        if (ctl_conn_open(o->address, &c) < 0)
                return CTL_EXIT_CONNECT;
        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, "ListNames", NULL, &names);
        if (r < 0)
                goto out;
        if (names.hdr.type != WIRE_MSG_METHOD_RETURN) {
                fprintf(stderr, "kdbusctl: %s: ListNames failed: %s\n", c->address,
                        ctl_msg_error_text(&names));
                goto out;
        }
        r = ctl_conn_call_driver(c, WIRE_DRIVER_INTERFACE, "ListActivatableNames", NULL, &act);
        if (r < 0)
                goto out;
        if (read_strv(&names, &v, &n) < 0 ||
            (act.hdr.type == WIRE_MSG_METHOD_RETURN && read_strv(&act, &va, &na) < 0)) {
                fprintf(stderr, "kdbusctl: %s: ListNames: unexpected reply signature\n",
                        c->address);
                goto out;
        }
        all = calloc(n + na + 1, sizeof(*all));
        if (!all)
                goto out;
        for (size_t i = 0; i < n; ++i)
                all[n_all++] = v[i];
        for (size_t i = 0; i < na; ++i) {
                bool dup = false;

                for (size_t j = 0; j < n && !dup; ++j)
                        dup = !strcmp(va[i], v[j]);
                if (!dup)
                        all[n_all++] = va[i];
        }
        qsort(all, n_all, sizeof(*all), cmp_str);
        for (size_t i = 0; i < n_all; ++i)
                if ((int)strlen(all[i]) > width)
                        width = (int)strlen(all[i]);
        /* an owner is a unique name, or the driver's own name for the driver */
        for (size_t i = 0; i < n; ++i)
                if ((v[i][0] == ':' || !strcmp(v[i], WIRE_DRIVER_NAME)) &&
                    (int)strlen(v[i]) > owidth)
                        owidth = (int)strlen(v[i]);
        if (!o->quiet)
                printf("%-*s %-*s %7s %-15s %6s\n", width, "NAME", owidth, "CONNECTION", "PID",
                       "PROCESS", "UID");
        for (size_t i = 0; i < n_all; ++i) {
                CtlPeerInfo info;
                bool owned = false;

                for (size_t j = 0; j < n && !owned; ++j)
                        owned = !strcmp(all[i], v[j]);
                if (!owned) {
                        printf("%-*s %-*s %7s %-15s %6s\n", width, all[i], owidth, "-", "-",
                               "(activatable)", "-");
                        continue;
                }
                r = ctl_peer_info(c, all[i], &info);
                if (r < 0)
                        goto out;
                if (r > 0)
                        continue;       /* gone meanwhile */
                printf("%-*s %-*s ", width, all[i], owidth, info.owner);
                print_num(info.pid, 7);
                printf(" %-15s ", info.comm);
                print_num(info.uid, 6);
                printf("\n");
        }
        ret = CTL_EXIT_OK;
out:
        free(all);
        free(v);
        free(va);
        ctl_msg_deinit(&names);
        ctl_msg_deinit(&act);
        return ret;
}
