/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KDBUS_WIRE_BATCH (our extension of the native socket, include/kdbus/kdbus.h) through a
 * real kdbusd: FREEs carried with the next command, the RECV_EMPTY return flag, a
 * SYNC_REPLY in a batch, a failing FREE, malformed batches (EINVAL, the peer and the bus go
 * on), a plain peer (ENOTTY); and a caller that closes its socket while its SYNC_REPLY
 * waits is dropped at once (the socket stays watched during the call).
 */
#include <stdio.h>
#include "kdbusd-fixture.h"

#define ADD(path, fn) g_test_add("/native/batch/" path, KBus, NULL, kbus_setup, fn, kbus_teardown)

/* One raw datagram on @c's socket and its reply: the header, @pre (a batch reply, or
 * NULL: none expected) and up to @out_size bytes of struct. Return: the reply's error. */
static int raw(KdbusConn *c, const void *req, size_t size, struct kdbus_wire_batch_reply *pre,
               void *out, size_t out_size, size_t *ret_out) {
        uint8_t buf[1024] __attribute__((aligned(8)));
        struct kdbus_wire_reply hdr;
        size_t skip = pre ? sizeof(*pre) : 0;
        ssize_t n;

        g_assert_cmpint(send(c->fd, req, size, MSG_NOSIGNAL), ==, (ssize_t)size);
        n = recv(c->fd, buf, sizeof(buf), 0);
        g_assert_cmpint(n, >=, (ssize_t)(sizeof(hdr) + skip));
        memcpy(&hdr, buf, sizeof(hdr));
        g_assert_cmpuint(hdr.size, ==, (size_t)n - sizeof(hdr));
        if (pre)
                memcpy(pre, buf + sizeof(hdr), sizeof(*pre));
        if (ret_out)
                *ret_out = (size_t)n - sizeof(hdr) - skip;
        if (out)
                memcpy(out, buf + sizeof(hdr) + skip, MIN(out_size, (size_t)n - sizeof(hdr) - skip));
        return (int)hdr.error;
}

/* A batch datagram: FREE @offsets, then RECV. Into @buf; Return: its size. */
static size_t batch_recv(uint8_t *buf, const uint64_t *offsets, unsigned n) {
        return kbatch_build(buf, 0, KDBUS_CMD_RECV, 0, offsets, n);
}

/* A unicast call without reply from @from to @to, cookie @serial. */
static void post(KdbusConn *from, KdbusConn *to, uint32_t serial) {
        g_assert_cmpint(kcall(from, to->id, NULL, serial, true, "Post", "x", 0, NULL), ==, 0);
}

/* HELLO with the flag is accepted; without it a batch is an unknown command (ENOTTY, no
 * batch reply) and the peer goes on; an unknown HELLO bit beside it is still EINVAL. */
static void test_negotiate(KBus *b, gconstpointer ctx) {
        KdbusConn *plain = kpeer(b, 0), *bad = kopen(b), *batch = kpeer(b, KDBUS_HELLO_WIRE_BATCH);
        uint8_t buf[256] __attribute__((aligned(8)));
        size_t n = batch_recv(buf, NULL, 0), got;

        g_assert_true(batch->batch);
        g_assert_false(plain->batch);
        g_assert_cmpint(raw(plain, buf, n, NULL, NULL, 0, &got), ==, -ENOTTY);
        g_assert_cmpint(kdbus_conn_recv(plain, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(kdbus_conn_hello(bad, KDBUS_HELLO_WIRE_BATCH | 1ULL << 34, KPOOL), ==,
                        -EINVAL);
        /* a batching peer may still send every plain command */
        g_assert_cmpint(kdbus_conn_command(batch, KDBUS_CMD_RECV,
                                           &(struct kdbus_cmd_recv){ .size = sizeof(struct kdbus_cmd_recv) },
                                           sizeof(struct kdbus_cmd_recv), NULL, 0), ==, -EAGAIN);
        kdbus_conn_close(bad);
        kdbus_conn_close(plain);
        kdbus_conn_close(batch);
}

/* FREEs ride with RECV: done before it (the slice is gone), in order; RECV_EMPTY says
 * whether something else waits. */
static void test_free_with_recv(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        const struct kdbus_msg *m1, *m2;
        uint64_t o1, o2;

        post(s, a, 11);
        post(s, a, 12);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m1, NULL), ==, 0);
        g_assert_cmpuint(m1->cookie, ==, 11);
        g_assert_cmpuint(a->wire_return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==, 0);
        o1 = kdbus_conn_offset(a, m1);
        g_assert_cmpint(kdbus_conn_free_later(a, o1), ==, 0);
        g_assert_cmpuint(a->n_free_later, ==, 1);

        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m2, NULL), ==, 0);
        g_assert_cmpuint(m2->cookie, ==, 12);
        g_assert_cmpuint(a->n_free_later, ==, 0);
        g_assert_cmpuint(a->wire_return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==,
                         KDBUS_WIRE_RETURN_RECV_EMPTY);
        /* the batch freed it: a second FREE finds no slice */
        g_assert_cmpint(kdbus_conn_free(a, o1), ==, -ENXIO);
        o2 = kdbus_conn_offset(a, m2);
        g_assert_cmpint(kdbus_conn_free_later(a, o2), ==, 0);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpuint(a->n_free_later, ==, 0);
        g_assert_cmpint(kdbus_conn_free(a, o2), ==, -ENXIO);

        /* free_flush: the held-back FREE now, one FREE command */
        post(s, a, 13);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m1, NULL), ==, 0);
        o1 = kdbus_conn_offset(a, m1);
        g_assert_cmpint(kdbus_conn_free_later(a, o1), ==, 0);
        g_assert_cmpint(kdbus_conn_free_flush(a), ==, 0);
        g_assert_cmpint(kdbus_conn_free(a, o1), ==, -ENXIO);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* A FREE that fails ends the batch: FREEs before it done, the command not run, its errno in
 * both fields; libkdbus forgets the bad one and keeps those after it. */
