/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * A connection to the bus. Two levels of life, as in kdbus: n_refs keeps the memory, and
 * @active (between hello and disconnect) allows delivery. Nothing is queued to an inactive
 * connection; pending replies may still point at it.
 *
 * The transport (a legacy socket or, later, a native pool) attaches through BridgeConnOps:
 * the core tells it when its queue becomes non-empty and when it must drop the peer. The
 * transport takes messages off the queue with bridge_conn_queue_peek()/_pop().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "bridge/creds.h"
#include "bridge/quota.h"
#include "util/hash-table.h"
#include "util/list.h"
#include "util/macro.h"

/* a unique name: ":1." and up to 20 digits and a NUL (bus_format_unique_name()) */
#define BRIDGE_UNIQUE_NAME_MAX 24u

typedef struct Bus Bus;
typedef struct BridgeConn BridgeConn;
typedef struct BridgeMsg BridgeMsg;
typedef struct BridgeReply BridgeReply;

typedef struct BridgeConnOps {
        /* The queue went from empty to non-empty. */
        void (*queue_nonempty)(BridgeConn *conn, void *userdata);
        /* The core decided this peer must go (e.g. it cannot keep up); the transport closes it. */
        void (*kick)(BridgeConn *conn, void *userdata);
        /* bridge_conn_disconnect() deactivated it (the bus, its endpoint or the transport
         * ended it); may be NULL */
        void (*disconnected)(BridgeConn *conn, void *userdata);
        /* A pidfd of the peer's process, fetched now, for a transport that keeps none open
         * (one fd per peer): a new fd, or a negative errno (-ESRCH: the process is gone);
         * may be NULL */
        int (*get_pidfd)(BridgeConn *conn, void *userdata);

        /* The hooks below and @rules, @max_replies are for a front end whose peers were
         * written against kdbus (native/): the core asks them where kdbus's rules differ
         * from dbus-daemon's, and never looks at which front end a connection has. Each
         * hook may be NULL. */

        /* The transport's own limits for queueing @msg to @conn, beside the core's per
         * account (kdbus's pool quota): 0, BRIDGE_E_QUOTA or BRIDGE_E_FDS_QUOTA. */
        int (*quota_check)(const BridgeConn *conn, void *userdata, const BridgeMsg *msg);
        /* Take the messages for the well-known @name that the transport holds beyond the
         * core's queue (delivered, not received yet) and append them to *msgs (*n of *cap,
         * one reference each; realloc'd): an activator hands them over. 0 or -ENOMEM. */
        int (*unqueue)(BridgeConn *conn, void *userdata, const char *name, BridgeMsg ***msgs,
                       size_t *n, size_t *cap);
        /* A message for @conn was dropped (an activator's hand-over it could not take):
         * the transport counts it for its peer. */
        void (*dropped)(BridgeConn *conn, void *userdata);
        /* @conn's call @serial will get no answer (@timed_out, or the callee went). Return:
         * true if the transport told its peer itself; false: the bus's notify handler
         * (BusNotifyOps.reply_lost) answers with a dbus1 error. */
        bool (*reply_lost)(BridgeConn *conn, void *userdata, uint32_t serial, bool timed_out);
        /* With BRIDGE_RULE_REPLY_SLOT_USED_UP: the answer to @conn's call @serial could not
         * be queued (@bridge_error, a positive BRIDGE_E_*) and the slot is gone. */
        void (*reply_undelivered)(BridgeConn *conn, void *userdata, uint32_t serial,
                                  int bridge_error);
        /* The credentials shown of @conn to others (a shallow copy into *ret): what a
         * privileged peer stood in with; NULL: conn->creds. Return: true if they are not
         * @conn's own (then no pidfd of @conn's process may be handed out for it). */
        bool (*shown_creds)(const BridgeConn *conn, void *userdata, BridgeCreds *ret);
        unsigned rules;                 /* BRIDGE_RULE_* */
        unsigned max_replies;           /* 0: the bus's limit; else the lower of the two */
} BridgeConnOps;

