/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native commands on the core, organised like kdbus's selftests (HELLO and BYEBYE:
 * test-hello.c; the pool quota: test-quota.c): message basic/sync/prio, peek/drop, name
 * acquire/release/queue, fd passing, memfd, pool/free,
 * list/conn-info, and native <-> legacy delivery on the same bus. Every errno is the one
 * kdbus returns (or, where kdbus had no such case, the one docs/native.md documents).
 */
#include <fcntl.h>
#include "conn-fixture.h"
#include "native/command.h"
#include "native/conn.h"


/* ---- messages ---- */

static void test_message_basic(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 7);
        const struct kdbus_msg *km;
        struct kdbus_cmd_recv rc;
        const uint8_t *payload;
        WireHeader h;
        size_t size;

        t.args[0] = "hello";
        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = n->b.id, .msg_flags = ~0ull,
                                                          .memfd_idx = -1, .priority = 3 }), ==, 0);
        g_assert_cmpuint(n->b.n_readable, ==, 1);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, &rc), ==, 0);
        /* msg_size is the slice's (kdbus_pool_slice_publish()): header, items, payload */
        g_assert_cmpuint(rc.msg.msg_size, >, km->size);
        g_assert_cmpuint(rc.msg.msg_size % 8, ==, 0);
        g_assert_cmpuint(km->src_id, ==, n->a.id);
        g_assert_cmpuint(km->dst_id, ==, n->b.id);
        g_assert_cmpuint(km->cookie, ==, 7);
        g_assert_cmpuint(km->flags, ==, KDBUS_MSG_EXPECT_REPLY);
        g_assert_cmpint(km->priority, ==, 3);
        g_assert_cmpuint(km->payload_type, ==, KDBUS_PAYLOAD_DBUS);
        /* the payload is the dbus1 message, SENDER stamped by the bus, DESTINATION as the
         * sender wrote it */
        payload = msg_payload(km, &size, &h);
        g_assert_cmpstr(h.sender, ==, ":1.1");
        g_assert_cmpstr(h.destination, ==, ":1.2");
        g_assert_cmpstr(h.member, ==, "Call");
        g_assert_cmpuint(h.serial, ==, 7);
        g_assert_nonnull(payload);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);

        /* the reply goes through the reply slot only once */
        {
                TestMsg r = { .type = WIRE_MSG_METHOD_RETURN, .serial = 1, .reply_serial = 7,
                              .destination = ":1.1" };

                g_assert_cmpint(peer_send(&n->b, &r, &(TestSend){ .dst_id = n->a.id,
                                .msg_flags = ~0ull, .memfd_idx = -1 }), ==, 0);
                g_assert_cmpint(peer_send(&n->b, &r, &(TestSend){ .dst_id = n->a.id,
                                .msg_flags = ~0ull, .memfd_idx = -1 }), ==, -EBADSLT);
                g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, NULL), ==, 0);
                g_assert_cmpuint(km->cookie_reply, ==, 7);
                g_assert_cmpuint(km->flags, ==, 0);
        }
        g_assert_cmpint(peer_free_offset(&n->b, rc.msg.offset), ==, 0);
        g_assert_cmpint(peer_free_offset(&n->b, rc.msg.offset), ==, -ENXIO);
}

static void test_message_bad(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 7), sig = { .type = WIRE_MSG_SIGNAL, .serial = 9 };
        TestSend s = { .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1 };
        size_t size, reply_size;
        uint8_t *payload, *buf;
        int *fds;
        unsigned n_fds;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        /* header and kdbus fields disagree */
        s.cookie = 8;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        s.cookie = 0;
        s.msg_flags = 0;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        s.msg_flags = ~0ull;
        s.dst_id = 3;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        /* dst_id's unique name exactly: not another spelling of the number */
        s.dst_id = 2;
        t.destination = ":1.02";
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        t.destination = ":1.18446744073709551618";      /* 2 modulo 2^64 */
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        t.destination = ":1.2";
        s.dst_id = KDBUS_DST_ID_NAME;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EDESTADDRREQ);
        /* to nobody */
        t.destination = ":1.9";
        s.dst_id = 9;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -ENXIO);
        t.destination = "org.example.Nobody";
        s.dst_id = KDBUS_DST_ID_NAME;
        s.dst_name = "org.example.Nobody";
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -ESRCH);
        /* a broadcast cannot expect a reply: kdbus_msg_examine() checks the flags before
         * our header checks; a call's deadline on a broadcast is ENOTUNIQ first */
        s = (TestSend){ .dst_id = KDBUS_DST_ID_BROADCAST, .msg_flags = KDBUS_MSG_SIGNAL |
                        KDBUS_MSG_EXPECT_REPLY, .memfd_idx = -1 };
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -ENOTUNIQ);
        s.msg_flags = ~0ull;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, 0);
        /* SYNC_REPLY without EXPECT_REPLY */
        s.send_flags = KDBUS_SEND_SYNC_REPLY;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EINVAL);

        /* a payload that is no dbus1 message: carried opaque to a native receiver, as
         * kdbus carried every payload (test-opaque.c); bad offsets, unknown command */
        t.destination = ":1.2";
        s = (TestSend){ .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1 };
        payload = test_dbus1(&t, 0, &size);
        payload[0] = 'x';
        buf = test_send_datagram(&t, &s, payload, size, &size);
        g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, buf, size, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        ((struct kdbus_cmd_send *)buf)->msg_address = size;
        g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, buf, size, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, -EFAULT);
        ((struct kdbus_cmd_send *)buf)->msg_address = 4;
        g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, buf, size, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, -EFAULT);
        ((struct kdbus_cmd_send *)buf)->msg_address = sizeof(struct kdbus_cmd_send);
        ((struct kdbus_msg *)(buf + sizeof(struct kdbus_cmd_send)))->items[0].vec.size = 1u << 30;
        g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, buf, size, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, -EFAULT);
        ((struct kdbus_msg *)(buf + sizeof(struct kdbus_cmd_send)))->items[0].size = 3;
        g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, buf, size, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, -EINVAL);
        g_assert_cmpint(native_conn_command(n->a.nc, 0x1234, buf, size, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, -ENOTTY);
        g_assert_cmpint(native_conn_command(n->a.nc, KDBUS_CMD_SEND, buf, 8, NULL, 0,
                                            &reply_size, &fds, &n_fds), ==, -EINVAL);
        g_free(buf);
        free(payload);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* Write an item of @type with @size payload bytes (zeros) at @at; return its aligned size. */
static size_t extra_item(uint8_t *at, uint64_t type, size_t size) {
        struct kdbus_item *item = (void *)at;

        item->size = KDBUS_ITEM_HEADER_SIZE + size;
        item->type = type;
        memset(item->data, 0, size);
        return KDBUS_ALIGN8(item->size);
}

/* kdbus_msg_examine()'s checks of the flags and fields, in its order and before our checks
 * of the dbus1 header, and its checks of what items a kind of message may carry */
static void test_message_examine(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 7), sig = { .type = WIRE_MSG_SIGNAL, .serial = 9 };
        TestMsg usig = { .type = WIRE_MSG_SIGNAL, .serial = 10, .destination = ":1.2" };
        const TestSend bc = { .dst_id = KDBUS_DST_ID_BROADCAST, .msg_flags = ~0ull,
                              .memfd_idx = -1 };
        const TestSend uc = { .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1 };
        TestSend s;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        /* the bus's own payload type is EINVAL, before anything else; other types are
         * opaque payloads, a legacy receiver's EBADMSG (test-opaque.c) */
        s = uc;
        s.payload_kernel = true;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        s = bc;
        s.msg_flags = 0;
        s.payload_kernel = true;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EINVAL);
        s = uc;
        s.payload_type = 0x1234;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        /* a broadcast that is no signal: EBADMSG, also with a timeout */
        s = bc;
        s.msg_flags = 0;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EBADMSG);
        s.cookie_reply = 5;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EBADMSG);
        /* a broadcast with timeout_ns / cookie_reply (one field): ENOTUNIQ */
        s = bc;
        s.cookie_reply = 5;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -ENOTUNIQ);
        /* a unicast signal expecting a reply: ENOTUNIQ; one with cookie_reply: EINVAL */
        s = uc;
        s.msg_flags = KDBUS_MSG_SIGNAL | KDBUS_MSG_EXPECT_REPLY;
        g_assert_cmpint(peer_send(&n->a, &usig, &s), ==, -ENOTUNIQ);
        s = uc;
        s.cookie_reply = 5;
        g_assert_cmpint(peer_send(&n->a, &usig, &s), ==, -EINVAL);
        s.cookie_reply = 0;
        g_assert_cmpint(peer_send(&n->a, &usig, &s), ==, 0);
        /* DST_NAME on a broadcast: EBADMSG */
        s = bc;
        s.dst_name = "org.example.Name";
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EBADMSG);
        /* a DST_NAME that is no well-known name: EINVAL, also a unique one that matches */
        s = uc;
        s.dst_name = ":1.2";
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
}

