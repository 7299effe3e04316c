/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * MATCH_ADD and MATCH_REMOVE of native peers. A kdbus match entry becomes one core match
 * rule (bridge/match.h) whose exact keys are only the sender (NAME or ID item) and whose
 * bloom mask is the BLOOM_MASK item: broadcasts reach the peer when mask ⊆ the message's
 * filter, which the bus computes from the dbus1 header and arguments (bridge/bloom.c: the
 * entries and the fixed SipHash keys are public, libkdbus builds masks the same way); a
 * sender's BLOOM_FILTER item is not needed. An entry without items matches every
 * broadcast. Entries are found again by the cookie the peer chose (NativeMatch records).
 *
 * Not yet: the kernel notification subscriptions (NAME_ADD, NAME_REMOVE, NAME_CHANGE,
 * ID_ADD, ID_REMOVE items): EOPNOTSUPP; native peers see the driver's NameOwnerChanged
 * signals as dbus1 broadcasts instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/conn.h"
#include "bridge/limits.h"
#include "bridge/match.h"
#include "bridge/native-conn.h"
#include "kdbus/kdbus.h"
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
                free(m);
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
                free(m);
                ++n;
        }
        return n;
}

/**
 * native_conn_match_add() - MATCH_ADD
 * @nc:         the connection
 * @buf:        kdbus_cmd_match with BLOOM_MASK, NAME, ID items
 * @size:       bytes at @buf
 *
 * KDBUS_MATCH_REPLACE first removes the entries with the same cookie.
 *
 * Return: 0, or -EINVAL, -EDOM (a mask of another size than the bus's bloom size),
 * -EOPNOTSUPP (notification items), -EMFILE (too many matches), -ENOMEM.
 */
int native_conn_match_add(NativeConn *nc, void *buf, size_t size) {
        struct kdbus_cmd_match *cmd = buf;
        uint64_t mask[BUS_BLOOM_WORDS] = { 0 };
        const struct kdbus_item *item;
        BridgeMatchKeys keys = { 0 };
        BridgeMatchRule *rule;
        NativeMatch *m;
        char idname[32];
        unsigned i;
        int r;

        if (cmd->size < sizeof(*cmd) || cmd->size > size ||
            cmd->flags & ~(uint64_t)KDBUS_MATCH_REPLACE)
                return -EINVAL;
        r = native_items_check(cmd->items, cmd->size - sizeof(*cmd));
        if (r)
                return r;
        for (item = cmd->items; (const uint8_t *)item < (const uint8_t *)cmd + cmd->size;
             item = KDBUS_ITEM_NEXT(item)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_BLOOM_MASK:
                        if (len != BUS_BLOOM_SIZE)
                                return -EDOM;
                        for (i = 0; i < BUS_BLOOM_WORDS; ++i)
                                mask[i] |= item->data64[i];
                        break;
                case KDBUS_ITEM_NAME:
                        if (keys.sender || len < 2 || item->str[len - 1] != '\0' ||
                            strlen(item->str) != len - 1 ||
                            !wire_bus_name_is_valid(item->str, len - 1))
                                return -EINVAL;
                        keys.sender = item->str;
                        break;
                case KDBUS_ITEM_ID:
                        if (keys.sender || len != sizeof(uint64_t))
                                return -EINVAL;
                        if (item->id == KDBUS_MATCH_ID_ANY)
                                break;
                        if (item->id == 0)
                                keys.sender = "org.freedesktop.DBus";
                        else {
                                (void) snprintf(idname, sizeof(idname), ":1.%llu",
                                                (unsigned long long)item->id);
                                keys.sender = idname;
                        }
                        break;
                case KDBUS_ITEM_NAME_ADD:
                case KDBUS_ITEM_NAME_REMOVE:
                case KDBUS_ITEM_NAME_CHANGE:
                case KDBUS_ITEM_ID_ADD:
                case KDBUS_ITEM_ID_REMOVE:
                        return -EOPNOTSUPP;
                default:
                        return -EINVAL;
                }
        }

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        r = bridge_match_rule_new(&keys, &rule);
        if (r) {
                free(m);
                return error_trace(r);
        }
        for (i = 0; i < BUS_BLOOM_WORDS; ++i)
                rule->mask[i] |= mask[i];
        if (cmd->flags & KDBUS_MATCH_REPLACE)
                (void) matches_remove(nc, cmd->cookie);
        r = bridge_conn_add_match(nc->conn, rule);      /* takes the rule, also on failure */
        if (r) {
                free(m);
                return r == BRIDGE_E_MATCH_QUOTA ? -EMFILE : native_errno_from_bridge(r);
        }
        m->cookie = cmd->cookie;
        m->rule = rule;
        list_append(&nc->matches, &m->link);
        cmd->return_flags = 0;
        return 0;
}

/**
 * native_conn_match_remove() - MATCH_REMOVE: every entry with cmd->cookie
 * @nc:         the connection
 * @buf:        kdbus_cmd_match (no items)
 * @size:       bytes at @buf
 *
 * Return: 0, -EINVAL, or -EBADSLT (no entry with that cookie).
 */
int native_conn_match_remove(NativeConn *nc, void *buf, size_t size) {
        struct kdbus_cmd_match *cmd = buf;

        if (cmd->size != sizeof(*cmd) || cmd->size > size || cmd->flags)
                return -EINVAL;
        cmd->return_flags = 0;
        return matches_remove(nc, cmd->cookie) ? 0 : -EBADSLT;
}
