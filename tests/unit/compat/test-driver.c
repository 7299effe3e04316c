/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The driver on a real core (bridge/): a Bus, BridgeConns with a test transport whose
 * queues we pop, and messages built with wire/. Every expectation (order of replies and
 * signals, error names, reply serials, destinations) is what dbus-daemon 1.14.10 did for
 * the same sequence, recorded with a libdbus client that prints everything it receives.
 */
#include "driver-fixture.h"

/* ---- tests ---- */

static void test_hello(Fixture *f, gconstpointer data) {
        Got g;

        hello_listening(f, 0);
        hello(f, 1);
        /* the new conn: reply first, then NameAcquired of its unique name */
        expect_reply(f, 1, NAME(f, 1));
        expect_signal(f, 1, "NameAcquired", NAME(f, 1), true);
        assert_empty(f, 1);
        /* listeners: NameOwnerChanged(":1.x", "", ":1.x") */
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpstr(g.hdr.member, ==, "NameOwnerChanged");
        g_assert_cmpstr(g.body, ==, fmt("%s  %s", NAME(f, 1), NAME(f, 1)));
        assert_empty(f, 0);

        /* a second Hello: Failed, connection kept */
        g_assert_cmpint(call_driver(f, 1, "Hello", NULL), ==, 0);
        expect_error(f, 1, "org.freedesktop.DBus.Error.Failed", "Already handled an Hello message");
        assert_empty(f, 0);
}

/* An error of the bus to conn @i before its Hello, answering its last message. */
static void expect_unregistered_error(Fixture *f, unsigned i, const char *name, const char *text) {
        Got g;

        g_assert_true(pop(f, i, &g));
        if (g.hdr.type != WIRE_MSG_ERROR)
                g_error("conn %u: expected %s, got type %u %s \"%s\"", i, name, g.hdr.type,
                        g.hdr.member, g.body);
        expect_from_bus(&g);
        g_assert_cmpstr(g.hdr.error_name, ==, name);
        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[i]);
        /* what dbus-daemon 1.14.10 writes there */
        g_assert_cmpstr(g.hdr.destination, ==, ":not.active.yet");
        g_assert_true(g.hdr.flags & WIRE_FLAG_NO_REPLY_EXPECTED);
        g_assert_cmpstr(g.body, ==, text);
}

/*
 * Before Hello, what dbus-daemon 1.14.10 did with the same messages from a raw client:
 * messages to the driver are answered and the connection stays; to a peer or a broadcast
 * it is dropped; a call without destination is answered; an unknown type without
 * destination is ignored.
 */
