/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance with kdbus's message selftests, through a real kdbusd and libkdbus: chat,
 * message-basic (to oneself, broadcasts and one's own broadcast), message-quota (the pool
 * quota per (receiver, sending user): 256 messages or a third of the free half, then
 * ENOBUFS for that user only, nothing lost), memory-access (payload vectors the bus cannot read: EFAULT; a payload split over
 * vectors), message-free, sync-byebye, fd-passing's refusals, writable-pool, connection-
 * info, match-bloom / match by sender id and name. docs/kdbus-selftests.md maps each kdbus
 * selftest to these tests.
 */
#include <grp.h>
#include <sys/un.h>
#include <sys/stat.h>
#include "kdbusd-fixture.h"

/* A configuration with a small queue limit for the message-quota test (the core's queue
 * limit, per sending user, must not be what binds), open to uid nobody. */
static const char quota_conf[] =
        "<busconfig>\n"
        "  <type>session</type>\n"
        "  <listen>unix:tmpdir=/tmp</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
        "    <allow eavesdrop=\"true\"/>\n"
        "    <allow own=\"*\"/>\n"
        "  </policy>\n"
        "  <limit name=\"max_outgoing_bytes\">8192</limit>\n"
        "</busconfig>\n";

/* chat: three peers with names talk to each other by name and by broadcast */
static void test_chat(KBus *b, gconstpointer ctx) {
        static const char *const names[] = { "org.example.Chat0", "org.example.Chat1",
                                             "org.example.Chat2" };
        KdbusConn *p[3];
        unsigned i, j, round;

        for (i = 0; i < 3; ++i) {
                p[i] = kpeer(b, 0);
                g_assert_cmpint(kdbus_conn_name_acquire(p[i], names[i], 0, NULL), ==, 0);
                g_assert_cmpint(kdbus_conn_match_add(p[i], 1, 0, NULL, KDBUS_MATCH_ID_ANY),
                                ==, 0);
        }
        /* an empty entry matches notifications too (kdbus_match_rules()): p[0] heard the
         * others arrive, as a broadcast signal of the bus */
        {
                const struct kdbus_msg *m = krecv(p[0], NULL, NULL);

                g_assert_cmpuint(m->payload_type, ==, KDBUS_PAYLOAD_KERNEL);
                g_assert_cmpuint(m->flags, ==, KDBUS_MSG_SIGNAL);
                g_assert_cmpuint(m->items[0].type, ==, KDBUS_ITEM_ID_ADD);
                g_assert_cmpuint(m->items[0].id_change.id, ==, p[1]->id);
                kfree_msg(p[0], m);
        }
        for (i = 0; i < 3; ++i)
                kdrop_all(p[i]);
        for (round = 0; round < 20; ++round) {
                for (i = 0; i < 3; ++i) {
                        g_autofree char *text = g_strdup_printf("%u from %u", round, i);
                        const char *args[] = { text, NULL };

                        g_assert_cmpint(kcall(p[i], 0, names[(i + 1) % 3],
                                              1000 * round + 10 + i, true, "Say", text, 0, NULL),
                                        ==, 0);
                        g_assert_cmpint(ksignal(p[i], 1000 * round + 100 + i, "Said", args), ==, 0);
                }
                /* every peer: the unicast from its left neighbour and all three broadcasts
                 * (its own too: its entry matches everything), in send order */
                for (j = 0; j < 3; ++j) {
                        unsigned from_left = (j + 2) % 3, k, got_calls = 0;

                        for (k = 0; k < 4; ++k) {
                                WireHeader h;
                                WireArgs a;
                                const struct kdbus_msg *m = krecv(p[j], &h, &a);

                                if (h.type == WIRE_MSG_METHOD_CALL) {
                                        g_assert_cmpuint(m->src_id, ==, p[from_left]->id);
                                        g_assert_cmpstr(h.destination, ==, names[j]);
                                        ++got_calls;
                                } else {
                                        g_assert_cmpint(h.type, ==, WIRE_MSG_SIGNAL);
                                        g_assert_cmpuint(m->dst_id, ==, KDBUS_DST_ID_BROADCAST);
                                        g_assert_cmpuint(m->cookie % 1000, >=, 100);
                                }
                                g_assert_cmpuint(m->cookie / 1000, ==, round);
                                g_assert_cmpuint(m->cookie % 1000, >=, 10);
                                kfree_msg(p[j], m);
                        }
                        g_assert_cmpuint(got_calls, ==, 1);
                        kassert_empty(p[j]);
                }
        }
        for (i = 0; i < 3; ++i)
                kdbus_conn_close(p[i]);
}

