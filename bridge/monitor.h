/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Monitors: connections that receive a copy of every message the bus handles that matches
 * one of their rules (no rule: everything), and send nothing. This is kdbus's "monitor
 * connection" and dbus-daemon's BecomeMonitor; the core decides what a monitor sees, so
 * every front end gets the same view.
 *
 * What is captured, checked against dbus-daemon 1.14.10 with a raw client:
 *   - every message a peer sends with a destination, and every signal without one, BEFORE
 *     it is routed: also when routing then refuses it (unknown destination, unexpected
 *     reply, full queue); the bus's error follows as a message of its own;
 *   - every message the bus itself sends (replies, errors, NameOwnerChanged, NameAcquired,
 *     NameLost), unicast or broadcast, when it sends it, also when its receiver's policy
 *     then denies it;
 *   - for each copy the policy denies (a broadcast's receiver, an eavesdropper, the
 *     receiver of a message of the bus): the AccessDenied error dbus-daemon makes of it,
 *     from the bus to the sender (to org.freedesktop.DBus for the bus's own), after the
 *     message; nobody else gets that error (bridge_policy_check_copy());
 *   - not: method calls, returns and errors without destination (dbus-daemon leaves those
 *     to its libdbus connection object, which monitors do not see), nor the bus's answers
 *     to them (they carry no SENDER).
 * Each monitor gets its copies in capture order, which is the order of delivery.
 *
 * A monitor is invisible: it owns no name (its unique name and well-known names are
 * released when it becomes one), it is out of the id table, so nothing can be addressed
 * to it, and it is in no match list but Bus.monitors. Its rules are BridgeMatchRules on
 * BridgeConn.matches (eavesdropping implied; they do not count as eavesdrop rules, but
 * count in Bus.n_match_rules, as in dbus-daemon's Debug.Stats).
 */
#include <stdbool.h>
#include <stddef.h>
#include "bridge/conn.h"
#include "bridge/match.h"

/*
 * Turn @conn into a monitor with @rules (taken, also on failure; n_rules 0: everything):
 * its pending calls are forgotten, its names are released, unique name first (name_changed
 * for each, with the unique name too, so the layer above reports NameLost and
 * NameOwnerChanged as dbus-daemon does), callers waiting for it get reply_lost, and then
 * its old match rules give way to @rules. Return: 0, BRIDGE_E_NOT_ACTIVE (not active, or a monitor already),
 * BRIDGE_E_MATCH_QUOTA (more rules than max_match_rules_per_connection).
 */
int bridge_conn_become_monitor(BridgeConn *conn, BridgeMatchRule **rules, size_t n_rules);

/*
 * Activate @conn (it never said hello) directly as a monitor that sees everything: kdbus's
 * HELLO with KDBUS_HELLO_MONITOR. It gets an id from the bus's counter, but is not put in
 * the id table and nothing is announced (no conn_added, and no conn_removed when it
 * goes), so no peer can see or address it. Return: 0, BRIDGE_E_ALREADY_ACTIVE,
 * BRIDGE_E_CONN_QUOTA (max_connections_per_user).
 */
int bridge_conn_hello_monitor(BridgeConn *conn);

/*
 * Give every monitor whose rules match a copy of @msg from @sender (NULL: the bus), except
 * @skip (the monitor a message of the bus is addressed to: it gets it once, as its
 * destination). A monitor that cannot take it (queue full) is kicked. Return: 0, -ENOMEM.
 */
int bus_monitor_capture(Bus *bus, const BridgeConn *sender, BridgeMsg *msg,
                        const BridgeConn *skip);

/*
 * Queue @msg, a message of the bus that monitors were shown earlier (an ActivationRequest
 * that waited for systemd to appear), to @dst without showing it to them again; otherwise
 * as bridge_conn_queue_msg(): @dst's receive rules apply (denied: dropped, 0). Return: 0,
 * -ENOMEM, BRIDGE_E_QUOTA, BRIDGE_E_NOT_ACTIVE.
 */
int bus_monitor_queue_seen(BridgeConn *dst, BridgeMsg *msg);

/* Number of monitors on @bus. */
unsigned bus_monitor_count(const Bus *bus);

static inline bool bridge_conn_is_monitor(const BridgeConn *conn) {
        return conn && (conn->flags & BRIDGE_CONN_MONITOR);
}
