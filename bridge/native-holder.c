/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy holders (kdbus.connection(7), KDBUS_HELLO_POLICY_HOLDER): privileged native
 * connections whose only purpose is to hold the bus's kdbus policy for one name (or name
 * prefix "a.b.*"): HELLO with a NAME item and POLICY_ACCESS items, UPDATE with new ones.
 * Their entries (owner: the connection) are Bus.holder_policy while they live; the checks
 * that use them are in name-policy.c, and the XML policy applies as well (both must
 * allow; a name without holder entry is the XML policy's alone, see bridge/endpoint.h).
 *
 * As in kdbus, a policy holder is no ordinary connection: it cannot send, receive, own
 * names, add matches or say BYEBYE (EOPNOTSUPP), nobody can send to it (ENXIO), and one
 * holder holds one name (E2BIG for more, EEXIST for a name another holder has).
 */
#include <errno.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/native-conn.h"
#include "bridge/native-policy.h"
#include "kdbus/kdbus.h"
#include "util/error.h"

/**
 * native_holder_set() - a policy holder's (new) entries
 * @nc:         the policy holder
 * @items:      HELLO's or UPDATE's items: one NAME, its POLICY_ACCESS items; other item
 *              types are skipped (checked by the caller)
 * @items_size: their size
 *
 * Return: 0, or -EINVAL (bad name or access item), -E2BIG (more than one NAME), -EEXIST
 * (another holder has the name), -ENOMEM; the old entries stay on error.
 */
int native_holder_set(NativeConn *nc, const struct kdbus_item *items, size_t items_size) {
        Bus *bus = nc->conn->bus;
        int r;

        if (!bus->holder_policy) {
                r = native_policy_db_new(&bus->holder_policy);
                if (r)
                        return r;
        }
        /* ids as the holder's user namespace sees them (read at its HELLO), as kdbus */
        return native_policy_db_set_ns(bus->holder_policy, items, items_size, 1, true, nc->conn,
                                       nc->ns);
}

/**
 * native_holder_drop() - the holder goes: its entries go with it
 * @nc:         any native connection
 */
void native_holder_drop(NativeConn *nc) {
        Bus *bus = nc->conn ? nc->conn->bus : NULL;

        if (bus && bus->holder_policy && (nc->hello_flags & KDBUS_HELLO_POLICY_HOLDER))
                native_policy_db_remove_owner(bus->holder_policy, nc->conn);
}

/**
 * native_holder_may() - may a policy holder run @command?
 * @nc:         the connection
 * @command:    KDBUS_CMD_*
 *
 * Return: true for anything but a policy holder; for one, only UPDATE, LIST, CONN_INFO,
 * BUS_CREATOR_INFO and FREE (kdbus: it is no ordinary connection).
 */
bool native_holder_may(const NativeConn *nc, uint64_t command) {
        if (!(nc->hello_flags & KDBUS_HELLO_POLICY_HOLDER))
                return true;
        switch (command) {
        case KDBUS_CMD_UPDATE:
        case KDBUS_CMD_LIST:
        case KDBUS_CMD_CONN_INFO:
        case KDBUS_CMD_BUS_CREATOR_INFO:
        case KDBUS_CMD_FREE:
                return true;
        default:
                return false;
        }
}
