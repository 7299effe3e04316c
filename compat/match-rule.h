/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Parser for the match-rule strings of AddMatch/RemoveMatch (D-Bus specification, "Match
 * Rules"): comma-separated key='value' pairs with the specification's quoting. Produces
 * BridgeMatchKeys whose strings point into a caller-provided buffer.
 */
#include <stddef.h>
#include "bridge/match.h"

enum {
        _MATCH_RULE_E_SUCCESS,
        MATCH_RULE_E_INVALID,           /* malformed; the error text says where and why */
        MATCH_RULE_E_TOO_LONG,          /* > MATCH_RULE_MAX_LEN bytes: dbus-daemon answers
                                         * LimitsExceeded, not MatchRuleInvalid */
        _MATCH_RULE_E_N,
};

#define MATCH_RULE_MAX_LEN 1024u         /* dbus-daemon's DBUS_MAXIMUM_MATCH_RULE_LENGTH */

/**
 * match_rule_parse() - parse @rule into @ret_keys
 * @buf:        scratch of at least strlen(@rule) + 1 bytes; the keys' strings live there
 * @ret_error:  on MATCH_RULE_E_INVALID / _TOO_LONG, a static or @buf-independent message for
 *              the error reply (valid until the next call; the process has one thread)
 *
 * Return: 0, MATCH_RULE_E_INVALID, MATCH_RULE_E_TOO_LONG.
 */
int match_rule_parse(const char *rule, char *buf, size_t buf_size, BridgeMatchKeys *ret_keys,
                     const char **ret_error);
