/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Activator connections (see activator.h for the semantics and invariants).
 *
 * Moving messages: what waits for a name sits in two places at the connection that has
 * it: a native connection's receive list (written into its pool, not received yet) and,
 * behind that, the core's queue (what the pool had no room for yet; for a legacy owner,
 * everything not written to its socket). Both are searched in that order, which is the
 * order of arrival, and the messages whose DESTINATION is the name are taken out and
 * pushed to the new holder's queue, each with its reply slot re-pointed at the new callee,
 * so the reply of the service that is now running passes. A message the new holder cannot
 * take is dropped and its caller gets reply_lost (NoReply / REPLY_DEAD), and a native new
 * holder's dropped count rises (kdbus_conn_lost_message()): fds it does not accept, its
 * quota for the sender's account (the core's per-account byte and fd limits and a native
 * holder's pool quota, bridge_conn_queue_check()), and, moving to a real owner, the XML
 * policy checked with the real receiver as dbus-daemon checks the messages of a finished
 * activation (the sender's send rules, the owner's receive rules; the send rules were
 * checked against the name when the message reached the activator, policy-route.c). Messages a peer already received
 * (RECV without PEEK) are its own and do not move.
 *
 * Notifications: the activator holds its name while no owner does, as in kdbus's names.c:
 * NAME_ADD when it registers for a name without owner, NAME_CHANGE when an owner takes the
 * name over and when the last one gives it back, NAME_REMOVE when it goes
 * while no owner has the name; its side flagged KDBUS_NAME_ACTIVATOR | KDBUS_NAME_PRIMARY
 * (the core tells its observers, BusObserver; native/notify.c writes the items).
 * Legacy peers see none of this (no NameOwnerChanged for an activator: dbus-daemon does not
 * show an activatable name as owned); they get ActivatableServicesChanged when an activator
 * comes or goes (BusNotifyOps.activatable_changed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "bridge/reply.h"
#include "util/error.h"
#include "wire/protocol.h"

static BridgeActivator *activator_find(Bus *bus, const char *name) {
        List *pos;

        list_for_each(pos, &bus->activators) {
                BridgeActivator *a = container_of(pos, BridgeActivator, link);

                if (!strcmp(a->name, name))
                        return a;
        }
        return NULL;
}

static BridgeActivator *activator_of(const BridgeConn *conn) {
        List *pos;

        if (!bridge_conn_is_activator(conn) || !conn->bus)
                return NULL;
        list_for_each(pos, &conn->bus->activators) {
                BridgeActivator *a = container_of(pos, BridgeActivator, link);

                if (a->conn == conn)
                        return a;
        }
        return NULL;
}

/* Tell the handler that the activatable names changed. Return: 0 or its result. */
static int activatable_changed(Bus *bus) {
        if (!bus->notify || !bus->notify->activatable_changed)
                return 0;
        return error_trace(bus->notify->activatable_changed(bus->notify_userdata));
}

/**
 * bridge_conn_hello_activator() - activate a new connection as the activator of @name
 * @conn:       a connection that never said hello
 * @name:       a valid well-known name
 *
 * As a monitor (bridge_conn_hello_monitor()), it gets an id and counts as an active
 * connection of its user, but is not in the id table: nobody sends to it by id. Native
 * peers hear of it as kdbus's kdbus_conn_connect() told them: ID_ADD (with its HELLO
 * flags), then NAME_ADD while no owner has the name; legacy peers hear nothing (its
 * unique name never shows in NameOwnerChanged).
 *
 * Return: 0, -ENOMEM, BRIDGE_E_ALREADY_ACTIVE, BRIDGE_E_CONN_QUOTA, BRIDGE_E_NAME_TAKEN.
 */
int bridge_conn_hello_activator(BridgeConn *conn, const char *name) {
        Bus *bus = conn->bus;
        BridgeActivator *a;
        size_t len = strlen(name);

        if (conn->active || conn->id || !bus)
                return BRIDGE_E_ALREADY_ACTIVE;
        if (conn->user && conn->user->n_active >= bus->limits.max_connections_per_user)
                return BRIDGE_E_CONN_QUOTA;
        if (activator_find(bus, name))
                return BRIDGE_E_NAME_TAKEN;
        a = malloc(sizeof(*a) + len + 1);
        if (!a)
                return error_origin(-ENOMEM);
        memcpy(a->name, name, len + 1);
        a->conn = conn;
        list_append(&bus->activators, &a->link);

        conn->id = bus->next_conn_id++;
        bus_format_unique_name(bus, conn->id, conn->unique_name);
        conn->active = true;
        if (conn->user)
                ++conn->user->n_active;
        conn->flags |= BRIDGE_CONN_ACTIVATOR;
        bus_observe_conn(bus, conn, true);
        if (!bus_find_conn_by_name(bus, name))
                bus_observe_activator(bus, name, conn, true);
        return error_trace(activatable_changed(bus));
}

/**
 * bus_find_activator() - the activator of @name
 * @bus:        the bus
 * @name:       a well-known name
 *
 * Return: the active activator connection, or NULL.
 */
BridgeConn *bus_find_activator(Bus *bus, const char *name) {
        BridgeActivator *a;

        if (list_is_empty(&bus->activators) || name[0] == ':')
                return NULL;
        a = activator_find(bus, name);
        return a && a->conn->active ? a->conn : NULL;
}

/**
 * bridge_conn_activator_name() - the name an activator holds
 * @conn:       any connection
 *
 * Return: the name (valid while @conn is active), or NULL.
 */
const char *bridge_conn_activator_name(const BridgeConn *conn) {
        BridgeActivator *a = activator_of(conn);

        return a ? a->name : NULL;
}

/* Take the messages for @name out of @conn's queues, oldest first. Return: 0, -ENOMEM. */
static int take_messages(BridgeConn *conn, const char *name, BridgeMsg ***ret_msgs,
                         size_t *ret_n) {
        BridgeMsg **msgs = NULL;
        size_t n = 0, cap = 0;
        List *pos, *tmp;
        int r;

        if (conn->ops && conn->ops->unqueue) {
                r = conn->ops->unqueue(conn, conn->userdata, name, &msgs, &n, &cap);
                if (r < 0)
                        return error_trace(r);
        }
        list_for_each_safe(pos, tmp, &conn->queue) {
                BridgeQueueEntry *e = container_of(pos, BridgeQueueEntry, link);

                if (!e->msg->hdr.destination || strcmp(e->msg->hdr.destination, name))
                        continue;
                if (n == cap) {
                        size_t c = cap ? 2 * cap : 16;
                        BridgeMsg **m = realloc(msgs, c * sizeof(*m));

                        if (!m) {
                                while (n)
                                        bridge_msg_unref(msgs[--n]);
                                free(msgs);
                                return error_origin(-ENOMEM);
                        }
                        msgs = m;
                        cap = c;
                }
                msgs[n++] = bridge_msg_ref(e->msg);
                bridge_conn_queue_remove(conn, e);
        }
        *ret_msgs = msgs;
        *ret_n = n;
        return 0;
}

/* May @to (a real owner: @checked) take @m, moved from @from? */
static bool may_take(BridgeConn *caller, BridgeConn *to, BridgeMsg *m, bool checked) {
        if (m->n_fds && !(to->flags & BRIDGE_CONN_ACCEPT_FDS))
                return false;
        /* the limits per (receiver, sending account), and a native receiver's pool quota,
         * as for a message sent to it now (kdbus's move charged the new receiver's quota) */
        if (bridge_conn_queue_check(to, m))
                return false;
        /* as dbus-daemon delivers what waited for an activation: both checks with the real
         * receiver; a sender that is gone sends nothing any more */
        if (checked && caller && caller->bus->policy)
                return bridge_policy_check_unicast(caller, to, m, false) == 0;
        return true;
}

/* Move what waits for @name at @from to @to, reply slots included; @checked: @to is a real
 * owner, whose limits and policy apply. */
static void move_messages(Bus *bus, BridgeConn *from, BridgeConn *to, const char *name,
                          bool checked) {
        BridgeMsg **msgs;
        size_t i, n;

        if (take_messages(from, name, &msgs, &n) < 0)
                return;         /* out of memory: the messages stay where they were */
        for (i = 0; i < n; ++i) {
                BridgeMsg *m = msgs[i];
                BridgeConn *caller = m->sender_id ? bus_find_conn(bus, m->sender_id) : NULL;
                BridgeReply *reply = NULL;

                if (caller && m->hdr.type == WIRE_MSG_METHOD_CALL)
                        reply = bus_find_reply(bus, caller, from, m->hdr.serial);
                if (!may_take(caller, to, m, checked) || bridge_conn_queue_push(to, m) < 0) {
                        if (to->ops && to->ops->dropped)
                                to->ops->dropped(to, to->userdata);
                        if (reply) {
                                bridge_reply_free(reply);
                                (void) bus_notify_reply_lost(bus, caller, m->hdr.serial, false,
                                                             from->unique_name);
                        }
                } else if (reply) {
                        list_unlink(&reply->callee_link);
                        list_append(&to->replies_in, &reply->callee_link);
                        reply->callee = to;
                }
                bridge_msg_unref(m);
        }
        free(msgs);
}

/**
 * bus_activator_name_changed() - hand messages over between an activator and an owner
 * @bus:        the bus
 * @name:       the name whose primary owner changed
 * @old_owner:  the old primary owner, or NULL
 * @new_owner:  the new one, or NULL
 *
 * The first owner of a name with an activator gets what waits at the activator; when the
 * last owner goes, what still waits at it for the name goes back to the activator.
 */
void bus_activator_name_changed(Bus *bus, const char *name, BridgeConn *old_owner,
                                BridgeConn *new_owner) {
        BridgeConn *act = bus_find_activator(bus, name);

        if (!act)
                return;
        if (!old_owner && new_owner)
                move_messages(bus, act, new_owner, name, true);
        else if (old_owner && !new_owner)
                move_messages(bus, old_owner, act, name, false);
}

/**
 * bus_activator_conn_removed() - @conn leaves: drop its activator record
 * @conn:       any connection
 */
void bus_activator_conn_removed(BridgeConn *conn) {
        BridgeActivator *a = activator_of(conn);

        if (!a)
                return;
        if (!bus_find_conn_by_name(conn->bus, a->name))
                bus_observe_activator(conn->bus, a->name, conn, false);
        bus_observe_conn(conn->bus, conn, false);       /* after its name, as kdbus */
        list_unlink(&a->link);
        free(a);
        (void) activatable_changed(conn->bus);
}
