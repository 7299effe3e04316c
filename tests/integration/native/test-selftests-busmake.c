/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's bus-make selftest, through a real kdbusd and libkdbus: BUS_MAKE on a native
 * handle before HELLO makes a bus instance (DIR/<uid>-<name>/bus and bus.dbus1) that lives
 * while the handle does. Its checks (name prefix, mandatory items, bloom parameters, EEXIST,
 * EBADFD on the handle afterwards); an unprivileged user (created with useradd when the
 * test runs as root) makes one, talks on it natively and with dbus-send, may open a monitor
 * there (it owns that bus) but not on the main bus, holds a name as activator there (a
 * dbus-send call with auto-start waits in its pool, ListActivatableNames shows the name,
 * the call moves to the real owner when it comes); another uid cannot connect; closing the
 * handle removes the sockets and the directory.
 */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "kdbusd-fixture.h"

#define TEST_USER "kdbus-busmake"

/* Wait (up to 5 s) until @path exists (@exists) or is gone. */
static bool wait_path(const char *path, bool exists) {
        unsigned i;

        for (i = 0; i < 500; ++i) {
                if (g_file_test(path, G_FILE_TEST_EXISTS) == exists)
                        return true;
                g_usleep(10000);
        }
        return false;
}

static char *instance_path(KBus *b, const char *name, const char *sock) {
        g_autofree char *dir = g_path_get_dirname(b->native);

        return sock ? g_build_filename(dir, name, sock, NULL) : g_build_filename(dir, name, NULL);
}

/* BUS_MAKE with @name, a bloom item of @size / @n_hash, and an @attach_type item (the
 * maker's offer ATTACH_FLAGS_SEND, or the required ATTACH_FLAGS_RECV) of @attach. */
static int make_raw_attach(KdbusConn *h, const char *name, uint64_t size, uint64_t n_hash,
                           uint64_t attach_type, uint64_t attach) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;

        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        item->type = KDBUS_ITEM_MAKE_NAME;
        strcpy(item->str, name);
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_bloom_parameter);
        item->type = KDBUS_ITEM_BLOOM_PARAMETER;
        item->bloom_parameter.size = size;
        item->bloom_parameter.n_hash = n_hash;
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t);
        item->type = attach_type;
        item->data64[0] = attach;
        item = KDBUS_ITEM_NEXT(item);
        cmd->size = (uint64_t)((uint8_t *)item - buf);
        return kdbus_conn_command(h, KDBUS_CMD_BUS_MAKE, cmd, cmd->size, NULL, 0);
}

static int make_raw(KdbusConn *h, const char *name, uint64_t size, uint64_t n_hash,
                    uint64_t attach) {
        return make_raw_attach(h, name, size, n_hash, KDBUS_ITEM_ATTACH_FLAGS_SEND, attach);
}

/* A kdbus_info record's metadata items as "type=value" ("creds=<uid>", "pids=<pid>",
 * "declined=<bits>", "auxgroups=<gid>/<gid>...", "comm=<comm>", "cmdline=<argv[0]>",
 * "seclabel=<label>"), comma-separated. */
static char *render_items(const struct kdbus_info *rec) {
        const struct kdbus_item *item;
        GString *s = g_string_new(NULL);

        for (item = rec->items; (const uint8_t *)item < (const uint8_t *)rec + rec->size;
             item = KDBUS_ITEM_NEXT(item)) {
                if (item->type == KDBUS_ITEM_CREDS)
                        g_string_append_printf(s, "%screds=%llu", s->len ? "," : "",
                                               (unsigned long long)item->creds.uid);
                else if (item->type == KDBUS_ITEM_PIDS)
                        g_string_append_printf(s, "%spids=%llu", s->len ? "," : "",
                                               (unsigned long long)item->pids.pid);
                else if (item->type == KDBUS_ITEM_ATTACH_FLAGS_SEND)
                        g_string_append_printf(s, "%sdeclined=%llu", s->len ? "," : "",
                                               (unsigned long long)item->data64[0]);
                else if (item->type == KDBUS_ITEM_PID_COMM)
                        g_string_append_printf(s, "%scomm=%s", s->len ? "," : "", item->str);
                else if (item->type == KDBUS_ITEM_CMDLINE)
                        g_string_append_printf(s, "%scmdline=%s", s->len ? "," : "", item->str);
                else if (item->type == KDBUS_ITEM_SECLABEL)
                        g_string_append_printf(s, "%sseclabel=%s", s->len ? "," : "", item->str);
                else if (item->type == KDBUS_ITEM_AUXGROUPS) {
                        size_t i, n = (item->size - KDBUS_ITEM_HEADER_SIZE) / sizeof(uint64_t);

                        g_string_append_printf(s, "%sauxgroups=", s->len ? "," : "");
                        for (i = 0; i < n; ++i)
                                g_string_append_printf(s, "%s%llu", i ? "/" : "",
                                                       (unsigned long long)item->data64[i]);
                }
        }
        return g_string_free(s, FALSE);
}

/* BUS_CREATOR_INFO asking @attach: the record's items after MAKE_NAME (render_items()). */
static char *creator_info(KdbusConn *c, uint64_t attach) {
        struct kdbus_cmd_info info = { .size = sizeof(info), .attach_flags = attach };
        char *s;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BUS_CREATOR_INFO, &info, sizeof(info),
                                           NULL, 0), ==, 0);
        s = render_items((const void *)(c->pool + info.offset));
        g_assert_cmpint(kdbus_conn_free(c, info.offset), ==, 0);
        return s;
}

/* CONN_INFO of @c itself asking @attach, rendered as creator_info(). */
static char *self_info(KdbusConn *c, uint64_t attach) {
        struct kdbus_cmd_info info = { .size = sizeof(info), .id = c->id,
                                       .attach_flags = attach };
        char *s;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, &info, sizeof(info), NULL,
                                           0), ==, 0);
        s = render_items((const void *)(c->pool + info.offset));
        g_assert_cmpint(kdbus_conn_free(c, info.offset), ==, 0);
        return s;
}

