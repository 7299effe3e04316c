/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Match rules in the core. A rule holds the exact dbus1 keys (what AddMatch said; compat
 * parses the string into BridgeMatchKeys) plus a bloom mask derived from them. A native
 * kdbus rule is the same object with no exact keys, only its BLOOM_MASK items (and sender
 * id/name). Broadcast routing finds the rules that can match through the bus's index
 * (bridge/match-index.h) and checks their exact keys; a native rule's masks must also be in
 * the message's filter (bridge/bloom.h). A mask made from keys is in the filter of every
 * message the keys match, so testing it first (as conn_rules_match() does for one
 * receiver's rules) can only save an exact check, never change a verdict.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "bridge/bloom.h"
#include "bridge/limits.h"
#include "util/list.h"
#include "util/macro.h"
#include "wire/message.h"

typedef struct BridgeConn BridgeConn;
typedef struct BridgeMsg BridgeMsg;

enum {
        BRIDGE_MATCH_ARG_NONE = 0,
        BRIDGE_MATCH_ARG_STRING,        /* argN='value': string arg equal */
        BRIDGE_MATCH_ARG_PATH,          /* argNpath='value': the specification's path-prefix rule */
};

/* What a rule says; strings are borrowed (copied by bridge_match_rule_new). */
typedef struct BridgeMatchKeys {
        uint8_t type;                   /* WireMsgType; 0: any */
        const char *sender;
        const char *interface;
        const char *member;
        const char *path;
        const char *path_namespace;
        const char *destination;
        const char *arg0namespace;
        bool eavesdrop;
        bool peers_only;                /* no message the bus itself sends (a native entry
                                         * that does not name the bus: kdbus had no driver) */
        uint8_t arg_kind[WIRE_MAX_MATCH_ARGS];  /* BRIDGE_MATCH_ARG_* per index */
        const char *arg[WIRE_MAX_MATCH_ARGS];
} BridgeMatchKeys;

typedef struct BridgeMatchRule {
        List conn_link;                 /* BridgeConn.matches */
        BridgeConn *owner;
        /* the bus's index (bridge/match-index.h), while its owner is an ordinary
         * connection: a monitor's rules are in none */
        List index_link;                /* MatchIndexGroup.rules */
        struct MatchIndex *index;       /* NULL: in no index */
        struct MatchIndexGroup *index_group;
        BridgeMatchKeys keys;           /* strings point into @strings */
        /* a native entry's BLOOM_MASK items (owned): n_generations masks of the bus's size;
         * a message's filter of generation g must contain the one at min(g, n - 1) */
        uint64_t *gen_masks;
        uint64_t n_generations;
        /* On a bus whose filter is larger than @mask, the keys' mask is kept in the smaller
         * of two forms (bridge_match_rule_set_bloom()): the numbers of its set bits,
         * ascending (@mask_bits, @n_mask_bits of them; none for a rule without bloom
         * entries, as every native entry is), or the whole mask (@mask_ext). A rule then
         * costs at most 2 bytes per bit its keys set, never a filter-sized block per rule. */
        uint64_t *mask_ext;             /* owned, or NULL */
        uint16_t *mask_bits;            /* owned, or NULL */
        uint32_t n_mask_bits;
        bool mask_large;                /* the bus's filter is larger than @mask: the mask is
                                         * @mask_ext or @mask_bits */
        uint64_t mask[BUS_BLOOM_WORDS]; /* bloom bits every matching message has (the
                                         * default geometry until bridge_conn_add_match()
                                         * puts it in the bus's) */
        char strings[];
} BridgeMatchRule;

/*
 * Put @rule's mask in the geometry @p (bridge_conn_add_match() does, for its bus).
 * Return: 0 or -ENOMEM (the rule keeps its old mask).
 */
int bridge_match_rule_set_bloom(BridgeMatchRule *rule, const BloomParams *p);
/* Is @rule's mask (of the last bridge_match_rule_set_bloom()) ⊆ @filter (@n_words long)? */
bool bridge_match_rule_mask_in(const BridgeMatchRule *rule, const uint64_t *filter,
                               size_t n_words);
/* The heap bytes @rule's mask takes beyond the rule itself (0 in the default geometry). */
size_t bridge_match_rule_mask_heap_size(const BridgeMatchRule *rule);

/* Return: 0 or -ENOMEM. */
int bridge_match_rule_new(const BridgeMatchKeys *keys, BridgeMatchRule **ret);
BridgeMatchRule *bridge_match_rule_free(BridgeMatchRule *rule);
DEFINE_CLEANUP(BridgeMatchRule *, bridge_match_rule_free);

/* Equal keys (RemoveMatch removes a rule equal to the one it names). */
bool bridge_match_keys_equal(const BridgeMatchKeys *a, const BridgeMatchKeys *b);

/*
 * Does @msg, sent by @sender (NULL: the bus), match @rule exactly? @args are the message's
 * argument strings (wire_message_get_args()), computed once per broadcast by the caller.
 */
bool bridge_match_rule_matches(const BridgeMatchRule *rule, const BridgeMsg *msg,
                               const BridgeConn *sender, const WireArgs *args);

/*
 * Could @msg match @rule as far as the bloom filters tell (@msg's filter computed with the
 * bus's geometry of @n_words words)? False: it cannot; true: check the keys.
 */
bool bridge_match_rule_bloom_matches(const BridgeMatchRule *rule, const BridgeMsg *msg,
                                     size_t n_words);

/*
 * Take @rule (also on failure); its mask is recomputed in the bus's bloom geometry.
 * Return: 0, BRIDGE_E_MATCH_QUOTA, BRIDGE_E_NOT_ACTIVE, -ENOMEM.
 */
int bridge_conn_add_match(BridgeConn *conn, BridgeMatchRule *rule);
/* Remove one rule equal to @keys. Return: 0 or BRIDGE_E_MATCH_NOT_FOUND. */
int bridge_conn_remove_match(BridgeConn *conn, const BridgeMatchKeys *keys);
