/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SENDER stamping. The field array is copied around the client's SENDER field (if any),
 * our SENDER field is appended at the next 8-byte boundary, the array length in the fixed
 * header is rewritten, and the body is copied unchanged after re-padding. Every field
 * starts 8-aligned and the body starts 8-aligned, so removing a whole field (with the
 * padding up to the next one) keeps every remaining value at its alignment.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "util/macro.h"
#include "wire/endian.h"
#include "wire/protocol.h"
#include "wire/stamp.h"

/* code, signature "s" (length byte, 's', NUL), string length */
#define SENDER_FIELD_OVERHEAD (1u + 3u + 4u)

/**
 * wire_stamp_size_bound() - how much room wire_message_stamp() may need
 * @hdr:        the header of the message to stamp
 * @sender_len: strlen() of the sender name
 *
 * Return: the upper bound in bytes.
 */
size_t wire_stamp_size_bound(const WireHeader *hdr, size_t sender_len) {
        /* alignment before the field (7), the field, its NUL, padding before the body (7) */
        return (size_t)hdr->total_size + 7 + SENDER_FIELD_OVERHEAD + sender_len + 1 + 7;
}

static size_t put_field_head(uint8_t *d, size_t pos, uint8_t code, char type) {
        size_t aligned = ALIGN8(pos);

        memset(d + pos, 0, aligned - pos);
        pos = aligned;
        d[pos++] = code;
        d[pos++] = 1;
        d[pos++] = (uint8_t)type;
        d[pos++] = 0;
        return pos;
}

static size_t put_field_string(uint8_t *d, size_t pos, bool be, uint8_t code, char type,
                               const char *v) {
        size_t n;

        if (!v)
                return pos;
        n = strlen(v);
        pos = put_field_head(d, pos, code, type);
        if (type == 'g') {
                d[pos++] = (uint8_t)n;
        } else {
                wire_store32(d + pos, be, (uint32_t)n);
                pos += 4;
        }
        memcpy(d + pos, v, n + 1);
        return pos + n + 1;
}

static size_t put_field_u32(uint8_t *d, size_t pos, bool be, uint8_t code, uint32_t v) {
        pos = put_field_head(d, pos, code, 'u');
        wire_store32(d + pos, be, v);
        return pos + 4;
}

/*
 * HeaderFiltering, as dbus-daemon does it: a message that carries header fields of codes
 * the specification does not define gets its field array rebuilt from the parsed values,
 * without them, so that a receiver can trust every field to come from the bus's view of
 * the message. Rare (no known client sends such fields), so the simple way is good enough.
 * Each rebuilt field is at most as long as its original, so the size bound still holds.
 */
static size_t stamp_known_fields(uint8_t *d, const WireHeader *hdr) {
        bool be = hdr->big_endian;
        size_t pos = WIRE_FIXED_HEADER_SIZE;

        pos = put_field_string(d, pos, be, WIRE_FIELD_PATH, 'o', hdr->path);
        pos = put_field_string(d, pos, be, WIRE_FIELD_INTERFACE, 's', hdr->interface);
        pos = put_field_string(d, pos, be, WIRE_FIELD_MEMBER, 's', hdr->member);
        pos = put_field_string(d, pos, be, WIRE_FIELD_ERROR_NAME, 's', hdr->error_name);
        if (hdr->reply_serial)
                pos = put_field_u32(d, pos, be, WIRE_FIELD_REPLY_SERIAL, hdr->reply_serial);
        pos = put_field_string(d, pos, be, WIRE_FIELD_DESTINATION, 's', hdr->destination);
        if (hdr->signature && hdr->signature[0])
                pos = put_field_string(d, pos, be, WIRE_FIELD_SIGNATURE, 'g', hdr->signature);
        if (hdr->n_fds)
                pos = put_field_u32(d, pos, be, WIRE_FIELD_UNIX_FDS, hdr->n_fds);
        return pos;
}

/* Writes @src with SENDER=@sender (@n bytes) into @dst. Return: the stamped size. */
static size_t stamp_write(const uint8_t *s, const WireHeader *hdr, const char *sender, size_t n,
                          uint8_t *d) {
        size_t fields_end = WIRE_FIXED_HEADER_SIZE + (size_t)hdr->fields_size;
        size_t pos;
        bool be = hdr->big_endian;

        if (hdr->has_unknown_fields) {
                memcpy(d, s, WIRE_FIXED_HEADER_SIZE);
                pos = stamp_known_fields(d, hdr);
        } else if (hdr->sender_field_offset) {
                size_t off = hdr->sender_field_offset, rest = off + hdr->sender_field_size;

                memcpy(d, s, off);
                memcpy(d + off, s + rest, fields_end - rest);
                pos = fields_end - hdr->sender_field_size;
        } else {
                memcpy(d, s, fields_end);
                pos = fields_end;
        }

        while (pos & 7)                 /* at most 7 bytes: cheaper than a memset() call */
                d[pos++] = 0;
        d[pos++] = WIRE_FIELD_SENDER;
        d[pos++] = 1;
        d[pos++] = 's';
        d[pos++] = 0;
        wire_store32(d + pos, be, (uint32_t)n);
        pos += 4;
        memcpy(d + pos, sender, n + 1);
        pos += n + 1;

        wire_store32(d + 12, be, (uint32_t)(pos - WIRE_FIXED_HEADER_SIZE));
        while (pos & 7)
                d[pos++] = 0;
        memcpy(d + pos, s + hdr->body_offset, hdr->body_size);
        return pos + hdr->body_size;
}

