/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The checks every native command shares on its items, as kdbus's item.c and handle.c
 * made them: bounds and sizes (native_items_check()), kdbus_item_validate_name() for
 * MAKE_NAME and CONN_DESCRIPTION, the NEGOTIATE item any command may carry
 * (native_items_negotiate()), and the head of BUS_MAKE / ENDPOINT_MAKE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/endpoint.h"
#include "kdbus/kdbus.h"
#include "native/items.h"
#include "util/error.h"

/**
 * native_items_check() - every item lies inside @size bytes, is at least a header long
 * @items:      the first item
 * @size:       bytes from @items to the end of the struct
 *
 * Return: 0 or -EINVAL.
 */
int native_items_check(const void *items, size_t size) {
        const uint8_t *p = items;
        size_t pos = 0;

        while (pos < size) {
                const struct kdbus_item *item = (const void *)(p + pos);

                if (size - pos < KDBUS_ITEM_HEADER_SIZE || item->size < KDBUS_ITEM_HEADER_SIZE ||
                    item->size > size - pos)
                        return -EINVAL;
                pos += KDBUS_ALIGN8(item->size);
        }
        return 0;
}

/**
 * native_item_name_check() - kdbus_item_validate_name(): a MAKE_NAME or CONN_DESCRIPTION
 * @item:       the item (inside its command: native_items_check())
 *
 * The string and its NUL fill the payload exactly; the string is bus_sysname_is_valid().
 * The size is looked at first, as kdbus does.
 *
 * Return: 0, -EINVAL, or -ENAMETOOLONG (a payload over BUS_ENDPOINT_NAME_MAX + 1 bytes).
 */
int native_item_name_check(const struct kdbus_item *item) {
        size_t len = item->size - KDBUS_ITEM_HEADER_SIZE;

        if (len < 2)
                return -EINVAL;
        if (len > BUS_ENDPOINT_NAME_MAX + 1)
                return -ENAMETOOLONG;
        if (memchr(item->str, '\0', len) != item->str + len - 1)
                return -EINVAL;
        return bus_sysname_is_valid(item->str) ? 0 : -EINVAL;
}

/**
 * native_items_negotiate() - the command without its KDBUS_ITEM_NEGOTIATE item
 * @cmd:        the command struct (its size first), in a buffer of @size bytes
 * @size:       bytes at @cmd
 * @items_at:   where its items start (the fixed struct's size)
 * @ret_copy:   NULL (no such item: run the command on @cmd), or a copy of the @size bytes
 *              with the items after it moved up over it and cmd->size smaller by its
 *              aligned size, to run the command on and hand to native_items_negotiate_done()
 *
 * kdbus_args_parse() accepts one NEGOTIATE item (a payload of u64 item types) in every
 * command; the commands' own item checks never see it here. kdbus also zeroed the types it
 * does not know in the item's payload, which the peer would read back from its buffer; our
 * reply carries the fixed struct only, so that is not done. A struct or items out of
 * bounds are left alone, for the command to refuse.
 *
 * Return: 0, -EINVAL (a second NEGOTIATE item, or a payload not a multiple of 8), -ENOMEM.
 */
int native_items_negotiate(const void *cmd, size_t size, size_t items_at, void **ret_copy) {
        const struct kdbus_cmd *c = cmd;
        const uint8_t *p = cmd;
        size_t pos, at = SIZE_MAX, cut = 0;
        struct kdbus_cmd *copy;

        *ret_copy = NULL;
        if (size < items_at || c->size < items_at || c->size > size ||
            native_items_check(p + items_at, c->size - items_at))
                return 0;
        for (pos = items_at; pos < c->size;) {
                const struct kdbus_item *item = (const void *)(p + pos);

                if (item->type == KDBUS_ITEM_NEGOTIATE) {
                        if (at != SIZE_MAX ||
                            (item->size - KDBUS_ITEM_HEADER_SIZE) % sizeof(uint64_t))
                                return -EINVAL;
                        at = pos;
                        cut = MIN((size_t)KDBUS_ALIGN8(item->size), (size_t)c->size - pos);
                }
                pos += KDBUS_ALIGN8(item->size);
        }
        if (at == SIZE_MAX)
                return 0;
        copy = malloc(size);
        if (!copy)
                return error_origin(-ENOMEM);
        /* only the items close up: what follows the command (SEND's message, found by
         * its offset) stays where it was */
        memcpy(copy, cmd, size);
        memmove((uint8_t *)copy + at, p + at + cut, c->size - at - cut);
        copy->size -= cut;
        *ret_copy = copy;
        return 0;
}

/**
 * native_items_negotiate_head() - a setup command's head, then native_items_negotiate()
 * @cmd:        the command struct, in a buffer of @size bytes
 * @size:       bytes at @cmd
 * @items_at:   the fixed struct's size
 * @ret_copy:   as native_items_negotiate()
 *
 * HELLO, BUS_MAKE, ENDPOINT_MAKE and ENDPOINT_UPDATE refuse a struct out of bounds before
 * anything else (a connected handle's commands check it later, native/command.c).
 *
 * Return: 0, -EINVAL (cmd->size below @items_at or beyond @size, or
 * native_items_negotiate()'s), -ENOMEM.
 */
int native_items_negotiate_head(void *cmd, size_t size, size_t items_at, void **ret_copy) {
        const struct kdbus_cmd *c = cmd;

        *ret_copy = NULL;
        if (size < items_at || c->size < items_at || c->size > size)
                return -EINVAL;
        return native_items_negotiate(cmd, size, items_at, ret_copy);
}

/**
 * native_items_negotiate_done() - the command ran on the copy: give the peer its struct
 * @cmd:        the command as the peer sent it
 * @size:       bytes at @cmd
 * @struct_size: the fixed struct's size (what commands write and replies carry)
 * @copy:       native_items_negotiate()'s copy, or NULL (then nothing is done); freed
 *
 * The fixed struct goes back with the size the peer sent.
 */
void native_items_negotiate_done(void *cmd, size_t size, size_t struct_size, void *copy) {
        uint64_t size0;

        if (!copy)
                return;
        size0 = ((struct kdbus_cmd *)cmd)->size;
        memcpy(cmd, copy, MIN(size, struct_size));
        ((struct kdbus_cmd *)cmd)->size = size0;
        free(copy);
}

/**
 * native_make_cmd_check() - the checks BUS_MAKE and ENDPOINT_MAKE share
 * @cmd:        the command (in a buffer of @size bytes)
 * @size:       bytes at @cmd
 *
 * KDBUS_FLAG_NEGOTIATE: cmd->flags says the flags known, nothing else is checked.
 *
 * Return: 0, 1 (NEGOTIATE answered), or -EINVAL (bad size, unknown flags, an item out of
 * bounds).
 */
int native_make_cmd_check(struct kdbus_cmd *cmd, size_t size) {
        const uint64_t known = KDBUS_MAKE_ACCESS_GROUP | KDBUS_MAKE_ACCESS_WORLD;

        if (size < sizeof(*cmd) || cmd->size < sizeof(*cmd) || cmd->size > size)
                return -EINVAL;
        if (cmd->flags & KDBUS_FLAG_NEGOTIATE) {
                cmd->flags = known;
                cmd->return_flags = 0;
                return 1;
        }
        if (cmd->flags & ~known)
                return -EINVAL;
        return native_items_check(cmd->items, cmd->size - sizeof(*cmd));
}
