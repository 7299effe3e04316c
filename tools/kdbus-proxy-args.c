/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-proxy's command line (see kdbus-proxy-args.h). The arguments live in one growing
 * vector of our own copies, so that --args can splice what it reads in at its place, as
 * xdg-dbus-proxy does: an --args file may itself hold --fd, further --args, and whole
 * ADDRESS PATH groups.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/name-acl-rule.h"
#include "kdbus/kdbus.h"
#include "tools/kdbus-proxy-args.h"
#include "util/macro.h"
#include "wire/names.h"

/* An --args fd larger than this is refused: a command line, not a data file. */
#define PROXY_ARGS_MAX_BYTES (1024u * 1024u)

static bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

typedef struct ArgVec {
        char **v;
        size_t n;
        size_t alloc;
} ArgVec;

static void argvec_deinit(ArgVec *a) {
        size_t i;

        for (i = 0; i < a->n; ++i)
                free(a->v[i]);
        free(a->v);
}

/* Insert a copy of @s (@len bytes) at @pos. Return: 0 or -ENOMEM. */
static int argvec_insert(ArgVec *a, size_t pos, const char *s, size_t len) {
        char *copy;

        if (a->n == a->alloc) {
                size_t alloc = a->alloc ? a->alloc * 2 : 16;
                char **v = realloc(a->v, alloc * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                a->v = v;
                a->alloc = alloc;
        }
        copy = strndup(s, len);
        if (!copy)
                return -ENOMEM;
        memmove(a->v + pos + 1, a->v + pos, (a->n - pos) * sizeof(*a->v));
        a->v[pos] = copy;
        ++a->n;
        return 0;
}

static _printf_(3, 4) int fail(char *err, size_t size, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(err, size, format, ap);
        va_end(ap);
        return -EINVAL;
}

/* A file descriptor number as given to --fd= / --args=, or -1. */
static int parse_fd(const char *s) {
        char *end;
        long v;

        if (!*s || *s < '0' || *s > '9')
                return -1;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || v > 0x7fffffff)
                return -1;
        return (int)v;
}

/*
 * Read @fd to its end and insert its NUL-separated strings at @pos (a last string without
 * NUL counts too, as xdg-dbus-proxy takes it). Return: 0, -EIO, -EINVAL (too large), -ENOMEM.
 */
