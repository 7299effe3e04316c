/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Pending replies. A method call that expects a reply leaves a BridgeReply (caller, serial,
 * callee, deadline); a METHOD_RETURN or ERROR passes only if it consumes one, so nobody
 * receives a reply it did not ask for. A BridgeReply lives only while both ends are active:
 * the callee's disconnect fails it at once (reply_lost), the caller's drops it silently,
 * and bus_dispatch_timeouts() fails it when its deadline passes. It holds no references.
 */
#include <stdbool.h>
#include <stdint.h>
#include "util/hash-table.h"
#include "util/list.h"
#include "util/macro.h"

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;

typedef struct BridgeReply {
        HashNode node;                  /* Bus.replies, hashed by (caller id, serial), once
                                         * indexed (reply.c) */
        List unindexed_link;            /* Bus.replies_unindexed until then */
        List timeout_link;              /* Bus.reply_timeouts, when it has a deadline */
        List caller_link;               /* caller->replies_out */
        List callee_link;               /* callee->replies_in */
        BridgeConn *caller;             /* who waits */
        BridgeConn *callee;             /* who owes the reply */
        uint32_t serial;                /* the call's serial (the reply's REPLY_SERIAL) */
        uint64_t deadline_usec;         /* 0: never */
} BridgeReply;

/* May @caller open another reply slot (max_replies_per_connection; for a native caller
 * also NATIVE_MAX_REQUESTS_PENDING)? */
bool bridge_conn_can_wait_reply(const BridgeConn *caller);
/* Track a call of @caller to @callee. Return: 0, -ENOMEM, BRIDGE_E_REPLIES_QUOTA. */
int bridge_reply_new(BridgeConn *caller, BridgeConn *callee, uint32_t serial,
                     BridgeReply **ret);
/* Unlink from everything and free; no notification. */
BridgeReply *bridge_reply_free(BridgeReply *reply);
DEFINE_CLEANUP(BridgeReply *, bridge_reply_free);

/* Make @deadline_usec (CLOCK_MONOTONIC) @reply's deadline if it is earlier than the one it
 * has (or it has none): a native call's own timeout (kdbus_msg.timeout_ns). */
void bridge_reply_set_deadline(BridgeReply *reply, uint64_t deadline_usec);

/* The pending call of @caller with @serial that @callee owes, or NULL. */
BridgeReply *bus_find_reply(Bus *bus, const BridgeConn *caller, const BridgeConn *callee,
                            uint32_t serial);

/* @callee leaves: reply_lost(timed_out=false) to each caller it owes, newest call first. */
void bridge_conn_fail_replies(BridgeConn *callee);
/* @caller leaves: forget the calls it waits for. */
void bridge_conn_drop_replies(BridgeConn *caller);
/* The pending call of @caller with @serial, whoever owes it, or NULL. */
BridgeReply *bus_find_reply_of_caller(Bus *bus, const BridgeConn *caller, uint32_t serial);
