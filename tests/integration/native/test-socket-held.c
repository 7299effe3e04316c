/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KDBUS_WIRE_BATCH_HOLD_RECV (our extension, include/kdbus/kdbus.h) through a real kdbusd:
 * the held reply comes when a message is queued (a native peer's call, a broadcast, a
 * notification, a legacy client's call) and not before, with the batch's FREEs done and
 * no eventfd write; when more than the one message came, the reply says so and the
 * eventfd is written; its cancel fd (ECANCELED, and a message that came later wakes the
 * eventfd); another command on the socket answers the held RECV first; the connection's
 * end (its endpoint's owner goes) is ECONNRESET; a SEND into a pool without room is
 * EXFULL at once, nothing waits (the hold is held); a SEND and a held RECV in one datagram
 * (KDBUS_WIRE_BATCH_THEN_RECV); kdbusd's reply timer (moved for earlier deadlines only); a
 * peer that closes while held is dropped at once; malformed holds are EINVAL with nothing
 * run and the peer goes on; a plain peer gets ENOTTY. KDBUS_WIRE_BATCH_ARM_RECV (the
 * command answered, then a held RECV with a reply of its own) and KDBUS_WIRE_ATTACH (a
 * further request channel of a connection).
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <time.h>
#include "kdbusd-fixture.h"

#define ADD(path, fn) g_test_add("/native/held/" path, KBus, NULL, kbus_setup, fn, kbus_teardown)

/* Send a KDBUS_WIRE_BATCH: FREE @offsets, then @command (RECV: a kdbus_cmd_recv with
 * @recv_flags) with batch @flags and @fds. */
static void send_batch(KdbusConn *c, uint64_t flags, uint64_t command, uint64_t recv_flags,
                       const uint64_t *offsets, unsigned n, const int *fds, unsigned n_fds) {
        uint8_t buf[512] __attribute__((aligned(8)));
        union {
                struct cmsghdr cmsg;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        struct iovec iov;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        size_t pos = kbatch_build(buf, flags, command, recv_flags, offsets, n);

        iov = (struct iovec){ buf, pos };
        if (n_fds) {
                memset(&control, 0, sizeof(control));
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                control.cmsg.cmsg_level = SOL_SOCKET;
                control.cmsg.cmsg_type = SCM_RIGHTS;
                control.cmsg.cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(&control.cmsg), fds, sizeof(int) * n_fds);
        }
        g_assert_cmpint(sendmsg(c->fd, &mh, MSG_NOSIGNAL), ==, (ssize_t)pos);
}

/* Is @fd readable within @ms? */
static bool readable(int fd, int ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, ms) == 1;
}

/* Read one batch reply (waiting at most 5 s): its error, batch part, RECV struct. */
static int read_reply(KdbusConn *c, struct kdbus_wire_batch_reply *pre,
                      struct kdbus_cmd_recv *out) {
        uint8_t buf[512] __attribute__((aligned(8)));
        struct kdbus_wire_reply hdr;
        ssize_t n;

        g_assert_true(readable(c->fd, 5000));
        n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        g_assert_cmpint(n, >=, (ssize_t)(sizeof(hdr) + sizeof(*pre)));
        memcpy(&hdr, buf, sizeof(hdr));
        g_assert_cmpuint(hdr.size, ==, (size_t)n - sizeof(hdr));
        memcpy(pre, buf + sizeof(hdr), sizeof(*pre));
        memset(out, 0, sizeof(*out));
        memcpy(out, buf + sizeof(hdr) + sizeof(*pre),
               MIN(sizeof(*out), (size_t)n - sizeof(hdr) - sizeof(*pre)));
        return (int)hdr.error;
}

static void post(KdbusConn *from, KdbusConn *to, uint32_t serial) {
        g_assert_cmpint(kcall(from, to->id, NULL, serial, true, "Post", "x", 0, NULL), ==, 0);
}

/* Nothing waits: no reply until a message comes; then the message, the batch's FREE done,
 * RECV_EMPTY, and the eventfd not written (the reply was the wakeup). A notification
 * answers a held RECV too. */
static void test_arrives(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;
        uint64_t o;

        post(s, a, 51);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        o = kdbus_conn_offset(a, m);
        kassert_empty(a);
        (void) kdbus_conn_wait(a, 0);   /* read the eventfd */
        g_assert_false(readable(a->wake_fd, 0));

        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, &o, 1, NULL, 0);
        g_assert_false(readable(a->fd, 200));
        post(s, a, 52);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpint(pre.free_error, ==, 0);
        g_assert_cmpuint(pre.n_freed, ==, 1);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==,
                         KDBUS_WIRE_RETURN_RECV_EMPTY);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(m->cookie, ==, 52);
        g_assert_false(readable(a->wake_fd, 0));

        /* a notification (ID_ADD of a new peer) answers it as well; libkdbus's call */
        g_assert_cmpint(kmatch_notify(a, 1, KDBUS_ITEM_ID_ADD, 0, KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_free_later(a, rcv.msg.offset), ==, 0);
        {
                KdbusConn *late = kpeer(b, 0);

                g_assert_cmpint(kdbus_conn_recv_held(a, 0, 0, -1, &m, NULL), ==, 0);
                g_assert_cmpuint(m->src_id, ==, KDBUS_SRC_ID_KERNEL);
                g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_ID_ADD);
                g_assert_cmpuint(m->items[0].id_change.id, ==, late->id);
                g_assert_cmpuint(a->n_free_later, ==, 0);
                kfree_msg(a, m);
                kdbus_conn_close(late);
        }
        /* something already waiting: answered at once */
        post(s, a, 53);
        g_assert_cmpint(kdbus_conn_recv_held(a, KDBUS_RECV_PEEK, 0, -1, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 53);
        g_assert_cmpint(kdbus_conn_recv_held(a, 0, 0, -1, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 53);
        kfree_msg(a, m);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* The cancel fd ends the hold with ECANCELED; a message after it writes the eventfd (no
 * hold any more) and is received normally. */
static void test_cancel(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;
        uint64_t one = 1;
        int efd = eventfd(0, EFD_CLOEXEC);

        g_assert_cmpint(efd, >=, 0);
        (void) kdbus_conn_wait(a, 0);
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, &efd, 1);
        g_assert_false(readable(a->fd, 200));
        g_assert_cmpint(write(efd, &one, sizeof(one)), ==, sizeof(one));
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -ECANCELED);
        g_assert_cmpint(pre.free_error, ==, 0);
        post(s, a, 61);
        g_assert_true(readable(a->wake_fd, 5000));
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 61);
        kfree_msg(a, m);
        (void) close(efd);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* Another command on the socket while a RECV is held (another thread's): the held RECV
 * is answered first (EAGAIN: nothing came), then the command; the hold is over. */
static void test_second_command(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;

        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_false(readable(a->fd, 100));
        send_batch(a, 0, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -EAGAIN);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -EAGAIN);
        g_assert_false(readable(a->fd, 100));
        /* no hold left: the next message writes the eventfd */
        (void) kdbus_conn_wait(a, 0);
        post(s, a, 71);
        g_assert_true(readable(a->wake_fd, 5000));
        g_assert_false(readable(a->fd, 0));
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 71);
        kfree_msg(a, m);
        /* BYEBYE from the other thread: the held RECV first, then BYEBYE succeeds */
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_cmpint(kdbus_conn_byebye(a), ==, -EAGAIN);     /* the held RECV's reply */
        {
                uint8_t buf[64];
                struct kdbus_wire_reply hdr;

                g_assert_true(readable(a->fd, 5000));
                g_assert_cmpint(recv(a->fd, buf, sizeof(buf), 0), >=, (ssize_t)sizeof(hdr));
                memcpy(&hdr, buf, sizeof(hdr));
                g_assert_cmpint(hdr.error, ==, 0);              /* BYEBYE's */
        }
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* A peer that closes its socket while its RECV is held is gone at once (ID_REMOVE). */
static void test_peer_closes(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        const struct kdbus_item *item;
        uint64_t id = a->id;

        g_assert_cmpint(kmatch_notify(s, 1, KDBUS_ITEM_ID_REMOVE, 0, KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_false(readable(a->fd, 100));
        kdbus_conn_close(a);
        item = krecv_notify(s, KDBUS_ITEM_ID_REMOVE);
        g_assert_cmpuint(item->id_change.id, ==, id);
        kfree_item_msg(s, item);
        g_assert_cmpint(kcall(s, id, NULL, 3, true, "Post", "x", 0, NULL), ==, -ENXIO);
        kdbus_conn_close(s);
}

/* A broadcast the peer matches answers its held RECV. */
static void test_broadcast(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;

        g_assert_cmpint(kdbus_conn_name_acquire(s, "org.kdbus.HeldSignals", 0, NULL), ==, 0);
        g_assert_cmpint(kmatch_sender_name(a, 1, "org.kdbus.HeldSignals"), ==, 0);
        kdrop_all(a);
        (void) kdbus_conn_wait(a, 0);
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_false(readable(a->fd, 200));
        g_assert_cmpint(ksignal(s, 91, "Tick", (const char *[]){ "x", NULL }), ==, 0);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(m->src_id, ==, s->id);
        g_assert_cmpuint(m->dst_id, ==, KDBUS_DST_ID_BROADCAST);
        g_assert_cmpuint(m->cookie, ==, 91);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==,
                         KDBUS_WIRE_RETURN_RECV_EMPTY);
        g_assert_false(readable(a->wake_fd, 0));
        kfree_msg(a, m);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* One event queues two messages (a name owner's exit: NAME_REMOVE, ID_REMOVE): the held
 * RECV gets the first, its reply says more wait (no RECV_EMPTY) and the eventfd is written,
 * as the hold took the only wakeup of an empty queue. */
static void test_more_waiting(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;
        uint64_t id = s->id;

        g_assert_cmpint(kdbus_conn_name_acquire(s, "org.kdbus.HeldMore", 0, NULL), ==, 0);
        g_assert_cmpint(kmatch_notify(a, 1, KDBUS_ITEM_NAME_REMOVE, KDBUS_MATCH_ID_ANY,
                                      KDBUS_MATCH_ID_ANY, NULL), ==, 0);
        g_assert_cmpint(kmatch_notify(a, 2, KDBUS_ITEM_ID_REMOVE, 0, KDBUS_MATCH_ID_ANY, NULL),
                        ==, 0);
        kdrop_all(a);
        (void) kdbus_conn_wait(a, 0);
        g_assert_false(readable(a->wake_fd, 0));
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_false(readable(a->fd, 200));
        kdbus_conn_close(s);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_NAME_REMOVE);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==, 0);
        g_assert_true(readable(a->wake_fd, 0));
        kfree_msg(a, m);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_ID_REMOVE);
        g_assert_cmpuint(m->items[0].id_change.id, ==, id);
        kfree_msg(a, m);
        kdbus_conn_close(a);
}

