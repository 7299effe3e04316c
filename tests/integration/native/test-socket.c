/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native front end end to end: a real kdbusd (KDBUSD from meson) with a legacy socket
 * and a native socket, driven through libkdbus like kdbus's selftests (hello, message
 * basic, sync reply, fd passing, memfd sealing, malformed datagrams), plus the interop
 * case: a native service answers `dbus-send --print-reply` made on the legacy socket.
 */
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "libkdbus/libkdbus.h"
#include "wire/message.h"
#include "wire/protocol.h"
#include "wire/writer.h"
#include <glib.h>

#define POOL (256u * 1024u)

typedef struct Bus {
        char *dir;
        char *native;
        char *legacy;
        GPid pid;
} Bus;

/* kdbusd goes when the test process dies, even on a failed assertion */
static void child_setup(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static void bus_start(Bus *b, gconstpointer ctx) {
        const char *exe = g_getenv("KDBUSD");
        g_autofree char *native_arg = NULL, *legacy_arg = NULL;
        unsigned i;

        g_assert_nonnull(exe);
        b->dir = g_dir_make_tmp("kdbus-native-XXXXXX", NULL);
        g_assert_nonnull(b->dir);
        b->native = g_build_filename(b->dir, "native", NULL);
        b->legacy = g_build_filename(b->dir, "legacy", NULL);
        native_arg = g_strdup_printf("--native=unix:path=%s", b->native);
        legacy_arg = g_strdup_printf("--address=unix:path=%s", b->legacy);
        {
                const char *argv[] = { exe, "--session", "--nofork", legacy_arg, native_arg, NULL };

                g_assert_true(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                            child_setup, NULL, &b->pid, NULL));
        }
        /* the socket file exists from bind() on, but connecting works only after listen():
         * wait until a connection is accepted, so no test meets ECONNREFUSED */
        for (i = 0; i < 500; ++i) {
                KdbusConn *probe = NULL;

                if (kdbus_conn_open(b->native, &probe) == 0) {
                        kdbus_conn_close(probe);
                        break;
                }
                g_usleep(10000);
        }
        g_assert_cmpuint(i, <, 500);
}

static void bus_stop(Bus *b, gconstpointer ctx) {
        int status;

        (void) kill(b->pid, SIGTERM);
        g_assert_cmpint(waitpid(b->pid, &status, 0), ==, b->pid);
        g_spawn_close_pid(b->pid);
        (void) rmdir(b->dir);
        g_free(b->dir);
        g_free(b->native);
        g_free(b->legacy);
}

static KdbusConn *peer(Bus *b, uint64_t flags) {
        KdbusConn *c = NULL;
        unsigned i;
        int r;

        /* the socket file exists from bind() on, but connecting works only after listen():
         * under load the first peer may come in between */
        for (i = 0; (r = kdbus_conn_open(b->native, &c)) == -ECONNREFUSED && i < 500; ++i)
                g_usleep(10000);
        g_assert_cmpint(r, ==, 0);
        g_assert_cmpint(kdbus_conn_hello(c, flags, POOL), ==, 0);
        return c;
}

/* A dbus1 message without SENDER; @arg: one string argument or NULL. */
static uint8_t *build(uint8_t type, uint32_t serial, uint32_t reply_serial, const char *dest,
                      const char *member, const char *arg, size_t *ret_size) {
        WireMsgSpec spec = { .type = type, .serial = serial, .reply_serial = reply_serial,
                             .destination = dest };
        WireWriter w;
        uint8_t *data = NULL;

        if (type == WIRE_MSG_METHOD_CALL) {
                spec.path = "/org/example";
                spec.interface = "org.example.Echo";
                spec.member = member;
        }
        wire_writer_init(&w);
        if (arg)
                g_assert_cmpint(wire_writer_append_basic(&w, 's', arg), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, ret_size), ==, 0);
        wire_writer_deinit(&w);
        return data;
}

static int send_dbus1(KdbusConn *c, uint64_t dst_id, const char *dst_name, uint64_t send_flags,
                      const uint8_t *data, size_t size, struct kdbus_msg_info *ret_reply) {
        KdbusSend s = { .dst_id = dst_id, .dst_name = dst_name, .send_flags = send_flags,
                        .memfd = -1 };

        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
        return kdbus_conn_send(c, &s, data, size, ret_reply);
}

