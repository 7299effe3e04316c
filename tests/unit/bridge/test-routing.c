/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connections and routing: hello, unicast, reply tracking, broadcast through match rules,
 * disconnect order, queue quota and accounting, fds, kicked broadcast receivers,
 * connection quota, entry recycling.
 *
 * Checked against dbus-daemon 1.14.10 with dbus-python: a unicast signal reaches a
 * destination without any match rule; a broadcast reaches its sender when the sender has
 * a matching rule.
 */
#include "bridge/monitor.h"
#include "tests/unit/bridge/fixture.h"

static void setup3(Fixture *f, gconstpointer ctx) {
        unsigned i;

        fixture_setup(f, ctx);
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
        fixture_log_reset(f);
}

static BridgeMatchRule *rule_new(const BridgeMatchKeys *k) {
        BridgeMatchRule *r = NULL;

        g_assert_cmpint(bridge_match_rule_new(k, &r), ==, 0);
        return r;
}

static void test_hello(Fixture *f, gconstpointer ctx) {
        BridgeConn *c;

        c = fixture_conn_uid(f, 0, -1, 0, false);
        g_assert_false(bridge_conn_is_active(c));
        g_assert_cmpuint(c->id, ==, 0);
        g_assert_cmpint(bridge_conn_send(c, NULL), ==, BRIDGE_E_NOT_ACTIVE);
        g_assert_cmpint(bridge_conn_hello(c), ==, 0);
        g_assert_cmpint(bridge_conn_hello(c), ==, BRIDGE_E_ALREADY_ACTIVE);
        g_assert_cmpstr(c->unique_name, ==, ":1.0");
        assert_log(f, "added :1.0;");
        fixture_conn(f, 1);
        g_assert_cmpstr(f->c[1]->unique_name, ==, ":1.1");
        bridge_conn_disconnect(c);
        assert_log(f, "added :1.1;removed :1.0;");
        g_assert_cmpint(bridge_conn_hello(c), ==, BRIDGE_E_ALREADY_ACTIVE);
        fixture_conn(f, 2);
        g_assert_cmpstr(f->c[2]->unique_name, ==, ":1.2");     /* never reused */
        g_assert_true(bridge_conn_is_active(f->c[2]));
        g_assert_false(bridge_conn_is_active(NULL));
}

static void test_unicast(Fixture *f, gconstpointer ctx) {
        uint32_t rs;

        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                       .destination = ":1.1", .member = "Uni" }),
                        ==, 0);
        g_assert_cmpuint(f->t[1].n_nonempty, ==, 1);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 1);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "Uni");
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 0);
        g_assert_cmpuint(f->c[1]->queued_bytes, ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        g_assert_cmpuint(f->t[0].n_nonempty, ==, 0);
        g_assert_cmpuint(f->t[2].n_nonempty, ==, 0);

        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .destination = ":1.8" }), ==,
                        BRIDGE_E_PEER_UNKNOWN);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .destination = "t.nobody" }), ==,
                        BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(bridge_name_acquire(f->c[2], "t.svc", 0), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .destination = "t.svc", .serial = 5,
                                                       .member = "Call" }), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "Call");
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 1);
        /* only the callee may answer, only once, only the right serial */
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                       .destination = ":1.0", .reply_serial = 5 }),
                        ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpint(test_send(f->c[2], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                       .destination = ":1.0", .reply_serial = 6 }),
                        ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpint(test_send(f->c[2], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                       .destination = ":1.0", .reply_serial = 5 }),
                        ==, 0);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
        g_assert_cmpstr(test_pop(f->c[0], &rs), ==, "(reply)");
        g_assert_cmpuint(rs, ==, 5);
        g_assert_cmpint(test_send(f->c[2], &(TestMsg){ .type = WIRE_MSG_ERROR,
                                                       .destination = ":1.0", .reply_serial = 5 }),
                        ==, BRIDGE_E_REPLY_UNEXPECTED);
        /* NO_REPLY_EXPECTED: nothing pending */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                                                       .destination = ":1.2", .serial = 7 }), ==, 0);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
        g_assert_cmpint(test_send(f->c[2], &(TestMsg){ .type = WIRE_MSG_ERROR,
                                                       .destination = ":1.0", .reply_serial = 7 }),
                        ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpuint(f->c[0]->n_sent, ==, 3);
}

