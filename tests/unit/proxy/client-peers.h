/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The peers of the proxy client tests: a Server with its loop in-process, clients on
 * socketpairs, the test playing both ends (authentication, Hello, calls, reading what the
 * bus wrote).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "bridge/limits.h"
#include "proxy/client.h"
#include "bridge/bus.h"
#include "proxy/server.h"
#include "wire/message.h"
#include "wire/writer.h"
#include <glib.h>

typedef struct Peer {
        int fd;                         /* our end */
        GByteArray *in;                 /* bytes received, not yet taken */
        int fds[64];
        unsigned n_fds;
        char unique_name[32];
        uint32_t serial;
} Peer;

typedef struct Fixture {
        Server *s;
        Peer a, b;
} Fixture;

static Fixture *current;

static inline void pump(Fixture *f) {
        unsigned i;

        for (i = 0; i < 50; ++i)
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
}

static inline void peer_connect(Fixture *f, Peer *p) {
        ProxyClient *c = NULL;
        int sv[2];

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv),
                        ==, 0);
        g_assert_cmpint(client_new(f->s, sv[0], true, &c), ==, 0);
        g_assert_nonnull(c);
        client_start(c);        /* as the listener does: it enters the loop here */
        p->fd = sv[1];
        p->in = g_byte_array_new();
        p->serial = 0;
}

static inline void peer_close(Peer *p) {
        unsigned i;

        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
        for (i = 0; i < p->n_fds; ++i)
                close(p->fds[i]);
        p->n_fds = 0;
        if (p->in)
                g_byte_array_free(p->in, TRUE);
        p->in = NULL;
}

static inline void setup(Fixture *f, gconstpointer ctx) {
        BusLimits limits;

        bus_limits_init_session(&limits);
        g_assert_cmpint(server_new(&limits, &f->s), ==, 0);
        current = f;
        peer_connect(f, &f->a);
        peer_connect(f, &f->b);
}

static inline void teardown(Fixture *f, gconstpointer ctx) {
        peer_close(&f->a);
        peer_close(&f->b);
        f->s = server_free(f->s);
}

static inline void peer_send_fds(Peer *p, const void *data, size_t size, const int *fds,
                                 unsigned n_fds) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 8)];
        } control;
        struct iovec iov = { (void *)data, size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (n_fds) {
                struct cmsghdr *cmsg;

                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                memset(&control, 0, sizeof(control));
                cmsg = CMSG_FIRSTHDR(&mh);
                cmsg->cmsg_level = SOL_SOCKET;
                cmsg->cmsg_type = SCM_RIGHTS;
                cmsg->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * n_fds);
        }
        n = sendmsg(p->fd, &mh, MSG_NOSIGNAL);
        g_assert_cmpint(n, ==, (ssize_t)size);
}

static inline bool peer_recv(Peer *p);

/* The sockets are non-blocking: while the bus cannot take more, let it run and let the
 * other peer read, as real peers would. */
static inline void peer_send(Peer *p, const void *data, size_t size) {
        size_t done = 0;

        while (done < size) {
                ssize_t n = send(p->fd, (const char *)data + done, size - done, MSG_NOSIGNAL);

                if (n < 0 && errno == EAGAIN) {
                        g_assert_cmpint(loop_run_once(current->s->loop, 0), >=, 0);
                        if (current->b.fd >= 0 && p != &current->b)
                                (void) peer_recv(&current->b);
                        continue;
                }
                g_assert_cmpint(n, >, 0);
                done += (size_t)n;
        }
}

/* Read whatever is there; returns false on EOF. */
static inline bool peer_recv(Peer *p) {
        for (;;) {
                union {
                        struct cmsghdr h;
                        uint8_t buf[CMSG_SPACE(sizeof(int) * 16)];
                } control;
                uint8_t buf[65536];
                struct iovec iov = { buf, sizeof(buf) };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof(control) };
                struct cmsghdr *cmsg;
                ssize_t n = recvmsg(p->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

                if (n < 0 && errno == ECONNRESET)
                        return false;   /* closed by the bus with our input unread */
                if (n < 0) {
                        g_assert_cmpint(errno, ==, EAGAIN);
                        return true;
                }
                for (cmsg = CMSG_FIRSTHDR(&mh); cmsg; cmsg = CMSG_NXTHDR(&mh, cmsg)) {
                        unsigned k = (unsigned)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                        g_assert_cmpuint(p->n_fds + k, <=, G_N_ELEMENTS(p->fds));
                        memcpy(p->fds + p->n_fds, CMSG_DATA(cmsg), k * sizeof(int));
                        p->n_fds += k;
                }
                if (n == 0)
                        return false;
                g_byte_array_append(p->in, buf, (guint)n);
        }
}

