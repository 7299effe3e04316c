/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Native peers for the unit tests of native/, on the bridge test fixture (a bus,
 * legacy connections on a counting transport). A TestPeer does what libkdbus does over
 * the socket, but calls the core directly: it builds command structs and SEND datagrams
 * (cmd, kdbus_msg, payload behind, offsets instead of pointers), maps its pool read-only
 * through the fd HELLO hands out, and reads messages in place.
 */
#include <sys/mman.h>
/* the bus names connections as kdbusd's does with a native front end (bridge/bus.h) */
#define TEST_BUS_NAMING BUS_NAMING_KDBUS
#include "../bridge/fixture.h"
#include "bridge/bus.h"
#include "bridge/pool.h"
#include "kdbus/kdbus.h"
#include "native/command.h"
#include "native/conn.h"
#include "proxy/proc-reader.h"

#define TEST_POOL_SIZE (64u * 1024u)

typedef struct TestPeer {
        NativeConn *nc;
        const uint8_t *pool;            /* the peer's read-only mapping */
        uint64_t id;
        unsigned n_readable;
        unsigned n_disconnected;        /* NativeConnOps.disconnected calls */
        int sync_error;                 /* sync_done: 1 until called */
        uint64_t sync_offset;
        int sync_fds[KDBUS_MSG_MAX_FDS];
        unsigned n_sync_fds;
        int *fds;                       /* from the last RECV */
        unsigned n_fds;
} TestPeer;

static _unused_ void peer_readable(NativeConn *nc, void *userdata) {
        TestPeer *p = userdata;

        ++p->n_readable;
}

static _unused_ void peer_sync_done(NativeConn *nc, void *userdata, void *waiter, int error,
                                    uint64_t offset, uint64_t size, int *fds, unsigned n_fds) {
        TestPeer *p = userdata;
        unsigned i;

        p->sync_error = error;
        p->sync_offset = offset;
        for (i = 0; i < n_fds; ++i)
                p->sync_fds[i] = fds[i];
        p->n_sync_fds = n_fds;
        free(fds);
}

static _unused_ void peer_disconnected(NativeConn *nc, void *userdata) {
        TestPeer *p = userdata;

        ++p->n_disconnected;
}

static const NativeConnOps test_peer_ops = {
        .readable = peer_readable,
        .sync_done = peer_sync_done,
        .disconnected = peer_disconnected,
};

/* HELLO as kdbusd's native listener runs it: the bus reads metadata from /proc through
 * proxy/'s reader. */
static _unused_ int test_native_hello_on(Bus *bus, BusEndpoint *ep, BridgeCreds *creds,
                                  struct kdbus_cmd_hello *cmd, size_t size,
                                  const NativeConnOps *ops, void *userdata, NativeConn **ret) {
        bus_set_proc_reader(bus, &proxy_proc_reader);
        return native_conn_hello_on(bus, ep, creds, cmd, size, ops, userdata, ret);
}

static _unused_ int test_native_hello(Bus *bus, BridgeCreds *creds, struct kdbus_cmd_hello *cmd,
                               size_t size, const NativeConnOps *ops, void *userdata,
                               NativeConn **ret) {
        return test_native_hello_on(bus, NULL, creds, cmd, size, ops, userdata, ret);
}

/* What the next HELLO consents to send and asks to receive, and items it carries (8-aligned
 * kdbus_items, @test_hello_extra_size bytes; NULL: none). */
static uint64_t test_attach_send = _KDBUS_ATTACH_ALL;
static uint64_t test_attach_recv = 0;
static const void *test_hello_extra;
static size_t test_hello_extra_size;

