/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * compat/driver-activation on the real core and driver. The test plays the front end's
 * part (DriverActivationOps: it records the starts asked for, and reports failures as
 * proxy/activation does): auto-start and its queue, NO_AUTO_START, StartServiceByName's
 * replies, failure errors with their text, immediate start failures, the pending-start
 * limit, a waiting sender that leaves, ListActivatableNames, UpdateActivationEnvironment,
 * ActivatableServicesChanged.
 */
#include "compat/driver-activation.h"
#include "driver-fixture.h"

#define E_PREFIX "org.freedesktop.DBus.Error."

typedef struct FrontEnd {
        GString *log;                   /* "start:NAME started:NAME env:K=V ..." */
        int start_result;               /* what start() returns */
        int env_result;
} FrontEnd;

static FrontEnd fe;

static int fe_start(void *userdata, const char *name, char *error_name, size_t n_error_name,
                    char *text, size_t n_text) {
        g_string_append_printf(fe.log, "start:%s ", name);
        if (fe.start_result == 1) {
                g_snprintf(error_name, n_error_name, E_PREFIX "Spawn.FileInvalid");
                g_snprintf(text, n_text, "cannot start %s", name);
        }
        return fe.start_result;
}

static void fe_started(void *userdata, const char *name) {
        g_string_append_printf(fe.log, "started:%s ", name);
}

static int fe_update_environment(void *userdata, const char *const *pairs) {
        for (; pairs[0] && pairs[1]; pairs += 2)
                g_string_append_printf(fe.log, "env:%s=%s ", pairs[0], pairs[1]);
        return fe.env_result;
}

static const DriverActivationOps fe_ops = {
        .start = fe_start,
        .started = fe_started,
        .update_environment = fe_update_environment,
};

static void setup_activation(Fixture *f, gconstpointer data) {
        const char *names[] = { "org.ex.S", "org.ex.T", "org.ex.U" };

        setup(f, data);
        fe = (FrontEnd){ .log = g_string_new(NULL) };
        g_assert_cmpint(driver_set_activation(f->driver, &fe_ops, NULL), ==, 0);
        g_assert_cmpint(driver_activation_set_names(f->driver, names, 3, false), ==, 0);
        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);
}

static void teardown_activation(Fixture *f, gconstpointer data) {
        teardown(f, data);
        g_string_free(fe.log, TRUE);
}

static void assert_fe(const char *want) {
        g_assert_cmpstr(fe.log->str, ==, want);
        g_string_truncate(fe.log, 0);
}

static int call_peer(Fixture *f, unsigned i, const char *dest, const char *word, uint8_t flags) {
        Send s = { .destination = dest, .path = "/", .interface = "org.ex.I", .member = "Echo",
                   .flags = flags };

        return send_msg(f, i, &s, "s", word);
}

static void expect_call(Fixture *f, unsigned i, const char *from, const char *word) {
        Got g;

        g_assert_true(pop(f, i, &g));
        g_assert_cmpuint(g.hdr.type, ==, WIRE_MSG_METHOD_CALL);
        g_assert_cmpstr(g.hdr.member, ==, "Echo");
        g_assert_cmpstr(g.hdr.sender, ==, from);
        g_assert_cmpstr(g.body, ==, word);
}

static void test_autostart_queue(Fixture *f, gconstpointer data) {
        Send reply = { .type = WIRE_MSG_METHOD_RETURN, .destination = NULL };
        Got g;

        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "one", 0), ==, 0);
        assert_fe("start:org.ex.S ");
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "two", 0), ==, 0);
        g_assert_cmpint(call_peer(f, 1, "org.ex.S", "three", 0), ==, 0);
        assert_fe("");                                  /* one start for all of them */
        assert_empty(f, 0);
        assert_empty(f, 1);

        /* the service (conn 2) appears and takes the name */
        hello(f, 2);
        drain(f, 2);
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "org.ex.S", 0u), ==, 0);
        assert_fe("started:org.ex.S ");
        expect_signal(f, 2, "NameAcquired", "org.ex.S", true);
        expect_call(f, 2, NAME(f, 0), "one");
        expect_call(f, 2, NAME(f, 0), "two");
        expect_call(f, 2, NAME(f, 1), "three");
        expect_reply(f, 2, "1");
        assert_empty(f, 2);

        /* the queued calls are tracked like any other: the service's reply reaches conn 0 */
        reply.destination = NAME(f, 0);
        reply.reply_serial = f->serial[0] - 1;          /* "one" */
        g_assert_cmpint(send_msg(f, 2, &reply, NULL), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpuint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpstr(g.hdr.sender, ==, NAME(f, 2));
}

