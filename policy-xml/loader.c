/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Loader: busconfig XML -> Config.
 *
 * One LoaderFile per file being parsed, each with its own expat parser (hash salt from
 * getrandom()) and its own Config. Expat callbacks return void, so the first failure is kept
 * in the sticky LoaderFile.error (0, CONFIG_E_INVALID or a negative errno), the parser is
 * stopped, and the caller checks the error after every XML_Parse(). Element starts push a
 * frame (element, line, collected text); the work is done at the element's end, when its text
 * is known. An <include> loads the named file into a fresh Config and merges it into the
 * including one right there, so document order is preserved; <includedir> does the same
 * for each *.conf in strcmp() order, but a broken file there is only a warning and is
 * dropped whole (dbus-daemon 1.14 does the same).
 *
 * Messages follow dbus-daemon's wording (so users migrating recognise them), prefixed with
 * file:line of the element. Includes: the stack of files being loaded (device and inode of
 * each, so a file reached by another name, a symlink or a hard link, is the same file, and a
 * file with no name at all, a memfd passed as /proc/self/fd/N, loads) rejects cycles; more
 * than CONFIG_INCLUDE_DEPTH_MAX nested files is an error.
 *
 * Not supported (documented, not faked): SELinux. <include if_selinux_enabled="yes"> is
 * skipped (as on a system without SELinux); selinux_root_relative="yes" is skipped with a
 * warning, since we have no SELinux policy root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <expat.h>
#include "policy-xml/config.h"
#include "policy-xml/loader.h"
#include "util/error.h"
#include "util/hex.h"

#define LOADER_STACK_MAX 16u             /* deeper than any valid busconfig (3) */
#define LOADER_TEXT_MAX (1u << 20)       /* one element's text */
#define LOADER_FILE_MAX (64u << 20)      /* one file */

typedef enum Element {
        ELEMENT_BUSCONFIG,
        ELEMENT_TYPE,
        ELEMENT_USER,
        ELEMENT_FORK,
        ELEMENT_KEEP_UMASK,
        ELEMENT_LISTEN,
        ELEMENT_PIDFILE,
        ELEMENT_SYSLOG,
        ELEMENT_AUTH,
        ELEMENT_ALLOW_ANONYMOUS,
        ELEMENT_INCLUDE,
        ELEMENT_INCLUDEDIR,
        ELEMENT_SERVICEDIR,
        ELEMENT_STANDARD_SESSION_SERVICEDIRS,
        ELEMENT_STANDARD_SYSTEM_SERVICEDIRS,
        ELEMENT_SERVICEHELPER,
        ELEMENT_POLICY,
        ELEMENT_ALLOW,
        ELEMENT_DENY,
        ELEMENT_LIMIT,
        ELEMENT_SELINUX,
        ELEMENT_ASSOCIATE,
        ELEMENT_APPARMOR,
        _ELEMENT_N,
        ELEMENT_NONE = -1,
} Element;

typedef struct ElementInfo {
        const char *name;
        Element parent;                 /* ELEMENT_NONE: root */
        bool text;                      /* takes non-empty text content */
        const char *const *attrs;       /* allowed attributes, NULL-terminated; NULL: none */
} ElementInfo;

static const char *const attrs_include[] = {
        "ignore_missing", "if_selinux_enabled", "selinux_root_relative", NULL
};
static const char *const attrs_policy[] = { "context", "user", "group", "at_console", NULL };
static const char *const attrs_limit[] = { "name", NULL };
static const char *const attrs_associate[] = { "own", "context", NULL };
static const char *const attrs_apparmor[] = { "mode", NULL };
/* allow/deny: the string attributes (ConfigRuleAttr) plus these */
static const char *const attrs_rule_other[] = {
        "send_type", "receive_type", "send_requested_reply", "receive_requested_reply",
        "send_broadcast", "eavesdrop", "min_fds", "max_fds", "log", NULL
};

static const ElementInfo elements[_ELEMENT_N] = {
        [ELEMENT_BUSCONFIG] = { "busconfig", ELEMENT_NONE, false, NULL },
        [ELEMENT_TYPE] = { "type", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_USER] = { "user", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_FORK] = { "fork", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_KEEP_UMASK] = { "keep_umask", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_LISTEN] = { "listen", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_PIDFILE] = { "pidfile", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_SYSLOG] = { "syslog", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_AUTH] = { "auth", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_ALLOW_ANONYMOUS] = { "allow_anonymous", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_INCLUDE] = { "include", ELEMENT_BUSCONFIG, true, attrs_include },
        [ELEMENT_INCLUDEDIR] = { "includedir", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_SERVICEDIR] = { "servicedir", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_STANDARD_SESSION_SERVICEDIRS] =
                { "standard_session_servicedirs", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_STANDARD_SYSTEM_SERVICEDIRS] =
                { "standard_system_servicedirs", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_SERVICEHELPER] = { "servicehelper", ELEMENT_BUSCONFIG, true, NULL },
        [ELEMENT_POLICY] = { "policy", ELEMENT_BUSCONFIG, false, attrs_policy },
        [ELEMENT_ALLOW] = { "allow", ELEMENT_POLICY, false, NULL },
        [ELEMENT_DENY] = { "deny", ELEMENT_POLICY, false, NULL },
        [ELEMENT_LIMIT] = { "limit", ELEMENT_BUSCONFIG, true, attrs_limit },
        [ELEMENT_SELINUX] = { "selinux", ELEMENT_BUSCONFIG, false, NULL },
        [ELEMENT_ASSOCIATE] = { "associate", ELEMENT_SELINUX, false, attrs_associate },
        [ELEMENT_APPARMOR] = { "apparmor", ELEMENT_BUSCONFIG, false, attrs_apparmor },
};

