/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xdg-dbus-proxy's [METHOD][@PATH] rules for the name ACL (see bridge/name-acl-rule.h).
 * Written from xdg-dbus-proxy's manual and from running it: "org.foo.Bar" is member Bar of
 * interface org.foo, a subtree path matches itself and what lies below it at a '/'.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/name-acl-rule.h"
#include "wire/names.h"

/**
 * name_acl_rule_parse() - parse a --call / --broadcast RULE
 * @rule:       "[METHOD][@PATH]"
 * @type:       KDBUS_POLICY_RULE_CALL or _BROADCAST (stored)
 * @ret:        the parsed rule (release with name_acl_rule_deinit())
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
int name_acl_rule_parse(const char *rule, uint8_t type, NameAclRule *ret) {
        const char *at = strchr(rule, '@');
        size_t mlen = at ? (size_t)(at - rule) : strlen(rule);
        NameAclRule r = { .type = type };
        const char *dot;

        if (mlen && !(mlen == 1 && rule[0] == '*')) {
                dot = memrchr(rule, '.', mlen);
                if (!dot || !wire_interface_is_valid(rule, (size_t)(dot - rule)))
                        return -EINVAL;
                if (!(mlen - (size_t)(dot - rule) == 2 && dot[1] == '*') &&
                    !wire_member_is_valid(dot + 1, mlen - (size_t)(dot - rule) - 1))
                        return -EINVAL;
                r.interface = strndup(rule, (size_t)(dot - rule));
                if (!r.interface)
                        return -ENOMEM;
                if (dot[1] != '*') {
                        r.member = strndup(dot + 1, mlen - (size_t)(dot - rule) - 1);
                        if (!r.member)
                                goto nomem;
                }
        }
        if (at) {
                size_t plen = strlen(at + 1);

                if (plen >= 2 && at[plen - 1] == '/' && at[plen] == '*') {
                        r.path_subtree = true;
                        plen -= 2;
                }
                /* "@/" plus star: the root's subtree, every path */
                if (!(r.path_subtree && plen == 0) && !wire_path_is_valid(at + 1, plen)) {
                        name_acl_rule_deinit(&r);
                        return -EINVAL;
                }
                r.path = strndup(at + 1, plen);
                if (!r.path)
                        goto nomem;
        }
        r.text = strdup(rule);
        if (!r.text)
                goto nomem;
        *ret = r;
        return 0;
nomem:
        name_acl_rule_deinit(&r);
        return -ENOMEM;
}

/**
 * name_acl_rule_deinit() - release a parsed rule
 * @rule:       the rule
 */
void name_acl_rule_deinit(NameAclRule *rule) {
        free(rule->interface);
        free(rule->member);
        free(rule->path);
        free(rule->text);
        rule->interface = rule->member = rule->path = rule->text = NULL;
}

/**
 * name_acl_rule_matches() - does a message match the rule?
 * @rule:       the rule
 * @path:       the message's PATH header, or NULL
 * @interface:  its INTERFACE, or NULL
 * @member:     its MEMBER, or NULL
 *
 * Return: true if it does.
 */
bool name_acl_rule_matches(const NameAclRule *rule, const char *path, const char *interface,
                           const char *member) {
        if (rule->path) {
                size_t n = strlen(rule->path);

                if (!path)
                        return false;
                if (rule->path_subtree) {
                        if (strncmp(path, rule->path, n) || (path[n] && path[n] != '/'))
                                return false;
                } else if (strcmp(path, rule->path)) {
                        return false;
                }
        }
        if (rule->interface && (!interface || strcmp(rule->interface, interface)))
                return false;
        if (rule->member && (!member || strcmp(rule->member, member)))
                return false;
        return true;
}
