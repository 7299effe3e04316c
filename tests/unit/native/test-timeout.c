/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-message reply timeouts and CANCEL_FD, like kdbus's selftests test-timeout.c and
 * test-sync.c: kdbus_msg.timeout_ns is the call's absolute CLOCK_MONOTONIC deadline
 * (REPLY_TIMEOUT for an asynchronous caller, ETIMEDOUT for SYNC_REPLY, ETIMEDOUT at once
 * for a synchronous call already past it); the bus's reply timeout stays an upper bound
 * (all there is for a call with no deadline of its own, timeout_ns UINT64_MAX; 0 is
 * EINVAL, as in kdbus). A SYNC_REPLY with a CANCEL_FD item fails ECANCELED
 * when the core is told the fd became readable (the transport watches it), and the reply
 * slot goes with it.
 */
#include <sys/eventfd.h>
#include "bridge/reply.h"
#include "native-fixture.h"
#include "native/command.h"
#include "native/conn.h"

#define CALL(ser) { .type = WIRE_MSG_METHOD_CALL, .serial = (ser), .destination = ":1.2", \
                    .interface = "t.I", .member = "Call" }
#define BUS_TIMEOUT_USEC 10000000ull    /* the bus's reply timeout here: 10 s */
#define T0 1000000000ull                /* the bus's clock at the start, microseconds */

typedef struct TFixture {
        Fixture f;
        TestPeer a, b;
} TFixture;

static void tsetup(TFixture *t, gconstpointer ctx) {
        BusLimits l;

        bus_limits_init_session(&l);
        l.reply_timeout_usec = BUS_TIMEOUT_USEC;
        fixture_setup_limits(&t->f, &l);
        t->f.bus->now_usec = T0;
        peer_hello(&t->f, &t->a, 0);
        peer_hello(&t->f, &t->b, 0);
        g_assert_cmpuint(t->b.id, ==, 2);
}

static void tteardown(TFixture *t, gconstpointer ctx) {
        if (t->a.nc)
                peer_free(&t->a);
        if (t->b.nc)
                peer_free(&t->b);
        fixture_teardown(&t->f, ctx);
}

/*
 * SEND from a to b: a method call with serial @serial, @timeout_ns, @send_flags, and (if
 * @cancel_item) a CANCEL_FD item whose index is @cancel_idx and payload @cancel_size bytes
 * (twice if @twice); @fds go with the datagram.
 */
static int send_call(TFixture *t, uint32_t serial, uint64_t timeout_ns, uint64_t send_flags,
                     bool cancel_item, int cancel_idx, size_t cancel_size, bool twice,
                     const int *fds, unsigned n_fds) {
        TestMsg m = CALL(serial);
        TestSend s = { .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1,
                       .send_flags = send_flags };
        size_t payload_size, size, reply_size, extra = 0, total;
        uint8_t *payload = test_dbus1(&m, 0, &payload_size);
        uint8_t *plain = test_send_datagram(&m, &s, payload, payload_size, &size), *buf;
        struct kdbus_cmd_send *cmd;
        struct kdbus_msg *km;
        struct kdbus_item *item;
        int *rfds;
        unsigned n_rfds, i;
        int r;

        if (cancel_item)
                extra = KDBUS_ITEM_SIZE(cancel_size) * (twice ? 2 : 1);
        /* cmd | CANCEL_FD item(s) | msg | payload: every offset moves by @extra */
        total = size + extra;
        buf = g_malloc0(total);
        memcpy(buf, plain, sizeof(*cmd));
        memcpy(buf + sizeof(*cmd) + extra, plain + sizeof(*cmd), size - sizeof(*cmd));
        cmd = (void *)buf;
        cmd->size = sizeof(*cmd) + extra;
        cmd->msg_address += extra;
        item = cmd->items;
        for (i = 0; cancel_item && i < (twice ? 2u : 1u); ++i) {
                item->size = KDBUS_ITEM_HEADER_SIZE + cancel_size;
                item->type = KDBUS_ITEM_CANCEL_FD;
                item->fds[0] = cancel_idx;
                item = KDBUS_ITEM_NEXT(item);
        }
        km = (void *)(buf + cmd->msg_address);
        km->timeout_ns = timeout_ns;
        g_assert_cmpuint(km->items[0].type, ==, KDBUS_ITEM_PAYLOAD_VEC);
        km->items[0].vec.offset += extra;

        r = native_conn_command(t->a.nc, KDBUS_CMD_SEND, buf, total, fds, n_fds, &reply_size,
                                &rfds, &n_rfds);
        g_assert_cmpuint(n_rfds, ==, 0);
        g_free(buf);
        g_free(plain);
        free(payload);
        return r;
}

