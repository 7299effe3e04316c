/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy-xml/compile.c: Config -> PolicyDb. Unknown users/groups give dbus-daemon's
 * warnings with file:line and drop what dbus-daemon drops; "*" folding and defaults (seen
 * through the canonical dump); Debian's system.conf and session.conf compile and decide as
 * dbus-daemon does for a few typical cases. With -m perf: the per-message cost of the
 * system.conf policy against no policy (unicast calls through bridge routing).
 */
#include <stdlib.h>
#include <time.h>
#include "bridge/policy.h"
#include "policy-xml/compile.h"
#include "policy-xml/loader.h"
#include "../bridge/fixture.h"

static void collect_diag(void *userdata, ConfigDiagLevel level, const char *file, unsigned line,
                         const char *message) {
        GString *s = userdata;

        g_string_append_printf(s, "%s %s:%u: %s\n", level == CONFIG_DIAG_ERROR ? "E" : "W",
                               strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line, message);
}

/* A fixed user database: the test does not depend on the machine's. */
static bool test_resolve(void *userdata, bool group, const char *name, uint32_t *ret_id) {
        static const struct { bool group; const char *name; uint32_t id; } db[] = {
                { false, "root", 0 }, { false, "alice", 1000 }, { false, "0", 0 },
                { true, "root", 0 }, { true, "staff", 50 },
        };
        size_t i;

        for (i = 0; i < G_N_ELEMENTS(db); ++i)
                if (db[i].group == group && strcmp(db[i].name, name) == 0) {
                        *ret_id = db[i].id;
                        return true;
                }
        return false;
}

static PolicyDb *compile_file(const char *path, bool nss, GString *diag) {
        ConfigLoadOptions lo = { .diag = collect_diag, .userdata = diag };
        PolicyCompileOptions co = { .resolve = nss ? NULL : test_resolve, .diag = collect_diag,
                                    .userdata = diag };
        Config *config = NULL;
        PolicyDb *db = NULL;

        g_assert_cmpint(config_load_file(path, &lo, &config), ==, 0);
        g_assert_cmpint(policy_compile(config, &co, &db), ==, 0);
        config_free(config);
        return db;
}

static void test_unknown_names(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        PolicyDb *db = compile_file(TEST_DATA_DIR "/policy/unknown-names.conf", false, diag);
        char *dump = NULL;

        g_assert_cmpstr(diag->str, ==,
                "W unknown-names.conf:5: Unknown username \"nosuchuser\" in message bus configuration file\n"
                "W unknown-names.conf:8: Unknown group \"nosuchgroup\" in message bus configuration file\n"
                "W unknown-names.conf:11: Unknown username \"*\" in message bus configuration file\n"
                "W unknown-names.conf:15: Unknown username \"nosuchuser\" on element <allow>\n"
                "W unknown-names.conf:16: Unknown group \"nosuchgroup\" on element <deny>\n");
        g_assert_cmpint(policy_db_dump(db, &dump), ==, 0);
        g_assert_cmpstr(dump, ==,
                        "default\n"
                        "  allow user id=*\n"
                        "  allow group id=50\n"
                        "user 1000\n"
                        "  allow own name=a.e\n");
        free(dump);
        policy_db_unref(db);
}

static void test_folding(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        PolicyDb *db = compile_file(TEST_DATA_DIR "/policy/folding.conf", false, diag);
        char *dump = NULL;

        g_assert_cmpstr(diag->str, ==, "");
        g_assert_cmpuint(policy_db_count_rules(db), ==, 14);
        g_assert_cmpint(policy_db_dump(db, &dump), ==, 0);
        g_assert_cmpstr(dump, ==,
                "default\n"
                "  allow send name=* type=* interface=* member=* error=* path=* broadcast=any "
                "requested_reply=1 eavesdrop=0 fds=0-4294967295\n"
                "  allow send name=* type=* interface=* member=* error=* path=* broadcast=any "
                "requested_reply=1 eavesdrop=0 fds=0-4294967295\n"
                "  allow receive name=* type=* interface=* member=* error=* path=* "
                "requested_reply=1 eavesdrop=0 fds=0-4294967295\n"
                "  allow receive name=* type=* interface=* member=* error=* path=* "
                "requested_reply=1 eavesdrop=0 fds=0-4294967295\n"
                "  allow own name=*\n"
                "  allow own name_prefix=org.x\n"
                "  deny send name_prefix=org.y type=signal interface=* member=* error=* path=* "
                "broadcast=true requested_reply=0 eavesdrop=0 fds=0-4294967295 log\n"
                "  deny send name=a.b type=method_return interface=* member=* error=* path=* "
                "broadcast=any requested_reply=1 eavesdrop=0 fds=0-4294967295\n"
                "  allow receive name=a.b type=* interface=* member=* error=* path=* "
                "requested_reply=0 eavesdrop=1 fds=1-4\n"
                "  allow receive name=* type=* interface=* member=* error=* path=* "
                "requested_reply=1 eavesdrop=1 fds=0-4294967295\n"
                "group 50\n"
                "  allow own name=g.n\n"
                "at_console=true\n"
                "  allow own name=console.only\n"
                "at_console=false\n"
                "  deny own name=console.only\n"
                "mandatory\n"
                "  deny own name=a.b\n");
        free(dump);
        policy_db_unref(db);
}