/* kdbus_args_verify() / kdbus_item_validate() on the message's items: malformed items and
 * a single-use item given twice are EINVAL */
static void test_message_items(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 7), sig = { .type = WIRE_MSG_SIGNAL, .serial = 9 };
        uint8_t extra[512] __attribute__((aligned(8))) = { 0 };
        const int idx[1] = { 0 };
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        size_t bloom = sizeof(struct kdbus_bloom_filter) + n->f.bus->bloom.size, at;
        TestSend s;

        g_assert_cmpint(fd, >=, 0);
        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        /* a second FDS item: EINVAL (kdbus_args_verify(), not the EEXIST of older kdbus) */
        s = (TestSend){ .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1, .fd_idx = idx,
                        .n_fd_idx = 1, .extra = extra };
        s.extra_size = extra_item(extra, KDBUS_ITEM_FDS, sizeof(int));
        g_assert_cmpint(peer_send_fds(&n->a, &t, &s, &fd, 1), ==, -EINVAL);
        /* an FDS payload that is no array of ints */
        s = (TestSend){ .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1, .extra = extra };
        s.extra_size = extra_item(extra, KDBUS_ITEM_FDS, 6);
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        /* an empty PAYLOAD_VEC / PAYLOAD_MEMFD */
        s.extra_size = extra_item(extra, KDBUS_ITEM_PAYLOAD_VEC, sizeof(struct kdbus_vec));
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        s.extra_size = extra_item(extra, KDBUS_ITEM_PAYLOAD_MEMFD, sizeof(struct kdbus_memfd));
        g_assert_cmpint(peer_send_fds(&n->a, &t, &s, &fd, 1), ==, -EINVAL);
        /* a PAYLOAD_MEMFD with a negative fd: EBADF (before its size is looked at) */
        ((struct kdbus_item *)extra)->memfd.fd = -1;
        ((struct kdbus_item *)extra)->memfd.size = 8;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EBADF);
        /* a BLOOM_FILTER without its generation; two of the bus's size */
        s = (TestSend){ .dst_id = KDBUS_DST_ID_BROADCAST, .msg_flags = ~0ull, .memfd_idx = -1,
                        .extra = extra };
        s.extra_size = extra_item(extra, KDBUS_ITEM_BLOOM_FILTER, 4);
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EINVAL);
        at = extra_item(extra, KDBUS_ITEM_BLOOM_FILTER, bloom);
        s.extra_size = at;
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, 0);
        s.extra_size = at + extra_item(extra + at, KDBUS_ITEM_BLOOM_FILTER, bloom);
        g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, -EINVAL);
        /* a second DST_NAME */
        s = (TestSend){ .dst_id = KDBUS_DST_ID_NAME, .dst_name = "org.example.B",
                        .msg_flags = ~0ull, .memfd_idx = -1, .extra = extra };
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.B", 0, NULL),
                        ==, 0);
        t.destination = "org.example.B";
        s.extra_size = extra_item(extra, KDBUS_ITEM_DST_NAME, sizeof("org.example.B"));
        memcpy(((struct kdbus_item *)extra)->str, "org.example.B", sizeof("org.example.B"));
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EINVAL);
        s.extra_size = 0;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, 0);
        (void) close(fd);
}

/* kdbus's KDBUS_CONN_MAX_REQUESTS_PENDING: a native caller waits for at most 128 replies
 * (EMLINK for the 129th call), however many max_replies_per_connection allows */
