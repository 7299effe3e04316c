/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exact match-rule semantics. The verdicts marked "dbus-daemon" were observed on
 * dbus-daemon 1.14.10 with dbus-python (signals from one peer to another that had added
 * the rule): path_namespace='/a' gets /a and /a/b but not /ab; arg0namespace='x.y' gets
 * x.y and x.y.z but not x.yz or x; arg0path='/aa/' gets '/aa/', '/aa/b' and '/' but not
 * '/aa' or '/aab'; arg0path='/aa/b' gets '/aa/', '/aa/b', '/' but not '/aa' or
 * '/aa/b/c'; arg0path matches an o argument, arg0 does not.
 */
#include "tests/unit/bridge/fixture.h"

static bool matches(Fixture *f, const BridgeMatchKeys *k, BridgeConn *sender, const TestMsg *t) {
        BridgeMatchRule *rule = NULL;
        BridgeMsg *m = test_msg_new(sender, t);
        WireArgs args;
        bool r;

        g_assert_cmpint(bridge_match_rule_new(k, &rule), ==, 0);
        rule->owner = f->c[2];          /* resolves names on this bus, not linked */
        g_assert_cmpint(wire_message_get_args(m->data, &m->hdr, &args), ==, 0);
        r = bridge_match_rule_matches(rule, m, sender, &args);
        /* and never a false negative of the prefilter */
        g_assert_cmpint(bridge_msg_compute_bloom(m, &bloom_params_default), ==, 0);
        if (r)
                g_assert_true(bridge_match_rule_mask_in(rule, bridge_msg_bloom(m),
                                                        BUS_BLOOM_WORDS));
        rule->owner = NULL;
        bridge_match_rule_free(rule);
        bridge_msg_unref(m);
        return r;
}

static void setup3(Fixture *f, gconstpointer ctx) {
        unsigned i;

        fixture_setup(f, ctx);
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
}

#define SIG(...) (&(TestMsg){ .type = WIRE_MSG_SIGNAL, __VA_ARGS__ })

static void test_header_keys(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = f->c[0];

        g_assert_true(matches(f, &(BridgeMatchKeys){ 0 }, a, SIG(.member = "M")));
        g_assert_true(matches(f, &(BridgeMatchKeys){ .type = WIRE_MSG_SIGNAL }, a, SIG()));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .type = WIRE_MSG_METHOD_CALL }, a, SIG()));
        g_assert_true(matches(f, &(BridgeMatchKeys){ .interface = "t.I", .member = "M" }, a,
                              SIG(.interface = "t.I", .member = "M")));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .interface = "t.I" }, a,
                               SIG(.interface = "t.J")));
        /* a key the message lacks fails */
        g_assert_false(matches(f, &(BridgeMatchKeys){ .interface = "t.I" }, a,
                               &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .destination = ":1.1" }));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .member = "M" }, a,
                               &(TestMsg){ .type = WIRE_MSG_ERROR, .destination = ":1.1",
                                           .reply_serial = 1 }));
        g_assert_true(matches(f, &(BridgeMatchKeys){ .path = "/a/b" }, a, SIG(.path = "/a/b")));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .path = "/a" }, a, SIG(.path = "/a/b")));
}

static void test_path_namespace(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .path_namespace = "/a" };
        BridgeMatchKeys root = { .path_namespace = "/" };
        BridgeConn *a = f->c[0];

        /* dbus-daemon */
        g_assert_true(matches(f, &k, a, SIG(.path = "/a")));
        g_assert_true(matches(f, &k, a, SIG(.path = "/a/b")));
        g_assert_false(matches(f, &k, a, SIG(.path = "/ab")));
        g_assert_false(matches(f, &k, a, SIG(.path = "/")));
        g_assert_true(matches(f, &root, a, SIG(.path = "/")));
        g_assert_true(matches(f, &root, a, SIG(.path = "/x/y")));
        g_assert_false(matches(f, &root, a, &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                        .destination = ":1.1", .reply_serial = 1 }));
}

static void test_sender(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = f->c[0], *b = f->c[1];

        g_assert_true(matches(f, &(BridgeMatchKeys){ .sender = ":1.0" }, a, SIG()));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .sender = ":1.1" }, a, SIG()));
        /* a well-known name: only while the sender is its primary owner */
        g_assert_false(matches(f, &(BridgeMatchKeys){ .sender = "t.svc" }, a, SIG()));
        g_assert_cmpint(bridge_name_acquire(a, "t.svc", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(b, "t.svc", 0), ==, NAME_E_IN_QUEUE);
        g_assert_true(matches(f, &(BridgeMatchKeys){ .sender = "t.svc" }, a, SIG()));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .sender = "t.svc" }, b, SIG()));
        g_assert_cmpint(bridge_name_release(a, "t.svc"), ==, 0);
        g_assert_false(matches(f, &(BridgeMatchKeys){ .sender = "t.svc" }, a, SIG()));
        g_assert_true(matches(f, &(BridgeMatchKeys){ .sender = "t.svc" }, b, SIG()));
        /* the bus */
        g_assert_true(matches(f, &(BridgeMatchKeys){ .sender = "org.freedesktop.DBus" }, NULL,
                              SIG()));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .sender = "org.freedesktop.DBus" }, a,
                               SIG()));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .sender = ":1.0" }, NULL, SIG()));
}

