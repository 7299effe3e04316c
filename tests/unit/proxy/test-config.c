/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tests of proxy/config.c: every <limit> lands in its BusLimits field (dbus-daemon's units:
 * milliseconds become microseconds, counts clamp to 32 bits), the built-in defaults under a
 * file without <limit>s are dbus-daemon's, the built-in session configuration equals
 * session.conf's limits, <auth> (unknown mechanism refused, the set offered,
 * <allow_anonymous/> apart), <apparmor mode="required">, file:line in errors, missing files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge/limits.h"
#include "policy-xml/config.h"
#include "proxy/config.h"
#include "proxy/sasl.h"
/* after ours: GLib's MIN/MAX replace util/macro.h's without a redefinition warning */
#include <glib.h>
#include <glib/gstdio.h>

typedef struct Fixture {
        char *dir;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer ctx) {
        f->dir = g_dir_make_tmp("kdbus-test-config-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
}

static void fixture_teardown(Fixture *f, gconstpointer ctx) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->dir);
}

/* Writes @body inside <busconfig> (from line 2) to DIR/NAME; returns the path. */
static char *write_conf(Fixture *f, const char *name, const char *body) {
        char *path = g_build_filename(f->dir, name, NULL);
        g_autofree char *text = g_strdup_printf("<busconfig>\n%s\n</busconfig>\n", body);

        g_assert_true(g_file_set_contents(path, text, -1, NULL));
        return path;
}

static void test_limits(Fixture *f, gconstpointer ctx) {
        g_autofree char *path = write_conf(f, "l.conf",
                "<limit name=\"max_incoming_bytes\">1</limit>\n"
                "<limit name=\"max_incoming_unix_fds\">2</limit>\n"
                "<limit name=\"max_outgoing_bytes\">3</limit>\n"
                "<limit name=\"max_outgoing_unix_fds\">4</limit>\n"
                "<limit name=\"max_message_size\">5</limit>\n"
                "<limit name=\"max_message_unix_fds\">6</limit>\n"
                "<limit name=\"service_start_timeout\">7</limit>\n"
                "<limit name=\"auth_timeout\">8</limit>\n"
                "<limit name=\"pending_fd_timeout\">9</limit>\n"
                "<limit name=\"max_completed_connections\">10</limit>\n"
                "<limit name=\"max_incomplete_connections\">11</limit>\n"
                "<limit name=\"max_connections_per_user\">12</limit>\n"
                "<limit name=\"max_pending_service_starts\">13</limit>\n"
                "<limit name=\"max_names_per_connection\">14</limit>\n"
                "<limit name=\"max_match_rules_per_connection\">15</limit>\n"
                "<limit name=\"max_replies_per_connection\">16</limit>\n"
                "<limit name=\"reply_timeout\">17</limit>");
        ProxyConfig *c = NULL;
        ProxyConfigError err;
        const BusLimits *l;

        g_assert_cmpint(proxy_config_load(path, &c, &err), ==, 0);
        l = &c->limits;
        g_assert_cmpuint(l->max_incoming_bytes, ==, 1);
        g_assert_cmpuint(l->max_incoming_unix_fds, ==, 2);
        g_assert_cmpuint(l->max_outgoing_bytes, ==, 3);
        g_assert_cmpuint(l->max_outgoing_unix_fds, ==, 4);
        g_assert_cmpuint(l->max_message_size, ==, 5);
        g_assert_cmpuint(l->max_message_unix_fds, ==, 6);
        g_assert_cmpuint(l->service_start_timeout_usec, ==, 7000);
        g_assert_cmpuint(l->auth_timeout_usec, ==, 8000);
        g_assert_cmpuint(l->pending_fd_timeout_usec, ==, 9000);
        g_assert_cmpuint(l->max_completed_connections, ==, 10);
        g_assert_cmpuint(l->max_incomplete_connections, ==, 11);
        g_assert_cmpuint(l->max_connections_per_user, ==, 12);
        g_assert_cmpuint(l->max_pending_service_starts, ==, 13);
        g_assert_cmpuint(l->max_names_per_connection, ==, 14);
        g_assert_cmpuint(l->max_match_rules_per_connection, ==, 15);
        g_assert_cmpuint(l->max_replies_per_connection, ==, 16);
        g_assert_cmpuint(l->reply_timeout_usec, ==, 17000);
        g_assert_cmpstr(c->path, ==, path);
        proxy_config_free(c);
}

