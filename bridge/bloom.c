/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bloom filters for broadcast routing. The contract is one-sided: whenever a rule matches a
 * message exactly (bridge_match_rule_matches()), every bit of the rule's mask is set in the
 * message's filter. False positives are fine (the exact check follows); a false negative
 * would lose a signal. So a rule key adds an entry to the mask only if EVERY message that
 * satisfies the key carries that entry; a key that cannot be expressed that way adds
 * nothing.
 *
 * Entries ("prefix:value"), message side / rule side:
 *   message-type:<signal|method_call|method_return|error|N>   type='...'
 *   interface:<i>, member:<m>, path:<p>                       the same keys
 *   path-slash-prefix:<p> and :<q> for every q that is p cut
 *     just before one of its '/' (non-empty)                  path_namespace='q' (q != "/";
 *                                                              "/" matches every path)
 *   sender:<:1.sender_id> (org.freedesktop.DBus for id 0)     sender=':1.n' only: a
 *                                                              well-known sender name depends
 *                                                              on who owns it right now
 *   arg<N>:<s>           for each string (type s) argument    argN='s'
 *   arg0-dot-prefix:<s> and every cut before a '.'            arg0namespace='ns'
 *   (nothing)                                                 argNpath, destination: a path
 *                                                              rule also matches arguments
 *                                                              that are '/'-ended prefixes of
 *                                                              its value, and destination
 *                                                              resolves names: no entry is
 *                                                              common to every match
 * Entries longer than BLOOM_ENTRY_MAX are hashed truncated, on both sides alike: equal
 * entries stay equal, so this only adds false positives.
 *
 * Bit positions: BUS_BLOOM_N_HASH indices of log2(BUS_BLOOM_SIZE * 8) bits each, taken
 * in turn from the 64-bit SipHash-2-4 of the entry under fixed keys (the next key when a
 * hash has no bits left). The keys are constants so that native peers can build filters.
 */
#include <stdio.h>
#include <string.h>
#include "bridge/bloom.h"
#include "bridge/match.h"
#include "bridge/msg.h"
#include "util/siphash24.h"
#include "wire/message.h"

#define BLOOM_ENTRY_MAX 1024u
#define BLOOM_BITS (BUS_BLOOM_SIZE * 8u)
#define BLOOM_N_KEYS 4u

_Static_assert((BLOOM_BITS & (BLOOM_BITS - 1)) == 0, "bloom size must be a power of two");

/* "kdbus-compat-bl" + key index: fixed, public, the same for every bus */
static const uint8_t bloom_keys[BLOOM_N_KEYS][16] = {
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '0' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '1' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '2' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '3' },
};

static unsigned bloom_index_bits(void) {
        unsigned n = 0;

        while ((1u << n) < BLOOM_BITS)
                ++n;
        return n;
}

static void bloom_add_data(uint64_t bloom[BUS_BLOOM_WORDS], const void *data, size_t size) {
        unsigned bits = bloom_index_bits(), have = 0, key = 0, i;
        uint64_t h = 0;

        for (i = 0; i < BUS_BLOOM_N_HASH; ++i) {
                unsigned bit;

                if (have < bits) {
                        h = siphash24(data, size, bloom_keys[key % BLOOM_N_KEYS]);
                        ++key;
                        have = 64;
                }
                bit = (unsigned)(h & (BLOOM_BITS - 1));
                h >>= bits;
                have -= bits;
                bloom[bit / 64] |= UINT64_C(1) << (bit % 64);
        }
}

/* "prefix:" + the first @len bytes of @value, truncated to BLOOM_ENTRY_MAX, then hashed. */
static void bloom_add_n(uint64_t bloom[BUS_BLOOM_WORDS], const char *prefix, const char *value,
                        size_t len) {
        char buf[BLOOM_ENTRY_MAX];
        size_t p = strlen(prefix), n;

        if (p > sizeof(buf) - 1)
                p = sizeof(buf) - 1;
        memcpy(buf, prefix, p);
        buf[p++] = ':';
        n = MIN(len, sizeof(buf) - p);
        memcpy(buf + p, value, n);
        bloom_add_data(bloom, buf, p + n);
}

/**
 * bloom_add() - add the entry "@prefix:@value"
 * @bloom:      the filter or mask
 * @prefix:     the entry's kind
 * @value:      its value
 */
void bloom_add(uint64_t bloom[BUS_BLOOM_WORDS], const char *prefix, const char *value) {
        bloom_add_n(bloom, prefix, value, strlen(value));
}

/**
 * bloom_add_prefixes() - add "@prefix:@value" and "@prefix:" + every non-empty cut of
 * @value just before an occurrence of @sep
 * @bloom:      the filter
 * @prefix:     the entry's kind
 * @value:      e.g. "/a/b/c" with '/' adds /a/b/c, /a/b, /a
 * @sep:        the separator
 */
