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

/* What @account holds in @t: zeroes if nothing. */
BridgeQuotaUse bridge_quota_get(const BridgeQuotaTable *t, uint64_t account);
/* Count one more message of @bytes and @fds for @account. Return: 0 or -ENOMEM. */
int bridge_quota_charge(BridgeQuotaTable *t, uint64_t account, uint64_t bytes, uint32_t fds);
/* Undo one bridge_quota_charge() with the same values. */
void bridge_quota_discharge(BridgeQuotaTable *t, uint64_t account, uint64_t bytes, uint32_t fds);
void bridge_quota_table_deinit(BridgeQuotaTable *t);
