/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Monitoring.BecomeMonitor through the driver on the real core, against what dbus-daemon
 * 1.14.10 does (checked with a raw client): privilege, flags, rule errors, the reply then
 * NameLost/NameOwnerChanged, what the monitor sees (driver calls and answers included, in
 * order), that it cannot send and cannot be reached.
 */
#include <unistd.h>
#include "bridge/monitor.h"
#include "driver-fixture.h"

/* conn 2 has the bus's uid (the tests run as the bus) */
static void hello_privileged(Fixture *f) {
        f->c[2]->creds.uid = getuid();
        hello(f, 2);
        drain(f, 2);
}

/* the next message of @i, one line: "type sender>destination member-or-error body" */
static const char *next_line(Fixture *f, unsigned i) {
        Got g;

        if (!pop(f, i, &g))
                return "";
        return fmt("%u %s>%s %s %s", g.hdr.type, g.hdr.sender ?: "-", g.hdr.destination ?: "-",
                   g.hdr.member ?: g.hdr.error_name ?: "-", g.body);
}

static void test_not_privileged(Fixture *f, gconstpointer data) {
        hello(f, 0);
        drain(f, 0);
        g_assert_cmpint(become_monitor(f, 0, NULL, 0), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied",
                     fmt("rejected attempt to call BecomeMonitor by connection %s (uid=1000 "
                         "pid=4000) with uid 1000", NAME(f, 0)));
        g_assert_false(bridge_conn_is_monitor(f->c[0]));
}

static void test_bad_arguments(Fixture *f, gconstpointer data) {
        static const char *const bad[] = { "type='signal'", "type='bogus'", NULL };
        static const char *const good[] = { "type='signal'", NULL };

        hello_privileged(f);
        /* flags are checked before the rules */
        g_assert_cmpint(become_monitor(f, 2, bad, 1), ==, 0);
        expect_error(f, 2, "org.freedesktop.DBus.Error.InvalidArgs",
                     "BecomeMonitor does not support any flags yet");
        g_assert_cmpint(become_monitor(f, 2, good, 1), ==, 0);
        expect_error(f, 2, "org.freedesktop.DBus.Error.InvalidArgs", NULL);
        g_assert_cmpint(become_monitor(f, 2, bad, 0), ==, 0);
        expect_error(f, 2, "org.freedesktop.DBus.Error.MatchRuleInvalid", NULL);
        g_assert_false(bridge_conn_is_monitor(f->c[2]));
        assert_empty(f, 2);
}

static void test_sequence_and_view(Fixture *f, gconstpointer data) {
        char mon[32];

        hello_listening(f, 0);
        hello(f, 1);
        drain(f, 1);
        hello_privileged(f);
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "com.example.Mon", 0u), ==, 0);
        drain(f, 2);
        drain(f, 0);
        g_snprintf(mon, sizeof(mon), "%s", NAME(f, 2));

        g_assert_cmpint(become_monitor(f, 2, NULL, 0), ==, 0);
        /* the reply first, then its names go (unique name first), as dbus-daemon does;
         * its old rules (none) do not match NameOwnerChanged, so it gets only NameLost */
        expect_reply(f, 2, "");
        expect_signal(f, 2, "NameLost", mon, true);
        expect_signal(f, 2, "NameLost", "com.example.Mon", true);
        assert_empty(f, 2);
        expect_signal(f, 0, "NameOwnerChanged", fmt("%s %s ", mon, mon), false);
        expect_signal(f, 0, "NameOwnerChanged", fmt("com.example.Mon %s ", mon), false);
        assert_empty(f, 0);
        g_assert_true(bridge_conn_is_monitor(f->c[2]));

        /* it is not reachable any more */
        g_assert_cmpint(send_msg(f, 1, &(Send){ .destination = mon, .path = "/",
                                               .member = "Hi" }, NULL), ==, 0);
        expect_error(f, 1, "org.freedesktop.DBus.Error.ServiceUnknown", NULL);
        g_assert_cmpint(call_driver(f, 1, "NameHasOwner", "s", mon), ==, 0);
        expect_reply(f, 1, "0");

        /* what it saw of that: the call, the error, the driver call and its answer */
        g_assert_cmpstr(next_line(f, 2), ==, fmt("1 %s>%s Hi ", NAME(f, 1), mon));
        g_assert_cmpstr(next_line(f, 2), ==,
                        fmt("3 org.freedesktop.DBus>%s org.freedesktop.DBus.Error.ServiceUnknown "
                            "The name %s was not provided by any .service files", NAME(f, 1), mon));
        g_assert_cmpstr(next_line(f, 2), ==,
                        fmt("1 %s>org.freedesktop.DBus NameHasOwner %s", NAME(f, 1), mon));
        g_assert_cmpstr(next_line(f, 2), ==, fmt("2 org.freedesktop.DBus>%s - 0", NAME(f, 1)));
        g_assert_cmpstr(next_line(f, 2), ==, "");

        /* a call, its reply, a signal: in delivery order */
        g_assert_cmpint(send_msg(f, 0, &(Send){ .destination = NAME(f, 1), .path = "/",
                                               .member = "Echo" }, "s", "x"), ==, 0);
        g_assert_cmpint(send_msg(f, 1, &(Send){ .type = WIRE_MSG_METHOD_RETURN,
                                               .destination = NAME(f, 0),
                                               .reply_serial = f->serial[0] }, "s", "y"), ==, 0);
        g_assert_cmpint(send_msg(f, 1, &(Send){ .type = WIRE_MSG_SIGNAL, .path = "/",
                                               .interface = "t.I", .member = "Sig" }, NULL),
                        ==, 0);
        g_assert_cmpstr(next_line(f, 2), ==, fmt("1 %s>%s Echo x", NAME(f, 0), NAME(f, 1)));
        g_assert_cmpstr(next_line(f, 2), ==, fmt("2 %s>%s - y", NAME(f, 1), NAME(f, 0)));
        g_assert_cmpstr(next_line(f, 2), ==, fmt("4 %s>- Sig ", NAME(f, 1)));
        g_assert_cmpstr(next_line(f, 2), ==, "");

        /* a newcomer: Hello from its new name, the reply, NameOwnerChanged, NameAcquired */
        f->c[1] = bridge_conn_unref(f->c[1]);   /* leaves: NameLost to it, NameOwnerChanged */
        g_assert_cmpstr(next_line(f, 2), ==,
                        fmt("4 org.freedesktop.DBus>:1.1 NameLost :1.1"));
        g_assert_cmpstr(next_line(f, 2), ==,
                        fmt("4 org.freedesktop.DBus>- NameOwnerChanged :1.1 :1.1 "));
        g_assert_cmpstr(next_line(f, 2), ==, "");
        f->c[1] = new_conn(f, 1, BRIDGE_CONN_ACCEPT_FDS);
        f->serial[1] = 0;
        hello(f, 1);
        g_assert_cmpstr(next_line(f, 2), ==, "1 :1.3>org.freedesktop.DBus Hello ");
        g_assert_cmpstr(next_line(f, 2), ==, "2 org.freedesktop.DBus>:1.3 - :1.3");
        g_assert_cmpstr(next_line(f, 2), ==,
                        "4 org.freedesktop.DBus>- NameOwnerChanged :1.3  :1.3");
        g_assert_cmpstr(next_line(f, 2), ==, "4 org.freedesktop.DBus>:1.3 NameAcquired :1.3");
        g_assert_cmpstr(next_line(f, 2), ==, "");
}

