/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bridge/ survives ENOMEM (HACKING.md, Allocation failure): each operation is run with its 1st, 2nd,
 * ... allocation failing until it runs through. A failed operation returns -ENOMEM (or
 * succeeds anyway, where the failure only cost a table growth) and leaves the bus as it was (checked by counters here, and for leaks by ASan/valgrind at
 * teardown). The test binary is linked with -Wl,--wrap=malloc,calloc,realloc, which
 * redirects the allocations of the code linked statically into it (bridge/, wire/,
 * util/, this file) but not GLib's. The same wrappers count allocations: once warm, a
 * bus routes calls, replies and broadcasts without any (/bridge/oom/steady-state).
 */
#include "tests/unit/bridge/fixture.h"

#include "tests/unit/oom-wrap.h"

/* An operation arms the failure (oom_arm(n)) right before the step under test. */
typedef int (*OomOp)(Fixture *f, int n);

typedef struct OomCase {
        const char *name;
        OomOp op;
        int expect;
} OomCase;

static void setup_oom(Fixture *f) {
        unsigned i;

        fixture_setup(f, NULL);
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.svc", BRIDGE_NAME_ALLOW_REPLACEMENT), ==, 0);
        fixture_log_reset(f);
}

/* Run @op with the n-th allocation failing, for n = 0, 1, ... until it needs no failure. */
static void run_oom(OomOp op, int expect) {
        int n;

        for (n = 0; n < 1000; ++n) {
                Fixture f;
                int r;

                setup_oom(&f);
                oom_hit = false;
                r = op(&f, n);
                oom_disarm();
                if (!oom_hit) {
                        g_test_message("%d allocation failure points", n);
                        g_assert_cmpuint(n, >, 0);      /* the operation allocates */
                        g_assert_cmpint(r, ==, expect);
                        fixture_teardown(&f, NULL);
                        return;
                }
                /* a failed growth of a non-empty hash table only costs speed */
                if (r != expect)
                        g_assert_cmpint(r, ==, -ENOMEM);
                fixture_teardown(&f, NULL);
        }
        g_assert_not_reached();
}

static int op_conn_new(Fixture *f, int n) {
        BridgeCreds creds = { .uid = 4242, .pidfd = -1 };
        int r;

        oom_arm(n);
        r = bridge_conn_new(f->bus, &creds, 0, &test_conn_ops, &f->t[5], &f->c[5]);
        if (r)
                g_assert_cmpuint(f->bus->users.n_entries, ==, 3);
        return r;
}

static int op_hello(Fixture *f, int n) {
        BridgeCreds creds = { .uid = 1000, .pidfd = -1 };
        BridgeConn *c = NULL;
        Bus *bus = NULL;
        int r;

        /* a bus of its own: the first hello allocates the id table */
        g_assert_cmpint(bus_new(NULL, &bus), ==, 0);
        bus_set_notify(bus, &test_notify_ops, &f->ev);
        g_assert_cmpint(bridge_conn_new(bus, &creds, 0, &test_conn_ops, &f->t[5], &c), ==, 0);
        oom_arm(n);
        r = bridge_conn_hello(c);
        oom_disarm();
        if (r) {
                g_assert_false(c->active);
                g_assert_cmpuint(c->id, ==, 0);
                g_assert_cmpstr(f->ev.log->str, ==, "");
                g_assert_cmpint(bridge_conn_hello(c), ==, 0);   /* and it can try again */
                g_assert_cmpstr(c->unique_name, ==, ":1.0");
        }
        bridge_conn_unref(c);
        bus_free(bus);
        return r;
}

static int op_acquire_new(Fixture *f, int n) {
        int r;

        oom_arm(n);
        r = bridge_name_acquire(f->c[0], "t.new", 0);
        if (r)
                g_assert_null(bus_find_name(f->bus, "t.new"));
        return r;
}

