/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native commands on custom endpoints: ENDPOINT_MAKE (on a handle that did not say
 * HELLO; the handle then owns the endpoint and may only ENDPOINT_UPDATE it, as in kdbus)
 * and ENDPOINT_UPDATE. The endpoint object and its checks: bridge/endpoint.c,
 * bridge/name-policy.c. Opening its sockets is the front end's business.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/name-acl-rule.h"
#include "bridge/name-acl.h"
#include "kdbus/kdbus.h"
#include "native/endpoint.h"
#include "native/items.h"

static int endpoint_make(Bus *bus, const BridgeCreds *creds, void *buf, size_t size,
                         uint64_t *ret_flags, BusEndpoint **ret);

/**
 * native_endpoint_make() - ENDPOINT_MAKE
 * @bus:        the bus
 * @creds:      the caller's credentials (captured at connect)
 * @via:        the custom endpoint the caller came through, or NULL
 * @buf:        kdbus_cmd with one MAKE_NAME item "<uid>-<name>"; flags MAKE_ACCESS_GROUP /
 *              MAKE_ACCESS_WORLD (who may connect to its sockets); return_flags written
 * @size:       bytes at @buf
 * @ret_flags:  the MAKE_ACCESS_* flags asked for
 * @ret:        the endpoint (the caller's reference)
 *
 * Who may: never from inside a custom endpoint; on a bus with
 * Bus.endpoints_privileged_only (bus instances) only the privileged
 * (bus_creds_privileged(), kdbus_ep_is_owner()); elsewhere any user, up to
 * BUS_ENDPOINT_MAX_PER_USER endpoints at a time unless privileged. EPERM comes before the
 * command is looked at, as kdbus checked the handle before parsing.
 *
 * KDBUS_FLAG_NEGOTIATE: nothing is made, cmd->flags says the flags known; returns 1.
 *
 * MAKE_NAME is checked as kdbus_item_validate_name() does (native_item_name_check()); a
 * NEGOTIATE item is taken and ignored.
 *
 * Return: 0, 1 (negotiated), or -EINVAL (bad struct, flags or items; a name without the
 * caller's "<uid>-" prefix), -ENAMETOOLONG (a name over 63 bytes), -EPERM, -EEXIST (an
 * endpoint of that name exists), -ENOMEM.
 */
int native_endpoint_make(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via, void *buf,
                         size_t size, uint64_t *ret_flags, BusEndpoint **ret) {
        struct kdbus_cmd *cmd = buf;
        void *copy;
        int r;

        if (via || (bus->endpoints_privileged_only && !bus_creds_privileged(bus, creds)))
                return -EPERM;
        r = native_items_negotiate_head(cmd, size, sizeof(*cmd), &copy);
        if (r)
                return r;
        r = endpoint_make(bus, creds, copy ? copy : buf, size, ret_flags, ret);
        native_items_negotiate_done(cmd, size, sizeof(*cmd), copy);
        return r;
}

static int endpoint_make(Bus *bus, const BridgeCreds *creds, void *buf, size_t size,
                         uint64_t *ret_flags, BusEndpoint **ret) {
        struct kdbus_cmd *cmd = buf;
        const struct kdbus_item *item;
        const char *name = NULL;
        uint64_t legacy_fd;
        int r;

        /* our extension: the maker's own legacy socket comes with the command (the front
         * end takes the fd); NEGOTIATE keeps answering kdbus's flags */
        legacy_fd = size >= sizeof(*cmd) && !(cmd->flags & KDBUS_FLAG_NEGOTIATE) ?
                    cmd->flags & KDBUS_MAKE_LEGACY_FD : 0;
        cmd->flags &= ~legacy_fd;
        r = native_make_cmd_check(cmd, size);
        cmd->flags |= legacy_fd;
        if (r)
                return r;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                if (item->type != KDBUS_ITEM_MAKE_NAME || name)
                        return -EINVAL;
                r = native_item_name_check(item);
                if (r)
                        return r;
                name = item->str;
        }
        if (!name)
                return -EINVAL;         /* MAKE_NAME is mandatory */
        /* where any user may make an endpoint (it only narrows what the peers coming
         * through it may do), only so many: they are accounts of their own for
         * max_connections_per_user */
        if (!bus_creds_privileged(bus, creds) &&
            bus_count_endpoints(bus, creds->uid) >= BUS_ENDPOINT_MAX_PER_USER)
                return -EMFILE;
        cmd->return_flags = 0;
        r = bus_endpoint_new(bus, creds->uid, name, ret);
        if (r)
                return r;
        *ret_flags = cmd->flags;
        return 0;
}

static int endpoint_update(BusEndpoint *ep, struct kdbus_cmd *cmd, bool named);

