/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's name policy checks (SEE / TALK / OWN), combining a connection's custom endpoint
 * policy and the bus's policy-holder entries; the rules are listed in bridge/endpoint.h.
 * Routing (conn.c), names (names.c), the native commands and the driver call these; each is
 * a pointer test when no endpoint and no policy holder exist (bus_has_name_policy()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/name-acl.h"
#include "bridge/policy-internal.h"
#include "kdbus/kdbus.h"
#include "wire/protocol.h"

/**
 * bus_has_name_policy() - is any kdbus name policy in force?
 * @bus:        the bus
 *
 * Return: true if the bus has an open endpoint or a policy-holder entry.
 */
bool bus_has_name_policy(const Bus *bus) {
        return bus->kdbus_default_deny || !list_is_empty(&bus->endpoints) ||
               (bus->holder_policy && bus->holder_policy->n_entries);
}

/**
 * bus_creds_privileged() - the bus owner's rights, as kdbus_ep_is_owner() gave them
 * @bus:        the bus
 * @creds:      a peer's credentials (captured at connect)
 *
 * kdbus: the bus owner's euid, or CAP_IPC_OWNER in the bus's user namespace; uid 0 is
 * nothing special (a root process normally has the capability; one that dropped it is
 * unprivileged, as kdbus-test's drop_privileges() relies on). The caller checks that the
 * peer did not come through a custom endpoint (nobody is privileged there).
 *
 * Return: true if privileged.
 */
bool bus_creds_privileged(const Bus *bus, const BridgeCreds *creds) {
        return creds->uid == bus->owner_uid || creds->cap_ipc_owner;
}

/**
 * bridge_conn_is_privileged() - the bus owner's rights (kdbus: owner uid or CAP_IPC_OWNER)
 * @conn:       the connection
 *
 * Return: bus_creds_privileged() of its credentials, unless it came through a custom
 * endpoint.
 */
bool bridge_conn_is_privileged(const BridgeConn *conn) {
        return !conn->endpoint && bus_creds_privileged(conn->bus, &conn->creds);
}

/* The highest access @db grants @conn on one of @whom's primary names (kdbus checks the
 * names a connection owns, not those it queues for; an activator's name is its own, as
 * in kdbus, where it is on the activator's list of names). */
static unsigned query_any_name(const NameAclDb *db, const BridgeConn *conn,
                               const BridgeConn *whom, unsigned wanted, bool *ret_covered) {
        const char *activated = bridge_conn_activator_name(whom);
        unsigned best = NAME_ACL_NONE;
        List *pos;

        if (ret_covered)
                *ret_covered = false;
        if (activated) {
                const NameAclEntry *e = name_acl_db_lookup(db, activated);

                if (ret_covered)
                        *ret_covered = e != NULL;
                return name_acl_db_query(db, activated, &conn->creds);
        }
        list_for_each(pos, &whom->owned) {
                BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);
                unsigned a;

                if (bridge_name_primary(o->name) != whom)
                        continue;
                if (ret_covered && name_acl_db_lookup(db, o->name->name))
                        *ret_covered = true;
                a = name_acl_db_query(db, o->name->name, &conn->creds);
                if (a > best)
                        best = a;
                if (best >= wanted)
                        break;
        }
        return best;
}

/**
 * bridge_conn_can_see_name() - may @conn see the well-known name @name?
 * @conn:       the connection
 * @name:       a well-known name
 *
 * Return: true off custom endpoints; there, if the endpoint grants SEE.
 */
bool bridge_conn_can_see_name(const BridgeConn *conn, const char *name) {
        if (!conn->endpoint || conn->endpoint->unfiltered)
                return true;
        return name_acl_db_query(conn->endpoint->policy, name, &conn->creds) >=
               NAME_ACL_SEE;
}

/**
 * bridge_conn_can_see_conn() - may @conn see the connection @whom (its id, its info)?
 * @conn:       the connection
 * @whom:       another connection (or @conn)
 *
 * Return: true off custom endpoints and for @conn itself; else if the endpoint grants SEE
 * for one of @whom's names.
 */
