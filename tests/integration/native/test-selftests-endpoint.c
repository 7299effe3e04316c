/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Custom endpoints through a real kdbusd (like kdbus's test-endpoint selftest, plus what
 * kdbus never had: legacy clients on the endpoint). A native handle makes "<uid>-sandbox"
 * and gives it TALK to org.kdbus.EpTalk and SEE of org.kdbus.EpSee; native services own
 * those and org.kdbus.EpHidden on the bus's own socket. A dbus-python client on the
 * endpoint's legacy socket then sees only the allowed names, can call EpTalk, gets
 * AccessDenied from EpSee and ServiceUnknown / NameHasNoOwner for EpHidden; a native peer
 * on the endpoint's native socket gets ESRCH for the hidden name. When the owner handle
 * closes, both sockets disappear and the connections that came through them are closed.
 */
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "kdbusd-fixture.h"

/* The legacy client: one line per fact, in this order. */
static const char client_py[] =
        "import sys, dbus\n"
        "bus = dbus.bus.BusConnection(sys.argv[1])\n"
        "drv = bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus')\n"
        "names = [str(n) for n in drv.ListNames(dbus_interface='org.freedesktop.DBus')]\n"
        "print('list', ' '.join(sorted(n for n in names if n.startswith('org.'))))\n"
        "print('uniques', len([n for n in names if n.startswith(':')]))\n"
        "for n in ('org.kdbus.EpTalk', 'org.kdbus.EpSee', 'org.kdbus.EpHidden'):\n"
        "    print('has', n, bool(drv.NameHasOwner(n, dbus_interface='org.freedesktop.DBus')))\n"
        "try:\n"
        "    drv.GetNameOwner('org.kdbus.EpHidden', dbus_interface='org.freedesktop.DBus')\n"
        "    print('owner visible')\n"
        "except dbus.DBusException as e:\n"
        "    print('owner', e.get_dbus_name())\n"
        "for n in ('org.kdbus.EpTalk', 'org.kdbus.EpSee', 'org.kdbus.EpHidden'):\n"
        "    try:\n"
        "        r = bus.call_blocking(n, '/org/example', 'org.example.Test', 'Ping', 's',\n"
        "                              ['hi'], timeout=5)\n"
        "        print('call', n, 'ok', r)\n"
        "    except dbus.DBusException as e:\n"
        "        print('call', n, e.get_dbus_name())\n"
        "st = bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus')\n"
        "for m, a in (('GetAllMatchRules', ()), ('GetStats', ()),\n"
        "             ('GetConnectionStats', ('org.kdbus.EpTalk',))):\n"
        "    try:\n"
        "        st.get_dbus_method(m, 'org.freedesktop.DBus.Debug.Stats')(*a)\n"
        "        print('stats', m, 'answered')\n"
        "    except dbus.DBusException as e:\n"
        "        print('stats', m, e.get_dbus_name())\n"
        "for n in ('org.kdbus.EpSee', 'org.kdbus.EpHidden'):\n"
        "    print('release', n, int(drv.ReleaseName(n, dbus_interface='org.freedesktop.DBus')))\n"
        "try:\n"
        "    drv.BecomeMonitor([], dbus.UInt32(0), dbus_interface='org.freedesktop.DBus.Monitoring')\n"
        "    print('monitor ok')\n"
        "except dbus.DBusException as e:\n"
        "    print('monitor', e.get_dbus_name())\n";

