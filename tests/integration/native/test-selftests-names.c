/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance with kdbus's name selftests, through a real kdbusd and libkdbus:
 * name-basics, name-conflict, name-queue, name-takeover, the NAME_ADD / NAME_REMOVE /
 * NAME_CHANGE and ID_ADD / ID_REMOVE notifications over the socket (match-name-*,
 * match-id-*), and the race cases (many processes acquiring one name at once, two BYEBYEs
 * on one connection). Written from kdbus's documentation and the behaviour its selftests
 * check; docs/kdbus-selftests.md maps each kdbus selftest to these tests.
 */
#include "kdbusd-fixture.h"

/*
 * LIST @flags as text: one "name@id:flags;" per OWNED_NAME item, flags in hex (PRIMARY 20,
 * IN_QUEUE 8, ALLOW_REPLACEMENT 2), in the order of the records.
 */
static char *list_names(KdbusConn *c, uint64_t flags) {
        struct kdbus_cmd_list list = { .size = sizeof(list), .flags = flags };
        GString *s = g_string_new(NULL);
        const uint8_t *p, *end;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_LIST, &list, sizeof(list), NULL, 0),
                        ==, 0);
        p = c->pool + list.offset;
        end = p + list.list_size;
        while (p < end) {
                const struct kdbus_info *info = (const void *)p;
                const struct kdbus_item *item;

                for (item = info->items; (const uint8_t *)item < p + info->size;
                     item = KDBUS_ITEM_NEXT(item))
                        if (item->type == KDBUS_ITEM_OWNED_NAME &&
                            g_str_has_prefix(item->name.name, "org.example."))
                                g_string_append_printf(s, "%s@%llu:%llx;", item->name.name,
                                                       (unsigned long long)info->id,
                                                       (unsigned long long)item->name.flags);
                p += KDBUS_ALIGN8(info->size);
        }
        g_assert_cmpint(kdbus_conn_free(c, list.offset), ==, 0);
        return g_string_free(s, FALSE);
}

#define ASSERT_LIST(c, flags, fmt, ...) do {                                    \
                g_autofree char *got_ = list_names((c), (flags));               \
                g_autofree char *want_ = g_strdup_printf(fmt, __VA_ARGS__);     \
                g_assert_cmpstr(got_, ==, want_);                               \
        } while (0)

/* The name's owner id as CONN_INFO by NAME sees it (0: ESRCH). */
static uint64_t owner_of(KdbusConn *c, const char *name) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_info *info = (void *)buf;
        uint64_t id;
        int r;

        info->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        info->items[0].type = KDBUS_ITEM_NAME;
        strcpy(info->items[0].str, name);
        info->size = sizeof(*info) + KDBUS_ALIGN8(info->items[0].size);
        r = kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0);
        if (r == -ESRCH)
                return 0;
        g_assert_cmpint(r, ==, 0);
        id = ((const struct kdbus_info *)(c->pool + info->offset))->id;
        g_assert_cmpint(kdbus_conn_free(c, info->offset), ==, 0);
        return id;
}

