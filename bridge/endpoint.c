/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Custom endpoints: creation (kdbus's "<uid>-<name>" naming), policy updates, closing.
 * As in kdbus, an endpoint's connections are accounted on the endpoint's own (anonymous)
 * account, not on their users': max_connections_per_user applies per endpoint, and a
 * sandbox cannot use up its user's connections (nor the other way round).
 * The checks that use their policy are in name-policy.c. An endpoint is reference-counted:
 * its owner holds one, every connection that came through it holds one (so a connection
 * of a closed endpoint keeps its filtered view until it is freed, never the full one).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/name-acl.h"
#include "util/error.h"

/**
 * bus_sysname_is_valid() - kdbus's rule for node names and connection descriptions
 * @name:       a NUL-terminated string
 *
 * kdbus_item_validate_name(): 1 to BUS_ENDPOINT_NAME_MAX bytes of [A-Za-z0-9_], with '-'
 * and '.' anywhere but first and last. The one check behind MAKE_NAME (BUS_MAKE,
 * ENDPOINT_MAKE) and CONN_DESCRIPTION (HELLO, UPDATE); native_item_name_check() adds the
 * item's framing and errnos.
 *
 * Return: true if valid.
 */
bool bus_sysname_is_valid(const char *name) {
        size_t len = strlen(name), i;

        if (len == 0 || len > BUS_ENDPOINT_NAME_MAX)
                return false;
        for (i = 0; i < len; ++i) {
                char c = name[i];

                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_')
                        continue;
                if ((c == '-' || c == '.') && i > 0 && i + 1 < len)
                        continue;
                return false;
        }
        return true;
}

/**
 * bus_node_name_is_valid() - a kdbus node name (endpoints, bus instances) of @uid
 * @uid:        the maker's uid
 * @name:       "<uid>-" then more, as bus_sysname_is_valid() wants the whole
 *
 * Return: true if valid.
 */
bool bus_node_name_is_valid(uid_t uid, const char *name) {
        char prefix[24];
        size_t n;

        n = (size_t)snprintf(prefix, sizeof(prefix), "%" PRIu32 "-", (uint32_t)uid);
        return strlen(name) > n && !strncmp(name, prefix, n) && bus_sysname_is_valid(name);
}

/**
 * bus_find_endpoint() - an open endpoint by name
 * @bus:        the bus
 * @name:       "<uid>-<name>"
 *
 * Return: the endpoint or NULL.
 */
BusEndpoint *bus_find_endpoint(Bus *bus, const char *name) {
        List *pos;

        list_for_each(pos, &bus->endpoints) {
                BusEndpoint *ep = container_of(pos, BusEndpoint, link);

                if (!strcmp(ep->name, name))
                        return ep;
        }
        return NULL;
}

/**
 * bus_count_endpoints() - the open endpoints one user made
 * @bus:        the bus
 * @uid:        their maker
 *
 * Return: how many.
 */
unsigned bus_count_endpoints(const Bus *bus, uid_t uid) {
        unsigned n = 0;
        List *pos;

        list_for_each(pos, &bus->endpoints)
                n += container_of(pos, BusEndpoint, link)->uid == uid;
        return n;
}

/**
 * bus_endpoint_count_conns() - the connections that came through an endpoint
 * @ep:         the endpoint
 *
 * Return: how many are active (0 once it is closed).
 */
unsigned bus_endpoint_count_conns(const BusEndpoint *ep) {
        unsigned n = 0;
        List *pos;

        if (!ep->bus)
                return 0;
        list_for_each(pos, &ep->bus->conns) {
                const BridgeConn *c = container_of(pos, BridgeConn, bus_link);

                n += c->endpoint == ep && c->active;
        }
        return n;
}

/**
 * bus_endpoint_new() - ENDPOINT_MAKE
 * @bus:        the bus
 * @uid:        the creator's uid
 * @name:       "<uid>-<name>"
 * @ret:        the endpoint, open, with an empty policy (one reference: the owner's)
 *
 * Return: 0, -EINVAL, -EEXIST or -ENOMEM.
 */
int bus_endpoint_new(Bus *bus, uid_t uid, const char *name, BusEndpoint **ret) {
        _cleanup_(bus_endpoint_unrefp) BusEndpoint *ep = NULL;
        int r;

        if (!bus_node_name_is_valid(uid, name))
                return -EINVAL;
        if (bus_find_endpoint(bus, name))
                return -EEXIST;
        ep = calloc(1, sizeof(*ep));
        if (!ep)
                return error_origin(-ENOMEM);
        ep->n_refs = 1;
        list_init(&ep->link);
        ep->uid = uid;
        ep->name = strdup(name);
        if (!ep->name)
                return error_origin(-ENOMEM);
        r = name_acl_db_new(&ep->policy);
        if (r)
                return error_trace(r);
        ep->user = calloc(1, sizeof(*ep->user));
        if (!ep->user)
                return error_origin(-ENOMEM);
        ep->user->uid = uid;
        ep->user->anonymous = true;
        ep->id = ++bus->next_endpoint_id;
        ep->bus = bus;
        list_append(&bus->endpoints, &ep->link);
        *ret = steal_ptr(&ep);
        return 0;
}

/**
 * bus_endpoint_ref() - take a reference
 * @ep:         the endpoint or NULL
 *
 * Return: @ep.
 */
BusEndpoint *bus_endpoint_ref(BusEndpoint *ep) {
        if (ep)
                ++ep->n_refs;
        return ep;
}

/**
 * bus_endpoint_unref() - drop a reference; the last one frees (unlinked from its bus if
 * it still was: closing is the owner's business, see bus_endpoint_close())
 * @ep:         the endpoint or NULL
 *
 * Return: NULL.
 */
BusEndpoint *bus_endpoint_unref(BusEndpoint *ep) {
        if (!ep)
                return NULL;
        assert(ep->n_refs > 0);
        if (--ep->n_refs > 0)
                return NULL;
        list_unlink(&ep->link);
        free(ep->user);                 /* no connection is charged to it: they hold refs */
        name_acl_db_free(ep->policy);
        free(ep->name);
        free(ep);
        return NULL;
}

/**
 * bus_endpoint_close() - the owner let go: unlink, disconnect its connections
 * @ep:         the endpoint (the caller still holds its reference)
 *
 * Idempotent. The transports of the disconnected connections learn it from their next
 * command (ECONNRESET) or from the front end, which closes them with the endpoint.
 */
void bus_endpoint_close(BusEndpoint *ep) {
        Bus *bus = ep->bus;
        List *pos, *tmp;

        if (!bus)
                return;
        list_unlink(&ep->link);
        ep->bus = NULL;
        list_for_each_safe(pos, tmp, &bus->conns) {
                BridgeConn *c = container_of(pos, BridgeConn, bus_link);

                if (c->endpoint == ep && c->active) {
                        bridge_conn_ref(c);
                        bridge_conn_disconnect(c);
                        bridge_conn_unref(c);
                }
        }
}

/**
 * bus_endpoint_update() - ENDPOINT_UPDATE: the endpoint's new policy
 * @ep:         the endpoint
 * @items:      NAME items, each followed by its POLICY_ACCESS items (wildcards allowed)
 * @items_size: their size, checked with native_items_check()
 *
 * Return: 0, -EINVAL, -EEXIST, -ENOMEM; the old policy stays on error.
 */
int bus_endpoint_update(BusEndpoint *ep, const struct kdbus_item *items, size_t items_size) {
        return bus_endpoint_update_flags(ep, 0, items, items_size);
}

/**
 * bus_endpoint_update_flags() - ENDPOINT_UPDATE with kdbus-compat's flags
 * @ep:         the endpoint
 * @flags:      BUS_ENDPOINT_POLICY_XDG (xdg-dbus-proxy's rule language, bridge/name-acl.h),
 *              BUS_ENDPOINT_SLOPPY_NAMES, BUS_ENDPOINT_UNFILTERED
 * @items:      NAME items, each followed by its POLICY_ACCESS (and, xdg, POLICY_RULE) items
 * @items_size: their size, checked with native_items_check()
 *
 * Everything applies at once to the endpoint's connections: the checks read the policy on
 * every decision, so nothing granted before stays granted.
 *
 * Return: 0, -EINVAL, -EEXIST, -ENOMEM; the old policy and flags stay on error.
 */
int bus_endpoint_update_flags(BusEndpoint *ep, unsigned flags, const struct kdbus_item *items,
                              size_t items_size) {
        int r;

        r = name_acl_db_set_xdg(ep->policy, items, items_size,
                                flags & BUS_ENDPOINT_POLICY_XDG, ep);
        if (r)
                return r;
        ep->sloppy_names = flags & BUS_ENDPOINT_SLOPPY_NAMES;
        ep->unfiltered = flags & BUS_ENDPOINT_UNFILTERED;
        return 0;
}

/**
 * bridge_conn_set_endpoint() - the connection comes through a custom endpoint
 * @conn:       a connection that did not say hello
 * @ep:         the endpoint (a reference is taken)
 */
void bridge_conn_set_endpoint(BridgeConn *conn, BusEndpoint *ep) {
        BridgeUser *account = ep ? ep->user : NULL;

        /* charge the connection to the endpoint's account instead of its uid's */
        if (account && conn->user != account && !conn->active) {
                if (conn->user) {
                        --conn->user->n_conns;
                        bus_user_put(conn->bus, conn->user);
                }
                conn->user = account;
                ++account->n_conns;
        }
        bus_endpoint_unref(conn->endpoint);
        conn->endpoint = bus_endpoint_ref(ep);
}