static void test_before_hello(Fixture *f, gconstpointer data) {
        static const char not_registered[] =
                "Client tried to send a message other than Hello without being registered";
        Send to_peer = { .destination = "org.example.X", .path = "/", .interface = "a.b",
                         .member = "M" };
        Send sig = { .type = WIRE_MSG_SIGNAL, .path = "/", .interface = "a.b", .member = "S" };
        Send sig_driver = { .type = WIRE_MSG_SIGNAL, .destination = "org.freedesktop.DBus",
                            .path = "/", .interface = "a.b", .member = "Hello" };
        Send hello_other = { .destination = "org.example.X", .path = "/",
                             .interface = "org.freedesktop.DBus", .member = "Hello" };
        Send hello_iface = { .destination = "org.freedesktop.DBus", .path = "/",
                             .interface = "org.example.X", .member = "Hello" };
        Send hello_bare = { .destination = "org.freedesktop.DBus", .path = "/x",
                            .member = "Hello" };
        Send ping = { .path = "/", .interface = "org.freedesktop.DBus.Peer", .member = "Ping" };
        Send reply = { .type = WIRE_MSG_METHOD_RETURN, .destination = "org.freedesktop.DBus",
                       .reply_serial = 1 };
        Send type5 = { .type = 5 };
        Send type5_driver = { .type = 5, .destination = "org.freedesktop.DBus" };
        Send type5_peer = { .type = 5, .destination = "org.example.X" };
        Got g;

        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", not_registered);
        g_assert_cmpint(call_driver(f, 0, "GetId", NULL), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", not_registered);
        g_assert_cmpint(send_msg(f, 0, &hello_iface, NULL), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", not_registered);
        g_assert_cmpint(send_msg(f, 0, &sig_driver, NULL), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", not_registered);
        g_assert_cmpint(send_msg(f, 0, &reply, NULL), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", not_registered);
        g_assert_cmpint(call_driver(f, 0, "Hello", "s", "x"), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                                  "Call to Hello has wrong args (s, expected )\n");
        g_assert_cmpint(send_msg(f, 0, &type5_driver, NULL), ==, 0);
        expect_unregistered_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied",
                                  "Message bus will not accept messages of unknown type\n");
        g_assert_cmpint(send_msg(f, 0, &type5, NULL), ==, 0);
        assert_empty(f, 0);
        /* a call without destination: answered as after Hello, no SENDER, no DESTINATION */
        g_assert_cmpint(send_msg(f, 0, &ping, NULL), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[0]);
        g_assert_null(g.hdr.destination);

        /* to a peer, or a broadcast: dropped */
        g_assert_cmpint(send_msg(f, 0, &to_peer, NULL), ==, DRIVER_E_DISCONNECT);
        g_assert_cmpint(send_msg(f, 0, &sig, NULL), ==, DRIVER_E_DISCONNECT);
        g_assert_cmpint(send_msg(f, 0, &hello_other, NULL), ==, DRIVER_E_DISCONNECT);
        g_assert_cmpint(send_msg(f, 0, &type5_peer, NULL), ==, DRIVER_E_DISCONNECT);
        assert_empty(f, 0);
        g_assert_false(bridge_conn_is_active(f->c[0]));

        /* Hello without interface, on any path, is Hello (libdbus matches it so) */
        g_assert_cmpint(send_msg(f, 0, &hello_bare, NULL), ==, 0);
        g_assert_true(bridge_conn_is_active(f->c[0]));
        expect_reply(f, 0, NAME(f, 0));

        /* an unregistered connection that leaves with answers still queued (no leak) */
        g_assert_cmpint(call_driver(f, 1, "GetId", NULL), ==, 0);
        f->c[1] = bridge_conn_unref(f->c[1]);
}

/*
 * Messages of an unknown type (5) after Hello, as dbus-daemon 1.14.10 treats them: never
 * delivered; no destination: nothing; the bus or an existing peer: AccessDenied, also with
 * NO_REPLY_EXPECTED; a name nobody owns: ServiceUnknown (NameHasNoOwner with
 * NO_AUTO_START), like a call.
 */
static void test_unknown_type(Fixture *f, gconstpointer data) {
        static const char denied[] = "Message bus will not accept messages of unknown type\n";
        Send m = { .type = 5 };

        hello(f, 0);
        hello_listening(f, 1);
        drain(f, 0);
        drain(f, 1);

        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        assert_empty(f, 0);
        m.destination = "org.freedesktop.DBus";
        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", denied);
        m.destination = NAME(f, 1);
        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", denied);
        m.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", denied);
        m.destination = NAME(f, 0);
        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.AccessDenied", denied);
        m.flags = 0;
        m.destination = "com.no.Body";
        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown",
                     "The name com.no.Body was not provided by any .service files");
        m.flags = WIRE_FLAG_NO_AUTO_START;
        g_assert_cmpint(send_msg(f, 0, &m, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Name \"com.no.Body\" does not exist");
        assert_empty(f, 0);
        assert_empty(f, 1);
}

static void test_request_name(Fixture *f, gconstpointer data) {
        const char *b, *c;

        hello_listening(f, 0);
        hello(f, 1);
        hello(f, 2);
        drain(f, 0);
        drain(f, 1);
        drain(f, 2);
        b = NAME(f, 1);
        c = NAME(f, 2);

        /* B takes a.b: NameOwnerChanged, NameAcquired, then the reply (1) */
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.b", 0u), ==, 0);
        expect_signal(f, 1, "NameAcquired", "a.b", true);
        expect_reply(f, 1, "1");
        assert_empty(f, 1);
        expect_signal(f, 0, "NameOwnerChanged", fmt("a.b  %s", b), false);
        assert_empty(f, 0);

        /* C queues (2), twice; REPLACE_EXISTING does not help while B forbids replacement */
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "a.b", 0u), ==, 0);
        expect_reply(f, 2, "2");
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "a.b", 2u), ==, 0);
        expect_reply(f, 2, "2");
        assert_empty(f, 0);

        /* B already owns it (4), now allowing replacement */
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.b", 1u), ==, 0);
        expect_reply(f, 1, "4");

        /* C replaces B: NameOwnerChanged, NameLost to B, NameAcquired to C, reply 1 */
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "a.b", 2u), ==, 0);
        expect_signal(f, 0, "NameOwnerChanged", fmt("a.b %s %s", b, c), false);
        expect_signal(f, 1, "NameLost", "a.b", true);
        expect_signal(f, 2, "NameAcquired", "a.b", true);
        expect_reply(f, 2, "1");

        /* C releases: B (queued again) gets it back */
        g_assert_cmpint(call_driver(f, 2, "ReleaseName", "s", "a.b"), ==, 0);
        expect_signal(f, 0, "NameOwnerChanged", fmt("a.b %s %s", c, b), false);
        expect_signal(f, 1, "NameAcquired", "a.b", true);
        expect_signal(f, 2, "NameLost", "a.b", true);
        expect_reply(f, 2, "1");

        /* ReleaseName results: 2 nobody owns it, 3 not the owner */
        g_assert_cmpint(call_driver(f, 2, "ReleaseName", "s", "x.y"), ==, 0);
        expect_reply(f, 2, "2");
        g_assert_cmpint(call_driver(f, 2, "ReleaseName", "s", "a.b"), ==, 0);
        expect_reply(f, 2, "3");

        /* DO_NOT_QUEUE while owned: 3 */
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "a.b", 4u), ==, 0);
        expect_reply(f, 2, "3");

        /* queries */
        g_assert_cmpint(call_driver(f, 2, "GetNameOwner", "s", "a.b"), ==, 0);
        expect_reply(f, 2, b);
        g_assert_cmpint(call_driver(f, 2, "NameHasOwner", "s", "a.b"), ==, 0);
        expect_reply(f, 2, "1");
        g_assert_cmpint(call_driver(f, 2, "NameHasOwner", "s", "x.y"), ==, 0);
        expect_reply(f, 2, "0");
        g_assert_cmpint(call_driver(f, 2, "NameHasOwner", "s", "org.freedesktop.DBus"), ==, 0);
        expect_reply(f, 2, "1");
        g_assert_cmpint(call_driver(f, 2, "ListQueuedOwners", "s", "a.b"), ==, 0);
        expect_reply(f, 2, "<a>");

        /* B leaves: its names go, then its unique name, in NameOwnerChanged */
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "c.d", 0u), ==, 0);
        drain(f, 0);
        bridge_conn_disconnect(f->c[1]);
        {
                Got g;
                unsigned n = 0;
                bool saw_unique = false;

                while (pop(f, 0, &g)) {
                        g_assert_cmpstr(g.hdr.member, ==, "NameOwnerChanged");
                        g_assert_false(saw_unique);     /* the unique name comes last */
                        if (g_str_has_prefix(g.body, ":"))
                                saw_unique = true;
                        ++n;
                }
                g_assert_true(saw_unique);
                g_assert_cmpuint(n, ==, 3);
        }
}

static void expect_no_reply(Fixture *f, unsigned i, uint32_t serial) {
        Got g;

        g_assert_true(pop(f, i, &g));
        if (g.hdr.type != WIRE_MSG_ERROR)
                g_error("conn %u: expected NoReply, got type %u %s \"%s\"", i, g.hdr.type,
                        g.hdr.member, g.body);
        expect_from_bus(&g);
        g_assert_cmpstr(g.hdr.error_name, ==, "org.freedesktop.DBus.Error.NoReply");
        g_assert_cmpstr(g.body, ==, "Message recipient disconnected from message bus without replying");
        g_assert_cmpuint(g.hdr.reply_serial, ==, serial);
}