/* message-basic: to oneself, broadcasts only to matching entries, the sender's own */
static void test_message_basic(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        const char *args[] = { "x", NULL };
        const struct kdbus_msg *m;
        WireHeader h;
        WireArgs ar;

        /* a unicast to oneself */
        g_assert_cmpint(kcall(a, a->id, NULL, 3, true, "Self", "me", 0, NULL), ==, 0);
        m = krecv(a, &h, &ar);
        g_assert_cmpuint(m->src_id, ==, a->id);
        g_assert_cmpuint(m->dst_id, ==, a->id);
        g_assert_cmpstr(ar.str[0], ==, "me");
        kfree_msg(a, m);
        /* no match entry: no broadcast, not even one's own */
        g_assert_cmpint(ksignal(a, 4, "Nobody", args), ==, 0);
        kassert_empty(a);
        kassert_empty(c);
        /* an entry without rules matches everything, the sender's own broadcast included */
        g_assert_cmpint(kdbus_conn_match_add(a, 1, 0, NULL, KDBUS_MATCH_ID_ANY), ==, 0);
        g_assert_cmpint(kdbus_conn_match_add(c, 1, 0, NULL, KDBUS_MATCH_ID_ANY), ==, 0);
        g_assert_cmpint(ksignal(a, 5, "All", args), ==, 0);
        m = krecv(a, &h, NULL);
        g_assert_cmpuint(m->cookie, ==, 5);
        g_assert_cmpuint(m->flags, ==, KDBUS_MSG_SIGNAL);
        kfree_msg(a, m);
        m = krecv(c, &h, NULL);
        g_assert_cmpuint(m->src_id, ==, a->id);
        g_assert_cmpstr(h.member, ==, "All");
        kfree_msg(c, m);
        /* unknown ids and names */
        g_assert_cmpint(kcall(a, 9999, NULL, 6, true, "X", NULL, 0, NULL), ==, -ENXIO);
        g_assert_cmpint(kcall(a, 0, "org.example.Nobody", 7, true, "X", NULL, 0, NULL),
                        ==, -ESRCH);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* message-prio: RECV with USE_PRIORITY takes the message of the highest priority, which in
 * kdbus is the lowest value (FIFO among equals), if it is at or above the threshold
 * (value <= it), else EAGAIN; PEEK by priority; DROP by priority EINVAL; plain RECV stays
 * FIFO */
static void test_message_prio(KBus *b, gconstpointer ctx) {
        static const int64_t prio[] = { 25, -600, 10, -35, -100, 20, -15, -800, -150, 10, -800,
                                        -10 };
        /* (threshold, cookie taken: 0 for EAGAIN); cookie = 10 + index in prio[] */
        static const struct { int64_t threshold; uint64_t cookie; } steps[] = {
                { -200, 17 }, { -100, 20 }, { -400, 11 }, { -400, 0 }, { 10, 18 }, { 10, 14 },
        };
        static const uint64_t rest[] = { 13, 16, 21, 12, 19, 15 };
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        g_autofree char *dest = g_strdup(kunique(c->id));
        const struct kdbus_msg *m;
        unsigned i;

        for (i = 0; i < G_N_ELEMENTS(prio); ++i) {
                size_t size;
                uint8_t *data = kbuild(WIRE_MSG_METHOD_CALL, 10 + i, 0, dest, "Prio", NULL, &size);

                data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
                g_assert_cmpint(ksend_dbus1(a, c->id, NULL, 0, prio[i], data, size, NULL), ==, 0);
                free(data);
        }
        for (i = 0; i < G_N_ELEMENTS(steps); ++i) {
                int r = kdbus_conn_recv(c, KDBUS_RECV_USE_PRIORITY, steps[i].threshold, &m, NULL);

                if (!steps[i].cookie) {
                        g_assert_cmpint(r, ==, -EAGAIN);
                        continue;
                }
                g_assert_cmpint(r, ==, 0);
                g_assert_cmpuint(m->cookie, ==, steps[i].cookie);
                g_assert_cmpint(m->priority, ==, prio[steps[i].cookie - 10]);
                kfree_msg(c, m);
        }
        /* PEEK shows the best one and leaves it */
        g_assert_cmpint(kdbus_conn_recv(c, KDBUS_RECV_USE_PRIORITY | KDBUS_RECV_PEEK, 0, &m,
                                        NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 13);
        g_assert_cmpint(m->priority, ==, -35);
        g_assert_cmpint(kdbus_conn_recv(c, KDBUS_RECV_USE_PRIORITY | KDBUS_RECV_DROP, 0, NULL,
                                        NULL), ==, -EINVAL);
        /* plain RECV: the oldest, whatever its priority */
        g_assert_cmpint(kdbus_conn_recv(c, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 10);
        g_assert_cmpint(m->priority, ==, 25);
        kfree_msg(c, m);
        for (i = 0; i < G_N_ELEMENTS(rest); ++i) {
                g_assert_cmpint(kdbus_conn_recv(c, KDBUS_RECV_USE_PRIORITY, INT64_MAX, &m, NULL),
                                ==, 0);
                g_assert_cmpuint(m->cookie, ==, rest[i]);
                kfree_msg(c, m);
        }
        kassert_empty(c);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* SEND copies of @data (serials from 1) to @c until ENOBUFS. Return: how many went. */
static unsigned fill(KdbusConn *a, KdbusConn *c, uint8_t *data, size_t size, unsigned limit) {
        unsigned sent = 0;
        int r;

        for (;;) {
                g_assert_cmpuint(sent, <=, limit);
                *(uint32_t *)(data + 8) = sent + 1;     /* the serial (little endian) */
                r = ksend_dbus1(a, c->id, NULL, 0, 0, data, size, NULL);
                if (r == -ENOBUFS)
                        return sent;
                g_assert_cmpint(r, ==, 0);
                ++sent;
        }
}

/*
 * In a child running as uid nobody: HELLO, then SEND @data (serials 1, 2, ...) to @dst_id
 * until a SEND fails. Return: how many were accepted; *ret_error: the failure (-9999 if
 * the child could not connect).
 */
static unsigned fill_as_nobody(KBus *b, uint64_t dst_id, uint8_t *data, size_t size,
                               unsigned limit, int *ret_error) {
        int p[2], status, res[2] = { 0, -9999 };
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusSend s = { .dst_id = dst_id, .memfd = -1 };
                KdbusConn *c = NULL;
                int out[2] = { 0, -9999 };

                (void) close(p[0]);
                if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
                    setresuid(65534, 65534, 65534) || kdbus_conn_open(b->native, &c) ||
                    kdbus_conn_hello(c, 0, KPOOL))
                        _exit(write(p[1], out, sizeof(out)) == sizeof(out) ? 0 : 3);
                for (out[0] = 0; out[0] < (int)limit; ++out[0]) {
                        *(uint32_t *)(data + 8) = (uint32_t)out[0] + 1;
                        if (kdbus_send_from_dbus1(&s, data, size))
                                _exit(4);
                        out[1] = kdbus_conn_send(c, &s, data, size, NULL);
                        if (out[1])
                                break;
                }
                _exit(write(p[1], out, sizeof(out)) == sizeof(out) ? 0 : 3);
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], res, sizeof(res)), ==, sizeof(res));
        (void) close(p[0]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        *ret_error = res[1];
        return (unsigned)res[0];
}

/* RECV @n messages of the sender @src_id, serials @first.. in order. */
static void recv_in_order_from_at(KdbusConn *c, uint64_t src_id, unsigned first, unsigned n) {
        unsigned got;

        for (got = 0; got < n; ++got) {
                const struct kdbus_msg *m = NULL;

                g_assert_cmpint(krecv_wait(c, 5000, true, &m), ==, 0);
                g_assert_cmpuint(m->src_id, ==, src_id);
                g_assert_cmpuint(m->cookie, ==, first + got);
                kfree_msg(c, m);
        }
}

static void recv_in_order_from(KdbusConn *c, uint64_t src_id, unsigned n) {
        recv_in_order_from_at(c, src_id, 1, n);
}

/* The id of the last connection that said hello: the next one's minus one. */
static uint64_t last_hello_id(KBus *b) {
        KdbusConn *probe = kpeer(b, 0);
        uint64_t id = probe->id - 1;

        kdbus_conn_close(probe);
        return id;
}

/*
 * message-quota: kdbus's pool quota, per (receiver, sending user), checked when the bus
 * accepts a message: a receiver that does not read takes at most 256 messages of one
 * sending user, and of the free half of its pool one user gets a third; beyond that user
 * gets ENOBUFS, while another user (uid nobody, in a child) still gets its messages in, up
 * to its own limit. Reading makes room; every message the bus accepted arrives, in order.
 */
static void test_message_quota(KBus *b, gconstpointer ctx) {
        KdbusConn *a, *big, *small;
        const char *args[] = { "0123456789abcdef0123456789abcdef0123456789abcdef", NULL };
        unsigned sent, sent_nobody;
        uint64_t nobody_id;
        uint8_t *data;
        size_t size;
        int r;

        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);    /* uid nobody reaches the socket */
        a = kpeer(b, 0);
        big = kpeer_pool(b, 0, 4 * KPOOL);
        small = kpeer(b, 0);

        /* a 1 MiB pool: the message count binds (a third of 512 KiB would be ~800) */
        data = kbuild(WIRE_MSG_METHOD_CALL, 1, 0, kunique(big->id), "Fill", args, &size);
        data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
        sent = fill(a, big, data, size, 300);
        g_test_message("1 MiB pool: %u messages of %zu bytes from uid 0 before ENOBUFS",
                       sent, size);
        g_assert_cmpuint(sent, ==, 256);
        /* uid 0's backlog does not stop uid nobody, which gets its own 256 */
        sent_nobody = fill_as_nobody(b, big->id, data, size, 300, &r);
        nobody_id = last_hello_id(b);
        g_test_message("then uid 65534: %u accepted before %d", sent_nobody, r);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(sent_nobody, ==, 256);
        /* uid 0 is still refused; its broadcast does not fail, the receiver counts it as
         * dropped (kdbus); nothing was lost, each user's messages in order */
        *(uint32_t *)(data + 8) = 999;
        g_assert_cmpint(ksend_dbus1(a, big->id, NULL, 0, 0, data, size, NULL), ==, -ENOBUFS);
        g_assert_cmpint(kdbus_conn_match_add(big, 1, 0, NULL, KDBUS_MATCH_ID_ANY), ==, 0);
        g_assert_cmpint(ksignal(a, 7000, "Over", NULL), ==, 0);
        {
                const struct kdbus_msg *m = NULL;
                uint64_t dropped = 0;

                g_assert_cmpint(kdbus_conn_recv(big, 0, 0, &m, &dropped), ==, 0);
                g_assert_cmpuint(dropped, ==, 1);
                g_assert_cmpuint(m->src_id, ==, a->id);
                g_assert_cmpuint(m->cookie, ==, 1);
                kfree_msg(big, m);
        }
        recv_in_order_from_at(big, a->id, 2, 255);
        recv_in_order_from(big, nobody_id, 256);
        kassert_empty(big);
        *(uint32_t *)(data + 8) = 1;
        g_assert_cmpint(ksend_dbus1(a, big->id, NULL, 0, 0, data, size, NULL), ==, 0);
        free(data);

        /* a 256 KiB pool: the bytes bind first (a third of 128 KiB: about 200 messages);
         * the second user gets a third of what the first left */
        data = kbuild(WIRE_MSG_METHOD_CALL, 1, 0, kunique(small->id), "Fill", args, &size);
        data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
        sent = fill(a, small, data, size, 300);
        g_test_message("256 KiB pool: %u messages from uid 0 before ENOBUFS", sent);
        g_assert_cmpuint(sent, <, 256);
        g_assert_cmpuint(sent, <=, KPOOL / 2 / 3 / size + 1);
        sent_nobody = fill_as_nobody(b, small->id, data, size, 300, &r);
        nobody_id = last_hello_id(b);
        g_test_message("then uid 65534: %u accepted before %d", sent_nobody, r);
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(sent_nobody, >, 0);
        g_assert_cmpuint(sent_nobody, <, sent);
        recv_in_order_from(small, a->id, sent);
        recv_in_order_from(small, nobody_id, sent_nobody);
        kassert_empty(small);
        free(data);
        kdbus_conn_close(a);
        kdbus_conn_close(big);
        kdbus_conn_close(small);
}

