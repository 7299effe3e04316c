/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus object: tables, notifications and time. Invariants:
 *
 *   - conns_by_id holds exactly the active connections; conns holds every connection that
 *     was created on this bus and not yet freed (quota counting walks it).
 *   - names, replies and match_conns only ever refer to active connections: disconnect
 *     removes a connection from all of them before it reports conn_removed, except the
 *     calls it owes: those are failed (reply_lost) right after conn_removed, as
 *     dbus-daemon sends its NoReply errors after the unique name's NameOwnerChanged.
 *   - Time is bus->now_usec, set by the caller; nothing here reads a clock.
 *
 * Notifications run synchronously, after the state they report has changed, so a handler
 * (compat's driver) can query the bus and see the new state. A failing handler (-ENOMEM)
 * cannot undo the change; the calls that can return an error pass it up, the void ones
 * (disconnect) drop it.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "bridge/activator.h"
#include "bridge/bus-internal.h"
#include "bridge/bloom.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/meta.h"
#include "bridge/msg.h"
#include "bridge/name-acl.h"
#include "bridge/policy.h"
#include "bridge/names.h"
#include "bridge/reply.h"
#include "util/error.h"
#include "util/siphash24.h"

/**
 * bus_new() - a new, empty bus with a random id
 * @limits:     copied; NULL for the session defaults
 * @ret:        the bus
 *
 * Return: 0, -ENOMEM, or a negative errno from getrandom().
 */
int bus_new(const BusLimits *limits, Bus **ret) {
        _cleanup_(bus_freep) Bus *bus = NULL;
        size_t done = 0;
        ssize_t n;
        int r;

        bus = calloc(1, sizeof(*bus));
        if (!bus)
                return error_origin(-ENOMEM);
        list_init(&bus->conns);
        list_init(&bus->match_conns);
        match_index_init(&bus->match_index);
        match_index_init(&bus->match_index_eavesdrop);
        list_init(&bus->monitors);
        list_init(&bus->activators);
        list_init(&bus->reply_timeouts);
        list_init(&bus->replies_unindexed);
        bus->dest_gen = 1;                      /* a new connection's cache (0) is stale */
        list_init(&bus->free_entries);
        list_init(&bus->endpoints);
        bus->next_conn_id = 1;          /* 0 means "the bus" (BridgeMsg.sender_id) */
        bus->owner_uid = geteuid();
        bus->bloom = bloom_params_default;
        r = bridge_msg_cache_new(&bus->msg_cache);
        if (r < 0)
                return error_trace(r);
        if (limits)
                bus->limits = *limits;
        else
                bus_limits_init_session(&bus->limits);

        while (done < sizeof(bus->id)) {
                n = getrandom(bus->id + done, sizeof(bus->id) - done, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_origin(-errno);
                }
                done += (size_t)n;
        }

        *ret = steal_ptr(&bus);
        return 0;
}

/**
 * bus_free() - disconnect every connection and free the bus
 * @bus:        the bus or NULL
 *
 * Connections still referenced elsewhere survive, detached (conn->bus == NULL).
 *
 * Return: NULL.
 */
Bus *bus_free(Bus *bus) {
        List *pos, *tmp;

        if (!bus)
                return NULL;

        /* endpoints outlive the bus only as memory their owners still reference */
        list_for_each_safe(pos, tmp, &bus->endpoints) {
                BusEndpoint *ep = container_of(pos, BusEndpoint, link);

                list_unlink(&ep->link);
                ep->bus = NULL;
        }
        list_for_each_safe(pos, tmp, &bus->conns)
                bridge_conn_disconnect(container_of(pos, BridgeConn, bus_link));
        list_for_each_safe(pos, tmp, &bus->conns) {
                BridgeConn *conn = container_of(pos, BridgeConn, bus_link);

                list_unlink(&conn->bus_link);
                conn->bus = NULL;
                conn->user = NULL;
        }
        bus_free_entries_flush(bus);
        bus_free_replies_flush(bus);
        match_index_deinit(&bus->match_index);
        match_index_deinit(&bus->match_index_eavesdrop);
        free(bus->route_buf);
        bus->msg_cache = bridge_msg_cache_unref(bus->msg_cache);
        bus_users_flush(bus);
        hash_table_deinit(&bus->users);
        bus->policy = policy_db_unref(bus->policy);
        bus->holder_policy = name_acl_db_free(bus->holder_policy);
        bridge_meta_free(bus->creator_meta);
        bus->creator_meta = NULL;
        free(bus->creator_groups);
        free(bus->creator_seclabel);
        hash_table_deinit(&bus->conns_by_id);
        hash_table_deinit(&bus->names);
        hash_table_deinit(&bus->replies);
        free(bus);
        return NULL;
}

/**
 * bus_set_notify() - install the notification handler (NULL: none)
 * @bus:        the bus
 * @ops:        the callbacks; any may be NULL
 * @userdata:   passed to them
 */
void bus_set_notify(Bus *bus, const BusNotifyOps *ops, void *userdata) {
        bus->notify = ops;
        bus->notify_userdata = userdata;
}

/**
 * bus_add_observer() - register a front end's observer of the bus's events
 * @bus:        the bus
 * @obs:        its hooks (static; registered once however often this is called)
 */
void bus_add_observer(Bus *bus, const BusObserver *obs) {
        unsigned i;

        for (i = 0; i < bus->n_observers; ++i)
                if (bus->observers[i] == obs)
                        return;
        assert(bus->n_observers < BUS_MAX_OBSERVERS);
        bus->observers[bus->n_observers++] = obs;
}

/**
 * bus_set_proc_reader() - how the bus reads /proc (bridge/meta.h)
 * @bus:        the bus
 * @proc:       the reader (static), NULL: no metadata is captured
 */
void bus_set_proc_reader(Bus *bus, const BridgeProcReader *proc) {
        bus->proc = proc;
}

/**
 * bus_observe_conn() - tell the observers that @conn came or went
 * @bus:        the bus
 * @conn:       the connection
 * @added:      it said hello (else it left)
 */
void bus_observe_conn(Bus *bus, BridgeConn *conn, bool added) {
        unsigned i;

        for (i = 0; i < bus->n_observers; ++i)
                if (bus->observers[i]->conn_changed)
                        bus->observers[i]->conn_changed(bus, conn, added);
}

/**
 * bus_observe_activator() - tell the observers that an activator took or gave up @name
 * @bus:        the bus
 * @name:       the name (no owner has it)
 * @conn:       the activator
 * @added:      it took the name (else it gave it up)
 */
void bus_observe_activator(Bus *bus, const char *name, BridgeConn *conn, bool added) {
        unsigned i;

        for (i = 0; i < bus->n_observers; ++i)
                if (bus->observers[i]->activator_changed)
                        bus->observers[i]->activator_changed(bus, name, conn, added);
}

/**
 * bus_notify_conn_added() - report a hello (and likewise the other bus_notify_*())
 * @bus:        the bus
 * @conn:       the connection
 *
 * Each helper first tells the observers (BusObserver: the native front end sends kdbus's
 * notifications to its peers that asked for them), then calls the installed handler if
 * there is one. A lost reply of a caller whose transport tells its peer itself
 * (BridgeConnOps.reply_lost: kdbus's REPLY_TIMEOUT / REPLY_DEAD) is not reported to the
 * handler.
 *
 * Return: 0, or the handler's result.
 */
int bus_notify_conn_added(Bus *bus, BridgeConn *conn) {
        bus_observe_conn(bus, conn, true);
        if (!bus->notify || !bus->notify->conn_added)
                return 0;
        return error_trace(bus->notify->conn_added(bus->notify_userdata, conn));
}

int bus_notify_conn_removed(Bus *bus, BridgeConn *conn) {
        bus_observe_conn(bus, conn, false);
        if (!bus->notify || !bus->notify->conn_removed)
                return 0;
        return error_trace(bus->notify->conn_removed(bus->notify_userdata, conn));
}

int bus_notify_name_changed(Bus *bus, const char *name, BridgeConn *old_owner,
                            unsigned old_flags, BridgeConn *new_owner, unsigned new_flags) {
        unsigned i;
        int r = 0;

        for (i = 0; i < bus->n_observers; ++i)
                if (bus->observers[i]->name_changed)
                        bus->observers[i]->name_changed(bus, name, old_owner, old_flags,
                                                        new_owner, new_flags);
        if (bus->notify && bus->notify->name_changed)
                r = bus->notify->name_changed(bus->notify_userdata, name, old_owner, new_owner);
        /* after NameOwnerChanged / NameAcquired, as .service activation routes its waiting
         * messages after them */
        bus_activator_name_changed(bus, name, old_owner, new_owner);
        return error_trace(r);
}

int bus_notify_reply_lost(Bus *bus, BridgeConn *caller, uint32_t serial, bool timed_out,
                          const char *callee_name) {
        if (caller->ops && caller->ops->reply_lost &&
            caller->ops->reply_lost(caller, caller->userdata, serial, timed_out))
                return 0;
        if (!bus->notify || !bus->notify->reply_lost)
                return 0;
        return error_trace(bus->notify->reply_lost(bus->notify_userdata, caller, serial,
                                                   timed_out, callee_name));
}

/**
 * bus_find_conn() - the active connection with @id
 * @bus:        the bus
 * @id:         a connection id
 *
 * Return: the connection or NULL.
 */
BridgeConn *bus_find_conn(Bus *bus, uint64_t id) {
        HashNode *n;

        for (n = hash_table_lookup(&bus->conns_by_id, bus_conn_id_hash(id)); n; n = hash_node_next_match(n)) {
                BridgeConn *conn = container_of(n, BridgeConn, id_node);

                if (conn->id == id)
                        return conn;
        }
        return NULL;
}

/*
 * Unique names: one numbering per bus (Bus.naming, bridge/bus.h), the same for every peer,
 * legacy or native. These functions are the only place a unique name is made from an id or
 * read back into one; the core, both front ends and the driver go through them or through
 * BridgeConn.unique_name, so no name is ever converted between two numberings.
 */

/**
 * bus_set_naming() - choose how the bus numbers unique names
 * @bus:        the bus
 * @naming:     BUS_NAMING_*
 *
 * Return: 0 (also when @naming is the bus's already: a custom endpoint's front end on a bus
 * that has one), or -EBUSY when a connection was given a name in the other numbering (the
 * front end was set up too late: a name must never change).
 */
int bus_set_naming(Bus *bus, BusNaming naming) {
        if (bus->naming == naming)
                return 0;
        if (bus->next_conn_id != 1)
                return -EBUSY;
        bus->naming = naming;
        return 0;
}

/* What a unique name's number is below the connection id: 1 (dbus-daemon) or 0 (kdbus). */
static uint64_t bus_naming_offset(const Bus *bus) {
        return bus->naming == BUS_NAMING_DBUS_DAEMON ? 1 : 0;
}

/**
 * bus_format_unique_name() - the unique name of connection @id
 * @bus:        the bus (its numbering)
 * @id:         a connection id (at least 1)
 * @buf:        BRIDGE_UNIQUE_NAME_MAX bytes (bridge/conn.h)
 */
void bus_format_unique_name(const Bus *bus, uint64_t id, char *buf) {
        uint64_t n = id - bus_naming_offset(bus);
        char digits[20];
        unsigned k = 0;

        /* by hand, not snprintf(): a native SEND formats one or two per message (about
         * 700 instructions each through vfprintf, 5 % of the bus's own work per call) */
        do {
                digits[k++] = (char)('0' + n % 10);
                n /= 10;
        } while (n);
        memcpy(buf, ":1.", 3);
        buf += 3;
        while (k)
                *buf++ = digits[--k];
        *buf = '\0';
}

/**
 * bus_parse_unique_name() - the connection id a unique name stands for
 * @bus:        the bus (its numbering)
 * @name:       ":1.<decimal>" exactly as bus_format_unique_name() writes it (no sign, no
 *              leading zero but in ":1.0")
 *
 * Return: the id, or 0 when @name is no unique name the bus could have given (":1.0" in
 * kdbus's numbering: id 0 is the bus).
 */
uint64_t bus_parse_unique_name(const Bus *bus, const char *name) {
        uint64_t n = 0, offset = bus_naming_offset(bus);
        const char *p;

        if (strncmp(name, ":1.", 3) != 0)
                return 0;
        p = name + 3;
        if (*p < '0' || *p > '9' || (p[0] == '0' && p[1]))
                return 0;
        for (; *p; ++p) {
                uint64_t d = (uint64_t)(*p - '0');

                /* n + offset must be an id: n * 10 + d <= UINT64_MAX - offset */
                if (*p < '0' || *p > '9' || n > (UINT64_MAX - offset - d) / 10)
                        return 0;
                n = n * 10 + d;
        }
        return n + offset;
}

/**
 * bus_trim() - free the queue entries kept for reuse
 * @bus:        the bus
 *
 * The transport calls it once a flood drained, before malloc_trim(): the entries a burst
 * left behind (up to BUS_MAX_FREE_ENTRIES) would otherwise pin heap pages.
 */
void bus_trim(Bus *bus) {
        bus_free_entries_flush(bus);
}

/**
 * bus_find_conn_by_name() - resolve a unique or well-known name
 * @bus:        the bus
 * @name:       a unique name (bus_parse_unique_name()) or a well-known name
 *
 * Return: the active connection, or NULL when nobody has the name.
 */
BridgeConn *bus_find_conn_by_name(Bus *bus, const char *name) {
        BridgeName *n;
        uint64_t id;

        if (name[0] == ':') {
                id = bus_parse_unique_name(bus, name);
                return id ? bus_find_conn(bus, id) : NULL;
        }
        n = bus_find_name(bus, name);
        return n ? bridge_name_primary(n) : NULL;
}

/**
 * bus_find_conn_by_name_from() - bus_find_conn_by_name() for a message of @sender
 * @sender:     the connection that sends to @name
 * @name:       a unique name or a well-known name
 *
 * A peer sends to the same one or two names again and again: the last unique name and the
 * last well-known name it resolved are kept with it and compared first (a strcmp() instead
 * of parsing or SipHashing the name, issue #16). They hold no reference: Bus.dest_gen
 * changes whenever an active connection leaves conns_by_id or a BridgeName is freed
 * (bus_dest_gone()), and a cache of another generation is forgotten. A kept name gives its
 * owner of now (bridge_name_primary()), so owner changes need no invalidation.
 *
 * Return: the active connection, or NULL when nobody has the name.
 */
BridgeConn *bus_find_conn_by_name_from(BridgeConn *sender, const char *name) {
        Bus *bus = sender->bus;
        BridgeName *n;
        BridgeConn *c;

        if (sender->dest_gen != bus->dest_gen) {
                sender->dest_gen = bus->dest_gen;
                sender->dest_conn = NULL;
                sender->dest_name = NULL;
        }
        if (name[0] == ':') {
                c = sender->dest_conn;
                if (c && strcmp(c->unique_name, name) == 0)
                        return c;
                c = bus_find_conn_by_name(bus, name);
                if (c)
                        sender->dest_conn = c;
                return c;
        }
        n = sender->dest_name;
        if (!n || strcmp(n->name, name) != 0) {
                n = bus_find_name(bus, name);
                if (!n)
                        return NULL;
                sender->dest_name = n;
        }
        return bridge_name_primary(n);
}

/**
 * bus_next_deadline() - when bus_dispatch_timeouts() has work next
 * @bus:        the bus
 * @ret_usec:   the earliest deadline (CLOCK_MONOTONIC, microseconds)
 *
 * Return: true and *ret_usec, or false if nothing is pending.
 */
bool bus_next_deadline(Bus *bus, uint64_t *ret_usec) {
        BridgeReply *reply = list_first_entry(&bus->reply_timeouts, BridgeReply, timeout_link);

        if (!reply)
                return false;
        *ret_usec = reply->deadline_usec;
        return true;
}

/**
 * bus_dispatch_timeouts() - fail every pending reply whose deadline is <= bus->now_usec
 * @bus:        the bus
 *
 * Each expired entry is freed, then reported through reply_lost with @timed_out set.
 * The list is in deadline order (entries get the same timeout, native calls with their own
 * earlier deadline are inserted in order); if a reload changes reply_timeout, entries made
 * after it may wait behind older ones, at most until those expire.
 *
 * Return: 0, or the first negative errno a handler returned (the others still run).
 */
int bus_dispatch_timeouts(Bus *bus) {
        BridgeReply *reply;
        int r, ret = 0;

        while ((reply = list_first_entry(&bus->reply_timeouts, BridgeReply, timeout_link)) &&
               reply->deadline_usec <= bus->now_usec) {
                BridgeConn *caller = reply->caller, *callee = reply->callee;
                uint32_t serial = reply->serial;

                bridge_reply_free(reply);
                r = bus_notify_reply_lost(bus, caller, serial, true, callee->unique_name);
                if (r < 0 && !ret)
                        ret = r;
        }
        return ret;
}
