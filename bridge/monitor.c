/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Monitors (see monitor.h for what they see and why).
 *
 * Invariants: a monitor has BRIDGE_CONN_MONITOR, is active, is linked into Bus.monitors
 * through its match_link (never into Bus.match_conns), is not in Bus.conns_by_id, owns no
 * name and has no pending reply either way. Its rules hang on BridgeConn.matches and are
 * freed with it by bridge_conn_disconnect() like any rule.
 */
#include <stdio.h>
#include <string.h>
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "bridge/reply.h"
#include "util/error.h"
#include "wire/protocol.h"

/**
 * bridge_conn_become_monitor() - turn @conn into a monitor
 * @conn:       an active connection that is no monitor yet
 * @rules:      new rules (bridge_match_rule_new()), all taken, also on failure
 * @n_rules:    how many; 0 means "every message"
 *
 * First the calls @conn waits for are forgotten; then its names are released, the unique
 * name first and then the well-known names oldest first, each reported through
 * name_changed, while @conn is still an ordinary connection with its old rules
 * (dbus-daemon 1.14.10 sends NameLost and NameOwnerChanged in this order after the
 * BecomeMonitor reply, and the new monitor gets a NameOwnerChanged only if its old rules
 * match it); then callers waiting for a reply from @conn get reply_lost (dbus-daemon's
 * NoReply comes after the NameOwnerChanged signals); last its old rules go and it becomes
 * an unreachable monitor with @rules.
 *
 * Return: 0, BRIDGE_E_NOT_ACTIVE (inactive or already a monitor), BRIDGE_E_MATCH_QUOTA
 * (more rules than max_match_rules_per_connection; nothing changed).
 */
int bridge_conn_become_monitor(BridgeConn *conn, BridgeMatchRule **rules, size_t n_rules) {
        Bus *bus = conn->bus;
        BridgeMatchRule *old;
        BridgeNameOwner *o;
        size_t i;
        int r = 0;

        if (!bridge_conn_is_active(conn) || bridge_conn_is_monitor(conn))
                r = BRIDGE_E_NOT_ACTIVE;
        else if (n_rules > bus->limits.max_match_rules_per_connection)
                r = BRIDGE_E_MATCH_QUOTA;
        if (r) {
                for (i = 0; i < n_rules; ++i)
                        rules[i] = bridge_match_rule_free(rules[i]);
                return r;
        }

        bridge_conn_drop_replies(conn);

        /* while its old rules still count: it gets the NameOwnerChanged its rules match */
        (void) bus_notify_name_changed(bus, conn->unique_name, conn, 0, NULL, 0);
        while ((o = list_first_entry(&conn->owned, BridgeNameOwner, conn_link))) {
                char name[WIRE_MAX_NAME_LEN + 1];

                /* the owner record and maybe the name die in the release: copy it */
                (void) snprintf(name, sizeof(name), "%s", o->name->name);
                if (bridge_name_release(conn, name) != 0)
                        break;          /* cannot happen: @conn is on the owner list */
        }
        /* after the NameOwnerChanged signals, as dbus-daemon sends its NoReply errors */
        bridge_conn_fail_replies(conn);

        while ((old = list_first_entry(&conn->matches, BridgeMatchRule, conn_link)))
                bridge_match_rule_free(old);
        hash_table_remove(&bus->conns_by_id, &conn->id_node);
        bus_dest_gone(bus);
        conn->flags |= BRIDGE_CONN_MONITOR;
        for (i = 0; i < n_rules; ++i) {
                rules[i]->keys.eavesdrop = false;       /* implied; not an eavesdrop rule */
                rules[i]->owner = conn;
                list_append(&conn->matches, &rules[i]->conn_link);
                ++conn->n_matches;
                ++bus->n_match_rules;   /* dbus-daemon's MatchRules counts them too */
                rules[i] = NULL;
        }
        bus_stats_note_matches(bus, conn);
        list_unlink(&conn->match_link);
        list_append(&bus->monitors, &conn->match_link);
        return 0;
}

/**
 * bridge_conn_hello_monitor() - activate a new connection as a monitor
 * @conn:       a connection that never said hello
 *
 * The id comes from the same counter as every other connection's (kdbus does the same),
 * so ids stay unique on the bus; the unique name is set for logs only: a monitor owns no
 * name. It counts as an active connection of its user (max_connections_per_user).
 *
 * Return: 0, BRIDGE_E_ALREADY_ACTIVE, BRIDGE_E_CONN_QUOTA.
 */
