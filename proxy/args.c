/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbusd's command line, read the way dbus-daemon 1.14.10 reads its own (checked by running
 * it; tests/integration/system/cmdline.py compares the two):
 *
 *   - --config-file, --address, --print-address and --print-pid take their value either as
 *     --opt=VALUE or as the next argument (dbus-run-session, dbus-launch and
 *     at-spi-bus-launcher pass `--print-address 4`). The next argument is the value unless
 *     it is an option that dbus-daemon would take first (ArgSpec's ranks):
 *     `--print-address --nofork` prints to stdout.
 *   - --print-address and --print-pid without a value (or with an empty one) print to
 *     stdout; a value that is not a decimal fd number is refused once the whole line is
 *     read. A value given twice, two configurations or two addresses are refused; an empty
 *     --address= or --config-file= counts as not given.
 *   - -h and -? are --help; --version, --help and --introspect act where they stand.
 *   - --version's first line is dbus-daemon's, with the version whose behaviour kdbusd
 *     follows, so that scripts that read it (`dbus-daemon --version | head -n1`) work.
 *
 * getopt_long cannot do this: an optional_argument never takes the next argument, and
 * making it a required_argument would swallow `--print-address --nofork`'s "--nofork".
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compat/driver-internal.h"
#include "compat/driver.h"
#include "proxy/args.h"
#include "proxy/config.h"
#include "proxy/native-options.h"
#include "util/error.h"

#define ARGS_DBUS_DAEMON_VERSION "1.14.10"      /* whose command line and behaviour we follow */

typedef enum ArgId {
        ARG_SESSION,
        ARG_SYSTEM,
        ARG_CONFIG_FILE,
        ARG_ADDRESS,
        ARG_PRINT_ADDRESS,
        ARG_PRINT_PID,
        ARG_NOFORK,
        ARG_FORK,
        ARG_NOPIDFILE,
        ARG_VERSION,
        ARG_HELP,
        ARG_SYSTEMD_ACTIVATION,
        ARG_SYSLOG,
        ARG_SYSLOG_ONLY,
        ARG_NOSYSLOG,
        ARG_INTROSPECT,
        ARG_NATIVE,
        ARG_NATIVE_ATTACH_RULE,
        ARG_NATIVE_ATTACH_REQUIRED,
        ARG_NATIVE_BLOOM,
        ARG_NATIVE_ENDPOINT_MAKERS,
        ARG_KDBUSFS,
} ArgId;

typedef enum ArgKind {
        ARG_KIND_FLAG,          /* --opt only */
        ARG_KIND_VALUE,         /* --opt=VALUE or --opt VALUE */
        ARG_KIND_FD,            /* as VALUE, and the value may be left out (stdout) */
} ArgKind;

/*
 * Which of two readings wins when an option that takes a value is followed by an argument
 * that is an option too: dbus-daemon tries its options in one fixed order, and the pending
 * option's "this is my value" test sits at one place in that order. So the argument is the
 * value when it is no option, or an option (in its bare or its --opt= form) that comes
 * after that test: `--print-address --print-pid 5` makes "--print-pid" the address's
 * descriptor (refused), `--print-pid --print-address` prints both to stdout. The flags come
 * before everything; our own options (--native*) take no option as their value.
 */
typedef struct ArgSpec {
        const char *name;
        ArgId id;
        ArgKind kind;
        unsigned rank;          /* where --opt stands in that order */
        unsigned rank_eq;       /* where --opt=VALUE stands */
        unsigned rank_value;    /* where "the argument after --opt is its value" stands */
} ArgSpec;

#define ARG_RANK_OURS 14u       /* after every option: our options take none as value */

static const ArgSpec arg_specs[] = {
        { "--session", ARG_SESSION, ARG_KIND_FLAG, 0, 0, 0 },
        { "--system", ARG_SYSTEM, ARG_KIND_FLAG, 0, 0, 0 },
        { "--config-file", ARG_CONFIG_FILE, ARG_KIND_VALUE, 4, 2, 3 },
        { "--address", ARG_ADDRESS, ARG_KIND_VALUE, 7, 5, 6 },
        { "--print-address", ARG_PRINT_ADDRESS, ARG_KIND_FD, 10, 8, 9 },
        { "--print-pid", ARG_PRINT_PID, ARG_KIND_FD, 13, 11, 12 },
        { "--nofork", ARG_NOFORK, ARG_KIND_FLAG, 0, 0, 0 },
        { "--fork", ARG_FORK, ARG_KIND_FLAG, 0, 0, 0 },
        { "--nopidfile", ARG_NOPIDFILE, ARG_KIND_FLAG, 0, 0, 0 },
        { "--version", ARG_VERSION, ARG_KIND_FLAG, 0, 0, 0 },
        { "--help", ARG_HELP, ARG_KIND_FLAG, 0, 0, 0 },
        { "-h", ARG_HELP, ARG_KIND_FLAG, 0, 0, 0 },
        { "-?", ARG_HELP, ARG_KIND_FLAG, 0, 0, 0 },
        { "--systemd-activation", ARG_SYSTEMD_ACTIVATION, ARG_KIND_FLAG, 0, 0, 0 },
        { "--syslog", ARG_SYSLOG, ARG_KIND_FLAG, 0, 0, 0 },
        { "--syslog-only", ARG_SYSLOG_ONLY, ARG_KIND_FLAG, 0, 0, 0 },
        { "--nosyslog", ARG_NOSYSLOG, ARG_KIND_FLAG, 0, 0, 0 },
        { "--introspect", ARG_INTROSPECT, ARG_KIND_FLAG, 0, 0, 0 },
        { "--native", ARG_NATIVE, ARG_KIND_VALUE, 0, 0, ARG_RANK_OURS },
        { "--native-attach-rule", ARG_NATIVE_ATTACH_RULE, ARG_KIND_VALUE, 0, 0,
          ARG_RANK_OURS },
        { "--native-attach-required", ARG_NATIVE_ATTACH_REQUIRED, ARG_KIND_VALUE, 0, 0,
          ARG_RANK_OURS },
        { "--native-bloom", ARG_NATIVE_BLOOM, ARG_KIND_VALUE, 0, 0, ARG_RANK_OURS },
        { "--native-endpoint-makers", ARG_NATIVE_ENDPOINT_MAKERS, ARG_KIND_VALUE, 0, 0,
          ARG_RANK_OURS },
        { "--kdbusfs", ARG_KDBUSFS, ARG_KIND_VALUE, 0, 0, ARG_RANK_OURS },
};

/* What the loop keeps until the whole line is read. */
typedef struct ArgsState {
        bool print_address;
        bool print_pid;
        const char *address_fd;         /* the value given, NULL: none (stdout) */
        const char *pid_fd;
} ArgsState;

static void help(void) {
        printf("kdbusd [--version] [--session] [--system] [--config-file=FILE]\n"
               "       [--print-address[=DESCRIPTOR]] [--print-pid[=DESCRIPTOR]]\n"
               "       [--address=ADDRESS] [--nopidfile] [--nosyslog] [--syslog]\n"
               "       [--syslog-only] [--nofork] [--fork] [--systemd-activation]\n\n"
               "A D-Bus message bus with kdbus semantics; the command line is dbus-daemon's\n"
               "(an option's value may also be the next argument: --print-address 4).\n"
               "  --session             the session bus: " PROXY_CONFIG_SESSION_PATH "\n"
               "                        (with its includes); when that file is absent, a\n"
               "                        built-in equivalent (unix:tmpdir=/tmp, EXTERNAL,\n"
               "                        allow everything, session limits)\n"
               "  --system              the system bus: " PROXY_CONFIG_SYSTEM_PATH "\n"
               "  --config-file=FILE    any dbus-daemon configuration file; SIGHUP or\n"
               "                        org.freedesktop.DBus.ReloadConfig reload it (policy,\n"
               "                        limits); after binding its sockets and writing its\n"
               "                        pid file the bus becomes the configuration's <user>\n"
               "  --address=ADDRESS     listen on ADDRESS (';'-separated list of unix:path=,\n"
               "                        unix:abstract=, unix:dir=, unix:tmpdir=,\n"
               "                        unix:runtime=yes, systemd:)\n"
               "  --print-address[=FD]  print the first listening address (with guid) to FD\n"
               "                        (default stdout), then close FD\n"
               "  --print-pid[=FD]      print the pid to FD (default stdout), then close FD\n"
               "  --fork / --nofork     daemonize after listening / stay in the foreground\n"
               "                        (default: <fork/> in the configuration)\n"
               "  --nopidfile           do not write the configuration's <pidfile>\n"
               "  --systemd-activation  start services with a SystemdService= key through\n"
               "                        systemd (org.freedesktop.systemd1.Activator); sockets\n"
               "                        passed in LISTEN_FDS are used when no --address is given\n"
               "  --syslog / --syslog-only / --nosyslog\n"
               "                        log to the journal (syslog when there is no journal)\n"
               "                        and stderr / the journal only / stderr only\n"
               "  --introspect          print the bus driver's introspection XML and exit\n"
               "  --native=unix:path=PATH\n"
               "                        also serve native (kdbus ABI) peers on PATH\n"
               "  --kdbusfs=DIR         serve kdbus's filesystem view in DIR (DIR/control,\n"
               "                        DIR/<uid>-<bus>/bus; each DIR a domain of its own),\n"
               "                        for kdbus programs under libkdbus-preload.so\n"
               "  --native-attach-rule=opt-in|kdbus\n"
               "                        metadata native receivers get of a sender: what they\n"
               "                        ask for and it consents to (opt-in, the default), or\n"
               "                        kdbus's final rule (also the basic credentials and\n"
               "                        what they could read in /proc anyway)\n"
               "  --native-attach-required=LIST\n"
               "                        metadata every native sender must consent to (HELLO\n"
               "                        fails ECONNREFUSED): comma-separated creds, pids, ...\n"
               "  --native-bloom=SIZE,N_HASH\n"
               "                        the bus's bloom filter geometry as kdbus's BUS_MAKE\n"
               "                        takes it (bytes 8..4096, a multiple of 8; N_HASH >= 1;\n"
               "                        default 64,8): native peers get it from HELLO\n"
               "  --native-endpoint-makers=anyone|privileged\n"
               "                        who may make custom endpoints on this bus: any user\n"
               "                        (16 at a time each; the default), or as kdbus only\n"
               "                        the bus's owner (kdbusd's uid) and CAP_IPC_OWNER\n"
               "                        (bus instances made by BUS_MAKE always take kdbus's)\n"
               "  --version, --help (-h, -?)\n");
}

static void version(void) {
        printf("D-Bus Message Bus Daemon " ARGS_DBUS_DAEMON_VERSION "\n"
               "kdbusd (kdbus-compat) " KDBUS_COMPAT_VERSION ": a kdbus-semantics bus that "
               "stands in for dbus-daemon " ARGS_DBUS_DAEMON_VERSION "\n");
}

/* --introspect, as dbus-daemon: what the driver answers to Introspect on its own path. */
static int print_introspection(void) {
        _cleanup_(freep) char *xml = NULL;

        if (driver_introspect_xml("/org/freedesktop/DBus", &xml) < 0) {
                fprintf(stderr, "kdbusd: out of memory\n");
                return error_origin(-ENOMEM);
        }
        /* dbus-daemon ends it with an empty line */
        if (printf("%s\n", xml) < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "kdbusd: cannot write the introspection data: %m\n");
                return error_origin(-EIO);
        }
        return 1;
}