static int send_uni(Fixture *f, unsigned from, const char *to, const char *member) {
        return test_send(f->c[from], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = to,
                                                 .member = member });
}

/*
 * A sender's last resolved names (bus_find_conn_by_name_from()) follow every change: a new
 * primary owner, a name freed and made again (most likely at the same address), a
 * connection that leaves or becomes a monitor.
 */
static void test_dest_cache(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(bridge_name_acquire(f->c[2], "t.svc", 0), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "A"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "A");
        /* another owner of the same name */
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.svc", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_release(f->c[2], "t.svc"), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "B"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "B");
        /* the name freed, then made again */
        g_assert_cmpint(bridge_name_release(f->c[1], "t.svc"), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "C"), ==, BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "C"), ==, BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(bridge_name_acquire(f->c[2], "t.svc", 0), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "D"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "D");
        g_assert_cmpint(bridge_name_release(f->c[2], "t.svc"), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.svc", 0), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "E"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "E");
        /* another well-known name, then the first again */
        g_assert_cmpint(bridge_name_acquire(f->c[2], "t.other", 0), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.other", "F"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "F");
        g_assert_cmpint(send_uni(f, 0, "t.svc", "G"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "G");
        /* unique names: one that leaves, one that becomes a monitor */
        g_assert_cmpint(send_uni(f, 0, ":1.1", "H"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "H");
        g_assert_cmpint(send_uni(f, 0, ":1.2", "I"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "I");
        bridge_conn_disconnect(f->c[1]);
        g_assert_cmpint(send_uni(f, 0, ":1.1", "J"), ==, BRIDGE_E_PEER_UNKNOWN);
        g_assert_cmpint(send_uni(f, 0, "t.svc", "J"), ==, BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(bridge_name_release(f->c[2], "t.other"), ==, 0);
        g_assert_cmpint(send_uni(f, 0, "t.other", "K"), ==, BRIDGE_E_NAME_UNKNOWN);
        g_assert_cmpint(send_uni(f, 0, ":1.2", "K"), ==, 0);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "K");
        g_assert_cmpint(bridge_conn_become_monitor(f->c[2], NULL, 0), ==, 0);
        g_assert_cmpint(send_uni(f, 0, ":1.2", "L"), ==, BRIDGE_E_PEER_UNKNOWN);
}

static void test_broadcast(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL, .interface = "t.I" };
        BridgeMatchKeys k2 = { .member = "Sig" };
        BridgeMsg *m;

        g_assert_cmpint(bridge_conn_add_match(f->c[0], rule_new(&k)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k2)), ==, 0);   /* both match */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "Sig" }),
                        ==, 0);
        /* the sender gets its own broadcast (dbus-daemon does), c[1] once, c[2] nothing */
        g_assert_cmpuint(f->c[0]->queued_msgs, ==, 1);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 1);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 0);
        g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "Sig");
        g_assert_cmpstr(test_pop(f->c[0], NULL), ==, "Sig");
        g_assert_cmpint(test_send(f->c[2], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .interface = "t.X",
                                                       .member = "Other" }), ==, 0);
        g_assert_cmpuint(f->c[0]->queued_msgs + f->c[1]->queued_msgs, ==, 0);

        /* a bus signal; sender='org.freedesktop.DBus' matches it, not a peer's */
        k2 = (BridgeMatchKeys){ .sender = "org.freedesktop.DBus" };
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&k2)), ==, 0);
        m = test_msg_new(NULL, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .interface = "t.D",
                                           .member = "NameOwnerChanged" });
        g_assert_cmpint(bus_broadcast(f->bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "NameOwnerChanged");
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .interface = "t.D" }),
                        ==, 0);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 0);

        /* remove: equal keys only */
        k2 = (BridgeMatchKeys){ .member = "Sig" };
        g_assert_cmpint(bridge_conn_remove_match(f->c[1], &k2), ==, 0);
        g_assert_cmpint(bridge_conn_remove_match(f->c[1], &k2), ==, BRIDGE_E_MATCH_NOT_FOUND);
        g_assert_cmpint(bridge_conn_remove_match(f->c[1], &k), ==, 0);
        g_assert_cmpuint(f->c[1]->n_matches, ==, 0);
        g_assert_false(list_is_linked(&f->c[1]->match_link));
        g_assert_cmpuint(f->bus->n_broadcasts, ==, 4);
}