int bridge_conn_hello_monitor(BridgeConn *conn) {
        Bus *bus = conn->bus;

        if (conn->active || conn->id || !bus)
                return BRIDGE_E_ALREADY_ACTIVE;
        if (conn->user && conn->user->n_active >= bus->limits.max_connections_per_user)
                return BRIDGE_E_CONN_QUOTA;
        conn->id = bus->next_conn_id++;
        bus_format_unique_name(bus, conn->id, conn->unique_name);
        conn->active = true;
        if (conn->user)
                ++conn->user->n_active;
        conn->flags |= BRIDGE_CONN_MONITOR;
        list_unlink(&conn->match_link);
        list_append(&bus->monitors, &conn->match_link);
        return 0;
}

static bool monitor_wants(BridgeConn *mon, const BridgeConn *sender, const BridgeMsg *msg,
                          const WireArgs *args) {
        List *pos;

        if (!mon->n_matches)
                return true;
        list_for_each(pos, &mon->matches) {
                BridgeMatchRule *rule = container_of(pos, BridgeMatchRule, conn_link);

                if (bridge_match_rule_matches(rule, msg, sender, args))
                        return true;
        }
        return false;
}

/**
 * bus_monitor_capture() - copy @msg to every monitor that wants it
 * @bus:        the bus
 * @sender:     who sent it (NULL: the bus)
 * @msg:        the message (a reference is taken per monitor)
 * @skip:       a monitor not to copy it to (it is the message's destination), or NULL
 *
 * A native monitor (BRIDGE_RULE_MONITOR_PEERS_ONLY) gets no message of the bus: a kdbus
 * monitor saw the connections' messages and the kernel's notifications, never a dbus1
 * message from KDBUS_SRC_ID_KERNEL (kdbus-test metadata-ns checks every dbus1 copy for
 * the sender's PIDS).
 * A legacy monitor that cannot take fds does not get messages with fds (dbus-daemon, as
 * with match rules); a native one gets them without the fds, its FDS item all -1, as
 * kdbus queued them for monitors and installed no fds without ACCEPT_FD. A monitor whose
 * queue is full is kicked rather than silently missing messages.
 *
 * Return: 0 or -ENOMEM.
 */
int bus_monitor_capture(Bus *bus, const BridgeConn *sender, BridgeMsg *msg,
                        const BridgeConn *skip) {
        WireArgs args;
        List *pos, *tmp;
        bool have_args = false;
        int r;

        list_for_each_safe(pos, tmp, &bus->monitors) {
                BridgeConn *mon = container_of(pos, BridgeConn, match_link);

                if (!mon->active || mon == skip)
                        continue;
                if (!sender && bridge_conn_has_rule(mon, BRIDGE_RULE_MONITOR_PEERS_ONLY))
                        continue;
                if (msg->n_fds && !(mon->flags & BRIDGE_CONN_ACCEPT_FDS) &&
                    !bridge_conn_has_rule(mon, BRIDGE_RULE_MONITOR_FDS_BLANKED))
                        continue;
                if (mon->n_matches && !have_args) {
                        /* reads a native sender's memfd parts (once); an invalid body
                         * gives no args, and legacy monitors do not get it */
                        r = bridge_msg_get_args(msg, &args);
                        if (r == -ENOMEM)
                                return error_trace(r);
                        have_args = true;
                }
                if (!monitor_wants(mon, sender, msg, &args))
                        continue;
                if (bridge_conn_queue_is_full(mon)) {
                        bridge_conn_kick(mon);
                        continue;
                }
                r = bridge_conn_queue_push(mon, msg);
                if (r < 0)
                        return error_trace(r);
        }
        return 0;
}

/**
 * bus_monitor_count() - how many monitors @bus has
 * @bus:        the bus
 *
 * Return: the number.
 */
unsigned bus_monitor_count(const Bus *bus) {
        const List *pos;
        unsigned n = 0;

        for (pos = bus->monitors.next; pos != &bus->monitors; pos = pos->next)
                ++n;
        return n;
}

/**
 * bus_monitor_queue_seen() - queue a message of the bus monitors saw already
 * @dst:        the receiver
 * @msg:        the message (a reference is taken)
 *
 * Return: 0, -ENOMEM, BRIDGE_E_QUOTA, BRIDGE_E_NOT_ACTIVE.
 */
int bus_monitor_queue_seen(BridgeConn *dst, BridgeMsg *msg) {
        PolicyMsgInfo pinfo = { .db = NULL };
        int r;

        if (!bridge_conn_is_active(dst))
                return BRIDGE_E_NOT_ACTIVE;
        if (dst->policy) {
                r = bridge_policy_check_copy(&pinfo, NULL, dst, msg, false, false);
                if (r)
                        return r < 0 ? error_trace(r) : 0;
        }
        r = bridge_conn_queue_check(dst, msg);
        if (r)
                return r;
        return error_trace(bridge_conn_queue_push(dst, msg));
}