/* Send [request][@buf] as one datagram; Return: the reply's error. */
static int raw_send(KdbusConn *c, uint64_t command, const void *buf, size_t size) {
        struct kdbus_wire_request req = { .command = command, .size = size };
        struct iovec iov[2] = { { &req, sizeof(req) }, { (void *)buf, size } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
        struct kdbus_wire_reply rep;
        uint8_t back[512];

        g_assert_cmpint(sendmsg(c->fd, &mh, MSG_NOSIGNAL), ==, (ssize_t)(sizeof(req) + size));
        g_assert_cmpint(recv(c->fd, back, sizeof(back), 0), >=, (ssize_t)sizeof(rep));
        memcpy(&rep, back, sizeof(rep));
        return (int)rep.error;
}

/*
 * A SEND datagram with the dbus1 message @data split into two PAYLOAD_VEC items at
 * @split; the vectors' offsets can be overridden (@off0/@off1 != 0). Return: its size.
 */
static size_t split_datagram(uint8_t *buf, size_t buf_size, uint64_t dst_id, const uint8_t *data,
                             size_t size, size_t split, uint64_t off0, uint64_t off1) {
        struct kdbus_cmd_send *cmd = (void *)buf;
        struct kdbus_msg *km = (void *)(buf + sizeof(*cmd));
        struct kdbus_item *v0, *v1;
        KdbusSend s = { .memfd = -1 };
        size_t msg_size = sizeof(*km) + 2 * KDBUS_ITEM_SIZE(sizeof(struct kdbus_vec));
        size_t p0 = sizeof(*cmd) + msg_size, p1 = p0 + KDBUS_ALIGN8(split);

        g_assert_cmpuint(p1 + size - split, <=, buf_size);
        memset(buf, 0, buf_size);
        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
        cmd->size = sizeof(*cmd);
        cmd->msg_address = sizeof(*cmd);
        km->size = msg_size;
        km->flags = s.msg_flags;
        km->dst_id = dst_id;
        km->payload_type = KDBUS_PAYLOAD_DBUS;
        km->cookie = s.cookie;
        v0 = km->items;
        v0->size = KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec);
        v0->type = KDBUS_ITEM_PAYLOAD_VEC;
        v0->vec.offset = off0 ? off0 : p0;
        v0->vec.size = split;
        v1 = KDBUS_ITEM_NEXT(v0);
        v1->size = v0->size;
        v1->type = KDBUS_ITEM_PAYLOAD_VEC;
        v1->vec.offset = off1 ? off1 : p1;
        v1->vec.size = size - split;
        memcpy(buf + p0, data, split);
        memcpy(buf + p1, data + split, size - split);
        return p1 + size - split;
}