static PolicySnapshot *snapshot(PolicyDb *db, uid_t uid) {
        PolicyPeer peer = { .uid = uid, .gids = (gid_t[]){ (gid_t)uid }, .n_gids = 1 };
        PolicySnapshot *s = NULL;

        g_assert_cmpint(policy_snapshot_new(db, &peer, &s), ==, 0);
        return s;
}

static int check_driver_call(PolicySnapshot *s, BridgeConn *sender, const char *iface,
                             const char *member) {
        PolicyMsgInfo info;
        BridgeMsg *m = test_msg_new(sender, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = "org.freedesktop.DBus", .interface = iface, .member = member });
        int r;

        policy_msg_info_init(&info, policy_snapshot_get_db(s), m);
        r = policy_check_send(s, &info, NULL, false, NULL);
        bridge_msg_unref(m);
        return r;
}

static void test_debian_system(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        PolicySnapshot *user, *root;
        Fixture f;
        PolicyDb *db;

        if (!g_file_test("/usr/share/dbus-1/system.conf", G_FILE_TEST_EXISTS)) {
                g_test_skip("no /usr/share/dbus-1/system.conf");
                return;
        }
        db = compile_file("/usr/share/dbus-1/system.conf", true, diag);
        g_test_message("system.conf: %zu rules; diagnostics: %s", policy_db_count_rules(db),
                       diag->str);
        g_assert_cmpuint(policy_db_count_rules(db), >, 15);
        /* <allow user="*"/>: everybody may connect */
        g_assert_cmpint(policy_db_check_connect(db, 1000, NULL, 0, 100), ==, 0);
        g_assert_cmpint(policy_db_check_connect(db, 0, NULL, 0, 100), ==, 0);

        user = snapshot(db, 1000);
        root = snapshot(db, 0);
        /* <deny own="*"/>; root may own what the system.d files give it */
        g_assert_cmpint(policy_check_own(user, "org.example.Anything"), ==,
                        POLICY_E_ACCESS_DENIED);
        if (g_file_test("/usr/share/dbus-1/system.d/org.freedesktop.login1.conf",
                        G_FILE_TEST_EXISTS)) {
                g_assert_cmpint(policy_check_own(root, "org.freedesktop.login1"), ==, 0);
                g_assert_cmpint(policy_check_own(user, "org.freedesktop.login1"), ==,
                                POLICY_E_ACCESS_DENIED);
        }

        fixture_setup(&f, NULL);
        fixture_conn_uid(&f, 0, 1000, BRIDGE_CONN_ACCEPT_FDS, true);
        fixture_conn_uid(&f, 1, 0, BRIDGE_CONN_ACCEPT_FDS, true);
        g_assert_cmpint(bus_set_policy(f.bus, db), ==, 0);
        bridge_conn_set_policy(f.c[0], user);
        bridge_conn_set_policy(f.c[1], root);
        /* the driver: allowed, except UpdateActivationEnvironment */
        g_assert_cmpint(check_driver_call(user, f.c[0], "org.freedesktop.DBus", "ListNames"),
                        ==, 0);
        g_assert_cmpint(check_driver_call(user, f.c[0], "org.freedesktop.DBus",
                                          "UpdateActivationEnvironment"),
                        ==, POLICY_E_ACCESS_DENIED);
        /* <deny send_type="method_call"/> for a peer nobody opened; signals pass */
        g_assert_cmpint(test_send(f.c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.1", .interface = "a.b", .member = "M" }), ==,
                BRIDGE_E_ACCESS_DENIED);
        g_assert_true(g_str_has_prefix(bridge_conn_get_denial(f.c[0]),
                "Rejected send message, 1 matched rules; type=\"method_call\", sender=\":1.0\""));
        g_assert_cmpint(test_send(f.c[0], &(TestMsg){ .type = WIRE_MSG_SIGNAL,
                .destination = ":1.1", .interface = "a.b", .member = "S" }), ==, 0);
        /* unrequested replies are refused, requested ones pass */
        g_assert_cmpint(test_send(f.c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN,
                .destination = ":1.0", .reply_serial = 40 }), ==, BRIDGE_E_ACCESS_DENIED);
        g_assert_cmpint(test_send(f.c[1], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = ":1.0", .interface = "a.b", .member = "M", .serial = 41 }), ==,
                BRIDGE_E_ACCESS_DENIED);
        fixture_teardown(&f, NULL);
        policy_db_unref(db);
}

