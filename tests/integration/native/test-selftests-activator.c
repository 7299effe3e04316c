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

/* HELLO as activator of @name on a fresh handle, with @n_access POLICY_ACCESS items; maps
 * the pool like kdbus_conn_hello(). */
static int activator_hello_access(KBus *b, const char *name,
                                  const struct kdbus_policy_access *access, unsigned n_access,
                                  KdbusConn **ret) {
        uint8_t buf[1024] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        struct kdbus_item *item = (void *)(buf + sizeof(*hello));
        KdbusConn *c = kopen(b);
        unsigned i;
        void *map;
        int r;

        item->size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        item->type = KDBUS_ITEM_NAME;
        strcpy(item->str, name);
        hello->size = sizeof(*hello) + KDBUS_ALIGN8(item->size);
        for (i = 0; i < n_access; ++i) {
                item = (void *)(buf + hello->size);
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(*access);
                item->type = KDBUS_ITEM_POLICY_ACCESS;
                item->policy_access = access[i];
                hello->size += KDBUS_ALIGN8(item->size);
        }
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

static int activator_hello(KBus *b, const char *name, KdbusConn **ret) {
        return activator_hello_access(b, name, NULL, 0, ret);
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

/* The flags of @name's OWNED_NAME item in CONN_INFO of @id with NAMES (~0: none). */
static uint64_t info_name_flags(KdbusConn *c, uint64_t id, const char *name) {
        struct kdbus_cmd_info cmd = { .size = sizeof(cmd), .id = id,
                                      .attach_flags = KDBUS_ATTACH_NAMES };
        const struct kdbus_info *info;
        const struct kdbus_item *item;
        uint64_t found = ~0ull;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, &cmd, sizeof(cmd), NULL, 0),
                        ==, 0);
        info = (const void *)(c->pool + cmd.offset);
        for (item = info->items; (const uint8_t *)item < (const uint8_t *)info + info->size;
             item = KDBUS_ITEM_NEXT(item))
                if (item->type == KDBUS_ITEM_OWNED_NAME && !strcmp(item->name.name, name))
                        found = item->name.flags;
        g_assert_cmpint(kdbus_conn_free(c, cmd.offset), ==, 0);
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

/* Wait (bounded) until LIST no longer shows @id as the activator of @name. */
static void wait_activator_gone(KdbusConn *c, uint64_t id, const char *name) {
        unsigned i;

        for (i = 0; i < 500 && listed(c, KDBUS_LIST_NAMES | KDBUS_LIST_ACTIVATORS, id, name) !=
                                ~0ull; ++i)
                g_usleep(10000);
        g_assert_cmpuint(listed(c, KDBUS_LIST_NAMES | KDBUS_LIST_ACTIVATORS, id, name), ==,
                         ~0ull);
}

/* One NAME_* notification of @w: its type, ids, flags and name. */
static void expect_name_change(KdbusConn *w, uint64_t type, const char *name, uint64_t old_id,
                               uint64_t old_flags, uint64_t new_id, uint64_t new_flags) {
        const struct kdbus_item *item = krecv_notify(w, type);

        g_assert_cmpstr(item->name_change.name, ==, name);
        g_assert_cmpuint(item->name_change.old_id.id, ==, old_id);
        g_assert_cmpuint(item->name_change.new_id.id, ==, new_id);
        if (old_flags != ~0ull)
                g_assert_cmpuint(item->name_change.old_id.flags, ==, old_flags);
        if (new_flags != ~0ull)
                g_assert_cmpuint(item->name_change.new_id.flags, ==, new_flags);
        kfree_item_msg(w, item);
}

/*
 * kdbus's names.c: an activator holds its name while no owner does: NAME_ADD when it comes
 * for a name without owner, NAME_CHANGE when an owner takes over and gives back, NAME_REMOVE
 * when it goes; its side flagged ACTIVATOR | PRIMARY, an owner's side its saved name flags
 * (ALLOW_REPLACEMENT / QUEUE) | PRIMARY. For a name an owner has, its coming and going are
 * not announced, and LIST shows it waiting (ACTIVATOR | IN_QUEUE). LIST and the owner's
 * CONN_INFO give the flags the notifications gave (an activator has no CONN_INFO here: its
 * id is not addressable).
 */
static void test_notify(KBus *b, gconstpointer ctx) {
        const uint64_t af = KDBUS_NAME_ACTIVATOR | KDBUS_NAME_PRIMARY,
                       aq = KDBUS_NAME_ACTIVATOR | KDBUS_NAME_IN_QUEUE,
                       arq = KDBUS_NAME_PRIMARY | KDBUS_NAME_ALLOW_REPLACEMENT | KDBUS_NAME_QUEUE,
                       NA = KDBUS_LIST_NAMES | KDBUS_LIST_ACTIVATORS;
        KdbusConn *w = kpeer(b, 0), *svc = kpeer(b, 0), *act = NULL, *act2 = NULL;
        uint64_t act_id, act2_id;

        g_assert_cmpint(kmatch_notify(w, 1, KDBUS_ITEM_NAME_ADD, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        g_assert_cmpint(kmatch_notify(w, 2, KDBUS_ITEM_NAME_CHANGE, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        g_assert_cmpint(kmatch_notify(w, 3, KDBUS_ITEM_NAME_REMOVE, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);

        g_assert_cmpint(activator_hello(b, "org.example.Note", &act), ==, 0);
        act_id = act->id;
        expect_name_change(w, KDBUS_ITEM_NAME_ADD, "org.example.Note", 0, 0, act_id, af);
        g_assert_cmphex(listed(w, NA, act_id, "org.example.Note"), ==, af);
        /* ACTIVATORS alone gives the activators' names (sd-bus's ListActivatableNames) */
        g_assert_cmphex(listed(w, KDBUS_LIST_ACTIVATORS, act_id, "org.example.Note"), ==, af);
        g_assert_cmpint(kdbus_conn_name_acquire(svc, "org.example.Note", 0, NULL), ==, 0);
        expect_name_change(w, KDBUS_ITEM_NAME_CHANGE, "org.example.Note", act_id, af, svc->id,
                           KDBUS_NAME_PRIMARY);
        g_assert_cmphex(listed(w, NA, act_id, "org.example.Note"), ==, aq);
        g_assert_cmphex(listed(w, KDBUS_LIST_NAMES, svc->id, "org.example.Note"), ==,
                        KDBUS_NAME_PRIMARY);
        g_assert_cmphex(info_name_flags(w, svc->id, "org.example.Note"), ==,
                        KDBUS_NAME_PRIMARY);
        g_assert_cmpint(kdbus_conn_name_release(svc, "org.example.Note"), ==, 0);
        expect_name_change(w, KDBUS_ITEM_NAME_CHANGE, "org.example.Note", svc->id,
                           KDBUS_NAME_PRIMARY, act_id, af);
        g_assert_cmphex(listed(w, NA, act_id, "org.example.Note"), ==, af);
        act = kdbus_conn_close(act);
        expect_name_change(w, KDBUS_ITEM_NAME_REMOVE, "org.example.Note", act_id, af, 0, 0);

        /* a name with an owner: the activator's coming and going are not announced, the
         * owner's release is a NAME_REMOVE once the activator is gone */
        g_assert_cmpint(kdbus_conn_name_acquire(svc, "org.example.Owned",
                                                KDBUS_NAME_ALLOW_REPLACEMENT | KDBUS_NAME_QUEUE,
                                                NULL), ==, 0);
        expect_name_change(w, KDBUS_ITEM_NAME_ADD, "org.example.Owned", 0, 0, svc->id, arq);
        g_assert_cmphex(listed(w, KDBUS_LIST_NAMES, svc->id, "org.example.Owned"), ==, arq);
        g_assert_cmpint(activator_hello(b, "org.example.Owned", &act2), ==, 0);
        act2_id = act2->id;
        g_assert_cmphex(listed(w, NA, act2_id, "org.example.Owned"), ==, aq);
        act2 = kdbus_conn_close(act2);
        wait_activator_gone(w, act2_id, "org.example.Owned");
        g_assert_cmpint(kdbus_conn_name_release(svc, "org.example.Owned"), ==, 0);
        expect_name_change(w, KDBUS_ITEM_NAME_REMOVE, "org.example.Owned", svc->id, arq, 0, 0);
        kassert_empty(w);
        kdbus_conn_close(svc);
        kdbus_conn_close(w);
}

/* The next message of @c is the driver's signal @member (waiting up to 5 s). */
static void expect_driver_signal(KdbusConn *c, const char *member) {
        const struct kdbus_msg *m = NULL;
        const uint8_t *data;
        WireHeader h;
        size_t size;

        g_assert_cmpint(krecv_wait(c, 5000, false, &m), ==, 0);
        g_assert_true(kmsg_is_driver(m));
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &h), ==, 0);
        g_assert_cmpint(h.type, ==, WIRE_MSG_SIGNAL);
        g_assert_cmpstr(h.member, ==, member);
        kfree_msg(c, m);
}

/* The next message of @c (driver's included) is the notification @type about @id: ID_*
 * for that id, NAME_ADD with it as the new holder, NAME_REMOVE as the old one. */
static void expect_kernel(KdbusConn *c, uint64_t type, uint64_t id) {
        const struct kdbus_msg *m = NULL;

        g_assert_cmpint(krecv_wait(c, 5000, false, &m), ==, 0);
        g_assert_cmpuint(m->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
        g_assert_cmpuint(m->items[0].type, ==, type);
        if (type == KDBUS_ITEM_ID_ADD || type == KDBUS_ITEM_ID_REMOVE)
                g_assert_cmpuint(m->items[0].id_change.id, ==, id);
        else if (type == KDBUS_ITEM_NAME_ADD)
                g_assert_cmpuint(m->items[0].name_change.new_id.id, ==, id);
        else
                g_assert_cmpuint(m->items[0].name_change.old_id.id, ==, id);
        if (type == KDBUS_ITEM_ID_ADD)
                g_assert_cmpuint(m->items[0].id_change.flags & KDBUS_HELLO_ACTIVATOR, !=, 0);
        kfree_msg(c, m);
}

/* ActivatableServicesChanged when an activator comes and when it goes (ListActivatableNames
 * changes); a peer matching everything sees no NameOwnerChanged for the activator, but,
 * its empty entry matching notifications too, kdbus's ID_ADD and NAME_ADD before and
 * NAME_REMOVE and ID_REMOVE after (kdbus_conn_connect() announced activators). */
static void test_activatable_changed(KBus *b, gconstpointer ctx) {
        struct kdbus_cmd_match all = { .size = sizeof(all), .cookie = 1 };
        KdbusConn *w = kpeer(b, 0), *act = NULL;
        uint64_t act_id;

        g_assert_cmpint(kdbus_conn_command(w, KDBUS_CMD_MATCH_ADD, &all, sizeof(all), NULL, 0),
                        ==, 0);
        kdrop_all(w);
        g_assert_cmpint(activator_hello(b, "org.example.Listed", &act), ==, 0);
        expect_kernel(w, KDBUS_ITEM_ID_ADD, act->id);
        expect_kernel(w, KDBUS_ITEM_NAME_ADD, act->id);
        expect_driver_signal(w, "ActivatableServicesChanged");
        act_id = act->id;
        act = kdbus_conn_close(act);
        expect_kernel(w, KDBUS_ITEM_NAME_REMOVE, act_id);
        expect_kernel(w, KDBUS_ITEM_ID_REMOVE, act_id);
        expect_driver_signal(w, "ActivatableServicesChanged");
        wait_activator_gone(w, act_id, "org.example.Listed");
        {
                const struct kdbus_msg *m = NULL;

                g_assert_cmpint(krecv_wait(w, 0, false, &m), ==, -EAGAIN);
        }
        kdbus_conn_close(w);
}

/* In a child as uid nobody: NAME_ACQUIRE of @own, a call to @talk (NULL: none); the
 * results, or 99 if the child failed. */
static void nobody_try(KBus *b, const char *own, const char *talk, int ret[2]) {
        int p[2], status;
        pid_t child;

        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);
        g_assert_cmpint(pipe(p), ==, 0);
        child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                KdbusConn *u = NULL;
                int r[2] = { 99, 99 };

                if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
                    setresuid(65534, 65534, 65534) || kdbus_conn_open(b->native, &u) ||
                    kdbus_conn_hello(u, 0, KPOOL))
                        _exit(2);
                r[0] = kdbus_conn_name_acquire(u, own, 0, NULL);
                r[1] = talk ? kcall(u, 0, talk, 5, true, "X", NULL, 0, NULL) : 0;
                _exit(write(p[1], r, sizeof(r)) == sizeof(r) ? 0 : 3);
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], ret, 2 * sizeof(int)), ==, 2 * sizeof(int));
        (void) close(p[0]);
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * kdbus: an activator's POLICY_ACCESS items are the bus's policy for its name, as a policy
 * holder's: with only SEE for the world, a peer of another uid may neither own the name nor
 * talk to it (to the activator, then to any owner); they go with the activator. An
 * activator without them leaves the name to the XML policy.
 */
static void test_policy_access(KBus *b, gconstpointer ctx) {
        const struct kdbus_policy_access see = { .type = KDBUS_POLICY_ACCESS_WORLD,
                                                 .access = KDBUS_POLICY_SEE };
        const struct kdbus_policy_access bad = { .type = 7, .access = KDBUS_POLICY_SEE };
        KdbusConn *guard = NULL, *free_act = NULL, *bad_act = NULL, *w = kpeer(b, 0);
        uint64_t guard_id;
        int r[2];

        g_assert_cmpint(activator_hello_access(b, "org.example.Bad", &bad, 1, &bad_act), ==,
                        -EINVAL);
        bad_act = kdbus_conn_close(bad_act);
        g_assert_cmpint(activator_hello_access(b, "org.example.Guarded", &see, 1, &guard), ==,
                        0);
        g_assert_cmpint(activator_hello(b, "org.example.Free", &free_act), ==, 0);
        nobody_try(b, "org.example.Guarded", "org.example.Guarded", r);
        g_assert_cmpint(r[0], ==, -EPERM);
        g_assert_cmpint(r[1], ==, -EPERM);
        nobody_try(b, "org.example.Free", "org.example.Free", r);
        g_assert_cmpint(r[0], ==, 0);
        g_assert_cmpint(r[1], ==, 0);
        /* the entries go with the activator */
        guard_id = guard->id;
        guard = kdbus_conn_close(guard);
        wait_activator_gone(w, guard_id, "org.example.Guarded");
        nobody_try(b, "org.example.Guarded", NULL, r);
        g_assert_cmpint(r[0], ==, 0);
        kdbus_conn_close(free_act);
        kdbus_conn_close(w);
}

/* Default deny: sending to org.example.Allowed (and the driver, and replies) only; nothing
 * may receive a "Secret". */
static const char deny_conf[] =
        "<busconfig>\n"
        "  <type>session</type>\n"
        "  <listen>unix:tmpdir=/tmp</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <allow own=\"*\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\"/>\n"
        "    <allow send_destination=\"org.example.Allowed\"/>\n"
        "    <allow send_type=\"method_return\"/>\n"
        "    <allow send_type=\"error\"/>\n"
        "    <allow receive_sender=\"*\"/>\n"
        "    <deny receive_interface=\"org.example.Test\" receive_member=\"Secret\"/>\n"
        "  </policy>\n"
        "</busconfig>\n";

/*
 * dbus-daemon's activation checks: the send rules against the activatable name when the
 * call comes (an allowed name passes, a denied one is refused: EPERM natively, AccessDenied
 * for dbus-send), and both checks with the real owner when the call moves to it: a call its
 * receive rules deny is dropped and its caller told (REPLY_DEAD).
 */
static void test_xml_policy(KBus *b, gconstpointer ctx) {
        KdbusConn *allowed = NULL, *denied = NULL, *a = kpeer(b, 0), *svc = kpeer(b, 0);
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", b->legacy);
        const char *argv[] = { "dbus-send", bus_arg, "--print-reply", "--dest=org.example.Denied",
                               "/org/example", "org.example.Test.Echo", "string:legacy",
                               NULL };
        g_autofree char *err = NULL;
        const struct kdbus_msg *m;
        WireHeader h;
        WireArgs ar;
        int status;

        g_assert_cmpint(activator_hello(b, "org.example.Allowed", &allowed), ==, 0);
        g_assert_cmpint(activator_hello(b, "org.example.Denied", &denied), ==, 0);
        g_assert_cmpint(kcall(a, 0, "org.example.Denied", 1, false, "Echo", "x", 0, NULL), ==,
                        -EPERM);
        g_assert_null(peek(denied));
        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   NULL, &err, &status, NULL));
        g_assert_false(g_spawn_check_wait_status(status, NULL));
        g_assert_nonnull(strstr(err, "AccessDenied"));
        g_assert_null(peek(denied));

        g_assert_cmpint(kcall(a, 0, "org.example.Allowed", 2, false, "Echo", "native", 0, NULL),
                        ==, 0);
        g_assert_cmpint(kcall(a, 0, "org.example.Allowed", 3, false, "Secret", "s", 0, NULL),
                        ==, 0);
        g_assert_nonnull(peek(allowed));

        /* the service comes: the Echo moves to it, the Secret its receive rules deny does not */
        g_assert_cmpint(kdbus_conn_name_acquire(svc, "org.example.Allowed", 0, NULL), ==, 0);
        g_assert_cmpint(krecv_wait(a, 5000, true, &m), ==, 0);
        g_assert_cmpuint(m->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
        g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_REPLY_DEAD);
        g_assert_cmpuint(m->cookie_reply, ==, 3);
        kfree_msg(a, m);
        m = krecv(svc, &h, &ar);
        g_assert_cmpuint(m->cookie, ==, 2);
        g_assert_cmpstr(h.member, ==, "Echo");
        kfree_msg(svc, m);
        kassert_empty(svc);
        g_assert_null(peek(allowed));
        g_assert_cmpint(kreply(svc, a->id, 100, 2, "svc:native"), ==, 0);
        m = krecv(a, &h, &ar);
        g_assert_cmpuint(m->cookie_reply, ==, 2);
        g_assert_cmpstr(ar.str[0], ==, "svc:native");
        kfree_msg(a, m);
        kdbus_conn_close(allowed);
        kdbus_conn_close(denied);
        kdbus_conn_close(a);
        kdbus_conn_close(svc);
}

