/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: match_rule_parse() on arbitrary strings. Beyond "no crash, no overrun" (the
 * scratch buffer is exactly strlen + 1 bytes, so ASan sees any write past it) it checks:
 *   - on success every key string lies inside the scratch buffer;
 *   - on failure there is a non-empty message;
 *   - round trip: the keys, written back as a canonical rule (every value quoted, quotes
 *     as '\''), parse to the same keys.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compat/match-rule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const type_names[] = {
        [WIRE_MSG_METHOD_CALL] = "method_call",
        [WIRE_MSG_METHOD_RETURN] = "method_return",
        [WIRE_MSG_ERROR] = "error",
        [WIRE_MSG_SIGNAL] = "signal",
};

static void in_buf(const char *s, const char *buf, size_t n) {
        if (s)
                assert(s >= buf && s + strlen(s) < buf + n);
}

static void emit(char *out, size_t *pos, size_t size, const char *key, const char *value) {
        const char *p;

        if (!value)
                return;
        *pos += (size_t)snprintf(out + MIN(*pos, size), size - MIN(*pos, size), "%s%s='",
                                 *pos ? "," : "", key);
        for (p = value; *p; ++p) {
                if (*p == '\'')
                        *pos += (size_t)snprintf(out + MIN(*pos, size), size - MIN(*pos, size),
                                                 "'\\''");
                else if (*pos + 1 < size)
                        out[(*pos)++] = *p;
                else
                        ++*pos;
        }
        if (*pos + 1 < size)
                out[(*pos)++] = '\'';
        else
                ++*pos;
        if (*pos < size)
                out[*pos] = '\0';
}

static void same(const char *a, const char *b) {
        assert(!a == !b);
        if (a)
                assert(strcmp(a, b) == 0);
}

static void round_trip(const BridgeMatchKeys *k) {
        char rule[4 * MATCH_RULE_MAX_LEN + 64], key[32], buf[MATCH_RULE_MAX_LEN + 1];
        BridgeMatchKeys k2;
        const char *error;
        size_t pos = 0;
        unsigned i;

        rule[0] = '\0';
        if (k->type)
                emit(rule, &pos, sizeof(rule), "type", type_names[k->type]);
        emit(rule, &pos, sizeof(rule), "sender", k->sender);
        emit(rule, &pos, sizeof(rule), "interface", k->interface);
        emit(rule, &pos, sizeof(rule), "member", k->member);
        emit(rule, &pos, sizeof(rule), "path", k->path);
        emit(rule, &pos, sizeof(rule), "path_namespace", k->path_namespace);
        emit(rule, &pos, sizeof(rule), "destination", k->destination);
        emit(rule, &pos, sizeof(rule), "arg0namespace", k->arg0namespace);
        if (k->eavesdrop)
                emit(rule, &pos, sizeof(rule), "eavesdrop", "true");
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                if (k->arg_kind[i] == BRIDGE_MATCH_ARG_NONE) {
                        assert(!k->arg[i]);
                        continue;
                }
                assert(k->arg[i]);
                snprintf(key, sizeof(key), "arg%u%s", i,
                         k->arg_kind[i] == BRIDGE_MATCH_ARG_PATH ? "path" : "");
                emit(rule, &pos, sizeof(rule), key, k->arg[i]);
        }
        if (pos > MATCH_RULE_MAX_LEN)
                return;         /* quoting made it longer than a rule may be */

        if (match_rule_parse(rule, buf, sizeof(buf), &k2, &error) != 0) {
                fprintf(stderr, "canonical rule refused: \"%s\": %s\n", rule, error);
                abort();
        }
        assert(k2.type == k->type);
        same(k2.sender, k->sender);
        same(k2.interface, k->interface);
        same(k2.member, k->member);
        same(k2.path, k->path);
        same(k2.path_namespace, k->path_namespace);
        same(k2.destination, k->destination);
        same(k2.arg0namespace, k->arg0namespace);
        assert(k2.eavesdrop == k->eavesdrop);
        for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i) {
                assert(k2.arg_kind[i] == k->arg_kind[i]);
                same(k2.arg[i], k->arg[i]);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BridgeMatchKeys keys;
        const char *error = NULL;
        char *rule, *buf;
        size_t n;
        unsigned i;
        int r;

        if (size > 4 * MATCH_RULE_MAX_LEN)
                return 0;
        /* AddMatch's argument is a D-Bus string: no NUL inside; cut at the first */
        rule = malloc(size + 1);
        if (!rule)
                return 0;
        memcpy(rule, data, size);
        rule[size] = '\0';
        n = strlen(rule) + 1;
        buf = malloc(n);
        if (!buf) {
                free(rule);
                return 0;
        }

        r = match_rule_parse(rule, buf, n, &keys, &error);
        if (r == 0) {
                in_buf(keys.sender, buf, n);
                in_buf(keys.interface, buf, n);
                in_buf(keys.member, buf, n);
                in_buf(keys.path, buf, n);
                in_buf(keys.path_namespace, buf, n);
                in_buf(keys.destination, buf, n);
                in_buf(keys.arg0namespace, buf, n);
                for (i = 0; i < WIRE_MAX_MATCH_ARGS; ++i)
                        in_buf(keys.arg[i], buf, n);
                assert(!(keys.path && keys.path_namespace));
                round_trip(&keys);
        } else {
                assert(r == MATCH_RULE_E_INVALID || r == MATCH_RULE_E_TOO_LONG);
                assert(error && error[0]);
                assert((r == MATCH_RULE_E_TOO_LONG) == (n - 1 > MATCH_RULE_MAX_LEN));
        }

        free(buf);
        free(rule);
        return 0;
}