bool bridge_conn_can_see_conn(const BridgeConn *conn, const BridgeConn *whom) {
        if (!conn->endpoint || conn == whom || conn->endpoint->unfiltered ||
            conn->endpoint->sloppy_names)
                return true;
        /* a peer that called it, while that peer is connected (xdg mode) */
        if (bridge_conn_has_caller(conn, whom))
                return true;
        return query_any_name(conn->endpoint->policy, conn, whom, NAME_ACL_SEE, NULL) >=
               NAME_ACL_SEE;
}

/*
 * Does @conn's endpoint let a message of @rule_type (KDBUS_POLICY_RULE_CALL: @conn sends
 * it to @peer; _BROADCAST: @peer broadcasts it to @conn) pass? With @msg NULL, TALK for
 * one of @peer's names; with @msg, in xdg mode, also a rule of that type matching it.
 */
static bool endpoint_allows(const BridgeConn *conn, const BridgeConn *peer,
                            const BridgeMsg *msg, unsigned rule_type) {
        const NameAclDb *db = conn->endpoint->policy;
        const char *activated;
        List *pos;

        if (conn->endpoint->unfiltered)
                return true;
        if (!msg || !db->xdg)
                return query_any_name(db, conn, peer, NAME_ACL_TALK, NULL) >=
                       NAME_ACL_TALK;
        activated = bridge_conn_activator_name(peer);
        if (activated)
                return name_acl_db_allows(db, activated, &conn->creds, rule_type,
                                          msg->hdr.path, msg->hdr.interface, msg->hdr.member);
        list_for_each(pos, &peer->owned) {
                BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                if (bridge_name_primary(o->name) == peer &&
                    name_acl_db_allows(db, o->name->name, &conn->creds, rule_type,
                                       msg->hdr.path, msg->hdr.interface, msg->hdr.member))
                        return true;
        }
        return false;
}

/* The policy holders' say on @conn talking to @dst (kdbus's TALK, bridge/endpoint.h). */
static bool holders_allow_talk(const BridgeConn *conn, const BridgeConn *dst) {
        const NameAclDb *holders = conn->bus->holder_policy;
        bool covered;

        if (bridge_conn_is_privileged(conn) || conn->creds.uid == dst->creds.uid)
                return true;
        /* kdbus_conn_policy_talk(): an entry for one of @dst's names, or (our default
         * elsewhere) no entry at all */
        if (!holders || !holders->n_entries)
                return !conn->bus->kdbus_default_deny;
        return query_any_name(holders, conn, dst, NAME_ACL_TALK, &covered) >=
               NAME_ACL_TALK || (!covered && !conn->bus->kdbus_default_deny);
}

/**
 * bridge_conn_may_send() - may @conn send @msg (a call or a unicast signal) to @dst?
 * @conn:       the sender
 * @dst:        the receiver
 * @msg:        the message
 *
 * As bridge_conn_can_talk(), and on an endpoint with xdg-dbus-proxy's rules a --call rule
 * of one of @dst's names matching @msg will do; a signal may also go to a peer that called
 * @conn (and is still connected).
 *
 * Return: true if it may.
 */
bool bridge_conn_may_send(const BridgeConn *conn, const BridgeConn *dst, const BridgeMsg *msg) {
        if (conn->endpoint && !endpoint_allows(conn, dst, msg, KDBUS_POLICY_RULE_CALL) &&
            !(msg->hdr.type == WIRE_MSG_SIGNAL && bridge_conn_has_caller(conn, dst)))
                return false;
        return holders_allow_talk(conn, dst);
}

/**
 * bridge_conn_may_send_name() - may @conn start @name, or send @msg to it while unowned?
 * @conn:       the sender
 * @name:       a well-known name
 * @msg:        the message that would start it, or NULL (StartServiceByName)
 *
 * Return: true off custom endpoints; there, TALK for @name (with @msg, in xdg mode, or a
 * --call rule of @name matching it).
 */
