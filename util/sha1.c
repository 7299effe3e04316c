/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-1 as FIPS 180-4 section 6.1 defines it: 512-bit blocks, 80 rounds, big-endian words. */
#include <string.h>
#include "util/sha1.h"

static uint32_t rol32(uint32_t x, unsigned n) {
        return x << n | x >> (32 - n);
}

static void sha1_block(Sha1 *s, const uint8_t *p) {
        uint32_t w[80], a, b, c, d, e, f, k, t;
        unsigned i;

        for (i = 0; i < 16; ++i)
                w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
                       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (i = 16; i < 80; ++i)
                w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        a = s->h[0];
        b = s->h[1];
        c = s->h[2];
        d = s->h[3];
        e = s->h[4];
        for (i = 0; i < 80; ++i) {
                if (i < 20) {
                        f = (b & c) | (~b & d);
                        k = 0x5a827999u;
                } else if (i < 40) {
                        f = b ^ c ^ d;
                        k = 0x6ed9eba1u;
                } else if (i < 60) {
                        f = (b & c) | (b & d) | (c & d);
                        k = 0x8f1bbcdcu;
                } else {
                        f = b ^ c ^ d;
                        k = 0xca62c1d6u;
                }
                t = rol32(a, 5) + f + e + k + w[i];
                e = d;
                d = c;
                c = rol32(b, 30);
                b = a;
                a = t;
        }
        s->h[0] += a;
        s->h[1] += b;
        s->h[2] += c;
        s->h[3] += d;
        s->h[4] += e;
}

void sha1_init(Sha1 *s) {
        *s = (Sha1){ .h = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u } };
}

void sha1_update(Sha1 *s, const void *data, size_t n) {
        const uint8_t *p = data;

        s->n_bytes += n;
        while (n > 0) {
                size_t k = sizeof(s->block) - s->n_block;

                if (k > n)
                        k = n;
                memcpy(s->block + s->n_block, p, k);
                s->n_block += k;
                p += k;
                n -= k;
                if (s->n_block == sizeof(s->block)) {
                        sha1_block(s, s->block);
                        s->n_block = 0;
                }
        }
}

void sha1_final(Sha1 *s, uint8_t ret_digest[SHA1_DIGEST_SIZE]) {
        uint64_t bits = s->n_bytes * 8;
        uint8_t pad[72] = { 0x80 };
        size_t n_pad = (s->n_block < 56 ? 56 : 120) - s->n_block;
        unsigned i;

        for (i = 0; i < 8; ++i)
                pad[n_pad + i] = (uint8_t)(bits >> (56 - 8 * i));
        sha1_update(s, pad, n_pad + 8);
        for (i = 0; i < 5; ++i) {
                ret_digest[4 * i] = (uint8_t)(s->h[i] >> 24);
                ret_digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
                ret_digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
                ret_digest[4 * i + 3] = (uint8_t)s->h[i];
        }
}
