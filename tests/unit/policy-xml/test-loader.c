/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tests of policy-xml/loader.c and config.c: every element and attribute, dbus-daemon's
 * verdicts and messages (taken from dbus-daemon 1.14.10 runs) with our file:line, includes
 * (relative paths, ignore_missing, includedir order, cycles, depth, a memfd named as
 * /proc/self/fd/N), malformed XML, the
 * Debian configuration files, and the tests/data/{valid,invalid,equiv}-config directories.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "policy-xml/config.h"
#include "policy-xml/loader.h"
/* after ours: GLib's MIN/MAX replace util/macro.h's without a redefinition warning */
#include <glib.h>
#include <glib/gstdio.h>

static void collect_diag(void *userdata, ConfigDiagLevel level, const char *file,
                         unsigned line, const char *message) {
        g_string_append_printf(userdata, "%s:%u: %s%s\n", file, line,
                               level == CONFIG_DIAG_WARNING ? "warning: " : "", message);
}

/* Loads @xml from memory as "t.conf"; diagnostics appended to @diag. */
static int load_str(const char *xml, GString *diag, Config **ret) {
        ConfigLoadOptions o = { .diag = collect_diag, .userdata = diag };

        return config_load_memory("t.conf", "/base", xml, strlen(xml), &o, ret);
}

static int load_file(const char *path, unsigned flags, GString *diag, Config **ret) {
        ConfigLoadOptions o = { .flags = flags, .diag = collect_diag, .userdata = diag };

        return config_load_file(path, &o, ret);
}

static char *dump(const Config *c, unsigned flags) {
        char *text = NULL;

        g_assert_cmpint(config_dump(c, flags, &text), ==, 0);
        return text;
}

/* <busconfig> on line 1, @body from line 2 */
static char *wrap(const char *body) {
        return g_strdup_printf("<busconfig>\n%s\n</busconfig>\n", body);
}

