/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PAYLOAD_MEMFD on the core (kdbus's memfd selftests, and what our bridge adds): a sealed
 * memfd is passed on as a reference, never copied, to native receivers; legacy receivers,
 * monitors, and match rules with arg keys get the bytes, read once
 * (bridge_msg_memfd_bytes_read counts every byte the bus reads from memfds), and only
 * they depend on the body being valid. test-socket-memfd.c does the same through kdbusd.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include "bridge/match.h"
#include "bridge/monitor.h"
#include "conn-fixture.h"
#include "native/command.h"
#include "native/conn.h"
#include "wire/endian.h"

/* One payload item of a SEND: bytes (a PAYLOAD_VEC), or a range of the datagram's fd
 * @fd_idx (a PAYLOAD_MEMFD). */
typedef struct Part {
        const uint8_t *bytes;
        size_t len;
        int fd_idx;                     /* -1: a vec */
        uint64_t start;
} Part;

#define VEC(b, l) ((Part){ .bytes = (b), .len = (l), .fd_idx = -1 })
#define MEMFD(i, s, l) ((Part){ .fd_idx = (i), .start = (s), .len = (l) })

/* SEND of @parts in order; kdbus fields from @hdr (the whole message's header). */
static int send_parts(TestPeer *p, uint64_t dst_id, const WireHeader *hdr, const Part *parts,
                      unsigned n, const int *fds, unsigned n_fds) {
        size_t msg_size = sizeof(struct kdbus_msg), total, at, reply_size;
        struct kdbus_cmd_send *cmd;
        struct kdbus_msg *km;
        struct kdbus_item *item;
        uint8_t *buf;
        int *rfds, r;
        unsigned i, n_rfds;

        for (i = 0; i < n; ++i)
                msg_size += KDBUS_ITEM_SIZE(parts[i].fd_idx < 0 ? sizeof(struct kdbus_vec) :
                                                                  sizeof(struct kdbus_memfd));
        total = sizeof(*cmd) + msg_size;
        for (i = 0; i < n; ++i)
                if (parts[i].fd_idx < 0)
                        total += ALIGN8(parts[i].len);
        buf = g_malloc0(total);
        cmd = (void *)buf;
        cmd->size = sizeof(*cmd);
        cmd->msg_address = sizeof(*cmd);
        km = (void *)(buf + sizeof(*cmd));
        km->size = msg_size;
        km->dst_id = dst_id;
        km->payload_type = KDBUS_PAYLOAD_DBUS;
        km->cookie = hdr->serial;
        if (hdr->type == WIRE_MSG_SIGNAL)
                km->flags = KDBUS_MSG_SIGNAL;
        else if (hdr->type == WIRE_MSG_METHOD_CALL && !(hdr->flags & WIRE_FLAG_NO_REPLY_EXPECTED))
                km->flags = KDBUS_MSG_EXPECT_REPLY;
        item = km->items;
        at = sizeof(*cmd) + msg_size;
        for (i = 0; i < n; ++i) {
                if (parts[i].fd_idx < 0) {
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
                        item->type = KDBUS_ITEM_PAYLOAD_VEC;
                        item->vec.offset = at;
                        item->vec.size = parts[i].len;
                        memcpy(buf + at, parts[i].bytes, parts[i].len);
                        at += ALIGN8(parts[i].len);
                } else {
                        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd);
                        item->type = KDBUS_ITEM_PAYLOAD_MEMFD;
                        item->memfd.fd = parts[i].fd_idx;
                        item->memfd.start = parts[i].start;
                        item->memfd.size = parts[i].len;
                }
                item = KDBUS_ITEM_NEXT(item);
        }
        r = native_conn_command(p->nc, KDBUS_CMD_SEND, buf, total, fds, n_fds, &reply_size,
                                &rfds, &n_rfds);
        g_assert_cmpuint(n_rfds, ==, 0);
        g_free(buf);
        return r;
}

