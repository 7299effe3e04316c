/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The fixture of the driver tests: a Bus with its Driver and N_CONNS BridgeConns whose
 * test transport we pop, messages built with wire/ and stamped like proxy/ does, and
 * helpers that assert what each connection receives.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "compat/driver.h"
#include "compat/match-rule.h"
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/writer.h"
#include <glib.h>       /* after util/macro.h: GLib redefines MIN/MAX without warning */

#define N_CONNS 3

typedef struct {
        Bus *bus;
        Driver *driver;
        BridgeConn *c[N_CONNS];
        unsigned kicked[N_CONNS];
        uint32_t serial[N_CONNS];
        BridgeMsg *last;                /* the last popped message: Got's strings point into it */
        void (*before_handle)(void);    /* around each driver_handle_message() (OOM tests) */
        void (*after_handle)(void);
} Fixture;

/* printf into one of a few static buffers: no leaks for LeakSanitizer to report */
static inline _printf_(1, 2) const char *fmt(const char *format, ...) {
        static char bufs[4][1024];
        static unsigned next;
        char *b = bufs[next++ % 4];
        va_list ap;

        va_start(ap, format);
        g_vsnprintf(b, sizeof(bufs[0]), format, ap);
        va_end(ap);
        return b;
}

static inline void transport_queue_nonempty(BridgeConn *conn, void *userdata) {
}

static void transport_kick(BridgeConn *conn, void *userdata) {
        ++*(unsigned *)userdata;
}

static const BridgeConnOps transport_ops = {
        .queue_nonempty = transport_queue_nonempty,
        .kick = transport_kick,
};

static inline BridgeConn *new_conn(Fixture *f, unsigned i, unsigned flags) {
        BridgeCreds creds = {
                .uid = 1000 + i,
                .gid = 100,
                .pid = 4000 + (pid_t)i,
                .pidfd = -1,
        };
        BridgeConn *conn = NULL;

        g_assert_cmpint(bridge_conn_new(f->bus, &creds, flags, &transport_ops, &f->kicked[i],
                                        &conn), ==, 0);
        return conn;
}

/* @data: NULL, or a void (*)(BusLimits *) that changes the session limits */
static inline void setup(Fixture *f, gconstpointer data) {
        void (*adjust)(BusLimits *l) = (void (*)(BusLimits *))(uintptr_t)data;
        BusLimits limits;
        unsigned i;

        memset(f, 0, sizeof(*f));
        bus_limits_init_session(&limits);
        limits.reply_timeout_usec = 25 * 1000 * 1000;   /* the session default is "never" */
        if (adjust)
                adjust(&limits);
        g_assert_cmpint(bus_new(&limits, &f->bus), ==, 0);
        g_assert_cmpint(driver_new(f->bus, &f->driver), ==, 0);
        for (i = 0; i < N_CONNS; ++i)
                f->c[i] = new_conn(f, i, BRIDGE_CONN_ACCEPT_FDS);
}

static inline void teardown(Fixture *f, gconstpointer data) {
        unsigned i;

        for (i = 0; i < N_CONNS; ++i) {
                if (!f->c[i])
                        continue;
                bridge_conn_disconnect(f->c[i]);
                f->c[i] = bridge_conn_unref(f->c[i]);
        }
        f->last = bridge_msg_unref(f->last);
        f->driver = driver_free(f->driver);
        f->bus = bus_free(f->bus);
}

/* ---- sending ---- */

typedef struct {
        uint8_t type;
        uint8_t flags;
        const char *destination;
        const char *path;
        const char *interface;
        const char *member;
        uint32_t reply_serial;
        const char *error_name;
} Send;