void bloom_add_prefixes(uint64_t bloom[BUS_BLOOM_WORDS], const char *prefix, const char *value,
                        char sep) {
        const char *p;

        bloom_add(bloom, prefix, value);
        for (p = strchr(value, sep); p; p = strchr(p + 1, sep))
                if (p > value)
                        bloom_add_n(bloom, prefix, value, (size_t)(p - value));
}

static void bloom_add_type(uint64_t bloom[BUS_BLOOM_WORDS], uint8_t type) {
        static const char *const names[] = {
                [WIRE_MSG_METHOD_CALL] = "method_call",
                [WIRE_MSG_METHOD_RETURN] = "method_return",
                [WIRE_MSG_ERROR] = "error",
                [WIRE_MSG_SIGNAL] = "signal",
        };
        char buf[4];

        if (type < ELEMENTSOF(names) && names[type]) {
                bloom_add(bloom, "message-type", names[type]);
                return;
        }
        (void) snprintf(buf, sizeof(buf), "%u", (unsigned)type);
        bloom_add(bloom, "message-type", buf);
}

static void bloom_arg_name(char buf[16], unsigned i, const char *suffix) {
        (void) snprintf(buf, 16, "arg%u%s", i, suffix);
}

/**
 * bridge_msg_compute_bloom_args() - fill @msg's filter (once)
 * @msg:        the message
 * @args:       its leading arguments (wire_message_get_args())
 */
void bridge_msg_compute_bloom_args(BridgeMsg *msg, const WireArgs *args) {
        const WireHeader *h = &msg->hdr;
        char name[16];
        unsigned i;

        if (msg->has_bloom)
                return;
        memset(msg->bloom, 0, sizeof(msg->bloom));
        bloom_add_type(msg->bloom, h->type);
        if (h->interface)
                bloom_add(msg->bloom, "interface", h->interface);
        if (h->member)
                bloom_add(msg->bloom, "member", h->member);
        if (h->path) {
                bloom_add(msg->bloom, "path", h->path);
                bloom_add_prefixes(msg->bloom, "path-slash-prefix", h->path, '/');
        }
        if (msg->sender_id == 0) {
                bloom_add(msg->bloom, "sender", "org.freedesktop.DBus");
        } else {
                char unique[24];

                /* the sending connection's unique name (what the exact check compares) */
                (void) snprintf(unique, sizeof(unique), ":1.%llu",
                                (unsigned long long)msg->sender_id);
                bloom_add(msg->bloom, "sender", unique);
        }
        for (i = 0; i < args->n_args; ++i) {
                if (args->type[i] != 's' || !args->str[i])
                        continue;
                bloom_arg_name(name, i, "");
                bloom_add(msg->bloom, name, args->str[i]);
                if (i == 0)
                        bloom_add_prefixes(msg->bloom, "arg0-dot-prefix", args->str[i], '.');
        }
        msg->has_bloom = true;
}

/**
 * bridge_msg_compute_bloom() - fill @msg's filter (once)
 * @msg:        the message
 */
void bridge_msg_compute_bloom(BridgeMsg *msg) {
        WireArgs args;

        if (msg->has_bloom)
                return;
        (void) bridge_msg_get_args(msg, &args);
        bridge_msg_compute_bloom_args(msg, &args);
}

/**
 * bloom_mask_from_keys() - the entries every message matching @keys carries
 * @mask:       zeroed, then filled
 * @keys:       the rule
 */
void bloom_mask_from_keys(uint64_t mask[BUS_BLOOM_WORDS], const BridgeMatchKeys *keys) {
        char name[16];
        unsigned i;

        memset(mask, 0, BUS_BLOOM_SIZE);
        if (keys->type)
                bloom_add_type(mask, keys->type);
        if (keys->interface)
                bloom_add(mask, "interface", keys->interface);
        if (keys->member)
                bloom_add(mask, "member", keys->member);
        if (keys->path)
                bloom_add(mask, "path", keys->path);
        if (keys->path_namespace && strcmp(keys->path_namespace, "/") != 0)
                bloom_add(mask, "path-slash-prefix", keys->path_namespace);
        if (keys->sender && keys->sender[0] == ':')
                bloom_add(mask, "sender", keys->sender);
        if (keys->arg0namespace)
                bloom_add(mask, "arg0-dot-prefix", keys->arg0namespace);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                if (keys->arg_kind[i] != BRIDGE_MATCH_ARG_STRING || !keys->arg[i])
                        continue;
                bloom_arg_name(name, i, "");
                bloom_add(mask, name, keys->arg[i]);
        }
}
