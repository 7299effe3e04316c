/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * compat/activation-service: .service files (every key, what is ignored, each malformed
 * form with file:line in the message) and Exec= splitting (quotes, escapes, errors).
 */
#include <glib.h>
#include <string.h>
#include "compat/activation-service.h"

static int parse(const char *text, ActivationService **ret, char *err, size_t n_err) {
        return activation_service_parse(text, strlen(text), "t.service", ret, err, n_err);
}

static void test_valid(void) {
        ActivationService *s = NULL;
        char err[256] = "";

        g_assert_cmpint(parse("# c\n\n  [D-BUS Service]\nName = org.example.A\n"
                              "Exec=/usr/bin/a --x  \nUser=nobody\nSystemdService=a.service\n"
                              "AssumedAppArmorLabel=unconfined\nUnknown=1\n[Other]\nExec=/no\n",
                              &s, err, sizeof(err)), ==, 0);
        g_assert_cmpstr(s->name, ==, "org.example.A");
        g_assert_cmpstr(s->exec, ==, "/usr/bin/a --x  ");
        g_assert_cmpstr(s->user, ==, "nobody");
        g_assert_cmpstr(s->systemd_service, ==, "a.service");
        g_assert_cmpstr(s->apparmor_label, ==, "unconfined");
        activation_service_free(s);

        /* CRLF line ends, no final newline, other groups first */
        s = NULL;
        g_assert_cmpint(parse("[X]\r\nA=b\r\n[D-BUS Service]\r\nName=a.b\r\nExec=/x", &s, err,
                              sizeof(err)), ==, 0);
        g_assert_cmpstr(s->name, ==, "a.b");
        g_assert_cmpstr(s->exec, ==, "/x");
        g_assert_null(s->user);
        activation_service_free(s);
}

static void test_malformed(void) {
        static const struct {
                const char *text, *why;
        } cases[] = {
                { "", "has no [D-BUS Service] group" },
                { "Name=a.b\n[D-BUS Service]\nExec=/x\n", "t.service:1: key outside of any group" },
                { "[D-BUS Service\nName=a.b\n", "t.service:1: malformed group header" },
                { "[]\n", "t.service:1: malformed group header" },
                { "[D-BUS Service]\n[D-BUS Service]\n", "t.service:2: group [D-BUS Service] given twice" },
                { "[D-BUS Service]\nName=a.b\nName=c.d\nExec=/x\n", "t.service:3: key \"Name\" given twice" },
                { "[D-BUS Service]\nName a.b\n", "t.service:2: expected \"Key=Value\"" },
                { "[D-BUS Service]\n=a.b\n", "t.service:2: expected \"Key=Value\"" },
                { "[D-BUS Service]\nNa.me=a.b\n", "t.service:2: expected \"Key=Value\"" },
                { "[D-BUS Service]\nExec=/x\n", "has no Name key" },
                { "[D-BUS Service]\nName=a.b\n", "has no Exec key" },
                { "[D-BUS Service]\nName=:1.2\nExec=/x\n", "is not a valid well-known bus name" },
                { "[D-BUS Service]\nName=nodots\nExec=/x\n", "is not a valid well-known bus name" },
                { "[D-BUS Service]\nName=a.b\nExec=/x\x01y\n", "t.service:3: control character" },
                { "[D-BUS Service]\nName=a.b\nExec=/\xff\n", "is not valid UTF-8" },
                { "[D-BUS Service]\nName=a.b\nExec=/\xc0\x80\n", "is not valid UTF-8" },
        };
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                ActivationService *s = NULL;
                char err[256] = "";

                g_test_message("case %zu: %s", i, cases[i].text);
                g_assert_cmpint(parse(cases[i].text, &s, err, sizeof(err)), ==,
                                ACTIVATION_SERVICE_E_INVALID);
                g_assert_null(s);
                g_assert_nonnull(strstr(err, cases[i].why));
                g_assert_true(g_str_has_prefix(err, "t.service"));
        }
}

static void test_nul_byte(void) {
        static const char text[] = "[D-BUS Service]\nName=a.b\0x\nExec=/x\n";
        ActivationService *s = NULL;
        char err[256] = "";

        g_assert_cmpint(activation_service_parse(text, sizeof(text) - 1, "n.service", &s, err,
                                                 sizeof(err)), ==, ACTIVATION_SERVICE_E_INVALID);
        g_assert_nonnull(strstr(err, "NUL"));
}

static void check_split(const char *exec, const char *const *want) {
        char **argv = NULL, err[256] = "";
        size_t i;

        g_test_message("exec: %s", exec);
        g_assert_cmpint(activation_exec_split(exec, &argv, err, sizeof(err)), ==, 0);
        for (i = 0; want[i]; ++i)
                g_assert_cmpstr(argv[i], ==, want[i]);
        g_assert_null(argv[i]);
        activation_strv_free(argv);
}

static void test_exec_split(void) {
        check_split("/bin/a", (const char *const[]){ "/bin/a", NULL });
        check_split("  /bin/a   b\tc ", (const char *const[]){ "/bin/a", "b", "c", NULL });
        check_split("/bin/sh -c 'exit 1'", (const char *const[]){ "/bin/sh", "-c", "exit 1", NULL });
        check_split("a \"x \\\"y\\\" \\n\" z", (const char *const[]){ "a", "x \"y\" \\n", "z", NULL });
        check_split("a b\\ c d''e ''", (const char *const[]){ "a", "b c", "de", "", NULL });
        check_split("'$HOME' \"$HOME\"", (const char *const[]){ "$HOME", "$HOME", NULL });
}

static void test_exec_split_errors(void) {
        static const char *const bad[] = { "", "   ", "a 'b", "a \"b", "a \\", "\"x\\\"" };
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(bad); ++i) {
                char **argv = NULL, err[256] = "";

                g_test_message("exec: %s", bad[i]);
                g_assert_cmpint(activation_exec_split(bad[i], &argv, err, sizeof(err)), ==,
                                ACTIVATION_SERVICE_E_INVALID);
                g_assert_null(argv);
                g_assert_cmpstr(err, !=, "");
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/compat/activation-service/valid", test_valid);
        g_test_add_func("/compat/activation-service/malformed", test_malformed);
        g_test_add_func("/compat/activation-service/nul-byte", test_nul_byte);
        g_test_add_func("/compat/activation-service/exec-split", test_exec_split);
        g_test_add_func("/compat/activation-service/exec-split-errors", test_exec_split_errors);
        return g_test_run();
}