/**
 * native_endpoint_update() - ENDPOINT_UPDATE by the endpoint's owner handle
 * @ep:         the endpoint
 * @buf:        kdbus_cmd with NAME items, each followed by POLICY_ACCESS items (names may
 *              end in ".*"); the endpoint's whole new policy
 * @size:       bytes at @buf
 *
 * Return: 0, or -EINVAL (bad struct, flags, items, names, access), -EEXIST (a name twice),
 * -ESHUTDOWN (the endpoint was closed), -ENOMEM.
 */
int native_endpoint_update(BusEndpoint *ep, void *buf, size_t size) {
        struct kdbus_cmd *cmd = buf;
        void *copy;
        int r;

        r = native_items_negotiate_head(cmd, size, sizeof(*cmd), &copy);
        if (r)
                return r;
        r = endpoint_update(ep, copy ? copy : (void *)cmd, false);
        native_items_negotiate_done(cmd, size, sizeof(*cmd), copy);
        return r;
}

static int endpoint_update(BusEndpoint *ep, struct kdbus_cmd *cmd, bool named) {
        const struct kdbus_item *item;
        int r;

        const uint64_t known = KDBUS_ENDPOINT_POLICY_XDG | KDBUS_ENDPOINT_SLOPPY_NAMES |
                               KDBUS_ENDPOINT_UNFILTERED;
        unsigned flags = 0;

        if (cmd->flags == KDBUS_FLAG_NEGOTIATE) {
                cmd->flags = 0;         /* kdbus's ENDPOINT_UPDATE knows no flags */
                cmd->return_flags = 0;
                return 0;
        }
        if (cmd->flags & ~known)
                return -EINVAL;
        if (cmd->flags & KDBUS_ENDPOINT_POLICY_XDG)
                flags |= BUS_ENDPOINT_POLICY_XDG;
        if (cmd->flags & KDBUS_ENDPOINT_SLOPPY_NAMES)
                flags |= BUS_ENDPOINT_SLOPPY_NAMES;
        if (cmd->flags & KDBUS_ENDPOINT_UNFILTERED)
                flags |= BUS_ENDPOINT_UNFILTERED;
        r = native_items_check(cmd->items, cmd->size - sizeof(*cmd));
        if (r)
                return r;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd))
                if (item->type != KDBUS_ITEM_NAME && item->type != KDBUS_ITEM_POLICY_ACCESS &&
                    !(item->type == KDBUS_ITEM_POLICY_RULE &&
                      (cmd->flags & KDBUS_ENDPOINT_POLICY_XDG)) &&
                    !(named && item->type == KDBUS_ITEM_MAKE_NAME))
                        return -EINVAL;
        if (!ep->bus)
                return -ESHUTDOWN;
        cmd->return_flags = 0;
        return bus_endpoint_update_flags(ep, flags, cmd->items, cmd->size - sizeof(*cmd));
}

/* The endpoint a MAKE_NAME item of @cmd names, if @creds may change it (its maker, or the
 * privileged). Return: 0, -EINVAL (a bad MAKE_NAME, or two), -EBADFD (none), -ENXIO (no
 * such endpoint), -EPERM. */
static int endpoint_named(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                          const struct kdbus_cmd *cmd, BusEndpoint **ret) {
        const struct kdbus_item *item;
        const char *name = NULL;
        BusEndpoint *ep;
        int r;

        r = native_items_check(cmd->items, cmd->size - sizeof(*cmd));
        if (r)
                return r;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                if (item->type != KDBUS_ITEM_MAKE_NAME)
                        continue;
                if (name)
                        return -EINVAL;
                r = native_item_name_check(item);
                if (r)
                        return r == -ENAMETOOLONG ? -EINVAL : r;
                name = item->str;
        }
        if (!name)
                return -EBADFD;         /* kdbus: this handle owns no endpoint */
        if (via)
                return -EPERM;
        ep = bus_find_endpoint(bus, name);
        if (!ep)
                return -ENXIO;
        if (ep->uid != creds->uid && !bus_creds_privileged(bus, creds))
                return -EPERM;
        *ret = ep;
        return 0;
}

/**
 * native_endpoint_update_named() - ENDPOINT_UPDATE of an endpoint by name (our extension)
 * @bus:        the bus
 * @creds:      the caller's credentials
 * @via:        the custom endpoint the caller came through, or NULL
 * @buf:        kdbus_cmd as native_endpoint_update() takes it, plus one MAKE_NAME item
 *              naming the endpoint ("<uid>-<name>")
 * @size:       bytes at @buf
 *
 * kdbus let only the owner handle update an endpoint; here its maker (same uid) or the
 * privileged may also do it from a handle that did not say HELLO (kdbusctl endpoint
 * update), so that a sandbox's rules change while it runs. The handle stays unset.
 *
 * Return: 0, -EINVAL, -EEXIST, -EBADFD (no MAKE_NAME: kdbus's answer on a handle that
 * owns no endpoint), -ENXIO (no such endpoint), -EPERM (another user's, or through a
 * custom endpoint), -ENOMEM.
 */