static void test_no_auto_start(Fixture *f, gconstpointer data) {
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "x", WIRE_FLAG_NO_AUTO_START), ==, 0);
        expect_error(f, 0, E_PREFIX "NameHasNoOwner", "Name \"org.ex.S\" does not exist");
        assert_fe("");
        g_assert_cmpint(call_peer(f, 0, "org.ex.None", "x", 0), ==, 0);
        expect_error(f, 0, E_PREFIX "ServiceUnknown",
                     "The name org.ex.None was not provided by any .service files");
        assert_fe("");
}

static void test_failure(Fixture *f, gconstpointer data) {
        const char *why = "Process org.ex.S exited with status 1";

        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "one", 0), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "StartServiceByName", "su", "org.ex.S", 0u), ==, 0);
        assert_fe("start:org.ex.S ");
        g_assert_cmpint(driver_activation_failed(f->driver, "org.ex.S",
                                                 E_PREFIX "Spawn.ChildExited", why), ==, 0);
        expect_error(f, 0, E_PREFIX "Spawn.ChildExited", why);
        expect_error(f, 1, E_PREFIX "Spawn.ChildExited", why);
        assert_empty(f, 0);
        assert_empty(f, 1);
        /* a failure is final for those callers; the next message starts it again */
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "two", 0), ==, 0);
        assert_fe("start:org.ex.S ");
        g_assert_cmpint(driver_activation_failed(f->driver, "org.ex.S", E_PREFIX "TimedOut",
                                                 "timed out"), ==, 0);
        expect_error(f, 0, E_PREFIX "TimedOut", "timed out");
        /* a failure report for a name nobody waits for changes nothing */
        g_assert_cmpint(driver_activation_failed(f->driver, "org.ex.T", E_PREFIX "TimedOut",
                                                 "x"), ==, 0);
        assert_empty(f, 0);
}

static void test_start_fails_at_once(Fixture *f, gconstpointer data) {
        fe.start_result = 1;
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "one", 0), ==, 0);
        expect_error(f, 0, E_PREFIX "Spawn.FileInvalid", "cannot start org.ex.S");
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "org.ex.T", 0u), ==, 0);
        expect_error(f, 0, E_PREFIX "Spawn.FileInvalid", "cannot start org.ex.T");
}

static void test_start_service_by_name(Fixture *f, gconstpointer data) {
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "org.ex.S", 0u), ==, 0);
        assert_fe("start:org.ex.S ");
        assert_empty(f, 0);
        hello(f, 2);
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "org.ex.S", 0u), ==, 0);
        expect_reply(f, 0, "1");                        /* SUCCESS */
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "org.ex.S", 0u), ==, 0);
        expect_reply(f, 0, "2");                        /* ALREADY_RUNNING */
        assert_fe("started:org.ex.S ");
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "org.freedesktop.DBus",
                                    0u), ==, 0);
        expect_error(f, 0, E_PREFIX "ServiceUnknown", NULL);
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "org.ex.None", 0u), ==, 0);
        expect_error(f, 0, E_PREFIX "ServiceUnknown",
                     "The name org.ex.None was not provided by any .service files");
}

static void one_start(BusLimits *l) {
        l->max_pending_service_starts = 1;
}

static void test_limit(Fixture *f, gconstpointer data) {
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "one", 0), ==, 0);
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "two", 0), ==, 0);     /* joins */
        g_assert_cmpint(call_peer(f, 1, "org.ex.T", "x", 0), ==, 0);
        expect_error(f, 1, E_PREFIX "LimitsExceeded", NULL);
        assert_fe("start:org.ex.S ");
        assert_empty(f, 0);
}

static void test_sender_leaves(Fixture *f, gconstpointer data) {
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "gone", 0), ==, 0);
        g_assert_cmpint(call_peer(f, 1, "org.ex.S", "stays", 0), ==, 0);
        bridge_conn_disconnect(f->c[0]);
        hello(f, 2);
        drain(f, 2);
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "org.ex.S", 0u), ==, 0);
        expect_signal(f, 2, "NameAcquired", "org.ex.S", true);
        expect_call(f, 2, NAME(f, 1), "stays");
        expect_reply(f, 2, "1");
        assert_empty(f, 2);
}