static int op_acquire_queue(Fixture *f, int n) {
        int r;

        oom_arm(n);
        r = bridge_name_acquire(f->c[0], "t.svc", 0);
        if (r < 0)
                g_assert_cmpuint(f->c[0]->n_names, ==, 0);
        return r;
}

static int op_acquire_replace(Fixture *f, int n) {
        int r;

        oom_arm(n);
        r = bridge_name_acquire(f->c[0], "t.svc", BRIDGE_NAME_REPLACE_EXISTING);
        if (r < 0) {
                g_assert_true(bus_find_conn_by_name(f->bus, "t.svc") == f->c[1]);
                g_assert_cmpstr(f->ev.log->str, ==, "");
        }
        return r;
}

static int op_add_match(Fixture *f, int n) {
        BridgeMatchKeys k = { .member = "M", .path_namespace = "/a" };
        BridgeMatchRule *rule = NULL;
        int r;

        k.arg_kind[1] = BRIDGE_MATCH_ARG_STRING;
        k.arg[1] = "v";
        oom_arm(n);
        r = bridge_match_rule_new(&k, &rule);
        if (r)
                return r;
        return bridge_conn_add_match(f->c[0], rule);
}

static int op_call(Fixture *f, int n) {
        BridgeMsg *m;
        int r;

        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .destination = "t.svc" });
        oom_arm(n);
        r = bridge_conn_send(f->c[0], m);
        oom_disarm();
        bridge_msg_unref(m);
        if (r) {
                g_assert_cmpuint(f->c[0]->n_replies_out, ==, 0);
                g_assert_cmpuint(f->c[1]->queued_msgs, ==, 0);
        }
        return r;
}

static int op_broadcast(Fixture *f, int n) {
        BridgeMatchKeys k = { .member = "B" };
        BridgeMsg *m;
        BridgeMatchRule *rule;
        unsigned i;
        int r;

        for (i = 0; i < 3; ++i) {
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(f->c[i], rule), ==, 0);
        }
        m = test_msg_new(f->c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL, .member = "B" });
        oom_arm(n);
        r = bridge_conn_send(f->c[0], m);
        oom_disarm();
        bridge_msg_unref(m);
        return r;
}

static int op_stamp(Fixture *f, int n) {
        WireMsgSpec spec = { .type = WIRE_MSG_SIGNAL, .serial = 1, .path = "/", .interface = "t.I",
                             .member = "M" };
        BridgeMsg *m = NULL;
        uint8_t *data = NULL;
        WireHeader hdr;
        size_t size;
        int r;

        g_assert_cmpint(wire_message_build(&spec, NULL, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hdr), ==, 0);
        oom_arm(n);
        r = bridge_msg_new_stamped(data, &hdr, ":1.0", 1, &m);
        oom_disarm();
        free(data);
        bridge_msg_unref(m);
        return r;
}

static int op_bus_new(Fixture *f, int n) {
        Bus *bus = NULL;
        int r;

        oom_arm(n);
        r = bus_new(NULL, &bus);
        oom_disarm();

        bus_free(bus);
        return r;
}

/* A message as a peer sends it, for bridge_msg_new_stamped_cached(); free() it. */
static uint8_t *steady_msg(const WireMsgSpec *spec, WireHeader *ret_hdr) {
        uint8_t *data = NULL;
        size_t size;

        g_assert_cmpint(wire_message_build(spec, NULL, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, ret_hdr), ==, 0);
        return data;
}

static void steady_send(BridgeConn *from, const uint8_t *data, const WireHeader *hdr) {
        BridgeMsg *m = NULL;

        g_assert_cmpint(bridge_msg_new_stamped_cached(from->bus->msg_cache, data, hdr,
                                                      from->unique_name, from->id, &m), ==, 0);
        g_assert_cmpint(bridge_conn_send(from, m), ==, 0);
        bridge_msg_unref(m);
}

