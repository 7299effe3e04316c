/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Client I/O on the real core and driver, in-process: a Server with its loop, clients on
 * socketpairs, the test playing the peers. Covers pipelined authentication, input that
 * trickles in byte by byte, the per-iteration budget, messages larger than the read
 * buffer, fd passing (and refusal without NEGOTIATE_UNIX_FD), delivery of what a peer sent
 * before it hung up, a bystander during a storm of hangups (teardowns in slices),
 * disconnection on malformed input, and the auth timer freed once Hello has succeeded.
 * Large messages are read in place (into their own message, not through a grown input
 * buffer) and checked as any other: header at once, body and fds when complete.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

static void pump(Fixture *f) {
        unsigned i;

        for (i = 0; i < 50; ++i)
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
}

static void peer_connect(Fixture *f, Peer *p) {
        ProxyClient *c = NULL;
        int sv[2];

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), ==, 0);
        g_assert_cmpint(client_new(f->s, sv[0], true, &c), ==, 0);
        g_assert_nonnull(c);
        client_start(c);        /* as the listener does: it enters the loop here */
        p->fd = sv[1];
        p->in = g_byte_array_new();
        p->serial = 0;
}

static void peer_close(Peer *p) {
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

static void setup(Fixture *f, gconstpointer ctx) {
        BusLimits limits;

        bus_limits_init_session(&limits);
        g_assert_cmpint(server_new(&limits, &f->s), ==, 0);
        current = f;
        peer_connect(f, &f->a);
        peer_connect(f, &f->b);
}

static void teardown(Fixture *f, gconstpointer ctx) {
        peer_close(&f->a);
        peer_close(&f->b);
        f->s = server_free(f->s);
}

static void peer_send_fds(Peer *p, const void *data, size_t size, const int *fds, unsigned n_fds) {
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

static bool peer_recv(Peer *p);

/* The sockets are non-blocking: while the bus cannot take more, let it run and let the
 * other peer read, as real peers would. */
static void peer_send(Peer *p, const void *data, size_t size) {
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
static bool peer_recv(Peer *p) {
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
static bool peer_take_msg(Peer *p, WireHeader *ret_hdr, uint8_t **ret_data) {
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

static void peer_expect_line(Peer *p, const char *line) {
        size_t n = strlen(line);

        g_assert_cmpuint(p->in->len, >=, n);
        g_assert_cmpint(memcmp(p->in->data, line, n), ==, 0);
        g_byte_array_remove_range(p->in, 0, (guint)n);
}

static uint8_t *build(Peer *p, uint8_t type, const char *dest, const char *path,
                      const char *iface, const char *member, WireWriter *body, uint32_t n_fds,
                      size_t *ret_size) {
        WireMsgSpec spec = {
                .type = type, .serial = ++p->serial, .path = path, .interface = iface,
                .member = member, .destination = dest, .n_fds = n_fds,
        };
        uint8_t *data = NULL;

        g_assert_cmpint(wire_message_build(&spec, body, &data, ret_size), ==, 0);
        return data;
}

static uint8_t *build_driver_call(Peer *p, const char *member, WireWriter *body, size_t *ret_size) {
        return build(p, WIRE_MSG_METHOD_CALL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                     "org.freedesktop.DBus", member, body, 0, ret_size);
}

static GByteArray *auth_bytes(bool fds) {
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

static void append_call(GByteArray *b, Peer *p, const char *member) {
        size_t size;
        uint8_t *data = build_driver_call(p, member, NULL, &size);

        g_byte_array_append(b, data, (guint)size);
        free(data);
}

/* One call to the driver, sent. */
static void peer_send_call(Peer *p, const char *member) {
        GByteArray *b = g_byte_array_new();

        append_call(b, p, member);
        peer_send(p, b->data, b->len);
        g_byte_array_free(b, TRUE);
}

/* Authenticate and say Hello in one write; check the replies; remember the unique name. */
static void peer_hello(Fixture *f, Peer *p, bool fds) {
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

static void test_pipelined(Fixture *f, gconstpointer ctx) {
        GByteArray *b = auth_bytes(true);
        WireHeader h;
        uint8_t *data;
        char ok[64];

        append_call(b, &f->a, "Hello");
        append_call(b, &f->a, "GetId");
        peer_send(&f->a, b->data, b->len);
        g_byte_array_free(b, TRUE);
        pump(f);
        g_assert_true(peer_recv(&f->a));
        snprintf(ok, sizeof(ok), "OK %s\r\n", f->s->guid);
        peer_expect_line(&f->a, ok);
        peer_expect_line(&f->a, "AGREE_UNIX_FD\r\n");
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 1);
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpstr(h.member, ==, "NameAcquired");
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 2);
        g_assert_cmpstr(h.signature, ==, "s");
        /* the body is the bus id, which is not the server's guid (as dbus-daemon) */
        g_assert_cmpint(memcmp(data + h.body_offset + 4, f->s->guid, 32), !=, 0);
        for (unsigned k = 0; k < 16; ++k) {
                char hex[3];

                snprintf(hex, sizeof(hex), "%02x", f->s->bus->id[k]);
                g_assert_cmpint(memcmp(data + h.body_offset + 4 + 2 * k, hex, 2), ==, 0);
        }
        g_free(data);
        g_assert_false(peer_take_msg(&f->a, &h, &data));
}

static void test_trickle(Fixture *f, gconstpointer ctx) {
        GByteArray *b = auth_bytes(false);
        WireHeader h;
        uint8_t *data;
        size_t i;

        append_call(b, &f->a, "Hello");
        append_call(b, &f->a, "GetId");
        for (i = 0; i < b->len; ++i) {
                peer_send(&f->a, b->data + i, 1);
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        }
        g_byte_array_free(b, TRUE);
        pump(f);
        g_assert_true(peer_recv(&f->a));
        g_assert_true(g_str_has_prefix((const char *)f->a.in->data, "OK "));
        g_byte_array_remove_range(f->a.in, 0, 37);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_free(data);
        g_assert_true(peer_take_msg(&f->a, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 2);
        g_free(data);
}

static unsigned peer_count_replies(Peer *p) {
        unsigned n = 0;
        WireHeader h;
        uint8_t *data;

        g_assert_true(peer_recv(p));
        while (peer_take_msg(p, &h, &data)) {
                ++n;
                g_free(data);
        }
        return n;
}

/* A peer with a full input queue delays another peer's call by at most one budget: one
 * wakeup serves both (every ready fd is dispatched), the flooder with one budget only
 * (its leftover input waits for the next wakeup on the ready list), and so on for each
 * wakeup until the flood is done. */
static void test_fair(Fixture *f, gconstpointer ctx) {
        GByteArray *b = g_byte_array_new();
        unsigned i, n_a, n_calls = 10 * SERVER_CLIENT_BUDGET;
        WireHeader h;
        uint8_t *data;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        for (i = 0; i < n_calls; ++i)
                append_call(b, &f->a, "GetId");
        g_assert_cmpint(send(f->a.fd, b->data, b->len, MSG_NOSIGNAL), ==, (ssize_t)b->len);
        g_byte_array_free(b, TRUE);
        peer_send_call(&f->b, "GetId");

        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        g_assert_true(peer_recv(&f->b));
        g_assert_true(peer_take_msg(&f->b, &h, &data));
        g_assert_cmpuint(h.reply_serial, ==, 2);
        g_free(data);
        n_a = peer_count_replies(&f->a);
        g_assert_cmpuint(n_a, >, 0);
        g_assert_cmpuint(n_a, <=, SERVER_CLIENT_BUDGET);
        /* one budget per wakeup, until the flood is done */
        for (i = 0; i < 100 && n_a < n_calls; ++i) {
                unsigned k;

                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                k = peer_count_replies(&f->a);
                g_assert_cmpuint(k, <=, SERVER_CLIENT_BUDGET);
                n_a += k;
        }
        g_assert_cmpuint(n_a, ==, n_calls);
}

static void test_budget(Fixture *f, gconstpointer ctx) {
        GByteArray *b = g_byte_array_new();
        unsigned i, n = 0, n_calls = 10 * SERVER_CLIENT_BUDGET + 7;
        WireHeader h;
        uint8_t *data;

        peer_hello(f, &f->a, false);
        for (i = 0; i < n_calls; ++i)
                append_call(b, &f->a, "GetId");
        peer_send(&f->a, b->data, b->len);
        g_byte_array_free(b, TRUE);
        /* one iteration cannot answer everything: the budget leaves the rest for later */
        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        g_assert_true(peer_recv(&f->a));
        while (peer_take_msg(&f->a, &h, &data)) {
                ++n;
                g_free(data);
        }
        g_assert_cmpuint(n, <=, SERVER_CLIENT_BUDGET);
        for (i = 0; i < 200 && n < n_calls; ++i) {
                pump(f);
                g_assert_true(peer_recv(&f->a));
                while (peer_take_msg(&f->a, &h, &data)) {
                        ++n;
                        g_assert_cmpuint(h.reply_serial, ==, n + 1);
                        g_free(data);
                }
        }
        g_assert_cmpuint(n, ==, n_calls);
}

static void add_match(Fixture *f, Peer *p, const char *rule) {
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

/* The first string of @data's body (NameOwnerChanged's name). */
static const char *body_string(const WireHeader *h, const uint8_t *data) {
        return (const char *)data + h->body_offset + 4;
}

/*
 * More peers than one epoll_wait() returns (LOOP_EVENTS_MAX) close at once, then a
 * bystander calls: its answer comes after at most one slice of teardowns for each wakeup
 * before the one that reads its call (the teardowns wait on the closing list, a slice per
 * wakeup), not after every teardown of those wakeups (the old loop: 1,024 NameOwnerChanged
 * before the answer). Counted, not timed: the bystander watches NameOwnerChanged and
 * counts those that come before its answer on its own socket. The peers' teardowns then
 * come in the order they closed.
 */
static void test_close_storm(Fixture *f, gconstpointer ctx) {
        unsigned n = LOOP_EVENTS_MAX + 200, i, got = 0, before = UINT_MAX;
        struct rlimit rl;
        Peer *peers;
        WireHeader h;
        uint8_t *data;

        g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * n + 64) {
                g_test_skip("the hard fd limit is too low for 2 fds per peer");
                return;
        }
        rl.rlim_cur = MAX(rl.rlim_cur, (rlim_t)(2 * n + 64));
        g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);

        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',member='NameOwnerChanged'");
        peers = g_new0(Peer, n);
        for (i = 0; i < n; ++i) {
                peer_connect(f, &peers[i]);
                peer_hello(f, &peers[i], false);
                /* the arrival's NameOwnerChanged */
                g_assert_cmpuint(peer_count_replies(&f->b), ==, 1);
        }

        for (i = 0; i < n; ++i)
                peer_close(&peers[i]);
        peer_send_call(&f->b, "GetId");
        for (i = 0; i < 1000 && (before == UINT_MAX || got < n); ++i) {
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_true(peer_recv(&f->b));
                while (peer_take_msg(&f->b, &h, &data)) {
                        if (h.type == WIRE_MSG_METHOD_RETURN) {
                                before = got;
                        } else {
                                g_assert_cmpstr(h.member, ==, "NameOwnerChanged");
                                g_assert_cmpuint(got, <, n);
                                g_assert_cmpstr(body_string(&h, data), ==,
                                                peers[got].unique_name);
                                ++got;
                        }
                        g_free(data);
                }
        }
        g_test_message("before %u", before);
        g_assert_cmpuint(before, <=, SERVER_CLOSE_BUDGET * (n / LOOP_EVENTS_MAX));
        g_assert_cmpuint(got, ==, n);
        g_assert_cmpuint(f->s->n_clients, ==, 2);
        g_free(peers);
}

static void test_large_and_eof(Fixture *f, gconstpointer ctx) {
        static const size_t sizes[] = { 100, 70000, 300000, 3 * 1024 * 1024 };
        WireHeader h;
        uint8_t *data;
        size_t size, i;
        bool open = true;
        unsigned got = 0;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");

        for (i = 0; i < G_N_ELEMENTS(sizes); ++i) {
                WireWriter w;
                uint8_t *blob = g_malloc0(sizes[i]);

                blob[sizes[i] - 1] = (uint8_t)i;
                wire_writer_init(&w);
                g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
                for (size = 0; size < sizes[i]; ++size)
                        (void) wire_writer_append_basic(&w, 'y', &blob[size]);
                g_assert_cmpint(wire_writer_close(&w), ==, 0);
                data = build(&f->a, WIRE_MSG_SIGNAL, NULL, "/t", "org.example.T", "Big", &w, 0,
                             &size);
                wire_writer_deinit(&w);
                peer_send(&f->a, data, size);
                free(data);
                g_free(blob);
        }
        /* the sender hangs up at once: what it sent is still delivered */
        close(f->a.fd);
        f->a.fd = -1;
        for (i = 0; i < 500 && got < G_N_ELEMENTS(sizes); ++i) {
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                open = peer_recv(&f->b);
                g_assert_true(open);
                while (got < G_N_ELEMENTS(sizes) && peer_take_msg(&f->b, &h, &data)) {
                        if (h.type == WIRE_MSG_SIGNAL && h.interface &&
                            strcmp(h.interface, "org.example.T") == 0) {
                                g_assert_cmpuint(h.body_size, ==, 4 + sizes[got]);
                                g_assert_cmpuint(data[h.body_offset + 4 + sizes[got] - 1], ==, got);
                                g_assert_cmpstr(h.sender, ==, f->a.unique_name);
                                ++got;
                        }
                        g_free(data);
                }
        }
        g_assert_cmpuint(got, ==, G_N_ELEMENTS(sizes));
}

/* The first client: peer a's (connected first). */
static ProxyClient *client_a(Fixture *f) {
        return container_of(list_first(&f->s->clients), ProxyClient, link);
}

/* A signal with an `ay` body of @n bytes, its last byte @tag; spoofs SENDER with @sender. */
static uint8_t *build_big_signal(Peer *p, size_t n, uint8_t tag, const char *sender,
                                 uint32_t n_fds, size_t *ret_size) {
        WireMsgSpec spec = {
                .type = WIRE_MSG_SIGNAL, .serial = ++p->serial, .path = "/t",
                .interface = "org.example.T", .member = "Big", .sender = sender, .n_fds = n_fds,
        };
        uint8_t one = 0, *small = NULL, *data;
        uint32_t body_size = (uint32_t)(4 + n), len = (uint32_t)n;
        WireWriter w;
        WireHeader h;
        size_t size;

        /* built with a 1-byte array, then the array made @n bytes long (host byte order) */
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
        g_assert_cmpint(wire_writer_append_basic(&w, 'y', &one), ==, 0);
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &small, &size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(small, size, n_fds, 0, &h), ==, 0);
        data = calloc(1, h.body_offset + 4 + n);
        g_assert_nonnull(data);
        memcpy(data, small, h.body_offset);
        memcpy(data + 4, &body_size, 4);
        memcpy(data + h.body_offset, &len, 4);
        data[h.body_offset + 4 + n - 1] = tag;
        free(small);
        *ret_size = h.body_offset + 4 + n;
        return data;
}

/* Wait for b's next signal from org.example.T; its bytes in *ret_data (g_free). */
static void peer_b_signal(Fixture *f, WireHeader *ret_hdr, uint8_t **ret_data) {
        unsigned i;

        for (i = 0; i < 1000; ++i) {
                while (peer_take_msg(&f->b, ret_hdr, ret_data)) {
                        if (ret_hdr->type == WIRE_MSG_SIGNAL && ret_hdr->interface &&
                            !strcmp(ret_hdr->interface, "org.example.T"))
                                return;
                        g_free(*ret_data);
                }
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_true(peer_recv(&f->b));
        }
        g_assert_not_reached();
}

/*
 * A large message that arrives in pieces goes straight into its own buffer: the input
 * buffer stays at its default size (it grew to the message's size before), the header is
 * stamped (a spoofed SENDER replaced), the body arrives whole; a header that trickles in
 * byte by byte takes the same path once it is complete; small messages behind it in the
 * same write are read with its tail and delivered in order.
 */
static void test_large_in_place(Fixture *f, gconstpointer ctx) {
        static const size_t sizes[] = { CLIENT_IN_DIRECT, 300000, 3 * 1024 * 1024 + 3 };
        ProxyClient *ca;
        WireHeader h;
        uint8_t *data, *m;
        size_t size, i, off;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");
        ca = client_a(f);
        for (i = 0; i < G_N_ELEMENTS(sizes); ++i) {
                GByteArray *b = g_byte_array_new();
                size_t small;

                m = build_big_signal(&f->a, sizes[i], (uint8_t)(i + 1), ":1.999", 0, &size);
                g_byte_array_append(b, m, (guint)size);
                free(m);
                m = build_big_signal(&f->a, 8, 0x77, NULL, 0, &small);
                g_byte_array_append(b, m, (guint)small);
                free(m);
                /* the fixed header and the first field byte by byte, then chunks */
                for (off = 0; off < 24; ++off) {
                        peer_send(&f->a, b->data + off, 1);
                        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                }
                while (off < b->len) {
                        size_t n = MIN((size_t)b->len - off, (size_t)50000 + 777 * i);

                        peer_send(&f->a, b->data + off, n);
                        off += n;
                        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                        (void) peer_recv(&f->b);
                        g_assert_cmpuint(ca->in_cap, ==, CLIENT_IN_DEFAULT);
                }
                g_byte_array_free(b, TRUE);
                peer_b_signal(f, &h, &data);
                g_assert_cmpuint(h.body_size, ==, 4 + sizes[i]);
                g_assert_cmpuint(data[h.body_offset + 4 + sizes[i] - 1], ==, i + 1);
                g_assert_cmpuint(data[h.body_offset + 4], ==, 0);
                g_assert_cmpstr(h.sender, ==, f->a.unique_name);
                g_free(data);
                peer_b_signal(f, &h, &data);
                g_assert_cmpuint(h.body_size, ==, 4 + 8);
                g_assert_cmpuint(data[h.body_offset + 4 + 7], ==, 0x77);
                g_free(data);
                g_assert_cmpuint(ca->in_cap, ==, CLIENT_IN_DEFAULT);
                g_assert_null(ca->in_msg);
        }
}

/*
 * After a large message read in place, the next read into the empty input buffer takes
 * CLIENT_IN_HEAD bytes: of a second large message that is all in the socket only its head
 * goes through the buffer (and is copied into the message), the rest is read in place. The
 * first large message after small ones still comes with a full read; a small message after
 * a large one is delivered as before and makes the reads full-size again.
 */
static void test_large_head(Fixture *f, gconstpointer ctx) {
        static const size_t n = 100000, first = 60000;  /* first: fits the socket buffer */
        static const bool head_only[] = { false, true, true, false };
        ProxyClient *ca;
        WireHeader h;
        uint8_t *data, *m;
        size_t size, i;

        peer_hello(f, &f->a, false);
        peer_hello(f, &f->b, false);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");
        ca = client_a(f);
        for (i = 0; i < G_N_ELEMENTS(head_only); ++i) {
                if (i == 3) {
                        /* a small one in between */
                        m = build_big_signal(&f->a, 8, 0x55, NULL, 0, &size);
                        peer_send(&f->a, m, size);
                        free(m);
                        peer_b_signal(f, &h, &data);
                        g_assert_cmpuint(data[h.body_offset + 4 + 7], ==, 0x55);
                        g_free(data);
                        g_assert_false(ca->in_large);
                }
                m = build_big_signal(&f->a, n, (uint8_t)(i + 1), NULL, 0, &size);
                peer_send(&f->a, m, first);
                g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
                g_assert_nonnull(ca->in_msg);
                /* the stamped SENDER adds a few dozen bytes */
                if (head_only[i])
                        g_assert_cmpuint(ca->in_msg_filled, <=, CLIENT_IN_HEAD + 64);
                else
                        g_assert_cmpuint(ca->in_msg_filled, >=, first);
                peer_send(&f->a, m + first, size - first);
                free(m);
                peer_b_signal(f, &h, &data);
                g_assert_cmpuint(h.body_size, ==, 4 + n);
                g_assert_cmpuint(data[h.body_offset + 4 + n - 1], ==, i + 1);
                g_assert_cmpstr(h.sender, ==, f->a.unique_name);
                g_free(data);
                g_assert_null(ca->in_msg);
                g_assert_true(ca->in_large);
        }
}

/* fds that came with the first bytes of a large message travel with it. */
static void test_large_fds(Fixture *f, gconstpointer ctx) {
        static const char text[] = "beside a large body";
        WireHeader h;
        uint8_t *data, *m;
        size_t size;
        char buf[64] = "";
        int memfd;

        peer_hello(f, &f->a, true);
        peer_hello(f, &f->b, true);
        add_match(f, &f->b, "type='signal',interface='org.example.T'");
        memfd = memfd_create("test", MFD_CLOEXEC);
        g_assert_cmpint(write(memfd, text, sizeof(text)), ==, (ssize_t)sizeof(text));
        m = build_big_signal(&f->a, 500000, 9, NULL, 1, &size);
        peer_send_fds(&f->a, m, 4096, &memfd, 1);
        close(memfd);
        g_assert_cmpint(loop_run_once(f->s->loop, 0), >=, 0);
        g_assert_nonnull(client_a(f)->in_msg);
        peer_send(&f->a, m + 4096, size - 4096);
        free(m);
        peer_b_signal(f, &h, &data);
        g_assert_cmpuint(h.n_fds, ==, 1);
        g_assert_cmpuint(data[h.body_offset + 4 + 500000 - 1], ==, 9);
        g_free(data);
        g_assert_cmpuint(f->b.n_fds, ==, 1);
        g_assert_cmpint(pread(f->b.fds[0], buf, sizeof(buf), 0), ==, (ssize_t)sizeof(text));
        g_assert_cmpstr(buf, ==, text);
}

/* Run until @p's connection is closed by the bus; false if it stayed open. */
static bool peer_dropped(Fixture *f, Peer *p) {
        unsigned i;

        for (i = 0; i < 100; ++i) {
                pump(f);
                if (!peer_recv(p))
                        return true;
        }
        return false;
}

/*
 * A large message read in place is checked as a small one: an invalid body (a string
 * without its NUL) or a UNIX_FDS field without the fds is found when it is complete and
 * the sender is dropped, nothing is delivered; an invalid header is found as soon as it is
 * in, the body never waited for.
 */
static void test_large_invalid(Fixture *f, gconstpointer ctx) {
        static const size_t n = 200000;
        unsigned variant;

        for (variant = 0; variant < 3; ++variant) {
                Fixture g = { 0 };
                uint8_t *m;
                size_t size;
                WireHeader h;

                setup(&g, NULL);
                peer_hello(&g, &g.a, true);
                peer_hello(&g, &g.b, true);
                add_match(&g, &g.b, "type='signal',interface='org.example.T'");
                m = build_big_signal(&g.a, n, 1, NULL, variant == 1 ? 1 : 0, &size);
                g_assert_cmpint(wire_message_parse(m, size, 1, 0, &h), ==, 0);
                if (variant == 0) {
                        /* signature "ay" -> "s": the 200000-byte string has no NUL at its end */
                        uint8_t *sig = (uint8_t *)h.signature;

                        sig[-1] = 1;
                        sig[0] = 's';
                        sig[1] = 0;
                        m[h.body_offset + 4 + n - 1] = 'x';
                } else if (variant == 2) {
                        /* the member is not a valid name */
                        ((char *)h.member)[0] = '9';
                }
                if (variant == 2) {
                        /* only the header and a little of the body: the verdict needs no more */
                        peer_send(&g.a, m, h.body_offset + 100);
                } else {
                        peer_send(&g.a, m, size);
                }
                free(m);
                g_assert_true(peer_dropped(&g, &g.a));
                pump(&g);
                g_assert_true(peer_recv(&g.b));
                while (peer_take_msg(&g.b, &h, &m)) {
                        g_assert_cmpstr(h.interface, !=, "org.example.T");
                        g_free(m);
                }
                teardown(&g, NULL);
                current = f;
        }
}

static void test_fd_passing(Fixture *f, gconstpointer ctx) {
        static const char text[] = "through the bus";
        WireWriter w;
        WireHeader h;
        uint8_t *data;
        size_t size;
        uint32_t idx = 0;
        char buf[64] = "";
        int memfd, i;

        peer_hello(f, &f->a, true);
        peer_hello(f, &f->b, true);
        memfd = memfd_create("test", MFD_CLOEXEC);
        g_assert_cmpint(memfd, >=, 0);
        g_assert_cmpint(write(memfd, text, sizeof(text)), ==, (ssize_t)sizeof(text));

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &idx), ==, 0);
        data = build(&f->a, WIRE_MSG_METHOD_CALL, f->b.unique_name, "/t", "org.example.T",
                     "TakeFd", &w, 1, &size);
        wire_writer_deinit(&w);
        peer_send_fds(&f->a, data, size, &memfd, 1);
        free(data);
        close(memfd);

        for (i = 0; i < 10 && f->b.n_fds == 0; ++i) {
                pump(f);
                g_assert_true(peer_recv(&f->b));
        }
        g_assert_cmpuint(f->b.n_fds, ==, 1);
        g_assert_true(peer_take_msg(&f->b, &h, &data));
        g_assert_cmpstr(h.member, ==, "TakeFd");
        g_assert_cmpuint(h.n_fds, ==, 1);
        g_free(data);
        g_assert_cmpint(pread(f->b.fds[0], buf, sizeof(buf), 0), ==, (ssize_t)sizeof(text));
        g_assert_cmpstr(buf, ==, text);
}

static void test_fds_not_negotiated(Fixture *f, gconstpointer ctx) {
        WireWriter w;
        uint8_t *data;
        size_t size;
        uint32_t idx = 0;
        int memfd, i;
        bool open = true;

        peer_hello(f, &f->a, false);
        memfd = memfd_create("test", MFD_CLOEXEC);
        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 'h', &idx), ==, 0);
        data = build(&f->a, WIRE_MSG_METHOD_CALL, "org.freedesktop.DBus", "/", "org.example.T",
                     "TakeFd", &w, 1, &size);
        wire_writer_deinit(&w);
        peer_send_fds(&f->a, data, size, &memfd, 1);
        free(data);
        close(memfd);
        for (i = 0; i < 10 && open; ++i) {
                pump(f);
                open = peer_recv(&f->a);
        }
        g_assert_false(open);
        g_assert_cmpuint(f->s->n_clients, ==, 1);
}

