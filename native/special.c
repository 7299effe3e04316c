/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's special connections on the native front end: monitors (KDBUS_HELLO_MONITOR) and
 * activators (KDBUS_HELLO_ACTIVATOR with a NAME item). Policy holders are not here.
 *
 * Monitor: a copy of every message the bus handles (bridge/monitor.c decides which, the
 * view a legacy BecomeMonitor client gets: unicasts, broadcasts, legacy and native
 * traffic; but none of the bus driver's own messages, BRIDGE_RULE_MONITOR_PEERS_ONLY: a
 * kdbus monitor got the kernel's notifications instead), written into its pool like any
 * delivery, with the
 * real destination's id as dst_id. It cannot send, own names or add matches (EOPNOTSUPP,
 * as kdbus), is not in LIST, has no ID_ADD/ID_REMOVE, and cannot be addressed (it is not
 * in the id table: ENXIO by id, as kdbus refuses special connections as destinations).
 *
 * Privilege: kdbus let only the bus's owner (its uid, or CAP_IPC_OWNER) open monitors and
 * activators. Here the same, from what was captured at connect: the peer's uid is
 * Bus.owner_uid (kdbusd's euid, or a bus instance's creator), or it had CAP_IPC_OWNER in
 * the bus's user namespace (bus_creds_privileged()); else EPERM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/monitor.h"
#include "bridge/names.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/special.h"
#include "util/error.h"
#include "wire/names.h"
#include "wire/protocol.h"

/**
 * native_special_hello_check() - may HELLO with @flags and @name make this connection?
 * @bus:        the bus
 * @creds:      the peer's credentials
 * @flags:      KDBUS_HELLO_* (already checked for unknown bits)
 * @name:       the NAME item, or NULL
 *
 * Return: 0, -EINVAL, -EPERM.
 */
int native_special_hello_check(const Bus *bus, const BridgeCreds *creds, uint64_t flags,
                               const char *name) {
        uint64_t kind = flags & (KDBUS_HELLO_ACTIVATOR | KDBUS_HELLO_POLICY_HOLDER |
                                 KDBUS_HELLO_MONITOR);

        if (kind & (kind - 1))
                return -EINVAL;         /* at most one kind, as kdbus */
        if (!!name != !!(kind & (KDBUS_HELLO_ACTIVATOR | KDBUS_HELLO_POLICY_HOLDER)))
                return -EINVAL;         /* a NAME exactly for activators and policy holders */
        if ((kind & KDBUS_HELLO_ACTIVATOR) &&
            (!wire_bus_name_is_valid(name, strlen(name)) || name[0] == ':' ||
             !strcmp(name, WIRE_DRIVER_NAME)))
                return -EINVAL;
        if (kind && !bus_creds_privileged(bus, creds))
                return -EPERM;
        return 0;
}

/**
 * native_special_hello() - activate a connection of the kind its HELLO asked for
 * @nc:         the new connection (HELLO flags set, not active)
 * @name:       the activator's name, or NULL
 *
 * Return: 0 or a negative errno for the peer.
 */
int native_special_hello(NativeConn *nc, const char *name) {
        int r;

        if (nc->hello_flags & KDBUS_HELLO_MONITOR)
                r = bridge_conn_hello_monitor(nc->conn);
        else if (nc->hello_flags & KDBUS_HELLO_ACTIVATOR)
                r = bridge_conn_hello_activator(nc->conn, name);
        else
                r = bridge_conn_hello(nc->conn);
        /* kdbus: EEXIST when the name has an activator already */
        return r == BRIDGE_E_NAME_TAKEN ? -EEXIST : native_errno_from_bridge(r);
}

/**
 * native_special_may() - may @nc run @command?
 * @nc:         the connection
 * @command:    KDBUS_CMD_*
 *
 * kdbus: monitors and activators may RECV, FREE, UPDATE, LIST and ask for info, nothing
 * that sends, owns names, matches or says BYEBYE. What an activator's UPDATE may carry
 * (ATTACH_FLAGS_RECV, not ATTACH_FLAGS_SEND) native_conn_update() decides, as
 * kdbus_cmd_update() does per item.
 *
 * Return: true if allowed.
 */
bool native_special_may(const NativeConn *nc, uint64_t command) {
        if (!(nc->hello_flags & (KDBUS_HELLO_MONITOR | KDBUS_HELLO_ACTIVATOR)))
                return true;
        switch (command) {
        case KDBUS_CMD_SEND:
        case KDBUS_CMD_NAME_ACQUIRE:
        case KDBUS_CMD_NAME_RELEASE:
        case KDBUS_CMD_MATCH_ADD:
        case KDBUS_CMD_MATCH_REMOVE:
        case KDBUS_CMD_BYEBYE:
                return false;
        default:
                return true;
        }
}

/**
 * native_monitor_dst_id() - the destination id a monitor sees
 * @bus:        the bus
 * @destination: the message's DESTINATION
 *
 * A unique name gives its id; a well-known name its primary owner's id when it has one
 * now, else KDBUS_DST_ID_NAME (as a message to a name looks in kdbus before routing).
 *
 * Return: the id.
 */
uint64_t native_monitor_dst_id(Bus *bus, const char *destination) {
        BridgeConn *owner;
        uint64_t id;

        id = destination[0] == ':' ? bus_parse_unique_name(bus, destination) : 0;
        if (id)
                return id;
        owner = bus_find_conn_by_name(bus, destination);
        return owner ? owner->id : KDBUS_DST_ID_NAME;
}
