/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * match_rule_parse(): every verdict in the reference table and in match-rule-generated.inc
 * was taken from dbus-daemon 1.14.10 (AddMatch on a session bus started for the purpose),
 * so the parser accepts exactly what dbus-daemon accepts. (The same comparison over 20000
 * generated rules and the fuzzing corpus found no difference.) The other cases check what
 * the keys parse to.
 */
#include <string.h>
#include "compat/match-rule.h"
#include "wire/protocol.h"
#include <glib.h>       /* after util/macro.h: GLib redefines MIN/MAX without warning */

typedef struct {
        const char *rule;
        int expect;
} RuleCase;

/* verdicts of dbus-daemon 1.14.10: 0 accepted, INVALID = MatchRuleInvalid,
 * TOO_LONG = LimitsExceeded */
static const RuleCase reference_cases[] = {
        { "", 0 },
        { "   ", 0 },
        { "type='signal'", 0 },
        { " type = 'signal' ", MATCH_RULE_E_INVALID },
        { "type= 'signal'", MATCH_RULE_E_INVALID },
        { "type ='signal'", 0 },
        { "type='signal' ,member='A'", MATCH_RULE_E_INVALID },
        { "type='signal',,member='A'", MATCH_RULE_E_INVALID },
        { ",type='signal'", MATCH_RULE_E_INVALID },
        { "type='signal',", 0 },
        { "type=signal", 0 },
        { "type='sig'nal", 0 },
        { "type", MATCH_RULE_E_INVALID },
        { "=foo", 0 },
        { "type='signal',type='signal'", MATCH_RULE_E_INVALID },
        { "path='/a',path_namespace='/a'", MATCH_RULE_E_INVALID },
        { "path_namespace='/'", 0 },
        { "path='/a/'", MATCH_RULE_E_INVALID },
        { "sender='a'", MATCH_RULE_E_INVALID },
        { "sender=':1.2'", 0 },
        { "foo='x'", MATCH_RULE_E_INVALID },
        { "arg0='x',arg0='y'", MATCH_RULE_E_INVALID },
        { "arg0='x',arg0path='y'", MATCH_RULE_E_INVALID },
        { "arg63='x'", 0 },
        { "arg64='x'", MATCH_RULE_E_INVALID },
        { "arg='x'", MATCH_RULE_E_INVALID },
        { "arg1namespace='a.b'", MATCH_RULE_E_INVALID },
        { "arg0namespace='a.b.'", MATCH_RULE_E_INVALID },
        { "arg0namespace='a'", 0 },
        { "arg0namespace=':1'", 0 },
        { "arg00='x'", 0 },
        { "arg0path=''", 0 },
        { "argx='x'", MATCH_RULE_E_INVALID },
        { "arg1pat='x'", MATCH_RULE_E_INVALID },
        { "eavesdrop='TRUE'", MATCH_RULE_E_INVALID },
        { "eavesdrop='true'", 0 },
        { "member='a\\'b'", MATCH_RULE_E_INVALID },
        { "member='a'\\''b'", MATCH_RULE_E_INVALID },
        { "arg0='a\\'b'", MATCH_RULE_E_INVALID },
        { "arg0=a\\'b", 0 },
        { "arg0='x", MATCH_RULE_E_INVALID },
        { "arg0=x\\", 0 },
        { "type='signal' member='a'", MATCH_RULE_E_INVALID },
        { "type='method_call'", 0 },
        { "type='error'", 0 },
        { "type='method_return'", 0 },
        { "type=''", MATCH_RULE_E_INVALID },
        { "interface=''", MATCH_RULE_E_INVALID },
        { "destination='x'", MATCH_RULE_E_INVALID },
        { "destination=':1.0'", 0 },
        { "type='signal'\t", MATCH_RULE_E_INVALID },
        { "\ttype='signal'", 0 },
        { "TYPE='signal'", MATCH_RULE_E_INVALID },
        { "arg0path='a'", 0 },
        { "arg0=''", 0 },
        { "path=''", MATCH_RULE_E_INVALID },
        { "sender=''", MATCH_RULE_E_INVALID },
        { "interface='a'", MATCH_RULE_E_INVALID },
        { "member='1a'", MATCH_RULE_E_INVALID },
        { "arg62path='/a'", 0 },
        { "arg01='x'", 0 },
        { "arg+1='x'", 0 },
        { "arg 1='x'", MATCH_RULE_E_INVALID },
        { "=foo,type='x'", 0 },
        { "type='signal',=x", 0 },
        { "=", 0 },
        { "= ,type='x'", 0 },
        { "type='signal',,", MATCH_RULE_E_INVALID },
        { "type='signal', ", 0 },
        { "type='signal',  ,", MATCH_RULE_E_INVALID },
        { "arg+0path='a'", 0 },
        { "arg-1='x'", MATCH_RULE_E_INVALID },
        { "arg 0='x'", MATCH_RULE_E_INVALID },
        { "arg0x1='x'", 0 },
        { "arg08='x'", MATCH_RULE_E_INVALID },
        { "arg0namespace=''", MATCH_RULE_E_INVALID },
        { "arg0namespace='a..b'", MATCH_RULE_E_INVALID },
        { "arg0namespace='1a'", MATCH_RULE_E_INVALID },
        { "arg0namespace='a.1b'", MATCH_RULE_E_INVALID },
        { "arg0namespace=':1.x'", 0 },
        { "arg0namespace='a-b'", 0 },
        { "path_namespace='/a/'", MATCH_RULE_E_INVALID },
        { "path_namespace=''", MATCH_RULE_E_INVALID },
        { "path_namespace='/a',path_namespace='/b'", MATCH_RULE_E_INVALID },
        { "path='/a',path='/b'", MATCH_RULE_E_INVALID },
        { "sender='org.x'", 0 },
        { "arg0path='x',arg0='y'", MATCH_RULE_E_INVALID },
        { "arg63path='x'", 0 },
        { "arg4294967296='x'", MATCH_RULE_E_INVALID },
        { "arg18446744073709551616='x'", MATCH_RULE_E_INVALID },
        { "eavesdrop=true", 0 },
        { "eavesdrop='false'", 0 },
        { "eavesdrop=''", MATCH_RULE_E_INVALID },
        { "type='signal'  , member='a'", MATCH_RULE_E_INVALID },
        { "member='a',interface='b.c'", 0 },
        { "member= 'a'", MATCH_RULE_E_INVALID },
        { "interface='a.b',interface='a.b'", MATCH_RULE_E_INVALID },
        { "arg0=,arg1=", 0 },
        { "type=='signal'", MATCH_RULE_E_INVALID },
        { "ty=pe='signal'", MATCH_RULE_E_INVALID },
        { "arg0=a'b,c'd", 0 },
        { "arg0namespace='a',arg0='b'", MATCH_RULE_E_INVALID },
        { "arg0='b',arg0namespace='a'", MATCH_RULE_E_INVALID },
        { "arg0namespace='a',arg0path='b'", MATCH_RULE_E_INVALID },
        { "arg1='a',arg0namespace='x'", 0 },
        { "arg0namespacex='a'", MATCH_RULE_E_INVALID },
        { "type='signal',sender='org.freedesktop.DBus'", 0 },
        { " ,type='signal'", MATCH_RULE_E_INVALID },
        { "arg0=a\\,b", 0 },
        { "member=a\\\\'b", MATCH_RULE_E_INVALID },
        { "member=a\\\\", MATCH_RULE_E_INVALID },
        { "member='a\\'", MATCH_RULE_E_INVALID },
        { "member=a\\b", MATCH_RULE_E_INVALID },
        { "arg0=\\", 0 },
        { "type=\\'signal\\'", MATCH_RULE_E_INVALID },
        { "arg0=a\\,type='x'", 0 },
        { "arg0='a',type=x\\", MATCH_RULE_E_INVALID },
        { "type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged',path='/org/freedesktop/DBus',sender='org.freedesktop.DBus',arg0='org.example.Foo'", 0 },
        { "arg0namespace='org.example'", 0 },
        { "arg0namespace='org.example.'", MATCH_RULE_E_INVALID },
        { "arg1path='/aa/bb/'", 0 },
        { "arg2path='/aa/bb'", 0 },
        { "destination='org.freedesktop.DBus'", 0 },
        { "interface='a.b.c',member='Foo_Bar9'", 0 },
        { "path='/'", 0 },
        { "path='//'", MATCH_RULE_E_INVALID },
        { "path='/a//b'", MATCH_RULE_E_INVALID },
        { "path='a'", MATCH_RULE_E_INVALID },
        { "path='/a-b'", MATCH_RULE_E_INVALID },
        { "path='/a_b/C9'", 0 },
        { "member='a.b'", MATCH_RULE_E_INVALID },
        { "interface='a..b'", MATCH_RULE_E_INVALID },
        { "interface='.a.b'", MATCH_RULE_E_INVALID },
        { "interface='a.b.'", MATCH_RULE_E_INVALID },
        { "interface='a.9b'", MATCH_RULE_E_INVALID },
        { "sender=':1'", 0 },
        { "sender=':.1'", 0 },
        { "sender=':1.'", MATCH_RULE_E_INVALID },
        { "sender='a.b-c'", 0 },
        { "sender='a.b c'", MATCH_RULE_E_INVALID },
        { "type='signal'\t,member='x'", MATCH_RULE_E_INVALID },
        { "type='signal'", 0 },
        { ",member='x'", MATCH_RULE_E_INVALID },
        { "arg0='x'  ,\t arg1='y'", 0 },
        { "arg0='''x'''", 0 },
        { "arg0=''''", 0 },
        { "arg0='a''b'", 0 },
        { "arg0=''\\'''", 0 },
        { "eavesdrop='true',eavesdrop='false'", 0 },
        { "destination=':1.1',destination=':1.1'", MATCH_RULE_E_INVALID },
        { "arg5='a',arg6path='/',arg7='c',arg63path='/z'", 0 },
        { "arg0namespace='a',arg0namespace='a'", MATCH_RULE_E_INVALID },
        { "arg0path='a',arg0path='b'", MATCH_RULE_E_INVALID },
        { "arg64path='/'", MATCH_RULE_E_INVALID },
        { "arg999='x'", MATCH_RULE_E_INVALID },
        { "arg0p='x'", MATCH_RULE_E_INVALID },
        { "arg0pathx='x'", MATCH_RULE_E_INVALID },
        { "arg0Path='x'", MATCH_RULE_E_INVALID },
        { "Type='signal'", MATCH_RULE_E_INVALID },
        { "path_namespace='/org/freedesktop'", 0 },
        { "member=''", MATCH_RULE_E_INVALID },
        { "destination=''", MATCH_RULE_E_INVALID },
        { "type='signal',", 0 },
        { "arg0=\303\251", 0 },
        { "arg0='\346\227\245\346\234\254'", 0 },
        { "\ntype='signal'", 0 },
        { "\rtype='signal'", 0 },
        { "\013type='signal'", MATCH_RULE_E_INVALID },
        { "\014type='signal'", MATCH_RULE_E_INVALID },
        { "type\n='signal'", 0 },
        { "type\013='signal'", MATCH_RULE_E_INVALID },
        { "eavesdrop='x',eavesdrop='false'", MATCH_RULE_E_INVALID },
        { "type='signal'\n", MATCH_RULE_E_INVALID },
        { "sender=':'", 0 },
        { "sender=':a..b'", MATCH_RULE_E_INVALID },
        { "sender=':a.'", MATCH_RULE_E_INVALID },
        { "sender=':-_'", 0 },
        { "destination=':'", 0 },
        { "sender=':.'", MATCH_RULE_E_INVALID },
        { "arg0namespace=':'", 0 },
        { "arg0namespace=':.1'", 0 },
        { "arg0namespace='-a'", 0 },
        { "arg0namespace='a.-b'", 0 },
        { "arg0namespace='_'", 0 },
        { "arg0namespace=':1..2'", MATCH_RULE_E_INVALID },
        { "type='signal'\\n", MATCH_RULE_E_INVALID },
};

