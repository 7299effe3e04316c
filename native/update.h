/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* UPDATE and BUS_CREATOR_INFO (native/update.c). */
#include <stddef.h>

typedef struct NativeConn NativeConn;
typedef struct NativeCommandIo NativeCommandIo;

/* Return: 0 or a negative errno for the peer. */
int native_conn_update(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
int native_conn_bus_creator_info(NativeConn *nc, void *buf, size_t size,
                                 NativeCommandIo *io);
