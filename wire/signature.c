/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Signature grammar. The walker recurses once per container level and refuses to go past
 * 32 arrays and 32 structs, so its depth is bounded by 64 frames whatever the input.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "wire/message.h"
#include "wire/protocol.h"
#include "wire/signature.h"

static int sig_type(const char *s, size_t n, size_t *pos, unsigned arrays, unsigned structs) {
        char c;
        int r;

        if (*pos >= n)
                return WIRE_E_BAD_SIGNATURE;
        c = s[(*pos)++];
        if (wire_type_is_basic(c) || c == 'v')
                return 0;

        switch (c) {
        case 'a':
                if (++arrays > WIRE_MAX_ARRAY_DEPTH)
                        return WIRE_E_TOO_DEEP;
                if (*pos < n && s[*pos] == '{') {
                        ++*pos;
                        if (++structs > WIRE_MAX_STRUCT_DEPTH)
                                return WIRE_E_TOO_DEEP;
                        if (*pos >= n)
                                return WIRE_E_BAD_SIGNATURE;
                        if (!wire_type_is_basic(s[*pos]))
                                return WIRE_E_BAD_DICT;         /* key must be basic */
                        ++*pos;
                        if (*pos < n && s[*pos] == '}')
                                return WIRE_E_BAD_DICT;         /* key without value */
                        r = sig_type(s, n, pos, arrays, structs);
                        if (r)
                                return r;
                        if (*pos >= n)
                                return WIRE_E_BAD_SIGNATURE;
                        if (s[*pos] != '}')
                                return WIRE_E_BAD_DICT;         /* more than two members */
                        ++*pos;
                        return 0;
                }
                return sig_type(s, n, pos, arrays, structs);
        case '(':
                if (++structs > WIRE_MAX_STRUCT_DEPTH)
                        return WIRE_E_TOO_DEEP;
                if (*pos < n && s[*pos] == ')')
                        return WIRE_E_BAD_SIGNATURE;            /* empty struct */
                do {
                        r = sig_type(s, n, pos, arrays, structs);
                        if (r)
                                return r;
                } while (*pos < n && s[*pos] != ')');
                if (*pos >= n)
                        return WIRE_E_BAD_SIGNATURE;
                ++*pos;
                return 0;
        case '{':
        case '}':
                return WIRE_E_BAD_DICT;
        default:
                return WIRE_E_BAD_SIGNATURE;
        }
}

/**
 * wire_signature_next() - skip one complete type
 * @s:          signature
 * @n:          its length
 * @pos:        position, advanced past the type
 *
 * Return: 0, WIRE_E_BAD_SIGNATURE, WIRE_E_BAD_DICT or WIRE_E_TOO_DEEP.
 */
int wire_signature_next(const char *s, size_t n, size_t *pos) {
        return sig_type(s, n, pos, 0, 0);
}

/**
 * wire_signature_check() - validate a signature
 * @s:          signature (need not be NUL-terminated)
 * @n:          its length
 * @single:     require exactly one complete type
 *
 * Return: 0, WIRE_E_BAD_SIGNATURE, WIRE_E_BAD_DICT, WIRE_E_TOO_DEEP, WIRE_E_BAD_VARIANT.
 */
int wire_signature_check(const char *s, size_t n, bool single) {
        size_t pos = 0;
        int r;

        if (n > WIRE_MAX_SIGNATURE_LEN)
                return WIRE_E_BAD_SIGNATURE;
        if (single && n == 0)
                return WIRE_E_BAD_VARIANT;
        while (pos < n) {
                r = sig_type(s, n, &pos, 0, 0);
                if (r)
                        return r;
                if (single && pos != n) {
                        /* still report a syntax error behind the first type as such */
                        r = wire_signature_check(s + pos, n - pos, false);
                        return r ? r : WIRE_E_BAD_VARIANT;
                }
        }
        return 0;
}

/**
 * wire_signature_type_len() - length of a complete type already known to be valid
 * @s:          the type; the signature it is in was validated
 *
 * Return: the number of characters of the type.
 */
size_t wire_signature_type_len(const char *s) {
        size_t i = 0;
        unsigned open = 0;

        for (;;) {
                switch (s[i++]) {
                case 'a':
                        continue;
                case '(':
                case '{':
                        ++open;
                        continue;
                case ')':
                case '}':
                        --open;
                        break;
                default:
                        break;
                }
                if (open == 0)
                        return i;
        }
}