static const RuleCase generated_cases[] = {
#include "match-rule-generated.inc"
};

static int parse(const char *rule, BridgeMatchKeys *keys, const char **error) {
        static char buf[MATCH_RULE_MAX_LEN + 1];

        *error = NULL;
        memset(buf, 0xaa, sizeof(buf));
        return match_rule_parse(rule, buf, strlen(rule) + 1, keys, error);
}

static void check_cases(const RuleCase *cases, size_t n) {
        unsigned n_wrong = 0;
        size_t i;

        for (i = 0; i < n; ++i) {
                const RuleCase *c = &cases[i];
                BridgeMatchKeys keys;
                const char *error;
                int r = parse(c->rule, &keys, &error);

                if (r != c->expect) {
                        g_test_message("rule #%zu \"%s\": got %d (%s), dbus-daemon gives %d", i,
                                       c->rule, r, r ? error : "accepted", c->expect);
                        ++n_wrong;
                }
                if (r)
                        g_assert_true(error && error[0]);
        }
        g_assert_cmpuint(n_wrong, ==, 0);
}

static void test_reference(void) {
        check_cases(reference_cases, G_N_ELEMENTS(reference_cases));
}

static void test_generated(void) {
        check_cases(generated_cases, G_N_ELEMENTS(generated_cases));
}

