/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a validated body. The reader keeps one frame per open container; a frame walks
 * its signature span, and an array frame starts its element type over until the array's
 * end offset is reached. Since wire_message_parse() checked the data, only the caller's
 * requests are checked here: a wrong type is WIRE_E_BAD_SIGNATURE, never a crash.
 * Recursion (skip -> exit -> skip) is bounded by the validated nesting depth.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "util/macro.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/signature.h"

/**
 * wire_reader_init() - start reading the body of a parsed message
 * @r:          the reader
 * @msg:        the message
 * @hdr:        its header from wire_message_parse()
 */
void wire_reader_init(WireReader *r, const void *msg, const WireHeader *hdr) {
        r->body = (const uint8_t *)msg + hdr->body_offset;
        r->pos = 0;
        r->size = hdr->body_size;
        r->big_endian = hdr->big_endian;
        r->depth = 0;
        r->stack[0] = (WireReaderFrame) {
                .container = 0,
                .end = hdr->body_size,
                .sig = hdr->signature,
                .sig_pos = 0,
                .sig_end = strlen(hdr->signature),
        };
}

/**
 * wire_reader_peek() - type code of the next value in the current container
 * @r:          the reader
 *
 * Return: the type code, or 0 at the end of the container.
 */
char wire_reader_peek(const WireReader *r) {
        const WireReaderFrame *f = &r->stack[r->depth];

        if (f->container == 'a' && r->pos >= f->end)
                return 0;
        if (f->sig_pos >= f->sig_end)
                return 0;
        return f->sig[f->sig_pos];
}

/* The current frame consumed @n signature characters (one complete type). */
static void frame_advance(WireReader *r, size_t n) {
        WireReaderFrame *f = &r->stack[r->depth];

        f->sig_pos += n;
        if (f->container == 'a' && f->sig_pos >= f->sig_end)
                f->sig_pos = 0;
}

static void reader_align(WireReader *r, unsigned a) {
        r->pos = ALIGN_TO(r->pos, (size_t)a);
}

/**
 * wire_reader_read_basic() - read one basic value
 * @r:          the reader
 * @type:       its type code
 * @ret:        where to store it (see wire_writer_append_basic() for the C types)
 *
 * Return: 0, or WIRE_E_BAD_SIGNATURE if the next value is not of @type.
 */
int wire_reader_read_basic(WireReader *r, char type, void *ret) {
        const uint8_t *p;
        uint32_t len;

        if (!wire_type_is_basic(type) || wire_reader_peek(r) != type)
                return WIRE_E_BAD_SIGNATURE;

        reader_align(r, wire_type_alignment(type));
        p = r->body + r->pos;
        switch (type) {
        case 'y':
                *(uint8_t *)ret = *p;
                r->pos += 1;
                break;
        case 'n':
        case 'q': {
                uint16_t v = wire_load16(p, r->big_endian);

                memcpy(ret, &v, sizeof(v));
                r->pos += 2;
                break;
        }
        case 'b':
        case 'h':
        case 'i':
        case 'u': {
                uint32_t v = wire_load32(p, r->big_endian);

                memcpy(ret, &v, sizeof(v));
                r->pos += 4;
                break;
        }
        case 'x':
        case 't':
        case 'd': {
                uint64_t v = wire_load64(p, r->big_endian);

                memcpy(ret, &v, sizeof(v));
                r->pos += 8;
                break;
        }
        case 's':
        case 'o':
                len = wire_load32(p, r->big_endian);
                *(const char **)ret = (const char *)p + 4;
                r->pos += 4 + (size_t)len + 1;
                break;
        case 'g':
                *(const char **)ret = (const char *)p + 1;
                r->pos += 1 + (size_t)*p + 1;
                break;
        }
        frame_advance(r, 1);
        return 0;
}

static bool contents_match(const char *span, size_t n, const char *contents) {
        return !contents || (strlen(contents) == n && memcmp(span, contents, n) == 0);
}

