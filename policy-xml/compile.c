/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compiler: Config tree -> sealed PolicyDb (see policy-xml/compile.h).
 *
 * The loader already rejected what dbus-daemon 1.14.10 rejects (attribute combinations,
 * bad values), so compiling a loaded Config has no errors of its own; what dbus-daemon
 * only warns about (checked by starting it with such files) is a warning here too, with
 * file:line, and the element is dropped as dbus-daemon drops it:
 *   <policy user="nosuch">   "Unknown username \"nosuch\" in message bus configuration file"
 *   <policy group="nosuch">  "Unknown group \"nosuch\" in message bus configuration file"
 *   <allow user="nosuch"/>   "Unknown username \"nosuch\" on element <allow>"
 *   <deny group="nosuch"/>   "Unknown group \"nosuch\" on element <deny>"
 * "*" in <policy user|group=> is such an unknown name (dbus-daemon warns the same way); a
 * number is accepted when it is the id of an existing user/group (dbus-daemon refuses
 * user="12345" when no such user exists).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/policy.h"
#include "policy-xml/compile.h"
#include "util/error.h"
#include "wire/protocol.h"

static bool is_wildcard(const char *s) {
        return s && s[0] == '*' && s[1] == '\0';
}

static const char *fold(const char *s) {
        return is_wildcard(s) ? NULL : s;
}

static bool parse_id(const char *s, uint32_t *ret) {
        unsigned long v;
        char *end;

        if (!s[0] || s[0] < '0' || s[0] > '9')
                return false;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || v >= UINT32_MAX)
                return false;
        *ret = (uint32_t)v;
        return true;
}

/**
 * policy_resolve_nss() - resolve a user or group name through NSS
 * @userdata:   unused
 * @group:      a group (else a user)
 * @name:       a name, or a decimal id of an existing user/group
 * @ret_id:     the id
 *
 * Return: true if found.
 */
bool policy_resolve_nss(void *userdata, bool group, const char *name, uint32_t *ret_id) {
        char buf[16384];
        uint32_t id;
        int r;

        if (group) {
                struct group gr, *res = NULL;

                if (parse_id(name, &id))
                        r = getgrgid_r((gid_t)id, &gr, buf, sizeof(buf), &res);
                else
                        r = getgrnam_r(name, &gr, buf, sizeof(buf), &res);
                if (r || !res)
                        return false;
                *ret_id = (uint32_t)res->gr_gid;
        } else {
                struct passwd pw, *res = NULL;

                if (parse_id(name, &id))
                        r = getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &res);
                else
                        r = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
                if (r || !res)
                        return false;
                *ret_id = (uint32_t)res->pw_uid;
        }
        return true;
}

typedef struct Compiler {
        const PolicyCompileOptions *options;
        PolicyResolveFn resolve;
        void *resolve_userdata;
        PolicyDb *db;
} Compiler;

static _printf_(4, 5) void compiler_warn(const Compiler *c, const char *file, unsigned line,
                                         const char *fmt, ...) {
        char text[512];
        va_list ap;

        if (!c->options || !c->options->diag)
                return;
        va_start(ap, fmt);
        (void) vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        c->options->diag(c->options->userdata, CONFIG_DIAG_WARNING, file, line, text);
}

static uint8_t message_type(ConfigMessageType t) {
        switch (t) {
        case CONFIG_MESSAGE_METHOD_CALL:        return WIRE_MSG_METHOD_CALL;
        case CONFIG_MESSAGE_METHOD_RETURN:      return WIRE_MSG_METHOD_RETURN;
        case CONFIG_MESSAGE_ERROR:              return WIRE_MSG_ERROR;
        case CONFIG_MESSAGE_SIGNAL:             return WIRE_MSG_SIGNAL;
        default:                                return 0;
        }
}

static PolicyTristate tristate(ConfigTristate t) {
        return t == CONFIG_TRUE ? POLICY_TRUE : t == CONFIG_FALSE ? POLICY_FALSE : POLICY_ANY;
}