/* Build, parse and stamp a message from conn @i, then hand it to the driver. */
static inline int send_msgv(Fixture *f, unsigned i, const Send *s, const char *sig, va_list ap) {
        WireMsgSpec spec = {
                .type = s->type ?: WIRE_MSG_METHOD_CALL,
                .flags = s->flags,
                .serial = ++f->serial[i],
                .reply_serial = s->reply_serial,
                .path = s->path,
                .interface = s->interface,
                .member = s->member,
                .error_name = s->error_name,
                .destination = s->destination,
        };
        BridgeConn *conn = f->c[i];
        BridgeMsg *msg = NULL;
        WireHeader hdr;
        WireWriter w;
        uint8_t *data;
        size_t size;
        const char *p;
        int r;

        wire_writer_init(&w);
        for (p = sig; p && *p; ++p) {
                if (*p == 's') {
                        g_assert_cmpint(wire_writer_append_basic(&w, 's', va_arg(ap, const char *)),
                                        ==, 0);
                } else if (*p == 'u') {
                        uint32_t u = va_arg(ap, uint32_t);

                        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &u), ==, 0);
                } else if (*p == 'h') {
                        uint32_t idx = 0;

                        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &idx), ==, 0);
                        spec.n_fds = 1;
                } else {
                        g_assert_not_reached();
                }
        }
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, spec.n_fds, 0, &hdr), ==, 0);
        g_assert_cmpint(bridge_msg_new_stamped(data, &hdr, conn->active ? conn->unique_name : NULL,
                                               conn->id, &msg), ==, 0);
        free(data);
        if (spec.n_fds) {
                int *fds = g_new(int, 1);

                fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                g_assert_cmpint(fds[0], >=, 0);
                bridge_msg_take_fds(msg, fds, 1);
        }
        if (f->before_handle)
                f->before_handle();
        r = driver_handle_message(f->driver, conn, msg);
        if (f->after_handle)
                f->after_handle();
        bridge_msg_unref(msg);
        return r;
}

static inline int send_msg(Fixture *f, unsigned i, const Send *s, const char *sig, ...) {
        va_list ap;
        int r;

        va_start(ap, sig);
        r = send_msgv(f, i, s, sig, ap);
        va_end(ap);
        return r;
}

/* A method call to the driver, org.freedesktop.DBus interface, driver path. */
static inline int call_driver(Fixture *f, unsigned i, const char *member, const char *sig, ...) {
        Send s = { .destination = "org.freedesktop.DBus", .path = "/org/freedesktop/DBus",
                   .interface = "org.freedesktop.DBus", .member = member };
        va_list ap;
        int r;

        va_start(ap, sig);
        r = send_msgv(f, i, &s, sig, ap);
        va_end(ap);
        return r;
}

static inline void hello(Fixture *f, unsigned i) {
        g_assert_cmpint(call_driver(f, i, "Hello", NULL), ==, 0);
        g_assert_true(bridge_conn_is_active(f->c[i]));
}

/* ---- receiving ---- */

typedef struct {
        WireHeader hdr;
        char body[1024];                /* the string arguments, space-separated; 'u' as digits */
        unsigned n_fds;
} Got;

static inline bool pop(Fixture *f, unsigned i, Got *g) {
        BridgeMsg *m = bridge_conn_queue_peek(f->c[i]);
        WireReader r;
        char t;

        if (!m)
                return false;
        g->hdr = m->hdr;
        g->n_fds = m->n_fds;
        g->body[0] = '\0';
        wire_reader_init(&r, m->data, &m->hdr);
        while ((t = wire_reader_peek(&r))) {
                char piece[512];

                if (t == 's' || t == 'o') {
                        const char *v;

                        g_assert_cmpint(wire_reader_read_basic(&r, t, &v), ==, 0);
                        g_snprintf(piece, sizeof(piece), "%s", v);
                } else if (t == 'u' || t == 'b') {
                        uint32_t v;

                        g_assert_cmpint(wire_reader_read_basic(&r, t, &v), ==, 0);
                        g_snprintf(piece, sizeof(piece), "%u", v);
                } else {
                        g_assert_cmpint(wire_reader_skip(&r), ==, 0);
                        g_snprintf(piece, sizeof(piece), "<%c>", t);
                }
                if (g->body[0])
                        g_strlcat(g->body, " ", sizeof(g->body));
                g_strlcat(g->body, piece, sizeof(g->body));
        }
        /* the header strings point into the message: keep it alive until the next pop */
        f->last = bridge_msg_unref(f->last);
        f->last = bridge_msg_ref(m);
        bridge_conn_queue_pop(f->c[i]);
        return true;
}

static inline void assert_empty(Fixture *f, unsigned i) {
        Got g;

        if (pop(f, i, &g))
                g_error("conn %u: unexpected message type %u member %s error %s body \"%s\"", i,
                        g.hdr.type, g.hdr.member, g.hdr.error_name, g.body);
}

static inline void drain(Fixture *f, unsigned i) {
        Got g;

        while (pop(f, i, &g))
                ;
}

