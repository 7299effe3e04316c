/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus-proxy's command line (tools/kdbus-proxy-args.c): xdg-dbus-proxy's, including the
 * way flatpak passes it (everything, --fd included, NUL-separated through --args=FD).
 */
#include <errno.h>
#include <glib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tools/kdbus-proxy-args.h"

static int parse(ProxyArgs *a, char *err, const char *const *argv) {
        int argc = 0;

        while (argv[argc])
                ++argc;
        return proxy_args_parse(a, argc, (char *const *)argv, err, 256);
}

/* A memfd holding @n bytes of @data, at offset 0. */
static int args_fd(const char *data, size_t n) {
        int fd = memfd_create("args", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, data, n), ==, (ssize_t)n);
        g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        return fd;
}

static void assert_rule(const ProxyRule *r, ProxyRuleKind kind, const char *name, bool subtree,
                        const char *rule) {
        g_assert_cmpint(r->kind, ==, kind);
        g_assert_cmpstr(r->name, ==, name);
        g_assert_cmpint(r->subtree, ==, subtree);
        g_assert_cmpstr(r->rule, ==, rule);
}

/* flatpak's session-bus and a11y-bus proxies in one process, as flatpak-run-dbus.c builds
 * them: the arguments (--fd among them) in a sealed memfd given as --args=FD */
static void test_flatpak(void) {
        static const char data[] =
                "--fd=7\0unix:path=/run/user/1000/bus\0/run/user/1000/.dbus-proxy/session-bus-proxy-AbC123\0"
                "--filter\0--own=org.example.App.*\0--own=org.mpris.MediaPlayer2.org.example.App.*\0"
                "--talk=org.freedesktop.portal.*\0--see=org.example.Seen\0"
                "--call=org.freedesktop.portal.*=*\0"
                "--broadcast=org.freedesktop.portal.*=@/org/freedesktop/portal/*\0"
                "unix:path=/run/user/1000/at-spi/bus\0/run/user/1000/.dbus-proxy/a11y-bus-proxy-XyZ\0"
                "--filter\0--sloppy-names\0"
                "--broadcast=org.a11y.atspi.Registry=org.a11y.atspi.Registry.EventListenerRegistered@/org/a11y/atspi/registry\0"
                "--call=org.a11y.atspi.Registry=org.a11y.atspi.Socket.Embed@/org/a11y/atspi/accessible/root\0"
                "--log";            /* the last one without NUL: taken too */
        ProxyArgs a = PROXY_ARGS_NULL;
        char err[256], argsarg[32];
        int fd = args_fd(data, sizeof(data) - 1);

        g_snprintf(argsarg, sizeof(argsarg), "--args=%d", fd);
        g_assert_cmpint(parse(&a, err, (const char *[]){ "kdbus-proxy", argsarg, NULL }), ==, 0);
        g_assert_cmpint(a.sync_fd, ==, 7);
        g_assert_cmpuint(a.n_buses, ==, 2);
        g_assert_cmpstr(a.buses[0].address, ==, "unix:path=/run/user/1000/bus");
        g_assert_cmpstr(a.buses[0].path, ==,
                        "/run/user/1000/.dbus-proxy/session-bus-proxy-AbC123");
        g_assert_true(a.buses[0].filter);
        g_assert_false(a.buses[0].log);
        g_assert_false(a.buses[0].sloppy_names);
        g_assert_cmpuint(a.buses[0].n_rules, ==, 6);
        assert_rule(&a.buses[0].rules[0], PROXY_RULE_OWN, "org.example.App", true, NULL);
        assert_rule(&a.buses[0].rules[1], PROXY_RULE_OWN,
                    "org.mpris.MediaPlayer2.org.example.App", true, NULL);
        assert_rule(&a.buses[0].rules[2], PROXY_RULE_TALK, "org.freedesktop.portal", true, NULL);
        assert_rule(&a.buses[0].rules[3], PROXY_RULE_SEE, "org.example.Seen", false, NULL);
        assert_rule(&a.buses[0].rules[4], PROXY_RULE_CALL, "org.freedesktop.portal", true, "*");
        assert_rule(&a.buses[0].rules[5], PROXY_RULE_BROADCAST, "org.freedesktop.portal", true,
                    "@/org/freedesktop/portal/*");
        g_assert_true(a.buses[1].filter);
        g_assert_true(a.buses[1].sloppy_names);
        g_assert_true(a.buses[1].log);
        g_assert_cmpuint(a.buses[1].n_rules, ==, 2);
        assert_rule(&a.buses[1].rules[0], PROXY_RULE_BROADCAST, "org.a11y.atspi.Registry", false,
                    "org.a11y.atspi.Registry.EventListenerRegistered@/org/a11y/atspi/registry");
        assert_rule(&a.buses[1].rules[1], PROXY_RULE_CALL, "org.a11y.atspi.Registry", false,
                    "org.a11y.atspi.Socket.Embed@/org/a11y/atspi/accessible/root");
        proxy_args_deinit(&a);
        close(fd);
}

