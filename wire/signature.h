/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Signature grammar shared by the validator, the writer and the reader: walking one complete
 * type, the alignment of a type code, and which codes are basic. A signature is a sequence
 * of complete types; arrays and structs (dict entries count as structs) nest at most 32 deep
 * each, and the whole is at most 255 bytes.
 */
#include <stdbool.h>
#include <stddef.h>

/*
 * Advance *@pos past one complete type of @s (length @n). Return: 0, WIRE_E_BAD_SIGNATURE
 * (syntax), WIRE_E_BAD_DICT (dict entry misplaced or with a non-basic key) or WIRE_E_TOO_DEEP.
 * On error *@pos is unspecified.
 */
int wire_signature_next(const char *s, size_t n, size_t *pos);

/*
 * Check a whole signature: @single requires exactly one complete type (else
 * WIRE_E_BAD_VARIANT), otherwise any number, including none. Also enforces the length limit.
 * Return: 0 or a WIRE_E_* code as wire_signature_next(), WIRE_E_BAD_VARIANT.
 */
int wire_signature_check(const char *s, size_t n, bool single);

/* Length of the complete type at @s, which is known to be valid. */
size_t wire_signature_type_len(const char *s);

static inline bool wire_type_is_basic(char c) {
        switch (c) {
        case 'y': case 'b': case 'n': case 'q': case 'i': case 'u': case 'x': case 't':
        case 'd': case 's': case 'o': case 'g': case 'h':
                return true;
        default:
                return false;
        }
}

/* Alignment of values of the type that starts with @c; 1 for unknown codes. */
static inline unsigned wire_type_alignment(char c) {
        switch (c) {
        case 'n': case 'q':
                return 2;
        case 'b': case 'i': case 'u': case 'h': case 's': case 'o': case 'a':
                return 4;
        case 'x': case 't': case 'd': case '(': case '{':
                return 8;
        default:
                return 1;
        }
}

/* Size of a fixed-size basic type, 0 for strings, containers and unknown codes. */
static inline unsigned wire_type_fixed_size(char c) {
        switch (c) {
        case 'y':
                return 1;
        case 'n': case 'q':
                return 2;
        case 'b': case 'i': case 'u': case 'h':
                return 4;
        case 'x': case 't': case 'd':
                return 8;
        default:
                return 0;
        }
}