static void test_debian_session(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        PolicySnapshot *s;
        PolicyDb *db;

        if (!g_file_test("/usr/share/dbus-1/session.conf", G_FILE_TEST_EXISTS)) {
                g_test_skip("no /usr/share/dbus-1/session.conf");
                return;
        }
        db = compile_file("/usr/share/dbus-1/session.conf", true, diag);
        g_assert_cmpuint(policy_db_count_rules(db), >=, 3);
        /* no <allow user>: only the bus's own user */
        g_assert_cmpint(policy_db_check_connect(db, 1000, NULL, 0, 1000), ==, 0);
        g_assert_cmpint(policy_db_check_connect(db, 1001, NULL, 0, 1000), ==,
                        POLICY_E_ACCESS_DENIED);
        s = snapshot(db, 1000);
        g_assert_cmpint(policy_check_own(s, "any.name"), ==, 0);
        policy_snapshot_free(s);
        policy_db_unref(db);
}

/* ns per unicast call (send + pop), @db NULL: no policy. */
static double bench_unicast(PolicyDb *db, unsigned n) {
        struct timespec a, b;
        Fixture f;
        BridgeMsg *m;
        unsigned i;

        fixture_setup(&f, NULL);
        fixture_conn_uid(&f, 0, 1000, BRIDGE_CONN_ACCEPT_FDS, true);
        fixture_conn_uid(&f, 1, 0, BRIDGE_CONN_ACCEPT_FDS, true);
        if (db) {
                g_assert_cmpint(bus_set_policy(f.bus, db), ==, 0);
                bridge_conn_set_policy(f.c[0], snapshot(db, 1000));
                bridge_conn_set_policy(f.c[1], snapshot(db, 0));
        }
        g_assert_cmpint(bridge_name_acquire(f.c[1], "org.example.Bench", 0), ==, 0);
        g_assert_cmpint(bridge_name_acquire(f.c[1], "org.example.Other", 0), ==, 0);
        m = test_msg_new(f.c[0], &(TestMsg){ .type = WIRE_MSG_METHOD_CALL,
                .destination = "org.example.Bench", .interface = "org.example.Bench",
                .member = "Ping", .flags = WIRE_FLAG_NO_REPLY_EXPECTED });
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (i = 0; i < n; ++i) {
                g_assert_cmpint(bridge_conn_send(f.c[0], m), ==, 0);
                bridge_conn_queue_pop(f.c[1]);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        bridge_msg_unref(m);
        fixture_teardown(&f, NULL);
        return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}

static void test_perf(void) {
        g_autoptr(GString) diag = g_string_new(NULL);
        double none = 1e9, with = 1e9;
        PolicyDb *db;
        unsigned n = 200000, round, rounds = 10;

        if (!g_file_test("/usr/share/dbus-1/system.conf", G_FILE_TEST_EXISTS)) {
                g_test_skip("no /usr/share/dbus-1/system.conf");
                return;
        }
        db = compile_file(TEST_DATA_DIR "/policy/bench-system.conf", true, diag);
        /* under valgrind --tool=callgrind: POLICY_BENCH_N=100000 for one short round */
        if (g_getenv("POLICY_BENCH_N")) {
                n = (unsigned)atoi(g_getenv("POLICY_BENCH_N"));
                rounds = 1;
        }
        /* the machine is shared: alternate, and keep each side's best round */
        (void) bench_unicast(NULL, n / 10);     /* warm up */
        for (round = 0; round < rounds; ++round) {
                none = MIN(none, bench_unicast(NULL, n));
                with = MIN(with, bench_unicast(db, n));
        }
        g_test_minimized_result(with - none, "policy cost per unicast: %.1f ns "
                                "(no policy %.1f ns, system.conf with %zu rules %.1f ns)",
                                with - none, none, policy_db_count_rules(db), with);
        policy_db_unref(db);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/policy-xml/compile/unknown-names", test_unknown_names);
        g_test_add_func("/policy-xml/compile/folding", test_folding);
        g_test_add_func("/policy-xml/compile/debian-system", test_debian_system);
        g_test_add_func("/policy-xml/compile/debian-session", test_debian_session);
        if (g_test_perf())
                g_test_add_func("/policy-xml/compile/perf", test_perf);
        return g_test_run();
}
