/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* ENDPOINT_MAKE and ENDPOINT_UPDATE (native/endpoint.c) on the core's BusEndpoint. */
#include <stddef.h>
#include <stdint.h>

typedef struct Bus Bus;
typedef struct BridgeCreds BridgeCreds;
typedef struct BusEndpoint BusEndpoint;

/* ENDPOINT_MAKE (on a handle without HELLO) and
 * ENDPOINT_UPDATE (by the handle that made the endpoint). */
int native_endpoint_make(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                         void *buf, size_t size, uint64_t *ret_flags, BusEndpoint **ret);
int native_endpoint_update(BusEndpoint *ep, void *buf, size_t size);
/* Our extensions on a handle without HELLO: ENDPOINT_UPDATE naming the endpoint with a
 * MAKE_NAME item (its maker or the privileged), and KDBUS_CMD_ENDPOINT_LIST. */
int native_endpoint_update_named(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                                 void *buf, size_t size);
int native_endpoint_list(Bus *bus, const BridgeCreds *creds, const BusEndpoint *via,
                         void **ret, size_t *ret_size);