/* memory-access: vectors are read from the datagram only; out of it: EFAULT */
static void test_memory_access(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        g_autofree char *dest = g_strdup(kunique(c->id));
        const char *args[] = { "split over two vectors", NULL };
        uint8_t buf[1024] __attribute__((aligned(8)));
        const struct kdbus_msg *m;
        WireHeader h;
        WireArgs ar;
        uint8_t *data;
        size_t size, n;

        data = kbuild(WIRE_MSG_METHOD_CALL, 5, 0, dest, "Split", args, &size);
        data[2] |= WIRE_FLAG_NO_REPLY_EXPECTED;
        /* split in the middle of the header: the receiver gets one message */
        n = split_datagram(buf, sizeof(buf), c->id, data, size, 13, 0, 0);
        g_assert_cmpint(raw_send(a, KDBUS_CMD_SEND, buf, n), ==, 0);
        m = krecv(c, &h, &ar);
        g_assert_cmpuint(m->cookie, ==, 5);
        g_assert_cmpstr(ar.str[0], ==, "split over two vectors");
        kfree_msg(c, m);
        /* a vector past the datagram's end, one overflowing, one inside the command */
        n = split_datagram(buf, sizeof(buf), c->id, data, size, 13, 0, 4096);
        g_assert_cmpint(raw_send(a, KDBUS_CMD_SEND, buf, n), ==, -EFAULT);
        n = split_datagram(buf, sizeof(buf), c->id, data, size, 13, 0, UINT64_MAX - 4);
        g_assert_cmpint(raw_send(a, KDBUS_CMD_SEND, buf, n), ==, -EFAULT);
        n = split_datagram(buf, sizeof(buf), c->id, data, size, 13, 0, n - 2);
        g_assert_cmpint(raw_send(a, KDBUS_CMD_SEND, buf, n), ==, -EFAULT);
        /* msg_address outside the datagram */
        n = split_datagram(buf, sizeof(buf), c->id, data, size, 13, 0, 0);
        ((struct kdbus_cmd_send *)buf)->msg_address = n + 8;
        g_assert_cmpint(raw_send(a, KDBUS_CMD_SEND, buf, n), ==, -EFAULT);
        kassert_empty(c);
        free(data);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* message-free: only slices handed out, once; a PEEKed one is the peer's too (kdbus's
 * ref_user: FREE ends that hold, the slice outlives a DROP until then); the pool's size,
 * kdbus's "no slice" offset, frees nothing and succeeds; no unknown flags */
