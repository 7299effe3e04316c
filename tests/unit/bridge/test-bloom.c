/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bloom prefilter: for random rule/message pairs drawn from a small vocabulary (so that
 * exact matches are frequent), an exact match always implies mask ⊆ filter (no false
 * negative), and the prefilter still rejects a good share of the non-matching pairs
 * (it is not a no-op), in the default geometry and in others a bus can have (kdbusd
 * --native-bloom=, BUS_MAKE: sizes that are no power of two, one hash, 4096 bytes, an
 * n_hash past the cap). Plus the fixed hash: a recorded vector, so that filters stay what
 * native peers compute.
 */
#include "tests/unit/bridge/fixture.h"

#define BLOOM_VECTOR "00000080000000040000040000000000000000000001000000000000000001000000000000000000000000000000000000000011000000000000000000000001"

static const char *pick(const char *const *v, size_t n) {
        return v[g_test_rand_int_range(0, (gint32)n)];
}
#define PICK(v) pick((v), ELEMENTSOF(v))
#define MAYBE(p) (g_test_rand_int_range(0, 100) < (p))

static const char *const paths[] = { "/", "/a", "/a/b", "/ab", "/a/b/c", "/x" };
static const char *const namespaces[] = { "/", "/a", "/a/b", "/ab", "/x/y" };
static const char *const ifaces[] = { "t.I", "t.J" };
static const char *const members[] = { "M", "N" };
static const char *const argv_[] = { "x", "x.y", "x.y.z", "x.yz", "/", "/aa/", "/aa/b", "/aa",
                                     "o:/aa/b", "o:/aa", "u:" };
static const char *const rule_args[] = { "x", "x.y", "/", "/aa/", "/aa/b", "/aa" };
static const char *const senders[] = { ":1.1", ":1.2", "t.svc", "org.freedesktop.DBus" };
static const char *const dests[] = { ":1.2", "t.dst", ":1.3" };

static void random_msg(TestMsg *t) {
        unsigned i, n = (unsigned)g_test_rand_int_range(0, 4);

        memset(t, 0, sizeof(*t));
        t->type = MAYBE(80) ? WIRE_MSG_SIGNAL : WIRE_MSG_METHOD_CALL;
        t->flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        t->path = PICK(paths);
        t->interface = MAYBE(90) ? PICK(ifaces) : NULL;
        if (t->type == WIRE_MSG_SIGNAL && !t->interface)
                t->interface = "t.I";
        t->member = PICK(members);
        t->destination = MAYBE(30) ? PICK(dests) : NULL;
        for (i = 0; i < n; ++i)
                t->args[i] = PICK(argv_);
}

static void random_rule(BridgeMatchKeys *k) {
        unsigned i;

        memset(k, 0, sizeof(*k));
        if (MAYBE(30))
                k->type = MAYBE(70) ? WIRE_MSG_SIGNAL : WIRE_MSG_METHOD_CALL;
        if (MAYBE(25))
                k->sender = PICK(senders);
        if (MAYBE(30))
                k->interface = PICK(ifaces);
        if (MAYBE(30))
                k->member = PICK(members);
        if (MAYBE(15))
                k->path = PICK(paths);
        if (MAYBE(20))
                k->path_namespace = PICK(namespaces);
        if (MAYBE(10))
                k->destination = PICK(dests);
        if (MAYBE(15))
                k->arg0namespace = MAYBE(50) ? "x" : "x.y";
        for (i = 0; i < 3; ++i) {
                if (!MAYBE(15))
                        continue;
                k->arg_kind[i] = MAYBE(50) ? BRIDGE_MATCH_ARG_STRING : BRIDGE_MATCH_ARG_PATH;
                k->arg[i] = PICK(rule_args);
        }
}

static void setup3(Fixture *f, gconstpointer ctx) {
        unsigned i;

        fixture_setup(f, ctx);
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
        g_assert_cmpint(bridge_name_acquire(f->c[0], "t.svc", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f->c[1], "t.dst", 0), ==, 0);
}

