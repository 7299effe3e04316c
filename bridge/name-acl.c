/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's name policy database (see bridge/name-acl.h for the semantics). Written from
 * kdbus.policy(7) and kdbus's behaviour: exact entry first, then the one-level wildcard;
 * the highest level any matching access entry grants; set replaces an owner's entries
 * atomically; a name can have entries of one owner only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/creds.h"
#include "bridge/name-acl-rule.h"
#include "bridge/name-acl.h"
#include "bridge/ns.h"
#include "kdbus/kdbus.h"
#include "util/error.h"
#include "wire/names.h"

static NameAclEntry *entry_free(NameAclEntry *e) {
        unsigned i;

        if (!e)
                return NULL;
        list_unlink(&e->link);
        for (i = 0; i < e->n_rules; ++i)
                name_acl_rule_deinit(&e->rules[i]);
        free(e->rules);
        free(e->access);
        free(e->name);
        free(e);
        return NULL;
}

/**
 * name_acl_db_new() - an empty policy database
 * @ret:        the db
 *
 * Return: 0 or -ENOMEM.
 */
int name_acl_db_new(NameAclDb **ret) {
        NameAclDb *db = calloc(1, sizeof(*db));

        if (!db)
                return error_origin(-ENOMEM);
        list_init(&db->entries);
        *ret = db;
        return 0;
}

/**
 * name_acl_db_free() - free a db and its entries
 * @db:         the db or NULL
 *
 * Return: NULL.
 */
NameAclDb *name_acl_db_free(NameAclDb *db) {
        NameAclEntry *e;

        if (!db)
                return NULL;
        while ((e = list_first_entry(&db->entries, NameAclEntry, link)))
                entry_free(e);
        free(db);
        return NULL;
}

/**
 * name_acl_db_remove_owner() - drop the entries of one owner
 * @db:         the db
 * @owner:      whose entries
 */
void name_acl_db_remove_owner(NameAclDb *db, const void *owner) {
        List *pos, *tmp;

        list_for_each_safe(pos, tmp, &db->entries) {
                NameAclEntry *e = container_of(pos, NameAclEntry, link);

                if (e->owner == owner) {
                        entry_free(e);
                        --db->n_entries;
                }
        }
}

static NameAclEntry *db_find(const NameAclDb *db, const char *name, size_t len,
                                  bool wildcard) {
        List *pos;

        list_for_each(pos, &db->entries) {
                NameAclEntry *e = container_of(pos, NameAclEntry, link);

                if (e->wildcard == wildcard && !strncmp(e->name, name, len) && !e->name[len])
                        return e;
        }
        return NULL;
}

/* xdg mode: @e covers @name if it is its name, or a wildcard for it or a name above it */
static bool entry_covers(const NameAclEntry *e, const char *name) {
        size_t n = strlen(e->name);

        if (strncmp(name, e->name, n))
                return false;
        return !name[n] || (e->wildcard && name[n] == '.');
}

/**
 * name_acl_db_lookup() - the entry that decides for a name
 * @db:         the db
 * @name:       a well-known name
 *
 * Return: the exact entry of @name, else the wildcard entry of its parent prefix, or NULL.
 */
const NameAclEntry *name_acl_db_lookup(const NameAclDb *db, const char *name) {
        const NameAclEntry *e;
        const char *dot;

        if (!db || !db->n_entries)
                return NULL;
        e = db_find(db, name, strlen(name), false);
        if (e)
                return e;
        dot = strrchr(name, '.');
        return dot ? db_find(db, name, (size_t)(dot - name), true) : NULL;
}

/**
 * name_acl_entry_query() - the access one entry grants a peer
 * @entry:      the entry (NULL: nothing granted)
 * @creds:      the peer's credentials, captured at connect
 *
 * Return: NAME_ACL_SEE, _TALK, _OWN, or NAME_ACL_NONE.
 */
