/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One filtering-proxy client's view of a classic bus (see kdbus-proxy-view.h). The
 * decisions are those of bridge/name-policy.c for a connection on an xdg-mode endpoint,
 * made over the owners the proxy tracks instead of the bus's own tables. Owners and
 * callers are few (the names the rules cover, the peers that called one app): arrays,
 * searched linearly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/creds.h"
#include "bridge/name-acl.h"
#include "kdbus/kdbus.h"
#include "tools/kdbus-proxy-view.h"
#include "wire/protocol.h"

/* Room for the rules of one ADDRESS PATH group as kdbus items. */
#define PROXY_VIEW_ITEMS_MAX (256u * 1024u)

/* The rules' entries are WORLD entries: any credentials get the same answer. */
static const BridgeCreds world_creds = { .pidfd = -1 };

int proxy_view_init(ProxyView *v, const ProxyBusArgs *b) {
        uint8_t *items;
        size_t size;
        int r;

        *v = (ProxyView)PROXY_VIEW_NULL;
        v->filter = b->filter;
        v->sloppy_names = b->sloppy_names;
        items = calloc(1, PROXY_VIEW_ITEMS_MAX);
        if (!items)
                return -ENOMEM;
        r = proxy_bus_args_policy_items(b, items, PROXY_VIEW_ITEMS_MAX, &size);
        if (!r)
                r = name_acl_db_new(&v->db);
        if (!r)
                r = name_acl_db_set_xdg(v->db, (const struct kdbus_item *)items, size, true, v);
        free(items);
        if (r < 0)
                proxy_view_deinit(v);
        return r;
}

void proxy_view_deinit(ProxyView *v) {
        size_t i;

        v->db = name_acl_db_free(v->db);
        for (i = 0; i < v->n_owners; ++i) {
                free(v->owners[i].name);
                free(v->owners[i].unique);
        }
        free(v->owners);
        for (i = 0; i < v->n_callers; ++i)
                free(v->callers[i]);
        free(v->callers);
        free(v->self);
        *v = (ProxyView)PROXY_VIEW_NULL;
}

unsigned proxy_view_level(const ProxyView *v, const char *name) {
        if (!v->filter)
                return NAME_ACL_OWN;
        return name_acl_db_query(v->db, name, &world_creds);
}

bool proxy_view_covers(const ProxyView *v, const char *name) {
        return name[0] != ':' && name_acl_db_query(v->db, name, &world_creds) != NAME_ACL_NONE;
}

static ProxyOwner *owner_find(const ProxyView *v, const char *name) {
        size_t i;

        for (i = 0; i < v->n_owners; ++i)
                if (!strcmp(v->owners[i].name, name))
                        return &v->owners[i];
        return NULL;
}

const char *proxy_view_owner(const ProxyView *v, const char *name) {
        const ProxyOwner *o = owner_find(v, name);

        return o ? o->unique : NULL;
}

int proxy_view_set_owner(ProxyView *v, const char *name, const char *unique) {
        ProxyOwner *o = owner_find(v, name), *grown;
        char *copy;

        if (!unique || !unique[0]) {
                if (o) {
                        free(o->name);
                        free(o->unique);
                        *o = v->owners[--v->n_owners];
                }
                return 0;
        }
        copy = strdup(unique);
        if (!copy)
                return -ENOMEM;
        if (o) {
                free(o->unique);
                o->unique = copy;
                return 0;
        }
        grown = realloc(v->owners, (v->n_owners + 1) * sizeof(*grown));
        if (!grown) {
                free(copy);
                return -ENOMEM;
        }
        v->owners = grown;
        v->owners[v->n_owners] = (ProxyOwner){ .name = strdup(name), .unique = copy };
        if (!v->owners[v->n_owners].name) {
                free(copy);
                return -ENOMEM;
        }
        ++v->n_owners;
        return 0;
}

bool proxy_view_is_caller(const ProxyView *v, const char *unique) {
        size_t i;

        for (i = 0; i < v->n_callers; ++i)
                if (!strcmp(v->callers[i], unique))
                        return true;
        return false;
}