static void test_empty(void) {
        static const char *const empty[] = { "", "   ", "\t\r\n", "=", "=foo,type='x'",
                                             " = ,type='x'" };
        BridgeMatchKeys keys;
        const char *error;
        size_t i;
        unsigned j;

        for (i = 0; i < G_N_ELEMENTS(empty); ++i) {
                memset(&keys, 0x55, sizeof(keys));
                g_assert_cmpint(parse(empty[i], &keys, &error), ==, 0);
                g_assert_cmpint(keys.type, ==, 0);
                g_assert_null(keys.sender);
                g_assert_null(keys.interface);
                g_assert_null(keys.member);
                g_assert_null(keys.path);
                g_assert_null(keys.path_namespace);
                g_assert_null(keys.destination);
                g_assert_null(keys.arg0namespace);
                g_assert_false(keys.eavesdrop);
                for (j = 0; j < WIRE_MAX_MATCH_ARGS; ++j) {
                        g_assert_cmpint(keys.arg_kind[j], ==, BRIDGE_MATCH_ARG_NONE);
                        g_assert_null(keys.arg[j]);
                }
        }
}

static void test_all_keys(void) {
        const char *rule = "type='signal',sender='org.freedesktop.DBus',"
                           "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                           "path='/org/freedesktop/DBus',destination=':1.7',arg0='org.example',"
                           "arg1path='/a/',arg63='last',eavesdrop='true'";
        BridgeMatchKeys keys;
        const char *error;
        unsigned j;

        g_assert_cmpint(parse(rule, &keys, &error), ==, 0);
        g_assert_cmpint(keys.type, ==, WIRE_MSG_SIGNAL);
        g_assert_cmpstr(keys.sender, ==, "org.freedesktop.DBus");
        g_assert_cmpstr(keys.interface, ==, "org.freedesktop.DBus");
        g_assert_cmpstr(keys.member, ==, "NameOwnerChanged");
        g_assert_cmpstr(keys.path, ==, "/org/freedesktop/DBus");
        g_assert_null(keys.path_namespace);
        g_assert_cmpstr(keys.destination, ==, ":1.7");
        g_assert_true(keys.eavesdrop);
        g_assert_cmpint(keys.arg_kind[0], ==, BRIDGE_MATCH_ARG_STRING);
        g_assert_cmpstr(keys.arg[0], ==, "org.example");
        g_assert_cmpint(keys.arg_kind[1], ==, BRIDGE_MATCH_ARG_PATH);
        g_assert_cmpstr(keys.arg[1], ==, "/a/");
        g_assert_cmpint(keys.arg_kind[63], ==, BRIDGE_MATCH_ARG_STRING);
        g_assert_cmpstr(keys.arg[63], ==, "last");
        for (j = 2; j < 63; ++j)
                g_assert_cmpint(keys.arg_kind[j], ==, BRIDGE_MATCH_ARG_NONE);
        g_assert_null(keys.arg0namespace);
}