/*
 * B leaves owning a.a, b.b (C queued) and c.c, owing calls to A and C. dbus-daemon 1.14.10
 * (raw client + BecomeMonitor): the names newest first, each with its promotion, then the
 * unique name's NameOwnerChanged, then a NoReply for each pending call, newest first.
 */
static void test_disconnect_order(Fixture *f, gconstpointer data) {
        Send to_b = { .path = "/", .interface = "a.b", .member = "M" };
        const char *b, *c;
        uint32_t a1, a2, c1;

        hello_listening(f, 0);
        hello(f, 1);
        hello(f, 2);
        b = NAME(f, 1);
        c = NAME(f, 2);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.a", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "b.b", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "b.b", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "c.c", 0u), ==, 0);
        to_b.destination = b;
        g_assert_cmpint(send_msg(f, 0, &to_b, NULL), ==, 0);
        a1 = f->serial[0];
        to_b.destination = "a.a";
        g_assert_cmpint(send_msg(f, 2, &to_b, NULL), ==, 0);
        c1 = f->serial[2];
        to_b.destination = b;
        g_assert_cmpint(send_msg(f, 0, &to_b, NULL), ==, 0);
        a2 = f->serial[0];
        drain(f, 0);
        drain(f, 1);
        drain(f, 2);

        bridge_conn_disconnect(f->c[1]);
        expect_signal(f, 0, "NameOwnerChanged", fmt("c.c %s ", b), false);
        expect_signal(f, 0, "NameOwnerChanged", fmt("b.b %s %s", b, c), false);
        expect_signal(f, 0, "NameOwnerChanged", fmt("a.a %s ", b), false);
        expect_signal(f, 0, "NameOwnerChanged", fmt("%s %s ", b, b), false);
        expect_no_reply(f, 0, a2);
        expect_no_reply(f, 0, a1);
        assert_empty(f, 0);
        expect_signal(f, 2, "NameAcquired", "b.b", true);
        expect_no_reply(f, 2, c1);
        assert_empty(f, 2);
}

