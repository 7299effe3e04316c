/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one-pass message validator. It walks the fixed header, the header field array and
 * the body once, front to back, and checks every rule a bus applies to what it accepts:
 * alignment with zero padding, string terminators and UTF-8, names, booleans, the UNIX_FDS
 * count, nesting limits, and that the body is consumed exactly by its signature.
 *
 * The values of 'h' (fd indexes) are not checked against UNIX_FDS, deliberately: dbus-daemon
 * 1.14.10 (libdbus) delivers a message whose 'h' points past its fds, and so do we, so that
 * clients cannot tell the buses apart. It is safe: the bus never resolves an index (the fds
 * travel as one array with the message), and every receiving library checks the index
 * when it reads the value (libdbus returns -1, GDBus and sd-bus an error).
 *
 * Invariants: nothing is read outside [data, data + size); nothing is allocated; nesting is
 * followed with an explicit stack of at most WIRE_MAX_TOTAL_DEPTH + 1 frames (arrays and
 * variants push, structs only count, since their extent is in the signature), so hostile
 * input cannot grow the C stack. Only signature checking recurses, bounded by 64 levels.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "util/macro.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/names.h"
#include "wire/protocol.h"
#include "wire/reader.h"
#include "wire/signature.h"

static const char *const error_text[_WIRE_E_N] = {
        [_WIRE_E_SUCCESS] = "success",
        [WIRE_E_AGAIN] = "incomplete message",
        [WIRE_E_BAD_ENDIAN] = "invalid byte order mark",
        [WIRE_E_BAD_VERSION] = "unsupported protocol version",
        [WIRE_E_BAD_TYPE] = "invalid message type",
        [WIRE_E_TOO_LARGE] = "message or array exceeds the maximum size",
        [WIRE_E_BAD_SERIAL] = "serial or reply serial is zero",
        [WIRE_E_BAD_FIELD] = "header field has the wrong type or is duplicated",
        [WIRE_E_MISSING_FIELD] = "header field required by the message type is missing",
        [WIRE_E_BAD_PATH] = "invalid object path",
        [WIRE_E_BAD_INTERFACE] = "invalid interface name",
        [WIRE_E_BAD_MEMBER] = "invalid member name",
        [WIRE_E_BAD_ERROR_NAME] = "invalid error name",
        [WIRE_E_BAD_BUS_NAME] = "invalid bus name",
        [WIRE_E_BAD_SIGNATURE] = "invalid type signature",
        [WIRE_E_BAD_STRING] = "invalid UTF-8, embedded NUL or missing string terminator",
        [WIRE_E_BAD_BOOLEAN] = "boolean value other than 0 or 1",
        [WIRE_E_BAD_PADDING] = "non-zero alignment padding",
        [WIRE_E_TRUNCATED] = "message data ends before its declared contents",
        [WIRE_E_TRAILING] = "message body is longer than its signature describes",
        [WIRE_E_BAD_FD_INDEX] = "unix fd index or count does not match the passed fds",
        [WIRE_E_TOO_DEEP] = "containers nested too deeply",
        [WIRE_E_BAD_VARIANT] = "variant signature is not a single complete type",
        [WIRE_E_BAD_DICT] = "invalid dict entry",
        [WIRE_E_LOCAL_PATH] = "use of the reserved org.freedesktop.DBus.Local path or interface",
        [WIRE_E_NOT_DBUS] = "not a D-Bus message (a kdbus peer's payload of another kind)",
};

/**
 * wire_strerror() - describe a WIRE_E_* code
 * @code:       0 or a WIRE_E_* value
 *
 * Return: a static string; "unknown error" for anything else.
 */
const char *wire_strerror(int code) {
        if (code < 0 || code >= _WIRE_E_N || !error_text[code])
                return "unknown error";
        return error_text[code];
}

/* What the walker needs besides the signature: the bytes, their order, where they end. */
typedef struct WalkCtx {
        const uint8_t *p;
        size_t end;
        bool be;
} WalkCtx;

typedef struct WalkFrame {
        const char *sig;
        uint32_t sig_start;     /* array: first character of the element type */
        uint32_t sig_pos;
        uint32_t sig_end;
        char kind;              /* 0 (outermost), 'a' or 'v' */
        size_t end;             /* array: offset just past its last element */
} WalkFrame;

