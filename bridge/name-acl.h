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

/* name_acl_db_query() when nothing is granted (kdbus returns -EPERM there). */
#define NAME_ACL_NONE 0

typedef struct NameAclAccess {
        uint8_t type;                   /* KDBUS_POLICY_ACCESS_USER / GROUP / WORLD */
        uint8_t access;                 /* KDBUS_POLICY_SEE / TALK / OWN */
        uint32_t id;                    /* uid or gid */
} NameAclAccess;

typedef struct NameAclEntry {
        List link;                      /* NameAclDb.entries */
        const void *owner;
        char *name;                     /* without ".*" for a wildcard */
        bool wildcard;
        NameAclAccess *access;
        unsigned n_access;
} NameAclEntry;

typedef struct NameAclDb {
        List entries;                   /* NameAclEntry */
        unsigned n_entries;
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
/* Drop every entry of @owner. */
void name_acl_db_remove_owner(NameAclDb *db, const void *owner);

/* The entry that decides for @name (exact, else wildcard), or NULL. */
const NameAclEntry *name_acl_db_lookup(const NameAclDb *db, const char *name);

/* The highest KDBUS_POLICY_* @entry grants to a peer with @creds (its uid, its gid and
 * every group in creds->groups), or NAME_ACL_NONE. */
unsigned name_acl_entry_query(const NameAclEntry *entry, const BridgeCreds *creds);
/* The same for @name in @db (NAME_ACL_NONE for a name without entry). */
unsigned name_acl_db_query(const NameAclDb *db, const char *name,
                                const BridgeCreds *creds);
