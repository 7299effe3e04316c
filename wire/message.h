/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Reading a D-Bus message: framing (how many bytes the next message takes) and the one-pass
 * validator, which checks the fixed header, every header field, the required fields per
 * message type, and the whole body against its signature, in either byte order, without
 * touching the heap. The result is a WireHeader whose strings point into the caller's buffer
 * (every string on the wire is NUL-terminated in place, so they are usable C strings).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "wire/protocol.h"

/* Positive outcomes: the input is malformed. Each names the rule it broke. */
enum {
        _WIRE_E_SUCCESS,
        WIRE_E_AGAIN,                   /* not enough bytes yet to decide (framing only) */
        WIRE_E_BAD_ENDIAN,              /* first byte neither 'l' nor 'B' */
        WIRE_E_BAD_VERSION,             /* protocol version != 1 */
        WIRE_E_BAD_TYPE,                /* message type 0 (types > 4 are skipped, not errors) */
        WIRE_E_TOO_LARGE,               /* message > 128 MiB, or array > 64 MiB */
        WIRE_E_BAD_SERIAL,              /* serial 0, or reply serial 0 */
        WIRE_E_BAD_FIELD,               /* header field with wrong variant type or duplicated */
        WIRE_E_MISSING_FIELD,           /* a field required for this message type is absent */
        WIRE_E_BAD_PATH,                /* invalid object path */
        WIRE_E_BAD_INTERFACE,           /* invalid interface name */
        WIRE_E_BAD_MEMBER,              /* invalid member name */
        WIRE_E_BAD_ERROR_NAME,          /* invalid error name */
        WIRE_E_BAD_BUS_NAME,            /* invalid destination or sender */
        WIRE_E_BAD_SIGNATURE,           /* invalid signature (syntax, length, depth) */
        WIRE_E_BAD_STRING,              /* invalid UTF-8, embedded NUL, or missing terminator */
        WIRE_E_BAD_BOOLEAN,             /* boolean other than 0 or 1 */
        WIRE_E_BAD_PADDING,             /* non-zero alignment padding */
        WIRE_E_TRUNCATED,               /* data ends before what the header or signature says */
        WIRE_E_TRAILING,                /* body longer than its signature accounts for */
        WIRE_E_BAD_FD_INDEX,            /* UNIX_FDS claims more fds than were passed */
        WIRE_E_TOO_DEEP,                /* container nesting over the limits */
        WIRE_E_BAD_VARIANT,             /* variant signature not a single complete type */
        WIRE_E_BAD_DICT,                /* dict entry outside an array, or non-basic key */
        WIRE_E_LOCAL_PATH,              /* path or interface is the reserved org.freedesktop.DBus.Local */
        WIRE_E_NOT_DBUS,                /* no dbus1 message at all (a kdbus peer's opaque payload) */
        _WIRE_E_N,
};

/* A short, human text for a WIRE_E_* code, for error replies and logs. */
const char *wire_strerror(int code);

typedef struct WireHeader {
        bool big_endian;                /* 'B' */
        uint8_t type;                   /* WireMsgType; unknown types > 4 are parsed and kept */
        uint8_t flags;
        uint32_t body_size;
        uint32_t serial;
        uint32_t reply_serial;          /* 0 if absent */
        uint32_t n_fds;                 /* UNIX_FDS field, 0 if absent */
        uint32_t fields_size;           /* the header field array's byte length (from the wire) */
        uint32_t body_offset;           /* 16 + fields_size padded to 8 */
        uint32_t total_size;            /* body_offset + body_size */
        uint32_t sender_field_offset;   /* offset of the SENDER field struct, 0 if absent */
        uint32_t sender_field_size;     /* its size, padding to the next field included */
        bool has_unknown_fields;        /* fields of codes the specification does not define */
        const char *path;               /* NULL when absent; all point into the message */
        const char *interface;
        const char *member;
        const char *error_name;
        const char *destination;
        const char *sender;
        const char *signature;          /* "" when absent */
} WireHeader;

/**
 * wire_message_frame() - size of the message that starts at @data
 * Needs the first 16 bytes. Return: 0 with *ret_size set; WIRE_E_AGAIN if @size < 16;
 * WIRE_E_BAD_ENDIAN, WIRE_E_BAD_VERSION, WIRE_E_TOO_LARGE.
 */
int wire_message_frame(const void *data, size_t size, size_t *ret_size);

enum {
        WIRE_PARSE_SKIP_BODY = 1u << 0, /* header only: for messages whose body we built or checked */
        /* the header of a message whose body lies elsewhere (a native sender's memfd parts):
         * @size covers at least the header up to the body's start, at most the whole
         * message; the body is not checked (implies SKIP_BODY); total_size is the declared
         * one */
        WIRE_PARSE_HEADER_ONLY = 1u << 1,
        /* a message wire_message_build() made: its header strings and signature were
         * checked there, so only the framing is read (with SKIP_BODY: the bus's own) */
        WIRE_PARSE_BUILT = 1u << 2,
};

