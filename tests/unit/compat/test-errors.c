/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The error table: every code of every domain has its own entry, with a valid error name
 * and a template that takes at most three strings and nothing else.
 */
#include <string.h>
#include "bridge/conn.h"
#include "bridge/names.h"
#include "compat/errors.h"
#include "compat/launch-helper.h"
#include "compat/match-rule.h"
#include "wire/message.h"
#include "wire/names.h"
#include <glib.h>       /* after util/macro.h: GLib redefines MIN/MAX without warning */

static const struct {
        CompatErrorDomain domain;
        int n;
        int first;              /* codes below it are not errors of this domain */
} domains[] = {
        { COMPAT_DOMAIN_COMPAT, _COMPAT_E_N, 1 },
        { COMPAT_DOMAIN_BRIDGE, _BRIDGE_E_N, 1 },
        { COMPAT_DOMAIN_NAME, _NAME_E_N, 1 },
        { COMPAT_DOMAIN_WIRE, _WIRE_E_N, 1 },
        { COMPAT_DOMAIN_MATCH_RULE, _MATCH_RULE_E_N, 1 },
};

static void test_complete(void) {
        const CompatError *failed = compat_error_lookup(COMPAT_DOMAIN_COMPAT, 0);
        size_t i;
        int code;

        g_assert_cmpstr(failed->name, ==, "org.freedesktop.DBus.Error.Failed");
        for (i = 0; i < G_N_ELEMENTS(domains); ++i)
                for (code = domains[i].first; code < domains[i].n; ++code) {
                        const CompatError *e = compat_error_lookup(domains[i].domain, code);
                        const char *p;
                        unsigned n_s = 0;

                        if (e == failed)
                                g_error("domain %d code %d has no entry", domains[i].domain, code);
                        g_assert_true(g_str_has_prefix(e->name, "org.freedesktop.DBus.Error."));
                        g_assert_true(wire_error_name_is_valid(e->name, strlen(e->name)));
                        for (p = strchr(e->format, '%'); p; p = strchr(p + 2, '%')) {
                                g_assert_cmpint(p[1], ==, 's');
                                ++n_s;
                        }
                        g_assert_cmpuint(n_s, <=, 3);
                }
}

static void test_out_of_range(void) {
        const CompatError *failed = compat_error_lookup(COMPAT_DOMAIN_COMPAT, 0);

        g_assert_true(compat_error_lookup(COMPAT_DOMAIN_BRIDGE, -1) == failed);
        g_assert_true(compat_error_lookup(COMPAT_DOMAIN_BRIDGE, _BRIDGE_E_N) == failed);
        g_assert_true(compat_error_lookup(_COMPAT_DOMAIN_N, 1) == failed);
        g_assert_true(compat_error_lookup(COMPAT_DOMAIN_WIRE, 100000) == failed);
}