static void test_free_error(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        uint8_t buf[256] __attribute__((aligned(8)));
        struct kdbus_wire_batch_reply pre;
        const struct kdbus_msg *m1, *m2;
        uint64_t offs[3];
        size_t n, got;

        post(s, a, 21);
        post(s, a, 22);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m1, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m2, NULL), ==, 0);
        post(s, a, 23);
        offs[0] = kdbus_conn_offset(a, m1);
        offs[1] = 8;                            /* no slice starts there */
        offs[2] = kdbus_conn_offset(a, m2);
        n = batch_recv(buf, offs, 3);
        g_assert_cmpint(raw(a, buf, n, &pre, NULL, 0, &got), ==, -ENXIO);
        g_assert_cmpint(pre.free_error, ==, -ENXIO);
        g_assert_cmpuint(pre.n_freed, ==, 1);
        g_assert_cmpuint(got, ==, 0);           /* no struct: RECV did not run */
        g_assert_cmpuint(pre.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY, ==, 0);
        g_assert_cmpint(kdbus_conn_free(a, offs[0]), ==, -ENXIO);      /* done */
        /* not done (after the failing one) */
        g_assert_cmpint(kdbus_conn_free(a, offs[2]), ==, 0);

        /* through libkdbus: the command fails, the bad offset is dropped, the next kept */
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m1, NULL), ==, 0);   /* 23 is still there */
        g_assert_cmpuint(m1->cookie, ==, 23);
        g_assert_cmpint(kdbus_conn_free_later(a, 8), ==, 0);
        g_assert_cmpint(kdbus_conn_free_later(a, kdbus_conn_offset(a, m1)), ==, 0);
        g_assert_cmpint(kcall(a, s->id, NULL, 5, true, "Post", "y", 0, NULL), ==, -ENXIO);
        g_assert_cmpint(kdbus_conn_recv(s, 0, 0, NULL, NULL), ==, -EAGAIN);    /* not sent */
        g_assert_cmpuint(a->n_free_later, ==, 1);
        g_assert_cmpint(kcall(a, s->id, NULL, 6, true, "Post", "y", 0, NULL), ==, 0);
        g_assert_cmpuint(a->n_free_later, ==, 0);
        g_assert_cmpint(kdbus_conn_recv(s, 0, 0, &m2, NULL), ==, 0);
        g_assert_cmpuint(m2->cookie, ==, 6);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* A service in a child answering @n calls the batched way (bench/kdbus-native-bench.c). */
static void batch_service(const char *path, int ready, unsigned n) {
        KdbusConn *c = NULL;
        bool idle = false;

        if (kdbus_conn_open(path, &c) || kdbus_conn_hello(c, KDBUS_HELLO_WIRE_BATCH, KPOOL) ||
            write(ready, &c->id, sizeof(c->id)) != sizeof(c->id))
                _exit(2);
        while (n) {
                const struct kdbus_msg *m;
                KdbusSend s = { .memfd = -1 };
                uint8_t *data;
                size_t size;
                char dest[32];
                int r;

                if (idle && kdbus_conn_wait(c, 10000))
                        _exit(3);
                idle = false;
                r = kdbus_conn_recv(c, 0, 0, &m, NULL);
                if (r == -EAGAIN) {
                        idle = true;
                        continue;
                }
                if (r)
                        _exit(4);
                snprintf(dest, sizeof(dest), ":1.%llu", (unsigned long long)m->src_id);
                data = kbuild(WIRE_MSG_METHOD_RETURN, 1, (uint32_t)m->cookie, dest, NULL,
                              NULL, &size);
                if (kdbus_send_from_dbus1(&s, data, size))
                        _exit(5);
                s.dst_id = m->src_id;
                if (kdbus_conn_free_later(c, kdbus_conn_offset(c, m)) ||
                    kdbus_conn_send(c, &s, data, size, NULL))
                        _exit(6);
                free(data);
                idle = !!(c->wire_return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY);
                --n;
        }
        kdbus_conn_close(c);
        _exit(0);
}