static _unused_ int peer_hello_full(Fixture *f, TestPeer *p, uint64_t flags, uint64_t pool_size,
                                    uid_t uid) {
        uint8_t buf[sizeof(struct kdbus_cmd_hello) + 512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_hello *hello = (void *)buf;
        BridgeCreds creds = { .uid = uid, .gid = 1000, .pidfd = -1 };
        int r;

        g_assert_cmpuint(test_hello_extra_size, <=, 512);
        *hello = (struct kdbus_cmd_hello){
                .size = sizeof(*hello) + test_hello_extra_size, .flags = flags,
                .pool_size = pool_size, .attach_flags_send = test_attach_send,
                .attach_flags_recv = test_attach_recv,
        };
        if (test_hello_extra_size)
                memcpy(hello->items, test_hello_extra, test_hello_extra_size);
        memset(p, 0, sizeof(*p));
        p->sync_error = 1;
        r = test_native_hello(f->bus, &creds, hello, hello->size, &test_peer_ops, p, &p->nc);
        if (r)
                return r;
        p->id = hello->id;
        g_assert_cmpuint(hello->id, ==, p->nc->conn->id);
        p->pool = mmap(NULL, pool_size, PROT_READ, MAP_SHARED, native_conn_pool_fd(p->nc), 0);
        g_assert_true(p->pool != MAP_FAILED);
        return 0;
}

static _unused_ void peer_hello(Fixture *f, TestPeer *p, uint64_t flags) {
        g_assert_cmpint(peer_hello_full(f, p, flags, TEST_POOL_SIZE, 2000), ==, 0);
}

static _unused_ void peer_close_fds(TestPeer *p) {
        unsigned i;

        for (i = 0; i < p->n_fds; ++i)
                (void) close(p->fds[i]);
        free(p->fds);
        p->fds = NULL;
        p->n_fds = 0;
}

static _unused_ void peer_free(TestPeer *p) {
        peer_close_fds(p);
        if (p->pool)
                (void) munmap((void *)p->pool, p->nc->pool->size);
        p->nc = native_conn_free(p->nc);
}

/* A command without fds in or out. */
static _unused_ int peer_cmd(TestPeer *p, uint64_t command, void *cmd, size_t size) {
        size_t reply_size;
        int *fds;
        unsigned n_fds;
        int r;

        r = native_conn_command(p->nc, command, cmd, size, NULL, 0, &reply_size, &fds, &n_fds);
        g_assert_cmpuint(n_fds, ==, 0);
        return r;
}

static _unused_ int peer_free_offset(TestPeer *p, uint64_t offset) {
        struct kdbus_cmd_free cmd = { .size = sizeof(cmd), .offset = offset };

        return peer_cmd(p, KDBUS_CMD_FREE, &cmd, sizeof(cmd));
}

/* RECV with @flags; on success *ret_msg points into the peer's read-only pool. */
static _unused_ int peer_recv(TestPeer *p, uint64_t flags, int64_t priority,
                              const struct kdbus_msg **ret_msg, struct kdbus_cmd_recv *ret_cmd) {
        struct kdbus_cmd_recv cmd = { .size = sizeof(cmd), .flags = flags, .priority = priority };
        size_t reply_size;
        int r;

        peer_close_fds(p);
        r = native_conn_command(p->nc, KDBUS_CMD_RECV, &cmd, sizeof(cmd), NULL, 0, &reply_size,
                                &p->fds, &p->n_fds);
        g_assert_cmpuint(reply_size, ==, sizeof(cmd));
        if (ret_cmd)
                *ret_cmd = cmd;
        if (r == 0 && ret_msg)
                *ret_msg = (const void *)(p->pool + cmd.msg.offset);
        return r;
}

/* The dbus1 bytes of a received message (its PAYLOAD_OFF item) and their header. */
static _unused_ const uint8_t *msg_payload(const struct kdbus_msg *km, size_t *ret_size,
                                           WireHeader *ret_hdr) {
        const struct kdbus_item *item = km->items;

        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        *ret_size = item->vec.size;
        g_assert_cmpint(wire_message_parse((const uint8_t *)km + item->vec.offset, item->vec.size,
                                           KDBUS_MSG_MAX_FDS, 0, ret_hdr), ==, 0);
        return (const uint8_t *)km + item->vec.offset;
}

/* A call's timeout_ns with no deadline of its own (kdbus refuses 0 with EINVAL). */
#define TEST_DEADLINE_NEVER UINT64_MAX

/* A SEND datagram as libkdbus lays it out. */
typedef struct TestSend {
        uint64_t dst_id;
        const char *dst_name;           /* DST_NAME item */
        uint64_t msg_flags;             /* KDBUS_MSG_*; derived from the header when ~0 */
        uint64_t send_flags;
        int64_t priority;
        uint64_t cookie;                /* 0: the serial */
        const int *fd_idx;              /* FDS item of indices */
        unsigned n_fd_idx;
        uint64_t timeout_ns;            /* a call's deadline; 0: TEST_DEADLINE_NEVER */
        int memfd_idx;                  /* >= 0: the header as PAYLOAD_VEC, the body as
                                         * PAYLOAD_MEMFD of that fd index, which holds the
                                         * whole message (start: the body's offset) */
        uint64_t payload_type;          /* 0: KDBUS_PAYLOAD_DBUS */
        bool payload_kernel;            /* KDBUS_PAYLOAD_KERNEL (which is 0) instead */
        uint64_t cookie_reply;          /* != 0: the timeout_ns / cookie_reply union, as is */
        const void *extra;              /* items appended as they are (aligned ones) */
        size_t extra_size;
} TestSend;

/* Build @t's dbus1 message (SENDER left out: the bus stamps it). */
static _unused_ uint8_t *test_dbus1(const TestMsg *t, uint32_t n_fds, size_t *ret_size) {
        WireMsgSpec spec = {
                .type = t->type, .flags = t->flags, .serial = t->serial ? t->serial : 1,
                .reply_serial = t->reply_serial, .path = t->path, .interface = t->interface,
                .member = t->member, .error_name = t->error_name, .destination = t->destination,
                .n_fds = n_fds,
        };
        WireWriter w;
        uint8_t *data = NULL;
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
        wire_writer_init(&w);
        for (i = 0; i < ELEMENTSOF(t->args) && t->args[i]; ++i)
                g_assert_cmpint(wire_writer_append_basic(&w, 's', t->args[i]), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, ret_size), ==, 0);
        wire_writer_deinit(&w);
        return data;
}

