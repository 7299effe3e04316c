/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * One native client (proxy/native-client.c): the socket of a peer that speaks kdbus's
 * commands (struct kdbus_wire_request / kdbus_wire_reply datagrams, docs/native.md), its
 * NativeConn after HELLO (native/conn.h), its SYNC_REPLY, held RECV and batch state, and
 * the handles kdbus's setup commands make of it (an endpoint's owner, a bus instance's).
 * The listener (proxy/native-listener.h) accepts it and frees what is left at its end.
 */
#include "util/list.h"

typedef struct NativeClient NativeClient;
typedef struct NativeListener NativeListener;

/* A peer accepted on @l's socket @fd (taken). Return: 0 or a negative errno (closed). */
int native_client_new(NativeListener *l, int fd);
/* Closes it: it leaves the bus, and what it made (an endpoint, a bus instance) goes. */
void native_client_free(NativeClient *c);
/* Closes every client on the list (NativeListener.clients). */
void native_client_free_all(List *clients);
/* Answers the held RECVs (KDBUS_WIRE_BATCH_HOLD_RECV) that a delivery made ready. */
void native_client_flush_held(void);
