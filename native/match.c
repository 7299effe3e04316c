/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * MATCH_ADD and MATCH_REMOVE of native peers. A kdbus match entry becomes one core match
 * rule (bridge/match.h) whose exact keys are only the sender (NAME or ID item) and whose
 * bloom masks are the BLOOM_MASK items: broadcasts reach the peer when mask ⊆ the
 * message's filter, which the bus computes from the dbus1 header and arguments in its own
 * geometry (Bus.bloom; bridge/bloom.c: the entries and the fixed SipHash keys are public,
 * libkdbus builds masks the same way), on top of a native sender's BLOOM_FILTER item. As
 * in kdbus, a BLOOM_MASK is one or more generations of the bus's bloom size (EDOM for any
 * other size) and a filter of generation g is tested against the mask of generation
 * min(g, n - 1); several BLOOM_MASK items must all match. An entry without items matches
 * every broadcast. Entries are found again by the cookie the peer chose (NativeMatch
 * records).
 *
 * Notification items (NAME_ADD, NAME_REMOVE, NAME_CHANGE: kdbus_notify_name_change with
 * old/new id, KDBUS_MATCH_ID_ANY for any, and an optional name; ID_ADD, ID_REMOVE:
 * kdbus_notify_id_change with the id or ANY) subscribe to the bus's notifications
 * (native/notify.c). kdbus ANDs every rule of an entry, so an entry with notification items
 * gets no core rule: it matches a notification when all its items do and it has no other
 * item. Such entries count against max_match_rules_per_connection too.
 */
#include <stdlib.h>
#include <string.h>
#include "bridge/bloom.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/limits.h"
#include "bridge/match.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/items.h"
#include "native/match.h"
#include "util/error.h"
#include "wire/names.h"

/**
 * native_conn_matches_clear() - forget the match records (the core frees the rules)
 * @nc:         the connection, no longer active
 */
void native_conn_matches_clear(NativeConn *nc) {
        NativeMatch *m;

        while ((m = list_first_entry(&nc->matches, NativeMatch, link))) {
                list_unlink(&m->link);
                native_match_free(m);
        }
}

/* Remove every entry with @cookie. Return: how many. */
static unsigned matches_remove(NativeConn *nc, uint64_t cookie) {
        List *pos, *tmp;
        unsigned n = 0;

        list_for_each_safe(pos, tmp, &nc->matches) {
                NativeMatch *m = container_of(pos, NativeMatch, link);

                if (m->cookie != cookie)
                        continue;
                bridge_match_rule_free(m->rule);
                list_unlink(&m->link);
                native_match_free(m);
                ++n;
        }
        return n;
}

/* Append the notification item @item to @m. Return: 0, -EINVAL, -ENOMEM. */
static int match_add_notify(NativeMatch *m, const struct kdbus_item *item) {
        size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;
        NativeNotifyRule *rules, *r;

        rules = realloc(m->notify, (m->n_notify + 1) * sizeof(*rules));
        if (!rules)
                return -ENOMEM;
        m->notify = rules;
        r = memset(&rules[m->n_notify], 0, sizeof(*r));
        r->type = item->type;
        if (item->type == KDBUS_ITEM_ID_ADD || item->type == KDBUS_ITEM_ID_REMOVE) {
                if (len != sizeof(struct kdbus_notify_id_change))
                        return -EINVAL;
                r->new_id = item->id_change.id;
        } else {
                size_t nlen;

                if (len < sizeof(struct kdbus_notify_name_change))
                        return -EINVAL;
                r->old_id = item->name_change.old_id.id;
                r->new_id = item->name_change.new_id.id;
                nlen = len - sizeof(struct kdbus_notify_name_change);
                if (nlen) {     /* a name: NUL-terminated, valid */
                        const char *name = item->name_change.name;

                        if (nlen < 2 || name[nlen - 1] != '\0' || strlen(name) != nlen - 1 ||
                            !wire_bus_name_is_valid(name, nlen - 1))
                                return -EINVAL;
                        r->name = strdup(name);
                        if (!r->name)
                                return -ENOMEM;
                }
        }
        ++m->n_notify;
        return 0;
}