static void test_every_element(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *xml = NULL, *text = NULL;
        Config *c = NULL;

        xml = g_strdup_printf(
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                "<busconfig>\n"                                         /* 3 */
                "  <type>session</type>\n"
                "  <user>messagebus</user>\n"                           /* 5 */
                "  <fork/>\n"
                "  <keep_umask></keep_umask>\n"
                "  <listen>unix:path=/a</listen>\n"
                "  <listen>unix:tmpdir=/tmp</listen>\n"
                "  <pidfile>/run/p</pidfile>\n"                         /* 10 */
                "  <syslog/>\n"
                "  <auth>EXTERNAL</auth>\n"
                "  <allow_anonymous/>\n"
                "  <servicedir>rel/dir</servicedir>\n"
                "  <servicedir>/abs</servicedir>\n"                     /* 15 */
                "  <standard_session_servicedirs/>\n"
                "  <standard_system_servicedirs/>\n"
                "  <servicehelper>/helper</servicehelper>\n"
                "  <policy context=\"default\"><allow own=\"*\"/></policy>\n"
                "  <policy context=\"mandatory\"><deny own_prefix=\"a.b\"/></policy>\n" /* 20 */
                "  <policy user=\"root\"><allow own=\"r.s\"/></policy>\n"
                "  <policy group=\"wheel\"><deny own=\"x\"/></policy>\n"
                "  <policy at_console=\"true\"><allow send_destination=\"a.b\"/></policy>\n"
                "  <limit name=\"reply_timeout\"> 5 </limit>\n"
                "  <limit name=\"max_incoming_bytes\">0</limit>\n"      /* 25 */
                "  <selinux><associate own=\"a.b\" context=\"ctx\"/></selinux>\n"
                "  <apparmor mode=\"disabled\"/>\n"
                "  <include if_selinux_enabled=\"yes\">never.conf</include>\n"
                "</busconfig>\n");
        g_assert_cmpint(load_str(xml, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==, "");
        g_assert_cmpstr(c->type.value, ==, "session");
        g_assert_cmpuint(c->type.loc.line, ==, 4);
        g_assert_cmpstr(c->type.loc.file, ==, "t.conf");
        g_assert_cmpstr(c->user.value, ==, "messagebus");
        g_assert_true(c->fork.set);
        g_assert_cmpuint(c->fork.loc.line, ==, 6);
        g_assert_true(c->keep_umask.set && c->syslog.set && c->allow_anonymous.set);
        g_assert_cmpuint(c->n_listen, ==, 2);
        g_assert_cmpstr(c->listen[1].value, ==, "unix:tmpdir=/tmp");
        g_assert_cmpuint(c->listen[1].loc.line, ==, 9);
        g_assert_cmpstr(c->pidfile.value, ==, "/run/p");
        g_assert_cmpuint(c->n_auth, ==, 1);
        g_assert_cmpuint(c->n_servicedirs, ==, 4);
        g_assert_cmpstr(c->servicedirs[0].path, ==, "/base/rel/dir");
        g_assert_cmpstr(c->servicedirs[1].path, ==, "/abs");
        g_assert_cmpint(c->servicedirs[2].kind, ==, CONFIG_SERVICEDIR_STANDARD_SESSION);
        g_assert_cmpint(c->servicedirs[3].kind, ==, CONFIG_SERVICEDIR_STANDARD_SYSTEM);
        g_assert_cmpstr(c->servicehelper.value, ==, "/helper");
        g_assert_cmpuint(c->n_policies, ==, 5);
        g_assert_cmpint(c->policies[0].kind, ==, CONFIG_POLICY_DEFAULT);
        g_assert_cmpint(c->policies[1].kind, ==, CONFIG_POLICY_MANDATORY);
        g_assert_cmpint(c->policies[1].rules[0].kind, ==, CONFIG_RULE_OWN);
        g_assert_false(c->policies[1].rules[0].allow);
        g_assert_cmpint(c->policies[2].kind, ==, CONFIG_POLICY_USER);
        g_assert_cmpstr(c->policies[2].name, ==, "root");
        g_assert_cmpint(c->policies[2].rules[0].kind, ==, CONFIG_RULE_OWN);
        g_assert_cmpint(c->policies[3].kind, ==, CONFIG_POLICY_GROUP);
        g_assert_cmpint(c->policies[3].rules[0].kind, ==, CONFIG_RULE_OWN);
        g_assert_cmpint(c->policies[4].kind, ==, CONFIG_POLICY_AT_CONSOLE);
        g_assert_true(c->policies[4].at_console);
        g_assert_cmpuint(c->policies[4].loc.line, ==, 23);
        g_assert_cmpuint(c->policies[4].rules[0].loc.line, ==, 23);
        g_assert_true(c->limits[CONFIG_LIMIT_REPLY_TIMEOUT].set);
        g_assert_cmpuint(c->limits[CONFIG_LIMIT_REPLY_TIMEOUT].value, ==, 5);
        g_assert_cmpuint(c->limits[CONFIG_LIMIT_REPLY_TIMEOUT].loc.line, ==, 24);
        g_assert_true(c->limits[CONFIG_LIMIT_MAX_INCOMING_BYTES].set);
        g_assert_false(c->limits[CONFIG_LIMIT_AUTH_TIMEOUT].set);
        g_assert_cmpuint(c->n_associations, ==, 1);
        g_assert_cmpstr(c->associations[0].context, ==, "ctx");
        g_assert_cmpint(c->apparmor, ==, CONFIG_APPARMOR_DISABLED);

        text = dump(c, 0);
        g_assert_cmpstr(text, ==,
                "type \"session\"\n"
                "user \"messagebus\"\n"
                "fork\n"
                "keep_umask\n"
                "syslog\n"
                "allow_anonymous\n"
                "pidfile \"/run/p\"\n"
                "servicehelper \"/helper\"\n"
                "listen \"unix:path=/a\"\n"
                "listen \"unix:tmpdir=/tmp\"\n"
                "auth \"EXTERNAL\"\n"
                "servicedir \"/base/rel/dir\"\n"
                "servicedir \"/abs\"\n"
                "standard_session_servicedirs\n"
                "standard_system_servicedirs\n"
                "limit max_incoming_bytes 0\n"
                "limit reply_timeout 5\n"
                "selinux associate own=\"a.b\" context=\"ctx\"\n"
                "apparmor mode=\"disabled\"\n"
                "policy context=\"default\"\n"
                "  allow own own=\"*\"\n"
                "policy context=\"mandatory\"\n"
                "  deny own own_prefix=\"a.b\"\n"
                "policy user=\"root\"\n"
                "  allow own own=\"r.s\"\n"
                "policy group=\"wheel\"\n"
                "  deny own own=\"x\"\n"
                "policy at_console=\"true\"\n"
                "  allow send send_destination=\"a.b\"\n");
        config_free(c);
}

static void test_every_rule_attribute(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *xml = NULL, *text = NULL, *text_loc = NULL;
        Config *c = NULL;

        xml = wrap("<policy context=\"default\">\n"
                   "<allow send_destination=\"d\" send_interface=\"i.f\" send_member=\"M\""
                   " send_path=\"/p\" send_type=\"method_call\" send_requested_reply=\"false\""
                   " send_broadcast=\"false\" eavesdrop=\"true\" min_fds=\"1\" max_fds=\"7\""
                   " log=\"true\"/>\n"
                   "<deny send_destination_prefix=\"a.b\" send_error=\"e.E\" send_type=\"error\"/>\n"
                   "<allow receive_sender=\"s\" receive_interface=\"i.f\" receive_member=\"M\""
                   " receive_path=\"/p\" receive_type=\"signal\" receive_requested_reply=\"true\""
                   " log=\"yes\"/>\n"
                   "<deny receive_error=\"e.E\" receive_type=\"*\" eavesdrop=\"false\"/>\n"
                   "<allow send_type=\"method_return\" send_broadcast=\"true\" send_destination=\"*\"/>\n"
                   "<allow eavesdrop=\"true\"/>\n"
                   "<allow send_destination=\"d\" min_fds=\" 5x\" max_fds=\"0x9\"/>\n"
                   "</policy>");
        g_assert_cmpint(load_str(xml, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==, "");
        g_assert_cmpuint(c->policies[0].n_rules, ==, 7);
        g_assert_cmpint(c->policies[0].rules[0].kind, ==, CONFIG_RULE_SEND);
        g_assert_cmpint(c->policies[0].rules[0].send_type, ==, CONFIG_MESSAGE_METHOD_CALL);
        g_assert_cmpint(c->policies[0].rules[2].kind, ==, CONFIG_RULE_RECEIVE);
        g_assert_cmpint(c->policies[0].rules[2].log, ==, CONFIG_FALSE);
        g_assert_cmpint(c->policies[0].rules[3].receive_type, ==, CONFIG_MESSAGE_ANY);
        /* eavesdrop alone is a receive rule (Debian's session.conf relies on that) */
        g_assert_cmpint(c->policies[0].rules[5].kind, ==, CONFIG_RULE_RECEIVE);
        g_assert_cmpuint(c->policies[0].rules[6].min_fds, ==, 5);
        g_assert_cmpuint(c->policies[0].rules[6].max_fds, ==, 0);
        text = dump(c, 0);
        g_assert_cmpstr(text, ==,
                "policy context=\"default\"\n"
                "  allow send send_destination=\"d\" send_interface=\"i.f\" send_member=\"M\""
                " send_path=\"/p\" send_type=\"method_call\" send_requested_reply=\"false\""
                " send_broadcast=\"false\" eavesdrop=\"true\" min_fds=1 max_fds=7 log=\"true\"\n"
                "  deny send send_destination_prefix=\"a.b\" send_error=\"e.E\" send_type=\"error\"\n"
                "  allow receive receive_sender=\"s\" receive_interface=\"i.f\" receive_member=\"M\""
                " receive_path=\"/p\" receive_type=\"signal\" receive_requested_reply=\"true\""
                " log=\"false\"\n"
                "  deny receive receive_error=\"e.E\" receive_type=\"*\" eavesdrop=\"false\"\n"
                "  allow send send_destination=\"*\" send_type=\"method_return\" send_broadcast=\"true\"\n"
                "  allow receive eavesdrop=\"true\"\n"
                "  allow send send_destination=\"d\" min_fds=5 max_fds=0\n");
        text_loc = dump(c, CONFIG_DUMP_LOCATIONS);
        g_assert_nonnull(strstr(text_loc, "policy context=\"default\"  # t.conf:2\n"));
        g_assert_nonnull(strstr(text_loc, "max_fds=0  # t.conf:9\n"));
        config_free(c);
}

/* Each case: body (from line 2), the exact diagnostic. Verdicts from dbus-daemon 1.14.10. */
static const struct { const char *body; const char *diag; } invalid_cases[] = {
        { "<foo/>", "t.conf:2: Element <foo> not allowed inside <busconfig> in configuration file" },
        { "<policy context=\"default\">\n<foo/></policy>",
          "t.conf:3: Element <foo> not allowed inside <policy> in configuration file" },
        { "<allow own=\"x\"/>", "t.conf:2: Element <allow> not allowed inside <busconfig> in configuration file" },
        { "<busconfig/>", "t.conf:2: Element <busconfig> not allowed inside <busconfig> in configuration file" },
        { "<policy context=\"default\"><policy context=\"default\"/></policy>",
          "t.conf:2: Element <policy> not allowed inside <policy> in configuration file" },
        { "<selinux><bogus/></selinux>", "t.conf:2: Element <bogus> not allowed inside <selinux> in configuration file" },
        { "<policy context=\"default\"><allow bar=\"x\"/></policy>",
          "t.conf:2: Attribute \"bar\" is invalid on <allow> element in this context" },
        { "<policy context=\"default\" bogus=\"x\"/>",
          "t.conf:2: Attribute \"bogus\" is invalid on <policy> element in this context" },
        { "<fork bogus=\"1\"/>", "t.conf:2: Attribute \"bogus\" is invalid on <fork> element in this context" },
        { "<include bogus=\"x\">a.conf</include>",
          "t.conf:2: Attribute \"bogus\" is invalid on <include> element in this context" },
        { "<selinux bogus=\"x\"/>", "t.conf:2: Attribute \"bogus\" is invalid on <selinux> element in this context" },
        { "<policy context=\"default\"><allow/></policy>",
          "t.conf:2: Element <allow> must have one or more attributes" },
        { "<policy context=\"default\"><deny min_fds=\"1\" max_fds=\"2\" log=\"true\"/></policy>",
          "t.conf:2: Element <deny> must have one or more attributes" },
        { "<policy context=\"default\"><allow send_type=\"bogus\"/></policy>", "t.conf:2: Bad message type \"bogus\"" },
        { "<policy context=\"default\"><allow receive_type=\"bogus\"/></policy>", "t.conf:2: Bad message type \"bogus\"" },
        { "<policy context=\"default\"><allow send_interface=\"a.b\" receive_interface=\"a.b\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send and receive attributes cannot be combined" },
        { "<policy context=\"default\"><allow send_requested_reply=\"false\" receive_requested_reply=\"true\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send and receive attributes cannot be combined" },
        { "<policy context=\"default\"><allow send_destination=\"a.b\" own=\"c.d\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow own_prefix=\"a.b\" own=\"c\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow user=\"root\" group=\"root\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><deny send_destination=\"*\" send_destination_prefix=\"a\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <deny>: send_destination cannot be combined with send_destination_prefix" },
        { "<policy context=\"default\"><allow send_error=\"a\" send_interface=\"b\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send_error cannot be combined with send_member or send_interface" },
        { "<policy context=\"default\"><allow send_member=\"a.b\"/></policy>",
          "t.conf:2: On element <allow>, if you specify a member you must specify an interface or a path. Keep in mind that not all messages have an interface field." },
        { "<policy context=\"default\"><allow receive_member=\"a\"/></policy>",
          "t.conf:2: On element <allow>, if you specify a member you must specify an interface or a path. Keep in mind that not all messages have an interface field." },
        { "<policy context=\"default\"><allow receive_error=\"a\" receive_interface=\"b\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: receive_error cannot be combined with receive_member or receive_interface" },
        { "<policy context=\"default\"><allow eavesdrop=\"true\" own=\"a\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow send_broadcast=\"true\" send_destination=\"org.freedesktop.DBus\"/></policy>",
          "t.conf:2: Rule with send_broadcast=\"true\" and send_destination=\"org.freedesktop.DBus\" cannot match anything" },
        { "<policy context=\"default\"><allow send_destination=\"a\" send_broadcast=\"true\"/></policy>",
          "t.conf:2: Rule with send_broadcast=\"true\" and send_destination=\"a\" cannot match anything" },
        { "<policy context=\"default\"><allow eavesdrop=\"maybe\"/></policy>",
          "t.conf:2: Bad value \"maybe\" for eavesdrop attribute, must be true or false" },
        { "<policy context=\"default\"><allow send_broadcast=\"x\"/></policy>",
          "t.conf:2: Bad value \"x\" for send_broadcast attribute, must be true or false" },
        { "<policy context=\"default\"><allow send_requested_reply=\"maybe\"/></policy>",
          "t.conf:2: Bad value \"maybe\" for send_requested_reply attribute, must be true or false" },
        { "<policy context=\"default\"><allow send_destination=\"a\" min_fds=\"abc\"/></policy>",
          "t.conf:2: Bad value \"abc\" for min_fds attribute, must be an integer in range 0 to 33554432 inclusive" },
        { "<policy context=\"default\"><allow send_destination=\"a\" min_fds=\"-1\"/></policy>",
          "t.conf:2: Bad value \"-1\" for min_fds attribute, must be an integer in range 0 to 33554432 inclusive" },
        { "<policy context=\"default\"><allow send_destination=\"a\" min_fds=\"\"/></policy>",
          "t.conf:2: Bad value \"\" for min_fds attribute, must be an integer in range 0 to 33554432 inclusive" },
        { "<policy context=\"default\"><allow send_destination=\"a\" max_fds=\"99999999999\"/></policy>",
          "t.conf:2: Bad value \"99999999999\" for max_fds attribute, must be an integer in range 0 to 33554432 inclusive" },
        { "<policy context=\"bogus\"></policy>",
          "t.conf:2: context attribute on <policy> must have the value \"default\" or \"mandatory\", not \"bogus\"" },
        { "<policy></policy>",
          "t.conf:2: <policy> element must have exactly one of (context|user|group|at_console) attributes" },
        { "<policy context=\"default\" user=\"root\"></policy>",
          "t.conf:2: <policy> element must have exactly one of (context|user|group|at_console) attributes" },
        { "<policy at_console=\"x\"/>", "t.conf:2: Unknown value \"x\" for at_console in message bus configuration file" },
        { "<limit name=\"bogus\">5</limit>", "t.conf:2: There is no limit called \"bogus\"" },
        { "<limit>5</limit>", "t.conf:2: <limit> element must have a \"name\" attribute" },
        { "<limit name=\"max_incoming_bytes\">abc</limit>",
          "t.conf:2: <limit name=\"max_incoming_bytes\"> element has invalid value (could not parse as integer)" },
        { "<limit name=\"max_incoming_bytes\">99999999999999999999999</limit>",
          "t.conf:2: <limit name=\"max_incoming_bytes\"> element has invalid value (could not parse as integer)" },
        { "<limit name=\"reply_timeout\">-1</limit>", "t.conf:2: <limit name=\"reply_timeout\"> must be a positive number" },
        { "<limit name=\"max_incoming_bytes\"/>",
          "t.conf:2: XML element <limit> was expected to have content inside it" },
        { "<include ignore_missing=\"maybe\">x.conf</include>",
          "t.conf:2: ignore_missing attribute must have value \"yes\" or \"no\"" },
        { "<include if_selinux_enabled=\"maybe\">x.conf</include>",
          "t.conf:2: if_selinux_enabled attribute must have value \"yes\" or \"no\"" },
        { "<include/>", "t.conf:2: XML element <include> was expected to have content inside it" },
        { "<listen/>", "t.conf:2: XML element <listen> was expected to have content inside it" },
        { "<user></user>", "t.conf:2: XML element <user> was expected to have content inside it" },
        { "<type/>", "t.conf:2: XML element <type> was expected to have content inside it" },
        { "<fork>x</fork>", "t.conf:2: No text content expected inside XML element fork in configuration file" },
        { "hello", "t.conf:2: No text content expected inside XML element busconfig in configuration file" },
        { "<standard_session_servicedirs>x</standard_session_servicedirs>",
          "t.conf:2: No text content expected inside XML element standard_session_servicedirs in configuration file" },
        { "<apparmor mode=\"bogus\"/>",
          "t.conf:2: Mode attribute on <apparmor> must have value \"required\", \"enabled\" or \"disabled\", not \"bogus\"" },
        { "<selinux><associate own=\"a\"/></selinux>",
          "t.conf:2: Element <associate> must have attributes own=\"<servicename>\" and context=\"<selinux context>\"" },
        /* the order of dbus-daemon 1.14.10's checks: with two faults, its message names the
         * one it checks first (found by feeding it these exact rules) */
        { "<policy context=\"default\"><allow own=\"x\" min_fds=\"1\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow user=\"x\" max_fds=\"1\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow own_prefix=\"x\" send_type=\"bogus\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow own=\"x\" eavesdrop=\"bogus\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: own, own_prefix, user, group and the message-related attributes cannot be combined" },
        { "<policy context=\"default\"><allow send_error=\"a\" send_member=\"b\"/></policy>",
          "t.conf:2: On element <allow>, if you specify a member you must specify an interface or a path. Keep in mind that not all messages have an interface field." },
        { "<policy context=\"default\"><allow send_member=\"b\" receive_sender=\"x\"/></policy>",
          "t.conf:2: On element <allow>, if you specify a member you must specify an interface or a path. Keep in mind that not all messages have an interface field." },
        { "<policy context=\"default\"><allow send_member=\"b\" own=\"x\"/></policy>",
          "t.conf:2: On element <allow>, if you specify a member you must specify an interface or a path. Keep in mind that not all messages have an interface field." },
        { "<policy context=\"default\"><allow send_type=\"bogus\" send_destination=\"a\" send_destination_prefix=\"b\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send_destination cannot be combined with send_destination_prefix" },
        { "<policy context=\"default\"><allow send_type=\"bogus\" send_error=\"e\" send_interface=\"i\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send_error cannot be combined with send_member or send_interface" },
        { "<policy context=\"default\"><allow send_destination=\"a\" send_destination_prefix=\"b\" send_error=\"e\" send_interface=\"i\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send_error cannot be combined with send_member or send_interface" },
        { "<policy context=\"default\"><allow receive_type=\"bogus\" send_type=\"bogus\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send and receive attributes cannot be combined" },
        { "<policy context=\"default\"><allow send_type=\"method_call\" receive_requested_reply=\"bogus\"/></policy>",
          "t.conf:2: Invalid combination of attributes on element <allow>: send and receive attributes cannot be combined" },
        { "<policy context=\"default\"><allow send_broadcast=\"bogus\" send_requested_reply=\"bogus\"/></policy>",
          "t.conf:2: Bad value \"bogus\" for send_broadcast attribute, must be true or false" },
        { "<policy context=\"default\"><allow send_requested_reply=\"bogus\" eavesdrop=\"bogus\"/></policy>",
          "t.conf:2: Bad value \"bogus\" for eavesdrop attribute, must be true or false" },
        { "<policy context=\"default\"><allow send_broadcast=\"true\" send_destination=\"a\" send_requested_reply=\"bogus\"/></policy>",
          "t.conf:2: Rule with send_broadcast=\"true\" and send_destination=\"a\" cannot match anything" },
        { "<policy context=\"default\"><allow send_broadcast=\"true\" send_destination=\"a\" min_fds=\"x\"/></policy>",
          "t.conf:2: Rule with send_broadcast=\"true\" and send_destination=\"a\" cannot match anything" },
        { "<policy context=\"default\"><allow max_fds=\"x\" min_fds=\"y\" send_destination=\"a\"/></policy>",
          "t.conf:2: Bad value \"x\" for max_fds attribute, must be an integer in range 0 to 33554432 inclusive" },
        { "<policy context=\"default\"><allow send_destination=\"a\" min_fds=\"-5\"/></policy>",
          "t.conf:2: Bad value \"-5\" for min_fds attribute, must be an integer in range 0 to 33554432 inclusive" },
        /* children of elements that take none: dbus-daemon's other wording */
        { "<fork><foo/></fork>", "t.conf:2: Element <foo> is not allowed in this context" },
        { "<listen>x<policy context=\"default\"/></listen>", "t.conf:2: Element <policy> is not allowed in this context" },
        { "<policy context=\"default\"><allow own=\"x\"><foo/></allow></policy>",
          "t.conf:2: Element <foo> is not allowed in this context" },
        { "<selinux><associate own=\"a\" context=\"b\"><foo/></associate></selinux>",
          "t.conf:2: Element <foo> is not allowed in this context" },
        /* strtoll base 0: hex that overflows a long, no digits at all */
        { "<limit name=\"max_incoming_bytes\">0xffffffffffffffff</limit>",
          "t.conf:2: <limit name=\"max_incoming_bytes\"> element has invalid value (could not parse as integer)" },
        { "<limit name=\"max_incoming_bytes\">x5</limit>",
          "t.conf:2: <limit name=\"max_incoming_bytes\"> element has invalid value (could not parse as integer)" },
        /* XML syntax errors: expat's message at the line where expat stopped */
        { "<policy context=\"default\">\n<allow\n", "t.conf:5: not well-formed (invalid token)" },
        { "<policy context=\"default\"><allow own=\"a\" own=\"b\"/></policy>", "t.conf:2: duplicate attribute" },
        { "<listen>a&#0;</listen>", "t.conf:2: reference to invalid character number" },
        { "<fork/>\n\n<syslog>", "t.conf:5: mismatched tag" },
};

static void test_invalid(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(invalid_cases); ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                g_autofree char *xml = wrap(invalid_cases[i].body), *want = NULL;
                Config *c = NULL;

                g_test_message("case %zu: %s", i, invalid_cases[i].body);
                g_assert_cmpint(load_str(xml, diag, &c), ==, CONFIG_E_INVALID);
                g_assert_null(c);
                want = g_strdup_printf("%s\n", invalid_cases[i].diag);
                g_assert_cmpstr(diag->str, ==, want);
        }
}

/* Accepted by dbus-daemon 1.14.10 although odd; we must accept them too. */
static const char *const valid_cases[] = {
        "<policy context=\"default\"><allow send_destination=\"not valid\"/></policy>",
        "<policy context=\"default\"><allow send_interface=\"1bad\" send_path=\"noslash\"/></policy>",
        "<policy context=\"default\"><allow own=\"\"/><allow own_prefix=\"*\"/></policy>",
        "<policy context=\"default\"><allow send_type=\"*\"/><allow eavesdrop=\"true\"/></policy>",
        "<policy context=\"default\"><allow send_destination=\"a\" max_fds=\"5\" min_fds=\"9\"/></policy>",
        "<policy context=\"default\"><allow send_interface=\"*\" send_member=\"*\"/></policy>",
        "<policy context=\"default\"><allow send_member=\"a\" send_path=\"/\"/></policy>",
        "<policy user=\"nosuchuserxx\"/><policy group=\"nosuchgroupxx\"/><policy at_console=\"false\"/>",
        "<policy context=\"default\"><allow send_broadcast=\"true\" send_destination=\"*\"/></policy>",
        "<policy context=\"default\"><allow send_broadcast=\"true\" send_destination_prefix=\"a\"/></policy>",
        "<type>weird</type><type>session</type>",
        "<user>nosuchuserxx</user>",
        "<listen> </listen>",
        "<listen><![CDATA[unix:tmpdir=/tmp]]></listen>",
        "<limit name=\"max_incoming_bytes\">0</limit>",
        "<apparmor/><apparmor mode=\"required\"/>",
        "<includedir>nonexistent-dir</includedir>",
        "<include ignore_missing=\"yes\">nonexistent.conf</include>",
        "<include if_selinux_enabled=\"yes\">x.conf</include>",
        "<!-- comment --><fork/>  <syslog/>\n\t",
        /* dbus-daemon 1.14.10 accepts these (strtoul/strtoll leniency) */
        "<policy context=\"default\"><allow send_destination=\"a\" min_fds=\"+5\" max_fds=\"-0\"/></policy>",
        "<policy context=\"default\"><allow own=\"x\" log=\"true\"/><allow user=\"*\" log=\"x\"/></policy>",
        "<limit name=\"max_incoming_bytes\">5abc</limit><limit name=\"max_outgoing_bytes\">0x</limit>",
        "<limit name=\"max_message_size\">1e3</limit><limit name=\"auth_timeout\">-0</limit>",
        "<fork> </fork><policy context=\"default\">\n </policy>",
        /* the Containers1 limits (dbus's test data max-containers.conf uses one) */
        "<limit name=\"max_containers\">3</limit><limit name=\"max_containers_per_user\">1</limit>"
        "<limit name=\"max_container_metadata_bytes\">4096</limit>"
        "<limit name=\"max_connections_per_container\">2</limit>",
};

/* The value dbus-daemon's strtoll(base 0) reading of <limit> gives. */
static void test_limit_values(void) {
        static const struct { const char *text; uint64_t value; } cases[] = {
                { "0x10", 16 }, { "010", 8 }, { "5abc", 5 }, { "1e3", 1 }, { "0x", 0 },
                { " +7 ", 7 }, { "-0", 0 }, { "9223372036854775807", 9223372036854775807ull },
                { "0X7fffffffffffffff", 9223372036854775807ull }, { "09", 0 },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                g_autofree char *xml = g_strdup_printf(
                        "<busconfig><limit name=\"reply_timeout\">%s</limit></busconfig>",
                        cases[i].text);
                Config *c = NULL;

                g_test_message("case %zu: %s", i, cases[i].text);
                g_assert_cmpint(load_str(xml, diag, &c), ==, 0);
                g_assert_cmpuint(c->limits[CONFIG_LIMIT_REPLY_TIMEOUT].value, ==, cases[i].value);
                config_free(c);
        }
}

static void test_valid_odd(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(valid_cases); ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                g_autofree char *xml = wrap(valid_cases[i]);
                Config *c = NULL;

                g_test_message("case %zu: %s", i, valid_cases[i]);
                g_assert_cmpint(load_str(xml, diag, &c), ==, 0);
                g_assert_cmpstr(diag->str, ==, "");
                config_free(c);
        }
}

