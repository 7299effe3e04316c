/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * BUS_MAKE's command struct (kdbus_cmd with items), checked as kdbus checks it. The bus
 * instance itself (a Bus with its own sockets, living while the handle does) is made by
 * proxy/bus-instance.c; this only reads and validates the request, so the core's rules are
 * unit-testable. See docs/native.md, "Bus instances".
 */
#include <stddef.h>
#include <stdint.h>

typedef struct Bus Bus;
typedef struct BridgeCreds BridgeCreds;

/* kdbus's node names: at most this long (BUS_ENDPOINT_NAME_MAX, bus_node_name_is_valid()). */
#define NATIVE_BUS_NAME_MAX 63u

typedef struct NativeBusMake {
        char name[NATIVE_BUS_NAME_MAX + 1];     /* MAKE_NAME: "<uid>-<name>" */
        uint64_t access;                        /* KDBUS_MAKE_ACCESS_GROUP / _WORLD */
        uint64_t attach_owner;                  /* ATTACH_FLAGS_SEND: Bus.attach_flags_owner */
        uint64_t attach_req;                    /* ATTACH_FLAGS_RECV: Bus.attach_flags_req */
        uint64_t bloom_size;                    /* BLOOM_PARAMETER: Bus.bloom */
        uint64_t bloom_n_hash;
} NativeBusMake;

/*
 * Read and check BUS_MAKE's @buf (@size bytes) from a peer with @creds.
 * Return: 0 (*ret filled), 1 (NEGOTIATE: the known flags are in the struct, nothing to
 * make), or -EINVAL (bad struct, flags, items, name, or bloom parameters outside kdbus's
 * bounds: size 8..4096 and a multiple of 8, n_hash >= 1; MAKE_NAME or BLOOM_PARAMETER
 * missing), -ENAMETOOLONG (a name over 63 bytes).
 */
int native_bus_make_parse(const BridgeCreds *creds, void *buf, size_t size, NativeBusMake *ret);

/*
 * Keep the maker's AUXGROUPS and SECLABEL for BUS_CREATOR_INFO of @bus (its instance), as
 * far as @offer (BUS_MAKE's ATTACH_FLAGS_SEND) offers them: what @maker (its handle's
 * credentials, captured at connect as a connection's for HELLO) holds.
 * Return: 0 or -ENOMEM.
 */
int native_bus_make_capture(Bus *bus, const BridgeCreds *maker, uint64_t offer);