typedef struct HeldThread {
        KdbusConn *c;
        int r;
} HeldThread;

static gpointer held_thread(gpointer data) {
        HeldThread *t = data;
        const struct kdbus_msg *m;

        t->r = kdbus_conn_recv_held(t->c, 0, 0, -1, &m, NULL);
        return NULL;
}

/* The connection ends while its RECV is held: a peer through a custom endpoint whose
 * owner handle goes (the bus ends the endpoint's connections and closes their sockets):
 * the held RECV fails ECONNRESET. */
static void test_conn_ends(KBus *b, gconstpointer ctx) {
        uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd *cmd = (void *)buf;
        g_autofree char *name = g_strdup_printf("%u-held", (unsigned)getuid());
        g_autofree char *path = g_build_filename(b->dir, name, NULL);
        KdbusConn *owner = kopen(b), *a = NULL;
        HeldThread t = { .r = 1 };
        GThread *th;

        cmd->items[0].type = KDBUS_ITEM_MAKE_NAME;
        cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + strlen(name) + 1;
        strcpy(cmd->items[0].str, name);
        cmd->size = sizeof(*cmd) + KDBUS_ALIGN8(cmd->items[0].size);
        g_assert_cmpint(kdbus_conn_command(owner, KDBUS_CMD_ENDPOINT_MAKE, cmd, cmd->size,
                                           NULL, 0), ==, 0);
        g_assert_cmpint(kdbus_conn_open(path, &a), ==, 0);
        g_assert_cmpint(kdbus_conn_hello(a, KDBUS_HELLO_WIRE_BATCH, KPOOL), ==, 0);
        t.c = a;
        th = g_thread_new("held", held_thread, &t);
        g_usleep(200000);
        g_assert_cmpint(g_atomic_int_get(&t.r), ==, 1);        /* still held */
        kdbus_conn_close(owner);
        g_thread_join(th);
        g_assert_cmpint(t.r, ==, -ECONNRESET);
        kdbus_conn_close(a);
}