static void test_message_free(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0);
        struct kdbus_cmd_free f = { .size = sizeof(f), .flags = 1 };
        struct kdbus_cmd_recv rcv = { .size = sizeof(rcv), .flags = KDBUS_RECV_DROP };
        const struct kdbus_msg *m, *peeked;
        uint64_t off;

        g_assert_cmpint(kcall(a, c->id, NULL, 1, true, "Free", NULL, 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_free(c, 0), ==, -ENXIO);     /* the bloom slice: freed */
        g_assert_cmpint(kdbus_conn_free(c, KPOOL * 2), ==, -ENXIO);
        g_assert_cmpint(kdbus_conn_free(c, KPOOL), ==, 0);
        g_assert_cmpint(kdbus_conn_recv(c, KDBUS_RECV_PEEK, 0, &peeked, NULL), ==, 0);
        off = kdbus_conn_offset(c, peeked);
        g_assert_cmpint(kdbus_conn_free(c, off), ==, 0);        /* the PEEK's hold */
        g_assert_cmpint(kdbus_conn_free(c, off), ==, -ENXIO);   /* the queue's is not ours */
        g_assert_cmpint(kdbus_conn_recv(c, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(kdbus_conn_offset(c, m), ==, off);
        g_assert_cmpint(kdbus_conn_free(c, off + 8), ==, -ENXIO);
        f.offset = off;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_FREE, &f, sizeof(f), NULL, 0), ==, -EINVAL);
        g_assert_cmpint(kdbus_conn_free(c, off), ==, 0);
        g_assert_cmpint(kdbus_conn_free(c, off), ==, -ENXIO);
        /* PEEK, then DROP: the slice stays readable until FREE; DROP hands out nothing */
        g_assert_cmpint(kcall(a, c->id, NULL, 2, true, "Free", NULL, 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_recv(c, KDBUS_RECV_PEEK, 0, &peeked, NULL), ==, 0);
        off = kdbus_conn_offset(c, peeked);
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_RECV, &rcv, sizeof(rcv), NULL, 0), ==, 0);
        g_assert_cmpuint(rcv.msg.offset, ==, KPOOL);
        g_assert_cmpuint(rcv.msg.msg_size, ==, 0);
        g_assert_cmpuint(peeked->cookie, ==, 2);
        g_assert_cmpint(kdbus_conn_recv(c, 0, 0, &m, NULL), ==, -EAGAIN);
        g_assert_cmpint(kdbus_conn_free(c, off), ==, 0);
        g_assert_cmpint(kdbus_conn_free(c, off), ==, -ENXIO);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* sync-byebye: the callee says BYEBYE while the caller waits in SYNC_REPLY: EPIPE (kdbus's
 * selftest, BYEBYE_THEM; kdbus_conn_disconnect() wakes the callers it owes with EPIPE) */
static void test_sync_byebye(KBus *b, gconstpointer ctx) {
        struct kdbus_msg_info info = { 0 };
        KdbusConn *a;
        int p[2], status;
        pid_t pid;
        char x;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusConn *c = NULL;
                const struct kdbus_msg *m;

                (void) close(p[0]);
                int err = kdbus_conn_open(b->native, &c);

                if (!err)
                        err = kdbus_conn_hello(c, 0, KPOOL);
                if (!err)
                        err = kdbus_conn_name_acquire(c, "org.example.Byebye", 0, NULL);
                if (err) {
                        /* the parent's read() fails; say why */
                        g_printerr("sync-byebye callee: open, HELLO or NAME_ACQUIRE: %s\n",
                                   g_strerror(-err));
                        _exit(2);
                }
                if (write(p[1], "r", 1) != 1)
                        _exit(2);
                for (;;) {
                        int r = kdbus_conn_recv(c, 0, 0, &m, NULL);

                        if (r == -EAGAIN) {
                                if (kdbus_conn_wait(c, 10000))
                                        _exit(3);
                                continue;
                        }
                        if (r)
                                _exit(4);
                        if (m->flags & KDBUS_MSG_EXPECT_REPLY)
                                break;
                        (void) kdbus_conn_free(c, kdbus_conn_offset(c, m));
                }
                /* the call is out of the queue: BYEBYE succeeds and the caller learns */
                _exit(kdbus_conn_byebye(c) == 0 ? 0 : 5);
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], &x, 1), ==, 1);
        (void) close(p[0]);
        a = kpeer(b, 0);
        g_assert_cmpint(kcall(a, 0, "org.example.Byebye", 9, false, "Wait", NULL,
                              KDBUS_SEND_SYNC_REPLY, &info), ==, -EPIPE);
        kassert_empty(a);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        kdbus_conn_close(a);
}

/* fd-passing: 16 fds arrive in order and work; refusals ECOMM, EMFILE, ENOTUNIQ, and
 * EOPNOTSUPP for a connection to the bus itself (kdbus: its own handles) */