static void test_no_destination_call(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .type = WIRE_MSG_METHOD_CALL, .interface = "t.T" };
        BridgeMatchKeys eav = { .interface = "t.T", .eavesdrop = true };

        /* dbus-daemon 1.14.10: a type='method_call' rule does not see a method call without
         * destination (the driver gets it); an eavesdropper does */
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .interface = "t.T" }), ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 0);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&eav)), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .interface = "t.T" }), ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 0);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 1);
}

static void test_unicast_ignores_matches(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL, .interface = "t.I", .member = "Sig" };

        /* c[2] matches the signal, but it is addressed to c[1] only */
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&k)), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "Sig",
                                                       .destination = ":1.1" }), ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 1);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 0);
}

static void test_eavesdrop(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys eav = { .interface = "t.T", .member = "Eav", .eavesdrop = true };
        BridgeMatchKeys plain = { .interface = "t.T", .member = "NoEav" };

        /* dbus-daemon 1.14.10: C (eavesdrop rule for Eav, plain rule for NoEav) sees the Eav
         * signal A sends to B, not the NoEav one */
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&eav)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&plain)), ==, 0);
        g_assert_cmpuint(f->bus->n_eavesdrop_rules, ==, 1);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .interface = "t.T",
                                                       .member = "Eav", .destination = ":1.1" }),
                        ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .interface = "t.T",
                                                       .member = "NoEav", .destination = ":1.1" }),
                        ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 2);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 1);
        g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "Eav");
        /* the addressed receiver gets it once even with its own eavesdrop rule */
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&eav)), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .interface = "t.T",
                                                       .member = "Eav", .destination = ":1.1" }),
                        ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 3);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 1);
        bridge_conn_disconnect(f->c[2]);
        g_assert_cmpuint(f->bus->n_eavesdrop_rules, ==, 1);
        g_assert_cmpint(bridge_conn_remove_match(f->c[1], &eav), ==, 0);
        g_assert_cmpuint(f->bus->n_eavesdrop_rules, ==, 0);
}

static void test_match_quota(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .member = "X" };

        f->bus->limits.max_match_rules_per_connection = 2;
        g_assert_cmpint(bridge_conn_add_match(f->c[0], rule_new(&k)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[0], rule_new(&k)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[0], rule_new(&k)), ==, BRIDGE_E_MATCH_QUOTA);
        g_assert_cmpuint(f->c[0]->n_matches, ==, 2);
        g_assert_cmpint(bridge_conn_remove_match(f->c[0], &k), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[0], rule_new(&k)), ==, 0);
}

static void test_queue_quota(Fixture *f, gconstpointer ctx) {
        BridgeMsg *m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                        .destination = ":1.1" });
        size_t size = bridge_conn_queue_cost(m);

        /* what the bus holds counts, not only the wire bytes: struct, buffer, queue entry */
        g_assert_cmpuint(size, >=, m->size + sizeof(BridgeMsg));
        /* like dbus-daemon: refused only once what is queued already exceeds the limit */
        f->bus->limits.max_outgoing_bytes = 2 * size;
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpuint(f->c[1]->queued_bytes, ==, 3 * size);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, BRIDGE_E_QUOTA);
        g_assert_cmpint(bridge_conn_queue_msg(f->c[1], m), ==, BRIDGE_E_QUOTA);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 3);
        g_assert_cmpuint(m->n_refs, ==, 4);
        g_assert_cmpuint(f->t[1].n_nonempty, ==, 1);
        bridge_conn_queue_pop(f->c[1]);
        bridge_conn_queue_pop(f->c[1]);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpuint(f->t[1].n_nonempty, ==, 1);
        /* a pending call is not left behind by a refused send */
        bridge_msg_unref(m);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .destination = ":1.1" });
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, BRIDGE_E_QUOTA);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 1);
        bridge_msg_unref(m);
        while (bridge_conn_queue_peek(f->c[1]))
                bridge_conn_queue_pop(f->c[1]);
        g_assert_cmpuint(f->c[1]->queued_bytes, ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 0);
        /* not active: nothing queued */
        bridge_conn_disconnect(f->c[1]);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = ":1.1" });
        g_assert_cmpint(bridge_conn_queue_msg(f->c[1], m), ==, BRIDGE_E_NOT_ACTIVE);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, BRIDGE_E_PEER_UNKNOWN);
        g_assert_cmpint(bridge_conn_send(f->c[1], m), ==, BRIDGE_E_NOT_ACTIVE);
        bridge_msg_unref(m);
}