typedef struct Frame {
        Element element;
        unsigned line;
        char *text;                     /* collected character data, NUL-terminated */
        size_t n_text;
        const char **attrs;             /* copies, NULL-terminated name/value pairs */
} Frame;

typedef struct Loader {
        const ConfigLoadOptions *options;
        struct {
                dev_t dev;
                ino_t ino;
        } stack[CONFIG_INCLUDE_DEPTH_MAX];      /* the files being loaded, outermost first */
        unsigned depth;
} Loader;

typedef struct LoaderFile {
        Loader *loader;
        XML_Parser xml;
        Config *config;
        const char *name;               /* interned in config */
        const char *dir;                /* for relative paths; NULL: none */
        int error;                      /* sticky */
        Frame frames[LOADER_STACK_MAX];
        unsigned n_frames;
        ConfigPolicy *policy;           /* the open <policy>, if any */
} LoaderFile;

static int loader_load_path(Loader *l, const char *path, bool ignore_missing, unsigned line,
                            LoaderFile *parent, Config **ret_config);

static _printf_(5, 0) void loader_vdiag(const Loader *l, ConfigDiagLevel level,
                                         const char *file, unsigned line, const char *fmt,
                                         va_list ap) {
        char buf[1024];

        if (!l->options || !l->options->diag)
                return;
        (void) vsnprintf(buf, sizeof(buf), fmt, ap);
        l->options->diag(l->options->userdata, level, file, line, buf);
}

static _printf_(5, 6) void loader_diag(const Loader *l, ConfigDiagLevel level,
                                        const char *file, unsigned line, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        loader_vdiag(l, level, file, line, fmt, ap);
        va_end(ap);
}

/* Reports an error at @line and returns CONFIG_E_INVALID. */
static _printf_(3, 4) int file_fail(LoaderFile *f, unsigned line, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        loader_vdiag(f->loader, CONFIG_DIAG_ERROR, f->name, line, fmt, ap);
        va_end(ap);
        return CONFIG_E_INVALID;
}

static void file_set_error(LoaderFile *f, int r) {
        if (f->error || !r)
                return;
        f->error = r;
        (void) XML_StopParser(f->xml, XML_FALSE);
}

static Element element_from_name(const char *name) {
        for (size_t i = 0; i < _ELEMENT_N; ++i)
                if (!strcmp(elements[i].name, name))
                        return (Element)i;
        return ELEMENT_NONE;
}

static const char *frame_attr(const Frame *fr, const char *name) {
        for (size_t i = 0; fr->attrs && fr->attrs[i]; i += 2)
                if (!strcmp(fr->attrs[i], name))
                        return fr->attrs[i + 1];
        return NULL;
}

static void frame_deinit(Frame *fr) {
        free(fr->text);
        if (fr->attrs)
                for (size_t i = 0; fr->attrs[i]; ++i)
                        free((char *)fr->attrs[i]);
        free(fr->attrs);
        *fr = (Frame){};
}

static bool attr_is_allowed(Element e, const char *name) {
        const char *const *list = elements[e].attrs;

        if (e == ELEMENT_ALLOW || e == ELEMENT_DENY) {
                for (size_t i = 0; i < _CONFIG_ATTR_N; ++i)
                        if (!strcmp(config_rule_attr_to_string((ConfigRuleAttr)i), name))
                                return true;
                list = attrs_rule_other;
        }
        for (; list && *list; ++list)
                if (!strcmp(*list, name))
                        return true;
        return false;
}

static int file_loc(LoaderFile *f, unsigned line, ConfigLoc *ret_loc) {
        *ret_loc = (ConfigLoc){ .file = f->name, .line = line };
        return 0;
}

/* Makes @path absolute against the file's directory; *@ret to free(). */
static int file_resolve(LoaderFile *f, const char *path, char **ret) {
        char *s;

        if (path[0] == '/' || !f->dir)
                s = strdup(path);
        else if (asprintf(&s, "%s/%s", f->dir, path) < 0)
                s = NULL;
        if (!s)
                return error_origin(-ENOMEM);
        *ret = s;
        return 0;
}

static int parse_yes_no(const char *v, bool *ret) {
        if (!strcmp(v, "yes"))
                *ret = true;
        else if (!strcmp(v, "no"))
                *ret = false;
        else
                return CONFIG_E_INVALID;
        return 0;
}

static int parse_true_false(const char *v, ConfigTristate *ret) {
        if (!strcmp(v, "true"))
                *ret = CONFIG_TRUE;
        else if (!strcmp(v, "false"))
                *ret = CONFIG_FALSE;
        else
                return CONFIG_E_INVALID;
        return 0;
}

static int parse_message_type(const char *v, ConfigMessageType *ret) {
        static const char *const names[] = {
                [CONFIG_MESSAGE_ANY] = "*",
                [CONFIG_MESSAGE_METHOD_CALL] = "method_call",
                [CONFIG_MESSAGE_METHOD_RETURN] = "method_return",
                [CONFIG_MESSAGE_ERROR] = "error",
                [CONFIG_MESSAGE_SIGNAL] = "signal",
        };

        for (size_t i = CONFIG_MESSAGE_ANY; i < ELEMENTSOF(names); ++i)
                if (!strcmp(v, names[i])) {
                        *ret = (ConfigMessageType)i;
                        return 0;
                }
        return CONFIG_E_INVALID;
}

