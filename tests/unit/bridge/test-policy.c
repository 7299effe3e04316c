/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bridge/policy: evaluation order (default, group, user, at_console, mandatory; last match
 * wins), every attribute, wildcards, requested replies, eavesdropping, own and connect
 * rules, the AccessDenied texts, the routing hooks, and reload. The expected decisions are
 * dbus-daemon 1.14.10's (checked by running it with the same rules; see bridge/policy.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "bridge/monitor.h"
#include "bridge/policy.h"
#include "fixture.h"

#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Woverride-init"
#pragma GCC diagnostic ignored "-Winitializer-overrides"

/* Rules as the compiler makes them: requested_reply defaults to true for allow. */
#define ALLOW(...) ((PolicyRuleSpec){ .allow = true, .requested_reply = true, \
                                      .max_fds = UINT32_MAX, __VA_ARGS__ })
#define DENY(...) ((PolicyRuleSpec){ .allow = false, .requested_reply = false, \
                                     .max_fds = UINT32_MAX, __VA_ARGS__ })
#define SEND .kind = POLICY_RULE_SEND
#define RECV .kind = POLICY_RULE_RECEIVE
#define OWN .kind = POLICY_RULE_OWN

typedef struct PFixture {
        Fixture f;
        PolicyDb *db;
} PFixture;

static void pf_setup(PFixture *pf, gconstpointer ctx) {
        fixture_setup(&pf->f, ctx);
        g_assert_cmpint(policy_db_new(&pf->db), ==, 0);
}

static void pf_teardown(PFixture *pf, gconstpointer ctx) {
        pf->db = policy_db_unref(pf->db);
        fixture_teardown(&pf->f, ctx);
}

static void add(PFixture *pf, PolicyContext c, uint32_t id, PolicyRuleSpec spec) {
        g_assert_cmpint(policy_db_add_rule(pf->db, c, id, &spec), ==, 0);
}

static void add_default(PFixture *pf, PolicyRuleSpec spec) {
        add(pf, POLICY_CONTEXT_DEFAULT, 0, spec);
}

/* Seal the db, install it, and give connection @i a snapshot (@gids, @console). */
static void attach_ex(PFixture *pf, unsigned i, const gid_t *gids, size_t n_gids,
                      bool console) {
        PolicySnapshot *s = NULL;
        PolicyPeer peer = {
                .uid = pf->f.c[i]->creds.uid, .gids = gids, .n_gids = n_gids,
                .at_console = console, .pid = 4242, .comm = "test-comm",
        };

        g_assert_cmpint(policy_db_seal(pf->db), ==, 0);
        if (pf->f.bus->policy != pf->db)
                g_assert_cmpint(bus_set_policy(pf->f.bus, pf->db), ==, 0);
        g_assert_cmpint(policy_snapshot_new(pf->db, &peer, &s), ==, 0);
        bridge_conn_set_policy(pf->f.c[i], s);
}

static void attach(PFixture *pf, unsigned i) {
        attach_ex(pf, i, NULL, 0, false);
}

/* Connections 0..n-1, each with a snapshot. */
static void conns(PFixture *pf, unsigned n) {
        unsigned i;

        for (i = 0; i < n; ++i) {
                fixture_conn(&pf->f, i);
                attach(pf, i);
        }
}

static int call(BridgeConn *from, const char *dest, const char *iface, const char *member) {
        return test_send(from, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .destination = dest,
                                           .interface = iface, .member = member,
                                           .flags = WIRE_FLAG_NO_REPLY_EXPECTED });
}

static void drain(BridgeConn *c) {
        while (bridge_conn_queue_peek(c))
                bridge_conn_queue_pop(c);
}

/* ---- no policy ---- */

static void test_no_policy(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        fixture_conn(f, 0);
        fixture_conn(f, 1);
        g_assert_null(f->bus->policy);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "M");
        /* today's behaviour stays: unrequested replies are refused by the core */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                       .destination = ":1.1",
                                                       .reply_serial = 9 }),
                        ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "any.name", 0), ==, 0);
        g_assert_null(bridge_conn_get_denial(f->c[0]));
}

/* ---- evaluation order ---- */

static void test_default_deny(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        conns(pf, 2);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpstr(bridge_conn_get_denial(f->c[0]), ==,
                        "Rejected send message, 0 matched rules; type=\"method_call\", "
                        "sender=\":1.0\" (uid=1000 pid=4242 comm=\"test-comm\") "
                        "interface=\"a.b\" member=\"M\" error name=\"(unset)\" "
                        "requested_reply=\"0\" destination=\":1.1\" "
                        "(uid=1001 pid=4242 comm=\"test-comm\")");
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        g_assert_cmpint(bridge_name_acquire(f->c[0], "a.b", 0), ==, NAME_E_ACCESS_DENIED);
        g_assert_cmpstr(bridge_conn_get_denial(f->c[0]), ==,
                        "Connection \":1.0\" is not allowed to own the service \"a.b\" due to "
                        "security policies in the configuration file");
}

static void test_last_match_wins(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, DENY(SEND, .interface = "x.Y"));
        add_default(pf, ALLOW(SEND, .interface = "x.Y", .member = "Ok"));
        conns(pf, 2);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.1", "x.Y", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[0]),
                                       "Rejected send message, 2 matched rules;"));
        g_assert_cmpint(call(f->c[0], ":1.1", "x.Y", "Ok"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "M");
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "Ok");
}