/* issue #2: no allocation per message in the steady state (calls, replies, broadcasts) */
static void test_steady_state(void) {
        WireMsgSpec call = { .type = WIRE_MSG_METHOD_CALL, .serial = 9, .path = "/",
                             .member = "Ping", .destination = "t.svc" };
        WireMsgSpec reply = { .type = WIRE_MSG_METHOD_RETURN, .serial = 3, .reply_serial = 9 };
        WireMsgSpec sig = { .type = WIRE_MSG_SIGNAL, .serial = 10, .path = "/", .interface = "t.I",
                            .member = "B" };
        BridgeMatchKeys k = { .member = "B" };
        uint8_t *call_data, *reply_data, *sig_data;
        WireHeader call_hdr, reply_hdr, sig_hdr;
        BridgeMatchRule *rule;
        unsigned round, i;
        Fixture f;

        setup_oom(&f);
        for (i = 1; i < 3; ++i) {
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(f.c[i], rule), ==, 0);
        }
        reply.destination = f.c[0]->unique_name;
        call_data = steady_msg(&call, &call_hdr);
        reply_data = steady_msg(&reply, &reply_hdr);
        sig_data = steady_msg(&sig, &sig_hdr);

        for (round = 0; round < 4; ++round) {
                unsigned long before = n_allocs;

                for (i = 0; i < 64; ++i)        /* 64 calls in flight */
                        steady_send(f.c[0], call_data, &call_hdr);
                for (i = 0; i < 64; ++i) {
                        g_assert_nonnull(bridge_conn_queue_peek(f.c[1]));
                        bridge_conn_queue_pop(f.c[1]);
                        steady_send(f.c[1], reply_data, &reply_hdr);
                }
                for (i = 0; i < 64; ++i) {
                        g_assert_cmpuint(bridge_conn_queue_peek(f.c[0])->hdr.reply_serial, ==, 9);
                        bridge_conn_queue_pop(f.c[0]);
                }
                for (i = 0; i < 64; ++i)
                        steady_send(f.c[0], sig_data, &sig_hdr);
                for (i = 0; i < 64; ++i) {
                        bridge_conn_queue_pop(f.c[1]);
                        bridge_conn_queue_pop(f.c[2]);
                }
                g_assert_null(bridge_conn_queue_peek(f.c[0]));
                g_assert_null(bridge_conn_queue_peek(f.c[1]));
                g_assert_null(bridge_conn_queue_peek(f.c[2]));
                g_test_message("round %u: %lu allocations", round, n_allocs - before);
                if (round == 0)
                        g_assert_cmpuint(n_allocs - before, >, 0);      /* the counter works */
                else
                        g_assert_cmpuint(n_allocs - before, ==, 0);
        }
        free(call_data);
        free(reply_data);
        free(sig_data);
        fixture_teardown(&f, NULL);
}

static void test_oom(gconstpointer ctx) {
        const OomCase *c = ctx;

        run_oom(c->op, c->expect);
}

int main(int argc, char **argv) {
        static const OomCase cases[] = {
                { "conn-new", op_conn_new, 0 },
                { "hello", op_hello, 0 },
                { "acquire-new", op_acquire_new, 0 },
                { "acquire-queue", op_acquire_queue, NAME_E_IN_QUEUE },
                { "acquire-replace", op_acquire_replace, 0 },
                { "add-match", op_add_match, 0 },
                { "call", op_call, 0 },
                { "broadcast", op_broadcast, 0 },
                { "stamp", op_stamp, 0 },
                { "bus-new", op_bus_new, 0 },
        };
        unsigned i;

        g_test_init(&argc, &argv, NULL);
        for (i = 0; i < ELEMENTSOF(cases); ++i) {
                char *path = g_strdup_printf("/bridge/oom/%s", cases[i].name);

                g_test_add_data_func(path, &cases[i], test_oom);
                g_free(path);
        }
        g_test_add_func("/bridge/oom/steady-state", test_steady_state);
        return g_test_run();
}