/*
 * AND one BLOOM_MASK item (@len bytes at @data) into the entry's masks *@masks
 * (*@n_gen generations of @n_words words): for every generation g, the combined mask holds
 * each item's mask of generation min(g, its count - 1), so testing min(g, n - 1) of the
 * combination equals testing each item. Return: 0, -EDOM, -EMSGSIZE, -ENOMEM.
 */
static int match_add_mask(uint64_t **masks, uint64_t *n_gen, size_t n_words,
                          const uint64_t *data, size_t len) {
        size_t row = n_words * sizeof(uint64_t);
        uint64_t n = len / row, g, have = *n_gen, total = have > n ? have : n;
        size_t i;

        if (len < row || len % row)
                return -EDOM;
        if (len > NATIVE_MATCH_MASK_MAX || total * row > NATIVE_MATCH_MASK_MAX)
                return -EMSGSIZE;
        if (total > have) {
                uint64_t *m = realloc(*masks, total * row);

                if (!m)
                        return -ENOMEM;
                /* new generations start as the newest one so far (all zero for none) */
                for (g = have; g < total; ++g) {
                        if (have)
                                memcpy(m + g * n_words, m + (have - 1) * n_words, row);
                        else
                                memset(m + g * n_words, 0, row);
                }
                *masks = m;
                *n_gen = total;
        }
        for (g = 0; g < total; ++g) {
                const uint64_t *src = data + (g < n ? g : n - 1) * n_words;

                for (i = 0; i < n_words; ++i)
                        (*masks)[g * n_words + i] |= src[i];
        }
        return 0;
}

/* Bytes of the BLOOM_MASK items @nc's entries hold. */
static uint64_t matches_mask_bytes(const NativeConn *nc) {
        size_t row = bloom_words(&nc->conn->bus->bloom) * sizeof(uint64_t);
        const List *pos;
        uint64_t n = 0;

        list_for_each(pos, &nc->matches) {
                const NativeMatch *m = container_of(pos, NativeMatch, link);

                if (m->rule)
                        n += m->rule->n_generations * row;
        }
        return n;
}

/* Entries (core rules and notification-only ones) of @nc. */
static unsigned matches_count(const NativeConn *nc) {
        const List *pos;
        unsigned n = 0;

        list_for_each(pos, &nc->matches)
                ++n;
        return n;
}

/**
 * native_conn_match_add() - MATCH_ADD
 * @nc:         the connection
 * @buf:        kdbus_cmd_match with BLOOM_MASK, NAME, ID and notification items
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * KDBUS_MATCH_REPLACE first removes the entries with the same cookie.
 *
 * Return: 0, or -EINVAL, -EDOM (a mask that is not a whole number of generations of the
 * bus's bloom size), -EMSGSIZE (an entry's masks over NATIVE_MATCH_MASK_MAX), -EMFILE (too
 * many matches, or masks over NATIVE_MATCH_MASKS_PER_CONN_MAX), -ENOMEM.
 */