/* name-basics: acquire, see it, invalid names, release */
static void test_name_basics(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        static const char *const bad[] = { "org", "org.", ".org.example", "org..example",
                                           ":1.23", "1org.example", "" };
        uint64_t rf = 0;
        unsigned i;

        /* acquired now: PRIMARY | ACQUIRED (kdbus's final kdbus_name_update()) */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Basic", 0, &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_PRIMARY | KDBUS_NAME_ACQUIRED);
        g_assert_cmpuint(owner_of(c, "org.example.Basic"), ==, a->id);
        ASSERT_LIST(c, KDBUS_LIST_NAMES, "org.example.Basic@%llu:20;",
                    (unsigned long long)a->id);
        /* owning it already: 0 (kdbus's final kdbus_name_update(), kdbus-test "chat"),
         * PRIMARY and the request's saved flags, no ACQUIRED */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Basic", KDBUS_NAME_QUEUE, &rf),
                        ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_PRIMARY | KDBUS_NAME_QUEUE);
        for (i = 0; i < G_N_ELEMENTS(bad); ++i) {
                g_test_message("bad name \"%s\"", bad[i]);
                g_assert_cmpint(kdbus_conn_name_acquire(a, bad[i], 0, NULL), ==, -EINVAL);
        }
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.freedesktop.DBus", 0, NULL), ==, -EPERM);
        /* RELEASE only looks a string up: names that could never be owned are ESRCH */
        for (i = 0; i + 1 < G_N_ELEMENTS(bad); ++i)
                g_assert_cmpint(kdbus_conn_name_release(a, bad[i]), ==, -ESRCH);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.bl.*"), ==, -ESRCH);
        g_assert_cmpint(kdbus_conn_name_release(a, ""), ==, -EINVAL);     /* no string */
        /* release: someone else's, then ours, then nobody's */
        g_assert_cmpint(kdbus_conn_name_release(c, "org.example.Basic"), ==, -EADDRINUSE);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.Basic"), ==, 0);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.Basic"), ==, -ESRCH);
        g_assert_cmpuint(owner_of(c, "org.example.Basic"), ==, 0);
        ASSERT_LIST(c, KDBUS_LIST_NAMES, "%s", "");
        /* gone with its owner */
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Basic", 0, NULL), ==, 0);
        /* BYEBYE needs an empty queue; the driver's NameAcquired does not wait in it (a
         * kdbus peer hears the bus's signals only through a match entry naming the bus, as
         * kdbus had no driver), a call does */
        g_assert_cmpint(kcall(a, c->id, NULL, 5, true, "Ping", NULL, 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_byebye(c), ==, -EBUSY);
        kdrop_all(c);
        g_assert_cmpint(kdbus_conn_byebye(c), ==, 0);
        g_assert_cmpuint(owner_of(a, "org.example.Basic"), ==, 0);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* name-conflict: a taken name, with and without QUEUE; LIST QUEUED shows the queue */
static void test_name_conflict(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        uint64_t rf = 0;

        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Conflict", 0, &rf), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Conflict", 0, &rf), ==, -EEXIST);
        /* replacing needs the owner's ALLOW_REPLACEMENT */
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Conflict",
                                                KDBUS_NAME_REPLACE_EXISTING, &rf), ==, -EEXIST);
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Conflict", KDBUS_NAME_QUEUE,
                                                &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_QUEUE | KDBUS_NAME_IN_QUEUE | KDBUS_NAME_ACQUIRED);
        ASSERT_LIST(c, KDBUS_LIST_NAMES, "org.example.Conflict@%llu:20;",
                    (unsigned long long)a->id);
        /* the waiter's saved QUEUE with IN_QUEUE (kdbus's names.c) */
        ASSERT_LIST(c, KDBUS_LIST_NAMES | KDBUS_LIST_QUEUED, "org.example.Conflict@%llu:20;"
                    "org.example.Conflict@%llu:c;", (unsigned long long)a->id,
                    (unsigned long long)c->id);
        /* QUEUED alone: the waiters only (kdbus_list_all()) */
        ASSERT_LIST(c, KDBUS_LIST_QUEUED, "org.example.Conflict@%llu:c;",
                    (unsigned long long)c->id);
        /* a queued waiter may release its place */
        g_assert_cmpint(kdbus_conn_name_release(c, "org.example.Conflict"), ==, 0);
        ASSERT_LIST(c, KDBUS_LIST_NAMES | KDBUS_LIST_QUEUED, "org.example.Conflict@%llu:20;",
                    (unsigned long long)a->id);
        g_assert_cmpint(kdbus_conn_name_release(c, "org.example.Conflict"), ==, -EADDRINUSE);
        /* bad flags */
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Conflict", KDBUS_NAME_PRIMARY,
                                                NULL), ==, -EINVAL);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* name-queue: three owners, the queue in order as each primary goes */