/*
 * min_fds/max_fds as dbus-daemon 1.14 reads them (strtoul in base 10): leading blanks, an
 * optional sign, decimal digits; what follows the digits is ignored ("5x" is 5, "0x5" is 0,
 * "+5" is 5, "-0" is 0); no digits, or a value above CONFIG_MAX_FDS_LIMIT (which includes
 * any negative one, as strtoul wraps it) is an error.
 */
static int parse_fds(const char *v, uint32_t *ret) {
        uint64_t n = 0;
        const char *p = v;
        bool neg = false;

        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')
                ++p;
        if (*p == '+' || *p == '-')
                neg = *p++ == '-';
        if (*p < '0' || *p > '9')
                return CONFIG_E_INVALID;
        for (; *p >= '0' && *p <= '9'; ++p) {
                n = n * 10 + (uint64_t)(*p - '0');
                if (n > CONFIG_MAX_FDS_LIMIT)
                        return CONFIG_E_INVALID;
        }
        if (neg && n > 0)
                return CONFIG_E_INVALID;
        *ret = (uint32_t)n;
        return 0;
}

/* A digit's value in bases up to 16; 99 for anything else (above every base). */
static int digit_value(char c) {
        int v = hex_digit(c);

        return v < 0 ? 99 : v;
}

/*
 * <limit> text as dbus-daemon 1.14 reads it (checked against it): surrounding whitespace
 * stripped, then strtoll() in base 0 — an optional sign, "0x" hex, "0" octal or decimal —
 * and whatever follows the number is ignored ("5abc" is 5, "0x" is 0, "1e3" is 1). No digits
 * or a value beyond a long is "could not parse"; a negative value is its own error.
 */
static int parse_limit(LoaderFile *f, const Frame *fr, const char *name, uint64_t *ret) {
        const char *s = fr->text, *e = fr->text + fr->n_text;
        unsigned base = 10;
        long long v = 0;
        bool neg = false;
        int d;

        while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
                ++s;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
                --e;
        if (s < e && (*s == '-' || *s == '+'))
                neg = *s++ == '-';
        if (s == e || digit_value(*s) > 9)
                goto invalid;
        if (*s == '0') {
                base = 8;
                if (e - s > 2 && (s[1] == 'x' || s[1] == 'X') && digit_value(s[2]) < 16) {
                        base = 16;
                        s += 2;
                }
        }
        for (; s < e && (d = digit_value(*s)) < (int)base; ++s) {
                if (v > (LONG_MAX - d) / (long long)base)
                        goto invalid;
                v = v * (long long)base + d;
        }
        if (neg && v > 0)
                return file_fail(f, fr->line, "<limit name=\"%s\"> must be a positive number",
                                 name);
        *ret = (uint64_t)v;
        return 0;
invalid:
        return file_fail(f, fr->line,
                         "<limit name=\"%s\"> element has invalid value (could not parse as integer)",
                         name);
}

/*
 * An <allow>/<deny> element. The checks run in dbus-daemon 1.14's order (found by feeding it
 * rules with two faults each), so the first fault reported is the one it reports: presence,
 * member without interface/path, own/user/group mixed with message attributes, send mixed
 * with receive, error with member/interface, destination with prefix, then the values:
 * message types, eavesdrop, send_broadcast (and broadcast to a named destination), the
 * requested_reply booleans, max_fds, min_fds. The combination checks look at which
 * attributes are present, not at their values.
 */