int native_conn_match_add(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_match *cmd = buf;
        size_t n_words = bloom_words(&nc->conn->bus->bloom);
        uint64_t *masks = NULL, n_gen = 0;
        const struct kdbus_item *item;
        BridgeMatchKeys keys = { 0 };
        BridgeMatchRule *rule;
        NativeMatch *m;
        char idname[32];
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->notify_only = true;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_BLOOM_MASK:
                        m->notify_only = false;
                        r = match_add_mask(&masks, &n_gen, n_words, item->data64, len);
                        if (r) {
                                free(masks);
                                native_match_free(m);
                                return r;
                        }
                        break;
                case KDBUS_ITEM_NAME:
                        m->notify_only = false;
                        if (keys.sender || len < 2 || item->str[len - 1] != '\0' ||
                            strlen(item->str) != len - 1 ||
                            !wire_well_known_name_is_valid(item->str, len - 1))
                                goto einval;    /* kdbus: a sender id goes in an ID item */
                        keys.sender = item->str;
                        break;
                case KDBUS_ITEM_ID:
                        m->notify_only = false;
                        if (keys.sender || len != sizeof(uint64_t))
                                goto einval;
                        if (item->id == KDBUS_MATCH_ID_ANY)
                                break;
                        if (item->id == 0)
                                keys.sender = "org.freedesktop.DBus";
                        else {
                                bus_format_unique_name(nc->conn->bus, item->id, idname);
                                keys.sender = idname;
                        }
                        break;
                case KDBUS_ITEM_NAME_ADD:
                case KDBUS_ITEM_NAME_REMOVE:
                case KDBUS_ITEM_NAME_CHANGE:
                case KDBUS_ITEM_ID_ADD:
                case KDBUS_ITEM_ID_REMOVE:
                        r = match_add_notify(m, item);
                        if (r) {
                                free(masks);
                                native_match_free(m);
                                return r;
                        }
                        break;
                default:
                        goto einval;
                }
        }

        if (m->n_notify) {
                free(masks);
                /* no core rule: the entry only ever matches notifications */
                if (cmd->flags & KDBUS_MATCH_REPLACE)
                        (void) matches_remove(nc, cmd->cookie);
                if (matches_count(nc) >= nc->conn->bus->limits.max_match_rules_per_connection) {
                        native_match_free(m);
                        return -EMFILE;
                }
                m->cookie = cmd->cookie;
                list_append(&nc->matches, &m->link);
                cmd->return_flags = 0;
                return 0;
        }
        /* the masks are the peer's memory in the bus: at most NATIVE_MATCH_MASKS_PER_CONN_MAX
         * (those of the entries REPLACE would remove still count) */
        if (n_gen && n_gen * n_words * sizeof(uint64_t) >
                     NATIVE_MATCH_MASKS_PER_CONN_MAX - MIN(matches_mask_bytes(nc),
                                                           NATIVE_MATCH_MASKS_PER_CONN_MAX)) {
                free(masks);
                native_match_free(m);
                return -EMFILE;
        }
        /* the bus's own messages (the dbus1 driver's signals) only where the entry names it
         * (ID 0 or org.freedesktop.DBus) or has no item at all (it takes everything): any
         * other rule of a kdbus entry matched connections only (kdbus_match_rule_conn()),
         * and kdbus had no driver */
        keys.peers_only = cmd->size > sizeof(*cmd) &&
                          (!keys.sender || strcmp(keys.sender, "org.freedesktop.DBus") != 0);
        r = bridge_match_rule_new(&keys, &rule);
        if (r) {
                free(masks);
                native_match_free(m);
                return error_trace(r);
        }
        rule->gen_masks = masks;
        rule->n_generations = n_gen;
        if (cmd->flags & KDBUS_MATCH_REPLACE)
                (void) matches_remove(nc, cmd->cookie);
        r = bridge_conn_add_match(nc->conn, rule);      /* takes the rule, also on failure */
        if (r) {
                native_match_free(m);
                if (r < 0)
                        return error_trace(r);
                return r == BRIDGE_E_MATCH_QUOTA ? -EMFILE : native_errno_from_bridge(r);
        }
        m->cookie = cmd->cookie;
        m->rule = rule;
        list_append(&nc->matches, &m->link);
        cmd->return_flags = 0;
        return 0;

einval:
        free(masks);
        native_match_free(m);
        return -EINVAL;
}

/**
 * native_conn_match_remove() - MATCH_REMOVE: every entry with cmd->cookie
 * @nc:         the connection
 * @buf:        kdbus_cmd_match (no items)
 * @size:       bytes at @buf
 * @io:         the command's fds (none for this one)
 *
 * Return: 0, -EINVAL, or -EBADSLT (no entry with that cookie).
 */
int native_conn_match_remove(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_match *cmd = buf;

        cmd->return_flags = 0;
        return matches_remove(nc, cmd->cookie) ? 0 : -EBADSLT;
}
