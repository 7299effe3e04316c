/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Match-rule strings (D-Bus specification, "Match Rules"), accepted exactly as dbus-daemon
 * accepts them, because clients send what dbus-daemon took and must not break here:
 *
 *   - a key is what follows optional leading whitespace up to '=' or whitespace; whitespace
 *     may sit between the key and '='; anything else there is an error;
 *   - an empty key ends the rule: the rest of the string is ignored (so "", "   ", a
 *     trailing ",", or "=x" are all the empty rule);
 *   - a value runs to the first ',' outside quotes; nothing is trimmed ("type= 'signal'" has
 *     the value " signal"); inside '...' every byte is literal; outside, a backslash takes
 *     the next byte literally and itself disappears only before a quote (\' is ', \, is
 *     backslash-comma and does not end the value, a trailing \ stays);
 *   - argN takes N the way strtoul(…, 0) reads it (so "arg01" and "arg0x1" are arg1), at
 *     most 63, optionally followed by "path" (or "namespace" for N = 0);
 *   - each key at most once (except eavesdrop: the last one counts); path and
 *     path_namespace exclude each other; argN, argNpath and arg0namespace share the slot
 *     of their index.
 *
 * The unescaped values are written, NUL-terminated, one after another into the caller's
 * buffer; every value consumes at least as many input bytes (key and '=') as it adds, so
 * strlen(rule) + 1 bytes always suffice. Nothing here allocates.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compat/match-rule.h"
#include "wire/names.h"
#include "wire/protocol.h"

/* The process has one thread: the text lives until the next parse. */
static char match_rule_error_text[512];

/* The key's slot in the "seen" bitmap; argN use MATCH_KEY_ARG0 + N. */
enum {
        MATCH_KEY_TYPE,
        MATCH_KEY_SENDER,
        MATCH_KEY_INTERFACE,
        MATCH_KEY_MEMBER,
        MATCH_KEY_PATH,                 /* path and path_namespace share it */
        MATCH_KEY_DESTINATION,
        MATCH_KEY_EAVESDROP,
        MATCH_KEY_ARG0,
        _MATCH_KEY_N = MATCH_KEY_ARG0 + WIRE_MAX_MATCH_ARGS,
};

typedef struct MatchRuleParser {
        const char *p;                  /* read position in the rule */
        char *out;                      /* write position in the caller's buffer */
        const char *error;
        uint8_t seen[(_MATCH_KEY_N + 7) / 8];
} MatchRuleParser;

static _printf_(2, 3) int match_rule_fail(MatchRuleParser *parser, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(match_rule_error_text, sizeof(match_rule_error_text), fmt, ap);
        va_end(ap);
        parser->error = match_rule_error_text;
        return MATCH_RULE_E_INVALID;
}

static bool match_rule_is_space(char c) {
        /* what dbus-daemon skips around keys: ASCII space, tab, CR, LF */
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool match_rule_seen(MatchRuleParser *parser, unsigned slot) {
        bool was = parser->seen[slot / 8] & (1u << (slot % 8));

        parser->seen[slot / 8] |= (uint8_t)(1u << (slot % 8));
        return was;
}

/* Unescape one value into parser->out; leaves parser->p after the terminating ',' if any. */
static int match_rule_read_value(MatchRuleParser *parser, const char **ret_value) {
        const char *p = parser->p;
        char *start = parser->out, *o = parser->out;
        bool quoted = false;

        for (; *p; ++p) {
                if (quoted) {
                        if (*p == '\'')
                                quoted = false;
                        else
                                *o++ = *p;
                } else if (*p == '\'') {
                        quoted = true;
                } else if (*p == ',') {
                        ++p;
                        break;
                } else if (*p == '\\') {
                        /*
                         * The backslash takes the next byte literally (so "\\," does not
                         * end the value); it disappears only before a quote.
                         */
                        if (p[1] != '\'')
                                *o++ = '\\';
                        if (p[1])
                                *o++ = *++p;
                } else {
                        *o++ = *p;
                }
        }
        if (quoted)
                return match_rule_fail(parser, "Match rule has an unterminated quoted value "
                                       "(a ' without its closing ')");

        *o++ = '\0';
        parser->out = o;
        parser->p = p;
        *ret_value = start;
        return 0;
}

static bool match_rule_bus_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

/*
 * sender= and destination=: dbus-daemon checks unique names more loosely than the
 * specification (":", ":1" and ":.1" pass: only a dot at the end or two in a row fail), and
 * a rule it accepts must not fail here. Such a rule never matches anybody anyway.
 */
static bool match_rule_bus_name_is_valid(const char *s, size_t n) {
        size_t i;

        if (n == 0 || s[0] != ':')
                return wire_well_known_name_is_valid(s, n);
        if (n > WIRE_MAX_NAME_LEN)
                return false;
        for (i = 1; i < n; ++i) {
                if (s[i] == '.') {
                        if (i + 1 == n || !match_rule_bus_name_char(s[i + 1]))
                                return false;
                        ++i;
                } else if (!match_rule_bus_name_char(s[i])) {
                        return false;
                }
        }
        return true;
}

/*
 * A prefix of a bus name as arg0namespace takes it: a bus name, except that one element is
 * enough ("org" matches "org.foo" and "org").
 */
static bool match_rule_namespace_is_valid(const char *s) {
        size_t n = strlen(s), elem = 0, i;
        bool unique = s[0] == ':';

        if (unique)
                return match_rule_bus_name_is_valid(s, n);      /* dbus-daemon: the same rule */
        if (n == 0 || n > WIRE_MAX_NAME_LEN)
                return false;
        for (i = 0; i < n; ++i) {
                char c = s[i];

                if (c == '.') {
                        if (elem == 0)
                                return false;
                        elem = 0;
                        continue;
                }
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' ||
                      (c >= '0' && c <= '9')))
                        return false;
                if (elem == 0 && c >= '0' && c <= '9')
                        return false;
                ++elem;
        }
        return elem > 0;
}

