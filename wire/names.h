/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Validators for the names of the D-Bus specification ("Valid Names"). Each takes a
 * NUL-terminated string and its length (so callers that already know it save a strlen).
 */
#include <stdbool.h>
#include <stddef.h>

bool wire_bus_name_is_valid(const char *s, size_t n);          /* unique or well-known */
bool wire_unique_name_is_valid(const char *s, size_t n);       /* ":..." */
bool wire_well_known_name_is_valid(const char *s, size_t n);   /* not starting with ':' */
bool wire_interface_is_valid(const char *s, size_t n);
bool wire_error_name_is_valid(const char *s, size_t n);        /* same rules as interface */
bool wire_member_is_valid(const char *s, size_t n);
bool wire_path_is_valid(const char *s, size_t n);
bool wire_signature_is_valid(const char *s, size_t n);         /* any number of complete types */
bool wire_signature_is_single(const char *s, size_t n);        /* exactly one complete type */
bool wire_utf8_is_valid(const char *s, size_t n);              /* no NUL inside, valid UTF-8 */