static void test_types(void) {
        static const struct {
                const char *rule;
                uint8_t type;
        } cases[] = {
                { "type='signal'", WIRE_MSG_SIGNAL },
                { "type='method_call'", WIRE_MSG_METHOD_CALL },
                { "type='method_return'", WIRE_MSG_METHOD_RETURN },
                { "type='error'", WIRE_MSG_ERROR },
                { "type=error", WIRE_MSG_ERROR },
                { "type='sig'nal", WIRE_MSG_SIGNAL },
        };
        BridgeMatchKeys keys;
        const char *error;
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                g_assert_cmpint(parse(cases[i].rule, &keys, &error), ==, 0);
                g_assert_cmpint(keys.type, ==, cases[i].type);
        }
        g_assert_cmpint(parse("type='Signal'", &keys, &error), ==, MATCH_RULE_E_INVALID);
        g_assert_nonnull(strstr(error, "Signal"));
}

static void test_quoting(void) {
        static const struct {
                const char *rule;
                const char *arg0;
        } cases[] = {
                { "arg0=plain", "plain" },
                { "arg0='quoted, with comma'", "quoted, with comma" },
                { "arg0=a\\'b", "a'b" },                /* \' outside quotes is a quote */
                { "arg0='a'\\''b'", "a'b" },            /* the specification's own example */
                { "arg0='a\\b'", "a\\b" },              /* inside quotes all is literal */
                { "arg0=a\\b", "a\\b" },                /* a backslash before others stays */
                { "arg0=a\\,b", "a\\,b" },              /* ... and takes the comma with it */
                { "arg0=\\", "\\" },                    /* a trailing backslash stays */
                { "arg0=''", "" },
                { "arg0=", "" },
                { "arg0='''x'''", "x" },
                { "arg0=''\\'''", "'" },
                { "arg0= x ", " x " },                  /* values are not trimmed */
                { "arg0=a'b,c'd", "ab,cd" },
                { "  arg0  =v", "v" },
                { "arg0='\\303\\251'", "\\303\\251" },
                { "arg0='\303\251'", "\303\251" },
        };
        BridgeMatchKeys keys;
        const char *error;
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                int r = parse(cases[i].rule, &keys, &error);

                if (r)
                        g_error("\"%s\": %s", cases[i].rule, error);
                g_assert_cmpint(keys.arg_kind[0], ==, BRIDGE_MATCH_ARG_STRING);
                g_assert_cmpstr(keys.arg[0], ==, cases[i].arg0);
        }
        g_assert_cmpint(parse("arg0='x", &keys, &error), ==, MATCH_RULE_E_INVALID);
        g_assert_cmpint(parse("member=a\\\\'b", &keys, &error), ==, MATCH_RULE_E_INVALID);
}