/*
 * The queue limits apply per (receiver, sending user), as dbus-broker's per-user quotas and
 * kdbus's: uid 1000 filling c[1]'s queue is refused at its own limit, while uid 1002 and
 * the bus itself still reach c[1], in order; a broadcast of the full user kicks c[1], one
 * of another user does not.
 */
static void test_queue_quota_per_user(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .member = "B" };
        TestMsg t = { .type = WIRE_MSG_SIGNAL, .destination = ":1.1" };
        BridgeMsg *m0 = test_msg_new(f->c[0], &t), *m2 = test_msg_new(f->c[2], &t), *bus;
        BridgeMsg *b0, *b2;
        size_t size = bridge_conn_queue_cost(m0);

        g_assert_cmpuint(f->c[0]->creds.uid, !=, f->c[2]->creds.uid);
        f->bus->limits.max_outgoing_bytes = 2 * size;
        g_assert_cmpint(bridge_conn_send(f->c[0], m0), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m0), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m0), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m0), ==, BRIDGE_E_QUOTA);
        /* another user, and the bus, each have a share of their own */
        g_assert_cmpint(bridge_conn_send(f->c[2], m2), ==, 0);
        bus = test_msg_new(NULL, &t);
        g_assert_cmpint(bridge_conn_queue_msg(f->c[1], bus), ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 5);
        g_assert_cmpint(bridge_conn_send(f->c[0], m0), ==, BRIDGE_E_QUOTA);
        g_assert_cmpint(bridge_conn_send(f->c[2], m2), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[2], m2), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[2], m2), ==, BRIDGE_E_QUOTA);
        /* routing order kept: three of uid 1000, one of 1002, the bus's, two of 1002 */
        g_assert_true(bridge_conn_queue_peek(f->c[1]) == m0);
        bridge_conn_queue_pop(f->c[1]);
        bridge_conn_queue_pop(f->c[1]);
        bridge_conn_queue_pop(f->c[1]);
        g_assert_true(bridge_conn_queue_peek(f->c[1]) == m2);
        bridge_conn_queue_pop(f->c[1]);
        g_assert_true(bridge_conn_queue_peek(f->c[1]) == bus);
        bridge_conn_queue_pop(f->c[1]);
        /* uid 1000 has room again; uid 1002 still holds two */
        g_assert_cmpint(bridge_conn_send(f->c[0], m0), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[2], m2), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[2], m2), ==, BRIDGE_E_QUOTA);
        /* broadcasts never fail: the full user's kicks c[1], the other's does not */
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        b2 = test_msg_new(f->c[2], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "B" });
        b0 = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "B" });
        g_assert_cmpint(bridge_conn_send(f->c[2], b2), ==, 0);
        g_assert_cmpuint(f->t[1].n_kick, ==, 1);
        g_assert_cmpint(bridge_conn_send(f->c[0], b0), ==, 0);
        g_assert_cmpuint(f->t[1].n_kick, ==, 1);
        while (bridge_conn_queue_peek(f->c[1]))
                bridge_conn_queue_pop(f->c[1]);
        g_assert_cmpuint(f->c[1]->quota.n, ==, 0);
        bridge_msg_unref(b0);
        bridge_msg_unref(b2);
        bridge_msg_unref(bus);
        bridge_msg_unref(m0);
        bridge_msg_unref(m2);
}

