/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per (receiver, sending account) accounting; see quota.h. The limits themselves are the
 * callers' (bridge/conn.c: the core queue's, native/conn.c: kdbus's pool quota).
 */
#include <assert.h>
#include <stdlib.h>
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/quota.h"
#include "util/error.h"

/**
 * bridge_quota_account() - the account a sender's messages are charged to
 * @sender:     the sending connection, or NULL for the bus itself
 *
 * Return: its uid; for a connection on a custom endpoint 1 << 32 | the endpoint's id (a
 * sandbox of uid U does not eat into the share of U's other peers); for the bus
 * BRIDGE_QUOTA_ACCOUNT_BUS.
 */
uint64_t bridge_quota_account(const BridgeConn *sender) {
        if (!sender)
                return BRIDGE_QUOTA_ACCOUNT_BUS;
        if (sender->endpoint)
                return (uint64_t)1 << 32 | sender->endpoint->id;
        return (uint32_t)sender->creds.uid;
}

/**
 * bridge_quota_add_row() - a row for an account that has none yet
 * @t:          the table
 * @account:    the account (no row in @t)
 *
 * Return: the new row (zeroes but the account), or NULL if the table cannot grow.
 */
BridgeQuotaUse *bridge_quota_add_row(BridgeQuotaTable *t, uint64_t account) {
        BridgeQuotaUse *u;

        if (t->n == t->cap) {
                unsigned cap = t->cap ? 2 * t->cap : 4;
                BridgeQuotaUse *use = realloc(t->use, cap * sizeof(*use));

                if (!use) {
                        (void) error_origin(-ENOMEM);
                        return NULL;
                }
                t->use = use;
                t->cap = cap;
        }
        u = &t->use[t->n++];
        *u = (BridgeQuotaUse){ .account = account };
        return u;
}

/**
 * bridge_quota_table_deinit() - free the rows
 * @t:          the table (empty afterwards)
 */
void bridge_quota_table_deinit(BridgeQuotaTable *t) {
        free(t->use);
        *t = (BridgeQuotaTable)BRIDGE_QUOTA_TABLE_NULL(*t);
}