static void test_errors(KBus *b, gconstpointer ctx) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        g_autofree char *name = g_strdup_printf("%u-test", (unsigned)geteuid());
        g_autofree char *dir = instance_path(b, name, NULL);
        g_autofree char *native = instance_path(b, name, "bus");
        g_autofree char *legacy = instance_path(b, name, "bus.dbus1");
        KdbusConn *h = kopen(b), *h2 = kopen(b), *c, *main_peer = kpeer(b, 0);
        struct stat st;

        /* kdbus's rules: the caller's "<uid>-" prefix, MAKE_NAME and BLOOM_PARAMETER */
        g_assert_cmpint(kdbus_bus_make(h, "4242-test", 0), ==, -EINVAL);
        g_assert_cmpint(kdbus_bus_make(h, name, 1u << 5), ==, -EINVAL);
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        cmd->items[0].type = KDBUS_ITEM_MAKE_NAME;
        strcpy(cmd->items[0].str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        /* kdbus_args_parse(): a mandatory item missing is EINVAL */
        g_assert_cmpint(kdbus_conn_command(h, KDBUS_CMD_BUS_MAKE, cmd, cmd->size, NULL, 0), ==,
                        -EINVAL);
        {
                /* kdbus_item_validate_name(): [A-Za-z0-9_], '-' and '.' inside only, at
                 * most 63 bytes (ENAMETOOLONG) */
                g_autofree char *dash = g_strdup_printf("%s-", name);
                g_autofree char *dot = g_strdup_printf("%s.", name);
                g_autofree char *space = g_strdup_printf("%s x", name);
                g_autofree char *pad = g_strnfill(64 - strlen(name), 'x');
                g_autofree char *too_long = g_strdup_printf("%s%s", name, pad);

                g_assert_cmpuint(strlen(too_long), ==, 64);
                g_assert_cmpint(kdbus_bus_make(h, dash, 0), ==, -EINVAL);
                g_assert_cmpint(kdbus_bus_make(h, dot, 0), ==, -EINVAL);
                g_assert_cmpint(kdbus_bus_make(h, space, 0), ==, -EINVAL);
                g_assert_cmpint(kdbus_bus_make(h, too_long, 0), ==, -ENAMETOOLONG);
        }
        /* NEGOTIATE: the flags it knows, nothing made */
        cmd->flags = KDBUS_FLAG_NEGOTIATE;
        cmd->size = sizeof(*cmd);
        g_assert_cmpint(kdbus_conn_command(h, KDBUS_CMD_BUS_MAKE, cmd, sizeof(*cmd), NULL, 0), ==, 0);
        g_assert_cmpuint(cmd->flags, ==, KDBUS_MAKE_ACCESS_GROUP | KDBUS_MAKE_ACCESS_WORLD);
        /* kdbus's bloom limits (EINVAL): 8..4096 bytes, a multiple of 8, n_hash >= 1 */
        g_assert_cmpint(make_raw(h, name, 12, 8, 0), ==, -EINVAL);
        g_assert_cmpint(make_raw(h, name, 0, 1, 0), ==, -EINVAL);
        g_assert_cmpint(make_raw(h, name, 4, 1, 0), ==, -EINVAL);
        g_assert_cmpint(make_raw(h, name, 64, 0, 0), ==, -EINVAL);
        g_assert_cmpint(make_raw(h, name, 4104, 8, 0), ==, -EINVAL);
        g_assert_cmpint(make_raw(h, name, 8192, 8, 0), ==, -EINVAL);
        g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
        {
                /* ATTACH_FLAGS_RECV: the instance's required metadata (kdbus's
                 * attach_flags_req of its earlier tree): libkdbus does not consent to
                 * EXE: ECONNREFUSED */
                g_autofree char *rname = g_strdup_printf("%u-req", (unsigned)geteuid());
                g_autofree char *rnative = instance_path(b, rname, "bus");
                g_autofree char *rdir = instance_path(b, rname, NULL);
                struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = KPOOL,
                                                 .attach_flags_send = _KDBUS_ATTACH_ANY };
                KdbusConn *rh = kopen(b), *rc = NULL;

                g_assert_cmpint(make_raw_attach(rh, rname, 64, 8, KDBUS_ITEM_ATTACH_FLAGS_RECV,
                                                KDBUS_ATTACH_CREDS | KDBUS_ATTACH_EXE), ==, 0);
                g_assert_cmpint(kdbus_conn_open(rnative, &rc), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(rc, 0, KPOOL), ==, -ECONNREFUSED);
                kdbus_conn_close(rc);
                rc = NULL;
                g_assert_cmpint(kdbus_conn_open(rnative, &rc), ==, 0);
                g_assert_cmpint(kdbus_conn_command(rc, KDBUS_CMD_HELLO, &hello, sizeof(hello),
                                                   NULL, 0), ==, 0);
                kdbus_conn_close(rc);
                kdbus_conn_close(rh);
                g_assert_true(wait_path(rdir, false));
        }
        {
                /* ATTACH_FLAGS_SEND: what the maker offers of itself in BUS_CREATOR_INFO
                 * (kdbus's attach_flags_owner): CREDS only here, so PIDS is declined; an
                 * offer of nothing declines both; HELLO requires nothing */
                g_autofree char *oname = g_strdup_printf("%u-offer", (unsigned)geteuid());
                g_autofree char *onative = instance_path(b, oname, "bus");
                g_autofree char *odir = instance_path(b, oname, NULL);
                g_autofree char *seen = NULL, *expect = NULL;
                KdbusConn *oh = kopen(b), *oc = NULL;

                g_assert_cmpint(make_raw_attach(oh, oname, 64, 8, KDBUS_ITEM_ATTACH_FLAGS_SEND,
                                                KDBUS_ATTACH_CREDS), ==, 0);
                g_assert_cmpint(kdbus_conn_open(onative, &oc), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(oc, 0, KPOOL), ==, 0);
                seen = creator_info(oc, KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS);
                expect = g_strdup_printf("declined=%llu,creds=%u",
                                         (unsigned long long)KDBUS_ATTACH_PIDS,
                                         (unsigned)geteuid());
                g_assert_cmpstr(seen, ==, expect);
                kdbus_conn_close(oc);
                kdbus_conn_close(oh);
                g_assert_true(wait_path(odir, false));
                g_free(seen);
                g_free(expect);
                oh = kopen(b);
                oc = NULL;
                g_assert_cmpint(make_raw_attach(oh, oname, 64, 8, KDBUS_ITEM_ATTACH_FLAGS_SEND,
                                                0), ==, 0);
                g_assert_cmpint(kdbus_conn_open(onative, &oc), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(oc, 0, KPOOL), ==, 0);
                seen = creator_info(oc, KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS);
                expect = g_strdup_printf("declined=%llu", (unsigned long long)
                                         (KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS));
                g_assert_cmpstr(seen, ==, expect);
                kdbus_conn_close(oc);
                kdbus_conn_close(oh);
                g_assert_true(wait_path(odir, false));
                /* the maker's /proc items, read at BUS_MAKE, as far as it offers them
                 * (kdbus collected them all of the maker): its comm and command line,
                 * CAPS not offered: declined */
                g_free(seen);
                g_free(expect);
                oh = kopen(b);
                oc = NULL;
                g_assert_cmpint(make_raw_attach(oh, oname, 64, 8, KDBUS_ITEM_ATTACH_FLAGS_SEND,
                                                KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_CMDLINE),
                                ==, 0);
                g_assert_cmpint(kdbus_conn_open(onative, &oc), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(oc, 0, KPOOL), ==, 0);
                seen = creator_info(oc, KDBUS_ATTACH_PID_COMM | KDBUS_ATTACH_CMDLINE |
                                    KDBUS_ATTACH_CAPS);
                {
                        g_autofree char *comm = NULL, *cmdline = NULL;

                        g_assert_true(g_file_get_contents("/proc/self/comm", &comm, NULL, NULL));
                        g_assert_true(g_file_get_contents("/proc/self/cmdline", &cmdline, NULL,
                                                          NULL));
                        g_strchomp(comm);
                        expect = g_strdup_printf("declined=%llu,comm=%s,cmdline=%s",
                                                 (unsigned long long)KDBUS_ATTACH_CAPS, comm,
                                                 cmdline);
                }
                g_assert_cmpstr(seen, ==, expect);
                kdbus_conn_close(oc);
                kdbus_conn_close(oh);
                g_assert_true(wait_path(odir, false));
                /* AUXGROUPS and SECLABEL, offered: as the maker's handle was captured at
                 * connect, the same a connection of the maker gets in its CONN_INFO (the
                 * primary group; the label when the machine labels sockets); CREDS not
                 * offered: declined */
                g_free(seen);
                g_free(expect);
                oh = kopen(b);
                oc = NULL;
                g_assert_cmpint(make_raw_attach(oh, oname, 64, 8, KDBUS_ITEM_ATTACH_FLAGS_SEND,
                                                KDBUS_ATTACH_AUXGROUPS | KDBUS_ATTACH_SECLABEL),
                                ==, 0);
                g_assert_cmpint(kdbus_conn_open(onative, &oc), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(oc, 0, KPOOL), ==, 0);
                seen = creator_info(oc, KDBUS_ATTACH_CREDS | KDBUS_ATTACH_AUXGROUPS |
                                    KDBUS_ATTACH_SECLABEL);
                {
                        g_autofree char *own = self_info(oc, KDBUS_ATTACH_AUXGROUPS |
                                                         KDBUS_ATTACH_SECLABEL);

                        g_assert_nonnull(strstr(own, "auxgroups="));
                        expect = g_strdup_printf("declined=%llu,%s",
                                                 (unsigned long long)KDBUS_ATTACH_CREDS, own);
                }
                g_assert_cmpstr(seen, ==, expect);
                {
                        g_autofree char *gid = g_strdup_printf("auxgroups=%u",
                                                               (unsigned)getegid());

                        g_assert_nonnull(strstr(seen, gid));
                }
                kdbus_conn_close(oc);
                kdbus_conn_close(oh);
                g_assert_true(wait_path(odir, false));
        }

        g_assert_cmpint(kdbus_bus_make(h, name, 0), ==, 0);
        g_assert_true(g_file_test(native, G_FILE_TEST_EXISTS));
        g_assert_cmpint(stat(legacy, &st), ==, 0);
        g_assert_true(S_ISSOCK(st.st_mode));
        g_assert_cmpuint(st.st_mode & 0777, ==, 0600);
        g_assert_cmpint(stat(dir, &st), ==, 0);
        g_assert_cmpuint(st.st_mode & 0777, ==, 0700);
        /* the name is taken; the handle can do nothing else now */
        g_assert_cmpint(kdbus_bus_make(h2, name, 0), ==, -EEXIST);
        g_assert_cmpint(kdbus_bus_make(h, name, 0), ==, -EBADFD);
        g_assert_cmpint(kdbus_conn_hello(h, 0, KPOOL), ==, -EBADFD);
        /* a connected handle is set up: kdbus answers its setup ioctls EBADFD */
        g_assert_cmpint(kdbus_bus_make(main_peer, name, 0), ==, -EBADFD);

        /* a bus of its own: ids from 1 again, another bus id */
        c = NULL;
        g_assert_cmpint(kdbus_conn_open(native, &c), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(c, 0, KPOOL), ==, 0);
        g_assert_cmpuint(c->id, ==, 1);
        g_assert_cmpint(memcmp(c->id128, main_peer->id128, 16), !=, 0);
        {
                /* BUS_CREATOR_INFO: its MAKE_NAME and maker */
                struct kdbus_cmd_info info = { .size = sizeof(info),
                                               .attach_flags = KDBUS_ATTACH_CREDS };
                const struct kdbus_info *rec;
                const struct kdbus_item *item;

                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BUS_CREATOR_INFO, &info,
                                                   sizeof(info), NULL, 0), ==, 0);
                rec = (const void *)(c->pool + info.offset);
                item = rec->items;
                /* kdbus_cmd_bus_creator_info(): the BUS_MAKE flags; MAKE_NAME a plain
                 * string item */
                g_assert_cmpuint(rec->flags, ==, 0);
                g_assert_cmpuint(rec->id, ==, 0);
                g_assert_cmpuint(item->type, ==, KDBUS_ITEM_MAKE_NAME);
                g_assert_cmpuint(item->size, ==, KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1);
                g_assert_cmpstr(item->str, ==, name);
                item = (const void *)((const uint8_t *)item + KDBUS_ALIGN8(item->size));
                g_assert_cmpuint(item->type, ==, KDBUS_ITEM_BLOOM_PARAMETER);
                g_assert_cmpuint(item->bloom_parameter.size, ==, 64);
                g_assert_cmpuint(item->bloom_parameter.n_hash, ==, 8);
                item = (const void *)((const uint8_t *)item + KDBUS_ALIGN8(item->size));
                g_assert_cmpuint(item->type, ==, KDBUS_ITEM_CREDS);
                g_assert_cmpuint(item->creds.uid, ==, geteuid());
                g_assert_cmpint(kdbus_conn_free(c, info.offset), ==, 0);
        }
        kdbus_conn_close(c);

        /* closing the handle ends it */
        kdbus_conn_close(h);
        g_assert_true(wait_path(dir, false));
        /* MAKE_ACCESS_WORLD: everybody may connect (the sockets' mode) */
        g_assert_cmpint(make_raw(h2, name, 64, 8, 0), ==, 0);
        kdbus_conn_close(h2);
        g_assert_true(wait_path(dir, false));
        h2 = kopen(b);
        g_assert_cmpint(kdbus_bus_make(h2, name, KDBUS_MAKE_ACCESS_WORLD), ==, 0);
        g_assert_cmpint(stat(native, &st), ==, 0);
        g_assert_cmpuint(st.st_mode & 0777, ==, 0666);
        g_assert_cmpint(stat(dir, &st), ==, 0);
        g_assert_cmpuint(st.st_mode & 0777, ==, 0755);
        {
                /* kdbus: HELLO's bus_flags and BUS_CREATOR_INFO's flags are the BUS_MAKE
                 * flags */
                struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = KPOOL };
                struct kdbus_cmd_info info = { .size = sizeof(info) };

                c = NULL;
                g_assert_cmpint(kdbus_conn_open(native, &c), ==, 0);
                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_HELLO, &hello, sizeof(hello),
                                                   NULL, 0), ==, 0);
                g_assert_cmpuint(hello.bus_flags, ==, KDBUS_MAKE_ACCESS_WORLD);
                kdbus_conn_close(c);
                c = NULL;
                g_assert_cmpint(kdbus_conn_open(native, &c), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(c, 0, KPOOL), ==, 0);
                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BUS_CREATOR_INFO, &info,
                                                   sizeof(info), NULL, 0), ==, 0);
                g_assert_cmpuint(((const struct kdbus_info *)(c->pool + info.offset))->flags, ==,
                                 KDBUS_MAKE_ACCESS_WORLD);
                kdbus_conn_close(c);
        }
        kdbus_conn_close(h2);
        g_assert_true(wait_path(dir, false));
        kdbus_conn_close(main_peer);
}