/* b received the call with @serial (and frees it). */
static void b_got(TFixture *t, uint32_t serial) {
        const struct kdbus_msg *km;

        g_assert_cmpint(peer_recv(&t->b, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->cookie, ==, serial);
        g_assert_cmpint(peer_free_offset(&t->b, (uint64_t)((const uint8_t *)km - t->b.pool)), ==, 0);
}

/* a's next message is the kernel's REPLY_TIMEOUT for @serial. */
static void a_timed_out(TFixture *t, uint32_t serial) {
        const struct kdbus_msg *km;

        g_assert_cmpint(peer_recv(&t->a, 0, 0, &km, NULL), ==, 0);
        g_assert_cmpuint(km->src_id, ==, KDBUS_SRC_ID_KERNEL);
        g_assert_cmpuint(km->items[0].type, ==, KDBUS_ITEM_REPLY_TIMEOUT);
        g_assert_cmpuint(km->cookie_reply, ==, serial);
        g_assert_cmpint(peer_free_offset(&t->a, (uint64_t)((const uint8_t *)km - t->a.pool)), ==, 0);
}

static void advance(TFixture *t, uint64_t usec) {
        t->f.bus->now_usec += usec;
        g_assert_cmpint(bus_dispatch_timeouts(t->f.bus), ==, 0);
}

/* Calls with their own deadlines expire in deadline order, whatever the order sent. */
static void test_async_deadlines(TFixture *t, gconstpointer ctx) {
        uint64_t next;

        /* 5: the bus's 10 s; 6: its own 3 s; 7: 1 ms + 1 ns (rounded up, never early);
         * 8: 20 s, later than the bus's: the bus's wins */
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, 0, false, 0, 0, false, NULL, 0), ==, 0);
        g_assert_cmpint(send_call(t, 6, (T0 + 3000000) * 1000, 0, false, 0, 0, false, NULL, 0),
                        ==, 0);
        g_assert_cmpint(send_call(t, 7, (T0 + 1000) * 1000 + 1, 0, false, 0, 0, false, NULL, 0),
                        ==, 0);
        g_assert_cmpint(send_call(t, 8, (T0 + 20000000) * 1000, 0, false, 0, 0, false, NULL, 0),
                        ==, 0);
        b_got(t, 5);
        b_got(t, 6);
        b_got(t, 7);
        b_got(t, 8);
        g_assert_true(bus_next_deadline(t->f.bus, &next));
        g_assert_cmpuint(next, ==, T0 + 1001);
        advance(t, 1000);
        g_assert_cmpint(peer_recv(&t->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        advance(t, 1);
        a_timed_out(t, 7);
        g_assert_cmpint(peer_recv(&t->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        advance(t, 3000000 - 1001);
        a_timed_out(t, 6);
        g_assert_true(bus_next_deadline(t->f.bus, &next));
        g_assert_cmpuint(next, ==, T0 + BUS_TIMEOUT_USEC);
        advance(t, BUS_TIMEOUT_USEC - 3000000);
        a_timed_out(t, 5);
        a_timed_out(t, 8);
        g_assert_false(bus_next_deadline(t->f.bus, &next));
}

/* A deadline already past: an asynchronous call is sent and times out at the next
 * expiry; a synchronous one fails ETIMEDOUT at once and is not sent (kdbus_conn_call). */
static void test_past_deadline(TFixture *t, gconstpointer ctx) {
        g_assert_cmpint(send_call(t, 5, T0 * 1000 - 1, 0, false, 0, 0, false, NULL, 0), ==, 0);
        b_got(t, 5);
        advance(t, 0);
        a_timed_out(t, 5);
        g_assert_cmpint(send_call(t, 6, T0 * 1000, KDBUS_SEND_SYNC_REPLY, false, 0, 0, false,
                                  NULL, 0), ==, -ETIMEDOUT);
        g_assert_cmpint(peer_recv(&t->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpuint(t->a.nc->n_sync, ==, 0);
        g_assert_null(bus_find_reply_of_caller(t->f.bus, t->a.nc->conn, 6));
}

/* SYNC_REPLY with its own deadline: ETIMEDOUT then, long before the bus's timeout. */
static void test_sync_deadline(TFixture *t, gconstpointer ctx) {
        g_assert_cmpint(send_call(t, 5, (T0 + 500) * 1000, KDBUS_SEND_SYNC_REPLY, false, 0, 0,
                                  false, NULL, 0), ==, 1);
        b_got(t, 5);
        advance(t, 499);
        g_assert_cmpint(t->a.sync_error, ==, 1);
        advance(t, 1);
        g_assert_cmpint(t->a.sync_error, ==, -ETIMEDOUT);
        g_assert_cmpint(peer_recv(&t->a, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* CANCEL_FD: ECANCELED; the slot is gone, so b's late answer is refused and a gets nothing. */
static void test_cancel(TFixture *t, gconstpointer ctx) {
        TestMsg answer = { .type = WIRE_MSG_METHOD_RETURN, .serial = 1, .reply_serial = 5,
                           .destination = ":1.1" };
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

        g_assert_cmpint(efd, >=, 0);
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, 0, sizeof(int), false,
                                  &efd, 1), ==, 1);
        /* the bus keeps its own copy while the call waits */
        g_assert_cmpuint(t->a.nc->n_sync, ==, 1);
        g_assert_cmpint(t->a.nc->sync[0].cancel_fd, >=, 0);
        g_assert_cmpint(t->a.nc->sync[0].cancel_fd, !=, efd);
        b_got(t, 5);
        native_conn_sync_cancel(t->a.nc, NULL);
        g_assert_cmpint(t->a.sync_error, ==, -ECANCELED);
        g_assert_cmpuint(t->a.nc->n_sync, ==, 0);
        g_assert_cmpuint(t->a.nc->n_sync, ==, 0);
        g_assert_cmpint(peer_send(&t->b, &answer, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1 }), ==, -EBADSLT);
        g_assert_cmpint(peer_recv(&t->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* nothing pending: a no-op */
        native_conn_sync_cancel(t->a.nc, NULL);
        /* the connection works on: a synchronous call answered normally */
        t->a.sync_error = 1;
        g_assert_cmpint(send_call(t, 6, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, 0, sizeof(int), false,
                                  &efd, 1), ==, 1);
        b_got(t, 6);
        answer.reply_serial = 6;
        answer.serial = 2;
        g_assert_cmpint(peer_send(&t->b, &answer, &(TestSend){ .dst_id = 1, .msg_flags = ~0ull,
                        .memfd_idx = -1 }), ==, 0);
        g_assert_cmpint(t->a.sync_error, ==, 0);
        g_assert_cmpuint(t->a.nc->n_sync, ==, 0);
        (void) close(efd);
}

/* CANCEL_FD's errors, as kdbus: EBADF, EINVAL; without SYNC_REPLY it is checked, unused. */
static void test_cancel_errors(TFixture *t, gconstpointer ctx) {
        int efd = eventfd(0, EFD_CLOEXEC), fds[2];
        g_autofree char *path = g_build_filename(g_get_tmp_dir(), "kdbus-cancel-XXXXXX", NULL);
        int file = g_mkstemp(path);

        g_assert_cmpint(efd, >=, 0);
        g_assert_cmpint(file, >=, 0);
        (void) unlink(path);
        fds[0] = efd;
        fds[1] = file;
        /* index outside the datagram's fds */
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, 2, sizeof(int), false,
                                  fds, 2), ==, -EBADF);
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, -1, sizeof(int), false,
                                  fds, 2), ==, -EBADF);
        /* a regular file: not pollable in kdbus's sense */
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, 1, sizeof(int), false,
                                  fds, 2), ==, -EINVAL);
        /* twice; a payload of two ints */
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, 0, sizeof(int), true,
                                  fds, 2), ==, -EINVAL);
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, KDBUS_SEND_SYNC_REPLY, true, 0, 2 * sizeof(int), false,
                                  fds, 2), ==, -EINVAL);
        /* nothing was sent by any of these */
        g_assert_cmpint(peer_recv(&t->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        /* an asynchronous call with a valid cancel fd: sent, the fd not kept */
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, 0, true, 0, sizeof(int), false, fds, 2), ==, 0);
        g_assert_cmpuint(t->a.nc->n_sync, ==, 0);
        b_got(t, 5);
        (void) close(efd);
        (void) close(file);
}

