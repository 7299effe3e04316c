/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * SipHash-2-4 (Aumasson, Bernstein): a keyed hash, so peers cannot choose names that
 * collide in our tables, and the bloom filter's hash family.
 */
#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const void *data, size_t size, const uint8_t key[16]);

/* Hash of a NUL-terminated string with the process-wide random table key. */
uint64_t hash_string(const char *s);
/* For integer keys a peer chooses (a call's serial); keys only the bus hands out need no
 * keyed hash (bus_conn_id_hash()). */
uint64_t hash_u64(uint64_t v);
