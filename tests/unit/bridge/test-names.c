/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Name registry: RequestName/ReleaseName outcomes and queue order. The expected queues and
 * codes were taken from dbus-daemon 1.14.10 (dbus-python RequestName/ListQueuedOwners on
 * `dbus-daemon --session`), e.g. [A(allow) primary, C queued] + B(replace) -> B, A, C.
 */
#include "tests/unit/bridge/fixture.h"

#define A 0
#define B 1
#define C 2
#define D 3

/* The owners of @name as "1,2,3" (conn ids, primary first), "" if none. */
static char *queue_of(Fixture *f, const char *name) {
        static char buf[128];
        BridgeName *n = bus_find_name(f->bus, name);
        List *pos;

        buf[0] = 0;
        if (!n)
                return buf;
        list_for_each(pos, &n->owners) {
                BridgeNameOwner *o = container_of(pos, BridgeNameOwner, name_link);
                size_t l = strlen(buf);

                g_snprintf(buf + l, sizeof(buf) - l, "%s%llu", l ? "," : "",
                           (unsigned long long)o->conn->id);
        }
        return buf;
}

/* Four connections; @ctx: a NamingCase (the bus's numbering), or NULL for the default. */
static void setup4(Fixture *f, gconstpointer ctx) {
        unsigned i;

        fixture_setup(f, ctx);
        if (ctx)
                g_assert_cmpint(bus_set_naming(f->bus, *(const BusNaming *)ctx), ==, 0);
        for (i = 0; i < 4; ++i)
                fixture_conn(f, i);
        fixture_log_reset(f);
}

static void test_basic(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.one", 0), ==, 0);
        assert_log(f, "name t.one ->:1.0;");
        g_assert_true(bus_find_conn_by_name(f->bus, "t.one") == f->c[A]);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.one", 0), ==, NAME_E_ALREADY_OWNER);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.one", BRIDGE_NAME_DO_NOT_QUEUE), ==,
                        NAME_E_EXISTS);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.one", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.one"), ==, "1,2");
        g_assert_cmpuint(f->c[B]->n_names, ==, 1);
        assert_log(f, "");
        g_assert_cmpint(bridge_name_release(f->c[A], "t.one"), ==, 0);
        assert_log(f, "name t.one :1.0>:1.1;");
        g_assert_cmpint(bridge_name_release(f->c[A], "t.one"), ==, NAME_E_NOT_OWNER);
        g_assert_cmpint(bridge_name_release(f->c[A], "t.nope"), ==, NAME_E_NON_EXISTENT);
        g_assert_cmpint(bridge_name_release(f->c[B], "t.one"), ==, 0);
        assert_log(f, "name t.one :1.1>-;");
        g_assert_null(bus_find_name(f->bus, "t.one"));
        g_assert_null(bus_find_conn_by_name(f->bus, "t.one"));
        g_assert_cmpuint(f->c[A]->n_names, ==, 0);
        g_assert_cmpuint(f->c[B]->n_names, ==, 0);
}

static void test_replace(Fixture *f, gconstpointer ctx) {
        /* dbus-daemon case 1: B, A, C */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.one", BRIDGE_NAME_ALLOW_REPLACEMENT), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.one", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.one", BRIDGE_NAME_REPLACE_EXISTING), ==, 0);
        g_assert_cmpstr(queue_of(f, "t.one"), ==, "2,1,3");
        assert_log(f, "name t.one ->:1.0;name t.one :1.0>:1.1;");

        /* case 2: B already queued behind C moves to the front: B, A, C */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.two", BRIDGE_NAME_ALLOW_REPLACEMENT), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.two", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.two", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.two", BRIDGE_NAME_REPLACE_EXISTING), ==, 0);
        g_assert_cmpstr(queue_of(f, "t.two"), ==, "2,1,3");

        /* case 3: the old primary had DO_NOT_QUEUE: it loses the name */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.three", BRIDGE_NAME_ALLOW_REPLACEMENT |
                                                                BRIDGE_NAME_DO_NOT_QUEUE), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.three", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.three", BRIDGE_NAME_REPLACE_EXISTING), ==, 0);
        g_assert_cmpstr(queue_of(f, "t.three"), ==, "2,3");
        g_assert_cmpuint(f->c[A]->n_names, ==, 2);

        /* case 8: DO_NOT_QUEUE|REPLACE_EXISTING replaces an allowing owner, which queues */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.eight", BRIDGE_NAME_ALLOW_REPLACEMENT), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.eight", BRIDGE_NAME_REPLACE_EXISTING |
                                                                BRIDGE_NAME_DO_NOT_QUEUE), ==, 0);
        g_assert_cmpstr(queue_of(f, "t.eight"), ==, "2,1");
}