static void test_last_wins(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *xml = wrap("<type>a</type>\n<type>b</type>\n"
                                    "<limit name=\"auth_timeout\">1</limit>\n"
                                    "<limit name=\"auth_timeout\">2</limit>\n"
                                    "<listen>x:</listen><listen>x:</listen>\n"
                                    "<user>a<!-- split -->b</user>");
        Config *c = NULL;

        g_assert_cmpint(load_str(xml, diag, &c), ==, 0);
        g_assert_cmpstr(c->type.value, ==, "b");
        g_assert_cmpuint(c->type.loc.line, ==, 3);
        g_assert_cmpuint(c->limits[CONFIG_LIMIT_AUTH_TIMEOUT].value, ==, 2);
        g_assert_cmpuint(c->limits[CONFIG_LIMIT_AUTH_TIMEOUT].loc.line, ==, 5);
        g_assert_cmpuint(c->n_listen, ==, 2);
        g_assert_cmpstr(c->user.value, ==, "ab");
        config_free(c);
}

/* SELinux is not supported: if_selinux_enabled includes are skipped silently, root-relative
 * ones with a warning; neither is opened. */
static void test_selinux_include(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *xml = wrap("<include if_selinux_enabled=\"yes\" selinux_root_relative=\"yes\">a</include>\n"
                                    "<include selinux_root_relative=\"yes\">contexts/x</include>\n"
                                    "<include if_selinux_enabled=\"no\" ignore_missing=\"yes\">b.conf</include>");
        Config *c = NULL;

        g_assert_cmpint(load_str(xml, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==,
                        "t.conf:3: warning: <include selinux_root_relative=\"yes\"> not supported (no SELinux), ignoring\n");
        config_free(c);
}

static void test_root(void) {
        static const struct { const char *xml; const char *diag; } cases[] = {
                { "", "t.conf:1: no element found\n" },
                { "<?xml version=\"1.0\"?>\n<foo/>\n",
                  "t.conf:2: Unknown element <foo> at root of configuration file\n" },
                { "<busconfig/>\n<busconfig/>\n", "t.conf:2: junk after document element\n" },
                { "\n\n<busconfig>", "t.conf:3: no element found\n" },
        };

        /* dbus-daemon ignores the DOCTYPE: none, or a wrong one, is fine */
        static const char *const ok[] = {
                "<busconfig/>",
                "<!DOCTYPE foo>\n<busconfig/>",
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE busconfig PUBLIC "
                "\"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" "
                "\"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig/>",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                Config *c = NULL;

                g_assert_cmpint(load_str(cases[i].xml, diag, &c), ==, CONFIG_E_INVALID);
                g_assert_cmpstr(diag->str, ==, cases[i].diag);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(ok); ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                Config *c = NULL;

                g_assert_cmpint(load_str(ok[i], diag, &c), ==, 0);
                g_assert_cmpstr(diag->str, ==, "");
                config_free(c);
        }
}

/* A temp dir with files; removed at the end. */
typedef struct {
        char *dir;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer ctx) {
        f->dir = g_dir_make_tmp("policy-xml-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
}

static void rm_rf(const char *path) {
        GDir *d = g_dir_open(path, 0, NULL);
        const char *name;

        if (d) {
                while ((name = g_dir_read_name(d))) {
                        g_autofree char *p = g_build_filename(path, name, NULL);

                        rm_rf(p);
                }
                g_dir_close(d);
        }
        (void) g_remove(path);
}

static void fixture_teardown(Fixture *f, gconstpointer ctx) {
        rm_rf(f->dir);
        g_free(f->dir);
}

static char *put(Fixture *f, const char *rel, const char *body) {
        g_autofree char *full = g_build_filename(f->dir, rel, NULL);
        g_autofree char *parent = g_path_get_dirname(full);
        g_autofree char *xml = wrap(body);

        g_assert_cmpint(g_mkdir_with_parents(parent, 0700), ==, 0);
        g_assert_true(g_file_set_contents(full, xml, -1, NULL));
        return g_steal_pointer(&full);
}

static void test_include_relative(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *top = NULL, *b = NULL, *want = NULL;
        Config *c = NULL;

        top = put(f, "top.conf", "<listen>x:1</listen>\n<include>sub/b.conf</include>\n"
                                 "<listen>x:4</listen>");
        b = put(f, "sub/b.conf", "<listen>x:b</listen>\n<include>c.conf</include>\n"
                                 "<servicedir>svc</servicedir>");
        g_free(put(f, "sub/c.conf", "<type>from-c</type>\n<listen>x:c</listen>"));
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==, "");
        g_assert_cmpuint(c->n_listen, ==, 4);
        g_assert_cmpstr(c->listen[0].value, ==, "x:1");
        g_assert_cmpstr(c->listen[1].value, ==, "x:b");
        g_assert_cmpstr(c->listen[2].value, ==, "x:c");
        g_assert_cmpstr(c->listen[3].value, ==, "x:4");
        g_assert_cmpuint(c->listen[2].loc.line, ==, 3);
        g_assert_true(g_str_has_suffix(c->listen[2].loc.file, "/sub/c.conf"));
        g_assert_cmpstr(c->listen[1].loc.file, ==, b);
        g_assert_cmpstr(c->listen[3].loc.file, ==, top);
        g_assert_cmpstr(c->type.value, ==, "from-c");
        want = g_strdup_printf("%s/sub/svc", f->dir);
        g_assert_cmpstr(c->servicedirs[0].path, ==, want);
        config_free(c);

        /* the same, includes disabled: only the top file */
        g_assert_cmpint(load_file(top, CONFIG_LOAD_NO_INCLUDES, diag, &c), ==, 0);
        g_assert_cmpuint(c->n_listen, ==, 2);
        config_free(c);
}

static void test_include_missing(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *top = NULL, *want = NULL;
        Config *c = NULL;

        top = put(f, "top.conf", "<fork/>\n<include>missing.conf</include>");
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, CONFIG_E_INVALID);
        want = g_strdup_printf("%s:3: Failed to open \"%s/missing.conf\": No such file or directory\n",
                               top, f->dir);
        g_assert_cmpstr(diag->str, ==, want);
        g_free(top);
        top = put(f, "top.conf", "<fork/>\n<include ignore_missing=\"yes\">missing.conf</include>");
        g_string_truncate(diag, 0);
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==, "");
        config_free(c);
        g_assert_cmpint(load_file("/nonexistent/x.conf", 0, diag, &c), ==, CONFIG_E_INVALID);
}

