/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SipHash-2-4 written from the paper's description: 64-bit state v0..v3, two compression
 * rounds per 8-byte word, four finalisation rounds; the last word carries the length.
 */
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include "util/siphash24.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static inline uint64_t read_le64(const uint8_t *p) {
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
               (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
               (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

#define SIPROUND()                                                      \
        do {                                                            \
                v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
                v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                  \
                v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                  \
                v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
        } while (0)

uint64_t siphash24(const void *data, size_t size, const uint8_t key[16]) {
        const uint8_t *in = data, *end = in + (size & ~(size_t)7);
        uint64_t k0 = read_le64(key), k1 = read_le64(key + 8), m, b;
        uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
        uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
        uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
        uint64_t v3 = 0x7465646279746573ULL ^ k1;
        size_t left = size & 7, i;

        for (; in != end; in += 8) {
                m = read_le64(in);
                v3 ^= m;
                SIPROUND();
                SIPROUND();
                v0 ^= m;
        }

        b = (uint64_t)size << 56;
        for (i = 0; i < left; ++i)
                b |= (uint64_t)in[i] << (8 * i);

        v3 ^= b;
        SIPROUND();
        SIPROUND();
        v0 ^= b;
        v2 ^= 0xff;
        SIPROUND();
        SIPROUND();
        SIPROUND();
        SIPROUND();
        return v0 ^ v1 ^ v2 ^ v3;
}

static const uint8_t *table_key(void) {
        static uint8_t key[16];
        static bool init;

        if (!init) {
                /* A weak key only makes collisions guessable, never wrong: ignore failure. */
                if (getrandom(key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
                        memset(key, 0x5a, sizeof(key));
                init = true;
        }
        return key;
}

uint64_t hash_string(const char *s) {
        return siphash24(s, strlen(s), table_key());
}

uint64_t hash_u64(uint64_t v) {
        return siphash24(&v, sizeof(v), table_key());
}
