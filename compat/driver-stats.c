/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.freedesktop.DBus.Debug.Stats: GetStats, GetConnectionStats(s), GetAllMatchRules, with
 * the keys, types (every value a uint32 but UniqueName), order and errors of dbus-daemon
 * 1.14.10 as Debian builds it (checked with dbus-python against it). The values are the
 * core's own counters; where kdbusd's design differs, the nearest real equivalent:
 *
 *   Serial                 how many times this method answered before (dbus-daemon keeps
 *                          one such counter for GetStats and one for GetConnectionStats)
 *   ListMemPool*Bytes      dbus-daemon's pool of list links; ours is the pool of queue
 *                          entries: Used = entries holding a queued message, Cached = recycled
 *                          free entries (Bus.free_entries), Allocated = both
 *   ActiveConnections      connections past Hello (monitors included), IncompleteConnections
 *                          those before it
 *   MatchRules, BusNames   match rules (AddMatch and monitors' rules); names each
 *                          connection has (its unique name, unless a monitor, and every
 *                          well-known name it owns or is queued for), summed over the bus as
 *                          dbus-daemon sums them; Peak*: the highest value seen, per bus and
 *                          per connection
 *   Incoming*              what the bus holds from the peer and has not dispatched: kdbusd
 *                          dispatches each message as soon as it has read it, so that is the
 *                          message being dispatched (the stats call itself when a peer asks
 *                          about itself), counted in bytes and fds; IncomingMessages stays 0
 *                          like dbus-daemon's for its own call; PeakIncoming*: the largest
 *                          message it sent
 *   Outgoing*              the peer's queue: messages, bytes and fds queued and not yet
 *                          written; Peak*: the highest it reached
 */
#include <stdio.h>
#include <string.h>
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "compat/driver-internal.h"
#include "util/error.h"
#include "wire/protocol.h"

#define STATS_RULE_TEXT_MAX 2048        /* a 1024-byte rule in canonical form fits */

static uint32_t u32(uint64_t v) {
        return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void stats_add_u32(WireWriter *w, const char *key, uint64_t value) {
        uint32_t v = u32(value);

        (void) wire_writer_open(w, '{', NULL);
        (void) wire_writer_append_basic(w, 's', key);
        (void) wire_writer_open(w, 'v', "u");
        (void) wire_writer_append_basic(w, 'u', &v);
        (void) wire_writer_close(w);
        (void) wire_writer_close(w);
}

static void stats_add_str(WireWriter *w, const char *key, const char *value) {
        (void) wire_writer_open(w, '{', NULL);
        (void) wire_writer_append_basic(w, 's', key);
        (void) wire_writer_open(w, 'v', "s");
        (void) wire_writer_append_basic(w, 's', value);
        (void) wire_writer_close(w);
        (void) wire_writer_close(w);
}

static int stats_reply(Driver *driver, BridgeConn *caller, BridgeMsg *call, WireWriter *w) {
        int r;

        (void) wire_writer_close(w);
        r = driver_reply(driver, caller, call, w);
        wire_writer_deinit(w);
        return r;
}

/**
 * driver_method_get_stats() - Debug.Stats.GetStats() -> a{sv}
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA.
 */
int driver_method_get_stats(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                            WireReader *args) {
        Bus *bus = driver->bus;
        uint64_t active = 0, incomplete = 0, queued = 0;
        uint64_t entry = sizeof(BridgeQueueEntry);
        WireWriter w;
        List *pos;

        list_for_each(pos, &bus->conns) {
                BridgeConn *c = container_of(pos, BridgeConn, bus_link);

                if (c->active)
                        ++active;
                else if (!c->id)
                        ++incomplete;
                queued += c->queued_msgs;
        }

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sv}");
        stats_add_u32(&w, "Serial", driver->stats_serial_bus++);
        stats_add_u32(&w, "ListMemPoolUsedBytes", queued * entry);
        stats_add_u32(&w, "ListMemPoolCachedBytes", bus->n_free_entries * entry);
        stats_add_u32(&w, "ListMemPoolAllocatedBytes", (queued + bus->n_free_entries) * entry);
        stats_add_u32(&w, "ActiveConnections", active);
        stats_add_u32(&w, "IncompleteConnections", incomplete);
        stats_add_u32(&w, "MatchRules", bus->n_match_rules);
        stats_add_u32(&w, "PeakMatchRules", bus->peak_match_rules);
        stats_add_u32(&w, "PeakMatchRulesPerConnection", bus->peak_match_rules_per_conn);
        stats_add_u32(&w, "BusNames", bus->n_name_owners + bus->conns_by_id.n_entries);
        stats_add_u32(&w, "PeakBusNames", bus->peak_names);
        stats_add_u32(&w, "PeakBusNamesPerConnection", bus->peak_names_per_conn);
        return stats_reply(driver, caller, call, &w);
}

/**
 * driver_method_get_connection_stats() - Debug.Stats.GetConnectionStats(s name) -> a{sv}
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Answers the call itself. Return: 0, a negative errno, or BRIDGE_E_QUOTA.
 */
int driver_method_get_connection_stats(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                       WireReader *args) {
        const char *name;
        BridgeConn *c;
        WireWriter w;
        bool self;
        int r;

        r = wire_reader_read_basic(args, 's', &name);
        if (r)
                return error_fold(r);
        if (driver_is_driver_name(name))
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_STATS_DRIVER, name, NULL, NULL);
        c = driver_lookup_for(driver, caller, name);
        if (!c)
                return driver_error(driver, caller, call, COMPAT_DOMAIN_COMPAT,
                                    COMPAT_E_NO_OWNER_STATS, name, NULL, NULL);
        self = c == caller;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sv}");
        stats_add_u32(&w, "Serial", driver->stats_serial++);
        stats_add_u32(&w, "MatchRules", c->n_matches);
        stats_add_u32(&w, "PeakMatchRules", c->peak_matches);
        stats_add_u32(&w, "BusNames", c->n_names + 1);
        stats_add_u32(&w, "PeakBusNames", c->peak_names);
        stats_add_str(&w, "UniqueName", c->unique_name);
        stats_add_u32(&w, "IncomingMessages", 0);
        stats_add_u32(&w, "IncomingBytes", self ? call->size : 0);
        stats_add_u32(&w, "IncomingFDs", self ? call->n_fds : 0);
        stats_add_u32(&w, "PeakIncomingBytes", c->peak_in_bytes);
        stats_add_u32(&w, "PeakIncomingFDs", c->peak_in_fds);
        stats_add_u32(&w, "OutgoingMessages", c->queued_msgs);
        stats_add_u32(&w, "OutgoingBytes", c->queued_bytes);
        stats_add_u32(&w, "OutgoingFDs", c->queued_fds);
        stats_add_u32(&w, "PeakOutgoingBytes", c->peak_queued_bytes);
        stats_add_u32(&w, "PeakOutgoingFDs", c->peak_queued_fds);
        return stats_reply(driver, caller, call, &w);
}

