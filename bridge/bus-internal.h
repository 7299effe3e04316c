/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What the files of bridge/ share and nobody else uses: queue entries, the notification
 * helpers (which tolerate a bus without a handler) and the broadcast router. Not a
 * contract: nothing outside bridge/ includes it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "util/list.h"

/* How many recycled queue entries a bus keeps (Bus.free_entries): enough for a broadcast
 * burst to 100 receivers with 128 messages queued each (issue #16) to take no malloc() per
 * delivery, at most 16384 * 40 bytes; bus_trim() gives them back after a flood. */
#define BUS_MAX_FREE_ENTRIES 16384u

typedef struct BridgeQueueEntry {
        List link;                      /* BridgeConn.queue or Bus.free_entries */
        BridgeMsg *msg;                 /* one reference */
        size_t bytes;                   /* what it counts in queued_bytes */
        uint64_t account;               /* whose quota it counts against (bridge/quota.h) */
} BridgeQueueEntry;

/* Per-uid accounting (Bus.users): what all connections of one uid hold. */
typedef struct BridgeUser {
        HashNode node;
        uid_t uid;
        unsigned n_conns;               /* active or not: keeps the account */
        unsigned n_active;              /* said hello, not disconnected: max_connections_per_user
                                         * (dbus-daemon counts completed connections only) */
        bool anonymous;                 /* a custom endpoint's own account (kdbus): owned by
                                         * the endpoint, not in Bus.users (bridge/endpoint.c) */
} BridgeUser;

/* Frees the recycled entries (bus_free). */
void bus_free_entries_flush(Bus *bus);
/* Frees the recycled BridgeReply (bus_free, after the connections are gone). */
void bus_free_replies_flush(Bus *bus);
/* Free @user's account once nothing is charged to it (not an endpoint's). */
void bus_user_put(Bus *bus, BridgeUser *user);
/* Frees every per-uid account (bus_free, after detaching the connections). */
void bus_users_flush(Bus *bus);

/* Queue without checks (conn.c); is the queue over its limits as a whole (monitors, which
 * take every sender's messages); may @msg's sending account add it (0, BRIDGE_E_QUOTA,
 * BRIDGE_E_FDS_QUOTA); ask the transport to drop. */
int bridge_conn_queue_push(BridgeConn *conn, BridgeMsg *msg);
bool bridge_conn_queue_is_full(const BridgeConn *conn);
int bridge_conn_queue_check(const BridgeConn *conn, const BridgeMsg *msg);
void bridge_conn_kick(BridgeConn *conn);
/* Room for @n receivers in broadcast routing's buffer (conn.c). Return: 0 or -ENOMEM. */
int bus_route_reserve(Bus *bus, size_t n);
/* Take one entry out of the middle of @conn's queue (moving messages: activator.c). */
void bridge_conn_queue_remove(BridgeConn *conn, BridgeQueueEntry *e);

/* A BridgeName was freed or an active connection left conns_by_id: what any connection
 * remembers of the names it sent to is stale (bus_find_conn_by_name_from()). */
static inline void bus_dest_gone(Bus *bus) {
        ++bus->dest_gen;
}

/* Debug.Stats peaks: call after @conn's names or match rules changed. */
static inline void bus_stats_note_names(Bus *bus, BridgeConn *conn) {
        unsigned n = bus->n_name_owners + (unsigned)bus->conns_by_id.n_entries;

        if (n > bus->peak_names)
                bus->peak_names = n;
        if (conn->n_names + 1 > conn->peak_names)
                conn->peak_names = conn->n_names + 1;
        if (conn->peak_names > bus->peak_names_per_conn)
                bus->peak_names_per_conn = conn->peak_names;
}

static inline void bus_stats_note_matches(Bus *bus, BridgeConn *conn) {
        if (bus->n_match_rules > bus->peak_match_rules)
                bus->peak_match_rules = bus->n_match_rules;
        if (conn->n_matches > conn->peak_matches)
                conn->peak_matches = conn->n_matches;
        if (conn->peak_matches > bus->peak_match_rules_per_conn)
                bus->peak_match_rules_per_conn = conn->peak_matches;
}

/* Tell the observers (BusObserver) of an activator's coming and going (activator.c). */
void bus_observe_conn(Bus *bus, BridgeConn *conn, bool added);
void bus_observe_activator(Bus *bus, const char *name, BridgeConn *conn, bool added);
int bus_notify_conn_added(Bus *bus, BridgeConn *conn);
int bus_notify_conn_removed(Bus *bus, BridgeConn *conn);
/* @old_flags / @new_flags: the BRIDGE_NAME_* flags the old / new primary owner asked with
 * (for native peers' NAME_* items; 0 for none or a unique name). */
int bus_notify_name_changed(Bus *bus, const char *name, BridgeConn *old_owner,
                            unsigned old_flags, BridgeConn *new_owner, unsigned new_flags);
int bus_notify_reply_lost(Bus *bus, BridgeConn *caller, uint32_t serial, bool timed_out,
                          const char *callee_name);