static inline void expect_from_bus(const Got *g) {
        g_assert_cmpstr(g->hdr.sender, ==, "org.freedesktop.DBus");
        g_assert_cmpuint(g->hdr.serial, !=, 0);
}

/* The next message of conn @i is the driver's reply to its last call, with @body. */
static inline void expect_reply(Fixture *f, unsigned i, const char *body) {
        Got g;

        g_assert_true(pop(f, i, &g));
        if (g.hdr.type != WIRE_MSG_METHOD_RETURN)
                g_error("conn %u: expected a reply, got type %u %s \"%s\"", i, g.hdr.type,
                        g.hdr.error_name ?: g.hdr.member, g.body);
        expect_from_bus(&g);
        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[i]);
        g_assert_cmpstr(g.hdr.destination, ==, f->c[i]->unique_name);
        g_assert_true(g.hdr.flags & WIRE_FLAG_NO_REPLY_EXPECTED);
        if (body)
                g_assert_cmpstr(g.body, ==, body);
}

static inline void expect_error(Fixture *f, unsigned i, const char *name, const char *text) {
        Got g;

        g_assert_true(pop(f, i, &g));
        if (g.hdr.type != WIRE_MSG_ERROR)
                g_error("conn %u: expected %s, got type %u %s \"%s\"", i, name, g.hdr.type,
                        g.hdr.member, g.body);
        expect_from_bus(&g);
        g_assert_cmpstr(g.hdr.error_name, ==, name);
        g_assert_cmpuint(g.hdr.reply_serial, ==, f->serial[i]);
        g_assert_cmpstr(g.hdr.destination, ==, f->c[i]->unique_name);
        if (text)
                g_assert_cmpstr(g.body, ==, text);
}

static inline void expect_signal(Fixture *f, unsigned i, const char *member, const char *body,
                          bool unicast) {
        Got g;

        g_assert_true(pop(f, i, &g));
        if (g.hdr.type != WIRE_MSG_SIGNAL || strcmp(g.hdr.member, member) != 0)
                g_error("conn %u: expected %s(%s), got type %u %s \"%s\"", i, member, body,
                        g.hdr.type, g.hdr.error_name ?: g.hdr.member, g.body);
        expect_from_bus(&g);
        g_assert_true(g.hdr.flags & WIRE_FLAG_NO_REPLY_EXPECTED);
        g_assert_cmpstr(g.hdr.path, ==, "/org/freedesktop/DBus");
        g_assert_cmpstr(g.hdr.interface, ==, "org.freedesktop.DBus");
        if (unicast)
                g_assert_cmpstr(g.hdr.destination, ==, f->c[i]->unique_name);
        else
                g_assert_null(g.hdr.destination);
        g_assert_cmpstr(g.body, ==, body);
}

/* conn @i said Hello and subscribed to every signal; its queue is empty */
static inline void hello_listening(Fixture *f, unsigned i) {
        hello(f, i);
        g_assert_cmpint(call_driver(f, i, "AddMatch", "s", "type='signal'"), ==, 0);
        drain(f, i);
}

#define NAME(f, i) ((f)->c[i]->unique_name)

/* BecomeMonitor(as @rules (NULL-terminated), u @flags) from conn @i */
static inline int become_monitor(Fixture *f, unsigned i, const char *const *rules, uint32_t flags) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_METHOD_CALL,
                .serial = ++f->serial[i],
                .path = "/org/freedesktop/DBus",
                .interface = "org.freedesktop.DBus.Monitoring",
                .member = "BecomeMonitor",
                .destination = "org.freedesktop.DBus",
        };
        BridgeConn *conn = f->c[i];
        BridgeMsg *msg = NULL;
        WireHeader hdr;
        WireWriter w;
        uint8_t *data;
        size_t size;
        int r;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "s"), ==, 0);
        for (; rules && *rules; ++rules)
                g_assert_cmpint(wire_writer_append_basic(&w, 's', *rules), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'u', &flags), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hdr), ==, 0);
        g_assert_cmpint(bridge_msg_new_stamped(data, &hdr, conn->unique_name, conn->id, &msg),
                        ==, 0);
        free(data);
        if (f->before_handle)
                f->before_handle();
        r = driver_handle_message(f->driver, conn, msg);
        if (f->after_handle)
                f->after_handle();
        bridge_msg_unref(msg);
        return r;
}