/* The option @arg names, with what follows its '=' in @ret_value (NULL: no '='). */
static const ArgSpec *arg_spec_find(const char *arg, const char **ret_value) {
        for (size_t i = 0; i < sizeof(arg_specs) / sizeof(arg_specs[0]); ++i) {
                const ArgSpec *spec = &arg_specs[i];
                size_t n = strlen(spec->name);

                if (strncmp(arg, spec->name, n) != 0)
                        continue;
                if (arg[n] == '\0') {
                        *ret_value = NULL;
                        return spec;
                }
                if (arg[n] == '=' && spec->kind != ARG_KIND_FLAG) {
                        *ret_value = arg + n + 1;
                        return spec;
                }
        }
        return NULL;
}

/* A descriptor as dbus-daemon takes it (strtol, whole string, 0..INT_MAX). */
static int parse_fd(const char *option, const char *s, int *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 0 || v > INT_MAX) {
                fprintf(stderr, "kdbusd: %s: \"%s\" is not a file descriptor number\n", option,
                        s);
                return -EINVAL;
        }
        *ret = (int)v;
        return 0;
}

static int set_config(Args *a, ArgsConfig config, const char *option, const char *file) {
        if (a->config != ARGS_CONFIG_NONE) {
                fprintf(stderr, "kdbusd: %s given, but the configuration %s was given already: "
                        "use only one of --session, --system and --config-file\n", option,
                        a->config == ARGS_CONFIG_FILE ? a->config_file :
                        a->config == ARGS_CONFIG_SESSION ? "--session" : "--system");
                return -EINVAL;
        }
        a->config = config;
        a->config_file = file;
        return 0;
}

