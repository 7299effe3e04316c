/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance with kdbus's activator selftest, through a real kdbusd and libkdbus: an
 * activator holds a name for a service that is not running; calls to the name (native by
 * DST_NAME, legacy by auto-start) wait in its pool; when the service acquires the name
 * they move to it in order with their reply slots, so its answers reach the callers; when
 * the service lets go, new calls wait at the activator again. NO_AUTO_START: EADDRNOTAVAIL.
 * An activator cannot send, own or be addressed, needs privilege, one per name.
 * docs/kdbus-selftests.md maps each kdbus selftest to these tests.
 */
#include <grp.h>
#include <sys/stat.h>
#include "kdbusd-fixture.h"

/* HELLO as activator of @name on a fresh handle; maps the pool like kdbus_conn_hello(). */
static int activator_hello(KBus *b, const char *name, KdbusConn **ret) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        struct kdbus_item *item = (void *)(buf + sizeof(*hello));
        KdbusConn *c = kopen(b);
        void *map;
        int r;

        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        item->type = KDBUS_ITEM_NAME;
        strcpy(item->str, name);
        hello->size = sizeof(*hello) + KDBUS_ALIGN8(item->size);
        hello->flags = KDBUS_HELLO_ACTIVATOR;
        hello->pool_size = KPOOL;
        *ret = c;
        r = kdbus_conn_command(c, KDBUS_CMD_HELLO, buf, sizeof(buf), NULL, 0);
        if (r)
                return r;
        g_assert_cmpuint(c->n_recv_fds, ==, 2);
        map = mmap(NULL, KPOOL, PROT_READ, MAP_SHARED, c->recv_fds[0], 0);
        g_assert_true(map != MAP_FAILED);
        (void) close(c->recv_fds[0]);
        c->wake_fd = c->recv_fds[1];
        c->n_recv_fds = 0;
        c->pool = map;
        c->pool_size = KPOOL;
        c->id = hello->id;
        return 0;
}

/* The first waiting message of @c without taking it (PEEK), or NULL. */
static const struct kdbus_msg *peek(KdbusConn *c) {
        const struct kdbus_msg *m = NULL;
        int r = kdbus_conn_recv(c, KDBUS_RECV_PEEK, 0, &m, NULL);

        if (r == -EAGAIN)
                return NULL;
        g_assert_cmpint(r, ==, 0);
        return m;
}

/* FREE the driver's messages at the head of @c's queue (NameAcquired ...), leave the rest. */
static void kdrop_driver(KdbusConn *c) {
        const struct kdbus_msg *m;

        while ((m = peek(c)) && kmsg_is_driver(m)) {
                g_assert_cmpint(kdbus_conn_recv(c, 0, 0, &m, NULL), ==, 0);
                kfree_msg(c, m);
        }
}

/* LIST @flags: the flags of @name's item in @id's record, or ~0 if not listed. */
static uint64_t listed(KdbusConn *c, uint64_t flags, uint64_t id, const char *name) {
        struct kdbus_cmd_list list = { .size = sizeof(list), .flags = flags };
        const uint8_t *p, *end;
        uint64_t found = ~0ull;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_LIST, &list, sizeof(list), NULL, 0),
                        ==, 0);
        p = c->pool + list.offset;
        for (end = p + list.list_size; p < end;
             p += KDBUS_ALIGN8(((const struct kdbus_info *)p)->size)) {
                const struct kdbus_info *info = (const void *)p;
                const struct kdbus_item *item;

                if (info->id != id)
                        continue;
                for (item = info->items; (const uint8_t *)item < p + info->size;
                     item = KDBUS_ITEM_NEXT(item))
                        if (item->type == KDBUS_ITEM_OWNED_NAME && !strcmp(item->name.name, name))
                                found = item->name.flags;
        }
        g_assert_cmpint(kdbus_conn_free(c, list.offset), ==, 0);
        return found;
}

