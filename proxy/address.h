/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * D-Bus server addresses: "transport:key=value,key=value;transport:...". Values are
 * %-escaped: the bytes [-0-9A-Za-z_/.\*] may appear as they are, every other byte must be
 * written %XX (as libdbus requires). The parser unescapes into its own storage; the caller
 * owns the result. Which keys a transport needs is the listener's business.
 */
#include <stddef.h>
#include "util/macro.h"

enum {
        _ADDRESS_E_SUCCESS,
        ADDRESS_E_EMPTY,                /* empty entry (";;" or nothing at all) */
        ADDRESS_E_NO_TRANSPORT,         /* entry without "transport:" */
        ADDRESS_E_BAD_PAIR,             /* "key" without '=' or with an empty key */
        ADDRESS_E_BAD_ESCAPE,           /* '%' not followed by two hex digits */
        ADDRESS_E_UNESCAPED,            /* a byte that must be %-escaped appears as it is */
        ADDRESS_E_DUPLICATE_KEY,        /* the same key twice in one entry */
        _ADDRESS_E_N,
};

typedef struct AddressPair {
        char *key;
        char *value;                    /* unescaped; may contain any byte but NUL */
} AddressPair;

typedef struct AddressEntry {
        char *transport;
        AddressPair *pairs;
        size_t n_pairs;
} AddressEntry;

typedef struct AddressList {
        AddressEntry *entries;
        size_t n_entries;
} AddressList;

const char *address_strerror(int code);

/* Return: 0, -ENOMEM, or ADDRESS_E_*. */
int address_list_parse(const char *s, AddressList **ret);
AddressList *address_list_free(AddressList *l);
DEFINE_CLEANUP(AddressList *, address_list_free);

/* The value of @key in @e, or NULL. */
const char *address_entry_get(const AddressEntry *e, const char *key);

/* Append @value to @buf (size @size, NUL-terminated) %-escaping as needed.
 * Return: 0 or -ENAMETOOLONG when it does not fit. */
int address_escape_append(char *buf, size_t size, const char *value);
