/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbus-proxy's command line: xdg-dbus-proxy's, so that sandbox launchers (flatpak) run
 * kdbus-proxy in its place unchanged:
 *
 *   kdbus-proxy [--fd=FD] [--args=FD] ADDRESS PATH [OPTION...] [ADDRESS PATH [OPTION...]]...
 *
 * OPTION: --filter, --log, --sloppy-names, --see=NAME, --talk=NAME, --own=NAME,
 * --call=NAME=RULE, --broadcast=NAME=RULE. NAME may end in ".*": the name and every name
 * below it, at any depth (xdg-dbus-proxy's meaning). RULE is [METHOD][@PATH]: METHOD "*",
 * an interface ("org.foo.*" or the interface itself), or "org.foo.Bar.Method"; PATH an
 * object path, or one followed by a slash and a star for it and everything below it.
 * --fd and --args may appear anywhere: --args=FD reads NUL-separated arguments from FD (to EOF) and takes them in its place.
 * --help and --version end the parse (ProxyArgs.help / .version).
 *
 * The parse only checks the form; what the rules mean is the bus's business (kdbusd's
 * endpoint policy, or the filtering proxy).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ProxyRuleKind {
        PROXY_RULE_SEE = 1,             /* --see: also the numeric order SEE < TALK < OWN */
        PROXY_RULE_TALK,
        PROXY_RULE_OWN,
        PROXY_RULE_CALL,                /* --call=NAME=RULE */
        PROXY_RULE_BROADCAST,           /* --broadcast=NAME=RULE */
} ProxyRuleKind;

typedef struct ProxyRule {
        ProxyRuleKind kind;
        char *name;                     /* without a trailing ".*" */
        bool subtree;                   /* it had ".*": the name and all names below it */
        char *rule;                     /* CALL / BROADCAST: "[METHOD][@PATH]" as given */
} ProxyRule;

typedef struct ProxyBusArgs {
        char *address;                  /* the bus's D-Bus address, as given */
        char *path;                     /* where the filtered socket listens */
        bool filter;
        bool log;
        bool sloppy_names;
        ProxyRule *rules;
        size_t n_rules;
} ProxyBusArgs;

typedef struct ProxyArgs {
        int sync_fd;                    /* --fd, or -1 */
        bool help;
        bool version;
        ProxyBusArgs *buses;
        size_t n_buses;
} ProxyArgs;

#define PROXY_ARGS_NULL { .sync_fd = -1 }

/*
 * Parse @argv[1..@argc-1] into @ret (to be released with proxy_args_deinit(), also after a
 * failure). On a bad command line, @err gets a message naming the argument at fault.
 * Return: 0, -EINVAL (bad command line), -EIO (an --args fd could not be read), -ENOMEM.
 */
int proxy_args_parse(ProxyArgs *ret, int argc, char *const *argv, char *err, size_t err_size);
void proxy_args_deinit(ProxyArgs *args);

/*
 * The rules of @b as the kdbus items of an xdg-mode name ACL (bridge/name-acl.h): for each
 * rule its NAME ("a.b.*" for a subtree), then a WORLD POLICY_ACCESS (SEE / TALK / OWN) or a
 * POLICY_RULE (CALL / BROADCAST and the rule's text), into @buf (8-aligned, @cap bytes,
 * zeroed by the caller). kdbusd's endpoint and the filtering proxy read the same items.
 * Return: 0 with *ret_size the bytes used, or -E2BIG.
 */
int proxy_bus_args_policy_items(const ProxyBusArgs *b, uint8_t *buf, size_t cap,
                                size_t *ret_size);

/* Is @rule of the form [METHOD][@PATH] (see above)? */
bool proxy_rule_is_valid(const char *rule);
