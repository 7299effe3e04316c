/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Hexadecimal digits: one decoder and one encoder for every area (SASL's hex-encoded
 * lines, %-escapes in D-Bus addresses, <limit> numbers, ids printed as 32 digits).
 */
#include <stddef.h>
#include <sys/types.h>

/* The value of a hex digit (either case): 0..15, or -1 for anything else. */
int hex_digit(char c);

/*
 * hex_encode() - @n bytes at @in as 2 * @n lower-case digits at @out, then a NUL
 * (@out has room for 2 * @n + 1 bytes).
 */
void hex_encode(const void *in, size_t n, char *out);

/*
 * hex_decode() - the bytes of the digits [@in, @in + @n) into @out (room for (@n + 1) / 2
 * bytes). An odd last digit is the high half of a last byte whose low half is 0, as
 * libdbus reads it (dbus-daemon accepts "AUTH EXTERNAL 3" as uid "0").
 *
 * Return: the number of bytes written, or -1 if a character is not a hex digit.
 */
ssize_t hex_decode(const char *in, size_t n, void *out);