static inline int pad_check(const uint8_t *p, size_t *pos, size_t end, size_t align) {
        size_t i, n = ALIGN_TO(*pos, align);

        if (n > end)
                return WIRE_E_TRUNCATED;
        for (i = *pos; i < n; ++i)
                if (p[i])
                        return WIRE_E_BAD_PADDING;
        *pos = n;
        return 0;
}

/* A length-prefixed string ('s' or 'o') at *pos (already aligned); returns it in *ret. */
static inline int string_check(const WalkCtx *c, size_t *pos, const char **ret, uint32_t *ret_len) {
        size_t at = *pos;
        uint32_t len;

        if (c->end - at < 4)
                return WIRE_E_TRUNCATED;
        len = wire_load32(c->p + at, c->be);
        at += 4;
        if (c->end - at < (size_t)len + 1)
                return WIRE_E_TRUNCATED;
        if (c->p[at + len] != 0)
                return WIRE_E_BAD_STRING;
        *ret = (const char *)c->p + at;
        *ret_len = len;
        *pos = at + len + 1;
        return 0;
}

/* A signature ('g', also a variant's type) at *pos: length byte, characters, NUL. */
static inline int sig_string_check(const WalkCtx *c, size_t *pos, const char **ret, uint8_t *ret_len) {
        size_t at = *pos;
        uint8_t len;

        if (at >= c->end)
                return WIRE_E_TRUNCATED;
        len = c->p[at++];
        if (c->end - at < (size_t)len + 1)
                return WIRE_E_TRUNCATED;
        if (c->p[at + len] != 0)
                return WIRE_E_BAD_STRING;
        *ret = (const char *)c->p + at;
        *ret_len = len;
        *pos = at + len + 1;
        return 0;
}

/* Arrays of fixed-size elements are checked without walking them one signature step at a time. */
static int array_fixed_check(const WalkCtx *c, char elem, size_t pos, uint32_t len) {
        unsigned size = wire_type_fixed_size(elem);
        uint32_t i;

        if (len % size)
                return WIRE_E_TRUNCATED;
        if (elem == 'b') {
                for (i = 0; i < len; i += 4)
                        if (wire_load32(c->p + pos + i, c->be) > 1)
                                return WIRE_E_BAD_BOOLEAN;
        }
        return 0;
}

/* An array's length at *@pos and the padding to its first element (of type @e); on success
 * *@pos is at the first element and the array's @ret_len bytes are within c->end. */
static inline int array_head_check(const WalkCtx *c, char e, size_t *pos_io, uint32_t *ret_len) {
        size_t pos = *pos_io;
        uint32_t len;
        int r;

        r = pad_check(c->p, &pos, c->end, 4);
        if (r)
                return r;
        if (c->end - pos < 4)
                return WIRE_E_TRUNCATED;
        len = wire_load32(c->p + pos, c->be);
        pos += 4;
        if (len > WIRE_MAX_ARRAY_SIZE)
                return WIRE_E_TOO_LARGE;
        /* the padding to the first element is there even when it is empty */
        r = pad_check(c->p, &pos, c->end, wire_type_alignment(e));
        if (r)
                return r;
        if (c->end - pos < len)
                return WIRE_E_TRUNCATED;
        *pos_io = pos;
        *ret_len = len;
        return 0;
}

/* An array of strings, the most common non-fixed array ("as", "ao"): a tight loop. */
static int array_strings_check(const WalkCtx *c, char elem, size_t pos, size_t end) {
        WalkCtx sub = *c;
        const char *s;
        uint32_t n;
        int r;

        sub.end = end;
        while (pos < end) {
                r = pad_check(c->p, &pos, end, 4);
                if (r)
                        return r;
                r = string_check(&sub, &pos, &s, &n);
                if (r)
                        return r;
                if (elem == 's' ? !wire_utf8_is_valid(s, n) : !wire_path_is_valid(s, n))
                        return elem == 's' ? WIRE_E_BAD_STRING : WIRE_E_BAD_PATH;
        }
        return 0;
}

/*
 * Validate the values of @sig (@sig_len characters, a validated sequence of complete types)
 * starting at *@pos, with @depth containers already open around them. On success *@pos is
 * just past the last value.
 */
