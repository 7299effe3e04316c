/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pending-reply tracking (see reply.h). Entries are keyed by (caller id, serial) in one
 * table of the bus; two calls with the same serial to different callees are legal (the
 * serial is the caller's), so lookups walk the chain and compare the callee too.
 *
 * Bus.reply_timeouts is sorted by deadline, so expiry only ever looks at its head. Every
 * reply gets the bus's one reply timeout, so appending keeps it sorted; a native call's own
 * earlier deadline (bridge_reply_set_deadline()) is inserted from the tail backwards,
 * which is O(1) when callers use similar timeouts. max_replies_per_connection
 * counts the calls a caller waits for, as dbus-daemon does.
 *
 * Indexing is lazy. Most callees answer in the order they were called, so the reply a
 * callee sends is first looked for at the head of its replies_in list, without a hash; an
 * entry goes into Bus.replies (a SipHash of its key, keyed by the bus: callers pick the
 * serials) only when a lookup misses the head, and then every entry not yet indexed goes in
 * at once (Bus.replies_unindexed), so each is hashed at most once and a callee that answers
 * in order costs no hash at all (issue #16: two SipHashes per call and reply before). Should
 * a caller wait for two calls with the same serial to the same callee, a reply may consume
 * either; they differ only in their deadlines. The table gets its buckets with the first
 * entry, where -ENOMEM can still be reported, so indexing later never fails.
 *
 * Freed entries go to Bus.free_replies (up to BUS_MAX_FREE_REPLIES) and are reused, so a
 * steady flow of calls allocates nothing; under ASan a kept entry is poisoned, so a use
 * after bridge_reply_free() is still reported.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/limits.h"
#include "bridge/reply.h"
#include "util/error.h"
#include "util/siphash24.h"

#if defined(__SANITIZE_ADDRESS__)
#define REPLY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLY_ASAN 1
#endif
#endif
#ifdef REPLY_ASAN
#include <sanitizer/asan_interface.h>
#define REPLY_POISON(p) ASAN_POISON_MEMORY_REGION((p), sizeof(BridgeReply))
#define REPLY_UNPOISON(p) ASAN_UNPOISON_MEMORY_REGION((p), sizeof(BridgeReply))
#elif defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define REPLY_POISON(p) ((void) VALGRIND_MAKE_MEM_NOACCESS((p), sizeof(BridgeReply)))
#define REPLY_UNPOISON(p) ((void) VALGRIND_MAKE_MEM_UNDEFINED((p), sizeof(BridgeReply)))
#endif
#endif
#ifndef REPLY_POISON
#define REPLY_POISON(p) ((void) 0)
#define REPLY_UNPOISON(p) ((void) 0)
#endif

static BridgeReply *reply_alloc(Bus *bus) {
        BridgeReply *reply;

        if (!bus->n_free_replies)
                return calloc(1, sizeof(BridgeReply));
        reply = bus->free_replies[--bus->n_free_replies];
        REPLY_UNPOISON(reply);
        memset(reply, 0, sizeof(*reply));
        return reply;
}

static void reply_release(Bus *bus, BridgeReply *reply) {
        if (bus && bus->n_free_replies < BUS_MAX_FREE_REPLIES) {
                REPLY_POISON(reply);
                bus->free_replies[bus->n_free_replies++] = reply;
        } else
                free(reply);
}

/**
 * bus_free_replies_flush() - free the recycled reply entries
 * @bus:        the bus
 */
void bus_free_replies_flush(Bus *bus) {
        while (bus->n_free_replies) {
                BridgeReply *reply = bus->free_replies[--bus->n_free_replies];

                REPLY_UNPOISON(reply);
                free(reply);
        }
}

static uint64_t reply_hash(uint64_t caller_id, uint32_t serial) {
        return hash_u64(caller_id * UINT64_C(0x9e3779b97f4a7c15) ^ serial);
}

/**
 * bridge_conn_can_wait_reply() - may @caller open one more reply slot?
 * @caller:     a connection about to send a call that expects a reply
 *
 * max_replies_per_connection bounds every caller; a native one also kdbus's
 * KDBUS_CONN_MAX_REQUESTS_PENDING (kdbus_reply_new()), whatever the configuration says,
 * as a native peer was written against kdbus's limit.
 *
 * Return: true if it is below its limit.
 */
bool bridge_conn_can_wait_reply(const BridgeConn *caller) {
        uint32_t max = caller->bus->limits.max_replies_per_connection;

        if (caller->ops && caller->ops->max_replies && max > caller->ops->max_replies)
                max = caller->ops->max_replies;
        return caller->n_replies_out < max;
}

/**
 * bridge_reply_new() - start waiting for the reply to a call
 * @caller:     the active connection that sent the call
 * @callee:     the active connection it goes to
 * @serial:     the call's serial
 * @ret:        the entry (owned by the bus; freed by a reply, a timeout or a disconnect)
 *
 * Return: 0, -ENOMEM, BRIDGE_E_REPLIES_QUOTA.
 */
int bridge_reply_new(BridgeConn *caller, BridgeConn *callee, uint32_t serial,
                     BridgeReply **ret) {
        Bus *bus = caller->bus;
        BridgeReply *reply;
        int r;

        if (!bridge_conn_can_wait_reply(caller))
                return BRIDGE_E_REPLIES_QUOTA;

        reply = reply_alloc(bus);
        if (!reply)
                return error_origin(-ENOMEM);
        list_init(&reply->timeout_link);
        list_init(&reply->caller_link);
        list_init(&reply->callee_link);
        list_init(&reply->unindexed_link);
        reply->caller = caller;
        reply->callee = callee;
        reply->serial = serial;

        if (bus->replies.n_buckets)
                list_append(&bus->replies_unindexed, &reply->unindexed_link);
        else {
                r = hash_table_insert(&bus->replies, &reply->node, reply_hash(caller->id, serial));
                if (r < 0) {
                        reply_release(bus, reply);
                        return error_trace(r);
                }
        }
        if (bus->limits.reply_timeout_usec) {
                reply->deadline_usec = bus->now_usec + bus->limits.reply_timeout_usec;
                list_append(&bus->reply_timeouts, &reply->timeout_link);
        }
        list_append(&caller->replies_out, &reply->caller_link);
        list_append(&callee->replies_in, &reply->callee_link);
        ++caller->n_replies_out;

        *ret = reply;
        return 0;
}

/**
 * bridge_reply_free() - forget a pending reply
 * @reply:      the entry or NULL
 *
 * Return: NULL.
 */
BridgeReply *bridge_reply_free(BridgeReply *reply) {
        Bus *bus;

        if (!reply)
                return NULL;
        bus = reply->caller->bus;
        assert(reply->caller->n_replies_out > 0);       /* counts its caller_link list */
        if (list_is_linked(&reply->unindexed_link))
                list_unlink(&reply->unindexed_link);
        else
                hash_table_remove(&bus->replies, &reply->node);
        list_unlink(&reply->timeout_link);
        list_unlink(&reply->caller_link);
        list_unlink(&reply->callee_link);
        --reply->caller->n_replies_out;
        reply_release(bus, reply);
        return NULL;
}

/* Every entry into Bus.replies (it has buckets since the first entry: no failure). */
static void replies_index(Bus *bus) {
        List *l;

        while ((l = list_first(&bus->replies_unindexed))) {
                BridgeReply *reply = container_of(l, BridgeReply, unindexed_link);
                int r;

                list_unlink(l);
                r = hash_table_insert(&bus->replies, &reply->node,
                                      reply_hash(reply->caller->id, reply->serial));
                assert(r == 0);
                (void) r;
        }
}

/**
 * bus_find_reply() - the pending call a reply would answer
 * @bus:        the bus
 * @caller:     who sent the call (the reply's destination)
 * @callee:     who sends the reply
 * @serial:     the reply's REPLY_SERIAL
 *
 * Return: the entry or NULL.
 */
BridgeReply *bus_find_reply(Bus *bus, const BridgeConn *caller, const BridgeConn *callee,
                            uint32_t serial) {
        BridgeReply *first = list_first_entry(&callee->replies_in, BridgeReply, callee_link);
        HashNode *n;

        if (first && first->caller == caller && first->serial == serial)
                return first;           /* the oldest call it owes: answered in order */
        replies_index(bus);
        for (n = hash_table_lookup(&bus->replies, reply_hash(caller->id, serial)); n;
             n = hash_node_next_match(n)) {
                BridgeReply *reply = container_of(n, BridgeReply, node);

                if (reply->caller == caller && reply->callee == callee && reply->serial == serial)
                        return reply;
        }
        return NULL;
}

/**
 * bridge_conn_fail_replies() - @callee will never answer: tell every caller waiting on it
 * @callee:     the connection that is going away
 *
 * Newest call first, whoever the caller, as dbus-daemon 1.14.10 sends its NoReply errors.
 * Each entry is freed before its reply_lost notification, so the handler sees the state
 * without it.
 */
void bridge_conn_fail_replies(BridgeConn *callee) {
        List *last;

        while ((last = list_last(&callee->replies_in))) {
                BridgeReply *reply = container_of(last, BridgeReply, callee_link);
                BridgeConn *caller = reply->caller;
                uint32_t serial = reply->serial;

                bridge_reply_free(reply);
                (void) bus_notify_reply_lost(callee->bus, caller, serial, false,
                                             callee->unique_name);
        }
}

/**
 * bridge_conn_drop_replies() - forget every call @caller waits for
 * @caller:     the connection that is going away
 */
void bridge_conn_drop_replies(BridgeConn *caller) {
        BridgeReply *reply;

        while ((reply = list_first_entry(&caller->replies_out, BridgeReply, caller_link)))
                bridge_reply_free(reply);
}

/* Link @reply into Bus.reply_timeouts at its place by deadline (after equal ones). */
static void reply_timeouts_insert(Bus *bus, BridgeReply *reply) {
        List *pos = bus->reply_timeouts.prev;

        while (pos != &bus->reply_timeouts &&
               container_of(pos, BridgeReply, timeout_link)->deadline_usec > reply->deadline_usec)
                pos = pos->prev;
        list_insert_after(pos, &reply->timeout_link);
}

/**
 * bridge_reply_set_deadline() - give a pending call an earlier deadline
 * @reply:      the entry
 * @deadline_usec: CLOCK_MONOTONIC microseconds (0 is taken as 1: already due)
 *
 * The bus's reply timeout stays an upper bound: a later deadline changes nothing.
 */
void bridge_reply_set_deadline(BridgeReply *reply, uint64_t deadline_usec) {
        Bus *bus = reply->caller->bus;

        if (!deadline_usec)
                deadline_usec = 1;
        if (reply->deadline_usec && reply->deadline_usec <= deadline_usec)
                return;
        list_unlink(&reply->timeout_link);
        reply->deadline_usec = deadline_usec;
        reply_timeouts_insert(bus, reply);
}

/**
 * bus_find_reply_of_caller() - the pending call of @caller with @serial, any callee
 * @bus:        the bus
 * @caller:     who sent the call
 * @serial:     its serial
 *
 * Return: the first entry found, or NULL.
 */
BridgeReply *bus_find_reply_of_caller(Bus *bus, const BridgeConn *caller, uint32_t serial) {
        HashNode *n;

        replies_index(bus);
        for (n = hash_table_lookup(&bus->replies, reply_hash(caller->id, serial)); n;
             n = hash_node_next_match(n)) {
                BridgeReply *reply = container_of(n, BridgeReply, node);

                if (reply->caller == caller && reply->serial == serial)
                        return reply;
        }
        return NULL;
}