#define CHECK(x) do { \
        if (!(x)) { \
                fprintf(stderr, "child (uid %u): %s:%d: %s failed\n", (unsigned)getuid(), \
                        __FILE__, __LINE__, #x); \
                _exit(1); \
        } \
} while (0)

/* dbus-send @args... on @bus_arg; its stdout. */
static char *dbus_send(const char *bus_arg, const char *const *args) {
        const char *argv[16] = { "dbus-send", bus_arg };
        char *out = NULL;
        unsigned n = 2;
        int status;

        while (*args && n < ELEMENTSOF(argv) - 1)
                argv[n++] = *args++;
        argv[n] = NULL;
        CHECK(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                           NULL, &status, NULL));
        CHECK(g_spawn_check_wait_status(status, NULL));
        return out;
}

/* RECV the next message of @c (waiting up to 5 s when none is there); its member (static
 * buffer). */
static const char *recv_member(KdbusConn *c) {
        static char member[256];
        const struct kdbus_msg *m = NULL;
        const uint8_t *data;
        WireHeader h;
        size_t size;
        int r;

        r = kdbus_conn_recv(c, 0, 0, &m, NULL);
        if (r == -EAGAIN) {
                CHECK(kdbus_conn_wait(c, 5000) == 0);
                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
        }
        CHECK(r == 0);
        CHECK(kdbus_msg_payload(m, &data, &size) == 0);
        CHECK(wire_message_parse(data, size, KDBUS_MSG_MAX_FDS, 0, &h) == 0);
        g_strlcpy(member, h.member ? h.member : "", sizeof(member));
        CHECK(kdbus_conn_free(c, kdbus_conn_offset(c, m)) == 0);
        return member;
}

