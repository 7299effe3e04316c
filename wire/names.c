/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Validators for the names of the D-Bus specification ("Valid Names") and for UTF-8.
 * All take an explicit length and never read past it; NUL is never a valid character, so
 * a string with an embedded NUL is always rejected.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "wire/names.h"
#include "wire/protocol.h"
#include "wire/signature.h"

enum {
        C_ALPHA = 1u << 0,      /* A-Z a-z _ */
        C_DIGIT = 1u << 1,
        C_HYPHEN = 1u << 2,
};

#define R4(c) [c] = C_ALPHA, [c + 1] = C_ALPHA, [c + 2] = C_ALPHA, [c + 3] = C_ALPHA
static const uint8_t char_class[256] = {
        R4('A'), R4('E'), R4('I'), R4('M'), R4('Q'), R4('U'), ['Y'] = C_ALPHA, ['Z'] = C_ALPHA,
        R4('a'), R4('e'), R4('i'), R4('m'), R4('q'), R4('u'), ['y'] = C_ALPHA, ['z'] = C_ALPHA,
        ['_'] = C_ALPHA, ['-'] = C_HYPHEN,
        ['0'] = C_DIGIT, ['1'] = C_DIGIT, ['2'] = C_DIGIT, ['3'] = C_DIGIT, ['4'] = C_DIGIT,
        ['5'] = C_DIGIT, ['6'] = C_DIGIT, ['7'] = C_DIGIT, ['8'] = C_DIGIT, ['9'] = C_DIGIT,
};
#undef R4

static inline bool is_alpha_(char c) {
        return char_class[(uint8_t)c] & C_ALPHA;
}

static inline bool is_digit(char c) {
        return char_class[(uint8_t)c] & C_DIGIT;
}

/*
 * Dot-separated elements, at least two, none empty. @hyphen allows '-' (bus names),
 * @digit_first allows an element to start with a digit.
 */
static bool dotted_is_valid(const char *s, size_t n, bool hyphen, bool digit_first) {
        unsigned first = C_ALPHA | (hyphen ? C_HYPHEN : 0) | (digit_first ? C_DIGIT : 0);
        unsigned rest = C_ALPHA | C_DIGIT | (hyphen ? C_HYPHEN : 0);
        size_t i, elements = 0;
        bool at_start = true;

        if (n == 0 || n > WIRE_MAX_NAME_LEN)
                return false;
        for (i = 0; i < n; ++i) {
                char c = s[i];

                if (c == '.') {
                        if (at_start)
                                return false;
                        ++elements;
                        at_start = true;
                        continue;
                }
                if (!(char_class[(uint8_t)c] & (at_start ? first : rest)))
                        return false;
                at_start = false;
        }
        return !at_start && elements >= 1;
}

/**
 * wire_unique_name_is_valid() - a unique name as libdbus (so dbus-daemon) validates it
 * @s:  name
 * @n:  its length
 *
 * Looser than the specification's text ("two or more elements"), and deliberately so:
 * clients cannot tell the buses apart by what they accept in DESTINATION or SENDER.
 * libdbus 1.14 accepts ':' followed by any run of [A-Za-z0-9_-] and dots in which every
 * dot is followed by one of those characters: ":", ":1", ":.1", ":a-b" are valid (a call
 * to them is answered ServiceUnknown), ":1.", ":1..2", "::" are not (the sender is
 * disconnected). Checked against dbus-daemon 1.14.10 and dbus_validate_bus_name()
 * (tests/unit/wire/test-names.c compares the two).
 *
 * Return: true if valid.
 */
bool wire_unique_name_is_valid(const char *s, size_t n) {
        size_t i;

        if (n < 1 || n > WIRE_MAX_NAME_LEN || s[0] != ':')
                return false;
        for (i = 1; i < n; ++i) {
                if (s[i] == '.') {
                        /* the next character must be a name character, checked next */
                        if (i + 1 == n || s[i + 1] == '.')
                                return false;
                } else if (!(char_class[(uint8_t)s[i]] & (C_ALPHA | C_DIGIT | C_HYPHEN))) {
                        return false;
                }
        }
        return true;
}