/* Receive one message (waiting up to 5 s) and parse its payload. */
static const struct kdbus_msg *recv_one(KdbusConn *c, WireHeader *hdr, WireArgs *args) {
        const struct kdbus_msg *m = NULL;
        const uint8_t *data;
        size_t size;
        int r;

        for (;;) {
                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
                if (r != -EAGAIN)
                        break;
                g_assert_cmpint(kdbus_conn_wait(c, 5000), ==, 0);
        }
        g_assert_cmpint(r, ==, 0);
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, c->n_recv_fds, 0, hdr), ==, 0);
        if (args)
                g_assert_cmpint(wire_message_get_args(data, hdr, args), ==, 0);
        return m;
}

static void test_hello(Bus *b, gconstpointer ctx) {
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = POOL };
        KdbusConn *c = NULL, *d;
        void *map;

        g_assert_cmpint(kdbus_conn_open(b->native, &c), ==, 0);
        /* kdbus's handle before HELLO: a connection's commands EBADFD, unknown ones ENOTTY */
        {
                struct kdbus_cmd_free f = { .size = sizeof(f) };
                struct kdbus_cmd_list l = { .size = sizeof(l), .flags = KDBUS_LIST_UNIQUE };
                struct kdbus_cmd bare = { .size = sizeof(bare) };

                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_FREE, &f, sizeof(f), NULL, 0),
                                ==, -EBADFD);
                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_LIST, &l, sizeof(l), NULL, 0),
                                ==, -EBADFD);
                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BYEBYE, &bare, sizeof(bare),
                                                   NULL, 0), ==, -EBADFD);
                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_UPDATE, &bare,
                                                   sizeof(bare), NULL, 0), ==, -EBADFD);
                g_assert_cmpint(kdbus_conn_command(c, 0x4242, &bare, sizeof(bare), NULL, 0),
                                ==, -ENOTTY);
        }
        hello.pool_size = 12345;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_HELLO, &hello, sizeof(hello), NULL, 0),
                        ==, -EINVAL);
        hello.pool_size = POOL;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_HELLO, &hello, sizeof(hello), NULL, 0),
                        ==, 0);
        g_assert_cmpuint(hello.id, >, 0);
        g_assert_cmpuint(c->n_recv_fds, ==, 2);
        /* the pool fd as the peer got it: no writable mapping, no write(2), no resize */
        map = mmap(NULL, POOL, PROT_READ | PROT_WRITE, MAP_SHARED, c->recv_fds[0], 0);
        g_assert_true(map == MAP_FAILED);
        g_assert_cmpint(errno, ==, EPERM);
        g_assert_cmpint(write(c->recv_fds[0], "x", 1), ==, -1);
        g_assert_cmpint(errno, ==, EPERM);
        g_assert_cmpint(ftruncate(c->recv_fds[0], 0), ==, -1);
        map = mmap(NULL, POOL, PROT_READ, MAP_SHARED, c->recv_fds[0], 0);
        g_assert_true(map != MAP_FAILED);
        g_assert_cmpuint(((const struct kdbus_item *)((uint8_t *)map + hello.offset))->type, ==,
                         KDBUS_ITEM_BLOOM_PARAMETER);
        g_assert_cmpint(munmap(map, POOL), ==, 0);
        /* HELLO twice, and the other setup commands on a connected handle: EBADFD */
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_HELLO, &hello, sizeof(hello), NULL, 0),
                        ==, -EBADFD);
        {
                struct kdbus_cmd bare = { .size = sizeof(bare) };

                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BUS_MAKE, &bare, sizeof(bare),
                                                   NULL, 0), ==, -EBADFD);
                g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_ENDPOINT_MAKE, &bare,
                                                   sizeof(bare), NULL, 0), ==, -EBADFD);
        }
        c = kdbus_conn_close(c);

        d = peer(b, 0);
        g_assert_cmpuint(d->bloom_size, ==, 64);
        g_assert_cmpuint(d->bloom_n_hash, ==, 8);
        g_assert_cmpint(kdbus_conn_byebye(d), ==, 0);
        /* after BYEBYE: the connection's commands ECONNRESET, HELLO still EBADFD (kdbus
         * checks the handle's type first), unknown ones ENOTTY */
        g_assert_cmpint(kdbus_conn_byebye(d), ==, -ECONNRESET);
        {
                struct kdbus_cmd_list l = { .size = sizeof(l), .flags = KDBUS_LIST_UNIQUE };
                struct kdbus_cmd bare = { .size = sizeof(bare) };

                g_assert_cmpint(kdbus_conn_command(d, KDBUS_CMD_LIST, &l, sizeof(l), NULL, 0),
                                ==, -ECONNRESET);
                g_assert_cmpint(kdbus_conn_command(d, KDBUS_CMD_HELLO, &hello, sizeof(hello),
                                                   NULL, 0), ==, -EBADFD);
                g_assert_cmpint(kdbus_conn_command(d, 0x4242, &bare, sizeof(bare), NULL, 0),
                                ==, -ENOTTY);
        }
        kdbus_conn_close(d);
}