static void become(uid_t uid, gid_t gid) {
        CHECK(setgroups(0, NULL) == 0);
        CHECK(setgid(gid) == 0);
        CHECK(setuid(uid) == 0);
}

/* The creator: make the bus, use it, tell the parent, wait, close. */
static void creator(KBus *b, const struct passwd *pw, int ready_fd, int go_fd) {
        g_autofree char *name = g_strdup_printf("%u-bm", (unsigned)pw->pw_uid);
        g_autofree char *native = instance_path(b, name, "bus");
        g_autofree char *legacy = instance_path(b, name, "bus.dbus1");
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", legacy);
        g_autofree char *out = NULL;
        const char *argv[] = { "dbus-send", bus_arg, "--print-reply",
                               "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.ListNames", NULL };
        KdbusConn *h = NULL, *c = NULL, *m = NULL, *mm = NULL, *act = NULL;
        int status;
        char byte;

        become(pw->pw_uid, pw->pw_gid);
        CHECK(kdbus_conn_open(b->native, &h) == 0);
        CHECK(kdbus_bus_make(h, "0-bm", 0) == -EINVAL);         /* not its uid */
        CHECK(kdbus_bus_make(h, name, 0) == 0);
        CHECK(kdbus_conn_open(native, &c) == 0);
        CHECK(kdbus_conn_hello(c, KDBUS_HELLO_ACCEPT_FD, KPOOL) == 0);
        CHECK(c->id == 1);
        CHECK(kdbus_conn_name_acquire(c, "org.test.Instance", 0, NULL) == 0);
        /* it owns this bus: monitors are its to open; not on the main bus */
        CHECK(kdbus_conn_open(native, &m) == 0);
        CHECK(kdbus_conn_hello(m, KDBUS_HELLO_MONITOR, KPOOL) == 0);
        CHECK(kdbus_conn_open(b->native, &mm) == 0);
        CHECK(kdbus_conn_hello(mm, KDBUS_HELLO_MONITOR, KPOOL) == -EPERM);
        /* an unchanged D-Bus client on the legacy socket sees the instance's names */
        CHECK(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                           NULL, &status, NULL));
        CHECK(g_spawn_check_wait_status(status, NULL));
        CHECK(strstr(out, "\"org.test.Instance\"") != NULL);

        /* an activator (its bus: allowed): legacy clients see the name as activatable, and
         * their auto-start call waits in its pool until a real owner comes */
        CHECK(kdbus_conn_open(native, &act) == 0);
        CHECK(kdbus_conn_hello_name(act, KDBUS_HELLO_ACTIVATOR, KPOOL, "org.test.Activated") == 0);
        g_free(out);
        out = dbus_send(bus_arg, (const char *const[]){ "--print-reply",
                        "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                        "org.freedesktop.DBus.ListActivatableNames", NULL });
        CHECK(strstr(out, "\"org.test.Activated\"") != NULL);
        g_free(out);
        out = dbus_send(bus_arg, (const char *const[]){ "--dest=org.test.Activated", "/",
                        "org.test.I.Hello", NULL });
        CHECK(strcmp(recv_member(act), "Hello") == 0);
        g_free(out);
        out = dbus_send(bus_arg, (const char *const[]){ "--dest=org.test.Activated", "/",
                        "org.test.I.Again", NULL });
        /* the service takes its name: the waiting call moves to it */
        if (kdbus_conn_recv(act, KDBUS_RECV_PEEK, 0, NULL, NULL) == -EAGAIN)
                CHECK(kdbus_conn_wait(act, 5000) == 0);
        CHECK(kdbus_conn_recv(act, KDBUS_RECV_PEEK, 0, NULL, NULL) == 0);      /* there */
        CHECK(kdbus_conn_name_acquire(c, "org.test.Activated", 0, NULL) == 0);
        CHECK(kdbus_conn_recv(act, 0, 0, NULL, NULL) == -EAGAIN);
        {
                unsigned i;
                bool found = false;

                for (i = 0; i < 8 && !found; ++i)
                        found = !strcmp(recv_member(c), "Again");
                CHECK(found);
        }
        kdbus_conn_close(act);
        CHECK(write(ready_fd, "r", 1) == 1);
        CHECK(read(go_fd, &byte, 1) == 1);
        kdbus_conn_close(mm);
        kdbus_conn_close(m);
        kdbus_conn_close(c);
        kdbus_conn_close(h);
        _exit(0);
}

/* Another user: the instance's socket is not for it. */
static void stranger(const char *native, const struct passwd *pw) {
        KdbusConn *c = NULL;

        become(pw->pw_uid, pw->pw_gid);
        CHECK(kdbus_conn_open(native, &c) == -EACCES);
        _exit(0);
}

static pid_t fork_or_die(void) {
        pid_t pid;

        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        return pid;
}

static void wait_ok(pid_t pid) {
        int status;

        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* kdbus's KDBUS_USER_MAX_BUSES: a uid's 17th live bus is EMFILE; one gone, one more. */
static void test_limit(KBus *b, gconstpointer ctx) {
        KdbusConn *h[17];
        g_autofree char *first = g_strdup_printf("%u-lim0", (unsigned)geteuid());
        g_autofree char *first_dir = instance_path(b, first, NULL);
        unsigned i;

        for (i = 0; i < 17; ++i) {
                g_autofree char *name = g_strdup_printf("%u-lim%u", (unsigned)geteuid(), i);

                h[i] = kopen(b);
                g_assert_cmpint(kdbus_bus_make(h[i], name, 0), ==, i < 16 ? 0 : -EMFILE);
        }
        kdbus_conn_close(h[0]);
        g_assert_true(wait_path(first_dir, false));
        /* the closed bus's count went with it (before its directory); the handle that
         * failed can try again */
        {
                g_autofree char *name = g_strdup_printf("%u-lim16", (unsigned)geteuid());

                g_assert_cmpint(kdbus_bus_make(h[16], name, 0), ==, 0);
        }
        for (i = 1; i < 17; ++i)
                kdbus_conn_close(h[i]);
}

static void test_unprivileged(KBus *b, gconstpointer ctx) {
        g_autofree char *dir = g_path_get_dirname(b->native);
        g_autofree char *name = NULL, *idir = NULL, *native = NULL;
        struct passwd *pw, *nobody;
        int ready[2], go[2];
        struct stat st;
        pid_t a, s;
        char byte;

        if (geteuid() != 0) {
                g_test_skip("needs root to create and become an unprivileged user");
                return;
        }
        pw = getpwnam(TEST_USER);
        if (!pw) {
                g_assert_cmpint(system("useradd --system --no-create-home --shell /usr/sbin/nologin "
                                       TEST_USER), ==, 0);
                pw = getpwnam(TEST_USER);
        }
        g_assert_nonnull(pw);
        pw = g_memdup2(pw, sizeof(*pw));        /* the next getpwnam() reuses the buffer */
        nobody = getpwnam("nobody");
        g_assert_nonnull(nobody);
        g_assert_cmpuint(nobody->pw_uid, !=, pw->pw_uid);
        name = g_strdup_printf("%u-bm", (unsigned)pw->pw_uid);
        idir = instance_path(b, name, NULL);
        native = instance_path(b, name, "bus");
        g_assert_cmpint(chmod(dir, 0755), ==, 0);       /* the test's directory: reachable */

        g_assert_cmpint(pipe(ready), ==, 0);
        g_assert_cmpint(pipe(go), ==, 0);
        a = fork_or_die();
        if (a == 0)
                creator(b, pw, ready[1], go[0]);
        /* only the child writes "ready": if it fails, read() sees EOF */
        (void) close(ready[1]);
        (void) close(go[0]);
        if (read(ready[0], &byte, 1) != 1) {
                wait_ok(a);                     /* shows the child's failure */
                g_assert_not_reached();
        }

        /* the creator's: directory and sockets */
        g_assert_cmpint(stat(idir, &st), ==, 0);
        g_assert_cmpuint(st.st_uid, ==, pw->pw_uid);
        g_assert_cmpint(stat(native, &st), ==, 0);
        g_assert_cmpuint(st.st_uid, ==, pw->pw_uid);
        g_assert_cmpuint(st.st_mode & 0777, ==, 0600);
        s = fork_or_die();
        if (s == 0)
                stranger(native, nobody);
        wait_ok(s);

        g_assert_cmpint(write(go[1], "g", 1), ==, 1);
        wait_ok(a);
        g_assert_true(wait_path(idir, false));
        (void) close(ready[0]);
        (void) close(go[1]);
        g_free(pw);
}

/* kdbusctl bus-make holds a bus for unchanged clients; it ends when its stdin does. */
static void test_kdbusctl(KBus *b, gconstpointer ctx) {
        const char *ctl = g_getenv("KDBUSCTL");
        g_autofree char *native_arg = g_strdup_printf("--native=%s", b->native);
        g_autofree char *name = g_strdup_printf("%u-ctl", (unsigned)geteuid());
        g_autofree char *dir = instance_path(b, name, NULL);
        g_autofree char *expect = instance_path(b, name, "bus.dbus1");
        g_autofree char *bus_arg = NULL, *out = NULL;
        const char *argv[] = { ctl, "bus-make", native_arg, "--stdin", "ctl", NULL };
        const char *send[] = { "dbus-send", NULL, "--print-reply", "--dest=org.freedesktop.DBus",
                               "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId", NULL };
        char line[4200];
        int in_fd, out_fd, status;
        FILE *f;
        GPid pid;

        g_assert_nonnull(ctl);
        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                               &in_fd, &out_fd, NULL, NULL));
        f = fdopen(out_fd, "r");
        g_assert_nonnull(f);
        g_assert_nonnull(fgets(line, sizeof(line), f));
        g_strchomp(line);
        g_assert_true(g_str_has_prefix(line, "unix:path="));
        g_assert_cmpstr(line + strlen("unix:path="), ==, expect);
        bus_arg = g_strdup_printf("--bus=%s", line);
        send[1] = bus_arg;
        g_assert_true(g_spawn_sync(NULL, (char **)send, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   &out, NULL, &status, NULL));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_nonnull(strstr(out, "string \""));  /* the instance's bus id */
        (void) close(in_fd);                            /* EOF: kdbusctl ends, the bus too */
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_spawn_close_pid(pid);
        (void) fclose(f);
        g_assert_true(wait_path(dir, false));
}