bool bridge_conn_may_send_name(const BridgeConn *conn, const char *name, const BridgeMsg *msg) {
        const NameAclDb *db;

        if (!conn->endpoint || conn->endpoint->unfiltered)
                return true;
        db = conn->endpoint->policy;
        if (!msg)
                return name_acl_db_query(db, name, &conn->creds) >= NAME_ACL_TALK;
        return name_acl_db_allows(db, name, &conn->creds, KDBUS_POLICY_RULE_CALL, msg->hdr.path,
                                  msg->hdr.interface, msg->hdr.member);
}

/**
 * bridge_conn_can_talk() - may @conn send to @dst (kdbus's TALK)?
 * @conn:       the sender
 * @dst:        the receiver
 *
 * Return: see bridge/endpoint.h.
 */
bool bridge_conn_can_talk(const BridgeConn *conn, const BridgeConn *dst) {
        if (conn->endpoint && !endpoint_allows(conn, dst, NULL, 0))
                return false;
        return holders_allow_talk(conn, dst);
}

/**
 * bridge_conn_can_own() - may @conn acquire @name (kdbus's OWN)?
 * @conn:       the connection
 * @name:       a well-known name
 *
 * Return: see bridge/endpoint.h.
 */
bool bridge_conn_can_own(const BridgeConn *conn, const char *name) {
        const NameAclEntry *e;

        if (conn->endpoint && !conn->endpoint->unfiltered &&
            name_acl_db_query(conn->endpoint->policy, name, &conn->creds) < NAME_ACL_OWN)
                return false;
        if (bridge_conn_is_privileged(conn))
                return true;
        /* kdbus_conn_policy_own_name(): an entry granting OWN, or (our default elsewhere)
         * none at all */
        e = name_acl_db_lookup(conn->bus->holder_policy, name);
        if (!e)
                return !conn->bus->kdbus_default_deny;
        return name_acl_entry_query(e, &conn->creds) >= NAME_ACL_OWN;
}

static bool msg_is_name_owner_changed(const BridgeMsg *msg) {
        const WireHeader *h = &msg->hdr;

        return h->type == WIRE_MSG_SIGNAL && h->member && h->interface &&
               !strcmp(h->member, "NameOwnerChanged") &&
               !strcmp(h->interface, "org.freedesktop.DBus");
}

/**
 * bridge_conn_may_receive() - the name policy's say on a copy of a message
 * @receiver:   who would get it
 * @sender:     its sender, NULL: the bus
 * @msg:        the message (a broadcast, an eavesdropped copy, a unicast signal)
 * @arg0:       its first string argument, or NULL
 *
 * kdbus: a receiver needs TALK to the sender to get its broadcasts. The bus's own signals
 * pass, except NameOwnerChanged for a name the receiver cannot see (a unique name: never
 * seen on a custom endpoint, as kdbus sends no ID_ADD/ID_REMOVE there).
 *
 * Return: true if the policy lets it through.
 */
bool bridge_conn_may_receive(const BridgeConn *receiver, const BridgeConn *sender,
                             const BridgeMsg *msg, const char *arg0) {
        if (sender == receiver)
                return true;
        if (sender)
                return (!receiver->endpoint ||
                        endpoint_allows(receiver, sender, msg, KDBUS_POLICY_RULE_BROADCAST)) &&
                       holders_allow_talk(receiver, sender);
        if (!receiver->endpoint || !msg_is_name_owner_changed(msg) ||
            receiver->endpoint->unfiltered)
                return true;
        if (!arg0)
                return false;
        /* a unique name: with --sloppy-names, or a peer that called it (its leaving too:
         * the link goes only after this signal) */
        if (arg0[0] == ':')
                return receiver->endpoint->sloppy_names ||
                       bridge_conn_find_caller(receiver, arg0);
        return bridge_conn_can_see_name(receiver, arg0);
}

/**
 * bridge_conn_set_denial() - keep the text of @conn's last AccessDenied
 * @conn:       the connection
 * @text:       the text (taken)
 */
void bridge_conn_set_denial(BridgeConn *conn, char *text) {
        if (conn->policy) {
                free(conn->policy->denial);
                conn->policy->denial = text;
                return;
        }
        free(conn->denial);
        conn->denial = text;
}