static void test_name_queue(KBus *b, gconstpointer ctx) {
        KdbusConn *p[3] = { kpeer(b, 0), kpeer(b, 0), kpeer(b, 0) };
        uint64_t rf = 0;
        unsigned i;

        for (i = 0; i < 3; ++i) {
                g_assert_cmpint(kdbus_conn_name_acquire(p[i], "org.example.Queue",
                                                        KDBUS_NAME_QUEUE, &rf), ==, 0);
                g_assert_cmpuint(rf, ==, KDBUS_NAME_QUEUE | KDBUS_NAME_ACQUIRED |
                                         (i ? KDBUS_NAME_IN_QUEUE : KDBUS_NAME_PRIMARY));
        }
        ASSERT_LIST(p[0], KDBUS_LIST_NAMES | KDBUS_LIST_QUEUED,
                    "org.example.Queue@%llu:24;org.example.Queue@%llu:c;"
                    "org.example.Queue@%llu:c;", (unsigned long long)p[0]->id,
                    (unsigned long long)p[1]->id, (unsigned long long)p[2]->id);
        /* the first goes: the second is primary; the third stays queued */
        g_assert_cmpint(kdbus_conn_name_release(p[0], "org.example.Queue"), ==, 0);
        g_assert_cmpuint(owner_of(p[2], "org.example.Queue"), ==, p[1]->id);
        /* the second leaves (BYEBYE: done when it returns; the queue must be empty) */
        kdrop_all(p[1]);
        g_assert_cmpint(kdbus_conn_byebye(p[1]), ==, 0);
        p[1] = kdbus_conn_close(p[1]);
        g_assert_cmpuint(owner_of(p[2], "org.example.Queue"), ==, p[2]->id);
        ASSERT_LIST(p[0], KDBUS_LIST_NAMES | KDBUS_LIST_QUEUED, "org.example.Queue@%llu:24;",
                    (unsigned long long)p[2]->id);
        kdbus_conn_close(p[0]);
        kdbus_conn_close(p[2]);
}

/* kdbus's queue order (kdbus_name_update()): a waiter whose REPLACE_EXISTING cannot replace
 * joins the tail (dbus-daemon would put it first in line); a leaving connection releases
 * its names oldest first (kdbus_name_release_all()) */