static int values_check(const WalkCtx *c, const char *sig, size_t sig_len, size_t *pos_io,
                        unsigned depth) {
        WalkFrame stack[WIRE_MAX_TOTAL_DEPTH + 1];
        const uint8_t *p = c->p;
        size_t pos = *pos_io, end = c->end;
        unsigned top = 0;
        int r;

        stack[0] = (WalkFrame) { .sig = sig, .sig_end = (uint32_t)sig_len };

        for (;;) {
                WalkFrame *f = &stack[top];
                const char *s;
                uint32_t len;
                uint8_t slen;
                char t;

                if (f->sig_pos == f->sig_end) {
                        if (f->kind == 'a') {
                                if (pos < f->end) {
                                        f->sig_pos = f->sig_start;
                                        continue;
                                }
                                if (pos > f->end)
                                        return WIRE_E_TRUNCATED;   /* element overruns its array */
                        } else if (f->kind == 0)
                                break;
                        --top;
                        --depth;
                        continue;
                }

                t = f->sig[f->sig_pos++];
                switch (t) {
                case 'y':
                        if (pos >= end)
                                return WIRE_E_TRUNCATED;
                        ++pos;
                        break;
                case 'n':
                case 'q':
                        r = pad_check(p, &pos, end, 2);
                        if (r)
                                return r;
                        if (end - pos < 2)
                                return WIRE_E_TRUNCATED;
                        pos += 2;
                        break;
                case 'b':
                case 'h':
                case 'i':
                case 'u':
                        r = pad_check(p, &pos, end, 4);
                        if (r)
                                return r;
                        if (end - pos < 4)
                                return WIRE_E_TRUNCATED;
                        if (t == 'b' && wire_load32(p + pos, c->be) > 1)
                                return WIRE_E_BAD_BOOLEAN;
                        pos += 4;
                        break;
                case 'x':
                case 't':
                case 'd':
                        r = pad_check(p, &pos, end, 8);
                        if (r)
                                return r;
                        if (end - pos < 8)
                                return WIRE_E_TRUNCATED;
                        pos += 8;
                        break;
                case 's':
                case 'o':
                        r = pad_check(p, &pos, end, 4);
                        if (r)
                                return r;
                        r = string_check(c, &pos, &s, &len);
                        if (r)
                                return r;
                        if (t == 's' ? !wire_utf8_is_valid(s, len) : !wire_path_is_valid(s, len))
                                return t == 's' ? WIRE_E_BAD_STRING : WIRE_E_BAD_PATH;
                        break;
                case 'g':
                        r = sig_string_check(c, &pos, &s, &slen);
                        if (r)
                                return r;
                        r = wire_signature_check(s, slen, false);
                        if (r)
                                return r;
                        break;
                case '(':
                case '{':
                        r = pad_check(p, &pos, end, 8);
                        if (r)
                                return r;
                        if (++depth > WIRE_MAX_TOTAL_DEPTH)
                                return WIRE_E_TOO_DEEP;
                        break;
                case ')':
                case '}':
                        --depth;
                        break;
                case 'v':
                        r = sig_string_check(c, &pos, &s, &slen);
                        if (r)
                                return r;
                        r = wire_signature_check(s, slen, true);
                        if (r)
                                return r;
                        if (++depth > WIRE_MAX_TOTAL_DEPTH)
                                return WIRE_E_TOO_DEEP;
                        stack[++top] = (WalkFrame) {
                                .sig = s, .sig_end = slen, .kind = 'v',
                        };
                        break;
                case 'a': {
                        uint32_t elem_start = f->sig_pos;
                        uint32_t elem_len = (uint32_t)wire_signature_type_len(f->sig + elem_start);
                        char e = f->sig[elem_start];

                        r = array_head_check(c, e, &pos, &len);
                        if (r)
                                return r;
                        if (depth + 1 > WIRE_MAX_TOTAL_DEPTH)
                                return WIRE_E_TOO_DEEP;
                        f->sig_pos = elem_start + elem_len;
                        if (len == 0)
                                break;
                        if (elem_len == 1 && wire_type_fixed_size(e)) {
                                r = array_fixed_check(c, e, pos, len);
                                if (r)
                                        return r;
                                pos += len;
                                break;
                        }
                        if (elem_len == 1 && (e == 's' || e == 'o')) {
                                r = array_strings_check(c, e, pos, pos + len);
                                if (r)
                                        return r;
                                pos += len;
                                break;
                        }
                        ++depth;
                        stack[++top] = (WalkFrame) {
                                .sig = f->sig, .sig_start = elem_start, .sig_pos = elem_start,
                                .sig_end = elem_start + elem_len, .kind = 'a', .end = pos + len,
                        };
                        break;
                }
                default:
                        /* the signature was validated before: unreachable */
                        return WIRE_E_BAD_SIGNATURE;
                }
        }

        *pos_io = pos;
        return 0;
}

