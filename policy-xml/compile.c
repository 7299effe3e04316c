/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compiler: Config tree -> PolicyDb (see policy-xml/compile.h).
 *
 * STATUS: API only; policy_compile() returns -EOPNOTSUPP until the implementation lands.
 */
#include <errno.h>
#include "bridge/policy.h"
#include "policy-xml/compile.h"
#include "util/error.h"

int policy_compile(const Config *config, const PolicyCompileOptions *options,
                   PolicyDb **ret_db) {
        return error_origin(-EOPNOTSUPP);
}

bool policy_resolve_nss(void *userdata, bool group, const char *name, uint32_t *ret_id) {
        return false;
}