/* Take the next complete message; its bytes go to *ret_data (g_free). */
static inline bool peer_take_msg(Peer *p, WireHeader *ret_hdr, uint8_t **ret_data) {
        size_t size;
        uint8_t *data;

        if (wire_message_frame(p->in->data, p->in->len, &size) != 0 || size > p->in->len)
                return false;
        data = g_memdup2(p->in->data, size);
        g_byte_array_remove_range(p->in, 0, (guint)size);
        g_assert_cmpint(wire_message_parse(data, size, p->n_fds, 0, ret_hdr), ==, 0);
        *ret_data = data;
        return true;
}

static inline void peer_expect_line(Peer *p, const char *line) {
        size_t n = strlen(line);

        g_assert_cmpuint(p->in->len, >=, n);
        g_assert_cmpint(memcmp(p->in->data, line, n), ==, 0);
        g_byte_array_remove_range(p->in, 0, (guint)n);
}

static inline uint8_t *build(Peer *p, uint8_t type, const char *dest, const char *path,
                             const char *iface, const char *member, WireWriter *body,
                             uint32_t n_fds, size_t *ret_size) {
        WireMsgSpec spec = {
                .type = type, .serial = ++p->serial, .path = path, .interface = iface,
                .member = member, .destination = dest, .n_fds = n_fds,
        };
        uint8_t *data = NULL;

        g_assert_cmpint(wire_message_build(&spec, body, &data, ret_size), ==, 0);
        return data;
}

static inline uint8_t *build_driver_call(Peer *p, const char *member, WireWriter *body,
                                         size_t *ret_size) {
        return build(p, WIRE_MSG_METHOD_CALL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                     "org.freedesktop.DBus", member, body, 0, ret_size);
}

static inline GByteArray *auth_bytes(bool fds) {
        GByteArray *b = g_byte_array_new();
        char line[64];
        char uid[16];
        unsigned i;

        snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
        g_byte_array_append(b, (const guint8 *)"\0AUTH EXTERNAL ", 15);
        for (i = 0; uid[i]; ++i) {
                snprintf(line, sizeof(line), "%02x", (unsigned char)uid[i]);
                g_byte_array_append(b, (const guint8 *)line, 2);
        }
        g_byte_array_append(b, (const guint8 *)"\r\n", 2);
        if (fds)
                g_byte_array_append(b, (const guint8 *)"NEGOTIATE_UNIX_FD\r\n", 19);
        g_byte_array_append(b, (const guint8 *)"BEGIN\r\n", 7);
        return b;
}

static inline void append_call(GByteArray *b, Peer *p, const char *member) {
        size_t size;
        uint8_t *data = build_driver_call(p, member, NULL, &size);

        g_byte_array_append(b, data, (guint)size);
        free(data);
}

/* One call to the driver, sent. */
static inline void peer_send_call(Peer *p, const char *member) {
        GByteArray *b = g_byte_array_new();

        append_call(b, p, member);
        peer_send(p, b->data, b->len);
        g_byte_array_free(b, TRUE);
}

/* Authenticate and say Hello in one write; check the replies; remember the unique name. */
static inline void peer_hello(Fixture *f, Peer *p, bool fds) {
        GByteArray *b = auth_bytes(fds);
        char ok[64];
        WireHeader h;
        uint8_t *data;

        append_call(b, p, "Hello");
        peer_send(p, b->data, b->len);
        g_byte_array_free(b, TRUE);
        pump(f);
        g_assert_true(peer_recv(p));
        snprintf(ok, sizeof(ok), "OK %s\r\n", f->s->guid);
        peer_expect_line(p, ok);
        if (fds)
                peer_expect_line(p, "AGREE_UNIX_FD\r\n");
        g_assert_true(peer_take_msg(p, &h, &data));
        g_assert_cmpint(h.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpuint(h.reply_serial, ==, 1);
        g_assert_cmpstr(h.signature, ==, "s");
        snprintf(p->unique_name, sizeof(p->unique_name), "%s", h.destination);
        g_assert_true(g_str_has_prefix(p->unique_name, ":1."));
        g_free(data);
        g_assert_true(peer_take_msg(p, &h, &data));
        g_assert_cmpstr(h.member, ==, "NameAcquired");
        g_free(data);
        g_assert_cmpuint(p->in->len, ==, 0);
}

static inline void add_match(Fixture *f, Peer *p, const char *rule) {
        WireWriter w;
        WireHeader h;
        uint8_t *data;
        size_t size;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', rule), ==, 0);
        data = build_driver_call(p, "AddMatch", &w, &size);
        wire_writer_deinit(&w);
        peer_send(p, data, size);
        free(data);
        pump(f);
        g_assert_true(peer_recv(p));
        g_assert_true(peer_take_msg(p, &h, &data));
        g_assert_cmpint(h.type, ==, WIRE_MSG_METHOD_RETURN);
        g_free(data);
}

/* Run until @p's connection is closed by the bus; false if it stayed open. */
static inline bool peer_dropped(Fixture *f, Peer *p) {
        unsigned i;

        for (i = 0; i < 100; ++i) {
                pump(f);
                if (!peer_recv(p))
                        return true;
        }
        return false;
}