/* A descriptor option's value (NULL or empty: stdout), refused when given twice. */
static int set_fd(const char *option, const char *value, bool *print, const char **fd) {
        *print = true;
        if (!value || !*value)
                return 0;
        if (*fd) {
                fprintf(stderr, "kdbusd: %s %s given, but %s %s was given already\n", option,
                        value, option, *fd);
                return -EINVAL;
        }
        *fd = value;
        return 0;
}

/* Apply one option. Return: 0 go on, 1 exit successfully, -EINVAL exit with failure. */
static int arg_apply(Args *a, ArgsState *st, const ArgSpec *spec, const char *value) {
        switch (spec->id) {
        case ARG_SESSION:
                return set_config(a, ARGS_CONFIG_SESSION, spec->name, NULL);
        case ARG_SYSTEM:
                return set_config(a, ARGS_CONFIG_SYSTEM, spec->name, NULL);
        case ARG_CONFIG_FILE:
                return value && *value ? set_config(a, ARGS_CONFIG_FILE, spec->name, value) : 0;
        case ARG_ADDRESS:
                if (!value || !*value)
                        return 0;
                if (a->address) {
                        fprintf(stderr, "kdbusd: --address %s given, but --address %s was "
                                "given already (one --address may list several, separated "
                                "by ';')\n", value, a->address);
                        return -EINVAL;
                }
                a->address = value;
                return 0;
        case ARG_PRINT_ADDRESS:
                return set_fd(spec->name, value, &st->print_address, &st->address_fd);
        case ARG_PRINT_PID:
                return set_fd(spec->name, value, &st->print_pid, &st->pid_fd);
        case ARG_NOFORK:
                a->fork = 0;
                return 0;
        case ARG_FORK:
                a->fork = 1;
                return 0;
        case ARG_NOPIDFILE:
                a->nopidfile = true;
                return 0;
        case ARG_VERSION:
                version();
                return 1;
        case ARG_HELP:
                help();
                return 1;
        case ARG_SYSTEMD_ACTIVATION:
                a->systemd_activation = true;
                return 0;
        case ARG_SYSLOG:
        case ARG_SYSLOG_ONLY:
        case ARG_NOSYSLOG:
                a->log_target = spec->id == ARG_SYSLOG ? PROXY_LOG_JOURNAL :
                                spec->id == ARG_SYSLOG_ONLY ? PROXY_LOG_JOURNAL_ONLY :
                                PROXY_LOG_STDERR;
                a->log_target_set = true;
                return 0;
        case ARG_INTROSPECT:
                return print_introspection();
        case ARG_NATIVE:
                a->native_address = value;
                return 0;
        case ARG_NATIVE_ATTACH_RULE:
                return native_option_attach_rule(value, &a->attach_rule);
        case ARG_NATIVE_ATTACH_REQUIRED:
                return native_option_attach_flags(value, &a->attach_flags_req);
        case ARG_NATIVE_BLOOM:
                return native_option_bloom(value, &a->bloom);
        case ARG_NATIVE_ENDPOINT_MAKERS:
                return native_option_endpoint_makers(value, &a->endpoints_privileged_only);
        case ARG_KDBUSFS:
                if (a->n_kdbusfs >= ARGS_MAX_KDBUSFS) {
                        fprintf(stderr, "kdbusd: --kdbusfs=%s: at most %u directories\n",
                                value, ARGS_MAX_KDBUSFS);
                        return -EINVAL;
                }
                a->kdbusfs[a->n_kdbusfs++] = value;
                return 0;
        }
        return 0;
}

