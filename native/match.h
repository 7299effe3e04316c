/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* MATCH_ADD, MATCH_REMOVE and the match entries of a native peer (native/match.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/list.h"

typedef struct NativeConn NativeConn;
typedef struct NativeCommandIo NativeCommandIo;
struct kdbus_item;

/* One notification item of a match entry (NAME_ADD/REMOVE/CHANGE, ID_ADD/REMOVE). */
typedef struct NativeNotifyRule {
        uint64_t type;                  /* KDBUS_ITEM_NAME_ADD ... KDBUS_ITEM_ID_REMOVE */
        uint64_t old_id;                /* NAME_*: KDBUS_MATCH_ID_ANY or an id */
        uint64_t new_id;                /* NAME_*, and the id of ID_*: ANY or an id */
        char *name;                     /* NAME_*: NULL for any name */
} NativeNotifyRule;

/* A match entry of the peer: the core rule it became, found again by the cookie. An entry
 * with notification items has no core rule (kdbus ANDs an entry's rules, and a notification
 * rule never matches a connection's message); it matches the bus's notifications when every
 * notification item does and it has no other item. */
typedef struct NativeMatch {
        List link;                      /* NativeConn.matches */
        uint64_t cookie;
        struct BridgeMatchRule *rule;   /* owned by the core (freed at disconnect), or NULL */
        NativeNotifyRule *notify;       /* owned */
        unsigned n_notify;
        bool notify_only;               /* no BLOOM_MASK / NAME / ID item beside them */
} NativeMatch;

/* MATCH_ADD, MATCH_REMOVE; the records of a closed connection. */
int native_conn_match_add(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_match_remove(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
void native_conn_matches_clear(NativeConn *nc);


/* Does @m's notification rules match the notification @item? (native/notify.c) */
bool native_match_notify(const NativeMatch *m, const struct kdbus_item *item);
void native_match_free(NativeMatch *m);
