/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Test fixture for the bridge unit tests: a bus with a recording notification handler, and
 * connections on a fake transport that counts queue_nonempty/kick calls; messages are built
 * with wire_message_build(), validated with wire_message_parse() and stamped with
 * bridge_msg_new_stamped(), as the front end does.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "bridge/bloom.h"
#include "bridge/bus-internal.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/match.h"
#include "bridge/msg.h"
#include "bridge/names.h"
#include "bridge/reply.h"
#include "wire/message.h"
#include "wire/writer.h"
/* after util/macro.h: GLib #undefs MIN/MAX before defining its own */
#include <glib.h>

typedef struct TestTransport {
        unsigned n_nonempty;
        unsigned n_kick;
} TestTransport;

static _unused_ void test_transport_nonempty(BridgeConn *conn, void *userdata) {
        TestTransport *t = userdata;

        g_assert_true(conn->active);
        g_assert_cmpuint(conn->queued_msgs, ==, 1);     /* only on empty -> non-empty */
        ++t->n_nonempty;
}

static _unused_ void test_transport_kick(BridgeConn *conn, void *userdata) {
        TestTransport *t = userdata;

        ++t->n_kick;
}

static const BridgeConnOps test_conn_ops = {
        .queue_nonempty = test_transport_nonempty,
        .kick = test_transport_kick,
};

/* The notifications, one line each, in order: "added :1.1", "name a.b :1.1 -> :1.2", ... */
typedef struct TestEvents {
        GString *log;
        int fail_with;                  /* returned by each handler */
} TestEvents;

static _unused_ int test_ev_added(void *userdata, BridgeConn *conn) {
        TestEvents *e = userdata;

        g_string_append_printf(e->log, "added %s;", conn->unique_name);
        return e->fail_with;
}

static _unused_ int test_ev_removed(void *userdata, BridgeConn *conn) {
        TestEvents *e = userdata;

        g_assert_false(conn->active);
        g_assert_true(list_is_empty(&conn->owned));
        /* the calls it owes are failed after this (dbus-daemon's order) */
        g_assert_true(list_is_empty(&conn->replies_out));
        g_assert_true(list_is_empty(&conn->matches));
        g_assert_true(list_is_empty(&conn->queue));
        g_string_append_printf(e->log, "removed %s;", conn->unique_name);
        return e->fail_with;
}

static _unused_ int test_ev_name(void *userdata, const char *name, BridgeConn *old_owner,
                        BridgeConn *new_owner) {
        TestEvents *e = userdata;

        g_string_append_printf(e->log, "name %s %s>%s;", name,
                               old_owner ? old_owner->unique_name : "-",
                               new_owner ? new_owner->unique_name : "-");
        return e->fail_with;
}

static _unused_ int test_ev_reply_lost(void *userdata, BridgeConn *caller, uint32_t serial,
                              bool timed_out, const char *callee_name) {
        TestEvents *e = userdata;

        g_string_append_printf(e->log, "lost %s %u %s %s;", caller->unique_name, serial,
                               timed_out ? "timeout" : "gone", callee_name);
        return e->fail_with;
}

static _unused_ int test_ev_copy_denied(void *userdata, const BridgeConn *sender,
                                        const BridgeMsg *msg, const char *text) {
        TestEvents *e = userdata;

        g_string_append_printf(e->log, "denied %s %u %s;", sender ? sender->unique_name : "bus",
                               msg->hdr.serial, text);
        return e->fail_with;
}

static const BusNotifyOps test_notify_ops = {
        .conn_added = test_ev_added,
        .conn_removed = test_ev_removed,
        .name_changed = test_ev_name,
        .reply_lost = test_ev_reply_lost,
        .copy_denied = test_ev_copy_denied,
};

#define TEST_MAX_CONNS 8

typedef struct Fixture {
        Bus *bus;
        TestEvents ev;
        BridgeConn *c[TEST_MAX_CONNS];
        TestTransport t[TEST_MAX_CONNS];
} Fixture;

/* How the fixture's bus numbers unique names (native-fixture.h: kdbus's, as kdbusd's bus
 * with a native front end; native peers HELLO on no other) */
#ifndef TEST_BUS_NAMING
#define TEST_BUS_NAMING BUS_NAMING_DBUS_DAEMON
#endif

static _unused_ void fixture_setup_limits(Fixture *f, const BusLimits *limits) {
        memset(f, 0, sizeof(*f));
        g_assert_cmpint(bus_new(limits, &f->bus), ==, 0);
        g_assert_cmpint(bus_set_naming(f->bus, TEST_BUS_NAMING), ==, 0);
        f->ev.log = g_string_new(NULL);
        bus_set_notify(f->bus, &test_notify_ops, &f->ev);
}

static _unused_ void fixture_setup(Fixture *f, gconstpointer ctx) {
        fixture_setup_limits(f, NULL);
}