static void test_arg_numbers(void) {
        static const struct {
                const char *rule;
                int index;
                uint8_t kind;
        } cases[] = {
                { "arg0='x'", 0, BRIDGE_MATCH_ARG_STRING },
                { "arg00='x'", 0, BRIDGE_MATCH_ARG_STRING },    /* strtoul(…, 0) as dbus-daemon */
                { "arg01='x'", 1, BRIDGE_MATCH_ARG_STRING },
                { "arg010='x'", 8, BRIDGE_MATCH_ARG_STRING },   /* octal */
                { "arg0x1='x'", 1, BRIDGE_MATCH_ARG_STRING },   /* hex */
                { "arg+1='x'", 1, BRIDGE_MATCH_ARG_STRING },
                { "arg+0path='/'", 0, BRIDGE_MATCH_ARG_PATH },
                { "arg63path='/'", 63, BRIDGE_MATCH_ARG_PATH },
                { "arg0x3fpath='/'", 63, BRIDGE_MATCH_ARG_PATH },
                { "arg0path='not a path'", 0, BRIDGE_MATCH_ARG_PATH },
        };
        static const char *const bad[] = {
                "arg='x'", "argx='x'", "arg-1='x'", "arg64='x'", "arg64path='/'", "arg999='x'",
                "arg4294967296='x'", "arg18446744073709551616='x'", "arg1namespace='a'",
                "arg0namespacex='a'", "arg08='x'", "arg0p='x'", "arg0Path='x'", "arg0pathx='x'",
                "arg0x40='x'",
        };
        BridgeMatchKeys keys;
        const char *error;
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                int r = parse(cases[i].rule, &keys, &error);

                if (r)
                        g_error("\"%s\": %s", cases[i].rule, error);
                g_assert_cmpint(keys.arg_kind[cases[i].index], ==, cases[i].kind);
        }
        for (i = 0; i < G_N_ELEMENTS(bad); ++i)
                if (parse(bad[i], &keys, &error) != MATCH_RULE_E_INVALID)
                        g_error("\"%s\" accepted", bad[i]);
}