static void rule_append(char *buf, size_t size, size_t *len, const char *key,
                        const char *value) {
        int n;

        if (*len >= size)
                return;
        n = snprintf(buf + *len, size - *len, "%s%s='%s'", *len ? "," : "", key, value);
        if (n > 0)
                *len += (size_t)n;
}

/*
 * A rule as dbus-daemon prints it: type, interface, member, path, path_namespace, sender,
 * destination, eavesdrop (only when true), arg0namespace, then argN / argNpath by index;
 * values between quotes as they are (dbus-daemon does not escape them either).
 */
static void rule_to_string(const BridgeMatchKeys *k, char *buf, size_t size) {
        static const char *const types[] = { NULL, "method_call", "method_return", "error",
                                             "signal" };
        char key[16];
        size_t len = 0;
        unsigned i;

        buf[0] = '\0';
        if (k->type && k->type < ELEMENTSOF(types))
                rule_append(buf, size, &len, "type", types[k->type]);
        if (k->interface)
                rule_append(buf, size, &len, "interface", k->interface);
        if (k->member)
                rule_append(buf, size, &len, "member", k->member);
        if (k->path)
                rule_append(buf, size, &len, "path", k->path);
        if (k->path_namespace)
                rule_append(buf, size, &len, "path_namespace", k->path_namespace);
        if (k->sender)
                rule_append(buf, size, &len, "sender", k->sender);
        if (k->destination)
                rule_append(buf, size, &len, "destination", k->destination);
        if (k->eavesdrop)
                rule_append(buf, size, &len, "eavesdrop", "true");
        if (k->arg0namespace)
                rule_append(buf, size, &len, "arg0namespace", k->arg0namespace);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                if (!k->arg_kind[i] || !k->arg[i])
                        continue;
                (void) snprintf(key, sizeof(key), "arg%u%s", i,
                                k->arg_kind[i] == BRIDGE_MATCH_ARG_PATH ? "path" : "");
                rule_append(buf, size, &len, key, k->arg[i]);
        }
}

/**
 * driver_method_get_all_match_rules() - Debug.Stats.GetAllMatchRules() -> a{sas}
 * @driver:     the driver
 * @caller:     the calling connection
 * @call:       the call (its signature already checked)
 * @args:       a reader at the call's first argument
 *
 * Every active connection but monitors (dbus-daemon does not list them), oldest first, with
 * its AddMatch rules in dbus-daemon's order (rules without type first, then by message
 * type, each group oldest first). Answers the call itself. Return: 0, a negative errno,
 * or BRIDGE_E_QUOTA.
 */
int driver_method_get_all_match_rules(Driver *driver, BridgeConn *caller, BridgeMsg *call,
                                      WireReader *args) {
        char text[STATS_RULE_TEXT_MAX];
        WireWriter w;
        List *pos, *rpos;
        unsigned type;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "{sas}");
        list_for_each(pos, &driver->bus->conns) {
                BridgeConn *c = container_of(pos, BridgeConn, bus_link);

                if (!c->active || bridge_conn_is_monitor(c) || !bridge_conn_can_see_conn(caller, c))
                        continue;
                (void) wire_writer_open(&w, '{', NULL);
                (void) wire_writer_append_basic(&w, 's', c->unique_name);
                (void) wire_writer_open(&w, 'a', "s");
                for (type = 0; type <= WIRE_MSG_SIGNAL; ++type)
                        list_for_each(rpos, &c->matches) {
                                BridgeMatchRule *rule = container_of(rpos, BridgeMatchRule,
                                                                     conn_link);

                                if (rule->keys.type != type)
                                        continue;
                                rule_to_string(&rule->keys, text, sizeof(text));
                                (void) wire_writer_append_basic(&w, 's', text);
                        }
                (void) wire_writer_close(&w);
                (void) wire_writer_close(&w);
        }
        return stats_reply(driver, caller, call, &w);
}