static void test_include_error_location(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *top = NULL, *bad = NULL, *want = NULL;
        Config *c = NULL;

        top = put(f, "top.conf", "<include>bad.conf</include>");
        bad = put(f, "bad.conf", "<fork/>\n\n<policy context=\"default\"><allow/></policy>");
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, CONFIG_E_INVALID);
        want = g_strdup_printf("%s:4: Element <allow> must have one or more attributes\n", bad);
        g_assert_cmpstr(diag->str, ==, want);
}

static void test_includedir(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *top = NULL, *want = NULL, *broken = NULL;
        Config *c = NULL;

        top = put(f, "top.conf", "<listen>x:top</listen>\n<includedir>d</includedir>\n"
                                 "<listen>x:end</listen>");
        g_free(put(f, "d/b.conf", "<listen>x:b</listen>"));
        g_free(put(f, "d/a.conf", "<listen>x:a</listen>"));
        g_free(put(f, "d/10.conf", "<listen>x:10</listen>"));
        g_free(put(f, "d/c.conf.bak", "<listen>x:bak</listen>"));
        g_free(put(f, "d/z.notconf", "<bogus/>"));
        broken = put(f, "d/m.conf", "<listen>x:m</listen><bogus/>");
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, 0);
        g_assert_cmpuint(c->n_listen, ==, 5);
        g_assert_cmpstr(c->listen[0].value, ==, "x:top");
        g_assert_cmpstr(c->listen[1].value, ==, "x:10");
        g_assert_cmpstr(c->listen[2].value, ==, "x:a");
        g_assert_cmpstr(c->listen[3].value, ==, "x:b");
        g_assert_cmpstr(c->listen[4].value, ==, "x:end");
        /* the broken file is dropped whole, with a warning, as dbus-daemon does */
        want = g_strdup_printf("%s:2: Element <bogus> not allowed inside <busconfig> in configuration file\n"
                               "%s:3: warning: Encountered error while parsing \"%s/d/m.conf\", ignoring it\n",
                               broken, top, f->dir);
        g_assert_cmpstr(diag->str, ==, want);
        c = config_free(c);

        /* an <includedir> that is a file is an error (dbus-daemon 1.14.10: "Failed to read
         * directory ...: Not a directory"); a missing one is not */
        {
                g_autoptr(GString) diag2 = g_string_new(NULL);
                g_autofree char *notdir = put(f, "notdir.conf",
                                              "<includedir>missing.d</includedir>\n"
                                              "<includedir>top.conf</includedir>");
                g_autofree char *want2 = g_strdup_printf(
                        "%s:3: Failed to read directory \"%s/top.conf\": Not a directory\n",
                        notdir, f->dir);

                g_assert_cmpint(load_file(notdir, 0, diag2, &c), ==, CONFIG_E_INVALID);
                g_assert_null(c);
                g_assert_cmpstr(diag2->str, ==, want2);
        }
}