static int args_splice_fd(ArgVec *a, size_t pos, int fd) {
        _cleanup_(freep) char *buf = NULL;
        size_t size = 0, alloc = 0, at = 0;
        int r;

        for (;;) {
                ssize_t n;

                if (alloc - size < 4096) {
                        char *b;

                        if (alloc >= PROXY_ARGS_MAX_BYTES)
                                return -EINVAL;
                        alloc = alloc ? alloc * 2 : 8192;
                        b = realloc(buf, alloc);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                n = read(fd, buf + size, alloc - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -EIO;
                if (n == 0)
                        break;
                size += (size_t)n;
        }
        while (at < size) {
                const char *nul = memchr(buf + at, '\0', size - at);
                size_t len = nul ? (size_t)(nul - (buf + at)) : size - at;

                r = argvec_insert(a, pos++, buf + at, len);
                if (r < 0)
                        return r;
                at += len + 1;
        }
        return 0;
}

/*
 * --fd, --args, --help, --version at @a->v[*i]; anything else starting with '-' is unknown.
 * Return: 0 (consumed, *i advanced), 1 (help/version: stop), -errno.
 */
static int parse_generic(ProxyArgs *ret, ArgVec *a, size_t *i, char *err, size_t err_size) {
        const char *arg = a->v[*i];
        int fd, r;

        if (streq(arg, "--help") || streq(arg, "-h")) {
                ret->help = true;
                return 1;
        }
        if (streq(arg, "--version")) {
                ret->version = true;
                return 1;
        }
        if (startswith(arg, "--fd=")) {
                fd = parse_fd(arg + 5);
                if (fd < 0)
                        return fail(err, err_size, "invalid --fd \"%s\": a file descriptor "
                                    "number", arg + 5);
                ret->sync_fd = fd;
                ++*i;
                return 0;
        }
        if (startswith(arg, "--args=")) {
                fd = parse_fd(arg + 7);
                if (fd < 0)
                        return fail(err, err_size, "invalid --args \"%s\": a file descriptor "
                                    "number", arg + 7);
                ++*i;
                r = args_splice_fd(a, *i, fd);
                if (r == -EIO)
                        (void) snprintf(err, err_size, "cannot read the arguments of --args=%d: "
                                        "%s", fd, strerror(errno));
                else if (r == -EINVAL)
                        (void) snprintf(err, err_size, "--args=%d holds more than %u bytes",
                                        fd, PROXY_ARGS_MAX_BYTES);
                return r;
        }
        return fail(err, err_size, "unknown option \"%s\" (see --help)", arg);
}

/**
 * proxy_rule_is_valid() - is @rule of the form [METHOD][@PATH]?
 * @rule:       the rule of --call / --broadcast
 *
 * The bus's own parser decides (bridge/name-acl-rule.c), so that what passes here is what
 * kdbusd takes.
 *
 * Return: true if so (the empty rule too: it allows everything, as "*").
 */
bool proxy_rule_is_valid(const char *rule) {
        NameAclRule parsed;

        if (name_acl_rule_parse(rule, KDBUS_POLICY_RULE_CALL, &parsed))
                return false;
        name_acl_rule_deinit(&parsed);
        return true;
}

/* Split "NAME" or "NAME.*" into @r. Return: 0, -EINVAL, -ENOMEM. */
static int rule_set_name(ProxyRule *r, const char *name, size_t len) {
        if (len > 2 && name[len - 1] == '*' && name[len - 2] == '.') {
                r->subtree = true;
                len -= 2;
        }
        if (!len || name[0] == ':' || !wire_well_known_name_is_valid(name, len))
                return -EINVAL;
        r->name = strndup(name, len);
        return r->name ? 0 : -ENOMEM;
}

/* One --see/--talk/--own/--call/--broadcast. Return: 0, -EINVAL, -ENOMEM. */
static int bus_add_rule(ProxyBusArgs *b, const char *arg, char *err, size_t err_size) {
        static const struct { const char *prefix; ProxyRuleKind kind; } kinds[] = {
                { "--see=", PROXY_RULE_SEE }, { "--talk=", PROXY_RULE_TALK },
                { "--own=", PROXY_RULE_OWN }, { "--call=", PROXY_RULE_CALL },
                { "--broadcast=", PROXY_RULE_BROADCAST },
        };
        ProxyRule rule = { 0 }, *rules;
        const char *value = NULL, *eq;
        size_t i;
        int r;

        for (i = 0; i < ELEMENTSOF(kinds) && !value; ++i)
                if (startswith(arg, kinds[i].prefix)) {
                        rule.kind = kinds[i].kind;
                        value = arg + strlen(kinds[i].prefix);
                }
        if (!value)
                return 1;
        if (rule.kind == PROXY_RULE_CALL || rule.kind == PROXY_RULE_BROADCAST) {
                eq = strchr(value, '=');
                if (!eq)
                        return fail(err, err_size, "\"%s\": not NAME=RULE", arg);
                if (!proxy_rule_is_valid(eq + 1))
                        return fail(err, err_size, "\"%s\": the rule \"%s\" is not "
                                    "[METHOD][@PATH] (METHOD: *, org.foo.*, org.foo.Bar.Method; "
                                    "PATH: /a/b or /a/b/*)", arg, eq + 1);
                rule.rule = strdup(eq + 1);
                if (!rule.rule)
                        return -ENOMEM;
        } else {
                eq = value + strlen(value);
        }
        r = rule_set_name(&rule, value, (size_t)(eq - value));
        if (r == 0) {
                rules = reallocarray(b->rules, b->n_rules + 1, sizeof(*rules));
                if (rules) {
                        b->rules = rules;
                        b->rules[b->n_rules++] = rule;
                        return 0;
                }
                r = -ENOMEM;
        }
        free(rule.name);
        free(rule.rule);
        if (r == -EINVAL)
                return fail(err, err_size, "\"%s\": \"%.*s\" is not a valid well-known bus "
                            "name", arg, (int)(eq - value), value);
        return r;
}

/* ADDRESS PATH [OPTION...] at @a->v[*i]. Return: 0, 1 (help/version), -errno. */
static int parse_bus(ProxyArgs *ret, ArgVec *a, size_t *i, char *err, size_t err_size) {
        ProxyBusArgs *buses, *b;
        int r;

        if (*i + 1 >= a->n || a->v[*i + 1][0] == '-')
                return fail(err, err_size, "no socket path given after the bus address \"%s\"",
                            a->v[*i]);
        buses = reallocarray(ret->buses, ret->n_buses + 1, sizeof(*buses));
        if (!buses)
                return -ENOMEM;
        ret->buses = buses;
        b = &ret->buses[ret->n_buses];
        memset(b, 0, sizeof(*b));
        b->address = strdup(a->v[*i]);
        b->path = strdup(a->v[*i + 1]);
        ++ret->n_buses;
        if (!b->address || !b->path)
                return -ENOMEM;
        *i += 2;

        while (*i < a->n && a->v[*i][0] == '-') {
                const char *arg = a->v[*i];

                if (streq(arg, "--filter"))
                        b->filter = true;
                else if (streq(arg, "--log"))
                        b->log = true;
                else if (streq(arg, "--sloppy-names"))
                        b->sloppy_names = true;
                else {
                        r = bus_add_rule(b, arg, err, err_size);
                        if (r == 1) {
                                r = parse_generic(ret, a, i, err, err_size);
                                if (r)
                                        return r;
                                continue;
                        }
                        if (r < 0)
                                return r;
                }
                ++*i;
        }
        return 0;
}

/**
 * proxy_args_parse() - parse kdbus-proxy's command line
 * @ret:        the result (PROXY_ARGS_NULL-initialised; release with proxy_args_deinit())
 * @argc:       as main()'s
 * @argv:       as main()'s
 * @err:        a message on a bad command line
 * @err_size:   its size
 *
 * Return: 0, -EINVAL (bad command line, @err says why), -EIO (an --args fd could not be
 * read), -ENOMEM.
 */
int proxy_args_parse(ProxyArgs *ret, int argc, char *const *argv, char *err, size_t err_size) {
        ArgVec a = { 0 };
        size_t i;
        int r = 0;

        err[0] = '\0';
        for (i = 1; i < (size_t)argc && r == 0; ++i)
                r = argvec_insert(&a, a.n, argv[i], strlen(argv[i]));
        for (i = 0; i < a.n && r == 0;)
                r = a.v[i][0] == '-' ? parse_generic(ret, &a, &i, err, err_size) :
                                       parse_bus(ret, &a, &i, err, err_size);
        argvec_deinit(&a);
        if (r == 1)
                return 0;               /* --help / --version */
        if (r == 0 && !ret->n_buses)
                r = fail(err, err_size, "no ADDRESS PATH given (see --help)");
        if (r == -ENOMEM)
                (void) snprintf(err, err_size, "out of memory");
        return r;
}

/**
 * proxy_args_deinit() - release what proxy_args_parse() allocated
 * @args:       the parse result
 */
void proxy_args_deinit(ProxyArgs *args) {
        size_t i, j;

        for (i = 0; i < args->n_buses; ++i) {
                ProxyBusArgs *b = &args->buses[i];

                for (j = 0; j < b->n_rules; ++j) {
                        free(b->rules[j].name);
                        free(b->rules[j].rule);
                }
                free(b->rules);
                free(b->address);
                free(b->path);
        }
        free(args->buses);
        args->buses = NULL;
        args->n_buses = 0;
}

/* Append an item of @a and @b; Return: the new offset, or 0 when @cap is exceeded. */
static size_t put_item(uint8_t *buf, size_t at, size_t cap, uint64_t type, const void *a,
                       size_t alen, const void *b, size_t blen) {
        struct kdbus_item *item = (void *)(buf + at);

        if (at + KDBUS_ITEM_SIZE(alen + blen) > cap)
                return 0;
        item->size = KDBUS_ITEM_HEADER_SIZE + alen + blen;
        item->type = type;
        memcpy(item->data, a, alen);
        if (blen)
                memcpy(item->data + alen, b, blen);
        return at + KDBUS_ALIGN8(item->size);
}

int proxy_bus_args_policy_items(const ProxyBusArgs *b, uint8_t *buf, size_t cap,
                                size_t *ret_size) {
        size_t at = 0, i;
        char name[256];

        for (i = 0; i < b->n_rules; ++i) {
                const ProxyRule *r = &b->rules[i];

                (void) snprintf(name, sizeof(name), "%s%s", r->name, r->subtree ? ".*" : "");
                at = put_item(buf, at, cap, KDBUS_ITEM_NAME, name, strlen(name) + 1, NULL, 0);
                if (!at)
                        return -E2BIG;
                if (r->kind <= PROXY_RULE_OWN) {
                        struct kdbus_policy_access a = {
                                .type = KDBUS_POLICY_ACCESS_WORLD,
                                .access = r->kind == PROXY_RULE_SEE ? KDBUS_POLICY_SEE :
                                          r->kind == PROXY_RULE_TALK ? KDBUS_POLICY_TALK :
                                                                       KDBUS_POLICY_OWN,
                        };

                        at = put_item(buf, at, cap, KDBUS_ITEM_POLICY_ACCESS, &a, sizeof(a),
                                      NULL, 0);
                } else {
                        uint64_t type = r->kind == PROXY_RULE_CALL ? KDBUS_POLICY_RULE_CALL :
                                                                     KDBUS_POLICY_RULE_BROADCAST;

                        at = put_item(buf, at, cap, KDBUS_ITEM_POLICY_RULE, &type, sizeof(type),
                                      r->rule, strlen(r->rule) + 1);
                }
                if (!at)
                        return -E2BIG;
        }
        *ret_size = at;
        return 0;
}