/* SYNC_REPLY in a batch: the answer comes in the batch reply; the caller's FREE of the
 * previous answer rides with the next call; both sides batching. */
static void test_sync_reply(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH);
        uint64_t service_id, prev = UINT64_MAX;
        int p[2], status;
        unsigned i;
        pid_t pid;

        g_assert_cmpint(pipe(p), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) close(p[0]);
                batch_service(b->native, p[1], 50);
        }
        (void) close(p[1]);
        g_assert_cmpint(read(p[0], &service_id, sizeof(service_id)), ==, sizeof(service_id));
        (void) close(p[0]);
        for (i = 0; i < 50; ++i) {
                struct kdbus_msg_info info = { 0 };
                const struct kdbus_msg *m;

                g_assert_cmpint(kcall(a, service_id, NULL, 100 + i, false, "Ping", NULL,
                                      KDBUS_SEND_SYNC_REPLY, &info), ==, 0);
                g_assert_cmpuint(a->n_free_later, ==, 0);
                m = (const void *)(a->pool + info.offset);
                g_assert_cmpuint(m->src_id, ==, service_id);
                g_assert_cmpuint(m->cookie_reply, ==, 100 + i);
                /* freed with this call (first fit may put the answer in its place) */
                if (prev != UINT64_MAX && prev != info.offset)
                        g_assert_cmpint(kdbus_conn_free(a, prev), ==, -ENXIO);
                prev = info.offset;
                /* held back once more: then FREEd by hand to check it was still there */
                if (i % 2 == 0) {
                        g_assert_cmpint(kdbus_conn_free_later(a, info.offset), ==, 0);
                } else {
                        g_assert_cmpint(kdbus_conn_free(a, info.offset), ==, 0);
                        prev = UINT64_MAX;
                }
        }
        g_assert_cmpint(kdbus_conn_free_flush(a), ==, 0);
        /* each answer came once, with its SEND, never a second time into the queue */
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        kdbus_conn_close(a);
}

/* Malformed batches: EINVAL in both fields, no struct, nothing freed; the peer and the bus
 * go on. A batch inside a batch is an unknown command; HELLO inside, EBADFD. */