static int file_end_rule(LoaderFile *f, const Frame *fr, bool allow) {
        ConfigRule rule = { .allow = allow };
        const char *v, *el = allow ? "allow" : "deny";
        bool any_send, any_recv, own, who, msg;
        size_t i;
        int r;

        for (i = 0; i < _CONFIG_ATTR_N; ++i) {
                v = frame_attr(fr, config_rule_attr_to_string((ConfigRuleAttr)i));
                if (v && !(rule.str[i] = strdup(v))) {
                        r = error_origin(-ENOMEM);
                        goto out;
                }
        }

        any_send = rule.str[CONFIG_ATTR_SEND_DESTINATION] ||
                   rule.str[CONFIG_ATTR_SEND_DESTINATION_PREFIX] ||
                   rule.str[CONFIG_ATTR_SEND_INTERFACE] || rule.str[CONFIG_ATTR_SEND_MEMBER] ||
                   rule.str[CONFIG_ATTR_SEND_ERROR] || rule.str[CONFIG_ATTR_SEND_PATH] ||
                   frame_attr(fr, "send_type") || frame_attr(fr, "send_requested_reply") ||
                   frame_attr(fr, "send_broadcast");
        any_recv = rule.str[CONFIG_ATTR_RECEIVE_SENDER] ||
                   rule.str[CONFIG_ATTR_RECEIVE_INTERFACE] ||
                   rule.str[CONFIG_ATTR_RECEIVE_MEMBER] || rule.str[CONFIG_ATTR_RECEIVE_ERROR] ||
                   rule.str[CONFIG_ATTR_RECEIVE_PATH] || frame_attr(fr, "receive_type") ||
                   frame_attr(fr, "receive_requested_reply");
        own = rule.str[CONFIG_ATTR_OWN] || rule.str[CONFIG_ATTR_OWN_PREFIX];
        who = rule.str[CONFIG_ATTR_USER] || rule.str[CONFIG_ATTR_GROUP];
        /* min_fds/max_fds count as message attributes when mixed with own/user/group ... */
        msg = any_send || any_recv || frame_attr(fr, "eavesdrop") || frame_attr(fr, "min_fds") ||
              frame_attr(fr, "max_fds");

        /* ... but min_fds, max_fds and log alone are "no attributes", as in dbus-daemon */
        if (!any_send && !any_recv && !own && !who && !frame_attr(fr, "eavesdrop")) {
                r = file_fail(f, fr->line, "Element <%s> must have one or more attributes", el);
                goto out;
        }
        if ((rule.str[CONFIG_ATTR_SEND_MEMBER] && !rule.str[CONFIG_ATTR_SEND_INTERFACE] &&
             !rule.str[CONFIG_ATTR_SEND_PATH]) ||
            (rule.str[CONFIG_ATTR_RECEIVE_MEMBER] && !rule.str[CONFIG_ATTR_RECEIVE_INTERFACE] &&
             !rule.str[CONFIG_ATTR_RECEIVE_PATH])) {
                r = file_fail(f, fr->line,
                              "On element <%s>, if you specify a member you must specify an interface or a path. Keep in mind that not all messages have an interface field.",
                              el);
                goto out;
        }
        if (msg + !!rule.str[CONFIG_ATTR_OWN] + !!rule.str[CONFIG_ATTR_OWN_PREFIX] +
            !!rule.str[CONFIG_ATTR_USER] + !!rule.str[CONFIG_ATTR_GROUP] > 1) {
                r = file_fail(f, fr->line,
                              "Invalid combination of attributes on element <%s>: own, own_prefix, user, group and the message-related attributes cannot be combined",
                              el);
                goto out;
        }
        if (any_send && any_recv) {
                r = file_fail(f, fr->line,
                              "Invalid combination of attributes on element <%s>: send and receive attributes cannot be combined",
                              el);
                goto out;
        }
        if ((rule.str[CONFIG_ATTR_SEND_ERROR] &&
             (rule.str[CONFIG_ATTR_SEND_MEMBER] || rule.str[CONFIG_ATTR_SEND_INTERFACE])) ||
            (rule.str[CONFIG_ATTR_RECEIVE_ERROR] &&
             (rule.str[CONFIG_ATTR_RECEIVE_MEMBER] || rule.str[CONFIG_ATTR_RECEIVE_INTERFACE]))) {
                r = file_fail(f, fr->line,
                              "Invalid combination of attributes on element <%s>: %s_error cannot be combined with %s_member or %s_interface",
                              el, any_send ? "send" : "receive", any_send ? "send" : "receive",
                              any_send ? "send" : "receive");
                goto out;
        }
        if (rule.str[CONFIG_ATTR_SEND_DESTINATION] &&
            rule.str[CONFIG_ATTR_SEND_DESTINATION_PREFIX]) {
                r = file_fail(f, fr->line,
                              "Invalid combination of attributes on element <%s>: send_destination cannot be combined with send_destination_prefix",
                              el);
                goto out;
        }
        if ((v = frame_attr(fr, "send_type")) && parse_message_type(v, &rule.send_type)) {
                r = file_fail(f, fr->line, "Bad message type \"%s\"", v);
                goto out;
        }
        if ((v = frame_attr(fr, "receive_type")) && parse_message_type(v, &rule.receive_type)) {
                r = file_fail(f, fr->line, "Bad message type \"%s\"", v);
                goto out;
        }
        /* dbus-daemon's message swaps name and value for eavesdrop; we word it the right way */
        {
                static const struct { const char *name; size_t off; } bools[] = {
                        { "eavesdrop", offsetof(ConfigRule, eavesdrop) },
                        { "send_broadcast", offsetof(ConfigRule, send_broadcast) },
                        { NULL, 0 },    /* the broadcast/destination check goes here */
                        { "send_requested_reply", offsetof(ConfigRule, send_requested_reply) },
                        { "receive_requested_reply",
                          offsetof(ConfigRule, receive_requested_reply) },
                };

                for (i = 0; i < ELEMENTSOF(bools); ++i) {
                        if (!bools[i].name) {
                                if (rule.send_broadcast == CONFIG_TRUE &&
                                    rule.str[CONFIG_ATTR_SEND_DESTINATION] &&
                                    strcmp(rule.str[CONFIG_ATTR_SEND_DESTINATION], "*")) {
                                        r = file_fail(f, fr->line,
                                                      "Rule with send_broadcast=\"true\" and send_destination=\"%s\" cannot match anything",
                                                      rule.str[CONFIG_ATTR_SEND_DESTINATION]);
                                        goto out;
                                }
                                continue;
                        }
                        v = frame_attr(fr, bools[i].name);
                        if (v && parse_true_false(v, (ConfigTristate *)((char *)&rule +
                                                                        bools[i].off))) {
                                r = file_fail(f, fr->line,
                                              "Bad value \"%s\" for %s attribute, must be true or false",
                                              v, bools[i].name);
                                goto out;
                        }
                }
        }
        if ((v = frame_attr(fr, "log")))
                rule.log = !strcmp(v, "true") ? CONFIG_TRUE : CONFIG_FALSE;
        if ((v = frame_attr(fr, "max_fds"))) {
                if (parse_fds(v, &rule.max_fds)) {
                        r = file_fail(f, fr->line,
                                      "Bad value \"%s\" for max_fds attribute, must be an integer in range 0 to %u inclusive",
                                      v, CONFIG_MAX_FDS_LIMIT);
                        goto out;
                }
                rule.has_max_fds = true;
        }
        if ((v = frame_attr(fr, "min_fds"))) {
                if (parse_fds(v, &rule.min_fds)) {
                        r = file_fail(f, fr->line,
                                      "Bad value \"%s\" for min_fds attribute, must be an integer in range 0 to %u inclusive",
                                      v, CONFIG_MAX_FDS_LIMIT);
                        goto out;
                }
                rule.has_min_fds = true;
        }

        if (any_send)
                rule.kind = CONFIG_RULE_SEND;
        else if (any_recv || rule.eavesdrop)
                rule.kind = CONFIG_RULE_RECEIVE;
        else if (own)
                rule.kind = CONFIG_RULE_OWN;
        else if (rule.str[CONFIG_ATTR_USER])
                rule.kind = CONFIG_RULE_USER;
        else
                rule.kind = CONFIG_RULE_GROUP;
        /* dbus-daemon refuses to start (and to reload): who may connect is decided once for
         * the whole bus, a <policy user=|group=> cannot say it */
        if ((rule.kind == CONFIG_RULE_USER || rule.kind == CONFIG_RULE_GROUP) &&
            (f->policy->kind == CONFIG_POLICY_USER || f->policy->kind == CONFIG_POLICY_GROUP)) {
                r = file_fail(f, fr->line,
                              "<%s> rule cannot be per-%s because it has bus-global semantics",
                              el, f->policy->kind == CONFIG_POLICY_USER ? "user" : "group");
                goto out;
        }
        (void) file_loc(f, fr->line, &rule.loc);

        {
                ConfigRule *slot;

                r = config_policy_append_rule(f->policy, &slot);
                if (r < 0)
                        goto out;
                *slot = rule;
                return 0;
        }
out:
        config_rule_deinit(&rule);
        return r;
}