/* Added in reverse order: evaluation follows contexts, not insertion. */
static void test_context_order(PFixture *pf, gconstpointer ctx) {
        static const gid_t g_one[] = { 50 }, g_two[] = { 50, 60 }, g_rev[] = { 60, 50 };
        Fixture *f = &pf->f;
        unsigned i;

        add(pf, POLICY_CONTEXT_MANDATORY, 0, DENY(OWN, .name = "m.only"));
        add(pf, POLICY_CONTEXT_AT_CONSOLE, 0, ALLOW(OWN, .name = "console.name"));
        add(pf, POLICY_CONTEXT_NOT_AT_CONSOLE, 0, DENY(OWN, .name = "user.name"));
        add(pf, POLICY_CONTEXT_USER, 1000, ALLOW(OWN, .name = "user.name"));
        add(pf, POLICY_CONTEXT_USER, 1000, ALLOW(OWN, .name = "m.only"));
        add(pf, POLICY_CONTEXT_GROUP, 60, DENY(OWN, .name = "group.name"));
        add(pf, POLICY_CONTEXT_GROUP, 50, ALLOW(OWN, .name = "group.name"));
        add(pf, POLICY_CONTEXT_DEFAULT, 0, ALLOW(OWN));
        add(pf, POLICY_CONTEXT_DEFAULT, 0, DENY(OWN, .name = "console.name"));

        for (i = 0; i < 5; ++i)
                fixture_conn_uid(f, i, i == 4 ? 2000 : 1000, BRIDGE_CONN_ACCEPT_FDS, true);
        attach_ex(pf, 0, g_one, 1, false);
        attach_ex(pf, 1, g_two, 2, true);
        attach_ex(pf, 2, g_rev, 2, false);
        attach_ex(pf, 3, NULL, 0, true);
        attach_ex(pf, 4, NULL, 0, false);

#define OWNS(i, name) policy_check_own(f->c[i]->policy, name)
        /* default allows everything else */
        for (i = 0; i < 5; ++i)
                g_assert_cmpint(OWNS(i, "other.name"), ==, 0);
        /* group rules follow the peer's group order: the last group wins */
        g_assert_cmpint(OWNS(0, "group.name"), ==, 0);
        g_assert_cmpint(OWNS(1, "group.name"), ==, POLICY_E_ACCESS_DENIED);
        g_assert_cmpint(OWNS(2, "group.name"), ==, 0);
        g_assert_cmpint(OWNS(4, "group.name"), ==, 0);
        /* user over default; at_console=false over user */
        g_assert_cmpint(OWNS(0, "user.name"), ==, POLICY_E_ACCESS_DENIED);
        g_assert_cmpint(OWNS(3, "user.name"), ==, 0);
        g_assert_cmpint(OWNS(4, "user.name"), ==, POLICY_E_ACCESS_DENIED);
        /* at_console=true over default */
        g_assert_cmpint(OWNS(1, "console.name"), ==, 0);
        g_assert_cmpint(OWNS(0, "console.name"), ==, POLICY_E_ACCESS_DENIED);
        /* mandatory over everything */
        for (i = 0; i < 5; ++i)
                g_assert_cmpint(OWNS(i, "m.only"), ==, POLICY_E_ACCESS_DENIED);
#undef OWNS
}

static void test_own(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(OWN, .name = "org.example", .name_is_prefix = true));
        add_default(pf, DENY(OWN, .name = "org.example.No"));
        add_default(pf, ALLOW(OWN, .name = "exact.name"));
        conns(pf, 1);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "org.example", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "org.example.A.B", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "org.exampleX", 0), ==,
                        NAME_E_ACCESS_DENIED);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "org.example.No", 0), ==,
                        NAME_E_ACCESS_DENIED);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "org.example.No.Sub", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "exact.name", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "exact.name.sub", 0), ==,
                        NAME_E_ACCESS_DENIED);
        g_assert_null(bus_find_name(f->bus, "org.example.No"));
}

/* ---- send attributes ---- */

static void test_send_destination(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, ALLOW(OWN));
        add_default(pf, DENY(SEND, .name = "com.x.Q"));
        add_default(pf, DENY(SEND, .name = "com.p", .name_is_prefix = true));
        add_default(pf, DENY(SEND, .name = ":1.3"));
        conns(pf, 4);
        /* c1 owns com.x.Q: any message to c1 matches, by unique name too */
        g_assert_cmpint(bridge_name_acquire(f->c[1], "com.x.Q", 0), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[0], "com.x.Q", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        /* queued owners count too */
        g_assert_cmpint(bridge_name_acquire(f->c[2], "com.x.Q", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(call(f->c[0], ":1.2", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(bridge_name_release(f->c[2], "com.x.Q"), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.2", "a.b", "M"), ==, 0);
        /* prefix: the name and below, not a longer label */
        g_assert_cmpint(bridge_name_acquire(f->c[2], "com.pX", 0), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.2", "a.b", "M"), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[2], "com.p.sub", 0), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.2", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        /* a unique name in a rule */
        g_assert_cmpint(call(f->c[0], ":1.3", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[3], ":1.0", "a.b", "M"), ==, 0);
}

static void test_send_fields(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, DENY(SEND, .path = "/deny", .member = "Foo"));
        add_default(pf, DENY(SEND, .interface = "x.I"));
        add_default(pf, DENY(SEND, .msg_type = WIRE_MSG_SIGNAL, .member = "NoSig",
                             .path = "/"));
        conns(pf, 2);
        /* member+path */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.1", .path = "/deny", .interface = "a.b", .member = "Foo",
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.1", .path = "/other", .interface = "a.b", .member = "Foo",
                .flags = WIRE_FLAG_NO_REPLY_EXPECTED }), ==, 0);
        /* a deny on interface applies to a message without interface ... */
        g_assert_cmpint(call(f->c[0], ":1.1", NULL, "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[0], ":1.1", "x.I", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[0], ":1.1", "x.J", "M"), ==, 0);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[0]),
                                       "Rejected send message, 2 matched rules;"));
        /* type */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                .destination = ":1.1", .member = "NoSig" }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "NoSig"), ==, 0);
}

static void test_send_error(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND, .requested_reply = false));
        add_default(pf, ALLOW(RECV, .requested_reply = false));
        add_default(pf, DENY(SEND, .msg_type = WIRE_MSG_ERROR, .error = "x.Err"));
        add_default(pf, DENY(SEND, .error = "x.Other", .name = ":1.1"));
        conns(pf, 2);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_ERROR,
                .destination = ":1.0", .reply_serial = 3, .error_name = "x.Err" }), ==,
                BRIDGE_E_ACCESS_DENIED);
        /* the policy lets t.Error pass (no AccessDenied); the core then drops it as an
         * unrequested reply */
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_ERROR,
                .destination = ":1.0", .reply_serial = 3, .error_name = "t.Error" }), ==,
                BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "");
        /* a rule's error name also matches a message without one (dbus-daemon does so) */
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[0]),
                                       "Rejected send message, 2 matched rules;"));
        g_assert_cmpint(call(f->c[1], ":1.0", "a.b", "M"), ==, 0);
}

