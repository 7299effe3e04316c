/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusctl endpoint: make a custom endpoint on a kdbusd (docs/native.md, "Custom
 * endpoints"), print its addresses and hold it until told to stop: the endpoint lives as
 * long as the handle that made it, i.e. this process. The way to give a sandbox a filtered
 * view of the bus without a proxy process in the message path:
 *
 *   kdbusctl endpoint --native=/run/kdbus/bus --talk=org.example.App --see='org.example.*' app1 &
 *   DBUS_SESSION_BUS_ADDRESS=$(first line of its output) sandboxed-program
 *
 * Output, one line each, then nothing until it ends: the legacy address
 * (unix:path=DIR/<uid>-NAME.dbus1), the native socket path (DIR/<uid>-NAME). It ends (and
 * the endpoint with it) on SIGINT, SIGTERM, SIGHUP, when stdin reaches EOF (with --stdin),
 * or when the bus goes away.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "libkdbus/libkdbus.h"
#include "tools/kdbusctl.h"

#define ENDPOINT_MAX_RULES 64u

typedef struct Rule {
        const char *name;
        uint64_t access;
} Rule;

static void endpoint_help(void) {
        fputs("Usage: kdbusctl endpoint --native=PATH [--see=NAME] [--talk=NAME] [--own=NAME]\n"
              "                         [--group|--world] [--stdin] NAME\n"
              "Make the custom endpoint <uid>-NAME on the kdbusd whose native socket is PATH,\n"
              "print its legacy address and native socket, and hold it until SIGINT/SIGTERM/\n"
              "SIGHUP (or EOF on stdin with --stdin). --see/--talk/--own give everybody on the\n"
              "endpoint that access to NAME (\"a.b.*\": every a.b.X), repeatable; --group /\n"
              "--world make the sockets usable by the group / everybody (default: only you).\n",
              stdout);
}

/* Append one item; Return: the new size, or 0 when @cap is exceeded. */
static size_t put_item(uint8_t *buf, size_t at, size_t cap, uint64_t type, const void *data,
                       size_t len) {
        struct kdbus_item *item = (void *)(buf + at);

        if (at + KDBUS_ITEM_SIZE(len) > cap)
                return 0;
        item->size = KDBUS_ITEM_HEADER_SIZE + len;
        item->type = type;
        memcpy(item->data, data, len);
        return at + KDBUS_ALIGN8(item->size);
}

static int endpoint_update(KdbusConn *c, const Rule *rules, unsigned n) {
        static uint8_t buf[64 * 1024] __attribute__((aligned(8)));
        struct kdbus_cmd *cmd = (void *)buf;
        size_t at = sizeof(*cmd);
        unsigned i;

        memset(buf, 0, sizeof(buf));
        for (i = 0; i < n; ++i) {
                struct kdbus_policy_access a = { .type = KDBUS_POLICY_ACCESS_WORLD,
                                                 .access = rules[i].access };

                at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_NAME, rules[i].name,
                              strlen(rules[i].name) + 1);
                if (at)
                        at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_POLICY_ACCESS, &a,
                                      sizeof(a));
                if (!at)
                        return -E2BIG;
        }
        cmd->size = at;
        return kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_UPDATE, cmd, at, NULL, 0);
}

/**
 * ctl_cmd_endpoint() - kdbusctl endpoint
 * @o:          global options (unused: the endpoint is made on the native socket)
 * @argc:       arguments from the command name on
 * @argv:       them
 *
 * Return: CTL_EXIT_OK, CTL_EXIT_USAGE, CTL_EXIT_CONNECT (no bus at PATH), CTL_EXIT_FAILED
 * (the bus refused the endpoint or its policy).
 */