static void test_include_cycle(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *a = NULL, *b = NULL, *self = NULL, *want = NULL;
        Config *c = NULL;

        a = put(f, "a.conf", "<include>b.conf</include>");
        b = put(f, "b.conf", "<fork/>\n<include>./a.conf</include>");
        g_assert_cmpint(load_file(a, 0, diag, &c), ==, CONFIG_E_INVALID);
        want = g_strdup_printf("%s:3: Circular inclusion of file \"%s/./a.conf\"\n", b, f->dir);
        g_assert_cmpstr(diag->str, ==, want);

        self = put(f, "self.conf", "<include>self.conf</include>");
        g_string_truncate(diag, 0);
        g_assert_cmpint(load_file(self, 0, diag, &c), ==, CONFIG_E_INVALID);
        g_free(want);
        want = g_strdup_printf("%s:2: Circular inclusion of file \"%s/self.conf\"\n", self, f->dir);
        g_assert_cmpstr(diag->str, ==, want);

        /* the same file twice, not nested, is fine */
        g_free(put(f, "inc.conf", "<listen>x:</listen>"));
        g_free(a);
        a = put(f, "twice.conf", "<include>inc.conf</include><include>inc.conf</include>");
        g_string_truncate(diag, 0);
        g_assert_cmpint(load_file(a, 0, diag, &c), ==, 0);
        g_assert_cmpuint(c->n_listen, ==, 2);
        config_free(c);
}

