/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native commands on custom endpoints: ENDPOINT_MAKE (on a handle that did not say
 * HELLO; the handle then owns the endpoint and may only ENDPOINT_UPDATE it, as in kdbus)
 * and ENDPOINT_UPDATE. The endpoint object and its checks: bridge/endpoint.c,
 * bridge/name-policy.c. Opening its sockets is the front end's business.
 */
#include <errno.h>
#include <string.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "kdbus/kdbus.h"
#include "native/endpoint.h"
#include "native/items.h"

static int endpoint_make(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via, void *buf,
                         size_t size, uint64_t *ret_flags, BusEndpoint **ret);

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
 * Privileged only (kdbus: EPERM otherwise): uid 0 or the bus owner's, not through a
 * custom endpoint.
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

        if (size < sizeof(*cmd) || cmd->size < sizeof(*cmd) || cmd->size > size)
                return -EINVAL;
        r = native_items_negotiate(cmd, size, sizeof(*cmd), &copy);
        if (r)
                return r;
        r = endpoint_make(bus, creds, via, copy ? copy : buf, size, ret_flags, ret);
        native_items_negotiate_done(cmd, size, sizeof(*cmd), copy);
        return r;
}

static int endpoint_make(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via, void *buf,
                         size_t size, uint64_t *ret_flags, BusEndpoint **ret) {
        struct kdbus_cmd *cmd = buf;
        const struct kdbus_item *item;
        const char *name = NULL;
        int r;

        r = native_make_cmd_check(cmd, size);
        if (r)
                return r;
        for (item = cmd->items; (const uint8_t *)item < (const uint8_t *)cmd + cmd->size;
             item = KDBUS_ITEM_NEXT(item)) {
                if (item->type != KDBUS_ITEM_MAKE_NAME || name)
                        return -EINVAL;
                r = native_item_name_check(item);
                if (r)
                        return r;
                name = item->str;
        }
        if (!name)
                return -EINVAL;         /* MAKE_NAME is mandatory */
        if (via || (creds->uid != 0 && creds->uid != bus->owner_uid))
                return -EPERM;
        cmd->return_flags = 0;
        r = bus_endpoint_new(bus, creds->uid, name, ret);
        if (r)
                return r;
        *ret_flags = cmd->flags;
        return 0;
}

static int endpoint_update(BusEndpoint *ep, struct kdbus_cmd *cmd);

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

        if (size < sizeof(*cmd) || cmd->size < sizeof(*cmd) || cmd->size > size)
                return -EINVAL;
        r = native_items_negotiate(cmd, size, sizeof(*cmd), &copy);
        if (r)
                return r;
        r = endpoint_update(ep, copy ? copy : (void *)cmd);
        native_items_negotiate_done(cmd, size, sizeof(*cmd), copy);
        return r;
}

static int endpoint_update(BusEndpoint *ep, struct kdbus_cmd *cmd) {
        const struct kdbus_item *item;
        int r;

        if (cmd->flags == KDBUS_FLAG_NEGOTIATE) {
                cmd->flags = 0;         /* ENDPOINT_UPDATE knows no flags */
                cmd->return_flags = 0;
                return 0;
        }
        if (cmd->flags)
                return -EINVAL;
        r = native_items_check(cmd->items, cmd->size - sizeof(*cmd));
        if (r)
                return r;
        for (item = cmd->items; (const uint8_t *)item < (const uint8_t *)cmd + cmd->size;
             item = KDBUS_ITEM_NEXT(item))
                if (item->type != KDBUS_ITEM_NAME && item->type != KDBUS_ITEM_POLICY_ACCESS)
                        return -EINVAL;
        if (!ep->bus)
                return -ESHUTDOWN;
        cmd->return_flags = 0;
        return bus_endpoint_update(ep, cmd->items, cmd->size - sizeof(*cmd));
}