static void test_send_allow_interface(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(RECV));
        add_default(pf, ALLOW(SEND, .interface = "x.I"));
        conns(pf, 2);
        /* an allow on interface does not open messages without interface */
        g_assert_cmpint(call(f->c[0], ":1.1", NULL, "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[0], ":1.1", "x.I", "M"), ==, 0);
}

/* A signal x.R S of the bus, broadcast. */
static void rcv_bus_signal(Fixture *f) {
        BridgeMsg *m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                      .interface = "x.R", .member = "S" });

        g_assert_cmpint(bus_broadcast(f->bus, m), ==, 0);
        bridge_msg_unref(m);
}

static void test_broadcast(PFixture *pf, gconstpointer ctx) {
        BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL };
        BridgeMatchRule *rule;
        Fixture *f = &pf->f;
        unsigned i;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, ALLOW(OWN));
        add_default(pf, DENY(SEND, .broadcast = POLICY_TRUE, .interface = "x.B"));
        add_default(pf, DENY(SEND, .broadcast = POLICY_FALSE, .interface = "x.U"));
        add_default(pf, DENY(SEND, .msg_type = WIRE_MSG_SIGNAL, .name = "no.sig"));
        add_default(pf, DENY(RECV, .interface = "x.R"));
        conns(pf, 3);
        for (i = 1; i < 3; ++i) {
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(f->c[i], rule), ==, 0);
        }
        g_assert_cmpint(bridge_name_acquire(f->c[2], "no.sig", 0), ==, 0);
#define SIG(iface, dest) test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, \
                                   .interface = iface, .member = "S", .destination = dest })
        /* per receiver send check (send_destination against each receiver), silently */
        g_assert_cmpint(SIG("x.A", NULL), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "S");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
        /* send_broadcast=true: only broadcasts */
        g_assert_cmpint(SIG("x.B", NULL), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        g_assert_cmpint(SIG("x.B", ":1.1"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "S");
        /* send_broadcast=false: only unicasts */
        g_assert_cmpint(SIG("x.U", ":1.1"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(SIG("x.U", NULL), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "S");
        /* receive check per receiver */
        g_assert_cmpint(SIG("x.R", NULL), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
#undef SIG
}

/*
 * One broadcast, receivers whose rules differ by user, group, console state and owned names,
 * in an order where each one's verdict differs from the one before: the checks a broadcast
 * shares between receivers (policy-route.c) are shared only where the rules are the same.
 */
static void test_broadcast_receivers(PFixture *pf, gconstpointer ctx) {
        static const gid_t g77[] = { 77 }, g78[] = { 78 };
        static const struct {
                int uid;
                const gid_t *gids;
                bool console;
                bool gets_r;            /* the x.R signal */
        } rcv[] = {
                [1] = { 2000, NULL, false, true },
                [2] = { 2000, NULL, false, true },      /* the same rules as [1] */
                [3] = { 2001, NULL, false, false },     /* its user may not receive x.R */
                [4] = { 2000, g77, false, false },      /* nor group 77 */
                [5] = { 2000, g78, false, true },
                [6] = { 2000, NULL, false, false },     /* owns w.Hidden: no x.R sent to it */
                [7] = { 2000, NULL, true, false },      /* at the console: may not receive */
        };
        BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL };
        Fixture *f = &pf->f;
        unsigned i, round;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, ALLOW(OWN));
        add(pf, POLICY_CONTEXT_USER, 2001, DENY(RECV, .interface = "x.R"));
        add(pf, POLICY_CONTEXT_GROUP, 77, DENY(RECV, .interface = "x.R"));
        add(pf, POLICY_CONTEXT_AT_CONSOLE, 0, DENY(RECV, .interface = "x.R"));
        add_default(pf, DENY(SEND, .name = "w.Hidden", .interface = "x.R"));
        fixture_conn(f, 0);
        attach(pf, 0);
        for (i = 1; i < G_N_ELEMENTS(rcv); ++i) {
                BridgeMatchRule *rule = NULL;

                fixture_conn_uid(f, i, rcv[i].uid, BRIDGE_CONN_ACCEPT_FDS, true);
                attach_ex(pf, i, rcv[i].gids, rcv[i].gids ? 1 : 0, rcv[i].console);
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(f->c[i], rule), ==, 0);
        }
        g_assert_cmpint(bridge_name_acquire(f->c[6], "w.Hidden", 0), ==, 0);
        for (round = 0; round < 2; ++round) {
                g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                               .interface = "x.R",
                                                               .member = "S" }), ==, 0);
                g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                               .interface = "x.A",
                                                               .member = "T" }), ==, 0);
                for (i = 1; i < G_N_ELEMENTS(rcv); ++i) {
                        if (rcv[i].gets_r)
                                g_assert_cmpstr(test_pop(f->c[i], NULL), ==, "S");
                        g_assert_cmpstr(test_pop(f->c[i], NULL), ==, "T");
                        g_assert_cmpstr(test_pop(f->c[i], NULL), ==, "");
                }
                /* and from the bus (no send check), the receive checks alone */
                g_assert_cmpint(bridge_name_release(f->c[6], "w.Hidden"), ==, 0);
                rcv_bus_signal(f);
                for (i = 1; i < G_N_ELEMENTS(rcv); ++i) {
                        if (rcv[i].gets_r || i == 6)
                                g_assert_cmpstr(test_pop(f->c[i], NULL), ==, "S");
                        g_assert_cmpstr(test_pop(f->c[i], NULL), ==, "");
                }
                g_assert_cmpint(bridge_name_acquire(f->c[6], "w.Hidden", 0), ==, 0);
        }
}