static void test_fd_passing(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_ACCEPT_FD), *c = kpeer(b, KDBUS_HELLO_ACCEPT_FD);
        KdbusConn *nofd = kpeer(b, 0);
        g_autofree char *dest = g_strdup(kunique(c->id));
        int pipes[KDBUS_MSG_MAX_FDS + 1][2], wfds[KDBUS_MSG_MAX_FDS + 1];
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 2, .path = "/",
                             .member = "Fds", .destination = dest,
                             .n_fds = KDBUS_MSG_MAX_FDS,
                             .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
        KdbusSend s = { .dst_id = c->id, .memfd = -1 };
        const struct kdbus_msg *m;
        const struct kdbus_item *item;
        uint8_t *data = NULL;
        WireHeader h;
        size_t size;
        unsigned i;

        for (i = 0; i < G_N_ELEMENTS(pipes); ++i) {
                g_assert_cmpint(pipe2(pipes[i], O_CLOEXEC), ==, 0);
                wfds[i] = pipes[i][1];
        }
        g_assert_cmpint(wire_message_build(&spec, NULL, &data, &size), ==, 0);
        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
        s.fds = wfds;
        s.n_fds = KDBUS_MSG_MAX_FDS;
        g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, 0);
        m = krecv(c, &h, NULL);
        g_assert_cmpuint(c->n_recv_fds, ==, KDBUS_MSG_MAX_FDS);
        item = kdbus_msg_find(m, KDBUS_ITEM_FDS);
        g_assert_nonnull(item);
        g_assert_cmpuint(item->size, ==, KDBUS_ITEM_HEADER_SIZE +
                         KDBUS_MSG_MAX_FDS * sizeof(int));
        for (i = 0; i < KDBUS_MSG_MAX_FDS; ++i) {
                char got = 0, want = (char)('a' + i);

                g_assert_cmpint(write(c->recv_fds[i], &want, 1), ==, 1);
                g_assert_cmpint(read(pipes[i][0], &got, 1), ==, 1);
                g_assert_cmpint(got, ==, want);
        }
        kfree_msg(c, m);
        /* one too many: the library refuses, and so does the bus (raw command) */
        s.n_fds = KDBUS_MSG_MAX_FDS + 1;
        g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -EMFILE);
        free(data);
        data = NULL;
        /* a receiver without ACCEPT_FD */
        {
                g_autofree char *d2 = g_strdup(kunique(nofd->id));

                spec.destination = d2;
                spec.n_fds = 1;
                g_assert_cmpint(wire_message_build(&spec, NULL, &data, &size), ==, 0);
                s = (KdbusSend){ .dst_id = nofd->id, .memfd = -1, .fds = wfds, .n_fds = 1 };
                g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
                g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -ECOMM);
                free(data);
                data = NULL;
        }
        kassert_empty(nofd);
        /* fds in a broadcast */
        spec = (WireMsgSpec){ .type = WIRE_MSG_SIGNAL, .serial = 4, .path = "/",
                              .interface = "org.example.Test", .member = "Fd", .n_fds = 1 };
        g_assert_cmpint(wire_message_build(&spec, NULL, &data, &size), ==, 0);
        s = (KdbusSend){ .dst_id = KDBUS_DST_ID_BROADCAST, .memfd = -1, .fds = wfds, .n_fds = 1 };
        g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
        g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -ENOTUNIQ);
        free(data);
        data = NULL;
        /* unix sockets are refused as kdbus_get_fd() refused them (EOPNOTSUPP): the
         * sender's own native socket, a legacy connection, a socketpair of its own; an
         * O_PATH fd of a socket passes */
        {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int legacy = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), pair[2];

                g_assert_cmpint(legacy, >=, 0);
                g_assert_cmpuint(strlen(b->legacy), <, sizeof(sa.sun_path));
                strcpy(sa.sun_path, b->legacy);
                g_assert_cmpint(connect(legacy, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
                g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
                spec = (WireMsgSpec){ .type = WIRE_MSG_METHOD_CALL, .serial = 5, .path = "/",
                                      .member = "Fds", .destination = dest, .n_fds = 1,
                                      .flags = WIRE_FLAG_NO_REPLY_EXPECTED };
                g_assert_cmpint(wire_message_build(&spec, NULL, &data, &size), ==, 0);
                s = (KdbusSend){ .dst_id = c->id, .memfd = -1, .fds = &a->fd, .n_fds = 1 };
                g_assert_cmpint(kdbus_send_from_dbus1(&s, data, size), ==, 0);
                g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -EOPNOTSUPP);
                s.fds = &legacy;
                g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -EOPNOTSUPP);
                kassert_empty(c);
                s.fds = &pair[1];
                g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, -EOPNOTSUPP);
                kassert_empty(c);
                {
                        int path = open(b->legacy, O_PATH | O_CLOEXEC);
                        struct stat st;

                        g_assert_cmpint(path, >=, 0);
                        s.fds = &path;
                        g_assert_cmpint(kdbus_conn_send(a, &s, data, size, NULL), ==, 0);
                        m = krecv(c, &h, NULL);
                        g_assert_cmpuint(c->n_recv_fds, ==, 1);
                        g_assert_cmpint(fstat(c->recv_fds[0], &st), ==, 0);
                        g_assert_true(S_ISSOCK(st.st_mode));
                        kfree_msg(c, m);
                        (void) close(path);
                }
                free(data);
                (void) close(legacy);
                (void) close(pair[0]);
                (void) close(pair[1]);
        }
        for (i = 0; i < G_N_ELEMENTS(pipes); ++i) {
                (void) close(pipes[i][0]);
                (void) close(pipes[i][1]);
        }
        kdbus_conn_close(a);
        kdbus_conn_close(c);
        kdbus_conn_close(nofd);
}

