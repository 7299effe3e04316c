/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Building bodies and whole messages, little-endian. Types are checked as they are
 * appended: inside an array or a variant every value must follow that container's declared
 * signature; outside of them (top level, and structs at top level) the values define the
 * body signature. Structs and dict entries are transparent for that check, they only
 * count their members. The first error is sticky.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/error.h"
#include "util/macro.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/names.h"
#include "wire/signature.h"
#include "wire/writer.h"

/**
 * wire_writer_init() - an empty body
 * @w:          the writer
 */
void wire_writer_init(WireWriter *w) {
        w->data = NULL;
        w->size = 0;
        w->alloc = 0;
        w->error = 0;
        w->signature[0] = 0;
        w->sig_len = 0;
        w->depth = 0;
}

/**
 * wire_writer_deinit() - free the body buffer; the writer can be initialised again
 * @w:          the writer
 */
void wire_writer_deinit(WireWriter *w) {
        free(w->data);
        wire_writer_init(w);
}

static int writer_fail(WireWriter *w, int r) {
        if (!w->error)
                w->error = r;
        return r;
}

static int writer_reserve(WireWriter *w, size_t n) {
        size_t want;
        uint8_t *d;

        if (n > WIRE_MAX_MESSAGE_SIZE || w->size + n > WIRE_MAX_MESSAGE_SIZE)
                return writer_fail(w, WIRE_E_TOO_LARGE);
        want = w->size + n;
        if (want <= w->alloc)
                return 0;
        want = MAX(want, MAX(w->alloc * 2, (size_t)256));
        d = realloc(w->data, want);
        if (!d)
                return writer_fail(w, error_origin(-ENOMEM));
        w->data = d;
        w->alloc = want;
        return 0;
}

static int writer_pad(WireWriter *w, unsigned align) {
        size_t n = ALIGN_TO(w->size, (size_t)align) - w->size;
        int r;

        if (n == 0)
                return 0;
        r = writer_reserve(w, n);
        if (r)
                return r;
        memset(w->data + w->size, 0, n);
        w->size += n;
        return 0;
}

/*
 * The next @n signature characters (one complete type, or the start/end of a struct) in
 * the current context: checked against the innermost array or variant, else appended to
 * the body signature.
 */
static int writer_expect(WireWriter *w, const char *t, size_t n) {
        WireWriterFrame *f = NULL;
        unsigned i;
        size_t clen;

        for (i = w->depth; i > 0; --i)
                if (w->stack[i - 1].container == 'a' || w->stack[i - 1].container == 'v') {
                        f = &w->stack[i - 1];
                        break;
                }
        if (!f) {
                if (w->sig_len + n > WIRE_MAX_SIGNATURE_LEN)
                        return writer_fail(w, WIRE_E_BAD_SIGNATURE);
                memcpy(w->signature + w->sig_len, t, n);
                w->sig_len += n;
                w->signature[w->sig_len] = 0;
                return 0;
        }
        clen = strlen(f->contents);
        if (f->container == 'a' && f->contents_pos == clen)
                f->contents_pos = 0;            /* the next element starts */
        if (clen - f->contents_pos < n || memcmp(f->contents + f->contents_pos, t, n) != 0)
                return writer_fail(w, WIRE_E_BAD_SIGNATURE);
        if (f->contents_pos == 0)
                ++f->n_elements;
        f->contents_pos += n;
        return 0;
}

/* A value or container was added to the current struct or dict entry. */
static void writer_count_member(WireWriter *w) {
        WireWriterFrame *f;

        if (w->depth == 0)
                return;
        f = &w->stack[w->depth - 1];
        if (f->container == '(' || f->container == '{')
                ++f->n_elements;
}