/* BridgeConnOps.rules: where a peer written against kdbus gets kdbus's behaviour. */
enum {
        BRIDGE_RULE_MEMFDS_AS_IS = 1u << 0,     /* receives memfd parts as they are: the
                                                 * core never reads them into dbus1 bytes;
                                                 * and opaque payloads (bridge/msg.h) */
        BRIDGE_RULE_NAMES_OLDEST_FIRST = 1u << 1, /* its names are released oldest first
                                                 * when it goes (kdbus_name_release_all) */
        BRIDGE_RULE_REPLY_SLOT_USED_UP = 1u << 2, /* an answer to it that cannot be queued
                                                 * uses the reply slot up (kdbus_conn_reply) */
        BRIDGE_RULE_SIGNALS_BY_MATCH = 1u << 3, /* a signal addressed to it by a peer with
                                                 * this rule, or by the bus, arrives only
                                                 * through one of its matches
                                                 * (kdbus_conn_unicast) */
        BRIDGE_RULE_MONITOR_FDS_BLANKED = 1u << 4, /* as a monitor without ACCEPT_FDS it
                                                 * still gets messages with fds, the fds
                                                 * left out by its transport */
        BRIDGE_RULE_MONITOR_PEERS_ONLY = 1u << 5, /* as a monitor it gets copies of the
                                                 * connections' messages only, none the
                                                 * bus sends itself (kdbus had no driver:
                                                 * its notifications say what the driver's
                                                 * signals say) */
};

enum {
        BRIDGE_CONN_ACCEPT_FDS = 1u << 0,       /* may receive unix fds (NEGOTIATE_UNIX_FD) */
        BRIDGE_CONN_MONITOR = 1u << 1,          /* a monitor: receives copies, sends nothing */
        BRIDGE_CONN_ACTIVATOR = 1u << 2,        /* holds a name for activation (activator.h) */
        BRIDGE_CONN_POLICY_HOLDER = 1u << 3,    /* holds kdbus policy entries only: nobody
                                                 * can send to it (native/holder.c) */
};

/* Positive outcomes of the calls in this file, in bridge/names.h, and bridge/match.h. */
enum {
        _BRIDGE_E_SUCCESS,
        BRIDGE_E_NAME_UNKNOWN,          /* destination well-known name has no owner */
        BRIDGE_E_PEER_UNKNOWN,          /* destination unique name is not connected */
        BRIDGE_E_QUOTA,                 /* the sender's user holds all it may queue at the
                                         * receiver (bytes, messages) */
        BRIDGE_E_FDS_REFUSED,           /* message carries fds, receiver cannot take them */
        BRIDGE_E_REPLY_UNEXPECTED,      /* a reply with no matching pending call */
        BRIDGE_E_REPLIES_QUOTA,         /* too many pending replies for the caller */
        BRIDGE_E_MATCH_QUOTA,           /* too many match rules */
        BRIDGE_E_MATCH_NOT_FOUND,       /* RemoveMatch of a rule that was not added */
        BRIDGE_E_NOT_ACTIVE,            /* the connection has not said hello or is gone */
        BRIDGE_E_ALREADY_ACTIVE,        /* hello twice */
        BRIDGE_E_CONN_QUOTA,            /* hello: too many active connections for this user */
        BRIDGE_E_ACCESS_DENIED,         /* the policy denies it (bridge/policy.h); the text is
                                         * bridge_conn_get_denial(sender) */
        BRIDGE_E_NAME_TAKEN,            /* the name has an activator already (activator.h) */
        BRIDGE_E_BAD_BODY,              /* the body in a native sender's memfd parts is not
                                         * valid for its signature (a legacy receiver needs
                                         * a valid dbus1 message) */
        BRIDGE_E_FDS_QUOTA,             /* the sender's user holds all the fds it may queue
                                         * at a native receiver (kdbus: 16; EMFILE) */
        BRIDGE_E_MSG_TOO_LARGE,         /* a native sender's memfd message, whole, exceeds
                                         * max_message_size and a legacy receiver would
                                         * need its bytes (EMSGSIZE) */
        BRIDGE_E_POOL_FULL,             /* a native receiver's pool has no free range for
                                         * the message now (kdbus: EXFULL) */
        _BRIDGE_E_N,
};