/* writable-pool: the peer's pool fd gives no way to write into the pool */
static void test_writable_pool(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kopen(b);
        struct kdbus_cmd_hello hello = { .size = sizeof(hello), .pool_size = KPOOL };
        const struct kdbus_msg *m;
        WireHeader h;
        WireArgs ar;
        uint8_t *map, *priv;
        int pfd;

        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_HELLO, &hello, sizeof(hello), NULL, 0),
                        ==, 0);
        pfd = c->recv_fds[0];
        map = mmap(NULL, KPOOL, PROT_READ, MAP_SHARED, pfd, 0);
        g_assert_true(map != MAP_FAILED);
        g_assert_cmpint(mprotect(map, KPOOL, PROT_READ | PROT_WRITE), ==, -1);
        g_assert_cmpint(errno, ==, EACCES);
        g_assert_true(mmap(NULL, KPOOL, PROT_WRITE, MAP_SHARED, pfd, 0) == MAP_FAILED);
        g_assert_cmpint(pwrite(pfd, "x", 1, 0), ==, -1);
        g_assert_cmpint(ftruncate(pfd, KPOOL * 2), ==, -1);
        g_assert_cmpint(fcntl(pfd, F_ADD_SEALS, 0), ==, -1);    /* sealed against unsealing */
        g_assert_cmpint(fcntl(pfd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE, !=, 0);
        /* a private copy may be written, but that is not the pool: the next message is
         * intact in the shared mapping */
        priv = mmap(NULL, KPOOL, PROT_READ | PROT_WRITE, MAP_PRIVATE, pfd, 0);
        g_assert_true(priv != MAP_FAILED);
        memset(priv, 0xff, KPOOL);
        g_assert_cmpint(munmap(priv, KPOOL), ==, 0);
        (void) close(pfd);
        c->recv_fds[0] = -1;
        c->wake_fd = c->recv_fds[1];
        c->n_recv_fds = 0;
        c->pool = map;
        c->pool_size = KPOOL;
        c->id = hello.id;
        g_assert_cmpint(kcall(a, c->id, NULL, 8, true, "Intact", "yes", 0, NULL), ==, 0);
        m = krecv(c, &h, &ar);
        g_assert_cmpuint(m->src_id, ==, a->id);
        g_assert_cmpstr(ar.str[0], ==, "yes");
        kfree_msg(c, m);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* connection-info: by id, by name, of oneself; the errors */
static void test_connection_info(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_ACCEPT_FD), *c = kpeer(b, 0);
        uint8_t buf[512] __attribute__((aligned(8))) = { 0 };
        struct kdbus_cmd_info *info = (void *)buf;
        const struct kdbus_info *ki;
        const struct kdbus_item *item;
        bool seen_name = false;

        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Info", 0, NULL), ==, 0);
        /* by id: the id, the HELLO flags, the names asked for */
        info->size = sizeof(*info);
        info->id = a->id;
        info->attach_flags = KDBUS_ATTACH_NAMES;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, 0);
        ki = (const void *)(c->pool + info->offset);
        g_assert_cmpuint(ki->size, ==, info->info_size);
        g_assert_cmpuint(ki->id, ==, a->id);
        g_assert_cmpuint(ki->flags, ==, KDBUS_HELLO_ACCEPT_FD);
        for (item = ki->items; (const uint8_t *)item < (const uint8_t *)ki + ki->size;
             item = KDBUS_ITEM_NEXT(item))
                if (item->type == KDBUS_ITEM_OWNED_NAME) {
                        g_assert_cmpstr(item->name.name, ==, "org.example.Info");
                        seen_name = true;
                }
        g_assert_true(seen_name);
        g_assert_cmpint(kdbus_conn_free(c, info->offset), ==, 0);
        /* oneself */
        info->id = c->id;
        info->attach_flags = 0;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, 0);
        ki = (const void *)(c->pool + info->offset);
        g_assert_cmpuint(ki->id, ==, c->id);
        g_assert_cmpuint(ki->size, ==, sizeof(*ki));
        g_assert_cmpint(kdbus_conn_free(c, info->offset), ==, 0);
        /* by name */
        info->id = 0;
        info->items[0].size = KDBUS_ITEM_HEADER_SIZE + sizeof("org.example.Info");
        info->items[0].type = KDBUS_ITEM_NAME;
        strcpy(info->items[0].str, "org.example.Info");
        info->size = sizeof(*info) + KDBUS_ALIGN8(info->items[0].size);
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, 0);
        g_assert_cmpuint(((const struct kdbus_info *)(c->pool + info->offset))->id, ==, a->id);
        g_assert_cmpint(kdbus_conn_free(c, info->offset), ==, 0);
        strcpy(info->items[0].str, "org.example.Nfo");
        info->items[0].size = KDBUS_ITEM_HEADER_SIZE + sizeof("org.example.Nfo");
        info->size = sizeof(*info) + KDBUS_ALIGN8(info->items[0].size);
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, -ESRCH);
        /* an id and a name at once (kdbus_cmd_conn_info(): the name's owner must have
         * that id, ESRCH otherwise), an unknown id */
        strcpy(info->items[0].str, "org.example.Info");
        info->items[0].size = KDBUS_ITEM_HEADER_SIZE + sizeof("org.example.Info");
        info->size = sizeof(*info) + KDBUS_ALIGN8(info->items[0].size);
        info->id = a->id;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, 0);
        g_assert_cmpint(kdbus_conn_free(c, info->offset), ==, 0);
        info->id = c->id;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, -ESRCH);
        memset(buf, 0, sizeof(buf));
        info->size = sizeof(*info);
        info->id = 9999;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, info, sizeof(buf), NULL, 0),
                        ==, -ENXIO);
        kdbus_conn_close(a);
        kdbus_conn_close(c);
}

/* match-bloom and matches by sender id / name: the bus's filter against the masks */
static void test_match_bloom_sender(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, 0), *c = kpeer(b, 0), *w = kpeer(b, 0);
        uint64_t mask[8] = { 0 };
        const char *args[] = { "first", "second", NULL };
        const struct kdbus_msg *m;
        WireHeader h;

        g_assert_cmpuint(w->bloom_size, ==, sizeof(mask));
        /* w: member Changed with arg1 "second", from anyone */
        kdbus_bloom_add(mask, w->bloom_size, w->bloom_n_hash, "member", "Changed");
        kdbus_bloom_add(mask, w->bloom_size, w->bloom_n_hash, "arg1", "second");
        g_assert_cmpint(kdbus_conn_match_add(w, 1, 0, mask, KDBUS_MATCH_ID_ANY), ==, 0);
        g_assert_cmpint(ksignal(a, 1, "Changed", args), ==, 0);
        m = krecv(w, &h, NULL);
        g_assert_cmpuint(m->cookie, ==, 1);
        kfree_msg(w, m);
        g_assert_cmpint(ksignal(a, 2, "Other", args), ==, 0);
        args[1] = "third";
        g_assert_cmpint(ksignal(a, 3, "Changed", args), ==, 0);
        kassert_empty(w);
        /* by sender id (no mask): only c's */
        g_assert_cmpint(kdbus_conn_match_remove(w, 1), ==, 0);
        g_assert_cmpint(kdbus_conn_match_add(w, 2, 0, NULL, c->id), ==, 0);
        g_assert_cmpint(ksignal(a, 4, "Changed", args), ==, 0);
        g_assert_cmpint(ksignal(c, 5, "Changed", args), ==, 0);
        m = krecv(w, &h, NULL);
        g_assert_cmpuint(m->src_id, ==, c->id);
        kfree_msg(w, m);
        kassert_empty(w);
        /* by the sender's well-known name, whoever owns it */
        g_assert_cmpint(kdbus_conn_match_remove(w, 2), ==, 0);
        g_assert_cmpint(kmatch_sender_name(w, 3, "org.example.Source"), ==, 0);
        /* a sender id goes in an ID item: a unique name in a NAME item is EINVAL (kdbus) */
        g_assert_cmpint(kmatch_sender_name(w, 4, ":1.1"), ==, -EINVAL);
        g_assert_cmpint(ksignal(a, 6, "Changed", args), ==, 0);
        kassert_empty(w);
        g_assert_cmpint(kdbus_conn_name_acquire(a, "org.example.Source", 0, NULL), ==, 0);
        g_assert_cmpint(ksignal(a, 7, "Changed", args), ==, 0);
        g_assert_cmpint(ksignal(c, 8, "Changed", args), ==, 0);
        m = krecv(w, &h, NULL);
        g_assert_cmpuint(m->cookie, ==, 7);
        kfree_msg(w, m);
        kassert_empty(w);
        /* a mask of the wrong size */
        {
                uint8_t buf[256] __attribute__((aligned(8))) = { 0 };
                struct kdbus_cmd_match *cmd = (void *)buf;

                cmd->items[0].size = KDBUS_ITEM_HEADER_SIZE + 16;
                cmd->items[0].type = KDBUS_ITEM_BLOOM_MASK;
                cmd->size = sizeof(*cmd) + cmd->items[0].size;
                g_assert_cmpint(kdbus_conn_command(w, KDBUS_CMD_MATCH_ADD, cmd, sizeof(buf),
                                                   NULL, 0), ==, -EDOM);
        }
        kdbus_conn_close(a);
        kdbus_conn_close(c);
        kdbus_conn_close(w);
}

