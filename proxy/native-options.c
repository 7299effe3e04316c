/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Options of kdbusd about native peers' metadata and bloom filters. See native-options.h
 * and docs/native.md (Metadata, Bloom filters).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge/bus.h"
#include "kdbus/kdbus.h"
#include "proxy/native-options.h"

static const char *const attach_names[] = {
        "timestamp", "creds", "pids", "auxgroups", "names", "tid-comm", "pid-comm", "exe",
        "cmdline", "cgroup", "caps", "seclabel", "audit", "conn-description",
};

int native_option_attach_rule(const char *value, unsigned *ret) {
        if (strcmp(value, "opt-in") == 0)
                *ret = BUS_ATTACH_OPT_IN;
        else if (strcmp(value, "kdbus") == 0)
                *ret = BUS_ATTACH_KDBUS;
        else {
                fprintf(stderr, "kdbusd: --native-attach-rule=%s: say opt-in (the receiver's "
                        "mask and the sender's consent, the default) or kdbus (kdbus's final "
                        "rule)\n", value);
                return -EINVAL;
        }
        return 0;
}

int native_option_endpoint_makers(const char *value, bool *ret) {
        if (strcmp(value, "anyone") == 0)
                *ret = false;
        else if (strcmp(value, "privileged") == 0)
                *ret = true;
        else {
                fprintf(stderr, "kdbusd: --native-endpoint-makers=%s: say anyone (any user "
                        "may make an endpoint onto the bus, the default) or privileged "
                        "(kdbus's rule: the bus's owner and CAP_IPC_OWNER)\n", value);
                return -EINVAL;
        }
        return 0;
}

int native_option_attach_flags(const char *value, uint64_t *ret) {
        const char *p = value;
        uint64_t flags = 0;

        if (strcmp(value, "none") == 0) {
                *ret = 0;
                return 0;
        }
        while (*p) {
                size_t len = strcspn(p, ",");
                unsigned i;

                for (i = 0; i < sizeof(attach_names) / sizeof(attach_names[0]); ++i)
                        if (strlen(attach_names[i]) == len && strncmp(p, attach_names[i], len) == 0)
                                break;
                if (i == sizeof(attach_names) / sizeof(attach_names[0])) {
                        fprintf(stderr, "kdbusd: --native-attach-required=%s: unknown metadata "
                                "\"%.*s\"; known: none, or a comma-separated list of", value,
                                (int)len, p);
                        for (i = 0; i < sizeof(attach_names) / sizeof(attach_names[0]); ++i)
                                fprintf(stderr, " %s", attach_names[i]);
                        fputc('\n', stderr);
                        return -EINVAL;
                }
                flags |= 1ULL << i;
                p += len;
                if (*p == ',')
                        ++p;
        }
        *ret = flags;
        return 0;
}

/*
 * "21 26 0:20 / /proc rw,relatime - proc proc rw,hidepid=2": the super options of the
 * mount at /proc; hidepid=0 (or "off", or none given) means every user may read the
 * comm, cmdline, status and cgroup of every process. Unreadable: not public (the kdbus
 * rule then grants /proc items only where the receiver could ptrace the sender).
 */
void native_options_probe_proc(Bus *bus) {
        char *line = NULL;
        size_t n = 0;
        FILE *f = fopen("/proc/self/mountinfo", "re");

        bus->proc_public = false;
        if (!f)
                return;
        while (getline(&line, &n, f) > 0) {
                char mnt[256], *dash, *opts;

                if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 || strcmp(mnt, "/proc"))
                        continue;
                dash = strstr(line, " - ");
                opts = dash ? strrchr(dash, ' ') : NULL;
                if (!opts)
                        continue;
                opts = strstr(opts, "hidepid=");
                bus->proc_public = !opts || strncmp(opts + 8, "0", 1) == 0 ||
                                   strncmp(opts + 8, "off", 3) == 0;
        }
        free(line);
        (void) fclose(f);
}

int native_option_bloom(const char *value, BloomParams *ret) {
        unsigned long long size, n_hash;
        char tail;

        if (sscanf(value, "%llu,%llu%c", &size, &n_hash, &tail) != 2 ||
            !bloom_params_are_valid(size, n_hash) || value[0] == '-' ||
            strchr(value, ',')[1] == '-') {
                fprintf(stderr, "kdbusd: --native-bloom=%s: say SIZE,N_HASH: SIZE in bytes from "
                        "%u to %u and a multiple of 8, N_HASH at least 1 (kdbus's bounds; "
                        "default %u,%u)\n", value, BLOOM_MIN_SIZE, BLOOM_MAX_SIZE,
                        BUS_BLOOM_SIZE, BUS_BLOOM_N_HASH);
                return -EINVAL;
        }
        ret->size = size;
        ret->n_hash = n_hash;
        return 0;
}

void native_options_apply(Bus *bus, unsigned attach_rule, uint64_t attach_flags_req,
                          const BloomParams *bloom, bool endpoints_privileged_only) {
        if (bloom)
                bus->bloom = *bloom;
        bus->endpoints_privileged_only = endpoints_privileged_only;
        bus->attach_rule = attach_rule;
        bus->attach_flags_req = attach_flags_req;
        native_options_probe_proc(bus);
}
