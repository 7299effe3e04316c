/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connections, their queues, and message routing.
 *
 * Lifetime: n_refs keeps the memory; @active is true between hello and disconnect, and
 * only an active connection is in conns_by_id, owns names, has pending replies or matches,
 * or gets anything queued. Disconnect takes it out of all of these, in a fixed order
 * (bridge_conn_disconnect()).
 *
 * Queues: a FIFO of BridgeQueueEntry, each holding one message reference. Entries are
 * recycled through Bus.free_entries, so a steady flow of messages allocates nothing.
 * The limits apply per (receiver, sending account) (bridge/quota.h), as kdbus's pool quota
 * and dbus-broker's per-user charges do, not per receiver as in dbus-daemon: one user
 * filling a receiver that does not read is refused at its own limit, and every other user
 * (and the bus itself) can still reach it. An account is over quota at a receiver when what
 * it already has queued there exceeds max_outgoing_bytes or max_outgoing_unix_fds: the
 * check is made before adding, as dbus-daemon does ("destination has a full message
 * queue"), so one message may overshoot and a message larger than the limit still reaches
 * an empty queue. A native receiver adds kdbus's pool quota (BridgeConnOps.quota_check),
 * checked here too, when the message is accepted: what is accepted is never held back
 * behind another user's backlog, so each receiver gets its messages in routing order.
 *
 * Backpressure: a unicast over quota fails for its sender (BRIDGE_E_QUOTA, which
 * compat turns into LimitsExceeded). A broadcast never fails for its sender: a receiver
 * that cannot take it is kicked (BridgeConnOps.kick), as dbus-broker does, rather than
 * silently losing signals as dbus-daemon does (a native receiver counts it as dropped
 * instead). The kick handler must only schedule the
 * disconnect (the transport closes the peer later, from its loop): it may not disconnect
 * or free anything from inside the callback, because routing is still walking the lists.
 *
 * Facts checked against dbus-daemon 1.14.10 (dbus-python, see tests/unit/bridge): a unicast
 * signal reaches its destination whatever its match rules; a broadcast reaches its own
 * sender when the sender has a matching rule. A message without destination goes through
 * the match rules whatever its type, as in dbus-daemon's dispatch code.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bloom.h"
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/match-index.h"
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy.h"
#include "bridge/reply.h"
#include "util/error.h"
#include "util/siphash24.h"
#include "wire/message.h"
#include "wire/protocol.h"

static void creds_clear(BridgeCreds *c) {
        c->pidfd = fd_close(c->pidfd);
        free(c->groups);
        c->groups = NULL;
        c->n_groups = 0;
        free(c->seclabel);
        c->seclabel = NULL;
}

/**
 * bus_user_put() - free a per-uid account once nothing is charged to it
 * @bus:        the bus
 * @user:       the account or NULL; an endpoint's (anonymous) stays: the endpoint owns it
 */
void bus_user_put(Bus *bus, BridgeUser *user) {
        if (!user || user->n_conns || user->anonymous)
                return;
        hash_table_remove(&bus->users, &user->node);
        free(user);
}

/**
 * bus_users_flush() - free every per-uid account
 * @bus:        the bus, whose connections are detached already
 */
void bus_users_flush(Bus *bus) {
        HashNode *n, *tmp;
        size_t i;

        hash_table_for_each(n, tmp, &bus->users, i) {
                hash_table_remove(&bus->users, n);
                free(container_of(n, BridgeUser, node));
        }
}

/**
 * bridge_conn_new() - a new, inactive connection
 * @bus:        the bus
 * @creds:      taken on success (pidfd, groups, seclabel now belong to the connection; the
 *              caller's struct is left empty)
 * @flags:      BRIDGE_CONN_*
 * @ops:        the transport's callbacks (may be NULL)
 * @userdata:   passed to them
 * @ret:        the connection, one reference
 *
 * Only active connections count against max_connections_per_user (bridge_conn_hello()).
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_conn_new(Bus *bus, BridgeCreds *creds, unsigned flags, const BridgeConnOps *ops,
                    void *userdata, BridgeConn **ret) {
        BridgeUser *user = NULL;
        BridgeConn *conn;
        HashNode *n;
        int r;

        for (n = hash_table_lookup(&bus->users, hash_u64(creds->uid)); n; n = hash_node_next_match(n))
                if (container_of(n, BridgeUser, node)->uid == creds->uid) {
                        user = container_of(n, BridgeUser, node);
                        break;
                }
        if (!user) {
                user = calloc(1, sizeof(*user));
                if (!user)
                        return error_origin(-ENOMEM);
                user->uid = creds->uid;
                r = hash_table_insert(&bus->users, &user->node, hash_u64(creds->uid));
                if (r < 0) {
                        free(user);
                        return error_trace(r);
                }
        }

        conn = calloc(1, sizeof(*conn));
        if (!conn) {
                bus_user_put(bus, user);
                return error_origin(-ENOMEM);
        }
        conn->n_refs = 1;
        conn->user = user;
        ++user->n_conns;
        conn->flags = flags;
        conn->bus = bus;
        conn->creds = *creds;
        creds->pidfd = -1;
        creds->groups = NULL;
        creds->n_groups = 0;
        creds->seclabel = NULL;
        conn->ops = ops;
        conn->userdata = userdata;
        list_init(&conn->queue);
        list_init(&conn->owned);
        list_init(&conn->matches);
        list_init(&conn->match_link);
        list_init(&conn->replies_out);
        list_init(&conn->replies_in);
        list_init(&conn->callers);
        list_init(&conn->called);
        list_append(&bus->conns, &conn->bus_link);

        *ret = conn;
        return 0;
}

/**
 * bridge_conn_ref() - take a reference
 * @conn:       the connection or NULL
 *
 * Return: @conn.
 */
BridgeConn *bridge_conn_ref(BridgeConn *conn) {
        if (conn)
                ++conn->n_refs;
        return conn;
}

/**
 * bridge_conn_unref() - drop a reference; the last one disconnects and frees
 * @conn:       the connection or NULL
 *
 * Return: NULL.
 */
BridgeConn *bridge_conn_unref(BridgeConn *conn) {
        if (!conn)
                return NULL;
        assert(conn->n_refs > 0);
        if (--conn->n_refs > 0)
                return NULL;
        if (conn->active) {
                conn->n_refs = 1;       /* the handlers may look at it */
                bridge_conn_disconnect(conn);
                conn->n_refs = 0;
        }
        /* disconnected (or never active): no names, no rules, no call it waits for */
        assert(!conn->active);
        assert(list_is_empty(&conn->owned) && list_is_empty(&conn->matches));
        assert(conn->n_replies_out == 0 && list_is_empty(&conn->replies_out));
        list_unlink(&conn->bus_link);
        if (conn->bus && conn->user) {
                --conn->user->n_conns;
                bus_user_put(conn->bus, conn->user);
        }
        /* what the driver answered before hello and was not written */
        while (!list_is_empty(&conn->queue))
                bridge_conn_queue_pop(conn);
        /* the queue's counters are exactly what is in it */
        assert(conn->queued_msgs == 0 && conn->queued_bytes == 0 && conn->queued_fds == 0);
        bridge_quota_table_deinit(&conn->quota);
        creds_clear(&conn->creds);
        conn->policy = policy_snapshot_free(conn->policy);
        conn->endpoint = bus_endpoint_unref(conn->endpoint);
        free(conn->denial);
        free(conn);
        return NULL;
}

/**
 * bridge_conn_shown_creds() - the credentials the bus shows of @conn to others
 * @conn:       any connection
 * @ret:        its creds, or what its transport says it stood in with (a shallow copy)
 *
 * Return: true if *ret are not @conn's own credentials (a privileged peer stood in).
 */
bool bridge_conn_shown_creds(const BridgeConn *conn, BridgeCreds *ret) {
        if (conn->ops && conn->ops->shown_creds)
                return conn->ops->shown_creds(conn, conn->userdata, ret);
        *ret = conn->creds;
        return false;
}

/**
 * bridge_conn_hello() - activate: id, unique name, conn_added
 * @conn:       a connection that never said hello
 *
 * As dbus-daemon, max_connections_per_user counts completed (active) connections only: a
 * connection over it stays inactive and may say hello again once another one of its uid
 * is gone.
 *
 * Return: 0, -ENOMEM, BRIDGE_E_CONN_QUOTA, BRIDGE_E_ALREADY_ACTIVE (also after a
 * disconnect: ids are not given twice).
 */
int bridge_conn_hello(BridgeConn *conn) {
        Bus *bus = conn->bus;
        uint64_t id;
        int r;

        if (conn->active || conn->id || !bus)
                return BRIDGE_E_ALREADY_ACTIVE;
        if (conn->user && conn->user->n_active >= bus->limits.max_connections_per_user)
                return BRIDGE_E_CONN_QUOTA;

        id = bus->next_conn_id;
        r = hash_table_insert(&bus->conns_by_id, &conn->id_node, bus_conn_id_hash(id));
        if (r < 0)
                return error_trace(r);
        ++bus->next_conn_id;
        conn->id = id;
        bus_format_unique_name(bus, id, conn->unique_name);
        conn->active = true;
        if (conn->user)
                ++conn->user->n_active;
        bus_stats_note_names(bus, conn);
        return error_trace(bus_notify_conn_added(bus, conn));
}

/* ---- queue ---- */

static BridgeQueueEntry *bus_entry_get(Bus *bus) {
        BridgeQueueEntry *e = list_first_entry(&bus->free_entries, BridgeQueueEntry, link);

        if (e) {
                list_unlink(&e->link);
                --bus->n_free_entries;
                return e;
        }
        e = malloc(sizeof(*e));
        if (e)
                list_init(&e->link);
        return e;
}

static void bus_entry_put(Bus *bus, BridgeQueueEntry *e) {
        e->msg = NULL;
        if (bus && bus->n_free_entries < BUS_MAX_FREE_ENTRIES) {
                list_prepend(&bus->free_entries, &e->link);
                ++bus->n_free_entries;
        } else {
                free(e);
        }
}

/**
 * bus_free_entries_flush() - free the recycled queue entries
 * @bus:        the bus
 */
void bus_free_entries_flush(Bus *bus) {
        BridgeQueueEntry *e;

        while ((e = list_first_entry(&bus->free_entries, BridgeQueueEntry, link))) {
                list_unlink(&e->link);
                free(e);
        }
        bus->n_free_entries = 0;
}

static bool conn_queue_is_full(const BridgeConn *conn) {
        const BusLimits *l = &conn->bus->limits;

        return conn->queued_bytes > l->max_outgoing_bytes ||
               conn->queued_fds > l->max_outgoing_unix_fds;
}

/* May @msg's sending account queue it to @conn? Return: 0, BRIDGE_E_QUOTA or
 * BRIDGE_E_FDS_QUOTA (a native receiver's per-user fd quota). */
static int conn_queue_check(const BridgeConn *conn, const BridgeMsg *msg) {
        const BusLimits *l = &conn->bus->limits;
        BridgeQuotaUse u = bridge_quota_get(&conn->quota, msg->quota_account);

        if (u.bytes > l->max_outgoing_bytes || u.fds > l->max_outgoing_unix_fds)
                return BRIDGE_E_QUOTA;
        if (conn->ops && conn->ops->quota_check)
                return conn->ops->quota_check(conn, conn->userdata, msg);
        return 0;
}

/*
 * A legacy peer needs dbus1 bytes: read a native sender's memfd parts now (once per
 * message; native peers get the memfds themselves, and opaque payloads as they are).
 * Return: 0, BRIDGE_E_MSG_TOO_LARGE (whole, it exceeds max_message_size: never read),
 * BRIDGE_E_BAD_BODY (invalid, unreadable, or no dbus1 message at all; either way this
 * receiver does not get the message), or -ENOMEM.
 */
static int conn_msg_prepare(const BridgeConn *conn, BridgeMsg *msg) {
        int r;

        if ((!msg->n_parts && !msg->opaque) || bridge_conn_has_rule(conn, BRIDGE_RULE_MEMFDS_AS_IS))
                return 0;
        r = bridge_msg_materialize(msg);
        if (r == -ENOMEM)
                return error_trace(r);
        if (!r)
                return 0;
        return r == WIRE_E_TOO_LARGE ? BRIDGE_E_MSG_TOO_LARGE : BRIDGE_E_BAD_BODY;
}

/* Append without any check but conn_msg_prepare(). Return: 0 (queued, or dropped for an
 * invalid memfd body) or -ENOMEM. */
static int conn_queue_push(BridgeConn *conn, BridgeMsg *msg) {
        BridgeQueueEntry *e;
        bool was_empty = list_is_empty(&conn->queue);
        int r;

        /* conn.h: nothing is queued to a connection that is gone (one that never said
         * hello may get the driver's answers) */
        assert(conn->active || bridge_conn_is_unregistered(conn));
        r = conn_msg_prepare(conn, msg);
        if (r)
                return r < 0 ? r : 0;
        e = bus_entry_get(conn->bus);
        if (!e)
                return error_origin(-ENOMEM);
        e->bytes = bridge_conn_queue_cost(msg);
        e->account = msg->quota_account;
        r = bridge_quota_charge(&conn->quota, e->account, e->bytes, msg->n_fds);
        if (r < 0) {
                bus_entry_put(conn->bus, e);
                return error_trace(r);
        }
        e->msg = bridge_msg_ref(msg);
        list_append(&conn->queue, &e->link);
        conn->queued_bytes += e->bytes;
        conn->queued_fds += msg->n_fds;
        ++conn->queued_msgs;
        ++conn->n_received;
        if (conn->queued_bytes > conn->peak_queued_bytes)
                conn->peak_queued_bytes = conn->queued_bytes;
        if (conn->queued_fds > conn->peak_queued_fds)
                conn->peak_queued_fds = conn->queued_fds;
        if (was_empty && conn->ops && conn->ops->queue_nonempty)
                conn->ops->queue_nonempty(conn, conn->userdata);
        return 0;
}

/**
 * bridge_conn_queue_push() - append @msg to @conn's queue without any check (monitors)
 * @conn:       an active connection
 * @msg:        the message (a reference is taken)
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_conn_queue_push(BridgeConn *conn, BridgeMsg *msg) {
        return error_trace(conn_queue_push(conn, msg));
}

/* Take @e out of @conn's queue; its message's reference goes to the caller. */
static BridgeMsg *conn_queue_steal(BridgeConn *conn, BridgeQueueEntry *e) {
        BridgeMsg *msg = e->msg;

        assert(conn->queued_msgs > 0 && conn->queued_bytes >= e->bytes &&
               conn->queued_fds >= msg->n_fds);
        list_unlink(&e->link);
        conn->queued_bytes -= e->bytes;
        conn->queued_fds -= msg->n_fds;
        --conn->queued_msgs;
        bridge_quota_discharge(&conn->quota, e->account, e->bytes, msg->n_fds);
        bus_entry_put(conn->bus, e);
        return msg;
}

/**
 * bridge_conn_queue_remove() - take @e out of @conn's queue, wherever it is
 * @conn:       the connection
 * @e:          one of its queue entries (recycled: invalid afterwards)
 */
void bridge_conn_queue_remove(BridgeConn *conn, BridgeQueueEntry *e) {
        bridge_msg_unref(conn_queue_steal(conn, e));
}

/**
 * bridge_conn_queue_is_full() - is @conn's whole queue over the outgoing byte or fd limit?
 * @conn:       the connection (a monitor: it takes every sender's messages)
 *
 * Return: true if nothing more may be queued to it.
 */
bool bridge_conn_queue_is_full(const BridgeConn *conn) {
        return conn_queue_is_full(conn);
}

/**
 * bridge_conn_queue_check() - may @msg's sending account queue it to @conn?
 * @conn:       the receiver
 * @msg:        the message (its quota_account set)
 *
 * Return: 0, BRIDGE_E_QUOTA, or BRIDGE_E_FDS_QUOTA.
 */
int bridge_conn_queue_check(const BridgeConn *conn, const BridgeMsg *msg) {
        return conn_queue_check(conn, msg);
}

/**
 * bridge_conn_queue_cost() - what a queued message counts against max_outgoing_bytes
 * @msg:        the message
 *
 * The memory the bus holds for it (its buffer with the struct, bridge_msg_footprint()) and
 * the queue entry; not only its wire size, so that a slow receiver's queue of small
 * messages cannot pin several times the configured limit. Memfd parts stay the sender's
 * memory for a native receiver and are not counted.
 * Return: bytes.
 */
size_t bridge_conn_queue_cost(const BridgeMsg *msg) {
        return bridge_msg_footprint(msg) + sizeof(BridgeQueueEntry);
}

/**
 * bridge_conn_get_pidfd() - a pidfd of the connection's process, for whoever asks
 * @conn:       the connection
 *
 * The pidfd taken at connect if the connection holds one, else the transport's
 * get_pidfd (a classic peer's socket gives one on demand: SO_PEERPIDFD names the process
 * that connected, so no fd per peer has to stay open for it).
 * Return: a new fd (the caller closes it), or a negative errno (-ENOENT: none).
 */
int bridge_conn_get_pidfd(const BridgeConn *conn) {
        int fd;

        if (conn->creds.pidfd >= 0) {
                fd = fcntl(conn->creds.pidfd, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? error_origin(-errno) : fd;
        }
        if (conn->ops && conn->ops->get_pidfd)
                return conn->ops->get_pidfd((BridgeConn *)conn, conn->userdata);
        return -ENOENT;
}

/**
 * bridge_conn_queue_peek() - the oldest queued message
 * @conn:       the connection
 *
 * Return: the message (borrowed: valid until bridge_conn_queue_pop()), or NULL.
 */
BridgeMsg *bridge_conn_queue_peek(BridgeConn *conn) {
        BridgeQueueEntry *e = list_first_entry(&conn->queue, BridgeQueueEntry, link);

        return e ? e->msg : NULL;
}

/**
 * bridge_conn_queue_pop() - drop the oldest queued message (the transport wrote it)
 * @conn:       the connection; nothing happens if its queue is empty
 */
void bridge_conn_queue_pop(BridgeConn *conn) {
        BridgeQueueEntry *e = list_first_entry(&conn->queue, BridgeQueueEntry, link);

        if (e)
                bridge_conn_queue_remove(conn, e);
}

static int conn_match_addressed_signal(BridgeConn *dst, const BridgeConn *sender,
                                       BridgeMsg *msg);

/**
 * bridge_conn_queue_take() - take the oldest queued message off the queue
 * @conn:       the connection
 *
 * As bridge_conn_queue_peek() and bridge_conn_queue_pop(), but the queue's reference goes
 * to the caller (a transport that keeps the message until it is written takes none more).
 *
 * Return: the message (one reference), or NULL if the queue is empty.
 */
BridgeMsg *bridge_conn_queue_take(BridgeConn *conn) {
        BridgeQueueEntry *e = list_first_entry(&conn->queue, BridgeQueueEntry, link);

        return e ? conn_queue_steal(conn, e) : NULL;
}

/**
 * bridge_conn_queue_msg() - queue a message the bus itself sends
 * @dst:        the receiver: active, or one that has not said hello yet (the driver's
 *              errors to what it sends before Hello)
 * @msg:        the message (a reference is taken)
 *
 * No reply tracking, no fd check (the driver knows what it sends).
 *
 * Return: 0, -ENOMEM, BRIDGE_E_QUOTA, BRIDGE_E_NOT_ACTIVE.
 */
int bridge_conn_queue_msg(BridgeConn *dst, BridgeMsg *msg) {
        int r;

        if (!bridge_conn_is_active(dst) && !bridge_conn_is_unregistered(dst))
                return BRIDGE_E_NOT_ACTIVE;
        /* answers without SENDER are not routed in dbus-daemon: monitors never see them;
         * the others they see also when the policy then denies them (as dbus-daemon) */
        if (msg->hdr.sender && !list_is_empty(&dst->bus->monitors)) {
                r = bus_monitor_capture(dst->bus, NULL, msg, dst);
                if (r < 0)
                        return error_trace(r);
        }
        /* a kdbus receiver hears signals through its match entries only: the bus's signals
         * (NameAcquired, NameLost) too, where an entry names the bus (kdbus had no driver) */
        if (msg->hdr.type == WIRE_MSG_SIGNAL &&
            bridge_conn_has_rule(dst, BRIDGE_RULE_SIGNALS_BY_MATCH)) {
                r = conn_match_addressed_signal(dst, NULL, msg);
                if (r <= 0)
                        return r;
        }
        /* dbus-daemon checks the receiver's receive rules on what the bus sends (its replies
         * count as requested) and drops what they deny: no answer, monitors see the error */
        if (dst->policy) {
                PolicyMsgInfo pinfo = { .db = NULL };

                r = bridge_policy_check_copy(&pinfo, NULL, dst, msg, msg->hdr.reply_serial,
                                             false);
                if (r)
                        return r < 0 ? error_trace(r) : 0;
        }
        r = conn_queue_check(dst, msg);
        if (r)
                return r;
        return error_trace(conn_queue_push(dst, msg));
}

/* ---- disconnect ---- */

static void conn_free_matches(BridgeConn *conn) {
        BridgeMatchRule *rule;

        while ((rule = list_first_entry(&conn->matches, BridgeMatchRule, conn_link)))
                bridge_match_rule_free(rule);
        conn->n_matches = 0;
        list_unlink(&conn->match_link);
}

/**
 * bridge_conn_disconnect() - deactivate (idempotent)
 * @conn:       the connection
 *
 * In this order, which is what clients of dbus-daemon 1.14.10 observe (checked with a raw
 * client and a monitor): the connection stops being reachable (inactive, out of the id
 * table), then every name it owns or queues for is released, newest first (name_changed
 * for each change of primary owner, the next queued owner taking over), the calls it
 * waits for itself are forgotten, its match rules are freed, its queue is flushed,
 * conn_removed is reported (NameOwnerChanged of the unique name), and only then does
 * every caller waiting for a reply from it get reply_lost, newest call first. The memory
 * stays while references remain.
 */
void bridge_conn_disconnect(BridgeConn *conn) {
        Bus *bus = conn->bus;

        if (!conn->active) {
                /* one that never said hello may hold the driver's answers (bus_free) */
                while (!list_is_empty(&conn->queue))
                        bridge_conn_queue_pop(conn);
                return;
        }
        conn->active = false;
        if (conn->user)
                --conn->user->n_active;
        hash_table_remove(&bus->conns_by_id, &conn->id_node);
        bus_dest_gone(bus);

        bridge_names_release_all(conn, bridge_conn_has_rule(conn,
                                                            BRIDGE_RULE_NAMES_OLDEST_FIRST));
        bridge_conn_drop_replies(conn);
        conn_free_matches(conn);
        while (!list_is_empty(&conn->queue))
                bridge_conn_queue_pop(conn);
        bus_activator_conn_removed(conn);
        if (bridge_conn_is_visible_kind(conn))
                (void) bus_notify_conn_removed(bus, conn);
        bridge_conn_forget_callers(conn);       /* after its callees heard it leave */
        bridge_conn_fail_replies(conn);
        if (conn->ops && conn->ops->disconnected)
                conn->ops->disconnected(conn, conn->userdata);
}

/* ---- routing ---- */

/**
 * bridge_conn_kick() - ask @conn's transport to drop it (from its loop, later)
 * @conn:       the connection
 */
void bridge_conn_kick(BridgeConn *conn) {
        if (conn->ops && conn->ops->kick)
                conn->ops->kick(conn, conn->userdata);
}

/* @msg's args and bloom filter, for matching it (reads a native sender's memfd parts,
 * once; an invalid body gives no args). Return: 0 or -ENOMEM. */
static int msg_prepare_match(Bus *bus, BridgeMsg *msg, WireArgs *args) {
        int r;

        r = bridge_msg_get_args(msg, args);
        if (r == -ENOMEM)
                return error_trace(r);
        r = bridge_msg_compute_bloom_args(msg, &bus->bloom, args);
        return r < 0 ? error_trace(r) : 0;
}

/* Does one of @conn's rules take @msg? The bloom prefilter, then the exact keys. */
static bool conn_rules_match(const BridgeConn *conn, const BridgeConn *sender,
                             const BridgeMsg *msg, const WireArgs *args) {
        size_t n_words = bloom_words(&conn->bus->bloom);
        const List *pos;

        list_for_each(pos, &conn->matches) {
                BridgeMatchRule *rule = container_of(pos, BridgeMatchRule, conn_link);

                if (bridge_match_rule_bloom_matches(rule, msg, n_words) &&
                    bridge_match_rule_matches(rule, msg, sender, args))
                        return true;
        }
        return false;
}

/**
 * bus_route_reserve() - room for @n receivers in routing's buffer
 * @bus:        the bus
 * @n:          how many (one per indexed rule is enough: a receiver is found by a rule)
 *
 * Return: 0 or -ENOMEM.
 */
int bus_route_reserve(Bus *bus, size_t n) {
        BridgeConn **buf;
        size_t cap;

        assert(!bus->route_busy);      /* rules are not added while a message is routed */
        if (n <= bus->route_cap)
                return 0;
        cap = bus->route_cap * 2 > n ? bus->route_cap * 2 : n;
        if (cap < 16)
                cap = 16;
        buf = realloc(bus->route_buf, cap * sizeof(*buf));
        if (!buf)
                return error_origin(-ENOMEM);
        bus->route_buf = buf;
        bus->route_cap = cap;
        return 0;
}

/* One routing's search for receivers (route_collect()). */
typedef struct RouteCollect {
        Bus *bus;
        const BridgeConn *sender;
        BridgeMsg *msg;
        const WireArgs *args;
        int error;                      /* -ENOMEM computing the filter: stop */
        const BridgeConn *addressed;
        size_t n_words;
        uint64_t epoch;
        BridgeConn **hits;              /* receivers found, each once */
        size_t n_hits;
} RouteCollect;

/*
 * A group of rules with equal keys the index found: their owners receive @msg if they may
 * and the keys take it (the checks of a scan over all connections; a connection is decided
 * once). The keys are checked once, for the first owner that may receive.
 */
static void route_collect(MatchIndexGroup *group, void *userdata) {
        RouteCollect *rc = userdata;
        const BridgeMatchRule *rule;
        int verdict = -1;
        List *pos;

        if (rc->error < 0)
                return;
        list_for_each(pos, &group->rules) {
                BridgeConn *conn;

                rule = container_of(pos, BridgeMatchRule, index_link);
                conn = rule->owner;
                if (conn->route_mark == rc->epoch)
                        continue;
                /* like dbus-daemon: a receiver that cannot take fds does not get it */
                if (!conn->active || conn == rc->addressed ||
                    (rc->msg->n_fds && !(conn->flags & BRIDGE_CONN_ACCEPT_FDS))) {
                        conn->route_mark = rc->epoch;
                        continue;
                }
                if (verdict < 0) {
                        /* the filter decides only for a native entry's BLOOM_MASK items:
                         * a mask made from keys is in the filter of every message those
                         * keys match (bridge/bloom.c), so it can only say "maybe" where the
                         * exact check decides; the filter is computed when first needed */
                        if (rule->n_generations) {
                                rc->error = bridge_msg_compute_bloom_args(rc->msg,
                                                                          &rc->bus->bloom,
                                                                          rc->args);
                                if (rc->error < 0)
                                        return;
                        }
                        verdict = (!rule->n_generations ||
                                   bridge_match_rule_bloom_matches(rule, rc->msg, rc->n_words)) &&
                                  bridge_match_rule_matches(rule, rc->msg, rc->sender, rc->args);
                }
                if (!verdict)
                        return;
                conn->route_mark = rc->epoch;
                rc->hits[rc->n_hits++] = conn;
        }
}

static int conn_cmp_match_seq(const void *a, const void *b) {
        const BridgeConn *x = *(BridgeConn *const *)a, *y = *(BridgeConn *const *)b;

        return x->match_seq < y->match_seq ? -1 : x->match_seq > y->match_seq;
}

/*
 * Put @rc's receivers in Bus.match_conns order, the order a scan of every connection
 * delivers in: a few are sorted, many are picked off the list by their mark (the index
 * finds them in bucket order).
 */
static void route_order(Bus *bus, RouteCollect *rc) {
        size_t i, n = rc->n_hits;
        List *pos;

        for (i = 1; i < n; ++i)
                if (rc->hits[i - 1]->match_seq > rc->hits[i]->match_seq)
                        break;
        if (i >= n)
                return;
        if (n * 16 < bus->n_match_conns) {
                qsort(rc->hits, n, sizeof(*rc->hits), conn_cmp_match_seq);
                return;
        }
        /* every hit is marked; the misses marked too are not in the array: mark hits anew */
        for (i = 0; i < n; ++i)
                rc->hits[i]->route_mark = rc->epoch + 1;
        i = 0;
        list_for_each(pos, &bus->match_conns) {
                BridgeConn *conn = container_of(pos, BridgeConn, match_link);

                if (conn->route_mark == rc->epoch + 1)
                        rc->hits[i++] = conn;
        }
        assert(i == n);
}

/* The receivers of @msg by their rules (eavesdrop ones only with @eavesdrop_only), in
 * delivery order, into @rc->hits. */
static void route_find(Bus *bus, RouteCollect *rc, bool eavesdrop_only) {
        /* two epochs per routing: route_order() marks its hits with the second */
        bus->route_epoch += 2;
        rc->epoch = bus->route_epoch;
        rc->n_hits = 0;
        if (!eavesdrop_only)
                match_index_visit(&bus->match_index, rc->msg, rc->sender, rc->args,
                                  route_collect, rc);
        if (rc->error >= 0)
                match_index_visit(&bus->match_index_eavesdrop, rc->msg, rc->sender, rc->args,
                                  route_collect, rc);
        if (rc->error >= 0)
                route_order(bus, rc);
}

/*
 * Deliver @msg (from @sender, NULL: the bus) to every active connection with a matching
 * rule, once each, except @addressed (a unicast's destination, which has it already), in
 * the order of Bus.match_conns. With @eavesdrop_only (unicasts, and messages for the
 * driver) only eavesdrop='true' rules count, as in dbus-daemon. The index finds the
 * connections whose rules can match (bridge/match-index.h); each is checked as before.
 * Return: 0 or -ENOMEM.
 */
static int bus_route_matches(Bus *bus, BridgeConn *sender, BridgeMsg *msg,
                             const BridgeConn *addressed, bool eavesdrop_only) {
        PolicyMsgInfo pinfo = { .db = NULL };
        RouteCollect rc = {
                .bus = bus, .sender = sender, .msg = msg, .addressed = addressed,
                .n_words = bloom_words(&bus->bloom),
        };
        BridgeConn **own = NULL;
        bool name_policy;
        WireArgs args;
        size_t i;
        int r;

        if (list_is_empty(&bus->match_conns))
                return 0;
        /* legacy receivers do not get a message whose body is invalid (no args) */
        r = bridge_msg_get_args(msg, &args);
        if (r == -ENOMEM)
                return error_trace(r);
        rc.args = &args;

        /* the bus's buffer, unless a routing further up the stack uses it */
        if (bus->route_busy || !bus->route_buf) {
                own = malloc((bus->match_index.n_rules + bus->match_index_eavesdrop.n_rules + 1) *
                             sizeof(*own));
                if (!own)
                        return error_origin(-ENOMEM);
                rc.hits = own;
        } else {
                rc.hits = bus->route_buf;
                bus->route_busy = true;
        }
        route_find(bus, &rc, eavesdrop_only);
        if (rc.error < 0)
                rc.n_hits = 0;
        /* delivering changes no endpoint or policy holder: asked once per message */
        name_policy = bus_has_name_policy(bus);

        for (i = 0, r = rc.error; i < rc.n_hits && r >= 0; ++i) {
                BridgeConn *conn = rc.hits[i];

                /* a custom endpoint's connection eavesdrops on nobody (kdbus has no
                 * eavesdropping; its view is the endpoint's) */
                if (conn->endpoint && msg->hdr.destination)
                        continue;
                if (name_policy &&
                    !bridge_conn_may_receive(conn, sender, msg,
                                             args.n_args && args.type[0] == 's' ? args.str[0] : NULL))
                        continue;
                /* eavesdropped replies count as requested when they passed routing */
                if (bus->policy) {
                        r = bridge_policy_check_copy(&pinfo, sender, conn, msg,
                                                     addressed && msg->hdr.reply_serial,
                                                     msg->hdr.destination != NULL);
                        if (r)
                                continue;
                }
                /* the receiver's state may have changed by what was delivered before */
                if (!conn->active)
                        continue;
                if (conn_queue_check(conn, msg)) {
                        bridge_conn_kick(conn);
                        continue;
                }
                r = conn_queue_push(conn, msg);
        }

        if (own)
                free(own);
        else
                bus->route_busy = false;
        return r < 0 ? error_trace(r) : 0;
}

static int bus_route_broadcast(Bus *bus, BridgeConn *sender, BridgeMsg *msg) {
        ++bus->n_broadcasts;
        return error_trace(bus_route_matches(bus, sender, msg, NULL, false));
}

/**
 * bus_broadcast() - broadcast a message of the bus (sender id 0) through the match rules
 * @bus:        the bus
 * @msg:        the message, SENDER org.freedesktop.DBus (a reference is taken per receiver)
 *
 * Receivers that cannot take it are kicked.
 *
 * Return: 0 or -ENOMEM.
 */
int bus_broadcast(Bus *bus, BridgeMsg *msg) {
        int r;

        r = bus_monitor_capture(bus, NULL, msg, NULL);
        if (r < 0)
                return error_trace(r);
        return error_trace(bus_route_broadcast(bus, NULL, msg));
}

/**
 * bus_broadcast_has_audience() - could a broadcast of the bus reach anyone
 * @bus:        the bus
 *
 * bus_broadcast() shows a message to the monitors and routes it to the connections with
 * match rules (Bus.match_conns, eavesdroppers' too); with neither it delivers nothing.
 * The driver asks this before it builds NameOwnerChanged and the like, so that a bus where
 * nobody listens spends nothing on them (issue #16: connection churn).
 *
 * Return: true if a monitor or a connection with a match rule exists.
 */
bool bus_broadcast_has_audience(const Bus *bus) {
        return !list_is_empty(&bus->monitors) || !list_is_empty(&bus->match_conns);
}

/*
 * kdbus's name policy on a unicast that is not an answer (bridge/endpoint.h). A sender on
 * a custom endpoint gets the answer of a name that does not exist for one it cannot see.
 * A signal the receiver could not talk back to, or one from a custom endpoint's connection
 * without TALK to the receiver, is dropped silently (*ret_drop), as kdbus drops the first.
 * Return: 0, BRIDGE_E_NAME_UNKNOWN, BRIDGE_E_PEER_UNKNOWN, BRIDGE_E_ACCESS_DENIED (text:
 * bridge_conn_get_denial()), -ENOMEM.
 */
static int conn_check_name_policy(BridgeConn *sender, const BridgeConn *dst,
                                  const BridgeMsg *msg, bool *ret_drop) {
        const char *name = msg->hdr.destination;
        char *text;

        *ret_drop = false;
        if (name[0] == ':' ? !bridge_conn_can_see_conn(sender, dst) :
                             !bridge_conn_can_see_name(sender, name))
                return name[0] == ':' ? BRIDGE_E_PEER_UNKNOWN : BRIDGE_E_NAME_UNKNOWN;
        /* a signal reaches a receiver that could talk back to its sender (kdbus); one from
         * a sandbox needs TALK to the receiver as a call does, or a SEE grant would let the
         * sandbox push signals at a service it may only look at (xdg-dbus-proxy drops it
         * too) */
        if (msg->hdr.type == WIRE_MSG_SIGNAL) {
                *ret_drop = !bridge_conn_can_talk(dst, sender) ||
                            (sender->endpoint && !bridge_conn_may_send(sender, dst, msg));
                return 0;
        }
        if (bridge_conn_may_send(sender, dst, msg))
                return 0;
        if (asprintf(&text, "Connection \"%s\" is not allowed to talk to \"%s\" (%s) by the "
                     "bus's kdbus name policy (%s)", sender->unique_name, name, dst->unique_name,
                     sender->endpoint ? "its custom endpoint's" : "policy holders'") < 0)
                return error_origin(-ENOMEM);
        bridge_conn_set_denial(sender, text);
        return BRIDGE_E_ACCESS_DENIED;
}

/*
 * kdbus_conn_reply() unlinks the reply slot before it delivers the answer: one to a native
 * caller that cannot be queued (@r, a positive BRIDGE_E_*) uses the slot up, and a caller
 * blocked in SYNC_REPLY learns why. A legacy caller keeps its slot, so the callee may still
 * answer, as dbus-daemon lets it. Return: @r.
 */
static int conn_reply_undelivered(BridgeConn *dst, BridgeReply *answered, int r) {
        uint32_t serial;

        if (!answered || r <= 0 || !bridge_conn_has_rule(dst, BRIDGE_RULE_REPLY_SLOT_USED_UP))
                return r;
        serial = answered->serial;
        bridge_reply_free(answered);
        if (dst->ops->reply_undelivered)
                dst->ops->reply_undelivered(dst, dst->userdata, serial, r);
        return r;
}

/*
 * Does one of @dst's match rules take the signal @msg addressed to it? As for a broadcast.
 * Return: 1, 0, or -ENOMEM.
 */
static int conn_match_addressed_signal(BridgeConn *dst, const BridgeConn *sender,
                                       BridgeMsg *msg) {
        WireArgs args;
        int r;

        if (list_is_empty(&dst->matches))
                return 0;
        r = msg_prepare_match(dst->bus, msg, &args);
        if (r < 0)
                return r;
        return conn_rules_match(dst, sender, msg, &args);
}

/*
 * A native peer's signal addressed to a native receiver, as kdbus_conn_unicast() treated
 * it: it arrives
 * only if one of the receiver's match entries takes it, and, like a broadcast, it never
 * fails its sender (a receiver that refuses fds or has no room just does not get it).
 * Return: 0 or -ENOMEM.
 */
static int conn_send_signal_native(BridgeConn *sender, BridgeConn *dst, BridgeMsg *msg) {
        int r;

        r = conn_match_addressed_signal(dst, sender, msg);
        if (r <= 0)
                return r;
        if ((msg->n_fds && !(dst->flags & BRIDGE_CONN_ACCEPT_FDS)) || conn_queue_check(dst, msg))
                return 0;
        r = conn_queue_push(dst, msg);
        if (r < 0)
                return error_trace(r);
        if (sender->bus->n_eavesdrop_rules)
                return error_trace(bus_route_matches(sender->bus, sender, msg, dst, true));
        return 0;
}

static int conn_send_unicast(BridgeConn *sender, BridgeMsg *msg, BridgeReply *slot) {
        const WireHeader *h = &msg->hdr;
        BridgeReply *pending = NULL, *answered = NULL;
        BridgeConn *dst;
        int r;

        dst = bus_find_conn_by_name_from(sender, h->destination);
        /* no owner: the name's activator takes it, unless the sender said NO_AUTO_START
         * (then it is a name without owner, as for .service activation) */
        if (!dst && !(h->flags & WIRE_FLAG_NO_AUTO_START))
                dst = bus_find_activator(sender->bus, h->destination);
        if (!dst)
                return h->destination[0] == ':' ? BRIDGE_E_PEER_UNKNOWN : BRIDGE_E_NAME_UNKNOWN;
        if (dst->flags & BRIDGE_CONN_POLICY_HOLDER)
                return BRIDGE_E_PEER_UNKNOWN;   /* kdbus: not a destination (ENXIO) */

        if (h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR) {
                if (slot && slot->caller == dst && slot->callee == sender &&
                    slot->serial == h->reply_serial)
                        answered = slot;        /* bridge_conn_send_answer()'s */
                else
                        answered = bus_find_reply(sender->bus, dst, sender, h->reply_serial);
                /* kdbus semantics, whatever the policy says: a reply passes only through
                 * the slot its call opened. A policy that denies it still answers with its
                 * AccessDenied as dbus-daemon does (system.conf); one that would allow it
                 * (dbus-daemon delivers then) does not open a way around the reply slot,
                 * see docs/differences.md. */
                if (!answered) {
                        if (sender->bus->policy) {
                                r = bridge_policy_check_unicast(sender, dst, msg, false);
                                if (r)
                                        return r;
                        }
                        return BRIDGE_E_REPLY_UNEXPECTED;
                }
        }
        if (!answered && bus_has_name_policy(sender->bus)) {
                bool drop;

                r = conn_check_name_policy(sender, dst, msg, &drop);
                if (r)
                        return r;
                if (drop)
                        return 0;
        }
        if (sender->bus->policy) {
                r = bridge_policy_check_unicast(sender, dst, msg, answered != NULL);
                if (r)
                        return r;
        }
        /* between native peers, kdbus's rule; a legacy sender's unicast signal arrives as
         * dbus-daemon delivers it, match or not (docs/native.md) */
        if (h->type == WIRE_MSG_SIGNAL &&
            bridge_conn_has_rule(dst, BRIDGE_RULE_SIGNALS_BY_MATCH) &&
            bridge_conn_has_rule(sender, BRIDGE_RULE_SIGNALS_BY_MATCH))
                return conn_send_signal_native(sender, dst, msg);
        if (msg->n_fds && !(dst->flags & BRIDGE_CONN_ACCEPT_FDS))
                return conn_reply_undelivered(dst, answered, BRIDGE_E_FDS_REFUSED);
        /* a legacy receiver of a native sender's memfd body: read and validate it now, so
         * that the sender learns of an invalid one (EBADMSG) or one too large (EMSGSIZE) */
        r = conn_msg_prepare(dst, msg);
        if (r)
                return conn_reply_undelivered(dst, answered, r);
        if (h->type == WIRE_MSG_METHOD_CALL && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED) &&
            !bridge_conn_can_wait_reply(sender))
                return BRIDGE_E_REPLIES_QUOTA;
        r = conn_queue_check(dst, msg);
        if (r)
                return conn_reply_undelivered(dst, answered, r);

        if (h->type == WIRE_MSG_METHOD_CALL && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED)) {
                r = bridge_reply_new(sender, dst, h->serial, &pending);
                if (r)
                        return error_trace(r);
                if (msg->reply_deadline_usec)
                        bridge_reply_set_deadline(pending, msg->reply_deadline_usec);
        }
        /* a sandboxed callee sees its caller from now on, while both are connected */
        if (h->type == WIRE_MSG_METHOD_CALL && dst->endpoint) {
                r = bridge_conn_note_caller(dst, sender);
                if (r < 0) {
                        bridge_reply_free(pending);
                        return error_trace(r);
                }
        }
        r = conn_queue_push(dst, msg);
        if (r < 0) {
                bridge_reply_free(pending);
                return error_trace(r);
        }
        bridge_reply_free(answered);
        if (sender->bus->n_eavesdrop_rules)
                return error_trace(bus_route_matches(sender->bus, sender, msg, dst, true));
        return 0;
}