/**
 * wire_writer_append_basic() - append one basic value
 * @w:          the writer
 * @type:       its type code
 * @value:      the string for 's', 'o', 'g', else a pointer to the value
 *
 * Return: 0, -ENOMEM, WIRE_E_BAD_SIGNATURE (not basic, or not what the container wants),
 * WIRE_E_BAD_STRING, WIRE_E_BAD_PATH, WIRE_E_BAD_BOOLEAN, WIRE_E_TOO_LARGE, or the sticky
 * error of an earlier call.
 */
int wire_writer_append_basic(WireWriter *w, char type, const void *value) {
        unsigned size;
        size_t n = 0;
        int r;

        if (w->error)
                return w->error;
        if (!wire_type_is_basic(type))
                return writer_fail(w, WIRE_E_BAD_SIGNATURE);

        switch (type) {
        case 's':
                n = strlen(value);
                if (!wire_utf8_is_valid(value, n))
                        return writer_fail(w, WIRE_E_BAD_STRING);
                break;
        case 'o':
                n = strlen(value);
                if (!wire_path_is_valid(value, n))
                        return writer_fail(w, WIRE_E_BAD_PATH);
                break;
        case 'g':
                n = strlen(value);
                r = wire_signature_check(value, n, false);
                if (r)
                        return writer_fail(w, r);
                break;
        case 'b':
                if (*(const uint32_t *)value > 1)
                        return writer_fail(w, WIRE_E_BAD_BOOLEAN);
                break;
        }

        r = writer_expect(w, &type, 1);
        if (r)
                return r;
        writer_count_member(w);

        r = writer_pad(w, wire_type_alignment(type));
        if (r)
                return r;
        size = wire_type_fixed_size(type);
        if (size) {
                r = writer_reserve(w, size);
                if (r)
                        return r;
                switch (size) {
                case 1:
                        w->data[w->size] = *(const uint8_t *)value;
                        break;
                case 2:
                        wire_store16(w->data + w->size, false, *(const uint16_t *)value);
                        break;
                case 4:
                        wire_store32(w->data + w->size, false, *(const uint32_t *)value);
                        break;
                default: {
                        uint64_t v;

                        memcpy(&v, value, sizeof(v));
                        wire_store64(w->data + w->size, false, v);
                        break;
                }
                }
                w->size += size;
                return 0;
        }

        if (type == 'g') {
                r = writer_reserve(w, 1 + n + 1);
                if (r)
                        return r;
                w->data[w->size++] = (uint8_t)n;
        } else {
                if (n > UINT32_MAX)
                        return writer_fail(w, WIRE_E_TOO_LARGE);
                r = writer_reserve(w, 4 + n + 1);
                if (r)
                        return r;
                wire_store32(w->data + w->size, false, (uint32_t)n);
                w->size += 4;
        }
        memcpy(w->data + w->size, value, n + 1);
        w->size += n + 1;
        return 0;
}

/**
 * wire_writer_open() - open a container
 * @w:          the writer
 * @container:  'a', 'v', '(' or '{'
 * @contents:   element signature ('a'), the single complete type ('v'), NULL otherwise
 *
 * Return: 0, -ENOMEM, WIRE_E_BAD_SIGNATURE, WIRE_E_BAD_VARIANT, WIRE_E_BAD_DICT,
 * WIRE_E_TOO_DEEP, WIRE_E_TOO_LARGE, or the sticky error.
 */
