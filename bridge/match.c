/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Match rules of the core: exact dbus1 keys plus the bloom mask derived from them
 * (bridge/bloom.c explains which keys contribute). A connection's rules hang off it; while
 * it has at least one, it is linked in Bus.match_conns, the list broadcast routing walks.
 *
 * The exact semantics are the specification's, checked against dbus-daemon 1.14.10 with
 * dbus-python (see tests/unit/bridge/test-match.c):
 *   - a key the message lacks (no interface, fewer args, ...) fails the rule;
 *   - sender: the sender's unique name, or a well-known name of which the sender is the
 *     primary owner right now; a message of the bus matches only org.freedesktop.DBus;
 *   - destination: the message's destination, or a name that resolves to the same
 *     connection (dbus-daemon compares against the addressed recipient's names);
 *   - path_namespace='/a' matches /a and /a/b, not /ab; '/' matches every path;
 *   - argN: argument N is a string (type s, not o) equal to the value;
 *   - argNpath: argument N is an s or an o, and equal to the value, or one of the two ends
 *     with '/' and is a prefix of the other (arg0path='/aa/' matches '/', '/aa/', '/aa/b');
 *   - arg0namespace: argument 0 is a string equal to the value or starting with value + '.'.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bloom.h"
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/match-index.h"
#include "bridge/match.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "util/error.h"
#include "wire/protocol.h"

static bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static size_t keys_strings_size(const BridgeMatchKeys *k) {
        size_t n = 0;
        unsigned i;

#define ADD(s) do { if (s) n += strlen(s) + 1; } while (0)
        ADD(k->sender);
        ADD(k->interface);
        ADD(k->member);
        ADD(k->path);
        ADD(k->path_namespace);
        ADD(k->destination);
        ADD(k->arg0namespace);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i)
                if (k->arg_kind[i])
                        ADD(k->arg[i]);
#undef ADD
        return n;
}

static const char *keys_copy_string(char **pos, const char *s) {
        char *dst = *pos;
        size_t len;

        if (!s)
                return NULL;
        len = strlen(s) + 1;
        memcpy(dst, s, len);
        *pos += len;
        return dst;
}

/**
 * bridge_match_rule_new() - a rule with its own copy of @keys and its bloom mask
 * @keys:       the parsed rule (strings borrowed)
 * @ret:        the rule, not linked anywhere
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_match_rule_new(const BridgeMatchKeys *keys, BridgeMatchRule **ret) {
        BridgeMatchRule *rule;
        char *pos;
        unsigned i;

        rule = malloc(sizeof(*rule) + keys_strings_size(keys));
        if (!rule)
                return error_origin(-ENOMEM);
        memset(rule, 0, sizeof(*rule));
        list_init(&rule->conn_link);
        list_init(&rule->index_link);
        pos = rule->strings;
        rule->keys.type = keys->type;
        rule->keys.eavesdrop = keys->eavesdrop;
        rule->keys.peers_only = keys->peers_only;
        rule->keys.sender = keys_copy_string(&pos, keys->sender);
        rule->keys.interface = keys_copy_string(&pos, keys->interface);
        rule->keys.member = keys_copy_string(&pos, keys->member);
        rule->keys.path = keys_copy_string(&pos, keys->path);
        rule->keys.path_namespace = keys_copy_string(&pos, keys->path_namespace);
        rule->keys.destination = keys_copy_string(&pos, keys->destination);
        rule->keys.arg0namespace = keys_copy_string(&pos, keys->arg0namespace);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                if (!keys->arg_kind[i] || !keys->arg[i])
                        continue;
                rule->keys.arg_kind[i] = keys->arg_kind[i];
                rule->keys.arg[i] = keys_copy_string(&pos, keys->arg[i]);
        }
        bloom_mask_from_keys(rule->mask, &bloom_params_default, &rule->keys);

        *ret = rule;
        return 0;
}

/**
 * bridge_match_rule_free() - unlink from the owner and free
 * @rule:       the rule or NULL
 *
 * Return: NULL.
 */
BridgeMatchRule *bridge_match_rule_free(BridgeMatchRule *rule) {
        BridgeConn *owner;
        bool indexed;

        if (!rule)
                return NULL;
        owner = rule->owner;
        indexed = rule->index != NULL;
        match_index_remove(rule);
        list_unlink(&rule->conn_link);
        if (owner) {
                if (rule->keys.eavesdrop && owner->bus)
                        --owner->bus->n_eavesdrop_rules;
                --owner->n_matches;
                if (owner->bus)
                        --owner->bus->n_match_rules;
                if (!owner->n_matches) {
                        /* an ordinary connection's rules are indexed: it leaves match_conns */
                        if (indexed && owner->bus && list_is_linked(&owner->match_link))
                                --owner->bus->n_match_conns;
                        list_unlink(&owner->match_link);
                }
        }
        free(rule->gen_masks);
        free(rule->mask_ext);
        free(rule->mask_bits);
        free(rule);
        return NULL;
}