static void test_bad_datagrams(Bus *b, gconstpointer ctx) {
        KdbusConn *c = peer(b, 0);
        struct kdbus_wire_reply rep;
        struct kdbus_cmd cmd = { .size = sizeof(cmd) };

        g_assert_cmpint(send(c->fd, "abc", 3, 0), ==, 3);
        g_assert_cmpint(recv(c->fd, &rep, sizeof(rep), 0), ==, sizeof(rep));
        g_assert_cmpint(rep.error, ==, -EINVAL);
        g_assert_cmpint(kdbus_conn_command(c, 0x4242, &cmd, sizeof(cmd), NULL, 0), ==, -ENOTTY);
        cmd.size = 8;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_BYEBYE, &cmd, sizeof(cmd), NULL, 0),
                        ==, -EINVAL);
        /* random datagrams, with and without a known command in front: each gets one
         * reply, with an errno or success, and the bus keeps serving */
        for (unsigned i = 0; i < 500; ++i) {
                uint64_t buf[64];
                size_t len = (size_t)g_test_rand_int_range(0, sizeof(buf) + 1);
                uint8_t rbuf[256];
                ssize_t n;
                unsigned j;

                for (j = 0; j < G_N_ELEMENTS(buf); ++j)
                        buf[j] = (uint64_t)g_test_rand_int() << (g_test_rand_bit() ? 32 : 0);
                if (g_test_rand_bit() && len >= 16) {
                        buf[0] = g_test_rand_bit() ? KDBUS_CMD_RECV : KDBUS_CMD_MATCH_ADD;
                        buf[1] = len - 16;
                        if (len >= 24)
                                buf[2] = len - 16;
                }
                if (len == 0)
                        continue;       /* an empty datagram reads as the end of the stream */
                g_assert_cmpint(send(c->fd, buf, len, 0), ==, (ssize_t)len);
                n = recv(c->fd, rbuf, sizeof(rbuf), 0);
                g_assert_cmpint(n, >=, (ssize_t)sizeof(rep));
                memcpy(&rep, rbuf, sizeof(rep));
                g_assert_cmpint(rep.error, <=, 0);
        }
        /* still connected and working */
        g_assert_cmpint(kdbus_conn_recv(c, 0, 0, NULL, NULL), ==, -EAGAIN);
        kdbus_conn_close(c);
}