static void test_no_replace(Fixture *f, gconstpointer ctx) {
        /* case 6: REPLACE_EXISTING without ALLOW_REPLACEMENT queues; with DO_NOT_QUEUE: EXISTS */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.six", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.six", BRIDGE_NAME_REPLACE_EXISTING), ==,
                        NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[D], "t.six", BRIDGE_NAME_REPLACE_EXISTING |
                                                              BRIDGE_NAME_DO_NOT_QUEUE), ==,
                        NAME_E_EXISTS);
        g_assert_cmpstr(queue_of(f, "t.six"), ==, "1,2");

        /* case 4: a queued owner asking DO_NOT_QUEUE gets EXISTS and leaves the queue */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.four", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.four", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.four", BRIDGE_NAME_DO_NOT_QUEUE), ==,
                        NAME_E_EXISTS);
        g_assert_cmpstr(queue_of(f, "t.four"), ==, "1");
        g_assert_cmpuint(f->c[C]->n_names, ==, 0);

        /* case 5: re-requesting updates the flags: now replaceable */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.five", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.five", BRIDGE_NAME_ALLOW_REPLACEMENT), ==,
                        NAME_E_ALREADY_OWNER);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.five", BRIDGE_NAME_REPLACE_EXISTING), ==, 0);
        g_assert_cmpstr(queue_of(f, "t.five"), ==, "2,1");

        /* a queued owner re-requesting stays where it is */
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.five", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.five", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.five"), ==, "2,1,3");
}

/*
 * REPLACE_EXISTING that cannot replace: dbus-daemon 1.14.10 queues the caller at the head,
 * right behind the primary owner, moving it there if it already waited further back.
 */
static void test_replace_queues_first(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.q", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.q", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.q", BRIDGE_NAME_REPLACE_EXISTING), ==,
                        NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.q"), ==, "1,2,3");
        g_assert_cmpint(bridge_name_acquire(f->c[D], "t.q", BRIDGE_NAME_REPLACE_EXISTING), ==,
                        NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.q"), ==, "1,4,2,3");
        /* re-requesting without the flag keeps the place */
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.q", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.q"), ==, "1,4,2,3");
        g_assert_cmpuint(f->c[B]->n_names, ==, 1);
        assert_log(f, "name t.q ->:1.0;");
        /* who inherits: the one that asked to replace last */
        g_assert_cmpint(bridge_name_release(f->c[A], "t.q"), ==, 0);
        assert_log(f, "name t.q :1.0>:1.3;");

        /* already queued behind C: moves to the head */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.r", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.r", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.r", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.r"), ==, "1,3,2");
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.r", BRIDGE_NAME_REPLACE_EXISTING), ==,
                        NAME_E_IN_QUEUE);
        g_assert_cmpstr(queue_of(f, "t.r"), ==, "1,2,3");
        g_assert_cmpuint(f->c[B]->n_names, ==, 2);      /* t.q and t.r */

        /* ... with DO_NOT_QUEUE: EXISTS and it leaves the queue */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.s", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.s", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.s", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.s", BRIDGE_NAME_REPLACE_EXISTING |
                                                            BRIDGE_NAME_DO_NOT_QUEUE), ==,
                        NAME_E_EXISTS);
        g_assert_cmpstr(queue_of(f, "t.s"), ==, "1,3");
}