static void test_name_queue_order(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *q = kpeer(b, 0), *r = kpeer(b, 0), *w = kpeer(b, 0);
        const struct kdbus_item *item;

        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Order", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(q, "org.example.Order", KDBUS_NAME_QUEUE, NULL),
                        ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(r, "org.example.Order",
                                                KDBUS_NAME_QUEUE | KDBUS_NAME_REPLACE_EXISTING,
                                                NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.Order"), ==, 0);
        g_assert_cmpuint(owner_of(w, "org.example.Order"), ==, q->id);

        g_assert_cmpint(kmatch_notify(w, 1, KDBUS_ITEM_NAME_REMOVE, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.First", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Second", 0, NULL), ==, 0);
        kdrop_all(a);
        g_assert_cmpint(kdbus_conn_byebye(a), ==, 0);
        item = krecv_notify(w, KDBUS_ITEM_NAME_REMOVE);
        g_assert_cmpstr(item->name_change.name, ==, "org.example.First");
        kfree_item_msg(w, item);
        item = krecv_notify(w, KDBUS_ITEM_NAME_REMOVE);
        g_assert_cmpstr(item->name_change.name, ==, "org.example.Second");
        kfree_item_msg(w, item);
        kdbus_conn_close(a);
        kdbus_conn_close(q);
        kdbus_conn_close(r);
        kdbus_conn_close(w);
}

/* name-takeover: REPLACE_EXISTING against an ALLOW_REPLACEMENT owner */
static void test_name_takeover(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0), *w = kpeer(b, 0);
        const struct kdbus_item *item;
        uint64_t rf = 0;

        g_assert_cmpint(kmatch_notify(w, 1, KDBUS_ITEM_NAME_CHANGE, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        /* without QUEUE the replaced owner loses the name */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Take",
                                                KDBUS_NAME_ALLOW_REPLACEMENT, &rf), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Take",
                                                KDBUS_NAME_REPLACE_EXISTING, &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_PRIMARY | KDBUS_NAME_ACQUIRED);
        item = krecv_notify(w, KDBUS_ITEM_NAME_CHANGE);
        g_assert_cmpuint(item->name_change.old_id.id, ==, a->id);
        g_assert_cmpuint(item->name_change.new_id.id, ==, c->id);
        g_assert_cmpstr(item->name_change.name, ==, "org.example.Take");
        kfree_item_msg(w, item);
        ASSERT_LIST(w, KDBUS_LIST_NAMES | KDBUS_LIST_QUEUED, "org.example.Take@%llu:20;",
                    (unsigned long long)c->id);
        /* c did not allow replacement: a cannot take it back */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Take",
                                                KDBUS_NAME_REPLACE_EXISTING, &rf), ==, -EEXIST);
        g_assert_cmpint(kdbus_conn_name_release(c, "org.example.Take"), ==, 0);
        kassert_empty(w);       /* no NAME_CHANGE for a release without successor */

        /* with QUEUE the replaced owner waits and gets it back */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Take2",
                                                KDBUS_NAME_ALLOW_REPLACEMENT | KDBUS_NAME_QUEUE,
                                                &rf), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Take2",
                                                KDBUS_NAME_REPLACE_EXISTING, &rf), ==, 0);
        ASSERT_LIST(w, KDBUS_LIST_NAMES | KDBUS_LIST_QUEUED,
                    "org.example.Take2@%llu:e;org.example.Take2@%llu:20;",
                    (unsigned long long)a->id, (unsigned long long)c->id);
        item = krecv_notify(w, KDBUS_ITEM_NAME_CHANGE);
        g_assert_cmpuint(item->name_change.new_id.id, ==, c->id);
        kfree_item_msg(w, item);
        g_assert_cmpint(kdbus_conn_name_release(c, "org.example.Take2"), ==, 0);
        g_assert_cmpuint(owner_of(w, "org.example.Take2"), ==, a->id);
        item = krecv_notify(w, KDBUS_ITEM_NAME_CHANGE);
        g_assert_cmpuint(item->name_change.old_id.id, ==, c->id);
        g_assert_cmpuint(item->name_change.new_id.id, ==, a->id);
        kfree_item_msg(w, item);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
        kdbus_conn_close(w);
}

