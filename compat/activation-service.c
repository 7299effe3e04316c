/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * .service file parsing and Exec= splitting (see activation-service.h). Everything a file
 * can get wrong is a positive code with "file:line: why", never an assert: service
 * directories may hold anything.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compat/activation-service.h"
#include "util/error.h"
#include "wire/names.h"

#define SERVICE_GROUP "D-BUS Service"

static int fail(char *err, size_t n_err, const char *fmt, ...) {
        va_list ap;

        if (n_err) {
                va_start(ap, fmt);
                (void) vsnprintf(err, n_err, fmt, ap);
                va_end(ap);
        }
        return ACTIVATION_SERVICE_E_INVALID;
}

/* Strict UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n) {
        size_t i = 0;

        while (i < n) {
                unsigned c = s[i], len, cp, k;

                if (c < 0x80) {
                        ++i;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf)
                        len = 2, cp = c & 0x1f;
                else if (c >= 0xe0 && c <= 0xef)
                        len = 3, cp = c & 0x0f;
                else if (c >= 0xf0 && c <= 0xf4)
                        len = 4, cp = c & 0x07;
                else
                        return false;
                if (n - i < len)
                        return false;
                for (k = 1; k < len; ++k) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (s[i + k] & 0x3f);
                }
                if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
                    (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                i += len;
        }
        return true;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* dbus-daemon's key characters: ASCII letters, digits and '-'. */
static bool is_key_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-';
}

/**
 * activation_service_free() - free a parsed service
 * @s:          the service, or NULL
 *
 * Return: NULL.
 */
ActivationService *activation_service_free(ActivationService *s) {
        if (!s)
                return NULL;
        free(s->name);
        free(s->exec);
        free(s->user);
        free(s->systemd_service);
        free(s->apparmor_label);
        free(s);
        return NULL;
}

static char **service_field(ActivationService *s, const char *key, size_t n) {
        static const struct {
                const char *key;
                size_t offset;
        } fields[] = {
                { "Name", offsetof(ActivationService, name) },
                { "Exec", offsetof(ActivationService, exec) },
                { "User", offsetof(ActivationService, user) },
                { "SystemdService", offsetof(ActivationService, systemd_service) },
                { "AssumedAppArmorLabel", offsetof(ActivationService, apparmor_label) },
        };
        size_t i;

        for (i = 0; i < ELEMENTSOF(fields); ++i)
                if (strlen(fields[i].key) == n && memcmp(fields[i].key, key, n) == 0)
                        return (char **)((char *)s + fields[i].offset);
        return NULL;
}

/* Keys seen in the current group, to refuse duplicates (bounded: a group's key list). */
typedef struct SeenKeys {
        const char *key[64];
        size_t len[64];
        size_t n;
} SeenKeys;

static int seen_add(SeenKeys *seen, const char *key, size_t n) {
        size_t i;

        for (i = 0; i < seen->n; ++i)
                if (seen->len[i] == n && memcmp(seen->key[i], key, n) == 0)
                        return 1;
        if (seen->n < ELEMENTSOF(seen->key)) {
                seen->key[seen->n] = key;
                seen->len[seen->n++] = n;
        }
        return 0;
}

/**
 * activation_service_parse() - parse the bytes of one .service file
 * @data:       the file's contents
 * @size:       their length
 * @file:       the file's name, for messages
 * @ret:        the service
 * @err:        receives "file:line: why" on ACTIVATION_SERVICE_E_INVALID
 * @n_err:      size of @err
 *
 * Return: 0, -ENOMEM, or ACTIVATION_SERVICE_E_INVALID.
 */
