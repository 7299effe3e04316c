/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Activator connections (kdbus's KDBUS_HELLO_ACTIVATOR): a connection that holds one
 * well-known name for a service that is not running. While the name has no owner, messages
 * to it (without NO_AUTO_START) are queued to the activator; its owner (systemd) is woken
 * by them and starts the service. When a real owner acquires the name, the messages still
 * waiting at the activator for that name move to the new owner, in order, with their
 * reply slots (kdbus_conn_move_messages()); when the last owner lets go of the name it
 * goes back to the activator, and the messages for the name still queued at the old owner
 * move back (kdbus's loss-free exit-on-idle handover).
 *
 * An activator is not an owner: the name registry, GetNameOwner, ListNames and the
 * NameOwnerChanged signals do not see it (as dbus-daemon shows an activatable name);
 * native peers' NAME_* notifications do, flagged KDBUS_NAME_ACTIVATOR (activator.c). It
 * has an id, but is not in the id table (it cannot be addressed by id), is not announced,
 * and sends nothing. Invariant: an activator is active, has BRIDGE_CONN_ACTIVATOR and
 * exactly one BridgeActivator on Bus.activators, removed at its disconnect.
 */
#include <stdbool.h>
#include "bridge/conn.h"

typedef struct BridgeActivator {
        List link;                      /* Bus.activators */
        BridgeConn *conn;               /* not referenced: unlinked at its disconnect */
        char name[];
} BridgeActivator;

/*
 * Activate @conn (it never said hello) as the activator of @name (a valid well-known
 * name). Return: 0, -ENOMEM, BRIDGE_E_ALREADY_ACTIVE, BRIDGE_E_CONN_QUOTA,
 * BRIDGE_E_NAME_TAKEN (@name has an activator already).
 */
int bridge_conn_hello_activator(BridgeConn *conn, const char *name);

/* The activator of @name, or NULL. */
BridgeConn *bus_find_activator(Bus *bus, const char *name);
/* The name @conn is the activator of, or NULL. */
const char *bridge_conn_activator_name(const BridgeConn *conn);

/* The primary owner of @name changed (bus_notify_name_changed()): move the messages. */
void bus_activator_name_changed(Bus *bus, const char *name, BridgeConn *old_owner,
                                BridgeConn *new_owner);
/* @conn is going: forget its activator record (bridge_conn_disconnect()). */
void bus_activator_conn_removed(BridgeConn *conn);

static inline bool bridge_conn_is_activator(const BridgeConn *conn) {
        return conn && (conn->flags & BRIDGE_CONN_ACTIVATOR);
}
