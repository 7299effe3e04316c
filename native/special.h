/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Monitors and activators, kdbus's special connections (native/special.c). */
#include <stdbool.h>
#include <stdint.h>

typedef struct Bus Bus;
typedef struct BridgeCreds BridgeCreds;
typedef struct NativeConn NativeConn;

/* HELLO's flags and NAME item: -EINVAL (more than one kind, a NAME where none belongs or
 * none where one must be), -EPERM (not the bus's owner uid or root), -EOPNOTSUPP (policy
 * holders). */
int native_special_hello_check(const Bus *bus, const BridgeCreds *creds, uint64_t flags,
                               const char *name);
/* Activate @nc's connection as its HELLO flags say (ordinary, monitor, activator of
 * @name). Return: 0 or a negative errno for the peer. */
int native_special_hello(NativeConn *nc, const char *name);
/* May @nc (a monitor, an activator) run @command? */
bool native_special_may(const NativeConn *nc, uint64_t command);
/* The dst_id a monitor sees for a message to @destination. */
uint64_t native_monitor_dst_id(Bus *bus, const char *destination);
