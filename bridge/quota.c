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

static BridgeQuotaUse *quota_find(const BridgeQuotaTable *t, uint64_t account) {
        unsigned i;

        for (i = 0; i < t->n; ++i)
                if (t->use[i].account == account)
                        return &t->use[i];
        return NULL;
}

/**
 * bridge_quota_get() - what an account holds
 * @t:          the table
 * @account:    the account
 *
 * Return: its row, or one of zeroes.
 */
BridgeQuotaUse bridge_quota_get(const BridgeQuotaTable *t, uint64_t account) {
        const BridgeQuotaUse *u = quota_find(t, account);

        return u ? *u : (BridgeQuotaUse){ .account = account };
}

/**
 * bridge_quota_charge() - one more message for an account
 * @t:          the table
 * @account:    the account
 * @bytes:      its bytes
 * @fds:        its fds
 *
 * Return: 0 or -ENOMEM (nothing changed).
 */
int bridge_quota_charge(BridgeQuotaTable *t, uint64_t account, uint64_t bytes, uint32_t fds) {
        BridgeQuotaUse *u = quota_find(t, account);

        if (!u) {
                if (t->n == t->cap) {
                        unsigned cap = t->cap ? 2 * t->cap : 4;
                        BridgeQuotaUse *use = realloc(t->use, cap * sizeof(*use));

                        if (!use)
                                return error_origin(-ENOMEM);
                        t->use = use;
                        t->cap = cap;
                }
                u = &t->use[t->n++];
                *u = (BridgeQuotaUse){ .account = account };
        }
        u->bytes += bytes;
        u->fds += fds;
        ++u->msgs;
        return 0;
}

/**
 * bridge_quota_discharge() - one message of an account went
 * @t:          the table
 * @account:    the account it was charged to
 * @bytes:      as charged
 * @fds:        as charged
 */
void bridge_quota_discharge(BridgeQuotaTable *t, uint64_t account, uint64_t bytes, uint32_t fds) {
        BridgeQuotaUse *u = quota_find(t, account);

        assert(u && u->msgs && u->bytes >= bytes && u->fds >= fds);
        u->bytes -= bytes;
        u->fds -= fds;
        if (--u->msgs == 0)
                *u = t->use[--t->n];    /* the last row takes its place */
}

/**
 * bridge_quota_table_deinit() - free the rows
 * @t:          the table (empty afterwards)
 */
void bridge_quota_table_deinit(BridgeQuotaTable *t) {
        free(t->use);
        *t = (BridgeQuotaTable)BRIDGE_QUOTA_TABLE_NULL(*t);
}