static void test_message(Bus *b, gconstpointer ctx) {
        KdbusConn *a = peer(b, 0), *c = peer(b, 0);
        g_autofree char *dest = g_strdup_printf(":1.%llu", (unsigned long long)c->id);
        g_autofree char *src = g_strdup_printf(":1.%llu", (unsigned long long)a->id);
        const struct kdbus_msg *m;
        WireHeader h;
        WireArgs args;
        uint8_t *data;
        size_t size;

        data = build(WIRE_MSG_METHOD_CALL, 7, 0, dest, "Echo", "over the socket", &size);
        {
                /* kdbus refuses a call without a deadline (EINVAL); libkdbus's helper gives
                 * one 25 s from now unless the caller chose one */
                struct timespec ts;
                uint64_t now;
                KdbusSend s = { .dst_id = c->id, .memfd = -1 };

                g_assert_cmpint(clock_gettime(CLOCK_MONOTONIC, &ts), ==, 0);
                now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
                g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
                g_assert_cmpuint(s.timeout_ns, >=, now + LIBKDBUS_CALL_TIMEOUT_NS);
                g_assert_cmpuint(s.timeout_ns, <, now + LIBKDBUS_CALL_TIMEOUT_NS + 5000000000ull);
                s.timeout_ns = 0;
                g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -EINVAL);
                s.timeout_ns = 42;
                g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
                g_assert_cmpuint(s.timeout_ns, ==, 42);
        }
        g_assert_cmpint(send_dbus1(a, c->id, NULL, 0, data, size, NULL), ==, 0);
        free(data);
        m = recv_one(c, &h, &args);
        g_assert_cmpuint(m->src_id, ==, a->id);
        g_assert_cmpuint(m->cookie, ==, 7);
        g_assert_cmpuint(m->flags, ==, KDBUS_MSG_EXPECT_REPLY);
        g_assert_cmpstr(h.sender, ==, src);
        g_assert_cmpstr(args.str[0], ==, "over the socket");
        g_assert_cmpint(kdbus_conn_free(c, kdbus_conn_offset(c, m)), ==, 0);

        data = build(WIRE_MSG_METHOD_RETURN, 1, 7, src, NULL, "back", &size);
        g_assert_cmpint(send_dbus1(c, a->id, NULL, 0, data, size, NULL), ==, 0);
        g_assert_cmpint(send_dbus1(c, a->id, NULL, 0, data, size, NULL), ==, -EBADSLT);
        free(data);
        m = recv_one(a, &h, &args);
        g_assert_cmpuint(m->cookie_reply, ==, 7);
        g_assert_cmpstr(args.str[0], ==, "back");
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* A child process: a native service owning @name that answers @n calls of Echo with their
 * argument, then exits. Writes one byte to @ready once it owns the name. */
static void echo_service(const char *path, const char *name, int ready, unsigned n) {
        KdbusConn *c = NULL;
        unsigned i;

        if (kdbus_conn_open(path, &c) || kdbus_conn_hello(c, KDBUS_HELLO_ACCEPT_FD, POOL) ||
            kdbus_conn_name_acquire(c, name, 0, NULL))
                _exit(2);
        if (write(ready, "r", 1) != 1)
                _exit(3);
        for (i = 0; i < n;) {
                const struct kdbus_msg *m;
                const uint8_t *data;
                uint8_t *reply;
                WireHeader h;
                WireArgs args;
                size_t size;
                int r;

                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
                if (r == -EAGAIN) {
                        if (kdbus_conn_wait(c, 10000))
                                _exit(4);
                        continue;
                }
                if (r || kdbus_msg_payload(m, &data, &size) ||
                    wire_message_parse(data, size, c->n_recv_fds, 0, &h) ||
                    wire_message_get_args(data, &h, &args))
                        _exit(5);
                if (h.type != WIRE_MSG_METHOD_CALL) {
                        (void) kdbus_conn_free(c, kdbus_conn_offset(c, m));
                        continue;
                }
                reply = build(WIRE_MSG_METHOD_RETURN, 100 + i, h.serial, h.sender, NULL,
                              args.n_args ? args.str[0] : "", &size);
                if (send_dbus1(c, m->src_id, NULL, 0, reply, size, NULL))
                        _exit(6);
                free(reply);
                (void) kdbus_conn_free(c, kdbus_conn_offset(c, m));
                ++i;
        }
        kdbus_conn_close(c);
        _exit(0);
}

static pid_t echo_start(Bus *b, const char *name, unsigned n) {
        int p[2];
        char x;
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) close(p[0]);
                echo_service(b->native, name, p[1], n);
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], &x, 1), ==, 1);
        (void) close(p[0]);
        return pid;
}