static void test_activator(KBus *b, gconstpointer ctx) {
        KdbusConn *act = NULL, *act2 = NULL, *a = kpeer(b, 0), *svc = kpeer(b, 0);
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", b->legacy);
        const char *argv[] = { "dbus-send", bus_arg, "--print-reply", "--dest=org.example.Act",
                               "/org/example", "org.example.Test.Echo", "string:legacy",
                               NULL };
        const struct kdbus_msg *m;
        WireHeader h;
        WireArgs ar;
        GPid pid;
        int out, status;

        g_assert_cmpint(activator_hello(b, "org.example.Act", &act), ==, 0);
        g_assert_cmpint(activator_hello(b, "org.example.Act", &act2), ==, -EEXIST);
        act2 = kdbus_conn_close(act2);
        g_assert_cmpuint(listed(a, KDBUS_LIST_NAMES | KDBUS_LIST_ACTIVATORS, act->id,
                                "org.example.Act") & KDBUS_NAME_ACTIVATOR, !=, 0);
        g_assert_cmpuint(listed(a, KDBUS_LIST_NAMES, act->id, "org.example.Act"), ==, ~0ull);

        /* a native call by name waits at the activator; NO_AUTO_START does not */
        g_assert_cmpint(kcall(a, 0, "org.example.Act", 7, false, "Echo", "native", 0, NULL),
                        ==, 0);
        {
                const char *args[] = { "x", NULL };
                size_t size;
                uint8_t *data = kbuild(WIRE_MSG_METHOD_CALL, 8, 0, "org.example.Act", "Echo",
                                       args, &size);

                data[2] |= WIRE_FLAG_NO_AUTO_START;
                g_assert_cmpint(ksend_dbus1(a, KDBUS_DST_ID_NAME, "org.example.Act", 0, 0, data,
                                            size, NULL), ==, -EADDRNOTAVAIL);
                free(data);
        }
        m = peek(act);
        g_assert_nonnull(m);
        g_assert_cmpuint(m->src_id, ==, a->id);
        g_assert_cmpuint(m->cookie, ==, 7);
        /* a legacy client's call (auto-start) */
        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                               NULL, NULL, &pid, NULL, &out, NULL, NULL));

        /* the service comes: the native call moves to it first, with its reply slot */
        g_assert_cmpint(kdbus_conn_name_acquire(svc, "org.example.Act", 0, NULL), ==, 0);
        m = krecv(svc, &h, &ar);
        g_assert_cmpuint(m->src_id, ==, a->id);
        g_assert_cmpuint(m->cookie, ==, 7);
        g_assert_cmpstr(ar.str[0], ==, "native");
        kfree_msg(svc, m);
        g_assert_cmpint(kreply(svc, a->id, 100, 7, "svc:native"), ==, 0);
        m = krecv(a, &h, &ar);
        g_assert_cmpuint(m->cookie_reply, ==, 7);
        g_assert_cmpstr(ar.str[0], ==, "svc:native");
        kfree_msg(a, m);
        /* then the legacy one (moved or direct, whichever came first): answered */
        m = krecv(svc, &h, &ar);
        g_assert_cmpstr(ar.str[0], ==, "legacy");
        g_assert_cmpint(kreply(svc, m->src_id, 101, h.serial, "svc:legacy"), ==, 0);
        kfree_msg(svc, m);
        {
                char got[512] = "";
                size_t n = 0;
                ssize_t k;

                while (n < sizeof(got) - 1 && (k = read(out, got + n, sizeof(got) - 1 - n)) > 0)
                        n += (size_t)k;
                (void) close(out);
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
                g_spawn_close_pid(pid);
                g_assert_true(g_spawn_check_wait_status(status, NULL));
                g_assert_nonnull(strstr(got, "string \"svc:legacy\""));
        }
        g_assert_null(peek(act));               /* nothing left at the activator */

        /* the service lets go with a call still queued: it moves back to the activator,
         * and new calls wait there too */
        g_assert_cmpint(kcall(a, 0, "org.example.Act", 9, true, "Later", NULL, 0, NULL), ==, 0);
        kdrop_driver(svc);
        g_assert_cmpint(kdbus_conn_name_release(svc, "org.example.Act"), ==, 0);
        kassert_empty(svc);
        g_assert_cmpint(kcall(a, 0, "org.example.Act", 12, true, "Later", NULL, 0, NULL), ==, 0);
        m = peek(act);
        g_assert_nonnull(m);
        g_assert_cmpuint(m->cookie, ==, 9);

        /* an activator only receives, and is not addressable */
        g_assert_cmpint(kcall(act, a->id, NULL, 10, true, "X", NULL, 0, NULL), ==, -EOPNOTSUPP);
        g_assert_cmpint(kdbus_conn_name_acquire(act, "org.example.Other", 0, NULL), ==,
                        -EOPNOTSUPP);
        g_assert_cmpint(kcall(a, act->id, NULL, 11, true, "X", NULL, 0, NULL), ==, -ENXIO);

        /* an unprivileged activator: EPERM (the bus lets the uid in otherwise) */
        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);
        {
                int p[2], r = 1;
                pid_t child;

                g_assert_cmpint(pipe(p), ==, 0);
                child = fork();
                g_assert_cmpint(child, >=, 0);
                if (child == 0) {
                        KdbusConn *u = NULL;

                        if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
                            setresuid(65534, 65534, 65534))
                                _exit(2);
                        r = activator_hello(b, "org.example.Mine", &u);
                        if (r == -EPERM && kdbus_conn_hello(u, 0, KPOOL))
                                r = 1;
                        _exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 3);
                }
                (void) close(p[1]);
                g_assert_cmpint(read(p[0], &r, sizeof(r)), ==, sizeof(r));
                (void) close(p[0]);
                g_assert_cmpint(waitpid(child, &status, 0), ==, child);
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                g_assert_cmpint(r, ==, -EPERM);
        }
        kdbus_conn_close(act);
        kdbus_conn_close(a);
        kdbus_conn_close(svc);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
        g_test_add("/selftests/activator", KBus, kbus_open_conf, kbus_setup, test_activator,
                   kbus_teardown);
        return g_test_run();
}