/* kdbus had no queue in front of the pool: with the peer keeping its slices, a SEND that
 * finds no room fails EXFULL at once and nothing waits, so a held RECV is held; the
 * peer's FREE (in the hold's batch) makes room, and the same SEND then answers the hold. */
static void test_pool_full(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer_pool(b, KDBUS_HELLO_WIRE_BATCH, 4096), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;
        uint64_t first = UINT64_MAX;
        unsigned i;
        int r = 0;

        kdrop_all(a);
        for (i = 0; i < 100; ++i) {
                r = kcall(s, a->id, NULL, 100 + i, true, "Post", "x", 0, NULL);
                if (r)
                        break;
                g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
                if (first == UINT64_MAX)
                        first = kdbus_conn_offset(a, m);
        }
        g_assert_cmpint(r, ==, -EXFULL);        /* no room: refused, nothing waits */
        g_assert_cmpuint(i, >, 0);
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, &first, 1, NULL, 0);
        g_assert_false(readable(a->fd, 200));
        post(s, a, 100 + i);
        g_assert_true(readable(a->fd, 2000));
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpuint(pre.n_freed, ==, 1);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(m->cookie, ==, 100 + i);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* The longest time until a timerfd of process @pid fires (0: none armed), in ms, from
 * /proc/PID/fdinfo (it_value). */
static uint64_t timer_armed_ms(GPid pid) {
        g_autofree char *dir = g_strdup_printf("/proc/%d/fd", (int)pid);
        GDir *d = g_dir_open(dir, 0, NULL);
        const char *e;
        uint64_t max = 0;

        g_assert_nonnull(d);
        while ((e = g_dir_read_name(d))) {
                g_autofree char *link = g_build_filename(dir, e, NULL);
                g_autofree char *target = g_file_read_link(link, NULL);
                g_autofree char *info = g_strdup_printf("/proc/%d/fdinfo/%s", (int)pid, e);
                g_autofree char *text = NULL;
                unsigned long long sec, nsec;
                const char *v;

                if (!target || strcmp(target, "anon_inode:[timerfd]") ||
                    !g_file_get_contents(info, &text, NULL, NULL))
                        continue;
                v = strstr(text, "it_value: (");
                g_assert_nonnull(v);
                g_assert_cmpint(sscanf(v, "it_value: (%llu, %llu)", &sec, &nsec), ==, 2);
                max = MAX(max, (uint64_t)sec * 1000 + nsec / 1000000);
        }
        g_dir_close(d);
        return max;
}

static uint64_t now_ns(void) {
        struct timespec ts;

        g_assert_cmpint(clock_gettime(CLOCK_MONOTONIC, &ts), ==, 0);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A command round trip: kdbusd's loop has gone round since the last reply @c got (the loop
 * programs its timerfd when it prepares the next wakeup, after the callback that sent it). */
static void bus_turn(KdbusConn *c) {
        g_assert_cmpint(kdbus_conn_recv(c, 0, 0, NULL, NULL), ==, -EAGAIN);
}

/* kdbusd's reply-timeout timer (proxy/server.c) moves only for an earlier deadline: a call
 * with libkdbus's 25 s deadline arms it, its answer leaves it armed (it fires early later,
 * finds nothing due: no timerfd_settime() per call), an unanswered call with a 300 ms
 * deadline moves it, and its REPLY_TIMEOUT (received with a held RECV) comes on time. */