/* A message with body "say": @arg0, then @n pattern bytes. */
static uint8_t *blob_msg(uint8_t type, uint32_t serial, const char *dest, const char *arg0,
                         size_t n, size_t *ret_size, WireHeader *ret_hdr) {
        WireMsgSpec spec = { .type = type, .serial = serial, .path = "/t", .interface = "t.I",
                             .member = "Blob", .destination = dest,
                             .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        uint8_t *data = NULL;
        WireWriter w;
        size_t i;

        wire_writer_init(&w);
        g_assert_cmpint(wire_writer_append_basic(&w, 's', arg0), ==, 0);
        g_assert_cmpint(wire_writer_open(&w, 'a', "y"), ==, 0);
        for (i = 0; i < n; ++i) {
                uint8_t y = (uint8_t)(i * 7 + 3);

                g_assert_cmpint(wire_writer_append_basic(&w, 'y', &y), ==, 0);
        }
        g_assert_cmpint(wire_writer_close(&w), ==, 0);
        g_assert_cmpint(wire_message_build(&spec, &w, &data, ret_size), ==, 0);
        wire_writer_deinit(&w);
        g_assert_cmpint(wire_message_parse(data, *ret_size, 0, 0, ret_hdr), ==, 0);
        return data;
}

/* A memfd holding @data, sealed with @seals. */
static int memfd_with(const uint8_t *data, size_t size, int seals) {
        int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, data, size), ==, (ssize_t)size);
        if (seals)
                g_assert_cmpint(fcntl(fd, F_ADD_SEALS, seals), ==, 0);
        return fd;
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

/* The dbus1 message @m as a legacy receiver has it, compared with @want (SENDER aside). */
static void assert_same_body(const BridgeMsg *m, const uint8_t *want, const WireHeader *wh) {
        WireHeader h;

        g_assert_nonnull(m->data);
        g_assert_cmpint(wire_message_parse(m->data, m->size, 0, 0, &h), ==, 0);
        g_assert_cmpuint(h.body_size, ==, wh->body_size);
        g_assert_cmpmem(m->data + h.body_offset, h.body_size, want + wh->body_offset,
                        wh->body_size);
}

/* native -> native: the receiver gets the header in its pool and the memfd itself; the
 * bus reads nothing. Also a vec after the memfd, which comes as its own PAYLOAD_OFF. */
static void test_native_unicast(NFixture *n, gconstpointer ctx) {
        const struct kdbus_msg *km;
        const struct kdbus_item *item;
        struct stat st_sent, st_got;
        uint64_t before = bridge_msg_memfd_bytes_read;
        WireHeader h, got;
        uint8_t *msg;
        size_t size;
        int fd;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        msg = blob_msg(WIRE_MSG_METHOD_CALL, 3, ":1.2", "hello", 10000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(fstat(fd, &st_sent), ==, 0);
        /* header and arg0 inline, the array but its last 8 bytes in the memfd, then a vec */
        g_assert_cmpint(send_parts(&n->a, 2, &h, (Part[]){ VEC(msg, h.body_offset + 12),
                        MEMFD(0, h.body_offset + 12, size - h.body_offset - 20),
                        VEC(msg + size - 8, 8) }, 3, &fd, 1), ==, 0);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read, ==, before);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        item = km->items;
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        /* the stamped header (SENDER added) and the 12 body bytes behind it */
        g_assert_cmpint(wire_message_parse((const uint8_t *)km + item->vec.offset,
                                           item->vec.size, 0, WIRE_PARSE_HEADER_ONLY, &got), ==, 0);
        g_assert_cmpstr(got.sender, ==, ":1.1");
        g_assert_cmpuint(item->vec.size, ==, got.body_offset + 12);
        g_assert_cmpuint(got.total_size, ==, got.body_offset + h.body_size);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_MEMFD);
        g_assert_cmpint(item->memfd.fd, ==, -1);        /* the fd comes with the RECV reply */
        g_assert_cmpuint(item->memfd.start, ==, h.body_offset + 12);
        g_assert_cmpuint(item->memfd.size, ==, size - h.body_offset - 20);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PAYLOAD_OFF);
        g_assert_cmpmem((const uint8_t *)km + item->vec.offset, item->vec.size, msg + size - 8, 8);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        g_assert_cmpint(fstat(n->b.fds[0], &st_got), ==, 0);
        g_assert_cmpuint(st_got.st_ino, ==, st_sent.st_ino);
        g_assert_cmpuint(st_got.st_dev, ==, st_sent.st_dev);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read, ==, before);
        (void) close(fd);
        free(msg);
}

