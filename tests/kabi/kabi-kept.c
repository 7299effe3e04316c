/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A message libkdbus-preload.so received with a held RECV and keeps for the program's next
 * RECV is, for the program, still the head of kdbus's queue (ipc/kdbus/connection.c,
 * kdbus_cmd_recv(), of kdbus's final tree): a DROP of it tells the caller of a call at once
 * (REPLY_DEAD, EPIPE for a SYNC_REPLY caller), and a priority RECV gets the highest priority
 * (the lowest value) of the whole queue, the kept message (the oldest) winning ties; a count
 * of lost messages the library keeps comes with the message RECV finds after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "kabi.h"

typedef struct SyncCall {
        Conn *a;
        const Conn *c;
        int r;
        double secs;
} SyncCall;

static double now_s(void) {
        struct timespec t;

        (void) clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *sync_run(void *p) {
        SyncCall *k = p;
        double t0 = now_s();

        k->r = sync_call(k->a, k->c, 52, 5000000000, NULL);
        k->secs = now_s() - t0;
        return NULL;
}

/*
 * kept-drop: a call the library keeps for the program (a poll() armed the held RECV), DROPped
 * unread: its caller gets REPLY_DEAD at once (not at its 30 s timeout); a SYNC_REPLY caller
 * gets EPIPE at once (not ETIMEDOUT at 5 s).
 */
int t_kept_drop(void) {
        const struct kdbus_msg *m;
        SyncCall k;
        pthread_t th;
        Bus b;
        Conn a, a2, c;
        W w;
        char dest[32];
        size_t n;

        CHECK(bus_make(&b, "kdrop", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &a2) == 0 && hello(b.path, &c) == 0);
        CHECK(poll1(a.fd, POLLIN, 10) == 0);
        (void) snprintf(dest, sizeof(dest), ":1.%" PRIu64, a.id);
        n = dbus1(&w, 1, 51, 0, dest, "Ping", NULL);
        CHECK(send_raw(&c, a.id, 51, 0, KDBUS_MSG_EXPECT_REPLY, 0, (uintptr_t)w.b, n, 0,
                       30000000000, NULL, 0, NULL) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&a, KDBUS_RECV_DROP, 0, NULL) == 0);
        CHECK(recv_msg(&a, 0, 0, NULL) == -EAGAIN);
        CHECK(poll1(c.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&c, 0, 0, &m) == 0);
        CHECK(m->src_id == KDBUS_SRC_ID_KERNEL && m->cookie_reply == 51 &&
              m->items[0].type == KDBUS_ITEM_REPLY_DEAD);
        CHECK(free_at(&c, m) == 0);

        /* a SYNC_REPLY caller (another connection: a's RECV flags ended its held RECVs) */
        CHECK(poll1(a2.fd, POLLIN, 10) == 0);
        k = (SyncCall){ &c, &a2, 0, 0 };
        CHECK(pthread_create(&th, NULL, sync_run, &k) == 0);
        CHECK(poll1(a2.fd, POLLIN, 2000) == POLLIN);
        CHECK(recv_msg(&a2, KDBUS_RECV_DROP, 0, NULL) == 0);
        CHECK(pthread_join(th, NULL) == 0);
        CHECK(k.r == -EPIPE && k.secs < 3.0);
        conn_close(&a);
        conn_close(&a2);
        conn_close(&c);
        close(b.control);
        return 0;
}

/*
 * kept-prio: the library keeps the first of four messages (priorities 10, -5, 0, 10); RECVs
 * with KDBUS_RECV_USE_PRIORITY get -5 (PEEK too), then 0, then nothing at or above 5, then
 * the kept 10 before the later 10, then a plain RECV the last one.
 */
