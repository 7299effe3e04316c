/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kabi-test's cases for one connection used by several threads and processes at once, and
 * for what poll() brings with its wakeup (tests/kabi/kabi-test.c runs them): kdbus's
 * ioctls on one file ran in parallel, so a thread's CONN_INFO, RECV or BYEBYE went through
 * while another thread of the same connection waited in SYNC_REPLY, and a forked child used
 * the inherited fd while its parent did.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tests/kabi/kabi.h"

static double now_s(void) {
        struct timespec t;

        (void) clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The other thread: while the main one waits in SYNC_REPLY on @a. */
typedef struct Side {
        Conn *a, *c;
        int step;                       /* how far it got */
        double t_done;                  /* when CONN_INFO and RECV were through */
} Side;

static void *side_run(void *p) {
        struct kdbus_cmd_info i = { .size = sizeof(i) };
        struct kdbus_cmd byebye = { .size = sizeof(byebye) };
        const struct kdbus_msg *m;
        Side *s = p;

        /* the call reached the callee: the caller waits in SYNC_REPLY now */
        if (poll1(s->c->fd, POLLIN, 5000) != POLLIN || recv_msg(s->c, 0, 0, &m) < 0)
                return NULL;
        s->step = 1;
        /* the caller's connection answers another thread at once */
        i.id = s->c->id;
        if (kio(s->a->fd, KDBUS_CMD_CONN_INFO, &i) < 0 ||
            free_at(s->a, s->a->pool + i.offset) < 0)
                return NULL;
        s->step = 2;
        /* a message queued for it before the call is received meanwhile */
        if (recv_msg(s->a, 0, 0, &m) < 0 || m->cookie != 77 || free_at(s->a, m) < 0)
                return NULL;
        s->t_done = now_s();
        /* a SEND larger than a socket's default send buffer, over this thread's own
         * channel: it arrives whole (read back after the join) */
        {
                static uint8_t big[400u << 10];

                memset(big, 0x5a, sizeof(big));
                if (send_raw(s->a, s->c->id, 78, 0, 0, 0, (uintptr_t)big, sizeof(big), 0, 0,
                             NULL, 0, NULL) < 0)
                        return NULL;
        }
        s->step = 3;
        /* BYEBYE of the waiting connection: its SYNC_REPLY ends ECONNRESET */
        if (kio(s->a->fd, KDBUS_CMD_BYEBYE, &byebye) < 0)
                return NULL;
        s->step = 4;
        return NULL;
}

/*
 * threads: while one thread waits in SYNC_REPLY (deadline 4 s, never answered), another
 * thread of the same connection gets CONN_INFO, RECV, a 400 KiB SEND and BYEBYE through,
 * and the BYEBYE ends the wait with ECONNRESET (kdbus-test sync-byebye's first half).
 */
int t_threads(void) {
        struct kdbus_cmd_send ret;
        pthread_t th;
        Side s = { 0 };
        Bus b;
        Conn a, c;
        double t0;
        int r;

        CHECK(bus_make(&b, "threads", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(call_noreply(&c, &a, 77, 0) == 0);
        s.a = &a;
        s.c = &c;
        CHECK(pthread_create(&th, NULL, side_run, &s) == 0);
        t0 = now_s();
        r = sync_call(&a, &c, 5, 4000000000, &ret);
        CHECK(pthread_join(th, NULL) == 0);
        CHECK(s.step == 4);
        CHECK(r == -ECONNRESET);
        /* long before the deadline: the other thread did not wait for it */
        CHECK(s.t_done - t0 < 3.0);
        {
                const struct kdbus_msg *m;

                CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 78 &&
                      m->items[0].type == KDBUS_ITEM_PAYLOAD_OFF &&
                      m->items[0].vec.size == 400u << 10 &&
                      ((const uint8_t *)m)[m->items[0].vec.offset + (399u << 10)] == 0x5a);
                CHECK(free_at(&c, m) == 0);
        }
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

typedef struct Caller {
        Conn *a, *c;
        uint64_t cookie;
        int r;
        int done;                       /* set (atomically) when the call returned */
} Caller;

static void *caller_run(void *p) {
        struct kdbus_cmd_send ret;
        Caller *k = p;

        k->r = sync_call(k->a, k->c, k->cookie, 4000000000, &ret);
        if (k->r == 0) {
                const struct kdbus_msg *m = (const void *)(k->a->pool + ret.reply.offset);

                k->r = m->cookie_reply == k->cookie ? free_at(k->a, m) : -EBADMSG;
        }
        __atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

/* The answer "pong" of @c to the call @m. */
static int answer(Conn *c, const struct kdbus_msg *m, uint64_t cookie) {
        W w;
        char to[32];
        size_t n;

        (void) snprintf(to, sizeof(to), ":1.%" PRIu64, m->src_id);
        n = dbus1(&w, 2, (uint32_t)cookie, (uint32_t)m->cookie, to, NULL, "pong");
        return send_raw(c, m->src_id, cookie, m->cookie, 0, 0, (uintptr_t)w.b, n, 0, 0, NULL,
                        0, NULL);
}

/*
 * threads-sync: two threads of one connection in SYNC_REPLY at once, as kdbus's ioctls
 * waited each on its own: the service gets both calls before it answers any, answers the
 * second first, and that caller returns while the first still waits; then the first.
 */
int t_threads_sync(void) {
        const struct kdbus_msg *m[2];
        Caller k[2];
        pthread_t th[2];
        Bus b;
        Conn a, c;
        double t0;
        int i;

        CHECK(bus_make(&b, "tsync", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        for (i = 0; i < 2; i++) {
                k[i] = (Caller){ &a, &c, 40 + (uint64_t)i, 1, 0 };
                CHECK(pthread_create(&th[i], NULL, caller_run, &k[i]) == 0);
        }
        for (i = 0; i < 2; i++) {
                CHECK(poll1(c.fd, POLLIN, 2000) == POLLIN);
                CHECK(recv_msg(&c, 0, 0, &m[i]) == 0);
        }
        if (m[0]->cookie != 41) {
                const struct kdbus_msg *x = m[0];

                m[0] = m[1];
                m[1] = x;
        }
        CHECK(m[0]->cookie == 41 && m[1]->cookie == 40);
        CHECK(answer(&c, m[0], 200) == 0 && free_at(&c, m[0]) == 0);
        t0 = now_s();
        while (!__atomic_load_n(&k[1].done, __ATOMIC_ACQUIRE) && now_s() - t0 < 2.0)
                (void) poll(NULL, 0, 5);
        CHECK(__atomic_load_n(&k[1].done, __ATOMIC_ACQUIRE) && k[1].r == 0);
        CHECK(!__atomic_load_n(&k[0].done, __ATOMIC_ACQUIRE));
        CHECK(answer(&c, m[1], 201) == 0 && free_at(&c, m[1]) == 0);
        for (i = 0; i < 2; i++) {
                CHECK(pthread_join(th[i], NULL) == 0);
                CHECK(k[i].r == 0);
        }
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/*
 * fork: while the parent waits in SYNC_REPLY on a connection, a forked child uses the
 * inherited fds of both ends: CONN_INFO on the waiting one, RECV of the call and the
 * answer on the callee's; the parent gets that answer.
 */
int t_fork(void) {
        struct kdbus_cmd_send ret;
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c;
        pid_t pid;
        int st;

        CHECK(bus_make(&b, "fork", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                struct kdbus_cmd_info i = { .size = sizeof(i) };
                W w;
                char to[32];
                size_t n;

                if (poll1(c.fd, POLLIN, 5000) != POLLIN || recv_msg(&c, 0, 0, &m) < 0)
                        _exit(1);
                i.id = c.id;
                if (kio(a.fd, KDBUS_CMD_CONN_INFO, &i) < 0 || free_at(&a, a.pool + i.offset) < 0)
                        _exit(2);
                (void) snprintf(to, sizeof(to), ":1.%" PRIu64, m->src_id);
                n = dbus1(&w, 2, 100, (uint32_t)m->cookie, to, NULL, "pong");
                if (send_raw(&c, m->src_id, 100, m->cookie, 0, 0, (uintptr_t)w.b, n, 0, 0,
                             NULL, 0, NULL) < 0)
                        _exit(3);
                _exit(0);
        }
        CHECK(sync_call(&a, &c, 5, 4000000000, &ret) == 0);
        m = (const void *)(a.pool + ret.reply.offset);
        CHECK(m->cookie_reply == 5 && m->src_id == c.id);
        CHECK(free_at(&a, m) == 0);
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/*
 * held: what poll() waits for comes with its wakeup (the library's held RECV), and still
 * behaves as kdbus's queue: a poll that timed out leaves nothing behind; messages come in
 * order, each once, whether RECV or another command is next; BYEBYE is EBUSY while one
 * waits unreceived; PEEK and DROP see it; an epoll user is woken by the eventfd.
 */
int t_held(void) {
        struct kdbus_cmd byebye = { .size = sizeof(byebye) };
        struct kdbus_cmd_info i = { .size = sizeof(i) };
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c;

        CHECK(bus_make(&b, "held", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        /* nothing comes: the poll times out, RECV says EAGAIN */
        CHECK(poll1(a.fd, POLLIN, 50) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        /* two messages after a poll armed the wait: both, in order */
        CHECK(poll1(a.fd, POLLIN, 10) == 0);
        CHECK(call_noreply(&c, &a, 11, 0) == 0 && call_noreply(&c, &a, 12, 0) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        /* another command first: the message stays for RECV */
        i.id = c.id;
        CHECK(kio(a.fd, KDBUS_CMD_CONN_INFO, &i) == 0);
        CHECK(free_at(&a, a.pool + i.offset) == 0);
        /* BYEBYE: a message waits */
        CHECK(kio(a.fd, KDBUS_CMD_BYEBYE, &byebye) == -EBUSY);
        CHECK(poll1(a.fd, POLLIN, 0) == POLLIN);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 11);
        CHECK(free_at(&a, m) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 12);
        CHECK(free_at(&a, m) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        /* a SEND of the waiting side, then the answer to it (the SEND arms the wait) */
        CHECK(call_noreply(&a, &c, 21, 0) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        CHECK(poll1(c.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 21 && free_at(&c, m) == 0);
        CHECK(call_noreply(&c, &a, 22, 0) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        /* PEEK sees it and leaves it; DROP takes it unread */
        CHECK(recv_msg(&a, KDBUS_RECV_PEEK, 0, &m) == 0 && m->cookie == 22);
        CHECK(free_at(&a, m) == 0);
        CHECK(poll1(a.fd, POLLIN, 0) == POLLIN);
        CHECK(recv_msg(&a, KDBUS_RECV_DROP, 0, NULL) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        /* an epoll user after a poll armed the wait: the eventfd wakes it */
        CHECK(poll1(a.fd, POLLIN, 10) == 0);
        {
                struct epoll_event ev = { .events = EPOLLIN };
                int ep = epoll_create1(EPOLL_CLOEXEC);

                CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, a.fd, &ev) == 0);
                CHECK(call_noreply(&c, &a, 23, 0) == 0);
                CHECK(epoll_wait(ep, &ev, 1, 2000) == 1);
                close(ep);
        }
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 23 && free_at(&a, m) == 0);
        CHECK(kio(a.fd, KDBUS_CMD_BYEBYE, &byebye) == 0);
        CHECK(poll1(a.fd, POLLIN, 100) & POLLHUP);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/*
 * held-free: a FREE the library answered and held back is done before poll() waits once
 * its slice is more than a trifle of the pool (here 100 KiB of 1 MiB), even with a held
 * RECV armed: the next message needs that space (960 KiB from another process, whose
 * requests do not send our FREEs first: without the FREE it does not fit in the pool).
 */
int t_held_free(void) {
        static uint8_t big[960 * 1024];
        const struct kdbus_msg *m;
        Bus b;
        Conn a;
        int go[2], st;
        uint64_t id;
        pid_t pid;

        CHECK(bus_make(&b, "hfree", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(pipe(go) == 0);
        /* the sender first: a handle open at a fork is shared, and never armed */
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                Conn c;
                char x;

                if (read(go[0], &id, sizeof(id)) != sizeof(id) || hello(b.path, &c) < 0 ||
                    send_opaque(&c, id, 1, big, 100 * 1024) < 0 || read(go[0], &x, 1) != 1)
                        _exit(1);
                _exit(send_opaque(&c, id, 2, big, sizeof(big)) == 0 ? 0 : 2);
        }
        CHECK(hello(b.path, &a) == 0);
        CHECK(write(go[1], &a.id, sizeof(a.id)) == sizeof(a.id));
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 1);
        CHECK(free_at(&a, m) == 0);
        CHECK(poll1(a.fd, POLLIN, 100) == 0);
        CHECK(write(go[1], "x", 1) == 1);
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 2);
        CHECK(free_at(&a, m) == 0);
        close(go[0]);
        close(go[1]);
        conn_close(&a);
        close(b.control);
        return 0;
}

/* The FDS item's first fd of @m, or -1. */
static int msg_fd(const struct kdbus_msg *m) {
        const struct kdbus_item *it;

        KDBUS_ITEMS_FOREACH(it, m->items, m->size - offsetof(struct kdbus_msg, items))
                if (it->type == KDBUS_ITEM_FDS && it->size > KDBUS_ITEM_HEADER_SIZE)
                        return it->fds[0];
        return -1;
}

typedef struct Drain {
        Conn *c;
        uint64_t got[128];
        unsigned n;
} Drain;

/* RECV until EAGAIN, each message's cookie noted. */
static void *drain_run(void *p) {
        Drain *d = p;
        const struct kdbus_msg *m;

        while (d->n < 128 && recv_msg(d->c, 0, 0, &m) == 0) {
                d->got[d->n++] = m->cookie;
                if (free_at(d->c, m) < 0)
                        break;
        }
        return NULL;
}

/*
 * joined: the library takes the message after the one a RECV gets, or the one waiting
 * when a SEND arms its wait, in the same answer (kdbusd's KDBUS_WIRE_BATCH_RECV_JOIN), and
 * still shows kdbus's queue: messages in order and each once, an fd of a message taken
 * that way installed and in its slice, poll() POLLIN exactly while one waits, a SEND's own
 * errno (ENXIO for an unknown id) whatever waits for the sender, EAGAIN after the last;
 * with two threads in RECV at once, each message once and each thread's in order.
 */
int t_joined(void) {
        const struct kdbus_msg *m;
        int p[2], fd;
        Bus b;
        Conn a, c;
        W w;
        size_t n;
        char dest[32];

        CHECK(bus_make(&b, "joined", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello_flags(b.path, KDBUS_HELLO_ACCEPT_FD, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(pipe(p) == 0);
        /* four waiting, the third with an fd: RECV takes each next one with it */
        CHECK(poll1(a.fd, POLLIN, 10) == 0);
        CHECK(call_noreply(&c, &a, 1, 0) == 0 && call_noreply(&c, &a, 2, 0) == 0);
        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, a.id);
        n = dbus1_fds(&w, 1, 3, 0, dest, "Fd", NULL, 1);
        w.b[2] = 1;
        CHECK(send_raw(&c, a.id, 3, 0, 0, 0, (uintptr_t)w.b, n, 0, 0, &p[1], 1, NULL) == 0);
        CHECK(call_noreply(&c, &a, 4, 0) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        for (uint64_t k = 1; k <= 4; k++) {
                CHECK(poll1(a.fd, POLLIN, 0) == POLLIN);
                CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == k);
                fd = msg_fd(m);
                if (k == 3) {
                        CHECK(fd >= 0 && write(fd, "j", 1) == 1);
                        CHECK(close(fd) == 0);
                } else
                        CHECK(fd < 0);
                CHECK(free_at(&a, m) == 0);
        }
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        CHECK(poll1(a.fd, POLLIN, 0) == 0);
        {
                char x;

                CHECK(read(p[0], &x, 1) == 1 && x == 'j');
        }
        /* nothing armed, two waiting: a SEND to an unknown id is ENXIO, the first comes
         * with its answer, both in order after it */
        CHECK(call_noreply(&c, &a, 10, 0) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 10 && free_at(&a, m) == 0);
        CHECK(call_noreply(&c, &a, 11, 0) == 0 && call_noreply(&c, &a, 12, 0) == 0);
        n = dbus1(&w, 1, 5, 0, ":1.4294967280", "Ping", NULL);
        w.b[2] = 1;
        CHECK(send_raw(&a, 0xfffffff0ull, 5, 0, 0, 0, (uintptr_t)w.b, n, 0, 0, NULL, 0,
                       NULL) == -ENXIO);
        CHECK(poll1(a.fd, POLLIN, 0) == POLLIN);
        CHECK(call_noreply(&a, &c, 6, 0) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 11 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == 0 && m->cookie == 12 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        CHECK(poll1(a.fd, POLLIN, 0) == 0);
        CHECK(recv_msg(&c, 0, 0, &m) == 0 && m->cookie == 6 && free_at(&c, m) == 0);
        /* two threads RECV at once: each message once, and each thread's in order (a
         * message taken ahead for one is not overtaken by the other's RECV) */
        for (int round = 0; round < 20; round++) {
                Drain d[2] = { { .c = &a }, { .c = &a } };
                pthread_t t;
                uint64_t seen = 0;
                const uint64_t base = 100 + (uint64_t)round * 64;

                for (uint64_t k = 0; k < 60; k++)
                        CHECK(call_noreply(&c, &a, base + k, 0) == 0);
                CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
                CHECK(pthread_create(&t, NULL, drain_run, &d[1]) == 0);
                (void) drain_run(&d[0]);
                CHECK(pthread_join(t, NULL) == 0);
                CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
                CHECK(d[0].n + d[1].n == 60);
                for (int j = 0; j < 2; j++)
                        for (unsigned k = 0; k < d[j].n; k++) {
                                CHECK(d[j].got[k] >= base && d[j].got[k] < base + 60);
                                CHECK(!(seen & (1ull << (d[j].got[k] - base))));
                                seen |= 1ull << (d[j].got[k] - base);
                                CHECK(k == 0 || d[j].got[k] > d[j].got[k - 1]);
                        }
        }
        close(p[0]);
        close(p[1]);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}
