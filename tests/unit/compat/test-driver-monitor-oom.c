/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Monitoring and Debug.Stats survive ENOMEM (HACKING.md, Allocation failure), the way test-driver-oom
 * checks the rest of the driver: for every allocation a step makes, one run fails exactly
 * that allocation; the step must return 0 or -ENOMEM, the bus keeps answering, nothing
 * leaks (ASan/valgrind in CI). The steps run with a monitor attached, so every capture
 * path (routing, driver replies, broadcasts, Hello, a peer leaving) is exercised.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>
#include "bridge/monitor.h"
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

static const char *const monitor_rules[] = { "type='signal'", "member='M'", "", NULL };

/* 0 and 1 said hello, 0 listens to signals, 1 owns a.b; 2 is privileged */
static void prepare_plain(Fixture *f) {
        hello(f, 0);
        hello(f, 1);
        f->c[2]->creds.uid = getuid();
        hello(f, 2);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.b", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "c.d", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 2, "AddMatch", "s", "member='Old'"), ==, 0);
        drain(f, 0);
        drain(f, 1);
        drain(f, 2);
}

/* as prepare_plain, and 2 is a monitor */
static void prepare_monitored(Fixture *f) {
        prepare_plain(f);
        g_assert_cmpint(become_monitor(f, 2, monitor_rules, 0), ==, 0);
        g_assert_true(bridge_conn_is_monitor(f->c[2]));
        drain(f, 0);
        drain(f, 2);
}

/* 0 said hello, 2 is a monitor, 1 is new */
static void prepare_monitor_only(Fixture *f) {
        hello(f, 0);
        f->c[2]->creds.uid = getuid();
        hello(f, 2);
        g_assert_cmpint(become_monitor(f, 2, NULL, 0), ==, 0);
        drain(f, 0);
        drain(f, 2);
}

static int step_become_monitor(Fixture *f) {
        return become_monitor(f, 2, monitor_rules, 0);
}

static int step_call_peer(Fixture *f) {
        Send s = { .path = "/", .interface = "a.b", .member = "M" };

        s.destination = NAME(f, 1);
        return send_msg(f, 0, &s, "s", "payload");
}

static int step_request_name(Fixture *f) {
        return call_driver(f, 0, "RequestName", "su", "e.f", 0u);
}

static int step_hello(Fixture *f) {
        return call_driver(f, 1, "Hello", NULL);
}

static int step_stats(Fixture *f) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus.Debug.Stats", .member = "GetStats" };

        return send_msg(f, 0, &s, NULL);
}

static int step_connection_stats(Fixture *f) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus.Debug.Stats",
                   .member = "GetConnectionStats" };

        return send_msg(f, 0, &s, "s", "a.b");
}

static int step_all_match_rules(Fixture *f) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus.Debug.Stats",
                   .member = "GetAllMatchRules" };

        return send_msg(f, 0, &s, NULL);
}

/* a peer leaves while a monitor watches (NameLost to the gone peer is captured) */
static int step_disconnect(Fixture *f) {
        f->before_handle = NULL;
        f->after_handle = NULL;
        oom_arm_step();
        bridge_conn_disconnect(f->c[1]);
        oom_disarm();
        return 0;
}

static const OomCase oom_cases[] = {
        { "become-monitor", prepare_plain, step_become_monitor },
        { "monitored-call", prepare_monitored, step_call_peer },
        { "monitored-request-name", prepare_monitored, step_request_name },
        { "monitored-hello", prepare_monitor_only, step_hello },
        { "monitored-disconnect", prepare_monitored, step_disconnect },
        { "get-stats", prepare_monitored, step_stats },
        { "get-connection-stats", prepare_monitored, step_connection_stats },
        { "get-all-match-rules", prepare_monitored, step_all_match_rules },
};

static void test_oom(gconstpointer data) {
        const OomCase *c = data;
        unsigned n_failed = 0;

        for (oom_n = 0;; ++oom_n) {
                Fixture fixture, *f = &fixture;
                int r;

                setup(f, NULL);
                c->prepare(f);
                f->before_handle = oom_arm_step;
                f->after_handle = oom_disarm;
                r = c->step(f);
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
                g_autofree char *path = g_strdup_printf("/compat/driver-monitor-oom/%s",
                                                        oom_cases[i].name);

                g_test_add_data_func(path, &oom_cases[i], test_oom);
        }
        return g_test_run();
}