/**
 * wire_reader_enter() - open the container that comes next
 * @r:          the reader
 * @container:  'a', '(', '{' or 'v'
 * @contents:   the expected element/member/variant signature, or NULL to accept any
 *
 * Return: 0, or WIRE_E_BAD_SIGNATURE if the next value is not such a container.
 */
int wire_reader_enter(WireReader *r, char container, const char *contents) {
        WireReaderFrame *f = &r->stack[r->depth], nf = { .container = container };
        const char *t;
        size_t tlen;

        if (r->depth >= WIRE_READER_MAX_DEPTH || wire_reader_peek(r) != container)
                return WIRE_E_BAD_SIGNATURE;
        t = f->sig + f->sig_pos;

        switch (container) {
        case 'a': {
                uint32_t len;

                tlen = wire_signature_type_len(t);
                if (!contents_match(t + 1, tlen - 1, contents))
                        return WIRE_E_BAD_SIGNATURE;
                reader_align(r, 4);
                len = wire_load32(r->body + r->pos, r->big_endian);
                r->pos += 4;
                reader_align(r, wire_type_alignment(t[1]));
                nf.end = r->pos + len;
                nf.sig = t + 1;
                nf.sig_end = tlen - 1;
                break;
        }
        case '(':
        case '{':
                tlen = wire_signature_type_len(t);
                if (!contents_match(t + 1, tlen - 2, contents))
                        return WIRE_E_BAD_SIGNATURE;
                reader_align(r, 8);
                nf.sig = t + 1;
                nf.sig_end = tlen - 2;
                break;
        case 'v': {
                const uint8_t *p = r->body + r->pos;

                tlen = 1;
                if (!contents_match((const char *)p + 1, *p, contents))
                        return WIRE_E_BAD_SIGNATURE;
                nf.sig = (const char *)p + 1;
                nf.sig_end = *p;
                r->pos += 1 + (size_t)*p + 1;
                break;
        }
        default:
                return WIRE_E_BAD_SIGNATURE;
        }

        frame_advance(r, tlen);
        r->stack[++r->depth] = nf;
        return 0;
}

/**
 * wire_reader_exit() - leave the current container, skipping what was not read of it
 * @r:          the reader
 *
 * Return: 0, or WIRE_E_BAD_SIGNATURE if no container is open.
 */
int wire_reader_exit(WireReader *r) {
        WireReaderFrame *f = &r->stack[r->depth];
        int k;

        if (r->depth == 0)
                return WIRE_E_BAD_SIGNATURE;
        if (f->container == 'a')
                r->pos = f->end;
        else
                while (wire_reader_peek(r)) {
                        k = wire_reader_skip(r);
                        if (k)
                                return k;
                }
        --r->depth;
        return 0;
}

/**
 * wire_reader_skip() - skip the next value, whatever its type
 * @r:          the reader
 *
 * Return: 0, or WIRE_E_BAD_SIGNATURE at the end of the container.
 */
int wire_reader_skip(WireReader *r) {
        WireReaderFrame *f = &r->stack[r->depth];
        char t = wire_reader_peek(r);
        unsigned size;
        int k;

        if (!t)
                return WIRE_E_BAD_SIGNATURE;
        size = wire_type_fixed_size(t);
        if (size) {
                reader_align(r, size);
                r->pos += size;
                frame_advance(r, 1);
                return 0;
        }
        switch (t) {
        case 's':
        case 'o':
        case 'g': {
                const char *s;

                return wire_reader_read_basic(r, t, &s);
        }
        case 'a': {
                const char *e = f->sig + f->sig_pos + 1;
                uint32_t len;

                reader_align(r, 4);
                len = wire_load32(r->body + r->pos, r->big_endian);
                r->pos += 4;
                reader_align(r, wire_type_alignment(*e));
                r->pos += len;
                frame_advance(r, 1 + wire_signature_type_len(e));
                return 0;
        }
        default:
                k = wire_reader_enter(r, t, NULL);
                if (k)
                        return k;
                return wire_reader_exit(r);
        }
}
