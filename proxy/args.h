/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusd's command line, parsed as dbus-daemon 1.14 parses its own (proxy/args.c): launchers
 * (dbus-run-session, dbus-launch, at-spi-bus-launcher, init scripts) start kdbusd exactly as
 * they start dbus-daemon.
 */
#include <stdbool.h>
#include <stdint.h>
#include "bridge/bloom.h"
#include "proxy/log.h"

typedef enum ArgsConfig {
        ARGS_CONFIG_NONE,
        ARGS_CONFIG_SESSION,
        ARGS_CONFIG_SYSTEM,
        ARGS_CONFIG_FILE,
} ArgsConfig;

/* --kdbusfs given more often than this is refused */
#define ARGS_MAX_KDBUSFS 8u

typedef struct Args {
        ArgsConfig config;
        const char *config_file;
        const char *address;
        const char *native_address;     /* --native: kdbus ABI socket */
        const char *kdbusfs[ARGS_MAX_KDBUSFS];  /* --kdbusfs=DIR, each a domain */
        unsigned n_kdbusfs;
        unsigned attach_rule;           /* --native-attach-rule: BUS_ATTACH_* */
        uint64_t attach_flags_req;      /* --native-attach-required */
        BloomParams bloom;              /* --native-bloom; size 0: the default */
        bool endpoints_privileged_only; /* --native-endpoint-makers=privileged */
        int print_address_fd;           /* -1: do not print */
        int print_pid_fd;
        int fork;                       /* -1: as the configuration says */
        bool nopidfile;
        bool systemd_activation;
        bool log_target_set;
        ProxyLogTarget log_target;
} Args;

#define ARGS_NULL(a) { .print_address_fd = -1, .print_pid_fd = -1, .fork = -1, \
                    .log_target = PROXY_LOG_STDERR }

/*
 * Parse @argv into @a (initialised with ARGS_NULL). Return: 0 run; 1 exit successfully
 * (--help, --version, --introspect printed); -EINVAL exit with failure (said on stderr).
 */
int args_parse(int argc, char **argv, Args *a);