int wire_writer_open(WireWriter *w, char container, const char *contents) {
        WireWriterFrame *f;
        size_t n = 0;
        int r;

        if (w->error)
                return w->error;
        if (w->depth >= WIRE_WRITER_MAX_DEPTH)
                return writer_fail(w, WIRE_E_TOO_DEEP);

        switch (container) {
        case 'a':
        case 'v':
                if (!contents)
                        return writer_fail(w, WIRE_E_BAD_SIGNATURE);
                n = strlen(contents);
                if (n >= WIRE_MAX_SIGNATURE_LEN)
                        return writer_fail(w, WIRE_E_BAD_SIGNATURE);
                if (container == 'a') {
                        /* a dict entry is valid only as an array element: check "a" + contents */
                        char full[WIRE_MAX_SIGNATURE_LEN + 1];

                        full[0] = 'a';
                        memcpy(full + 1, contents, n);
                        r = wire_signature_check(full, n + 1, true);
                        if (r == WIRE_E_BAD_VARIANT)
                                r = WIRE_E_BAD_SIGNATURE;
                } else
                        r = wire_signature_check(contents, n, true);
                if (r)
                        return writer_fail(w, r);
                if (container == 'a') {
                        r = writer_expect(w, "a", 1);
                        if (r)
                                return r;
                        r = writer_expect(w, contents, n);
                } else
                        r = writer_expect(w, "v", 1);
                break;
        case '(':
                r = writer_expect(w, "(", 1);
                break;
        case '{': {
                /* only directly inside an array, which declared the dict entry */
                WireWriterFrame *p = w->depth ? &w->stack[w->depth - 1] : NULL;

                if (!p || p->container != 'a' || p->contents[0] != '{')
                        return writer_fail(w, WIRE_E_BAD_DICT);
                r = writer_expect(w, "{", 1);
                break;
        }
        default:
                return writer_fail(w, WIRE_E_BAD_SIGNATURE);
        }
        if (r)
                return r;
        writer_count_member(w);

        f = &w->stack[w->depth];
        *f = (WireWriterFrame) { .container = container };
        switch (container) {
        case 'a':
                r = writer_pad(w, 4);
                if (r)
                        return r;
                r = writer_reserve(w, 4);
                if (r)
                        return r;
                f->start = w->size;
                w->size += 4;
                r = writer_pad(w, wire_type_alignment(contents[0]));
                if (r)
                        return r;
                f->elem_start = w->size;
                break;
        case 'v':
                r = writer_reserve(w, 1 + n + 1);
                if (r)
                        return r;
                w->data[w->size++] = (uint8_t)n;
                memcpy(w->data + w->size, contents, n + 1);
                w->size += n + 1;
                break;
        default:
                r = writer_pad(w, 8);
                if (r)
                        return r;
                break;
        }
        if (contents) {
                memcpy(f->variant_sig, contents, n + 1);
                f->contents = f->variant_sig;
        }
        f->sig_start = w->sig_len;
        ++w->depth;
        return 0;
}

/**
 * wire_writer_close() - close the innermost container
 * @w:          the writer
 *
 * Return: 0, -ENOMEM, WIRE_E_BAD_SIGNATURE (nothing open, or the container's contents are
 * incomplete), WIRE_E_TOO_LARGE, or the sticky error.
 */
int wire_writer_close(WireWriter *w) {
        WireWriterFrame *f;
        size_t len;

        if (w->error)
                return w->error;
        if (w->depth == 0)
                return writer_fail(w, WIRE_E_BAD_SIGNATURE);
        f = &w->stack[w->depth - 1];

        switch (f->container) {
        case 'a':
                if (f->contents_pos != 0 && f->contents_pos != strlen(f->contents))
                        return writer_fail(w, WIRE_E_BAD_SIGNATURE);
                len = w->size - f->elem_start;
                if (len > WIRE_MAX_ARRAY_SIZE)
                        return writer_fail(w, WIRE_E_TOO_LARGE);
                wire_store32(w->data + f->start, false, (uint32_t)len);
                --w->depth;
                return 0;
        case 'v':
                if (f->contents_pos != strlen(f->contents))
                        return writer_fail(w, WIRE_E_BAD_SIGNATURE);
                --w->depth;
                return 0;
        case '(':
                if (f->n_elements == 0)
                        return writer_fail(w, WIRE_E_BAD_SIGNATURE);
                --w->depth;
                return writer_expect(w, ")", 1);
        default:
                if (f->n_elements != 2)
                        return writer_fail(w, WIRE_E_BAD_DICT);
                --w->depth;
                return writer_expect(w, "}", 1);
        }
}

/**
 * wire_writer_append_strv() - append an "as"
 * @w:          the writer
 * @strv:       NULL-terminated strings
 *
 * Return: as wire_writer_append_basic().
 */