/* The name kdbusd knows an endpoint by: "<uid>-NAME", NAME as given if it has the prefix. */
static void endpoint_full_name(const char *name, char *buf, size_t size) {
        char prefix[24];

        (void) snprintf(prefix, sizeof(prefix), "%u-", (unsigned)geteuid());
        (void) snprintf(buf, size, "%s%s", strncmp(name, prefix, strlen(prefix)) ? prefix : "",
                        name);
}

/*
 * kdbusctl endpoint update --native=PATH [--see|--talk|--own=NAME]... [--call|--broadcast=
 * NAME=RULE]... [--user=UID:LEVEL:NAME]... [--group=GID:LEVEL:NAME]... [--xdg]
 * [--sloppy-names] NAME: replace the whole policy of endpoint NAME
 * (ours, or anybody's for root) while it runs. --call, --broadcast and --sloppy-names
 * imply --xdg: xdg-dbus-proxy's rule language (kdbus-proxy's endpoints), where "a.b.*"
 * covers a.b and every name below it; without it, kdbus's.
 */
static int endpoint_cmd_update(int argc, char **argv) {
        enum { ARG_NATIVE = 0x100, ARG_SEE, ARG_TALK, ARG_OWN, ARG_CALL, ARG_BROADCAST, ARG_XDG,
               ARG_SLOPPY, ARG_USER, ARG_GROUP };
        static const struct option options[] = {
                { "native", required_argument, NULL, ARG_NATIVE },
                { "see", required_argument, NULL, ARG_SEE },
                { "talk", required_argument, NULL, ARG_TALK },
                { "own", required_argument, NULL, ARG_OWN },
                { "call", required_argument, NULL, ARG_CALL },
                { "broadcast", required_argument, NULL, ARG_BROADCAST },
                { "xdg", no_argument, NULL, ARG_XDG },
                { "sloppy-names", no_argument, NULL, ARG_SLOPPY },
                { "user", required_argument, NULL, ARG_USER },
                { "group", required_argument, NULL, ARG_GROUP },
                {}
        };
        static uint8_t buf[64 * 1024] __attribute__((aligned(8)));
        struct kdbus_cmd *cmd = (void *)buf;
        const char *native = NULL;
        char name[128], nm[256];
        KdbusConn *c = NULL;
        size_t at = sizeof(*cmd);
        int opt, r;

        memset(buf, 0, sizeof(buf));
        optind = 1;
        while ((opt = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                const char *eq;
                uint64_t type;

                switch (opt) {
                case ARG_NATIVE:
                        native = optarg;
                        break;
                case ARG_SEE:
                case ARG_TALK:
                case ARG_OWN: {
                        struct kdbus_policy_access a = {
                                .type = KDBUS_POLICY_ACCESS_WORLD,
                                .access = opt == ARG_SEE ? KDBUS_POLICY_SEE :
                                          opt == ARG_TALK ? KDBUS_POLICY_TALK : KDBUS_POLICY_OWN,
                        };

                        at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_NAME, optarg,
                                      strlen(optarg) + 1);
                        if (at)
                                at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_POLICY_ACCESS, &a,
                                              sizeof(a));
                        break;
                }
                case ARG_CALL:
                case ARG_BROADCAST:
                        eq = strchr(optarg, '=');
                        if (!eq || (size_t)(eq - optarg) >= sizeof(nm)) {
                                fprintf(stderr, "kdbusctl endpoint update: \"%s\" is not "
                                        "NAME=RULE\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        (void) snprintf(nm, sizeof(nm), "%.*s", (int)(eq - optarg), optarg);
                        at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_NAME, nm, strlen(nm) + 1);
                        type = opt == ARG_CALL ? KDBUS_POLICY_RULE_CALL :
                                                 KDBUS_POLICY_RULE_BROADCAST;
                        if (at && at + KDBUS_ITEM_SIZE(sizeof(type) + strlen(eq)) <= sizeof(buf)) {
                                struct kdbus_item *item = (void *)(buf + at);

                                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(type) + strlen(eq);
                                item->type = KDBUS_ITEM_POLICY_RULE;
                                memcpy(item->data, &type, sizeof(type));
                                memcpy(item->data + sizeof(type), eq + 1, strlen(eq));
                                at += KDBUS_ALIGN8(item->size);
                        } else {
                                at = 0;
                        }
                        cmd->flags |= KDBUS_ENDPOINT_POLICY_XDG;
                        break;
                case ARG_USER:
                case ARG_GROUP: {
                        /* --user=UID:LEVEL:NAME, --group=GID:LEVEL:NAME: kdbus's per-user
                         * and per-group entries */
                        static const char *const levels[] = { "see", "talk", "own" };
                        struct kdbus_policy_access a = {
                                .type = opt == ARG_USER ? KDBUS_POLICY_ACCESS_USER :
                                                          KDBUS_POLICY_ACCESS_GROUP,
                        };
                        char level[8];
                        unsigned long id;
                        int pos = 0;
                        unsigned k;

                        if (sscanf(optarg, "%lu:%7[a-z]:%n", &id, level, &pos) != 2 || !pos ||
                            !optarg[pos]) {
                                fprintf(stderr, "kdbusctl endpoint update: \"%s\" is not "
                                        "ID:see|talk|own:NAME\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        for (k = 0; k < ELEMENTSOF(levels) && strcmp(levels[k], level); ++k)
                                ;
                        if (k == ELEMENTSOF(levels)) {
                                fprintf(stderr, "kdbusctl endpoint update: \"%s\": the level "
                                        "is see, talk or own\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        a.id = id;
                        a.access = KDBUS_POLICY_SEE + k;
                        at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_NAME, optarg + pos,
                                      strlen(optarg + pos) + 1);
                        if (at)
                                at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_POLICY_ACCESS, &a,
                                              sizeof(a));
                        break;
                }
                case ARG_XDG:
                        cmd->flags |= KDBUS_ENDPOINT_POLICY_XDG;
                        break;
                case ARG_SLOPPY:
                        cmd->flags |= KDBUS_ENDPOINT_POLICY_XDG | KDBUS_ENDPOINT_SLOPPY_NAMES;
                        break;
                default:
                        return CTL_EXIT_USAGE;
                }
                if (!at) {
                        fprintf(stderr, "kdbusctl endpoint update: too many rules\n");
                        return CTL_EXIT_USAGE;
                }
        }
        if (!native || optind != argc - 1) {
                fprintf(stderr, "kdbusctl endpoint update: needs --native=PATH and one NAME\n");
                return CTL_EXIT_USAGE;
        }
        endpoint_full_name(argv[optind], name, sizeof(name));
        at = put_item(buf, at, sizeof(buf), KDBUS_ITEM_MAKE_NAME, name, strlen(name) + 1);
        if (!at) {
                fprintf(stderr, "kdbusctl endpoint update: too many rules\n");
                return CTL_EXIT_USAGE;
        }
        cmd->size = at;
        r = kdbus_conn_open(native, &c);
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint update: cannot connect to %s: %s\n", native,
                        strerror(-r));
                return CTL_EXIT_CONNECT;
        }
        r = kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_UPDATE, cmd, at, NULL, 0);
        kdbus_conn_close(c);
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint update: \"%s\" on %s: %s%s\n", name, native,
                        strerror(-r), r == -ENXIO ? " (no such endpoint)" :
                        r == -EPERM ? " (another user's endpoint)" :
                        r == -EINVAL ? " (a bad name or rule)" : "");
                return CTL_EXIT_FAILED;
        }
        return CTL_EXIT_OK;
}