static void test_reply_timer(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        KdbusSend snd = { .dst_id = s->id, .memfd = -1 };
        const struct kdbus_msg *m;
        WireHeader hdr;
        uint8_t *data;
        size_t size;
        uint64_t t0;

        g_assert_cmpuint(timer_armed_ms(b->pid), ==, 0);
        g_assert_cmpint(kcall(a, s->id, NULL, 5, false, "Ping", "x", 0, NULL), ==, 0);
        bus_turn(a);
        g_assert_cmpuint(timer_armed_ms(b->pid), >, 20000);
        g_assert_cmpuint(timer_armed_ms(b->pid), <=, 25000);
        m = krecv(s, &hdr, NULL);
        g_assert_cmpint(kreply(s, a->id, 6, (uint32_t)m->cookie, "y"), ==, 0);
        kfree_msg(s, m);
        g_assert_cmpint(kdbus_conn_recv_held(a, 0, 0, -1, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie_reply, ==, 5);
        kfree_msg(a, m);
        bus_turn(a);
        g_assert_cmpuint(timer_armed_ms(b->pid), >, 20000);     /* not disarmed */

        data = kbuild(WIRE_MSG_METHOD_CALL, 7, 0, kunique(s->id), "Ping", NULL, &size);
        g_assert_cmpint(kdbus_send_from_dbus1(&snd, data, size), ==, 0);
        t0 = now_ns();
        snd.timeout_ns = t0 + 300000000u;
        g_assert_cmpint(kdbus_conn_send(a, &snd, data, size, NULL), ==, 0);
        free(data);
        bus_turn(a);
        g_assert_cmpuint(timer_armed_ms(b->pid), <=, 300);
        g_assert_cmpint(kdbus_conn_recv_held(a, 0, 0, -1, &m, NULL), ==, 0);
        g_test_message("REPLY_TIMEOUT after %.1f ms (deadline 300 ms)", (now_ns() - t0) / 1e6);
        g_assert_cmpuint(now_ns() - t0, >=, 300000000u);
        g_assert_cmpuint(now_ns() - t0, <, 5000000000u);
        g_assert_cmpuint(m->src_id, ==, KDBUS_SRC_ID_KERNEL);
        g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_REPLY_TIMEOUT);
        g_assert_cmpuint(m->cookie_reply, ==, 7);
        kfree_msg(a, m);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

typedef struct SendRecvThread {
        KdbusConn *c;
        const KdbusSend *s;
        const uint8_t *data;
        size_t size;
        const struct kdbus_msg *m;
        bool sent;
        int r;
} SendRecvThread;

static gpointer send_recv_thread(gpointer data) {
        SendRecvThread *t = data;
        int r;

        r = kdbus_conn_send_recv_held(t->c, t->s, t->data, t->size, &t->m, &t->sent);
        g_atomic_int_set(&t->r, r);
        return NULL;
}

/* KDBUS_WIRE_BATCH_THEN_RECV: a reply and the wait for the next call in one datagram. The
 * SEND is done at once (its receiver has it while the RECV is held, the batch's FREE done
 * with it); the next message answers the RECV (KDBUS_WIRE_RETURN_RECV); a SEND that fails
 * is answered with its own errno at once, nothing held. */
static void test_send_then_recv(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        SendRecvThread t = { .c = a, .r = 1 };
        KdbusSend snd = { .dst_id = s->id, .memfd = -1 };
        const struct kdbus_msg *m;
        WireHeader hdr;
        uint8_t *data;
        size_t size;
        GThread *th;

        post(s, a, 31);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_free_later(a, kdbus_conn_offset(a, m)), ==, 0);
        data = kbuild(WIRE_MSG_METHOD_CALL, 32, 0, kunique(s->id), "Answer", NULL, &size);
        data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(kdbus_send_from_dbus1(&snd, data, size), ==, 0);
        t.s = &snd;
        t.data = data;
        t.size = size;
        th = g_thread_new("send-recv", send_recv_thread, &t);
        m = krecv(s, &hdr, NULL);               /* the SEND was done */
        g_assert_cmpuint(m->cookie, ==, 32);
        kfree_msg(s, m);
        g_usleep(100000);
        g_assert_cmpint(g_atomic_int_get(&t.r), ==, 1);        /* its RECV still held */
        post(s, a, 33);
        g_thread_join(th);
        g_assert_cmpint(t.r, ==, 0);
        g_assert_true(t.sent);
        g_assert_cmpuint(t.m->cookie, ==, 33);
        g_assert_cmpuint(a->wire_return_flags, ==,
                         KDBUS_WIRE_RETURN_RECV | KDBUS_WIRE_RETURN_RECV_EMPTY);
        g_assert_cmpuint(a->n_free_later, ==, 0);
        g_assert_cmpint(kdbus_conn_free_later(a, kdbus_conn_offset(a, t.m)), ==, 0);

        /* the SEND fails (no such peer): its errno, at once, nothing held */
        free(data);
        data = kbuild(WIRE_MSG_METHOD_CALL, 34, 0, kunique(s->id + 1000), "Answer", NULL, &size);
        data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
        snd = (KdbusSend){ .dst_id = s->id + 1000, .memfd = -1 };
        g_assert_cmpint(kdbus_send_from_dbus1(&snd, data, size), ==, 0);
        t = (SendRecvThread){ .sent = true };
        g_assert_cmpint(kdbus_conn_send_recv_held(a, &snd, data, size, &t.m, &t.sent), ==,
                        -ENXIO);
        g_assert_false(t.sent);
        g_assert_cmpuint(a->wire_return_flags & KDBUS_WIRE_RETURN_RECV, ==, 0);
        g_assert_cmpuint(a->n_free_later, ==, 0);        /* its FREE was done all the same */
        g_assert_false(readable(a->fd, 100));
        /* a plain peer: ENOTTY */
        {
                KdbusConn *plain = kpeer(b, 0);

                g_assert_cmpint(kdbus_conn_send_recv_held(plain, &snd, data, size, &m, &t.sent),
                                ==, -ENOTTY);
                kdbus_conn_close(plain);
        }
        free(data);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* A call from @from to @to with kdbus priority @prio, cookie @serial. */
static void post_prio(KdbusConn *from, KdbusConn *to, uint32_t serial, int64_t prio) {
        size_t size;
        uint8_t *data = kbuild(WIRE_MSG_METHOD_CALL, serial, 0, kunique(to->id), "Post", NULL,
                               &size);

        data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
        g_assert_cmpint(ksend_dbus1(from, to->id, NULL, 0, prio, data, size, NULL), ==, 0);
        free(data);
}

/* A held RECV with USE_PRIORITY (threshold 0) waits while only messages below its threshold
 * (values over 0) come, and takes the first at or above it; the others stay, FIFO for a
 * plain RECV, and the eventfd is written for them when the hold ends. */
static void test_priority(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;

        post_prio(s, a, 61, 5);
        (void) kdbus_conn_wait(a, 1000);        /* read the eventfd */
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, KDBUS_RECV_USE_PRIORITY, NULL,
                   0, NULL, 0);
        g_assert_false(readable(a->fd, 200));
        post_prio(s, a, 62, 3);
        g_assert_false(readable(a->fd, 200));
        g_assert_false(readable(a->wake_fd, 0));
        post_prio(s, a, 63, -1);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==, 0);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(m->cookie, ==, 63);
        g_assert_cmpint(m->priority, ==, -1);
        kfree_msg(a, m);
        g_assert_true(readable(a->wake_fd, 0));
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 61);
        kfree_msg(a, m);
        /* with only one below the threshold: held until the cancel-free end, here a message
         * at the threshold itself */
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, KDBUS_RECV_USE_PRIORITY, NULL,
                   0, NULL, 0);
        g_assert_false(readable(a->fd, 200));
        post_prio(s, a, 64, 0);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(m->cookie, ==, 64);
        kfree_msg(a, m);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 62);
        kfree_msg(a, m);
        kassert_empty(a);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* A legacy client's call answers a native peer's held RECV (answered from server_flush(),
 * in the loop turn of the legacy client's read). */
static void test_legacy_sender(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH);
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", b->legacy);
        const char *argv[] = { "dbus-send", bus_arg, "--dest=org.kdbus.HeldLegacy",
                               "/org/example", "org.example.Test.Ping", "string:legacy",
                               NULL };
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;
        const uint8_t *data;
        WireHeader hdr;
        size_t size;
        int status;

        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.kdbus.HeldLegacy", 0, NULL), ==, 0);
        kdrop_all(a);
        (void) kdbus_conn_wait(a, 0);
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_false(readable(a->fd, 100));
        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   NULL, NULL, &status, NULL));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        m = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpint(kdbus_msg_payload(m, &data, &size), ==, 0);
        g_assert_cmpint(wire_message_parse(data, size, 0, 0, &hdr), ==, 0);
        g_assert_cmpstr(hdr.member, ==, "Ping");
        g_assert_false(readable(a->wake_fd, 0));
        kfree_msg(a, m);
        kdbus_conn_close(a);
}