/* BUS_CREATOR_INFO's BLOOM_PARAMETER item (our addition), or fails the test. */
static void creator_bloom(KdbusConn *c, uint64_t *ret_size, uint64_t *ret_n_hash) {
        struct kdbus_cmd_info info = { .size = sizeof(info) };
        const struct kdbus_info *rec;
        const struct kdbus_item *item;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BUS_CREATOR_INFO, &info, sizeof(info),
                                           NULL, 0), ==, 0);
        rec = (const void *)(c->pool + info.offset);
        for (item = kdbus_item_first(rec, sizeof(*rec), rec->size); item;
             item = kdbus_item_next(rec, rec->size, item))
                if (item->type == KDBUS_ITEM_BLOOM_PARAMETER)
                        break;
        g_assert_nonnull(item);
        *ret_size = item->bloom_parameter.size;
        *ret_n_hash = item->bloom_parameter.n_hash;
        g_assert_cmpint(kdbus_conn_free(c, info.offset), ==, 0);
}

/* MATCH_ADD of one BLOOM_MASK item of @size bytes (@mask, zero-padded). */
static int match_raw(KdbusConn *c, uint64_t cookie, const uint64_t *mask, size_t mask_bytes,
                     size_t size) {
        g_autofree uint8_t *buf = g_malloc0(sizeof(struct kdbus_cmd_match) +
                                            KDBUS_ITEM_SIZE(size));
        struct kdbus_cmd_match *cmd = (void *)buf;

        cmd->size = sizeof(*cmd) + KDBUS_ITEM_SIZE(size);
        cmd->cookie = cookie;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + size;
        cmd->items[0].type = KDBUS_ITEM_BLOOM_MASK;
        memcpy(cmd->items[0].data, mask, MIN(mask_bytes, size));
        return kdbus_conn_command(c, KDBUS_CMD_MATCH_ADD, cmd, cmd->size, NULL, 0);
}