/* A file has no path to resolve (dbus-broker's tests hand dbus-daemon a memfd as
 * --config-file=/proc/self/fd/N): it loads, and including itself is still a cycle, as is a
 * cycle through a symlink. */
static void test_memfd(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *path = NULL, *xml = NULL, *want = NULL, *a = NULL, *link = NULL;
        Config *c = NULL;
        int fd;

        fd = memfd_create("bus-config", MFD_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        path = g_strdup_printf("/proc/self/fd/%d", fd);
        xml = wrap("<listen>unix:tmpdir=/tmp</listen>");
        g_assert_cmpint(write(fd, xml, strlen(xml)), ==, (ssize_t)strlen(xml));
        g_assert_cmpint(load_file(path, 0, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==, "");
        g_assert_cmpuint(c->n_listen, ==, 1);
        c = config_free(c);

        g_free(xml);
        xml = g_strdup_printf("<busconfig>\n<include>%s</include>\n</busconfig>\n", path);
        g_assert_cmpint(ftruncate(fd, 0), ==, 0);
        g_assert_cmpint(pwrite(fd, xml, strlen(xml), 0), ==, (ssize_t)strlen(xml));
        g_assert_cmpint(load_file(path, 0, diag, &c), ==, CONFIG_E_INVALID);
        want = g_strdup_printf("%s:2: Circular inclusion of file \"%s\"\n", path, path);
        g_assert_cmpstr(diag->str, ==, want);
        g_assert_cmpint(close(fd), ==, 0);

        a = put(f, "a.conf", "<include>link.conf</include>");
        link = g_build_filename(f->dir, "link.conf", NULL);
        g_assert_cmpint(symlink(a, link), ==, 0);
        g_string_truncate(diag, 0);
        g_assert_cmpint(load_file(a, 0, diag, &c), ==, CONFIG_E_INVALID);
        g_free(want);
        want = g_strdup_printf("%s:2: Circular inclusion of file \"%s\"\n", a, link);
        g_assert_cmpstr(diag->str, ==, want);
}

static void test_include_depth(Fixture *f, gconstpointer ctx) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *top = NULL;
        Config *c = NULL;
        unsigned i;

        /* f0 includes f1 ... ; a chain of exactly CONFIG_INCLUDE_DEPTH_MAX files loads */
        for (i = 0; i < CONFIG_INCLUDE_DEPTH_MAX; ++i) {
                g_autofree char *name = g_strdup_printf("f%u.conf", i);
                g_autofree char *body = i + 1 < CONFIG_INCLUDE_DEPTH_MAX ?
                        g_strdup_printf("<include>f%u.conf</include>", i + 1) :
                        g_strdup("<listen>x:deep</listen>");

                g_free(put(f, name, body));
        }
        top = g_build_filename(f->dir, "f0.conf", NULL);
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, 0);
        g_assert_cmpuint(c->n_listen, ==, 1);
        config_free(c);

        /* one more is too deep */
        g_free(top);
        top = put(f, "g.conf", "<include>f0.conf</include>");
        g_assert_cmpint(load_file(top, 0, diag, &c), ==, CONFIG_E_INVALID);
        g_assert_nonnull(strstr(diag->str, "exceeds the maximum include depth of 16"));
        g_assert_nonnull(strstr(diag->str, "/f15.conf\""));
}

