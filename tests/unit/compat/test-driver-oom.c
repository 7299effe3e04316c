/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The driver survives ENOMEM (HACKING.md, Allocation failure): malloc/calloc/realloc of the statically
 * linked code (compat, bridge, wire, util) are wrapped; for every allocation a driver
 * step makes, one run fails exactly that allocation. The step must then return 0 or
 * -ENOMEM (never crash, never another code), the bus must keep working afterwards, and
 * nothing may leak (ASan/valgrind in CI).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include "driver-fixture.h"

#include "tests/unit/oom-wrap.h"

static int oom_n;                       /* the allocation to fail in this run */

/* the fixture's before_handle hook: fail allocation oom_n of the step */
static void oom_arm_step(void) {
        oom_arm(oom_n);
}

typedef struct {
        const char *name;
        void (*prepare)(Fixture *f);    /* runs without failures */
        int (*step)(Fixture *f);        /* runs with one failure injected */
} OomCase;

static void prepare_two(Fixture *f) {
        hello(f, 0);
        hello(f, 1);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        drain(f, 0);
        drain(f, 1);
}

static void prepare_owned(Fixture *f) {
        hello(f, 0);
        hello(f, 1);
        hello(f, 2);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "type='signal'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.b", 1u), ==, 0);
        drain(f, 0);
        drain(f, 1);
        drain(f, 2);
}

static int step_hello(Fixture *f) {
        return call_driver(f, 2, "Hello", NULL);
}

static int step_replace(Fixture *f) {
        return call_driver(f, 2, "RequestName", "su", "a.b", 2u);
}

static int step_release(Fixture *f) {
        return call_driver(f, 1, "ReleaseName", "s", "a.b");
}

static int step_add_match(Fixture *f) {
        return call_driver(f, 1, "AddMatch", "s",
                           "type='signal',sender='org.freedesktop.DBus',arg0='x',arg3path='/a'");
}

static int step_remove_match(Fixture *f) {
        return call_driver(f, 0, "RemoveMatch", "s", "type='signal'");
}

static int step_credentials(Fixture *f) {
        return call_driver(f, 0, "GetConnectionCredentials", "s", NAME(f, 1));
}

static int step_list_names(Fixture *f) {
        return call_driver(f, 0, "ListNames", NULL);
}

static int step_introspect(Fixture *f) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/",
                   .interface = "org.freedesktop.DBus.Introspectable", .member = "Introspect" };

        return send_msg(f, 0, &s, NULL);
}

static int step_properties(Fixture *f) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus.Properties", .member = "GetAll" };

        return send_msg(f, 0, &s, "s", "org.freedesktop.DBus");
}

static int step_unknown_name(Fixture *f) {
        Send s = { .destination = "x.y", .path = "/", .interface = "a.b", .member = "M" };

        return send_msg(f, 0, &s, NULL);
}

static int step_call_peer(Fixture *f) {
        Send s = { .path = "/", .interface = "a.b", .member = "M" };

        s.destination = NAME(f, 1);
        return send_msg(f, 0, &s, "s", "payload");
}

static int step_no_destination(Fixture *f) {
        Send s = { .path = "/", .interface = "a.b", .member = "M" };

        return send_msg(f, 0, &s, NULL);
}

static int step_wrong_args(Fixture *f) {
        return call_driver(f, 0, "GetNameOwner", "su", "a.b", 1u);
}

/* the callee leaves with calls pending: NameOwnerChanged and NoReply under failures */
static int step_disconnect(Fixture *f) {
        Send s = { .path = "/", .interface = "a.b", .member = "M" };

        f->before_handle = NULL;
        f->after_handle = NULL;
        s.destination = NAME(f, 1);
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_cmpint(send_msg(f, 2, &s, NULL), ==, 0);
        oom_arm_step();
        bridge_conn_disconnect(f->c[1]);
        oom_disarm();
        return 0;
}

static const OomCase oom_cases[] = {
        { "hello", prepare_owned, NULL },
        { "replace", prepare_owned, step_replace },
        { "release", prepare_owned, step_release },
        { "add-match", prepare_two, step_add_match },
        { "remove-match", prepare_two, step_remove_match },
        { "credentials", prepare_two, step_credentials },
        { "list-names", prepare_owned, step_list_names },
        { "introspect", prepare_two, step_introspect },
        { "properties", prepare_two, step_properties },
        { "unknown-name", prepare_two, step_unknown_name },
        { "call-peer", prepare_two, step_call_peer },
        { "no-destination", prepare_two, step_no_destination },
        { "wrong-args", prepare_two, step_wrong_args },
        { "disconnect", prepare_owned, step_disconnect },
};

static void prepare_hello(Fixture *f) {
        hello(f, 0);
        hello(f, 1);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        drain(f, 0);
        drain(f, 1);
}

static void test_oom(gconstpointer data) {
        const OomCase *c = data;
        unsigned n_failed = 0;

        for (oom_n = 0;; ++oom_n) {
                Fixture fixture, *f = &fixture;
                int r;

                setup(f, NULL);
                if (c->step)
                        c->prepare(f);
                else
                        prepare_hello(f);
                f->before_handle = oom_arm_step;
                f->after_handle = oom_disarm;
                r = c->step ? c->step(f) : step_hello(f);
                f->before_handle = NULL;
                f->after_handle = NULL;
                oom_disarm();
                if (r != 0 && r != -ENOMEM)
                        g_error("%s: failing allocation %d: returned %d", c->name, oom_n, r);

                /* the bus still works: a connection that said hello gets answers */
                drain(f, 0);
                g_assert_cmpint(call_driver(f, 0, "GetId", NULL), ==, 0);
                expect_reply(f, 0, NULL);
                teardown(f, NULL);

                if (!oom_hit)
                        break;
                ++n_failed;
        }
        /* the step allocates at all, so failures were injected: the test can fail */
        g_assert_cmpuint(n_failed, >, 0);
        g_test_message("%s: %u allocation failures survived", c->name, n_failed);
}

int main(int argc, char **argv) {
        size_t i;

        g_test_init(&argc, &argv, NULL);
        for (i = 0; i < G_N_ELEMENTS(oom_cases); ++i) {
                g_autofree char *path = g_strdup_printf("/compat/driver-oom/%s", oom_cases[i].name);

                g_test_add_data_func(path, &oom_cases[i], test_oom);
        }
        return g_test_run();
}