static void test_no_false_negative(Fixture *f, gconstpointer ctx) {
        const BloomParams *bp = ctx ? ctx : &bloom_params_default;
        unsigned i, n_match = 0, n_miss = 0, n_filtered = 0, n = g_test_slow() ? 200000 : 20000;
        unsigned n_sparse = 0, n_dense = 0;
        static uint64_t mask[BLOOM_MAX_WORDS];

        for (i = 0; i < n; ++i) {
                BridgeConn *senders_c[] = { f->c[0], f->c[1], NULL };
                BridgeConn *sender = senders_c[g_test_rand_int_range(0, 3)];
                BridgeMatchRule *rule = NULL;
                BridgeMatchKeys k;
                BridgeMsg *m;
                WireArgs args;
                TestMsg t;
                bool exact, pre;

                random_msg(&t);
                random_rule(&k);
                m = test_msg_new(sender, &t);
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                rule->owner = f->c[2];
                g_assert_cmpint(wire_message_get_args(m->data, &m->hdr, &args), ==, 0);
                g_assert_cmpint(bridge_msg_compute_bloom(m, bp), ==, 0);
                exact = bridge_match_rule_matches(rule, m, sender, &args);
                bloom_mask_from_keys(mask, bp, &rule->keys);
                pre = bloom_contains(bridge_msg_bloom(m), mask, bloom_words(bp));
                /* the form the rule keeps its mask in decides as the whole mask does */
                g_assert_cmpint(bridge_match_rule_set_bloom(rule, bp), ==, 0);
                g_assert_cmpint(bridge_match_rule_mask_in(rule, bridge_msg_bloom(m),
                                                          bloom_words(bp)), ==, pre);
                n_sparse += rule->mask_bits != NULL;
                n_dense += rule->mask_ext != NULL;
                if (exact && !pre)
                        g_error("false negative: msg path=%s iface=%s member=%s dest=%s "
                                "arg0=%s arg1=%s arg2=%s from %s; rule type=%u sender=%s "
                                "iface=%s member=%s path=%s ns=%s dest=%s arg0ns=%s "
                                "arg0=%u:%s arg1=%u:%s arg2=%u:%s",
                                t.path, t.interface, t.member, t.destination, t.args[0],
                                t.args[1], t.args[2], sender ? sender->unique_name : "bus",
                                k.type, k.sender, k.interface, k.member, k.path,
                                k.path_namespace, k.destination, k.arg0namespace,
                                k.arg_kind[0], k.arg[0], k.arg_kind[1], k.arg[1],
                                k.arg_kind[2], k.arg[2]);
                if (exact) {
                        ++n_match;
                } else {
                        ++n_miss;
                        if (!pre)
                                ++n_filtered;
                }
                rule->owner = NULL;
                bridge_match_rule_free(rule);
                bridge_msg_unref(m);
        }
        g_test_message("%llu/%llu: %u pairs: %u exact matches, %u misses of which %u rejected "
                       "by bloom; masks kept as bit numbers %u, whole %u",
                       (unsigned long long)bp->size, (unsigned long long)bp->n_hash, n,
                       n_match, n_miss, n_filtered, n_sparse, n_dense);
        /* both forms are taken where the filter is larger than a rule's own array: bit
         * numbers for rules of few entries, the whole mask for a 72-byte filter's dense ones */
        if (bloom_words(bp) > BUS_BLOOM_WORDS) {
                g_assert_cmpuint(n_sparse, >, 0);
                if (bp->size == 72)
                        g_assert_cmpuint(n_dense, >, 0);
        } else {
                g_assert_cmpuint(n_sparse + n_dense, ==, 0);
        }
        /* the vocabulary makes matches common, and the filter must do real work (less of
         * it in 64 bits) */
        g_assert_cmpuint(n_match, >, n / 20);
        g_assert_cmpuint(n_filtered, >, n_miss / (bp->size >= 64 ? 3 : 10));
}

static void test_prefixes(Fixture *f, gconstpointer ctx) {
        uint64_t filter[BUS_BLOOM_WORDS] = { 0 }, mask[BUS_BLOOM_WORDS];
        const char *in[] = { "/a/b/c", "/a/b", "/a" };
        const char *out[] = { "/a/", "/a/b/c/d", "/b", "/a/c" };
        unsigned i, n_out = 0;

        bloom_add_prefixes(filter, &bloom_params_default, "p", "/a/b/c", '/');
        for (i = 0; i < ELEMENTSOF(in); ++i) {
                memset(mask, 0, sizeof(mask));
                bloom_add(mask, &bloom_params_default, "p", in[i]);
                g_assert_true(bloom_contains(filter, mask, BUS_BLOOM_WORDS));
        }
        for (i = 0; i < ELEMENTSOF(out); ++i) {
                memset(mask, 0, sizeof(mask));
                bloom_add(mask, &bloom_params_default, "p", out[i]);
                n_out += !bloom_contains(filter, mask, BUS_BLOOM_WORDS);
        }
        g_assert_cmpuint(n_out, >=, 3);        /* false positives are possible, not common */
}