static void test_fds(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;
        BridgeMsg *m;
        int *fds, i;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, DENY(SEND, .min_fds = 2));
        add_default(pf, ALLOW(SEND, .min_fds = 3, .max_fds = 3));
        conns(pf, 2);
        for (i = 0; i <= 4; ++i) {
                int n;

                m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                        .destination = ":1.1", .interface = "a.b",
                        .flags = WIRE_FLAG_NO_REPLY_EXPECTED });
                fds = calloc(4, sizeof(int));
                for (n = 0; n < i; ++n)
                        fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                bridge_msg_take_fds(m, fds, (unsigned)i);
                g_assert_cmpint(bridge_conn_send(f->c[0], m), ==,
                                i < 2 || i == 3 ? 0 : BRIDGE_E_ACCESS_DENIED);
                bridge_msg_unref(m);
        }
        drain(f->c[1]);
}

/* ---- replies ---- */

static void test_requested_reply(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        /* system.conf's defaults */
        add_default(pf, DENY(SEND, .msg_type = WIRE_MSG_METHOD_CALL));
        add_default(pf, ALLOW(SEND, .msg_type = WIRE_MSG_METHOD_RETURN));
        add_default(pf, ALLOW(SEND, .msg_type = WIRE_MSG_ERROR, .requested_reply = false));
        add_default(pf, ALLOW(SEND, .msg_type = WIRE_MSG_METHOD_CALL, .name = ":1.1"));
        add_default(pf, ALLOW(RECV));
        conns(pf, 2);
        /* requested: passes */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.1", .interface = "a.b", .serial = 5 }), ==, 0);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 5 }), ==, 0);
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "(reply)");
        /* unrequested return: the allow (requested_reply=true) does not apply */
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 77 }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpstr(bridge_conn_get_denial(f->c[1]), ==,
                        "Rejected send message, 0 matched rules; type=\"method_return\", "
                        "sender=\":1.1\" (uid=1001 pid=4242 comm=\"test-comm\") "
                        "interface=\"(unset)\" member=\"(unset)\" error name=\"(unset)\" "
                        "requested_reply=\"0\" destination=\":1.0\" "
                        "(uid=1000 pid=4242 comm=\"test-comm\")");
        /* unrequested error, sendable with requested_reply=false, but the receiver's
         * allow has requested_reply=true (the default): the receive check denies */
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_ERROR,
                .destination = ":1.0", .reply_serial = 78 }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[1]),
                                       "Rejected receive message, 0 matched rules; type=\"error\""));
        /* calls to :1.0 are denied (c1 is not :1.1) */
        g_assert_cmpint(call(f->c[1], ":1.0", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
}

/* Both ends accept unrequested errors: dbus-daemon delivers them, the core does not (kdbus:
 * a reply passes only through its call's slot); the sender learns nothing from a denial. */
static void test_unrequested_dropped(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND, .msg_type = WIRE_MSG_ERROR, .requested_reply = false));
        add_default(pf, ALLOW(RECV, .msg_type = WIRE_MSG_ERROR, .requested_reply = false));
        conns(pf, 2);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_ERROR,
                .destination = ":1.0", .reply_serial = 78 }), ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_null(bridge_conn_get_denial(f->c[1]));
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "");
}

static void test_deny_requested_reply(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND, .requested_reply = false));
        add_default(pf, ALLOW(RECV, .requested_reply = false));
        /* requested_reply=false (default for deny): only unrequested replies */
        add_default(pf, DENY(SEND, .msg_type = WIRE_MSG_METHOD_RETURN, .interface = NULL));
        /* requested_reply=true: every error */
        add_default(pf, DENY(RECV, .msg_type = WIRE_MSG_ERROR, .requested_reply = true));
        conns(pf, 2);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.1", .interface = "a.b", .serial = 5 }), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.1", .interface = "a.b", .serial = 6 }), ==, 0);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 5 }), ==, 0);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 99 }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_ERROR,
                .destination = ":1.0", .reply_serial = 6 }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[1]),
                                       "Rejected receive message, 2 matched rules; type=\"error\""));
}

/* ---- receive ---- */

static void test_receive(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(OWN));
        add_default(pf, ALLOW(RECV, .name = "trusted.sender"));
        add_default(pf, ALLOW(RECV, .interface = "pub.I"));
        add_default(pf, DENY(RECV, .interface = "pub.I", .member = "Secret", .path = "/"));
        conns(pf, 3);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "trusted.sender", 0), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.2", "any.I", "M"), ==, 0);
        g_assert_cmpint(call(f->c[1], ":1.2", "any.I", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[1]),
                                       "Rejected receive message, 0 matched rules;"));
        g_assert_cmpint(call(f->c[1], ":1.2", "pub.I", "M"), ==, 0);
        g_assert_cmpint(call(f->c[1], ":1.2", "pub.I", "Secret"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "M");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "M");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
}

static void test_eavesdrop(PFixture *pf, gconstpointer ctx) {
        BridgeMatchKeys k = { .eavesdrop = true };
        BridgeMatchRule *rule;
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, ALLOW(RECV, .interface = "spy.I", .eavesdrop = true));
        add_default(pf, DENY(RECV, .member = "Hidden", .path = "/", .eavesdrop = true));
        conns(pf, 3);
        g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule), ==, 0);
        /* an allow without eavesdrop="true" does not let c2 eavesdrop */
        g_assert_cmpint(call(f->c[0], ":1.1", "a.I", "M"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
        /* eavesdrop="true" does */
        g_assert_cmpint(call(f->c[0], ":1.1", "spy.I", "M"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "M");
        /* a deny with eavesdrop="true" applies only to eavesdroppers */
        g_assert_cmpint(call(f->c[0], ":1.1", "spy.I", "Hidden"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
        g_assert_cmpint(call(f->c[0], ":1.2", "spy.I", "Hidden"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "Hidden");
        drain(f->c[1]);
}

/* ---- a last rule that allows everything (policy_last_allows(), issue #16) ---- */

static void eavesdropper(Fixture *f, unsigned i) {
        BridgeMatchKeys k = { .eavesdrop = true };
        BridgeMatchRule *rule;

        g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[i], rule), ==, 0);
}

/* It decides only what it matches: an unrequested reply is not allowed by its
 * requested_reply (the deny before it then decides), an eavesdropped copy not without
 * eavesdrop="true"; a deny before it is overruled as by any later match. */
static void test_last_allows_flags(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, DENY(SEND, .interface = "x.Y"));
        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        conns(pf, 3);
        eavesdropper(f, 2);
        g_assert_cmpint(call(f->c[0], ":1.1", "x.Y", "M"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "M");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 77 }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[1]),
                                       "Rejected send message, 1 matched rules; "
                                       "type=\"method_return\""));
}