static void echo_wait(pid_t pid) {
        int status;

        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

static void test_sync_reply(Bus *b, gconstpointer ctx) {
        pid_t pid = echo_start(b, "org.example.SyncEcho", 1);
        KdbusConn *a = peer(b, 0);
        struct kdbus_msg_info info = { 0 };
        const struct kdbus_msg *m;
        const uint8_t *data;
        WireHeader h;
        WireArgs args;
        uint8_t *call;
        size_t size;

        call = build(WIRE_MSG_METHOD_CALL, 42, 0, "org.example.SyncEcho", "Echo", "sync", &size);
        g_assert_cmpint(send_dbus1(a, KDBUS_DST_ID_NAME, "org.example.SyncEcho",
                                   KDBUS_SEND_SYNC_REPLY, call, size, &info), ==, 0);
        free(call);
        m = (const void *)(a->pool + info.offset);
        g_assert_cmpuint(m->cookie_reply, ==, 42);
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &h), ==, 0);
        g_assert_cmpint(wire_message_get_args(data, &h, &args), ==, 0);
        g_assert_cmpstr(args.str[0], ==, "sync");
        g_assert_cmpint(kdbus_conn_free(a, info.offset), ==, 0);
        /* the reply was not queued a second time */
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        echo_wait(pid);
        kdbus_conn_close(a);
}

/* A callee that leaves without answering: the waiting SYNC_REPLY fails EPIPE (kdbus's
 * kdbus_conn_disconnect(); ECONNRESET would say the caller's own connection went). */
static void test_sync_reply_callee_gone(Bus *b, gconstpointer ctx) {
        struct kdbus_msg_info info = { 0 };
        KdbusConn *a;
        uint8_t *call;
        size_t size;
        int p[2], status;
        char x;
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusConn *c = NULL;
                const struct kdbus_msg *got;

                (void) close(p[0]);
                if (kdbus_conn_open(b->native, &c) || kdbus_conn_hello(c, 0, POOL) ||
                    kdbus_conn_name_acquire(c, "org.example.Leaver", 0, NULL) ||
                    write(p[1], "r", 1) != 1)
                        _exit(2);
                /* the driver's NameAcquired comes first: wait for the call itself */
                for (;;) {
                        int r = kdbus_conn_recv(c, 0, 0, &got, NULL);

                        if (r == 0 && (got->flags & KDBUS_MSG_EXPECT_REPLY))
                                _exit(0);       /* the socket closes: the bus drops us */
                        if (r == -EAGAIN && kdbus_conn_wait(c, 10000))
                                _exit(3);
                        if (r && r != -EAGAIN)
                                _exit(4);
                }
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], &x, 1), ==, 1);
        (void) close(p[0]);

        a = peer(b, 0);
        call = build(WIRE_MSG_METHOD_CALL, 8, 0, "org.example.Leaver", "Echo", "hello?", &size);
        g_assert_cmpint(send_dbus1(a, KDBUS_DST_ID_NAME, "org.example.Leaver",
                                   KDBUS_SEND_SYNC_REPLY, call, size, &info), ==, -EPIPE);
        free(call);
        /* and nothing else for the caller: no dbus1 NoReply error, no REPLY_DEAD */
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        kdbus_conn_close(a);
}

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        g_assert_cmpint(clock_gettime(CLOCK_MONOTONIC, &ts), ==, 0);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static gpointer write_later(gpointer data) {
        uint64_t one = 1;

        g_usleep(100000);
        g_assert_cmpint(write(GPOINTER_TO_INT(data), &one, sizeof(one)), ==, sizeof(one));
        return NULL;
}

/* kdbus's timeout_ns and CANCEL_FD through kdbusd's loop: a callee that never answers; a
 * SYNC_REPLY with a deadline 200 ms ahead fails ETIMEDOUT then (not earlier), one with a
 * CANCEL_FD that another thread writes to after 100 ms fails ECANCELED. */
