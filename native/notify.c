/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's notifications for native peers: messages from the bus itself (src_id
 * KDBUS_SRC_ID_KERNEL, payload_type KDBUS_PAYLOAD_KERNEL) that carry exactly one item:
 *
 *   - ID_ADD / ID_REMOVE (kdbus_notify_id_change: the id and its HELLO flags) when a
 *     connection says hello / goes away, and NAME_ADD / NAME_REMOVE / NAME_CHANGE
 *     (kdbus_notify_name_change: old and new owner with their name flags, the name) when a
 *     well-known name gets, loses or changes its owner; an activator counts as the name's holder while no owner
 *     has it (see native_notify_name()). Broadcast (dst_id BROADCAST) to the native connections
 *     with a match entry whose notification items all match it (MATCH_ADD; see
 *     native/match.c).
 *   - REPLY_TIMEOUT / REPLY_DEAD (no payload; cookie_reply = the call's cookie) to a native
 *     caller whose call timed out / whose callee went away, instead of the dbus1 NoReply
 *     error a legacy caller gets. A caller blocked in SYNC_REPLY gets ETIMEDOUT / EPIPE
 *     as the result of its SEND instead (kdbus_conn_disconnect() wakes the callers the
 *     leaving connection owes a reply with EPIPE; ECONNRESET is kept for the caller's own
 *     connection going, which kdbus_conn_wait_reply() checks first).
 *
 * Native monitors get a copy of every one of them (kdbus_bus_eavesdrop()), except a
 * blocked SYNC_REPLY caller's ETIMEDOUT / EPIPE, which is no message.
 *
 * They are written straight into the receiver's pool, as kdbus queues them, charged to the
 * bus's own quota account (BRIDGE_QUOTA_ACCOUNT_BUS; kdbus: KDBUS_USER_KERNEL_ID in
 * kdbus_conn_quota_inc()) with a user's limits: one that would make a receiver hold more
 * than NATIVE_MAX_MSGS_PER_USER of the bus's messages or their byte share of the pool, or
 * that does not fit the free pool, is lost and counted in dropped_msgs (kdbus-test
 * message-quota, kdbus_test_notify_kernel_quota).
 * Legacy peers keep getting the driver's dbus1 signals and errors (the installed handler).
 * The notifications are sent after the state changed, like the handler's (bridge/bus.c).
 */
#include <stdlib.h>
#include <string.h>
#include "bridge/activator.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/pool.h"
#include "bridge/quota.h"
#include "kdbus/kdbus.h"
#include "native/conn.h"
#include "native/match.h"
#include "native/meta.h"
#include "native/names.h"
#include "native/notify.h"
#include "util/error.h"
#include "util/hash-table.h"

/**
 * native_match_notify() - do the notification rules of @m match @item
 * @m:          a match entry of a native peer
 * @item:       the notification item (NAME_* or ID_*)
 *
 * kdbus ANDs an entry's rules (kdbus_match_rules()); BLOOM_MASK, NAME and ID rules never
 * match a notification, and an entry without any rule matches every one (as it matches
 * every broadcast).
 *
 * Return: true if @m wants @item.
 */
bool native_match_notify(const NativeMatch *m, const struct kdbus_item *item) {
        unsigned i;

        if (!m->notify_only)
                return false;
        for (i = 0; i < m->n_notify; ++i) {
                const NativeNotifyRule *r = &m->notify[i];

                if (r->type != item->type)
                        return false;
                switch (item->type) {
                case KDBUS_ITEM_ID_ADD:
                case KDBUS_ITEM_ID_REMOVE:
                        if (r->new_id != KDBUS_MATCH_ID_ANY && r->new_id != item->id_change.id)
                                return false;
                        break;
                default:
                        if (r->old_id != KDBUS_MATCH_ID_ANY &&
                            r->old_id != item->name_change.old_id.id)
                                return false;
                        if (r->new_id != KDBUS_MATCH_ID_ANY &&
                            r->new_id != item->name_change.new_id.id)
                                return false;
                        if (r->name && strcmp(r->name, item->name_change.name) != 0)
                                return false;
                        break;
                }
        }
        return true;
}

/**
 * native_match_free() - free a match record (not its core rule)
 * @m:          the record, unlinked
 */
void native_match_free(NativeMatch *m) {
        unsigned i;

        for (i = 0; i < m->n_notify; ++i)
                free(m->notify[i].name);
        free(m->notify);
        free(m);
}