/* No <limit>: dbus-daemon's built-in values; huge values clamp instead of wrapping. */
static void test_limits_defaults(Fixture *f, gconstpointer ctx) {
        g_autofree char *path = write_conf(f, "d.conf", "<type>system</type>");
        g_autofree char *big = write_conf(f, "b.conf",
                "<limit name=\"max_names_per_connection\">9223372036854775807</limit>\n"
                "<limit name=\"reply_timeout\">9223372036854775807</limit>");
        ProxyConfig *c = NULL;
        ProxyConfigError err;
        BusLimits sys;

        bus_limits_init_system(&sys);
        g_assert_cmpint(proxy_config_load(path, &c, &err), ==, 0);
        g_assert_cmpmem(&c->limits, sizeof(c->limits), &sys, sizeof(sys));
        g_assert_cmpuint(sys.max_incoming_bytes, ==, 133169152);
        g_assert_cmpuint(sys.max_completed_connections, ==, 2048);
        g_assert_cmpuint(sys.service_start_timeout_usec, ==, 25000000);
        g_assert_cmpuint(sys.reply_timeout_usec, ==, 0);
        proxy_config_free(c);

        g_assert_cmpint(proxy_config_load(big, &c, &err), ==, 0);
        g_assert_cmpuint(c->limits.max_names_per_connection, ==, UINT32_MAX);
        g_assert_cmpuint(c->limits.reply_timeout_usec, ==, UINT64_MAX);
        proxy_config_free(c);
}

/* The built-in session configuration (no session.conf on the machine) runs with
 * session.conf's limits, which bus_limits_init_session() also describes. */
static void test_builtin_session(Fixture *f, gconstpointer ctx) {
        ProxyConfig *c = NULL;
        ProxyConfigError err;
        BusLimits ses;

        bus_limits_init_session(&ses);
        g_assert_cmpint(proxy_config_load(NULL, &c, &err), ==, 0);
        g_assert_null(c->path);
        g_assert_cmpstr(c->tree->type.value, ==, "session");
        g_assert_cmpuint(c->tree->n_listen, ==, 1);
        g_assert_cmpstr(c->tree->listen[0].value, ==, "unix:tmpdir=/tmp");
        g_assert_false(c->allow_anonymous);
        g_assert_cmpuint(c->limits.max_incoming_bytes, ==, ses.max_incoming_bytes);
        g_assert_cmpuint(c->limits.max_outgoing_unix_fds, ==, ses.max_outgoing_unix_fds);
        g_assert_cmpuint(c->limits.max_message_size, ==, ses.max_message_size);
        g_assert_cmpuint(c->limits.auth_timeout_usec, ==, ses.auth_timeout_usec);
        g_assert_cmpuint(c->limits.max_connections_per_user, ==, ses.max_connections_per_user);
        g_assert_cmpuint(c->limits.max_replies_per_connection, ==,
                         ses.max_replies_per_connection);
        g_assert_cmpuint(c->limits.service_start_timeout_usec, ==,
                         ses.service_start_timeout_usec);
        g_assert_cmpuint(c->limits.max_pending_service_starts, ==,
                         ses.max_pending_service_starts);
        proxy_config_free(c);

        /* and so does Debian's session.conf, where it is installed */
        if (access(PROXY_CONFIG_SESSION_PATH, R_OK) == 0) {
                g_assert_cmpint(proxy_config_load(PROXY_CONFIG_SESSION_PATH, &c, &err), ==, 0);
                g_assert_cmpmem(&c->limits, sizeof(c->limits), &ses, sizeof(ses));
                proxy_config_free(c);
        }
}

static const struct { const char *body; const char *error; } refused[] = {
        { "<auth>FOO</auth>", "x.conf:2: Unsupported auth mechanism \"FOO\" in bus config file "
          "detected. Supported mechanisms are \"EXTERNAL, DBUS_COOKIE_SHA1, ANONYMOUS\"." },
        { "\n<apparmor mode=\"required\"/>", "x.conf:3: <apparmor mode=\"required\"/>: kdbusd "
          "has no AppArmor mediation; use mode=\"enabled\" or \"disabled\"" },
        { "<policy context=\"default\">\n<allow own=\"a\" min_fds=\"1\"/></policy>",
          "x.conf:3: Invalid combination of attributes on element <allow>: own, own_prefix, "
          "user, group and the message-related attributes cannot be combined" },
};

