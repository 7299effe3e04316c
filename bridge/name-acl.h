/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbus's own name policy (kdbus.policy(7)): per well-known name (or name prefix "a.b.*"),
 * a list of access entries {USER uid | GROUP gid | WORLD} -> SEE < TALK < OWN, each level
 * implying the lower ones. A query answers the highest level any entry grants a peer
 * (uid, and any of its groups), or NAME_ACL_NONE.
 *
 * Lookup as kdbus does it: the exact (non-wildcard) entry of the name wins; without one,
 * the wildcard entry whose prefix is the name minus its last element ("a.b.*" covers
 * "a.b.c", not "a.b" and not "a.b.c.d"). An entry decides alone: a name with an exact
 * entry is not also looked up as a wildcard.
 *
 * Every entry has an owner (an opaque pointer: a policy-holder connection, an endpoint):
 * name_acl_db_set() atomically replaces all entries of one owner, and removing an
 * owner drops its entries. Two owners cannot hold entries for the same name (EEXIST).
 *
 * xdg-dbus-proxy's meaning (NameAclDb.xdg, set by name_acl_db_set_xdg(); custom endpoints
 * made by kdbus-proxy): "a.b.*" covers a.b itself and every name below it at any depth,
 * every entry covering a name counts (the highest level wins), a name may have several
 * entries, and an entry may carry message rules (bridge/name-acl-rule.h) instead of or
 * beside its access entries: a rule counts as TALK for the name itself (seeing it, its
 * owner, starting it), but a message passes only if TALK comes from an access entry or a
 * rule of its kind matches it (name_acl_db_allows()).
 *
 * Two dbs exist: one per custom endpoint (bridge/endpoint.h) and the bus's (Bus.holder_policy),
 * fed by policy-holder connections. Entries are few (one name per holder, a handful per
 * endpoint): a list, searched linearly.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/list.h"
#include "util/macro.h"

struct kdbus_item;
typedef struct BridgeCreds BridgeCreds;

/* The access levels queries return and entries keep: kdbus's KDBUS_POLICY_SEE / TALK / OWN
 * (0, 1, 2 in its ABI) plus one, so that nothing granted (kdbus returns -EPERM there) is
 * NAME_ACL_NONE, below every level. */
#define NAME_ACL_NONE 0u
#define NAME_ACL_SEE 1u
#define NAME_ACL_TALK 2u
#define NAME_ACL_OWN 3u
#define NAME_ACL_LEVEL(kdbus_access) ((unsigned)(kdbus_access) + 1u)
#define NAME_ACL_KDBUS_ACCESS(level) ((uint64_t)(level) - 1u)

typedef struct NameAclAccess {
        uint8_t type;                   /* KDBUS_POLICY_ACCESS_USER / GROUP / WORLD */
        uint8_t access;                 /* NAME_ACL_SEE / TALK / OWN */
        uint32_t id;                    /* uid or gid */
} NameAclAccess;

struct NameAclRule;

typedef struct NameAclEntry {
        List link;                      /* NameAclDb.entries */
        const void *owner;
        char *name;                     /* without ".*" for a wildcard */
        bool wildcard;
        NameAclAccess *access;
        unsigned n_access;
        struct NameAclRule *rules;      /* xdg mode only */
        unsigned n_rules;
} NameAclEntry;

typedef struct NameAclDb {
        List entries;                   /* NameAclEntry */
        unsigned n_entries;
        bool xdg;                       /* xdg-dbus-proxy's meaning (see above) */
} NameAclDb;

int name_acl_db_new(NameAclDb **ret);
NameAclDb *name_acl_db_free(NameAclDb *db);
DEFINE_CLEANUP(NameAclDb *, name_acl_db_free);

/*
 * Replace @owner's entries with those described by @items (NAME items, each followed by its
 * POLICY_ACCESS items; other item types are skipped: the caller checked them). All or
 * nothing. @max_names: at most this many NAME items (0: any). @allow_wildcards: names may
 * end in ".*". An empty @items removes the owner's entries.
 * Return: 0, or -EINVAL (POLICY_ACCESS before a NAME, bad name, bad type/access, wildcard
 * not allowed), -E2BIG (more than @max_names), -EEXIST (another owner has the name, or it
 * appears twice), -ENOMEM.
 */
int name_acl_db_set(NameAclDb *db, const struct kdbus_item *items, size_t items_size,
                         unsigned max_names, bool allow_wildcards, const void *owner);
/* The same for a setter whose user namespace is @ns (NULL: the bus's): its USER / GROUP
 * ids are translated into the bus's (-EINVAL for one its namespace does not map). */
struct BridgeNs;
int name_acl_db_set_ns(NameAclDb *db, const struct kdbus_item *items,
                            size_t items_size, unsigned max_names, bool allow_wildcards,
                            const void *owner, const struct BridgeNs *ns);
/*
 * Replace @owner's entries, and give @db xdg-dbus-proxy's meaning (@xdg) or kdbus's (!@xdg,
 * as name_acl_db_set() with wildcards). In xdg mode a NAME may repeat and be followed by
 * KDBUS_ITEM_POLICY_RULE items. Return: as name_acl_db_set(); a POLICY_RULE in kdbus mode
 * or a bad rule: -EINVAL.
 */
int name_acl_db_set_xdg(NameAclDb *db, const struct kdbus_item *items, size_t items_size,
                        bool xdg, const void *owner);
/* Drop every entry of @owner. */
void name_acl_db_remove_owner(NameAclDb *db, const void *owner);

/* The entry that decides for @name (exact, else wildcard), or NULL. */
const NameAclEntry *name_acl_db_lookup(const NameAclDb *db, const char *name);

/* The highest KDBUS_POLICY_* @entry grants to a peer with @creds (its uid, its gid and
 * every group in creds->groups), or NAME_ACL_NONE. */
unsigned name_acl_entry_query(const NameAclEntry *entry, const BridgeCreds *creds);
/* The same for @name in @db (NAME_ACL_NONE for a name without entry); in xdg mode, the
 * highest of every covering entry, a rule counting as TALK. */
unsigned name_acl_db_query(const NameAclDb *db, const char *name,
                                const BridgeCreds *creds);
/* May a message of @rule_type (KDBUS_POLICY_RULE_CALL: a call or unicast signal to @name's
 * owner; _BROADCAST: a broadcast from it) with these headers pass? TALK from an access
 * entry, or (xdg mode) a covering entry's rule of that type matching it. */
bool name_acl_db_allows(const NameAclDb *db, const char *name, const BridgeCreds *creds,
                        unsigned rule_type, const char *path, const char *interface,
                        const char *member);
