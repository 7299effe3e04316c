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

/* How many recycled queue entries a bus keeps (Bus.free_entries). */
#define BUS_MAX_FREE_ENTRIES 4096u

typedef struct BridgeQueueEntry {
        List link;                      /* BridgeConn.queue or Bus.free_entries */
        BridgeMsg *msg;                 /* one reference */
} BridgeQueueEntry;

/* Per-uid accounting (Bus.users): what all connections of one uid hold. */
typedef struct BridgeUser {
        HashNode node;
        uid_t uid;
        unsigned n_conns;               /* active or not: max_connections_per_user */
} BridgeUser;

/* Frees the recycled entries (bus_free). */
void bus_free_entries_flush(Bus *bus);
/* Frees every per-uid account (bus_free, after detaching the connections). */
void bus_users_flush(Bus *bus);

int bus_notify_conn_added(Bus *bus, BridgeConn *conn);
int bus_notify_conn_removed(Bus *bus, BridgeConn *conn);
int bus_notify_name_changed(Bus *bus, const char *name, BridgeConn *old_owner,
                            BridgeConn *new_owner);
int bus_notify_reply_lost(Bus *bus, BridgeConn *caller, uint32_t serial, bool timed_out,
                          const char *callee_name);