/**
 * bridge_conn_eavesdrop() - offer @msg to the eavesdrop rules only
 * @sender:     the connection it came from (its own rules count too)
 * @msg:        a message nobody else receives through routing (a call to the driver)
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_conn_eavesdrop(BridgeConn *sender, BridgeMsg *msg) {
        if (!sender->bus || !sender->bus->n_eavesdrop_rules)
                return 0;
        return error_trace(bus_route_matches(sender->bus, sender, msg, NULL, true));
}

/**
 * bridge_conn_send() - route a message from @sender
 * @sender:     the active connection it came from
 * @msg:        the stamped message (a reference is taken per receiver)
 *
 * Unicast (a destination set): to the destination's queue, tracking a pending reply for
 * a method call without NO_REPLY_EXPECTED; a method return or error passes only if it
 * answers a pending call of the destination to @sender (and consumes it). A signal
 * without a destination is broadcast through the match rules and never fails for the
 * sender. Any other message without a destination is for the driver in dbus-daemon (it
 * answers a method call with UnknownMethod; the caller should not pass it here): only
 * eavesdroppers get a copy. The checks come in this order: destination, expected reply, fds, pending-reply
 * quota, queue quota; nothing changes when one fails.
 *
 * Return: 0, -ENOMEM, or BRIDGE_E_NAME_UNKNOWN, BRIDGE_E_PEER_UNKNOWN, BRIDGE_E_QUOTA,
 * BRIDGE_E_FDS_REFUSED, BRIDGE_E_REPLY_UNEXPECTED, BRIDGE_E_REPLIES_QUOTA, BRIDGE_E_NOT_ACTIVE,
 * BRIDGE_E_BAD_BODY (a native memfd body a legacy receiver would get is invalid),
 * BRIDGE_E_FDS_QUOTA (a native receiver holds the fds the sender's user may queue there),
 * BRIDGE_E_MSG_TOO_LARGE (a native memfd message over max_message_size to a legacy
 * receiver).
 */