/*
 * A message body of signature @sig from *@pos: values_check(), with the two most common
 * bodies of small messages taken at once, with the same verdicts: none at all (most
 * replies), and one array of fixed-size values ("ay", a blob).
 */
static int body_check(const WalkCtx *c, const char *sig, size_t *pos_io) {
        uint32_t len;
        int r;

        if (sig[0] == 0)
                return 0;
        if (sig[0] == 'a' && wire_type_fixed_size(sig[1]) && sig[2] == 0) {
                r = array_head_check(c, sig[1], pos_io, &len);
                if (r)
                        return r;
                if (len) {
                        r = array_fixed_check(c, sig[1], *pos_io, len);
                        if (r)
                                return r;
                }
                *pos_io += len;
                return 0;
        }
        return values_check(c, sig, strlen(sig), pos_io, 0);
}

/* The variant type each known header field must have. */
static const char field_type[_WIRE_FIELD_N] = {
        [WIRE_FIELD_PATH] = 'o',
        [WIRE_FIELD_INTERFACE] = 's',
        [WIRE_FIELD_MEMBER] = 's',
        [WIRE_FIELD_ERROR_NAME] = 's',
        [WIRE_FIELD_REPLY_SERIAL] = 'u',
        [WIRE_FIELD_DESTINATION] = 's',
        [WIRE_FIELD_SENDER] = 's',
        [WIRE_FIELD_SIGNATURE] = 'g',
        [WIRE_FIELD_UNIX_FDS] = 'u',
};

/* Reads the fixed header; shared by framing and parsing. */
static int fixed_header_check(const uint8_t *p, bool *ret_be, uint64_t *ret_total) {
        uint32_t fields_size, body_size;
        uint64_t total;
        bool be;

        if (p[0] == WIRE_ENDIAN_LITTLE)
                be = false;
        else if (p[0] == WIRE_ENDIAN_BIG)
                be = true;
        else
                return WIRE_E_BAD_ENDIAN;
        if (p[3] != WIRE_PROTOCOL_VERSION)
                return WIRE_E_BAD_VERSION;
        body_size = wire_load32(p + 4, be);
        fields_size = wire_load32(p + 12, be);
        if (fields_size > WIRE_MAX_ARRAY_SIZE)
                return WIRE_E_TOO_LARGE;
        total = ALIGN8((uint64_t)WIRE_FIXED_HEADER_SIZE + fields_size) + body_size;
        if (total > WIRE_MAX_MESSAGE_SIZE)
                return WIRE_E_TOO_LARGE;
        *ret_be = be;
        *ret_total = total;
        return 0;
}

/**
 * wire_message_frame() - size of the message that starts at @data
 * @data:       received bytes
 * @size:       how many
 * @ret_size:   the message's total size
 *
 * Return: 0, WIRE_E_AGAIN (fewer than 16 bytes), WIRE_E_BAD_ENDIAN, WIRE_E_BAD_VERSION,
 * WIRE_E_TOO_LARGE.
 */
int wire_message_frame(const void *data, size_t size, size_t *ret_size) {
        uint64_t total;
        bool be;
        int r;

        if (size < WIRE_FIXED_HEADER_SIZE)
                return WIRE_E_AGAIN;
        r = fixed_header_check(data, &be, &total);
        if (r)
                return r;
        *ret_size = (size_t)total;
        return 0;
}

