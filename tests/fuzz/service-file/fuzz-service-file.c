/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: activation_service_parse() and activation_exec_split() on arbitrary bytes
 * (service directories may hold anything). The input is copied into a buffer of exactly
 * its size, so ASan sees any read past it. Beyond "no crash, no overrun" it checks:
 *   - success gives a valid Name and an Exec; failure gives a non-empty message;
 *   - a parsed file written back canonically ("[D-BUS Service]" and its keys) parses to the
 *     same service;
 *   - Exec splitting either fails with a message or gives at least one word, none longer
 *     than the line.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compat/activation-service.h"
#include "wire/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const char *a, const char *b) {
        assert((!a && !b) || (a && b && strcmp(a, b) == 0));
}

static void check_exec(const char *exec) {
        char **argv = NULL, err[256] = "";
        int r = activation_exec_split(exec, &argv, err, sizeof(err));
        size_t i;

        if (r) {
                assert(r == ACTIVATION_SERVICE_E_INVALID && err[0]);
                return;
        }
        assert(argv[0]);
        for (i = 0; argv[i]; ++i)
                assert(strlen(argv[i]) <= strlen(exec));
        activation_strv_free(argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ActivationService *s = NULL, *s2 = NULL;
        char err[512] = "", *buf, *canon = NULL;
        size_t n_canon = 0;
        FILE *f;
        int r;

        buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        r = activation_service_parse(buf, size, "fuzz.service", &s, err, sizeof(err));
        if (r) {
                assert(r == ACTIVATION_SERVICE_E_INVALID && err[0]);
                free(buf);
                return 0;
        }
        assert(s->name && wire_well_known_name_is_valid(s->name, strlen(s->name)) && s->exec);
        check_exec(s->exec);

        f = open_memstream(&canon, &n_canon);
        assert(f);
        fprintf(f, "[D-BUS Service]\nName=%s\nExec=%s\n", s->name, s->exec);
        if (s->user)
                fprintf(f, "User=%s\n", s->user);
        if (s->systemd_service)
                fprintf(f, "SystemdService=%s\n", s->systemd_service);
        if (s->apparmor_label)
                fprintf(f, "AssumedAppArmorLabel=%s\n", s->apparmor_label);
        fclose(f);
        r = activation_service_parse(canon, n_canon, "canonical", &s2, err, sizeof(err));
        /* values never hold '\n' and keep their UTF-8, so the canonical form parses */
        assert(r == 0);
        same(s->name, s2->name);
        same(s->user, s2->user);
        same(s->systemd_service, s2->systemd_service);
        same(s->apparmor_label, s2->apparmor_label);
        activation_service_free(s2);
        activation_service_free(s);
        free(canon);
        free(buf);
        return 0;
}