static void test_fds(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .member = "F" };
        BridgeMsg *m;
        int *fds = g_new(int, 1);
        int fd = dup(0);

        g_assert_cmpint(fd, >=, 0);
        fds[0] = fd;
        fixture_conn_uid(f, 3, -1, 0, true);    /* no ACCEPT_FDS */
        g_assert_cmpint(bridge_conn_add_match(f->c[3], rule_new(&k)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = ":1.3",
                                              .member = "F" });
        bridge_msg_take_fds(m, fds, 1);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, BRIDGE_E_FDS_REFUSED);
        bridge_msg_unref(m);
        g_assert_cmpint(fcntl(fd, F_GETFD), <, 0);      /* closed with the message */

        fds = g_new(int, 1);
        fds[0] = dup(0);
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "F" });
        bridge_msg_take_fds(m, fds, 1);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpuint(f->c[3]->queued_msgs, ==, 0);  /* skipped, like dbus-daemon */
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 1);
        g_assert_cmpuint(f->c[1]->queued_fds, ==, 1);
        f->bus->limits.max_outgoing_unix_fds = 0;
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .destination = ":1.1" });
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, BRIDGE_E_QUOTA);
        bridge_msg_unref(m);
        bridge_conn_queue_pop(f->c[1]);
        g_assert_cmpuint(f->c[1]->queued_fds, ==, 0);
}

static void test_kick(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .member = "K" };
        BridgeMsg *m;

        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&k)), ==, 0);
        f->bus->limits.max_outgoing_bytes = 0;
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "K" });
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);          /* both take one */
        bridge_conn_queue_pop(f->c[2]);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);          /* never fails */
        g_assert_cmpuint(f->t[1].n_kick, ==, 1);
        g_assert_cmpuint(f->t[2].n_kick, ==, 0);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 1);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 1);
        g_assert_true(bridge_conn_is_active(f->c[1]));  /* the transport closes it later */
        g_assert_cmpint(bus_broadcast(f->bus, m), ==, 0);
        g_assert_cmpuint(f->t[1].n_kick, ==, 2);
        g_assert_cmpuint(f->t[2].n_kick, ==, 1);
        bridge_msg_unref(m);
}

static void test_disconnect_order(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .member = "X" };
        BridgeMsg *m;

        /* c[1] owns t.a (c[2] queued) and t.b, owes c[0] two replies, waits for c[2],
         * has a rule and a queued message */
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.a", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[2], "t.a", 0), ==, NAME_E_IN_QUEUE);
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.b", 0), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .destination = "t.a", .serial = 10 }), ==, 0);
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .destination = ":1.1", .serial = 11 }), ==, 0);
        g_assert_cmpint(test_send(f->c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .destination = ":1.2", .serial = 12 }), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        m = bridge_conn_queue_peek(f->c[1]);
        g_assert_nonnull(m);
        bridge_msg_ref(m);
        fixture_log_reset(f);
        bridge_conn_disconnect(f->c[1]);
        /* dbus-daemon 1.14.10's order: names newest first, the unique name, then the
         * calls it owes, newest first */
        assert_log(f, "name t.b :1.1>-;name t.a :1.1>:1.2;removed :1.1;"
                      "lost :1.0 11 gone :1.1;lost :1.0 10 gone :1.1;");
        g_assert_cmpuint(m->n_refs, ==, 1);     /* the queue let go */
        bridge_msg_unref(m);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
        g_assert_cmpuint(f->c[1]->n_replies_out, ==, 0);
        g_assert_cmpuint(f->bus->replies.n_entries, ==, 0);
        g_assert_true(list_is_empty(&f->bus->match_conns));
        /* c[2] can no longer answer the call c[1] made */
        g_assert_cmpint(test_send(f->c[2], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                       .destination = ":1.1", .reply_serial = 12 }),
                        ==, BRIDGE_E_PEER_UNKNOWN);
        bridge_conn_disconnect(f->c[1]);
        assert_log(f, "");
        /* memory lives while referenced; the last unref of an active conn disconnects it */
        f->c[2] = bridge_conn_unref(f->c[2]);
        assert_log(f, "name t.a :1.2>-;removed :1.2;");
}

