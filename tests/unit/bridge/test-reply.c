/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pending replies: timeouts (deadline order, bus_next_deadline, reply_lost with timed_out),
 * the per-caller quota, serial reuse across callees, a caller that leaves, calls to self.
 */
#include "tests/unit/bridge/fixture.h"

static void setup_timeout(Fixture *f, gconstpointer ctx) {
        BusLimits l;
        unsigned i;

        bus_limits_init_session(&l);
        l.reply_timeout_usec = 1000;
        l.max_replies_per_connection = 3;
        fixture_setup_limits(f, &l);
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
        fixture_log_reset(f);
}

static int call(Fixture *f, unsigned from, const char *to, uint32_t serial) {
        return test_send(f->c[from], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .destination = to,
                                                 .serial = serial });
}

static int answer(Fixture *f, unsigned from, const char *to, uint32_t serial) {
        return test_send(f->c[from], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                                                 .destination = to, .reply_serial = serial });
}

static void test_timeout(Fixture *f, gconstpointer ctx) {
        uint64_t t;

        g_assert_false(bus_next_deadline(f->bus, &t));
        f->bus->now_usec = 100;
        g_assert_cmpint(call(f, 0, ":1.1", 1), ==, 0);
        f->bus->now_usec = 300;
        g_assert_cmpint(call(f, 0, ":1.2", 2), ==, 0);
        g_assert_true(bus_next_deadline(f->bus, &t));
        g_assert_cmpuint(t, ==, 1100);

        f->bus->now_usec = 1099;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        assert_log(f, "");
        f->bus->now_usec = 1100;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        assert_log(f, "lost :1.0 1 timeout :1.1;");
        g_assert_true(bus_next_deadline(f->bus, &t));
        g_assert_cmpuint(t, ==, 1300);
        /* too late: the callee's answer is now unexpected */
        g_assert_cmpint(answer(f, 1, ":1.0", 1), ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpint(answer(f, 2, ":1.0", 2), ==, 0);
        g_assert_false(bus_next_deadline(f->bus, &t));
        f->bus->now_usec = 5000;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        assert_log(f, "");
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
}

static void test_timeout_handler_error(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(call(f, 0, ":1.1", 1), ==, 0);
        g_assert_cmpint(call(f, 0, ":1.1", 2), ==, 0);
        f->ev.fail_with = -ENOMEM;
        f->bus->now_usec = 1000;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, -ENOMEM);
        f->ev.fail_with = 0;
        assert_log(f, "lost :1.0 1 timeout :1.1;lost :1.0 2 timeout :1.1;");
        g_assert_cmpuint(f->bus->replies.n_entries, ==, 0);
}

static void test_never(Fixture *f, gconstpointer ctx) {
        uint64_t t;

        f->bus->limits.reply_timeout_usec = 0;
        g_assert_cmpint(call(f, 0, ":1.1", 1), ==, 0);
        g_assert_false(bus_next_deadline(f->bus, &t));
        f->bus->now_usec = UINT64_MAX;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        assert_log(f, "");
        g_assert_cmpint(answer(f, 1, ":1.0", 1), ==, 0);
}

static void test_quota(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(call(f, 0, ":1.1", 1), ==, 0);
        g_assert_cmpint(call(f, 0, ":1.1", 2), ==, 0);
        g_assert_cmpint(call(f, 0, ":1.2", 3), ==, 0);
        g_assert_cmpint(call(f, 0, ":1.2", 4), ==, BRIDGE_E_REPLIES_QUOTA);
        g_assert_cmpuint(f->c[2]->queued_msgs, ==, 1);  /* refused: not queued */
        /* NO_REPLY_EXPECTED calls and other callers are not limited */
        g_assert_cmpint(test_send(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                                                       .flags = WIRE_FLAG_NO_REPLY_EXPECTED,
                                                       .destination = ":1.2", .serial = 5 }), ==, 0);
        g_assert_cmpint(call(f, 1, ":1.2", 1), ==, 0);
        g_assert_cmpint(answer(f, 1, ":1.0", 2), ==, 0);
        g_assert_cmpint(call(f, 0, ":1.2", 6), ==, 0);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 3);
}