/* native -> legacy: the bus reads the memfd once, into one dbus1 message; an invalid body
 * is EBADMSG for the sender (a native receiver would get it: the bus does not look) */
static void test_legacy_unicast(NFixture *n, gconstpointer ctx) {
        BridgeConn *legacy = fixture_conn(&n->f, 0);    /* :1.1 */
        uint64_t before = bridge_msg_memfd_bytes_read;
        WireHeader h;
        uint8_t *msg;
        size_t size;
        int fd;

        peer_hello(&n->f, &n->a, 0);                    /* :1.2 */
        peer_hello(&n->f, &n->b, 0);                    /* :1.3 */
        msg = blob_msg(WIRE_MSG_METHOD_CALL, 3, ":1.1", "hello", 5000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, 1, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &fd, 1), ==, 0);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read - before, ==, h.body_size);
        assert_same_body(bridge_conn_queue_peek(legacy), msg, &h);
        /* the legacy receiver finds its own name in DESTINATION, as the native sender wrote
         * it (one numbering, bridge/bus.h) */
        g_assert_cmpstr(bridge_conn_queue_peek(legacy)->hdr.destination, ==, legacy->unique_name);
        /* it counts whole in the legacy receiver's queue, and leaves no trace */
        g_assert_cmpuint(legacy->queued_bytes, >=, size);
        g_assert_cmpstr(test_pop(legacy, NULL), ==, "Blob");
        g_assert_cmpuint(legacy->queued_bytes, ==, 0);
        (void) close(fd);

        /* the array's length word claims more than the body holds */
        wire_store32(msg + h.body_offset + 12, h.big_endian, 6000);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, 1, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &fd, 1), ==, -EBADMSG);
        g_assert_null(bridge_conn_queue_peek(legacy));
        /* ... inline, the same body is refused at once */
        g_assert_cmpint(send_parts(&n->a, 1, &h, (Part[]){ VEC(msg, size) }, 1, NULL, 0), ==,
                        -EBADMSG);
        /* ... to a native receiver it passes, unread */
        (void) close(fd);
        free(msg);
        msg = blob_msg(WIRE_MSG_METHOD_CALL, 4, ":1.3", "hello", 5000, &size, &h);
        wire_store32(msg + h.body_offset + 12, h.big_endian, 6000);
        fd = memfd_with(msg, size, ALL_SEALS);
        before = bridge_msg_memfd_bytes_read;
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &fd, 1), ==, 0);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read, ==, before);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        (void) close(fd);
        free(msg);
}

/* Broadcasts may carry memfds (kdbus refuses only FDS there). Each native receiver gets the
 * memfd; the bus reads it once for the bloom filter and match rules' arg keys; legacy
 * receivers get the bytes, but not an invalid body. */
static void test_broadcast(NFixture *n, gconstpointer ctx) {
        BridgeMatchKeys keys = { .arg_kind[0] = BRIDGE_MATCH_ARG_STRING, .arg[0] = "hello" };
        BridgeMatchKeys all = { 0 };
        BridgeConn *legacy = fixture_conn(&n->f, 0);
        BridgeMatchRule *rule;
        const struct kdbus_msg *km;
        uint64_t before;
        WireHeader h;
        uint8_t *msg;
        size_t size;
        int fd;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        g_assert_cmpint(bridge_match_rule_new(&keys, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(legacy, rule), ==, 0);
        g_assert_cmpint(bridge_match_rule_new(&all, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(n->b.nc->conn, rule), ==, 0);

        msg = blob_msg(WIRE_MSG_SIGNAL, 3, NULL, "hello", 3000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        before = bridge_msg_memfd_bytes_read;
        g_assert_cmpint(send_parts(&n->a, KDBUS_DST_ID_BROADCAST, &h, (Part[]){
                        VEC(msg, h.body_offset), MEMFD(0, h.body_offset, h.body_size) }, 2,
                        &fd, 1), ==, 0);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read - before, ==, h.body_size);
        assert_same_body(bridge_conn_queue_peek(legacy), msg, &h);
        g_assert_cmpstr(test_pop(legacy, NULL), ==, "Blob");
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(KDBUS_ITEM_NEXT(km->items)->type, ==, KDBUS_ITEM_PAYLOAD_MEMFD);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        (void) close(fd);

        /* invalid: the native receiver matching everything gets it, the legacy one no */
        wire_store32(msg + h.body_offset + 12, h.big_endian, 4000);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, KDBUS_DST_ID_BROADCAST, &h, (Part[]){
                        VEC(msg, h.body_offset), MEMFD(0, h.body_offset, h.body_size) }, 2,
                        &fd, 1), ==, 0);
        g_assert_null(bridge_conn_queue_peek(legacy));
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        (void) close(fd);
        free(msg);
}

