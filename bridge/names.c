/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The name registry. A BridgeName exists while it has owners; its first owner is the
 * primary owner, the others wait in FIFO order. Each BridgeNameOwner is linked both into
 * its name and into its connection (BridgeConn.owned, counted by n_names).
 *
 * RequestName follows dbus-daemon 1.14.10, checked against it with dbus-python:
 *   - the quota counts names owned or queued for plus the unique name (dbus-daemon
 *     registers that as a name too), and is checked first, even when the caller already
 *     owns the name: with max_names_per_connection=3 a connection gets two names, and
 *     re-requesting either of them is LimitsExceeded;
 *   - the primary owner re-requesting gets ALREADY_OWNER and its flags are replaced;
 *   - DO_NOT_QUEUE without a possible replacement: EXISTS, and a caller that was queued
 *     for the name leaves the queue;
 *   - no replacement possible (the primary did not ALLOW_REPLACEMENT or the caller did not
 *     ask REPLACE_EXISTING): IN_QUEUE, the queued entry's flags updated; a caller that
 *     asked REPLACE_EXISTING goes (or moves) to the head of the queue, right behind the
 *     primary ([A, C, B] + B(replace) gives A, B, C; + D(replace) gives A, D, B, C),
 *     any other new caller is appended and a queued one keeps its place;
 *   - replacement: the caller becomes primary (taken out of the queue if it was in it);
 *     the old primary goes to the front of the queue, right behind it, unless it had asked
 *     DO_NOT_QUEUE, then it loses the name. ([A primary, C queued] + B replacing gives
 *     B, A, C.)
 * ReleaseName by a queued owner just leaves the queue; by the primary promotes the next.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "util/error.h"
#include "util/siphash24.h"

static BridgeNameOwner *name_primary_owner(const BridgeName *name) {
        return list_first_entry(&name->owners, BridgeNameOwner, name_link);
}

/**
 * bridge_name_primary() - who owns @name now
 * @name:       the name
 *
 * Return: the primary owner, or NULL.
 */
BridgeConn *bridge_name_primary(const BridgeName *name) {
        BridgeNameOwner *o = name_primary_owner(name);

        return o ? o->conn : NULL;
}

/**
 * bus_find_name() - look a well-known name up
 * @bus:        the bus
 * @name:       the name
 *
 * Return: the BridgeName (it has at least one owner), or NULL.
 */
BridgeName *bus_find_name(Bus *bus, const char *name) {
        HashNode *n;

        for (n = hash_table_lookup(&bus->names, hash_string(name)); n; n = hash_node_next_match(n)) {
                BridgeName *bn = container_of(n, BridgeName, node);

                if (strcmp(bn->name, name) == 0)
                        return bn;
        }
        return NULL;
}

static BridgeNameOwner *name_find_owner(const BridgeName *name, const BridgeConn *conn) {
        List *pos;

        /* the connection's own list is usually the shorter one */
        list_for_each(pos, &conn->owned) {
                BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                if (o->name == name)
                        return o;
        }
        return NULL;
}

static BridgeNameOwner *name_owner_new(BridgeConn *conn, unsigned flags) {
        BridgeNameOwner *o = calloc(1, sizeof(*o));

        if (!o)
                return NULL;
        list_init(&o->name_link);
        list_init(&o->conn_link);
        o->conn = conn;
        o->flags = flags;
        return o;
}

static void name_owner_link(BridgeNameOwner *o, BridgeName *name, bool front) {
        o->name = name;
        if (front)
                list_prepend(&name->owners, &o->name_link);
        else
                list_append(&name->owners, &o->name_link);
        list_append(&o->conn->owned, &o->conn_link);
        ++o->conn->n_names;
        ++o->conn->bus->n_name_owners;
        bus_stats_note_names(o->conn->bus, o->conn);
}

/* Unlink and free @o; frees its name too when that was the last owner. */
static void name_owner_free(Bus *bus, BridgeNameOwner *o) {
        BridgeName *name = o->name;

        list_unlink(&o->name_link);
        list_unlink(&o->conn_link);
        --o->conn->n_names;
        --bus->n_name_owners;
        free(o);
        if (list_is_empty(&name->owners)) {
                hash_table_remove(&bus->names, &name->node);
                bus_dest_gone(bus);
                free(name);
        }
}

static int name_acquire_new(Bus *bus, BridgeConn *conn, const char *s, unsigned flags) {
        _cleanup_(freep) BridgeName *name = NULL;
        BridgeNameOwner *o;
        size_t len = strlen(s);
        int r;

        name = malloc(sizeof(*name) + len + 1);
        if (!name)
                return error_origin(-ENOMEM);
        list_init(&name->owners);
        memcpy(name->name, s, len + 1);
        o = name_owner_new(conn, flags);
        if (!o)
                return error_origin(-ENOMEM);
        r = hash_table_insert(&bus->names, &name->node, hash_string(s));
        if (r < 0) {
                free(o);
                return error_trace(r);
        }
        name_owner_link(o, steal_ptr(&name), false);
        return error_trace(bus_notify_name_changed(bus, s, NULL, 0, conn, flags));
}

/**
 * bridge_name_acquire() - RequestName
 * @conn:       the caller, active
 * @name:       a valid well-known name
 * @flags:      BRIDGE_NAME_*
 *
 * Return: 0 (primary owner now), NAME_E_IN_QUEUE, NAME_E_EXISTS, NAME_E_ALREADY_OWNER,
 * NAME_E_QUOTA, BRIDGE_E_NOT_ACTIVE, -ENOMEM (or a handler's negative errno, after the
 * change).
 */