/* --fd and --args anywhere, --args splicing in at its place; an unfiltered bus */
static void test_plain(void) {
        static const char more[] = "--talk=org.b\0unix:path=/c\0/d";
        ProxyArgs a = PROXY_ARGS_NULL;
        char err[256], argsarg[32];
        int fd = args_fd(more, sizeof(more));

        g_snprintf(argsarg, sizeof(argsarg), "--args=%d", fd);
        g_assert_cmpint(parse(&a, err, (const char *[]){ "p", "unix:path=/a", "/b", "--see=org.a",
                                                          argsarg, "--fd=3", "--log", NULL }), ==, 0);
        g_assert_cmpint(a.sync_fd, ==, 3);
        g_assert_cmpuint(a.n_buses, ==, 2);
        g_assert_false(a.buses[0].filter);
        g_assert_cmpuint(a.buses[0].n_rules, ==, 2);
        assert_rule(&a.buses[0].rules[1], PROXY_RULE_TALK, "org.b", false, NULL);
        g_assert_cmpstr(a.buses[1].path, ==, "/d");
        g_assert_true(a.buses[1].log);
        g_assert_false(a.buses[0].log);
        proxy_args_deinit(&a);
        close(fd);
}

static void test_errors(void) {
        static const struct {
                const char *argv[6];
                const char *err;
        } cases[] = {
                { { "p", NULL }, "no ADDRESS PATH given" },
                { { "p", "unix:path=/a", NULL }, "no socket path given" },
                { { "p", "unix:path=/a", "--filter", NULL }, "no socket path given" },
                { { "p", "--fd=x", NULL }, "invalid --fd" },
                { { "p", "--fd=-1", NULL }, "invalid --fd" },
                { { "p", "--args=", NULL }, "invalid --args" },
                { { "p", "--bogus", NULL }, "unknown option \"--bogus\"" },
                { { "p", "a", "b", "--seee=x.y", NULL }, "unknown option" },
                { { "p", "a", "b", "--see=:1.5", NULL }, "not a valid well-known bus name" },
                { { "p", "a", "b", "--own=nodots", NULL }, "not a valid well-known bus name" },
                { { "p", "a", "b", "--talk=.*", NULL }, "not a valid well-known bus name" },
                { { "p", "a", "b", "--call=org.a", NULL }, "not NAME=RULE" },
                { { "p", "a", "b", "--call=org.a=org.x.Y@rel", NULL }, "not [METHOD][@PATH]" },
                { { "p", "a", "b", "--broadcast=org.a=a-b", NULL }, "not [METHOD][@PATH]" },
                { { "p", "a", "b", "--broadcast=bad=*", NULL }, "not a valid well-known" },
        };
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                ProxyArgs a = PROXY_ARGS_NULL;
                char err[256];

                g_assert_cmpint(parse(&a, err, cases[i].argv), ==, -EINVAL);
                if (!strstr(err, cases[i].err))
                        g_error("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].err);
                proxy_args_deinit(&a);
        }
}

static void test_rules(void) {
        /* the last element of METHOD is the member (xdg-dbus-proxy reads it so): "org.foo"
         * would be member foo of an interface "org", which is no interface */
        static const char *const good[] = { "", "*", "org.foo.*", "org.foo.Bar", "org.foo.Bar.Method",
                                            "@/", "@/path", "@/path/*", "@/*", "*@/a/b",
                                            "org.foo.*@/a/*", "org.foo.Bar.M@/x" };
        static const char *const bad[] = { "org", "org.foo", "org.foo.**", "@", "@path", "@/a/",
                                           "@/a//b", "org..x", "*x", "@/a/*x" };
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(good); ++i)
                if (!proxy_rule_is_valid(good[i]))
                        g_error("\"%s\" should be valid", good[i]);
        for (i = 0; i < G_N_ELEMENTS(bad); ++i)
                if (proxy_rule_is_valid(bad[i]))
                        g_error("\"%s\" should be invalid", bad[i]);
}

static void test_help(void) {
        ProxyArgs a = PROXY_ARGS_NULL;
        char err[256];

        g_assert_cmpint(parse(&a, err, (const char *[]){ "p", "a", "b", "--help", NULL }), ==, 0);
        g_assert_true(a.help);
        proxy_args_deinit(&a);
        g_assert_cmpint(parse(&a, err, (const char *[]){ "p", "--version", NULL }), ==, 0);
        g_assert_true(a.version);
        proxy_args_deinit(&a);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/tools/kdbus-proxy-args/flatpak", test_flatpak);
        g_test_add_func("/tools/kdbus-proxy-args/plain", test_plain);
        g_test_add_func("/tools/kdbus-proxy-args/errors", test_errors);
        g_test_add_func("/tools/kdbus-proxy-args/rules", test_rules);
        g_test_add_func("/tools/kdbus-proxy-args/help", test_help);
        return g_test_run();
}
