/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kdbus's pool quota on the core (split from test-conn.c, same fixture): per (receiver,
 * sending user), for messages, for fds, and for broadcasts.
 */
#include <fcntl.h>
#include "conn-fixture.h"
#include "native/command.h"
#include "native/conn.h"

/* ---- pool ---- */

/* Send @t (serial @first, @first + 1, ...) from @p to id 2 until it fails; Return: how many
 * were accepted; *ret_error: the failure. */
static unsigned send_until_error(TestPeer *p, TestMsg *t, uint32_t first, unsigned limit,
                                 int *ret_error) {
        unsigned sent = 0;
        int r;

        for (;;) {
                g_assert_cmpuint(sent, <, limit);
                t->serial = first + sent;
                r = peer_send(p, t, &(TestSend){ .dst_id = 2, .msg_flags = ~0ull,
                                                 .memfd_idx = -1 });
                if (r) {
                        *ret_error = r;
                        return sent;
                }
                ++sent;
        }
}

/* RECV + FREE everything; the cookies must be @cookies in this order. */
static void recv_cookies(TestPeer *p, const uint64_t *cookies, unsigned n) {
        struct kdbus_cmd_recv rc;
        const struct kdbus_msg *km;
        unsigned got = 0;

        while (peer_recv(p, 0, 0, &km, &rc) == 0) {
                g_assert_cmpuint(got, <, n);
                g_assert_cmpuint(km->cookie, ==, cookies[got]);
                ++got;
                g_assert_cmpint(peer_free_offset(p, rc.msg.offset), ==, 0);
        }
        g_assert_cmpuint(got, ==, n);
}

/*
 * kdbus's pool quota, per (receiver, sending user) and checked when the bus accepts a
 * message: a user that filled its share of a receiver's pool gets ENOBUFS, nothing of it
 * waits in the core's queue, and another user's messages still get in, up to their own
 * share; everything accepted arrives, in order.
 */
static void test_pool_quota(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 1);
        uint64_t cookies[80];
        unsigned i, sent_a, sent_c, sent_a2;
        char big[2048];
        TestPeer c;
        int r;

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        t.args[0] = big;
        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_hello_full(&n->f, &n->a, 0, TEST_POOL_SIZE, 2000), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &n->b, 0, TEST_POOL_SIZE, 2001), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &c, 0, TEST_POOL_SIZE, 2002), ==, 0);

        /* uid 2000: a third of the free half of 64 KiB, about 10 messages of 2 KiB */
        sent_a = send_until_error(&n->a, &t, 1, 40, &r);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(sent_a, >, 1);
        g_assert_cmpuint(sent_a, <=, TEST_POOL_SIZE / 2 / 3 / sizeof(big) + 1);
        g_assert_cmpuint(n->b.nc->n_entries, ==, sent_a);
        g_assert_null(bridge_conn_queue_peek(n->b.nc->conn));  /* nothing held back */
        /* uid 2002 is not stopped by that: a third of what is left */
        sent_c = send_until_error(&c, &t, 1001, 40, &r);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(sent_c, >, 1);
        g_assert_cmpuint(n->b.nc->n_entries, ==, sent_a + sent_c);
        /* uid 2000 stays refused until the receiver made room */
        g_assert_cmpuint(send_until_error(&n->a, &t, 500, 40, &r), ==, 0);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(n->b.nc->pool->queued, <=, TEST_POOL_SIZE / 2);
        for (i = 0; i < sent_a; ++i)
                cookies[i] = 1 + i;
        for (i = 0; i < sent_c; ++i)
                cookies[sent_a + i] = 1001 + i;
        recv_cookies(&n->b, cookies, sent_a + sent_c);
        g_assert_cmpuint(n->b.nc->pool->used, ==, 32);  /* the bloom item from HELLO */
        sent_a2 = send_until_error(&n->a, &t, 2001, 40, &r);
        g_assert_cmpuint(sent_a2, ==, sent_a);
        for (i = 0; i < sent_a2; ++i)
                cookies[i] = 2001 + i;
        recv_cookies(&n->b, cookies, sent_a2);
        peer_free(&c);
}

/* 256 messages per sending user, then ENOBUFS; another user's still get in (kdbus). */
static void test_pool_quota_msgs(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 1);
        unsigned sent;
        TestPeer c;
        int r;

        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_hello_full(&n->f, &n->a, 0, TEST_POOL_SIZE, 2000), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &n->b, 0, 4u << 20, 2001), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &c, 0, TEST_POOL_SIZE, 2002), ==, 0);
        sent = send_until_error(&n->a, &t, 1, 300, &r);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(sent, ==, NATIVE_MAX_MSGS_PER_USER);
        sent = send_until_error(&c, &t, 1001, 300, &r);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(sent, ==, NATIVE_MAX_MSGS_PER_USER);
        g_assert_cmpuint(n->b.nc->n_entries, ==, 2 * NATIVE_MAX_MSGS_PER_USER);
        peer_free(&c);
}