static void test_malformed(KBus *b, gconstpointer ctx) {
        KdbusConn *a = kpeer(b, KDBUS_HELLO_WIRE_BATCH), *s = kpeer(b, 0);
        uint8_t buf[1024] __attribute__((aligned(8)));
        struct kdbus_wire_request *outer = (void *)buf;
        struct kdbus_wire_batch *bt = (void *)(buf + sizeof(*outer));
        struct kdbus_wire_batch_reply pre;
        const struct kdbus_msg *m;
        uint64_t off;
        size_t n, got;

        post(s, a, 31);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        off = kdbus_conn_offset(a, m);

#define EXPECT_EINVAL(len) do {                                                         \
                g_assert_cmpint(raw(a, buf, (len), &pre, NULL, 0, &got), ==, -EINVAL);  \
                g_assert_cmpint(pre.free_error, ==, -EINVAL);                           \
                g_assert_cmpuint(pre.n_freed, ==, 0);                                   \
                g_assert_cmpuint(got, ==, 0);                                           \
        } while (0)

        /* shorter than the batch head */
        outer->command = KDBUS_WIRE_BATCH;
        outer->size = 8;
        memset(buf + sizeof(*outer), 0, 8);
        EXPECT_EINVAL(sizeof(*outer) + 8);
        /* flags it does not know (1 and 2 are KDBUS_WIRE_BATCH_HOLD_RECV and _THEN_RECV,
         * test-socket-held.c) */
        n = batch_recv(buf, &off, 1);
        bt->flags = 1ULL << 2;
        EXPECT_EINVAL(n);
        /* too many FREEs, and a count that would overflow the size */
        n = batch_recv(buf, &off, 1);
        bt->n_free = KDBUS_WIRE_BATCH_MAX_FREE + 1;
        EXPECT_EINVAL(n);
        bt->n_free = UINT64_MAX / 4;
        EXPECT_EINVAL(n);
        /* more FREEs than the datagram holds */
        n = batch_recv(buf, &off, 1);
        bt->n_free = 3;
        EXPECT_EINVAL(n);
        /* no inner request */
        n = batch_recv(buf, &off, 1);
        outer->size = sizeof(*bt) + sizeof(uint64_t);
        EXPECT_EINVAL(sizeof(*outer) + outer->size);
        /* the inner request's size does not match */
        n = batch_recv(buf, &off, 1);
        ((struct kdbus_wire_request *)(buf + sizeof(*outer) + sizeof(*bt) + 8))->size += 8;
        EXPECT_EINVAL(n);
        /* the inner struct shorter than RECV's */
        n = batch_recv(buf, &off, 1);
        ((struct kdbus_wire_request *)(buf + sizeof(*outer) + sizeof(*bt) + 8))->size = 8;
        outer->size = sizeof(*bt) + 8 + sizeof(struct kdbus_wire_request) + 8;
        g_assert_cmpint(raw(a, buf, sizeof(*outer) + outer->size, &pre, NULL, 0, &got), ==,
                        -EINVAL);
        g_assert_cmpint(pre.free_error, ==, 0);         /* well-formed batch, bad command */
        g_assert_cmpuint(pre.n_freed, ==, 1);           /* ... so the FREE was done */
        g_assert_cmpint(kdbus_conn_free(a, off), ==, -ENXIO);

        /* a batch inside a batch: unknown command; HELLO inside: EBADFD, as alone */
        n = batch_recv(buf, NULL, 0);
        ((struct kdbus_wire_request *)(buf + sizeof(*outer) + sizeof(*bt)))->command =
                KDBUS_WIRE_BATCH;
        g_assert_cmpint(raw(a, buf, n, &pre, NULL, 0, &got), ==, -ENOTTY);
        g_assert_cmpint(pre.free_error, ==, 0);
        n = batch_recv(buf, NULL, 0);
        ((struct kdbus_wire_request *)(buf + sizeof(*outer) + sizeof(*bt)))->command =
                KDBUS_CMD_HELLO;
        g_assert_cmpint(raw(a, buf, n, &pre, NULL, 0, &got), ==, -EBADFD);
#undef EXPECT_EINVAL

        /* both peers go on */
        post(s, a, 32);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 32);
        g_assert_cmpint(kdbus_conn_free_later(a, kdbus_conn_offset(a, m)), ==, 0);
        g_assert_cmpint(kdbus_conn_recv(a, 0, 0, NULL, NULL), ==, -EAGAIN);
        g_assert_cmpint(kcall(a, s->id, NULL, 7, true, "Post", "z", 0, NULL), ==, 0);
        g_assert_cmpint(kdbus_conn_recv(s, 0, 0, &m, NULL), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 7);
        kdbus_conn_close(a);
        kdbus_conn_close(s);
}

/* A caller that closes its socket while its SYNC_REPLY waits is gone at once (ID_REMOVE
 * comes before the callee answers; the answer finds no caller), as a kdbus process killed
 * in the ioctl: the bus keeps watching that socket during the call. */
static void test_sync_caller_closes(KBus *b, gconstpointer ctx) {
        KdbusConn *svc = kpeer(b, 0);
        const struct kdbus_item *item;
        const struct kdbus_msg *m;
        uint64_t caller;
        int status;
        pid_t pid;

        g_assert_cmpint(kmatch_notify(svc, 1, KDBUS_ITEM_ID_REMOVE, 0, KDBUS_MATCH_ID_ANY,
                                      NULL), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                KdbusConn *c = NULL;
                struct kdbus_msg_info info;

                if (kdbus_conn_open(b->native, &c) || kdbus_conn_hello(c, 0, KPOOL))
                        _exit(2);
                (void) kcall(c, svc->id, NULL, 41, false, "Ping", NULL, KDBUS_SEND_SYNC_REPLY,
                             &info);
                _exit(3);               /* killed before */
        }
        g_assert_cmpint(krecv_wait(svc, 5000, true, &m), ==, 0);
        g_assert_cmpuint(m->cookie, ==, 41);
        caller = m->src_id;
        kfree_msg(svc, m);
        g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        item = krecv_notify(svc, KDBUS_ITEM_ID_REMOVE);
        g_assert_cmpuint(item->id_change.id, ==, caller);
        kfree_item_msg(svc, item);
        /* its reply slot went with it */
        g_assert_cmpint(kreply(svc, caller, 2, 41, NULL), <, 0);
        kdbus_conn_close(svc);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        ADD("negotiate", test_negotiate);
        ADD("free-with-recv", test_free_with_recv);
        ADD("free-error", test_free_error);
        ADD("sync-reply", test_sync_reply);
        ADD("malformed", test_malformed);
        ADD("sync-caller-closes", test_sync_caller_closes);
        return g_test_run();
}