static int file_start_policy(LoaderFile *f, const Frame *fr) {
        const char *context = frame_attr(fr, "context"), *user = frame_attr(fr, "user");
        const char *group = frame_attr(fr, "group"), *console = frame_attr(fr, "at_console");
        ConfigPolicy *p;
        int r;

        if (!!context + !!user + !!group + !!console != 1)
                return file_fail(f, fr->line,
                                 "<policy> element must have exactly one of (context|user|group|at_console) attributes");
        if (context && strcmp(context, "default") && strcmp(context, "mandatory"))
                return file_fail(f, fr->line,
                                 "context attribute on <policy> must have the value \"default\" or \"mandatory\", not \"%s\"",
                                 context);
        if (console && strcmp(console, "true") && strcmp(console, "false"))
                return file_fail(f, fr->line,
                                 "Unknown value \"%s\" for at_console in message bus configuration file",
                                 console);
        r = config_append_policy(f->config, &p);
        if (r < 0)
                return error_trace(r);
        (void) file_loc(f, fr->line, &p->loc);
        if (context) {
                p->kind = strcmp(context, "default") ? CONFIG_POLICY_MANDATORY :
                                                       CONFIG_POLICY_DEFAULT;
        } else if (console) {
                p->kind = CONFIG_POLICY_AT_CONSOLE;
                p->at_console = !strcmp(console, "true");
        } else {
                p->kind = user ? CONFIG_POLICY_USER : CONFIG_POLICY_GROUP;
                p->name = strdup(user ? user : group);
                if (!p->name)
                        return error_origin(-ENOMEM);
        }
        f->policy = p;
        return 0;
}

static int file_include(LoaderFile *f, const Frame *fr) {
        _cleanup_(config_freep) Config *sub = NULL;
        _cleanup_(freep) char *path = NULL;
        const char *v;
        bool ignore_missing = false, if_selinux = false, selinux_root = false;
        int r;

        if ((v = frame_attr(fr, "ignore_missing")) && parse_yes_no(v, &ignore_missing))
                return file_fail(f, fr->line,
                                 "ignore_missing attribute must have value \"yes\" or \"no\"");
        if ((v = frame_attr(fr, "if_selinux_enabled")) && parse_yes_no(v, &if_selinux))
                return file_fail(f, fr->line,
                                 "if_selinux_enabled attribute must have value \"yes\" or \"no\"");
        if ((v = frame_attr(fr, "selinux_root_relative")) && parse_yes_no(v, &selinux_root))
                return file_fail(f, fr->line,
                                 "selinux_root_relative attribute must have value \"yes\" or \"no\"");
        if (if_selinux)
                return 0;               /* SELinux is never enabled for us */
        if (selinux_root) {
                loader_diag(f->loader, CONFIG_DIAG_WARNING, f->name, fr->line,
                            "<include selinux_root_relative=\"yes\"> not supported (no SELinux), ignoring");
                return 0;
        }
        if (f->loader->options && (f->loader->options->flags & CONFIG_LOAD_NO_INCLUDES))
                return 0;

        r = file_resolve(f, fr->text, &path);
        if (r < 0)
                return error_trace(r);
        r = loader_load_path(f->loader, path, ignore_missing, fr->line, f, &sub);
        if (r)
                return r;
        if (!sub)
                return 0;               /* missing, ignored */
        return config_merge(f->config, sub);
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int file_includedir(LoaderFile *f, const Frame *fr) {
        _cleanup_(freep) char *dir = NULL;
        char **names = NULL;
        size_t n = 0, cap = 0, i;
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (f->loader->options && (f->loader->options->flags & CONFIG_LOAD_NO_INCLUDES))
                return 0;
        r = file_resolve(f, fr->text, &dir);
        if (r < 0)
                return error_trace(r);
        r = config_append_string(&f->config->includedirs, &f->config->n_includedirs, dir,
                                 (ConfigLoc){ .file = f->name, .line = fr->line });
        if (r < 0)
                return error_trace(r);
        d = opendir(dir);
        if (!d) {
                if (errno == ENOMEM)
                        return error_origin(-ENOMEM);
                if (errno == ENOENT)
                        return 0;       /* a missing directory is no error, as in dbus-daemon */
                /* anything else (not a directory, no permission) is, as in dbus-daemon */
                return file_fail(f, fr->line, "Failed to read directory \"%s\": %s", dir,
                                 strerror(errno));
        }
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);

                if (len <= 5 || strcmp(de->d_name + len - 5, ".conf"))
                        continue;
                if (n == cap) {
                        char **p = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof(*names));

                        if (!p) {
                                r = error_origin(-ENOMEM);
                                goto out;
                        }
                        names = p;
                }
                if (asprintf(&names[n], "%s/%s", dir, de->d_name) < 0) {
                        r = error_origin(-ENOMEM);
                        goto out;
                }
                ++n;
        }
        if (n)
                qsort(names, n, sizeof(*names), compare_names);
        for (i = 0; i < n; ++i) {
                _cleanup_(config_freep) Config *sub = NULL;

                r = loader_load_path(f->loader, names[i], true, fr->line, f, &sub);
                if (r == CONFIG_E_INVALID) {
                        loader_diag(f->loader, CONFIG_DIAG_WARNING, f->name, fr->line,
                                    "Encountered error while parsing \"%s\", ignoring it",
                                    names[i]);
                        r = 0;
                        continue;
                }
                if (r)
                        goto out;
                if (sub) {
                        r = config_merge(f->config, sub);
                        if (r < 0)
                                goto out;
                }
        }