static void test_vector(Fixture *f, gconstpointer ctx) {
        uint64_t bloom[BUS_BLOOM_WORDS] = { 0 };
        unsigned i, n_bits = 0;
        GString *s = g_string_new(NULL);

        bloom_add(bloom, &bloom_params_default, "member", "NameOwnerChanged");
        for (i = 0; i < BUS_BLOOM_WORDS; ++i) {
                n_bits += (unsigned)__builtin_popcountll(bloom[i]);
                g_string_append_printf(s, "%016llx", (unsigned long long)bloom[i]);
        }
        g_assert_cmpuint(n_bits, >=, BUS_BLOOM_N_HASH - 1);
        g_assert_cmpuint(n_bits, <=, BUS_BLOOM_N_HASH);
        g_assert_cmpstr(s->str, ==, BLOOM_VECTOR);
        g_string_free(s, TRUE);
}

/*
 * Other geometries: every bit stays inside the filter (sizes that are no power of two
 * reduce the index modulo the bits), one hash sets one bit, and an n_hash past one cycle
 * through the keys (kdbus accepts any) sets exactly the bits of the cycle, at its cost.
 */
static void test_geometry(Fixture *f, gconstpointer ctx) {
        static const BloomParams geo[] = { { 8, 1 }, { 24, 2 }, { 512, 3 }, { 4096, 5 } };
        unsigned i, w;

        for (i = 0; i < ELEMENTSOF(geo); ++i) {
                uint64_t bloom[BLOOM_MAX_WORDS + 1] = { 0 };
                unsigned n_bits = 0;

                bloom_add(bloom, &geo[i], "member", "NameOwnerChanged");
                for (w = 0; w < bloom_words(&geo[i]); ++w)
                        n_bits += (unsigned)__builtin_popcountll(bloom[w]);
                g_assert_cmpuint(bloom[bloom_words(&geo[i])], ==, 0);
                g_assert_cmpuint(n_bits, >=, 1);
                g_assert_cmpuint(n_bits, <=, geo[i].n_hash);
        }
        for (i = 0; i < 2; ++i) {
                /* 512 bytes: 12-bit indices, 5 per hash, 4 keys: a cycle of 20 */
                BloomParams cycle = { 512, 20 }, huge = { 512, UINT64_MAX }, less = { 512, 19 };
                uint64_t a[64] = { 0 }, b[64] = { 0 }, c[64] = { 0 };
                const char *v = i ? "org.example.Sig" : "x";

                bloom_add(a, &cycle, "member", v);
                bloom_add(b, &huge, "member", v);
                bloom_add(c, &less, "member", v);
                g_assert_cmpmem(a, sizeof(a), b, sizeof(b));
                for (w = 0; w < 64; ++w)
                        g_assert_cmpuint(c[w] & ~a[w], ==, 0);
        }
        g_assert_true(bloom_params_are_valid(8, 1));
        g_assert_true(bloom_params_are_valid(4096, UINT64_MAX));
        g_assert_false(bloom_params_are_valid(0, 1));
        g_assert_false(bloom_params_are_valid(12, 1));
        g_assert_false(bloom_params_are_valid(4104, 1));
        g_assert_false(bloom_params_are_valid(64, 0));
}

/*
 * A legacy rule's mask on a bus with 4096-byte filters: kept as the numbers of its bits, a
 * rule of three keys costs at most 3 * n_hash * 2 bytes, not 4 KiB (50000 rules, the session
 * bus's limit per connection, were 200 MB); a rule without bloom entries nothing. Each rule
 * still gets exactly the signals it matches.
 */
