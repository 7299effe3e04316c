/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The index of match rules (see match-index.h for what it promises).
 *
 * Why the smallest bucket: rules that share one value (every client's
 * member='NameOwnerChanged') differ in another (arg0), and rules that share most keys often
 * differ in the sender. Filing each rule under the key whose bucket is smallest when it
 * comes spreads such rules over many buckets without knowing which keys are selective on
 * this bus; a rule never moves afterwards, so removal stays O(1). Ties go to the argN keys,
 * then member, path, interface, sender (the usual order of selectivity in session buses).
 *
 * Sender keys are filed by the name the rule gives: a unique name, a well-known name or
 * org.freedesktop.DBus. A broadcast probes its sender's unique name and each well-known
 * name the sender is primary owner of (BridgeConn.owned), which is exactly when
 * bridge_match_rule_matches() takes a sender key; a message of the bus probes
 * org.freedesktop.DBus only.
 *
 * Groups: a rule whose keys equal an indexed group's joins it (MatchIndex.groups finds it
 * by a hash of all keys), in that group's bucket. The verdict of bridge_match_rule_matches()
 * and of the bloom prefilter depends only on the keys, the bus and the message, so routing
 * decides once per group. A native entry with BLOOM_MASK items (n_generations) never joins
 * or takes members: its masks are its own.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/conn.h"
#include "bridge/match-index.h"
#include "bridge/match.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "util/error.h"
#include "util/siphash24.h"
#include "wire/protocol.h"

struct MatchIndexBucket {
        HashNode node;                  /* MatchIndex.buckets */
        List groups;                    /* MatchIndexGroup.link */
        unsigned n_rules;               /* in its groups */
        unsigned kind;                  /* MATCH_INDEX_* below MATCH_INDEX_WILDCARD */
        char value[];
};

/* Tie-break order of the kinds a rule can be filed under (lower first). */
static unsigned kind_rank(unsigned kind) {
        switch (kind) {
        case MATCH_INDEX_MEMBER:
                return 1;
        case MATCH_INDEX_PATH:
                return 2;
        case MATCH_INDEX_INTERFACE:
                return 3;
        case MATCH_INDEX_SENDER:
                return 4;
        default:
                return 0;               /* argN */
        }
}

static uint64_t bucket_hash(unsigned kind, const char *value) {
        /* the kind spreads equal values of different kinds over the table */
        return hash_string(value) + (uint64_t)(kind + 1) * UINT64_C(0x9e3779b97f4a7c15);
}

static MatchIndexBucket *bucket_find(const MatchIndex *idx, unsigned kind, const char *value,
                                     uint64_t hash) {
        HashNode *n;

        for (n = hash_table_lookup(&idx->buckets, hash); n; n = hash_node_next_match(n)) {
                MatchIndexBucket *b = container_of(n, MatchIndexBucket, node);

                if (b->kind == kind && strcmp(b->value, value) == 0)
                        return b;
        }
        return NULL;
}

/* The value @rule has for key @kind, or NULL if it has no such (indexable) key. */
static const char *rule_value(const BridgeMatchRule *rule, unsigned kind) {
        const BridgeMatchKeys *k = &rule->keys;
        unsigned i;

        switch (kind) {
        case MATCH_INDEX_SENDER:
                return k->sender;
        case MATCH_INDEX_INTERFACE:
                return k->interface;
        case MATCH_INDEX_MEMBER:
                return k->member;
        case MATCH_INDEX_PATH:
                return k->path;
        default:
                i = kind - MATCH_INDEX_ARG0;
                /* argNpath has prefix semantics: not an exact key */
                return k->arg_kind[i] == BRIDGE_MATCH_ARG_STRING ? k->arg[i] : NULL;
        }
}

static void count_kind(MatchIndex *idx, unsigned kind, bool add) {
        if (kind < MATCH_INDEX_ARG0) {
                idx->n_header[kind] += add ? 1u : -1u;
                return;
        }
        kind -= MATCH_INDEX_ARG0;
        idx->n_arg[kind] += add ? 1u : -1u;
        if (idx->n_arg[kind])
                idx->arg_kinds |= UINT64_C(1) << kind;
        else
                idx->arg_kinds &= ~(UINT64_C(1) << kind);
}

/**
 * match_index_init() - an empty index
 * @idx:        the index
 */
void match_index_init(MatchIndex *idx) {
        *idx = (MatchIndex)MATCH_INDEX_NULL(*idx);
}

/**
 * match_index_deinit() - free the tables of an index without rules
 * @idx:        the index
 */
void match_index_deinit(MatchIndex *idx) {
        assert(idx->n_rules == 0);
        hash_table_deinit(&idx->buckets);
        hash_table_deinit(&idx->groups);
}