static int field_string_validate(WireField code, const char *s, uint32_t n) {
        switch (code) {
        case WIRE_FIELD_PATH:
                if (!wire_path_is_valid(s, n))
                        return WIRE_E_BAD_PATH;
                if (n == strlen(WIRE_LOCAL_PATH) && memcmp(s, WIRE_LOCAL_PATH, n) == 0)
                        return WIRE_E_LOCAL_PATH;
                return 0;
        case WIRE_FIELD_INTERFACE:
                if (!wire_interface_is_valid(s, n))
                        return WIRE_E_BAD_INTERFACE;
                if (n == strlen(WIRE_LOCAL_INTERFACE) && memcmp(s, WIRE_LOCAL_INTERFACE, n) == 0)
                        return WIRE_E_LOCAL_PATH;
                return 0;
        case WIRE_FIELD_MEMBER:
                return wire_member_is_valid(s, n) ? 0 : WIRE_E_BAD_MEMBER;
        case WIRE_FIELD_ERROR_NAME:
                return wire_error_name_is_valid(s, n) ? 0 : WIRE_E_BAD_ERROR_NAME;
        case WIRE_FIELD_DESTINATION:
        case WIRE_FIELD_SENDER:
                return wire_bus_name_is_valid(s, n) ? 0 : WIRE_E_BAD_BUS_NAME;
        default:
                return 0;
        }
}

static int field_string_check(WireField code, const char *s, uint32_t n, WireFieldMemo *memo) {
        int i = code == WIRE_FIELD_PATH ? 0 : code == WIRE_FIELD_INTERFACE ? 1 :
                code == WIRE_FIELD_DESTINATION ? (int)WIRE_FIELD_MEMO_DESTINATION : -1;
        int r;

        if (!memo || i < 0)
                return field_string_validate(code, s, n);
        if (n && n == memo->slot[i].len && memcmp(s, memo->slot[i].s, n) == 0)
                return 0;
        r = field_string_validate(code, s, n);
        if (r == 0 && n <= WIRE_FIELD_MEMO_LEN) {
                memo->slot[i].len = (uint8_t)n;
                memcpy(memo->slot[i].s, s, n);
        }
        return r;
}

/* Is the field array at @f (@len bytes, byte order @be) the one @m holds, its
 * REPLY_SERIAL value aside? */
static bool fields_memo_match(const WireFieldsMemo *m, const uint8_t *f, uint32_t len, bool be) {
        size_t at;

        if (m->len != len || m->big_endian != be || !len)
                return false;
        if (!m->reply_serial_at)
                return memcmp(f, m->bytes, len) == 0;
        at = m->reply_serial_at - WIRE_FIXED_HEADER_SIZE;
        return memcmp(f, m->bytes, at) == 0 &&
               memcmp(f + at + 4, m->bytes + at + 4, len - at - 4) == 0;
}

static const char *memo_ptr(const uint8_t *p, uint16_t off) {
        return off ? (const char *)p + off : NULL;
}

/* What the walk of the array @m holds found, for the message at @p. Return: 0 or
 * WIRE_E_BAD_SERIAL (the one value not compared). */
static int fields_memo_apply(const WireFieldsMemo *m, const uint8_t *p, WireHeader *h) {
        if (m->reply_serial_at) {
                h->reply_serial = wire_load32(p + m->reply_serial_at, m->big_endian);
                if (h->reply_serial == 0)
                        return WIRE_E_BAD_SERIAL;
        }
        h->n_fds = m->n_fds;
        h->has_unknown_fields = m->has_unknown_fields;
        h->sender_field_offset = m->sender_field_offset;
        h->sender_field_size = m->sender_field_size;
        h->path = memo_ptr(p, m->path);
        h->interface = memo_ptr(p, m->interface);
        h->member = memo_ptr(p, m->member);
        h->error_name = memo_ptr(p, m->error_name);
        h->destination = memo_ptr(p, m->destination);
        h->sender = memo_ptr(p, m->sender);
        if (m->signature)
                h->signature = (const char *)p + m->signature;
        return 0;
}

static uint16_t memo_off(const uint8_t *p, const char *s) {
        return s ? (uint16_t)((const uint8_t *)s - p) : 0;
}