static void test_message_pending_max(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 1);
        TestMsg ret = { .type = WIRE_MSG_METHOD_RETURN, .serial = 1, .reply_serial = 100,
                        .destination = ":1.1" };
        const TestSend s = { .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1 };
        const struct kdbus_msg *km;
        unsigned i;

        g_assert_cmpuint(n->f.bus->limits.max_replies_per_connection, >,
                         NATIVE_MAX_REQUESTS_PENDING);
        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        /* b takes each call off its queue (its pool quota is not what is tested) and
         * answers none: the reply slots stay open */
        for (i = 0; i < NATIVE_MAX_REQUESTS_PENDING; ++i) {
                t.serial = 100 + i;
                g_assert_cmpint(peer_send(&n->a, &t, &s), ==, 0);
                g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
                g_assert_cmpint(peer_free_offset(&n->b, (uint64_t)((const uint8_t *)km -
                                                                   n->b.pool)), ==, 0);
        }
        t.serial = 100 + i;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EMLINK);
        /* a call without a reply slot still goes */
        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, 0);
        t.flags = 0;
        /* one answered: one more call */
        g_assert_cmpint(peer_send(&n->b, &ret, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                                                            .memfd_idx = -1 }), ==, 0);
        t.serial = 300;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, 0);
        t.serial = 301;
        g_assert_cmpint(peer_send(&n->a, &t, &s), ==, -EMLINK);
}

static void test_message_sync(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 11);
        TestMsg r = { .type = WIRE_MSG_METHOD_RETURN, .serial = 3, .reply_serial = 11,
                      .destination = ":1.1" };
        const struct kdbus_msg *km;
        WireHeader h;
        size_t size;

        r.args[0] = "answer";
        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                        .memfd_idx = -1, .send_flags = KDBUS_SEND_SYNC_REPLY }), ==, 1);
        g_assert_cmpint(n->a.sync_error, ==, 1);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpint(peer_send(&n->b, &r, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        /* the reply went to the waiting SEND, not to the receive queue */
        g_assert_cmpint(n->a.sync_error, ==, 0);
        g_assert_cmpuint(n->a.n_readable, ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        km = (const void *)(n->a.pool + n->a.sync_offset);
        g_assert_cmpuint(km->cookie_reply, ==, 11);
        (void) msg_payload(km, &size, &h);
        g_assert_cmpstr(h.sender, ==, ":1.2");
        g_assert_cmpint(peer_free_offset(&n->a, n->a.sync_offset), ==, 0);
}

static void test_message_prio_peek_drop(NFixture *n, gconstpointer ctx) {
        static const int64_t prio[] = { 0, 5, -3, 5, 10 };
        const struct kdbus_msg *km;
        struct kdbus_cmd_recv rc, rc2;
        unsigned i;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        for (i = 0; i < G_N_ELEMENTS(prio); ++i) {
                TestMsg t = CALL(":1.2", 100 + i);

                t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
                g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                                .memfd_idx = -1, .priority = prio[i] }), ==, 0);
        }
        /* PEEK leaves the message queued and shows the same slice again */
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_PEEK, 0, &km, &rc), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 100);
        g_assert_cmpint(peer_free_offset(&n->b, rc.msg.offset), ==, 0);   /* PEEK's hold */
        g_assert_cmpint(peer_free_offset(&n->b, rc.msg.offset), ==, -ENXIO);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_PEEK, 0, &km, &rc2), ==, 0);
        g_assert_cmpuint(rc2.msg.offset, ==, rc.msg.offset);
        /* priorities as kdbus: the lowest value first, equal ones in order, EAGAIN when
         * the best waiting is above the threshold; DROP by priority EINVAL */
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_USE_PRIORITY, -4, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_USE_PRIORITY, 4, &km, &rc), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 102);
        g_assert_cmpint(km->priority, ==, -3);
        g_assert_cmpint(peer_free_offset(&n->b, rc.msg.offset), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_USE_PRIORITY, 4, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 100);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_USE_PRIORITY, 4, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_DROP | KDBUS_RECV_USE_PRIORITY, INT64_MAX,
                                  NULL, NULL), ==, -EINVAL);
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_USE_PRIORITY, INT64_MAX, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 101);
        /* DROP discards the next one; plain RECV is FIFO */
        g_assert_cmpint(peer_recv(&n->b, KDBUS_RECV_DROP, 0, NULL, &rc), ==, 0);
        /* nothing handed out: kdbus's "no slice" offset, the pool's size */
        g_assert_cmpuint(rc.msg.offset, ==, TEST_POOL_SIZE);
        g_assert_cmpuint(rc.msg.msg_size, ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 104);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_recv(&n->b, 1u << 7, 0, NULL, NULL), ==, -EINVAL);
}

/* ---- native <-> legacy ---- */

static void test_legacy_interop(NFixture *n, gconstpointer ctx) {
        const struct kdbus_msg *km;
        BridgeConn *legacy;
        uint32_t serial;
        WireHeader h;
        size_t size;

        legacy = fixture_conn(&n->f, 0);        /* :1.1 */
        peer_hello(&n->f, &n->a, 0);            /* :1.2 */
        /* one numbering on a bus with native peers: the legacy peer's own name (its Hello)
         * is the ":1.<id>" native peers form from its id (bridge/bus.h) */
        g_assert_cmpstr(legacy->unique_name, ==, ":1.1");
        g_assert_cmpstr(n->a.nc->conn->unique_name, ==, ":1.2");
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.example.Native", 0, NULL),
                        ==, 0);
        /* legacy calls the native service by its well-known name */
        g_assert_cmpint(test_send(legacy, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 21,
                        .destination = "org.example.Native", .member = "Ping" }), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->src_id, ==, legacy->id);
        g_assert_cmpuint(km->cookie, ==, 21);
        g_assert_cmpuint(km->flags, ==, KDBUS_MSG_EXPECT_REPLY);
        (void) msg_payload(km, &size, &h);
        g_assert_cmpstr(h.destination, ==, "org.example.Native");
        g_assert_cmpstr(h.sender, ==, legacy->unique_name);
        g_assert_cmpstr(h.member, ==, "Ping");
        /* the native answer reaches the legacy caller as a dbus1 reply */
        g_assert_cmpint(peer_send(&n->a, &(TestMsg){ .type = WIRE_MSG_METHOD_RETURN, .serial = 1,
                        .reply_serial = 21, .destination = ":1.1" },
                        &(TestSend){ .dst_id = legacy->id, .msg_flags = ~0ull, .memfd_idx = -1 }),
                        ==, 0);
        /* the legacy peer finds its own name in DESTINATION, as the native peer wrote it */
        g_assert_cmpstr(bridge_conn_queue_peek(legacy)->hdr.destination, ==, legacy->unique_name);
        g_assert_cmpstr(bridge_conn_queue_peek(legacy)->hdr.sender, ==, ":1.2");
        g_assert_cmpstr(test_pop(legacy, &serial), ==, "(reply)");
        g_assert_cmpuint(serial, ==, 21);
        /* a native call to the legacy peer, by DST_NAME */
        g_assert_cmpint(bridge_name_acquire(legacy, "org.example.Legacy", 0), ==, 0);
        g_assert_cmpint(peer_send(&n->a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 2,
                        .destination = "org.example.Legacy", .member = "Hi" },
                        &(TestSend){ .dst_id = KDBUS_DST_ID_NAME, .dst_name = "org.example.Legacy",
                                     .msg_flags = ~0ull, .memfd_idx = -1 }), ==, 0);
        {
                BridgeMsg *m = bridge_conn_queue_peek(legacy);

                g_assert_nonnull(m);
                g_assert_cmpstr(m->hdr.sender, ==, ":1.2");
                g_assert_cmpstr(m->hdr.member, ==, "Hi");
        }
        /* naming a known owner by id and a name someone else owns */
        g_assert_cmpint(peer_send(&n->a, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 3,
                        .destination = "org.example.Legacy", .member = "Hi" },
                        &(TestSend){ .dst_id = 77, .msg_flags = ~0ull, .memfd_idx = -1 }),
                        ==, -EREMCHG);
}

