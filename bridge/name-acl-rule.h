/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * A message rule of the name ACL's xdg-dbus-proxy mode (bridge/name-acl.h): what
 * --call=NAME=RULE lets a sandbox call on NAME, what --broadcast=NAME=RULE lets it receive
 * from NAME. RULE is [METHOD][@PATH]:
 *
 *   METHOD  "*" or empty: any; "org.foo.*": any member of interface org.foo;
 *           "org.foo.Bar.Method": member Method of interface org.foo.Bar (the last element
 *           is always the member, as xdg-dbus-proxy reads it)
 *   PATH    an object path: exactly it; followed by a slash and a star: it and every path
 *           below it ("@" plus a slash and a star alone: every path)
 *
 * A rule with an interface or member matches only messages that carry that header.
 */
#include <stdbool.h>
#include <stdint.h>

typedef struct NameAclRule {
        uint8_t type;                   /* KDBUS_POLICY_RULE_CALL / _BROADCAST */
        bool path_subtree;
        char *interface;                /* NULL: any */
        char *member;                   /* NULL: any */
        char *path;                     /* NULL: any; without the trailing slash-star */
        char *text;                     /* the rule as given (for listing it) */
} NameAclRule;

/*
 * Parse @rule into @ret (@type stored as given). Return: 0, -EINVAL (not of the form
 * above, or a name or path that is not valid D-Bus), -ENOMEM.
 */
int name_acl_rule_parse(const char *rule, uint8_t type, NameAclRule *ret);
void name_acl_rule_deinit(NameAclRule *rule);
/* Does @rule match a message with these headers (each may be NULL)? */
bool name_acl_rule_matches(const NameAclRule *rule, const char *path, const char *interface,
                           const char *member);