static void test_release_queue(Fixture *f, gconstpointer ctx) {
        /* case 7: release by a queued owner just leaves the queue */
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.seven", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.seven", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.seven", 0), ==, NAME_E_IN_QUEUE);
        fixture_log_reset(f);
        g_assert_cmpint(bridge_name_release(f->c[B], "t.seven"), ==, 0);
        g_assert_cmpstr(queue_of(f, "t.seven"), ==, "1,3");
        assert_log(f, "");
        g_assert_cmpint(bridge_name_release(f->c[D], "t.seven"), ==, NAME_E_NOT_OWNER);
        g_assert_cmpint(bridge_name_release(f->c[A], "t.seven"), ==, 0);
        assert_log(f, "name t.seven :1.0>:1.2;");
}

static void test_disconnect_promotes(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.a", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.b", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.a", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[C], "t.a", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "t.c", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.c", 0), ==, NAME_E_IN_QUEUE);
        fixture_log_reset(f);
        bridge_conn_disconnect(f->c[A]);
        /* newest first, as dbus-daemon: t.c (queued, silent), t.b, t.a */
        assert_log(f, "name t.b :1.0>-;name t.a :1.0>:1.1;removed :1.0;");
        g_assert_cmpstr(queue_of(f, "t.a"), ==, "2,3");
        g_assert_cmpstr(queue_of(f, "t.c"), ==, "2");
        g_assert_null(bus_find_name(f->bus, "t.b"));
        /* idempotent */
        bridge_conn_disconnect(f->c[A]);
        assert_log(f, "");
        g_assert_cmpint(bridge_name_acquire(f->c[A], "t.z", 0), ==, BRIDGE_E_NOT_ACTIVE);
        g_assert_null(bus_find_conn_by_name(f->bus, ":1.0"));
        g_assert_true(bus_find_conn_by_name(f->bus, ":1.1") == f->c[B]);
}

static void test_quota(Fixture *f, gconstpointer ctx) {
        /* dbus-daemon with max_names_per_connection=3: two names, the unique name counts */
        f->bus->limits.max_names_per_connection = 3;
        g_assert_cmpint(bridge_name_acquire(f->c[A], "a.a", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "a.b", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "a.c", 0), ==, NAME_E_QUOTA);
        g_assert_cmpint(bridge_name_acquire(f->c[A], "a.a", 0), ==, NAME_E_QUOTA);
        /* queued names count too */
        g_assert_cmpint(bridge_name_acquire(f->c[B], "a.a", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "a.b", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "b.b", 0), ==, NAME_E_QUOTA);
        g_assert_cmpint(bridge_name_release(f->c[B], "a.b"), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[B], "b.b", 0), ==, 0);
}

/* What the unique names of a bus in one numbering are (the test data of unique-names*). */
typedef struct NamingCase {
        BusNaming naming;               /* first: setup4() reads it */
        BusNaming other;
        const char *first, *fourth;     /* connections A (id 1) and D (id 4) */
        const char *fifth;              /* nobody's yet */
        uint64_t id_of_zero;            /* ":1.0" names */
        const char *last;               /* the name of id UINT64_MAX */
        const char *past_last;          /* one more: no id's */
} NamingCase;

static const NamingCase naming_dbus_daemon = {
        /* dbus-daemon's numbering from :1.0 over ids from 1 */
        .naming = BUS_NAMING_DBUS_DAEMON, .other = BUS_NAMING_KDBUS, .first = ":1.0",
        .fourth = ":1.3", .fifth = ":1.4", .id_of_zero = 1, .last = ":1.18446744073709551614",
        .past_last = ":1.18446744073709551615",
};
static const NamingCase naming_kdbus = {
        /* a bus with a native front end: kdbus's ":1.<id>" for every connection, the same
         * string wherever it is read (a driver answer, a header, a body); id 0 is the bus */
        .naming = BUS_NAMING_KDBUS, .other = BUS_NAMING_DBUS_DAEMON, .first = ":1.1",
        .fourth = ":1.4", .fifth = ":1.5", .id_of_zero = 0, .last = ":1.18446744073709551615",
        .past_last = ":1.18446744073709551616",
};

