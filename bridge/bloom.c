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
 *   sender:<the stamped SENDER, the sender's unique name>    sender=':1.n' only: a
 *     (org.freedesktop.DBus for the bus itself)                well-known sender name depends
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
 * Bit positions, for a bus of m = size * 8 bits and n_hash hash functions: n_hash indices
 * of b = ceil(log2(m)) bits each, taken in turn from the low end of the 64-bit SipHash-2-4
 * of the entry under fixed keys (the next key when a hash has fewer than b bits left),
 * each reduced modulo m (a no-op when m is a power of two, as the default 512 bits are).
 * The keys are constants so that native peers can build filters. With 4 keys the indices
 * repeat after 4 * floor(64 / b) of them, so a larger n_hash (kdbus accepts any n_hash
 * >= 1) sets no other bit: the work per entry is capped there, and a bus made with
 * n_hash = 2^63 costs what one with 40 costs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bloom.h"
#include "bridge/match.h"
#include "bridge/msg.h"
#include "util/error.h"
#include "util/siphash24.h"
#include "wire/message.h"

#define BLOOM_ENTRY_MAX 1024u
#define BLOOM_N_KEYS 4u

_Static_assert(BUS_BLOOM_SIZE % 8 == 0 && BUS_BLOOM_SIZE >= BLOOM_MIN_SIZE &&
               BUS_BLOOM_SIZE <= BLOOM_MAX_SIZE && BUS_BLOOM_N_HASH >= 1,
               "the default geometry must be one BUS_MAKE would accept");

const BloomParams bloom_params_default = { .size = BUS_BLOOM_SIZE, .n_hash = BUS_BLOOM_N_HASH };

/* "kdbus-compat-bl" + key index: fixed, public, the same for every bus */
static const uint8_t bloom_keys[BLOOM_N_KEYS][16] = {
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '0' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '1' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '2' },
        { 'k', 'd', 'b', 'u', 's', '-', 'c', 'o', 'm', 'p', 'a', 't', '-', 'b', 'l', '3' },
};

/**
 * bloom_params_are_valid() - kdbus's checks of a BLOOM_PARAMETER (BUS_MAKE: EINVAL)
 * @size:       bytes: 8..4096, a multiple of 8
 * @n_hash:     at least 1
 *
 * Return: true if a bus may use them.
 */
bool bloom_params_are_valid(uint64_t size, uint64_t n_hash) {
        return size >= BLOOM_MIN_SIZE && size <= BLOOM_MAX_SIZE && size % 8 == 0 && n_hash >= 1;
}

static void bloom_add_data(uint64_t *bloom, const BloomParams *p, const void *data,
                           size_t size) {
        unsigned nbits = (unsigned)(p->size * 8u), bits = 0, have = 0, key = 0, i, n;
        uint64_t h = 0;

        while ((1u << bits) < nbits)
                ++bits;
        /* past one cycle through the keys the indices repeat (see the top) */
        n = BLOOM_N_KEYS * (64u / bits);
        if (p->n_hash < n)
                n = (unsigned)p->n_hash;
        for (i = 0; i < n; ++i) {
                unsigned bit;

                if (have < bits) {
                        h = siphash24(data, size, bloom_keys[key % BLOOM_N_KEYS]);
                        ++key;
                        have = 64;
                }
                bit = (unsigned)(h & ((UINT64_C(1) << bits) - 1)) % nbits;
                h >>= bits;
                have -= bits;
                bloom[bit / 64] |= UINT64_C(1) << (bit % 64);
        }
}

/* "prefix:" + the first @len bytes of @value, truncated to BLOOM_ENTRY_MAX, then hashed. */
static void bloom_add_n(uint64_t *bloom, const BloomParams *bp, const char *prefix,
                        const char *value, size_t len) {
        char buf[BLOOM_ENTRY_MAX];
        size_t p = strlen(prefix), n;

        if (p > sizeof(buf) - 1)
                p = sizeof(buf) - 1;
        memcpy(buf, prefix, p);
        buf[p++] = ':';
        n = MIN(len, sizeof(buf) - p);
        memcpy(buf + p, value, n);
        bloom_add_data(bloom, bp, buf, p + n);
}

/**
 * bloom_add() - add the entry "@prefix:@value"
 * @bloom:      the filter or mask, bloom_words(@p) words
 * @p:          the bus's geometry
 * @prefix:     the entry's kind
 * @value:      its value
 */
void bloom_add(uint64_t *bloom, const BloomParams *p, const char *prefix, const char *value) {
        bloom_add_n(bloom, p, prefix, value, strlen(value));
}

/**
 * bloom_add_prefixes() - add "@prefix:@value" and "@prefix:" + every non-empty cut of
 * @value just before an occurrence of @sep
 * @bloom:      the filter
 * @bp:         the bus's geometry
 * @prefix:     the entry's kind
 * @value:      e.g. "/a/b/c" with '/' adds /a/b/c, /a/b, /a
 * @sep:        the separator
 */
void bloom_add_prefixes(uint64_t *bloom, const BloomParams *bp, const char *prefix,
                        const char *value, char sep) {
        const char *p;

        bloom_add(bloom, bp, prefix, value);
        for (p = strchr(value, sep); p; p = strchr(p + 1, sep))
                if (p > value)
                        bloom_add_n(bloom, bp, prefix, value, (size_t)(p - value));
}

static void bloom_add_type(uint64_t *bloom, const BloomParams *p, uint8_t type) {
        static const char *const names[] = {
                [WIRE_MSG_METHOD_CALL] = "method_call",
                [WIRE_MSG_METHOD_RETURN] = "method_return",
                [WIRE_MSG_ERROR] = "error",
                [WIRE_MSG_SIGNAL] = "signal",
        };
        char buf[4];

        if (type < ELEMENTSOF(names) && names[type]) {
                bloom_add(bloom, p, "message-type", names[type]);
                return;
        }
        (void) snprintf(buf, sizeof(buf), "%u", (unsigned)type);
        bloom_add(bloom, p, "message-type", buf);
}