/*
 * max_message_size (4096 here) and memfds: a native receiver gets a larger message, its
 * memfd unread (kdbus did not limit memfds); a legacy receiver would need the bytes in the
 * bus: a unicast to it fails EMSGSIZE, a broadcast skips it (the bus reads nothing); inline
 * bytes over the limit are EMSGSIZE whoever receives them.
 */
static void test_too_large(NFixture *n, gconstpointer ctx) {
        BridgeMatchKeys all = { 0 };
        BridgeConn *legacy = fixture_conn(&n->f, 0);    /* :1.1 */
        uint64_t before = bridge_msg_memfd_bytes_read;
        BridgeMatchRule *rule;
        WireHeader h;
        uint8_t *msg;
        size_t size;
        int fd;

        n->f.bus->limits.max_message_size = 4096;
        peer_hello(&n->f, &n->a, 0);                    /* :1.2 */
        peer_hello(&n->f, &n->b, 0);                    /* :1.3 */
        msg = blob_msg(WIRE_MSG_METHOD_CALL, 3, ":1.3", "hello", 10000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &fd, 1), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        /* inline, the same message is refused */
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ VEC(msg, size) }, 1, NULL, 0), ==,
                        -EMSGSIZE);
        (void) close(fd);
        free(msg);

        msg = blob_msg(WIRE_MSG_METHOD_CALL, 4, ":1.1", "hello", 10000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, 1, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &fd, 1), ==, -EMSGSIZE);
        g_assert_null(bridge_conn_queue_peek(legacy));
        (void) close(fd);
        free(msg);

        g_assert_cmpint(bridge_match_rule_new(&all, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(legacy, rule), ==, 0);
        g_assert_cmpint(bridge_match_rule_new(&all, &rule), ==, 0);
        g_assert_cmpint(bridge_conn_add_match(n->b.nc->conn, rule), ==, 0);
        msg = blob_msg(WIRE_MSG_SIGNAL, 5, NULL, "hello", 10000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, KDBUS_DST_ID_BROADCAST, &h, (Part[]){
                        VEC(msg, h.body_offset), MEMFD(0, h.body_offset, h.body_size) }, 2,
                        &fd, 1), ==, 0);
        g_assert_null(bridge_conn_queue_peek(legacy));
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read, ==, before);
        (void) close(fd);
        free(msg);
}

/* A monitor needs the bytes of a native -> native message: read for it only. */
static void test_monitor(NFixture *n, gconstpointer ctx) {
        BridgeConn *mon = fixture_conn(&n->f, 0);
        uint64_t before = bridge_msg_memfd_bytes_read;
        WireHeader h;
        uint8_t *msg;
        size_t size;
        int fd;

        g_assert_cmpint(bridge_conn_become_monitor(mon, NULL, 0), ==, 0);
        peer_hello(&n->f, &n->a, 0);                    /* :1.2 */
        peer_hello(&n->f, &n->b, 0);                    /* :1.3 */
        msg = blob_msg(WIRE_MSG_METHOD_CALL, 3, ":1.3", "hello", 2000, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &fd, 1), ==, 0);
        g_assert_cmpuint(bridge_msg_memfd_bytes_read - before, ==, h.body_size);
        assert_same_body(bridge_conn_queue_peek(mon), msg, &h);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        (void) close(fd);
        free(msg);
}

