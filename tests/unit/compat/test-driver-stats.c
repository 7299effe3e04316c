/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Debug.Stats through the driver on the real core: dbus-daemon 1.14.10's keys, types and
 * errors, and values that follow what happens on the bus.
 */
#include "bridge/bus.h"
#include "bridge/endpoint.h"
#include "driver-fixture.h"

#define STATS "org.freedesktop.DBus.Debug.Stats"

static int call_stats(Fixture *f, unsigned i, const char *member, const char *arg) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = STATS, .member = member };

        return arg ? send_msg(f, i, &s, "s", arg) : send_msg(f, i, &s, NULL);
}

/* Pop conn @i's reply (a{sv} or a{sas}) as "key=value;..." in wire order. */
static char *pop_dict(Fixture *f, unsigned i, const char *sig) {
        BridgeMsg *m = bridge_conn_queue_peek(f->c[i]);
        GString *s = g_string_new(NULL);
        WireReader r;

        g_assert_nonnull(m);
        if (m->hdr.type != WIRE_MSG_METHOD_RETURN)
                g_error("expected a reply, got %s", m->hdr.error_name ?: m->hdr.member);
        g_assert_cmpstr(m->hdr.signature, ==, sig);
        wire_reader_init(&r, m->data, &m->hdr);
        g_assert_cmpint(wire_reader_enter(&r, 'a', NULL), ==, 0);
        while (wire_reader_peek(&r)) {
                const char *key, *v;
                uint32_t u;
                char t;

                g_assert_cmpint(wire_reader_enter(&r, '{', NULL), ==, 0);
                g_assert_cmpint(wire_reader_read_basic(&r, 's', &key), ==, 0);
                g_string_append_printf(s, "%s=", key);
                t = wire_reader_peek(&r);
                g_assert_cmpint(wire_reader_enter(&r, t, NULL), ==, 0);
                while ((t = wire_reader_peek(&r))) {
                        if (t == 'u') {
                                g_assert_cmpint(wire_reader_read_basic(&r, 'u', &u), ==, 0);
                                g_string_append_printf(s, "%u", u);
                        } else {
                                g_assert_cmpint(wire_reader_read_basic(&r, 's', &v), ==, 0);
                                g_string_append_printf(s, "[%s]", v);
                        }
                }
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                g_string_append_c(s, ';');
        }
        bridge_conn_queue_pop(f->c[i]);
        return g_string_free(s, FALSE);
}

static unsigned value_of(const char *dict, const char *key) {
        const char *p = strstr(dict, fmt(";%s=", key));

        if (!p && g_str_has_prefix(dict, fmt("%s=", key)))
                p = dict - 1;
        g_assert_nonnull(p);
        return (unsigned)strtoul(p + strlen(key) + 2, NULL, 10);
}

