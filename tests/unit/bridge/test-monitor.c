/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bridge/monitor: what a monitor sees (calls, replies, errors, signals, messages the core
 * refuses, messages of the bus), in delivery order; its rules filter; it cannot send; it
 * cannot be addressed; its names go when it becomes one; it leaves cleanly.
 */
#include <stdlib.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "bridge/names.h"
#include "fixture.h"

static BridgeMatchRule *rule_new(const BridgeMatchKeys *keys) {
        BridgeMatchRule *rule = NULL;

        g_assert_cmpint(bridge_match_rule_new(keys, &rule), ==, 0);
        return rule;
}

/* Everything the monitor (conn 2) has, as "type:member-or-error;" */
static char *drain_log(BridgeConn *c) {
        GString *s = g_string_new(NULL);
        BridgeMsg *m;

        while ((m = bridge_conn_queue_peek(c))) {
                g_string_append_printf(s, "%u:%s;", m->hdr.type,
                                       m->hdr.member ? m->hdr.member :
                                       m->hdr.error_name ? m->hdr.error_name : "-");
                bridge_conn_queue_pop(c);
        }
        return g_string_free(s, FALSE);
}

static void become_monitor_all(Fixture *f, unsigned i) {
        g_assert_cmpint(bridge_conn_become_monitor(f->c[i], NULL, 0), ==, 0);
        g_assert_true(bridge_conn_is_monitor(f->c[i]));
}

static void test_sees_everything_in_order(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(f, 0), *b = fixture_conn(f, 1), *mon = fixture_conn(f, 2);
        BridgeMsg *sig;
        char *log;

        become_monitor_all(f, 2);
        g_assert_cmpuint(bus_monitor_count(f->bus), ==, 1);
        fixture_log_reset(f);

        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 5,
                                                 .destination = b->unique_name,
                                                 .member = "Call" }), ==, 0);
        g_assert_cmpint(test_send(b, &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN, .serial = 9,
                                                 .reply_serial = 5,
                                                 .destination = a->unique_name }), ==, 0);
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 6,
                                                 .destination = b->unique_name,
                                                 .member = "Fail" }), ==, 0);
        g_assert_cmpint(test_send(b, &(TestMsg){ .type = WIRE_MSG_ERROR, .serial = 10,
                                                 .reply_serial = 6, .error_name = "t.Bad",
                                                 .destination = a->unique_name }), ==, 0);
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "Sig" }),
                        ==, 0);
        /* refused by routing: the monitor still sees it (dbus-daemon does) */
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                 .destination = "com.example.Nobody",
                                                 .member = "Lost" }), ==,
                        BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                 .reply_serial = 77,
                                                 .destination = b->unique_name }), ==,
                        BRIDGE_E_REPLY_UNEXPECTED);
        /* a method call without destination is not routed in dbus-daemon: not seen */
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                 .member = "NoDest" }), ==, 0);
        /* a broadcast of the bus */
        sig = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "BusSig" });
        g_assert_cmpint(bus_broadcast(f->bus, sig), ==, 0);
        bridge_msg_unref(sig);

        log = drain_log(mon);
        g_assert_cmpstr(log, ==, "1:Call;2:-;1:Fail;3:t.Bad;4:Sig;1:Lost;2:-;4:BusSig;");
        g_free(log);
        /* the real receivers got theirs too, once */
        g_assert_cmpstr(test_pop(b, NULL), ==, "Call");
        g_assert_cmpstr(test_pop(a, NULL), ==, "(reply)");
}

static void test_rules_filter(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(f, 0), *b = fixture_conn(f, 1), *mon = fixture_conn(f, 2);
        BridgeMatchRule *rules[2];
        char *log;

        rules[0] = rule_new(&(BridgeMatchKeys){ .type = WIRE_MSG_SIGNAL, .member = "Keep" });
        rules[1] = rule_new(&(BridgeMatchKeys){ .type = WIRE_MSG_METHOD_CALL,
                                                .destination = b->unique_name });
        g_assert_cmpint(bridge_conn_become_monitor(mon, rules, 2), ==, 0);
        g_assert_null(rules[0]);
        g_assert_cmpuint(mon->n_matches, ==, 2);
        /* monitor rules count as match rules (Debug.Stats), not as eavesdrop rules */
        g_assert_cmpuint(f->bus->n_match_rules, ==, 2);
        g_assert_cmpuint(f->bus->n_eavesdrop_rules, ==, 0);

        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "Drop" }), ==, 0);
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "Keep" }), ==, 0);
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 3,
                                                 .destination = b->unique_name,
                                                 .member = "ToB" }), ==, 0);
        g_assert_cmpint(test_send(b, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 3,
                                                 .destination = a->unique_name,
                                                 .member = "ToA" }), ==, 0);
        g_assert_cmpint(test_send(b, &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                 .reply_serial = 3,
                                                 .destination = a->unique_name }), ==, 0);
        log = drain_log(mon);
        g_assert_cmpstr(log, ==, "4:Keep;1:ToB;");
        g_free(log);
}

