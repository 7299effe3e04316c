/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* NAME_ACQUIRE, NAME_RELEASE, LIST, CONN_INFO and kdbus's name flags (native/names.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kdbus/kdbus.h"

typedef struct Bus Bus;
typedef struct NativeConn NativeConn;
typedef struct NativeCommandIo NativeCommandIo;

int native_conn_name_acquire(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_name_release(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_list(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_info(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);


/* The name flags kdbus reported for an activator holding its name (no owner has it). */
#define NATIVE_ACTIVATOR_NAME_FLAGS (KDBUS_NAME_ACTIVATOR | KDBUS_NAME_PRIMARY)
/* The kdbus name flags of an owner that asked with BRIDGE_NAME_* @flags, @primary or
 * queued; of @bus's activator for @name (IN_QUEUE while an owner has it). */
uint64_t native_name_flags(unsigned flags, bool primary);
uint64_t native_activator_name_flags(Bus *bus, const char *name);