/* The bus's timeout 0 (never) and a call's own deadline: only the call's applies. */
static void test_bus_never(TFixture *t, gconstpointer ctx) {
        uint64_t next;

        t->f.bus->limits.reply_timeout_usec = 0;
        g_assert_cmpint(send_call(t, 5, TEST_DEADLINE_NEVER, 0, false, 0, 0, false, NULL, 0), ==, 0);
        g_assert_false(bus_next_deadline(t->f.bus, &next));
        g_assert_cmpint(send_call(t, 6, (T0 + 2000) * 1000, 0, false, 0, 0, false, NULL, 0), ==, 0);
        g_assert_true(bus_next_deadline(t->f.bus, &next));
        g_assert_cmpuint(next, ==, T0 + 2000);
        b_got(t, 5);
        b_got(t, 6);
        advance(t, 2000);
        a_timed_out(t, 6);
        advance(t, 1000000000);
        g_assert_cmpint(peer_recv(&t->a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_nonnull(bus_find_reply_of_caller(t->f.bus, t->a.nc->conn, 5));
}

/* kdbus_msg_examine(): a call expecting a reply must carry a deadline, EINVAL for 0,
 * asynchronous or SYNC_REPLY; nothing is sent and no reply slot is opened. */
static void test_zero_timeout(TFixture *t, gconstpointer ctx) {
        g_assert_cmpint(send_call(t, 5, 0, 0, false, 0, 0, false, NULL, 0), ==, -EINVAL);
        g_assert_cmpint(send_call(t, 6, 0, KDBUS_SEND_SYNC_REPLY, false, 0, 0, false, NULL, 0),
                        ==, -EINVAL);
        g_assert_cmpuint(t->a.nc->n_sync, ==, 0);
        g_assert_cmpint(peer_recv(&t->b, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_null(bus_find_reply_of_caller(t->f.bus, t->a.nc->conn, 5));
        g_assert_null(bus_find_reply_of_caller(t->f.bus, t->a.nc->conn, 6));
        /* the same call with a deadline goes through */
        g_assert_cmpint(send_call(t, 7, TEST_DEADLINE_NEVER, 0, false, 0, 0, false, NULL, 0),
                        ==, 0);
        b_got(t, 7);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/timeout/" path, TFixture, NULL, tsetup, fn, tteardown)
        ADD("async-deadlines-in-order", test_async_deadlines);
        ADD("past-deadline", test_past_deadline);
        ADD("sync-own-deadline", test_sync_deadline);
        ADD("bus-timeout-never", test_bus_never);
        ADD("zero-timeout-einval", test_zero_timeout);
        ADD("cancel-fd", test_cancel);
        ADD("cancel-fd-errors", test_cancel_errors);
        return g_test_run();
}