static int match_rule_set_arg(MatchRuleParser *parser, BridgeMatchKeys *keys, const char *key,
                              size_t key_len, const char *value) {
        char digits[MATCH_RULE_MAX_LEN + 1], *end;
        const char *suffix;
        unsigned long index;
        uint8_t kind;

        /* the key is not NUL-terminated in the rule; strtoul needs it to be */
        memcpy(digits, key + 3, key_len - 3);
        digits[key_len - 3] = '\0';

        if (!digits[0])
                return match_rule_fail(parser, "Match rule key '%s' has no argument number "
                                       "after 'arg' (e.g. 'arg0', 'arg3path')", "arg");

        errno = 0;
        index = strtoul(digits, &end, 0);
        if (end == digits || errno != 0)
                return match_rule_fail(parser, "Match rule key 'arg%s' does not start with a "
                                       "readable argument number (e.g. 'arg0', 'arg3path')",
                                       digits);

        suffix = end;
        if (suffix[0] == '\0')
                kind = BRIDGE_MATCH_ARG_STRING;
        else if (strcmp(suffix, "path") == 0)
                kind = BRIDGE_MATCH_ARG_PATH;
        else if (strcmp(suffix, "namespace") == 0 && index == 0)
                kind = BRIDGE_MATCH_ARG_NONE;   /* arg0namespace, a key of its own */
        else
                return match_rule_fail(parser, "Match rule key 'arg%s' has '%s' after its argument "
                                       "number %lu; only 'argNpath' and 'arg0namespace' exist",
                                       digits, suffix, index);

        if (index >= WIRE_MAX_MATCH_ARGS)
                return match_rule_fail(parser, "Match rule key 'arg%s' names argument %lu, but "
                                       "the highest argument a rule can match is %u",
                                       digits, index, WIRE_MAX_MATCH_ARGS - 1);

        if (match_rule_seen(parser, MATCH_KEY_ARG0 + (unsigned)index))
                return match_rule_fail(parser, "Match rule matches argument %lu twice ('arg%s' "
                                       "after another arg%lu, arg%lupath or arg0namespace key)",
                                       index, digits, index, index);

        if (kind == BRIDGE_MATCH_ARG_NONE) {
                if (!match_rule_namespace_is_valid(value))
                        return match_rule_fail(parser, "Match rule value arg0namespace='%s' is not "
                                               "a bus name or a prefix of one", value);
                keys->arg0namespace = value;
                return 0;
        }

        keys->arg_kind[index] = kind;
        keys->arg[index] = value;
        return 0;
}