/* session.conf's rules: eavesdrop="true" lets the last rule match unrequested replies
 * (the core then refuses them) and eavesdropped copies. */
static void test_last_allows_eavesdrop(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;

        add_default(pf, ALLOW(SEND, .eavesdrop = true));
        add_default(pf, ALLOW(RECV, .eavesdrop = true));
        add_default(pf, ALLOW(OWN));
        conns(pf, 3);
        eavesdropper(f, 2);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "M");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "M");
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 77 }), ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_null(bridge_conn_get_denial(f->c[1]));
}

/* A deny in a context after the default one (at_console, mandatory) is the last rule:
 * the allow-all of the default context decides nothing it matches. */
static void test_last_allows_later_context(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;
        unsigned i;

        add_default(pf, ALLOW(SEND, .eavesdrop = true));
        add_default(pf, ALLOW(RECV, .eavesdrop = true));
        add(pf, POLICY_CONTEXT_AT_CONSOLE, 0, DENY(SEND, .interface = "console.I"));
        add(pf, POLICY_CONTEXT_NOT_AT_CONSOLE, 0, DENY(RECV, .interface = "seat.I"));
        add(pf, POLICY_CONTEXT_MANDATORY, 0, DENY(SEND, .member = "Never"));
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
        attach_ex(pf, 0, NULL, 0, true);
        attach_ex(pf, 1, NULL, 0, false);
        attach_ex(pf, 2, NULL, 0, true);
        g_assert_cmpint(call(f->c[0], ":1.2", "console.I", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[1], ":1.2", "console.I", "M"), ==, 0);
        g_assert_cmpint(call(f->c[0], ":1.1", "seat.I", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[0]),
                                       "Rejected receive message, 2 matched rules;"));
        g_assert_cmpint(call(f->c[0], ":1.2", "seat.I", "M"), ==, 0);
        g_assert_cmpint(call(f->c[1], ":1.2", "a.b", "Never"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(call(f->c[1], ":1.2", "a.b", "M"), ==, 0);
        for (i = 0; i < 3; ++i)
                g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "M");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
}

/* The bus driver as receiver: send_destination compares with DESTINATION. */
static void test_driver_destination(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;
        PolicyMsgInfo info;
        PolicyVerdict v;
        BridgeMsg *m;
        char *text;

        add_default(pf, ALLOW(SEND, .name = "org.freedesktop.DBus",
                              .interface = "org.freedesktop.DBus"));
        add_default(pf, DENY(SEND, .name = "org.freedesktop.DBus",
                             .interface = "org.freedesktop.DBus",
                             .member = "UpdateActivationEnvironment"));
        conns(pf, 1);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = "org.freedesktop.DBus", .interface = "org.freedesktop.DBus",
                .member = "UpdateActivationEnvironment" });
        policy_msg_info_init(&info, pf->db, m);
        g_assert_cmpint(policy_check_send(f->c[0]->policy, &info, NULL, false, &v), ==,
                        POLICY_E_ACCESS_DENIED);
        g_assert_cmpuint(v.n_matched, ==, 2);
        g_assert_cmpint(policy_format_denial(true, &v, m, f->c[0], NULL, false, &text), ==, 0);
        g_assert_cmpstr(strstr(text, "destination="), ==, "destination=\"org.freedesktop.DBus\" (bus)");
        free(text);
        /* the hook compat's driver calls */
        g_assert_cmpint(bridge_policy_check_driver(f->c[0], m), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f->c[0]),
                "Rejected send message, 2 matched rules; type=\"method_call\", sender=\":1.0\""));
        bridge_msg_unref(m);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = "org.freedesktop.DBus", .interface = "org.freedesktop.DBus",
                .member = "ListNames" });
        g_assert_cmpint(bridge_policy_check_driver(f->c[0], m), ==, 0);
        policy_msg_info_init(&info, pf->db, m);
        g_assert_cmpint(policy_check_send(f->c[0]->policy, &info, NULL, false, NULL), ==, 0);
        bridge_msg_unref(m);
}

/* What the bus itself sends goes through the receiver's receive rules (replies count as
 * requested); denied messages are dropped silently. */
static void test_from_bus(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;
        BridgeMsg *m;

        add_default(pf, ALLOW(RECV));
        add_default(pf, DENY(RECV, .interface = "org.freedesktop.DBus", .member = "NameLost",
                             .path = "/org/freedesktop/DBus"));
        add_default(pf, DENY(RECV, .name = "org.freedesktop.DBus", .msg_type = WIRE_MSG_ERROR,
                             .requested_reply = true));
        conns(pf, 1);
        m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN, .destination = ":1.0",
                                           .reply_serial = 3 });
        g_assert_cmpint(bridge_conn_queue_msg(f->c[0], m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "(reply)");
        m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_ERROR, .destination = ":1.0",
                                           .reply_serial = 4 });
        g_assert_cmpint(bridge_conn_queue_msg(f->c[0], m), ==, 0);
        bridge_msg_unref(m);
        m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = ":1.0",
                .path = "/org/freedesktop/DBus", .interface = "org.freedesktop.DBus",
                .member = "NameLost", .args = { "a.b" } });
        g_assert_cmpint(bridge_conn_queue_msg(f->c[0], m), ==, 0);
        bridge_msg_unref(m);
        m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = ":1.0",
                .path = "/org/freedesktop/DBus", .interface = "org.freedesktop.DBus",
                .member = "NameAcquired", .args = { "a.b" } });
        g_assert_cmpint(bridge_conn_queue_msg(f->c[0], m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "NameAcquired");
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "");
}

/*
 * A denied copy (broadcast receiver, eavesdropper, a message of the bus) answers nobody;
 * while there are monitors, copy_denied hands compat dbus-daemon's AccessDenied text for
 * them (checked with dbus-daemon 1.14.10 and its forbidding.conf: the monitor sees the
 * message, then that error, to the sender or to "org.freedesktop.DBus" for the bus's own).
 */