static _unused_ void fixture_teardown(Fixture *f, gconstpointer ctx) {
        unsigned i;

        for (i = 0; i < TEST_MAX_CONNS; ++i)
                f->c[i] = bridge_conn_unref(f->c[i]);
        f->bus = bus_free(f->bus);
        g_string_free(f->ev.log, TRUE);
}

/* Connection @i (uid 1000 + @i unless @uid >= 0), hello'd; its id is 1 + @i if made in order. */
static _unused_ BridgeConn *fixture_conn_uid(Fixture *f, unsigned i, int uid, unsigned flags, bool hello) {
        BridgeCreds creds = { .uid = uid >= 0 ? (uid_t)uid : 1000 + i, .gid = 1000, .pid = 0,
                              .pidfd = -1 };

        g_assert_null(f->c[i]);
        g_assert_cmpint(bridge_conn_new(f->bus, &creds, flags, &test_conn_ops, &f->t[i], &f->c[i]),
                        ==, 0);
        if (hello)
                g_assert_cmpint(bridge_conn_hello(f->c[i]), ==, 0);
        return f->c[i];
}

static _unused_ BridgeConn *fixture_conn(Fixture *f, unsigned i) {
        return fixture_conn_uid(f, i, -1, BRIDGE_CONN_ACCEPT_FDS, true);
}

static _unused_ void fixture_log_reset(Fixture *f) {
        g_string_truncate(f->ev.log, 0);
}

#define assert_log(f, s) do { g_assert_cmpstr((f)->ev.log->str, ==, (s)); fixture_log_reset(f); } while (0)

/* A message from @sender (NULL: the bus); @args: "s" strings, NULL-terminated, or "o:/path". */
typedef struct TestMsg {
        uint8_t type;
        uint8_t flags;
        uint32_t serial;
        uint32_t reply_serial;
        const char *destination, *path, *interface, *member, *error_name;
        const char *args[8];
} TestMsg;

static _unused_ BridgeMsg *test_msg_new(BridgeConn *sender, const TestMsg *t) {
        WireMsgSpec spec = {
                .type = t->type, .flags = t->flags, .serial = t->serial ? t->serial : 1,
                .reply_serial = t->reply_serial, .path = t->path, .interface = t->interface,
                .member = t->member, .error_name = t->error_name, .destination = t->destination,
        };
        WireWriter w;
        WireHeader hdr;
        BridgeMsg *m = NULL;
        uint8_t *data = NULL;
        size_t size;
        unsigned i;

        if (t->type == WIRE_MSG_SIGNAL || t->type == WIRE_MSG_METHOD_CALL) {
                if (!spec.path)
                        spec.path = "/";
                if (!spec.member)
                        spec.member = "M";
        }
        if (t->type == WIRE_MSG_SIGNAL && !spec.interface)
                spec.interface = "t.I";
        if (t->type == WIRE_MSG_ERROR && !spec.error_name)
                spec.error_name = "t.Error";
        if (!sender)
                spec.sender = "org.freedesktop.DBus";
        wire_writer_init(&w);
        for (i = 0; i < ELEMENTSOF(t->args) && t->args[i]; ++i) {
                if (g_str_has_prefix(t->args[i], "o:"))
                        g_assert_cmpint(wire_writer_append_basic(&w, 'o', t->args[i] + 2), ==, 0);
                else if (g_str_has_prefix(t->args[i], "u:")) {
                        uint32_t u = 7;
                        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
                } else
                        g_assert_cmpint(wire_writer_append_basic(&w, 's', t->args[i]), ==, 0);
        }
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hdr), ==, 0);
        if (sender) {
                g_assert_cmpint(bridge_msg_new_stamped_cached(sender->bus->msg_cache, data, &hdr,
                                                              sender->unique_name, sender->id, &m),
                                ==, 0);
                free(data);
        } else {
                g_assert_cmpint(bridge_msg_new_take(data, size, 0, &m), ==, 0);
        }
        return m;
}

/* Build, send, unref; returns bridge_conn_send()'s result. */
static _unused_ int test_send(BridgeConn *sender, const TestMsg *t) {
        BridgeMsg *m = test_msg_new(sender, t);
        int r = bridge_conn_send(sender, m);

        bridge_msg_unref(m);
        return r;
}

/* Pop the oldest message of @c and return its member (or error name), "" when empty. */
static _unused_ const char *test_pop(BridgeConn *c, uint32_t *ret_serial) {
        static char buf[256];
        BridgeMsg *m = bridge_conn_queue_peek(c);

        if (!m)
                return "";
        g_snprintf(buf, sizeof(buf), "%s", m->hdr.member ? m->hdr.member :
                                           m->hdr.error_name ? m->hdr.error_name : "(reply)");
        if (ret_serial)
                *ret_serial = m->hdr.reply_serial;
        bridge_conn_queue_pop(c);
        return buf;
}