static void bloom_arg_name(char buf[16], unsigned i, const char *suffix) {
        (void) snprintf(buf, 16, "arg%u%s", i, suffix);
}

/* Where @msg's filter lives for @p, zeroed unless a sender's filter is in it. */
static uint64_t *msg_bloom_storage(BridgeMsg *msg, const BloomParams *p) {
        size_t n = bloom_words(p);

        if (n <= BUS_BLOOM_WORDS)
                return msg->bloom;
        if (!msg->bloom_ext)
                msg->bloom_ext = calloc(n, sizeof(uint64_t));
        return msg->bloom_ext;
}

/**
 * bridge_msg_set_sender_bloom() - start @msg's filter with a native sender's BLOOM_FILTER
 * @msg:        the message, its filter not computed yet
 * @p:          the bus's geometry (the item's size was checked against it)
 * @data:       bloom_words(@p) words
 * @generation: the item's generation (kdbus: picks the generation of a match's mask)
 *
 * The bus still adds its own entries (bridge_msg_compute_bloom()): a sender can add
 * entries (false positives for exact rules, as in kdbus), not hide from a rule.
 * Return: 0 or -ENOMEM.
 */
int bridge_msg_set_sender_bloom(BridgeMsg *msg, const BloomParams *p, const uint64_t *data,
                                uint64_t generation) {
        uint64_t *bloom = msg_bloom_storage(msg, p);

        if (!bloom)
                return error_origin(-ENOMEM);
        memcpy(bloom, data, bloom_words(p) * sizeof(uint64_t));
        msg->bloom_seeded = true;
        msg->bloom_generation = generation;
        return 0;
}

/**
 * bridge_msg_compute_bloom_args() - fill @msg's filter (once)
 * @msg:        the message
 * @p:          the bus's geometry
 * @args:       its leading arguments (wire_message_get_args())
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_msg_compute_bloom_args(BridgeMsg *msg, const BloomParams *p, const WireArgs *args) {
        const WireHeader *h = &msg->hdr;
        uint64_t *bloom;
        char name[16];
        unsigned i;

        if (msg->has_bloom)
                return 0;
        bloom = msg_bloom_storage(msg, p);
        if (!bloom)
                return error_origin(-ENOMEM);
        if (!msg->bloom_seeded)
                memset(bloom, 0, bloom_words(p) * sizeof(uint64_t));
        bloom_add_type(bloom, p, h->type);
        if (h->interface)
                bloom_add(bloom, p, "interface", h->interface);
        if (h->member)
                bloom_add(bloom, p, "member", h->member);
        if (h->path) {
                bloom_add(bloom, p, "path", h->path);
                bloom_add_prefixes(bloom, p, "path-slash-prefix", h->path, '/');
        }
        if (msg->sender_id == 0)
                bloom_add(bloom, p, "sender", "org.freedesktop.DBus");
        else if (h->sender)
                /* the SENDER the bus stamped: the sending connection's unique name, in the
                 * bus's one numbering (what the exact check compares, and what a native
                 * mask and a legacy rule both hold) */
                bloom_add(bloom, p, "sender", h->sender);
        for (i = 0; i < args->n_args; ++i) {
                if (args->type[i] != 's' || !args->str[i])
                        continue;
                bloom_arg_name(name, i, "");
                bloom_add(bloom, p, name, args->str[i]);
                if (i == 0)
                        bloom_add_prefixes(bloom, p, "arg0-dot-prefix", args->str[i], '.');
        }
        msg->has_bloom = true;
        return 0;
}

/**
 * bridge_msg_compute_bloom() - fill @msg's filter (once)
 * @msg:        the message
 * @p:          the bus's geometry
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_msg_compute_bloom(BridgeMsg *msg, const BloomParams *p) {
        WireArgs args;
        int r;

        if (msg->has_bloom)
                return 0;
        r = bridge_msg_get_args(msg, &args);
        if (r == -ENOMEM)
                return error_trace(r);
        return bridge_msg_compute_bloom_args(msg, p, &args);
}

/**
 * bloom_mask_from_keys() - the entries every message matching @keys carries
 * @mask:       zeroed, then filled (bloom_words(@p) words)
 * @p:          the bus's geometry
 * @keys:       the rule
 */
void bloom_mask_from_keys(uint64_t *mask, const BloomParams *p, const BridgeMatchKeys *keys) {
        char name[16];
        unsigned i;

        memset(mask, 0, bloom_words(p) * sizeof(uint64_t));
        if (keys->type)
                bloom_add_type(mask, p, keys->type);
        if (keys->interface)
                bloom_add(mask, p, "interface", keys->interface);
        if (keys->member)
                bloom_add(mask, p, "member", keys->member);
        if (keys->path)
                bloom_add(mask, p, "path", keys->path);
        if (keys->path_namespace && strcmp(keys->path_namespace, "/") != 0)
                bloom_add(mask, p, "path-slash-prefix", keys->path_namespace);
        if (keys->sender && keys->sender[0] == ':')
                bloom_add(mask, p, "sender", keys->sender);
        if (keys->arg0namespace)
                bloom_add(mask, p, "arg0-dot-prefix", keys->arg0namespace);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                if (keys->arg_kind[i] != BRIDGE_MATCH_ARG_STRING || !keys->arg[i])
                        continue;
                bloom_arg_name(name, i, "");
                bloom_add(mask, p, name, keys->arg[i]);
        }
}