unsigned name_acl_entry_query(const NameAclEntry *entry, const BridgeCreds *creds) {
        unsigned highest = NAME_ACL_NONE, i, k;

        if (!entry)
                return NAME_ACL_NONE;
        for (i = 0; i < entry->n_access && highest < NAME_ACL_OWN; ++i) {
                const NameAclAccess *a = &entry->access[i];
                bool match = false;

                if (a->access <= highest)
                        continue;
                switch (a->type) {
                case KDBUS_POLICY_ACCESS_USER:
                        match = creds->uid == a->id;
                        break;
                case KDBUS_POLICY_ACCESS_GROUP:
                        match = creds->gid == a->id;
                        for (k = 0; !match && k < creds->n_groups; ++k)
                                match = creds->groups[k] == a->id;
                        break;
                case KDBUS_POLICY_ACCESS_WORLD:
                        match = true;
                        break;
                }
                if (match)
                        highest = a->access;
        }
        return highest;
}

/**
 * name_acl_db_query() - the access a db grants a peer on a name
 * @db:         the db (NULL: nothing granted)
 * @name:       a well-known name
 * @creds:      the peer's credentials
 *
 * Return: NAME_ACL_SEE, _TALK, _OWN, or NAME_ACL_NONE.
 */
unsigned name_acl_db_query(const NameAclDb *db, const char *name,
                                const BridgeCreds *creds) {
        unsigned best = NAME_ACL_NONE, a;
        List *pos;

        if (!db || !db->xdg)
                return name_acl_entry_query(name_acl_db_lookup(db, name), creds);
        list_for_each(pos, &db->entries) {
                const NameAclEntry *e = container_of(pos, NameAclEntry, link);

                if (!entry_covers(e, name))
                        continue;
                a = name_acl_entry_query(e, creds);
                if (e->n_rules && a < NAME_ACL_TALK)
                        a = NAME_ACL_TALK;
                if (a > best)
                        best = a;
        }
        return best;
}

/**
 * name_acl_db_allows() - may a message to (or broadcast from) @name's owner pass?
 * @db:         the db (NULL: nothing)
 * @name:       a well-known name of the peer
 * @creds:      the sandboxed peer's credentials
 * @rule_type:  KDBUS_POLICY_RULE_CALL (a call or unicast signal to the owner) or
 *              KDBUS_POLICY_RULE_BROADCAST (a broadcast from it)
 * @path:       the message's headers (each may be NULL)
 * @interface:  ...
 * @member:     ...
 *
 * Return: true for TALK from an access entry, or a matching rule of @rule_type (xdg mode).
 */
bool name_acl_db_allows(const NameAclDb *db, const char *name, const BridgeCreds *creds,
                        unsigned rule_type, const char *path, const char *interface,
                        const char *member) {
        List *pos;
        unsigned i;

        if (!db || !db->xdg)
                return name_acl_db_query(db, name, creds) >= NAME_ACL_TALK;
        list_for_each(pos, &db->entries) {
                const NameAclEntry *e = container_of(pos, NameAclEntry, link);

                if (!entry_covers(e, name))
                        continue;
                if (name_acl_entry_query(e, creds) >= NAME_ACL_TALK)
                        return true;
                for (i = 0; i < e->n_rules; ++i)
                        if (e->rules[i].type == rule_type &&
                            name_acl_rule_matches(&e->rules[i], path, interface, member))
                                return true;
        }
        return false;
}