static const char client_expected[] =
        "list org.freedesktop.DBus org.kdbus.EpSee org.kdbus.EpTalk\n"
        "uniques 3\n"
        "has org.kdbus.EpTalk True\n"
        "has org.kdbus.EpSee True\n"
        "has org.kdbus.EpHidden False\n"
        "owner org.freedesktop.DBus.Error.NameHasNoOwner\n"
        "call org.kdbus.EpTalk ok pong\n"
        "call org.kdbus.EpSee org.freedesktop.DBus.Error.AccessDenied\n"
        "call org.kdbus.EpHidden org.freedesktop.DBus.Error.ServiceUnknown\n"
        /* the whole bus's statistics: not through an endpoint */
        "stats GetAllMatchRules org.freedesktop.DBus.Error.AccessDenied\n"
        "stats GetStats org.freedesktop.DBus.Error.AccessDenied\n"
        "stats GetConnectionStats org.freedesktop.DBus.Error.AccessDenied\n"
        "release org.kdbus.EpSee 3\n"         /* NOT_OWNER: it sees the name */
        "release org.kdbus.EpHidden 2\n"      /* NON_EXISTENT: hidden */
        "monitor org.freedesktop.DBus.Error.AccessDenied\n";

/* A GDBus client on the endpoint: which NameOwnerChanged signals reach it. The test makes
 * names appear while it answers the Ping; the signals precede the reply on the wire. */
static const char gio_py[] =
        "import sys\n"
        "from gi.repository import Gio, GLib\n"
        "flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |\n"
        "         Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)\n"
        "c = Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)\n"
        "seen = []\n"
        "def cb(conn, sender, path, iface, member, params):\n"
        "    seen.append(params.unpack()[0])\n"
        "c.signal_subscribe('org.freedesktop.DBus', 'org.freedesktop.DBus', 'NameOwnerChanged',\n"
        "                   '/org/freedesktop/DBus', None, Gio.DBusSignalFlags.NONE, cb)\n"
        "c.call_sync('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',\n"
        "            'GetId', None, None, Gio.DBusCallFlags.NONE, 5000, None)\n"
        "r = c.call_sync('org.kdbus.EpTalk', '/org/example', 'org.example.Test', 'Ping',\n"
        "                GLib.Variant('(s)', ('hi',)), None, Gio.DBusCallFlags.NONE, 5000, None)\n"
        "ctx = GLib.MainContext.default()\n"
        "while ctx.iteration(False):\n"
        "    pass\n"
        "print('reply', r.unpack()[0])\n"
        "print('noc', ' '.join(seen))\n";

/* One item after another in @buf; returns the size used. */
static size_t put_item(uint8_t *buf, size_t at, uint64_t type, const void *data, size_t len) {
        struct kdbus_item *item = (void *)(buf + at);

        item->type = type;
        item->size = KDBUS_ITEM_HEADER_SIZE + len;
        memcpy(item->data, data, len);
        return at + KDBUS_ALIGN8(item->size);
}

static size_t put_access(uint8_t *buf, size_t at, uint64_t access) {
        struct kdbus_policy_access a = { .type = KDBUS_POLICY_ACCESS_WORLD, .access = access };

        return put_item(buf, at, KDBUS_ITEM_POLICY_ACCESS, &a, sizeof(a));
}

static bool wait_gone(const char *path) {
        unsigned i;

        for (i = 0; i < 500 && g_file_test(path, G_FILE_TEST_EXISTS); ++i)
                g_usleep(10000);
        return !g_file_test(path, G_FILE_TEST_EXISTS);
}