/* A broadcast org.example.Test.@member from @c with a BLOOM_FILTER item (@filter, @size
 * bytes, 0: the bus's) of @generation. */
static int signal_with_filter(KdbusConn *c, uint32_t serial, const char *member,
                              const uint64_t *filter, uint64_t size, uint64_t generation) {
        KdbusSend s = { .dst_id = KDBUS_DST_ID_BROADCAST, .memfd = -1, .bloom_filter = filter,
                        .bloom_size = size, .bloom_generation = generation };
        uint8_t *data;
        size_t len;
        int r;

        data = kbuild(WIRE_MSG_SIGNAL, serial, 0, NULL, member, NULL, &len);
        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, len), ==, 0);
        r = kdbus_conn_send(c, &s, data, len, NULL);
        free(data);
        return r;
}

/*
 * kdbus accepted any valid bloom parameters at BUS_MAKE: each instance keeps its own,
 * HELLO and BUS_CREATOR_INFO report them, and nothing on it assumes 64 / 8.
 */
static void test_bloom_parameters(KBus *b, gconstpointer ctx) {
        static const struct { uint64_t size, n_hash; } ok[] = {
                { 8, 1 }, { 512, 3 }, { 64, 8 }, { 24, 2 }, { 4096, UINT64_MAX },
        };
        g_autofree char *name = g_strdup_printf("%u-bloom", (unsigned)geteuid());
        g_autofree char *dir = instance_path(b, name, NULL);
        g_autofree char *native = instance_path(b, name, "bus");
        unsigned i;

        for (i = 0; i < G_N_ELEMENTS(ok); ++i) {
                KdbusConn *h = kopen(b), *c = NULL;
                uint64_t size = 0, n_hash = 0;

                g_assert_cmpint(kdbus_bus_make_bloom(h, name, 0, ok[i].size, ok[i].n_hash), ==, 0);
                g_assert_cmpint(kdbus_conn_open(native, &c), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(c, 0, KPOOL), ==, 0);
                g_assert_cmpuint(c->bloom_size, ==, ok[i].size);
                g_assert_cmpuint(c->bloom_n_hash, ==, ok[i].n_hash);
                creator_bloom(c, &size, &n_hash);
                g_assert_cmpuint(size, ==, ok[i].size);
                g_assert_cmpuint(n_hash, ==, ok[i].n_hash);
                kdbus_conn_close(c);
                kdbus_conn_close(h);
                g_assert_true(wait_path(dir, false));
        }
        {
                /* the main bus keeps its own (64 / 8) meanwhile */
                KdbusConn *m = kpeer(b, 0);

                g_assert_cmpuint(m->bloom_size, ==, 64);
                g_assert_cmpuint(m->bloom_n_hash, ==, 8);
                kdbus_conn_close(m);
        }
}

