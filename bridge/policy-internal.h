/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The inside of PolicyDb and PolicySnapshot, shared by policy.c (evaluation) and
 * policy-text.c (dumps, AccessDenied texts, binding to the bus). Nothing else includes it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "bridge/policy.h"
#include "util/hash-table.h"
#include "wire/message.h"
#include "wire/protocol.h"

/* A message field that is present but named by no rule of the db. Rule ids 0 mean "any",
 * message ids 0 mean "absent". */
#define POLICY_ID_UNKNOWN UINT32_MAX

typedef struct PolicyString {
        HashNode node;                  /* PolicyDb.strings, hash_string(str) */
        HashNode fast_node;             /* PolicyDb.fast_strings, policy_hash_fast(str) */
        uint32_t id;                    /* >= 1 */
        char str[];
} PolicyString;

/* One rule; strings are interned ids (0: any). */
typedef struct PolicyRule {
        PolicyContext context;
        uint32_t context_id;            /* uid / gid for USER / GROUP contexts */
        PolicyRuleKind kind;
        bool allow;
        bool name_is_prefix;
        bool requested_reply;
        bool eavesdrop;
        bool log;
        bool any_id;                    /* USER/GROUP rules: "*" */
        uint8_t msg_type;
        PolicyTristate broadcast;
        uint32_t name;
        uint32_t interface;
        uint32_t member;
        uint32_t error;
        uint32_t path;
        const char *name_str;           /* the interned name, NULL: any */
        uint32_t min_fds;
        uint32_t max_fds;
        uint32_t id;                    /* USER/GROUP rules: uid / gid */
        const char *file;               /* interned; NULL: unknown */
        unsigned line;
} PolicyRule;

struct PolicyDb {
        unsigned n_refs;
        bool sealed;
        bool names_unique;              /* some rule names a unique name (":1.5") */
        bool console_rules;             /* some rule is in an at_console context */
        HashTable strings;              /* PolicyString, by siphash: the name registry's hash,
                                         * so an owned name is looked up without hashing */
        HashTable fast_strings;         /* PolicyString, by FNV-1a: message fields are hashed
                                         * per message; the keys come from the configuration
                                         * and are never inserted by peers, so an unkeyed hash
                                         * cannot be flooded */
        PolicyString **by_id;           /* [1 .. n_strings] */
        size_t n_strings;
        PolicyRule *rules;              /* in the order they were added */
        size_t n_rules;
        size_t n_alloc;
        /* the rule sets compiled for the credentials seen so far, shared by the snapshots
         * of every peer with the same ones (a user's many connections): the one part of a
         * sealed db that changes, a cache (one thread); a reference each, dropped with the
         * db or when a newer entry takes the slot (POLICY_COMPILED_KEEP, round robin) */
        struct PolicyCompiled *compiled[POLICY_COMPILED_KEEP];
        unsigned n_compiled, next_compiled;
};

typedef struct PolicyEntry {
        uint32_t name;                  /* the rule's name id */
        uint32_t prio;                  /* its position in PolicyKindSet.all */
        const PolicyRule *rule;
} PolicyEntry;

/* The rules of one kind that apply to a peer, in evaluation order, plus the name index. */
typedef struct PolicyKindSet {
        const PolicyRule **all;         /* position = priority; the last match wins */
        size_t n_all;
        uint32_t *generic[_WIRE_MSG_N]; /* per message type (0: other types), the positions
                                         * of the rules without an exact name that can match
                                         * that type, ascending */
        size_t n_generic[_WIRE_MSG_N];
        PolicyEntry *named;             /* rules with an exact name, by (name, prio) */
        size_t n_named;
        bool peer_free;                 /* no rule names a peer (exact or prefix): a check
                                         * does not depend on the other end's names */
        const PolicyRule *last_any;     /* the last rule, when it is an <allow> that names
                                         * nothing (session.conf's): see policy_last_allows() */
} PolicyKindSet;

/* The rules that apply to one set of credentials, in evaluation order: what a snapshot
 * checks against. Compiled once per db and credentials (PolicyDb.compiled); it points into
 * its db's rules and lives no longer than the db (the db's cache and the snapshots, which
 * hold the db, keep it). */
typedef struct PolicyCompiled {
        unsigned n_refs;
        uid_t uid;
        gid_t *gids;
        size_t n_gids;
        bool at_console;
        PolicyKindSet send;
        PolicyKindSet receive;
        PolicyKindSet own;
} PolicyCompiled;

/*
 * Does @set's last rule allow this check without looking at anything else? The last
 * matching rule decides, and the last rule of all is an <allow> naming no destination,
 * sender, interface, member, error, path, type, broadcast or fd count (kind_set_build()):
 * it matches every message but for its two flags (rule_matches()): an unrequested reply
 * needs requested_reply="false" or eavesdrop="true", an eavesdropped copy eavesdrop="true".
 * Any rule after it (a deny, an at_console or mandatory context) makes it not the last.
 * So a session bus decides each check in a few instructions (issue #16).
 */
static inline bool policy_last_allows(const PolicyKindSet *set, const WireHeader *h,
                                      bool requested_reply, bool eavesdropping) {
        const PolicyRule *u = set->last_any;

        return u && (u->eavesdrop || ((!h->reply_serial || requested_reply ||
                                       !u->requested_reply) && !eavesdropping));
}

/* One peer's: its credentials' compiled rules (whose key, uid, groups and console state,
 * is the peer's), and what is its own (pid, command line, texts). */
struct PolicySnapshot {
        PolicyDb *db;                   /* one reference */
        PolicyCompiled *rules;          /* one reference; the same for the same credentials */
        bool console_known;             /* rules->at_console was asked (or given) */
        bool comm_known;                /* comm was read (or given) */
        const PolicyPeerFacts *facts;   /* NULL: everything was given */
        pid_t pid;
        char comm[POLICY_COMM_MAX + 1]; /* "": none */
        /* "uid=%u pid=%u comm=\"%s\"", made by policy_snapshot_get_loginfo(); "": not yet */
        char loginfo[sizeof("uid=4294967295 pid=4294967295 comm=\"\"") + POLICY_COMM_MAX];
        char *denial;                   /* the last AccessDenied text for this peer */
};
int policy_snapshot_rebase(const PolicySnapshot *old, PolicyDb *db, PolicySnapshot **ret);
/* Were @a and @b built from the same db for the same uid, groups and console state (so
 * their rule sets, and every check against them, are the same)? */
bool policy_snapshots_equivalent(const PolicySnapshot *a, const PolicySnapshot *b);