static void test_endpoint(KBus *b, gconstpointer ctx) {
        uint8_t buf[1024] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_cmd_info info = { .size = sizeof(info) };
        g_autofree char *name = g_strdup_printf("%u-sandbox", (unsigned)getuid());
        g_autofree char *native = g_build_filename(b->dir, name, NULL);
        g_autofree char *legacy = g_strdup_printf("%s.dbus1", native);
        g_autofree char *address = g_strdup_printf("unix:path=%s", legacy);
        const char *argv[] = { "/usr/bin/python3", "-c", client_py, address, NULL };
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        KdbusConn *owner, *talk, *see, *hidden, *inside = NULL;
        const struct kdbus_msg *m;
        struct pollfd pfd;
        WireHeader hdr;
        struct stat st;
        GPid pid;
        int out_fd, status, raw;
        GString *got = g_string_new(NULL);
        char chunk[512];
        ssize_t n;
        size_t at;

        talk = kpeer(b, KDBUS_HELLO_ACCEPT_FD);
        see = kpeer(b, 0);
        hidden = kpeer(b, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(talk, "org.kdbus.EpTalk", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(see, "org.kdbus.EpSee", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(hidden, "org.kdbus.EpHidden", 0, NULL), ==, 0);

        /* ENDPOINT_MAKE on a handle without HELLO; the name must carry our uid */
        owner = kopen(b);
        /* NEGOTIATE: the known flags, nothing made, the handle stays unset */
        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_MAKE_NAME, name, strlen(name) + 1);
        cmd->size = at;
        cmd->flags = KDBUS_FLAG_NEGOTIATE;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_MAKE, cmd, at, NULL, 0), ==, 0);
        g_assert_cmpuint(cmd->flags, ==, KDBUS_MAKE_ACCESS_GROUP | KDBUS_MAKE_ACCESS_WORLD);
        g_assert_false(g_file_test(native, G_FILE_TEST_EXISTS));
        memset(buf, 0, sizeof(buf));
        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_MAKE_NAME, "0x-bad", 7);
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_MAKE, cmd, at, NULL, 0), ==,
                        -EINVAL);
        memset(buf, 0, sizeof(buf));
        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_MAKE_NAME, name, strlen(name) + 1);
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_MAKE, cmd, at, NULL, 0), ==, 0);
        /* the owner handle may only update its endpoint now */
        g_assert_cmpint(kdbus_conn_hello(owner, 0, KPOOL), ==, -EBADFD);
        {
                g_autofree char *bus_name = g_strdup_printf("%u-ep-owner-bus", (unsigned)getuid());

                /* a set-up handle makes no bus (was: a bus instance beside the endpoint) */
                g_assert_cmpint(kdbus_bus_make(owner, bus_name, 0), ==, -EBADFD);
        }
        memset(buf, 0, sizeof(buf));
        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_NAME, "org.kdbus.EpTalk", 17);
        at = put_access(buf, at, KDBUS_POLICY_TALK);
        at = put_item(buf, at, KDBUS_ITEM_NAME, "org.kdbus.EpSee", 16);
        at = put_access(buf, at, KDBUS_POLICY_SEE);
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_UPDATE, cmd, at, NULL, 0),
                        ==, 0);

        /* both sockets, the creator's, 0600 (no MAKE_ACCESS_* flag) */
        g_assert_cmpint(stat(native, &st), ==, 0);
        g_assert_true(S_ISSOCK(st.st_mode));
        g_assert_cmpuint(st.st_mode & 0777, ==, 0600);
        g_assert_cmpuint(st.st_uid, ==, getuid());
        g_assert_cmpint(stat(legacy, &st), ==, 0);
        g_assert_cmpuint(st.st_mode & 0777, ==, 0600);

        /* the legacy client; the test answers EpTalk's call meanwhile */
        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL,
                                               &out_fd, NULL, NULL));
        m = krecv(talk, &hdr, NULL);
        g_assert_cmpstr(hdr.member, ==, "Ping");
        g_assert_cmpint(kreply(talk, m->src_id, 9, (uint32_t)m->cookie, "pong"), ==, 0);
        kfree_msg(talk, m);
        while ((n = read(out_fd, chunk, sizeof(chunk))) > 0)
                g_string_append_len(got, chunk, n);
        (void) close(out_fd);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_spawn_close_pid(pid);
        g_assert_cmpstr(got->str, ==, client_expected);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_string_free(got, TRUE);
        kassert_empty(see);
        kassert_empty(hidden);

        /* a native peer through the endpoint: hidden names do not exist for it */
        g_assert_cmpint(kdbus_conn_open(native, &inside), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(inside, 0, KPOOL), ==, 0);
        memset(buf, 0, sizeof(buf));
        memcpy(buf, &info, sizeof(info));
        at = put_item(buf, sizeof(info), KDBUS_ITEM_NAME, "org.kdbus.EpHidden", 19);
        ((struct kdbus_cmd_info *)buf)->size = at;
        g_assert_cmpint(kdbus_conn_command(inside, KDBUS_CMD_CONN_INFO, buf, at, NULL, 0), ==,
                        -ESRCH);
        g_assert_cmpint(kcall(inside, 0, "org.kdbus.EpHidden", 3, true, "Ping", NULL, 0, NULL),
                        ==, -EPERM);
        g_assert_cmpint(kdbus_conn_name_acquire(inside, "org.kdbus.Mine", 0, NULL), ==, -EPERM);
        /* ID_* notifications reach connections on an endpoint (kdbus's final custom-endpoint
         * selftest: a reader there hears ID_ADD of the next connection) */
        g_assert_cmpint(kmatch_notify(inside, 7, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY,
                                      NULL), ==, 0);
        {
                KdbusConn *next = NULL;
                const struct kdbus_item *item;

                g_assert_cmpint(kdbus_conn_open(native, &next), ==, 0);
                g_assert_cmpint(kdbus_conn_hello(next, 0, KPOOL), ==, 0);
                item = krecv_notify(inside, KDBUS_ITEM_ID_ADD);
                g_assert_cmpuint(item->id_change.id, ==, next->id);
                kfree_item_msg(inside, item);
                kdbus_conn_close(next);
        }

        /* a legacy connection still open when the owner goes */
        raw = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        g_assert_cmpint(raw, >=, 0);
        g_strlcpy(sa.sun_path, legacy, sizeof(sa.sun_path));
        g_assert_cmpint(connect(raw, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);

        kdbus_conn_close(owner);
        g_assert_true(wait_gone(native));
        g_assert_true(wait_gone(legacy));
        pfd = (struct pollfd){ .fd = raw, .events = POLLIN };
        g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
        g_assert_cmpint(read(raw, chunk, sizeof(chunk)), ==, 0);
        (void) close(raw);
        g_assert_cmpint(kdbus_conn_name_acquire(inside, "org.kdbus.Mine", 0, NULL), <, 0);
        kdbus_conn_close(inside);

        /* the services on the bus's own socket are unaffected: still the owner */
        {
                uint64_t rf = 0;

                g_assert_cmpint(kdbus_conn_name_acquire(talk, "org.kdbus.EpTalk", 0, &rf), ==, 0);
                g_assert_cmpuint(rf, ==, KDBUS_NAME_PRIMARY);
        }
        kdbus_conn_close(talk);
        kdbus_conn_close(see);
        kdbus_conn_close(hidden);
}