static void test_broadcast(NFixture *n, gconstpointer ctx) {
        BridgeMatchKeys all = { 0 };
        BridgeMatchRule *rule;
        BridgeConn *legacy;
        const struct kdbus_msg *km;
        TestMsg sig = { .type = WIRE_MSG_SIGNAL, .serial = 4, .member = "Changed" };

        legacy = fixture_conn(&n->f, 0);
        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(bridge_match_rule_new(&all, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(legacy, rule), ==, 0);
        g_assert_cmpint(bridge_match_rule_new(&all, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(n->b.nc->conn, rule), ==, 0);
        g_assert_cmpint(peer_send(&n->a, &sig, &(TestSend){ .dst_id = KDBUS_DST_ID_BROADCAST,
                        .msg_flags = ~0ull, .memfd_idx = -1 }), ==, 0);
        g_assert_cmpstr(test_pop(legacy, NULL), ==, "Changed");
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(km->flags, ==, KDBUS_MSG_SIGNAL);
        /* the sender has no rule: it does not get its own broadcast */
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* ---- names ---- */

static void test_names(NFixture *n, gconstpointer ctx) {
        uint64_t rf;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        fixture_log_reset(&n->f);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.example.N",
                                  KDBUS_NAME_ALLOW_REPLACEMENT, &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_ALLOW_REPLACEMENT | KDBUS_NAME_PRIMARY |
                                 KDBUS_NAME_ACQUIRED);
        /* the primary owner again: 0 without ACQUIRED (kdbus's final names.c), its new
         * saved flags */
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.example.N", 0, &rf), ==,
                        0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_PRIMARY);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.N", 0, &rf),
                        ==, -EEXIST);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.N",
                                  KDBUS_NAME_QUEUE, &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_QUEUE | KDBUS_NAME_IN_QUEUE | KDBUS_NAME_ACQUIRED);
        /* queued already: 0, no ACQUIRED */
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.N",
                                  KDBUS_NAME_QUEUE, &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_QUEUE | KDBUS_NAME_IN_QUEUE);
        /* queued, asking without QUEUE: off the queue, and no error (kdbus_name_update());
         * then queued again */
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.N", 0, &rf), ==,
                        0);
        g_assert_cmpuint(rf, ==, 0);
        g_assert_cmpuint(n->b.nc->conn->n_names, ==, 0);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.N", 0, &rf), ==,
                        -EEXIST);
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_ACQUIRE, "org.example.N",
                                  KDBUS_NAME_QUEUE, &rf), ==, 0);
        g_assert_cmpuint(rf, ==, KDBUS_NAME_QUEUE | KDBUS_NAME_IN_QUEUE | KDBUS_NAME_ACQUIRED);
        assert_log(&n->f, "name org.example.N ->:1.1;");
        g_assert_true(bus_find_conn_by_name(n->f.bus, "org.example.N") == n->a.nc->conn);
        /* release: not the owner's, nobody's, then the queued owner takes over */
        g_assert_cmpint(peer_name(&n->b, KDBUS_CMD_NAME_RELEASE, "org.example.Other", 0, NULL),
                        ==, -ESRCH);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_RELEASE, "org.example.N", 0, NULL), ==, 0);
        assert_log(&n->f, "name org.example.N :1.1>:1.2;");
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_RELEASE, "org.example.N", 0, NULL),
                        ==, -EADDRINUSE);
        /* replacement */
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.example.N",
                                  KDBUS_NAME_REPLACE_EXISTING, &rf), ==, -EEXIST);
        /* bad input */
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "no-dots", 0, NULL), ==, -EINVAL);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, ":1.5", 0, NULL), ==, -EINVAL);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.freedesktop.DBus", 0, NULL),
                        ==, -EPERM);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "a.b", 1u << 9, NULL), ==, -EINVAL);
}

/* CONN_INFO by @name, with @id too unless 0. Return: the record's id, or the errno. */
static int64_t info_by_name(TestPeer *p, uint64_t id, const char *name) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_info *cmd = (void *)buf;
        int64_t r;

        cmd->id = id;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        cmd->items[0].type = KDBUS_ITEM_NAME;
        strcpy(cmd->items[0].str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        r = peer_cmd(p, KDBUS_CMD_CONN_INFO, cmd, cmd->size);
        if (r)
                return r;
        r = (int64_t)((const struct kdbus_info *)(p->pool + cmd->offset))->id;
        g_assert_cmpint(peer_free_offset(p, cmd->offset), ==, 0);
        return r;
}

/*
 * The dispatcher checks every item's type before a handler looks at any item, as kdbus's
 * kdbus_args_parse() did: an item no command takes is EINVAL even behind an item whose own
 * error the handler would have found first (was: that error).
 */
static void test_items_types_first(NFixture *n, gconstpointer ctx) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        struct kdbus_cmd_match *match = (void *)buf;
        struct kdbus_item *item;

        peer_hello(&n->f, &n->a, 0);
        /* UPDATE from an ordinary connection: NAME is a policy holder's (EOPNOTSUPP) */
        cmd->size = sizeof(*cmd);
        item = cmd->items;
        item->size = KDBUS_ITEM_HEADER_SIZE + 4;
        item->type = KDBUS_ITEM_NAME;
        memcpy(item->str, "a.b", 4);
        cmd->size += KDBUS_ALIGN8(item->size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_UPDATE, buf, cmd->size), ==, -EOPNOTSUPP);
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + 8;
        item->type = 0x7777;                    /* no command's item */
        cmd->size += KDBUS_ALIGN8(item->size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_UPDATE, buf, cmd->size), ==, -EINVAL);

        /* MATCH_ADD: a mask not of the bus's bloom size is EDOM */
        memset(buf, 0, sizeof(buf));
        match->size = sizeof(*match);
        match->cookie = 1;
        item = match->items;
        item->size = KDBUS_ITEM_HEADER_SIZE + 8;
        item->type = KDBUS_ITEM_BLOOM_MASK;
        match->size += KDBUS_ALIGN8(item->size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, buf, match->size), ==, -EDOM);
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + 8;
        item->type = KDBUS_ITEM_CANCEL_FD;      /* SEND's, not MATCH_ADD's */
        match->size += KDBUS_ALIGN8(item->size);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, buf, match->size), ==, -EINVAL);
}