static int match_rule_set(MatchRuleParser *parser, BridgeMatchKeys *keys, const char *key,
                          size_t key_len, const char *value) {
        static const struct {
                const char *key;
                unsigned slot;
        } simple[] = {
                { "type", MATCH_KEY_TYPE },
                { "sender", MATCH_KEY_SENDER },
                { "interface", MATCH_KEY_INTERFACE },
                { "member", MATCH_KEY_MEMBER },
                { "path", MATCH_KEY_PATH },
                { "path_namespace", MATCH_KEY_PATH },
                { "destination", MATCH_KEY_DESTINATION },
                { "eavesdrop", MATCH_KEY_EAVESDROP },
        };
        size_t n = strlen(value), i;
        unsigned slot = _MATCH_KEY_N;
        const char *name = NULL;

        for (i = 0; i < ELEMENTSOF(simple); ++i)
                if (strlen(simple[i].key) == key_len && memcmp(simple[i].key, key, key_len) == 0) {
                        slot = simple[i].slot;
                        name = simple[i].key;
                        break;
                }

        if (slot == _MATCH_KEY_N) {
                if (key_len >= 3 && memcmp(key, "arg", 3) == 0)
                        return match_rule_set_arg(parser, keys, key, key_len, value);
                return match_rule_fail(parser, "Match rule has the unknown key '%.*s'",
                                       (int)MIN(key_len, 255u), key);
        }

        /* dbus-daemon takes eavesdrop more than once (the last one counts); nothing else */
        if (slot != MATCH_KEY_EAVESDROP && match_rule_seen(parser, slot)) {
                if (slot == MATCH_KEY_PATH)
                        return match_rule_fail(parser, "Match rule may have only one of the keys "
                                               "'path' and 'path_namespace', once");
                return match_rule_fail(parser, "Match rule has the key '%s' twice", name);
        }

        switch (slot) {
        case MATCH_KEY_TYPE:
                if (strcmp(value, "signal") == 0)
                        keys->type = WIRE_MSG_SIGNAL;
                else if (strcmp(value, "method_call") == 0)
                        keys->type = WIRE_MSG_METHOD_CALL;
                else if (strcmp(value, "method_return") == 0)
                        keys->type = WIRE_MSG_METHOD_RETURN;
                else if (strcmp(value, "error") == 0)
                        keys->type = WIRE_MSG_ERROR;
                else
                        return match_rule_fail(parser, "Match rule value type='%s' is not one of "
                                               "'signal', 'method_call', 'method_return', "
                                               "'error'", value);
                return 0;
        case MATCH_KEY_SENDER:
        case MATCH_KEY_DESTINATION:
                if (!match_rule_bus_name_is_valid(value, n))
                        return match_rule_fail(parser, "Match rule value %s='%s' is not a valid "
                                               "bus name", name, value);
                if (slot == MATCH_KEY_SENDER)
                        keys->sender = value;
                else
                        keys->destination = value;
                return 0;
        case MATCH_KEY_INTERFACE:
                if (!wire_interface_is_valid(value, n))
                        return match_rule_fail(parser, "Match rule value interface='%s' is not a "
                                               "valid interface name", value);
                keys->interface = value;
                return 0;
        case MATCH_KEY_MEMBER:
                if (!wire_member_is_valid(value, n))
                        return match_rule_fail(parser, "Match rule value member='%s' is not a "
                                               "valid member name", value);
                keys->member = value;
                return 0;
        case MATCH_KEY_PATH:
                if (!wire_path_is_valid(value, n))
                        return match_rule_fail(parser, "Match rule value %s='%s' is not a valid "
                                               "object path", name, value);
                if (name[4] == '_')
                        keys->path_namespace = value;
                else
                        keys->path = value;
                return 0;
        case MATCH_KEY_EAVESDROP:
                if (strcmp(value, "true") == 0)
                        keys->eavesdrop = true;
                else if (strcmp(value, "false") == 0)
                        keys->eavesdrop = false;
                else
                        return match_rule_fail(parser, "Match rule value eavesdrop='%s' is neither "
                                               "'true' nor 'false'", value);
                return 0;
        }
        return match_rule_fail(parser, "Match rule key cannot be handled");   /* unreachable */
}

/**
 * match_rule_parse() - parse a match-rule string as dbus-daemon does
 * @rule:       the rule, NUL-terminated (AddMatch's argument: valid UTF-8, no NUL inside)
 * @buf:        scratch of at least strlen(@rule) + 1 bytes; the keys' strings live there
 * @buf_size:   its size
 * @ret_keys:   the keys, written only on success
 * @ret_error:  on failure, the reason (static; valid until the next call)
 *
 * Return: 0, MATCH_RULE_E_INVALID, MATCH_RULE_E_TOO_LONG (> MATCH_RULE_MAX_LEN bytes, or
 * larger than @buf can hold, which callers avoid by sizing @buf as documented).
 */
int match_rule_parse(const char *rule, char *buf, size_t buf_size, BridgeMatchKeys *ret_keys,
                     const char **ret_error) {
        MatchRuleParser parser = { .p = rule, .out = buf };
        BridgeMatchKeys keys = {};
        size_t len = strlen(rule);
        int r;

        if (len > MATCH_RULE_MAX_LEN || len >= buf_size) {
                (void) snprintf(match_rule_error_text, sizeof(match_rule_error_text),
                                "Match rule is %zu bytes long; at most %u are allowed",
                                len, MATCH_RULE_MAX_LEN);
                *ret_error = match_rule_error_text;
                return MATCH_RULE_E_TOO_LONG;
        }

        for (;;) {
                const char *key, *value;
                size_t key_len;

                while (match_rule_is_space(*parser.p))
                        ++parser.p;
                key = parser.p;
                while (*parser.p && *parser.p != '=' && !match_rule_is_space(*parser.p))
                        ++parser.p;
                key_len = (size_t)(parser.p - key);
                while (match_rule_is_space(*parser.p))
                        ++parser.p;

                /* end of the rule, or an empty key: dbus-daemon stops here and so do we */
                if (key_len == 0)
                        break;

                if (*parser.p != '=') {
                        r = match_rule_fail(&parser, "Match rule key '%.*s' is not followed by '='",
                                            (int)MIN(key_len, 255u), key);
                        goto fail;
                }
                ++parser.p;

                r = match_rule_read_value(&parser, &value);
                if (r)
                        goto fail;
                r = match_rule_set(&parser, &keys, key, key_len, value);
                if (r)
                        goto fail;
        }

        *ret_keys = keys;
        return 0;

fail:
        *ret_error = parser.error;
        return r;
}