/* Make "<uid>-sandbox" with @n_rules (name, access) pairs; returns the owner handle. */
static KdbusConn *make_endpoint(KBus *b, const char *name, const char *const *names,
                                const uint64_t *access, unsigned n_rules) {
        uint8_t buf[1024] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        KdbusConn *owner = kopen(b);
        size_t at;
        unsigned i;

        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_MAKE_NAME, name, strlen(name) + 1);
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_MAKE, cmd, at, NULL, 0), ==, 0);
        memset(buf, 0, sizeof(buf));
        at = sizeof(*cmd);
        for (i = 0; i < n_rules; ++i) {
                at = put_item(buf, at, KDBUS_ITEM_NAME, names[i], strlen(names[i]) + 1);
                at = put_access(buf, at, access[i]);
        }
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_UPDATE, cmd, at, NULL, 0),
                        ==, 0);
        return owner;
}

static void test_name_owner_changed(KBus *b, gconstpointer ctx) {
        g_autofree char *name = g_strdup_printf("%u-gio", (unsigned)getuid());
        g_autofree char *native = g_build_filename(b->dir, name, NULL);
        g_autofree char *legacy = g_strdup_printf("%s.dbus1", native);
        g_autofree char *address = g_strdup_printf("unix:path=%s", legacy);
        const char *names[] = { "org.kdbus.EpTalk", "org.kdbus.Vis.*" };
        const uint64_t access[] = { KDBUS_POLICY_TALK, KDBUS_POLICY_SEE };
        const char *argv[] = { "/usr/bin/python3", "-c", gio_py, address, NULL };
        KdbusConn *owner, *talk, *other;
        const struct kdbus_msg *m;
        WireHeader hdr;
        GPid pid;
        int out_fd, status;
        GString *got = g_string_new(NULL);
        char chunk[512];
        ssize_t n;

        talk = kpeer(b, 0);
        other = kpeer(b, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(talk, "org.kdbus.EpTalk", 0, NULL), ==, 0);
        owner = make_endpoint(b, name, names, access, 2);

        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL,
                                               &out_fd, NULL, NULL));
        m = krecv(talk, &hdr, NULL);
        g_assert_cmpstr(hdr.member, ==, "Ping");
        /* names come and go while the client waits: it hears of the visible ones only */
        g_assert_cmpint(kdbus_conn_name_acquire(other, "org.kdbus.Hidden2", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(other, "org.kdbus.Vis.one", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_release(other, "org.kdbus.Hidden2"), ==, 0);
        g_assert_cmpint(kdbus_conn_name_release(other, "org.kdbus.Vis.one"), ==, 0);
        g_assert_cmpint(kreply(talk, m->src_id, 9, (uint32_t)m->cookie, "pong"), ==, 0);
        kfree_msg(talk, m);
        while ((n = read(out_fd, chunk, sizeof(chunk))) > 0)
                g_string_append_len(got, chunk, n);
        (void) close(out_fd);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_spawn_close_pid(pid);
        g_assert_cmpstr(got->str, ==, "reply pong\nnoc org.kdbus.Vis.one org.kdbus.Vis.one\n");
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_string_free(got, TRUE);

        kdbus_conn_close(owner);
        g_assert_true(wait_gone(native));
        g_assert_true(wait_gone(legacy));
        kdbus_conn_close(talk);
        kdbus_conn_close(other);
}

/* kdbusctl endpoint holds an endpoint for a sandbox; dbus-send goes through it. */
static void test_kdbusctl(KBus *b, gconstpointer ctx) {
        const char *ctl = g_getenv("KDBUSCTL");
        g_autofree char *native_arg = g_strdup_printf("--native=%s", b->native);
        g_autofree char *native = g_strdup_printf("%s/%u-app", b->dir, (unsigned)getuid());
        g_autofree char *legacy = g_strdup_printf("%s.dbus1", native);
        g_autofree char *expected = g_strdup_printf("unix:path=%s\n%s\n", legacy, native);
        g_autofree char *bus_arg = NULL, *out = NULL;
        const char *argv[] = { ctl, "-q", "endpoint", native_arg, "--talk=org.kdbus.EpTalk",
                               "app", NULL };
        KdbusConn *talk, *hidden;
        char lines[8192] = "";
        size_t got = 0;
        GPid pid;
        int out_fd, status;
        ssize_t n;

        g_assert_nonnull(ctl);
        talk = kpeer(b, 0);
        hidden = kpeer(b, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(talk, "org.kdbus.EpTalk", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(hidden, "org.kdbus.EpHidden", 0, NULL), ==, 0);
        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL,
                                               &out_fd, NULL, NULL));
        /* its two lines mean the endpoint is up */
        while (got < strlen(expected) &&
               (n = read(out_fd, lines + got, sizeof(lines) - 1 - got)) > 0)
                got += (size_t)n;
        g_assert_cmpstr(lines, ==, expected);
        g_assert_true(g_file_test(native, G_FILE_TEST_EXISTS));

        bus_arg = g_strdup_printf("--bus=unix:path=%s", legacy);
        {
                const char *send[] = { "dbus-send", bus_arg, "--print-reply",
                                       "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus.ListNames", NULL };

                g_assert_true(g_spawn_sync(NULL, (char **)send, NULL, G_SPAWN_SEARCH_PATH, NULL,
                                           NULL, &out, NULL, &status, NULL));
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                g_assert_nonnull(strstr(out, "\"org.kdbus.EpTalk\""));
                g_assert_null(strstr(out, "EpHidden"));
        }
        /* activators' names in ListActivatableNames: only those the endpoint lets it see */
        {
                const char *send[] = { "dbus-send", bus_arg, "--print-reply",
                                       "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus.ListActivatableNames", NULL };
                KdbusConn *act_see = kopen(b), *act_hidden = kopen(b);

                g_assert_cmpint(kdbus_conn_hello_name(act_see, KDBUS_HELLO_ACTIVATOR, KPOOL,
                                                      "org.kdbus.EpTalk"), ==, 0);
                g_assert_cmpint(kdbus_conn_hello_name(act_hidden, KDBUS_HELLO_ACTIVATOR, KPOOL,
                                                      "org.kdbus.EpHiddenAct"), ==, 0);
                g_clear_pointer(&out, g_free);
                g_assert_true(g_spawn_sync(NULL, (char **)send, NULL, G_SPAWN_SEARCH_PATH, NULL,
                                           NULL, &out, NULL, &status, NULL));
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                g_assert_nonnull(strstr(out, "\"org.kdbus.EpTalk\""));
                g_assert_null(strstr(out, "EpHiddenAct"));
                kdbus_conn_close(act_see);
                kdbus_conn_close(act_hidden);
        }

        (void) kill(pid, SIGTERM);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_spawn_close_pid(pid);
        (void) close(out_fd);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_assert_true(wait_gone(native));
        g_assert_true(wait_gone(legacy));
        kdbus_conn_close(talk);
        kdbus_conn_close(hidden);
}

