/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Bloom filters as kdbus used them for broadcasts: a message carries a filter with one
 * entry per property a rule may test ("interface:org.foo", "member:Bar", path prefixes,
 * argN values and prefixes); a rule carries a mask with the entries it requires. A rule
 * can match only if mask ⊆ filter. BUS_BLOOM_SIZE bytes, BUS_BLOOM_N_HASH hash functions
 * (SipHash-2-4 with fixed per-index keys, so native peers can compute the same filters).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bridge/limits.h"

void bloom_add(uint64_t bloom[BUS_BLOOM_WORDS], const char *prefix, const char *value);
/* Adds "prefix:value" for @value and every prefix of it ending just before @sep. */
void bloom_add_prefixes(uint64_t bloom[BUS_BLOOM_WORDS], const char *prefix, const char *value,
                        char sep);

static inline bool bloom_contains(const uint64_t filter[BUS_BLOOM_WORDS],
                                  const uint64_t mask[BUS_BLOOM_WORDS]) {
        unsigned i;

        for (i = 0; i < BUS_BLOOM_WORDS; ++i)
                if ((filter[i] & mask[i]) != mask[i])
                        return false;
        return true;
}

typedef struct BridgeMsg BridgeMsg;
/* Compute @msg's filter from its dbus1 header and arguments (once; cached in the msg). */
void bridge_msg_compute_bloom(BridgeMsg *msg);
/* The same with @args (wire_message_get_args() of @msg) already at hand. */
typedef struct WireArgs WireArgs;
void bridge_msg_compute_bloom_args(BridgeMsg *msg, const WireArgs *args);

/* The mask of a rule: the entries every message it matches has in its filter. */
typedef struct BridgeMatchKeys BridgeMatchKeys;
void bloom_mask_from_keys(uint64_t mask[BUS_BLOOM_WORDS], const BridgeMatchKeys *keys);