/**
 * wire_message_stamp() - write @src with SENDER=@sender into @dst
 * @src:        a message parsed into @hdr
 * @hdr:        its header
 * @sender:     the sender's unique name (valid, NUL-terminated)
 * @dst:        at least wire_stamp_size_bound() bytes, may not overlap @src
 * @ret_size:   the stamped message's size
 *
 * Return: 0.
 */
int wire_message_stamp(const void *src, const WireHeader *hdr, const char *sender,
                       void *dst, size_t *ret_size) {
        *ret_size = stamp_write(src, hdr, sender, strlen(sender), dst);
        return 0;
}

/*
 * @p pointed into @src (@total bytes) or at a literal (the "" of an absent signature) or
 * is NULL: where it points in the copy at @dst, which lacks the @cut_size bytes after
 * offset @cut (SIZE_MAX: nothing cut). The offset is computed unsigned, so a pointer
 * outside @src (NULL, a literal) comes out at or past @total and is kept as it is.
 */
static inline const char *stamp_shift(const char *p, uintptr_t src, size_t total,
                                      const uint8_t *dst, size_t cut, size_t cut_size) {
        size_t off = (size_t)((uintptr_t)p - src);

        if (off >= total)
                return p;
        return (const char *)dst + off - (off > cut ? cut_size : 0);
}

/* The header of @dst (@dst_size bytes), @src with @sender (@n bytes; NULL: a plain copy)
 * stamped as stamp_write() does it, derived from @hdr. */
static int stamp_derive(const uint8_t *src, const WireHeader *hdr, const char *sender, size_t n,
                        const uint8_t *dst, size_t dst_size, WireHeader *ret) {
        bool drop = sender && hdr->sender_field_offset;
        size_t cut = drop ? hdr->sender_field_offset : SIZE_MAX;
        size_t cut_size = drop ? hdr->sender_field_size : 0, total = hdr->total_size;
        uintptr_t s = (uintptr_t)src;

        if (dst_size > WIRE_MAX_MESSAGE_SIZE)
                return WIRE_E_TOO_LARGE;
        if (sender && hdr->has_unknown_fields)
                /* the fields were rebuilt (stamp_known_fields()): read them again (@dst may be
                 * the head of a message whose body is in memfd parts: HEADER_ONLY) */
                return wire_message_parse(dst, dst_size, hdr->n_fds,
                                          WIRE_PARSE_SKIP_BODY | WIRE_PARSE_HEADER_ONLY, ret);
        *ret = *hdr;
        ret->path = stamp_shift(hdr->path, s, total, dst, cut, cut_size);
        ret->interface = stamp_shift(hdr->interface, s, total, dst, cut, cut_size);
        ret->member = stamp_shift(hdr->member, s, total, dst, cut, cut_size);
        ret->error_name = stamp_shift(hdr->error_name, s, total, dst, cut, cut_size);
        ret->destination = stamp_shift(hdr->destination, s, total, dst, cut, cut_size);
        ret->signature = stamp_shift(hdr->signature, s, total, dst, cut, cut_size);
        if (sender) {
                /* as stamp_write() wrote it: the last field, 8-aligned */
                size_t fields_end = WIRE_FIXED_HEADER_SIZE + (size_t)hdr->fields_size - cut_size;

                ret->sender_field_offset = (uint32_t)ALIGN8(fields_end);
                ret->sender_field_size = (uint32_t)(SENDER_FIELD_OVERHEAD + n + 1);
                ret->sender = (const char *)dst + ret->sender_field_offset + SENDER_FIELD_OVERHEAD;
                ret->fields_size = ret->sender_field_offset + ret->sender_field_size -
                                   WIRE_FIXED_HEADER_SIZE;
                ret->body_offset = (uint32_t)ALIGN8(WIRE_FIXED_HEADER_SIZE +
                                                    (size_t)ret->fields_size);
                ret->total_size = (uint32_t)dst_size;
        } else
                ret->sender = stamp_shift(hdr->sender, s, total, dst, SIZE_MAX, 0);
        return 0;
}

/**
 * wire_stamp_derive_header() - the header of a stamped message, without parsing it
 * @src:        the message wire_message_stamp() read
 * @hdr:        its header (from wire_message_parse())
 * @sender:     the SENDER that was stamped, or NULL for a plain copy of @src
 * @dst:        the stamped message (or the copy)
 * @dst_size:   its size
 * @ret:        the header of @dst
 *
 * Return: 0, or WIRE_E_TOO_LARGE.
 */
int wire_stamp_derive_header(const void *src, const WireHeader *hdr, const char *sender,
                             const void *dst, size_t dst_size, WireHeader *ret) {
        return stamp_derive(src, hdr, sender, sender ? strlen(sender) : 0, dst, dst_size, ret);
}

/**
 * wire_message_stamp_derive() - wire_message_stamp() and wire_stamp_derive_header() in one
 * @src:        a message parsed into @hdr
 * @hdr:        its header
 * @sender:     the sender's unique name (valid, NUL-terminated)
 * @sender_len: strlen(@sender)
 * @dst:        at least wire_stamp_size_bound() bytes, may not overlap @src
 * @ret:        the header of @dst (its total_size the stamped size); may not be @hdr
 *
 * Return: 0, or WIRE_E_TOO_LARGE (the stamped message exceeds WIRE_MAX_MESSAGE_SIZE).
 */
int wire_message_stamp_derive(const void *src, const WireHeader *hdr, const char *sender,
                              size_t sender_len, void *dst, WireHeader *ret) {
        size_t size = stamp_write(src, hdr, sender, sender_len, dst);

        return stamp_derive(src, hdr, sender, sender_len, dst, size, ret);
}