/* An endpoint on a bus instance (BUS_MAKE): its sockets sit in the instance's directory
 * next to its "bus", as in kdbus's /sys/fs/kdbus/<uid>-<bus>/<uid>-<ep>; its view is of
 * that bus only. */
static void test_on_instance(KBus *b, gconstpointer ctx) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        g_autofree char *top = g_path_get_dirname(b->native);
        g_autofree char *bus_name = g_strdup_printf("%u-inst", (unsigned)getuid());
        g_autofree char *ep_name = g_strdup_printf("%u-ep", (unsigned)getuid());
        g_autofree char *dir = g_build_filename(top, bus_name, NULL);
        g_autofree char *inst = g_build_filename(dir, "bus", NULL);
        g_autofree char *native = g_build_filename(dir, ep_name, NULL);
        g_autofree char *legacy = g_strdup_printf("%s.dbus1", native);
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", legacy);
        g_autofree char *out = NULL;
        const char *send[] = { "dbus-send", bus_arg, "--print-reply",
                               "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.ListNames", NULL };
        KdbusConn *h = kopen(b), *main_svc, *svc = NULL, *other = NULL, *owner = NULL;
        size_t at;
        int status;

        main_svc = kpeer(b, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(main_svc, "org.kdbus.InInst", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_bus_make(h, bus_name, 0), ==, 0);
        g_assert_cmpint(kdbus_conn_open(inst, &svc), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(svc, 0, KPOOL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(svc, "org.kdbus.InInst", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_open(inst, &other), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(other, 0, KPOOL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(other, "org.kdbus.Other", 0, NULL), ==, 0);

        g_assert_cmpint(kdbus_conn_open(inst, &owner), ==, 0);
        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_MAKE_NAME, ep_name, strlen(ep_name) + 1);
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_MAKE, cmd, at, NULL, 0), ==, 0);
        memset(buf, 0, sizeof(buf));
        at = put_item(buf, sizeof(*cmd), KDBUS_ITEM_NAME, "org.kdbus.InInst", 17);
        at = put_access(buf, at, KDBUS_POLICY_TALK);
        cmd->size = at;
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_UPDATE, cmd, at, NULL, 0),
                        ==, 0);
        g_assert_true(g_file_test(native, G_FILE_TEST_EXISTS));

        /* the instance's names as its endpoint allows: InInst and its owner, not Other */
        g_assert_true(g_spawn_sync(NULL, (char **)send, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   &out, NULL, &status, NULL));
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_assert_nonnull(strstr(out, "\"org.kdbus.InInst\""));
        g_assert_null(strstr(out, "org.kdbus.Other"));
        g_assert_null(strstr(out, kunique(other->id)));

        kdbus_conn_close(owner);
        g_assert_true(wait_gone(native));
        g_assert_true(wait_gone(legacy));
        kdbus_conn_close(svc);
        kdbus_conn_close(other);
        kdbus_conn_close(h);
        g_assert_true(wait_gone(dir));
        kdbus_conn_close(main_svc);
}