/* 16 fds per sending user wait in one receiver at most (kdbus: EMFILE); per user. */
static void test_pool_quota_fds(NFixture *n, gconstpointer ctx) {
        TestMsg t = CALL(":1.2", 1);
        int idx[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, fds[8], p[2];
        TestSend s = { .dst_id = 2, .msg_flags = ~0ull, .memfd_idx = -1, .fd_idx = idx,
                       .n_fd_idx = 8 };
        struct kdbus_cmd_recv rc;
        const struct kdbus_msg *km;
        unsigned i;
        TestPeer c;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        for (i = 0; i < 8; ++i)
                fds[i] = p[0];
        t.flags = WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(peer_hello_full(&n->f, &n->a, 0, TEST_POOL_SIZE, 2000), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &n->b, KDBUS_HELLO_ACCEPT_FD, TEST_POOL_SIZE,
                                        2001), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &c, 0, TEST_POOL_SIZE, 2002), ==, 0);
        g_assert_cmpint(peer_send_fds(&n->a, &t, &s, fds, 8), ==, 0);
        t.serial = 2;
        g_assert_cmpint(peer_send_fds(&n->a, &t, &s, fds, 8), ==, 0);
        t.serial = 3;
        s.n_fd_idx = 1;
        g_assert_cmpint(peer_send_fds(&n->a, &t, &s, fds, 1), ==, -EMFILE);
        s.n_fd_idx = 8;
        g_assert_cmpint(peer_send_fds(&c, &t, &s, fds, 8), ==, 0);
        /* received: uid 2000's fds are free again */
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, &rc), ==, 0);
        g_assert_cmpuint(n->b.n_fds, ==, 8);
        t.serial = 4;
        g_assert_cmpint(peer_send_fds(&n->a, &t, &s, fds, 8), ==, 0);
        (void) close(p[0]);
        (void) close(p[1]);
        peer_free(&c);
}

/*
 * A broadcast never fails its sender: a receiver whose pool share for that user is used
 * up loses it and counts it in dropped_msgs (reported with the next RECV), while another
 * user's broadcast still reaches it.
 */
static void test_pool_quota_broadcast(NFixture *n, gconstpointer ctx) {
        TestMsg sig = { .type = WIRE_MSG_SIGNAL, .interface = "t.I", .member = "S" };
        TestSend s = { .dst_id = KDBUS_DST_ID_BROADCAST, .msg_flags = ~0ull, .memfd_idx = -1 };
        uint8_t buf[64] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_match *m = (void *)buf;
        struct kdbus_cmd_recv rc;
        const struct kdbus_msg *km;
        unsigned i, got = 0, from_c = 0;
        TestPeer c;

        g_assert_cmpint(peer_hello_full(&n->f, &n->a, 0, TEST_POOL_SIZE, 2000), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &n->b, 0, 4u << 20, 2001), ==, 0);
        g_assert_cmpint(peer_hello_full(&n->f, &c, 0, TEST_POOL_SIZE, 2002), ==, 0);
        m->size = sizeof(*m);
        m->cookie = 1;
        g_assert_cmpint(peer_cmd(&n->b, KDBUS_CMD_MATCH_ADD, m, m->size), ==, 0);
        for (i = 0; i < NATIVE_MAX_MSGS_PER_USER + 10; ++i) {
                sig.serial = 1 + i;
                g_assert_cmpint(peer_send(&n->a, &sig, &s), ==, 0);
        }
        sig.serial = 5000;
        g_assert_cmpint(peer_send(&c, &sig, &s), ==, 0);
        g_assert_null(bridge_conn_queue_peek(n->b.nc->conn));
        g_assert_cmpuint(n->b.nc->dropped_msgs, ==, 10);
        g_assert_cmpint(peer_recv(&n->b, 0, 0, &km, &rc), ==, 0);
        g_assert_true(rc.return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS);
        g_assert_cmpuint(rc.dropped_msgs, ==, 10);
        do {
                ++got;
                from_c += km->cookie == 5000;
                g_assert_cmpint(peer_free_offset(&n->b, rc.msg.offset), ==, 0);
        } while (peer_recv(&n->b, 0, 0, &km, &rc) == 0);
        g_assert_cmpuint(got, ==, NATIVE_MAX_MSGS_PER_USER + 1);
        g_assert_cmpuint(from_c, ==, 1);
        peer_free(&c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add("/native/" path, NFixture, NULL, nsetup, fn, nteardown)
        ADD("pool/quota-free", test_pool_quota);
        ADD("pool/quota-msgs", test_pool_quota_msgs);
        ADD("pool/quota-fds", test_pool_quota_fds);
        ADD("pool/quota-broadcast", test_pool_quota_broadcast);
        return g_test_run();
}