static _unused_ uint64_t test_msg_flags(const TestMsg *t) {
        uint64_t f = 0;

        if (t->type == WIRE_MSG_METHOD_CALL && !(t->flags & WIRE_FLAG_NO_REPLY_EXPECTED))
                f |= KDBUS_MSG_EXPECT_REPLY;
        if (t->type == WIRE_MSG_SIGNAL)
                f |= KDBUS_MSG_SIGNAL;
        return f;
}

/*
 * Lay out cmd | msg (+items) | payload into a new buffer. Return: the buffer (g_free), its
 * size in *ret_size.
 */
static _unused_ uint8_t *test_send_datagram(const TestMsg *t, const TestSend *s,
                                            const uint8_t *payload, size_t payload_size,
                                            size_t *ret_size) {
        size_t msg_size = sizeof(struct kdbus_msg), total;
        struct kdbus_cmd_send *cmd;
        struct kdbus_msg *km;
        struct kdbus_item *item;
        uint8_t *buf;
        unsigned i;

        size_t inline_size = payload_size;
        WireHeader ph;

        msg_size += KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec));
        if (s->memfd_idx >= 0) {
                msg_size += KDBUS_ITEM_SIZE(sizeof(struct kdbus_memfd));
                g_assert_cmpint(wire_message_parse(payload, payload_size, KDBUS_MSG_MAX_FDS, 0,
                                                   &ph), ==, 0);
                inline_size = ph.body_offset;
        }
        if (s->dst_name)
                msg_size += KDBUS_ITEM_SIZE(strlen(s->dst_name) + 1);
        if (s->n_fd_idx)
                msg_size += KDBUS_ITEM_SIZE(s->n_fd_idx * sizeof(int));
        msg_size += ALIGN8(s->extra_size);
        total = sizeof(*cmd) + msg_size + ALIGN8(inline_size);
        buf = g_malloc0(total);
        cmd = (void *)buf;
        cmd->size = sizeof(*cmd);
        cmd->flags = s->send_flags;
        cmd->msg_address = sizeof(*cmd);
        km = (void *)(buf + sizeof(*cmd));
        km->size = msg_size;
        km->flags = s->msg_flags == ~0ull ? test_msg_flags(t) : s->msg_flags;
        km->priority = s->priority;
        km->dst_id = s->dst_id;
        km->payload_type = s->payload_kernel ? KDBUS_PAYLOAD_KERNEL :
                           s->payload_type ? s->payload_type : KDBUS_PAYLOAD_DBUS;
        km->cookie = s->cookie ? s->cookie : (t->serial ? t->serial : 1);
        if (t->type == WIRE_MSG_METHOD_RETURN || t->type == WIRE_MSG_ERROR)
                km->cookie_reply = t->reply_serial;
        else if (km->flags & KDBUS_MSG_EXPECT_REPLY)
                km->timeout_ns = s->timeout_ns ? s->timeout_ns : TEST_DEADLINE_NEVER;
        if (s->cookie_reply)
                km->cookie_reply = s->cookie_reply;
        item = km->items;
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        item->type = KDBUS_ITEM_PAYLOAD_VEC;
        item->vec.offset = sizeof(*cmd) + msg_size;
        item->vec.size = inline_size;
        memcpy(buf + item->vec.offset, payload, inline_size);
        item = KDBUS_ITEM_NEXT(item);
        if (s->memfd_idx >= 0) {
                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd);
                item->type = KDBUS_ITEM_PAYLOAD_MEMFD;
                item->memfd.fd = s->memfd_idx;
                item->memfd.start = inline_size;
                item->memfd.size = payload_size - inline_size;
                item = KDBUS_ITEM_NEXT(item);
        }
        if (s->dst_name) {
                item->size = KDBUS_ITEM_HEADER_SIZE + strlen(s->dst_name) + 1;
                item->type = KDBUS_ITEM_DST_NAME;
                strcpy(item->str, s->dst_name);
                item = KDBUS_ITEM_NEXT(item);
        }
        if (s->n_fd_idx) {
                item->size = KDBUS_ITEM_HEADER_SIZE + s->n_fd_idx * sizeof(int);
                item->type = KDBUS_ITEM_FDS;
                for (i = 0; i < s->n_fd_idx; ++i)
                        item->fds[i] = s->fd_idx[i];
                item = KDBUS_ITEM_NEXT(item);
        }
        if (s->extra_size)
                memcpy(item, s->extra, s->extra_size);
        *ret_size = total;
        return buf;
}