static void test_mask_size(Fixture *f, gconstpointer ctx) {
        static const BloomParams big = { 4096, 8 };
        const unsigned n_rules = 1000;
        size_t heap = 0;
        unsigned i;
        List *pos;

        f->bus->bloom = big;
        for (i = 0; i < 3; ++i)
                fixture_conn(f, i);
        for (i = 0; i < n_rules; ++i) {
                char member[32];
                BridgeMatchKeys k = { .type = WIRE_MSG_SIGNAL, .interface = "t.I",
                                      .member = member };
                BridgeMatchRule *rule = NULL;

                g_snprintf(member, sizeof(member), "M%u", i);
                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(f->c[1], rule), ==, 0);
        }
        {
                BridgeMatchKeys k = { .destination = ":1.1" };     /* no bloom entry */
                BridgeMatchRule *rule = NULL;

                g_assert_cmpint(bridge_match_rule_new(&k, &rule), ==, 0);
                g_assert_cmpint(bridge_conn_add_match(f->c[2], rule), ==, 0);
                g_assert_true(rule->mask_large);
                g_assert_cmpuint(bridge_match_rule_mask_heap_size(rule), ==, 0);
        }
        for (pos = f->c[1]->matches.next; pos != &f->c[1]->matches; pos = pos->next) {
                BridgeMatchRule *rule = container_of(pos, BridgeMatchRule, conn_link);
                /* what the mask asks of the allocator (one array of bit numbers); not
                 * malloc_usable_size(), whose rounding is the allocator's (glibc gives 48
                 * requested bytes 56 usable ones, its debug builds 72, ASan 48) */
                size_t size = rule->n_mask_bits * sizeof(*rule->mask_bits);

                g_assert_nonnull(rule->mask_bits);
                g_assert_null(rule->mask_ext);          /* never a copy of the 4 KiB filter */
                g_assert_cmpuint(rule->n_mask_bits, >=, 3);
                g_assert_cmpuint(rule->n_mask_bits, <=, 3 * big.n_hash);
                g_assert_cmpuint(size, <=, 3 * big.n_hash * sizeof(uint16_t));
                heap += size;
        }
        g_test_message("%u rules on a 4096/8 bus: %zu bytes of masks", n_rules, heap);
        g_assert_cmpuint(heap, <=, n_rules * 3 * big.n_hash * sizeof(uint16_t));
        for (i = 0; i < n_rules; i += 97) {
                char member[32];
                TestMsg t = { .type = WIRE_MSG_SIGNAL, .path = "/", .interface = "t.I",
                              .member = member, .flags = WIRE_FLAG_NO_REPLY_EXPECTED };

                g_snprintf(member, sizeof(member), "M%u", i);
                g_assert_cmpint(test_send(f->c[0], &t), ==, 0);
                g_assert_cmpstr(test_pop(f->c[1], NULL), ==, member);
                g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
                /* c[2]'s rule has no bloom entry: its exact keys decide (not for it) */
                g_assert_cmpstr(test_pop(f->c[2], NULL), ==, "");
        }
        {
                TestMsg t = { .type = WIRE_MSG_SIGNAL, .path = "/", .interface = "t.I",
                              .member = "Other", .flags = WIRE_FLAG_NO_REPLY_EXPECTED };

                g_assert_cmpint(test_send(f->c[0], &t), ==, 0);
                g_assert_cmpstr(test_pop(f->c[1], NULL), ==, "");
        }
}

int main(int argc, char **argv) {
        static const BloomParams geo[] = { { 8, 1 }, { 24, 2 }, { 72, UINT64_MAX },
                                           { 512, 3 }, { 4096, 7 }, { 64, UINT64_MAX } };
        unsigned i;

        g_test_init(&argc, &argv, NULL);
        g_test_add("/bridge/bloom/no-false-negative", Fixture, NULL, setup3,
                   test_no_false_negative, fixture_teardown);
        for (i = 0; i < ELEMENTSOF(geo); ++i) {
                char *name = g_strdup_printf("/bridge/bloom/no-false-negative/%llu-%llu",
                                             (unsigned long long)geo[i].size,
                                             (unsigned long long)geo[i].n_hash);

                g_test_add(name, Fixture, &geo[i], setup3, test_no_false_negative,
                           fixture_teardown);
                g_free(name);
        }
        g_test_add("/bridge/bloom/geometry", Fixture, NULL, fixture_setup, test_geometry,
                   fixture_teardown);
        g_test_add("/bridge/bloom/prefixes", Fixture, NULL, fixture_setup, test_prefixes,
                   fixture_teardown);
        g_test_add("/bridge/bloom/vector", Fixture, NULL, fixture_setup, test_vector,
                   fixture_teardown);
        g_test_add("/bridge/bloom/mask-size", Fixture, NULL, fixture_setup, test_mask_size,
                   fixture_teardown);
        return g_test_run();
}
