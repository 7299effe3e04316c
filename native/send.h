/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* SEND (native/send.c): a kdbus_msg becomes a dbus1 message routed by the core. */
#include <stddef.h>

typedef struct NativeConn NativeConn;
typedef struct NativeCommandIo NativeCommandIo;

/* SEND: @buf holds the kdbus_cmd_send and what it points at; io->fds came with it (borrowed).
 * Return: 0, 1 (SYNC_REPLY pending) or a negative errno for the peer. */
int native_conn_send(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io);