/**
 * wire_well_known_name_is_valid() - a well-known bus name
 * @s:  name
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_well_known_name_is_valid(const char *s, size_t n) {
        return dotted_is_valid(s, n, true, false);
}

/**
 * wire_bus_name_is_valid() - a unique or well-known bus name
 * @s:  name
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_bus_name_is_valid(const char *s, size_t n) {
        if (n > 0 && s[0] == ':')
                return wire_unique_name_is_valid(s, n);
        return wire_well_known_name_is_valid(s, n);
}

/**
 * wire_interface_is_valid() - an interface name
 * @s:  name
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_interface_is_valid(const char *s, size_t n) {
        return dotted_is_valid(s, n, false, false);
}

/**
 * wire_error_name_is_valid() - an error name (the rules of interface names)
 * @s:  name
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_error_name_is_valid(const char *s, size_t n) {
        return dotted_is_valid(s, n, false, false);
}

/**
 * wire_member_is_valid() - a method or signal name
 * @s:  name
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_member_is_valid(const char *s, size_t n) {
        size_t i;

        if (n == 0 || n > WIRE_MAX_NAME_LEN || !is_alpha_(s[0]))
                return false;
        for (i = 1; i < n; ++i)
                if (!is_alpha_(s[i]) && !is_digit(s[i]))
                        return false;
        return true;
}

/**
 * wire_path_is_valid() - an object path: "/" or "/" separated non-empty [A-Za-z0-9_] elements
 * @s:  path
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_path_is_valid(const char *s, size_t n) {
        size_t i;

        if (n == 0 || s[0] != '/')
                return false;
        if (n == 1)
                return true;
        if (s[n - 1] == '/')
                return false;
        for (i = 1; i < n; ++i) {
                char c = s[i];

                if (c == '/') {
                        if (s[i - 1] == '/')
                                return false;
                } else if (!is_alpha_(c) && !is_digit(c))
                        return false;
        }
        return true;
}

/**
 * wire_signature_is_valid() - any number of complete types, within the limits
 * @s:  signature
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_signature_is_valid(const char *s, size_t n) {
        return wire_signature_check(s, n, false) == 0;
}

/**
 * wire_signature_is_single() - exactly one complete type
 * @s:  signature
 * @n:  its length
 *
 * Return: true if valid.
 */
bool wire_signature_is_single(const char *s, size_t n) {
        return wire_signature_check(s, n, true) == 0;
}

static inline bool word_is_plain_ascii(uint64_t v) {
        /* no byte with the high bit set, and no zero byte */
        return !(v & UINT64_C(0x8080808080808080)) &&
               !((v - UINT64_C(0x0101010101010101)) & ~v & UINT64_C(0x8080808080808080));
}

/**
 * wire_utf8_is_valid() - well-formed UTF-8 without NUL
 * @s:  bytes
 * @n:  their number
 *
 * Rejects overlong forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
 *
 * Return: true if valid.
 */
bool wire_utf8_is_valid(const char *s, size_t n) {
        const uint8_t *p = (const uint8_t *)s, *e = p + n;

        while (p < e) {
                uint8_t c = *p, lo = 0x80, hi = 0xbf;
                size_t more;

                if (c < 0x80) {
                        /* runs of ASCII, 16 then 8 bytes at a time */
                        while ((size_t)(e - p) >= 16) {
                                uint64_t v, v2;

                                memcpy(&v, p, 8);
                                memcpy(&v2, p + 8, 8);
                                if (!word_is_plain_ascii(v) || !word_is_plain_ascii(v2))
                                        break;
                                p += 16;
                        }
                        if ((size_t)(e - p) >= 8) {
                                uint64_t v;

                                memcpy(&v, p, 8);
                                if (word_is_plain_ascii(v)) {
                                        p += 8;
                                        continue;
                                }
                        }
                        if (p >= e)
                                break;
                        c = *p;
                        if (c >= 0x80)
                                continue;
                        if (c == 0)
                                return false;
                        ++p;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf)
                        more = 1;
                else if (c >= 0xe0 && c <= 0xef) {
                        more = 2;
                        if (c == 0xe0)
                                lo = 0xa0;      /* overlong */
                        else if (c == 0xed)
                                hi = 0x9f;      /* surrogates */
                } else if (c >= 0xf0 && c <= 0xf4) {
                        more = 3;
                        if (c == 0xf0)
                                lo = 0x90;      /* overlong */
                        else if (c == 0xf4)
                                hi = 0x8f;      /* > U+10FFFF */
                } else
                        return false;
                if ((size_t)(e - p) <= more)
                        return false;
                if (p[1] < lo || p[1] > hi)
                        return false;
                for (size_t i = 2; i <= more; ++i)
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                p += more + 1;
        }
        return true;
}
