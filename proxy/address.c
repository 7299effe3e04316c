/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parser for D-Bus address lists (specification, "Server Addresses"). An entry is
 * "transport:" followed by comma-separated key=value pairs; entries are separated by ';'
 * and an empty trailing entry is tolerated (libdbus does the same). Keys are not escaped;
 * values are unescaped here and may then contain ',', ';', '=' or any byte but NUL.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "proxy/address.h"
#include "util/error.h"
#include "util/hex.h"

static const char *const address_errors[_ADDRESS_E_N] = {
        [_ADDRESS_E_SUCCESS] = "success",
        [ADDRESS_E_EMPTY] = "empty address",
        [ADDRESS_E_NO_TRANSPORT] = "address entry has no \"transport:\" prefix",
        [ADDRESS_E_BAD_PAIR] = "address entry has a key without \"=value\" or an empty key",
        [ADDRESS_E_BAD_ESCAPE] = "'%' in an address value is not followed by two hex digits",
        [ADDRESS_E_UNESCAPED] = "character in an address value should have been %-escaped",
        [ADDRESS_E_DUPLICATE_KEY] = "the same key appears twice in an address entry",
};

/**
 * address_strerror() - a human text for an ADDRESS_E_* code
 * @code:       the code
 *
 * Return: a static string.
 */
const char *address_strerror(int code) {
        if (code < 0 || code >= _ADDRESS_E_N)
                return "unknown address error";
        return address_errors[code];
}

static bool address_is_optionally_escaped(unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '-' || c == '_' || c == '/' || c == '.' || c == '\\' || c == '*';
}

static void address_entry_deinit(AddressEntry *e) {
        size_t i;

        for (i = 0; i < e->n_pairs; ++i) {
                free(e->pairs[i].key);
                free(e->pairs[i].value);
        }
        free(e->pairs);
        free(e->transport);
}

/**
 * address_list_free() - free a parsed address list
 * @l:          the list, or NULL
 *
 * Return: NULL.
 */
AddressList *address_list_free(AddressList *l) {
        size_t i;

        if (!l)
                return NULL;
        for (i = 0; i < l->n_entries; ++i)
                address_entry_deinit(&l->entries[i]);
        free(l->entries);
        free(l);
        return NULL;
}

/* Unescape [s, s+n) into a new string. */
static int address_unescape(const char *s, size_t n, char **ret) {
        _cleanup_(freep) char *out = NULL;
        size_t i, j = 0;

        out = malloc(n + 1);
        if (!out)
                return error_origin(-ENOMEM);
        for (i = 0; i < n; ++i) {
                unsigned char c = (unsigned char)s[i];

                if (c == '%') {
                        int hi, lo;

                        if (i + 2 >= n)
                                return ADDRESS_E_BAD_ESCAPE;
                        hi = hex_digit(s[i + 1]);
                        lo = hex_digit(s[i + 2]);
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                                return ADDRESS_E_BAD_ESCAPE;
                        out[j++] = (char)(hi << 4 | lo);
                        i += 2;
                } else if (address_is_optionally_escaped(c)) {
                        out[j++] = (char)c;
                } else {
                        return ADDRESS_E_UNESCAPED;
                }
        }
        out[j] = '\0';
        *ret = steal_ptr(&out);
        return 0;
}