int activation_service_parse(const char *data, size_t size, const char *file,
                             ActivationService **ret, char *err, size_t n_err) {
        _cleanup_(activation_service_freep) ActivationService *s = NULL;
        bool in_service = false, seen_service = false, any_group = false;
        SeenKeys seen = { .n = 0 };
        size_t pos = 0;
        unsigned line = 0;

        if (memchr(data, '\0', size))
                return fail(err, n_err, "%s: contains a NUL byte", file);
        if (!utf8_valid((const unsigned char *)data, size))
                return fail(err, n_err, "%s: is not valid UTF-8", file);

        s = calloc(1, sizeof(*s));
        if (!s)
                return error_origin(-ENOMEM);

        while (pos < size) {
                const char *l = data + pos, *nl = memchr(l, '\n', size - pos);
                size_t n = nl ? (size_t)(nl - l) : size - pos;
                size_t k, key_len, v;
                char **field;

                pos += n + (nl ? 1 : 0);
                ++line;
                if (n && l[n - 1] == '\r')
                        --n;
                while (n && is_blank(*l))
                        ++l, --n;
                if (n == 0 || l[0] == '#')
                        continue;

                if (l[0] == '[') {
                        if (l[n - 1] != ']' || n < 3)
                                return fail(err, n_err, "%s:%u: malformed group header "
                                            "(expected \"[Name]\")", file, line);
                        for (k = 1; k < n - 1; ++k)
                                if (l[k] == '[' || l[k] == ']' || (unsigned char)l[k] < 0x20)
                                        return fail(err, n_err, "%s:%u: invalid character in "
                                                    "group name", file, line);
                        any_group = true;
                        in_service = n - 2 == strlen(SERVICE_GROUP) &&
                                     memcmp(l + 1, SERVICE_GROUP, n - 2) == 0;
                        if (in_service && seen_service)
                                return fail(err, n_err, "%s:%u: group [" SERVICE_GROUP "] "
                                            "given twice", file, line);
                        seen_service |= in_service;
                        seen.n = 0;
                        continue;
                }

                for (key_len = 0; key_len < n && is_key_char(l[key_len]); ++key_len)
                        ;
                for (k = key_len; k < n && is_blank(l[k]); ++k)
                        ;
                if (key_len == 0 || k >= n || l[k] != '=')
                        return fail(err, n_err, "%s:%u: expected \"Key=Value\", a "
                                    "\"[Group]\" header or a \"#\" comment", file, line);
                if (!any_group)
                        return fail(err, n_err, "%s:%u: key outside of any group", file, line);
                if (seen_add(&seen, l, key_len))
                        return fail(err, n_err, "%s:%u: key \"%.*s\" given twice in the "
                                    "group", file, line, (int)key_len, l);
                for (v = k + 1; v < n && is_blank(l[v]); ++v)
                        ;
                for (k = v; k < n; ++k)
                        if ((unsigned char)l[k] < 0x20 && l[k] != '\t')
                                return fail(err, n_err, "%s:%u: control character in the "
                                            "value of \"%.*s\"", file, line, (int)key_len, l);
                if (!in_service)
                        continue;
                field = service_field(s, l, key_len);
                if (!field)
                        continue;
                *field = strndup(l + v, n - v);
                if (!*field)
                        return error_origin(-ENOMEM);
        }

        if (!seen_service)
                return fail(err, n_err, "%s: has no [" SERVICE_GROUP "] group", file);
        if (!s->name)
                return fail(err, n_err, "%s: [" SERVICE_GROUP "] has no Name key", file);
        if (!wire_well_known_name_is_valid(s->name, strlen(s->name)))
                return fail(err, n_err, "%s: Name \"%s\" is not a valid well-known bus name",
                            file, s->name);
        if (!s->exec)
                return fail(err, n_err, "%s: [" SERVICE_GROUP "] has no Exec key", file);
        *ret = steal_ptr(&s);
        return 0;
}

/**
 * activation_strv_free() - free a NULL-terminated array of strings
 * @v:          the array, or NULL
 *
 * Return: NULL.
 */
char **activation_strv_free(char **v) {
        char **p;

        if (!v)
                return NULL;
        for (p = v; *p; ++p)
                free(*p);
        free(v);
        return NULL;
}

static void strv_freep(char ***v) {
        *v = activation_strv_free(*v);
}

/**
 * activation_exec_split() - split an Exec= line into argv (see the header)
 * @exec:       the command line
 * @ret_argv:   the words
 * @err:        receives why on failure
 * @n_err:      size of @err
 *
 * Return: 0, -ENOMEM, or ACTIVATION_SERVICE_E_INVALID.
 */
int activation_exec_split(const char *exec, char ***ret_argv, char *err, size_t n_err) {
        _cleanup_(strv_freep) char **argv = NULL;
        _cleanup_(freep) char *word = NULL;
        size_t n_argv = 0, len = 0, i, n = strlen(exec);
        bool in_word = false;

        /* a word is never longer than the line */
        word = malloc(n + 1);
        argv = calloc(n / 2 + 2, sizeof(char *));
        if (!word || !argv)
                return error_origin(-ENOMEM);

        for (i = 0; i <= n; ++i) {
                char c = exec[i];

                if (c == '\0' || is_blank(c) || c == '\n') {
                        if (in_word) {
                                argv[n_argv] = strndup(word, len);
                                if (!argv[n_argv])
                                        return error_origin(-ENOMEM);
                                ++n_argv;
                                len = 0;
                                in_word = false;
                        }
                        continue;
                }
                in_word = true;
                if (c == '\\') {
                        if (++i >= n)
                                return fail(err, n_err, "\"%s\": ends with a backslash", exec);
                        if (exec[i] != '\n')
                                word[len++] = exec[i];
                } else if (c == '\'') {
                        const char *end = strchr(exec + i + 1, '\'');

                        if (!end)
                                return fail(err, n_err, "\"%s\": unterminated ' quote", exec);
                        memcpy(word + len, exec + i + 1, (size_t)(end - exec) - i - 1);
                        len += (size_t)(end - exec) - i - 1;
                        i = (size_t)(end - exec);
                } else if (c == '"') {
                        for (++i; i < n && exec[i] != '"'; ++i) {
                                if (exec[i] == '\\' && i + 1 < n &&
                                    strchr("$`\"\\\n", exec[i + 1])) {
                                        ++i;
                                        if (exec[i] == '\n')
                                                continue;
                                }
                                word[len++] = exec[i];
                        }
                        if (i >= n)
                                return fail(err, n_err, "\"%s\": unterminated \" quote", exec);
                } else {
                        word[len++] = c;
                }
        }
        if (n_argv == 0)
                return fail(err, n_err, "Exec= names no program");
        *ret_argv = steal_ptr(&argv);
        return 0;
}