/* Malformed holds: EINVAL in both fields, nothing run (the FREE neither), the peer goes
 * on; a plain peer (no HELLO flag) gets ENOTTY. */
static void test_malformed(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0),
                  *plain = kpeer(b, 0);
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *m;
        int fds[2] = { eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC) };
        uint64_t o;

        post(s, a, 81);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        o = kdbus_conn_offset(a, m);
#define EXPECT_EINVAL(flags, command, nfd) do {                                          \
                send_batch(a, flags, command, 0, &o, 1, fds, nfd);                       \
                g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -EINVAL);                 \
                g_assert_cmpint(pre.free_error, ==, -EINVAL);                            \
                g_assert_cmpuint(pre.n_freed, ==, 0);                                    \
        } while (0)
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_FREE, 0);   /* not RECV */
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_SEND, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 2);   /* two fds */
        EXPECT_EINVAL(1ULL << 5, KDBUS_CMD_RECV, 0);                     /* unknown flag */
        /* ARM_RECV: alone, not after a RECV */
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_ARM_RECV, KDBUS_CMD_RECV, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_ARM_RECV | KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_ARM_RECV | KDBUS_WIRE_BATCH_THEN_RECV, KDBUS_CMD_SEND, 0);
        /* RECV_JOIN: with ARM_RECV, or a RECV alone */
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_RECV_JOIN, KDBUS_CMD_FREE, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_RECV_JOIN, KDBUS_CMD_SEND, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_RECV_JOIN | KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0);
        /* THEN_RECV: only with HOLD_RECV, only after a SEND, not a SYNC_REPLY one (the
         * struct's flags sit where kdbus_cmd_send has them) */
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_THEN_RECV, KDBUS_CMD_SEND, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_THEN_RECV | KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 0);
        send_batch(a, KDBUS_WIRE_BATCH_THEN_RECV | KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_SEND,
                   KDBUS_SEND_SYNC_REPLY, &o, 1, NULL, 0);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -EINVAL);
        g_assert_cmpint(pre.free_error, ==, -EINVAL);
        g_assert_cmpuint(pre.n_freed, ==, 0);
        /* nor after a SYNC_REPLY */
        send_batch(a, KDBUS_WIRE_BATCH_ARM_RECV, KDBUS_CMD_SEND, KDBUS_SEND_SYNC_REPLY, &o, 1,
                   NULL, 0);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -EINVAL);
        g_assert_cmpint(pre.free_error, ==, -EINVAL);
        /* a cancel fd epoll refuses (a directory: kdbus's "no poll method"), found before
         * the FREE runs */
        (void) close(fds[0]);
        fds[0] = open(b->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fds[0], >=, 0);
        EXPECT_EINVAL(KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 1);