static void test_conn_quota(Fixture *f, gconstpointer ctx) {
        BridgeCreds creds = { .uid = 1000, .pidfd = -1 };
        BridgeConn *c = NULL;

        /* dbus-daemon 1.14.10 counts completed connections only: the third one of a uid is
         * accepted, its Hello fails, it stays connected and may retry once a slot is free */
        f->bus->limits.max_connections_per_user = 2;
        fixture_conn_uid(f, 0, 1000, 0, true);
        fixture_conn_uid(f, 1, 1000, 0, false);
        fixture_conn_uid(f, 3, 1000, 0, true);
        g_assert_cmpint(bridge_conn_hello(f->c[1]), ==, BRIDGE_E_CONN_QUOTA);
        g_assert_false(bridge_conn_is_active(f->c[1]));
        g_assert_cmpuint(f->c[1]->id, ==, 0);
        g_assert_cmpuint(f->c[0]->user->n_active, ==, 2);
        g_assert_cmpuint(f->c[0]->user->n_conns, ==, 3);
        bridge_conn_disconnect(f->c[3]);
        g_assert_cmpuint(f->c[0]->user->n_active, ==, 1);
        g_assert_cmpint(bridge_conn_hello(f->c[1]), ==, 0);
        g_assert_cmpuint(f->c[0]->user->n_active, ==, 2);
        f->c[3] = bridge_conn_unref(f->c[3]);
        g_assert_cmpuint(f->c[0]->user->n_active, ==, 2);        /* counted once only */
        fixture_conn_uid(f, 2, 1001, 0, true);
        g_assert_cmpuint(f->bus->users.n_entries, ==, 2);
        f->c[1] = bridge_conn_unref(f->c[1]);
        g_assert_cmpuint(f->c[0]->user->n_conns, ==, 1);
        g_assert_cmpuint(f->c[0]->user->n_active, ==, 1);
        f->c[2] = bridge_conn_unref(f->c[2]);
        g_assert_cmpuint(f->bus->users.n_entries, ==, 1);
        f->bus->limits.max_connections_per_user = 0;
        g_assert_cmpint(bridge_conn_new(f->bus, &creds, 0, NULL, NULL, &c), ==, 0);
        g_assert_cmpint(bridge_conn_hello(c), ==, BRIDGE_E_CONN_QUOTA);
        c = bridge_conn_unref(c);
        f->bus->limits.max_connections_per_user = 2;
        creds.groups = g_new(gid_t, 2);
        creds.n_groups = 2;
        creds.seclabel = g_strdup("unconfined");
        creds.pidfd = dup(0);
        g_assert_cmpint(bridge_conn_new(f->bus, &creds, 0, NULL, NULL, &f->c[1]), ==, 0);
        g_assert_null(creds.groups);                    /* taken */
        g_assert_null(creds.seclabel);
        g_assert_cmpint(creds.pidfd, ==, -1);
        g_assert_cmpuint(f->c[1]->creds.n_groups, ==, 2);
}

static void test_recycle(Fixture *f, gconstpointer ctx) {
        BridgeMsg *m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                        .destination = ":1.1" });
        unsigned i;

        for (i = 0; i < 10; ++i)
                g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        while (bridge_conn_queue_peek(f->c[1]))
                bridge_conn_queue_pop(f->c[1]);
        g_assert_cmpuint(f->bus->n_free_entries, ==, 10);
        for (i = 0; i < 4; ++i)
                g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpuint(f->bus->n_free_entries, ==, 6);
        bridge_msg_unref(m);
}

/* A broadcast of the bus can reach a connection with any match rule (an eavesdropper's too)
 * or a monitor; with none, the driver does not build it (bus_broadcast_has_audience()). */
static void test_audience(Fixture *f, gconstpointer ctx) {
        BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL, .interface = "t.Unrelated" };
        BridgeMatchKeys eav = { .interface = "t.T", .eavesdrop = true };

        g_assert_false(bus_broadcast_has_audience(f->bus));
        g_assert_cmpint(bridge_conn_add_match(f->c[1], rule_new(&k)), ==, 0);
        g_assert_true(bus_broadcast_has_audience(f->bus));
        g_assert_cmpint(bridge_conn_remove_match(f->c[1], &k), ==, 0);
        g_assert_false(bus_broadcast_has_audience(f->bus));
        g_assert_cmpint(bridge_conn_add_match(f->c[2], rule_new(&eav)), ==, 0);
        g_assert_true(bus_broadcast_has_audience(f->bus));
        bridge_conn_disconnect(f->c[2]);                /* its rules go with it */
        g_assert_false(bus_broadcast_has_audience(f->bus));
        g_assert_cmpint(bridge_conn_become_monitor(f->c[0], NULL, 0), ==, 0);
        g_assert_true(bus_broadcast_has_audience(f->bus));
}

/* A burst of queued messages beyond the old 4096 recycled entries: all come back for reuse
 * (no malloc() per delivery in the next burst), and bus_trim() frees them. */