static void test_unique_names(Fixture *f, gconstpointer ctx) {
        const NamingCase *c = ctx;
        char buf[BRIDGE_UNIQUE_NAME_MAX];

        g_assert_cmpuint(f->c[A]->id, ==, 1);
        g_assert_cmpstr(f->c[A]->unique_name, ==, c->first);
        g_assert_cmpstr(f->c[D]->unique_name, ==, c->fourth);
        g_assert_true(bus_find_conn_by_name(f->bus, c->first) == f->c[A]);
        g_assert_true(bus_find_conn_by_name(f->bus, c->fourth) == f->c[D]);
        g_assert_null(bus_find_conn_by_name(f->bus, c->fifth));
        g_assert_cmpuint(bus_parse_unique_name(f->bus, ":1.0"), ==, c->id_of_zero);
        g_assert_cmpuint(bus_parse_unique_name(f->bus, c->last), ==, UINT64_MAX);
        g_assert_cmpuint(bus_parse_unique_name(f->bus, c->past_last), ==, 0);
        g_assert_cmpuint(bus_parse_unique_name(f->bus, ":1.00"), ==, 0);
        g_assert_cmpuint(bus_parse_unique_name(f->bus, ":1.01"), ==, 0);
        g_assert_cmpuint(bus_parse_unique_name(f->bus, ":1.-1"), ==, 0);
        bus_format_unique_name(f->bus, UINT64_MAX, buf);
        g_assert_cmpstr(buf, ==, c->last);
        bus_format_unique_name(f->bus, 1, buf);
        g_assert_cmpstr(buf, ==, c->first);
        /* every digit count formats as printf's %llu would, and parses back */
        for (uint64_t n = 1, id; n <= UINT64_MAX / 10; n = n * 10 + n % 7) {
                char want[BRIDGE_UNIQUE_NAME_MAX];

                id = n + c->id_of_zero;
                g_snprintf(want, sizeof(want), ":1.%" G_GUINT64_FORMAT, (guint64)n);
                bus_format_unique_name(f->bus, id, buf);
                g_assert_cmpstr(buf, ==, want);
                g_assert_cmpuint(bus_parse_unique_name(f->bus, buf), ==, id);
        }
        /* the numbering is fixed once a connection has a name */
        g_assert_cmpint(bus_set_naming(f->bus, c->other), ==, -EBUSY);
        g_assert_cmpint(bus_set_naming(f->bus, c->naming), ==, 0);
        g_assert_cmpstr(f->c[A]->unique_name, ==, c->first);
        g_assert_null(bus_find_conn_by_name(f->bus, ":1.04"));
        g_assert_null(bus_find_conn_by_name(f->bus, ":2.1"));
        g_assert_null(bus_find_conn_by_name(f->bus, ":1."));
        g_assert_null(bus_find_conn_by_name(f->bus, ":1.99999999999999999999999"));
        g_assert_true(bus_find_conn(f->bus, 2) == f->c[B]);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/names/basic", Fixture, NULL, setup4, test_basic, fixture_teardown);
        g_test_add("/bridge/names/replace", Fixture, NULL, setup4, test_replace, fixture_teardown);
        g_test_add("/bridge/names/no-replace", Fixture, NULL, setup4, test_no_replace,
                   fixture_teardown);
        g_test_add("/bridge/names/replace-queues-first", Fixture, NULL, setup4,
                   test_replace_queues_first, fixture_teardown);
        g_test_add("/bridge/names/release-queue", Fixture, NULL, setup4, test_release_queue,
                   fixture_teardown);
        g_test_add("/bridge/names/disconnect-promotes", Fixture, NULL, setup4,
                   test_disconnect_promotes, fixture_teardown);
        g_test_add("/bridge/names/quota", Fixture, NULL, setup4, test_quota, fixture_teardown);
        g_test_add("/bridge/names/unique-names", Fixture, &naming_dbus_daemon, setup4,
                   test_unique_names, fixture_teardown);
        g_test_add("/bridge/names/unique-names-kdbus", Fixture, &naming_kdbus, setup4,
                   test_unique_names, fixture_teardown);
        return g_test_run();
}