static void test_destination(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = f->c[0];

        g_assert_true(matches(f, &(BridgeMatchKeys){ .destination = ":1.1" }, a,
                              SIG(.destination = ":1.1")));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .destination = ":1.1" }, a,
                               SIG(.destination = ":1.2")));
        g_assert_false(matches(f, &(BridgeMatchKeys){ .destination = ":1.1" }, a, SIG()));
        /* names of the same addressed connection */
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.dst", 0), ==, 0);
        g_assert_true(matches(f, &(BridgeMatchKeys){ .destination = ":1.1" }, a,
                              SIG(.destination = "t.dst")));
        g_assert_true(matches(f, &(BridgeMatchKeys){ .destination = "t.dst" }, a,
                              SIG(.destination = ":1.1")));
}

static void test_args(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { 0 };
        BridgeConn *a = f->c[0];

        k.arg_kind[0] = BRIDGE_MATCH_ARG_STRING;
        k.arg[0] = "x";
        g_assert_true(matches(f, &k, a, SIG(.args = { "x" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "y" })));
        g_assert_false(matches(f, &k, a, SIG()));
        g_assert_false(matches(f, &k, a, SIG(.args = { "o:/x" })));
        k.arg[0] = "/aa/b";     /* dbus-daemon: arg0 does not match an o */
        g_assert_false(matches(f, &k, a, SIG(.args = { "o:/aa/b" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "/aa/b" })));

        k = (BridgeMatchKeys){ 0 };
        k.arg_kind[2] = BRIDGE_MATCH_ARG_STRING;
        k.arg[2] = "z";
        g_assert_true(matches(f, &k, a, SIG(.args = { "x", "u:", "z" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "x", "z" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "x", "u:", "u:" })));
        k.arg_kind[1] = BRIDGE_MATCH_ARG_STRING;
        k.arg[1] = "y";
        g_assert_true(matches(f, &k, a, SIG(.args = { "x", "y", "z" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "x", "u:", "z" })));
}

static void test_arg_path(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { 0 };
        BridgeConn *a = f->c[0];

        k.arg_kind[0] = BRIDGE_MATCH_ARG_PATH;
        k.arg[0] = "/aa/";      /* dbus-daemon */
        g_assert_true(matches(f, &k, a, SIG(.args = { "/aa/" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "/aa/b" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "/" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "/aa" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "/aab" })));
        k.arg[0] = "/aa/b";     /* dbus-daemon */
        g_assert_true(matches(f, &k, a, SIG(.args = { "/aa/" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "/aa/b" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "/" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "/aa" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "/aa/b/c" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "o:/aa/b" })));      /* dbus-daemon */
        g_assert_false(matches(f, &k, a, SIG(.args = { "u:" })));
        g_assert_false(matches(f, &k, a, SIG()));
        k.arg_kind[0] = 0;
        k.arg_kind[1] = BRIDGE_MATCH_ARG_PATH;
        k.arg[1] = "/";
        g_assert_true(matches(f, &k, a, SIG(.args = { "u:", "o:/any/thing" })));
}

static void test_arg0namespace(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .arg0namespace = "x.y" };
        BridgeConn *a = f->c[0];

        /* dbus-daemon */
        g_assert_true(matches(f, &k, a, SIG(.args = { "x.y" })));
        g_assert_true(matches(f, &k, a, SIG(.args = { "x.y.z" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "x.yz" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "x" })));
        g_assert_false(matches(f, &k, a, SIG(.args = { "u:" })));
        g_assert_false(matches(f, &k, a, SIG()));
}

static void test_keys_equal(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys a = { .type = WIRE_MSG_SIGNAL, .member = "M" }, b = a;
        BridgeMatchRule *rule = NULL;
        char member[] = "M";

        b.member = member;      /* compares strings, not pointers */
        g_assert_true(bridge_match_keys_equal(&a, &b));
        b.eavesdrop = true;
        g_assert_false(bridge_match_keys_equal(&a, &b));
        b.eavesdrop = false;
        b.arg_kind[3] = BRIDGE_MATCH_ARG_STRING;
        b.arg[3] = "v";
        g_assert_false(bridge_match_keys_equal(&a, &b));
        a.arg_kind[3] = BRIDGE_MATCH_ARG_PATH;
        a.arg[3] = "v";
        g_assert_false(bridge_match_keys_equal(&a, &b));
        a.arg_kind[3] = BRIDGE_MATCH_ARG_STRING;
        g_assert_true(bridge_match_keys_equal(&a, &b));
        b.path = "/";
        g_assert_false(bridge_match_keys_equal(&a, &b));

        /* the rule holds its own copy */
        g_assert_cmpint(bridge_match_rule_new(&a, &rule), ==, 0);
        member[0] = 'N';
        g_assert_cmpstr(rule->keys.member, ==, "M");
        g_assert_cmpstr(rule->keys.arg[3], ==, "v");
        g_assert_true(bridge_match_keys_equal(&rule->keys, &a));
        bridge_match_rule_free(rule);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/match/header-keys", Fixture, NULL, setup3, test_header_keys,
                   fixture_teardown);
        g_test_add("/bridge/match/path-namespace", Fixture, NULL, setup3, test_path_namespace,
                   fixture_teardown);
        g_test_add("/bridge/match/sender", Fixture, NULL, setup3, test_sender, fixture_teardown);
        g_test_add("/bridge/match/destination", Fixture, NULL, setup3, test_destination,
                   fixture_teardown);
        g_test_add("/bridge/match/args", Fixture, NULL, setup3, test_args, fixture_teardown);
        g_test_add("/bridge/match/arg-path", Fixture, NULL, setup3, test_arg_path,
                   fixture_teardown);
        g_test_add("/bridge/match/arg0namespace", Fixture, NULL, setup3, test_arg0namespace,
                   fixture_teardown);
        g_test_add("/bridge/match/keys-equal", Fixture, NULL, setup3, test_keys_equal,
                   fixture_teardown);
        return g_test_run();
}
