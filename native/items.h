/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The checks of a command's items that every native command shares (native/items.c). */
#include <stddef.h>

struct kdbus_cmd;
struct kdbus_item;

/* Every item in @size bytes from @items is at least a header long and inside: 0 or -EINVAL. */
int native_items_check(const void *items, size_t size);

/* kdbus_item_validate_name() for a MAKE_NAME or CONN_DESCRIPTION item: 0, -EINVAL or
 * -ENAMETOOLONG. */
int native_item_name_check(const struct kdbus_item *item);

/* The command at @cmd (items from @items_at) without its KDBUS_ITEM_NEGOTIATE item:
 * *ret_copy NULL (it has none) or a copy to run the command on, then handed to
 * native_items_negotiate_done(). 0, -EINVAL or -ENOMEM. */
int native_items_negotiate(const void *cmd, size_t size, size_t items_at, void **ret_copy);
/* The same after refusing a struct out of bounds (-EINVAL): setup commands' heads. */
int native_items_negotiate_head(void *cmd, size_t size, size_t items_at, void **ret_copy);
/* Copy the fixed struct of @copy back to @cmd (cmd->size as sent) and free @copy. */
void native_items_negotiate_done(void *cmd, size_t size, size_t struct_size, void *copy);

/* The struct kdbus_cmd that BUS_MAKE and ENDPOINT_MAKE share: its size, the MAKE_ACCESS_*
 * flags (NEGOTIATE answered: 1), its items' bounds. 0, 1 or -EINVAL. */
int native_make_cmd_check(struct kdbus_cmd *cmd, size_t size);
