/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For the corpus test: load each file given (with its includes, as kdbusd would) and compile
 * its policy. One line per file on stdout:
 *   ok FILE CONFIG_RULES COMPILED_RULES     (COMPILED_RULES is "-" if this build has no
 *                                            policy compiler yet)
 *   fail FILE file:line: message
 * Exit status: 0 if every file loaded and compiled, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "bridge/policy.h"
#include "policy-xml/compile.h"
#include "policy-xml/config.h"
#include "policy-xml/loader.h"

typedef struct Diag {
        char first[1024];
} Diag;

static void diag_fn(void *userdata, ConfigDiagLevel level, const char *file, unsigned line,
                    const char *message) {
        Diag *d = userdata;

        if (level == CONFIG_DIAG_WARNING) {
                fprintf(stderr, "%s:%u: warning: %s\n", file, line, message);
                return;
        }
        if (!d->first[0])
                snprintf(d->first, sizeof(d->first), "%s:%u: %s", file, line, message);
}

int main(int argc, char **argv) {
        int failed = 0;

        for (int i = 1; i < argc; ++i) {
                Diag d = { "" };
                ConfigLoadOptions lo = { .diag = diag_fn, .userdata = &d };
                PolicyCompileOptions co = { .diag = diag_fn, .userdata = &d };
                Config *c = NULL;
                PolicyDb *db = NULL;
                size_t n_rules = 0;
                int r;

                r = config_load_file(argv[i], &lo, &c);
                if (r) {
                        printf("fail %s %s\n", argv[i], d.first[0] ? d.first : strerror(-r));
                        failed = 1;
                        continue;
                }
                for (size_t p = 0; p < c->n_policies; ++p)
                        n_rules += c->policies[p].n_rules;
                r = policy_compile(c, &co, &db);
                if (r == -EOPNOTSUPP) {
                        printf("ok %s %zu -\n", argv[i], n_rules);
                } else if (r) {
                        printf("fail %s %s\n", argv[i], d.first[0] ? d.first :
                               r < 0 ? strerror(-r) : "does not compile");
                        failed = 1;
                } else {
                        printf("ok %s %zu %zu\n", argv[i], n_rules, policy_db_count_rules(db));
                }
                db = policy_db_unref(db);
                config_free(c);
        }
        return failed;
}