static uint64_t keys_hash(const BridgeMatchKeys *k) {
        uint64_t h = k->type * UINT64_C(31) + k->eavesdrop + k->peers_only * UINT64_C(2);
        unsigned i;

#define MIX(s, tag) do { if (s) h = h * UINT64_C(0x100000001b3) ^ (hash_string(s) + (tag)); } while (0)
        MIX(k->sender, 1);
        MIX(k->interface, 2);
        MIX(k->member, 3);
        MIX(k->path, 4);
        MIX(k->path_namespace, 5);
        MIX(k->destination, 6);
        MIX(k->arg0namespace, 7);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i)
                if (k->arg_kind[i] && k->arg[i])
                        MIX(k->arg[i], 8u + i * 4u + k->arg_kind[i]);
#undef MIX
        return h;
}

static bool rule_is_groupable(const BridgeMatchRule *rule) {
        return rule->n_generations == 0;
}

static MatchIndexGroup *group_find(const MatchIndex *idx, const BridgeMatchRule *rule,
                                   uint64_t hash) {
        HashNode *n;

        for (n = hash_table_lookup(&idx->groups, hash); n; n = hash_node_next_match(n)) {
                MatchIndexGroup *g = container_of(n, MatchIndexGroup, node);
                const BridgeMatchRule *first = container_of(g->rules.next, BridgeMatchRule,
                                                            index_link);

                if (bridge_match_keys_equal(&first->keys, &rule->keys))
                        return g;
        }
        return NULL;
}

/* The key (kind, value) of @rule with the smallest bucket: *ret_kind MATCH_INDEX_WILDCARD if
 * it has none; *ret_bucket NULL if that bucket does not exist yet. */
static void rule_pick_key(const MatchIndex *idx, const BridgeMatchRule *rule,
                          unsigned *ret_kind, const char **ret_value, uint64_t *ret_hash,
                          MatchIndexBucket **ret_bucket) {
        MatchIndexBucket *best = NULL;
        unsigned kind, best_kind = MATCH_INDEX_WILDCARD, best_n = 0;
        uint64_t best_hash = 0;
        const char *best_value = NULL;

        for (kind = 0; kind < _MATCH_INDEX_KIND_N; ++kind) {
                const char *v = rule_value(rule, kind);
                MatchIndexBucket *b;
                uint64_t h;
                unsigned n;

                if (!v)
                        continue;
                h = bucket_hash(kind, v);
                b = bucket_find(idx, kind, v, h);
                n = b ? b->n_rules : 0;
                if (best_kind == MATCH_INDEX_WILDCARD || n < best_n ||
                    (n == best_n && kind_rank(kind) < kind_rank(best_kind))) {
                        best = b;
                        best_kind = kind;
                        best_n = n;
                        best_hash = h;
                        best_value = v;
                }
        }
        *ret_kind = best_kind;
        *ret_value = best_value;
        *ret_hash = best_hash;
        *ret_bucket = best;
}

/**
 * match_index_add() - file @rule: in the group of equal keys, or a new group under the key
 *                     with the smallest bucket
 * @idx:        the index
 * @rule:       a rule in no index
 *
 * Return: 0 or -ENOMEM (@rule is in no index then, and @idx unchanged).
 */
int match_index_add(MatchIndex *idx, BridgeMatchRule *rule) {
        bool groupable = rule_is_groupable(rule);
        uint64_t ghash = groupable ? keys_hash(&rule->keys) : 0, bhash;
        MatchIndexGroup *g = groupable ? group_find(idx, rule, ghash) : NULL;
        MatchIndexBucket *b = NULL, *new_b = NULL;
        const char *value;
        unsigned kind;
        int r;

        assert(!rule->index);
        if (!g) {
                rule_pick_key(idx, rule, &kind, &value, &bhash, &b);
                g = calloc(1, sizeof(*g));
                if (!g)
                        return error_origin(-ENOMEM);
                list_init(&g->rules);
                list_init(&g->link);
                if (kind != MATCH_INDEX_WILDCARD && !b) {
                        size_t len = strlen(value) + 1;

                        new_b = malloc(sizeof(*new_b) + len);
                        if (!new_b) {
                                free(g);
                                return error_origin(-ENOMEM);
                        }
                        new_b->kind = kind;
                        new_b->n_rules = 0;
                        list_init(&new_b->groups);
                        memcpy(new_b->value, value, len);
                        r = hash_table_insert(&idx->buckets, &new_b->node, bhash);
                        if (r < 0) {
                                free(new_b);
                                free(g);
                                return error_trace(r);
                        }
                        b = new_b;
                }
                if (groupable) {
                        r = hash_table_insert(&idx->groups, &g->node, ghash);
                        if (r < 0) {
                                if (new_b) {
                                        hash_table_remove(&idx->buckets, &new_b->node);
                                        free(new_b);
                                }
                                free(g);
                                return error_trace(r);
                        }
                }
                g->bucket = b;
                list_append(b ? &b->groups : &idx->wildcard, &g->link);
        }
        list_append(&g->rules, &rule->index_link);
        ++g->n_rules;
        if (g->bucket) {
                ++g->bucket->n_rules;
                count_kind(idx, g->bucket->kind, true);
        }
        rule->index = idx;
        rule->index_group = g;
        ++idx->n_rules;
        return 0;
}