/* SEND @t from @p as described by @s, with @fds attached to the datagram. */
static _unused_ int peer_send_fds(TestPeer *p, const TestMsg *t, const TestSend *s,
                                  const int *fds, unsigned n_fds) {
        size_t payload_size, size, reply_size;
        uint8_t *payload = test_dbus1(t, s->n_fd_idx, &payload_size);
        uint8_t *buf = test_send_datagram(t, s, payload, payload_size, &size);
        int *rfds;
        unsigned n_rfds;
        int r;

        r = native_conn_command(p->nc, KDBUS_CMD_SEND, buf, size, fds, n_fds, &reply_size,
                                &rfds, &n_rfds);
        g_assert_cmpuint(n_rfds, ==, 0);
        g_free(buf);
        free(payload);
        return r;
}

static _unused_ int peer_send(TestPeer *p, const TestMsg *t, const TestSend *s) {
        return peer_send_fds(p, t, s, NULL, 0);
}

/* NAME_ACQUIRE / NAME_RELEASE of @name; *ret_flags gets return_flags. */
static _unused_ int peer_name(TestPeer *p, uint64_t command, const char *name, uint64_t flags,
                              uint64_t *ret_flags) {
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        int r;

        cmd->flags = flags;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        cmd->items[0].type = KDBUS_ITEM_NAME;
        strcpy(cmd->items[0].str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        r = peer_cmd(p, command, cmd, cmd->size);
        if (ret_flags)
                *ret_flags = cmd->return_flags;
        return r;
}