static void load_debian(const char *path) {
        g_autoptr(GString) diag = g_string_new(NULL);
        g_autofree char *text = NULL;
        Config *c = NULL;

        if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
                g_test_skip("not installed");
                return;
        }
        g_assert_cmpint(load_file(path, 0, diag, &c), ==, 0);
        g_assert_cmpstr(diag->str, ==, "");
        g_assert_nonnull(c->type.value);
        g_assert_cmpuint(c->n_listen, >=, 1);
        g_assert_cmpuint(c->n_policies, >=, 1);
        g_assert_cmpint(c->policies[0].kind, ==, CONFIG_POLICY_DEFAULT);
        text = dump(c, CONFIG_DUMP_LOCATIONS);
        g_assert_nonnull(strstr(text, path));
        config_free(c);
}

static void test_debian_session(void) {
        load_debian("/usr/share/dbus-1/session.conf");
}

static void test_debian_system(void) {
        load_debian("/usr/share/dbus-1/system.conf");
}

static char *data_path(const char *sub, const char *name) {
        return g_build_filename(TEST_DATA_DIR, sub, name, NULL);
}

static gint compare_strv(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static GPtrArray *list_conf(const char *sub) {
        g_autofree char *dir = data_path(sub, NULL);
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
        GDir *d = g_dir_open(dir, 0, NULL);
        const char *n;

        g_assert_nonnull(d);
        while ((n = g_dir_read_name(d)))
                if (g_str_has_suffix(n, ".conf"))
                        g_ptr_array_add(names, g_strdup(n));
        g_dir_close(d);
        g_ptr_array_sort(names, compare_strv);
        return names;
}

/* valid-config/X.conf loads without diagnostics; X.dump, if present, is its exact dump. */
static void test_data_valid(void) {
        g_autoptr(GPtrArray) names = list_conf("valid-config");

        g_assert_cmpuint(names->len, >, 0);
        for (guint i = 0; i < names->len; ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                g_autofree char *path = data_path("valid-config", names->pdata[i]);
                g_autofree char *expect_path = g_strconcat(path, ".dump", NULL);
                g_autofree char *expect = NULL, *text = NULL;
                Config *c = NULL;

                g_test_message("%s", path);
                g_assert_cmpint(load_file(path, 0, diag, &c), ==, 0);
                g_assert_cmpstr(diag->str, ==, "");
                text = dump(c, 0);
                if (g_file_get_contents(expect_path, &expect, NULL, NULL))
                        g_assert_cmpstr(text, ==, expect);
                config_free(c);
        }
}

/*
 * invalid-config/X.conf fails; X.conf.err holds the exact diagnostics with "@" standing for
 * the directory.
 */
static void test_data_invalid(void) {
        g_autoptr(GPtrArray) names = list_conf("invalid-config");
        g_autofree char *dir = data_path("invalid-config", NULL);

        g_assert_cmpuint(names->len, >, 0);
        for (guint i = 0; i < names->len; ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                g_autofree char *path = data_path("invalid-config", names->pdata[i]);
                g_autofree char *err_path = g_strconcat(path, ".err", NULL);
                g_autofree char *expect = NULL;
                g_auto(GStrv) parts = NULL;
                g_autofree char *want = NULL;
                Config *c = NULL;

                g_test_message("%s", path);
                g_assert_cmpint(load_file(path, 0, diag, &c), ==, CONFIG_E_INVALID);
                g_assert_true(g_file_get_contents(err_path, &expect, NULL, NULL));
                parts = g_strsplit(expect, "@", -1);
                want = g_strjoinv(dir, parts);
                g_assert_cmpstr(diag->str, ==, want);
        }
}

/* equiv-config/X-a.conf and X-b.conf (and -c ...) dump identically; X-a differs from Y-a. */
static void test_data_equiv(void) {
        g_autoptr(GPtrArray) names = list_conf("equiv-config");
        g_autoptr(GHashTable) groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                             g_free);
        guint n_compared = 0;

        for (guint i = 0; i < names->len; ++i) {
                g_autoptr(GString) diag = g_string_new(NULL);
                g_autofree char *path = data_path("equiv-config", names->pdata[i]);
                const char *name = names->pdata[i], *dash = strrchr(name, '-');
                g_autofree char *group = NULL, *text = NULL;
                const char *prev;
                Config *c = NULL;

                g_assert_nonnull(dash);
                group = g_strndup(name, (gsize)(dash - name));
                g_test_message("%s", path);
                g_assert_cmpint(load_file(path, 0, diag, &c), ==, 0);
                g_assert_cmpstr(diag->str, ==, "");
                text = dump(c, 0);
                config_free(c);
                prev = g_hash_table_lookup(groups, group);
                if (prev) {
                        g_assert_cmpstr(text, ==, prev);
                        ++n_compared;
                } else {
                        GHashTableIter it;
                        gpointer k, v;

                        /* groups must differ from each other, or the test proves nothing */
                        g_hash_table_iter_init(&it, groups);
                        while (g_hash_table_iter_next(&it, &k, &v))
                                g_assert_cmpstr(text, !=, v);
                        g_hash_table_insert(groups, g_steal_pointer(&group),
                                            g_steal_pointer(&text));
                }
        }
        g_assert_cmpuint(n_compared, >=, 3);
}