int wire_writer_append_strv(WireWriter *w, const char *const *strv) {
        int r;

        r = wire_writer_open(w, 'a', "s");
        for (; r == 0 && strv && *strv; ++strv)
                r = wire_writer_append_basic(w, 's', *strv);
        if (r)
                return r;
        return wire_writer_close(w);
}

/* One header field of string type ('s', 'o', 'g'); measures only when @d is NULL. */
static size_t field_put_string(uint8_t *d, size_t pos, uint8_t code, char type, const char *s) {
        size_t n = strlen(s), start = ALIGN8(pos);

        if (d)
                memset(d + pos, 0, start - pos);
        pos = start;
        if (d) {
                d[pos] = code;
                d[pos + 1] = 1;
                d[pos + 2] = (uint8_t)type;
                d[pos + 3] = 0;
        }
        pos += 4;
        if (type == 'g') {
                if (d)
                        d[pos] = (uint8_t)n;
                pos += 1;
        } else {
                /* pos is 8-aligned + 4: already aligned for the length */
                if (d)
                        wire_store32(d + pos, false, (uint32_t)n);
                pos += 4;
        }
        if (d)
                memcpy(d + pos, s, n + 1);
        return pos + n + 1;
}

static size_t field_put_u32(uint8_t *d, size_t pos, uint8_t code, uint32_t v) {
        size_t start = ALIGN8(pos);

        if (d) {
                memset(d + pos, 0, start - pos);
                d[start] = code;
                d[start + 1] = 1;
                d[start + 2] = 'u';
                d[start + 3] = 0;
                wire_store32(d + start + 4, false, v);
        }
        return start + 8;
}

static size_t fields_put(uint8_t *d, const WireMsgSpec *spec, const char *signature) {
        size_t pos = WIRE_FIXED_HEADER_SIZE;

        if (spec->path)
                pos = field_put_string(d, pos, WIRE_FIELD_PATH, 'o', spec->path);
        if (spec->interface)
                pos = field_put_string(d, pos, WIRE_FIELD_INTERFACE, 's', spec->interface);
        if (spec->member)
                pos = field_put_string(d, pos, WIRE_FIELD_MEMBER, 's', spec->member);
        if (spec->error_name)
                pos = field_put_string(d, pos, WIRE_FIELD_ERROR_NAME, 's', spec->error_name);
        if (spec->reply_serial)
                pos = field_put_u32(d, pos, WIRE_FIELD_REPLY_SERIAL, spec->reply_serial);
        if (spec->destination)
                pos = field_put_string(d, pos, WIRE_FIELD_DESTINATION, 's', spec->destination);
        if (spec->sender)
                pos = field_put_string(d, pos, WIRE_FIELD_SENDER, 's', spec->sender);
        if (signature[0])
                pos = field_put_string(d, pos, WIRE_FIELD_SIGNATURE, 'g', signature);
        if (spec->n_fds)
                pos = field_put_u32(d, pos, WIRE_FIELD_UNIX_FDS, spec->n_fds);
        return pos;
}