/* kdbusd stops (SIGTERM) while an endpoint is open and used: it exits 0 (no sanitizer
 * report), the endpoint's sockets are gone, its connections closed. */
static void test_shutdown(void) {
        const char *names[] = { "org.kdbus.EpTalk" };
        const uint64_t access[] = { KDBUS_POLICY_TALK };
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        g_autofree char *name = g_strdup_printf("%u-shut", (unsigned)getuid());
        g_autofree char *native = NULL, *legacy = NULL;
        KdbusConn *owner, *inside = NULL, *talk;
        struct pollfd pfd;
        char chunk[64];
        int raw, status;
        KBus b;

        kbus_setup(&b, NULL);
        native = g_build_filename(b.dir, name, NULL);
        legacy = g_strdup_printf("%s.dbus1", native);
        talk = kpeer(&b, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(talk, "org.kdbus.EpTalk", 0, NULL), ==, 0);
        owner = make_endpoint(&b, name, names, access, 1);
        g_assert_cmpint(kdbus_conn_open(native, &inside), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(inside, 0, KPOOL), ==, 0);
        raw = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        g_strlcpy(sa.sun_path, legacy, sizeof(sa.sun_path));
        g_assert_cmpint(connect(raw, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        g_assert_cmpint(write(raw, "\0AUTH EXTERNAL 30\r\n", 20), ==, 20);

        (void) kill(b.pid, SIGTERM);
        g_assert_cmpint(waitpid(b.pid, &status, 0), ==, b.pid);
        g_spawn_close_pid(b.pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_assert_false(g_file_test(native, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(legacy, G_FILE_TEST_EXISTS));
        pfd = (struct pollfd){ .fd = raw, .events = POLLIN };
        g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
        while (read(raw, chunk, sizeof(chunk)) > 0)
                ;                       /* the AUTH answer, then EOF */
        (void) close(raw);
        kdbus_conn_close(inside);
        kdbus_conn_close(owner);
        kdbus_conn_close(talk);
        (void) unlink(b.native);
        (void) unlink(b.legacy);
        g_assert_cmpint(rmdir(b.dir), ==, 0);   /* nothing left behind */
        g_free(b.dir);
        g_free(b.native);
        g_free(b.legacy);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/native/selftests/endpoint/legacy-and-native", KBus, NULL, kbus_setup,
                   test_endpoint, kbus_teardown);
        g_test_add("/native/selftests/endpoint/name-owner-changed-gdbus", KBus, NULL, kbus_setup,
                   test_name_owner_changed, kbus_teardown);
        g_test_add_func("/native/selftests/endpoint/bus-shutdown", test_shutdown);
        g_test_add("/native/selftests/endpoint/kdbusctl", KBus, NULL, kbus_setup, test_kdbusctl,
                   kbus_teardown);
        g_test_add("/native/selftests/endpoint/on-bus-instance", KBus, NULL, kbus_setup,
                   test_on_instance, kbus_teardown);
        return g_test_run();
}
