/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance with kdbus's monitor selftest, through a real kdbusd and libkdbus: a
 * monitor connection gets a copy of what others send each other (native unicasts and
 * broadcasts, a legacy client's call) and the bus's notifications, nothing the bus driver
 * sends (kdbus had none), cannot send, own or
 * match, is not announced, not
 * listed and not addressable, and needs privilege. docs/kdbus-selftests.md maps each kdbus
 * selftest to these tests.
 */
#include <grp.h>
#include <sys/stat.h>
#include "kdbusd-fixture.h"

/* kdbus had no driver: a monitor never gets a dbus1 message from the bus itself (its
 * replies, errors and signals; the notifications say what its signals say), and every
 * dbus1 copy is some connection's (kdbus-test metadata-ns reads PIDS from each). */
static void assert_not_driver(const struct kdbus_msg *k) {
        g_assert_false(k->payload_type == KDBUS_PAYLOAD_DBUS && k->src_id == KDBUS_SRC_ID_KERNEL);
}

/* The next copy in @m's pool whose dbus1 member is @member (others FREEd and skipped). */
static const struct kdbus_msg *next_copy(KdbusConn *m, const char *member, WireHeader *h) {
        for (;;) {
                const struct kdbus_msg *k = NULL;
                const uint8_t *data;
                size_t size;

                g_assert_cmpint(krecv_wait(m, 5000, false, &k), ==, 0);
                assert_not_driver(k);
                if (k->payload_type == KDBUS_PAYLOAD_DBUS &&
                    kdbus_msg_payload(k, &data, &size) == 0 &&
                    wire_message_parse(data, size, KDBUS_MSG_MAX_FDS, 0, h) == 0 &&
                    h->member && !strcmp(h->member, member))
                        return k;
                kfree_msg(m, k);
        }
}

/* The next notification of the bus in @m's pool of type @type (others FREEd and skipped). */
static const struct kdbus_msg *next_kernel(KdbusConn *m, uint64_t type) {
        for (;;) {
                const struct kdbus_msg *k = NULL;

                g_assert_cmpint(krecv_wait(m, 5000, false, &k), ==, 0);
                assert_not_driver(k);
                if (k->payload_type == KDBUS_PAYLOAD_KERNEL && k->items[0].type == type) {
                        g_assert_cmpuint(k->src_id, ==, KDBUS_SRC_ID_KERNEL);
                        return k;
                }
                kfree_msg(m, k);
        }
}

static void test_monitor(KBus *b, gconstpointer ctx) {
        KdbusConn *w = kpeer(b, 0), *a, *c, *m;
        const char *args[] = { "seen", NULL };
        const struct kdbus_msg *k;
        WireHeader h;

        g_assert_cmpint(kmatch_notify(w, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL),
                        ==, 0);
        m = kopen(b);
        g_assert_cmpint(kdbus_conn_hello(m, KDBUS_HELLO_MONITOR, KPOOL), ==, 0);
        kassert_empty(w);                       /* not announced */
        a = kpeer(b, 0);
        c = kpeer(b, 0);
        kdrop_all(w);
        /* kdbus_bus_eavesdrop(): the bus's notifications reach the monitor with no match
         * entry (and not the driver's NameOwnerChanged: no dbus1 message of the bus) */
        k = next_kernel(m, KDBUS_ITEM_ID_ADD);
        g_assert_cmpuint(k->items[0].id_change.id, ==, a->id);
        g_assert_cmpuint(k->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        kfree_msg(m, k);
        k = next_kernel(m, KDBUS_ITEM_ID_ADD);
        g_assert_cmpuint(k->items[0].id_change.id, ==, c->id);
        kfree_msg(m, k);

        /* a unicast between two others, and a broadcast nobody matches */
        g_assert_cmpint(kcall(a, c->id, NULL, 41, true, "Private", "x", 0, NULL), ==, 0);
        g_assert_cmpint(ksignal(a, 42, "Unheard", args), ==, 0);
        k = next_copy(m, "Private", &h);
        g_assert_cmpuint(k->src_id, ==, a->id);
        g_assert_cmpuint(k->dst_id, ==, c->id);
        g_assert_cmpuint(k->cookie, ==, 41);
        kfree_msg(m, k);
        k = next_copy(m, "Unheard", &h);
        g_assert_cmpuint(k->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        kfree_msg(m, k);
        /* a legacy client's call to a native peer */
        {
                g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", b->legacy);
                g_autofree char *dest = g_strdup_printf("--dest=%s", kunique(c->id));
                const char *argv[] = { "dbus-send", bus_arg, dest, "/org/example",
                                       "org.example.Test.FromLegacy", NULL };
                int status;

                g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
                                           NULL, NULL, NULL, &status, NULL));
                g_assert_true(g_spawn_check_wait_status(status, NULL));
                k = next_copy(m, "FromLegacy", &h);
                g_assert_cmpuint(k->dst_id, ==, c->id);
                g_assert_cmpuint(k->src_id, !=, a->id);
                g_assert_cmpuint(k->src_id, >, 0);
                kfree_msg(m, k);
        }
        /* the legacy client's Hello reply, NameAcquired and the NameOwnerChanged of its
         * coming and going were not copied (next_copy() checks what it skips); its ID_*
         * notifications were */
        g_assert_cmpint(kcall(a, c->id, NULL, 45, true, "Marker", "x", 0, NULL), ==, 0);
        k = next_copy(m, "Marker", &h);
        kfree_msg(m, k);
        /* it cannot take part */
        g_assert_cmpint(kcall(m, c->id, NULL, 43, true, "X", NULL, 0, NULL), ==, -EOPNOTSUPP);
        g_assert_cmpint(kdbus_conn_name_acquire(m, "org.example.Monitor", 0, NULL), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(kdbus_conn_match_add(m, 1, 0, NULL, KDBUS_MATCH_ID_ANY), ==, -EOPNOTSUPP);
        g_assert_cmpint(kdbus_conn_byebye(m), ==, -EOPNOTSUPP);
        /* nor be reached or seen */
        g_assert_cmpint(kcall(a, m->id, NULL, 44, true, "X", NULL, 0, NULL), ==, -ENXIO);
        {
                struct kdbus_cmd_list list = { .size = sizeof(list), .flags = KDBUS_LIST_UNIQUE };
                const uint8_t *p, *end;

                g_assert_cmpint(kdbus_conn_command(a, KDBUS_CMD_LIST, &list, sizeof(list), NULL,
                                                   0), ==, 0);
                p = a->pool + list.offset;
                for (end = p + list.list_size; p < end;
                     p += KDBUS_ALIGN8(((const struct kdbus_info *)p)->size))
                        g_assert_cmpuint(((const struct kdbus_info *)p)->id, !=, m->id);
                g_assert_cmpint(kdbus_conn_free(a, list.offset), ==, 0);
        }
        /* an unprivileged monitor: EPERM (w's ID_ADD of the dbus-send client first) */
        kdrop_all(w);
        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);
        {
                int p[2], status, r = 1;
                pid_t pid;

                g_assert_cmpint(pipe(p), ==, 0);
                pid = fork();
                g_assert_cmpint(pid, >=, 0);
                if (pid == 0) {
                        KdbusConn *u = NULL;

                        if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
                            setresuid(65534, 65534, 65534) || kdbus_conn_open(b->native, &u))
                                _exit(2);
                        /* HELLO as monitor refused; the same peer may say HELLO as an
                         * ordinary connection (the bus lets this uid in) */
                        r = kdbus_conn_hello(u, KDBUS_HELLO_MONITOR, KPOOL);
                        if (r == -EPERM && kdbus_conn_hello(u, 0, KPOOL))
                                r = 1;
                        _exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 3);
                }
                (void) close(p[1]);
                g_assert_cmpint(read(p[0], &r, sizeof(r)), ==, sizeof(r));
                (void) close(p[0]);
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                g_assert_cmpint(r, ==, -EPERM);
        }
        /* the refused monitor was not announced; the ordinary HELLO after it was */
        {
                const struct kdbus_item *item = krecv_notify(w, KDBUS_ITEM_ID_ADD);

                kfree_item_msg(w, item);
        }
        kassert_empty(w);
        kdbus_conn_close(m);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
        kdbus_conn_close(w);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
        g_test_add("/selftests/monitor", KBus, kbus_open_conf, kbus_setup, test_monitor,
                   kbus_teardown);
        return g_test_run();
}