static int spec_check(const WireMsgSpec *spec) {
        if (spec->type == WIRE_MSG_INVALID)
                return WIRE_E_BAD_TYPE;
        if (spec->serial == 0)
                return WIRE_E_BAD_SERIAL;
        switch (spec->type) {
        case WIRE_MSG_METHOD_CALL:
                if (!spec->path || !spec->member)
                        return WIRE_E_MISSING_FIELD;
                break;
        case WIRE_MSG_METHOD_RETURN:
                if (!spec->reply_serial)
                        return WIRE_E_MISSING_FIELD;
                break;
        case WIRE_MSG_ERROR:
                if (!spec->error_name || !spec->reply_serial)
                        return WIRE_E_MISSING_FIELD;
                break;
        case WIRE_MSG_SIGNAL:
                if (!spec->path || !spec->interface || !spec->member)
                        return WIRE_E_MISSING_FIELD;
                break;
        default:
                break;
        }
        if (spec->path) {
                if (!wire_path_is_valid(spec->path, strlen(spec->path)))
                        return WIRE_E_BAD_PATH;
                if (strcmp(spec->path, WIRE_LOCAL_PATH) == 0)
                        return WIRE_E_LOCAL_PATH;
        }
        if (spec->interface) {
                if (!wire_interface_is_valid(spec->interface, strlen(spec->interface)))
                        return WIRE_E_BAD_INTERFACE;
                if (strcmp(spec->interface, WIRE_LOCAL_INTERFACE) == 0)
                        return WIRE_E_LOCAL_PATH;
        }
        if (spec->member && !wire_member_is_valid(spec->member, strlen(spec->member)))
                return WIRE_E_BAD_MEMBER;
        if (spec->error_name && !wire_error_name_is_valid(spec->error_name,
                                                          strlen(spec->error_name)))
                return WIRE_E_BAD_ERROR_NAME;
        if (spec->destination && !wire_bus_name_is_valid(spec->destination,
                                                         strlen(spec->destination)))
                return WIRE_E_BAD_BUS_NAME;
        if (spec->sender && !wire_bus_name_is_valid(spec->sender, strlen(spec->sender)))
                return WIRE_E_BAD_BUS_NAME;
        return 0;
}

/**
 * wire_message_build() - assemble a complete little-endian message
 * @spec:       header values; the caller sets a non-zero serial
 * @body:       the body, or NULL for none
 * @ret_data:   malloc()ed message
 * @ret_size:   its size
 *
 * Return: 0, -ENOMEM, WIRE_E_BAD_TYPE, WIRE_E_BAD_SERIAL, WIRE_E_MISSING_FIELD,
 * WIRE_E_BAD_PATH, WIRE_E_LOCAL_PATH, WIRE_E_BAD_INTERFACE, WIRE_E_BAD_MEMBER,
 * WIRE_E_BAD_ERROR_NAME, WIRE_E_BAD_BUS_NAME, WIRE_E_BAD_SIGNATURE (a container left
 * open, or an invalid body signature), WIRE_E_TOO_LARGE, or the body's sticky error.
 */
int wire_message_build(const WireMsgSpec *spec, const WireWriter *body, uint8_t **ret_data,
                       size_t *ret_size) {
        const char *signature = body ? body->signature : "";
        size_t body_size = body ? body->size : 0, fields_end, body_offset, total;
        uint8_t *d;
        int r;

        if (body && body->error)
                return body->error;
        if (body && body->depth)
                return WIRE_E_BAD_SIGNATURE;
        r = spec_check(spec);
        if (r)
                return r;
        r = wire_signature_check(signature, strlen(signature), false);
        if (r)
                return r;

        fields_end = fields_put(NULL, spec, signature);
        body_offset = ALIGN8(fields_end);
        total = body_offset + body_size;
        if (total > WIRE_MAX_MESSAGE_SIZE || fields_end - WIRE_FIXED_HEADER_SIZE > WIRE_MAX_ARRAY_SIZE)
                return WIRE_E_TOO_LARGE;

        d = malloc(total);
        if (!d)
                return error_origin(-ENOMEM);
        d[0] = WIRE_ENDIAN_LITTLE;
        d[1] = spec->type;
        d[2] = spec->flags;
        d[3] = WIRE_PROTOCOL_VERSION;
        wire_store32(d + 4, false, (uint32_t)body_size);
        wire_store32(d + 8, false, spec->serial);
        wire_store32(d + 12, false, (uint32_t)(fields_end - WIRE_FIXED_HEADER_SIZE));
        (void) fields_put(d, spec, signature);
        memset(d + fields_end, 0, body_offset - fields_end);
        if (body_size)
                memcpy(d + body_offset, body->data, body_size);

        *ret_data = d;
        *ret_size = total;
        return 0;
}