/* The next message of conn @i is a reply with one "as": its strings, comma-separated. */
static void expect_strv_reply(Fixture *f, unsigned i, const char *want) {
        BridgeMsg *m = bridge_conn_queue_peek(f->c[i]);
        GString *got = g_string_new(NULL);
        WireReader r;

        g_assert_nonnull(m);
        g_assert_cmpuint(m->hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpstr(m->hdr.signature, ==, "as");
        wire_reader_init(&r, m->data, &m->hdr);
        g_assert_cmpint(wire_reader_enter(&r, 'a', "s"), ==, 0);
        while (wire_reader_peek(&r)) {
                const char *v;

                g_assert_cmpint(wire_reader_read_basic(&r, 's', &v), ==, 0);
                g_string_append_printf(got, "%s%s", got->len ? "," : "", v);
        }
        g_assert_cmpstr(got->str, ==, want);
        g_string_free(got, TRUE);
        bridge_conn_queue_pop(f->c[i]);
}

static void test_list_and_changed(Fixture *f, gconstpointer data) {
        const char *names[] = { "org.ex.New" };

        g_assert_cmpint(call_driver(f, 0, "ListActivatableNames", NULL), ==, 0);
        expect_strv_reply(f, 0, "org.freedesktop.DBus,org.ex.S,org.ex.T,org.ex.U");
        g_assert_cmpint(call_driver(f, 1, "AddMatch", "s", "member='ActivatableServicesChanged'"),
                        ==, 0);
        drain(f, 1);
        g_assert_cmpint(driver_activation_set_names(f->driver, names, 1, true), ==, 0);
        expect_signal(f, 1, "ActivatableServicesChanged", "", false);
        g_assert_cmpint(call_driver(f, 0, "ListActivatableNames", NULL), ==, 0);
        expect_strv_reply(f, 0, "org.freedesktop.DBus,org.ex.New");
        g_assert_cmpint(call_peer(f, 0, "org.ex.S", "x", 0), ==, 0);
        expect_error(f, 0, E_PREFIX "ServiceUnknown", NULL);
        g_assert_cmpint(call_peer(f, 0, "org.ex.New", "x", 0), ==, 0);
        assert_fe("start:org.ex.New ");
}

static void test_update_environment(Fixture *f, gconstpointer data) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus", .member = "UpdateActivationEnvironment" };

        /* conns of the fixture run as uid 1000+i: not the bus's user (unless the test
         * runs as that uid), so the privileged method is refused before its arguments */
        if (getuid() == 1000)
                return;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, E_PREFIX "AccessDenied", NULL);
        assert_fe("");
}

/* Features as Properties.Get answers it: its strings, comma-separated. */
static char *get_features(Fixture *f, unsigned i) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus.Properties", .member = "Get" };
        GString *got = g_string_new(NULL);
        BridgeMsg *m;
        WireReader r;

        g_assert_cmpint(send_msg(f, i, &s, "ss", "org.freedesktop.DBus", "Features"), ==, 0);
        m = bridge_conn_queue_peek(f->c[i]);
        g_assert_nonnull(m);
        g_assert_cmpuint(m->hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpstr(m->hdr.signature, ==, "v");
        wire_reader_init(&r, m->data, &m->hdr);
        g_assert_cmpint(wire_reader_enter(&r, 'v', "as"), ==, 0);
        g_assert_cmpint(wire_reader_enter(&r, 'a', "s"), ==, 0);
        while (wire_reader_peek(&r)) {
                const char *v;

                g_assert_cmpint(wire_reader_read_basic(&r, 's', &v), ==, 0);
                g_string_append_printf(got, "%s%s", got->len ? "," : "", v);
        }
        bridge_conn_queue_pop(f->c[i]);
        return g_string_free(got, FALSE);
}

/* dbus-daemon 1.14.10 adds "SystemdActivation", last, with --systemd-activation only. */
static void test_features(Fixture *f, gconstpointer data) {
        g_autofree char *off = NULL, *on = NULL, *again = NULL;

        off = get_features(f, 0);
        g_assert_cmpstr(off, ==, "ActivatableServicesChanged,HeaderFiltering");
        driver_activation_set_systemd(f->driver, true);
        on = get_features(f, 0);
        g_assert_cmpstr(on, ==, "ActivatableServicesChanged,HeaderFiltering,SystemdActivation");
        driver_activation_set_systemd(f->driver, false);
        again = get_features(f, 1);
        g_assert_cmpstr(again, ==, off);
        assert_empty(f, 0);
        assert_empty(f, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn, data) \
        g_test_add("/compat/driver-activation/" path, Fixture, data, setup_activation, fn, \
                   teardown_activation)
        ADD("autostart-queue", test_autostart_queue, NULL);
        ADD("no-auto-start", test_no_auto_start, NULL);
        ADD("failure", test_failure, NULL);
        ADD("start-fails-at-once", test_start_fails_at_once, NULL);
        ADD("start-service-by-name", test_start_service_by_name, NULL);
        ADD("limit", test_limit, (gconstpointer)(uintptr_t)one_start);
        ADD("sender-leaves", test_sender_leaves, NULL);
        ADD("list-and-changed", test_list_and_changed, NULL);
        ADD("update-environment", test_update_environment, NULL);
        ADD("features", test_features, NULL);
        return g_test_run();
}