/*
 * On an instance of 512 bytes / 3 hashes: a native receiver's masks built with the
 * parameters from HELLO get a legacy sender's signal (dbus-send on bus.dbus1: the bus
 * computes the filter in the instance's geometry) and a native sender's, whose own
 * BLOOM_FILTER entries count; masks and filters of another size are refused (EDOM), a
 * filter on a method call too (EBADMSG), as in kdbus.
 */
static void test_bloom_instance(KBus *b, gconstpointer ctx) {
        g_autofree char *name = g_strdup_printf("%u-bloom3", (unsigned)geteuid());
        g_autofree char *dir = instance_path(b, name, NULL);
        g_autofree char *native = instance_path(b, name, "bus");
        g_autofree char *legacy = instance_path(b, name, "bus.dbus1");
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", legacy);
        KdbusConn *h = kopen(b), *r = NULL, *s = NULL;
        uint64_t mask[64] = { 0 }, custom[64] = { 0 }, filter[66] = { 0 }, two[128] = { 0 };
        const struct kdbus_msg *m;
        WireHeader hdr;

        g_assert_cmpint(kdbus_bus_make_bloom(h, name, 0, 512, 3), ==, 0);
        g_assert_cmpint(kdbus_conn_open(native, &r), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(r, 0, KPOOL), ==, 0);
        g_assert_cmpint(kdbus_conn_open(native, &s), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(s, 0, KPOOL), ==, 0);
        g_assert_cmpuint(r->bloom_size, ==, sizeof(mask));

        /* masks: exactly a whole number of generations of the bus's size (kdbus: EDOM) */
        kdbus_bloom_add(mask, r->bloom_size, r->bloom_n_hash, "member", "Ping");
        g_assert_cmpint(match_raw(r, 9, mask, sizeof(mask), 64), ==, -EDOM);
        g_assert_cmpint(match_raw(r, 9, mask, sizeof(mask), 512 + 8), ==, -EDOM);
        g_assert_cmpint(match_raw(r, 9, mask, sizeof(mask), 8), ==, -EDOM);
        g_assert_cmpint(kdbus_conn_match_add(r, 1, 0, mask, KDBUS_MATCH_ID_ANY), ==, 0);

        /* a legacy sender: Other is filtered out by the mask, Ping arrives */
        {
                const char *other[] = { "--type=signal", "/org/example",
                                        "org.example.Test.Other", NULL };
                const char *ping[] = { "--type=signal", "/org/example",
                                       "org.example.Test.Ping", NULL };

                g_free(dbus_send(bus_arg, other));
                g_free(dbus_send(bus_arg, ping));
        }
        m = krecv(r, &hdr, NULL);
        g_assert_cmpstr(hdr.member, ==, "Ping");
        kfree_msg(r, m);
        kassert_empty(r);

        /* a native sender: its filter's own entry (x-custom, which the bus does not add)
         * reaches a mask with only that entry; without it the signal does not */
        kdbus_bloom_add(custom, r->bloom_size, r->bloom_n_hash, "x-custom", "one");
        g_assert_cmpint(kdbus_conn_match_add(r, 2, 0, custom, KDBUS_MATCH_ID_ANY), ==, 0);
        kdbus_bloom_add(filter, s->bloom_size, s->bloom_n_hash, "member", "Unrelated");
        g_assert_cmpint(signal_with_filter(s, 1, "NoCustom", filter, 0, 0), ==, 0);
        kdbus_bloom_add(filter, s->bloom_size, s->bloom_n_hash, "x-custom", "one");
        g_assert_cmpint(signal_with_filter(s, 2, "Custom", filter, 0, 0), ==, 0);
        m = krecv(r, &hdr, NULL);
        g_assert_cmpstr(hdr.member, ==, "Custom");
        kfree_msg(r, m);
        /* and a native signal matching the first mask by the bus's own entries */
        g_assert_cmpint(ksignal(s, 3, "Ping", NULL), ==, 0);
        m = krecv(r, &hdr, NULL);
        g_assert_cmpstr(hdr.member, ==, "Ping");
        kfree_msg(r, m);
        kassert_empty(r);

        /* generations (kdbus): a filter of generation g meets the mask's generation
         * min(g, n - 1): generation 0 wants x-custom:zero, 1 (and later) x-custom:one */
        g_assert_cmpint(kdbus_conn_match_remove(r, 1), ==, 0);
        g_assert_cmpint(kdbus_conn_match_remove(r, 2), ==, 0);
        kdbus_bloom_add(two, r->bloom_size, r->bloom_n_hash, "x-custom", "zero");
        kdbus_bloom_add(two + 64, r->bloom_size, r->bloom_n_hash, "x-custom", "one");
        g_assert_cmpint(match_raw(r, 3, two, sizeof(two), sizeof(two)), ==, 0);
        g_assert_cmpint(signal_with_filter(s, 4, "Gen0", filter, 0, 0), ==, 0);
        g_assert_cmpint(signal_with_filter(s, 5, "Gen7", filter, 0, 7), ==, 0);
        m = krecv(r, &hdr, NULL);
        g_assert_cmpstr(hdr.member, ==, "Gen7");
        kfree_msg(r, m);
        kassert_empty(r);

        /* filters: the bus's size (EDOM), not on a call (EBADMSG) */
        g_assert_cmpint(signal_with_filter(s, 6, "Ping", filter, 64, 0), ==, -EDOM);
        g_assert_cmpint(signal_with_filter(s, 7, "Ping", filter, 512 + 8, 0), ==, -EDOM);
        g_assert_cmpint(signal_with_filter(s, 8, "Ping", filter, 12, 0), ==, -EFAULT);
        {
                KdbusSend call = { .dst_id = r->id, .memfd = -1, .bloom_filter = filter };
                g_autofree char *dest = g_strdup(kunique(r->id));
                uint8_t *data;
                size_t len;

                data = kbuild(WIRE_MSG_METHOD_CALL, 9, 0, dest, "Call", NULL, &len);
                data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;         /* the header's flags byte */
                g_assert_cmpint(kdbus_send_from_dbus1(&call, data, len), ==, 0);
                g_assert_cmpint(kdbus_conn_send(s, &call, data, len, NULL), ==, -EBADMSG);
                free(data);
        }
        kassert_empty(r);
        {
                /* masks are bounded: 32 KiB per entry (EMSGSIZE), 1 MiB per connection
                 * (EMFILE; entry 3 holds 1 KiB): 31 entries of 64 generations fit */
                g_autofree uint64_t *big = g_malloc0(32 * 1024 + 512);
                unsigned n = 0;
                int rr;

                g_assert_cmpint(match_raw(r, 99, big, 0, 32 * 1024 + 512), ==, -EMSGSIZE);
                while ((rr = match_raw(r, 100 + n, big, 0, 32 * 1024)) == 0)
                        ++n;
                g_assert_cmpint(rr, ==, -EMFILE);
                g_assert_cmpuint(n, ==, 31);
                g_assert_cmpint(kdbus_conn_match_remove(r, 100), ==, 0);
                g_assert_cmpint(match_raw(r, 100, big, 0, 32 * 1024), ==, 0);
                /* an entry without masks still may come */
                g_assert_cmpint(kdbus_conn_match_add(r, 200, 0, NULL, s->id), ==, 0);
        }

        kdbus_conn_close(r);
        kdbus_conn_close(s);
        kdbus_conn_close(h);
        g_assert_true(wait_path(dir, false));
}

