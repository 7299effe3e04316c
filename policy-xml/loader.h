/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Loader: dbus-daemon busconfig XML (expat) -> Config tree (stage 1 of 3, policy-xml/README.md).
 * Accepts and rejects what dbus-daemon 1.14 accepts and rejects (tested against it); every
 * rejection is one CONFIG_DIAG_ERROR diagnostic "file:line: message" and CONFIG_E_INVALID.
 * Includes are expanded in place, relative to the including file's directory, with a depth
 * cap and cycle detection. No logging, no printing: diagnostics go to the callback only.
 */
#include <stddef.h>
#include "policy-xml/config.h"

#define CONFIG_INCLUDE_DEPTH_MAX 16u

enum {
        CONFIG_LOAD_NO_INCLUDES = 1u << 0,      /* <include>/<includedir> are parsed and
                                                 * checked but not followed (fuzzing) */
};

/**
 * struct ConfigLoadOptions - how to load
 * @flags:      CONFIG_LOAD_*
 * @diag:       receives diagnostics; NULL drops them
 * @userdata:   passed to @diag
 */
typedef struct ConfigLoadOptions {
        unsigned flags;
        ConfigDiagFn diag;
        void *userdata;
} ConfigLoadOptions;

int config_load_file(const char *path, const ConfigLoadOptions *options, Config **ret_config);
int config_load_memory(const char *name, const char *base_dir, const void *data, size_t size,
                       const ConfigLoadOptions *options, Config **ret_config);