/* Introspect @path through the driver; the XML of the reply (g_free it). */
static char *introspect(Fixture *f, const char *path) {
        Send s = { .destination = "org.freedesktop.DBus", .path = path,
                   .interface = "org.freedesktop.DBus.Introspectable", .member = "Introspect" };
        BridgeMsg *m;
        WireReader r;
        const char *xml;
        char *copy;

        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        m = bridge_conn_queue_peek(f->c[0]);
        g_assert_nonnull(m);
        g_assert_cmpint(m->hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpstr(m->hdr.signature, ==, "s");
        wire_reader_init(&r, m->data, &m->hdr);
        g_assert_cmpint(wire_reader_read_basic(&r, 's', &xml), ==, 0);
        copy = g_strdup(xml);
        bridge_conn_queue_pop(f->c[0]);
        return copy;
}

/*
 * What dbus-daemon 1.14.10 answers to Introspect on each path (its answers diffed with
 * ours): .Properties only on /org/freedesktop/DBus, a child node on the driver path's
 * ancestors, PropertiesChanged's named arguments, Peer's GetMachineId before Ping, and
 * its layout (two-space indent, one element per line).
 */
static void test_introspect_paths(Fixture *f, gconstpointer data) {
        static const struct {
                const char *path;
                const char *child;
        } cases[] = {
                { "/", "org/freedesktop/DBus" },
                { "/org", "freedesktop/DBus" },
                { "/org/freedesktop", "DBus" },
                { "/org/freedesktop/DBus", NULL },
                { "/org/freedesktop/DBus/sub", NULL },
                { "/org/freedesktop/DBusX", NULL },
                { "/org/free", NULL },
                { "/foo", NULL },
        };
        static const char head[] =
                "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
                "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"
                "<node>\n"
                "  <interface name=\"org.freedesktop.DBus\">\n"
                "    <method name=\"Hello\">\n"
                "      <arg direction=\"out\" type=\"s\"/>\n"
                "    </method>\n"
                "    <method name=\"RequestName\">\n"
                "      <arg direction=\"in\" type=\"s\"/>\n"
                "      <arg direction=\"in\" type=\"u\"/>\n"
                "      <arg direction=\"out\" type=\"u\"/>\n"
                "    </method>\n";
        static const char reload[] = "    <method name=\"ReloadConfig\">\n    </method>\n";
        static const char features[] =
                "    <property name=\"Features\" type=\"as\" access=\"read\">\n"
                "      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"const\"/>\n"
                "    </property>\n";
        static const char peer[] =
                "  <interface name=\"org.freedesktop.DBus.Peer\">\n"
                "    <method name=\"GetMachineId\">\n"
                "      <arg direction=\"out\" type=\"s\"/>\n"
                "    </method>\n"
                "    <method name=\"Ping\">\n"
                "    </method>\n"
                "  </interface>\n";
        static const char props_changed[] =
                "    <signal name=\"PropertiesChanged\">\n"
                "      <arg type=\"s\" name=\"interface_name\"/>\n"
                "      <arg type=\"a{sv}\" name=\"changed_properties\"/>\n"
                "      <arg type=\"as\" name=\"invalidated_properties\"/>\n"
                "    </signal>\n"
                "  </interface>\n"
                "  <interface name=\"org.freedesktop.DBus.Introspectable\">\n";
        size_t i;

        hello(f, 0);
        drain(f, 0);
        for (i = 0; i < G_N_ELEMENTS(cases); ++i) {
                g_autofree char *xml = introspect(f, cases[i].path);
                g_autofree char *node = NULL;
                bool driver_path = strcmp(cases[i].path, "/org/freedesktop/DBus") == 0;
                const char *p;

                g_test_message("path %s", cases[i].path);
                g_assert_true(g_str_has_prefix(xml, head));
                g_assert_nonnull(strstr(xml, reload));
                g_assert_nonnull(strstr(xml, features));
                p = strstr(xml, peer);
                g_assert_nonnull(p);
                if (cases[i].child) {
                        node = g_strdup_printf("  <node name=\"%s\"/>\n</node>\n", cases[i].child);
                        g_assert_cmpstr(p + strlen(peer), ==, node);
                } else {
                        g_assert_null(strstr(xml, "<node name="));
                        g_assert_true(g_str_has_suffix(xml, "  </interface>\n</node>\n"));
                }
                g_assert_cmpint(!!strstr(xml, "org.freedesktop.DBus.Properties"), ==, driver_path);
                g_assert_cmpint(!!strstr(xml, props_changed), ==, driver_path);
                /* nothing on one line with another element */
                g_assert_null(strstr(xml, "><"));
        }
        assert_empty(f, 0);
}

/* B and C both listen; the order each sees is dbus-daemon's (recorded with libdbus) */
static void test_signal_order(Fixture *f, gconstpointer data) {
        const char *b, *c;

        hello_listening(f, 1);
        hello_listening(f, 2);
        drain(f, 1);
        b = NAME(f, 1);
        c = NAME(f, 2);

        /* a new owner: NameOwnerChanged, NameAcquired, reply */
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.b", 1u), ==, 0);
        expect_signal(f, 1, "NameOwnerChanged", fmt("a.b  %s", b), false);
        expect_signal(f, 1, "NameAcquired", "a.b", true);
        expect_reply(f, 1, "1");
        expect_signal(f, 2, "NameOwnerChanged", fmt("a.b  %s", b), false);
        assert_empty(f, 1);
        assert_empty(f, 2);

        /* replacement: the old owner sees NameLost before NameOwnerChanged */
        g_assert_cmpint(call_driver(f, 2, "RequestName", "su", "a.b", 2u), ==, 0);
        expect_signal(f, 1, "NameLost", "a.b", true);
        expect_signal(f, 1, "NameOwnerChanged", fmt("a.b %s %s", b, c), false);
        expect_signal(f, 2, "NameOwnerChanged", fmt("a.b %s %s", b, c), false);
        expect_signal(f, 2, "NameAcquired", "a.b", true);
        expect_reply(f, 2, "1");
        assert_empty(f, 1);
        assert_empty(f, 2);

        /* release: the releaser sees NameLost, NameOwnerChanged, reply */
        g_assert_cmpint(call_driver(f, 2, "ReleaseName", "s", "a.b"), ==, 0);
        expect_signal(f, 1, "NameOwnerChanged", fmt("a.b %s %s", c, b), false);
        expect_signal(f, 1, "NameAcquired", "a.b", true);
        expect_signal(f, 2, "NameLost", "a.b", true);
        expect_signal(f, 2, "NameOwnerChanged", fmt("a.b %s %s", c, b), false);
        expect_reply(f, 2, "1");
        assert_empty(f, 1);
        assert_empty(f, 2);
}

static void test_name_errors(Fixture *f, gconstpointer data) {
        hello(f, 0);
        drain(f, 0);

        g_assert_cmpint(call_driver(f, 0, "RequestName", "su", ":1.5", 0u), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Cannot acquire a service starting with ':' such as \":1.5\"");
        g_assert_cmpint(call_driver(f, 0, "RequestName", "su", "org.freedesktop.DBus", 0u), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs", NULL);
        g_assert_cmpint(call_driver(f, 0, "RequestName", "su", "a", 0u), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Requested bus name \"a\" is not valid");
        g_assert_cmpint(call_driver(f, 0, "RequestName", "s", "a.b"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Call to RequestName has wrong args (s, expected su)\n");
        g_assert_cmpint(call_driver(f, 0, "ReleaseName", "s", ":1.5"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Cannot release a service starting with ':' such as \":1.5\"");
        g_assert_cmpint(call_driver(f, 0, "ReleaseName", "s", "org.freedesktop.DBus"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Cannot release the org.freedesktop.DBus service because it is owned by "
                     "the bus");
        g_assert_cmpint(call_driver(f, 0, "ReleaseName", "s", "a"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Given bus name \"a\" is not valid");
        g_assert_cmpint(call_driver(f, 0, "GetNameOwner", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get owner of name 'x.y': no such name");
        g_assert_cmpint(call_driver(f, 0, "GetNameOwner", "s", ":1.99"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner", NULL);
        g_assert_cmpint(call_driver(f, 0, "GetNameOwner", "s", ""), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner", NULL);
        g_assert_cmpint(call_driver(f, 0, "GetNameOwner", "s", "org.freedesktop.DBus"), ==, 0);
        expect_reply(f, 0, "org.freedesktop.DBus");
        g_assert_cmpint(call_driver(f, 0, "ListQueuedOwners", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get owners of name 'x.y': no such name");
        g_assert_cmpint(call_driver(f, 0, "ListQueuedOwners", "s", "org.freedesktop.DBus"), ==, 0);
        expect_reply(f, 0, "<a>");
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "x.y", 0u), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown",
                     "The name x.y was not provided by any .service files");
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", NAME(f, 0), 0u), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown", NULL);
        g_assert_cmpint(call_driver(f, 0, "RequestName", "su", "a.b", 0u), ==, 0);
        drain(f, 0);
        /* owned, but no .service file: dbus-daemon 1.14 answers ServiceUnknown, not 2 */
        g_assert_cmpint(call_driver(f, 0, "StartServiceByName", "su", "a.b", 0u), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown",
                     "The name a.b was not provided by any .service files");
        assert_empty(f, 0);
}

static void test_credentials(Fixture *f, gconstpointer data) {
        hello(f, 0);
        hello(f, 1);
        drain(f, 0);

        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixUser", "s", NAME(f, 1)), ==, 0);
        expect_reply(f, 0, "1001");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixProcessID", "s", NAME(f, 1)), ==, 0);
        expect_reply(f, 0, "4001");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixUser", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get UID of name 'x.y': no such name");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixProcessID", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get PID of name 'x.y': no such name");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionCredentials", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get credentials of name 'x.y': no such name");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionCredentials", "s", NAME(f, 1)), ==, 0);
        expect_reply(f, 0, "<a>");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixUser", "s", "org.freedesktop.DBus"),
                        ==, 0);
        expect_reply(f, 0, fmt("%u", (unsigned)getuid()));
        g_assert_cmpint(call_driver(f, 0, "GetConnectionSELinuxSecurityContext", "s", NAME(f, 1)),
                        ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.SELinuxSecurityContextUnknown",
                     fmt("Could not determine security context for '%s'", NAME(f, 1)));
        g_assert_cmpint(call_driver(f, 0, "GetConnectionSELinuxSecurityContext", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get security context of name 'x.y': no such name");
        g_assert_cmpint(call_driver(f, 0, "GetAdtAuditSessionData", "s", NAME(f, 1)), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.AdtAuditDataUnknown", NULL);
        g_assert_cmpint(call_driver(f, 0, "GetAdtAuditSessionData", "s", "x.y"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Could not get audit session data of name 'x.y': no such name");
        /* an ANONYMOUS peer (dbus-daemon 1.14): no uid to tell, and no uid or groups among
         * its credentials; its pid is still known */
        f->c[1]->creds.uid_unknown = true;
        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixUser", "s", NAME(f, 1)), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.Failed",
                     fmt("Could not determine UID for '%s'", NAME(f, 1)));
        g_assert_cmpint(call_driver(f, 0, "GetConnectionUnixProcessID", "s", NAME(f, 1)), ==, 0);
        expect_reply(f, 0, "4001");
        g_assert_cmpint(call_driver(f, 0, "GetConnectionCredentials", "s", NAME(f, 1)), ==, 0);
        expect_reply(f, 0, "<a>");
        assert_empty(f, 0);
}

/* GetConnectionCredentials in full: groups, ProcessFD (a dup) only for an fd-capable caller,
 * and the security label with its NUL */
static void test_credentials_full(Fixture *f, gconstpointer data) {
        BridgeCreds creds = { .uid = 7, .gid = 8, .pid = getpid(), .pidfd = -1 };
        BridgeConn *subject = NULL;
        BridgeMsg *m;
        WireReader r;
        const char *key;
        unsigned n_keys = 0;
        bool saw_fd = false, saw_label = false, saw_groups = false;
        int pidfd;

        creds.groups = malloc(2 * sizeof(gid_t));
        creds.groups[0] = 8;
        creds.groups[1] = 9;
        creds.n_groups = 2;
        creds.seclabel = strdup("unconfined");
        pidfd = open("/dev/null", O_RDONLY | O_CLOEXEC);   /* stands in for a pidfd */
        creds.pidfd = pidfd;
        g_assert_cmpint(bridge_conn_new(f->bus, &creds, 0, &transport_ops, &f->kicked[2],
                                        &subject), ==, 0);
        f->c[2] = bridge_conn_unref(f->c[2]);
        f->c[2] = subject;
        hello(f, 0);
        hello(f, 2);
        drain(f, 0);

        g_assert_cmpint(call_driver(f, 0, "GetConnectionCredentials", "s", NAME(f, 2)), ==, 0);
        m = bridge_conn_queue_peek(f->c[0]);
        g_assert_nonnull(m);
        g_assert_cmpint(m->hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpstr(m->hdr.signature, ==, "a{sv}");
        g_assert_cmpuint(m->n_fds, ==, 1);
        g_assert_cmpint(m->fds[0], !=, pidfd);
        wire_reader_init(&r, m->data, &m->hdr);
        g_assert_cmpint(wire_reader_enter(&r, 'a', "{sv}"), ==, 0);
        while (wire_reader_peek(&r)) {
                g_assert_cmpint(wire_reader_enter(&r, '{', NULL), ==, 0);
                g_assert_cmpint(wire_reader_read_basic(&r, 's', &key), ==, 0);
                if (strcmp(key, "ProcessFD") == 0) {
                        uint32_t idx;

                        g_assert_cmpint(wire_reader_enter(&r, 'v', "h"), ==, 0);
                        g_assert_cmpint(wire_reader_read_basic(&r, 'h', &idx), ==, 0);
                        g_assert_cmpuint(idx, ==, 0);
                        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                        saw_fd = true;
                } else if (strcmp(key, "LinuxSecurityLabel") == 0) {
                        char label[32];
                        size_t n = 0;

                        g_assert_cmpint(wire_reader_enter(&r, 'v', "ay"), ==, 0);
                        g_assert_cmpint(wire_reader_enter(&r, 'a', "y"), ==, 0);
                        while (wire_reader_peek(&r)) {
                                uint8_t y;

                                g_assert_cmpint(wire_reader_read_basic(&r, 'y', &y), ==, 0);
                                label[n++] = (char)y;
                        }
                        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                        g_assert_cmpuint(n, ==, strlen("unconfined") + 1);
                        g_assert_cmpstr(label, ==, "unconfined");
                        saw_label = true;
                } else if (strcmp(key, "UnixGroupIDs") == 0) {
                        uint32_t gid;

                        g_assert_cmpint(wire_reader_enter(&r, 'v', "au"), ==, 0);
                        g_assert_cmpint(wire_reader_enter(&r, 'a', "u"), ==, 0);
                        g_assert_cmpint(wire_reader_read_basic(&r, 'u', &gid), ==, 0);
                        g_assert_cmpuint(gid, ==, 8);
                        g_assert_cmpint(wire_reader_read_basic(&r, 'u', &gid), ==, 0);
                        g_assert_cmpuint(gid, ==, 9);
                        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                        saw_groups = true;
                } else {
                        uint32_t u;

                        g_assert_cmpint(wire_reader_enter(&r, 'v', "u"), ==, 0);
                        g_assert_cmpint(wire_reader_read_basic(&r, 'u', &u), ==, 0);
                        g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                        if (strcmp(key, "UnixUserID") == 0)
                                g_assert_cmpuint(u, ==, 7);
                        else
                                g_assert_cmpstr(key, ==, "ProcessID");
                }
                g_assert_cmpint(wire_reader_exit(&r), ==, 0);
                ++n_keys;
        }
        g_assert_true(saw_fd && saw_label && saw_groups);
        g_assert_cmpuint(n_keys, ==, 5);
        bridge_conn_queue_pop(f->c[0]);

        /* a caller without fd support gets no ProcessFD */
        g_assert_cmpint(call_driver(f, 2, "GetConnectionCredentials", "s", NAME(f, 2)), ==, 0);
        m = bridge_conn_queue_peek(f->c[2]);
        g_assert_nonnull(m);
        g_assert_cmpuint(m->n_fds, ==, 0);
}

static void test_match(Fixture *f, gconstpointer data) {
        g_autofree char *fill = g_strnfill(1100, 'x');
        g_autofree char *rule = NULL;

        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);

        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='x'"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.MatchRuleInvalid", NULL);
        rule = g_strdup_printf("arg0='%s'", fill);
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", rule), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.LimitsExceeded", NULL);
        g_assert_cmpint(call_driver(f, 0, "RemoveMatch", "s", "type='signal'"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.MatchRuleNotFound",
                     "The given match rule wasn't found and can't be removed");
        g_assert_cmpint(call_driver(f, 0, "RemoveMatch", "s", "type='x'"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.MatchRuleInvalid", NULL);

        /* only NameOwnerChanged about x.y */
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s",
                                    "type='signal',member='NameOwnerChanged',arg0='x.y'"), ==, 0);
        expect_reply(f, 0, "");
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "a.b", 0u), ==, 0);
        g_assert_cmpint(call_driver(f, 1, "RequestName", "su", "x.y", 0u), ==, 0);
        expect_signal(f, 0, "NameOwnerChanged", fmt("x.y  %s", NAME(f, 1)), false);
        assert_empty(f, 0);

        /* removed with a differently written but equal rule: nothing more arrives */
        g_assert_cmpint(call_driver(f, 0, "RemoveMatch", "s",
                                    " type=signal,member=NameOwnerChanged,arg0=x.y"), ==, 0);
        expect_reply(f, 0, "");
        g_assert_cmpint(call_driver(f, 1, "ReleaseName", "s", "x.y"), ==, 0);
        assert_empty(f, 0);
        g_assert_cmpint(call_driver(f, 0, "RemoveMatch", "s",
                                    "type='signal',member='NameOwnerChanged',arg0='x.y'"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.MatchRuleNotFound", NULL);
}

static void test_dispatch(Fixture *f, gconstpointer data) {
        Send s = { .destination = "org.freedesktop.DBus" };
        Send sig = { .type = WIRE_MSG_SIGNAL, .destination = "org.freedesktop.DBus",
                     .path = "/org/freedesktop/DBus", .interface = "org.freedesktop.DBus",
                     .member = "GetId" };
        char id[33];
        Got g;

        hello(f, 0);
        drain(f, 0);

        g_assert_cmpint(call_driver(f, 0, "Foo", NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownMethod",
                     "org.freedesktop.DBus does not understand message Foo");
        g_assert_cmpint(call_driver(f, 0, "GetId", "s", "x"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Call to GetId has wrong args (s, expected )\n");
        g_assert_cmpint(call_driver(f, 0, "Ping", NULL), ==, 0);      /* wrong interface */
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownMethod", NULL);

        /* the driver's interface on any path, and without interface */
        s.path = "/";
        s.interface = "org.freedesktop.DBus";
        s.member = "GetId";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpuint(strlen(g.body), ==, 32);
        memcpy(id, g.body, 33);
        s.interface = NULL;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_reply(f, 0, id);
        s.interface = "org.example.X";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownInterface",
                     "org.freedesktop.DBus does not understand message GetId");

        /* Peer */
        s.path = "/x";
        s.interface = "org.freedesktop.DBus.Peer";
        s.member = "Ping";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_reply(f, 0, "");
        s.interface = NULL;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_reply(f, 0, "");
        s.interface = "org.freedesktop.DBus.Peer";
        s.member = "GetMachineId";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        if (access("/etc/machine-id", R_OK) == 0) {
                g_assert_true(pop(f, 0, &g));
                g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
                g_assert_cmpuint(strlen(g.body), ==, 32);
        } else {
                drain(f, 0);
        }
        s.member = "Foo";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownMethod", NULL);

        /* Introspectable */
        s.interface = "org.freedesktop.DBus.Introspectable";
        s.member = "Introspect";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_nonnull(strstr(g.body, "<interface name=\"org.freedesktop.DBus\">"));

        /* NO_REPLY_EXPECTED calls to the driver are answered all the same (dbus-daemon) */
        s.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        s.interface = "org.freedesktop.DBus";
        s.member = "GetId";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_reply(f, 0, id);

        /* signals to the driver: ignored */
        g_assert_cmpint(send_msg(f, 0, &sig, NULL), ==, 0);
        assert_empty(f, 0);

        /* the rest of the interface answers */
        g_assert_cmpint(call_driver(f, 0, "ListActivatableNames", NULL), ==, 0);
        expect_reply(f, 0, "<a>");
        g_assert_cmpint(call_driver(f, 0, "ListNames", NULL), ==, 0);
        expect_reply(f, 0, "<a>");
        g_assert_cmpint(call_driver(f, 0, "ReloadConfig", NULL), ==, 0);
        expect_reply(f, 0, "");
        assert_empty(f, 0);
}

/* UpdateActivationEnvironment: privileged (bus uid or root), on the driver's path only */
static void test_privileged(Fixture *f, gconstpointer data) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/x",
                   .interface = "org.freedesktop.DBus", .member = "UpdateActivationEnvironment" };
        unsigned k = getuid() == 1001 ? 2 : 1;  /* a conn whose uid is not the bus's */

        hello(f, k);
        drain(f, k);
        g_assert_cmpint(send_msg(f, k, &s, NULL), ==, 0);
        expect_error(f, k, "org.freedesktop.DBus.Error.AccessDenied",
                     "Method 'UpdateActivationEnvironment' is only available at the canonical "
                     "object path '/org/freedesktop/DBus'");
        g_assert_cmpint(call_driver(f, k, "UpdateActivationEnvironment", NULL), ==, 0);
        expect_error(f, k, "org.freedesktop.DBus.Error.AccessDenied",
                     fmt("rejected attempt to call UpdateActivationEnvironment by connection "
                         "%s (uid=%u pid=%u) with uid %u", NAME(f, k), 1000 + k, 4000 + k,
                         1000 + k));
        assert_empty(f, k);
}

static void test_properties(Fixture *f, gconstpointer data) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus.Properties" };

        hello(f, 0);
        drain(f, 0);

        s.member = "Get";
        g_assert_cmpint(send_msg(f, 0, &s, "ss", "org.freedesktop.DBus", "Features"), ==, 0);
        expect_reply(f, 0, "<v>");
        g_assert_cmpint(send_msg(f, 0, &s, "ss", "org.freedesktop.DBus", "Interfaces"), ==, 0);
        expect_reply(f, 0, "<v>");
        g_assert_cmpint(send_msg(f, 0, &s, "ss", "org.freedesktop.DBus", "Foo"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownProperty",
                     "Property \"org.freedesktop.DBus.Foo\" not found");
        g_assert_cmpint(send_msg(f, 0, &s, "ss", "org.x", "Foo"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownInterface",
                     "Interface \"org.x\" not found");
        g_assert_cmpint(send_msg(f, 0, &s, "s", "org.freedesktop.DBus"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.InvalidArgs",
                     "Call to Get has wrong args (s, expected ss)\n");
        s.member = "GetAll";
        g_assert_cmpint(send_msg(f, 0, &s, "s", "org.freedesktop.DBus"), ==, 0);
        expect_reply(f, 0, "<a>");
        g_assert_cmpint(send_msg(f, 0, &s, "s", ""), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownInterface",
                     "Interface \"\" not found");
        /* Properties exists only on the driver's path */
        s.path = "/x";
        g_assert_cmpint(send_msg(f, 0, &s, "s", "org.freedesktop.DBus"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.UnknownInterface",
                     "org.freedesktop.DBus does not understand message GetAll");
        assert_empty(f, 0);
}

static void test_routing(Fixture *f, gconstpointer data) {
        Send s = { .destination = "x.y", .path = "/", .interface = "a.b", .member = "Foo" };
        Got g;

        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);

        /* no owner: ServiceUnknown, or NameHasNoOwner with NO_AUTO_START; also for
         * NO_REPLY_EXPECTED calls and signals (dbus-daemon answers them all) */
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown",
                     "The name x.y was not provided by any .service files");
        s.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown", NULL);
        s.flags = WIRE_FLAG_NO_AUTO_START;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Name \"x.y\" does not exist");
        s.destination = ":1.999";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NameHasNoOwner",
                     "Name \":1.999\" does not exist");
        s.flags = 0;
        s.type = WIRE_MSG_SIGNAL;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.ServiceUnknown",
                     "The name :1.999 was not provided by any .service files");

        /* a call to B arrives stamped; B's reply arrives; a second reply is dropped */
        s.type = WIRE_MSG_METHOD_CALL;
        s.destination = NAME(f, 1);
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_true(pop(f, 1, &g));
        g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_CALL);
        g_assert_cmpstr(g.hdr.sender, ==, NAME(f, 0));
        g_assert_cmpuint(g.hdr.serial, ==, f->serial[0]);
        {
                Send reply = { .type = WIRE_MSG_METHOD_RETURN, .destination = NAME(f, 0),
                               .reply_serial = f->serial[0] };

                g_assert_cmpint(send_msg(f, 1, &reply, NULL), ==, 0);
                g_assert_true(pop(f, 0, &g));
                g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
                g_assert_cmpstr(g.hdr.sender, ==, NAME(f, 1));
                g_assert_cmpint(send_msg(f, 1, &reply, NULL), ==, 0);
                assert_empty(f, 0);
                assert_empty(f, 1);     /* the unexpected reply: no error either */
        }
}

/* no destination: the answers of libdbus inside dbus-daemon, without SENDER/DESTINATION */
static void test_no_destination(Fixture *f, gconstpointer data) {
        Send s = { .path = "/x", .interface = "a.b", .member = "Foo" };
        Got g;

        hello(f, 0);
        drain(f, 0);

        g_assert_cmpint(send_msg(f, 0, &s, "su", "x", 1u), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_ERROR);
        g_assert_cmpstr(g.hdr.error_name, ==, "org.freedesktop.DBus.Error.UnknownMethod");
        g_assert_cmpstr(g.body, ==,
                        "Method \"Foo\" with signature \"su\" on interface \"a.b\" doesn't exist\n");
        g_assert_null(g.hdr.sender);
        g_assert_null(g.hdr.destination);
        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[0]);

        s.interface = NULL;
        s.member = "Ping";      /* Ping needs the Peer interface here */
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpstr(g.body, ==,
                        "Method \"Ping\" with signature \"\" on interface \"(null)\" doesn't exist\n");

        s.interface = "org.freedesktop.DBus.Peer";
        g_assert_cmpint(send_msg(f, 0, &s, "s", "any signature"), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpint(g.hdr.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[0]);
        g_assert_null(g.hdr.sender);

        s.member = "Foo";
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_true(pop(f, 0, &g));
        g_assert_cmpstr(g.body, ==, "Unknown method invoked on org.freedesktop.DBus.Peer interface");

        /* signals without destination are broadcasts: no answer */
        s.type = WIRE_MSG_SIGNAL;
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        assert_empty(f, 0);
}

static void test_fds_refused(Fixture *f, gconstpointer data) {
        Send s = { .path = "/", .interface = "a.b", .member = "Foo" };

        f->c[1] = bridge_conn_unref(f->c[1]);
        f->c[1] = new_conn(f, 1, 0);    /* no NEGOTIATE_UNIX_FD */
        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);

        s.destination = NAME(f, 1);
        g_assert_cmpint(send_msg(f, 0, &s, "h"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NotSupported", NULL);
        assert_empty(f, 1);
}

static void test_no_reply(Fixture *f, gconstpointer data) {
        Send s = { .path = "/", .interface = "a.b", .member = "Foo" };
        uint64_t deadline;

        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);
        s.destination = NAME(f, 1);

        /* timeout: NoReply from the bus */
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        drain(f, 1);
        g_assert_true(bus_next_deadline(f->bus, &deadline));
        f->bus->now_usec = deadline;
        g_assert_cmpint(bus_dispatch_timeouts(f->bus), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NoReply",
                     "Message did not receive a reply (timeout by message bus)");

        /* the callee leaves */
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        bridge_conn_disconnect(f->c[1]);
        expect_error(f, 0, "org.freedesktop.DBus.Error.NoReply",
                     "Message recipient disconnected from message bus without replying");
}

static void test_serials(Fixture *f, gconstpointer data) {
        uint32_t last = 0;
        unsigned n;
        Got g;

        hello(f, 0);
        for (n = 0; n < 20; ++n)
                g_assert_cmpint(call_driver(f, 0, "GetId", NULL), ==, 0);
        n = 0;
        while (pop(f, 0, &g)) {
                g_assert_cmpuint(g.hdr.serial, >, last);
                last = g.hdr.serial;
                ++n;
        }
        g_assert_cmpuint(n, ==, 22);
}

static void small_limits(BusLimits *l) {
        l->max_match_rules_per_connection = 2;
        l->max_names_per_connection = 2;
        l->max_replies_per_connection = 1;
        l->max_outgoing_bytes = 10000;
}

/* every LimitsExceeded, worded as dbus-daemon words it (recorded with the same limits) */
static void test_limits(Fixture *f, gconstpointer data) {
        Send s = { .path = "/x", .interface = "a.b", .member = "Foo" };
        g_autofree char *big = g_strnfill(3000, 'x');
        unsigned n;
        int r;

        hello(f, 0);
        hello(f, 1);
        drain(f, 0);
        drain(f, 1);

        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        expect_reply(f, 0, "");
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        expect_reply(f, 0, "");
        g_assert_cmpint(call_driver(f, 0, "AddMatch", "s", "type='signal'"), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.LimitsExceeded",
                     fmt("Connection \"%s\" is not allowed to add more match rules (increase "
                         "limits in configuration file if required; "
                         "max_match_rules_per_connection=2)", NAME(f, 0)));
        g_assert_cmpint(call_driver(f, 0, "RemoveMatch", "s", "type='signal'"), ==, 0);
        g_assert_cmpint(call_driver(f, 0, "RemoveMatch", "s", "type='signal'"), ==, 0);
        drain(f, 0);

        for (n = 0; n < 3; ++n)
                g_assert_cmpint(call_driver(f, 0, "RequestName", "su", fmt("n.n%u", n), 0u), ==, 0);
        {
                Got g;
                bool limited = false;

                while (pop(f, 0, &g))
                        if (g.hdr.type == WIRE_MSG_ERROR) {
                                g_assert_cmpstr(g.hdr.error_name, ==,
                                                "org.freedesktop.DBus.Error.LimitsExceeded");
                                g_assert_cmpstr(g.body, ==,
                                                fmt("Connection \"%s\" is not allowed to own more "
                                                    "services (increase limits in configuration "
                                                    "file if required; max_names_per_connection=2)",
                                                    NAME(f, 0)));
                                limited = true;
                        }
                g_assert_true(limited);
        }

        /* one pending reply allowed */
        s.destination = NAME(f, 1);
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        g_assert_cmpint(send_msg(f, 0, &s, NULL), ==, 0);
        expect_error(f, 0, "org.freedesktop.DBus.Error.LimitsExceeded",
                     "The maximum number of pending replies per connection has been reached");
        assert_empty(f, 0);

        /* conn 1 does not read: its queue fills up */
        s.type = WIRE_MSG_SIGNAL;
        for (n = 0; n < 100; ++n) {
                r = send_msg(f, 0, &s, "s", big);
                g_assert_cmpint(r, ==, 0);
                if (bridge_conn_queue_peek(f->c[0]))
                        break;
        }
        g_assert_cmpuint(n, <, 100);
        expect_error(f, 0, "org.freedesktop.DBus.Error.LimitsExceeded",
                     fmt("Rejected: destination has a full message queue, 0 matched rules; "
                         "type=\"signal\", sender=\"%s\" (uid=1000 pid=4000) interface=\"a.b\" "
                         "member=\"Foo\" error name=\"(unset)\" requested_reply=\"0\" "
                         "destination=\"%s\" (uid=1001 pid=4001)", NAME(f, 0), NAME(f, 1)));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/compat/driver/" name, Fixture, NULL, setup, fn, teardown)
        T("hello", test_hello);
        T("before-hello", test_before_hello);
        T("unknown-type", test_unknown_type);
        T("request-name", test_request_name);
        T("disconnect-order", test_disconnect_order);
        T("signal-order", test_signal_order);
        T("introspect-paths", test_introspect_paths);
        T("name-errors", test_name_errors);
        T("credentials", test_credentials);
        T("credentials-full", test_credentials_full);
        T("match", test_match);
        T("dispatch", test_dispatch);
        T("privileged", test_privileged);
        T("properties", test_properties);
        T("routing", test_routing);
        T("no-destination", test_no_destination);
        T("fds-refused", test_fds_refused);
        T("no-reply", test_no_reply);
        T("serials", test_serials);
        g_test_add("/compat/driver/limits", Fixture, (gconstpointer)(uintptr_t)small_limits, setup,
                   test_limits, teardown);
        return g_test_run();
}