/**
 * wire_message_parse() - validate one complete message and describe its header
 * @data:       the message, exactly @size bytes (as framed by wire_message_frame())
 * @size:       its size
 * @n_fds:      how many fds arrived with it: the UNIX_FDS field may not claim more
 *              (WIRE_E_BAD_FD_INDEX); the message owns the first hdr.n_fds of them. 'h'
 *              values are not checked against hdr.n_fds, as in libdbus (wire/message.c)
 * @flags:      WIRE_PARSE_*
 * @ret:        the header, written only on success
 *
 * Checks everything the specification requires of a message a bus accepts. One pass, no
 * allocation, no recursion deeper than the nesting limits. Return: 0, or a WIRE_E_* code.
 */
int wire_message_parse(const void *data, size_t size, size_t n_fds, unsigned flags,
                       WireHeader *ret);

/*
 * What a peer's last valid messages looked like, so that the same bytes need no second
 * look: the verdict on a header field array is a function of its bytes and byte order.
 *
 * @slot: the last valid PATH, INTERFACE and DESTINATION (zeroed: empty). A peer sends the
 * same few names again and again, and checking them is a third of a small message's parse
 * (wire_interface_is_valid() alone ~230 instructions for "org.freedesktop.DBus"): bytes
 * equal to the last valid value of the same field are not checked again. Longer values are
 * checked every time.
 *
 * @fields: the last valid field array as a whole, up to WIRE_FIELDS_MEMO_LEN bytes, with
 * what the walk found in it as offsets from the message's start. A peer's calls of one
 * method carry the same array every time (the serial is in the fixed header), and its
 * replies to one caller differ only in the REPLY_SERIAL value, which is left out of the
 * comparison and read (and checked non-zero) on every hit. A hit replaces the walk of the
 * array; the padding after it, the required fields, the fd count and the body are checked
 * as always (issue #16).
 */
#define WIRE_FIELD_MEMO_LEN 47u
#define WIRE_FIELDS_MEMO_LEN 192u
typedef struct WireFieldsMemo {
        uint16_t len;                   /* fields_size; 0: empty */
        bool big_endian;
        bool has_unknown_fields;
        uint16_t reply_serial_at;       /* offset of REPLY_SERIAL's value; 0: absent */
        uint16_t path, interface, member, error_name, destination, sender, signature;
        uint16_t sender_field_offset, sender_field_size;
        uint32_t n_fds;
        uint8_t bytes[WIRE_FIELDS_MEMO_LEN];
} WireFieldsMemo;

typedef struct WireFieldMemo {
        struct {
                uint8_t len;            /* 0: empty (no valid value of these is empty) */
                char s[WIRE_FIELD_MEMO_LEN];
        } slot[3];
        WireFieldsMemo fields;
} WireFieldMemo;

/* The slot of a DESTINATION in WireFieldMemo (message.c keeps PATH, INTERFACE in 0, 1). */
#define WIRE_FIELD_MEMO_DESTINATION 2u

/* Are the @n bytes at @s the last valid DESTINATION @memo holds, i.e. a valid bus name? */
static inline bool wire_field_memo_has_destination(const WireFieldMemo *memo, const char *s,
                                                   size_t n) {
        return n && n == memo->slot[WIRE_FIELD_MEMO_DESTINATION].len &&
               memcmp(s, memo->slot[WIRE_FIELD_MEMO_DESTINATION].s, n) == 0;
}

/* wire_message_parse() with @memo (may be NULL) consulted and updated; the same verdicts.
 * @ret is written as the parse goes: unspecified after a failure. */
int wire_message_parse_memo(const void *data, size_t size, size_t n_fds, unsigned flags,
                            WireFieldMemo *memo, WireHeader *ret);

/*
 * The first up-to-64 body arguments as the match-rule keys see them (argN, argNpath,
 * arg0namespace): for each index, the string value if the argument is of type s or o (and
 * for argNpath also o), else NULL. Also fills the type code. Works on a parsed message.
 */
#define WIRE_MAX_MATCH_ARGS 64u
typedef struct WireArgs {
        unsigned n_args;                /* how many leading args were looked at */
        const char *str[WIRE_MAX_MATCH_ARGS];
        char type[WIRE_MAX_MATCH_ARGS]; /* 's', 'o', or another type code */
} WireArgs;

/* @hdr must come from a full parse (not WIRE_PARSE_SKIP_BODY): the body is trusted. */
int wire_message_get_args(const void *data, const WireHeader *hdr, WireArgs *ret);

/*
 * A body that is one byte array (signature exactly "ay") is valid or not by its length word
 * alone: a bus may check it without having the contents in memory (proxy/client-splice.c
 * passes them on through a pipe). wire_byte_array_body_check() gives the verdict
 * wire_message_parse() gives for the whole message whose header @hdr describes (a
 * WIRE_PARSE_HEADER_ONLY parse of it) from the body's first min(4, body_size) bytes.
 */
bool wire_body_is_byte_array(const WireHeader *hdr);
int wire_byte_array_body_check(const WireHeader *hdr, const void *body);