static void test_copy_denied(PFixture *pf, gconstpointer ctx) {
        BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL };
        BridgeMatchRule *rule;
        Fixture *f = &pf->f;
        BridgeMsg *m;

        add_default(pf, ALLOW(SEND));
        add_default(pf, ALLOW(RECV));
        add_default(pf, DENY(SEND, .broadcast = POLICY_TRUE, .interface = "x.B"));
        add_default(pf, DENY(RECV, .interface = "x.R"));
        add_default(pf, DENY(RECV, .interface = "org.freedesktop.DBus",
                             .member = "NameAcquired"));
        conns(pf, 3);
        g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule), ==, 0);
        fixture_log_reset(f);
#define SIG(iface, serial_) test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, \
                                      .interface = iface, .member = "S", .serial = serial_ })
        /* no monitor: nothing but the drop */
        g_assert_cmpint(SIG("x.B", 6), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        assert_log(f, "");

        g_assert_cmpint(bridge_conn_become_monitor(f->c[2], NULL, 0), ==, 0);
        fixture_log_reset(f);
        g_assert_cmpint(SIG("x.B", 7), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "S");
        assert_log(f, "denied :1.0 7 Rejected send message, 2 matched rules; type=\"signal\", "
                   "sender=\":1.0\" (uid=1000 pid=4242 comm=\"test-comm\") interface=\"x.B\" "
                   "member=\"S\" error name=\"(unset)\" requested_reply=\"0\" "
                   "destination=\"org.freedesktop.DBus\" (uid=1001 pid=4242 comm=\"test-comm\");");
        g_assert_cmpint(SIG("x.R", 8), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "S");
        g_assert_true(g_str_has_prefix(f->ev.log->str, "denied :1.0 8 Rejected receive message, "
                                       "2 matched rules; type=\"signal\""));
        fixture_log_reset(f);
        /* allowed: no event */
        g_assert_cmpint(SIG("x.A", 9), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "S");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "S");
        assert_log(f, "");
#undef SIG
        /* a message of the bus the receiver may not receive: the monitor sees it, then the
         * error for the bus itself; the receiver gets nothing */
        m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = ":1.1",
                .serial = 10, .path = "/org/freedesktop/DBus",
                .interface = "org.freedesktop.DBus", .member = "NameAcquired",
                .args = { "a.b" } });
        g_assert_cmpint(bridge_conn_queue_msg(f->c[1], m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "NameAcquired");
        assert_log(f, "denied bus 10 Rejected receive message, 2 matched rules; "
                   "type=\"signal\", sender=\"(unset)\" ((bus)) interface=\"org.freedesktop.DBus\" "
                   "member=\"NameAcquired\" error name=\"(unset)\" requested_reply=\"0\" "
                   "destination=\":1.1\" (uid=1001 pid=4242 comm=\"test-comm\");");
        /* the handler's failure (ENOMEM building the error) is passed up */
        f->ev.fail_with = -ENOMEM;
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                .interface = "x.B", .member = "S", .serial = 11 }), ==, -ENOMEM);
        f->ev.fail_with = 0;
        fixture_log_reset(f);
        drain(f->c[2]);
}

/* ---- connect, reload, dump ---- */

static void test_connect(PFixture *pf, gconstpointer ctx) {
        static const gid_t staff[] = { 50 }, none[] = { 7 };

        /* default: only the bus's own user */
        g_assert_cmpint(policy_db_check_connect(pf->db, 1000, NULL, 0, 1000), ==, 0);
        g_assert_cmpint(policy_db_check_connect(pf->db, 1001, NULL, 0, 1000), ==,
                        POLICY_E_ACCESS_DENIED);
        add_default(pf, ALLOW(.kind = POLICY_RULE_USER, .any_id = true));
        add_default(pf, DENY(.kind = POLICY_RULE_USER, .id = 666));
        add(pf, POLICY_CONTEXT_MANDATORY, 0, DENY(.kind = POLICY_RULE_GROUP, .id = 50));
        /* user rules outside default/mandatory do not count */
        add(pf, POLICY_CONTEXT_USER, 666, ALLOW(.kind = POLICY_RULE_USER, .id = 666));
        g_assert_cmpint(policy_db_seal(pf->db), ==, 0);
        g_assert_cmpint(policy_db_check_connect(pf->db, 1001, none, 1, 0), ==, 0);
        g_assert_cmpint(policy_db_check_connect(pf->db, 666, none, 1, 0), ==,
                        POLICY_E_ACCESS_DENIED);
        g_assert_cmpint(policy_db_check_connect(pf->db, 1001, staff, 1, 0), ==,
                        POLICY_E_ACCESS_DENIED);
}

static PolicySnapshot *snap(PolicyDb *db, uid_t uid, const gid_t *gids, size_t n_gids,
                            bool console, pid_t pid, const char *comm) {
        PolicyPeer peer = { .uid = uid, .gids = gids, .n_gids = n_gids, .at_console = console,
                            .pid = pid, .comm = comm };
        PolicySnapshot *s = NULL;

        g_assert_cmpint(policy_snapshot_new(db, &peer, &s), ==, 0);
        return s;
}

/* Peers with the same credentials share one compiled rule set (issue #16: connection setup
 * compiles nothing for a user's second connection); their texts stay their own; any
 * difference in uid, groups (or their order) or at_console gets its own; a new db starts
 * over; past the cache's bound every snapshot is still right. */