/* Write a kernel message with @item into @nc's pool. */
static void notify_deliver(NativeConn *nc, uint64_t dst_id, uint64_t cookie_reply,
                           const struct kdbus_item *item) {
        bool was_empty = list_is_empty(&nc->recv_list);
        /* kdbus stamped every kernel message with TIMESTAMP, whatever the receiver asked
         * for (kdbus_staging_collect_metadata()) */
        uint64_t attach = KDBUS_ATTACH_TIMESTAMP;
        BridgePoolSlice *slice;
        struct kdbus_msg *km;
        NativeEntry *e;
        uint64_t size;
        int r;

        if (nc->byebye || !nc->conn || !bridge_conn_is_active(nc->conn))
                return;
        size = sizeof(*km) + KDBUS_ALIGN8(item->size) + native_meta_size(attach, 0, NULL, NULL);
        /* the bus's quota at this receiver, as a sending user's (native_conn_quota_check();
         * not for a receiver with nothing queued, as there) */
        if (!list_is_empty(&nc->recv_list)) {
                BridgeQuotaUse use = bridge_quota_get(&nc->pool_quota,
                                                      BRIDGE_QUOTA_ACCOUNT_BUS);

                if (use.msgs >= NATIVE_MAX_MSGS_PER_USER ||
                    !bridge_pool_quota_allows(nc->pool, use.bytes, size)) {
                        native_conn_count_drop(nc);
                        return;
                }
        }
        r = bridge_pool_alloc(nc->pool, size, true, &slice);
        if (r) {
                native_conn_count_drop(nc);     /* no room (or no memory): kdbus counts it lost */
                return;
        }
        e = native_entry_new(nc);
        if (!e || bridge_quota_charge(&nc->pool_quota, BRIDGE_QUOTA_ACCOUNT_BUS, slice->size,
                                      0) < 0) {
                free(e);
                bridge_pool_release(nc->pool, slice);
                native_conn_count_drop(nc);
                return;
        }
        km = bridge_pool_ptr(nc->pool, slice);
        memset(km, 0, size);
        km->size = size;
        /* kdbus_staging_new_kernel(): broadcast notifications are signals */
        km->flags = dst_id == KDBUS_DST_ID_BROADCAST ? KDBUS_MSG_SIGNAL : 0;
        km->dst_id = dst_id;
        km->src_id = KDBUS_SRC_ID_KERNEL;
        km->payload_type = KDBUS_PAYLOAD_KERNEL;
        km->cookie_reply = cookie_reply;
        memcpy(km->items, item, item->size);
        (void) native_meta_write((uint8_t *)km->items + KDBUS_ALIGN8(item->size), attach, 0,
                                 nc->conn->bus, NULL, NULL, nc);

        e->slice = slice;
        e->sender_account = BRIDGE_QUOTA_ACCOUNT_BUS;
        list_append(&nc->recv_list, &e->link);
        ++nc->n_entries;
        if ((was_empty || nc->readable_each) && nc->ops && nc->ops->readable)
                nc->ops->readable(nc, nc->userdata);
}

/* kdbus on custom endpoints: NAME_* only for names the endpoint lets it see; ID_* for
 * everyone (the final kdbus's custom-endpoint selftest has a reader on the endpoint hear
 * ID_ADD; its earlier trees passed ID_* on default endpoints only). */
static bool notify_visible(const BridgeConn *conn, const struct kdbus_item *item) {
        if (!conn->endpoint || item->type == KDBUS_ITEM_ID_ADD ||
            item->type == KDBUS_ITEM_ID_REMOVE)
                return true;
        return bridge_conn_can_see_name(conn, item->name_change.name);
}

/*
 * kdbus_bus_eavesdrop(): every native monitor gets a copy of each notification the bus
 * sends, before its receivers (kdbus queues it on the monitors first), with no match
 * entry needed. Legacy monitors do not: they see the driver's NameOwnerChanged, NameLost
 * and NoReply, the dbus1 form of the same events.
 */
static void notify_monitors(Bus *bus, uint64_t dst_id, uint64_t cookie_reply,
                            const struct kdbus_item *item) {
        List *pos;

        list_for_each(pos, &bus->monitors) {
                NativeConn *nc = native_conn_from_bridge(container_of(pos, BridgeConn,
                                                                      match_link));

                if (nc)
                        notify_deliver(nc, dst_id, cookie_reply, item);
        }
}