/* kdbusd --native-bloom=SIZE,N_HASH: the main bus's geometry; bad values stop kdbusd. */
static void test_bloom_option(void) {
        const char *exe = g_getenv("KDBUSD");
        g_autofree char *tmp = g_dir_make_tmp("kdbus-bloom-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(tmp, "native", NULL);
        g_autofree char *native_arg = g_strdup_printf("--native=unix:path=%s", path);
        const char *bad[] = { "12,1", "64,0", "0,1", "8192,8", "64", "64,8x", "-8,1", "64,-1" };
        KdbusConn *c = NULL;
        unsigned i;
        int status;
        GPid pid;

        g_assert_nonnull(exe);
        for (i = 0; i < G_N_ELEMENTS(bad); ++i) {
                g_autofree char *opt = g_strdup_printf("--native-bloom=%s", bad[i]);
                g_autofree char *err = NULL;
                const char *argv[] = { exe, "--session", "--nofork", native_arg, opt, NULL };

                g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                                           NULL, NULL, NULL, &err, &status, NULL));
                g_assert_false(g_spawn_check_wait_status(status, NULL));
                g_assert_nonnull(strstr(err, "--native-bloom="));
        }
        {
                const char *argv[] = { exe, "--session", "--nofork", native_arg,
                                       "--native-bloom=24,2", NULL };

                g_assert_true(g_spawn_async(NULL, (char **)argv, NULL,
                                            G_SPAWN_DO_NOT_REAP_CHILD, kbus_child_setup, NULL,
                                            &pid, NULL));
        }
        for (i = 0; i < 500 && kdbus_conn_open(path, &c) < 0; ++i)
                g_usleep(10000);
        g_assert_nonnull(c);
        g_assert_cmpint(kdbus_conn_hello(c, 0, KPOOL), ==, 0);
        g_assert_cmpuint(c->bloom_size, ==, 24);
        g_assert_cmpuint(c->bloom_n_hash, ==, 2);
        kdbus_conn_close(c);
        (void) kill(pid, SIGTERM);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_spawn_close_pid(pid);
        (void) unlink(path);
        (void) rmdir(tmp);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/native/selftests/bus-make/errors", KBus, NULL, kbus_setup, test_errors,
                   kbus_teardown);
        g_test_add("/native/selftests/bus-make/limit", KBus, NULL, kbus_setup, test_limit,
                   kbus_teardown);
        g_test_add("/native/selftests/bus-make/unprivileged", KBus, NULL, kbus_setup,
                   test_unprivileged, kbus_teardown);
        g_test_add("/native/selftests/bus-make/kdbusctl", KBus, NULL, kbus_setup, test_kdbusctl,
                   kbus_teardown);
        g_test_add("/native/selftests/bus-make/bloom-parameters", KBus, NULL, kbus_setup,
                   test_bloom_parameters, kbus_teardown);
        g_test_add("/native/selftests/bus-make/bloom-instance", KBus, NULL, kbus_setup,
                   test_bloom_instance, kbus_teardown);
        g_test_add_func("/native/selftests/bus-make/bloom-option", test_bloom_option);
        return g_test_run();
}
