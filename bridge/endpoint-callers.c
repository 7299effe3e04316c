/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who a sandboxed connection sees because they called it. On an endpoint with
 * xdg-dbus-proxy's rules (bridge/name-acl.h), a peer that calls one of its connections
 * becomes visible to that connection (its unique name, GetConnection*, its
 * NameOwnerChanged when it leaves) and may receive its unicast signals, for as long as both
 * are connected: one link per (caller, callee), in both connections' lists, dropped when
 * either goes (after the bus announced the leaving, so that the callee hears of it).
 * xdg-dbus-proxy keeps such a grant for the unique name forever; it cannot tell when the
 * peer goes, we can.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/name-acl.h"
#include "util/error.h"

typedef struct BridgeCallerLink {
        BridgeConn *caller;
        BridgeConn *callee;
        List caller_link;               /* caller->called */
        List callee_link;               /* callee->callers */
} BridgeCallerLink;

/**
 * bridge_conn_note_caller() - @caller called @callee
 * @callee:     the receiver of a method call
 * @caller:     its sender
 *
 * Recorded only for a callee on an endpoint with xdg-dbus-proxy's rules, once per pair
 * (also when a name of the caller is visible now: the name may go, the call stays).
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_conn_note_caller(BridgeConn *callee, BridgeConn *caller) {
        BridgeCallerLink *l;

        if (!caller || caller == callee || !callee->endpoint || !callee->endpoint->policy->xdg ||
            bridge_conn_has_caller(callee, caller))
                return 0;
        l = calloc(1, sizeof(*l));
        if (!l)
                return error_origin(-ENOMEM);
        l->caller = caller;
        l->callee = callee;
        list_append(&caller->called, &l->caller_link);
        list_append(&callee->callers, &l->callee_link);
        return 0;
}

/**
 * bridge_conn_has_caller() - did @caller call @callee (both still connected)?
 * @callee:     a connection
 * @caller:     another
 *
 * Return: true if so.
 */
bool bridge_conn_has_caller(const BridgeConn *callee, const BridgeConn *caller) {
        List *pos;

        list_for_each(pos, &callee->callers)
                if (container_of(pos, BridgeCallerLink, callee_link)->caller == caller)
                        return true;
        return false;
}

/**
 * bridge_conn_find_caller() - the caller of @callee whose unique name is @unique
 * @callee:     a connection
 * @unique:     ":1.N"
 *
 * Return: the caller, or NULL.
 */
const BridgeConn *bridge_conn_find_caller(const BridgeConn *callee, const char *unique) {
        List *pos;

        list_for_each(pos, &callee->callers) {
                const BridgeConn *c = container_of(pos, BridgeCallerLink, callee_link)->caller;

                if (!strcmp(c->unique_name, unique))
                        return c;
        }
        return NULL;
}

/**
 * bridge_conn_forget_callers() - @conn leaves: drop its links, as caller and as callee
 * @conn:       the connection
 */
void bridge_conn_forget_callers(BridgeConn *conn) {
        BridgeCallerLink *l;

        while ((l = list_first_entry(&conn->callers, BridgeCallerLink, callee_link)) ||
               (l = list_first_entry(&conn->called, BridgeCallerLink, caller_link))) {
                list_unlink(&l->caller_link);
                list_unlink(&l->callee_link);
                free(l);
        }
}
