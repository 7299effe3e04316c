/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>
#include "util/hex.h"

int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

void hex_encode(const void *in, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";
        const uint8_t *p = in;
        size_t i;

        for (i = 0; i < n; ++i) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 15];
        }
        out[2 * n] = '\0';
}

ssize_t hex_decode(const char *in, size_t n, void *out) {
        uint8_t *o = out;
        size_t i;

        for (i = 0; i < n; ++i) {
                int v = hex_digit(in[i]);

                if (v < 0)
                        return -1;
                if (i % 2 == 0)
                        o[i / 2] = (uint8_t)(v << 4);
                else
                        o[i / 2] |= (uint8_t)v;
        }
        return (ssize_t)((n + 1) / 2);
}