/* Broadcast @item to every native monitor and native connection with a matching entry. */
static void notify_broadcast(Bus *bus, const struct kdbus_item *item) {
        HashNode *node, *tmp;
        size_t i;

        notify_monitors(bus, KDBUS_DST_ID_BROADCAST, 0, item);
        /* only native peers get these: a bus of classic peers does not walk all of them
         * for each peer that comes or goes (10,000 closing at once was O(N²)) */
        if (!bus->n_native_conns)
                return;

        hash_table_for_each(node, tmp, &bus->conns_by_id, i) {
                BridgeConn *conn = container_of(node, BridgeConn, id_node);
                NativeConn *nc = native_conn_from_bridge(conn);
                List *pos;

                if (!nc || !notify_visible(conn, item))
                        continue;
                list_for_each(pos, &nc->matches) {
                        if (native_match_notify(container_of(pos, NativeMatch, link), item)) {
                                notify_deliver(nc, KDBUS_DST_ID_BROADCAST, 0, item);
                                break;
                        }
                }
        }
}

/* The HELLO flags kdbus reports for @conn. */
static uint64_t conn_hello_flags(const BridgeConn *conn) {
        const NativeConn *nc;

        if (!conn)
                return 0;
        nc = native_conn_from_bridge(conn);
        if (nc)
                return nc->hello_flags & ~NATIVE_HELLO_TRANSPORT_FLAGS;
        return (conn->flags & BRIDGE_CONN_ACCEPT_FDS) ? KDBUS_HELLO_ACCEPT_FD : 0;
}

/**
 * native_notify_id() - ID_ADD / ID_REMOVE to the native peers that asked
 * @bus:        the bus
 * @conn:       the connection that said hello (@added) or went away
 * @added:      which
 */
void native_notify_id(Bus *bus, BridgeConn *conn, bool added) {
        struct kdbus_item item = {
                .size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_id_change),
                .type = added ? KDBUS_ITEM_ID_ADD : KDBUS_ITEM_ID_REMOVE,
        };

        item.id_change.id = conn->id;
        item.id_change.flags = conn_hello_flags(conn);
        notify_broadcast(bus, &item);
}

/**
 * native_notify_name_change() - one NAME_ADD / NAME_REMOVE / NAME_CHANGE, ids and flags given
 * @bus:        the bus
 * @type:       KDBUS_ITEM_NAME_ADD, _REMOVE or _CHANGE
 * @name:       the well-known name
 * @old_id:     the old holder's id (0 for NAME_ADD)
 * @old_flags:  its flags
 * @new_id:     the new holder's id (0 for NAME_REMOVE)
 * @new_flags:  its flags
 */
void native_notify_name_change(Bus *bus, uint64_t type, const char *name, uint64_t old_id,
                               uint64_t old_flags, uint64_t new_id, uint64_t new_flags) {
        size_t len = strlen(name) + 1;
        struct kdbus_item *item;

        item = calloc(1, KDBUS_ITEM_SIZE(sizeof(struct kdbus_notify_name_change) + len));
        if (!item)
                return;         /* like the handler: the change stands, the report is lost */
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_name_change) + len;
        item->type = type;
        item->name_change.old_id.id = old_id;
        item->name_change.old_id.flags = old_flags;
        item->name_change.new_id.id = new_id;
        item->name_change.new_id.flags = new_flags;
        memcpy(item->name_change.name, name, len);
        notify_broadcast(bus, item);
        free(item);
}

/**
 * native_notify_name() - NAME_ADD / NAME_REMOVE / NAME_CHANGE to the native peers that asked
 * @bus:        the bus
 * @name:       a well-known name (unique names are reported as ID_ADD / ID_REMOVE)
 * @old_owner:  NULL: the name is new
 * @old_flags:  the BRIDGE_NAME_* flags @old_owner asked with
 * @new_owner:  NULL: the name is gone
 * @new_flags:  the BRIDGE_NAME_* flags @new_owner asked with
 *
 * Each side carries the name flags kdbus's names.c passed to kdbus_notify_name_change(): an
 * owner's saved ALLOW_REPLACEMENT / QUEUE and PRIMARY (both sides are, or were until now, the
 * primary owner: native_name_flags()), legacy owners' RequestName flags translated.
 *
 * A name with an activator is never new nor gone while the activator lives: it holds the
 * name when no owner does, so the first owner takes it over from the activator and the
 * last gives it back (NAME_CHANGE with the activator's id, flagged KDBUS_NAME_ACTIVATOR |
 * KDBUS_NAME_PRIMARY, as kdbus's names.c reported it).
 */