static void test_shared_rules(PFixture *pf, gconstpointer ctx) {
        static const gid_t g12[] = { 1, 2 }, g21[] = { 2, 1 };
        PolicySnapshot *a, *b, *c, *d, *e, *many[2 * POLICY_COMPILED_KEEP], *a2;
        PolicyDb *db2 = NULL;
        unsigned i;

        add(pf, POLICY_CONTEXT_USER, 1000, ALLOW(OWN, .name = "u.name"));
        add(pf, POLICY_CONTEXT_GROUP, 1, DENY(OWN, .name = "g.name"));
        add(pf, POLICY_CONTEXT_GROUP, 2, ALLOW(OWN, .name = "g.name"));
        add(pf, POLICY_CONTEXT_AT_CONSOLE, 0, ALLOW(OWN, .name = "console.name"));
        g_assert_cmpint(policy_db_seal(pf->db), ==, 0);

        a = snap(pf->db, 1000, g12, 2, false, 11, "first");
        b = snap(pf->db, 1000, g12, 2, false, 22, "second");
        c = snap(pf->db, 1000, g21, 2, false, 33, NULL);
        d = snap(pf->db, 1000, g12, 2, true, 44, NULL);
        e = snap(pf->db, 1001, g12, 2, false, 55, NULL);
        g_assert_true(policy_snapshot_same_rules(a, b));
        g_assert_false(policy_snapshot_same_rules(a, c));
        g_assert_false(policy_snapshot_same_rules(a, d));
        g_assert_false(policy_snapshot_same_rules(a, e));
        g_assert_cmpstr(policy_snapshot_get_loginfo(a), ==, "uid=1000 pid=11 comm=\"first\"");
        g_assert_cmpstr(policy_snapshot_get_loginfo(b), ==, "uid=1000 pid=22 comm=\"second\"");
        /* the decisions follow each snapshot's own credentials */
        g_assert_cmpint(policy_check_own(a, "u.name"), ==, 0);
        g_assert_cmpint(policy_check_own(b, "g.name"), ==, 0);         /* group 2 last */
        g_assert_cmpint(policy_check_own(c, "g.name"), ==, POLICY_E_ACCESS_DENIED);
        g_assert_cmpint(policy_check_own(d, "console.name"), ==, 0);
        g_assert_cmpint(policy_check_own(a, "console.name"), ==, POLICY_E_ACCESS_DENIED);
        g_assert_cmpint(policy_check_own(e, "u.name"), ==, POLICY_E_ACCESS_DENIED);
        /* a freed snapshot leaves the shared rules to the others */
        policy_snapshot_free(a);
        g_assert_cmpint(policy_check_own(b, "u.name"), ==, 0);

        /* more credentials than the cache keeps: each snapshot still has the right rules */
        for (i = 0; i < G_N_ELEMENTS(many); ++i) {
                many[i] = snap(pf->db, 2000 + i, NULL, 0, false, 1, NULL);
                g_assert_cmpint(policy_check_own(many[i], "u.name"), ==, POLICY_E_ACCESS_DENIED);
        }
        a2 = snap(pf->db, 1000, g12, 2, false, 66, NULL);
        g_assert_cmpint(policy_check_own(a2, "u.name"), ==, 0);
        g_assert_cmpint(policy_check_own(b, "g.name"), ==, 0);
        for (i = 0; i < G_N_ELEMENTS(many); ++i)
                policy_snapshot_free(many[i]);

        /* another db (a reload): compiled anew */
        g_assert_cmpint(policy_db_new(&db2), ==, 0);
        g_assert_cmpint(policy_db_seal(db2), ==, 0);
        a = snap(db2, 1000, g12, 2, false, 11, NULL);
        g_assert_false(policy_snapshot_same_rules(a, b));
        g_assert_cmpint(policy_check_own(a, "u.name"), ==, POLICY_E_ACCESS_DENIED);
        policy_snapshot_free(a);
        policy_db_unref(db2);
        policy_snapshot_free(a2);
        policy_snapshot_free(b);
        policy_snapshot_free(c);
        policy_snapshot_free(d);
        policy_snapshot_free(e);
}

/* What PolicyPeerFacts were asked, and what they answer. */
static unsigned n_console_asked, n_comm_read;
static bool console_answer;

static bool facts_at_console(uid_t uid) {
        ++n_console_asked;
        return console_answer;
}

static void facts_read_comm(pid_t pid, char *buf, size_t size) {
        ++n_comm_read;
        g_assert_cmpint(pid, ==, 77);
        g_assert_cmpuint(size, ==, POLICY_COMM_MAX + 1);
        (void) snprintf(buf, size, "/usr/bin/late --a-command-line-longer-than-fifty-bytes-is-cut");
}

/* Facts the front end supplies late (issue #16: connection churn): the console state is
 * asked only for a db with at_console rules (at connect, or at the reload that brings
 * them, once); the command line only when a text first shows it, once, cut at 50 bytes
 * as dbus-daemon cuts it, and kept over a reload. */
static void test_late_facts(PFixture *pf, gconstpointer ctx) {
        static const PolicyPeerFacts facts = {
                .uid_at_console = facts_at_console, .read_comm = facts_read_comm,
        };
        static const char cut[] =
                "uid=1000 pid=77 comm=\"/usr/bin/late --a-command-line-longer-than-fifty-b\"";
        Fixture *f = &pf->f;
        PolicyPeer peer = { .uid = 1000, .pid = 77, .facts = &facts };
        PolicySnapshot *s = NULL;
        PolicyDb *console_db = NULL;
        PolicyRuleSpec console_own = ALLOW(OWN, .name = "console.name");

        n_console_asked = n_comm_read = 0;
        console_answer = true;
        fixture_conn(f, 0);
        g_assert_cmpint(policy_db_seal(pf->db), ==, 0);         /* no rules at all */
        g_assert_false(policy_db_has_console_rules(pf->db));
        g_assert_cmpint(bus_set_policy(f->bus, pf->db), ==, 0);
        g_assert_cmpint(policy_snapshot_new(pf->db, &peer, &s), ==, 0);
        bridge_conn_set_policy(f->c[0], s);
        g_assert_cmpuint(n_console_asked, ==, 0);
        g_assert_cmpuint(n_comm_read, ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "console.name", 0), ==,
                        NAME_E_ACCESS_DENIED);

        /* a reload that brings at_console rules asks, once, and the answer counts */
        g_assert_cmpint(policy_db_new(&console_db), ==, 0);
        g_assert_cmpint(policy_db_add_rule(console_db, POLICY_CONTEXT_AT_CONSOLE, 0,
                                           &console_own), ==, 0);
        g_assert_cmpint(policy_db_seal(console_db), ==, 0);
        g_assert_true(policy_db_has_console_rules(console_db));
        g_assert_cmpint(bus_set_policy(f->bus, console_db), ==, 0);
        g_assert_cmpuint(n_console_asked, ==, 1);
        g_assert_cmpint(policy_check_own(f->c[0]->policy, "console.name"), ==, 0);
        g_assert_cmpint(bus_set_policy(f->bus, pf->db), ==, 0);
        g_assert_cmpint(bus_set_policy(f->bus, console_db), ==, 0);
        g_assert_cmpuint(n_console_asked, ==, 1);               /* known since */
        g_assert_cmpint(policy_check_own(f->c[0]->policy, "console.name"), ==, 0);
        g_assert_cmpuint(n_comm_read, ==, 0);

        /* the command line: read at the first text, once, cut at 50 bytes; a reload
         * keeps it */
        g_assert_cmpstr(policy_snapshot_get_loginfo(f->c[0]->policy), ==, cut);
        g_assert_cmpstr(policy_snapshot_get_loginfo(f->c[0]->policy), ==, cut);
        g_assert_cmpuint(n_comm_read, ==, 1);
        g_assert_cmpint(bus_set_policy(f->bus, pf->db), ==, 0);
        g_assert_cmpstr(policy_snapshot_get_loginfo(f->c[0]->policy), ==, cut);
        g_assert_cmpuint(n_comm_read, ==, 1);

        /* a peer connecting under at_console rules is asked at once */
        console_answer = false;
        g_assert_cmpint(policy_snapshot_new(console_db, &peer, &s), ==, 0);
        g_assert_cmpuint(n_console_asked, ==, 2);
        g_assert_cmpint(policy_check_own(s, "console.name"), ==, POLICY_E_ACCESS_DENIED);
        policy_snapshot_free(s);

        /* without facts the given values count, as before */
        s = snap(console_db, 1000, NULL, 0, true, 5, NULL);
        g_assert_cmpint(policy_check_own(s, "console.name"), ==, 0);
        g_assert_cmpstr(policy_snapshot_get_loginfo(s), ==, "uid=1000 pid=5");
        g_assert_cmpuint(n_console_asked, ==, 2);
        g_assert_cmpuint(n_comm_read, ==, 1);
        policy_snapshot_free(s);
        policy_db_unref(console_db);
}