int t_kept_prio(void) {
        const struct kdbus_msg *m;
        Bus b;
        Conn a, c;

        CHECK(bus_make(&b, "kprio", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0 && hello(b.path, &c) == 0);
        CHECK(poll1(a.fd, POLLIN, 10) == 0);
        CHECK(call_noreply(&c, &a, 41, 10) == 0);
        CHECK(poll1(a.fd, POLLIN, 2000) == POLLIN);
        CHECK(call_noreply(&c, &a, 42, -5) == 0 && call_noreply(&c, &a, 43, 0) == 0 &&
              call_noreply(&c, &a, 44, 10) == 0);
        CHECK(recv_msg(&a, KDBUS_RECV_PEEK | KDBUS_RECV_USE_PRIORITY, INT64_MAX, &m) == 0);
        CHECK(m->cookie == 42 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, KDBUS_RECV_USE_PRIORITY, INT64_MAX, &m) == 0);
        CHECK(m->cookie == 42 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, KDBUS_RECV_USE_PRIORITY, 5, &m) == 0);
        CHECK(m->cookie == 43 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, KDBUS_RECV_USE_PRIORITY, 5, &m) == -EAGAIN);
        CHECK(poll1(a.fd, POLLIN, 0) == POLLIN);
        CHECK(recv_msg(&a, KDBUS_RECV_USE_PRIORITY, 10, &m) == 0);
        CHECK(m->cookie == 41 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == 0);
        CHECK(m->cookie == 44 && free_at(&a, m) == 0);
        CHECK(recv_msg(&a, 0, 0, &m) == -EAGAIN);
        conn_close(&a);
        conn_close(&c);
        close(b.control);
        return 0;
}

/*
 * kept-count: a broadcast lost for a connection (larger than its 4 KiB pool) while a poll()
 * armed the held RECV: the library keeps the count; a call that comes after it, and the
 * next RECV gets that call and the count together, as kdbus's RECV reported lost_count
 * with the message it took.
 */
int t_kept_count(void) {
        struct kdbus_cmd_hello h = { .size = sizeof(h), .flags = KDBUS_HELLO_ACCEPT_FD,
                                     .pool_size = 4096 };
        struct kdbus_cmd_free f = { .size = sizeof(f) };
        struct kdbus_cmd_recv rc = { .size = sizeof(rc) };
        const struct kdbus_msg *m;
        const uint8_t *pool;
        Bus b;
        Conn a, r;

        CHECK(bus_make(&b, "kcount", KDBUS_MAKE_ACCESS_WORLD) == 0);
        CHECK(hello(b.path, &a) == 0);
        r.fd = open(b.path, O_RDWR | O_CLOEXEC);
        CHECK(r.fd >= 0 && kio(r.fd, KDBUS_CMD_HELLO, &h) == 0);
        r.id = h.id;
        f.offset = h.offset;
        CHECK(kio(r.fd, KDBUS_CMD_FREE, &f) == 0);
        pool = mmap(NULL, 4096, PROT_READ, MAP_SHARED, r.fd, 0);
        CHECK(pool != MAP_FAILED);
        CHECK(match_all(r.fd) == 0);
        CHECK(poll1(r.fd, POLLIN, 10) == 0);
        CHECK(send_big_broadcast(&a) == 0);
        CHECK(poll1(r.fd, POLLIN, 1000) == POLLIN);
        CHECK(call_noreply(&a, &r, 61, 0) == 0);
        CHECK(kio(r.fd, KDBUS_CMD_RECV, &rc) == 0);
        CHECK(rc.dropped_msgs == 1 && (rc.return_flags & KDBUS_RECV_RETURN_DROPPED_MSGS));
        m = (const void *)(pool + rc.msg.offset);
        CHECK(m->cookie == 61);
        f.offset = rc.msg.offset;
        CHECK(kio(r.fd, KDBUS_CMD_FREE, &f) == 0);
        memset(&rc, 0, sizeof(rc));
        rc.size = sizeof(rc);
        CHECK(kio(r.fd, KDBUS_CMD_RECV, &rc) == -EAGAIN && rc.dropped_msgs == 0);
        (void) munmap((void *)pool, 4096);
        close(r.fd);
        conn_close(&a);
        close(b.control);
        return 0;
}