static void test_get_stats(Fixture *f, gconstpointer data) {
        char *d;

        hello(f, 0);
        drain(f, 0);
        g_assert_cmpint(call_stats(f, 0, "GetStats", NULL), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        /* dbus-daemon's keys, in its order */
        g_assert_true(g_regex_match_simple(
                "^Serial=0;ListMemPoolUsedBytes=[0-9]+;ListMemPoolCachedBytes=[0-9]+;"
                "ListMemPoolAllocatedBytes=[0-9]+;ActiveConnections=1;IncompleteConnections=2;"
                "MatchRules=0;PeakMatchRules=0;PeakMatchRulesPerConnection=0;BusNames=1;"
                "PeakBusNames=1;PeakBusNamesPerConnection=1;$", d, 0, 0));
        g_free(d);

        hello(f, 1);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "type='signal'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "member='X'"), ==, 0);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "member='Y'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "com.example.A", 0u), ==, 0);
        /* queued owners count too (dbus-daemon 1.14.10: 2 peers, one name, one queued: 4) */
        g_assert_cmpint(call_driver(f, 0, "RequestName", "su", "com.example.A", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RemoveMatch", "s", "member='X'"), ==, 0);
        drain(f, 0);
        drain(f, 1);
        g_assert_cmpint(call_stats(f, 0, "GetStats", NULL), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        g_assert_cmpuint(value_of(d, "Serial"), ==, 1);
        g_assert_cmpuint(value_of(d, "ActiveConnections"), ==, 2);
        g_assert_cmpuint(value_of(d, "IncompleteConnections"), ==, 1);
        g_assert_cmpuint(value_of(d, "MatchRules"), ==, 2);
        g_assert_cmpuint(value_of(d, "PeakMatchRules"), ==, 3);
        g_assert_cmpuint(value_of(d, "PeakMatchRulesPerConnection"), ==, 2);
        g_assert_cmpuint(value_of(d, "BusNames"), ==, 4);
        g_assert_cmpuint(value_of(d, "PeakBusNames"), ==, 4);
        g_assert_cmpuint(value_of(d, "PeakBusNamesPerConnection"), ==, 2);
        g_free(d);

        /* a connection leaves: current values drop, peaks stay */
        bridge_conn_disconnect(f->c[1]);
        drain(f, 0);
        g_assert_cmpint(call_stats(f, 0, "GetStats", NULL), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        g_assert_cmpuint(value_of(d, "ActiveConnections"), ==, 1);
        g_assert_cmpuint(value_of(d, "MatchRules"), ==, 1);
        g_assert_cmpuint(value_of(d, "PeakMatchRules"), ==, 3);
        /* conn 0 inherited com.example.A from its queue */
        g_assert_cmpuint(value_of(d, "BusNames"), ==, 2);
        g_assert_cmpuint(value_of(d, "PeakBusNames"), ==, 4);
        g_free(d);
}

static void test_connection_stats(Fixture *f, gconstpointer data) {
        char *d;
        unsigned i;

        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "com.example.B", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "member='Z'"), ==, 0);
        /* three unread messages for conn 1 (its two replies are read below) */
        drain(f, 1);
        for (i = 0; i < 3; ++i)
                g_assert_cmpint(send_msg(f, 0, &(Send){ .type = WIRE_MSG_SIGNAL,
                                                       .destination = NAME(f, 1), .path = "/",
                                                       .interface = "t.I", .member = "S" },
                                         "s", "payload"), ==, 0);

        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", "com.example.B"), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        g_assert_true(g_regex_match_simple(
                "^Serial=0;MatchRules=1;PeakMatchRules=1;BusNames=2;PeakBusNames=2;"
                "UniqueName=\\[:1.1\\];IncomingMessages=0;IncomingBytes=0;IncomingFDs=0;"
                "PeakIncomingBytes=[1-9][0-9]*;PeakIncomingFDs=0;OutgoingMessages=3;"
                "OutgoingBytes=[1-9][0-9]*;OutgoingFDs=0;PeakOutgoingBytes=[1-9][0-9]*;"
                "PeakOutgoingFDs=0;$", d, 0, 0));
        g_assert_cmpuint(value_of(d, "OutgoingBytes"), ==, f->c[1]->queued_bytes);
        g_free(d);

        /* about itself: the call being handled is what it has incoming; Serial counts */
        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", NAME(f, 0)), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        g_assert_cmpuint(value_of(d, "Serial"), ==, 1);
        g_assert_cmpuint(value_of(d, "IncomingBytes"), >, 0);
        g_assert_cmpuint(value_of(d, "PeakIncomingBytes"), >=, value_of(d, "IncomingBytes"));
        g_free(d);

        drain(f, 1);
        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", NAME(f, 1)), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        g_assert_cmpuint(value_of(d, "OutgoingMessages"), ==, 0);
        g_assert_cmpuint(value_of(d, "OutgoingBytes"), ==, 0);
        g_assert_cmpuint(value_of(d, "PeakOutgoingBytes"), >, 0);
        g_free(d);

        /* errors, as dbus-daemon words them; they do not count */
        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", "org.freedesktop.DBus"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "GetConnectionStats is not meaningful for the message bus "
                     "\"org.freedesktop.DBus\" itself");
        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", "com.example.None"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get statistics of name 'com.example.None': no such name");
        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", "!!"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get statistics of name '!!': no such name");
        g_assert_cmpint(call_stats(f, 0, "GetConnectionStats", NAME(f, 0)), ==, 0);
        d = pop_dict(f, 0, "a{sv}");
        g_assert_cmpuint(value_of(d, "Serial"), ==, 3);
        g_free(d);
        g_assert_cmpint(call_stats(f, 0, "GetStats", "x"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Call to GetStats has wrong args (s, expected )\n");
}

static void test_all_match_rules(Fixture *f, gconstpointer data) {
        char *d;

        hello(f, 0);
        hello(f, 1);
        /* eavesdrop='true' is for root and the bus's user only (dbus-daemon 1.14) */
        f->c[1]->creds.uid = getuid();
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s",
                                    "member='M',type='signal',arg1path='/a/',arg0namespace='x.y',"
                                    "sender='a.b',eavesdrop='true',path_namespace='/p',"
                                    "destination=':1.4',interface='i.f',arg3='z'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "type='error'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "path='/x',arg2='it''s'"), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "eavesdrop='false'"), ==, 0);
        drain(f, 0);
        g_assert_cmpint(call_stats(f, 0, "GetAllMatchRules", NULL), ==, 0);
        d = pop_dict(f, 0, "a{sas}");
        /* dbus-daemon 1.14.10's answer for the same rules: by type, canonical key order */
        g_assert_cmpstr(d, ==,
                        ":1.0=;:1.1=[path='/x',arg2='its'][][type='error']"
                        "[type='signal',interface='i.f',member='M',path_namespace='/p',"
                        "sender='a.b',destination=':1.4',eavesdrop='true',"
                        "arg0namespace='x.y',arg1path='/a/',arg3='z'];");
        g_free(d);
}