out:
        for (i = 0; i < n; ++i)
                free(names[i]);
        free(names);
        (void) closedir(d);
        return r;
}

static int file_end_limit(LoaderFile *f, const Frame *fr) {
        const char *name = frame_attr(fr, "name");
        uint64_t v;
        int id, r;

        if (!name)
                return file_fail(f, fr->line, "<limit> element must have a \"name\" attribute");
        id = config_limit_from_string(name);
        if (id < 0)
                return file_fail(f, fr->line, "There is no limit called \"%s\"", name);
        r = parse_limit(f, fr, name, &v);
        if (r)
                return r;
        f->config->limits[id] = (ConfigLimit){ .set = true, .value = v };
        return file_loc(f, fr->line, &f->config->limits[id].loc);
}

/* All checks and tree updates happen here, at the end tag, when the text is known. */
static int file_end(LoaderFile *f, const Frame *fr) {
        const ElementInfo *info = &elements[fr->element];
        Config *c = f->config;
        ConfigFlag *flag = NULL;
        ConfigString *str = NULL;
        ConfigLoc loc;
        _cleanup_(freep) char *path = NULL;
        const char *v;
        int r;

        (void) file_loc(f, fr->line, &loc);
        if (info->text && fr->n_text == 0)
                return file_fail(f, fr->line,
                                 "XML element <%s> was expected to have content inside it",
                                 info->name);

        switch (fr->element) {
        case ELEMENT_BUSCONFIG:
        case ELEMENT_SELINUX:
                return 0;
        case ELEMENT_TYPE:
                str = &c->type;
                break;
        case ELEMENT_USER:
                str = &c->user;
                break;
        case ELEMENT_PIDFILE:
                str = &c->pidfile;
                break;
        case ELEMENT_SERVICEHELPER:
                str = &c->servicehelper;
                break;
        case ELEMENT_FORK:
                flag = &c->fork;
                break;
        case ELEMENT_KEEP_UMASK:
                flag = &c->keep_umask;
                break;
        case ELEMENT_SYSLOG:
                flag = &c->syslog;
                break;
        case ELEMENT_ALLOW_ANONYMOUS:
                flag = &c->allow_anonymous;
                break;
        case ELEMENT_LISTEN:
                return config_append_string(&c->listen, &c->n_listen, fr->text, loc);
        case ELEMENT_AUTH:
                return config_append_string(&c->auth, &c->n_auth, fr->text, loc);
        case ELEMENT_SERVICEDIR:
                r = file_resolve(f, fr->text, &path);
                if (r < 0)
                        return error_trace(r);
                return config_append_servicedir(c, CONFIG_SERVICEDIR_PATH, path, loc);
        case ELEMENT_STANDARD_SESSION_SERVICEDIRS:
                return config_append_servicedir(c, CONFIG_SERVICEDIR_STANDARD_SESSION, NULL,
                                                loc);
        case ELEMENT_STANDARD_SYSTEM_SERVICEDIRS:
                return config_append_servicedir(c, CONFIG_SERVICEDIR_STANDARD_SYSTEM, NULL,
                                                loc);
        case ELEMENT_INCLUDE:
                return file_include(f, fr);
        case ELEMENT_INCLUDEDIR:
                return file_includedir(f, fr);
        case ELEMENT_POLICY:
                f->policy = NULL;
                return 0;
        case ELEMENT_ALLOW:
        case ELEMENT_DENY:
                return file_end_rule(f, fr, fr->element == ELEMENT_ALLOW);
        case ELEMENT_LIMIT:
                return file_end_limit(f, fr);
        case ELEMENT_ASSOCIATE: {
                const char *own = frame_attr(fr, "own"), *context = frame_attr(fr, "context");

                if (!own || !context)
                        return file_fail(f, fr->line,
                                         "Element <associate> must have attributes own=\"<servicename>\" and context=\"<selinux context>\"");
                return config_append_associate(c, own, context, loc);
        }
        case ELEMENT_APPARMOR:
                v = frame_attr(fr, "mode");
                if (!v)
                        return 0;
                if (!strcmp(v, "enabled"))
                        c->apparmor = CONFIG_APPARMOR_ENABLED;
                else if (!strcmp(v, "disabled"))
                        c->apparmor = CONFIG_APPARMOR_DISABLED;
                else if (!strcmp(v, "required"))
                        c->apparmor = CONFIG_APPARMOR_REQUIRED;
                else
                        return file_fail(f, fr->line,
                                         "Mode attribute on <apparmor> must have value \"required\", \"enabled\" or \"disabled\", not \"%s\"",
                                         v);
                c->apparmor_loc = loc;
                return 0;
        default:
                return error_origin(-EINVAL);
        }
        if (str)
                return config_string_set(str, fr->text, fr->n_text, loc);
        *flag = (ConfigFlag){ .set = true, .loc = loc };
        return 0;
}