/*
 * A moved call counts against the new owner's quota for its sender like any other (kdbus's
 * move charged the receiver's quota): a service whose pool quota for the caller's user is
 * used up (ENOBUFS for a direct send of the same size) does not get it; it is dropped and
 * its caller gets REPLY_DEAD.
 */
static void test_queue_limit(KBus *b, gconstpointer ctx) {
        KdbusConn *act = NULL, *a = kpeer(b, 0), *svc = kpeer(b, 0);
        g_autofree char *big = g_strnfill(2048, 'x');
        const struct kdbus_msg *m;
        unsigned n;
        int r = 0;

        g_assert_cmpint(activator_hello(b, "org.example.Busy", &act), ==, 0);
        for (n = 0; n < 10000; ++n) {
                r = kcall(a, svc->id, NULL, 1000 + n, true, "Fill", big, 0, NULL);
                if (r)
                        break;
        }
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpint(kcall(a, 0, "org.example.Busy", 7, false, "Echo", big, 0, NULL), ==, 0);
        g_assert_nonnull(peek(act));
        g_assert_cmpint(kdbus_conn_name_acquire(svc, "org.example.Busy", 0, NULL), ==, 0);
        g_assert_null(peek(act));
        g_assert_cmpint(krecv_wait(a, 5000, true, &m), ==, 0);
        g_assert_cmpuint(m->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
        g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_REPLY_DEAD);
        g_assert_cmpuint(m->cookie_reply, ==, 7);
        kfree_msg(a, m);
        kdbus_conn_close(act);
        kdbus_conn_close(a);
        kdbus_conn_close(svc);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
        g_test_add("/selftests/activator", KBus, kbus_open_conf, kbus_setup, test_activator,
                   kbus_teardown);
        g_test_add("/selftests/activator/notify", KBus, kbus_open_conf, kbus_setup, test_notify,
                   kbus_teardown);
        g_test_add("/selftests/activator/activatable-changed", KBus, kbus_open_conf, kbus_setup,
                   test_activatable_changed, kbus_teardown);
        g_test_add("/selftests/activator/policy-access", KBus, kbus_open_conf, kbus_setup,
                   test_policy_access, kbus_teardown);
        g_test_add("/selftests/activator/xml-policy", KBus, deny_conf, kbus_setup,
                   test_xml_policy, kbus_teardown);
        g_test_add("/selftests/activator/queue-limit", KBus, kbus_open_conf, kbus_setup,
                   test_queue_limit, kbus_teardown);
        return g_test_run();
}
