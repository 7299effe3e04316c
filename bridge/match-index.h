/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The bus's index of match rules: a broadcast looks only at the rules that can match it.
 *
 * Each rule is filed under one of its exact keys, the one whose bucket was the smallest
 * when it was added: its sender, interface, member or path, or an argN='string' key. A
 * rule with none of these (only type, path_namespace, destination, arg0namespace, argNpath,
 * or nothing; a native entry without sender) is in the small wildcard list. A message can
 * match a rule filed under (key, value) only if the message's own value of that key is
 * value, so a broadcast probes each key kind that has rules with its own values (for the
 * sender: its unique name and each name it is primary owner of, or org.freedesktop.DBus
 * for the bus) and walks those buckets and the wildcard list. The caller still checks each
 * rule found in full (exact keys, and a native entry's masks; bridge/match.h): the index
 * only leaves out rules that cannot match, so routing decides exactly as a scan of every
 * rule would.
 *
 * Rules with equal keys (every subscriber's type='signal',interface='a.B',member='C') form
 * one group, checked once per message however many connections hold it; only a native
 * entry with BLOOM_MASK items is a group of its own (its masks are not its keys').
 *
 * Invariants: a rule is in at most one index, in exactly one group; a group is in exactly one
 * bucket or the wildcard list; a group or bucket without rules is freed at once. Removal
 * never fails or allocates; adding may fail with -ENOMEM, leaving the index unchanged.
 */
#include <stdbool.h>
#include <stdint.h>
#include "util/hash-table.h"
#include "util/list.h"
#include "wire/message.h"

typedef struct BridgeConn BridgeConn;
typedef struct BridgeMatchRule BridgeMatchRule;
typedef struct BridgeMsg BridgeMsg;

enum {
        MATCH_INDEX_SENDER,
        MATCH_INDEX_INTERFACE,
        MATCH_INDEX_MEMBER,
        MATCH_INDEX_PATH,
        MATCH_INDEX_ARG0,               /* ARG0 + N: argN='string' */
        _MATCH_INDEX_KIND_N = MATCH_INDEX_ARG0 + WIRE_MAX_MATCH_ARGS,
        MATCH_INDEX_WILDCARD = _MATCH_INDEX_KIND_N,     /* BridgeMatchRule.index_kind */
};

typedef struct MatchIndexBucket MatchIndexBucket;

/* Rules with equal keys in one index (BridgeMatchRule.index_group). */
typedef struct MatchIndexGroup {
        HashNode node;                  /* MatchIndex.groups, by the keys' hash */
        List link;                      /* MatchIndexBucket.groups or MatchIndex.wildcard */
        List rules;                     /* BridgeMatchRule.index_link, oldest first */
        unsigned n_rules;
        MatchIndexBucket *bucket;       /* NULL: in the wildcard list */
} MatchIndexGroup;

typedef struct MatchIndex {
        HashTable buckets;              /* MatchIndexBucket, by (kind, value) */
        HashTable groups;               /* MatchIndexGroup, by its keys */
        List wildcard;                  /* MatchIndexGroup.link */
        unsigned n_rules;               /* in buckets and the wildcard list */
        unsigned n_header[MATCH_INDEX_ARG0]; /* rules filed under each header key kind */
        unsigned n_arg[WIRE_MAX_MATCH_ARGS]; /* ... under argN */
        uint64_t arg_kinds;             /* bit N: n_arg[N] > 0 (WIRE_MAX_MATCH_ARGS is 64) */
} MatchIndex;

#define MATCH_INDEX_NULL(idx) {                                                 \
                .buckets = HASH_TABLE_NULL((idx).buckets),                      \
                .groups = HASH_TABLE_NULL((idx).groups),                        \
                .wildcard = LIST_INIT((idx).wildcard),                          \
        }

void match_index_init(MatchIndex *idx);
/* Frees the table; the index must have no rules left. */
void match_index_deinit(MatchIndex *idx);

/* File @rule (in no index yet) under its best key. Return: 0 or -ENOMEM (not filed). */
int match_index_add(MatchIndex *idx, BridgeMatchRule *rule);
/* Take @rule out of its index; nothing happens if it is in none. */
void match_index_remove(BridgeMatchRule *rule);

/* Called for each group that may match (its rules: group->rules, through
 * BridgeMatchRule.index_link); must not change any index. */
typedef void (*MatchIndexVisitFn)(MatchIndexGroup *group, void *userdata);

/*
 * Call @fn once for each group of @idx that @msg from @sender (NULL: the bus) can match by
 * its indexed key, in no particular order; @args are @msg's arguments
 * (bridge_msg_get_args()).
 */
void match_index_visit(const MatchIndex *idx, const BridgeMsg *msg, const BridgeConn *sender,
                       const WireArgs *args, MatchIndexVisitFn fn, void *userdata);

/* The kind a rule is filed under: MATCH_INDEX_* (tests, statistics). */
unsigned match_index_rule_kind(const BridgeMatchRule *rule);
