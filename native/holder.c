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
 *
 * Activators' POLICY_ACCESS items join the same db (native_activator_policy_set()). As
 * kdbus's kdbus_policy_set() (which made an entry of an activator's NAME even without
 * access items), an activator and a holder cannot both cover one exact name: the second
 * gets EEXIST, whoever may own the name.
 */
#include <errno.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/name-acl.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/holder.h"
#include "util/error.h"

/* The first NAME item's string in @items (sizes checked by native_items_check()), or NULL
 * (none, or not NUL-terminated: name_acl_db_set() refuses that one, EINVAL). */
static const char *items_name(const struct kdbus_item *items, size_t items_size) {
        const struct kdbus_item *item;

        KDBUS_ITEMS_FOREACH(item, items, items_size)
                if (item->type == KDBUS_ITEM_NAME)
                        return memchr(item->str, '\0', item->size - KDBUS_ITEM_HEADER_SIZE) ?
                               item->str : NULL;
        return NULL;
}

/* A name prefix entry "a.b.*" (kdbus_policy_set()'s wildcard). */
static bool name_is_wildcard(const char *name) {
        size_t len = strlen(name);

        return len > 2 && !strcmp(name + len - 2, ".*");
}

/**
 * native_holder_set() - a policy holder's (new) entries
 * @nc:         the policy holder
 * @items:      HELLO's or UPDATE's items: one NAME, its POLICY_ACCESS items; other item
 *              types are skipped (checked by the caller)
 * @items_size: their size
 *
 * Return: 0, or -EINVAL (bad name or access item), -E2BIG (more than one NAME), -EEXIST
 * (another holder has the name, or an activator holds it), -ENOMEM; the old entries stay
 * on error.
 */
int native_holder_set(NativeConn *nc, const struct kdbus_item *items, size_t items_size) {
        const char *name = items_name(items, items_size);
        Bus *bus = nc->conn->bus;
        int r;

        /* an exact name an activator holds is the activator's entry in kdbus (with or
         * without access items): EEXIST; a wildcard entry never collides with one */
        if (name && !name_is_wildcard(name) && bus_find_activator(bus, name))
                return -EEXIST;

        if (!bus->holder_policy) {
                r = name_acl_db_new(&bus->holder_policy);
                if (r)
                        return r;
        }
        /* ids as the holder's user namespace sees them (read at its HELLO), as kdbus */
        return name_acl_db_set_ns(bus->holder_policy, items, items_size, 1, true, nc->conn,
                                       nc->ns);
}

/**
 * native_activator_policy_set() - an activator's entries (HELLO's POLICY_ACCESS items)
 * @nc:         the activator, not active yet
 * @items:      HELLO's items: its NAME, its POLICY_ACCESS items, others skipped
 * @items_size: their size
 *
 * kdbus adds an activator's entries to the bus's policy as a policy holder's, for its one
 * name (no wildcard); they apply to the name whoever owns it, and go with the activator.
 * An activator without POLICY_ACCESS items adds no entry here (kdbus added one granting
 * nothing, which denied OWN and TALK to every unprivileged peer of another uid; here a name
 * without entry stays the XML policy's alone, the rule of bridge/endpoint.h).
 *
 * Return: 0, or -EINVAL (bad access item), -EEXIST (a policy holder has entries for the
 * exact name, with or without access items here: kdbus_policy_set() made an entry of the
 * activator's NAME either way), -ENOMEM.
 */
int native_activator_policy_set(NativeConn *nc, const struct kdbus_item *items,
                                size_t items_size) {
        const char *name = items_name(items, items_size);
        const NameAclEntry *e;
        const struct kdbus_item *item;
        bool any = false;

        KDBUS_ITEMS_FOREACH(item, items, items_size)
                any |= item->type == KDBUS_ITEM_POLICY_ACCESS;
        e = name ? name_acl_db_lookup(nc->conn->bus->holder_policy, name) : NULL;
        if (e && !e->wildcard && e->owner != nc->conn)
                return -EEXIST;
        if (!any)
                return 0;
        if (!nc->conn->bus->holder_policy) {
                int r = name_acl_db_new(&nc->conn->bus->holder_policy);

                if (r)
                        return r;
        }
        return name_acl_db_set(nc->conn->bus->holder_policy, items, items_size, 1, false,
                                    nc->conn);
}

/**
 * native_holder_drop() - a holder or an activator goes: its entries go with it
 * @nc:         any native connection
 */
void native_holder_drop(NativeConn *nc) {
        Bus *bus = nc->conn ? nc->conn->bus : NULL;

        if (bus && bus->holder_policy &&
            (nc->hello_flags & (KDBUS_HELLO_POLICY_HOLDER | KDBUS_HELLO_ACTIVATOR)))
                name_acl_db_remove_owner(bus->holder_policy, nc->conn);
}

/**
 * native_holder_may() - may a policy holder run @command?
 * @nc:         the connection
 * @command:    KDBUS_CMD_*
 *
 * Return: true for anything but a policy holder; for one, only UPDATE, LIST, CONN_INFO
 * and BUS_CREATOR_INFO (kdbus: it is no ordinary connection). Not FREE either, as
 * kdbus_cmd_free() refuses it: a holder never RECVs, and the slices of its LIST and INFO
 * stay in its pool until it goes (HELLO's bloom slice too).
 */
bool native_holder_may(const NativeConn *nc, uint64_t command) {
        if (!(nc->hello_flags & KDBUS_HELLO_POLICY_HOLDER))
                return true;
        switch (command) {
        case KDBUS_CMD_UPDATE:
        case KDBUS_CMD_LIST:
        case KDBUS_CMD_CONN_INFO:
        case KDBUS_CMD_BUS_CREATOR_INFO:
                return true;
        default:
                return false;
        }
}
