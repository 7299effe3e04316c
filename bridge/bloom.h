/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Bloom filters as kdbus used them for broadcasts: a message carries a filter with one
 * entry per property a rule may test ("interface:org.foo", "member:Bar", path prefixes,
 * argN values and prefixes); a rule carries a mask with the entries it requires. A rule
 * can match only if mask ⊆ filter. Each bus has its own geometry (BloomParams: kdbus's
 * bloom_size bytes and n_hash hash functions, BUS_BLOOM_SIZE / BUS_BLOOM_N_HASH unless
 * kdbusd --native-bloom= or BUS_MAKE said otherwise); a filter and the masks tested
 * against it must be built with the same one. SipHash-2-4 with fixed per-index keys, so
 * native peers can compute the same filters (libkdbus's kdbus_bloom_add()).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bridge/limits.h"

/* kdbus's bounds (KDBUS_BUS_BLOOM_MAX_SIZE): 8..4096 bytes, a multiple of 8; n_hash >= 1. */
#define BLOOM_MIN_SIZE 8u
#define BLOOM_MAX_SIZE 4096u
#define BLOOM_MAX_WORDS (BLOOM_MAX_SIZE / 8u)

/* A bus's filter geometry (kdbus_bloom_parameter). */
typedef struct BloomParams {
        uint64_t size;                  /* bytes */
        uint64_t n_hash;                /* hash functions (bit indices per entry) */
} BloomParams;

/* BUS_BLOOM_SIZE, BUS_BLOOM_N_HASH: kdbusd's own bus unless --native-bloom= */
extern const BloomParams bloom_params_default;

/* Within kdbus's bounds? */
bool bloom_params_are_valid(uint64_t size, uint64_t n_hash);
static inline size_t bloom_words(const BloomParams *p) {
        return (size_t)(p->size / 8u);
}

/* Add the entry "@prefix:@value" to @bloom (bloom_words(@p) words). */
void bloom_add(uint64_t *bloom, const BloomParams *p, const char *prefix, const char *value);
/* Adds "prefix:value" for @value and every prefix of it ending just before @sep. */
void bloom_add_prefixes(uint64_t *bloom, const BloomParams *p, const char *prefix,
                        const char *value, char sep);

/* mask ⊆ filter, both @n_words long */
static inline bool bloom_contains(const uint64_t *filter, const uint64_t *mask, size_t n_words) {
        size_t i;

        for (i = 0; i < n_words; ++i)
                if ((filter[i] & mask[i]) != mask[i])
                        return false;
        return true;
}

typedef struct BridgeMsg BridgeMsg;
/*
 * Compute @msg's filter with @p from its dbus1 header and arguments, on top of what a
 * native sender's BLOOM_FILTER item put there (bridge_msg_set_sender_bloom()); once,
 * cached in the msg. Return: 0 or -ENOMEM (a filter larger than the inline one).
 */
int bridge_msg_compute_bloom(BridgeMsg *msg, const BloomParams *p);
/* Seed @msg's filter with a native sender's BLOOM_FILTER (@p's words). 0 or -ENOMEM. */
int bridge_msg_set_sender_bloom(BridgeMsg *msg, const BloomParams *p, const uint64_t *data,
                                uint64_t generation);
/* The same with @args (wire_message_get_args() of @msg) already at hand. */
typedef struct WireArgs WireArgs;
int bridge_msg_compute_bloom_args(BridgeMsg *msg, const BloomParams *p, const WireArgs *args);

/* The mask of a rule: the entries every message it matches has in its filter (zeroed
 * first, bloom_words(@p) words). */
typedef struct BridgeMatchKeys BridgeMatchKeys;
void bloom_mask_from_keys(uint64_t *mask, const BloomParams *p, const BridgeMatchKeys *keys);