void native_notify_name(Bus *bus, const char *name, BridgeConn *old_owner, unsigned old_flags,
                        BridgeConn *new_owner, unsigned new_flags) {
        const BridgeConn *act;
        uint64_t old_id = 0, new_id = 0, old_kflags = 0, new_kflags = 0;

        if (name[0] == ':' || (!old_owner && !new_owner))
                return;
        if (old_owner) {
                old_id = old_owner->id;
                old_kflags = native_name_flags(old_flags, true);
        }
        if (new_owner) {
                new_id = new_owner->id;
                new_kflags = native_name_flags(new_flags, true);
        }
        act = (!old_owner || !new_owner) ? bus_find_activator(bus, name) : NULL;
        if (act && !old_owner) {
                old_id = act->id;
                old_kflags = NATIVE_ACTIVATOR_NAME_FLAGS;
        } else if (act) {
                new_id = act->id;
                new_kflags = NATIVE_ACTIVATOR_NAME_FLAGS;
        }
        native_notify_name_change(bus, !old_id ? KDBUS_ITEM_NAME_ADD :
                                       !new_id ? KDBUS_ITEM_NAME_REMOVE : KDBUS_ITEM_NAME_CHANGE,
                                  name, old_id, old_kflags, new_id, new_kflags);
}

/**
 * native_notify_reply_lost() - tell a native caller that its call gets no reply
 * (BridgeConnOps.reply_lost of a native connection)
 * @caller:     the caller
 * @userdata:   its NativeConn
 * @serial:     the call's cookie
 * @timed_out:  true: REPLY_TIMEOUT / ETIMEDOUT; false: REPLY_DEAD / EPIPE
 *
 * Return: true (told here: the driver's dbus1 error is not for it).
 */
bool native_notify_reply_lost(BridgeConn *caller, void *userdata, uint32_t serial,
                              bool timed_out) {
        NativeConn *nc = userdata;
        struct kdbus_item item = {
                .size = KDBUS_ITEM_HEADER_SIZE,
                .type = timed_out ? KDBUS_ITEM_REPLY_TIMEOUT : KDBUS_ITEM_REPLY_DEAD,
        };
        int i = native_conn_sync_find(nc, serial);

        if (i >= 0) {
                /* kdbus wakes a blocked caller with the errno, no message: nothing to
                 * copy to monitors either. A callee that is gone or dropped the call
                 * is EPIPE (kdbus_conn_disconnect(), kdbus_cmd_recv() with DROP). */
                native_conn_sync_finish(nc, (unsigned)i, timed_out ? -ETIMEDOUT : -EPIPE, 0, 0,
                                        NULL, 0);
                return true;
        }
        if (caller->bus)
                notify_monitors(caller->bus, caller->id, serial, &item);
        notify_deliver(nc, caller->id, serial, &item);
        return true;
}

/**
 * native_notify_reply_undelivered() - the answer to a blocked caller could not be queued
 * (BridgeConnOps.reply_undelivered of a native connection)
 * @caller:     the caller
 * @userdata:   its NativeConn
 * @serial:     the call's cookie
 * @bridge_error: why (a positive BRIDGE_E_*)
 *
 * The replier gets its own errno from SEND; kdbus woke the waiting caller with the same
 * one, except that the replier's ECOMM (the caller refuses fds) is EREMOTEIO for the
 * caller, so it can tell it from an ECOMM of its own call.
 */
void native_notify_reply_undelivered(BridgeConn *caller, void *userdata, uint32_t serial,
                                     int bridge_error) {
        NativeConn *nc = userdata;
        int error, i = native_conn_sync_find(nc, serial);

        if (i < 0)
                return;
        error = native_errno_from_bridge(bridge_error);
        native_conn_sync_finish(nc, (unsigned)i, error == -ECOMM ? -EREMOTEIO : error, 0, 0,
                                NULL, 0);
}

/* An activator took or gave up @name while no owner has it: NAME_ADD / NAME_REMOVE with
 * its side flagged as kdbus flagged an activator's (native/names.h). */
static void native_notify_activator(Bus *bus, const char *name, BridgeConn *conn, bool added) {
        if (added)
                native_notify_name_change(bus, KDBUS_ITEM_NAME_ADD, name, 0, 0, conn->id,
                                          NATIVE_ACTIVATOR_NAME_FLAGS);
        else
                native_notify_name_change(bus, KDBUS_ITEM_NAME_REMOVE, name, conn->id,
                                          NATIVE_ACTIVATOR_NAME_FLAGS, 0, 0);
}

/* What the native front end hears of the bus (registered at the first native HELLO). */
const BusObserver native_bus_observer = {
        .conn_changed = native_notify_id,
        .name_changed = native_notify_name,
        .activator_changed = native_notify_activator,
};