static void test_namespace(void) {
        BridgeMatchKeys keys;
        const char *error;

        g_assert_cmpint(parse("arg0namespace='org.example'", &keys, &error), ==, 0);
        g_assert_cmpstr(keys.arg0namespace, ==, "org.example");
        g_assert_cmpint(keys.arg_kind[0], ==, BRIDGE_MATCH_ARG_NONE);
        g_assert_cmpint(parse("path_namespace='/org'", &keys, &error), ==, 0);
        g_assert_cmpstr(keys.path_namespace, ==, "/org");
        g_assert_null(keys.path);
        g_assert_cmpint(parse("path_namespace='/org',path='/org'", &keys, &error), ==,
                        MATCH_RULE_E_INVALID);
        g_assert_cmpint(parse("arg0namespace='a',arg0='a'", &keys, &error), ==,
                        MATCH_RULE_E_INVALID);
        g_assert_cmpint(parse("arg0namespace='a.b.'", &keys, &error), ==, MATCH_RULE_E_INVALID);
}

/* names of 255 bytes pass, 256 fail (dbus-daemon: the same for both kinds) */
static void test_name_length(void) {
        g_autofree char *a255 = g_strnfill(255, 'a'), *a256 = g_strnfill(256, 'a');
        g_autofree char *u254 = g_strnfill(254, 'u'), *u255 = g_strnfill(255, 'u');
        g_autofree char *ns255 = g_strdup_printf("arg0namespace='%s'", a255);
        g_autofree char *ns256 = g_strdup_printf("arg0namespace='%s'", a256);
        g_autofree char *s255 = g_strdup_printf("sender=':%s'", u254);
        g_autofree char *s256 = g_strdup_printf("sender=':%s'", u255);
        BridgeMatchKeys keys;
        const char *error;

        g_assert_cmpint(parse(ns255, &keys, &error), ==, 0);
        g_assert_cmpint(parse(ns256, &keys, &error), ==, MATCH_RULE_E_INVALID);
        g_assert_cmpint(parse(s255, &keys, &error), ==, 0);
        g_assert_cmpint(parse(s256, &keys, &error), ==, MATCH_RULE_E_INVALID);
}

static void test_duplicates(void) {
        static const char *const dup[] = {
                "type='signal',type='error'", "sender=':1.1',sender=':1.1'",
                "interface='a.b',interface='a.c'", "member='a',member='b'",
                "path='/',path='/'", "path='/',path_namespace='/'", "path_namespace='/',path='/'",
                "destination=':1.1',destination=':1.2'", "arg3='a',arg3path='/'",
                "arg0namespace='a',arg0namespace='a'", "arg0x1='a',arg1='b'",
        };
        BridgeMatchKeys keys;
        const char *error;
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(dup); ++i)
                if (parse(dup[i], &keys, &error) != MATCH_RULE_E_INVALID)
                        g_error("\"%s\" accepted", dup[i]);
        /* dbus-daemon lets eavesdrop repeat; the last one counts */
        g_assert_cmpint(parse("eavesdrop='true',eavesdrop='false'", &keys, &error), ==, 0);
        g_assert_false(keys.eavesdrop);
        g_assert_cmpint(parse("eavesdrop='false',eavesdrop='true'", &keys, &error), ==, 0);
        g_assert_true(keys.eavesdrop);
}