#undef EXPECT_EINVAL
        /* RECV's own EINVAL (a flag it does not know) is answered at once, not held */
        send_batch(a, KDBUS_WIRE_BATCH_HOLD_RECV, KDBUS_CMD_RECV, 1ULL << 40, NULL, 0, NULL, 0);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -EINVAL);
        /* the slice is still there: none of the FREEs ran; the peer goes on */
        g_assert_cmpint(kdbus_conn_free(a, o), ==, 0);
        post(s, a, 82);
        g_assert_cmpint(kdbus_conn_recv_held(a, 0, 0, -1, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 82);
        kfree_msg(a, m);

        g_assert_cmpint(kdbus_conn_recv_held(plain, 0, 0, -1, &m, NULL), ==, -ENOTTY);
        g_assert_cmpint(kdbus_conn_recv(plain, 0, 0, NULL, NULL), ==, -EAGAIN);
        (void) close(fds[0]);
        (void) close(fds[1]);
        kdbus_conn_close(plain);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* One request datagram of @n bytes at @req with @fd (-1: none) on @sock; its reply read
 * into @out (up to @size bytes after the header), its fds into @ret_fds. Return: error. */
static int raw_call(int sock, const void *req, size_t n, int fd, void *out, size_t size,
                    int *ret_fds, unsigned max_fds) {
        union {
                struct cmsghdr cmsg;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        uint8_t buf[1024] __attribute__((aligned(8)));
        struct iovec iov = { (void *)req, n };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct kdbus_wire_reply hdr;
        struct cmsghdr *cm;
        ssize_t r;

        if (fd >= 0) {
                memset(&control, 0, sizeof(control));
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int));
                control.cmsg.cmsg_level = SOL_SOCKET;
                control.cmsg.cmsg_type = SCM_RIGHTS;
                control.cmsg.cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(&control.cmsg), &fd, sizeof(int));
        }
        g_assert_cmpint(sendmsg(sock, &mh, MSG_NOSIGNAL), ==, (ssize_t)n);
        g_assert_true(readable(sock, 5000));
        iov = (struct iovec){ buf, sizeof(buf) };
        mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                              .msg_controllen = sizeof(control) };
        r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (r == 0)
                return -ECONNRESET;
        g_assert_cmpint(r, >=, (ssize_t)sizeof(hdr));
        memcpy(&hdr, buf, sizeof(hdr));
        if (out)
                memcpy(out, buf + sizeof(hdr), MIN(size, (size_t)r - sizeof(hdr)));
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                for (unsigned i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int x;

                        memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (ret_fds && i < max_fds)
                                ret_fds[i] = x;
                        else
                                (void) close(x);
                }
        return (int)hdr.error;
}

static int raw_socket(KBus *b) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        g_assert_cmpint(s, >=, 0);
        g_strlcpy(sa.sun_path, b->native, sizeof(sa.sun_path));
        g_assert_cmpint(connect(s, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        return s;
}

/* A command struct of kdbus's fixed part (@size bytes, zeros but its size) behind its
 * request header, with @extra 8-byte words set after the size. */
typedef struct RawCmd {
        struct kdbus_wire_request req;
        uint64_t w[16];
} RawCmd;

static size_t raw_cmd(RawCmd *m, uint64_t command, size_t size) {
        memset(m, 0, sizeof(*m));
        m->req.command = command;
        m->req.size = size;
        m->w[0] = size;
        return sizeof(m->req) + size;
}

/*
 * KDBUS_WIRE_BATCH_ARM_RECV: the command answered at once (here a FREE), then a held RECV
 * whose answer is a second datagram (RETURN_RECV) when a message comes; no eventfd write.
 */
static void test_arm(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        /* outer request, batch (no FREEs), inner request, kdbus_cmd_free: in words, the
         * structs end in flexible arrays */
        uint64_t m[10] = { KDBUS_WIRE_BATCH, 8 * 8, 0, KDBUS_WIRE_BATCH_ARM_RECV,
                           KDBUS_CMD_FREE, sizeof(struct kdbus_cmd_free),
                           sizeof(struct kdbus_cmd_free), 0, 0, 0 };
        uint64_t *free_offset = &m[9];
        struct kdbus_wire_batch_reply pre;
        struct kdbus_cmd_recv rcv;
        const struct kdbus_msg *msg;

        post(s, a, 91);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &msg, NULL), ==, 0);
        *free_offset = kdbus_conn_offset(a, msg);
        (void) kdbus_conn_wait(a, 0);   /* read the eventfd */
        g_assert_cmpint(send(a->fd, &m, sizeof(m), MSG_NOSIGNAL), ==, (ssize_t)sizeof(m));
        /* the FREE's answer now, not marked */
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpint(pre.free_error, ==, 0);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV, ==, 0);
        /* then nothing until a message comes */
        g_assert_false(readable(a->fd, 200));
        post(s, a, 92);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV, ==, KDBUS_WIRE_RETURN_RECV);
        msg = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(msg->cookie, ==, 92);
        g_assert_false(readable(a->wake_fd, 0));
        kfree_msg(a, msg);
        /* a command that fails arms all the same (the batch went through) */
        *free_offset = 1ULL << 40;
        g_assert_cmpint(send(a->fd, &m, sizeof(m), MSG_NOSIGNAL), ==, (ssize_t)sizeof(m));
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, -ENXIO);
        g_assert_cmpint(pre.free_error, ==, 0);
        post(s, a, 93);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV, ==, KDBUS_WIRE_RETURN_RECV);
        msg = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(msg->cookie, ==, 93);
        g_assert_false(readable(a->wake_fd, 0));
        kfree_msg(a, msg);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* Read a reply datagram that may end with a joined RECV answer: the first answer's error,
 * batch reply and struct; *@joined, and then the second's. */
