/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Unaligned loads and stores in either byte order. The wire is read through memcpy, so a
 * buffer with any alignment works, and the compiler turns each into one load plus bswap.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#  define WIRE_HOST_BIG_ENDIAN 1
#else
#  define WIRE_HOST_BIG_ENDIAN 0
#endif

static inline uint16_t wire_load16(const uint8_t *p, bool be) {
        uint16_t v;

        memcpy(&v, p, sizeof(v));
        return be != WIRE_HOST_BIG_ENDIAN ? __builtin_bswap16(v) : v;
}

static inline uint32_t wire_load32(const uint8_t *p, bool be) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return be != WIRE_HOST_BIG_ENDIAN ? __builtin_bswap32(v) : v;
}

static inline uint64_t wire_load64(const uint8_t *p, bool be) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return be != WIRE_HOST_BIG_ENDIAN ? __builtin_bswap64(v) : v;
}

static inline void wire_store16(uint8_t *p, bool be, uint16_t v) {
        if (be != WIRE_HOST_BIG_ENDIAN)
                v = __builtin_bswap16(v);
        memcpy(p, &v, sizeof(v));
}

static inline void wire_store32(uint8_t *p, bool be, uint32_t v) {
        if (be != WIRE_HOST_BIG_ENDIAN)
                v = __builtin_bswap32(v);
        memcpy(p, &v, sizeof(v));
}

static inline void wire_store64(uint8_t *p, bool be, uint64_t v) {
        if (be != WIRE_HOST_BIG_ENDIAN)
                v = __builtin_bswap64(v);
        memcpy(p, &v, sizeof(v));
}
