/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Policy holders and activators' policy entries (native/holder.c): their entries are the
 * bus's Bus.holder_policy (bridge/name-acl.h). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct NativeConn NativeConn;
struct kdbus_item;

int native_holder_set(NativeConn *nc, const struct kdbus_item *items, size_t items_size);
int native_activator_policy_set(NativeConn *nc, const struct kdbus_item *items,
                                size_t items_size);
void native_holder_drop(NativeConn *nc);
bool native_holder_may(const NativeConn *nc, uint64_t command);