/**
 * bridge_match_keys_equal() - do @a and @b say the same thing?
 * @a:          keys
 * @b:          keys
 *
 * Return: true if every key is equal.
 */
bool bridge_match_keys_equal(const BridgeMatchKeys *a, const BridgeMatchKeys *b) {
        unsigned i;

        if (a->type != b->type || a->eavesdrop != b->eavesdrop || a->peers_only != b->peers_only ||
            !streq_ptr(a->sender, b->sender) || !streq_ptr(a->interface, b->interface) ||
            !streq_ptr(a->member, b->member) || !streq_ptr(a->path, b->path) ||
            !streq_ptr(a->path_namespace, b->path_namespace) ||
            !streq_ptr(a->destination, b->destination) ||
            !streq_ptr(a->arg0namespace, b->arg0namespace))
                return false;
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                uint8_t ka = a->arg[i] ? a->arg_kind[i] : 0, kb = b->arg[i] ? b->arg_kind[i] : 0;

                if (ka != kb || (ka && strcmp(a->arg[i], b->arg[i]) != 0))
                        return false;
        }
        return true;
}

/* Is @conn (NULL: the bus) the owner of @name: its unique name, or primary owner of it? */
static bool match_conn_has_name(const BridgeConn *conn, Bus *bus, const char *name) {
        BridgeName *n;

        if (!conn)
                return strcmp(name, WIRE_DRIVER_NAME) == 0;
        if (name[0] == ':')
                return strcmp(conn->unique_name, name) == 0;
        if (!bus)
                return false;
        n = bus_find_name(bus, name);
        return n && bridge_name_primary(n) == conn;
}

static bool match_path_prefix(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);

        /* a ends with '/' and is a prefix of b */
        return la > 0 && a[la - 1] == '/' && la <= lb && memcmp(a, b, la) == 0;
}

static bool match_args(const BridgeMatchKeys *k, const WireArgs *args) {
        unsigned i;

        if (k->arg0namespace) {
                const char *s;
                size_t n = strlen(k->arg0namespace);

                if (!args || args->n_args < 1 || args->type[0] != 's' || !args->str[0])
                        return false;
                s = args->str[0];
                if (strncmp(s, k->arg0namespace, n) != 0 || (s[n] != 0 && s[n] != '.'))
                        return false;
        }
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                const char *v = k->arg[i], *s;

                if (!k->arg_kind[i] || !v)
                        continue;
                if (!args || i >= args->n_args || !args->str[i])
                        return false;
                s = args->str[i];
                switch (k->arg_kind[i]) {
                case BRIDGE_MATCH_ARG_STRING:
                        if (args->type[i] != 's' || strcmp(s, v) != 0)
                                return false;
                        break;
                case BRIDGE_MATCH_ARG_PATH:
                        if (args->type[i] != 's' && args->type[i] != 'o')
                                return false;
                        if (strcmp(s, v) != 0 && !match_path_prefix(v, s) &&
                            !match_path_prefix(s, v))
                                return false;
                        break;
                default:
                        return false;
                }
        }
        return true;
}

/**
 * bridge_match_rule_matches() - the exact check
 * @rule:       the rule
 * @msg:        the message
 * @sender:     who sent it (NULL: the bus)
 * @args:       its leading arguments (wire_message_get_args()); NULL if the caller knows
 *              the rule has no argument keys
 *
 * Return: true if every key of @rule holds for @msg.
 */