/* kdbusctl endpoint list --native=PATH: our endpoints (everybody's for root), their rules. */
static int endpoint_cmd_list(int argc, char **argv) {
        static uint8_t buf[256 * 1024] __attribute__((aligned(8)));
        static const char *const levels[] = { "see", "talk", "own", "?" };      /* kdbus: SEE 0 */
        struct kdbus_cmd *cmd = (void *)buf;
        const struct kdbus_item *item;
        const char *native = NULL, *name = "";
        KdbusConn *c = NULL;
        int i, r;

        for (i = 1; i < argc; ++i)
                if (!strncmp(argv[i], "--native=", 9))
                        native = argv[i] + 9;
        if (!native || argc != 2) {
                fprintf(stderr, "kdbusctl endpoint list: needs --native=PATH\n");
                return CTL_EXIT_USAGE;
        }
        r = kdbus_conn_open(native, &c);
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint list: cannot connect to %s: %s\n", native,
                        strerror(-r));
                return CTL_EXIT_CONNECT;
        }
        memset(buf, 0, sizeof(*cmd));
        cmd->size = sizeof(*cmd);
        r = kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_LIST, cmd, sizeof(buf), NULL, 0);
        kdbus_conn_close(c);
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint list: %s: %s\n", native, strerror(-r));
                return CTL_EXIT_FAILED;
        }
        for (item = cmd->items; (const uint8_t *)item < buf + cmd->size;
             item = KDBUS_ITEM_NEXT(item)) {
                const struct kdbus_endpoint_info *info = (const void *)item->data;
                const struct kdbus_policy_rule *rule = (const void *)item->data;

                switch (item->type) {
                case KDBUS_ITEM_MAKE_NAME:
                        printf("%s", item->str);
                        break;
                case KDBUS_ITEM_ENDPOINT_INFO:
                        printf(" uid=%" PRIu64 " connections=%" PRIu64 "%s%s%s\n", info->uid,
                               info->n_conns,
                               info->flags & KDBUS_ENDPOINT_POLICY_XDG ? " xdg" : "",
                               info->flags & KDBUS_ENDPOINT_SLOPPY_NAMES ? " sloppy-names" : "",
                               info->flags & KDBUS_ENDPOINT_UNFILTERED ? " unfiltered" : "");
                        break;
                case KDBUS_ITEM_NAME:
                        name = item->str;
                        break;
                case KDBUS_ITEM_POLICY_ACCESS:
                        printf("  %s %s", levels[item->policy_access.access & 3], name);
                        if (item->policy_access.type == KDBUS_POLICY_ACCESS_USER)
                                printf(" user %" PRIu64, item->policy_access.id);
                        else if (item->policy_access.type == KDBUS_POLICY_ACCESS_GROUP)
                                printf(" group %" PRIu64, item->policy_access.id);
                        printf("\n");
                        break;
                case KDBUS_ITEM_POLICY_RULE:
                        printf("  %s %s=%s\n", rule->type == KDBUS_POLICY_RULE_CALL ? "call" :
                               "broadcast", name, rule->rule);
                        break;
                }
        }
        return CTL_EXIT_OK;
}