static void test_recycle_burst(Fixture *f, gconstpointer ctx) {
        BridgeMsg *m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                        .destination = ":1.1" });
        unsigned i;

        f->bus->limits.max_outgoing_bytes = UINT32_MAX;
        for (i = 0; i < 12800; ++i)
                g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        while (bridge_conn_queue_peek(f->c[1]))
                bridge_conn_queue_pop(f->c[1]);
        g_assert_cmpuint(f->bus->n_free_entries, ==, 12800);
        bus_trim(f->bus);
        g_assert_cmpuint(f->bus->n_free_entries, ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        bridge_msg_unref(m);
}

/* bridge_conn_queue_take(): the oldest message with the queue's reference, the counters and
 * the quota row as after a pop. */
static void test_queue_take(Fixture *f, gconstpointer ctx) {
        BridgeMsg *m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                                                        .destination = ":1.1" });
        BridgeMsg *t;
        unsigned refs;

        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        g_assert_cmpint(bridge_conn_send(f->c[0], m), ==, 0);
        refs = m->n_refs;
        t = bridge_conn_queue_take(f->c[1]);
        g_assert_true(t == m);
        g_assert_cmpuint(m->n_refs, ==, refs);          /* the queue's, now ours */
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 1);
        g_assert_cmpuint(f->c[1]->quota.n, ==, 1);
        bridge_msg_unref(t);
        t = bridge_conn_queue_take(f->c[1]);
        g_assert_true(t == m);
        g_assert_cmpuint(f->c[1]->queued_msgs, ==, 0);
        g_assert_cmpuint(f->c[1]->queued_bytes, ==, 0);
        g_assert_cmpuint(f->c[1]->quota.n, ==, 0);
        bridge_msg_unref(t);
        g_assert_null(bridge_conn_queue_take(f->c[1]));
        bridge_msg_unref(m);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/routing/hello", Fixture, NULL, fixture_setup, test_hello,
                   fixture_teardown);
        g_test_add("/bridge/routing/unicast", Fixture, NULL, setup3, test_unicast, fixture_teardown);
        g_test_add("/bridge/routing/dest-cache", Fixture, NULL, setup3, test_dest_cache,
                   fixture_teardown);
        g_test_add("/bridge/routing/broadcast", Fixture, NULL, setup3, test_broadcast,
                   fixture_teardown);
        g_test_add("/bridge/routing/audience", Fixture, NULL, setup3, test_audience,
                   fixture_teardown);
        g_test_add("/bridge/routing/recycle-burst", Fixture, NULL, setup3, test_recycle_burst,
                   fixture_teardown);
        g_test_add("/bridge/routing/queue-take", Fixture, NULL, setup3, test_queue_take,
                   fixture_teardown);
        g_test_add("/bridge/routing/unicast-ignores-matches", Fixture, NULL, setup3,
                   test_unicast_ignores_matches, fixture_teardown);
        g_test_add("/bridge/routing/no-destination-call", Fixture, NULL, setup3,
                   test_no_destination_call, fixture_teardown);
        g_test_add("/bridge/routing/eavesdrop", Fixture, NULL, setup3, test_eavesdrop,
                   fixture_teardown);
        g_test_add("/bridge/routing/match-quota", Fixture, NULL, setup3, test_match_quota,
                   fixture_teardown);
        g_test_add("/bridge/routing/queue-quota", Fixture, NULL, setup3, test_queue_quota,
                   fixture_teardown);
        g_test_add("/bridge/routing/queue-quota-per-user", Fixture, NULL, setup3,
                   test_queue_quota_per_user,
                   fixture_teardown);
        g_test_add("/bridge/routing/fds", Fixture, NULL, setup3, test_fds, fixture_teardown);
        g_test_add("/bridge/routing/kick", Fixture, NULL, setup3, test_kick, fixture_teardown);
        g_test_add("/bridge/routing/disconnect-order", Fixture, NULL, setup3,
                   test_disconnect_order, fixture_teardown);
        g_test_add("/bridge/routing/conn-quota", Fixture, NULL, fixture_setup, test_conn_quota,
                   fixture_teardown);
        g_test_add("/bridge/routing/recycle", Fixture, NULL, setup3, test_recycle,
                   fixture_teardown);
        return g_test_run();
}