bool bridge_match_rule_matches(const BridgeMatchRule *rule, const BridgeMsg *msg,
                               const BridgeConn *sender, const WireArgs *args) {
        const BridgeMatchKeys *k = &rule->keys;
        const WireHeader *h = &msg->hdr;
        Bus *bus = rule->owner ? rule->owner->bus : (sender ? sender->bus : NULL);

        if (k->type && k->type != h->type)
                return false;
        if (k->peers_only && msg->sender_id == 0)
                return false;
        if (k->interface && !streq_ptr(k->interface, h->interface))
                return false;
        if (k->member && !streq_ptr(k->member, h->member))
                return false;
        if (k->path && !streq_ptr(k->path, h->path))
                return false;
        if (k->path_namespace) {
                size_t n = strlen(k->path_namespace);

                if (!h->path)
                        return false;
                if (!(n == 1 && k->path_namespace[0] == '/') &&
                    (strncmp(h->path, k->path_namespace, n) != 0 ||
                     (h->path[n] != 0 && h->path[n] != '/')))
                        return false;
        }
        if (k->sender && !match_conn_has_name(sender, bus, k->sender))
                return false;
        if (k->destination) {
                BridgeConn *a, *b;

                if (!h->destination)
                        return false;
                if (strcmp(k->destination, h->destination) != 0) {
                        if (!bus)
                                return false;
                        a = bus_find_conn_by_name(bus, h->destination);
                        b = bus_find_conn_by_name(bus, k->destination);
                        if (!a || a != b)
                                return false;
                }
        }
        return match_args(k, args);
}

/**
 * bridge_match_rule_bloom_matches() - the bloom prefilter of broadcast routing
 * @rule:       the rule (in the bus's geometry: added with bridge_conn_add_match())
 * @msg:        the message, its filter computed (bridge_msg_compute_bloom())
 * @n_words:    the bus's filter size in 64-bit words
 *
 * Return: false if @msg cannot match @rule; true if the keys must decide.
 */
bool bridge_match_rule_bloom_matches(const BridgeMatchRule *rule, const BridgeMsg *msg,
                                     size_t n_words) {
        const uint64_t *filter = bridge_msg_bloom(msg);
        uint64_t g;

        if (!bridge_match_rule_mask_in(rule, filter, n_words))
                return false;
        if (!rule->n_generations)
                return true;
        /* kdbus: the mask of the filter's generation, or the newest the rule has */
        g = msg->bloom_generation < rule->n_generations ? msg->bloom_generation :
                                                          rule->n_generations - 1;
        return bloom_contains(filter, rule->gen_masks + g * n_words, n_words);
}

_Static_assert(BLOOM_MAX_SIZE * 8u <= UINT16_MAX + 1u, "a mask bit's number fits in uint16_t");

/**
 * bridge_match_rule_set_bloom() - compute @rule's mask in the geometry @p
 * @rule:       the rule
 * @p:          its bus's geometry
 *
 * Up to BUS_BLOOM_WORDS words the mask is the rule's own array. Past it (kdbus allows
 * 4096-byte filters; the session bus allows 50000 rules per connection) the mask is kept as
 * the numbers of its set bits when that is smaller than the whole mask: a rule of a few keys
 * sets a few times n_hash bits, so its mask costs tens of bytes where a copy of the mask
 * would cost up to 4 KiB, and a rule without entries (every native entry) costs nothing.
 *
 * Return: 0 or -ENOMEM (@rule unchanged).
 */
int bridge_match_rule_set_bloom(BridgeMatchRule *rule, const BloomParams *p) {
        uint64_t scratch[BLOOM_MAX_WORDS];
        size_t n_words = bloom_words(p), n_bits = 0, i, k = 0;
        uint64_t *ext = NULL;
        uint16_t *bits = NULL;

        if (n_words <= BUS_BLOOM_WORDS) {
                free(rule->mask_ext);
                free(rule->mask_bits);
                rule->mask_ext = NULL;
                rule->mask_bits = NULL;
                rule->n_mask_bits = 0;
                rule->mask_large = false;
                bloom_mask_from_keys(rule->mask, p, &rule->keys);
                return 0;
        }
        bloom_mask_from_keys(scratch, p, &rule->keys);
        for (i = 0; i < n_words; ++i)
                n_bits += (size_t)__builtin_popcountll(scratch[i]);
        if (n_bits * sizeof(uint16_t) < n_words * sizeof(uint64_t)) {
                if (n_bits) {
                        bits = malloc(n_bits * sizeof(uint16_t));
                        if (!bits)
                                return error_origin(-ENOMEM);
                }
                for (i = 0; i < n_words; ++i) {
                        uint64_t w = scratch[i];

                        while (w) {
                                bits[k++] = (uint16_t)(i * 64u + (unsigned)__builtin_ctzll(w));
                                w &= w - 1;
                        }
                }
        } else {
                ext = malloc(n_words * sizeof(uint64_t));
                if (!ext)
                        return error_origin(-ENOMEM);
                memcpy(ext, scratch, n_words * sizeof(uint64_t));
        }
        free(rule->mask_ext);
        free(rule->mask_bits);
        rule->mask_ext = ext;
        rule->mask_bits = bits;
        rule->n_mask_bits = (uint32_t)n_bits;
        rule->mask_large = true;
        return 0;
}