int ctl_cmd_endpoint(const CtlOptions *o, int argc, char **argv) {
        enum { ARG_NATIVE = 0x100, ARG_SEE, ARG_TALK, ARG_OWN, ARG_GROUP, ARG_WORLD, ARG_STDIN };
        static const struct option options[] = {
                { "native", required_argument, NULL, ARG_NATIVE },
                { "see", required_argument, NULL, ARG_SEE },
                { "talk", required_argument, NULL, ARG_TALK },
                { "own", required_argument, NULL, ARG_OWN },
                { "group", no_argument, NULL, ARG_GROUP },
                { "world", no_argument, NULL, ARG_WORLD },
                { "stdin", no_argument, NULL, ARG_STDIN },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        Rule rules[ENDPOINT_MAX_RULES];
        const char *native = NULL, *slash;
        char name[128], path[4096];
        bool use_stdin = false;
        KdbusConn *c = NULL;
        unsigned n = 0;
        uint64_t flags = 0;
        size_t at;
        int opt, r, sfd;

        if (argc > 1 && !strcmp(argv[1], "update"))
                return endpoint_cmd_update(argc - 1, argv + 1);
        if (argc > 1 && !strcmp(argv[1], "list"))
                return endpoint_cmd_list(argc - 1, argv + 1);
        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (opt) {
                case ARG_NATIVE:
                        native = optarg;
                        break;
                case ARG_SEE:
                case ARG_TALK:
                case ARG_OWN:
                        if (n == ENDPOINT_MAX_RULES) {
                                fprintf(stderr, "kdbusctl endpoint: more than %u names\n",
                                        ENDPOINT_MAX_RULES);
                                return CTL_EXIT_USAGE;
                        }
                        rules[n].name = optarg;
                        rules[n++].access = opt == ARG_SEE ? KDBUS_POLICY_SEE :
                                            opt == ARG_TALK ? KDBUS_POLICY_TALK : KDBUS_POLICY_OWN;
                        break;
                case ARG_GROUP:
                        flags |= KDBUS_MAKE_ACCESS_GROUP;
                        break;
                case ARG_WORLD:
                        flags |= KDBUS_MAKE_ACCESS_WORLD;
                        break;
                case ARG_STDIN:
                        use_stdin = true;
                        break;
                case 'h':
                        endpoint_help();
                        return CTL_EXIT_OK;
                default:
                        return CTL_EXIT_USAGE;
                }
        }
        if (!native || optind != argc - 1) {
                fprintf(stderr, "kdbusctl endpoint: needs --native=PATH and one NAME; see "
                        "kdbusctl endpoint --help\n");
                return CTL_EXIT_USAGE;
        }
        (void) snprintf(name, sizeof(name), "%u-%s", (unsigned)geteuid(), argv[optind]);

        /* the signals that end us, taken before the endpoint exists */
        sfd = ctl_hold_signals("endpoint");
        if (sfd < 0)
                return CTL_EXIT_FAILED;

        r = kdbus_conn_open(native, &c);
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint: cannot connect to %s: %s\n", native,
                        strerror(-r));
                (void) close(sfd);
                return CTL_EXIT_CONNECT;
        }
        cmd->flags = flags;
        at = put_item(buf, sizeof(*cmd), sizeof(buf), KDBUS_ITEM_MAKE_NAME, name,
                      strlen(name) + 1);
        cmd->size = at;
        r = at ? kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_MAKE, cmd, at, NULL, 0) : -EINVAL;
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint: ENDPOINT_MAKE \"%s\" on %s: %s%s\n", name,
                        native, strerror(-r),
                        r == -EPERM ? " (not from inside an endpoint)" :
                        r == -EMFILE ? " (your user holds as many endpoints as it may)" :
                        r == -EEXIST ? " (an endpoint or socket of that name exists)" :
                        r == -EINVAL ? " (names: letters, digits, '-', '_', '.')" : "");
                goto out;
        }
        r = endpoint_update(c, rules, n);
        if (r < 0) {
                fprintf(stderr, "kdbusctl endpoint: ENDPOINT_UPDATE of \"%s\": %s%s\n", name,
                        strerror(-r), r == -EINVAL ? " (a bad name in --see/--talk/--own?)" :
                        r == -EEXIST ? " (a name given twice)" : "");
                goto out;
        }
        slash = strrchr(native, '/');
        (void) snprintf(path, sizeof(path), "%.*s%s", slash ? (int)(slash - native + 1) : 0,
                        native, name);
        printf("unix:path=%s.dbus1\n%s\n", path, path);
        fflush(stdout);
        if (!o->quiet)
                fprintf(stderr, "kdbusctl endpoint: \"%s\" is up (%u names); it goes when this "
                        "process ends\n", name, n);

        ctl_hold_until_done(sfd, c->fd, use_stdin);
        r = 0;
out:
        kdbus_conn_close(c);
        (void) close(sfd);
        return r < 0 ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}
