/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The driver's name ownership under random RequestName/ReleaseName/disconnect sequences, on
 * a real core (same fixture as test-driver.c).
 */
#include "driver-fixture.h"

/*
 * Random RequestName/ReleaseName/disconnect sequences (reproducible with the GLib test
 * seed). The core decides who owns what; this checks that what the driver tells agrees
 * with itself: the listener's NameOwnerChanged chain is consistent (each old owner is the
 * previous new owner), NameAcquired/NameLost to each owner match it, every call gets
 * exactly one answer and that answer comes after the signals it caused, and GetNameOwner
 * agrees with the signals.
 */
#define N_RANDOM_NAMES 3
static const char *const random_names[N_RANDOM_NAMES] = { "a.x", "a.y", "a.z" };

typedef struct {
        char owner[N_RANDOM_NAMES][24];         /* from NameOwnerChanged, "" for none */
        bool held[N_CONNS][N_RANDOM_NAMES];     /* from NameAcquired/NameLost */
} RandomModel;

static int random_name_index(const char *name) {
        int k;

        for (k = 0; k < N_RANDOM_NAMES; ++k)
                if (strcmp(name, random_names[k]) == 0)
                        return k;
        return -1;
}

static void random_apply_listener(Fixture *f, RandomModel *m) {
        Got g;

        while (pop(f, 0, &g)) {
                g_auto(GStrv) v = NULL;
                int k;

                g_assert_cmpstr(g.hdr.member, ==, "NameOwnerChanged");
                v = g_strsplit(g.body, " ", 3);
                g_assert_cmpuint(g_strv_length(v), ==, 3);
                k = random_name_index(v[0]);
                if (k < 0) {
                        g_assert_true(v[0][0] == ':');
                        continue;
                }
                g_assert_cmpstr(m->owner[k], ==, v[1]);  /* the chain of owners is unbroken */
                g_assert_cmpstr(v[1], !=, v[2]);
                g_strlcpy(m->owner[k], v[2], sizeof(m->owner[k]));
        }
}

/* Apply the owner signals of conn @i; if @caller, its queue must end with one answer. */
static void random_apply_owner(Fixture *f, RandomModel *m, unsigned i, bool caller) {
        bool answered = false;
        Got g;

        while (pop(f, i, &g)) {
                int k;

                /* nothing after the answer, except Hello's NameAcquired of the unique name */
                if (answered && !(strcmp(g.hdr.member ?: "", "NameAcquired") == 0 &&
                                  strcmp(g.body, f->c[i]->unique_name) == 0))
                        g_error("conn %u: %s %s \"%s\" after the answer", i, g.hdr.member,
                                g.hdr.error_name, g.body);
                if (g.hdr.type == WIRE_MSG_METHOD_RETURN || g.hdr.type == WIRE_MSG_ERROR) {
                        g_assert_true(caller);
                        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[i]);
                        answered = true;
                        continue;
                }
                g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_SIGNAL);
                k = random_name_index(g.body);
                if (k < 0)
                        continue;                       /* NameAcquired of the unique name */
                if (strcmp(g.hdr.member, "NameAcquired") == 0) {
                        g_assert_false(m->held[i][k]);
                        m->held[i][k] = true;
                } else {
                        g_assert_cmpstr(g.hdr.member, ==, "NameLost");
                        g_assert_true(m->held[i][k]);
                        m->held[i][k] = false;
                }
        }
        g_assert_true(answered == caller);
}

static void random_check(Fixture *f, RandomModel *m) {
        unsigned i;
        int k;

        for (k = 0; k < N_RANDOM_NAMES; ++k) {
                for (i = 1; i < N_CONNS; ++i)
                        g_assert_true(m->held[i][k] ==
                                      (strcmp(m->owner[k], f->c[i]->unique_name) == 0));
                g_assert_cmpint(call_driver(f, 0, "GetNameOwner", "s", random_names[k]), ==, 0);
                if (m->owner[k][0])
                        expect_reply(f, 0, m->owner[k]);
                else
                        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner", NULL);
        }
}

static void test_random(Fixture *f, gconstpointer data) {
        RandomModel m = {};
        unsigned step, i;

        hello(f, 0);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s",
                                    "type='signal',member='NameOwnerChanged'"), ==, 0);
        drain(f, 0);
        for (i = 1; i < N_CONNS; ++i) {
                hello(f, i);
                drain(f, i);
        }
        drain(f, 0);

        for (step = 0; step < 2000; ++step) {
                unsigned who = 1 + (unsigned)g_test_rand_int_range(0, N_CONNS - 1);
                int k = g_test_rand_int_range(0, N_RANDOM_NAMES);
                int op = g_test_rand_int_range(0, 10);

                if (op < 6) {
                        uint32_t flags = (uint32_t)g_test_rand_int_range(0, 8);

                        g_assert_cmpint(call_driver(f, who, "RequestName", "su", random_names[k],
                                                    flags), ==, 0);
                } else if (op < 9) {
                        g_assert_cmpint(call_driver(f, who, "ReleaseName", "s", random_names[k]),
                                        ==, 0);
                } else {
                        /* leave and come back as a new connection */
                        bridge_conn_disconnect(f->c[who]);
                        f->c[who] = bridge_conn_unref(f->c[who]);
                        memset(m.held[who], 0, sizeof(m.held[who]));
                        f->c[who] = new_conn(f, who, BRIDGE_CONN_ACCEPT_FDS);
                        f->serial[who] = 0;
                        hello(f, who);
                }
                random_apply_listener(f, &m);
                for (i = 1; i < N_CONNS; ++i)
                        random_apply_owner(f, &m, i, i == who);
                random_check(f, &m);
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/compat/driver/random", Fixture, NULL, setup, test_random, teardown);
        return g_test_run();
}