static void test_format(void) {
        char buf[256];
        const char *name;

        name = compat_error_format(COMPAT_DOMAIN_COMPAT, COMPAT_E_SERVICE_UNKNOWN, "org.x.Y",
                                   NULL, NULL, buf, sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.ServiceUnknown");
        g_assert_cmpstr(buf, ==, "The name org.x.Y was not provided by any .service files");

        name = compat_error_format(COMPAT_DOMAIN_COMPAT, COMPAT_E_WRONG_ARGS, "GetId", "s", "",
                                   buf, sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.InvalidArgs");
        g_assert_cmpstr(buf, ==, "Call to GetId has wrong args (s, expected )\n");

        name = compat_error_format(COMPAT_DOMAIN_BRIDGE, BRIDGE_E_FDS_REFUSED, ":1.3", NULL, NULL,
                                   buf, sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.NotSupported");

        name = compat_error_format(COMPAT_DOMAIN_MATCH_RULE, MATCH_RULE_E_TOO_LONG, "too long",
                                   NULL, NULL, buf, sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.LimitsExceeded");
        g_assert_cmpstr(buf, ==, "too long");

        name = compat_error_format(COMPAT_DOMAIN_MATCH_RULE, MATCH_RULE_E_INVALID, "bad", NULL,
                                   NULL, buf, sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.MatchRuleInvalid");

        name = compat_error_format(COMPAT_DOMAIN_NAME, NAME_E_QUOTA, ":1.1", "512", NULL, buf,
                                   sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.LimitsExceeded");
        g_assert_nonnull(strstr(buf, "max_names_per_connection=512"));

        /* wire codes default to wire_strerror() */
        name = compat_error_format(COMPAT_DOMAIN_WIRE, WIRE_E_BAD_PATH, NULL, NULL, NULL, buf,
                                   sizeof(buf));
        g_assert_cmpstr(name, ==, "org.freedesktop.DBus.Error.InvalidArgs");
        g_assert_nonnull(strstr(buf, wire_strerror(WIRE_E_BAD_PATH)));

        /* truncation keeps the terminator */
        (void) compat_error_format(COMPAT_DOMAIN_COMPAT, COMPAT_E_SERVICE_UNKNOWN, "org.x.Y",
                                   NULL, NULL, buf, 8);
        g_assert_cmpstr(buf, ==, "The nam");

        /* NULL strings read as "" */
        (void) compat_error_format(COMPAT_DOMAIN_COMPAT, COMPAT_E_NO_OWNER_OWNER, NULL, NULL,
                                   NULL, buf, sizeof(buf));
        g_assert_cmpstr(buf, ==, "Could not get owner of name '': no such name");
}

/* A launch helper's exit codes: dbus-daemon 1.14.10's names and texts (the integration test
 * integration-activation-servicehelper compares four of them with dbus-daemon itself). */
static void test_launch_helper(void) {
        static const struct {
                int code;
                const char *name;
                const char *text;
        } cases[] = {
                { LAUNCH_HELPER_EXIT_NO_MEMORY, "NoMemory",
                  "Launcher could not run (out of memory)" },
                { LAUNCH_HELPER_EXIT_CONFIG_INVALID, "Spawn.ConfigInvalid",
                  "Invalid configuration (missing or empty <user>?)" },
                { LAUNCH_HELPER_EXIT_SETUP_FAILED, "Spawn.FailedToSetup",
                  "Failed to setup environment correctly" },
                { LAUNCH_HELPER_EXIT_NAME_INVALID, "Spawn.ServiceNotValid",
                  "Bus name is not valid or missing" },
                { LAUNCH_HELPER_EXIT_SERVICE_NOT_FOUND, "Spawn.ServiceNotFound",
                  "Bus name not found in system service directory" },
                { LAUNCH_HELPER_EXIT_PERMISSIONS_INVALID, "Spawn.PermissionsInvalid",
                  "The permission of the setuid helper is not correct" },
                { LAUNCH_HELPER_EXIT_FILE_INVALID, "Spawn.PermissionsInvalid",
                  "The service file is incorrect or does not have all required attributes" },
                { LAUNCH_HELPER_EXIT_EXEC_FAILED, "Spawn.ExecFailed",
                  "Cannot launch daemon, file not found or permissions invalid" },
                { LAUNCH_HELPER_EXIT_INVALID_ARGS, "InvalidArgs",
                  "Invalid arguments to command line" },
                { LAUNCH_HELPER_EXIT_CHILD_SIGNALED, "Spawn.ChildSignaled",
                  "Launched child was signaled, it probably crashed" },
                { LAUNCH_HELPER_EXIT_GENERIC_FAILURE, "Spawn.ChildExited",
                  "Launch helper exited with unknown return code 1" },
                { 42, "Spawn.ChildExited", "Launch helper exited with unknown return code 42" },
                { -1, "Spawn.ChildExited", "Launch helper exited with unknown return code -1" },
        };
        char text[256];
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                const char *name = launch_helper_exit_error(cases[i].code, text, sizeof(text));

                g_assert_true(g_str_has_prefix(name, "org.freedesktop.DBus.Error."));
                g_assert_cmpstr(name + strlen("org.freedesktop.DBus.Error."), ==, cases[i].name);
                g_assert_cmpstr(text, ==, cases[i].text);
        }
        g_assert_cmpstr(launch_helper_system_dirs[1], ==, "/usr/share/dbus-1/system-services");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/compat/errors/launch-helper", test_launch_helper);
        g_test_add_func("/compat/errors/complete", test_complete);
        g_test_add_func("/compat/errors/out-of-range", test_out_of_range);
        g_test_add_func("/compat/errors/format", test_format);
        return g_test_run();
}