static void test_sync_timeout_cancel(Bus *b, gconstpointer ctx) {
        KdbusConn *a = peer(b, 0), *c = peer(b, 0);
        int efd = eventfd(0, EFD_CLOEXEC);
        KdbusSend s = { .dst_id = c->id, .send_flags = KDBUS_SEND_SYNC_REPLY, .memfd = -1 };
        g_autofree char *dest = g_strdup_printf(":1.%llu", (unsigned long long)c->id);
        struct kdbus_msg_info info = { 0 };
        uint64_t start, elapsed;
        WireHeader h;
        GThread *thread;
        uint8_t *call;
        size_t size;

        g_assert_cmpint(efd, >=, 0);
        call = build(WIRE_MSG_METHOD_CALL, 5, 0, dest, "Echo", "late", &size);
        g_assert_cmpint(kdbus_send_from_dbus1(&s, call, size), ==, 0);
        start = monotonic_ns();
        s.timeout_ns = start + 200000000u;
        g_assert_cmpint(kdbus_conn_send(a, &s, call, size, &info), ==, -ETIMEDOUT);
        elapsed = monotonic_ns() - start;
        g_test_message("ETIMEDOUT after %.1f ms (deadline 200 ms)", elapsed / 1e6);
        g_assert_cmpuint(elapsed, >=, 200000000u);
        g_assert_cmpuint(elapsed, <, 5000000000u);
        free(call);

        call = build(WIRE_MSG_METHOD_CALL, 6, 0, dest, "Echo", "cancelled", &size);
        s.cookie = 0;
        g_assert_cmpint(kdbus_send_from_dbus1(&s, call, size), ==, 0);
        s.timeout_ns = LIBKDBUS_DEADLINE_NEVER; /* the bus's reply timeout (none here) */
        s.cancel_fd = &efd;
        start = monotonic_ns();         /* before the thread starts its 100 ms */
        thread = g_thread_new("cancel", write_later, GINT_TO_POINTER(efd));
        g_assert_cmpint(kdbus_conn_send(a, &s, call, size, &info), ==, -ECANCELED);
        elapsed = monotonic_ns() - start;
        g_thread_join(thread);
        g_test_message("ECANCELED after %.1f ms (written after 100 ms)", elapsed / 1e6);
        g_assert_cmpuint(elapsed, >=, 100000000u);
        g_assert_cmpuint(elapsed, <, 5000000000u);
        free(call);
        /* the callee got both calls; the caller nothing (no REPLY_TIMEOUT after a
         * synchronous call) */
        g_assert_cmpuint(recv_one(c, &h, NULL)->cookie, ==, 5);
        g_assert_cmpuint(recv_one(c, &h, NULL)->cookie, ==, 6);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        (void) close(efd);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* Metadata captured by kdbusd itself: the peer's pidfd (SO_PEERPIDFD) checks /proc/<pid>,
 * so EXE and PID_COMM of a peer (this process) are ours, once it consented (UPDATE). */
static void test_metadata_proc(Bus *b, gconstpointer ctx) {
        KdbusConn *a = peer(b, 0), *c = peer(b, 0);
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *up = (void *)buf;
        struct kdbus_cmd_info info = { .size = sizeof(info), .id = a->id,
                                       .attach_flags = KDBUS_ATTACH_EXE | KDBUS_ATTACH_PID_COMM };
        g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
        const struct kdbus_info *ki;
        const struct kdbus_item *item;
        bool seen_exe = false;

        /* libkdbus consents to neither: declined */
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, &info, sizeof(info), NULL, 0),
                        ==, 0);
        ki = (const void *)(c->pool + info.offset);
        item = (const void *)((const uint8_t *)ki + sizeof(*ki));
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_ATTACH_FLAGS_SEND);
        g_assert_cmpuint(item->data64[0], ==, KDBUS_ATTACH_EXE | KDBUS_ATTACH_PID_COMM);
        up->size = sizeof(*up) + KDBUS_ITEM_SIZE(8);
        {
                struct kdbus_item *ui = (void *)(buf + sizeof(*up));

                ui->size = KDBUS_ITEM_HEADER_SIZE + 8;
                ui->type = KDBUS_ITEM_ATTACH_FLAGS_SEND;
                ui->data64[0] = _KDBUS_ATTACH_ANY;
        }
        g_assert_cmpint(kdbus_conn_command(a, KDBUS_CMD_UPDATE, up, up->size, NULL, 0), ==, 0);
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, &info, sizeof(info), NULL, 0),
                        ==, 0);
        ki = (const void *)(c->pool + info.offset);
        for (item = ki->items; (const uint8_t *)item < (const uint8_t *)ki + ki->size;
             item = KDBUS_ITEM_NEXT(item)) {
                g_assert_cmpuint(item->type, !=, KDBUS_ITEM_ATTACH_FLAGS_SEND);
                if (item->type == KDBUS_ITEM_EXE) {
                        g_assert_cmpstr(item->str, ==, exe);
                        seen_exe = true;
                }
        }
        g_assert_true(seen_exe);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