/* Remember the field array of @p, just walked into @h without an error. */
static void fields_memo_record(WireFieldsMemo *m, const uint8_t *p, const WireHeader *h,
                               size_t reply_serial_at) {
        m->len = (uint16_t)h->fields_size;
        m->big_endian = h->big_endian;
        m->has_unknown_fields = h->has_unknown_fields;
        m->reply_serial_at = (uint16_t)reply_serial_at;
        m->path = memo_off(p, h->path);
        m->interface = memo_off(p, h->interface);
        m->member = memo_off(p, h->member);
        m->error_name = memo_off(p, h->error_name);
        m->destination = memo_off(p, h->destination);
        m->sender = memo_off(p, h->sender);
        m->signature = h->signature[0] ? memo_off(p, h->signature) : 0;
        m->sender_field_offset = (uint16_t)h->sender_field_offset;
        m->sender_field_size = (uint16_t)h->sender_field_size;
        m->n_fds = h->n_fds;
        memcpy(m->bytes, p + WIRE_FIXED_HEADER_SIZE, h->fields_size);
}

/**
 * wire_message_parse() - validate one complete message and describe its header
 * @data:       the message, exactly @size bytes (as framed by wire_message_frame())
 * @size:       its size
 * @n_fds:      how many fds arrived with it
 * @flags:      WIRE_PARSE_*
 * @ret:        the header, written only on success
 *
 * The UNIX_FDS field may not claim more fds than @n_fds (the caller takes hdr.n_fds of
 * them); 'h' values are not checked against it (see the top of this file).
 *
 * Return: 0, or WIRE_E_BAD_ENDIAN, WIRE_E_BAD_VERSION, WIRE_E_BAD_TYPE, WIRE_E_TOO_LARGE,
 * WIRE_E_BAD_SERIAL, WIRE_E_BAD_FIELD, WIRE_E_MISSING_FIELD, WIRE_E_BAD_PATH,
 * WIRE_E_BAD_INTERFACE, WIRE_E_BAD_MEMBER, WIRE_E_BAD_ERROR_NAME, WIRE_E_BAD_BUS_NAME,
 * WIRE_E_BAD_SIGNATURE, WIRE_E_BAD_STRING, WIRE_E_BAD_BOOLEAN, WIRE_E_BAD_PADDING,
 * WIRE_E_TRUNCATED, WIRE_E_TRAILING, WIRE_E_BAD_FD_INDEX, WIRE_E_TOO_DEEP,
 * WIRE_E_BAD_VARIANT, WIRE_E_BAD_DICT, WIRE_E_LOCAL_PATH.
 */
int wire_message_parse(const void *data, size_t size, size_t n_fds, unsigned flags,
                       WireHeader *ret) {
        WireHeader h;
        int r;

        r = wire_message_parse_memo(data, size, n_fds, flags, NULL, &h);
        if (r)
                return r;
        *ret = h;
        return 0;
}

/**
 * wire_message_parse_memo() - wire_message_parse() with a peer's WireFieldMemo
 * @data:       as wire_message_parse()
 * @size:       as wire_message_parse()
 * @n_fds:      as wire_message_parse()
 * @flags:      as wire_message_parse()
 * @memo:       NULL, or the sender's memo (consulted and updated)
 * @ret:        the header; unlike wire_message_parse(), written as the walk goes, so its
 *              contents are unspecified on failure (one copy of it less per message)
 *
 * Return: as wire_message_parse().
 */