static int read_joined(KdbusConn *c, struct kdbus_wire_batch_reply *pre,
                       struct kdbus_cmd_recv *out, bool *joined, int *j_error,
                       struct kdbus_wire_batch_reply *j_pre, struct kdbus_cmd_recv *j_out) {
        uint8_t buf[1024] __attribute__((aligned(8)));
        size_t tail = sizeof(struct kdbus_wire_reply) + sizeof(*j_pre) + sizeof(*j_out);
        struct kdbus_wire_reply hdr, jhdr;
        ssize_t n;

        g_assert_true(readable(c->fd, 5000));
        n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        g_assert_cmpint(n, >=, (ssize_t)(sizeof(hdr) + sizeof(*pre)));
        memcpy(&hdr, buf, sizeof(hdr));
        g_assert_cmpuint(hdr.size, ==, (size_t)n - sizeof(hdr));
        memcpy(pre, buf + sizeof(hdr), sizeof(*pre));
        *joined = pre->return_flags & KDBUS_WIRE_RETURN_JOINED;
        if (*joined) {
                g_assert_cmpint(n, >=, (ssize_t)(sizeof(hdr) + sizeof(*pre) + tail));
                n -= (ssize_t)tail;
                memcpy(&jhdr, buf + n, sizeof(jhdr));
                g_assert_cmpuint(jhdr.size, ==, sizeof(*j_pre) + sizeof(*j_out));
                *j_error = (int)jhdr.error;
                memcpy(j_pre, buf + n + sizeof(jhdr), sizeof(*j_pre));
                memcpy(j_out, buf + n + sizeof(jhdr) + sizeof(*j_pre), sizeof(*j_out));
        }
        memset(out, 0, sizeof(*out));
        memcpy(out, buf + sizeof(hdr) + sizeof(*pre),
               MIN(sizeof(*out), (size_t)n - sizeof(hdr) - sizeof(*pre)));
        return (int)hdr.error;
}

/*
 * KDBUS_WIRE_BATCH_RECV_JOIN: a RECV that took a message while more wait brings the next
 * in the same datagram (the next RECV then the one after, in order; none joined after the
 * last); an arming FREE whose held RECV has something at once carries that answer instead
 * of a second datagram; with nothing waiting the hold stays and answers as its own.
 */
static void test_join(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        uint64_t m[10] = { KDBUS_WIRE_BATCH, 8 * 8, 0,
                           KDBUS_WIRE_BATCH_ARM_RECV | KDBUS_WIRE_BATCH_RECV_JOIN,
                           KDBUS_CMD_FREE, sizeof(struct kdbus_cmd_free),
                           sizeof(struct kdbus_cmd_free), 0, 0, 0 };
        struct kdbus_wire_batch_reply pre, jpre;
        struct kdbus_cmd_recv rcv, jrcv;
        const struct kdbus_msg *msg;
        bool joined;
        int jerr;

        post(s, a, 61);
        post(s, a, 62);
        post(s, a, 63);
        send_batch(a, KDBUS_WIRE_BATCH_RECV_JOIN, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_cmpint(read_joined(a, &pre, &rcv, &joined, &jerr, &jpre, &jrcv), ==, 0);
        g_assert_true(joined);
        g_assert_cmpuint(((const struct kdbus_msg *)(a->pool + rcv.msg.offset))->cookie, ==, 61);
        g_assert_cmpint(jerr, ==, 0);
        g_assert_cmpuint(jpre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==, 0);
        g_assert_cmpuint(((const struct kdbus_msg *)(a->pool + jrcv.msg.offset))->cookie, ==, 62);
        kfree_msg(a, (const void *)(a->pool + rcv.msg.offset));
        kfree_msg(a, (const void *)(a->pool + jrcv.msg.offset));
        /* the last: nothing joins it */
        send_batch(a, KDBUS_WIRE_BATCH_RECV_JOIN, KDBUS_CMD_RECV, 0, NULL, 0, NULL, 0);
        g_assert_cmpint(read_joined(a, &pre, &rcv, &joined, &jerr, &jpre, &jrcv), ==, 0);
        g_assert_false(joined);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==,
                         KDBUS_WIRE_RETURN_RECV_EMPTY);
        msg = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(msg->cookie, ==, 63);
        /* an arming FREE of it while one waits: that one comes in the FREE's datagram */
        post(s, a, 64);
        m[9] = kdbus_conn_offset(a, msg);
        g_assert_cmpint(send(a->fd, &m, sizeof(m), MSG_NOSIGNAL), ==, (ssize_t)sizeof(m));
        g_assert_cmpint(read_joined(a, &pre, &rcv, &joined, &jerr, &jpre, &jrcv), ==, 0);
        g_assert_true(joined);
        g_assert_cmpint(jerr, ==, 0);
        g_assert_cmpuint(jpre.return_flags & KDBUS_WIRE_RETURN_RECV, ==, KDBUS_WIRE_RETURN_RECV);
        msg = (const void *)(a->pool + jrcv.msg.offset);
        g_assert_cmpuint(msg->cookie, ==, 64);
        g_assert_false(readable(a->fd, 100));
        /* nothing waits: the FREE's answer alone, the hold answers a later message */
        m[9] = kdbus_conn_offset(a, msg);
        g_assert_cmpint(send(a->fd, &m, sizeof(m), MSG_NOSIGNAL), ==, (ssize_t)sizeof(m));
        g_assert_cmpint(read_joined(a, &pre, &rcv, &joined, &jerr, &jpre, &jrcv), ==, 0);
        g_assert_false(joined);
        g_assert_false(readable(a->fd, 100));
        post(s, a, 65);
        g_assert_cmpint(read_reply(a, &pre, &rcv), ==, 0);
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV, ==, KDBUS_WIRE_RETURN_RECV);
        msg = (const void *)(a->pool + rcv.msg.offset);
        g_assert_cmpuint(msg->cookie, ==, 65);
        kfree_msg(a, msg);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/*
 * KDBUS_WIRE_ATTACH: a second socket proving the pool memfd becomes a request channel of
 * the connection (its queue, its BYEBYE); a wrong fd or id is ENXIO, no fd EINVAL; HELLO
 * on it EBADFD; its close ends nothing; the connection's end closes it.
 */