/* match-name-add / -remove / -change: notifications filtered by name and ids */
static void test_match_name(KBus *b, gconstpointer ctx) {
        KdbusConn *w = kpeer(b, 0), *a = kpeer(b, KDBUS_HELLO_ACCEPT_FD), *c = kpeer(b, 0);
        const struct kdbus_item *item;

        g_assert_cmpint(kmatch_notify(w, 1, KDBUS_ITEM_NAME_ADD, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, "org.example.Watched"), ==, 0);
        g_assert_cmpint(kmatch_notify(w, 2, KDBUS_ITEM_NAME_REMOVE, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        /* another name: no NAME_ADD; its removal: NAME_REMOVE (any name) */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Other", 0, NULL), ==, 0);
        kassert_empty(w);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.Other"), ==, 0);
        item = krecv_notify(w, KDBUS_ITEM_NAME_REMOVE);
        g_assert_cmpstr(item->name_change.name, ==, "org.example.Other");
        g_assert_cmpuint(item->name_change.old_id.id, ==, a->id);
        /* kdbus's name flags, not HELLO's: a acquired without flags, so PRIMARY only */
        g_assert_cmpuint(item->name_change.old_id.flags, ==, KDBUS_NAME_PRIMARY);
        g_assert_cmpuint(item->name_change.new_id.id, ==, 0);
        kfree_item_msg(w, item);
        /* the watched name */
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Watched", 0, NULL), ==, 0);
        item = krecv_notify(w, KDBUS_ITEM_NAME_ADD);
        g_assert_cmpuint(item->name_change.old_id.id, ==, 0);
        g_assert_cmpuint(item->name_change.new_id.id, ==, a->id);
        g_assert_cmpstr(item->name_change.name, ==, "org.example.Watched");
        kfree_item_msg(w, item);
        /* NAME_CHANGE only from c's id: a queue handover from a to c is not it */
        g_assert_cmpint(kmatch_notify(w, 3, KDBUS_ITEM_NAME_CHANGE, c->id, KDBUS_MATCH_ID_ANY,
                                      NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(c, "org.example.Watched", KDBUS_NAME_QUEUE, NULL),
                        ==, 0);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.Watched"), ==, 0);
        kassert_empty(w);
        g_assert_cmpuint(owner_of(w, "org.example.Watched"), ==, c->id);
        /* the owner disconnects: NAME_REMOVE */
        c = kdbus_conn_close(c);
        item = krecv_notify(w, KDBUS_ITEM_NAME_REMOVE);
        g_assert_cmpstr(item->name_change.name, ==, "org.example.Watched");
        kfree_item_msg(w, item);
        /* after MATCH_REMOVE nothing */
        g_assert_cmpint(kdbus_conn_match_remove(w, 2), ==, 0);
        g_assert_cmpint(kdbus_conn_match_remove(w, 2), ==, -EBADSLT);
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Other", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_name_release(a, "org.example.Other"), ==, 0);
        kassert_empty(w);
        kdbus_conn_close(a);
        kdbus_conn_close(w);
}

/* match-id-add / match-id-remove: connections coming and going, by any id or one id */
static void test_match_id(KBus *b, gconstpointer ctx) {
        KdbusConn *w = kpeer(b, 0), *a, *c;
        const struct kdbus_item *item;

        g_assert_cmpint(kmatch_notify(w, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL),
                        ==, 0);
        a = kpeer(b, KDBUS_HELLO_ACCEPT_FD);
        item = krecv_notify(w, KDBUS_ITEM_ID_ADD);
        g_assert_cmpuint(item->id_change.id, ==, a->id);
        g_assert_cmpuint(item->id_change.flags, ==, KDBUS_HELLO_ACCEPT_FD);
        kfree_item_msg(w, item);
        c = kpeer(b, 0);
        item = krecv_notify(w, KDBUS_ITEM_ID_ADD);
        g_assert_cmpuint(item->id_change.id, ==, c->id);
        g_assert_cmpuint(c->id, >, a->id);      /* ids from one counter, never reused */
        kfree_item_msg(w, item);
        /* ID_REMOVE of c only */
        g_assert_cmpint(kmatch_notify(w, 2, KDBUS_ITEM_ID_REMOVE, 0, c->id, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_byebye(a), ==, 0);  /* gone when it returns */
        a = kdbus_conn_close(a);
        kassert_empty(w);
        g_assert_cmpint(kdbus_conn_byebye(c), ==, 0);
        item = krecv_notify(w, KDBUS_ITEM_ID_REMOVE);
        g_assert_cmpuint(item->id_change.id, ==, c->id);
        kfree_item_msg(w, item);
        kdbus_conn_close(c);
        g_assert_cmpint(kdbus_conn_match_remove(w, 1), ==, 0);
        c = kpeer(b, 0);
        kassert_empty(w);
        kdbus_conn_close(c);
        kdbus_conn_close(w);
}

/* race: processes acquiring one name at the same moment; exactly one wins, every id is
 * distinct; repeated */
static void test_race_name_acquire(KBus *b, gconstpointer ctx) {
        enum { N = 6, ROUNDS = 10 };
        unsigned round;

        for (round = 0; round < ROUNDS; ++round) {
                int go[2], res[2], hold[2];
                pid_t pids[N];
                unsigned i, winners = 0, losers = 0;
                uint64_t ids[N];

                g_assert_cmpint(pipe(go), ==, 0);
                g_assert_cmpint(pipe(res), ==, 0);
                g_assert_cmpint(pipe(hold), ==, 0);
                for (i = 0; i < N; ++i) {
                        pids[i] = fork();
                        g_assert_cmpint(pids[i], >=, 0);
                        if (pids[i] == 0) {
                                KdbusConn *c = NULL;
                                int64_t out[2];
                                char x;

                                (void) close(go[1]);
                                (void) close(res[0]);
                                (void) close(hold[1]);
                                int err = kdbus_conn_open(b->native, &c);

                                if (!err)
                                        err = kdbus_conn_hello(c, 0, KPOOL);
                                if (read(go[0], &x, 1) != 0)    /* EOF: all start */
                                        _exit(3);
                                /* a failed HELLO is reported as a result (id 0), so that
                                 * the parent fails with its errno instead of waiting */
                                out[0] = err ? 0 : (int64_t)c->id;
                                out[1] = err ? err : kdbus_conn_name_acquire(c,
                                                                             "org.example.Race",
                                                                             0, NULL);
                                if (write(res[1], out, sizeof(out)) != sizeof(out))
                                        _exit(4);
                                /* hold it until the parent has read every result */
                                if (read(hold[0], &x, 1) != 0)
                                        _exit(5);
                                _exit(0);
                        }
                }
                (void) close(go[0]);
                (void) close(res[1]);
                (void) close(hold[0]);
                (void) close(go[1]);            /* go */
                for (i = 0; i < N; ++i) {
                        int64_t in[2];
                        unsigned j;

                        g_assert_cmpint(read(res[0], in, sizeof(in)), ==, sizeof(in));
                        if (!in[0])
                                g_error("open or HELLO in a race: %lld", (long long)in[1]);
                        ids[i] = (uint64_t)in[0];
                        for (j = 0; j < i; ++j)
                                g_assert_cmpuint(ids[j], !=, ids[i]);
                        if (in[1] == 0)
                                ++winners;
                        else if (in[1] == -EEXIST)
                                ++losers;
                        else
                                g_error("NAME_ACQUIRE in a race: %lld", (long long)in[1]);
                }
                (void) close(res[0]);
                (void) close(hold[1]);          /* now they may go */
                g_assert_cmpuint(winners, ==, 1);
                g_assert_cmpuint(losers, ==, N - 1);
                for (i = 0; i < N; ++i) {
                        int status;

                        g_assert_cmpint(waitpid(pids[i], &status, 0), ==, pids[i]);
                        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                }
        }
}

/* race: two threads send BYEBYE on one connection at once: one succeeds, the other gets
 * ECONNRESET (the bus handles one connection's commands in order) */
typedef struct Byebye {
        KdbusConn *c;
        int r;
} Byebye;

static gpointer byebye_thread(gpointer data) {
        Byebye *t = data;
        struct kdbus_wire_request req = { .command = KDBUS_CMD_BYEBYE,
                                          .size = sizeof(struct kdbus_cmd) };
        struct kdbus_cmd cmd = { .size = sizeof(cmd) };
        struct kdbus_wire_reply rep;
        struct iovec iov[2] = { { &req, sizeof(req) }, { &cmd, sizeof(cmd) } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
        uint8_t buf[64];

        /* one datagram each way; the two replies have the same layout, so which thread
         * reads which does not matter: the pair of results is what is checked */
        if (sendmsg(t->c->fd, &mh, MSG_NOSIGNAL) < 0) {
                t->r = -errno;
                return NULL;
        }
        if (recv(t->c->fd, buf, sizeof(buf), 0) < (ssize_t)sizeof(rep)) {
                t->r = -EIO;
                return NULL;
        }
        memcpy(&rep, buf, sizeof(rep));
        t->r = (int)rep.error;
        return NULL;
}

/* race: BYEBYE against MATCH_REMOVE on one connection: either MATCH_REMOVE ran first
 * (EBADSLT, no such entry; then BYEBYE 0) or BYEBYE did (0; then ECONNRESET) */
static gpointer match_remove_thread(gpointer data) {
        Byebye *t = data;
        struct kdbus_wire_request req = { .command = KDBUS_CMD_MATCH_REMOVE,
                                          .size = sizeof(struct kdbus_cmd_match) };
        struct kdbus_cmd_match cmd = { .size = sizeof(cmd), .cookie = 0xdeadbeef };
        struct kdbus_wire_reply rep;
        struct iovec iov[2] = { { &req, sizeof(req) }, { &cmd, sizeof(cmd) } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
        uint8_t buf[128];

        if (sendmsg(t->c->fd, &mh, MSG_NOSIGNAL) < 0) {
                t->r = -errno;
                return NULL;
        }
        if (recv(t->c->fd, buf, sizeof(buf), 0) < (ssize_t)sizeof(rep)) {
                t->r = -EIO;
                return NULL;
        }
        memcpy(&rep, buf, sizeof(rep));
        t->r = (int)rep.error;
        return NULL;
}

static void test_race_byebye_match(KBus *b, gconstpointer ctx) {
        unsigned round;

        for (round = 0; round < 50; ++round) {
                Byebye t[2];
                GThread *th[2];
                KdbusConn *c = kpeer(b, 0);
                int lo, hi;

                t[0] = (Byebye){ .c = c, .r = 1 };
                t[1] = (Byebye){ .c = c, .r = 1 };
                th[0] = g_thread_new("byebye", byebye_thread, &t[0]);
                th[1] = g_thread_new("match-remove", match_remove_thread, &t[1]);
                g_thread_join(th[0]);
                g_thread_join(th[1]);
                /* the replies may reach either thread: compare the pair */
                lo = MIN(t[0].r, t[1].r);
                hi = MAX(t[0].r, t[1].r);
                g_assert_true((lo == -EBADSLT && hi == 0) || (lo == -ECONNRESET && hi == 0));
                kdbus_conn_close(c);
        }
}

static void test_race_byebye(KBus *b, gconstpointer ctx) {
        unsigned round;

        for (round = 0; round < 50; ++round) {
                Byebye t[2];
                GThread *th[2];
                KdbusConn *c = kpeer(b, 0);
                unsigned i;

                for (i = 0; i < 2; ++i) {
                        t[i] = (Byebye){ .c = c, .r = 1 };
                        th[i] = g_thread_new("byebye", byebye_thread, &t[i]);
                }
                for (i = 0; i < 2; ++i)
                        g_thread_join(th[i]);
                g_assert_true((t[0].r == 0 && t[1].r == -ECONNRESET) ||
                              (t[1].r == 0 && t[0].r == -ECONNRESET));
                kdbus_conn_close(c);
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
#define ADD(path, fn) g_test_add("/selftests/" path, KBus, NULL, kbus_setup, fn, kbus_teardown)
        ADD("name-basics", test_name_basics);
        ADD("name-conflict", test_name_conflict);
        ADD("name-queue", test_name_queue);
        ADD("name-queue-order", test_name_queue_order);
        ADD("name-takeover", test_name_takeover);
        ADD("match-name-add-remove-change", test_match_name);
        ADD("match-id-add-remove", test_match_id);
        ADD("race/name-acquire", test_race_name_acquire);
        ADD("race/byebye", test_race_byebye);
        ADD("race/byebye-match-remove", test_race_byebye_match);
        return g_test_run();
}