static void test_limit_names(void) {
        for (int i = 0; i < _CONFIG_LIMIT_N; ++i)
                g_assert_cmpint(config_limit_from_string(config_limit_to_string(i)), ==, i);
        g_assert_cmpint(config_limit_from_string("bogus"), ==, -1);
        g_assert_null(config_limit_to_string(_CONFIG_LIMIT_N));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/policy-xml/loader/every-element", test_every_element);
        g_test_add_func("/policy-xml/loader/every-rule-attribute", test_every_rule_attribute);
        g_test_add_func("/policy-xml/loader/invalid", test_invalid);
        g_test_add_func("/policy-xml/loader/valid-odd", test_valid_odd);
        g_test_add_func("/policy-xml/loader/last-wins", test_last_wins);
        g_test_add_func("/policy-xml/loader/root", test_root);
        g_test_add_func("/policy-xml/loader/selinux-include", test_selinux_include);
        g_test_add_func("/policy-xml/loader/limit-names", test_limit_names);
        g_test_add_func("/policy-xml/loader/limit-values", test_limit_values);
        g_test_add("/policy-xml/loader/include-relative", Fixture, NULL, fixture_setup,
                   test_include_relative, fixture_teardown);
        g_test_add("/policy-xml/loader/include-missing", Fixture, NULL, fixture_setup,
                   test_include_missing, fixture_teardown);
        g_test_add("/policy-xml/loader/include-error-location", Fixture, NULL, fixture_setup,
                   test_include_error_location, fixture_teardown);
        g_test_add("/policy-xml/loader/includedir", Fixture, NULL, fixture_setup,
                   test_includedir, fixture_teardown);
        g_test_add("/policy-xml/loader/include-cycle", Fixture, NULL, fixture_setup,
                   test_include_cycle, fixture_teardown);
        g_test_add("/policy-xml/loader/memfd", Fixture, NULL, fixture_setup, test_memfd,
                   fixture_teardown);
        g_test_add("/policy-xml/loader/include-depth", Fixture, NULL, fixture_setup,
                   test_include_depth, fixture_teardown);
        g_test_add_func("/policy-xml/loader/debian-session", test_debian_session);
        g_test_add_func("/policy-xml/loader/debian-system", test_debian_system);
        g_test_add_func("/policy-xml/loader/data-valid", test_data_valid);
        g_test_add_func("/policy-xml/loader/data-invalid", test_data_invalid);
        g_test_add_func("/policy-xml/loader/data-equiv", test_data_equiv);
        return g_test_run();
}