static void test_list_info(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_list list = { .size = sizeof(list), .flags = KDBUS_LIST_NAMES };
        struct kdbus_cmd_info info = { .size = sizeof(info), .id = 2,
                                       .attach_flags = KDBUS_ATTACH_NAMES };
        const struct kdbus_info *ki;
        const struct kdbus_item *item;

        (void) fixture_conn(&n->f, 0);
        peer_hello(&n->f, &n->a, KDBUS_HELLO_ACCEPT_FD);
        g_assert_cmpint(peer_name(&n->a, KDBUS_CMD_NAME_ACQUIRE, "org.example.L", 0, NULL), ==, 0);
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_LIST, &list, sizeof(list)), ==, 0);
        ki = (const void *)(n->a.pool + list.offset);
        g_assert_cmpuint(ki->size, ==, list.list_size);         /* one record: a name owner */
        g_assert_cmpuint(ki->id, ==, 2);
        g_assert_cmpuint(ki->flags, ==, KDBUS_HELLO_ACCEPT_FD);
        item = ki->items;
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_OWNED_NAME);
        g_assert_cmpstr(item->name.name, ==, "org.example.L");
        g_assert_cmpuint(item->name.flags, ==, KDBUS_NAME_PRIMARY);
        g_assert_cmpint(peer_free_offset(&n->a, list.offset), ==, 0);

        list.flags = KDBUS_LIST_UNIQUE;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_LIST, &list, sizeof(list)), ==, 0);
        g_assert_cmpuint(list.list_size, ==, 2 * sizeof(struct kdbus_info));
        ki = (const void *)(n->a.pool + list.offset);
        g_assert_cmpuint(ki->id, ==, 1);
        g_assert_cmpuint(ki->flags, ==, 0);
        g_assert_cmpint(peer_free_offset(&n->a, list.offset), ==, 0);

        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        ki = (const void *)(n->a.pool + info.offset);
        g_assert_cmpuint(ki->id, ==, 2);
        g_assert_cmpuint(ki->size, ==, info.info_size);
        g_assert_cmpstr(ki->items[0].name.name, ==, "org.example.L");
        info.id = 9;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, -ENXIO);
        info.id = 0;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, -EINVAL);
        /* kdbus_sanitize_attach_flags(): unknown bits */
        info.id = 2;
        info.attach_flags = 1ULL << 50;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, -EINVAL);
        info.attach_flags = _KDBUS_ATTACH_ANY;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        g_assert_cmpint(peer_free_offset(&n->a, info.offset), ==, 0);

        /* by NAME: the name registry only (kdbus_cmd_conn_info()), with an id the owner's */
        g_assert_cmpint(info_by_name(&n->a, 0, "org.example.L"), ==, 2);
        g_assert_cmpint(info_by_name(&n->a, 2, "org.example.L"), ==, 2);
        g_assert_cmpint(info_by_name(&n->a, 1, "org.example.L"), ==, -ESRCH);
        g_assert_cmpint(info_by_name(&n->a, 0, ":1.2"), ==, -ESRCH);
        g_assert_cmpint(info_by_name(&n->a, 0, "not..valid"), ==, -ESRCH);
        g_assert_cmpint(info_by_name(&n->a, 0, "org.example.None"), ==, -ESRCH);
}

/* ---- fds and memfds ---- */

static void test_fds(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 5);
        int p[2], many[KDBUS_MSG_MAX_FDS + 1];
        int idx[KDBUS_MSG_MAX_FDS + 1] = { 0 };
        const struct kdbus_msg *km;
        const struct kdbus_item *item;
        char c = 0;
        unsigned i;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, KDBUS_HELLO_ACCEPT_FD);
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_send_fds(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = idx, .n_fd_idx = 1 }, &p[1], 1), ==, 0);
        (void) close(p[1]);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        item = KDBUS_ITEM_NEXT(km->items);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_FDS);
        g_assert_cmpint(item->fds[0], ==, -1);  /* the fd comes with the RECV reply */
        g_assert_cmpint(write(n->b.fds[0], "z", 1), ==, 1);
        peer_close_fds(&n->b);
        g_assert_cmpint(read(p[0], &c, 1), ==, 1);
        g_assert_cmpint(c, ==, 'z');

        /* a receiver without ACCEPT_FD, an index out of range, too many */
        t.destination = ":1.1";
        g_assert_cmpint(peer_send_fds(&n->b, &t, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = idx, .n_fd_idx = 1 }, &p[0], 1), ==, -ECOMM);
        idx[0] = 1;
        g_assert_cmpint(peer_send_fds(&n->b, &t, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = idx, .n_fd_idx = 1 }, &p[0], 1), ==, -EBADF);
        for (i = 0; i < G_N_ELEMENTS(many); ++i) {
                many[i] = p[0];
                idx[i] = (int)i;
        }
        g_assert_cmpint(peer_send_fds(&n->b, &t, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = idx, .n_fd_idx = G_N_ELEMENTS(many) }, many,
                        G_N_ELEMENTS(many)), ==, -EMFILE);
        /* fds in a broadcast */
        g_assert_cmpint(peer_send_fds(&n->b, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .serial = 3 },
                        &(TestSend){ .dst_id = KDBUS_DST_ID_BROADCAST, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = idx, .n_fd_idx = 1 }, &p[0], 1), ==, -ENOTUNIQ);
        (void) close(p[0]);
}