static void test_refused(Fixture *f, gconstpointer ctx) {
        for (size_t i = 0; i < G_N_ELEMENTS(refused); ++i) {
                g_autofree char *path = write_conf(f, "x.conf", refused[i].body);
                g_autofree char *want = g_strdup_printf("%s/%s", f->dir, refused[i].error);
                ProxyConfig *c = NULL;
                ProxyConfigError err;

                g_test_message("case %zu: %s", i, refused[i].body);
                g_assert_cmpint(proxy_config_load(path, &c, &err), ==, 1);
                g_assert_null(c);
                g_assert_cmpstr(err.text, ==, want);
                g_assert_false(err.not_found);
        }
}

static void test_auth_accepted(Fixture *f, gconstpointer ctx) {
        /* as dbus-daemon: the mechanisms listed (all three without <auth>), and
         * <allow_anonymous/> on its own (whether an ANONYMOUS peer may stay) */
        static const struct { const char *body; bool anonymous; unsigned mechs; } cases[] = {
                { "<auth>EXTERNAL</auth>", false, SASL_MECH_EXTERNAL },
                { "<auth>EXTERNAL</auth><auth>DBUS_COOKIE_SHA1</auth>", false,
                  SASL_MECH_EXTERNAL | SASL_MECH_COOKIE },
                { "<allow_anonymous/>", true, SASL_MECH_ALL },
                { "", false, SASL_MECH_ALL },
                { "<auth>EXTERNAL</auth><allow_anonymous/>", true, SASL_MECH_EXTERNAL },
                { "<auth>EXTERNAL</auth><auth>ANONYMOUS</auth><allow_anonymous/>", true,
                  SASL_MECH_EXTERNAL | SASL_MECH_ANONYMOUS },
                { "<auth>EXTERNAL</auth><auth>ANONYMOUS</auth>", false,
                  SASL_MECH_EXTERNAL | SASL_MECH_ANONYMOUS },
                { "<auth>DBUS_COOKIE_SHA1</auth>", false, SASL_MECH_COOKIE },
                { "<auth>ANONYMOUS</auth><allow_anonymous/>", true, SASL_MECH_ANONYMOUS },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); ++i) {
                g_autofree char *path = write_conf(f, "a.conf", cases[i].body);
                ProxyConfig *c = NULL;
                ProxyConfigError err;

                g_test_message("case %zu: %s", i, cases[i].body);
                g_assert_cmpint(proxy_config_load(path, &c, &err), ==, 0);
                g_assert_cmpint(c->allow_anonymous, ==, cases[i].anonymous);
                g_assert_cmpuint(c->auth_mechs, ==, cases[i].mechs);
                proxy_config_free(c);
        }
}

static void test_not_found(Fixture *f, gconstpointer ctx) {
        g_autofree char *missing = g_build_filename(f->dir, "nope.conf", NULL);
        g_autofree char *inc = write_conf(f, "i.conf", "<include>nope.conf</include>");
        g_autofree char *want = NULL;
        ProxyConfig *c = NULL;
        ProxyConfigError err;

        g_assert_cmpint(proxy_config_load(missing, &c, &err), ==, 1);
        want = g_strdup_printf("%s: Failed to open \"%s\": No such file or directory", missing,
                               missing);
        g_assert_cmpstr(err.text, ==, want);
        g_assert_true(err.not_found);
        g_assert_cmpint(proxy_config_load(inc, &c, &err), ==, 1);
        g_assert_true(err.not_found);
        g_assert_null(c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/proxy/config/limits", Fixture, NULL, fixture_setup, test_limits,
                   fixture_teardown);
        g_test_add("/proxy/config/limits-defaults", Fixture, NULL, fixture_setup,
                   test_limits_defaults, fixture_teardown);
        g_test_add("/proxy/config/builtin-session", Fixture, NULL, fixture_setup,
                   test_builtin_session, fixture_teardown);
        g_test_add("/proxy/config/refused", Fixture, NULL, fixture_setup, test_refused,
                   fixture_teardown);
        g_test_add("/proxy/config/auth-accepted", Fixture, NULL, fixture_setup,
                   test_auth_accepted, fixture_teardown);
        g_test_add("/proxy/config/not-found", Fixture, NULL, fixture_setup, test_not_found,
                   fixture_teardown);
        return g_test_run();
}