static void test_reload(PFixture *pf, gconstpointer ctx) {
        Fixture *f = &pf->f;
        PolicyDb *db2 = NULL;
        PolicyRuleSpec all_send = ALLOW(SEND), all_recv = ALLOW(RECV);

        add_default(pf, ALLOW(RECV));
        conns(pf, 2);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(policy_db_new(&db2), ==, 0);
        g_assert_cmpint(policy_db_add_rule(db2, POLICY_CONTEXT_DEFAULT, 0, &all_send), ==, 0);
        g_assert_cmpint(policy_db_add_rule(db2, POLICY_CONTEXT_DEFAULT, 0, &all_recv), ==, 0);
        g_assert_cmpint(policy_db_seal(db2), ==, 0);
        g_assert_cmpint(policy_db_add_rule(db2, POLICY_CONTEXT_DEFAULT, 0, &all_recv), ==,
                        -EINVAL);
        g_assert_cmpint(bus_set_policy(f->bus, db2), ==, 0);
        g_assert_true(policy_snapshot_get_db(f->c[0]->policy) == db2);
        g_assert_cmpint(call(f->c[0], ":1.1", "a.b", "M"), ==, 0);
        /* the peer facts survive the reload */
        g_assert_cmpstr(policy_snapshot_get_loginfo(f->c[0]->policy), ==,
                        "uid=1000 pid=4242 comm=\"test-comm\"");
        /* back to no policy: no snapshots, no checks */
        g_assert_cmpint(bus_set_policy(f->bus, NULL), ==, 0);
        g_assert_null(f->c[0]->policy);
        policy_db_unref(db2);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "x.y", 0), ==, 0);
}

static void test_dump(PFixture *pf, gconstpointer ctx) {
        char *text = NULL;

        add(pf, POLICY_CONTEXT_MANDATORY, 0, DENY(OWN, .name = "a.b", .file = "x.conf",
                                                   .line = 3));
        add(pf, POLICY_CONTEXT_USER, 7, ALLOW(SEND, .name = "d.e", .interface = "i.f",
                                              .log = true));
        add(pf, POLICY_CONTEXT_DEFAULT, 0, ALLOW(.kind = POLICY_RULE_USER, .any_id = true));
        g_assert_cmpint(policy_db_seal(pf->db), ==, 0);
        g_assert_cmpuint(policy_db_count_rules(pf->db), ==, 3);
        g_assert_cmpint(policy_db_dump(pf->db, &text), ==, 0);
        g_assert_cmpstr(text, ==,
                        "default\n"
                        "  allow user id=*\n"
                        "user 7\n"
                        "  allow send name=d.e type=* interface=i.f member=* error=* path=* "
                        "broadcast=any requested_reply=1 eavesdrop=0 fds=0-4294967295 log\n"
                        "mandatory\n"
                        "  deny own name=a.b\n");
        free(text);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/bridge/policy/" name, PFixture, NULL, pf_setup, fn, pf_teardown)
        T("no-policy", test_no_policy);
        T("default-deny", test_default_deny);
        T("last-match-wins", test_last_match_wins);
        T("context-order", test_context_order);
        T("own", test_own);
        T("send-destination", test_send_destination);
        T("send-fields", test_send_fields);
        T("send-error", test_send_error);
        T("send-allow-interface", test_send_allow_interface);
        T("broadcast", test_broadcast);
        T("broadcast-receivers", test_broadcast_receivers);
        T("fds", test_fds);
        T("requested-reply", test_requested_reply);
        T("unrequested-dropped", test_unrequested_dropped);
        T("deny-requested-reply", test_deny_requested_reply);
        T("receive", test_receive);
        T("eavesdrop", test_eavesdrop);
        T("last-allows-flags", test_last_allows_flags);
        T("last-allows-eavesdrop", test_last_allows_eavesdrop);
        T("last-allows-later-context", test_last_allows_later_context);
        T("driver-destination", test_driver_destination);
        T("from-bus", test_from_bus);
        T("copy-denied", test_copy_denied);
        T("connect", test_connect);
        T("shared-rules", test_shared_rules);
        T("late-facts", test_late_facts);
        T("reload", test_reload);
        T("dump", test_dump);
#undef T
        return g_test_run();
}