static void test_attach(KBus *b, gconstpointer ctx) {
        KdbusConn *s = kpeer(b, 0);
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .flags = KDBUS_HELLO_WIRE_BATCH,
                                         .pool_size = KPOOL };
        struct { struct kdbus_wire_request req; struct kdbus_cmd_hello h; } hm;
        struct { struct kdbus_wire_request req; struct kdbus_wire_attach at; } am;
        struct kdbus_cmd_recv rcv;
        int a = raw_socket(b), ch, ch2, hfds[2] = { -1, -1 }, other = eventfd(0, EFD_CLOEXEC);
        RawCmd c;
        size_t n;

        hm.req = (struct kdbus_wire_request){ KDBUS_CMD_HELLO, sizeof(hello) };
        hm.h = hello;
        g_assert_cmpint(raw_call(a, &hm, sizeof(hm), -1, &hello, sizeof(hello), hfds, 2), ==, 0);
        g_assert_cmpint(hfds[0], >=, 0);
        am.req = (struct kdbus_wire_request){ KDBUS_WIRE_ATTACH, sizeof(am.at) };
        am.at.id = hello.id;
        ch = raw_socket(b);
        g_assert_cmpint(raw_call(ch, &am, sizeof(am), other, NULL, 0, NULL, 0), ==, -ENXIO);
        g_assert_cmpint(raw_call(ch, &am, sizeof(am), -1, NULL, 0, NULL, 0), ==, -EINVAL);
        am.at.id = hello.id + 1000;
        g_assert_cmpint(raw_call(ch, &am, sizeof(am), hfds[0], NULL, 0, NULL, 0), ==, -ENXIO);
        am.at.id = hello.id;
        g_assert_cmpint(raw_call(ch, &am, sizeof(am), hfds[0], NULL, 0, NULL, 0), ==, 0);
        /* a handle now: no second ATTACH, no HELLO */
        g_assert_cmpint(raw_call(ch, &am, sizeof(am), hfds[0], NULL, 0, NULL, 0), ==, -EBADFD);
        g_assert_cmpint(raw_call(ch, &hm, sizeof(hm), -1, NULL, 0, NULL, 0), ==, -EBADFD);
        /* a second channel, closed again: the connection goes on */
        ch2 = raw_socket(b);
        g_assert_cmpint(raw_call(ch2, &am, sizeof(am), hfds[0], NULL, 0, NULL, 0), ==, 0);
        (void) close(ch2);
        /* the connection's queue, received through the channel */
        g_assert_cmpint(kcall(s, hello.id, NULL, 94, false, "Post", "x", 0, NULL), ==, 0);
        n = raw_cmd(&c, KDBUS_CMD_RECV, sizeof(struct kdbus_cmd_recv));
        g_assert_cmpint(raw_call(ch, &c, n, -1, &rcv, sizeof(rcv), NULL, 0), ==, 0);
        g_assert_cmpuint(rcv.msg.offset, <, KPOOL);
        g_assert_cmpint(raw_call(a, &c, n, -1, &rcv, sizeof(rcv), NULL, 0), ==, -EAGAIN);
        /* BYEBYE through the channel ends the connection for both */
        n = raw_cmd(&c, KDBUS_CMD_FREE, sizeof(struct kdbus_cmd_free));
        c.w[2] = rcv.msg.offset;
        g_assert_cmpint(raw_call(ch, &c, n, -1, NULL, 0, NULL, 0), ==, 0);
        n = raw_cmd(&c, KDBUS_CMD_BYEBYE, sizeof(struct kdbus_cmd));
        g_assert_cmpint(raw_call(ch, &c, n, -1, NULL, 0, NULL, 0), ==, 0);
        n = raw_cmd(&c, KDBUS_CMD_RECV, sizeof(struct kdbus_cmd_recv));
        g_assert_cmpint(raw_call(a, &c, n, -1, NULL, 0, NULL, 0), ==, -ECONNRESET);
        /* the connection's socket goes: its channel is closed */
        (void) close(a);
        g_assert_true(readable(ch, 5000));
        g_assert_cmpint(recv(ch, &rcv, sizeof(rcv), MSG_DONTWAIT), ==, 0);
        (void) close(ch);
        (void) close(hfds[0]);
        (void) close(hfds[1]);
        (void) close(other);
        kdbus_conn_close(s);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        ADD("arrives", test_arrives);
        ADD("cancel", test_cancel);
        ADD("broadcast", test_broadcast);
        ADD("more-waiting", test_more_waiting);
        ADD("second-command", test_second_command);
        ADD("conn-ends", test_conn_ends);
        ADD("pool-full", test_pool_full);
        ADD("reply-timer", test_reply_timer);
        ADD("send-then-recv", test_send_then_recv);
        ADD("legacy-sender", test_legacy_sender);
        ADD("priority", test_priority);
        ADD("peer-closes", test_peer_closes);
        ADD("malformed", test_malformed);
        ADD("arm", test_arm);
        ADD("join", test_join);
        ADD("attach", test_attach);
        return g_test_run();
}