static void test_cannot_send_nor_be_addressed(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(f, 0), *mon = fixture_conn(f, 2);
        char name[32], *expected;
        char *log;

        g_assert_cmpint(bridge_name_acquire(mon, "com.example.Mon", 0), ==, 0);
        g_snprintf(name, sizeof(name), "%s", mon->unique_name);
        fixture_log_reset(f);
        become_monitor_all(f, 2);
        /* unique name first, then the well-known names; reported as name changes */
        expected = g_strdup_printf("name %s %s>-;name com.example.Mon %s>-;", name, name, name);
        assert_log(f, expected);
        g_free(expected);
        g_assert_true(list_is_empty(&mon->owned));
        g_assert_null(bus_find_conn(f->bus, mon->id));
        g_assert_null(bus_find_conn_by_name(f->bus, name));
        g_assert_null(bus_find_conn_by_name(f->bus, "com.example.Mon"));

        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                 .destination = name }), ==,
                        BRIDGE_E_PEER_UNKNOWN);
        g_assert_cmpint(test_send(mon, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "X" }), ==,
                        BRIDGE_E_NOT_ACTIVE);
        g_assert_cmpint(bridge_conn_become_monitor(mon, NULL, 0), ==, BRIDGE_E_NOT_ACTIVE);
        /* it saw the refused call of a (not its own signal: that never entered the bus) */
        log = drain_log(mon);
        g_assert_cmpstr(log, ==, "1:M;");
        g_free(log);

        /* leaving: no second report of its unique name, and it is out of the monitor list */
        bridge_conn_disconnect(mon);
        assert_log(f, "");
        g_assert_cmpuint(bus_monitor_count(f->bus), ==, 0);
}

static void test_old_rules_and_replies_go(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(f, 0), *mon = fixture_conn(f, 2);
        BridgeMatchRule *rule = rule_new(&(BridgeMatchKeys){ .eavesdrop = true });

        g_assert_cmpint(bridge_conn_add_match(mon, rule), ==, 0);
        g_assert_cmpuint(f->bus->n_match_rules, ==, 1);
        g_assert_cmpuint(f->bus->n_eavesdrop_rules, ==, 1);
        /* a waits for a reply from mon */
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 4,
                                                 .destination = mon->unique_name }), ==, 0);
        fixture_log_reset(f);
        become_monitor_all(f, 2);
        g_assert_cmpuint(f->bus->n_match_rules, ==, 0);         /* no rule: everything */
        g_assert_cmpuint(f->bus->n_eavesdrop_rules, ==, 0);
        g_assert_true(list_is_empty(&mon->replies_in));
        /* names first, then the callers' NoReply (dbus-daemon's order) */
        assert_log(f, "name :1.1 :1.1>-;lost :1.0 4 gone :1.1;");
        g_assert_cmpuint(f->bus->peak_match_rules, ==, 1);
}

static void test_quota_and_kick(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = fixture_conn(f, 0), *mon = fixture_conn(f, 2);
        BridgeMatchRule **rules;
        size_t i, n = f->bus->limits.max_match_rules_per_connection + 1;

        rules = g_new0(BridgeMatchRule *, n);
        for (i = 0; i < n; ++i)
                rules[i] = rule_new(&(BridgeMatchKeys){ .member = "M" });
        g_assert_cmpint(bridge_conn_become_monitor(mon, rules, n), ==, BRIDGE_E_MATCH_QUOTA);
        for (i = 0; i < n; ++i)
                g_assert_null(rules[i]);
        g_free(rules);
        g_assert_false(bridge_conn_is_monitor(mon));

        /* a monitor that does not read is dropped, not silently skipped */
        become_monitor_all(f, 2);
        f->bus->limits.max_outgoing_bytes = 1;
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_SIGNAL }), ==, 0);
        g_assert_cmpint(test_send(a, &(TestMsg){ .type = WIRE_MSG_SIGNAL }), ==, 0);
        g_assert_cmpuint(f->t[2].n_kick, >=, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/bridge/monitor/" name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        T("sees-everything-in-order", test_sees_everything_in_order);
        T("rules-filter", test_rules_filter);
        T("cannot-send-nor-be-addressed", test_cannot_send_nor_be_addressed);
        T("old-rules-and-replies-go", test_old_rules_and_replies_go);
        T("quota-and-kick", test_quota_and_kick);
        return g_test_run();
}
