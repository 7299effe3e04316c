/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Building the messages the bus itself emits (driver replies, errors, signals). Bodies are
 * written little-endian into a growable buffer; the writer tracks alignment and the body
 * signature. Errors are sticky: after the first failure every call returns it, so callers
 * may chain appends and check once, at wire_message_build().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire/protocol.h"

#define WIRE_WRITER_MAX_DEPTH 64

typedef struct WireWriterFrame {
        char container;                 /* 'a', '(', '{', 'v' */
        size_t start;                   /* array: offset of the length word; others: unused */
        size_t elem_start;              /* array: offset of the first element (after padding) */
        size_t sig_start;               /* position in the signature where this container began */
        const char *contents;           /* array/variant: the element/variant signature */
        size_t contents_pos;            /* progress within @contents */
        char variant_sig[WIRE_MAX_SIGNATURE_LEN + 1];
        size_t n_elements;
} WireWriterFrame;

typedef struct WireWriter {
        uint8_t *data;
        size_t size;
        size_t alloc;
        int error;                      /* sticky: 0, -ENOMEM, or a WIRE_E_* code */
        char signature[WIRE_MAX_SIGNATURE_LEN + 1];   /* top-level body signature so far */
        size_t sig_len;
        unsigned depth;
        WireWriterFrame stack[WIRE_WRITER_MAX_DEPTH];
} WireWriter;

void wire_writer_init(WireWriter *w);
void wire_writer_deinit(WireWriter *w);

/*
 * Append one basic value. For 's', 'o', 'g' @value is the string itself (const char *);
 * for every other basic type a pointer to the value (uint8_t for 'y', uint32_t 0/1 for
 * 'b', int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t, double, uint32_t for 'h').
 * Return: 0, -ENOMEM, or WIRE_E_* (wrong type for the container, invalid string).
 */
int wire_writer_append_basic(WireWriter *w, char type, const void *value);

/*
 * Open a container: 'a' with @contents the element signature ("s", "{sv}"), 'v' with
 * @contents the variant's single complete type, '(' or '{' with @contents NULL.
 */
int wire_writer_open(WireWriter *w, char container, const char *contents);
int wire_writer_close(WireWriter *w);

/* Convenience: "as" from a NULL-terminated string vector. */
int wire_writer_append_strv(WireWriter *w, const char *const *strv);

typedef struct WireMsgSpec {
        uint8_t type;                   /* WireMsgType */
        uint8_t flags;
        uint32_t serial;
        uint32_t reply_serial;          /* 0: no field */
        uint32_t n_fds;                 /* 0: no field */
        const char *path;               /* NULL: no field */
        const char *interface;
        const char *member;
        const char *error_name;
        const char *destination;
        const char *sender;
} WireMsgSpec;

/**
 * wire_message_build() - assemble header and @body (may be NULL for an empty body)
 * @ret_data:   malloc()ed message, to be freed by the caller (or handed to bridge_msg)
 * Return: 0, -ENOMEM, or the writer's sticky WIRE_E_* code / WIRE_E_MISSING_FIELD.
 */
int wire_message_build(const WireMsgSpec *spec, const WireWriter *body, uint8_t **ret_data,
                       size_t *ret_size);