static void test_memfd(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 6);
        const struct kdbus_msg *km;
        uint8_t *payload;
        size_t size;
        WireHeader h;
        int fd;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        t.args[0] = "through a memfd";
        payload = test_dbus1(&t, 0, &size);
        fd = memfd_create("payload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, payload, size), ==, (ssize_t)size);
        /* unsealed: refused */
        g_assert_cmpint(peer_send_fds(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                        .memfd_idx = 0 }, &fd, 1), ==, -ETXTBSY);
        /* kdbus's mask: F_SEAL_SEAL too */
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), ==, 0);
        g_assert_cmpint(peer_send_fds(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                        .memfd_idx = 0 }, &fd, 1), ==, -ETXTBSY);
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL), ==, 0);
        g_assert_cmpint(peer_send_fds(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                        .memfd_idx = 0 }, &fd, 1), ==, 0);
        (void) close(fd);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        /* the header in the pool, the body as the memfd (tests/unit/native/test-memfd.c) */
        g_assert_cmpuint(km->items[0].type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        g_assert_cmpuint(KDBUS_ITEM_NEXT(km->items)->type, ==, KDBUS_ITEM_PAYLOAD_MEMFD);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        g_assert_cmpint(wire_message_parse(payload, size, 0, 0, &h), ==, 0);
        g_assert_cmpstr(h.member, ==, "Call");
        /* a pipe is no memfd */
        {
                int p[2];

                g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
                g_assert_cmpint(peer_send_fds(&n->a, &t, &(TestSend){ .dst_id = 2,
                                .msg_flags = ~0ull, .memfd_idx = 0 }, &p[0], 1), ==, -EMEDIUMTYPE);
                (void) close(p[0]);
                (void) close(p[1]);
        }
        free(payload);
}

static int peer_match(TestPeer *p, uint64_t cookie, uint64_t flags, const char *member,
                      uint64_t sender_id, size_t mask_size) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *cmd = (void *)buf;
        struct kdbus_item *item = cmd->items;
        uint64_t mask[BUS_BLOOM_WORDS * 2] = { 0 };

        cmd->flags = flags;
        cmd->cookie = cookie;
        if (member) {
                bloom_add(mask, &bloom_params_default, "member", member);
                item->size = KDBUS_ITEM_HEADER_SIZE + mask_size;
                item->type = KDBUS_ITEM_BLOOM_MASK;
                memcpy(item->data, mask, mask_size);
                item = KDBUS_ITEM_NEXT(item);
        }
        if (sender_id != KDBUS_MATCH_ID_ANY) {
                item->size = KDBUS_ITEM_HEADER_SIZE + 8;
                item->type = KDBUS_ITEM_ID;
                item->id = sender_id;
                item = KDBUS_ITEM_NEXT(item);
        }
        cmd->size = (uint64_t)((uint8_t *)item - buf);
        return peer_cmd(p, KDBUS_CMD_MATCH_ADD, cmd, cmd->size);
}

static int peer_signal(TestPeer *p, const char *member, uint32_t serial) {
        TestMsg sig = { .type = WIRE_MSG_SIGNAL, .serial = serial, .member = member };

        return peer_send(p, &sig, &(TestSend){ .dst_id = KDBUS_DST_ID_BROADCAST,
                                               .msg_flags = ~0ull, .memfd_idx = -1 });
}

/* kdbus_conn_unicast(): a native peer's signal addressed to a native receiver arrives
 * only through one of the receiver's match entries (bloom and sender as for a broadcast)
 * and never fails its sender; a legacy sender's arrives as dbus-daemon delivers it. */