struct BridgeConn {
        /* what routing reads and writes of every receiver of a broadcast, first and
         * together (two cache lines, not seven: issue #16, broadcast to 100 receivers) */
        uint64_t route_mark;            /* Bus.route_epoch: routing decided on it */
        bool active;
        unsigned flags;                 /* BRIDGE_CONN_* */
        Bus *bus;
        struct PolicySnapshot *policy;  /* NULL: not checked (bridge/policy.h) */
        struct BusEndpoint *endpoint;   /* the custom endpoint it came through (a reference),
                                         * NULL: the bus's own (bridge/endpoint.h) */
        const BridgeConnOps *ops;
        void *userdata;                 /* the transport's */
        List queue;                     /* BridgeQueueEntry, FIFO */
        uint64_t queued_bytes;
        uint32_t queued_fds;
        uint32_t queued_msgs;
        BridgeQuotaTable quota;         /* the queue per sending account (bridge/quota.h):
                                         * the queue limits apply per (receiver, account) */
        uint64_t n_received;
        uint64_t peak_queued_bytes;
        uint32_t peak_queued_fds;
        uint64_t match_seq;             /* its place in Bus.match_conns (ascending) */

        unsigned n_refs;
        uint64_t id;                    /* 0 until hello */
        char unique_name[BRIDGE_UNIQUE_NAME_MAX]; /* bus_format_unique_name(id), "" until hello */
        BridgeCreds creds;
        char *denial;                   /* the last AccessDenied text without a snapshot */
        struct BridgeUser *user;        /* the per-uid account of creds.uid, or its custom
                                         * endpoint's own account (kdbus) */

        List bus_link;                  /* Bus.conns */
        HashNode id_node;               /* Bus.conns_by_id, when active */
        List owned;                     /* BridgeNameOwner: names owned or queued for */
        unsigned n_names;
        List matches;                   /* BridgeMatchRule */
        unsigned n_matches;
        List match_link;                /* Bus.match_conns, while n_matches > 0 */
        List replies_out;               /* BridgeReply this conn waits for (as caller) */
        List replies_in;                /* BridgeReply this conn owes (as callee) */
        List callers;                   /* BridgeCallerLink: who called it (xdg endpoint) */
        List called;                    /* BridgeCallerLink: whom it called there */
        unsigned n_replies_out;
        /* the last unique and the last well-known name it sent to, resolved (bus.c,
         * bus_find_conn_by_name_from()); valid while @dest_gen is Bus.dest_gen */
        uint64_t dest_gen;
        BridgeConn *dest_conn;
        struct BridgeName *dest_name;

        /* statistics (n_received and the queue peaks are above, with the queue) */
        uint64_t n_sent;
        unsigned peak_matches;
        unsigned peak_names;            /* incl. the unique name */
        uint64_t peak_in_bytes;         /* largest message it sent (set by the front end) */
        uint32_t peak_in_fds;
};

/**
 * bridge_conn_new() - a new, inactive connection
 * @creds:      taken on success (pidfd, groups, seclabel now belong to the connection)
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_conn_new(Bus *bus, BridgeCreds *creds, unsigned flags, const BridgeConnOps *ops,
                    void *userdata, BridgeConn **ret);
BridgeConn *bridge_conn_ref(BridgeConn *conn);
BridgeConn *bridge_conn_unref(BridgeConn *conn);
DEFINE_CLEANUP(BridgeConn *, bridge_conn_unref);

/* Activate: assign the id and unique name, link into the bus, notify conn_added.
 * Return: 0, -ENOMEM, BRIDGE_E_CONN_QUOTA (max_connections_per_user active ones already),
 * BRIDGE_E_ALREADY_ACTIVE. */
int bridge_conn_hello(BridgeConn *conn);

/*
 * Deactivate (idempotent): release every name (name_changed each), fail replies owed to
 * others (reply_lost), drop this conn's pending calls, free its matches, flush its queue,
 * notify conn_removed. The memory lives while references remain.
 */
void bridge_conn_disconnect(BridgeConn *conn);

/**
 * bridge_conn_send() - route a message from @sender
 *
 * Unicast (a destination set): to the destination's queue, tracking a pending reply for
 * method calls that expect one; replies (method return, error) pass only if they answer a
 * pending call of the destination to @sender. Broadcast (signal without destination): to
 * every active connection with a matching rule (bloom prefilter, then the exact rule),
 * once each; a broadcast never fails for the sender.
 * Messages to the driver ("org.freedesktop.DBus") must not come here; nor should other
 * messages without destination (dbus-daemon's driver answers a method call without
 * destination with UnknownMethod): here they reach only eavesdroppers.
 *
 * Return: 0, -ENOMEM, or BRIDGE_E_NAME_UNKNOWN, BRIDGE_E_PEER_UNKNOWN, BRIDGE_E_QUOTA,
 * BRIDGE_E_FDS_REFUSED, BRIDGE_E_REPLY_UNEXPECTED, BRIDGE_E_REPLIES_QUOTA, BRIDGE_E_NOT_ACTIVE,
 * BRIDGE_E_BAD_BODY (a native memfd body a legacy receiver would get is invalid),
 * BRIDGE_E_FDS_QUOTA (a native receiver's per-user fd quota). The queue limits apply per
 * (receiver, sending account): bridge/quota.h.
 */