int wire_message_parse_memo(const void *data, size_t size, size_t n_fds, unsigned flags,
                            WireFieldMemo *memo, WireHeader *ret) {
        const uint8_t *p = data;
        WireHeader *h = ret;
        WalkCtx c = { .p = p };
        size_t pos, fields_end, sender_end = 0, reply_serial_at = 0;
        uint32_t seen = 0;
        uint64_t total;
        int r;

        *h = (WireHeader){ .signature = "" };
        if (size < WIRE_FIXED_HEADER_SIZE)
                return WIRE_E_TRUNCATED;
        r = fixed_header_check(p, &c.be, &total);
        if (r)
                return r;
        if (size < total && !(flags & WIRE_PARSE_HEADER_ONLY))
                return WIRE_E_TRUNCATED;
        if (size > total)
                return WIRE_E_TRAILING;

        h->big_endian = c.be;
        h->type = p[1];
        h->flags = p[2];
        h->body_size = wire_load32(p + 4, c.be);
        h->serial = wire_load32(p + 8, c.be);
        h->fields_size = wire_load32(p + 12, c.be);
        h->body_offset = (uint32_t)ALIGN8(WIRE_FIXED_HEADER_SIZE + (size_t)h->fields_size);
        h->total_size = (uint32_t)total;
        if (h->type == WIRE_MSG_INVALID)
                return WIRE_E_BAD_TYPE;
        if (h->serial == 0)
                return WIRE_E_BAD_SERIAL;

        fields_end = WIRE_FIXED_HEADER_SIZE + (size_t)h->fields_size;
        if (size < h->body_offset)
                return WIRE_E_TRUNCATED;        /* only HEADER_ONLY gets here with less */
        c.end = fields_end;
        if (flags & WIRE_PARSE_BUILT)
                memo = NULL;                    /* its strings were not checked: not for it */
        if (memo && fields_memo_match(&memo->fields, p + WIRE_FIXED_HEADER_SIZE, h->fields_size,
                                      c.be)) {
                r = fields_memo_apply(&memo->fields, p, h);
                if (r)
                        return r;
                memo = NULL;                    /* nothing new to remember */
                pos = fields_end;               /* the walk below has nothing to do */
        } else
                pos = WIRE_FIXED_HEADER_SIZE;
        while (pos < fields_end) {
                size_t field_start;
                const char *sig, *s;
                uint32_t len;
                uint8_t code, slen;

                r = pad_check(p, &pos, fields_end, 8);
                if (r)
                        return r;
                if (pos == fields_end)
                        return WIRE_E_TRUNCATED;        /* padding, but no element after it */
                field_start = pos;
                if (sender_end) {
                        h->sender_field_size = (uint32_t)(field_start - h->sender_field_offset);
                        sender_end = 0;
                }
                code = p[pos++];
                r = sig_string_check(&c, &pos, &sig, &slen);
                if (r)
                        return r;

                if (code == WIRE_FIELD_INVALID)
                        return WIRE_E_BAD_FIELD;
                if (code >= _WIRE_FIELD_N) {
                        /* unknown: skipped, but it must still be well-formed */
                        h->has_unknown_fields = true;
                        r = wire_signature_check(sig, slen, true);
                        if (r)
                                return r;
                        r = values_check(&c, sig, slen, &pos, 3);
                        if (r)
                                return r;
                        continue;
                }
                if (slen != 1 || sig[0] != field_type[code] || (seen & (1u << code)))
                        return WIRE_E_BAD_FIELD;
                seen |= 1u << code;

                switch (field_type[code]) {
                case 'u':
                        r = pad_check(p, &pos, fields_end, 4);
                        if (r)
                                return r;
                        if (fields_end - pos < 4)
                                return WIRE_E_TRUNCATED;
                        len = wire_load32(p + pos, c.be);
                        pos += 4;
                        if (code == WIRE_FIELD_REPLY_SERIAL) {
                                if (len == 0)
                                        return WIRE_E_BAD_SERIAL;
                                h->reply_serial = len;
                                reply_serial_at = pos - 4;
                        } else
                                h->n_fds = len;
                        break;
                case 'g':
                        r = sig_string_check(&c, &pos, &s, &slen);
                        if (r)
                                return r;
                        r = flags & WIRE_PARSE_BUILT ? 0 : wire_signature_check(s, slen, false);
                        if (r)
                                return r;
                        h->signature = s;
                        break;
                default:
                        r = pad_check(p, &pos, fields_end, 4);
                        if (r)
                                return r;
                        r = string_check(&c, &pos, &s, &len);
                        if (r)
                                return r;
                        r = flags & WIRE_PARSE_BUILT ? 0 : field_string_check(code, s, len, memo);
                        if (r)
                                return r;
                        switch (code) {
                        case WIRE_FIELD_PATH:
                                h->path = s;
                                break;
                        case WIRE_FIELD_INTERFACE:
                                h->interface = s;
                                break;
                        case WIRE_FIELD_MEMBER:
                                h->member = s;
                                break;
                        case WIRE_FIELD_ERROR_NAME:
                                h->error_name = s;
                                break;
                        case WIRE_FIELD_DESTINATION:
                                h->destination = s;
                                break;
                        case WIRE_FIELD_SENDER:
                                h->sender = s;
                                h->sender_field_offset = (uint32_t)field_start;
                                sender_end = pos;
                                break;
                        }
                        break;
                }
        }
        if (sender_end)
                h->sender_field_size = (uint32_t)(fields_end - h->sender_field_offset);
        if (memo && h->fields_size && h->fields_size <= WIRE_FIELDS_MEMO_LEN)
                fields_memo_record(&memo->fields, p, h, reply_serial_at);

        /* padding between the field array and the body */
        c.end = h->total_size;
        pos = fields_end;
        r = pad_check(p, &pos, h->body_offset, 8);
        if (r)
                return r;

        switch (h->type) {
        case WIRE_MSG_METHOD_CALL:
                if (!h->path || !h->member)
                        return WIRE_E_MISSING_FIELD;
                break;
        case WIRE_MSG_METHOD_RETURN:
                if (!h->reply_serial)
                        return WIRE_E_MISSING_FIELD;
                break;
        case WIRE_MSG_ERROR:
                if (!h->error_name || !h->reply_serial)
                        return WIRE_E_MISSING_FIELD;
                break;
        case WIRE_MSG_SIGNAL:
                if (!h->path || !h->interface || !h->member)
                        return WIRE_E_MISSING_FIELD;
                break;
        default:
                break;
        }

        if (h->n_fds > n_fds)
                return WIRE_E_BAD_FD_INDEX;

        if (flags & (WIRE_PARSE_SKIP_BODY | WIRE_PARSE_HEADER_ONLY)) {
                if (h->signature[0] == 0 && h->body_size > 0)
                        return WIRE_E_TRAILING;
                if (h->signature[0] != 0 && h->body_size == 0)
                        return WIRE_E_TRUNCATED;
        } else {
                pos = h->body_offset;
                r = body_check(&c, h->signature, &pos);
                if (r)
                        return r;
                if (pos != h->total_size)
                        return WIRE_E_TRAILING;
        }

        return 0;
}

