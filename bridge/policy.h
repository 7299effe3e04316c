/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Policy: dbus-daemon's allow/deny rules, compiled and evaluated in the core, front-end
 * neutral (the classic front end and the native kdbus front end use the same checks).
 *
 * Three objects:
 *  - PolicyDb: every rule of one configuration, built with policy_db_add_rule() (by
 *    policy-xml/compile.c or a test), then sealed: immutable and ref-counted from then on.
 *    A reload builds a new db and swaps the bus's pointer; nothing is changed in place.
 *  - PolicySnapshot: what applies to one connection, taken when it connects (uid, groups
 *    and at_console resolved once): the rule lists of the contexts default, group (each of
 *    the peer's groups, in the order given), user, at_console (true or false) and
 *    mandatory, concatenated in that order. Last match wins over that concatenation, as in
 *    dbus-daemon. The snapshot keeps a reference to its db.
 *  - PolicyMsgInfo: the facts about one message a check needs (its interned strings),
 *    computed once per message and reused for every receiver of a broadcast.
 *
 * Cost: strings in rules are interned once per db. A message's interface, member, error
 * name and path are looked up once (one hash each, only when some rule uses that kind of
 * attribute) and rules then compare integers. Rules naming a destination/sender are indexed
 * by that name: a send check looks up each name the receiver owns in that index (reusing
 * the hash the name registry stored), instead of walking every rule.
 *
 * A bus without a PolicyDb (Bus.policy == NULL) makes no check at all: dbus-daemon's
 * session.conf allows everything, and no policy costs nothing.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/macro.h"

typedef struct BridgeConn BridgeConn;
typedef struct BridgeMsg BridgeMsg;
typedef struct PolicyDb PolicyDb;
typedef struct PolicySnapshot PolicySnapshot;

enum {
        _POLICY_E_SUCCESS,
        POLICY_E_ACCESS_DENIED,         /* a rule denies (or none allows); compat maps it to
                                         * org.freedesktop.DBus.Error.AccessDenied */
        _POLICY_E_N,
};

/* Where a rule sits; evaluation order is this enum's order (default first, mandatory last). */
typedef enum PolicyContext {
        POLICY_CONTEXT_DEFAULT,         /* <policy context="default"> */
        POLICY_CONTEXT_GROUP,           /* <policy group="...">: @context_id is the gid */
        POLICY_CONTEXT_USER,            /* <policy user="...">: @context_id is the uid */
        POLICY_CONTEXT_AT_CONSOLE,      /* <policy at_console="true"> */
        POLICY_CONTEXT_NOT_AT_CONSOLE,  /* <policy at_console="false"> */
        POLICY_CONTEXT_MANDATORY,       /* <policy context="mandatory"> */
        _POLICY_CONTEXT_N,
} PolicyContext;

typedef enum PolicyRuleKind {
        POLICY_RULE_SEND,               /* send_* (and eavesdrop=) */
        POLICY_RULE_RECEIVE,            /* receive_* (or eavesdrop= alone) */
        POLICY_RULE_OWN,                /* own= / own_prefix= */
        POLICY_RULE_USER,               /* user=: may connect (default/mandatory only count) */
        POLICY_RULE_GROUP,              /* group=: may connect */
        _POLICY_RULE_KIND_N,
} PolicyRuleKind;

typedef enum PolicyTristate {
        POLICY_ANY,                     /* attribute absent */
        POLICY_FALSE,
        POLICY_TRUE,
} PolicyTristate;

/**
 * struct PolicyRuleSpec - one <allow>/<deny> as the compiler hands it over
 * @allow:              <allow> or <deny>
 * @kind:               what the rule is about
 * @name:               send_destination / receive_sender / own; NULL: any ("*" is folded
 *                      to NULL by the compiler)
 * @name_is_prefix:     @name came from send_destination_prefix / own_prefix: matches the
 *                      name itself and every name below it ("a.b" matches "a.b.c")
 * @interface:          send_/receive_interface; NULL: any
 * @member:             send_/receive_member; NULL: any
 * @error:              send_/receive_error; NULL: any
 * @path:               send_/receive_path; NULL: any
 * @msg_type:           send_/receive_type as a WireMsgType; 0: any
 * @broadcast:          send_broadcast (SEND only)
 * @requested_reply:    send_/receive_requested_reply, the default already applied
 *                      (dbus-daemon: true for <allow>, false for <deny>)
 * @eavesdrop:          eavesdrop= (false when absent)
 * @log:                log="true"
 * @min_fds:            min_fds (0 when absent)
 * @max_fds:            max_fds (UINT32_MAX when absent)
 * @any_id:             USER/GROUP: user="*" / group="*"
 * @id:                 USER/GROUP: the uid / gid
 * @file:               where the rule was written, for dumps and debugging (borrowed;
 *                      copied into the db); may be NULL
 * @line:               its line
 *
 * Strings are borrowed and copied (interned) by policy_db_add_rule().
 */
typedef struct PolicyRuleSpec {
        bool allow;
        PolicyRuleKind kind;
        const char *name;
        bool name_is_prefix;
        const char *interface;
        const char *member;
        const char *error;
        const char *path;
        uint8_t msg_type;
        PolicyTristate broadcast;
        bool requested_reply;
        bool eavesdrop;
        bool log;
        uint32_t min_fds;
        uint32_t max_fds;
        bool any_id;
        uint32_t id;
        const char *file;
        unsigned line;
} PolicyRuleSpec;

#define POLICY_RULE_SPEC_NULL(s) { .max_fds = UINT32_MAX }

/* ---- the database ---- */

/* A new, empty, unsealed db. Return: 0 or -ENOMEM. */
int policy_db_new(PolicyDb **ret);
PolicyDb *policy_db_ref(PolicyDb *db);
PolicyDb *policy_db_unref(PolicyDb *db);
DEFINE_CLEANUP(PolicyDb *, policy_db_unref);

/*
 * Append a rule to @context (for GROUP/USER: the one of gid/uid @context_id). Rules of one
 * context keep the order they are added in (document order). Return: 0, -ENOMEM, or
 * -EINVAL (sealed db, bad kind/context: a bug of the caller).
 */
int policy_db_add_rule(PolicyDb *db, PolicyContext context, uint32_t context_id,
                       const PolicyRuleSpec *spec);
/* Freeze: build the indexes. After this the db is immutable. Return: 0 or -ENOMEM. */
int policy_db_seal(PolicyDb *db);
/* How many rules the db holds (all contexts). */
size_t policy_db_count_rules(const PolicyDb *db);
/*
 * A canonical text of the db (contexts in evaluation order, rules in order, one line each,
 * without file:line): two configurations that mean the same give the same text.
 * Return: 0 or -ENOMEM.
 */
int policy_db_dump(const PolicyDb *db, char **ret_text);

/*
 * May a peer with @uid and @gids connect? dbus-daemon: the user the bus runs as
 * (@bus_uid) may by default, everybody else may not; then the user=/group= rules of the
 * default and then the mandatory context decide, last match wins (user/group rules in
 * other contexts do not count). Return: 0 or POLICY_E_ACCESS_DENIED.
 */
int policy_db_check_connect(const PolicyDb *db, uid_t uid, const gid_t *gids, size_t n_gids,
                            uid_t bus_uid);

/* ---- per connection ---- */

/*
 * struct PolicyPeerFacts - what the front end learns of a peer only when it is needed
 * @uid_at_console:     does @uid have a local seat (dbus-daemon's at_console)? Asked when
 *                      a db with at_console rules is first resolved for the peer (at
 *                      connect, or at the reload that brings such rules), never for a db
 *                      without: most configurations have none, and the answer costs a
 *                      system call (issue #16: connection churn)
 * @read_comm:          the process's command line as dbus-daemon shows it (at most
 *                      @size - 1 bytes, "" if unknown), asked when a text first shows
 *                      it (policy_snapshot_get_loginfo()), not at connect: dbus-daemon
 *                      reads it at connect, so a process that exec()ed since shows its new
 *                      command line here, one that is gone shows none
 * Either may be NULL (the PolicyPeer's value is taken).
 */
typedef struct PolicyPeerFacts {
        bool (*uid_at_console)(uid_t uid);
        void (*read_comm)(pid_t pid, char *buf, size_t size);
} PolicyPeerFacts;

/* dbus-daemon shows at most this many bytes of a peer's command line in its log and in
 * AccessDenied texts (comm="..."); clients compare those texts, so we cut at the same place. */
#define POLICY_COMM_MAX 50u

/**
 * struct PolicyPeer - who connected, as the front end learned it at connect time
 * @uid:        SO_PEERCRED uid
 * @gids:       every group (primary and supplementary), in the order group rules apply
 * @n_gids:     how many
 * @at_console: the user has a local seat (without @facts->uid_at_console)
 * @pid:        for AccessDenied texts (0: unknown)
 * @comm:       for AccessDenied texts: the process's command line as dbus-daemon shows it
 *              (NULL: left out, or read later by @facts->read_comm); copied, cut at
 *              POLICY_COMM_MAX bytes
 * @facts:      how to learn at_console and the command line when needed (NULL: as given);
 *              kept by the snapshot (static storage)
 */
typedef struct PolicyPeer {
        uid_t uid;
        const gid_t *gids;
        size_t n_gids;
        bool at_console;
        pid_t pid;
        const char *comm;
        const PolicyPeerFacts *facts;
} PolicyPeer;

/* Resolve @db for @peer (takes a reference on @db). Return: 0 or -ENOMEM. */
int policy_snapshot_new(PolicyDb *db, const PolicyPeer *peer, PolicySnapshot **ret);
PolicySnapshot *policy_snapshot_free(PolicySnapshot *snapshot);
DEFINE_CLEANUP(PolicySnapshot *, policy_snapshot_free);
const PolicyDb *policy_snapshot_get_db(const PolicySnapshot *snapshot);
/* Snapshots of peers with the same uid, groups and at_console share their compiled rules;
 * a db keeps the last this many sets compiled (a reference each). */
#define POLICY_COMPILED_KEEP 32u
bool policy_snapshot_same_rules(const PolicySnapshot *a, const PolicySnapshot *b);
/* "uid=N pid=N comm=\"...\"", as dbus-daemon describes a peer, made when first asked
 * (the command line read then, see PolicyPeerFacts). Never NULL. */
const char *policy_snapshot_get_loginfo(PolicySnapshot *snapshot);
/* Does @db have at_console rules (true or false)? Without, the console state of a peer
 * changes nothing and is not asked. */
bool policy_db_has_console_rules(const PolicyDb *db);

/* May the connection own (or queue for) @name? Return: 0 or POLICY_E_ACCESS_DENIED. */
int policy_check_own(const PolicySnapshot *snapshot, const char *name);

/* ---- per message ---- */

/**
 * struct PolicyMsgInfo - a message's facts as the rules of one db see them
 *
 * Set up by policy_msg_info_init(); valid for that db and message only. Opaque fields: the
 * checks fill them lazily (so the checks take it non-const).
 */
typedef struct PolicyMsgInfo {
        const PolicyDb *db;
        const BridgeMsg *msg;
        unsigned resolved;              /* bit n: id[n] was looked up */
        uint32_t id[6];                 /* interned ids of interface, member, error name, path,
                                         * destination, sender; looked up when a rule needs them */
        /* the last verdicts of bridge_policy_check_copy() for this message, which the other
         * receivers of a broadcast mostly share (policy-route.c) */
        const struct PolicySnapshot *memo_send;  /* a sender's snapshot, NULL: none */
        const struct PolicySnapshot *memo_recv;  /* a receiver's snapshot, NULL: none */
        const BridgeConn *memo_recv_sender;
        uint8_t memo_send_flags, memo_recv_flags; /* COPY_* the verdicts were made with */
        bool memo_send_denied, memo_recv_denied;
} PolicyMsgInfo;

void policy_msg_info_init(PolicyMsgInfo *info, const PolicyDb *db, const BridgeMsg *msg);

/**
 * struct PolicyVerdict - why a check decided as it did (for the AccessDenied text and
 * the log= attribute)
 * @n_matched:  how many rules matched (dbus-daemon's "N matched rules"); counted only when
 *              the check denies (0 when it allows: counting needs a walk over every rule)
 * @log:        the deciding rule had log="true"
 */
typedef struct PolicyVerdict {
        unsigned n_matched;
        bool log;
} PolicyVerdict;

/*
 * May @sender_policy's connection send @info's message to @receiver (NULL: the bus driver;
 * then send_destination compares with the message's DESTINATION)? @requested_reply: the
 * message is a reply to a pending call of the receiver. Return: 0 or POLICY_E_ACCESS_DENIED;
 * *ret_verdict (may be NULL) is written either way.
 */
int policy_check_send(const PolicySnapshot *sender_policy, PolicyMsgInfo *info,
                      const BridgeConn *receiver, bool requested_reply,
                      PolicyVerdict *ret_verdict);
/*
 * May @receiver_policy's connection receive @info's message from @sender (NULL: the bus)?
 * @eavesdropping: the receiver is not the addressed recipient of a message that has one.
 * Return: 0 or POLICY_E_ACCESS_DENIED; *ret_verdict (may be NULL) is written either way.
 */
int policy_check_receive(const PolicySnapshot *receiver_policy, PolicyMsgInfo *info,
                         const BridgeConn *sender, bool requested_reply, bool eavesdropping,
                         PolicyVerdict *ret_verdict);

/*
 * dbus-daemon's AccessDenied text for a denied send (@send) or receive:
 * "Rejected send message, N matched rules; type=\"method_call\", sender=\":1.2\" (uid=...
 * pid=... comm=\"...\") interface=\"...\" member=\"...\" error name=\"(unset)\"
 * requested_reply=\"0\" destination=\"...\" (uid=... | bus)". @sender/@receiver NULL: the
 * bus. Return: 0 or -ENOMEM.
 */
int policy_format_denial(bool send, const PolicyVerdict *verdict, const BridgeMsg *msg,
                         const BridgeConn *sender, const BridgeConn *receiver,
                         bool requested_reply, char **ret_text);
/* "Connection \":1.5\" is not allowed to own the service \"NAME\" due to security policies
 * in the configuration file". Return: 0 or -ENOMEM. */
int policy_format_own_denial(const BridgeConn *conn, const char *name, char **ret_text);

/* ---- binding to the bus and its connections ---- */

/*
 * Give @conn its snapshot (taken; the previous one is freed). The front end calls this
 * before bridge_conn_hello() whenever the bus has a policy. A connection without a
 * snapshot is not checked (and neither are messages to it), so a bus without a policy
 * costs nothing.
 */
void bridge_conn_set_policy(BridgeConn *conn, PolicySnapshot *snapshot);

typedef struct Bus Bus;
/*
 * Install @db (a reference is taken; NULL: no policy) and re-resolve every connection's
 * snapshot against it with the peer facts it was made from. All or nothing: on -ENOMEM the
 * old db and snapshots stay. Return: 0 or -ENOMEM.
 */
int bus_set_policy(Bus *bus, PolicyDb *db);

/* ---- what bridge routing calls (bridge/policy-route.c) ---- */

/*
 * A unicast from @sender to its addressed recipient @dst: the sender's send check, then
 * @dst's receive check. Return: 0, or BRIDGE_E_ACCESS_DENIED with the text for the sender
 * kept until its next denial (bridge_conn_get_denial()), or -ENOMEM.
 */
int bridge_policy_check_unicast(BridgeConn *sender, const BridgeConn *dst,
                                const BridgeMsg *msg, bool requested_reply);
/*
 * A copy of @msg for @receiver that nobody asks an answer for (a broadcast, an eavesdropped
 * message, a message of the bus itself when @sender is NULL): may the sender send it to
 * @receiver and @receiver receive it? @info caches the message's facts across receivers:
 * zero it (PolicyMsgInfo info = {}) before the first call for a message. A denied copy is
 * dropped without an answer to anyone, but, as dbus-daemon 1.14.10 does, monitors are
 * shown the AccessDenied error it would have answered (BusNotifyOps.copy_denied).
 * Return: 0 (allowed), 1 (denied), or -ENOMEM.
 */
int bridge_policy_check_copy(PolicyMsgInfo *info, const BridgeConn *sender,
                             const BridgeConn *receiver, const BridgeMsg *msg,
                             bool requested_reply, bool eavesdropping);
/* A message to the bus driver (send rules only; send_destination compares with DESTINATION).
 * Return: 0, BRIDGE_E_ACCESS_DENIED (text: bridge_conn_get_denial()), or -ENOMEM. */
int bridge_policy_check_driver(BridgeConn *sender, const BridgeMsg *msg);
/* May @conn own @name? Return: 0, or NAME_E_ACCESS_DENIED (text: bridge_conn_get_denial()),
 * or -ENOMEM. */
int bridge_policy_check_own(BridgeConn *conn, const char *name);
/* The text of @conn's last AccessDenied (send, receive or own), or NULL. */
const char *bridge_conn_get_denial(const BridgeConn *conn);