static void test_match_addressed_signal(NFixture *n, gconstpointer ctx) {
        BridgeConn *legacy = fixture_conn(&n->f, 0);   /* :1.1 */
        TestMsg sig = { .type = WIRE_MSG_SIGNAL, .serial = 1, .destination = ":1.3",
                        .member = "Changed" };
        TestSend to_b = { .dst_id = 3, .msg_flags = ~0ull, .memfd_idx = -1 };
        const struct kdbus_msg *km;
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        peer_hello(&n->f, &n->a, KDBUS_HELLO_ACCEPT_FD);        /* :1.2 */
        peer_hello(&n->f, &n->b, 0);                            /* :1.3, no fds */
        /* no match entry: dropped, the SEND succeeds */
        g_assert_cmpint(peer_send(&n->a, &sig, &to_b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* an entry for another member: still dropped; for this one: delivered */
        g_assert_cmpint(peer_match(&n->b, 1, 0, "Other", KDBUS_MATCH_ID_ANY, BUS_BLOOM_SIZE),
                        ==, 0);
        sig.serial = 2;
        g_assert_cmpint(peer_send(&n->a, &sig, &to_b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_match(&n->b, 2, 0, "Changed", KDBUS_MATCH_ID_ANY, BUS_BLOOM_SIZE),
                        ==, 0);
        sig.serial = 3;
        g_assert_cmpint(peer_send(&n->a, &sig, &to_b), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 3);
        g_assert_cmpuint(km->dst_id, ==, n->b.id);
        /* with fds b refuses: no ECOMM for a signal, it just does not arrive */
        g_assert_cmpint(fd, >=, 0);
        sig.serial = 4;
        g_assert_cmpint(peer_send_fds(&n->a, &sig, &(TestSend){ .dst_id = 3, .msg_flags = ~0ull,
                        .memfd_idx = -1, .fd_idx = (const int[]){ 0 }, .n_fd_idx = 1 }, &fd, 1),
                        ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        (void) close(fd);
        /* a legacy sender's addressed signal reaches a native peer without a match */
        g_assert_cmpint(test_send(legacy, &(TestMsg){ .type = WIRE_MSG_SIGNAL, .serial = 5,
                                                      .destination = ":1.2", .member = "L" }),
                        ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 5);
        /* ... with the header as the legacy sender's message has it: both names are the
         * ones src_id and dst_id give (one numbering), the bytes not stamped again */
        {
                WireHeader h;
                size_t size;

                (void) msg_payload(km, &size, &h);
                g_assert_cmpuint(km->src_id, ==, legacy->id);
                g_assert_cmpstr(h.sender, ==, legacy->unique_name);
                g_assert_cmpstr(h.sender, ==, ":1.1");
                g_assert_cmpstr(h.destination, ==, ":1.2");
                g_assert_cmpuint(h.total_size, ==, size);
        }
}

/* The bus's own signals (the dbus1 driver's NameOwnerChanged, and NameAcquired addressed to
 * the peer) reach a native peer only through an entry naming the bus (ID 0) or one without
 * any item: kdbus had no driver, and an ID rule, even KDBUS_MATCH_ID_ANY, matched messages
 * of connections only (kdbus_match_rule_conn(); kdbus-test's kdbus_add_match_empty()). */
static void test_match_bus_signals(NFixture *n, gconstpointer ctx) {
        TestMsg noc = { .type = WIRE_MSG_SIGNAL, .serial = 1, .path = "/org/freedesktop/DBus",
                        .interface = "org.freedesktop.DBus", .member = "NameOwnerChanged" };
        TestMsg acq = noc;
        struct kdbus_cmd_match all = { .size = sizeof(all), .cookie = 3 };
        uint8_t anybuf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *any = (void *)anybuf;
        const struct kdbus_msg *km;
        TestPeer c;
        BridgeMsg *m;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        peer_hello(&n->f, &c, 0);
        /* kdbus-test's kdbus_add_match_empty(): one ID item, KDBUS_MATCH_ID_ANY */
        any->size = sizeof(*any) + KDBUS_ITEM_HEADER_SIZE + 8;
        any->cookie = 1;
        any->items[0].size = KDBUS_ITEM_HEADER_SIZE + 8;
        any->items[0].type = KDBUS_ITEM_ID;
        any->items[0].id = KDBUS_MATCH_ID_ANY;
        g_assert_cmpint(peer_cmd(&n->a, KDBUS_CMD_MATCH_ADD, any, any->size), ==, 0);
        g_assert_cmpint(peer_match(&n->b, 2, 0, NULL, 0, 0), ==, 0);
        g_assert_cmpint(peer_cmd(&c, KDBUS_CMD_MATCH_ADD, &all, sizeof(all)), ==, 0);
        m = test_msg_new(NULL, &noc);
        g_assert_cmpint(bus_broadcast(n->f.bus, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->src_id, ==, KDBUS_SRC_ID_KERNEL);
        g_assert_cmpint(peer_recv(&c, 0, 0, &km, NULL), ==, 0);
        /* addressed to each: the same rule */
        acq.member = "NameAcquired";
        acq.destination = ":1.1";
        m = test_msg_new(NULL, &acq);
        g_assert_cmpint(bridge_conn_queue_msg(n->a.nc->conn, m), ==, 0);
        g_assert_cmpint(bridge_conn_queue_msg(n->b.nc->conn, m), ==, 0);
        g_assert_cmpint(bridge_conn_queue_msg(c.nc->conn, m), ==, 0);
        bridge_msg_unref(m);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpint(peer_recv(&c, 0, 0, NULL, NULL), ==, 0);
        /* a peer's broadcast still reaches the ID-any entry */
        g_assert_cmpint(peer_signal(&n->b, "Changed", 4), ==, 0);
        g_assert_cmpint(peer_recv(&n->a, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 4);
        peer_free(&c);
}

static void test_match_bloom(NFixture *n, gconstpointer ctx) {
        struct kdbus_cmd_match rm = { .size = sizeof(rm), .cookie = 1 };
        const struct kdbus_msg *km;
        TestPeer c;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        peer_hello(&n->f, &c, 0);
        /* b: broadcasts with member Changed, from anyone */
        g_assert_cmpint(peer_match(&n->b, 1, 0, "Changed", KDBUS_MATCH_ID_ANY, BUS_BLOOM_SIZE),
                        ==, 0);
        /* c: everything from b only */
        g_assert_cmpint(peer_match(&c, 7, 0, NULL, n->b.id, 0), ==, 0);
        g_assert_cmpint(peer_signal(&n->a, "Changed", 1), ==, 0);
        g_assert_cmpint(peer_signal(&n->a, "Other", 2), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 1);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(peer_recv(&c, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* a sender with a matching entry gets its own broadcast */
        g_assert_cmpint(peer_signal(&n->b, "Changed", 3), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->src_id, ==, n->b.id);
        g_assert_cmpint(peer_recv(&c, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 3);
        /* REPLACE swaps the entry of that cookie */
        g_assert_cmpint(peer_match(&n->b, 1, KDBUS_MATCH_REPLACE, "Other", KDBUS_MATCH_ID_ANY,
                                   BUS_BLOOM_SIZE), ==, 0);
        g_assert_cmpint(peer_signal(&n->a, "Changed", 4), ==, 0);
        g_assert_cmpint(peer_signal(&n->a, "Other", 5), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 5);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* remove, then nothing arrives; removing twice fails */
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_MATCH_REMOVE, &rm, sizeof(rm)), ==, 0);
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_MATCH_REMOVE, &rm, sizeof(rm)), ==, -EBADSLT);
        g_assert_cmpint(peer_signal(&n->a, "Other", 6), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpuint(n->b.nc->conn->n_matches, ==, 0);
        /* bad entries */
        g_assert_cmpint(peer_match(&n->b, 2, 0, "X", KDBUS_MATCH_ID_ANY, BUS_BLOOM_SIZE + 8),
                        ==, -EDOM);
        g_assert_cmpint(peer_match(&n->b, 2, 1u << 5, NULL, KDBUS_MATCH_ID_ANY, 0), ==, -EINVAL);
        {
                uint8_t buf[128] __attribute__((aligned(8))) = { 0 };
                struct kdbus_cmd_match *cmd = (void *)buf;
                struct kdbus_item *item = (void *)(buf + sizeof(*cmd));

                item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_notify_id_change);
                item->type = KDBUS_ITEM_ID_ADD;
                cmd->size = sizeof(*cmd) + item->size;
                /* a notification entry (test-notify.c) is no core rule */
                g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_MATCH_ADD, cmd, cmd->size), ==, 0);
                g_assert_cmpuint(n->b.nc->conn->n_matches, ==, 0);
        }
        peer_free(&c);
}

/* Random command structs (with a plausible size field, so they get past the first check)
 * for every command: nothing crashes (run under ASan/valgrind), every answer is 0, 1 or a
 * negative errno, and the connection keeps working. */
static void test_random_commands(NFixture *n, gconstpointer ctx) {
        static const uint64_t commands[] = {
                KDBUS_CMD_SEND, KDBUS_CMD_RECV, KDBUS_CMD_FREE, KDBUS_CMD_NAME_ACQUIRE,
                KDBUS_CMD_NAME_RELEASE, KDBUS_CMD_LIST, KDBUS_CMD_CONN_INFO, KDBUS_CMD_MATCH_ADD,
                KDBUS_CMD_MATCH_REMOVE, KDBUS_CMD_UPDATE, KDBUS_CMD_HELLO, 0,
        };
        uint64_t buf[128];
        const struct kdbus_msg *km;
        TestMsg t = CALL(":1.2", 9);
        unsigned i, j;

        peer_hello(&n->f, &n->a, KDBUS_HELLO_ACCEPT_FD);
        peer_hello(&n->f, &n->b, 0);
        for (i = 0; i < 20000; ++i) {
                uint64_t command = commands[g_test_rand_int_range(0, G_N_ELEMENTS(commands))];
                size_t size = 8 * (size_t)g_test_rand_int_range(1, G_N_ELEMENTS(buf) + 1);
                size_t reply_size;
                int *fds = NULL;
                unsigned n_fds = 0;
                int r;

                for (j = 0; j < G_N_ELEMENTS(buf); ++j)
                        buf[j] = g_test_rand_bit() ? (uint64_t)g_test_rand_int() :
                                 (uint64_t)g_test_rand_int_range(0, 64);
                buf[0] = g_test_rand_bit() ? size : buf[0];
                buf[1] &= g_test_rand_bit() ? 0 : ~(uint64_t)KDBUS_FLAG_NEGOTIATE;
                if (command == KDBUS_CMD_SEND && g_test_rand_bit())
                        buf[3] = 56;            /* msg_address right behind the struct */
                r = native_conn_command(n->a.nc, command, buf, size, NULL, 0, &reply_size,
                                        &fds, &n_fds);
                g_assert_cmpint(r, <=, 1);
                g_assert_cmpuint(reply_size, <=, size);
                for (j = 0; j < n_fds; ++j)
                        (void) close(fds[j]);
                free(fds);
                if (r == 1)
                        native_conn_sync_cancel(n->a.nc, NULL); /* no answer will come */
        }
        /* still a working connection */
        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, 9);
}

/* The opt-in rule: a receiver gets the metadata it asked for only as far as the sender
 * consented; legacy senders' CREDS/PIDS (which the driver gives anyone) are attached. */
static void test_metadata(NFixture *n, gconstpointer ctx) {
        const uint64_t want = KDBUS_ATTACH_TIMESTAMP | KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS;
        struct kdbus_cmd_info info = { .size = sizeof(info), .attach_flags = want };
        const struct kdbus_msg *km;
        const struct kdbus_item *item;
        BridgeConn *legacy;
        TestMsg t = CALL(":1.2", 3);
        TestPeer c;

        legacy = fixture_conn(&n->f, 5);                /* :1.1, uid 1005 */
        test_attach_recv = want;
        peer_hello(&n->f, &n->b, 0);                    /* :1.2 wants everything */
        test_attach_recv = 0;
        test_attach_send = KDBUS_ATTACH_TIMESTAMP;
        peer_hello(&n->f, &c, 0);                       /* :1.3 consents to nothing of its own */
        test_attach_send = _KDBUS_ATTACH_ALL;
        peer_hello(&n->f, &n->a, 0);                    /* :1.4 consents to all */
        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        n->f.bus->now_usec = 5000;

        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        /* kdbus_meta_export()'s order: CREDS, PIDS, ..., TIMESTAMP last */
        item = KDBUS_ITEM_NEXT(km->items);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_CREDS);
        g_assert_cmpuint(item->creds.uid, ==, 2000);
        g_assert_cmpuint(item->creds.euid, ==, 2000);
        g_assert_cmpuint(item->creds.gid, ==, 1000);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PIDS);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_TIMESTAMP);
        g_assert_cmpuint(item->timestamp.monotonic_ns, ==, 5000000);
        g_assert_cmpuint((uint8_t *)KDBUS_ITEM_NEXT(item) - (uint8_t *)km, ==, km->size);

        /* declined: what the sender refused, said so first; the timestamp */
        g_assert_cmpint(peer_send(&c, &t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                                                       .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        item = KDBUS_ITEM_NEXT(km->items);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_ATTACH_FLAGS_SEND);
        g_assert_cmpuint(item->data64[0], ==, KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_TIMESTAMP);
        g_assert_cmpuint((uint8_t *)KDBUS_ITEM_NEXT(item) - (uint8_t *)km, ==, km->size);

        /* a legacy sender */
        g_assert_cmpint(test_send(legacy, &(TestMsg){ .type = WIRE_MSG_METHOD_CALL, .serial = 4,
                        .destination = ":1.2", .member = "L", .flags = WIRE_FLAG_NO_REPLY_EXPECTED }),
                        ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        item = KDBUS_ITEM_NEXT(km->items);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_CREDS);
        g_assert_cmpuint(item->creds.uid, ==, 1005);

        /* a receiver that asked for nothing gets nothing */
        t.destination = ":1.3";
        g_assert_cmpint(peer_send(&n->a, &t, &(TestSend){ .dst_id = 3, .msg_flags = ~0ull,
                                                          .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(peer_recv(&c, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->size, ==, sizeof(*km) + KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec)));

        /* CONN_INFO: the same rule, without timestamp */
        info.id = 4;
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        g_assert_cmpuint(info.info_size, ==, sizeof(struct kdbus_info) +
                         KDBUS_ITEM_SIZE(sizeof(struct kdbus_creds)) +
                         KDBUS_ITEM_SIZE(sizeof(struct kdbus_pids)));
        g_assert_cmpuint(((const struct kdbus_info *)(n->b.pool + info.offset))->items[0].creds.uid,
                         ==, 2000);
        info.id = 3;
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_CONN_INFO, &info, sizeof(info)), ==, 0);
        g_assert_cmpuint(info.info_size, ==, sizeof(struct kdbus_info) +
                         KDBUS_ITEM_SIZE(sizeof(uint64_t)));
        item = ((const struct kdbus_info *)(n->b.pool + info.offset))->items;
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_ATTACH_FLAGS_SEND);
        g_assert_cmpuint(item->data64[0], ==, KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS);
        peer_free(&c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("message/basic", test_message_basic);
        ADD("message/bad-input", test_message_bad);
        ADD("message/examine", test_message_examine);
        ADD("message/items", test_message_items);
        ADD("message/pending-max", test_message_pending_max);
        ADD("message/sync-reply", test_message_sync);
        ADD("message/prio-peek-drop", test_message_prio_peek_drop);
        ADD("message/broadcast", test_broadcast);
        ADD("match/addressed-signal", test_match_addressed_signal);
        ADD("match/bloom-id-replace-remove", test_match_bloom);
        ADD("match/bus-signals", test_match_bus_signals);
        ADD("interop/legacy", test_legacy_interop);
        ADD("name/acquire-release-queue", test_names);
        ADD("info/list-conn-info", test_list_info);
        ADD("items/types-first", test_items_types_first);
        ADD("fd/passing", test_fds);
        ADD("memfd/sealing", test_memfd);
        ADD("bad-input/random-commands", test_random_commands);
        ADD("metadata/opt-in", test_metadata);
        return g_test_run();
}
