/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: policy-xml loader and dump. The input is one busconfig document, loaded from
 * memory with includes disabled (CONFIG_LOAD_NO_INCLUDES: they are parsed and checked, never
 * followed, so the fuzzer cannot read the file system). Checks, beyond "no crash, no leak":
 * the result is 0 or CONFIG_E_INVALID (never negative except -ENOMEM), an invalid input gives
 * exactly one error diagnostic and a valid one none, every diagnostic and node has a file and
 * a line, and the dump is deterministic.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "policy-xml/config.h"
#include "policy-xml/loader.h"

typedef struct Counts {
        unsigned errors;
        unsigned warnings;
} Counts;

static void count_diag(void *userdata, ConfigDiagLevel level, const char *file, unsigned line,
                       const char *message) {
        Counts *c = userdata;

        assert(file && !strcmp(file, "fuzz.conf"));
        assert(message && message[0]);
        if (level == CONFIG_DIAG_ERROR)
                ++c->errors;
        else
                ++c->warnings;
}

static void check_loc(ConfigLoc loc) {
        assert(loc.file && !strcmp(loc.file, "fuzz.conf"));
        assert(loc.line > 0);
}

static void check_tree(const Config *config) {
        size_t i, j;

        for (i = 0; i < config->n_listen; ++i)
                check_loc(config->listen[i].loc);
        for (i = 0; i < config->n_servicedirs; ++i)
                check_loc(config->servicedirs[i].loc);
        for (i = 0; i < config->n_policies; ++i) {
                const ConfigPolicy *p = &config->policies[i];

                check_loc(p->loc);
                assert((p->kind == CONFIG_POLICY_USER || p->kind == CONFIG_POLICY_GROUP) ==
                       (p->name != NULL));
                for (j = 0; j < p->n_rules; ++j) {
                        const ConfigRule *r = &p->rules[j];

                        check_loc(r->loc);
                        assert(r->min_fds <= CONFIG_MAX_FDS_LIMIT);
                        assert(r->max_fds <= CONFIG_MAX_FDS_LIMIT);
                        if (r->kind == CONFIG_RULE_OWN)
                                assert(r->str[CONFIG_ATTR_OWN] || r->str[CONFIG_ATTR_OWN_PREFIX]);
                }
        }
        for (i = 0; i < _CONFIG_LIMIT_N; ++i)
                if (config->limits[i].set)
                        check_loc(config->limits[i].loc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Counts counts = {};
        ConfigLoadOptions options = {
                .flags = CONFIG_LOAD_NO_INCLUDES, .diag = count_diag, .userdata = &counts,
        };
        Config *config = NULL;
        char *a = NULL, *b = NULL;
        int r;

        if (size > 256 * 1024)
                return 0;
        r = config_load_memory("fuzz.conf", "/nonexistent", data, size, &options, &config);
        if (r == -ENOMEM)
                return 0;
        assert(r == 0 || r == CONFIG_E_INVALID);
        if (r) {
                assert(!config);
                assert(counts.errors == 1);
                return 0;
        }
        assert(counts.errors == 0);
        check_tree(config);
        if (config_dump(config, CONFIG_DUMP_LOCATIONS, &a) == 0 &&
            config_dump(config, CONFIG_DUMP_LOCATIONS, &b) == 0)
                assert(!strcmp(a, b));
        free(a);
        free(b);
        config_free(config);
        return 0;
}