int args_parse(int argc, char **argv, Args *a) {
        ArgsState st = { .print_address = false };
        const ArgSpec *prev = NULL;     /* the value option the previous argument names */
        int r;

        for (int i = 1; i < argc; ++i) {
                const char *arg = argv[i], *value = NULL;
                const ArgSpec *spec = arg_spec_find(arg, &value);

                /* as dbus-daemon, "previous" is the argument as written, even when it
                 * was taken as a value itself */
                if (prev && (!spec || (value ? spec->rank_eq : spec->rank) > prev->rank_value))
                        r = arg_apply(a, &st, prev, arg);
                else if (!spec) {
                        fprintf(stderr, "kdbusd: unexpected argument \"%s\": try --help\n",
                                arg);
                        return -EINVAL;
                } else if (value || spec->kind != ARG_KIND_VALUE)
                        /* a descriptor option with no value prints to stdout, unless the
                         * next argument is its value */
                        r = arg_apply(a, &st, spec, value);
                else
                        r = 0;  /* its value is the next argument */
                if (r)
                        return r;
                prev = spec && !value && spec->kind != ARG_KIND_FLAG ? spec : NULL;
        }
        if (st.print_address) {
                a->print_address_fd = 1;
                if (st.address_fd && parse_fd("--print-address", st.address_fd,
                                              &a->print_address_fd) < 0)
                        return -EINVAL;
        }
        if (st.print_pid) {
                a->print_pid_fd = 1;
                if (st.pid_fd && parse_fd("--print-pid", st.pid_fd, &a->print_pid_fd) < 0)
                        return -EINVAL;
        }
        if (a->config == ARGS_CONFIG_NONE) {
                fprintf(stderr, "kdbusd: no configuration given: use --session, --system or "
                        "--config-file=FILE\n");
                return -EINVAL;
        }
        return 0;
}
