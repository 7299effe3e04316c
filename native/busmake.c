/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * BUS_MAKE: the request's checks (see native/busmake.h). kdbus's rules: MAKE_NAME and
 * BLOOM_PARAMETER are mandatory (EINVAL without: kdbus_args_parse()), the name is what
 * kdbus_item_validate_name() takes (native_item_name_check(): ENAMETOOLONG over 63 bytes)
 * and starts with the caller's "<uid>-" (EINVAL otherwise), the bloom size is a multiple of 8 between 8 and 4096 bytes
 * with at least one hash function (EINVAL), flags only MAKE_ACCESS_GROUP / _WORLD; the
 * instance uses those bloom parameters for every filter and mask on it (Bus.bloom: HELLO
 * reports them, MATCH_ADD and SEND check sizes against them, the bus computes the filters
 * of broadcasts with them). ATTACH_FLAGS_SEND is what the maker offers of
 * its own metadata in BUS_CREATOR_INFO (kdbus's attach_flags_owner, in its earlier and its
 * final tree). ATTACH_FLAGS_RECV is the instance's required metadata, every sender on it
 * must consent to those (HELLO ECONNREFUSED otherwise, native/meta.c): kdbus's
 * earlier tree had that (attach_flags_req); its final one dropped the bus-wide requirement
 * and refused the item (EINVAL), we keep the earlier meaning.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bloom.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/endpoint.h"
#include "bridge/limits.h"
#include "kdbus/kdbus.h"
#include "native/busmake.h"
#include "native/items.h"

/* One u64 of attach flags: _KDBUS_ATTACH_ANY means all; other unknown bits: EINVAL. */
static int attach_flags(const struct kdbus_item *item, uint64_t *ret) {
        if (item->size != KDBUS_ITEM_HEADER_SIZE + sizeof(uint64_t))
                return -EINVAL;
        if (item->data64[0] == _KDBUS_ATTACH_ANY)
                *ret = _KDBUS_ATTACH_ALL;
        else if (item->data64[0] & ~(uint64_t)_KDBUS_ATTACH_ALL)
                return -EINVAL;
        else
                *ret = item->data64[0];
        return 0;
}

static int bus_make_parse(const BridgeCreds *creds, void *buf, size_t size, NativeBusMake *ret);

/**
 * native_bus_make_parse() - read and check a BUS_MAKE request
 * @creds:      the caller's credentials (its uid must prefix the name)
 * @buf:        kdbus_cmd with MAKE_NAME, BLOOM_PARAMETER, ATTACH_FLAGS_SEND/_RECV items
 *              (and a NEGOTIATE item, which is ignored)
 * @size:       bytes at @buf
 * @ret:        what to make
 *
 * Return: 0, 1 (NEGOTIATE answered), -EINVAL, -ENAMETOOLONG.
 */
int native_bus_make_parse(const BridgeCreds *creds, void *buf, size_t size, NativeBusMake *ret) {
        struct kdbus_cmd *cmd = buf;
        void *copy;
        int r;

        r = native_items_negotiate_head(cmd, size, sizeof(*cmd), &copy);
        if (r)
                return r;
        r = bus_make_parse(creds, copy ? copy : buf, size, ret);
        native_items_negotiate_done(cmd, size, sizeof(*cmd), copy);
        return r;
}

static int bus_make_parse(const BridgeCreds *creds, void *buf, size_t size, NativeBusMake *ret) {
        struct kdbus_cmd *cmd = buf;
        const struct kdbus_item *item;
        const struct kdbus_bloom_parameter *bloom = NULL;
        const char *name = NULL;
        uint64_t send = 0, recv = 0;
        bool have_send = false, have_recv = false;
        int r;

        r = native_make_cmd_check(cmd, size);
        if (r)
                return r;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_MAKE_NAME:
                        r = native_item_name_check(item);
                        if (r)
                                return r;
                        if (name)
                                return -EINVAL;
                        name = item->str;
                        break;
                case KDBUS_ITEM_BLOOM_PARAMETER:
                        if (bloom || len != sizeof(struct kdbus_bloom_parameter))
                                return -EINVAL;
                        bloom = &item->bloom_parameter;
                        break;
                case KDBUS_ITEM_ATTACH_FLAGS_SEND:
                        if (have_send)
                                return -EINVAL;
                        have_send = true;
                        r = attach_flags(item, &send);
                        if (r)
                                return r;
                        break;
                case KDBUS_ITEM_ATTACH_FLAGS_RECV:
                        if (have_recv)
                                return -EINVAL;
                        have_recv = true;
                        r = attach_flags(item, &recv);
                        if (r)
                                return r;
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (!name || !bloom)
                return -EINVAL;         /* kdbus_args_parse(): a mandatory item missing */
        if (!bus_node_name_is_valid(creds->uid, name))
                return -EINVAL;
        if (!bloom_params_are_valid(bloom->size, bloom->n_hash))
                return -EINVAL;

        memset(ret, 0, sizeof(*ret));
        memcpy(ret->name, name, strlen(name) + 1);
        ret->access = cmd->flags;
        ret->attach_owner = send;
        ret->attach_req = recv;
        ret->bloom_size = bloom->size;
        ret->bloom_n_hash = bloom->n_hash;
        cmd->return_flags = 0;
        return 0;
}

/**
 * native_bus_make_capture() - keep the maker's AUXGROUPS and SECLABEL for BUS_CREATOR_INFO
 * @bus:        the new instance's bus (nothing captured yet)
 * @maker:      the credentials of the maker's handle, as captured at connect (the
 *              listener's, which HELLO gives a connection: the primary group, SO_PEERSEC)
 * @offer:      BUS_MAKE's ATTACH_FLAGS_SEND
 *
 * kdbus collected the maker's metadata at BUS_MAKE and gave what attach_flags_owner
 * offered; the /proc items are read separately (native_meta_read_proc()), these two are
 * copied from @maker, so BUS_CREATOR_INFO writes them as CONN_INFO writes a connection's.
 *
 * Return: 0 or -ENOMEM.
 */
int native_bus_make_capture(Bus *bus, const BridgeCreds *maker, uint64_t offer) {
        if ((offer & KDBUS_ATTACH_AUXGROUPS) && maker->n_groups) {
                bus->creator_groups = malloc(maker->n_groups * sizeof(*maker->groups));
                if (!bus->creator_groups)
                        return -ENOMEM;
                memcpy(bus->creator_groups, maker->groups,
                       maker->n_groups * sizeof(*maker->groups));
                bus->n_creator_groups = maker->n_groups;
        }
        if ((offer & KDBUS_ATTACH_SECLABEL) && maker->seclabel) {
                bus->creator_seclabel = strdup(maker->seclabel);
                if (!bus->creator_seclabel)
                        return -ENOMEM;
        }
        return 0;
}