int bridge_conn_send(BridgeConn *sender, BridgeMsg *msg);

/*
 * As bridge_conn_send(), for a method return or error whose reply slot the caller has just
 * looked up (bus_find_reply(bus, destination's connection, @sender, reply serial), with
 * nothing changed since): @slot is taken for it instead of a second lookup (a slot that
 * is not that one is ignored, the lookup made).
 */
int bridge_conn_send_answer(BridgeConn *sender, BridgeMsg *msg, BridgeReply *slot);

/*
 * Offer @msg (a call the driver handled) to every connection's eavesdrop rules, @sender's
 * own included, as dbus-daemon does after its driver answered. Return: 0 or -ENOMEM.
 */
int bridge_conn_eavesdrop(BridgeConn *sender, BridgeMsg *msg);

/* Queue a message the bus itself sends (driver replies, signals) to @dst, bypassing reply
 * tracking. Return: 0, -ENOMEM, BRIDGE_E_QUOTA, BRIDGE_E_NOT_ACTIVE. */
int bridge_conn_queue_msg(BridgeConn *dst, BridgeMsg *msg);

/* Broadcast a message the bus itself sends (NameOwnerChanged, ...) through match rules.
 * Never fails for the sender except with -ENOMEM. */
int bus_broadcast(Bus *bus, BridgeMsg *msg);

/* Whether bus_broadcast() could deliver anything: a monitor, or a connection with a match
 * rule. Without one a broadcast of the bus need not be built at all. */
bool bus_broadcast_has_audience(const Bus *bus);

/* What a queued @msg counts in queued_bytes and against max_outgoing_bytes: the memory
 * the bus holds for it (struct, buffer, queue entry), not only its wire size. */
size_t bridge_conn_queue_cost(const BridgeMsg *msg);
/* A new pidfd of @conn's process (creds.pidfd duplicated, or the transport's get_pidfd).
 * Return: the fd, or a negative errno (-ENOENT: none to be had). */
int bridge_conn_get_pidfd(const BridgeConn *conn);
/* The oldest queued message, or NULL. The transport writes it, then pops it. */
BridgeMsg *bridge_conn_queue_peek(BridgeConn *conn);
void bridge_conn_queue_pop(BridgeConn *conn);
/* Pop the oldest message, its reference going to the caller; NULL if none. */
BridgeMsg *bridge_conn_queue_take(BridgeConn *conn);

/* The credentials the bus shows of @conn to others (the driver's GetConnectionUnixUser,
 * ...ProcessID, ...Credentials): BridgeConnOps.shown_creds, else its own. A shallow copy:
 * the pointers stay @conn's. */
bool bridge_conn_shown_creds(const BridgeConn *conn, BridgeCreds *ret);

/* Does @conn's transport ask for kdbus's behaviour @rule (BRIDGE_RULE_*)? */
static inline bool bridge_conn_has_rule(const BridgeConn *conn, unsigned rule) {
        return conn->ops && (conn->ops->rules & rule);
}

static inline bool bridge_conn_is_active(const BridgeConn *conn) {
        return conn && conn->active;
}

/* Active and an ordinary connection: listed, announced, addressable (not a monitor or an
 * activator, which kdbus keeps out of LIST and the id table). */
static inline bool bridge_conn_is_visible(const BridgeConn *conn) {
        return conn && conn->active &&
               !(conn->flags & (BRIDGE_CONN_MONITOR | BRIDGE_CONN_ACTIVATOR));
}

/* Not a monitor or an activator (active or not): its hello and its going are announced. */
static inline bool bridge_conn_is_visible_kind(const BridgeConn *conn) {
        return !(conn->flags & (BRIDGE_CONN_MONITOR | BRIDGE_CONN_ACTIVATOR));
}

/* Never said hello (ids are given at hello, so it was never disconnected either): the bus
 * may still answer it, as dbus-daemon answers what a client sends before Hello. */
static inline bool bridge_conn_is_unregistered(const BridgeConn *conn) {
        return conn && !conn->active && conn->id == 0;
}