/**
 * bridge_match_rule_mask_in() - is every bit of @rule's mask set in @filter?
 * @rule:       the rule, its mask in @filter's geometry
 * @filter:     a message's filter
 * @n_words:    its size in 64-bit words
 *
 * Return: true if so.
 */
bool bridge_match_rule_mask_in(const BridgeMatchRule *rule, const uint64_t *filter,
                               size_t n_words) {
        uint32_t i;

        if (!rule->mask_large)
                return bloom_contains(filter, rule->mask, n_words);
        if (rule->mask_ext)
                return bloom_contains(filter, rule->mask_ext, n_words);
        for (i = 0; i < rule->n_mask_bits; ++i) {
                unsigned b = rule->mask_bits[i];

                if (!(filter[b / 64u] & (UINT64_C(1) << (b % 64u))))
                        return false;
        }
        return true;
}

/**
 * bridge_match_rule_mask_heap_size() - what @rule's mask takes on the heap
 * @rule:       the rule
 *
 * Return: bytes beyond the rule's own allocation.
 */
size_t bridge_match_rule_mask_heap_size(const BridgeMatchRule *rule) {
        if (rule->mask_ext)
                return malloc_usable_size(rule->mask_ext);
        if (rule->mask_bits)
                return malloc_usable_size(rule->mask_bits);
        return 0;
}

/**
 * bridge_conn_add_match() - give @conn a rule
 * @conn:       the connection
 * @rule:       a new rule, taken also on failure
 *
 * Return: 0, BRIDGE_E_MATCH_QUOTA (max_match_rules_per_connection), BRIDGE_E_NOT_ACTIVE, -ENOMEM.
 */
int bridge_conn_add_match(BridgeConn *conn, BridgeMatchRule *rule) {
        const BloomParams *bp;
        int r;

        if (!bridge_conn_is_active(conn)) {
                bridge_match_rule_free(rule);
                return BRIDGE_E_NOT_ACTIVE;
        }
        if (conn->n_matches >= conn->bus->limits.max_match_rules_per_connection) {
                bridge_match_rule_free(rule);
                return BRIDGE_E_MATCH_QUOTA;
        }
        /* bridge_match_rule_new() knows no bus: redo the mask in this bus's geometry */
        bp = &conn->bus->bloom;
        if (bp->size != bloom_params_default.size || bp->n_hash != bloom_params_default.n_hash) {
                r = bridge_match_rule_set_bloom(rule, bp);
                if (r < 0) {
                        bridge_match_rule_free(rule);
                        return error_trace(r);
                }
        }
        /* routing collects at most one receiver per indexed rule, without allocating */
        r = bus_route_reserve(conn->bus, conn->bus->match_index.n_rules +
                                         conn->bus->match_index_eavesdrop.n_rules + 1);
        if (r >= 0)
                r = match_index_add(rule->keys.eavesdrop ? &conn->bus->match_index_eavesdrop :
                                                           &conn->bus->match_index, rule);
        if (r < 0) {
                bridge_match_rule_free(rule);
                return error_trace(r);
        }
        rule->owner = conn;
        list_append(&conn->matches, &rule->conn_link);
        if (rule->keys.eavesdrop)
                ++conn->bus->n_eavesdrop_rules;
        if (conn->n_matches++ == 0) {
                /* match_conns is in the order of these numbers (routing's delivery order) */
                conn->match_seq = ++conn->bus->next_match_seq;
                list_append(&conn->bus->match_conns, &conn->match_link);
                ++conn->bus->n_match_conns;
        }
        ++conn->bus->n_match_rules;
        bus_stats_note_matches(conn->bus, conn);
        return 0;
}

/**
 * bridge_conn_remove_match() - RemoveMatch: drop the newest rule equal to @keys
 * @conn:       the connection
 * @keys:       the rule as parsed again
 *
 * Return: 0 or BRIDGE_E_MATCH_NOT_FOUND.
 */
int bridge_conn_remove_match(BridgeConn *conn, const BridgeMatchKeys *keys) {
        List *pos;

        for (pos = conn->matches.prev; pos != &conn->matches; pos = pos->prev) {
                BridgeMatchRule *rule = container_of(pos, BridgeMatchRule, conn_link);

                if (bridge_match_keys_equal(&rule->keys, keys)) {
                        bridge_match_rule_free(rule);
                        return 0;
                }
        }
        return BRIDGE_E_MATCH_NOT_FOUND;
}