/* What SEND refuses, with kdbus's errnos. */
static void test_refused(NFixture *n, gconstpointer ctx) {
        int fds[KDBUS_MSG_MAX_MEMFD_ITEMS + 1], p[2], unsealed, fd;
        BridgeConn *legacy;
        Part parts[KDBUS_MSG_MAX_MEMFD_ITEMS + 2];
        WireHeader h;
        uint8_t *msg;
        size_t size;
        unsigned i;

        peer_hello(&n->f, &n->a, 0);
        peer_hello(&n->f, &n->b, 0);
        msg = blob_msg(WIRE_MSG_METHOD_CALL, 3, ":1.2", "hello", 64, &size, &h);
        fd = memfd_with(msg, size, ALL_SEALS);
        /* any seal missing: ETXTBSY; not a memfd: EMEDIUMTYPE */
        unsealed = memfd_with(msg, size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
        g_assert_cmpint(send_parts(&n->a, 2, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, &unsealed, 1), ==, -ETXTBSY);
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(send_parts(&n->a, 2, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size) }, 2, p, 1), ==, -EMEDIUMTYPE);
        /* a range past the end: EFAULT (kdbus_get_memfd()); a bad index: EBADF */
        g_assert_cmpint(send_parts(&n->a, 2, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset + 1, h.body_size) }, 2, &fd, 1), ==, -EFAULT);
        g_assert_cmpint(send_parts(&n->a, 2, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(1, h.body_offset, h.body_size) }, 2, &fd, 1), ==, -EBADF);
        /* the header not whole before the first memfd; parts not adding up: no dbus1
         * message the bus can route, so an opaque payload (test-opaque.c): EBADMSG to a
         * legacy receiver, passed on to a native one */
        legacy = fixture_conn(&n->f, 0);                /* :1.3 */
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ VEC(msg, h.body_offset - 8),
                        MEMFD(0, h.body_offset - 8, h.body_size + 8) }, 2, &fd, 1), ==, -EBADMSG);
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ MEMFD(0, 0, size) }, 1, &fd, 1),
                        ==, -EBADMSG);
        g_assert_cmpint(send_parts(&n->a, 3, &h, (Part[]){ VEC(msg, h.body_offset),
                        MEMFD(0, h.body_offset, h.body_size - 1) }, 2, &fd, 1), ==, -EBADMSG);
        g_assert_null(bridge_conn_queue_peek(legacy));
        g_assert_cmpint(send_parts(&n->a, 2, &h, (Part[]){ MEMFD(0, 0, size) }, 1, &fd, 1),
                        ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 1);
        /* 17 memfd items: E2BIG (16 of them, one byte each, pass) */
        parts[0] = VEC(msg, h.body_offset + h.body_size - KDBUS_MSG_MAX_MEMFD_ITEMS);
        for (i = 0; i < KDBUS_MSG_MAX_MEMFD_ITEMS; ++i) {
                fds[i] = fd;
                parts[1 + i] = MEMFD((int)i, size - KDBUS_MSG_MAX_MEMFD_ITEMS + i, 1);
        }
        g_assert_cmpint(send_parts(&n->a, 2, &h, parts, 1 + KDBUS_MSG_MAX_MEMFD_ITEMS, fds,
                                   KDBUS_MSG_MAX_MEMFD_ITEMS), ==, 0);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, NULL, NULL), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, KDBUS_MSG_MAX_MEMFD_ITEMS);
        fds[KDBUS_MSG_MAX_MEMFD_ITEMS] = fd;
        parts[1 + KDBUS_MSG_MAX_MEMFD_ITEMS] = MEMFD(0, size - 1, 1);
        g_assert_cmpint(send_parts(&n->a, 2, &h, parts, 2 + KDBUS_MSG_MAX_MEMFD_ITEMS, fds,
                                   KDBUS_MSG_MAX_MEMFD_ITEMS + 1), ==, -E2BIG);
        /* an item of size 0 is malformed before it is counted (kdbus_item_validate()) */
        parts[1 + KDBUS_MSG_MAX_MEMFD_ITEMS] = MEMFD(0, size, 0);
        g_assert_cmpint(send_parts(&n->a, 2, &h, parts, 2 + KDBUS_MSG_MAX_MEMFD_ITEMS, fds,
                                   KDBUS_MSG_MAX_MEMFD_ITEMS + 1), ==, -EINVAL);
        (void) close(p[0]);
        (void) close(p[1]);
        (void) close(unsealed);
        (void) close(fd);
        free(msg);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/memfd/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("native-unicast", test_native_unicast);
        ADD("legacy-unicast", test_legacy_unicast);
        ADD("broadcast", test_broadcast);
        ADD("monitor", test_monitor);
        ADD("refused", test_refused);
        ADD("too-large", test_too_large);
        return g_test_run();
}