/**
 * wire_message_get_args() - the leading body arguments, as match rules see them
 * @data:       a message parsed (with its body) into @hdr
 * @hdr:        its header
 * @ret:        the arguments
 *
 * Return: 0.
 */
int wire_message_get_args(const void *data, const WireHeader *hdr, WireArgs *ret) {
        WireReader r;
        unsigned i;
        char t;

        wire_reader_init(&r, data, hdr);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS && (t = wire_reader_peek(&r)); ++i) {
                ret->type[i] = t;
                ret->str[i] = NULL;
                if (t == 's' || t == 'o')
                        (void) wire_reader_read_basic(&r, t, &ret->str[i]);
                else
                        (void) wire_reader_skip(&r);
        }
        ret->n_args = i;
        return 0;
}

/**
 * wire_body_is_byte_array() - is the body one byte array (signature exactly "ay")?
 * @hdr:        a parsed header
 */
bool wire_body_is_byte_array(const WireHeader *hdr) {
        return hdr->signature[0] == 'a' && hdr->signature[1] == 'y' && !hdr->signature[2];
}

/**
 * wire_byte_array_body_check() - wire_message_parse()'s verdict on a byte-array body
 * @hdr:        the header (a WIRE_PARSE_HEADER_ONLY parse will do), wire_body_is_byte_array()
 * @body:       the body's first min(4, body_size) bytes
 *
 * A byte array's contents are valid whatever they are: of such a body only the length word
 * can be wrong, so the verdict needs no more than these bytes. Its codes are those the full
 * parse gives for the same message, in the same order of checks (the message's end is
 * the body's: values_check()'s "a" case, then the trailing check).
 * Return: 0, WIRE_E_TRUNCATED, WIRE_E_TOO_LARGE, WIRE_E_TRAILING.
 */
int wire_byte_array_body_check(const WireHeader *hdr, const void *body) {
        /* the walk's own array head check, on a body that starts 8-aligned: no padding is
         * read, only the length word */
        WalkCtx c = { .p = body, .end = hdr->body_size, .be = hdr->big_endian };
        size_t pos = 0;
        uint32_t len;
        int r;

        r = array_head_check(&c, 'y', &pos, &len);
        if (r)
                return r;
        return pos + len < hdr->body_size ? WIRE_E_TRAILING : 0;
}