static void test_same_serial(Fixture *f, gconstpointer ctx) {
        /* the serial belongs to the caller: the same one to two callees is two entries */
        g_assert_cmpint(call(f, 0, ":1.1", 9), ==, 0);
        g_assert_cmpint(call(f, 0, ":1.2", 9), ==, 0);
        g_assert_cmpint(answer(f, 2, ":1.0", 9), ==, 0);
        g_assert_cmpint(answer(f, 2, ":1.0", 9), ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpint(answer(f, 1, ":1.0", 9), ==, 0);
        /* and two callers may use the same serial with one callee */
        g_assert_cmpint(call(f, 0, ":1.2", 4), ==, 0);
        g_assert_cmpint(call(f, 1, ":1.2", 4), ==, 0);
        g_assert_cmpint(answer(f, 2, ":1.1", 4), ==, 0);
        g_assert_cmpint(answer(f, 2, ":1.0", 4), ==, 0);
        g_assert_cmpuint(f->bus->replies.n_entries, ==, 0);
}

/*
 * Replies in and out of the order of the calls (reply.c looks at the callee's oldest owed
 * call first and indexes the rest only on a miss): each consumes exactly its own call, a
 * reply that matches the oldest call's serial but not its caller does not take it.
 */
static void test_out_of_order(Fixture *f, gconstpointer ctx) {
        f->bus->limits.max_replies_per_connection = 100;
        for (uint32_t s = 1; s <= 6; ++s) {
                g_assert_cmpint(call(f, 0, ":1.1", s), ==, 0);
                g_assert_cmpint(call(f, 2, ":1.1", s), ==, 0);
        }
        /* in order: the head each time */
        g_assert_cmpint(answer(f, 1, ":1.0", 1), ==, 0);
        g_assert_cmpint(answer(f, 1, ":1.2", 1), ==, 0);
        /* the head is (:1.0, 2): the same serial to another caller, then a serial not owed */
        g_assert_cmpint(answer(f, 1, ":1.2", 2), ==, 0);
        g_assert_cmpint(answer(f, 1, ":1.2", 2), ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpint(answer(f, 1, ":1.0", 7), ==, BRIDGE_E_REPLY_UNEXPECTED);
        /* not the callee that owes it, though the serial is the head's */
        g_assert_cmpint(answer(f, 2, ":1.0", 2), ==, BRIDGE_E_REPLY_UNEXPECTED);
        /* newest first, then the head again, after the others went into the index */
        for (uint32_t s = 6; s >= 3; --s) {
                g_assert_cmpint(answer(f, 1, ":1.2", s), ==, 0);
                g_assert_cmpint(answer(f, 1, ":1.0", s), ==, 0);
        }
        g_assert_cmpint(call(f, 0, ":1.1", 8), ==, 0);
        g_assert_cmpint(answer(f, 1, ":1.0", 8), ==, 0);
        g_assert_cmpint(answer(f, 1, ":1.0", 2), ==, 0);
        g_assert_cmpint(answer(f, 1, ":1.0", 2), ==, BRIDGE_E_REPLY_UNEXPECTED);
        g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
        g_assert_cmpuint(f->c[2]->n_replies_out, ==, 0);
        g_assert_cmpuint(f->bus->replies.n_entries, ==, 0);
        g_assert_true(list_is_empty(&f->bus->replies_unindexed));
        g_assert_true(list_is_empty(&f->c[1]->replies_in));
}

static void test_caller_leaves(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(call(f, 0, ":1.1", 1), ==, 0);
        bridge_conn_disconnect(f->c[0]);
        assert_log(f, "removed :1.0;");        /* no reply_lost: nobody to tell */
        g_assert_cmpuint(f->bus->replies.n_entries, ==, 0);
        f->bus->now_usec = 10000;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        assert_log(f, "");
        g_assert_cmpint(answer(f, 1, ":1.0", 1), ==, BRIDGE_E_PEER_UNKNOWN);
}

static void test_callee_leaves(Fixture *f, gconstpointer ctx) {
        uint64_t t;

        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.svc", 0), ==, 0);
        g_assert_cmpint(call(f, 0, "t.svc", 1), ==, 0);
        g_assert_cmpint(call(f, 2, "t.svc", 1), ==, 0);
        fixture_log_reset(f);
        bridge_conn_disconnect(f->c[1]);
        /* dbus-daemon: the unique name goes first, then NoReply for the newest call first */
        assert_log(f, "name t.svc :1.1>-;removed :1.1;lost :1.2 1 gone :1.1;"
                      "lost :1.0 1 gone :1.1;");
        g_assert_false(bus_next_deadline(f->bus, &t));
}

static void test_self(Fixture *f, gconstpointer ctx) {
        g_assert_cmpint(call(f, 0, ":1.0", 3), ==, 0);
        g_assert_cmpint(answer(f, 0, ":1.0", 3), ==, 0);
        g_assert_cmpuint(f->c[0]->queued_msgs, ==, 2);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/reply/timeout", Fixture, NULL, setup_timeout, test_timeout,
                   fixture_teardown);
        g_test_add("/bridge/reply/timeout-handler-error", Fixture, NULL, setup_timeout,
                   test_timeout_handler_error, fixture_teardown);
        g_test_add("/bridge/reply/never", Fixture, NULL, setup_timeout, test_never,
                   fixture_teardown);
        g_test_add("/bridge/reply/quota", Fixture, NULL, setup_timeout, test_quota,
                   fixture_teardown);
        g_test_add("/bridge/reply/same-serial", Fixture, NULL, setup_timeout, test_same_serial,
                   fixture_teardown);
        g_test_add("/bridge/reply/out-of-order", Fixture, NULL, setup_timeout,
                   test_out_of_order, fixture_teardown);
        g_test_add("/bridge/reply/caller-leaves", Fixture, NULL, setup_timeout,
                   test_caller_leaves, fixture_teardown);
        g_test_add("/bridge/reply/callee-leaves", Fixture, NULL, setup_timeout,
                   test_callee_leaves, fixture_teardown);
        g_test_add("/bridge/reply/self", Fixture, NULL, setup_timeout, test_self,
                   fixture_teardown);
        return g_test_run();
}