/* connection-info with faked metadata: a privileged HELLO's CREDS / PIDS / SECLABEL stand
 * in for the bus's capture (kdbus_conn_new(), a bus proxy's clients): CONN_INFO gives them,
 * and so does the driver to legacy clients (dbus-send GetConnectionUnixUser) */
static void test_connection_info_faked(KBus *b, gconstpointer ctx) {
        uint8_t items[256] __attribute__((aligned(8))) = { 0 };
        struct kdbus_item *item = (void *)items;
        const struct kdbus_creds fc = { 4242, 4242, 4242, 4242, 4343, 4343, 4343, 4343 };
        const struct kdbus_pids fp = { 4444, 4444, 1 };
        struct kdbus_cmd_info info = { .size = sizeof(info),
                                       .attach_flags = KDBUS_ATTACH_CREDS | KDBUS_ATTACH_PIDS |
                                                       KDBUS_ATTACH_SECLABEL };
        g_autofree char *bus_arg = g_strdup_printf("--bus=unix:path=%s", b->legacy);
        const char *argv[] = { "dbus-send", bus_arg, "--print-reply=literal",
                               "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.GetConnectionUnixUser",
                               "string:org.kdbus.Faked", NULL };
        g_autofree char *out = NULL;
        const struct kdbus_info *ki;
        KdbusConn *proxy = NULL, *c = kpeer(b, 0);
        int status;

        if (geteuid() != 0) {
                g_test_skip("a HELLO standing in for another needs root");
                kdbus_conn_close(c);
                return;
        }
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(fc);
        item->type = KDBUS_ITEM_CREDS;
        memcpy(&item->creds, &fc, sizeof(fc));
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof(fp);
        item->type = KDBUS_ITEM_PIDS;
        memcpy(&item->pids, &fp, sizeof(fp));
        item = KDBUS_ITEM_NEXT(item);
        item->size = KDBUS_ITEM_HEADER_SIZE + sizeof("fake_t");
        item->type = KDBUS_ITEM_SECLABEL;
        memcpy(item->str, "fake_t", sizeof("fake_t"));
        item = KDBUS_ITEM_NEXT(item);

        g_assert_cmpint(kdbus_conn_open(b->native, &proxy), ==, 0);
        g_assert_cmpint(kdbus_conn_hello_items(proxy, 0, KPOOL, (const void *)items,
                                               (size_t)((uint8_t *)item - items)), ==, 0);
        g_assert_cmpint(kdbus_conn_name_acquire(proxy, "org.kdbus.Faked", 0, NULL), ==, 0);

        info.id = proxy->id;
        g_assert_cmpint(kdbus_conn_command(c, KDBUS_CMD_CONN_INFO, &info, sizeof(info), NULL, 0),
                        ==, 0);
        ki = (const void *)(c->pool + info.offset);
        for (item = (struct kdbus_item *)ki->items; item->type != KDBUS_ITEM_CREDS;
             item = KDBUS_ITEM_NEXT(item))
                g_assert_true((const uint8_t *)item < (const uint8_t *)ki + ki->size);
        g_assert_cmpuint(item->creds.uid, ==, 4242);
        g_assert_cmpuint(item->creds.gid, ==, 4343);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_PIDS);
        g_assert_cmpuint(item->pids.pid, ==, 4444);
        item = KDBUS_ITEM_NEXT(item);
        g_assert_cmpuint(item->type, ==, KDBUS_ITEM_SECLABEL);
        g_assert_cmpstr(item->str, ==, "fake_t");
        g_assert_cmpint(kdbus_conn_free(c, info.offset), ==, 0);

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH |
                                   G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status,
                                   NULL));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_strstrip(out);
        g_assert_cmpstr(out, ==, "uint32 4242");
        kdbus_conn_close(proxy);
        kdbus_conn_close(c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        signal(SIGPIPE, SIG_IGN);
#define ADD(path, conf, fn) g_test_add("/selftests/" path, KBus, conf, kbus_setup, fn, \
                                       kbus_teardown)
        ADD("chat", NULL, test_chat);
        ADD("message-basic", NULL, test_message_basic);
        ADD("message-prio", NULL, test_message_prio);
        ADD("message-quota", quota_conf, test_message_quota);
        ADD("memory-access", NULL, test_memory_access);
        ADD("message-free", NULL, test_message_free);
        ADD("sync-byebye", NULL, test_sync_byebye);
        ADD("fd-passing", NULL, test_fd_passing);
        ADD("writable-pool", NULL, test_writable_pool);
        ADD("connection-info", NULL, test_connection_info);
        ADD("connection-info/faked", NULL, test_connection_info_faked);
        ADD("match-bloom-id-name", NULL, test_match_bloom_sender);
        return g_test_run();
}