static int file_start(LoaderFile *f, const char *name, const char **attrs, unsigned line) {
        Element e = element_from_name(name);
        Frame *fr;
        size_t i, n;

        if (f->n_frames == 0) {
                if (e != ELEMENT_BUSCONFIG)
                        return file_fail(f, line,
                                         "Unknown element <%s> at root of configuration file",
                                         name);
        } else {
                Element parent = f->frames[f->n_frames - 1].element;

                /* inside an element that never has children dbus-daemon words it so */
                if (parent != ELEMENT_BUSCONFIG && parent != ELEMENT_POLICY &&
                    parent != ELEMENT_SELINUX)
                        return file_fail(f, line, "Element <%s> is not allowed in this context",
                                         name);
                if (e == ELEMENT_NONE || elements[e].parent != parent)
                        return file_fail(f, line,
                                         "Element <%s> not allowed inside <%s> in configuration file",
                                         name, elements[parent].name);
        }
        if (f->n_frames >= LOADER_STACK_MAX)
                return error_origin(-EINVAL);   /* unreachable: nesting is checked above */

        for (n = 0; attrs[n]; n += 2)
                if (!attr_is_allowed(e, attrs[n]))
                        return file_fail(f, line,
                                         "Attribute \"%s\" is invalid on <%s> element in this context",
                                         attrs[n], name);

        fr = &f->frames[f->n_frames];
        *fr = (Frame){ .element = e, .line = line };
        fr->text = calloc(1, 1);
        fr->attrs = calloc(n + 1, sizeof(char *));
        if (!fr->text || !fr->attrs) {
                frame_deinit(fr);
                return error_origin(-ENOMEM);
        }
        ++f->n_frames;                  /* from here on, the frame is freed on any path */
        for (i = 0; i < n; ++i)
                if (!(fr->attrs[i] = strdup(attrs[i])))
                        return error_origin(-ENOMEM);

        if (e == ELEMENT_POLICY)
                return file_start_policy(f, fr);
        return 0;
}

static void XMLCALL on_start(void *userdata, const XML_Char *name, const XML_Char **attrs) {
        LoaderFile *f = userdata;

        if (f->error)
                return;
        file_set_error(f, file_start(f, name, attrs, (unsigned)XML_GetCurrentLineNumber(f->xml)));
}

static void XMLCALL on_end(void *userdata, const XML_Char *name) {
        LoaderFile *f = userdata;
        Frame fr;

        if (f->error || f->n_frames == 0)
                return;
        fr = f->frames[--f->n_frames];
        file_set_error(f, file_end(f, &fr));
        frame_deinit(&fr);
}

static void XMLCALL on_text(void *userdata, const XML_Char *s, int len) {
        LoaderFile *f = userdata;
        Frame *fr;
        char *p;

        if (f->error || f->n_frames == 0 || len <= 0)
                return;
        fr = &f->frames[f->n_frames - 1];
        if (!elements[fr->element].text) {
                for (int i = 0; i < len; ++i)
                        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') {
                                file_set_error(f, file_fail(f,
                                        (unsigned)XML_GetCurrentLineNumber(f->xml),
                                        "No text content expected inside XML element %s in configuration file",
                                        elements[fr->element].name));
                                return;
                        }
                return;
        }
        if (fr->n_text + (size_t)len > LOADER_TEXT_MAX) {
                file_set_error(f, file_fail(f, fr->line, "Content of <%s> too long",
                                            elements[fr->element].name));
                return;
        }
        p = realloc(fr->text, fr->n_text + (size_t)len + 1);
        if (!p) {
                file_set_error(f, error_origin(-ENOMEM));
                return;
        }
        memcpy(p + fr->n_text, s, (size_t)len);
        fr->n_text += (size_t)len;
        p[fr->n_text] = 0;
        fr->text = p;
}

static void file_deinit(LoaderFile *f) {
        while (f->n_frames)
                frame_deinit(&f->frames[--f->n_frames]);
        if (f->xml)
                XML_ParserFree(f->xml);
        f->xml = NULL;
}

static unsigned long hash_salt(void) {
        unsigned long salt;

        if (getrandom(&salt, sizeof(salt), GRND_NONBLOCK) != (ssize_t)sizeof(salt))
                salt = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16) ^
                       (unsigned long)(uintptr_t)&salt;
        return salt;
}

/*
 * Parses @size bytes of @data as file @name into a new Config. @dir is the directory for
 * relative paths. Returns 0, CONFIG_E_INVALID (diagnostic sent) or negative.
 */
static int loader_parse(Loader *l, const char *name, const char *dir, const void *data,
                        size_t size, Config **ret_config) {
        _cleanup_(config_freep) Config *config = NULL;
        LoaderFile f = { .loader = l, .dir = dir };
        int r;

        r = config_new(&config);
        if (r < 0)
                return error_trace(r);
        f.config = config;
        r = config_intern_file(config, name, &f.name);
        if (r < 0)
                return error_trace(r);
        if (size > LOADER_FILE_MAX)
                return file_fail(&f, 0, "File too large");

        f.xml = XML_ParserCreate(NULL);
        if (!f.xml)
                return error_origin(-ENOMEM);
        (void) XML_SetHashSalt(f.xml, hash_salt());
        XML_SetUserData(f.xml, &f);
        XML_SetElementHandler(f.xml, on_start, on_end);
        XML_SetCharacterDataHandler(f.xml, on_text);

        /* one XML_Parse() call for the whole buffer; the sticky error is checked right after */
        if (XML_Parse(f.xml, data, (int)size, XML_TRUE) == XML_STATUS_ERROR && !f.error) {
                if (XML_GetErrorCode(f.xml) == XML_ERROR_NO_MEMORY)
                        f.error = error_origin(-ENOMEM);
                else
                        f.error = file_fail(&f, (unsigned)XML_GetCurrentLineNumber(f.xml),
                                            "%s", XML_ErrorString(XML_GetErrorCode(f.xml)));
        }
        r = f.error;
        file_deinit(&f);
        if (r)
                return r;
        *ret_config = steal_ptr(&config);
        return 0;
}