static void test_malformed(Fixture *f, gconstpointer ctx) {
        static const uint8_t junk[16] = "l\1\0\2\0\0\0\0\0\0\0\0\0\0\0\0";  /* version 2 */
        bool open = true;
        int i;

        peer_hello(f, &f->a, false);
        peer_send(&f->a, junk, sizeof(junk));
        for (i = 0; i < 10 && open; ++i) {
                pump(f);
                open = peer_recv(&f->a);
        }
        g_assert_false(open);
        /* the other client is unaffected */
        peer_hello(f, &f->b, false);
        g_assert_cmpuint(f->s->n_clients, ==, 1);
}

static void test_rejected(Fixture *f, gconstpointer ctx) {
        static const char in[] = "\0AUTH EXTERNAL 3939393939\r\nBEGIN\r\n";   /* uid 99999 */
        bool open = true;
        int i;

        if (getuid() == 99999)
                return;
        peer_send(&f->a, in, sizeof(in) - 1);
        for (i = 0; i < 10 && open; ++i) {
                pump(f);
                open = peer_recv(&f->a);
        }
        g_assert_false(open);
        g_assert_cmpuint(f->a.in->len, ==, strlen("REJECTED EXTERNAL\r\n"));
        peer_expect_line(&f->a, "REJECTED EXTERNAL\r\n");
}