static void test_length(void) {
        char rule[MATCH_RULE_MAX_LEN + 2], buf[MATCH_RULE_MAX_LEN + 2];
        BridgeMatchKeys keys;
        const char *error = NULL;

        /* arg0='xxx…' of exactly 1024 bytes: accepted; 1025: LimitsExceeded */
        memset(rule, 'x', sizeof(rule));
        memcpy(rule, "arg0='", 6);
        rule[MATCH_RULE_MAX_LEN - 1] = '\'';
        rule[MATCH_RULE_MAX_LEN] = '\0';
        g_assert_cmpint(match_rule_parse(rule, buf, sizeof(buf), &keys, &error), ==, 0);
        g_assert_cmpuint(strlen(keys.arg[0]), ==, MATCH_RULE_MAX_LEN - 7);

        rule[MATCH_RULE_MAX_LEN - 1] = 'x';
        rule[MATCH_RULE_MAX_LEN] = '\'';
        rule[MATCH_RULE_MAX_LEN + 1] = '\0';
        g_assert_cmpint(match_rule_parse(rule, buf, sizeof(buf), &keys, &error), ==,
                        MATCH_RULE_E_TOO_LONG);
        g_assert_nonnull(strstr(error, "1025"));

        /* a scratch buffer smaller than documented is refused, not overrun */
        g_assert_cmpint(match_rule_parse("type='signal'", buf, 5, &keys, &error), ==,
                        MATCH_RULE_E_TOO_LONG);
}

static void test_messages(void) {
        static const struct {
                const char *rule;
                const char *needle;
        } cases[] = {
                { "foo='x'", "foo" },
                { "type", "type" },
                { "sender='a'", "'a'" },
                { "interface='a'", "interface='a'" },
                { "member='1a'", "1a" },
                { "path='/a/'", "/a/" },
                { "destination='x'", "destination" },
                { "eavesdrop='yes'", "yes" },
                { "arg64='x'", "63" },
                { "arg0='x", "quote" },
                { "path='/',path_namespace='/'", "path_namespace" },
                { "member='a',member='a'", "member" },
                { "arg1='a',arg1path='/'", "argument 1" },
        };
        BridgeMatchKeys keys;
        const char *error;
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                g_assert_cmpint(parse(cases[i].rule, &keys, &error), ==, MATCH_RULE_E_INVALID);
                if (!strstr(error, cases[i].needle))
                        g_error("\"%s\": message \"%s\" lacks \"%s\"", cases[i].rule, error,
                                cases[i].needle);
        }
}

/* strings land in the caller's buffer, which strlen(rule) + 1 bytes always suffice for */
static void test_buffer(void) {
        const char *rule = "a=b,arg0=\\'\\'\\',arg1=''''''";
        char buf[64];
        BridgeMatchKeys keys;
        const char *error;
        size_t n = strlen(rule) + 1;

        memset(buf, 0x7f, sizeof(buf));
        g_assert_cmpint(match_rule_parse(rule, buf, n, &keys, &error), ==, MATCH_RULE_E_INVALID);
        g_assert_cmpint(match_rule_parse(rule + 4, buf, n - 4, &keys, &error), ==, 0);
        g_assert_true(keys.arg[0] >= buf && keys.arg[0] < buf + n - 4);
        g_assert_cmpstr(keys.arg[0], ==, "'''");
        g_assert_cmpstr(keys.arg[1], ==, "");
        g_assert_cmpint(buf[n], ==, 0x7f);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/compat/match-rule/reference", test_reference);
        g_test_add_func("/compat/match-rule/generated", test_generated);
        g_test_add_func("/compat/match-rule/empty", test_empty);
        g_test_add_func("/compat/match-rule/all-keys", test_all_keys);
        g_test_add_func("/compat/match-rule/types", test_types);
        g_test_add_func("/compat/match-rule/quoting", test_quoting);
        g_test_add_func("/compat/match-rule/arg-numbers", test_arg_numbers);
        g_test_add_func("/compat/match-rule/namespace", test_namespace);
        g_test_add_func("/compat/match-rule/name-length", test_name_length);
        g_test_add_func("/compat/match-rule/duplicates", test_duplicates);
        g_test_add_func("/compat/match-rule/length", test_length);
        g_test_add_func("/compat/match-rule/messages", test_messages);
        g_test_add_func("/compat/match-rule/buffer", test_buffer);
        return g_test_run();
}