static int read_all(int fd, char **ret_buf, size_t *ret_size) {
        _cleanup_(freep) char *buf = NULL;
        size_t n = 0, cap = 0;
        ssize_t k;

        for (;;) {
                if (n == cap) {
                        char *p;

                        if (cap >= LOADER_FILE_MAX + 1)
                                break;
                        cap = cap ? cap * 2 : 16384;
                        p = realloc(buf, cap);
                        if (!p)
                                return error_origin(-ENOMEM);
                        buf = p;
                }
                k = read(fd, buf + n, cap - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        *ret_buf = steal_ptr(&buf);
        *ret_size = n;
        return 0;
}

/*
 * Loads @path (already absolute or relative to the cwd). @parent and @line say who included
 * it (NULL for the top file). With @ignore_missing a missing file gives 0 and *ret NULL.
 */
static int loader_load_path(Loader *l, const char *path, bool ignore_missing, unsigned line,
                            LoaderFile *parent, Config **ret_config) {
        _cleanup_(freep) char *dir = NULL, *buf = NULL;
        _cleanup_(fd_closep) int fd = -1;
        Config *config = NULL;
        const char *where = parent ? parent->name : path;
        struct stat st;
        size_t size;
        char *slash;
        int r;

        /* O_NONBLOCK: a FIFO must not hang the load; it is rejected below as not regular */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOMEM)
                        return error_origin(-ENOMEM);
                if (errno == ENOENT && ignore_missing) {
                        *ret_config = NULL;
                        return 0;
                }
                loader_diag(l, CONFIG_DIAG_ERROR, where, line, "Failed to open \"%s\": %s",
                            path, strerror(errno));
                return CONFIG_E_INVALID;
        }
        if (fstat(fd, &st) < 0)
                return error_origin(-errno);
        if (!S_ISREG(st.st_mode)) {
                loader_diag(l, CONFIG_DIAG_ERROR, where, line, "Failed to open \"%s\": %s",
                            path, "not a regular file");
                return CONFIG_E_INVALID;
        }

        for (unsigned i = 0; i < l->depth; ++i)
                if (l->stack[i].dev == st.st_dev && l->stack[i].ino == st.st_ino) {
                        loader_diag(l, CONFIG_DIAG_ERROR, where, line,
                                    "Circular inclusion of file \"%s\"", path);
                        return CONFIG_E_INVALID;
                }
        if (l->depth >= CONFIG_INCLUDE_DEPTH_MAX) {
                loader_diag(l, CONFIG_DIAG_ERROR, where, line,
                            "Including \"%s\" exceeds the maximum include depth of %u", path,
                            CONFIG_INCLUDE_DEPTH_MAX);
                return CONFIG_E_INVALID;
        }

        r = read_all(fd, &buf, &size);
        if (r == -ENOMEM)
                return error_trace(r);
        if (r < 0) {
                loader_diag(l, CONFIG_DIAG_ERROR, where, line, "Failed to read \"%s\": %s",
                            path, strerror(-r));
                return CONFIG_E_INVALID;
        }

        dir = strdup(path);
        if (!dir)
                return error_origin(-ENOMEM);
        slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = 0;
        else if (slash)
                *slash = 0;
        else
                strcpy(dir, ".");

        l->stack[l->depth].dev = st.st_dev;
        l->stack[l->depth].ino = st.st_ino;
        ++l->depth;
        r = loader_parse(l, path, dir, buf, size, &config);
        --l->depth;
        if (r)
                return r;
        *ret_config = config;
        return 0;
}

/**
 * config_load_file() - load a busconfig file and everything it includes
 * @path:       the file; relative includes are resolved against its directory
 * @options:    flags and the diagnostic callback; NULL for defaults
 * @ret_config: the configuration
 *
 * Return: 0, CONFIG_E_INVALID (a CONFIG_DIAG_ERROR diagnostic said where and why), or a
 * negative errno (-ENOMEM).
 */
int config_load_file(const char *path, const ConfigLoadOptions *options, Config **ret_config) {
        Loader l = { .options = options };
        Config *config = NULL;
        int r;

        r = loader_load_path(&l, path, false, 0, NULL, &config);
        if (r)
                return r;
        *ret_config = config;
        return 0;
}

/**
 * config_load_memory() - load a busconfig document from memory
 * @name:       file name used in diagnostics and ConfigLoc
 * @base_dir:   directory for relative includes and servicedirs; NULL keeps them relative
 * @data:       the document
 * @size:       its length
 * @options:    flags and the diagnostic callback; NULL for defaults
 * @ret_config: the configuration
 *
 * Return: 0, CONFIG_E_INVALID, or a negative errno (-ENOMEM).
 */
int config_load_memory(const char *name, const char *base_dir, const void *data, size_t size,
                       const ConfigLoadOptions *options, Config **ret_config) {
        Loader l = { .options = options };

        return loader_parse(&l, name, base_dir, data, size, ret_config);
}
