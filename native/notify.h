/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* kdbus's notifications (KDBUS_SRC_ID_KERNEL messages, native/notify.c): the native front
 * end's BusObserver and the reply hooks of its BridgeConnOps. */
#include <stdbool.h>
#include <stdint.h>
#include "bridge/bus.h"

typedef struct BridgeConn BridgeConn;

/* Registered on a bus at its first native HELLO (bus_add_observer()). */
extern const BusObserver native_bus_observer;

void native_notify_id(Bus *bus, BridgeConn *conn, bool added);
void native_notify_name(Bus *bus, const char *name, BridgeConn *old_owner, unsigned old_flags,
                        BridgeConn *new_owner, unsigned new_flags);
/* One NAME_* notification with the ids and flags given. */
void native_notify_name_change(Bus *bus, uint64_t type, const char *name, uint64_t old_id,
                               uint64_t old_flags, uint64_t new_id, uint64_t new_flags);
/* BridgeConnOps.reply_lost: a call of @caller (@userdata its NativeConn) will get no reply:
 * a REPLY_TIMEOUT / REPLY_DEAD message, or its SYNC_REPLY fails ETIMEDOUT / EPIPE. Return:
 * true (told). */
bool native_notify_reply_lost(BridgeConn *caller, void *userdata, uint32_t serial,
                              bool timed_out);
/* BridgeConnOps.reply_undelivered: the answer to @caller's call @serial could not be
 * delivered (@bridge_error, a positive BRIDGE_E_*): a caller blocked in SYNC_REPLY on it
 * gets the errno, EREMOTEIO for fds it refuses (kdbus_conn_entry_sync_attach()). */
void native_notify_reply_undelivered(BridgeConn *caller, void *userdata, uint32_t serial,
                                     int bridge_error);