/* The auth timer is armed until Hello has succeeded, then freed: an authenticated peer
 * that has not said Hello keeps it (dbus-daemon drops it when it runs out), a registered
 * one does not (it used to keep one armed timer per peer for its whole life). */
static void test_auth_timer(Fixture *f, gconstpointer ctx) {
        GByteArray *b = auth_bytes(false);
        unsigned armed = 0, n = 0;
        List *i;

        list_for_each(i, &f->s->clients)
                g_assert_nonnull(list_entry(i, ProxyClient, link)->auth_timer);
        peer_send(&f->a, b->data, b->len);
        g_byte_array_free(b, TRUE);
        peer_hello(f, &f->b, false);
        list_for_each(i, &f->s->clients) {
                ProxyClient *c = list_entry(i, ProxyClient, link);

                ++n;
                if (c->auth_timer) {
                        ++armed;
                        g_assert_cmpint(c->state, ==, CLIENT_STATE_RUNNING);
                        g_assert_false(c->conn->active);
                } else {
                        g_assert_true(c->conn->active);
                        g_assert_cmpstr(c->conn->unique_name, ==, f->b.unique_name);
                }
        }
        g_assert_cmpuint(n, ==, 2);
        g_assert_cmpuint(armed, ==, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define T(name, fn) g_test_add("/proxy/client/" name, Fixture, NULL, setup, fn, teardown)
        T("pipelined", test_pipelined);
        T("trickle", test_trickle);
        T("budget", test_budget);
        T("fair", test_fair);
        T("close-storm", test_close_storm);
        T("large-and-eof", test_large_and_eof);
        T("large-in-place", test_large_in_place);
        T("large-head", test_large_head);
        T("large-fds", test_large_fds);
        T("large-invalid", test_large_invalid);
        T("fd-passing", test_fd_passing);
        T("fds-not-negotiated", test_fds_not_negotiated);
        T("malformed", test_malformed);
        T("rejected", test_rejected);
        T("auth-timer", test_auth_timer);
#undef T
        return g_test_run();
}
