/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The name registry: well-known names, each with a FIFO of owners; the first is the
 * primary owner. Semantics of the D-Bus specification's RequestName/ReleaseName (which
 * kdbus's NAME_ACQUIRE/NAME_RELEASE mirror). A name with no owners is freed at once.
 * Every change of primary owner is reported through BusNotifyOps.name_changed, in order.
 */
#include <stdbool.h>
#include <stdint.h>
#include "util/hash-table.h"
#include "util/list.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;

/* Same bit values as the dbus1 RequestName flags. */
enum {
        BRIDGE_NAME_ALLOW_REPLACEMENT = 1u << 0,
        BRIDGE_NAME_REPLACE_EXISTING = 1u << 1,
        BRIDGE_NAME_DO_NOT_QUEUE = 1u << 2,
        /* not a dbus1 flag, never stored: a request that cannot replace queues at the
         * tail, as kdbus's kdbus_name_update() (dbus-daemon puts it behind the primary) */
        BRIDGE_NAME_KDBUS_QUEUE = 1u << 8,
};

enum {
        _NAME_E_SUCCESS,                /* acquire: now primary owner; release: released */
        NAME_E_IN_QUEUE,                /* acquire: queued behind the primary owner */
        NAME_E_EXISTS,                  /* acquire: owned by another, not queued */
        NAME_E_ALREADY_OWNER,           /* acquire: the caller is the primary owner already */
        NAME_E_QUOTA,                   /* acquire: max_names_per_connection reached */
        NAME_E_NON_EXISTENT,            /* release: nobody owns the name */
        NAME_E_NOT_OWNER,               /* release: the caller neither owns nor queues for it */
        NAME_E_ACCESS_DENIED,           /* acquire: the policy denies it (bridge_conn_get_denial()) */
        _NAME_E_N,
};

typedef struct BridgeName {
        HashNode node;                  /* Bus.names */
        List owners;                    /* BridgeNameOwner, primary first */
        char name[];
} BridgeName;

typedef struct BridgeNameOwner {
        List name_link;                 /* BridgeName.owners */
        List conn_link;                 /* BridgeConn.owned */
        BridgeName *name;
        BridgeConn *conn;
        unsigned flags;                 /* BRIDGE_NAME_* it asked with */
} BridgeNameOwner;

/* Return: 0 (primary owner), NAME_E_IN_QUEUE, NAME_E_EXISTS, NAME_E_ALREADY_OWNER,
 * NAME_E_QUOTA, BRIDGE_E_NOT_ACTIVE, -ENOMEM. @name must be a valid well-known name. */
int bridge_name_acquire(BridgeConn *conn, const char *name, unsigned flags);
/* Return: 0 (released or dequeued), NAME_E_NON_EXISTENT, NAME_E_NOT_OWNER. */
int bridge_name_release(BridgeConn *conn, const char *name);

BridgeName *bus_find_name(Bus *bus, const char *name);
/* The primary owner of @name, or NULL. */
BridgeConn *bridge_name_primary(const BridgeName *name);

/* Release every name of @conn (used by bridge_conn_disconnect): oldest first (kdbus's
 * order, for native connections) or newest first (dbus-daemon's). */
void bridge_names_release_all(BridgeConn *conn, bool oldest_first);