static int address_entry_parse(const char *s, size_t n, AddressEntry *e) {
        const char *colon, *p, *end = s + n;
        int r;

        colon = memchr(s, ':', n);
        if (!colon || colon == s)
                return ADDRESS_E_NO_TRANSPORT;
        e->transport = strndup(s, (size_t)(colon - s));
        if (!e->transport)
                return error_origin(-ENOMEM);

        for (p = colon + 1; p < end;) {
                const char *comma = memchr(p, ',', (size_t)(end - p)), *eq;
                const char *pend = comma ? comma : end;
                AddressPair *pairs;
                size_t i;

                eq = memchr(p, '=', (size_t)(pend - p));
                if (!eq || eq == p)
                        return ADDRESS_E_BAD_PAIR;

                pairs = realloc(e->pairs, (e->n_pairs + 1) * sizeof(*pairs));
                if (!pairs)
                        return error_origin(-ENOMEM);
                e->pairs = pairs;
                pairs[e->n_pairs] = (AddressPair){ NULL, NULL };
                pairs[e->n_pairs].key = strndup(p, (size_t)(eq - p));
                if (!pairs[e->n_pairs].key)
                        return error_origin(-ENOMEM);
                ++e->n_pairs;
                r = address_unescape(eq + 1, (size_t)(pend - eq - 1), &pairs[e->n_pairs - 1].value);
                if (r)
                        return error_trace(r);
                for (i = 0; i + 1 < e->n_pairs; ++i)
                        if (strcmp(pairs[i].key, pairs[e->n_pairs - 1].key) == 0)
                                return ADDRESS_E_DUPLICATE_KEY;

                if (!comma)
                        break;
                p = comma + 1;
                if (p == end)
                        return ADDRESS_E_BAD_PAIR;      /* trailing ',' */
        }
        return 0;
}

/**
 * address_list_parse() - parse a ';'-separated D-Bus address list
 * @s:          the address text
 * @ret:        the parsed list
 *
 * Return: 0, -ENOMEM, or ADDRESS_E_EMPTY, ADDRESS_E_NO_TRANSPORT, ADDRESS_E_BAD_PAIR,
 * ADDRESS_E_BAD_ESCAPE, ADDRESS_E_UNESCAPED, ADDRESS_E_DUPLICATE_KEY.
 */
int address_list_parse(const char *s, AddressList **ret) {
        _cleanup_(address_list_freep) AddressList *l = NULL;
        const char *p = s;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return error_origin(-ENOMEM);

        for (;;) {
                const char *semi = strchr(p, ';');
                size_t n = semi ? (size_t)(semi - p) : strlen(p);
                AddressEntry *entries;

                if (n == 0) {
                        /* a single trailing ';' is fine; an empty entry elsewhere is not */
                        if (!semi && l->n_entries > 0)
                                break;
                        return ADDRESS_E_EMPTY;
                }
                entries = realloc(l->entries, (l->n_entries + 1) * sizeof(*entries));
                if (!entries)
                        return error_origin(-ENOMEM);
                l->entries = entries;
                entries[l->n_entries] = (AddressEntry){ NULL, NULL, 0 };
                ++l->n_entries;
                r = address_entry_parse(p, n, &entries[l->n_entries - 1]);
                if (r)
                        return error_trace(r);
                if (!semi)
                        break;
                p = semi + 1;
        }

        *ret = steal_ptr(&l);
        return 0;
}

/**
 * address_entry_get() - look up a key of an entry
 * @e:          the entry
 * @key:        the key
 *
 * Return: the unescaped value, or NULL if @key is absent.
 */
const char *address_entry_get(const AddressEntry *e, const char *key) {
        size_t i;

        for (i = 0; i < e->n_pairs; ++i)
                if (strcmp(e->pairs[i].key, key) == 0)
                        return e->pairs[i].value;
        return NULL;
}

/**
 * address_escape_append() - append @value to @buf, %-escaping every byte that needs it
 * @buf:        NUL-terminated buffer
 * @size:       its size
 * @value:      the raw value
 *
 * Return: 0, or -ENAMETOOLONG if the result does not fit (then @buf is unchanged).
 */
int address_escape_append(char *buf, size_t size, const char *value) {
        size_t len = strlen(buf), start = len;
        const unsigned char *v;

        for (v = (const unsigned char *)value; *v; ++v) {
                if (address_is_optionally_escaped(*v)) {
                        if (len + 1 >= size)
                                goto out_too_long;
                        buf[len++] = (char)*v;
                } else {
                        if (len + 3 >= size)
                                goto out_too_long;
                        buf[len++] = '%';
                        hex_encode(v, 1, buf + len);
                        len += 2;
                }
        }
        buf[len] = '\0';
        return 0;

out_too_long:
        buf[start] = '\0';
        return -ENAMETOOLONG;
}
