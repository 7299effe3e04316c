/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The match index (bridge/match-index.h): what a rule is filed under, which rules a message
 * visits, and, against a scan of every rule of every connection (what routing did before
 * the index), that routing delivers to exactly the same receivers in the same order:
 * random rules, names, disconnects and messages (broadcasts, messages of the bus,
 * unicasts seen by eavesdroppers). GLib's test seed makes a failing run repeatable
 * (--seed).
 */
#include "bridge/match-index.h"
#include "tests/unit/bridge/fixture.h"

static BridgeMatchRule *add_rule(BridgeConn *conn, const BridgeMatchKeys *k) {
        BridgeMatchRule *rule = NULL;

        g_assert_cmpint(bridge_match_rule_new(k, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(conn, rule), ==, 0);
        return rule;
}

static unsigned n_groups_visited;

static void count_visit(MatchIndexGroup *group, void *userdata) {
        GPtrArray *seen = userdata;
        List *pos;

        ++n_groups_visited;
        g_assert_cmpuint(group->n_rules, >, 0);
        list_for_each(pos, &group->rules) {
                BridgeMatchRule *rule = container_of(pos, BridgeMatchRule, index_link);

                g_assert_true(rule->index_group == group);
                g_assert_false(g_ptr_array_find(seen, rule, NULL));     /* once each */
                g_ptr_array_add(seen, rule);
        }
}

/* The rules of the bus's index @msg from @sender visits. */
static GPtrArray *visited(Fixture *f, BridgeConn *sender, const TestMsg *t) {
        GPtrArray *seen = g_ptr_array_new();
        BridgeMsg *m = test_msg_new(sender, t);
        WireArgs args;

        g_assert_cmpint(bridge_msg_get_args(m, &args), ==, 0);
        n_groups_visited = 0;
        match_index_visit(&f->bus->match_index, m, sender, &args, count_visit, seen);
        match_index_visit(&f->bus->match_index_eavesdrop, m, sender, &args, count_visit, seen);
        bridge_msg_unref(m);
        return seen;
}

static void setup4(Fixture *f, gconstpointer ctx) {
        unsigned i;

        fixture_setup(f, ctx);
        for (i = 0; i < 4; ++i)
                fixture_conn(f, i);
}

#define SIG(...) (&(TestMsg){ .type = WIRE_MSG_SIGNAL, __VA_ARGS__ })

static void test_filing(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = f->c[1];
        BridgeMatchRule *r1, *r2, *r3, *r4, *w1, *w2, *p, *same;

        /* ties: argN first, then member, path, interface, sender */
        r1 = add_rule(a, &(BridgeMatchKeys){ .sender = ":1.1", .interface = "t.I",
                                             .member = "M", .path = "/p" });
        g_assert_cmpuint(match_index_rule_kind(r1), ==, MATCH_INDEX_MEMBER);
        /* then the smallest bucket: member M has one rule, path /p none */
        r2 = add_rule(a, &(BridgeMatchKeys){ .interface = "t.I", .member = "M", .path = "/p" });
        g_assert_cmpuint(match_index_rule_kind(r2), ==, MATCH_INDEX_PATH);
        /* equal keys: the same group (on another connection too) */
        same = add_rule(f->c[3], &(BridgeMatchKeys){ .interface = "t.I", .member = "M",
                                                     .path = "/p" });
        g_assert_true(same->index_group == r2->index_group);
        g_assert_cmpuint(r2->index_group->n_rules, ==, 2);
        r3 = add_rule(a, &(BridgeMatchKeys){ .type = WIRE_MSG_SIGNAL, .interface = "t.I",
                                             .member = "M", .path = "/p" });
        g_assert_cmpuint(match_index_rule_kind(r3), ==, MATCH_INDEX_INTERFACE);
        r4 = add_rule(a, &(BridgeMatchKeys){ .member = "M", .arg_kind[2] = BRIDGE_MATCH_ARG_STRING,
                                             .arg[2] = "x" });
        g_assert_cmpuint(match_index_rule_kind(r4), ==, MATCH_INDEX_ARG0 + 2);
        /* prefix keys are not exact: wildcard unless something else is there */
        w1 = add_rule(a, &(BridgeMatchKeys){ .type = WIRE_MSG_SIGNAL, .path_namespace = "/a",
                                             .arg0namespace = "x",
                                             .arg_kind[1] = BRIDGE_MATCH_ARG_PATH, .arg[1] = "/a/",
                                             .destination = ":1.2" });
        g_assert_cmpuint(match_index_rule_kind(w1), ==, MATCH_INDEX_WILDCARD);
        w2 = add_rule(a, &(BridgeMatchKeys){ 0 });
        g_assert_cmpuint(match_index_rule_kind(w2), ==, MATCH_INDEX_WILDCARD);
        p = add_rule(a, &(BridgeMatchKeys){ .path_namespace = "/a", .sender = "w.A" });
        g_assert_cmpuint(match_index_rule_kind(p), ==, MATCH_INDEX_SENDER);
        g_assert_cmpuint(f->bus->match_index.n_rules, ==, 8);
        g_assert_cmpuint(f->bus->match_index.groups.n_entries, ==, 7);
        g_assert_cmpuint(f->bus->match_index.buckets.n_entries, ==, 5);
        g_assert_cmpuint(f->bus->match_index.arg_kinds, ==, 1u << 2);

        /* an eavesdropper's rule is in the other index */
        add_rule(f->c[2], &(BridgeMatchKeys){ .member = "M", .eavesdrop = true });
        g_assert_cmpuint(f->bus->match_index.n_rules, ==, 8);
        g_assert_cmpuint(f->bus->match_index_eavesdrop.n_rules, ==, 1);

        /* a bucket goes with its last rule */
        bridge_match_rule_free(r4);
        g_assert_cmpuint(f->bus->match_index.arg_kinds, ==, 0);
        g_assert_cmpuint(f->bus->match_index.buckets.n_entries, ==, 4);
        bridge_match_rule_free(r1);
        g_assert_cmpuint(f->bus->match_index.buckets.n_entries, ==, 3);
        g_assert_cmpuint(f->bus->match_index.n_header[MATCH_INDEX_MEMBER], ==, 0);
        /* a disconnect takes every rule of the connection out */
        bridge_conn_disconnect(a);
        g_assert_cmpuint(same->index_group->n_rules, ==, 1);   /* f->c[3]'s is left */
        bridge_conn_disconnect(f->c[2]);
        bridge_conn_disconnect(f->c[3]);
        g_assert_cmpuint(f->bus->match_index.n_rules, ==, 0);
        g_assert_cmpuint(f->bus->match_index.groups.n_entries, ==, 0);
        g_assert_cmpuint(f->bus->match_index_eavesdrop.n_rules, ==, 0);
        g_assert_cmpuint(f->bus->match_index.buckets.n_entries, ==, 0);
        g_assert_true(list_is_empty(&f->bus->match_index.wildcard));
        g_assert_cmpuint(f->bus->n_match_conns, ==, 0);
}

static void test_visit(Fixture *f, gconstpointer ctx) {
        BridgeMatchRule *tick, *other, *iface, *arg, *wild;
        GPtrArray *seen;
        unsigned i;

        tick = add_rule(f->c[1], &(BridgeMatchKeys){ .interface = "t.I", .member = "Tick" });
        iface = add_rule(f->c[2], &(BridgeMatchKeys){ .interface = "t.I", .member = "Tock" });
        arg = add_rule(f->c[2], &(BridgeMatchKeys){ .member = "Tick",
                                                    .arg_kind[0] = BRIDGE_MATCH_ARG_STRING,
                                                    .arg[0] = "x" });
        wild = add_rule(f->c[3], &(BridgeMatchKeys){ .path_namespace = "/" });
        /* 1000 rules on other interfaces from another connection: never visited */
        for (i = 0; i < 1000; ++i) {
                char name[32];

                g_snprintf(name, sizeof(name), "o.I%u", i);
                other = add_rule(f->c[3], &(BridgeMatchKeys){ .interface = name, .member = "Tick" });
        }
        g_assert_cmpuint(match_index_rule_kind(other), ==, MATCH_INDEX_INTERFACE);

        seen = visited(f, f->c[0], SIG(.interface = "t.I", .member = "Tick"));
        g_assert_cmpuint(match_index_rule_kind(iface), ==, MATCH_INDEX_MEMBER);
        g_assert_cmpuint(n_groups_visited, ==, 2);
        g_assert_cmpuint(seen->len, ==, 2);
        g_assert_true(g_ptr_array_find(seen, tick, NULL));
        g_assert_true(g_ptr_array_find(seen, wild, NULL));      /* and not t.I.Tock */
        g_ptr_array_unref(seen);

        /* 100 connections' equal rules: one group, one check per message */
        for (i = 0; i < 100; ++i)
                add_rule(f->c[1 + i % 3], &(BridgeMatchKeys){ .interface = "t.I",
                                                              .member = "Tick" });
        g_assert_cmpuint(tick->index_group->n_rules, ==, 101);
        seen = visited(f, f->c[0], SIG(.interface = "t.I", .member = "Tick"));
        g_assert_cmpuint(seen->len, ==, 102);
        g_assert_cmpuint(n_groups_visited, ==, 2);
        g_ptr_array_unref(seen);

        /* arg0 'x' as a string finds the arg rule; as an object path it does not */
        seen = visited(f, f->c[0], SIG(.interface = "t.I", .member = "Tick", .args = { "x" }));
        g_assert_cmpuint(seen->len, ==, 103);
        g_assert_true(g_ptr_array_find(seen, arg, NULL));
        g_ptr_array_unref(seen);
        seen = visited(f, f->c[0], SIG(.interface = "t.I", .member = "Tick", .args = { "o:/x" }));
        g_assert_cmpuint(seen->len, ==, 102);
        g_ptr_array_unref(seen);
}

static void test_sender_names(Fixture *f, gconstpointer ctx) {
        BridgeConn *a = f->c[0], *b = f->c[1];
        BridgeMatchRule *by_unique, *by_name, *by_bus;
        GPtrArray *seen;

        by_unique = add_rule(f->c[2], &(BridgeMatchKeys){ .sender = a->unique_name });
        by_name = add_rule(f->c[2], &(BridgeMatchKeys){ .sender = "w.A" });
        by_bus = add_rule(f->c[2], &(BridgeMatchKeys){ .sender = "org.freedesktop.DBus" });

        seen = visited(f, a, SIG(.member = "M"));
        g_assert_cmpuint(seen->len, ==, 1);
        g_assert_true(g_ptr_array_find(seen, by_unique, NULL));
        g_ptr_array_unref(seen);

        /* the primary owner of w.A probes it; one queued for it does not */
        g_assert_cmpint(bridge_name_acquire(b, "w.A", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(a, "w.A", 0), ==, NAME_E_IN_QUEUE);
        seen = visited(f, a, SIG(.member = "M"));
        g_assert_cmpuint(seen->len, ==, 1);
        g_ptr_array_unref(seen);
        seen = visited(f, b, SIG(.member = "M"));
        g_assert_cmpuint(seen->len, ==, 1);
        g_assert_true(g_ptr_array_find(seen, by_name, NULL));
        g_ptr_array_unref(seen);
        g_assert_cmpint(bridge_name_release(b, "w.A"), ==, 0);
        seen = visited(f, a, SIG(.member = "M"));
        g_assert_cmpuint(seen->len, ==, 2);
        g_ptr_array_unref(seen);

        /* a message of the bus: org.freedesktop.DBus only */
        seen = visited(f, NULL, SIG(.member = "M"));
        g_assert_cmpuint(seen->len, ==, 1);
        g_assert_true(g_ptr_array_find(seen, by_bus, NULL));
        g_ptr_array_unref(seen);
}

/* ---- randomized equivalence with the scan of every rule ---- */

#define EQ_CONNS 7              /* f->c[0..6]; c[7] is never used */

typedef struct EqState {
        Fixture *f;
        GPtrArray *order;       /* BridgeConn, in the order queue_nonempty came */
        TestTransport t;
} EqState;

static EqState *eq_state;

static void eq_nonempty(BridgeConn *conn, void *userdata) {
        g_ptr_array_add(eq_state->order, conn);
}

static void eq_kick(BridgeConn *conn, void *userdata) {
        g_assert_not_reached();         /* queues are emptied after each message */
}

static const BridgeConnOps eq_ops = { .queue_nonempty = eq_nonempty, .kick = eq_kick };

static const char *pick(const char *const *v, size_t n) {
        return v[g_test_rand_int_range(0, (gint32)n)];
}

#define PICK(v) pick(v, G_N_ELEMENTS(v))

static const char *const eq_interfaces[] = { "a.I", "a.J", "b.K" };
static const char *const eq_members[] = { "M", "N", "O" };
static const char *const eq_paths[] = { "/", "/a", "/a/b", "/c" };
static const char *const eq_path_ns[] = { "/", "/a", "/a/b", "/c", "/ab" };
static const char *const eq_args[] = { "x", "y", "x.y", "/a/", "/a/b", "/", "o:/a/b", "o:/a" };
static const char *const eq_names[] = { "w.A", "w.B", "w.C" };
static const char *const eq_senders[] = { ":1.1", ":1.2", ":1.3", ":1.4", ":1.5", ":1.6",
                                          ":1.7", ":1.9", ":1.12", "w.A", "w.B", "w.C",
                                          "org.freedesktop.DBus" };

static void eq_random_keys(BridgeMatchKeys *k) {
        unsigned i;

        memset(k, 0, sizeof(*k));
        if (g_test_rand_int_range(0, 4) == 0)
                k->type = g_test_rand_bit() ? WIRE_MSG_SIGNAL : WIRE_MSG_METHOD_CALL;
        if (g_test_rand_int_range(0, 3) == 0)
                k->sender = PICK(eq_senders);
        if (g_test_rand_int_range(0, 2) == 0)
                k->interface = PICK(eq_interfaces);
        if (g_test_rand_int_range(0, 2) == 0)
                k->member = PICK(eq_members);
        if (g_test_rand_int_range(0, 4) == 0)
                k->path = PICK(eq_paths);
        if (g_test_rand_int_range(0, 6) == 0)
                k->path_namespace = PICK(eq_path_ns);
        if (g_test_rand_int_range(0, 8) == 0)
                k->destination = g_test_rand_bit() ? ":1.2" : "w.A";
        if (g_test_rand_int_range(0, 8) == 0)
                k->arg0namespace = g_test_rand_bit() ? "x" : "x.y";
        for (i = 0; i < 3; ++i) {
                const char *v = PICK(eq_args);

                if (g_test_rand_int_range(0, 4) != 0)
                        continue;
                if (g_str_has_prefix(v, "o:"))
                        v += 2;
                k->arg_kind[i] = g_test_rand_bit() ? BRIDGE_MATCH_ARG_STRING : BRIDGE_MATCH_ARG_PATH;
                k->arg[i] = v;
        }
        k->eavesdrop = g_test_rand_int_range(0, 5) == 0;
}

static void eq_connect(Fixture *f, unsigned i) {
        BridgeCreds creds = { .uid = 1000, .gid = 1000, .pidfd = -1 };

        f->c[i] = bridge_conn_unref(f->c[i]);
        g_assert_cmpint(bridge_conn_new(f->bus, &creds, BRIDGE_CONN_ACCEPT_FDS, &eq_ops, NULL,
                                        &f->c[i]), ==, 0);
        g_assert_cmpint(bridge_conn_hello(f->c[i]), ==, 0);
}

/* What the scan of every connection and rule delivered to (routing before the index). */
static GPtrArray *eq_scan(Fixture *f, BridgeConn *sender, const BridgeMsg *m,
                          const BridgeConn *addressed, bool eavesdrop_only) {
        GPtrArray *want = g_ptr_array_new();
        size_t n_words = bloom_words(&f->bus->bloom);
        BridgeMsg *copy = bridge_msg_ref((BridgeMsg *)m);
        WireArgs args;
        List *pos, *rpos;

        g_assert_cmpint(bridge_msg_get_args(copy, &args), ==, 0);
        g_assert_cmpint(bridge_msg_compute_bloom_args(copy, &f->bus->bloom, &args), ==, 0);
        list_for_each(pos, &f->bus->match_conns) {
                BridgeConn *conn = container_of(pos, BridgeConn, match_link);

                if (!conn->active || conn == addressed)
                        continue;
                list_for_each(rpos, &conn->matches) {
                        BridgeMatchRule *rule = container_of(rpos, BridgeMatchRule, conn_link);

                        if (eavesdrop_only && !rule->keys.eavesdrop)
                                continue;
                        if (bridge_match_rule_bloom_matches(rule, copy, n_words) &&
                            bridge_match_rule_matches(rule, copy, sender, &args)) {
                                g_ptr_array_add(want, conn);
                                break;
                        }
                }
        }
        bridge_msg_unref(copy);
        return want;
}

static void eq_drain(Fixture *f) {
        unsigned i;

        for (i = 0; i < EQ_CONNS; ++i)
                while (f->c[i] && bridge_conn_queue_peek(f->c[i]))
                        bridge_conn_queue_pop(f->c[i]);
        g_ptr_array_set_size(eq_state->order, 0);
}

static void eq_message(Fixture *f, unsigned *ret_deliveries) {
        TestMsg t = { .type = WIRE_MSG_SIGNAL, .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        int kind = g_test_rand_int_range(0, 6);
        BridgeConn *sender = f->c[g_test_rand_int_range(0, EQ_CONNS)], *dst = NULL;
        GPtrArray *want;
        BridgeMsg *m;
        unsigned i, n_args = (unsigned)g_test_rand_int_range(0, 4);

        t.interface = PICK(eq_interfaces);
        t.member = PICK(eq_members);
        t.path = PICK(eq_paths);
        for (i = 0; i < n_args; ++i)
                t.args[i] = PICK(eq_args);
        if (kind == 0)
                sender = NULL;                          /* a message of the bus */
        if (kind == 1) {                                /* a unicast: eavesdroppers only */
                dst = f->c[g_test_rand_int_range(0, EQ_CONNS)];
                t.destination = dst->unique_name;
                t.type = g_test_rand_bit() ? WIRE_MSG_SIGNAL : WIRE_MSG_METHOD_CALL;
        }
        m = test_msg_new(sender, &t);
        want = eq_scan(f, sender, m, dst, kind == 1);
        if (dst)
                g_ptr_array_insert(want, 0, dst);       /* the destination first */
        eq_drain(f);
        if (sender)
                g_assert_cmpint(bridge_conn_send(sender, m), ==, 0);
        else
                g_assert_cmpint(bus_broadcast(f->bus, m), ==, 0);
        if (want->len != eq_state->order->len ||
            (want->len && memcmp(want->pdata, eq_state->order->pdata,
                                 want->len * sizeof(void *)) != 0)) {
                GString *s = g_string_new(NULL);

                for (i = 0; i < want->len; ++i)
                        g_string_append_printf(s, " %s", ((BridgeConn *)want->pdata[i])->unique_name);
                g_string_append(s, " / got");
                for (i = 0; i < eq_state->order->len; ++i)
                        g_string_append_printf(s, " %s",
                                               ((BridgeConn *)eq_state->order->pdata[i])->unique_name);
                g_error("message %s.%s %s from %s: scan delivers to%s", t.interface, t.member,
                        t.path, sender ? sender->unique_name : "the bus", s->str);
        }
        *ret_deliveries += want->len;
        g_ptr_array_unref(want);
        bridge_msg_unref(m);
}

/*
 * A native entry as bridge/native-match.c makes it: at most a sender key, and BLOOM_MASK
 * items (here one or two generations, masks of random keys): the filter decides for it.
 */
static void eq_add_native(Fixture *f, BridgeConn *conn) {
        size_t n_words = bloom_words(&f->bus->bloom), g;
        BridgeMatchKeys k = { 0 }, mk;
        BridgeMatchRule *rule = NULL;

        if (g_test_rand_bit())
                k.sender = PICK(eq_senders);
        g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
        rule->n_generations = (uint64_t)g_test_rand_int_range(1, 3);
        rule->gen_masks = calloc(rule->n_generations * n_words, sizeof(uint64_t));
        g_assert_nonnull(rule->gen_masks);
        for (g = 0; g < rule->n_generations; ++g) {
                eq_random_keys(&mk);
                /* native masks hold what a libkdbus sender puts in its filter */
                mk.sender = NULL;
                mk.destination = NULL;
                bloom_mask_from_keys(rule->gen_masks + g * n_words, &f->bus->bloom, &mk);
        }
        g_assert_cmpint(bridge_conn_add_match(conn, rule), ==, 0);
}

static void eq_step(Fixture *f) {
        BridgeConn *conn = f->c[g_test_rand_int_range(0, EQ_CONNS)];
        int what = g_test_rand_int_range(0, 100);
        BridgeMatchKeys k;

        if (what < 45) {
                BridgeConn *other = f->c[g_test_rand_int_range(0, EQ_CONNS)];
                BridgeMatchRule *rule = NULL;

                eq_random_keys(&k);
                if (g_test_rand_int_range(0, 8) == 0) {
                        eq_add_native(f, conn);
                        return;
                }
                /* often another connection's rule again: equal keys share a group */
                if (other->n_matches && g_test_rand_bit()) {
                        unsigned n = (unsigned)g_test_rand_int_range(0, (gint32)other->n_matches);
                        List *pos = other->matches.next;

                        while (n--)
                                pos = pos->next;
                        k = container_of(pos, BridgeMatchRule, conn_link)->keys;
                }
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(conn, rule), ==, 0);
        } else if (what < 60) {
                /* RemoveMatch of a random rule of the connection */
                if (conn->n_matches) {
                        unsigned n = (unsigned)g_test_rand_int_range(0, (gint32)conn->n_matches);
                        List *pos = conn->matches.next;
                        BridgeMatchKeys keys;

                        while (n--)
                                pos = pos->next;
                        keys = container_of(pos, BridgeMatchRule, conn_link)->keys;
                        g_assert_cmpint(bridge_conn_remove_match(conn, &keys), ==, 0);
                }
        } else if (what < 72) {
                (void) bridge_name_acquire(conn, PICK(eq_names),
                                           g_test_rand_bit() ? BRIDGE_NAME_REPLACE_EXISTING : 0);
        } else if (what < 80) {
                (void) bridge_name_release(conn, PICK(eq_names));
        } else if (what < 83) {
                /* a new connection in its place (new id, names and rules gone) */
                unsigned i;

                for (i = 0; i < EQ_CONNS; ++i)
                        if (f->c[i] == conn)
                                break;
                eq_connect(f, i);
        } else {
                eq_message(f, &(unsigned){ 0 });
        }
}

static void eq_run(Fixture *f, const BloomParams *bloom) {
        EqState st = { .f = f, .order = g_ptr_array_new() };
        unsigned i, deliveries = 0, rules_max = 0, groups_at_max = 0;

        eq_state = &st;
        f->bus->bloom = *bloom;
        for (i = 0; i < EQ_CONNS; ++i)
                eq_connect(f, i);
        for (i = 0; i < 3000; ++i) {
                eq_step(f);
                if (f->bus->match_index.n_rules > rules_max) {
                        rules_max = f->bus->match_index.n_rules;
                        groups_at_max = (unsigned)f->bus->match_index.groups.n_entries;
                }
                /* and messages against the current state, often */
                if (i % 3 == 0)
                        eq_message(f, &deliveries);
        }
        g_test_message("bloom %llu/%llu: %u deliveries compared, up to %u rules (%u groups), "
                       "%u connections made", (unsigned long long)bloom->size,
                       (unsigned long long)bloom->n_hash, deliveries, rules_max, groups_at_max,
                       (unsigned)f->bus->next_conn_id - 1);
        g_assert_cmpuint(deliveries, >, 100);
        eq_drain(f);
        g_ptr_array_unref(st.order);
        eq_state = NULL;
}

static void test_equivalence(Fixture *f, gconstpointer ctx) {
        eq_run(f, &bloom_params_default);
}

static void test_equivalence_big_bloom(Fixture *f, gconstpointer ctx) {
        static const BloomParams big = { 4096, 8 };

        eq_run(f, &big);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/match-index/filing", Fixture, NULL, setup4, test_filing,
                   fixture_teardown);
        g_test_add("/bridge/match-index/visit", Fixture, NULL, setup4, test_visit,
                   fixture_teardown);
        g_test_add("/bridge/match-index/sender-names", Fixture, NULL, setup4, test_sender_names,
                   fixture_teardown);
        g_test_add("/bridge/match-index/equivalence", Fixture, NULL, fixture_setup,
                   test_equivalence, fixture_teardown);
        g_test_add("/bridge/match-index/equivalence-big-bloom", Fixture, NULL, fixture_setup,
                   test_equivalence_big_bloom, fixture_teardown);
        return g_test_run();
}