int bridge_conn_send(BridgeConn *sender, BridgeMsg *msg) {
        return bridge_conn_send_answer(sender, msg, NULL);
}

/**
 * bridge_conn_send_answer() - bridge_conn_send() with the reply slot a reply answers
 * @sender:     the active connection it came from
 * @msg:        the stamped message
 * @slot:       the reply slot @msg answers as bus_find_reply() found it just before, or NULL
 *
 * Return: as bridge_conn_send().
 */
int bridge_conn_send_answer(BridgeConn *sender, BridgeMsg *msg, BridgeReply *slot) {
        int r;

        if (!bridge_conn_is_active(sender) || bridge_conn_is_monitor(sender))
                return BRIDGE_E_NOT_ACTIVE;
        /* charged to the sender's account wherever it is queued, also after it is gone */
        msg->quota_account = bridge_quota_account(sender);
        /* monitors see it before routing, also if routing refuses it (bridge/monitor.h) */
        if ((msg->hdr.destination || msg->hdr.type == WIRE_MSG_SIGNAL) && !msg->monitored &&
            !list_is_empty(&sender->bus->monitors)) {
                r = bus_monitor_capture(sender->bus, sender, msg, NULL);
                if (r < 0)
                        return error_trace(r);
        }
        if (msg->hdr.destination)
                r = conn_send_unicast(sender, msg, slot);
        else if (msg->hdr.type == WIRE_MSG_SIGNAL)
                r = bus_route_broadcast(sender->bus, sender, msg);
        else if (sender->bus->n_eavesdrop_rules)
                r = bus_route_matches(sender->bus, sender, msg, NULL, true);
        else
                r = 0;
        if (r == 0) {
                ++sender->n_sent;
                ++sender->bus->n_messages_routed;
        }
        return r < 0 ? error_trace(r) : r;
}