/**
 * match_index_remove() - take @rule out of its index
 * @rule:       the rule; nothing happens if it is in none
 */
void match_index_remove(BridgeMatchRule *rule) {
        MatchIndex *idx = rule->index;
        MatchIndexGroup *g = rule->index_group;
        MatchIndexBucket *b;

        if (!idx)
                return;
        b = g->bucket;
        list_unlink(&rule->index_link);
        if (b) {
                count_kind(idx, b->kind, false);
                --b->n_rules;
        }
        if (--g->n_rules == 0) {
                if (rule_is_groupable(rule))
                        hash_table_remove(&idx->groups, &g->node);
                list_unlink(&g->link);
                free(g);
                if (b && list_is_empty(&b->groups)) {
                        hash_table_remove(&idx->buckets, &b->node);
                        free(b);
                }
        }
        --idx->n_rules;
        rule->index = NULL;
        rule->index_group = NULL;
}

/**
 * match_index_rule_kind() - what @rule is filed under
 * @rule:       a rule in an index
 *
 * Return: MATCH_INDEX_SENDER ... MATCH_INDEX_ARG0 + N, or MATCH_INDEX_WILDCARD.
 */
unsigned match_index_rule_kind(const BridgeMatchRule *rule) {
        const MatchIndexBucket *b = rule->index_group->bucket;

        return b ? b->kind : MATCH_INDEX_WILDCARD;
}

static void visit_list(const List *head, MatchIndexVisitFn fn, void *userdata) {
        const List *pos, *next;

        for (pos = head->next; pos != head; pos = next) {
                next = pos->next;
                fn(container_of(pos, MatchIndexGroup, link), userdata);
        }
}

static void visit_key(const MatchIndex *idx, unsigned kind, const char *value,
                      MatchIndexVisitFn fn, void *userdata) {
        const MatchIndexBucket *b;

        if (!value)
                return;
        b = bucket_find(idx, kind, value, bucket_hash(kind, value));
        if (b)
                visit_list(&b->groups, fn, userdata);
}

/**
 * match_index_visit() - every rule of @idx that @msg might match
 * @idx:        the index
 * @msg:        the message
 * @sender:     who sent it (NULL: the bus)
 * @args:       its arguments (bridge_msg_get_args(); no arguments for an invalid body)
 * @fn:         called once per rule found
 * @userdata:   passed to @fn
 */
void match_index_visit(const MatchIndex *idx, const BridgeMsg *msg, const BridgeConn *sender,
                       const WireArgs *args, MatchIndexVisitFn fn, void *userdata) {
        const WireHeader *h = &msg->hdr;
        uint64_t arg_kinds;

        visit_list(&idx->wildcard, fn, userdata);
        if (idx->buckets.n_entries == 0)
                return;

        if (idx->n_header[MATCH_INDEX_SENDER]) {
                if (!sender) {
                        visit_key(idx, MATCH_INDEX_SENDER, WIRE_DRIVER_NAME, fn, userdata);
                } else {
                        const List *pos;

                        visit_key(idx, MATCH_INDEX_SENDER, sender->unique_name, fn, userdata);
                        list_for_each(pos, &sender->owned) {
                                const BridgeNameOwner *o = container_of(pos, BridgeNameOwner,
                                                                        conn_link);

                                if (bridge_name_primary(o->name) == sender)
                                        visit_key(idx, MATCH_INDEX_SENDER, o->name->name, fn,
                                                  userdata);
                        }
                }
        }
        if (idx->n_header[MATCH_INDEX_INTERFACE])
                visit_key(idx, MATCH_INDEX_INTERFACE, h->interface, fn, userdata);
        if (idx->n_header[MATCH_INDEX_MEMBER])
                visit_key(idx, MATCH_INDEX_MEMBER, h->member, fn, userdata);
        if (idx->n_header[MATCH_INDEX_PATH])
                visit_key(idx, MATCH_INDEX_PATH, h->path, fn, userdata);

        /* argN='s' takes only a string argument (type s, not o) */
        arg_kinds = idx->arg_kinds;
        while (arg_kinds) {
                unsigned i = (unsigned)__builtin_ctzll(arg_kinds);

                arg_kinds &= arg_kinds - 1;
                if (!args || i >= args->n_args)
                        break;
                if (args->type[i] == 's')
                        visit_key(idx, MATCH_INDEX_ARG0 + i, args->str[i], fn, userdata);
        }
}
