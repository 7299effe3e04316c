/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * SHA-1 (FIPS 180-4), for DBUS_COOKIE_SHA1 authentication only: the D-Bus specification
 * fixes that mechanism's hash; nothing here is meant to resist collisions.
 */
#include <stddef.h>
#include <stdint.h>

#define SHA1_DIGEST_SIZE 20u

typedef struct Sha1 {
        uint32_t h[5];
        uint64_t n_bytes;               /* fed so far */
        uint8_t block[64];
        size_t n_block;                 /* bytes in @block */
} Sha1;

void sha1_init(Sha1 *s);
void sha1_update(Sha1 *s, const void *data, size_t n);
void sha1_final(Sha1 *s, uint8_t ret_digest[SHA1_DIGEST_SIZE]);