/* Validate a NAME item's string and make the entry. Return: 0 or -errno. */
static int entry_new(const struct kdbus_item *item, bool allow_wildcards, const void *owner,
                     NameAclEntry **ret) {
        size_t len = item->size - KDBUS_ITEM_HEADER_SIZE, n;
        NameAclEntry *e;
        char *check;
        bool wildcard;
        bool ok;

        if (len < 2 || item->str[len - 1] != '\0' || strlen(item->str) != len - 1)
                return -EINVAL;
        n = len - 1;
        wildcard = n > 2 && item->str[n - 2] == '.' && item->str[n - 1] == '*';
        if (wildcard && !allow_wildcards)
                return -EINVAL;
        /* "a.b.*" must be "a.b" plus one more valid element: check it as "a.b.x" */
        check = strdup(item->str);
        if (!check)
                return -ENOMEM;
        if (wildcard)
                check[n - 1] = 'x';
        ok = wire_well_known_name_is_valid(check, n);
        free(check);
        if (!ok)
                return -EINVAL;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        list_init(&e->link);
        e->owner = owner;
        e->wildcard = wildcard;
        e->name = strndup(item->str, wildcard ? n - 2 : n);
        if (!e->name) {
                free(e);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

static int entry_add_access(NameAclEntry *e, const struct kdbus_item *item,
                            const BridgeNs *ns) {
        const struct kdbus_policy_access *pa = &item->policy_access;
        NameAclAccess *a;
        uint32_t id;

        if (item->size < KDBUS_ITEM_HEADER_SIZE + sizeof(*pa))
                return -EINVAL;
        if (pa->access != KDBUS_POLICY_SEE && pa->access != KDBUS_POLICY_TALK &&
            pa->access != KDBUS_POLICY_OWN)
                return -EINVAL;         /* kdbus_policy_set(): SEE (0), TALK, OWN only */
        if (pa->type != KDBUS_POLICY_ACCESS_USER && pa->type != KDBUS_POLICY_ACCESS_GROUP &&
            pa->type != KDBUS_POLICY_ACCESS_WORLD)
                return -EINVAL;
        /* ids are 32 bits here; (uid_t)-1 is no user (kdbus: !uid_valid) */
        if (pa->type != KDBUS_POLICY_ACCESS_WORLD && pa->id >= UINT32_MAX)
                return -EINVAL;
        /* an id of the setter's user namespace, kept as the bus sees it (kdbus:
         * make_kuid(current_user_ns()), EINVAL if that namespace does not map it) */
        id = (uint32_t)pa->id;
        if (pa->type != KDBUS_POLICY_ACCESS_WORLD &&
            bridge_ns_id_to_bus(ns, pa->type == KDBUS_POLICY_ACCESS_GROUP, id, &id))
                return -EINVAL;
        if (e->n_access >= UINT16_MAX)
                return -E2BIG;          /* kdbus bounds a command's size; so do we */
        a = realloc(e->access, (e->n_access + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        e->access = a;
        a[e->n_access].type = (uint8_t)pa->type;
        a[e->n_access].access = (uint8_t)NAME_ACL_LEVEL(pa->access);
        a[e->n_access].id = id;
        ++e->n_access;
        return 0;
}

static int db_set(NameAclDb *db, const struct kdbus_item *items, size_t items_size,
                  unsigned max_names, bool allow_wildcards, const void *owner,
                  const BridgeNs *ns, bool xdg);

/**
 * name_acl_db_set() - replace an owner's entries
 * @db:         the db
 * @items:      the command's items (NAME, then its POLICY_ACCESS items, repeated)
 * @items_size: their size (already checked with native_items_check())
 * @max_names:  at most this many NAME items; 0: no limit
 * @allow_wildcards: may names end in ".*"
 * @owner:      whose entries these are
 *
 * Return: 0, -EINVAL, -E2BIG, -EEXIST or -ENOMEM; on error the db is unchanged.
 */
int name_acl_db_set(NameAclDb *db, const struct kdbus_item *items, size_t items_size,
                         unsigned max_names, bool allow_wildcards, const void *owner) {
        return name_acl_db_set_ns(db, items, items_size, max_names, allow_wildcards, owner,
                                       NULL);
}

/**
 * name_acl_db_set_ns() - name_acl_db_set() for a setter in user namespace @ns
 * @db:         the db
 * @items:      the command's items
 * @items_size: their size
 * @max_names:  at most this many NAME items; 0: no limit
 * @allow_wildcards: may names end in ".*"
 * @owner:      whose entries these are
 * @ns:         the setter's namespaces (NULL: the bus's): USER / GROUP ids go through its
 *              uid_map / gid_map into the bus's ids; one it does not map: -EINVAL
 *
 * Return: as name_acl_db_set().
 */
int name_acl_db_set_ns(NameAclDb *db, const struct kdbus_item *items,
                            size_t items_size, unsigned max_names, bool allow_wildcards,
                            const void *owner, const BridgeNs *ns) {
        return db_set(db, items, items_size, max_names, allow_wildcards, owner, ns, false);
}

/**
 * name_acl_db_set_xdg() - replace an owner's entries, in xdg-dbus-proxy's meaning or not
 * @db:         the db
 * @items:      NAME, then its POLICY_ACCESS (and in xdg mode POLICY_RULE) items, repeated
 * @items_size: their size (already checked with native_items_check())
 * @xdg:        xdg-dbus-proxy's meaning (bridge/name-acl.h) for the whole db
 * @owner:      whose entries these are
 *
 * Return: as name_acl_db_set(); on error the db and its meaning are unchanged.
 */
int name_acl_db_set_xdg(NameAclDb *db, const struct kdbus_item *items, size_t items_size,
                        bool xdg, const void *owner) {
        int r;

        r = db_set(db, items, items_size, 0, true, owner, NULL, xdg);
        if (r == 0)
                db->xdg = xdg;
        return r;
}

/* One POLICY_RULE item for @e. Return: 0, -EINVAL, -E2BIG, -ENOMEM. */
static int entry_add_rule(NameAclEntry *e, const struct kdbus_item *item) {
        const struct kdbus_policy_rule *pr = (const void *)item->data;
        size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;
        NameAclRule *rules;
        int r;

        if (len < sizeof(*pr) + 1 || pr->rule[len - sizeof(*pr) - 1] != '\0' ||
            (pr->type != KDBUS_POLICY_RULE_CALL && pr->type != KDBUS_POLICY_RULE_BROADCAST))
                return -EINVAL;
        if (e->n_rules >= UINT16_MAX)
                return -E2BIG;
        rules = realloc(e->rules, (e->n_rules + 1) * sizeof(*rules));
        if (!rules)
                return -ENOMEM;
        e->rules = rules;
        r = name_acl_rule_parse(pr->rule, (uint8_t)pr->type, &rules[e->n_rules]);
        if (r)
                return r;
        ++e->n_rules;
        return 0;
}

static int db_set(NameAclDb *db, const struct kdbus_item *items, size_t items_size,
                  unsigned max_names, bool allow_wildcards, const void *owner,
                  const BridgeNs *ns, bool xdg) {
        List fresh = LIST_INIT(fresh);
        NameAclEntry *e = NULL;
        const struct kdbus_item *item;
        unsigned n_names = 0;
        List *pos, *tmp;
        int r = 0;

        KDBUS_ITEMS_FOREACH(item, items, items_size) {
                if (item->type == KDBUS_ITEM_NAME) {
                        if (max_names && ++n_names > max_names) {
                                r = -E2BIG;
                                break;
                        }
                        r = entry_new(item, allow_wildcards, owner, &e);
                        if (r)
                                break;
                        list_append(&fresh, &e->link);
                        /* xdg-dbus-proxy: "a.b.*" names a.b itself, which must be valid */
                        if (xdg && !wire_well_known_name_is_valid(e->name, strlen(e->name))) {
                                r = -EINVAL;
                                break;
                        }
                } else if (item->type == KDBUS_ITEM_POLICY_ACCESS) {
                        r = e ? entry_add_access(e, item, ns) : -EINVAL;
                        if (r)
                                break;
                } else if (item->type == KDBUS_ITEM_POLICY_RULE) {
                        r = e && xdg ? entry_add_rule(e, item) : -EINVAL;
                        if (r)
                                break;
                }
        }
        /* a name may have entries of one owner only, and appear once */
        list_for_each(pos, &fresh) {
                NameAclEntry *f = container_of(pos, NameAclEntry, link);
                List *p2;

                if (r)
                        break;
                list_for_each(p2, &db->entries) {
                        NameAclEntry *o = container_of(p2, NameAclEntry, link);

                        if (o->owner != owner && o->wildcard == f->wildcard &&
                            !strcmp(o->name, f->name))
                                r = -EEXIST;
                }
                /* xdg-dbus-proxy takes a name as often as it is given */
                for (p2 = pos->next; !xdg && p2 != &fresh; p2 = p2->next) {
                        NameAclEntry *o = container_of(p2, NameAclEntry, link);

                        if (o->wildcard == f->wildcard && !strcmp(o->name, f->name))
                                r = -EEXIST;
                }
        }
        if (r) {
                while ((e = list_first_entry(&fresh, NameAclEntry, link)))
                        entry_free(e);
                return r;
        }
        name_acl_db_remove_owner(db, owner);
        list_for_each_safe(pos, tmp, &fresh) {
                list_unlink(pos);
                list_append(&db->entries, pos);
                ++db->n_entries;
        }
        return 0;
}
