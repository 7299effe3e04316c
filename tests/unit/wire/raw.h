/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Test helper: a byte-level message encoder, independent of wire/writer.c, in either byte
 * order, that writes whatever it is told, so tests can craft exactly one broken rule.
 * Offsets are absolute; the body starts 8-aligned, so body alignment is the same.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct Raw {
        GByteArray *a;
        bool be;
        size_t body_start;
} Raw;

static inline void raw_bytes(Raw *r, const void *p, size_t n) {
        g_byte_array_append(r->a, p, (guint)n);
}

static inline void raw_pad(Raw *r, unsigned align) {
        static const uint8_t zero[8];

        raw_bytes(r, zero, (align - r->a->len % align) % align);
}

static inline void raw_y(Raw *r, uint8_t v) {
        raw_bytes(r, &v, 1);
}

static inline void raw_u16(Raw *r, uint16_t v) {
        raw_pad(r, 2);
        v = r->be ? GUINT16_TO_BE(v) : GUINT16_TO_LE(v);
        raw_bytes(r, &v, 2);
}

static inline void raw_u32(Raw *r, uint32_t v) {
        raw_pad(r, 4);
        v = r->be ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
        raw_bytes(r, &v, 4);
}

static inline void raw_u64(Raw *r, uint64_t v) {
        raw_pad(r, 8);
        v = r->be ? GUINT64_TO_BE(v) : GUINT64_TO_LE(v);
        raw_bytes(r, &v, 8);
}

/* a string of @n bytes (may contain anything), then NUL */
static inline void raw_s_len(Raw *r, const char *s, size_t n) {
        raw_u32(r, (uint32_t)n);
        raw_bytes(r, s, n);
        raw_y(r, 0);
}

static inline void raw_s(Raw *r, const char *s) {
        raw_s_len(r, s, strlen(s));
}

static inline void raw_g(Raw *r, const char *s) {
        raw_y(r, (uint8_t)strlen(s));
        raw_bytes(r, s, strlen(s) + 1);
}

static inline void raw_init(Raw *r, bool be, uint8_t type, uint8_t flags, uint32_t serial) {
        r->a = g_byte_array_new();
        r->be = be;
        r->body_start = 0;
        raw_y(r, be ? 'B' : 'l');
        raw_y(r, type);
        raw_y(r, flags);
        raw_y(r, 1);
        raw_u32(r, 0);
        raw_u32(r, serial);
        raw_u32(r, 0);
}

/* header field: code, then the variant's signature; the caller writes the value */
static inline void raw_field(Raw *r, uint8_t code, const char *sig) {
        raw_pad(r, 8);
        raw_y(r, code);
        raw_g(r, sig);
}

static inline void raw_field_s(Raw *r, uint8_t code, const char *type, const char *s) {
        raw_field(r, code, type);
        if (type[0] == 'g')
                raw_g(r, s);
        else
                raw_s(r, s);
}

static inline void raw_field_u(Raw *r, uint8_t code, uint32_t v) {
        raw_field(r, code, "u");
        raw_u32(r, v);
}

static inline void raw_set_u32(Raw *r, size_t off, uint32_t v) {
        v = r->be ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
        memcpy(r->a->data + off, &v, 4);
}

static inline void raw_fields_end(Raw *r) {
        raw_set_u32(r, 12, r->a->len - 16);
        raw_pad(r, 8);
        r->body_start = r->a->len;
}

/* sets the body length from what was written; returns the bytes (g_free) */
static inline uint8_t *raw_finish(Raw *r, size_t *size) {
        if (!r->body_start)
                raw_fields_end(r);
        raw_set_u32(r, 4, r->a->len - (uint32_t)r->body_start);
        *size = r->a->len;
        return g_byte_array_free(r->a, FALSE);
}

/* the usual start: a method call with PATH and MEMBER (and SIGNATURE when @sig) */
static inline void raw_call(Raw *r, bool be, const char *sig) {
        raw_init(r, be, 1, 0, 1);
        raw_field_s(r, 1, "o", "/p");
        raw_field_s(r, 3, "s", "M");
        if (sig)
                raw_field_s(r, 8, "g", sig);
}