/* Through a custom endpoint the statistics would count peers, names and rules the sandbox
 * must not know of: every Debug.Stats method and ReloadConfig are AccessDenied there, as
 * xdg-dbus-proxy answers them, whatever the endpoint's policy shows. */
static void test_through_endpoint(Fixture *f, gconstpointer data) {
        static const char *const stats[] = { "GetStats", "GetConnectionStats",
                                             "GetAllMatchRules" };
        BusEndpoint *ep = NULL;
        unsigned i;

        g_assert_cmpint(bus_endpoint_new(f->bus, 1002, "1002-sandbox", &ep), ==, 0);
        bridge_conn_set_endpoint(f->c[2], ep);
        hello(f, 0);
        drain(f, 0);
        hello(f, 2);
        drain(f, 2);
        for (i = 0; i < ELEMENTSOF(stats); ++i) {
                g_assert_cmpint(call_stats(f, 2, stats[i], i == 1 ? NAME(f, 2) : NULL), ==, 0);
                expect_error(f, 2, "org.freedesktop.DBus.Error.AccessDenied",
                             fmt("org.freedesktop.DBus.Debug.Stats.%s tells about the whole bus "
                                 "and is not available to connection %s through custom "
                                 "endpoint \"1002-sandbox\"", stats[i], NAME(f, 2)));
        }
        g_assert_cmpint(call_driver(f, 2, "ReloadConfig", NULL), ==, 0);
        expect_error(f, 2, "org.freedesktop.DBus.Error.AccessDenied", NULL);
        assert_empty(f, 2);
        /* off the endpoint they answer */
        g_assert_cmpint(call_stats(f, 0, "GetStats", NULL), ==, 0);
        g_free(pop_dict(f, 0, "a{sv}"));
        bus_endpoint_close(ep);
        bus_endpoint_unref(ep);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/compat/driver-stats/" name, Fixture, NULL, setup, fn, teardown)
        T("get-stats", test_get_stats);
        T("connection-stats", test_connection_stats);
        T("all-match-rules", test_all_match_rules);
        T("through-endpoint", test_through_endpoint);
        return g_test_run();
}