static void test_rules_and_cannot_send(Fixture *f, gconstpointer data) {
        static const char *const rules[] = { "type='signal',member='Keep'",
                                             "eavesdrop='false',member='Call'", NULL };

        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);
        hello_privileged(f);
        g_assert_cmpint(become_monitor(f, 2, rules, 0), ==, 0);
        drain(f, 2);

        g_assert_cmpint(send_msg(f, 0, &(Send){ .type = WIRE_MSG_SIGNAL, .path = "/",
                                               .interface = "t.I", .member = "Drop" }, NULL),
                        ==, 0);
        g_assert_cmpint(send_msg(f, 0, &(Send){ .type = WIRE_MSG_SIGNAL, .path = "/",
                                               .interface = "t.I", .member = "Keep" }, NULL),
                        ==, 0);
        /* eavesdrop='false' does not hide unicasts from a monitor */
        g_assert_cmpint(send_msg(f, 0, &(Send){ .destination = NAME(f, 1), .path = "/",
                                               .member = "Call" }, NULL), ==, 0);
        g_assert_cmpstr(next_line(f, 2), ==, fmt("4 %s>- Keep ", NAME(f, 0)));
        g_assert_cmpstr(next_line(f, 2), ==, fmt("1 %s>%s Call ", NAME(f, 0), NAME(f, 1)));
        g_assert_cmpstr(next_line(f, 2), ==, "");

        /* anything a monitor sends gets it dropped */
        g_assert_cmpint(call_driver(f, 2, "GetId", NULL), ==, DRIVER_E_DISCONNECT);
        g_assert_cmpint(send_msg(f, 2, &(Send){ .type = WIRE_MSG_SIGNAL, .path = "/",
                                               .interface = "t.I", .member = "Keep" }, NULL),
                        ==, DRIVER_E_DISCONNECT);
        assert_empty(f, 0);
        g_assert_cmpstr(next_line(f, 1), ==, fmt("1 %s>%s Call ", NAME(f, 0), NAME(f, 1)));
        assert_empty(f, 1);
}

static void test_off_driver_path(Fixture *f, gconstpointer data) {
        hello_privileged(f);
        g_assert_cmpint(send_msg(f, 2, &(Send){ .destination = "org.freedesktop.DBus",
                                               .path = "/",
                                               .interface = "org.freedesktop.DBus.Monitoring",
                                               .member = "BecomeMonitor" }, NULL), ==, 0);
        expect_error(f, 2, "org.freedesktop.DBus.Error.UnknownInterface",
                     "org.freedesktop.DBus does not understand message BecomeMonitor");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/compat/driver-monitor/" name, Fixture, NULL, setup, fn, teardown)
        T("not-privileged", test_not_privileged);
        T("bad-arguments", test_bad_arguments);
        T("sequence-and-view", test_sequence_and_view);
        T("rules-and-cannot-send", test_rules_and_cannot_send);
        T("off-driver-path", test_off_driver_path);
        return g_test_run();
}