static void test_fds_memfd(Bus *b, gconstpointer ctx) {
        KdbusConn *a = peer(b, 0), *c = peer(b, KDBUS_HELLO_ACCEPT_FD);
        g_autofree char *dest = g_strdup_printf(":1.%llu", (unsigned long long)c->id);
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 3, .path = "/",
                             .member = "Fd", .destination = dest, .n_fds = 1,
                             .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        KdbusSend s = { .dst_id = c->id, .memfd = -1 };
        uint8_t *data = NULL, *payload;
        WireHeader h;
        size_t size;
        char x = 0;
        int p[2], mfd;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, NULL, &data, &size), ==, 0);
        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
        s.fds = &p[1];
        s.n_fds = 1;
        g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, 0);
        free(data);
        (void) close(p[1]);
        (void) recv_one(c, &h, NULL);
        g_assert_cmpuint(c->n_recv_fds, ==, 1);
        g_assert_cmpint(write(c->recv_fds[0], "!", 1), ==, 1);
        g_assert_cmpint(read(p[0], &x, 1), ==, 1);
        g_assert_cmpint(x, ==, '!');
        (void) close(p[0]);

        /* the body in a memfd (the header inline): refused unsealed, taken sealed (kdbus's
         * four seals); test-socket-memfd.c has the rest */
        payload = build(WIRE_MSG_METHOD_CALL, 4, 0, dest, "Echo", "memfd", &size);
        g_assert_cmpint(wire_message_parse(payload, size, 0, 0, &h), ==, 0);
        mfd = memfd_create("payload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        g_assert_cmpint(write(mfd, payload, size), ==, (ssize_t)size);
        s = (KdbusSend){ .dst_id = c->id, .memfd = mfd, .memfd_start = h.body_offset,
                         .memfd_size = size - h.body_offset };
        g_assert_cmpint(kdbus_send_from_dbus1(&s, payload, size), ==, 0);
        g_assert_cmpint(kdbus_conn_send(a, &s, payload, h.body_offset, NULL), ==, -ETXTBSY);
        g_assert_cmpint(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), ==, 0);
        g_assert_cmpint(kdbus_conn_send(a, &s, payload, h.body_offset, NULL), ==, -ETXTBSY);
        g_assert_cmpint(fcntl(mfd, F_ADD_SEALS, F_SEAL_SEAL), ==, 0);
        g_assert_cmpint(kdbus_conn_send(a, &s, payload, h.body_offset, NULL), ==, 0);
        (void) close(mfd);
        free(payload);
        {
                const struct kdbus_msg *m = NULL;
                WireArgs args;
                uint8_t *whole;

                while (kdbus_conn_recv(c, 0, 0, &m, NULL) == -EAGAIN)
                        g_assert_cmpint(kdbus_conn_wait(c, 5000), ==, 0);
                g_assert_cmpint(kdbus_msg_copy_payload(c, m, &whole, &size), ==, 0);
                g_assert_cmpint(wire_message_parse(whole, size, 0, 0, &h), ==, 0);
                g_assert_cmpint(wire_message_get_args(whole, &h, &args), ==, 0);
                g_assert_cmpstr(args.str[0], ==, "memfd");
                free(whole);
        }
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* The interop case: dbus-send on the legacy socket calls a native service. */
static void test_interop_dbus_send(Bus *b, gconstpointer ctx) {
        pid_t pid = echo_start(b, "org.example.NativeEcho", 1);
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", b->legacy);
        const char *argv[] = { "dbus-send", bus_arg, "--print-reply",
                               "--dest=org.example.NativeEcho", "/org/example",
                               "org.example.Echo.Echo", "string:hello from dbus-send", NULL };
        g_autofree char *out = NULL, *err = NULL;
        int status;

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   &out, &err, &status, NULL));
        g_test_message("dbus-send: %s%s", out, err);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_nonnull(strstr(out, "method return"));
        g_assert_nonnull(strstr(out, "string \"hello from dbus-send\""));
        echo_wait(pid);
}