int bridge_name_acquire(BridgeConn *conn, const char *name, unsigned flags) {
        bool kdbus_queue = flags & BRIDGE_NAME_KDBUS_QUEUE;
        BridgeNameOwner *primary, *mine;
        BridgeConn *old_conn;
        Bus *bus = conn->bus;
        BridgeName *n;
        unsigned old_flags;
        bool can_replace;
        int r;

        flags &= ~(unsigned)BRIDGE_NAME_KDBUS_QUEUE;

        if (!bridge_conn_is_active(conn))
                return BRIDGE_E_NOT_ACTIVE;
        if (conn->policy) {
                r = bridge_policy_check_own(conn, name);
                if (r)
                        return r;
        }
        if (bus_has_name_policy(bus) && !bridge_conn_can_own(conn, name)) {
                char *text;

                if (asprintf(&text, "Connection \"%s\" is not allowed to own the service \"%s\" "
                             "due to the bus's kdbus name policy (%s)", conn->unique_name, name,
                             conn->endpoint ? "its custom endpoint's" : "policy holders'") < 0)
                        return error_origin(-ENOMEM);
                bridge_conn_set_denial(conn, text);
                return NAME_E_ACCESS_DENIED;
        }
        if ((uint64_t)conn->n_names + 1 >= bus->limits.max_names_per_connection)
                return NAME_E_QUOTA;

        n = bus_find_name(bus, name);
        if (!n)
                return name_acquire_new(bus, conn, name, flags);

        primary = name_primary_owner(n);
        if (primary->conn == conn) {
                primary->flags = flags;
                return NAME_E_ALREADY_OWNER;
        }

        mine = name_find_owner(n, conn);
        can_replace = (primary->flags & BRIDGE_NAME_ALLOW_REPLACEMENT) &&
                      (flags & BRIDGE_NAME_REPLACE_EXISTING);

        if (!can_replace) {
                if (flags & BRIDGE_NAME_DO_NOT_QUEUE) {
                        if (mine)
                                name_owner_free(bus, mine);
                        return NAME_E_EXISTS;
                }
                if (!mine) {
                        mine = name_owner_new(conn, flags);
                        if (!mine)
                                return error_origin(-ENOMEM);
                        name_owner_link(mine, n, false);
                }
                mine->flags = flags;
                /* dbus-daemon: asking to replace puts the caller first in line */
                if ((flags & BRIDGE_NAME_REPLACE_EXISTING) && !kdbus_queue) {
                        list_unlink(&mine->name_link);
                        list_insert_after(&primary->name_link, &mine->name_link);
                }
                return NAME_E_IN_QUEUE;
        }

        if (mine) {
                list_unlink(&mine->name_link);
                list_prepend(&n->owners, &mine->name_link);
                mine->flags = flags;
        } else {
                mine = name_owner_new(conn, flags);
                if (!mine)
                        return error_origin(-ENOMEM);
                name_owner_link(mine, n, true);
        }
        /* the old primary is now second: the front of the queue */
        old_conn = primary->conn;
        old_flags = primary->flags;
        if (primary->flags & BRIDGE_NAME_DO_NOT_QUEUE)
                name_owner_free(bus, primary);
        return error_trace(bus_notify_name_changed(bus, name, old_conn, old_flags, conn, flags));
}

/*
 * Drop @o; if it was the primary owner, the next in line (if any) takes over and the
 * change is reported (with a copy of the name's text: the last owner frees it).
 */
static int name_owner_release(Bus *bus, BridgeNameOwner *o) {
        BridgeName *n = o->name;
        BridgeConn *old_conn = o->conn, *new_conn;
        unsigned old_flags = o->flags;
        BridgeNameOwner *next;
        char buf[256];
        bool was_primary = name_primary_owner(n) == o;
        size_t len;

        if (!was_primary) {
                name_owner_free(bus, o);
                return 0;
        }
        /* the notification needs the name after a last owner freed it */
        len = strlen(n->name);
        if (len >= sizeof(buf))
                len = sizeof(buf) - 1;  /* valid names are at most 255 bytes */
        memcpy(buf, n->name, len);
        buf[len] = 0;

        name_owner_free(bus, o);
        n = bus_find_name(bus, buf);
        next = n ? name_primary_owner(n) : NULL;
        new_conn = next ? next->conn : NULL;
        return error_trace(bus_notify_name_changed(bus, buf, old_conn, old_flags, new_conn,
                                                   next ? next->flags : 0));
}

/**
 * bridge_name_release() - ReleaseName
 * @conn:       the caller
 * @name:       the name
 *
 * Return: 0 (released, or left the queue), NAME_E_NON_EXISTENT, NAME_E_NOT_OWNER (or a
 * handler's negative errno, after the change).
 */
int bridge_name_release(BridgeConn *conn, const char *name) {
        BridgeNameOwner *o;
        BridgeName *n;

        n = conn->bus ? bus_find_name(conn->bus, name) : NULL;
        if (!n)
                return NAME_E_NON_EXISTENT;
        o = name_find_owner(n, conn);
        if (!o)
                return NAME_E_NOT_OWNER;
        return name_owner_release(conn->bus, o);
}

/**
 * bridge_names_release_all() - release every name @conn owns or waits for
 * @conn:       the connection
 * @oldest_first: kdbus's order (kdbus_name_release_all(): its names list from the first
 *              acquired), for a native connection; else dbus-daemon 1.14.10's, newest
 *              first, in which order it reports the releases of a leaving connection
 *
 * Newest means the latest to join the name's owners (as primary or queued).
 */
void bridge_names_release_all(BridgeConn *conn, bool oldest_first) {
        List *o;

        while ((o = oldest_first ? list_first(&conn->owned) : list_last(&conn->owned)))
                (void) name_owner_release(conn->bus, container_of(o, BridgeNameOwner, conn_link));
}
