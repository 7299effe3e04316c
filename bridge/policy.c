/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy database, per-connection snapshots and the checks (see bridge/policy.h).
 *
 * Semantics (dbus-daemon(1) "<policy>", checked against dbus-daemon 1.14.10):
 *  - A snapshot concatenates the contexts default, group (each of the peer's groups in the
 *    order given), user, at_console (true or false), mandatory. For each check the LAST
 *    matching rule of that kind decides; no match denies send, receive and own.
 *  - Absent attributes match anything. A rule's path/member/error also match a message
 *    that lacks that field; a rule's interface matches a message without interface only
 *    if the rule is a <deny> (an allow must not open messages that have no interface).
 *  - send_destination matches when the receiver owns the name, as primary owner or queued
 *    (or it is the receiver's unique name); for the bus driver (no receiver) it compares
 *    with the message's DESTINATION. receive_sender does the same for the sender.
 *    *_prefix matches the name and every name below it ("a.b" -> "a.b", "a.b.c").
 *  - Replies (a message with REPLY_SERIAL): an <allow> with requested_reply true (the
 *    default) ignores unrequested replies unless it has eavesdrop="true"; a <deny> with
 *    requested_reply false (the default) ignores requested replies.
 *  - Receive: an <allow> without eavesdrop="true" does not apply while eavesdropping; a
 *    <deny eavesdrop="true"> applies only while eavesdropping.
 *
 * Speed: the last match is the match with the highest position. A snapshot keeps, per
 * kind, the rules that name no exact destination/sender ("generic", scanned from the end)
 * and the rules that do, sorted by (name id, position): per message, each name the peer
 * owns is looked up in the db's string table (reusing the hash the name registry stored)
 * and only that name's rules are looked at, from the end, stopping below the best match so
 * far. Strings in rules are interned to ids, so rules compare integers. Only a denial
 * walks every rule once more, to count matches for the AccessDenied text.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/policy-internal.h"
#include "bridge/policy.h"
#include "util/error.h"
#include "util/siphash24.h"
#include "wire/protocol.h"

/* ---- strings ---- */

static const PolicyString *db_find_string(const PolicyDb *db, uint64_t hash, const char *s) {
        HashNode *n;

        for (n = hash_table_lookup(&db->strings, hash); n; n = hash_node_next_match(n)) {
                PolicyString *ps = container_of(n, PolicyString, node);

                if (strcmp(ps->str, s) == 0)
                        return ps;
        }
        return NULL;
}

static uint64_t policy_hash_fast(const char *s) {
        uint64_t h = 0xcbf29ce484222325ull;

        for (; *s; ++s)
                h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
        return h;
}

/* Message-side id: 0 when @s is NULL (absent), POLICY_ID_UNKNOWN when no rule names it. */
static uint32_t db_lookup_id(const PolicyDb *db, const char *s) {
        HashNode *n;

        if (!s)
                return 0;
        for (n = hash_table_lookup(&db->fast_strings, policy_hash_fast(s)); n;
             n = hash_node_next_match(n)) {
                PolicyString *ps = container_of(n, PolicyString, fast_node);

                if (strcmp(ps->str, s) == 0)
                        return ps->id;
        }
        return POLICY_ID_UNKNOWN;
}

/* Intern @s; *ret_id 0 for NULL. Return: 0 or -ENOMEM. */
static int db_intern(PolicyDb *db, const char *s, uint32_t *ret_id, const char **ret_str) {
        const PolicyString *found;
        PolicyString *ps, **by_id;
        uint64_t hash;
        size_t len;
        int r;

        if (!s) {
                *ret_id = 0;
                if (ret_str)
                        *ret_str = NULL;
                return 0;
        }
        hash = hash_string(s);
        found = db_find_string(db, hash, s);
        if (!found) {
                by_id = realloc(db->by_id, (db->n_strings + 2) * sizeof(*by_id));
                if (!by_id)
                        return error_origin(-ENOMEM);
                db->by_id = by_id;
                len = strlen(s);
                ps = malloc(sizeof(*ps) + len + 1);
                if (!ps)
                        return error_origin(-ENOMEM);
                memcpy(ps->str, s, len + 1);
                ps->id = (uint32_t)db->n_strings + 1;
                r = hash_table_insert(&db->strings, &ps->node, hash);
                if (r < 0) {
                        free(ps);
                        return error_trace(r);
                }
                r = hash_table_insert(&db->fast_strings, &ps->fast_node, policy_hash_fast(s));
                if (r < 0) {
                        hash_table_remove(&db->strings, &ps->node);
                        free(ps);
                        return error_trace(r);
                }
                db->by_id[ps->id] = ps;
                ++db->n_strings;
                found = ps;
        }
        *ret_id = found->id;
        if (ret_str)
                *ret_str = found->str;
        return 0;
}

/* ---- the database ---- */

/**
 * policy_db_new() - a new, empty, unsealed db
 * @ret:        one reference
 *
 * Return: 0 or -ENOMEM.
 */
int policy_db_new(PolicyDb **ret) {
        PolicyDb *db = calloc(1, sizeof(*db));

        if (!db)
                return error_origin(-ENOMEM);
        db->n_refs = 1;
        *ret = db;
        return 0;
}

/**
 * policy_db_ref() - take a reference
 * @db:         the db or NULL
 *
 * Return: @db.
 */
PolicyDb *policy_db_ref(PolicyDb *db) {
        if (db)
                ++db->n_refs;
        return db;
}

static struct PolicyCompiled *policy_compiled_unref(struct PolicyCompiled *c);

/**
 * policy_db_unref() - drop a reference; the last one frees
 * @db:         the db or NULL
 *
 * Return: NULL.
 */
PolicyDb *policy_db_unref(PolicyDb *db) {
        HashNode *n, *tmp;
        size_t i;

        if (!db || --db->n_refs > 0)
                return NULL;
        for (i = 0; i < db->n_compiled; ++i)
                policy_compiled_unref(db->compiled[i]);
        hash_table_for_each(n, tmp, &db->strings, i)
                free(container_of(n, PolicyString, node));
        hash_table_deinit(&db->strings);
        hash_table_deinit(&db->fast_strings);
        free(db->by_id);
        free(db->rules);
        free(db);
        return NULL;
}

/**
 * policy_db_add_rule() - append a rule to a context
 * @db:         an unsealed db
 * @context:    where the rule was written
 * @context_id: the uid (USER) or gid (GROUP); ignored otherwise
 * @spec:       the rule; its strings are interned (copied)
 *
 * Return: 0, -ENOMEM, or -EINVAL (sealed db, bad context or kind: a bug of the caller).
 */
int policy_db_add_rule(PolicyDb *db, PolicyContext context, uint32_t context_id,
                       const PolicyRuleSpec *spec) {
        PolicyRule rule = {}, *rules;
        int r;

        if (db->sealed || (unsigned)context >= _POLICY_CONTEXT_N ||
            (unsigned)spec->kind >= _POLICY_RULE_KIND_N)
                return error_origin(-EINVAL);

        rule.context = context;
        rule.context_id = (context == POLICY_CONTEXT_USER || context == POLICY_CONTEXT_GROUP) ?
                          context_id : 0;
        rule.kind = spec->kind;
        rule.allow = spec->allow;
        rule.name_is_prefix = spec->name && spec->name_is_prefix;
        rule.requested_reply = spec->requested_reply;
        rule.eavesdrop = spec->eavesdrop;
        rule.log = spec->log;
        rule.any_id = spec->any_id;
        rule.id = spec->id;
        rule.msg_type = spec->msg_type;
        rule.broadcast = spec->broadcast;
        rule.min_fds = spec->min_fds;
        rule.max_fds = spec->max_fds;
        rule.line = spec->line;

        r = db_intern(db, spec->name, &rule.name, &rule.name_str);
        if (r == 0)
                r = db_intern(db, spec->interface, &rule.interface, NULL);
        if (r == 0)
                r = db_intern(db, spec->member, &rule.member, NULL);
        if (r == 0)
                r = db_intern(db, spec->error, &rule.error, NULL);
        if (r == 0)
                r = db_intern(db, spec->path, &rule.path, NULL);
        if (r == 0)
                r = db_intern(db, spec->file, &(uint32_t){ 0 }, &rule.file);
        if (r < 0)
                return error_trace(r);

        if (db->n_rules == db->n_alloc) {
                size_t n = db->n_alloc ? db->n_alloc * 2 : 16;

                rules = realloc(db->rules, n * sizeof(*rules));
                if (!rules)
                        return error_origin(-ENOMEM);
                db->rules = rules;
                db->n_alloc = n;
        }
        db->rules[db->n_rules++] = rule;
        return 0;
}

/**
 * policy_db_seal() - freeze the db
 * @db:         the db; sealing twice is harmless
 *
 * Return: 0.
 */
int policy_db_seal(PolicyDb *db) {
        size_t i;

        for (i = 0; i < db->n_rules; ++i) {
                if (db->rules[i].name_str && db->rules[i].name_str[0] == ':')
                        db->names_unique = true;
                if (db->rules[i].context == POLICY_CONTEXT_AT_CONSOLE ||
                    db->rules[i].context == POLICY_CONTEXT_NOT_AT_CONSOLE)
                        db->console_rules = true;
        }
        db->sealed = true;
        return 0;
}

/**
 * policy_db_has_console_rules() - does the console state of a peer matter?
 * @db:         a sealed db
 *
 * Return: true if some rule is in an at_console="true" or "false" context.
 */
bool policy_db_has_console_rules(const PolicyDb *db) {
        return db->console_rules;
}

/**
 * policy_db_count_rules() - how many rules, all contexts
 * @db:         the db
 *
 * Return: the count.
 */
size_t policy_db_count_rules(const PolicyDb *db) {
        return db->n_rules;
}

static bool gids_contain(const gid_t *gids, size_t n, uint32_t gid) {
        size_t i;

        for (i = 0; i < n; ++i)
                if (gids[i] == gid)
                        return true;
        return false;
}

/**
 * policy_db_check_connect() - may this peer connect?
 * @db:         the db
 * @uid:        the peer's uid
 * @gids:       its groups
 * @n_gids:     how many
 * @bus_uid:    the uid the bus runs as (allowed unless a rule says otherwise)
 *
 * Return: 0 or POLICY_E_ACCESS_DENIED.
 */
int policy_db_check_connect(const PolicyDb *db, uid_t uid, const gid_t *gids, size_t n_gids,
                            uid_t bus_uid) {
        static const PolicyContext order[] = { POLICY_CONTEXT_DEFAULT, POLICY_CONTEXT_MANDATORY };
        bool allowed = uid == bus_uid;
        size_t c, i;

        for (c = 0; c < ELEMENTSOF(order); ++c)
                for (i = 0; i < db->n_rules; ++i) {
                        const PolicyRule *rule = &db->rules[i];

                        if (rule->context != order[c])
                                continue;
                        if (rule->kind == POLICY_RULE_USER &&
                            (rule->any_id || rule->id == (uint32_t)uid))
                                allowed = rule->allow;
                        else if (rule->kind == POLICY_RULE_GROUP &&
                                 (rule->any_id || gids_contain(gids, n_gids, rule->id)))
                                allowed = rule->allow;
                }
        return allowed ? 0 : POLICY_E_ACCESS_DENIED;
}

/* ---- snapshots ---- */

static int entry_compare(const void *a, const void *b) {
        const PolicyEntry *x = a, *y = b;

        if (x->name != y->name)
                return x->name < y->name ? -1 : 1;
        return x->prio < y->prio ? -1 : x->prio > y->prio;
}

static void kind_set_deinit(PolicyKindSet *set) {
        size_t t;

        free(set->all);
        for (t = 0; t < _WIRE_MSG_N; ++t)
                free(set->generic[t]);
        free(set->named);
        *set = (PolicyKindSet){};
}

/* Build @set from the rules of @kind among @order (the snapshot's rules, in order). */
static int kind_set_build(PolicyKindSet *set, PolicyRuleKind kind, const PolicyRule **order,
                          size_t n_order) {
        const PolicyRule *last;
        size_t i, t, n = 0;

        set->peer_free = true;
        for (i = 0; i < n_order; ++i)
                n += order[i]->kind == kind;
        if (n == 0)
                return 0;
        set->all = malloc(n * sizeof(*set->all));
        set->named = malloc(n * sizeof(*set->named));
        if (!set->all || !set->named)
                return error_origin(-ENOMEM);
        for (t = 0; t < _WIRE_MSG_N; ++t) {
                set->generic[t] = malloc(n * sizeof(*set->generic[t]));
                if (!set->generic[t])
                        return error_origin(-ENOMEM);
        }
        for (i = 0; i < n_order; ++i) {
                const PolicyRule *rule = order[i];
                uint32_t prio = (uint32_t)set->n_all;

                if (rule->kind != kind)
                        continue;
                if (rule->name)
                        set->peer_free = false;
                set->all[set->n_all++] = rule;
                if (rule->name && !rule->name_is_prefix && kind != POLICY_RULE_OWN)
                        set->named[set->n_named++] = (PolicyEntry){ rule->name, prio, rule };
                else
                        for (t = 0; t < _WIRE_MSG_N; ++t)
                                if (!rule->msg_type || rule->msg_type == t)
                                        set->generic[t][set->n_generic[t]++] = prio;
        }
        qsort(set->named, set->n_named, sizeof(*set->named), entry_compare);
        last = set->all[set->n_all - 1];
        if (last->allow && !last->name && !last->interface && !last->member && !last->error &&
            !last->path && !last->msg_type && last->broadcast == POLICY_ANY &&
            last->min_fds == 0 && last->max_fds == UINT32_MAX)
                set->last_any = last;
        return 0;
}

static int compiled_build(const PolicyDb *db, PolicyCompiled *s) {
        _cleanup_(freep) const PolicyRule **order = NULL;
        size_t n = 0, i, g;
        int r;

        order = malloc((db->n_rules * (s->n_gids + 1) + 1) * sizeof(*order));
        if (!order)
                return error_origin(-ENOMEM);

#define APPEND_WHERE(cond)                                                      \
        for (i = 0; i < db->n_rules; ++i) {                                     \
                const PolicyRule *rule_ = &db->rules[i];                        \
                if (cond)                                                       \
                        order[n++] = rule_;                                     \
        }
        APPEND_WHERE(rule_->context == POLICY_CONTEXT_DEFAULT);
        for (g = 0; g < s->n_gids; ++g)
                APPEND_WHERE(rule_->context == POLICY_CONTEXT_GROUP &&
                             rule_->context_id == (uint32_t)s->gids[g]);
        APPEND_WHERE(rule_->context == POLICY_CONTEXT_USER &&
                     rule_->context_id == (uint32_t)s->uid);
        APPEND_WHERE(rule_->context == (s->at_console ? POLICY_CONTEXT_AT_CONSOLE :
                                                        POLICY_CONTEXT_NOT_AT_CONSOLE));
        APPEND_WHERE(rule_->context == POLICY_CONTEXT_MANDATORY);
#undef APPEND_WHERE

        r = kind_set_build(&s->send, POLICY_RULE_SEND, order, n);
        if (r == 0)
                r = kind_set_build(&s->receive, POLICY_RULE_RECEIVE, order, n);
        if (r == 0)
                r = kind_set_build(&s->own, POLICY_RULE_OWN, order, n);
        return error_trace(r);
}

static PolicyCompiled *policy_compiled_unref(PolicyCompiled *c) {
        if (!c || --c->n_refs > 0)
                return NULL;
        kind_set_deinit(&c->send);
        kind_set_deinit(&c->receive);
        kind_set_deinit(&c->own);
        free(c->gids);
        free(c);
        return NULL;
}

static bool compiled_is_for(const PolicyCompiled *c, const PolicyPeer *peer) {
        return c->uid == peer->uid && c->at_console == peer->at_console &&
               c->n_gids == peer->n_gids &&
               (!c->n_gids || !memcmp(c->gids, peer->gids, c->n_gids * sizeof(*c->gids)));
}

/*
 * The rules for @peer's credentials: from @db's cache, or compiled and cached. Everything
 * a snapshot's rules depend on is in the key (uid, the groups in their order, at_console);
 * pid and command line only go into texts, which stay the snapshot's own.
 * Return: 0 or -ENOMEM.
 */
static int policy_compiled_get(PolicyDb *db, const PolicyPeer *peer, PolicyCompiled **ret) {
        PolicyCompiled *c;
        unsigned i;
        int r;

        for (i = 0; i < db->n_compiled; ++i)
                if (compiled_is_for(db->compiled[i], peer)) {
                        c = db->compiled[i];
                        ++c->n_refs;
                        *ret = c;
                        return 0;
                }
        c = calloc(1, sizeof(*c));
        if (!c)
                return error_origin(-ENOMEM);
        c->n_refs = 1;
        c->uid = peer->uid;
        c->at_console = peer->at_console;
        if (peer->n_gids) {
                c->gids = malloc(peer->n_gids * sizeof(*c->gids));
                if (!c->gids) {
                        free(c);
                        return error_origin(-ENOMEM);
                }
                memcpy(c->gids, peer->gids, peer->n_gids * sizeof(*c->gids));
                c->n_gids = peer->n_gids;
        }
        r = compiled_build(db, c);
        if (r < 0) {
                policy_compiled_unref(c);
                return error_trace(r);
        }
        if (db->n_compiled < POLICY_COMPILED_KEEP) {
                db->compiled[db->n_compiled++] = c;
        } else {
                policy_compiled_unref(db->compiled[db->next_compiled]);
                db->compiled[db->next_compiled] = c;
                db->next_compiled = (db->next_compiled + 1) % POLICY_COMPILED_KEEP;
        }
        ++c->n_refs;    /* the cache's */
        *ret = c;
        return 0;
}

/**
 * policy_snapshot_same_rules() - whether two snapshots share their compiled rules
 * @a:          a snapshot
 * @b:          another
 *
 * Return: true if they check against the same compiled rules (tests).
 */
bool policy_snapshot_same_rules(const PolicySnapshot *a, const PolicySnapshot *b) {
        return a->rules == b->rules;
}

/**
 * policy_snapshots_equivalent() - do @a and @b hold the same rules?
 * @a:          a snapshot
 * @b:          a snapshot
 *
 * snapshot_build() takes the db's rules by context: default, each of the groups in order,
 * the user, the console state, mandatory. Nothing else of the peer counts.
 *
 * Return: true if both were built from the same db for the same uid, groups and console
 * state.
 */
bool policy_snapshots_equivalent(const PolicySnapshot *a, const PolicySnapshot *b) {
        const PolicyCompiled *x = a->rules, *y = b->rules;

        /* one compiled rule set is one db's for one set of credentials
         * (policy_compiled_get()): peers of the same user usually share it */
        if (a == b || x == y)
                return true;
        return a->db == b->db && x->uid == y->uid && x->at_console == y->at_console &&
               x->n_gids == y->n_gids &&
               (!x->n_gids || memcmp(x->gids, y->gids, x->n_gids * sizeof(*x->gids)) == 0);
}

/* @peer's snapshot of @db; @console_known, @comm_known: whether @peer's at_console and
 * comm are facts already (else asked through @peer->facts when needed). */
static int snapshot_build(PolicyDb *db, const PolicyPeer *peer, bool console_known,
                          bool comm_known, PolicySnapshot **ret) {
        _cleanup_(policy_snapshot_freep) PolicySnapshot *s = NULL;
        PolicyPeer p = *peer;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return error_origin(-ENOMEM);
        s->db = policy_db_ref(db);
        s->facts = peer->facts;
        s->pid = peer->pid;
        if (!console_known) {
                /* without at_console rules the state selects nothing: not asked */
                p.at_console = false;
                if (db->console_rules) {
                        p.at_console = peer->facts->uid_at_console(peer->uid);
                        console_known = true;
                }
        }
        s->console_known = console_known;
        s->comm_known = comm_known;
        if (comm_known && peer->comm)
                (void) snprintf(s->comm, sizeof(s->comm), "%s", peer->comm);
        r = policy_compiled_get(s->db, &p, &s->rules);
        if (r < 0)
                return error_trace(r);
        *ret = steal_ptr(&s);
        return 0;
}

/**
 * policy_snapshot_new() - resolve a db for one peer
 * @db:         a sealed db (a reference is taken)
 * @peer:       who connected (copied)
 * @ret:        the snapshot
 *
 * With @peer->facts, the console state is asked only if @db has rules that depend on it,
 * the command line only when a text first shows it (policy_snapshot_get_loginfo()). The
 * snapshot is the one allocation per peer: its credentials' compiled rules are shared, its
 * texts inline (issue #16: connection churn).
 *
 * Return: 0 or -ENOMEM.
 */
int policy_snapshot_new(PolicyDb *db, const PolicyPeer *peer, PolicySnapshot **ret) {
        const PolicyPeerFacts *f = peer->facts;

        return error_trace(snapshot_build(db, peer, !(f && f->uid_at_console),
                                          !(f && f->read_comm) || peer->comm, ret));
}

/*
 * The same peer against another db (a reload): its facts as they were; one never asked is
 * asked when @db needs it. Return: 0 or -ENOMEM.
 */
int policy_snapshot_rebase(const PolicySnapshot *old, PolicyDb *db, PolicySnapshot **ret) {
        const PolicyCompiled *c = old->rules;
        PolicyPeer peer = {
                .uid = c->uid, .gids = c->gids, .n_gids = c->n_gids,
                .at_console = c->at_console, .pid = old->pid,
                .comm = old->comm_known ? old->comm : NULL,
                .facts = old->facts,
        };

        return error_trace(snapshot_build(db, &peer, old->console_known, old->comm_known, ret));
}

/**
 * policy_snapshot_free() - free
 * @s:          the snapshot or NULL
 *
 * Return: NULL.
 */
PolicySnapshot *policy_snapshot_free(PolicySnapshot *s) {
        if (!s)
                return NULL;
        policy_compiled_unref(s->rules);
        policy_db_unref(s->db);
        free(s->denial);
        free(s);
        return NULL;
}

/**
 * policy_snapshot_get_db() - the db a snapshot was made from
 * @s:          the snapshot
 *
 * Return: the db (borrowed).
 */
const PolicyDb *policy_snapshot_get_db(const PolicySnapshot *s) {
        return s->db;
}

/**
 * policy_snapshot_get_loginfo() - how dbus-daemon describes the peer
 * @s:          the snapshot or NULL
 *
 * Return: "uid=N pid=N comm=\"...\"" (borrowed), "" for NULL.
 */
const char *policy_snapshot_get_loginfo(PolicySnapshot *s) {
        if (!s)
                return "";
        if (!s->loginfo[0]) {
                if (!s->comm_known) {
                        s->facts->read_comm(s->pid, s->comm, sizeof(s->comm));
                        s->comm_known = true;
                }
                if (s->comm[0])
                        (void) snprintf(s->loginfo, sizeof(s->loginfo),
                                        "uid=%u pid=%u comm=\"%s\"", (unsigned)s->rules->uid,
                                        (unsigned)s->pid, s->comm);
                else
                        (void) snprintf(s->loginfo, sizeof(s->loginfo), "uid=%u pid=%u",
                                        (unsigned)s->rules->uid, (unsigned)s->pid);
        }
        return s->loginfo;
}

/* ---- own ---- */

static bool name_has_prefix(const char *name, const char *prefix) {
        size_t n = strlen(prefix);

        return strncmp(name, prefix, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

/**
 * policy_check_own() - may the connection own or queue for @name?
 * @s:          its snapshot
 * @name:       a well-known name
 *
 * Return: 0 or POLICY_E_ACCESS_DENIED.
 */
int policy_check_own(const PolicySnapshot *s, const char *name) {
        size_t i;

        for (i = s->rules->own.n_all; i-- > 0;) {
                const PolicyRule *rule = s->rules->own.all[i];

                if (!rule->name_str ||
                    (rule->name_is_prefix ? name_has_prefix(name, rule->name_str) :
                                            strcmp(name, rule->name_str) == 0))
                        return rule->allow ? 0 : POLICY_E_ACCESS_DENIED;
        }
        return POLICY_E_ACCESS_DENIED;
}

/* ---- send and receive ---- */

/**
 * policy_msg_info_init() - a message's facts as @db's rules see them
 * @info:       filled
 * @db:         the db of the snapshots it will be checked against
 * @msg:        the message (borrowed; must outlive @info)
 *
 * Nothing is looked up here: the checks look up a field's id when a rule needs it.
 */
void policy_msg_info_init(PolicyMsgInfo *info, const PolicyDb *db, const BridgeMsg *msg) {
        *info = (PolicyMsgInfo){ .db = db, .msg = msg };
}

enum { F_INTERFACE, F_MEMBER, F_ERROR, F_PATH, F_DESTINATION, F_SENDER };

/* The id of a message field (0: absent), looked up on first need. */
static uint32_t info_id(PolicyMsgInfo *info, unsigned field) {
        const WireHeader *h = &info->msg->hdr;
        const char *const str[] = { h->interface, h->member, h->error_name, h->path,
                                    h->destination, h->sender };

        if (!(info->resolved & (1u << field))) {
                info->id[field] = db_lookup_id(info->db, str[field]);
                info->resolved |= 1u << field;
        }
        return info->id[field];
}

/* Does @conn (NULL: the bus, known as @bus_name_id / @bus_name) have @rule's name? */
static bool conn_has_rule_name(const PolicyRule *rule, const BridgeConn *conn,
                               uint32_t bus_name_id, const char *bus_name) {
        List *pos;

        if (!conn) {
                if (rule->name_is_prefix)
                        return bus_name && name_has_prefix(bus_name, rule->name_str);
                return bus_name_id == rule->name;
        }
        if (!rule->name_is_prefix && strcmp(conn->unique_name, rule->name_str) == 0)
                return true;
        list_for_each(pos, &conn->owned) {
                const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);

                if (rule->name_is_prefix ? name_has_prefix(o->name->name, rule->name_str) :
                                           strcmp(o->name->name, rule->name_str) == 0)
                        return true;
        }
        return false;
}

/*
 * Everything but the name (@check_name false: the caller found the rule through the
 * peer's name already). @peer: the receiver (send) or sender (receive), NULL: the bus.
 */
static bool rule_matches(const PolicyRule *rule, PolicyMsgInfo *info,
                         const BridgeConn *peer, bool requested_reply, bool eavesdropping,
                         bool check_name) {
        const WireHeader *h = &info->msg->hdr;
        bool send = rule->kind == POLICY_RULE_SEND;

        if (rule->msg_type && rule->msg_type != h->type)
                return false;
        if (!send) {
                if (eavesdropping && rule->allow && !rule->eavesdrop)
                        return false;
                if (!eavesdropping && !rule->allow && rule->eavesdrop)
                        return false;
        }
        if (h->reply_serial) {
                if (!requested_reply && rule->allow && rule->requested_reply && !rule->eavesdrop)
                        return false;
                if (requested_reply && !rule->allow && !rule->requested_reply)
                        return false;
        }
        if (send && rule->broadcast != POLICY_ANY) {
                bool broadcast = !h->destination && h->type == WIRE_MSG_SIGNAL;

                if (broadcast != (rule->broadcast == POLICY_TRUE))
                        return false;
        }
        if (info->msg->n_fds < rule->min_fds || info->msg->n_fds > rule->max_fds)
                return false;
        /* a present field has a non-zero id (POLICY_ID_UNKNOWN if no rule names it) */
        if (rule->path && h->path && rule->path != info_id(info, F_PATH))
                return false;
        if (rule->interface) {
                if (!h->interface ? rule->allow : rule->interface != info_id(info, F_INTERFACE))
                        return false;
        }
        if (rule->member && h->member && rule->member != info_id(info, F_MEMBER))
                return false;
        if (rule->error && h->error_name && rule->error != info_id(info, F_ERROR))
                return false;
        if (check_name && rule->name &&
            !conn_has_rule_name(rule, peer,
                                peer ? 0 : info_id(info, send ? F_DESTINATION : F_SENDER),
                                send ? h->destination : h->sender))
                return false;
        return true;
}

/* The index of the first entry with @name in @set->named, or n_named. */
static size_t named_lower_bound(const PolicyKindSet *set, uint32_t name) {
        size_t lo = 0, hi = set->n_named;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (set->named[mid].name < name)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Raise *best to the position of the last matching rule named @name, if above it. */
static void eval_named(const PolicyKindSet *set, uint32_t name, PolicyMsgInfo *info,
                       const BridgeConn *peer, bool requested_reply, bool eavesdropping,
                       int64_t *best) {
        size_t first = named_lower_bound(set, name), i = first;

        while (i < set->n_named && set->named[i].name == name)
                ++i;
        while (i-- > first) {
                if ((int64_t)set->named[i].prio <= *best)
                        return;
                if (rule_matches(set->named[i].rule, info, peer, requested_reply, eavesdropping,
                                 false)) {
                        *best = set->named[i].prio;
                        return;
                }
        }
}

/* The position of the last matching rule in @set, -1 if none. */
static int64_t eval_fast(const PolicySnapshot *s, const PolicyKindSet *set,
                         PolicyMsgInfo *info, const BridgeConn *peer,
                         bool requested_reply, bool eavesdropping) {
        uint8_t type = info->msg->hdr.type < _WIRE_MSG_N ? info->msg->hdr.type : 0;
        const uint32_t *generic = set->generic[type];
        const PolicyDb *db = s->db;
        int64_t best = -1;
        size_t i;
        List *pos;

        for (i = set->n_generic[type]; i-- > 0;)
                if (rule_matches(set->all[generic[i]], info, peer, requested_reply,
                                 eavesdropping, true)) {
                        best = generic[i];
                        break;
                }
        if (set->n_named == 0)
                return best;
        if (!peer) {
                uint32_t id = info_id(info, set == &s->rules->send ? F_DESTINATION : F_SENDER);

                if (id && id != POLICY_ID_UNKNOWN)
                        eval_named(set, id, info, peer, requested_reply, eavesdropping, &best);
                return best;
        }
        if (db->names_unique) {
                uint32_t id = db_lookup_id(db, peer->unique_name);

                if (id != POLICY_ID_UNKNOWN)
                        eval_named(set, id, info, peer, requested_reply, eavesdropping, &best);
        }
        list_for_each(pos, &peer->owned) {
                const BridgeNameOwner *o = container_of(pos, BridgeNameOwner, conn_link);
                const PolicyString *ps = db_find_string(db, o->name->node.hash, o->name->name);

                if (ps)
                        eval_named(set, ps->id, info, peer, requested_reply, eavesdropping,
                                   &best);
        }
        return best;
}

static int eval(const PolicySnapshot *s, const PolicyKindSet *set, PolicyMsgInfo *info,
                const BridgeConn *peer, bool requested_reply, bool eavesdropping,
                PolicyVerdict *ret_verdict) {
        PolicyMsgInfo local;
        const PolicyRule *decider = NULL;
        unsigned n_matched = 0;
        int64_t best;
        size_t i;

        if (policy_last_allows(set, &info->msg->hdr, requested_reply, eavesdropping)) {
                if (ret_verdict)
                        *ret_verdict = (PolicyVerdict){ .log = set->last_any->log };
                return 0;
        }
        if (info->db != s->db) {        /* made for another db (a reload in between) */
                policy_msg_info_init(&local, s->db, info->msg);
                info = &local;
        }
        best = eval_fast(s, set, info, peer, requested_reply, eavesdropping);
        if (best >= 0 && set->all[best]->allow) {
                if (ret_verdict)
                        *ret_verdict = (PolicyVerdict){ .n_matched = 0,
                                                        .log = set->all[best]->log };
                return 0;
        }
        /* denied: count the matches as dbus-daemon reports them (slow path, rare) */
        for (i = 0; i < set->n_all; ++i)
                if (rule_matches(set->all[i], info, peer, requested_reply, eavesdropping,
                                 true)) {
                        ++n_matched;
                        decider = set->all[i];
                }
        if (ret_verdict)
                *ret_verdict = (PolicyVerdict){ .n_matched = n_matched,
                                                .log = decider && decider->log };
        return POLICY_E_ACCESS_DENIED;
}

/**
 * policy_check_send() - may the sender send this message to @receiver?
 * @sender_policy:      the sender's snapshot
 * @info:               the message (policy_msg_info_init())
 * @receiver:           the receiver (addressed or eavesdropping), NULL: the bus driver
 * @requested_reply:    the message answers a pending call of @receiver
 * @ret_verdict:        may be NULL
 *
 * Return: 0 or POLICY_E_ACCESS_DENIED.
 */
int policy_check_send(const PolicySnapshot *sender_policy, PolicyMsgInfo *info,
                      const BridgeConn *receiver, bool requested_reply,
                      PolicyVerdict *ret_verdict) {
        return eval(sender_policy, &sender_policy->rules->send, info, receiver, requested_reply, false,
                    ret_verdict);
}

/**
 * policy_check_receive() - may the receiver receive this message from @sender?
 * @receiver_policy:    the receiver's snapshot
 * @info:               the message (policy_msg_info_init())
 * @sender:             the sender, NULL: the bus
 * @requested_reply:    the message answers a pending call of the addressed recipient
 * @eavesdropping:      the receiver is not the message's addressed recipient
 * @ret_verdict:        may be NULL
 *
 * Return: 0 or POLICY_E_ACCESS_DENIED.
 */
int policy_check_receive(const PolicySnapshot *receiver_policy, PolicyMsgInfo *info,
                         const BridgeConn *sender, bool requested_reply, bool eavesdropping,
                         PolicyVerdict *ret_verdict) {
        return eval(receiver_policy, &receiver_policy->rules->receive, info, sender, requested_reply,
                    eavesdropping, ret_verdict);
}
