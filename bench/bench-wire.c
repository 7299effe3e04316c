/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Minimal little-endian D-Bus message writer and header reader for the benchmark clients.
 * Layout (D-Bus specification, "Message Format"): 12 fixed bytes, the serial, the header
 * field array a(yv) with each entry 8-aligned, padding to 8, the body.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "bench/bench-wire.h"
#include "wire/protocol.h"

#define ALIGN(x, a) (((x) + (a) - 1) & ~((size_t) (a) - 1))

typedef struct Out {
        uint8_t *buf;
        size_t cap;
        size_t pos;
        bool overflow;
} Out;

static void out_pad(Out *o, size_t align) {
        size_t to = ALIGN(o->pos, align);

        if (to > o->cap) {
                o->overflow = true;
                return;
        }
        memset(o->buf + o->pos, 0, to - o->pos);
        o->pos = to;
}

static void out_bytes(Out *o, const void *p, size_t n) {
        if (o->overflow || o->pos + n > o->cap) {
                o->overflow = true;
                return;
        }
        memcpy(o->buf + o->pos, p, n);
        o->pos += n;
}

static void out_u32(Out *o, uint32_t v) {
        uint8_t b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

        out_pad(o, 4);
        out_bytes(o, b, 4);
}

static void out_field_str(Out *o, uint8_t code, char type, const char *s) {
        uint8_t head[4] = { code, 1, (uint8_t) type, 0 };
        size_t n = strlen(s);

        out_pad(o, 8);
        out_bytes(o, head, 4);
        if (type == 'g') {
                uint8_t len = (uint8_t) n;

                out_bytes(o, &len, 1);
        } else {
                out_u32(o, (uint32_t) n);
        }
        out_bytes(o, s, n + 1);
}

static void out_field_u32(Out *o, uint8_t code, uint32_t v) {
        uint8_t head[4] = { code, 1, 'u', 0 };

        out_pad(o, 8);
        out_bytes(o, head, 4);
        out_u32(o, v);
}

size_t bench_msg_build(uint8_t *buf, size_t cap, const BenchMsgSpec *spec) {
        Out o = { .buf = buf, .cap = cap };
        uint8_t fixed[4] = { WIRE_ENDIAN_LITTLE, spec->type, spec->flags, WIRE_PROTOCOL_VERSION };
        size_t fields_start;
        uint32_t fields_len;

        out_bytes(&o, fixed, 4);
        out_u32(&o, spec->body_len);
        out_u32(&o, spec->serial);
        out_u32(&o, 0);                         /* field array length, patched below */
        fields_start = o.pos;
        if (spec->path)
                out_field_str(&o, WIRE_FIELD_PATH, 'o', spec->path);
        if (spec->interface)
                out_field_str(&o, WIRE_FIELD_INTERFACE, 's', spec->interface);
        if (spec->member)
                out_field_str(&o, WIRE_FIELD_MEMBER, 's', spec->member);
        if (spec->error_name)
                out_field_str(&o, WIRE_FIELD_ERROR_NAME, 's', spec->error_name);
        if (spec->reply_serial)
                out_field_u32(&o, WIRE_FIELD_REPLY_SERIAL, spec->reply_serial);
        if (spec->destination)
                out_field_str(&o, WIRE_FIELD_DESTINATION, 's', spec->destination);
        if (spec->signature && *spec->signature)
                out_field_str(&o, WIRE_FIELD_SIGNATURE, 'g', spec->signature);
        if (o.overflow)
                return 0;
        fields_len = (uint32_t) (o.pos - fields_start);
        memcpy(buf + 12, &fields_len, 4);       /* x86 and friends: little-endian hosts only */
        out_pad(&o, 8);
        if (spec->body_len && spec->body)       /* no body: the caller writes it (writev) */
                out_bytes(&o, spec->body, spec->body_len);
        return o.overflow ? 0 : o.pos;
}

static uint32_t rd_u32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
               (uint32_t) p[3] << 24;
}

long bench_msg_frame(const uint8_t *data, size_t n) {
        uint32_t body_len, fields_len;
        size_t size;

        if (n < 16)
                return 0;
        if (data[0] != WIRE_ENDIAN_LITTLE)
                return -EBADMSG;
        body_len = rd_u32(data + 4);
        fields_len = rd_u32(data + 12);
        size = ALIGN(16 + (size_t) fields_len, 8) + body_len;
        if (size > WIRE_MAX_MESSAGE_SIZE)
                return -EBADMSG;
        return (long) size;
}

int bench_msg_parse(const uint8_t *data, size_t n, BenchMsg *ret) {
        BenchMsg m = { 0 };
        long size = bench_msg_frame(data, n);
        size_t pos, end;

        if (size <= 0 || (size_t) size > n)
                return -EBADMSG;
        m.type = data[1];
        m.flags = data[2];
        m.body_len = rd_u32(data + 4);
        m.serial = rd_u32(data + 8);
        m.size = (size_t) size;
        end = 16 + rd_u32(data + 12);
        m.body = data + ALIGN(end, 8);
        for (pos = 16; pos < end; ) {
                uint8_t code, sig_len;
                char type;

                pos = ALIGN(pos, 8);
                if (pos + 4 > end)
                        return -EBADMSG;
                code = data[pos];
                sig_len = data[pos + 1];
                if (sig_len != 1)
                        return -EBADMSG;
                type = (char) data[pos + 2];
                pos += 4;
                if (type == 'g') {
                        pos += 1 + (size_t) data[pos] + 1;
                } else if (type == 'u') {
                        pos = ALIGN(pos, 4);
                        if (code == WIRE_FIELD_REPLY_SERIAL)
                                m.reply_serial = rd_u32(data + pos);
                        pos += 4;
                } else if (type == 's' || type == 'o') {
                        uint32_t len;

                        pos = ALIGN(pos, 4);
                        if (pos + 4 > end)
                                return -EBADMSG;
                        len = rd_u32(data + pos);
                        if (pos + 4 + len + 1 > end)
                                return -EBADMSG;
                        if (code == WIRE_FIELD_SENDER)
                                m.sender = (const char *) data + pos + 4;
                        else if (code == WIRE_FIELD_MEMBER)
                                m.member = (const char *) data + pos + 4;
                        else if (code == WIRE_FIELD_ERROR_NAME)
                                m.error_name = (const char *) data + pos + 4;
                        pos += 4 + (size_t) len + 1;
                } else {
                        return -EBADMSG;
                }
        }
        *ret = m;
        return 0;
}
