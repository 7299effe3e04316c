/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-config-check: load a dbus-daemon configuration file the way kdbusd will and print
 * either its canonical dump or the diagnostics, each as "file:line: message". Meant for users
 * migrating from dbus-daemon and for comparing two configurations (equal dumps mean equal
 * configurations as far as the parser is concerned).
 *
 * Exit status: 0 valid, 1 invalid, 2 usage or system error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "policy-xml/config.h"
#include "policy-xml/loader.h"

static void print_diag(void *userdata, ConfigDiagLevel level, const char *file, unsigned line,
                       const char *message) {
        const char *prefix = level == CONFIG_DIAG_WARNING ? "warning: " : "";

        /* line 0: about the file as a whole (cannot open it, too large) */
        if (line)
                fprintf(stderr, "%s:%u: %s%s\n", file, line, prefix, message);
        else
                fprintf(stderr, "%s: %s%s\n", file, prefix, message);
}

static void usage(FILE *f) {
        fputs("Usage: kdbus-config-check [--locations] [--quiet] [--no-includes] FILE\n"
              "Load a dbus-daemon busconfig FILE (with its includes) and print it canonically,\n"
              "or print the errors as file:line: message.\n", f);
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "locations", no_argument, NULL, 'l' },
                { "quiet", no_argument, NULL, 'q' },
                { "no-includes", no_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        ConfigLoadOptions options = { .diag = print_diag };
        unsigned dump_flags = 0;
        bool quiet = false;
        Config *config = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "lqnh", opts, NULL)) >= 0) {
                switch (c) {
                case 'l':
                        dump_flags |= CONFIG_DUMP_LOCATIONS;
                        break;
                case 'q':
                        quiet = true;
                        break;
                case 'n':
                        options.flags |= CONFIG_LOAD_NO_INCLUDES;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind != argc - 1) {
                usage(stderr);
                return 2;
        }

        r = config_load_file(argv[optind], &options, &config);
        if (r == CONFIG_E_INVALID)
                return 1;
        if (r) {
                fprintf(stderr, "%s: %s\n", argv[optind], strerror(r < 0 ? -r : EINVAL));
                return 2;
        }
        if (!quiet)
                r = config_dump_to_file(config, dump_flags, stdout);
        config_free(config);
        return r < 0 ? 2 : 0;
}