/* The other way: a legacy dbus-python service answers a native SYNC_REPLY call made by
 * well-known name (one name registry for both kinds of peers). */
static const char legacy_service[] =
        "import sys, dbus, dbus.service, dbus.mainloop.glib\n"
        "from gi.repository import GLib\n"
        "dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)\n"
        "bus = dbus.bus.BusConnection(sys.argv[1])\n"
        "loop = GLib.MainLoop()\n"
        "class S(dbus.service.Object):\n"
        "    @dbus.service.method('org.example.Echo', in_signature='s', out_signature='s')\n"
        "    def Echo(self, s):\n"
        "        GLib.timeout_add(200, loop.quit)\n"
        "        return 'legacy:' + s\n"
        "name = dbus.service.BusName('org.example.LegacyEcho', bus)\n"
        "S(bus, '/org/example')\n"
        "print('ready', flush=True)\n"
        "loop.run()\n";

static void test_interop_legacy_service(Bus *b, gconstpointer ctx) {
        g_autofree char *addr = g_strdup_printf("unix:path=%s", b->legacy);
        const char *argv[] = { "/usr/bin/python3", "-c", legacy_service, addr, NULL };
        struct kdbus_msg_info info = { 0 };
        const struct kdbus_msg *m;
        const uint8_t *data;
        KdbusConn *a;
        WireHeader h;
        WireArgs args;
        uint8_t *call;
        size_t size;
        char line[16] = "";
        GPid pid;
        int out, status;

        if (!g_file_test(argv[0], G_FILE_TEST_IS_EXECUTABLE)) {
                g_test_skip("no /usr/bin/python3 (python3-dbus)");
                return;
        }
        g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                               G_SPAWN_DO_NOT_REAP_CHILD, child_setup, NULL,
                                               &pid, NULL, &out, NULL, NULL));
        /* print() may write the line and its newline separately */
        for (size_t got = 0; got < 6;) {
                ssize_t k = read(out, line + got, 6 - got);

                g_assert_cmpint(k, >, 0);
                got += (size_t)k;
        }
        g_assert_cmpstr(line, ==, "ready\n");
        (void) close(out);

        a = peer(b, 0);
        call = build(WIRE_MSG_METHOD_CALL, 5, 0, "org.example.LegacyEcho", "Echo", "native", &size);
        g_assert_cmpint(send_dbus1(a, KDBUS_DST_ID_NAME, "org.example.LegacyEcho",
                                   KDBUS_SEND_SYNC_REPLY, call, size, &info), ==, 0);
        free(call);
        m = (const void *)(a->pool + info.offset);
        g_assert_cmpuint(m->cookie_reply, ==, 5);
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &h), ==, 0);
        g_assert_cmpint(h.type, ==, WIRE_MSG_METHOD_RETURN);
        g_assert_cmpint(wire_message_get_args(data, &h, &args), ==, 0);
        g_assert_cmpstr(args.str[0], ==, "legacy:native");
        g_assert_cmpint(kdbus_conn_free(a, info.offset), ==, 0);
        kdbus_conn_close(a);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_spawn_close_pid(pid);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
#define ADD(path, fn) g_test_add("/native/socket/" path, Bus, NULL, bus_start, fn, bus_stop)
        ADD("hello", test_hello);
        ADD("bad-datagrams", test_bad_datagrams);
        ADD("message-basic", test_message);
        ADD("sync-reply", test_sync_reply);
        ADD("sync-reply-callee-gone", test_sync_reply_callee_gone);
        ADD("sync-reply-timeout-cancel", test_sync_timeout_cancel);
        ADD("fds-memfd", test_fds_memfd);
        ADD("metadata-proc", test_metadata_proc);
        ADD("interop-dbus-send", test_interop_dbus_send);
        ADD("interop-legacy-service", test_interop_legacy_service);
        return g_test_run();
}