int native_endpoint_update_named(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                                 void *buf, size_t size) {
        struct kdbus_cmd *cmd = buf;
        BusEndpoint *ep = NULL;
        int r;

        if (size < sizeof(*cmd) || cmd->size < sizeof(*cmd) || cmd->size > size)
                return -EINVAL;
        if (cmd->flags == KDBUS_FLAG_NEGOTIATE)
                return endpoint_update(NULL, cmd, true);
        r = endpoint_named(bus, creds, via, cmd, &ep);
        if (r)
                return r;
        return endpoint_update(ep, cmd, true);
}

/* Append one item to the growing @buf. Return: 0 or -ENOMEM. */
static int put(uint8_t **buf, size_t *size, size_t *alloc, uint64_t type, const void *a,
               size_t alen, const void *b, size_t blen) {
        size_t need = *size + KDBUS_ITEM_SIZE(alen + blen);
        struct kdbus_item *item;

        if (need > *alloc) {
                size_t n = MAX(need, *alloc * 2);
                uint8_t *p = realloc(*buf, n);

                if (!p)
                        return -ENOMEM;
                memset(p + *alloc, 0, n - *alloc);
                *buf = p;
                *alloc = n;
        }
        item = (void *)(*buf + *size);
        item->size = KDBUS_ITEM_HEADER_SIZE + alen + blen;
        item->type = type;
        memcpy(item->data, a, alen);
        if (blen)
                memcpy(item->data + alen, b, blen);
        *size = need;
        return 0;
}

/* One endpoint's MAKE_NAME, ENDPOINT_INFO and policy items. */
static int list_one(const BusEndpoint *ep, uint8_t **buf, size_t *size, size_t *alloc) {
        struct kdbus_endpoint_info info = {
                .flags = (ep->policy->xdg ? KDBUS_ENDPOINT_POLICY_XDG : 0) |
                         (ep->sloppy_names ? KDBUS_ENDPOINT_SLOPPY_NAMES : 0) |
                         (ep->unfiltered ? KDBUS_ENDPOINT_UNFILTERED : 0),
                .uid = ep->uid,
                .n_conns = bus_endpoint_count_conns(ep),
        };
        char name[300];
        List *pos;
        unsigned i;
        int r;

        r = put(buf, size, alloc, KDBUS_ITEM_MAKE_NAME, ep->name, strlen(ep->name) + 1, NULL, 0);
        if (!r)
                r = put(buf, size, alloc, KDBUS_ITEM_ENDPOINT_INFO, &info, sizeof(info), NULL, 0);
        list_for_each(pos, &ep->policy->entries) {
                const NameAclEntry *e = container_of(pos, NameAclEntry, link);

                (void) snprintf(name, sizeof(name), "%s%s", e->name, e->wildcard ? ".*" : "");
                if (!r)
                        r = put(buf, size, alloc, KDBUS_ITEM_NAME, name, strlen(name) + 1,
                                NULL, 0);
                for (i = 0; i < e->n_access && !r; ++i) {
                        struct kdbus_policy_access a = { .type = e->access[i].type,
                                                         .access = NAME_ACL_KDBUS_ACCESS(
                                                                 e->access[i].access),
                                                         .id = e->access[i].id };

                        r = put(buf, size, alloc, KDBUS_ITEM_POLICY_ACCESS, &a, sizeof(a),
                                NULL, 0);
                }
                for (i = 0; i < e->n_rules && !r; ++i) {
                        uint64_t type = e->rules[i].type;

                        r = put(buf, size, alloc, KDBUS_ITEM_POLICY_RULE, &type, sizeof(type),
                                e->rules[i].text, strlen(e->rules[i].text) + 1);
                }
        }
        return r;
}

/**
 * native_endpoint_list() - KDBUS_CMD_ENDPOINT_LIST (our extension)
 * @bus:        the bus
 * @creds:      the caller's credentials
 * @via:        the custom endpoint the caller came through, or NULL
 * @ret:        the answer, a struct kdbus_cmd and its items (malloc()ed)
 * @ret_size:   its size
 *
 * The caller's own endpoints, everybody's for the privileged; nothing through an endpoint
 * (EPERM): a sandbox learns nothing of the others.
 *
 * Return: 0, -EPERM, -ENOMEM.
 */
int native_endpoint_list(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                         void **ret, size_t *ret_size) {
        bool all = bus_creds_privileged(bus, creds);
        size_t size = sizeof(struct kdbus_cmd), alloc = 4096;
        uint8_t *buf;
        List *pos;
        int r = 0;

        if (via)
                return -EPERM;
        buf = calloc(1, alloc);
        if (!buf)
                return -ENOMEM;
        list_for_each(pos, &bus->endpoints) {
                const BusEndpoint *ep = container_of(pos, BusEndpoint, link);

                if ((all || ep->uid == creds->uid) && !r)
                        r = list_one(ep, &buf, &size, &alloc);
        }
        if (r) {
                free(buf);
                return r;
        }
        ((struct kdbus_cmd *)(void *)buf)->size = size;
        *ret = buf;
        *ret_size = size;
        return 0;
}