/* Return: 0 (added or dropped with a warning) or -ENOMEM. */
static int compile_rule(Compiler *c, PolicyContext context, uint32_t context_id,
                        const ConfigRule *cr) {
        PolicyRuleSpec spec = POLICY_RULE_SPEC_NULL(spec);
        const char *element = cr->allow ? "allow" : "deny";
        char *const *s = cr->str;

        spec.allow = cr->allow;
        spec.file = cr->loc.file;
        spec.line = cr->loc.line;
        spec.log = cr->log == CONFIG_TRUE;
        spec.eavesdrop = cr->eavesdrop == CONFIG_TRUE;
        if (cr->has_min_fds)
                spec.min_fds = cr->min_fds;
        if (cr->has_max_fds)
                spec.max_fds = cr->max_fds;

        switch (cr->kind) {
        case CONFIG_RULE_SEND:
                spec.kind = POLICY_RULE_SEND;
                if (s[CONFIG_ATTR_SEND_DESTINATION_PREFIX]) {
                        spec.name = s[CONFIG_ATTR_SEND_DESTINATION_PREFIX];
                        spec.name_is_prefix = true;
                } else {
                        spec.name = fold(s[CONFIG_ATTR_SEND_DESTINATION]);
                }
                spec.interface = fold(s[CONFIG_ATTR_SEND_INTERFACE]);
                spec.member = fold(s[CONFIG_ATTR_SEND_MEMBER]);
                spec.error = fold(s[CONFIG_ATTR_SEND_ERROR]);
                spec.path = fold(s[CONFIG_ATTR_SEND_PATH]);
                spec.msg_type = message_type(cr->send_type);
                spec.broadcast = tristate(cr->send_broadcast);
                spec.requested_reply = cr->send_requested_reply == CONFIG_UNSET ?
                                       cr->allow : cr->send_requested_reply == CONFIG_TRUE;
                break;
        case CONFIG_RULE_RECEIVE:
                spec.kind = POLICY_RULE_RECEIVE;
                spec.name = fold(s[CONFIG_ATTR_RECEIVE_SENDER]);
                spec.interface = fold(s[CONFIG_ATTR_RECEIVE_INTERFACE]);
                spec.member = fold(s[CONFIG_ATTR_RECEIVE_MEMBER]);
                spec.error = fold(s[CONFIG_ATTR_RECEIVE_ERROR]);
                spec.path = fold(s[CONFIG_ATTR_RECEIVE_PATH]);
                spec.msg_type = message_type(cr->receive_type);
                spec.requested_reply = cr->receive_requested_reply == CONFIG_UNSET ?
                                       cr->allow : cr->receive_requested_reply == CONFIG_TRUE;
                break;
        case CONFIG_RULE_OWN:
                spec.kind = POLICY_RULE_OWN;
                if (s[CONFIG_ATTR_OWN_PREFIX]) {
                        spec.name = s[CONFIG_ATTR_OWN_PREFIX];
                        spec.name_is_prefix = true;
                } else {
                        spec.name = fold(s[CONFIG_ATTR_OWN]);
                }
                break;
        case CONFIG_RULE_USER:
        case CONFIG_RULE_GROUP: {
                bool group = cr->kind == CONFIG_RULE_GROUP;
                const char *name = s[group ? CONFIG_ATTR_GROUP : CONFIG_ATTR_USER];

                spec.kind = group ? POLICY_RULE_GROUP : POLICY_RULE_USER;
                if (is_wildcard(name)) {
                        spec.any_id = true;
                } else if (!name || !c->resolve(c->resolve_userdata, group, name, &spec.id)) {
                        compiler_warn(c, cr->loc.file, cr->loc.line,
                                      group ? "Unknown group \"%s\" on element <%s>" :
                                              "Unknown username \"%s\" on element <%s>",
                                      name ? name : "", element);
                        return 0;
                }
                break;
        }
        default:
                return error_origin(-EINVAL);
        }
        return error_trace(policy_db_add_rule(c->db, context, context_id, &spec));
}

static int compile_policy(Compiler *c, const ConfigPolicy *p) {
        PolicyContext context;
        uint32_t id = 0;
        size_t i;
        int r;

        switch (p->kind) {
        case CONFIG_POLICY_DEFAULT:
                context = POLICY_CONTEXT_DEFAULT;
                break;
        case CONFIG_POLICY_MANDATORY:
                context = POLICY_CONTEXT_MANDATORY;
                break;
        case CONFIG_POLICY_AT_CONSOLE:
                context = p->at_console ? POLICY_CONTEXT_AT_CONSOLE :
                                          POLICY_CONTEXT_NOT_AT_CONSOLE;
                break;
        case CONFIG_POLICY_USER:
        case CONFIG_POLICY_GROUP: {
                bool group = p->kind == CONFIG_POLICY_GROUP;

                context = group ? POLICY_CONTEXT_GROUP : POLICY_CONTEXT_USER;
                if (!p->name || !c->resolve(c->resolve_userdata, group, p->name, &id)) {
                        compiler_warn(c, p->loc.file, p->loc.line,
                                      group ? "Unknown group \"%s\" in message bus configuration file" :
                                              "Unknown username \"%s\" in message bus configuration file",
                                      p->name ? p->name : "");
                        return 0;
                }
                break;
        }
        default:
                return error_origin(-EINVAL);
        }
        for (i = 0; i < p->n_rules; ++i) {
                r = compile_rule(c, context, id, &p->rules[i]);
                if (r < 0)
                        return error_trace(r);
        }
        return 0;
}

/**
 * policy_compile() - build the policy of a loaded configuration
 * @config:     the configuration
 * @options:    may be NULL
 * @ret_db:     a sealed db, one reference
 *
 * Return: 0 or -ENOMEM (a Config from the loader has no compile errors; unknown users and
 * groups are warnings, see the top of this file).
 */
int policy_compile(const Config *config, const PolicyCompileOptions *options,
                   PolicyDb **ret_db) {
        _cleanup_(policy_db_unrefp) PolicyDb *db = NULL;
        Compiler c = {
                .options = options,
                .resolve = options && options->resolve ? options->resolve : policy_resolve_nss,
                .resolve_userdata = options ? options->resolve_userdata : NULL,
        };
        size_t i;
        int r;

        r = policy_db_new(&db);
        if (r < 0)
                return error_trace(r);
        c.db = db;
        for (i = 0; i < config->n_policies; ++i) {
                r = compile_policy(&c, &config->policies[i]);
                if (r < 0)
                        return error_trace(r);
        }
        r = policy_db_seal(db);
        if (r < 0)
                return error_trace(r);
        *ret_db = steal_ptr(&db);
        return 0;
}
