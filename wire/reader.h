/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Reading the body of a message that wire_message_parse() has already validated: the
 * driver's arguments, match-rule argN values. Because the body is known to be valid, the
 * reader only checks that the caller asks for the types that are there.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire/message.h"

#define WIRE_READER_MAX_DEPTH 64

typedef struct WireReaderFrame {
        char container;
        size_t end;                     /* array: offset just past the last element */
        const char *sig;                /* signature being walked inside this container */
        size_t sig_pos;
        size_t sig_end;
} WireReaderFrame;

typedef struct WireReader {
        const uint8_t *body;            /* offsets are from the body start (alignment base) */
        size_t pos;
        size_t size;
        bool big_endian;
        unsigned depth;
        WireReaderFrame stack[WIRE_READER_MAX_DEPTH + 1];
} WireReader;

void wire_reader_init(WireReader *r, const void *msg, const WireHeader *hdr);

/* The type code of the next value in the current container, or 0 at its end. */
char wire_reader_peek(const WireReader *r);

/*
 * Read one basic value; same value conventions as wire_writer_append_basic(), with strings
 * returned as const char * pointing into the message. Return: 0, or WIRE_E_BAD_SIGNATURE if
 * the next value is not of @type (or there is none).
 */
int wire_reader_read_basic(WireReader *r, char type, void *ret);

/* Enter 'a', '(', '{' or 'v'; @contents may be NULL (not checked). Return: 0 or WIRE_E_BAD_SIGNATURE. */
int wire_reader_enter(WireReader *r, char container, const char *contents);
int wire_reader_exit(WireReader *r);
/* Skip one complete value of whatever type. */
int wire_reader_skip(WireReader *r);