int proxy_view_add_caller(ProxyView *v, const char *unique) {
        char **grown;

        if (proxy_view_is_caller(v, unique))
                return 0;
        grown = realloc(v->callers, (v->n_callers + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        v->callers = grown;
        v->callers[v->n_callers] = strdup(unique);
        if (!v->callers[v->n_callers])
                return -ENOMEM;
        ++v->n_callers;
        return 0;
}

void proxy_view_forget_unique(ProxyView *v, const char *unique) {
        size_t i;

        for (i = 0; i < v->n_callers; ++i)
                if (!strcmp(v->callers[i], unique)) {
                        free(v->callers[i]);
                        v->callers[i] = v->callers[--v->n_callers];
                        break;
                }
        for (i = 0; i < v->n_owners;)
                if (!strcmp(v->owners[i].unique, unique))
                        (void) proxy_view_set_owner(v, v->owners[i].name, NULL);
                else
                        ++i;
}

bool proxy_view_can_see_name(const ProxyView *v, const char *name) {
        return proxy_view_level(v, name) >= NAME_ACL_SEE;
}

/* The highest level one of @unique's names has (kdbus checks a peer's primary names). */
static unsigned unique_level(const ProxyView *v, const char *unique) {
        unsigned best = NAME_ACL_NONE, a;
        size_t i;

        for (i = 0; i < v->n_owners; ++i) {
                if (strcmp(v->owners[i].unique, unique))
                        continue;
                a = proxy_view_level(v, v->owners[i].name);
                if (a > best)
                        best = a;
        }
        return best;
}

bool proxy_view_can_see_unique(const ProxyView *v, const char *unique) {
        if (!v->filter || v->sloppy_names || (v->self && !strcmp(unique, v->self)))
                return true;
        return proxy_view_is_caller(v, unique) || unique_level(v, unique) >= NAME_ACL_SEE;
}

/* Does one of @unique's names let a message of @rule_type with these headers pass? */
static bool unique_allows(const ProxyView *v, const char *unique, unsigned rule_type,
                          const char *path, const char *interface, const char *member) {
        size_t i;

        for (i = 0; i < v->n_owners; ++i)
                if (!strcmp(v->owners[i].unique, unique) &&
                    name_acl_db_allows(v->db, v->owners[i].name, &world_creds, rule_type, path,
                                       interface, member))
                        return true;
        return false;
}

int proxy_view_may_send(const ProxyView *v, const char *destination, uint8_t type,
                        const char *path, const char *interface, const char *member) {
        const char *unique = destination;

        if (!v->filter || (v->self && !strcmp(destination, v->self)))
                return 0;
        if (destination[0] != ':') {
                if (!proxy_view_can_see_name(v, destination))
                        return PROXY_VIEW_E_HIDDEN;
                unique = proxy_view_owner(v, destination);
                /* nobody owns it: the bus may start it, if the rules let this message pass */
                if (!unique)
                        return name_acl_db_allows(v->db, destination, &world_creds,
                                                  KDBUS_POLICY_RULE_CALL, path, interface,
                                                  member) ? 0 : PROXY_VIEW_E_DENIED;
        } else if (!proxy_view_can_see_unique(v, destination)) {
                return PROXY_VIEW_E_HIDDEN;
        }
        if (unique_allows(v, unique, KDBUS_POLICY_RULE_CALL, path, interface, member))
                return 0;
        /* a signal back to a peer that called the client */
        if (type == WIRE_MSG_SIGNAL && proxy_view_is_caller(v, unique))
                return 0;
        return PROXY_VIEW_E_DENIED;
}

bool proxy_view_may_receive(const ProxyView *v, const char *sender, bool broadcast,
                            const char *path, const char *interface, const char *member) {
        if (!v->filter || (v->self && !strcmp(sender, v->self)))
                return true;
        if (broadcast)
                return unique_allows(v, sender, KDBUS_POLICY_RULE_BROADCAST, path, interface,
                                     member);
        /* a unicast signal: only from a peer the client may talk to (kdbus's rule) */
        return unique_level(v, sender) >= NAME_ACL_TALK;
}
