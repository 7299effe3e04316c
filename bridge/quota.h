/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What each sending account holds at one receiver: bytes, fds and messages, per (receiver,
 * sending account), as kdbus counts its pool quota (kdbus_conn_quota_inc) and dbus-broker
 * its per-user charges. A receiver keeps one table for its core queue (BridgeConn.quota)
 * and a native receiver one more for its pool (NativeConn.pool_quota), so that one user
 * filling a receiver is refused at its own limit while every other user keeps its share.
 *
 * An account is the sending connection's uid, or for a connection that came through a
 * custom endpoint that endpoint's own account (kdbus charged an endpoint's peers to the
 * endpoint), or BRIDGE_QUOTA_ACCOUNT_BUS for what the bus itself sends. A table holds few
 * accounts at a time (those with something queued), so it is a small array searched
 * linearly; an account's row goes when its last message does.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include "util/macro.h"

typedef struct BridgeConn BridgeConn;

/* The bus's own messages (driver replies, signals, notifications): no uid is 2^32 - 1. */
#define BRIDGE_QUOTA_ACCOUNT_BUS ((uint64_t)UINT32_MAX)

typedef struct BridgeQuotaUse {
        uint64_t account;
        uint64_t bytes;
        uint32_t fds;
        uint32_t msgs;
} BridgeQuotaUse;

typedef struct BridgeQuotaTable {
        BridgeQuotaUse *use;            /* n rows, every one with msgs > 0 */
        unsigned n;
        unsigned cap;
} BridgeQuotaTable;

#define BRIDGE_QUOTA_TABLE_NULL(x) { .use = NULL, .n = 0, .cap = 0 }

/* The account @sender's messages are charged to (NULL: the bus). */
uint64_t bridge_quota_account(const BridgeConn *sender);

/*
 * The three below run once or twice per message and receiver (a broadcast to 100 peers:
 * 100 charges and 100 discharges), so they are inline; only adding a row is not.
 */

/* @account's row in @t, or NULL. */
static inline BridgeQuotaUse *bridge_quota_find(const BridgeQuotaTable *t, uint64_t account) {
        for (unsigned i = 0; i < t->n; ++i)
                if (t->use[i].account == account)
                        return &t->use[i];
        return NULL;
}

/* A new row of zeroes for @account (not in @t). Return: it, or NULL (-ENOMEM). */
BridgeQuotaUse *bridge_quota_add_row(BridgeQuotaTable *t, uint64_t account);

/* What @account holds in @t: zeroes if nothing. */
static inline BridgeQuotaUse bridge_quota_get(const BridgeQuotaTable *t, uint64_t account) {
        const BridgeQuotaUse *u = bridge_quota_find(t, account);

        return u ? *u : (BridgeQuotaUse){ .account = account };
}

/* Count one more message of @bytes and @fds for @account. Return: 0 or -ENOMEM (nothing
 * changed). */
static inline int bridge_quota_charge(BridgeQuotaTable *t, uint64_t account, uint64_t bytes,
                                      uint32_t fds) {
        BridgeQuotaUse *u = bridge_quota_find(t, account);

        if (!u && !(u = bridge_quota_add_row(t, account)))
                return -ENOMEM;
        u->bytes += bytes;
        u->fds += fds;
        ++u->msgs;
        return 0;
}

/* Undo one bridge_quota_charge() with the same values. */
static inline void bridge_quota_discharge(BridgeQuotaTable *t, uint64_t account, uint64_t bytes,
                                          uint32_t fds) {
        BridgeQuotaUse *u = bridge_quota_find(t, account);

        assert(u && u->msgs && u->bytes >= bytes && u->fds >= fds);
        u->bytes -= bytes;
        u->fds -= fds;
        if (--u->msgs == 0)
                *u = t->use[--t->n];    /* the last row takes its place */
}
void bridge_quota_table_deinit(BridgeQuotaTable *t);
